"""The compiled routing hooks (:mod:`paging.fast.routing`) equal the reference loop decision for
decision: every Result field (counts, per-layer and per-page misses, hit mask, eviction log,
bypasses), the routing fields of ``extra`` (bit for bit) and, with record=True, the served
sequence in ``events``, on random top-K traces in groups mode with tokens (full logits, gate
scores only, expert ids only; with or without a prefill phase), for pruning, max-rank, cumsum
and cache-prior, routing every group or the decode phase's only (``phase=decode``), the list
policies (the list kernel), the phase kernel's and the token kernel's policies, -dist
variants, pages and byte budgets."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import assert_same_fields as assert_same
from strategies import cascade_handler

from paging.errors import PagingError
from paging.generators import router
from paging.policies import LFU
from paging.routing import CachePrior, Cumsum, MaxRank, Pruning
from paging.simulate import simulate
from paging.trace import from_routing
from paging.verify import verify

LIST_POLICIES = ["lru", "fifo", "fwf", "llru", "fld", "least-stale", "lru-dist", "fifo-dist",
                 "llru-dist", "fld-dist", "least-stale-dist"]
#: the online policies the phase kernel runs (paging.fast.phases), some as -dist variants
PHASE_POLICIES = ["lfu", "lhu", "score-based", "greedy-dual", "landlord", "gdsf",
                  "layered-landlord", "marking", "arc", "lecar", "blind-oracle",
                  "predictive-marker", "lmarker", "robust-blind-oracle", "lfu-dist",
                  "marking-dist", "arc-dist", "lecar-dist", "gdsf-dist", "score-based-dist",
                  "robust-blind-oracle-dist"]
#: the token policies (paging.fast.tokens)
TOKEN_POLICIES = ["token-match", "token-decay", "token-hazard", "robust-token-match",
                  "token-match-dist", "token-hazard-dist"]


def _variant(t, what):
    """The trace with full logits, with only its top-K gate scores (renormalised), or with
    expert ids only."""
    if what == "logits":
        return t
    T, L, n = t.logits.shape
    K = int(t.rank.max()) + 1
    experts = (t.pages.reshape(T, L, K) - (np.arange(L) * n)[None, :, None])
    scores = None
    if what == "scores":
        z = t.logits - t.logits.max(axis=2, keepdims=True)
        w = np.exp(z)
        w /= w.sum(axis=2, keepdims=True)
        top = np.take_along_axis(w, experts, axis=2)
        scores = top / top.sum(axis=2, keepdims=True)
    return from_routing(experts, t.layout, "groups", scores=scores, name=f"{t.name}-{what}")


def _with_prefill(t, p):
    """The trace with its first ``p`` tokens a prefill phase (none for p = 0)."""
    if p == 0 or t.n_requests == 0:
        return t
    cut = int(np.searchsorted(t.token, min(p, int(t.token.max()) + 1)))
    return dataclasses.replace(t, meta=dict(t.meta, phase_bounds={
        "prefill": [0, cut], "decode": [cut, t.n_requests]}))


traces = st.builds(lambda n, L, T, K, seed, what, p: _with_prefill(_variant(
                       router(n, L, T, k=min(K, n), seed=seed, expand="groups"), what), p),
                   st.integers(2, 7), st.integers(1, 3), st.integers(1, 14), st.integers(1, 3),
                   st.integers(0, 1000), st.sampled_from(["logits", "scores", "ids"]),
                   st.integers(0, 5))




def _hook(data, trace):
    """A hook maker, routing every group or (``phase=decode``) the decode phase's only."""
    phase = data.draw(st.sampled_from(["both", "decode"]))
    make = _hook_of(data, trace)

    def hook():
        h = make()
        h.phase = phase
        return h
    return hook


