"""The prediction family's kernels (paging.fast.predictive) against the reference loop, beyond
the generic cases of test_kernels.py (which run every registered name with its default
predictor, ``frequency``, and Score-Based on scores that are a function of the page id):
random gate scores with ties, the ``oracle`` predictor exact and noisy with several seeds, per
layer, byte budgets; what the kernels refuse; and decisions checked by hand."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import round_traces, topk_traces
from test_kernels import assert_same

from paging import fast
from paging.errors import PagingError
from paging.layout import Layout
from paging.policies import PerLayer, make_policy
from paging.policies.predictive import BlindOracle, LMarker, PredictiveMarker, RobustBlindOracle
from paging.predict import FrequencyPredictor, OraclePredictor, Predictor, register_predictor
from paging.simulate import simulate
from paging.trace import Trace, from_pages

PREDICTIVE = ("blind-oracle", "predictive-marker", "lmarker", "robust-blind-oracle")
#: few distinct values, so that histories tie (Score-Based breaks ties by recency)
SCORES = (0.0, 0.25, 0.5, 1.0, 1 / 3)


@st.composite
def scored_traces(draw):
    """A rounds- or groups-mode trace with random gate scores drawn from :data:`SCORES`."""
    trace = draw(st.one_of(round_traces(), topk_traces(max_experts=5, max_layers=3,
                                                       max_tokens=7)))
    N = trace.n_requests
    score = np.array(draw(st.lists(st.sampled_from(SCORES), min_size=N, max_size=N)),
                     dtype=np.float64)
    return Trace(trace.layout, trace.pages, trace.steps, trace.name, trace.token, trace.rank,
                 score, trace.expand, trace.meta)


def predictor_specs():
    """``frequency``, the exact oracle, or a noisy one (η from small to larger than the
    sequence, several seeds)."""
    noisy = st.builds(lambda e, s: f"oracle:eta={e},seed={s}",
                      st.sampled_from([0.1, 0.5, 2, 50]), st.integers(0, 5))
    return st.one_of(st.just("frequency"), st.just("oracle"), noisy)


def check(trace, name: str, seed: int, ks, **kw) -> None:
    for k in ks:
        ref = simulate(trace, name, k, seed=seed, record=True, engine="reference", **kw)
        got = simulate(trace, name, k, seed=seed, record=True, engine="fast", **kw)
        assert_same(ref, got)


def _ks(trace):
    return range(1, trace.layout.n_pages + 2)


@given(trace=scored_traces(), dist=st.booleans())
def test_score_based_random_scores(trace, dist):
    check(trace, "score-based-dist" if dist else "score-based", 0, _ks(trace))


@pytest.mark.parametrize("base", PREDICTIVE)
@given(trace=st.one_of(round_traces(), topk_traces(max_experts=5, max_layers=3, max_tokens=7)),
       spec=predictor_specs(), dist=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_predictors(base, trace, spec, dist, seed):
    """Every policy with every predictor, shared and per layer, rounds and groups mode (pinned
    groups, bypasses), every k; the markers' uniform draws under random run seeds."""
    name = f"{base}{'-dist' if dist else ''}:{spec}"
    assert fast.has_kernel(make_policy(name))
    check(trace, name, seed, _ks(trace))


@st.composite
def budget_runs(draw):
    trace = draw(scored_traces())
    P = trace.layout.n_pages
    sizes = np.array(draw(st.lists(st.integers(1, 4), min_size=P, max_size=P)), dtype=np.int64)
    costs = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5]), min_size=P,
                                   max_size=P)))
    budget = draw(st.integers(int(sizes.min()), int(sizes.sum()) + 1))
    return trace, sizes, costs, budget


