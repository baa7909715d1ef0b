"""ARC, LeCaR and the prediction-based policies on hand-checked examples (worked out in the
comments), the predictor specs and their errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import round_traces, topk_traces

from paging import Layout, from_pages, simulate
from paging.cli import main
from paging.core import Simulation
from paging.errors import PagingError
from paging.generators import cyclic
from paging.policies import make_policy
from paging.predict import OraclePredictor, make_predictor, opt_from_next_use


def run(name_or_pol, pages, k, n=None, seed=0):
    n = n or max(pages) + 1
    return simulate(from_pages(pages, Layout(n, 1)), name_or_pol, k, seed=seed, record=True,
                    engine="reference")


def test_arc_hand_example():
    """c=3, 0 1 2 0 3 1 4 0 2 (libCacheSim's ARC agrees, tests/golden):
    t0-2 T1=[0,1,2]; t3 hit 0 -> T2=[0]; t4 3: |T1|+|B1|=2<3, REPLACE: |T1|=2>p=0 -> 1 to B1;
    t5 1 in B1: p=min(0+max(0/1,1),3)=1, REPLACE: |T1|=2>1 -> 2 to B1, 1 -> T2=[0,1];
    t6 4: |T1|+|B1|=2, total 4<6, REPLACE: |T1|=1 not > p=1 -> T2's LRU 0 to B2;
    t7 0 in B2: p=max(1-max(1/1,1),0)=0, REPLACE: |T1|=2>0 -> 3 to B1;
    t8 2 in B1: p=min(0+max(0/2,1),3)=1, REPLACE: |T1|=1 not > 1 -> T2's LRU 1 to B2."""
    pol = make_policy("arc")
    r = run(pol, [0, 1, 2, 0, 3, 1, 4, 0, 2], 3)
    assert r.misses == 8
    assert r.evictions.tolist() == [[4, 1], [5, 2], [6, 0], [7, 3], [8, 1]]
    assert pol.p == 1.0 and list(pol.B1) == [3] and list(pol.B2) == [1]  # 0 left B2 at t7
    assert list(pol.T1) == [4] and list(pol.T2) == [0, 2]


def test_arc_case_iv_a_evicts_without_ghost():
    """c=2, 0 1 2: |T1|+|B1| = 2 >= c with B1 empty: T1's LRU page 0 leaves with no ghost."""
    pol = make_policy("arc")
    r = run(pol, [0, 1, 2], 2)
    assert r.evictions.tolist() == [[2, 0]] and not pol.B1 and not pol.B2


def _arc_lists(pol):
    return list(pol.T1), list(pol.T2), list(pol.B1), list(pol.B2)


def test_arc_prefetched_ghost_is_an_arrival():
    """One layer of 5 experts, c = 3, requests 0 0 1 1 2 3 4: T2 = [0, 1], T1 = [2] after t4;
    t5 (3) and t6 (4) miss with |T1| + |B1| < c and 6 pages in all directories < 2c: REPLACE,
    |T1| = 1 > p = 0, sends 2 then 3 to B1 (T1 = [4], B1 = [2, 3]). Prefetch 2 after t6 with 4
    pinned: it is 2's arrival (t6's was 4's): 2 in B1, p = min(0 + max(0/2, 1), 3) = 1, 2
    leaves B1; REPLACE with |T1| = 1 = p and no B2 hit picks T2, whose LRU 0 goes to B2; 2
    enters T2. Keyed on t alone, t6's arrival counted for 2: p stayed 0, case IV.A dropped the
    ghost 2 from B1, and 2 entered T1."""
    pol = make_policy("arc")
    sim = Simulation(Layout(5, 1), pol, 3, steps=np.arange(7), record=True)
    for p in (0, 0, 1, 1, 2, 3, 4):
        sim.serve(p)
    assert _arc_lists(pol) == ([4], [0, 1], [2, 3], []) and pol.p == 0.0
    assert sim.prefetch_group([2], keep=[4]) == 1
    assert _arc_lists(pol) == ([4], [1, 2], [3], [0]) and pol.p == 1.0
    assert sim.evictions == [(5, 2), (6, 3)] and sorted(sim.resident) == [1, 2, 4]


@pytest.mark.parametrize("name", ["arc", "arc-dist", "lecar"])
@given(tr=st.one_of(round_traces(max_experts=4, max_layers=3, max_rounds=20),
                    topk_traces(max_experts=4, max_layers=3, max_tokens=8)), k=st.integers(1, 5),
       seed=st.integers(0, 3))
def test_adaptive_prefetch_keeps_the_lists_consistent(name, tr, k, seed):
    """With a prefetcher (a prefetch after every group), at the end of the run: ARC's T1, T2,
    B1 and B2 are disjoint, |T1| + |B1| <= c and all four hold <= 2c pages; no page of
    LeCaR's recency list is in a history."""
    from paging.predict.prefetch import Frequency, Prefetcher, TopK

    pol = make_policy(name)
    if name.endswith("-dist"):
        k = k * tr.layout.n_layers  # every layer's share >= 1
    simulate(tr, pol, k, seed=seed, prefetch=Prefetcher(Frequency(), TopK(1.0)),
             engine="reference")
    parts = pol.subs if name.endswith("-dist") else [pol]
    for sub in parts:
        if name.startswith("arc"):
            lists = [set(x) for x in (sub.T1, sub.T2, sub.B1, sub.B2)]
            assert sum(map(len, lists)) == len(set().union(*lists))
            assert len(lists[0]) + len(lists[2]) <= sub.c
            assert sum(map(len, lists)) <= 2 * sub.c
        else:
            assert not (set(sub.recency) & (set(sub.h_lru) | set(sub.h_lfu)))


def test_lecar_hand_example():
    """k=2, 0 0 1 2 1, seed 0 (draws 0.63696..., 0.26978...). t3: LRU proposes 0 (older),
    LFU proposes 1 (count 1 < 2); u=0.637 >= w_LRU=0.5 -> LFU's 1, into H_LFU at t=3.
    t4: 1 is in H_LFU: d=1, δ=0.005^(1/2), w_LFU = 0.5·exp(-0.45·δ)+1e-10, normalised:
    w_LFU=0.4920457..., w_LRU=0.5079542...; LRU proposes 0, LFU 2 (count 1);
    u=0.2698 < w_LRU -> 0, into H_LRU (capacity floor(2/2)=1)."""
    pol = make_policy("lecar")
    r = run(pol, [0, 0, 1, 2, 1], 2, seed=0)
    assert r.evictions.tolist() == [[3, 1], [4, 0]]
    d = 0.005 ** 0.5
    w = 0.5 * math.exp(-0.45 * d) + 1e-10
    s = w + 0.5 + 2e-10
    assert pol.w_lfu == pytest.approx(w / s, rel=1e-15)
    assert pol.w_lru == pytest.approx((0.5 + 1e-10) / s, rel=1e-15)
    assert pol.h_lru == {0: 4} and pol.h_lfu == {}


def test_lecar_agreeing_experts_make_no_draw():
    """0 1 2, k=2: both experts propose 0 (oldest, count 1 each, reached 1 first): no draw,
    no history."""
    pol = make_policy("lecar")
    r = run(pol, [0, 1, 2], 2)
    assert r.evictions.tolist() == [[2, 0]] and not pol.h_lru and not pol.h_lfu


def test_blind_oracle_exact_is_belady():
    """k=2, 0 1 2 0 1 2, exact predictions: t2 predictions 0->3, 1->4: evict 1;
    t4 predictions 0->6 (never again), 2->5: evict 0. 4 misses = OPT."""
    r = run("blind-oracle:oracle", [0, 1, 2, 0, 1, 2], 2)
    assert r.evictions.tolist() == [[2, 1], [4, 0]] and r.misses == 4


def test_frequency_predictor_and_markers():
    """k=2, 0 0 1 2 1 with the frequency predictor t + (t+1)/count: 0 -> 1, then 2; 1 -> 5;
    2 -> 3 + 4/1 = 7. t3 (new phase, clean): every policy evicts the furthest, 1 (5 > 2).
    t4: BlindOracle evicts the furthest, 2 (7 > 2); the markers see a stale miss (1 was evicted
    in this phase; PredictiveMarker's chain has 2 > H_2 = 1.5 misses) and evict a random
    unmarked page: only 0 is unmarked."""
    pages = [0, 0, 1, 2, 1]
    assert run("blind-oracle", pages, 2).evictions.tolist() == [[3, 1], [4, 2]]
    for name in ("predictive-marker", "lmarker"):
        assert run(name, pages, 2).evictions.tolist() == [[3, 1], [4, 0]], name
    f = make_predictor("frequency")
    f.reset(None)
    assert [f.predict(t, p) for t, p in enumerate(pages)] == [1.0, 2.0, 5.0, 7.0, 6.5]


@given(trace=round_traces(), k=st.integers(1, 8))
def test_exact_predictions_give_opt(trace, k):
    """BlindOracle and the robust combiner (which never leaves BlindOracle when BlindOracle is
    OPT, and then follows it page for page) make OPT's misses with exact predictions."""
    opt = simulate(trace, "belady", k).misses
    assert simulate(trace, "blind-oracle:oracle", k).misses == opt
    assert simulate(trace, "robust-blind-oracle:oracle:eta=0", k).misses == opt


def test_oracle_noise_has_the_stated_l1_error():
    """Σ|pred − next| = η·OPT exactly (to rounding), seeded."""
    tr = from_pages([0, 1, 2, 0, 3, 1, 4, 0, 2, 3, 1, 0], Layout(5, 1))
    opt = simulate(tr, "belady", 2).misses
    assert opt_from_next_use(tr.next_use, 2) == opt
    pol = make_policy("blind-oracle:oracle:eta=0.75,seed=3")
    simulate(tr, pol, 2)
    err = np.abs(np.array(pol.predictor.pred) - tr.next_use).sum()
    assert err == pytest.approx(0.75 * opt, rel=1e-12)
    again = make_policy("blind-oracle:oracle:eta=0.75,seed=3")
    simulate(tr, again, 2)
    assert again.predictor.pred == pol.predictor.pred


def test_flags_and_names():
    assert make_policy("predictive-marker").clairvoyant is False
    pol = make_policy("predictive-marker:oracle:eta=0.5,seed=1")
    assert pol.clairvoyant and pol.randomized
    assert pol.name == "predictive-marker:oracle:eta=0.5,seed=1"
    d = make_policy("lmarker-dist:oracle:eta=2")
    assert d.name == "lmarker-dist:oracle:eta=2,seed=0" and d.clairvoyant
    assert make_policy("Blind-Oracle:Frequency").name == "blind-oracle:frequency"


@pytest.mark.parametrize("spec, message", [
    ("predictive-marker:oracle:eta=-1", "eta must be a finite number >= 0"),
    ("predictive-marker:oracle:eta=abc", "is not a valid float"),
    ("predictive-marker:oracle:eta=nan", "eta must be a finite number >= 0"),
    ("blind-oracle:oracle:eta=1,seed=-1", "seed must be an integer >= 0"),
    ("predictive-marker:oracle:eta", "is not key=value"),
    ("predictive-marker:oracle:size=3", "unknown option 'size'"),
    # (accepted, then numpy's default_rng(-1) at the run's reset: a ValueError traceback)
    ("blind-oracle:oracle:eta=0.5,seed=-1", "seed must be an integer >= 0, got -1"),
    ("predictive-marker:psychic", "unknown predictor 'psychic'"),
    ("lru:oracle", "takes no predictor option"),
])
def test_bad_specs(spec, message, capsys):
    with pytest.raises(PagingError, match=message):
        make_policy(spec)
    assert main(["simulate", "cyclic:n=2,layers=2,rounds=3", "--policy", spec, "--k", "2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_oracle_rejects_negative_eta_directly():
    with pytest.raises(PagingError):
        OraclePredictor(eta=-0.1)


SPECS = ("blind-oracle:oracle:eta=1,seed=2", "predictive-marker:oracle:eta=0.5",
         "lmarker-dist:oracle", "robust-blind-oracle:oracle:eta=3,seed=1",
         "robust-blind-oracle-dist:frequency")


@pytest.mark.parametrize("spec", SPECS)
@given(trace=round_traces(), k=st.integers(1, 8), seed=st.integers(0, 2**32 - 1))
def test_specs_are_feasible_deterministic_and_reusable(spec, trace, k, seed):
    """The contract suite's checks (tests/contract) for policy names with a predictor spec,
    which the registry does not list."""
    from paging.verify import verify

    a = simulate(trace, spec, k, seed=seed, record=True)
    verify(trace, a)
    b = simulate(trace, spec, k, seed=seed, record=True)
    assert a.misses == b.misses and np.array_equal(a.evictions, b.evictions)
    pol = make_policy(spec)
    simulate(cyclic(n=2, layers=2, rounds=5), pol, 2, seed=7)  # then reset and reused
    again = simulate(trace, pol, k, seed=seed, record=True)
    assert np.array_equal(again.evictions, a.evictions)


def test_the_oracle_makes_a_policy_clairvoyant_for_real():
    """blind-oracle:oracle's eviction at t=2 (pages 0 1 2, k=2) depends on whether 0 or 1
    comes back at t=3, so it must be (and is) flagged clairvoyant; with the online frequency
    predictor it is not, and its decisions before t=3 agree."""
    from contract.test_policy_contract import same_decisions_before

    lay = Layout(3, 1)
    a, b = from_pages([0, 1, 2, 0], lay), from_pages([0, 1, 2, 1], lay)
    assert make_policy("blind-oracle:oracle").clairvoyant
    assert not same_decisions_before("blind-oracle:oracle", a, b, 3, 2, "reference")
    assert not make_policy("blind-oracle:frequency").clairvoyant
    assert same_decisions_before("blind-oracle:frequency", a, b, 3, 2, "reference")


def test_prediction_policies_take_prefetched_pages():
    """A prefetched page has no request, so no prediction: it is taken as predicted for the next
    request (t + 1) and unmarked. Before, BlindOracle with a prefetcher raised a KeyError on
    the first eviction that met a prefetched page (found by benchmarks/bench_matrix.py)."""
    from paging.generators import zipf
    from paging.predict.prefetch import Frequency, Prefetcher, TopK

    tr = zipf(n=4, layers=3, tokens=60, seed=0)
    for name in ("blind-oracle", "predictive-marker", "lmarker", "robust-blind-oracle",
                 "blind-oracle-dist"):
        r = simulate(tr, name, 5, prefetch=Prefetcher(Frequency(), TopK(1.0)),
                     engine="reference", record=True)
        assert r.extra["prefetches"] > 0 and r.misses <= tr.n_requests
    pol = make_policy("blind-oracle")
    simulate(zipf(n=4, layers=3, tokens=2, seed=0), pol, 5, engine="reference")
    pol.on_prefetch(5, 7)
    assert pol.pred[7] == 6.0 and pol.last[7] == 5


def test_the_markers_read_a_byte_budget_as_bytes():
    """H_k's k is the partition's capacity in pages: under a byte budget, how many of the
    smallest pages fit, at most the pages there are (an 8 GB budget was read as 8e9 pages, a
    sum of 8e9 terms that never finished)."""
    from paging.generators import zipf
    from paging.policies.predictive import harmonic, marker_k

    assert marker_k(5, None, 12) == 5 and marker_k(50, None, 12) == 12
    assert marker_k(10, np.array([3, 4, 5]), 12) == 3 and marker_k(8_000_000_000, None, 256) == 256
    assert harmonic(3) == 1 + 1 / 2 + 1 / 3
    tr = zipf(n=8, layers=4, tokens=40, seed=0)
    sizes = np.full(tr.layout.n_pages, 50_000_000, np.int64)
    for engine in ("reference", "auto"):
        r = simulate(tr, "predictive-marker", budget=8_000_000_000, sizes=sizes, engine=engine)
        assert r.misses == simulate(tr, "predictive-marker", budget=8_000_000_000, sizes=sizes,
                                    engine="reference").misses


@pytest.mark.parametrize("engine", ["reference", "fast"])
def test_oracle_normalises_a_byte_budget_by_the_pages_it_holds(engine):
    """0 1 2 0 1 2 0 1 2 with 2 pages: Belady misses 0, 1, 2 (evicts 1), 1 (evicts 0), 0
    (evicts 2), 2: OPT = 6. A budget of 20 bytes over pages of 10 bytes is the same cache, so
    η_ℓ1 = η·6 there too; read as 20 pages (Belady never evicting: OPT = 3 distinct pages) it
    was half the error asked for."""
    tr = from_pages([0, 1, 2] * 3, Layout(3, 1))
    by_pages = make_policy("blind-oracle:oracle:eta=0.5,seed=3")
    by_bytes = make_policy("blind-oracle:oracle:eta=0.5,seed=3")
    simulate(tr, by_pages, 2, engine=engine)
    simulate(tr, by_bytes, budget=20, sizes=np.full(3, 10), engine=engine)
    assert by_pages.predictor.opt == by_bytes.predictor.opt == 6
    err = np.abs(by_bytes.predictor.values - tr.next_use).sum()
    assert err == pytest.approx(0.5 * 6, rel=1e-12)
    assert np.array_equal(by_pages.predictor.values, by_bytes.predictor.values)


@pytest.mark.parametrize("engine", ["reference", "fast"])
def test_robust_blind_oracle_virtual_caches_under_a_byte_budget(engine):
    """0 1 2 x3, a cache of 2 pages: exact BlindOracle = Belady makes 6 misses, LRU 9 (cyclic
    over k + 1 pages); the combiner follows BlindOracle (6 ≤ 2·9) and makes its 6. A budget of
    20 bytes over pages of 10 is the same cache: its virtual caches must hold 2 pages too (read
    as 20 pages they never evicted, counted 3 and 3, and the victims were LRU's: 9 misses)."""
    tr = from_pages([0, 1, 2] * 3, Layout(3, 1))
    for kw in (dict(k=2), dict(budget=20, sizes=np.full(3, 10))):
        pol = make_policy("robust-blind-oracle:oracle")
        assert simulate(tr, pol, engine=engine, **kw).misses == 6
        assert pol.cost == [6, 9] and (pol.leader, pol.switches) == (0, 0)


@given(trace=round_traces(), k=st.integers(1, 8), which=st.sampled_from(
    ["oracle", "oracle:eta=50,seed=1", "frequency", "reversed"]))
def test_robust_blind_oracle_within_three_min(trace, k, which):
    """ALG ≤ 3·min(BO, LRU) on every run (RobustBlindOracle's docstring proves it; the
    virtual counts are BlindOracle's and LRU's own, checked in proofs/predictions_robust.py)."""
    from paging.policies.predictive import RobustBlindOracle
    from proofs.predictions_common import ReversedPredictor

    pol = RobustBlindOracle(predictor=ReversedPredictor() if which == "reversed" else which)
    alg = simulate(trace, pol, k, engine="reference").misses
    assert alg <= 3 * min(pol.cost)