def _hook_of(data, trace):
    K = int(trace.rank.max()) + 1
    n = trace.layout.n_experts
    kind = data.draw(st.sampled_from(["pruning", "max-rank", "cumsum", "cache-prior"]))
    if kind == "pruning":
        j = data.draw(st.integers(1, K))
        return lambda: Pruning(j)
    j = data.draw(st.integers(0, K))
    if kind == "cache-prior":
        lam = data.draw(st.sampled_from([0.0, 0.1, 0.5, 1.0, 2.5]))
        delta = data.draw(st.sampled_from(["run", "sequence"]))
        avg = data.draw(st.sampled_from(["range", "logit"]))
        return lambda: CachePrior(lam, j, delta, avg)
    if kind == "max-rank":
        hi = n if trace.logits is not None else K
        m = data.draw(st.one_of(st.none(), st.integers(1, hi)))
        return lambda: MaxRank(j, m)
    tau = data.draw(st.sampled_from([0.05, 0.3, 0.5, 0.7, 0.9, 0.99, 1.0]))
    return lambda: Cumsum(tau, j)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), trace=traces, k=st.integers(1, 14), policy=st.sampled_from(LIST_POLICIES),
       record=st.sampled_from([True, False, "hits"]))
def test_routed_kernel_equals_reference(data, trace, k, policy, record):
    hook = _hook(data, trace)
    fast = simulate(trace, policy, k, routing=hook(), record=record, engine="fast")
    ref = simulate(trace, policy, k, routing=hook(), record=record, engine="reference")
    assert_same(fast, ref)
    if record is True:
        verify(trace, fast)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), trace=traces, k=st.integers(1, 14),
       policy=st.sampled_from(PHASE_POLICIES + TOKEN_POLICIES), seed=st.integers(0, 3),
       record=st.sampled_from([True, False]))
def test_routed_phase_and_token_kernels_equal_reference(data, trace, k, policy, seed, record):
    # the phase kernel's and the token kernel's policies (each group routed inside the kernel);
    # Score-Based reads the served requests' gate scores (the softmax of the logits, else the
    # trace's scores); a trace with neither is refused by both engines alike
    hook = _hook(data, trace)
    if policy.startswith("score-based") and trace.score is None:
        for engine in ("fast", "reference"):
            with pytest.raises(PagingError, match="reads gate scores and the trace has none"):
                simulate(trace, policy, k, routing=hook(), engine=engine)
        return
    fast = simulate(trace, policy, k, routing=hook(), record=record, seed=seed, engine="fast")
    ref = simulate(trace, policy, k, routing=hook(), record=record, seed=seed,
                   engine="reference")
    assert_same(fast, ref)
    if record is True:
        verify(trace, fast)


def test_hand_checked_routing_follows_the_policy():
    # one layer, n = 4, top-1 with logits, max-rank:j=0,m=2 (serve a cached expert of rank 0
    # or 1 if there is one), k = 2. Served 0, 0, 1, 2 (nothing cached ranks < 2 at t = 2, 3);
    # at t = 3 LFU evicts 1 (1 request; 0 has 2), LRU evicts 0 (touched at t = 1). At t = 4
    # the ranking is 3, 1, 0, 2: LRU has 1 cached and serves it (a hit), LFU serves 3 (a miss
    # that evicts 2, 1 request, against 0's 2)
    logits = np.array([[[3.0, 2, 1, 0]], [[3.0, 2, 1, 0]], [[0.0, 3, 2, 1]], [[0.0, 1, 3, 2]],
                       [[1.0, 2, 0, 3]]])
    t = from_routing(np.array([[[0]], [[0]], [[1]], [[2]], [[3]]]), router(4, 1, 5).layout,
                     "groups", logits=logits)
    hook = "max-rank:j=0,m=2"
    lfu = simulate(t, "lfu", 2, routing=hook, record=True, engine="fast")
    assert lfu.events["served_pages"].tolist() == [0, 0, 1, 2, 3]
    assert lfu.misses == 4 and lfu.hit_mask.tolist() == [0, 1, 0, 0, 0]
    assert lfu.evictions.tolist() == [[3, 1], [4, 2]]
    lru = simulate(t, "lru", 2, routing=hook, record=True, engine="fast")
    assert lru.events["served_pages"].tolist() == [0, 0, 1, 2, 1]
    assert lru.misses == 3 and lru.hit_mask.tolist() == [0, 1, 0, 0, 1]
    assert lru.evictions.tolist() == [[3, 0]]
    for policy, res in (("lfu", lfu), ("lru", lru)):
        assert_same(res, simulate(t, policy, 2, routing=hook, record=True, engine="reference"))


