"""Properties of cache-aware routing on random synthetic full-logit traces: a hook never serves an
expert outside its allowed set (the flexible-OPT contract), requests = hits + misses, every
routed run passes the independent verifier, and the neutral settings equal standard routing."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from paging.generators import router
from paging.routing import CachePrior, Cumsum, MaxRank, Pruning
from paging.simulate import simulate
from paging.verify import verify


def _checked(hook):
    """The hook, asserting on every group that what it serves is allowed."""
    route = hook.route

    def checked(g, cached):
        out = route(g, cached)
        assert len(set(out)) == len(out) == (g.K if not isinstance(hook, Pruning) else hook.j)
        if hasattr(hook, "allowed"):
            must, allowed = hook.allowed(g)
            assert must <= set(out) and set(out) <= allowed | set(g.experts)
            # max-rank contract: a served expert outside the top K is cached and of rank < M
            assert set(out) - set(g.experts) <= cached
        return out

    hook.route = checked
    return hook


traces = st.builds(lambda n, L, T, K, seed: router(n, L, T, k=min(K, n), seed=seed,
                                                   expand="groups"),
                   st.integers(2, 6), st.integers(1, 3), st.integers(1, 12), st.integers(1, 3),
                   st.integers(0, 50))


@st.composite
def hooks(draw, K):
    kind = draw(st.sampled_from(["pruning", "max-rank", "cumsum", "cache-prior"]))
    j = draw(st.integers(1 if kind == "pruning" else 0, K))
    if kind == "pruning":
        return Pruning(j)
    if kind == "max-rank":
        return MaxRank(j, draw(st.one_of(st.none(), st.integers(1, 6))))
    if kind == "cumsum":
        return Cumsum(draw(st.floats(0.01, 1.0)), j)
    return CachePrior(draw(st.floats(0.0, 2.0)), j)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), trace=traces, k=st.integers(1, 12),
       policy=st.sampled_from(["lru", "llru", "least-stale", "fifo", "marking"]))
def test_routed_runs_are_allowed_counted_and_verified(data, trace, k, policy):
    K = int(trace.rank.max()) + 1
    hook = data.draw(hooks(K))
    if isinstance(hook, MaxRank) and not isinstance(hook, Cumsum) and hook.m is not None:
        hook.m = min(hook.m, trace.layout.n_experts)
    res = simulate(trace, policy, k, routing=_checked(hook), record=True, seed=1)
    assert res.requests == res.hits + res.misses
    verify(trace, res)
    assert 0.0 <= res.extra["retained_mass"] <= 1.0 + 1e-12


@settings(max_examples=40, deadline=None)
@given(trace=traces, k=st.integers(1, 12), j=st.integers(0, 3),
       policy=st.sampled_from(["lru", "llru", "least-stale", "lfu"]))
def test_lambda_zero_and_j_equal_k_are_standard(trace, k, j, policy):
    K = int(trace.rank.max()) + 1
    base = simulate(trace, policy, k)
    for spec in (CachePrior(0.0, min(j, K)), Pruning(K), MaxRank(K)):
        res = simulate(trace, policy, k, routing=spec, record=True)
        verify(trace, res)
        assert (res.misses, res.requests) == (base.misses, base.requests)
        assert res.extra["retained_mass"] == 1.0 and res.extra["kl"] == 0.0


# -- SpecMD Algorithm 1: routing, miss handling and prefetching in one loop ---------------------

def _prefetcher(spec):
    from paging.predict.prefetch import Prefetcher, make_prefetch_predictor, make_strategy

    return None if spec is None else Prefetcher(make_prefetch_predictor(spec, None),
                                                make_strategy(None))


@settings(max_examples=60, deadline=None)
@given(data=st.data(), trace=traces, k=st.integers(1, 12),
       policy=st.sampled_from(["lru", "llru", "lfu", "fifo", "marking", "arc", "score-based",
                               "token-match"]),
       miss=st.sampled_from([None, "drop:rank=1", "drop:score=0.3", "substitute"]),
       pf=st.sampled_from([None, "frequency", "previous-token",
                           "oracle:precision=0.8,recall=0.8,seed=1"]))
def test_routing_with_prefetching_and_miss_handling(data, trace, k, policy, miss, pf):
    """SpecMD's Algorithm 1 in one loop: the hook routes the group (phase 1), the handler
    takes each served request that misses, reading its routed rank and score (phase 2), the
    prefetcher inserts its planned pages with the served group kept (phase 3). Every such
    run passes the verifier and counts each served request once (a hit, a fetched miss, a
    drop or a substitute); with the neutral hook (cache-prior at λ = 0 serves the router's
    top K) it equals the run without routing, which takes the compiled phase kernel."""
    if miss is None and pf is None:
        pf = "frequency"
    K = int(trace.rank.max()) + 1
    hook = data.draw(hooks(K))
    if isinstance(hook, MaxRank) and not isinstance(hook, Cumsum) and hook.m is not None:
        hook.m = min(hook.m, trace.layout.n_experts)
    res = simulate(trace, policy, k, routing=hook, miss=miss, prefetch=_prefetcher(pf),
                   record=True, seed=1)
    verify(trace, res)
    ex = res.extra
    assert res.requests == res.hits + res.misses + ex["dropped"] + ex["substituted"]
    assert ex["routing"] == hook.spec() and "prefetches" in ex
    j = data.draw(st.integers(0, K))
    neutral = simulate(trace, policy, k, routing=CachePrior(0.0, j), miss=miss,
                       prefetch=_prefetcher(pf), record=True, seed=1)
    plain = simulate(trace, policy, k, miss=miss, prefetch=_prefetcher(pf), record=True,
                     seed=1)
    assert neutral.extra["retained_mass"] == 1.0
    got, want = neutral.to_dict(), plain.to_dict()
    for f in ("routing", "routing_note", "retained_mass", "top1_changed", "kl", "slots"):
        got.pop(f, None)
    assert got == want
    assert np.array_equal(neutral.hit_mask, plain.hit_mask)
    for f, v in plain.events.items():
        a = neutral.events[f]
        assert (a is None and v is None) or all(
            np.array_equal(x, y) for x, y in zip(a, v, strict=True)) if isinstance(v, list) \
            else np.array_equal(a, v)