@pytest.mark.parametrize("base", ("score-based",) + PREDICTIVE)
@given(run=budget_runs(), spec=predictor_specs(), dist=st.booleans(), seed=st.integers(0, 99))
@settings(max_examples=40)
def test_byte_budgets(base, run, spec, dist, seed):
    """Several victims per miss (a new marking phase may start between two of them), pages
    larger than a layer's share (bypasses: the policy, and its predictor, hear nothing), the
    oracle normalised by OPT at the pages the budget holds (budget // smallest size), the
    combiner's virtual caches of as many pages."""
    trace, sizes, costs, budget = run
    name = f"{base}{'-dist' if dist else ''}" + ("" if base == "score-based" else f":{spec}")
    for cap in (budget, max(int(sizes.min()), budget // 2)):
        kw = dict(budget=cap, sizes=sizes, costs=costs, seed=seed, record=True)
        ref = simulate(trace, name, engine="reference", **kw)
        got = simulate(trace, name, engine="fast", **kw)
        assert_same(ref, got)


@given(trace=round_traces(max_rounds=12), spec=predictor_specs(), k=st.integers(1, 8))
def test_robust_state_after_a_run(trace, spec, k):
    """A compiled run leaves what callers read after a reference run: the combiner's leader,
    switches and virtual miss counts (proofs/predictions_robust.py reads them), and the oracle
    predictor's predictions and OPT."""
    name = f"robust-blind-oracle:{spec}"
    ref, got = make_policy(name), make_policy(name)
    simulate(trace, ref, k, engine="reference")
    simulate(trace, got, k, engine="fast")
    assert (got.leader, got.switches, got.cost) == (ref.leader, ref.switches, ref.cost)
    if spec.startswith("oracle"):
        assert got.predictor.pred == ref.predictor.pred and got.predictor.opt == ref.predictor.opt


def test_longer_traces_agree():
    """Longer traces than hypothesis draws (many phases and chains, switches), every policy."""
    from paging.generators import zipf

    trace = zipf(n=6, layers=4, tokens=400, a=1.0, seed=4)
    rng = np.random.default_rng(4)
    trace = Trace(trace.layout, trace.pages, trace.steps, trace.name, trace.token, trace.rank,
                  rng.random(trace.n_requests), trace.expand, trace.meta)
    names = ["score-based", "score-based-dist"] + [
        f"{b}{d}:{s}" for b in PREDICTIVE for d in ("", "-dist")
        for s in ("frequency", "oracle", "oracle:eta=1,seed=2", "oracle:eta=20,seed=1")]
    for name in names:
        check(trace, name, 5, (1, 3, 7, 12, 23, 10**6))


# -- what the kernels refuse ---------------------------------------------------------------------
class Reversed(Predictor):
    """A user predictor: any state, anything the context offers. No kernel."""

    name = "reversed-test"

    def predict(self, t, page):
        return -float(t)


class MyOracle(OraclePredictor):
    """A subclass may change ``predict``: no kernel."""

    def predict(self, t, page):
        return -super().predict(t, page)


def test_refusals():
    tr = from_pages([0, 1, 2, 0, 3, 1, 2, 0], Layout(4, 1))
    for cls in (BlindOracle, PredictiveMarker, LMarker, RobustBlindOracle):
        assert fast.has_kernel(cls())
        assert fast.has_kernel(cls(predictor="oracle:eta=0.5"))
        assert fast.has_kernel(PerLayer(lambda c=cls: c(predictor="oracle")))
        for pred in (Reversed(), MyOracle()):
            pol = cls(predictor=pred)
            assert not fast.has_kernel(pol) and fast.run(tr, pol, 2) is None
            with pytest.raises(PagingError, match="no compiled kernel"):
                simulate(tr, pol, 2, engine="fast")
            assert simulate(tr, pol, 2).misses == simulate(tr, cls(predictor=pred), 2,
                                                           engine="reference").misses
        # one predictor object shared by every layer: their resets overwrite each other
        shared = OraclePredictor(eta=1.0)
        assert not fast.has_kernel(PerLayer(lambda c=cls, p=shared: c(predictor=p)))
        freq = FrequencyPredictor()
        assert not fast.has_kernel(PerLayer(lambda c=cls, p=freq: c(predictor=p)))


def test_registered_predictor_runs_in_the_reference_loop():
    from paging.predict import PREDICTORS

    if "reversed-test" not in PREDICTORS:
        register_predictor("reversed-test", Reversed)
    pol = make_policy("lmarker:reversed-test")
    assert not fast.has_kernel(pol)
    assert not fast.has_kernel(make_policy("lmarker-dist:reversed-test"))


def test_score_based_without_scores_is_refused_the_same_way():
    tr = from_pages([0, 1, 2, 0], Layout(3, 1))
    for engine in ("auto", "fast", "reference"):
        for name in ("score-based", "score-based-dist"):
            with pytest.raises(PagingError, match=f"^{name} reads gate scores and the trace "
                               "has none$"):
                simulate(tr, name, 2, engine=engine)


def test_marking_draws_stay_the_reference_stream():
    """The markers consume ``marking_draws(seed, N)`` in eviction order: the same doubles the
    reference draws one at a time (pick_uniform), across layers for the -dist variants."""
    assert fast.needs_draws(fast.plan(make_policy("lmarker-dist")))
    assert fast.needs_draws(fast.plan(make_policy("predictive-marker")))
    assert not fast.needs_draws(fast.plan(make_policy("blind-oracle")))
    assert not fast.needs_draws(fast.plan(make_policy("score-based")))


# -- decisions checked by hand ---------------------------------------------------------------------
def _both(trace, name, k, seed=0, **kw):
    ref = simulate(trace, name, k, seed=seed, record=True, engine="reference", **kw)
    got = simulate(trace, name, k, seed=seed, record=True, engine="fast", **kw)
    assert_same(ref, got)
    return got


def test_score_based_by_hand():
    """k=2, pages 0 1 2 0 3 1, scores .5 .5 .5 .25 1 0: t2 H0 = H1 = .5, the least recently
    used goes (0); t3 H1 = H2 = .5, 1 goes (older); 0's history survives: H0 = .75; t4 H2 = .5
    < H0, 2 goes; t5 H0 = .75 < H3 = 1, 0 goes."""
    tr = from_pages([0, 1, 2, 0, 3, 1], Layout(4, 1))
    tr = Trace(tr.layout, tr.pages, tr.steps, tr.name, tr.token, tr.rank,
               np.array([0.5, 0.5, 0.5, 0.25, 1.0, 0.0]), tr.expand, tr.meta)
    got = _both(tr, "score-based", 2)
    assert got.evictions.tolist() == [[2, 0], [3, 1], [4, 2], [5, 0]] and got.misses == 6


def test_markers_by_hand():
    """k=3 (H_3 = 11/6), pages 0 1 2 3 2 1 0 4, frequency predictions t + (t+1)/count:
    0 -> 1, 1 -> 3, 2 -> 5, 3 -> 7, 2 -> 6.5, 1 -> 8, 0 -> 9.5, 4 -> 15.

    t3: every page marked: a new phase; 3 is clean (a chain of 1 <= H_3): the furthest
    unmarked page goes, 2 (5 > 3 > 1). t4: 2 was evicted in this phase: stale, its chain has
    2 > H_3 misses, so both markers draw u among the unmarked {0, 1} (by id): u = the run's
    first draw. With u >= 1/2 (seed 0: u = 0.637) page 1 goes; t5: 1 is stale too (chain 3),
    the only unmarked page 0 goes (a second draw); t6: a new phase, clean, the furthest of
    {3: 7, 2: 6.5, 1: 8} goes, 1; t7: 4 is clean, the furthest unmarked of {3: 7, 2: 6.5}: 3.
    With u < 1/2 (seed 2: u = 0.262) page 0 goes at t4; t5 hits 1; t6: a new phase, the
    furthest of {1: 8, 3: 7, 2: 6.5} goes, 1; t7: 3."""
    tr = from_pages([0, 1, 2, 3, 2, 1, 0, 4], Layout(5, 1))
    assert np.random.default_rng(0).random() >= 0.5 > np.random.default_rng(2).random()
    for name in ("predictive-marker", "lmarker"):
        got = _both(tr, name, 3, seed=0)
        assert got.evictions.tolist() == [[3, 2], [4, 1], [5, 0], [6, 1], [7, 3]], name
        assert got.misses == 8
        got = _both(tr, name, 3, seed=2)
        assert got.evictions.tolist() == [[3, 2], [4, 0], [6, 1], [7, 3]], name
        assert got.hit_mask.tolist() == [False] * 5 + [True] + [False] * 2


def test_markers_differ_by_hand():
    """k=4 (H_4 = 25/12 > 2): a stale miss whose chain has 2 misses makes LMarker draw but
    PredictiveMarker still evicts the furthest. Pages 0 1 2 3 4 3, frequency: t4
    evicts the furthest of {0: 1, 1: 3, 2: 5, 3: 7}, 3; t5 re-requests 3 (stale, chain 2):
    PredictiveMarker evicts the furthest unmarked of {0, 1, 2}, 2 (5); LMarker draws u among
    them by id (seed 0, u = 0.637: index 1, page 1)."""
    tr = from_pages([0, 1, 2, 3, 4, 3], Layout(5, 1))
    assert _both(tr, "predictive-marker", 4).evictions.tolist() == [[4, 3], [5, 2]]
    assert _both(tr, "lmarker", 4).evictions.tolist() == [[4, 3], [5, 1]]


def test_robust_blind_oracle_by_hand():
    """k=2 with exact predictions the combiner follows BlindOracle = Belady (0 1 2 0 1 2:
    t2 evicts 1 whose next use, 4, is further than 0's, 3; t4 evicts 0, never used again) and
    its virtual caches count BlindOracle 4 misses, LRU 6 (every request), no switch."""
    tr = from_pages([0, 1, 2, 0, 1, 2], Layout(3, 1))
    pol = make_policy("robust-blind-oracle:oracle")
    got = simulate(tr, pol, 2, record=True, engine="fast")
    assert got.evictions.tolist() == [[2, 1], [4, 0]]
    assert (pol.cost, pol.leader, pol.switches) == ([4, 6], 0, 0)
    assert_same(simulate(tr, "robust-blind-oracle:oracle", 2, record=True, engine="reference"),
                got)