@settings(max_examples=60, deadline=None)
@given(data=st.data(), trace=traces,
       policy=st.sampled_from(["lru", "fifo", "fwf", "llru", "lru-dist", "least-stale-dist",
                               "lfu", "gdsf", "arc", "lecar-dist", "marking", "token-match",
                               "token-hazard-dist"]))
def test_routed_kernel_equals_reference_with_byte_budgets(data, trace, policy):
    P = trace.layout.n_pages
    sizes = np.array(data.draw(st.lists(st.integers(1, 4), min_size=P, max_size=P)))
    budget = data.draw(st.integers(int(sizes.min()), 16))
    hook = _hook(data, trace)
    fast = simulate(trace, policy, budget=budget, sizes=sizes, routing=hook(), record=True,
                    engine="fast")
    ref = simulate(trace, policy, budget=budget, sizes=sizes, routing=hook(), record=True,
                   engine="reference")
    assert_same(fast, ref)


#: SpecMD's Algorithm 1 (routing, then miss handling, then prefetching) in the phase kernel
#: (the list family and the scanned policies) and the token kernel
ALGORITHM_1_POLICIES = ["lru", "fifo", "llru", "least-stale-dist", "lru-dist", "lfu", "lhu",
                        "score-based", "gdsf", "marking", "arc", "lecar-dist", "blind-oracle",
                        "robust-blind-oracle", "token-match", "token-decay-dist",
                        "token-hazard", "robust-token-match"]


def _handler(data, trace, costs, sizes):
    """A built-in handler (a cascade bound to levels of half and a quarter of the sizes), or
    None; those that read scores only when the trace has them."""
    kinds = ["none", "drop:rank=1", "drop:rank=2", "substitute", "lowest-bit"]
    if trace.score is not None:
        kinds += ["drop:score=0.3", "priority"]
    return cascade_handler(data.draw(st.sampled_from(kinds)), costs, sizes)


def _prefetcher(spec):
    from paging.predict.prefetch import Prefetcher, make_prefetch_predictor, make_strategy

    return None if spec is None else Prefetcher(make_prefetch_predictor(spec),
                                                make_strategy(None))


@settings(max_examples=200, deadline=None)
@given(data=st.data(), trace=traces, policy=st.sampled_from(ALGORITHM_1_POLICIES),
       pf=st.sampled_from([None, "frequency", "previous-token",
                           "oracle:precision=0.7,recall=0.8,seed=3"]),
       record=st.sampled_from([True, "hits", False]), seed=st.integers(0, 2))
def test_routing_miss_handling_and_prefetching_kernel_equals_reference(data, trace, policy, pf,
                                                                        record, seed):
    """Every hook (routing every group or the decode phase's), every built-in handler and
    prefetchers together, pages or a byte budget with mixed-precision residents: the compiled
    run (each group routed in the kernel, the handler deciding from the routed rank and
    router weight, the plan's batch after the served group) equals the reference loop's in
    every field, counters and logs included; each recorded run passes the verifier."""
    P = trace.layout.n_pages
    sizes = np.array(data.draw(st.lists(st.integers(1, 4), min_size=P, max_size=P)))
    costs = np.array(data.draw(st.lists(st.sampled_from([0.5, 1.0, 3.0]), min_size=P,
                                        max_size=P)))
    miss = _handler(data, trace, costs, sizes)
    if miss is None and pf is None:
        pf = "frequency"
    if (policy.startswith("score-based") and trace.score is None) or (
            policy.startswith("robust-token") and pf is not None):
        return  # (refused by both engines alike: tested elsewhere)
    if miss is not None and miss.uses_levels or data.draw(st.booleans()):
        kw = dict(budget=data.draw(st.integers(int(sizes.max()), 20)), sizes=sizes, costs=costs)
    else:
        kw = dict(k=data.draw(st.integers(1, 14)))
    hook = _hook(data, trace)
    runs = [simulate(trace, policy, routing=hook(), miss=miss, prefetch=_prefetcher(pf),
                     record=record, seed=seed, engine=engine, **kw)
            for engine in ("fast", "reference")]
    assert_same(*runs)
    if record is True:
        verify(trace, runs[0], costs=kw.get("costs"), sizes=kw.get("sizes"))


