"""Properties of cache-aware routing on random synthetic full-logit traces: a hook never serves an
expert outside its allowed set (the flexible-OPT contract), requests = hits + misses, every
routed run passes the independent verifier, and the neutral settings equal standard routing."""

from __future__ import annotations

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
