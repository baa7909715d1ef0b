"""The compiled SpecMD phases (paging.fast.phases) reproduce the reference loop exactly.

Every policy with a phase kernel (and the token policies, in theirs) is run with a prefetcher
and/or a miss handler by ``simulate(..., engine="reference")`` and ``engine="fast"`` on random
rounds- and groups-mode traces (with random gate scores and ranks), and the two Results must
agree field by field: the counts, the hit mask, the eviction log (rows and order), the
bypasses, the ``extra`` counters (prefetch and miss statistics, exact floats) and every event
log.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import cascade_handler, page_weights, round_traces, topk_traces

from paging import fast
from paging.errors import PagingError
from paging.fast import prefetch_plan
from paging.miss import make_miss
from paging.policies import POLICY_NAMES, make_policy
from paging.predict.prefetch import Prefetcher, Transition, make_prefetch_predictor, make_strategy
from paging.simulate import simulate
from paging.trace import Trace

LIST_POLICIES = [n for n in POLICY_NAMES if (fast.plan(make_policy(n)) or ("",))[0] == "list"]
CREDIT_POLICIES = [n for n in POLICY_NAMES
                   if (fast.plan(make_policy(n)) or ("",))[0] == "credit"]
#: the policies the phase kernel runs: the list family, LFU, LHU, Belady, the credit family,
#: Marking, ARC, LeCaR, Score-Based and the prediction policies (an eviction scans the
#: partition, or ARC's lists)
SCANNED_POLICIES = ["lfu", "lfu-dist", "lhu", "lhu-dist", "belady", "belady-dist",
                    *CREDIT_POLICIES, "marking", "marking-dist", "arc", "arc-dist", "lecar",
                    "lecar-dist", "score-based",
                    "score-based-dist", "blind-oracle", "blind-oracle-dist",
                    "blind-oracle:oracle:eta=0.5,seed=1", "blind-oracle-dist:oracle:eta=0.3",
                    "predictive-marker", "predictive-marker-dist:oracle:eta=0.5", "lmarker",
                    "lmarker-dist:oracle", "robust-blind-oracle",
                    "robust-blind-oracle-dist:oracle:eta=0.5"]
#: the token policies' own kernel (paging.fast.tokens) runs the same phases; the combiner
#: refuses prefetching in the reference, so it is run with miss handling only
TOKEN_POLICIES = ["token-hazard", "token-decay", "token-match", "token-hazard-dist",
                  "token-decay-dist", "token-match-dist", "match-window"]
COMBINERS = ["robust-token-match", "robust-token-match-dist", "robust:token-decay,lru,margin=1"]
PHASE_POLICIES = [*LIST_POLICIES, *SCANNED_POLICIES]
#: with prefetching, LLRU and LLRU-latest (and -dist) find their victims by a scan
PREFETCH_POLICIES = PHASE_POLICIES
PREDICTORS = ["oracle:precision=0.6,recall=0.8,seed=2", "oracle", "previous-token", "frequency",
              "transition"]
STRATEGIES = ["topk", "topk:overfetch=1.5", "percentile:p=60"]
MISSES = [None, "drop:rank=1", "drop:score=0.5", "substitute"]
RECORDS = (True, "hits", False)


def assert_same(ref, got) -> None:
    assert got.to_dict() == ref.to_dict()
    for f in ("dropped", "substituted", "cost", "bytes_fetched"):
        assert getattr(got, f) == getattr(ref, f), f
    np.testing.assert_array_equal(got.page_misses, ref.page_misses)
    for f in ("hit_mask", "evictions", "bypassed"):
        a, b = getattr(ref, f), getattr(got, f)
        assert (a is None) == (b is None), f
        if a is not None:
            assert a.dtype == b.dtype and a.shape == b.shape, f
            np.testing.assert_array_equal(b, a, err_msg=f)
    assert (ref.events is None) == (got.events is None)
    if ref.events is not None:
        assert list(got.events) == list(ref.events)
        for key, a in ref.events.items():
            b = got.events[key]
            if a is None or isinstance(a, list):
                assert (b is None) == (a is None), key
                if a is not None:
                    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True)), key
                continue
            assert a.dtype == b.dtype and a.shape == b.shape, key
            np.testing.assert_array_equal(b, a, err_msg=key)


@st.composite
def scored_traces(draw, rounds: bool = False):
    """A top-K trace (or a rounds trace with rank 0 everywhere) with random gate scores."""
    tr = draw(round_traces(max_rounds=10) if rounds else topk_traces(max_tokens=8))
    N = tr.n_requests
    score = np.asarray(draw(st.lists(st.sampled_from([0.05, 0.2, 0.3, 0.5, 0.7, 0.9]),
                                     min_size=N, max_size=N)), dtype=np.float64)
    rank = tr.rank if tr.rank is not None else np.zeros(N, np.int64)
    return Trace(tr.layout, tr.pages, tr.steps, tr.name, tr.token, rank, score, tr.expand,
                 tr.meta)


def prefetcher(spec, strategy, trace):
    """A fresh prefetcher; ``transition`` is fitted on a renamed copy of the trace."""
    if spec is None:
        return None
    if spec == "transition":
        train = Trace(trace.layout, trace.pages, trace.steps, "train", trace.token, trace.rank,
                      trace.score, trace.expand, trace.meta)
        return Prefetcher(Transition([train]), make_strategy(strategy))
    return Prefetcher(make_prefetch_predictor(spec), make_strategy(strategy))


def both(trace, name, cap, pred, strat, miss, record, **kw):
    ref = simulate(trace, name, cap, record=record, engine="reference",
                   prefetch=prefetcher(pred, strat, trace), miss=make_miss(miss), **kw)
    got = simulate(trace, name, cap, record=record, engine="fast",
                   prefetch=prefetcher(pred, strat, trace), miss=make_miss(miss), **kw)
    assert_same(ref, got)


@pytest.mark.parametrize("name", PREFETCH_POLICIES)
@given(trace=scored_traces(), data=st.data(), pred=st.sampled_from(PREDICTORS),
       strat=st.sampled_from(STRATEGIES), miss=st.sampled_from(MISSES))
def test_prefetch_and_miss_kernel_equals_reference(name, trace, data, pred, strat, miss):
    k = data.draw(st.integers(1, trace.layout.n_pages + 1))
    for record in RECORDS:
        both(trace, name, k, pred, strat, miss, record)


@pytest.mark.parametrize("name", LIST_POLICIES)
@given(trace=scored_traces(), data=st.data(), miss=st.sampled_from(MISSES[1:]))
def test_miss_kernel_equals_reference(name, trace, data, miss):
    for k in range(1, trace.layout.n_pages + 2):
        for record in RECORDS:
            both(trace, name, k, None, None, miss, record)


@pytest.mark.parametrize("name", SCANNED_POLICIES)
@settings(max_examples=40)
@given(trace=scored_traces(), data=st.data(), miss=st.sampled_from(MISSES[1:]))
def test_miss_kernel_equals_reference_scanned(name, trace, data, miss):
    """The same for the families whose victim is found by a scan (fewer examples: each runs
    every cache size; the prefetch test above covers them with the CI profile's count)."""
    for k in range(1, trace.layout.n_pages + 2):
        for record in RECORDS:
            both(trace, name, k, None, None, miss, record)


@pytest.mark.parametrize("name", ["lru", "fifo", "lru-dist", "least-stale", "fld", "fwf",
                                  "llru", "llru-latest", "llru-dist", "lfu", "marking",
                                  "arc-dist", "lecar", "blind-oracle:oracle:eta=0.5,seed=1"])
@given(trace=scored_traces(rounds=True), data=st.data(), pred=st.sampled_from(PREDICTORS),
       miss=st.sampled_from(MISSES))
def test_rounds_traces(name, trace, data, pred, miss):
    k = data.draw(st.integers(1, trace.layout.n_pages + 1))
    both(trace, name, k, pred, "topk:overfetch=1.5", miss, True)


@pytest.mark.parametrize("name", ["lru", "fifo", "fwf", "least-stale", "fld", "lru-dist",
                                  "llru", "llru-latest-dist", "lfu", "lfu-dist", "lhu",
                                  "lhu-dist", "belady", *CREDIT_POLICIES, "marking",
                                  "marking-dist", "arc", "lecar-dist", "score-based",
                                  "blind-oracle",
                                  "blind-oracle-dist:oracle:eta=0.3", "predictive-marker",
                                  "lmarker-dist", "robust-blind-oracle:oracle"])
@given(trace=scored_traces(), data=st.data(), pred=st.sampled_from([None, *PREDICTORS[:3]]),
       cascade=st.sampled_from(["lowest-bit", "priority", "none", "substitute"]))
def test_byte_budget_and_mixed_precision(name, trace, data, pred, cascade):
    """A byte budget with page sizes; the cascades put pages of several sizes in the cache."""
    P = trace.layout.n_pages
    costs, sizes = data.draw(page_weights(P, max_size=6))
    budget = data.draw(st.integers(1, int(sizes.sum()) + 1))
    if budget < int(sizes.min()):
        budget = int(sizes.min())
    miss = cascade_handler(cascade, costs, sizes)
    if pred is None and miss is None:
        miss = make_miss("substitute")
    for record in RECORDS:
        both(trace, name, None, pred, "topk", miss, record, budget=budget, costs=costs,
             sizes=sizes)


@pytest.mark.parametrize("spec", ["robust-blind-oracle", "robust-blind-oracle:oracle:eta=0.5"])
@given(trace=scored_traces(), data=st.data(), pred=st.sampled_from(PREDICTORS),
       miss=st.sampled_from(MISSES))
def test_robust_combiner_state(spec, trace, data, pred, miss):
    """The shared combiner ends a compiled phase run as a reference run leaves it: its virtual
    caches' miss counts (which a prefetch's eviction after a request the policy did not hear
    also moves), its leader and its switches."""
    k = data.draw(st.integers(1, trace.layout.n_pages + 1))
    pols = [make_policy(spec), make_policy(spec)]
    res = [simulate(trace, pol, k, engine=engine, prefetch=prefetcher(pred, "topk", trace),
                    miss=make_miss(miss), record=True)
           for pol, engine in zip(pols, ("reference", "fast"), strict=True)]
    assert_same(*res)
    ref, got = pols
    assert (got.cost, got.leader, got.switches) == (ref.cost, ref.leader, ref.switches)


@pytest.mark.parametrize("name", [*TOKEN_POLICIES, *COMBINERS])
@settings(max_examples=40)
@given(trace=scored_traces(), data=st.data(), pred=st.sampled_from([None, *PREDICTORS]),
       strat=st.sampled_from(STRATEGIES), miss=st.sampled_from(MISSES))
def test_token_policies_with_phases(name, trace, data, pred, strat, miss):
    """The token policies and the combiner over them, in the token kernel with prefetching
    (not the combiner: the reference refuses it) and/or a miss handler, in pages and under a
    byte budget with the precision cascades (pages of several sizes in the cache)."""
    if name == "match-window":  # a small window (the match's ring of tokens wraps)
        from paging.policies.match import TokenMatch

        name = TokenMatch(neighbours=2, shrink=0.25, window=3, lam=0.9)
    if name in COMBINERS:
        pred = None
    if pred is None and miss is None:
        miss = "substitute"
    k = data.draw(st.integers(1, trace.layout.n_pages + 1))
    both(trace, name, k, pred, strat, miss, data.draw(st.sampled_from(RECORDS)))
    P = trace.layout.n_pages
    costs, sizes = data.draw(page_weights(P, max_size=6))
    budget = max(data.draw(st.integers(1, int(sizes.sum()) + 1)), int(sizes.min()))
    handler = cascade_handler(data.draw(st.sampled_from(["lowest-bit", "priority",
                                                          "substitute"])), costs, sizes)
    both(trace, name, None, pred, "topk", handler, True, budget=budget, costs=costs,
         sizes=sizes)


@pytest.mark.parametrize("name", ["token-match", "token-decay-dist", "robust-token-match"])
@given(trace=scored_traces(rounds=True), data=st.data(), pred=st.sampled_from(PREDICTORS),
       miss=st.sampled_from(MISSES))
def test_token_policies_rounds_traces(name, trace, data, pred, miss):
    k = data.draw(st.integers(1, trace.layout.n_pages + 1))
    both(trace, name, k, None if name in COMBINERS else pred, "topk:overfetch=1.5",
         miss or "substitute", True)


@given(trace=scored_traces(), data=st.data(), miss=st.sampled_from(MISSES[1:]))
def test_token_combiner_state(trace, data, miss):
    """A shared combiner over token policies ends a compiled run with a miss handler as a
    reference run leaves it: its leader and switches (a substitute is heard as a hit on the
    page that serves the request, so its virtual caches serve that page)."""
    k = data.draw(st.integers(1, trace.layout.n_pages + 1))
    pols = [make_policy("robust:token-decay,lru"), make_policy("robust:token-decay,lru")]
    res = [simulate(trace, pol, k, engine=engine, miss=make_miss(miss), record=True)
           for pol, engine in zip(pols, ("reference", "fast"), strict=True)]
    assert_same(*res)
    ref, got = pols
    assert (got.leader, got.switches) == (ref.leader, ref.switches)


@pytest.mark.parametrize("name", CREDIT_POLICIES)
@given(trace=scored_traces(), data=st.data(), pred=st.sampled_from([None, *PREDICTORS]),
       miss=st.sampled_from(MISSES))
def test_credit_policies_with_costs(name, trace, data, pred, miss):
    """A cache of k pages whose pages have fetch costs and sizes: the credits read both."""
    costs, sizes = data.draw(page_weights(trace.layout.n_pages, max_size=6))
    k = data.draw(st.integers(1, trace.layout.n_pages + 1))
    both(trace, name, k, pred, "topk", miss, True, costs=costs, sizes=sizes)


def test_unsupported_configurations_fall_back_or_refuse():
    from paging import generators
    from paging.policies.classic import LRU

    class MyLRU(LRU):  # a subclass may change any hook: the reference loop
        pass

    tr = generators.zipf(n=4, layers=3, tokens=20, seed=0)
    pf = Prefetcher(make_prefetch_predictor("frequency"))
    for kw in (dict(miss="substitute"), dict(prefetch=pf), dict(prefetch=pf, miss="substitute")):
        with pytest.raises(PagingError, match="no compiled kernel for this run") as e:
            simulate(tr, MyLRU(), 3, engine="fast", **kw)
        assert "\n" not in str(e.value)
        ref = simulate(tr, MyLRU(), 3, engine="reference", record=True, **kw)
        assert_same(ref, simulate(tr, MyLRU(), 3, engine="auto", record=True, **kw))
    # the combiner refuses prefetching, before the run on either engine (Policy.prefetches;
    # the reference's on_prefetch refused only at a first prefetch, so a run that never
    # prefetched passed)
    for engine in ("fast", "auto", "reference"):
        with pytest.raises(PagingError, match="robust-token-match does not support prefetch"):
            simulate(tr, "robust-token-match", 3, engine=engine, prefetch=pf)
    # a handler that needs ranks the trace lacks: the reference loop's own error
    with pytest.raises(PagingError, match="ranks"):
        simulate(tr.__class__(tr.layout, tr.pages, tr.steps, tr.name), "lru", 3,
                 miss="drop:rank=1")


def test_auto_takes_the_kernel():
    """``engine="auto"`` runs the phase kernel for a supported configuration."""
    from unittest import mock

    from paging import generators

    tr = generators.zipf(n=4, layers=3, tokens=20, seed=0)
    with mock.patch("paging.simulate._run", side_effect=AssertionError("reference loop")):
        simulate(tr, "lru", 3, prefetch=Prefetcher(make_prefetch_predictor("frequency")),
                 miss="substitute")


def numpy_plan(pf, trace, seed):
    """The plan by the numpy definitions (``score_matrix``, ``select_all``, ``np.unique``): what
    ``Prefetcher.plan`` computed before its compiled loops."""
    from paging.core import group_bounds as _group_bounds
    from paging.predict.prefetch import _tokens

    pred = pf.predictor
    pred.reset(trace, np.random.default_rng(seed))
    pf.K = trace.top_k
    L, n, N = trace.layout.n_layers, trace.layout.n_experts, trace.n_requests
    tok = _tokens(trace)
    ends = _group_bounds(trace.steps) if N else np.zeros(0, np.int64)
    lo = np.flatnonzero(np.r_[True, trace.steps[1:] != trace.steps[:-1]]) if N else ends
    hi = ends[lo] if N else ends
    lo, hi = lo[hi < N], hi[hi < N]
    token, layer = tok[hi], np.asarray(trace.layers)[hi]
    key = tok * L + trace.layers
    ukey, inv = np.unique(key, return_inverse=True)
    truth = np.zeros((ukey.size, n), dtype=bool)
    truth[inv, trace.pages % n] = True
    actual = truth[inv[hi]]
    scores = np.asarray(pred.score_matrix(lo, hi, token, layer, actual), dtype=np.float64)
    rows, experts = pf.strategy.select_all(scores, pf.target_k(trace, hi))
    return (layer[rows] * n + experts, np.searchsorted(rows, np.arange(lo.size + 1)), lo,
            int(rows.size), int(actual[rows, experts].sum()), int(actual.sum()))


@given(trace=scored_traces(), pred=st.sampled_from(PREDICTORS),
       strat=st.sampled_from([*STRATEGIES, "topk:overfetch=2.5", "topk:overfetch=40",
                              "percentile:p=80", "percentile:p=1", "percentile:p=99.5"]),
       seed=st.integers(0, 9))
def test_compiled_plan_equals_the_numpy_plan(trace, pred, strat, seed):
    """The group bounds, the true experts of the targets, transition's sums, frequency's counts
    and the top-K and percentile selections of ``Prefetcher.plan`` run in compiled loops: the
    same plan as numpy's."""
    pf = prefetcher(pred, strat, trace)
    pages, start, lo = pf.plan(trace, seed)
    want = numpy_plan(prefetcher(pred, strat, trace), trace, seed)
    for a, b in zip((pages, start, lo), want[:3], strict=True):
        np.testing.assert_array_equal(a, b)
    assert (pf.predicted, pf.predicted_right, pf.actual) == want[3:]


def test_topk_rows_ties_and_non_positive_scores():
    """Ties go to the lower expert; scores <= 0 are never proposed."""
    scores = np.array([[1.0, 3.0, 3.0, 0.0], [0.0, -1.0, 0.0, 0.0], [2.0, 2.0, 2.0, 5.0]])
    actual = np.ones((3, 4), dtype=bool)
    rows, ex, start, right = prefetch_plan.topk_rows(scores, np.array([3, 2, 2]), actual)
    assert rows.tolist() == [0, 0, 0, 2, 2] and ex.tolist() == [1, 2, 0, 3, 0]
    assert start.tolist() == [0, 3, 3, 5] and right == 5


@given(n=st.sampled_from([1, 2, 3, 5, 8, 9, 33, 40]), data=st.data(),
       p=st.sampled_from([0.5, 1, 25, 33.3, 50, 60, 80, 87.5, 99.9]))
def test_percentile_rows_equal_numpy(n, data, p):
    """The compiled percentile selection equals ``Percentile.select_all`` (numpy.percentile's
    interpolation) on rows with ties, zeros, negative and fractional scores (short rows are
    sorted by insertion, long ones, n > 32, by numpy's sort)."""
    from paging.predict.prefetch import Percentile

    G = data.draw(st.integers(0, 6))
    vals = st.sampled_from([0.0, -1.0, 0.1, 0.3, 1.0, 1.0 / 3, 2.0, 7.25, 1e-9, 3.0])
    scores = np.array(data.draw(st.lists(st.lists(vals, min_size=n, max_size=n),
                                         min_size=G, max_size=G)), dtype=np.float64)
    scores = scores.reshape(G, n)
    rows, ex = Percentile(p).select_all(scores, 0)
    actual = np.ones((G, n), dtype=bool)
    r2, e2, start, right = prefetch_plan.percentile_rows(np.ascontiguousarray(scores), float(p),
                                                         actual)
    assert rows.tolist() == r2.tolist() and ex.tolist() == e2.tolist()
    assert start.tolist() == np.searchsorted(rows, np.arange(G + 1)).tolist()
    assert right == rows.size