def test_hand_checked_max_rank():
    # one layer, n = 4, top-2, ids only; token 0 serves {0, 1}; token 1's ranking is 2, 3, then
    # 0, 1 (unknown ranks, by id): with 0 and 1 cached, max-rank:j=1 serves 2 then the cached
    # 0 instead of 3; 2's miss evicts 1 (0 is pinned), 0 hits
    t = from_routing(np.array([[[0, 1]], [[2, 3]]]), router(4, 1, 2).layout, "groups")
    res = simulate(t, "lru", 2, routing="max-rank:j=1", record=True, engine="fast")
    assert res.events["served_pages"].tolist() == [0, 1, 2, 0]
    assert res.misses == 3 and res.extra["top1_changed"] == 0.0
    assert res.evictions.tolist() == [[2, 1]] and res.hit_mask.tolist() == [0, 0, 0, 1]
    assert_same(res, simulate(t, "lru", 2, routing="max-rank:j=1", record=True,
                              engine="reference"))


@settings(max_examples=40, deadline=None)
@given(a=traces, b=traces, lam=st.sampled_from([0.1, 0.5, 1.0]),
       policy=st.sampled_from(["lru", "llru", "fifo-dist"]))
def test_cache_prior_carries_its_running_average_across_runs(a, b, lam, policy):
    # delta=run: Δavg's running sums go on from one simulate call to the next, and the compiled
    # run leaves the hook's sums as the reference does
    if a.layout.n_layers != b.layout.n_layers:
        b = a
    hooks = {e: CachePrior(lam, 1) for e in ("fast", "reference")}
    for t in (a, b):
        runs = {e: simulate(t, policy, 3, routing=hooks[e], record=True, engine=e)
                for e in hooks}
        assert_same(runs["fast"], runs["reference"])
        assert hooks["fast"]._range_sum == hooks["reference"]._range_sum
        assert hooks["fast"]._range_n == hooks["reference"]._range_n


def test_hand_checked_cache_prior():
    # one layer, n = 4, top-2 with logits; token 0 [3, 2, 1, 0] serves 0, 1 (range 3);
    # token 1 [0, 1, 2.5, 2] ranks 2, 3, 1, 0 (range 2.5): Δavg = 2.75, λ = 0.5 gives a bonus
    # of 1.375 to the cached 0, 1 and the top-1 expert 2: z' = [1.375, 2.375, 3.875, 2], so
    # 2 then 1 are served (1 instead of 3); with λ = 0 it is the top-2, 2 and 3
    t = from_routing(np.array([[[0, 1]], [[2, 3]]]), router(4, 1, 2).layout, "groups",
                     logits=np.array([[[3.0, 2.0, 1.0, 0.0]], [[0.0, 1.0, 2.5, 2.0]]]))
    res = simulate(t, "lru", 3, routing="cache-prior:lambda=0.5", record=True, engine="fast")
    assert res.events["served_pages"].tolist() == [0, 1, 2, 1]
    assert res.misses == 3 and res.hit_mask.tolist() == [0, 0, 0, 1]
    plain = simulate(t, "lru", 3, routing="cache-prior:lambda=0", record=True, engine="fast")
    assert plain.events["served_pages"].tolist() == [0, 1, 2, 3]
    for lam in (0.5, 0):
        hook = f"cache-prior:lambda={lam}"
        assert_same(simulate(t, "lru", 3, routing=hook, record=True, engine="fast"),
                    simulate(t, "lru", 3, routing=hook, record=True, engine="reference"))


class _UserHook(MaxRank):
    """A subclass may change any hook method: no kernel."""


class _UserLFU(LFU):
    """A subclass that does not declare its own kernel may change any policy hook: no kernel."""


def test_uncompiled_routing_falls_back_or_is_refused():
    t = router(5, 2, 6, k=2, seed=1, expand="groups")
    # user hooks and user policies run in the reference loop under auto
    for policy, hook in (("lru", _UserHook(1)), (_UserLFU(), MaxRank(1))):
        a = simulate(t, policy, 3, routing=hook, record=True)
        with pytest.raises(PagingError, match="no compiled kernel for routing"):
            simulate(t, policy, 3, routing=hook, engine="fast")
        assert a.extra["routing"] == hook.spec()
