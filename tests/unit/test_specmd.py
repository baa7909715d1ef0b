"""SpecMD's policy space on the one loop: prefetching, miss handling, Score-Based and LHU
eviction, their counters, the verifier and the timeline (paging.simulate, paging.miss,
paging.predict.prefetch, paging.cost.timeline)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import TRACES, needs_traces
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import topk_traces

from paging import cli, generators
from paging.cost import get_hardware, get_model, get_precision
from paging.cost.arith import expert_compute_ms, non_expert_ms
from paging.cost.timeline import timeline, timeline_run
from paging.errors import PagingError
from paging.io import load, write
from paging.layout import Layout
from paging.miss import FETCH, FetchPriority, Substitute, make_miss
from paging.observers import MissStats, PrefetchStats
from paging.policies import make_policy
from paging.predict.prefetch import (
    Frequency,
    Percentile,
    Prefetcher,
    PrefetchOracle,
    PreviousToken,
    TopK,
    Transition,
    make_prefetch_predictor,
    make_strategy,
)
from paging.simulate import Simulation, simulate
from paging.trace import Trace, from_routing
from paging.verify import verify

POLICIES = ("lru", "least-stale", "fld", "llru", "lfu", "lhu", "score-based", "marking",
            "landlord", "lru-dist", "belady")


def scored(tr: Trace) -> Trace:
    """``tr`` with gate scores 0.7 for rank 0 and 0.3 for the others (a top-2 pattern)."""
    s = np.where(tr.rank == 0, 0.7, 0.3)
    return Trace(tr.layout, tr.pages, tr.steps, tr.name, tr.token, tr.rank, s, tr.expand, tr.meta)


def groups_trace(tokens=20, seed=0, n=8, layers=4):
    return scored(generators.zipf(n=n, layers=layers, tokens=tokens, seed=seed, topk=2,
                                  expand="groups"))


# -- 1. gate scores -----------------------------------------------------------------------------
@pytest.mark.parametrize("ext", ["npz", "csv"])
def test_scores_survive_npz_and_csv(tmp_path, ext):
    experts = np.array([[[0, 1], [2, 0]], [[1, 2], [0, 1]]])
    scores = np.array([[[0.75, 0.25], [0.5, 0.5]], [[0.625, 0.375], [0.875, 0.125]]])
    tr = from_routing(experts, Layout(3, 2), expand="groups", scores=scores)
    write(tr, tmp_path / f"t.{ext}")
    back = load(tmp_path / f"t.{ext}", expand="groups")[0]
    assert back.score.tolist() == tr.score.tolist() == [0.75, 0.25, 0.5, 0.5, 0.625, 0.375,
                                                        0.875, 0.125]


@needs_traces
def test_mixtral_reader_keeps_gating_probs():
    tr = load(Path(TRACES) / "mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl",
              expand="groups")[0]
    # renormalised top-2 weights: the two of a (token, layer) add up to 1, rank 0 the larger
    s = tr.score.reshape(-1, 2)
    assert np.allclose(s.sum(axis=1), 1.0) and (s[:, 0] >= s[:, 1]).all()


def test_score_based_refuses_a_trace_without_scores():
    tr = generators.zipf(n=4, layers=2, tokens=5, seed=0)
    with pytest.raises(PagingError, match="score-based reads gate scores and the trace has none"):
        simulate(tr, "score-based", 3)
    with pytest.raises(PagingError, match="reads gate scores"):
        simulate(tr, "lru", 3, miss="drop:score=0.2")


# -- 2. prefetching ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [p for p in POLICIES if not p.endswith("-dist")])
def test_perfect_oracle_and_two_layers_of_cache_leave_only_the_first_layers_misses(name):
    """PrefetchOracle, precision = recall = 1; a cache of 2K pages (two layers' experts, K = 2).
    After group (token 0, layer 0) is served (K misses, nothing can be predicted before it), every
    group's experts were prefetched while the previous group ran: the prefetch evicts only the
    group before it (the running group is pinned), so no later request misses. (Shared caches
    only: a DIST share of 4 // ℓ = 1 page cannot hold a layer's two experts.)"""
    tr = groups_trace(tokens=25)
    res = simulate(tr, name, 4, record=True, prefetch=Prefetcher(PrefetchOracle(1.0, 1.0)))
    first = len(set(tr.pages[:2].tolist()))
    assert res.misses == first
    assert res.extra["prefetch_precision"] == res.extra["prefetch_recall"] == 1.0
    verify(tr, res)


def test_perfect_oracle_with_free_transfers_never_stalls():
    tr = groups_trace(tokens=10)
    m, q, h = get_model("mixtral-8x7b"), get_precision("int4"), get_hardware("link-5gbps")
    fetch = np.zeros(tr.layout.n_pages)
    sizes = np.full(tr.layout.n_pages, 7)
    res = simulate(tr, "lru", 4, record=True, prefetch=Prefetcher(PrefetchOracle(1.0, 1.0)))
    tm = timeline_run(tr, res, model=m, precision=q, hardware=h, fetch_ms=fetch, sizes=sizes)
    assert tm.stall_ms == 0.0 and tm.prefetch_late == 0
    # bytes moved: the 2 demand misses and every prefetch, 7 bytes each
    assert tm.bytes_moved == 7 * (res.misses + res.extra["prefetches"])


@pytest.mark.parametrize("name, victim", [("least-stale-layer", 3), ("least-stale", 1)])
def test_prefetch_is_current_for_least_stale_and_not_a_request_for_lfu(name, victim):
    """Layout n=3, ℓ=2 (layer 0: pages 0,1,2; layer 1: pages 3,4,5), rounds mode, k=3.
    t0: 0 (pass 0), t1: 3 (pass 0), t2: 1 (pass 1), all misses with room. Then prefetch 4
    (layer 1 of pass 1): full cache, pinned {1 (just served), 4}; candidates 0 and 3 are both
    stale (pass 0) and neither is left of layer 0: both readings evict the lower layer, 0.
    t3: page 5 (layer 1) misses; candidates 3 (stale), 1 (current, t2, layer 0: left of layer
    1), 4 (prefetched after t2: last_step 2, pass 1, current): least-stale-layer evicts the
    stale 3, least-stale (the paper's left rule) the left page 1."""
    lay = Layout(3, 2)
    pol = make_policy(name)
    stats = PrefetchStats()
    sim = Simulation(lay, pol, 3, steps=np.arange(4), record=True, observers=[stats])
    for p in (0, 3, 1):
        sim.serve(p)
    assert sim.prefetch_group([4], keep=[1]) == 1
    assert pol.last_step[4] == 2 and pol.inserted[4] == 2 and pol.count[4] == 0
    assert sim.evictions == [] and stats.evictions == [(3, 0)]
    sim.serve(5)
    assert sim.evictions == [(3, victim)] and sorted(sim.resident) == sorted({1, 3, 4, 5}
                                                                             - {victim})
    res = sim.result()
    # the observer owns its fields: the prefetched 4 was never requested (wasted at the end)
    assert res.extra == {"prefetches": 1, "prefetch_useful": 0, "prefetch_wasted": 1,
                         "prefetch_skipped": 0, "prefetch_bytes": 1, "prefetch_precision": None,
                         "prefetch_recall": None}
    bare = Simulation(lay, make_policy(name), 3, steps=np.arange(1))
    bare.serve(0)
    assert bare.result().extra is None  # no observer, no extension fields


def test_belady_reads_a_prefetched_pages_own_next_use():
    """One layer of 4 experts, k = 2, requests 2, 1, 2, 0. Page 0 is prefetched after t0: it is
    next used at t3, page 2 at t2, so t1 (page 1) evicts 0. ``last[0]`` = 0 would have read
    ``next_use[0]`` = 2 (page 2's next use) for it, a tie that evicts the larger id, 2.
    A substitute serving a request is touched at another page's request the same way."""
    lay = Layout(4, 1)
    pages = np.array([2, 1, 2, 0])
    nu = np.array([2, 4, 4, 4])
    pol = make_policy("belady")
    sim = Simulation(lay, pol, 2, steps=np.arange(4), record=True, next_use=nu, pages=pages)
    sim.serve(2)
    assert sim.prefetch_group([0], keep=[2]) == 1
    assert pol.evict_key(1, 0) == (3, 0) and pol.evict_key(1, 2) == (2, 2)
    sim.serve(1)
    assert sim.evictions == [(1, 0)]
    sim.serve(2)
    sim.serve(0)
    assert sim.result().hit_mask.tolist() == [False, False, True, False]
    pol.on_hit(3, 1)  # page 1 touched at page 0's request: never requested again
    assert pol.evict_key(3, 1) == (4, 1)


def test_oracle_predicts_a_substitutes_own_next_request():
    """One layer of 4 experts, k = 2, requests 0, 1, 2, 1, 0, 3 with ``substitute``: t0 fetches
    0; every later miss of the layer is served by the resident 0, so BlindOracle with the exact
    oracle sees hits on 0 at t1 and t2. Page 0 is next requested at t4, which is what it is
    predicted; reading ``next_use[t]`` would have given 3 (page 1's) and then 6 (page 2's:
    never)."""
    lay = Layout(4, 1)
    pages = np.array([0, 1, 2, 1, 0, 3])
    nu = np.array([4, 3, 6, 6, 6, 6])
    pol = make_policy("blind-oracle:oracle")
    sim = Simulation(lay, pol, 2, steps=np.arange(6), record=True, next_use=nu, pages=pages,
                     miss=make_miss("substitute"))
    sim.serve(0)
    sim.serve(1)
    assert sim.resident == {0} and pol.pred == {0: 4.0}
    sim.serve(2)
    assert pol.pred == {0: 4.0}


def test_prefetch_skipped_when_nothing_can_be_evicted():
    lay = Layout(2, 2)
    stats = PrefetchStats()
    sim = Simulation(lay, make_policy("lru"), 1, steps=np.arange(2), observers=[stats])
    sim.serve(0)
    assert sim.prefetch_group([2], keep=[0]) == 0 and stats.skipped == 1
    with pytest.raises(PagingError, match="after a request"):
        Simulation(lay, make_policy("lru"), 1, steps=np.arange(2)).prefetch(2)


def test_previous_token_and_frequency_predictors_by_hand():
    """ℓ=2, n=4, groups of K=2: token 0 uses {0,1} | {2,3}, token 1 {1,2} | {3,0}.
    previous-token, after group (1, layer 0): predicts layer 1 from token 0: {2,3};
    frequency after (1, 0): layer 1 counts so far {2:1, 3:1}: same set; topk picks 2."""
    experts = np.array([[[0, 1], [2, 3]], [[1, 2], [3, 0]]])
    tr = from_routing(experts, Layout(4, 2), expand="groups")
    pt, fr = Prefetcher(PreviousToken()), Prefetcher(Frequency())
    for pf in (pt, fr):
        pf.reset(tr, 0)
        pf.predictor.observe(0, 2)
        pf.predictor.observe(2, 4)
        pf.predictor.observe(4, 6)
    assert pt.predictor.scores(4, 6, 1, 1, None).tolist() == [0, 0, 1, 1]
    assert fr.predictor.scores(4, 6, 1, 1, None).tolist() == [0, 0, 1, 1]
    # next token's layer 0 from previous-token: token 1's layer 0 {1, 2}
    assert pt.predictor.scores(6, 8, 2, 0, None).tolist() == [0, 1, 1, 0]


def test_strategies_by_hand():
    s = np.array([0.0, 3.0, 1.0, 2.0, 2.0, 0.0, 0.0, 0.0])
    assert TopK(1.0).select(s, 2) == [1, 3]  # ties (3, 4 at 2.0) to the lower id
    assert TopK(1.5).select(s, 2) == [1, 3, 4]  # round(2·1.5) = 3
    assert TopK(2.0).select(s, 4) == [1, 3, 4, 2]  # 8 wanted, only 4 proposed (score > 0)
    # 80th percentile of the 8 scores (sorted 0,0,0,0,1,2,2,3): index 5.6 -> 2 + 0.6·0 = 2.0
    assert Percentile(80).select(s, 2) == [1]
    # 50th: index 3.5 -> 0 + 0.5·1 = 0.5: every score above it
    assert Percentile(50).select(s, 2) == [1, 3, 4, 2]


def test_oracle_noise_model():
    """Recall 0.5 on K=2: R·a = 1 and R·a/P = 2 are whole, so every rounding keeps 1 true
    expert and proposes 2 in all; P = R = 1 proposes exactly the truth."""
    tr = generators.zipf(n=8, layers=2, tokens=3, seed=0, topk=2, expand="groups")
    actual = np.array([2, 5])
    for rounding in ("stochastic", "nearest"):
        o = PrefetchOracle(0.5, 0.5, seed=1, rounding=rounding)
        o.reset(tr, None)
        for _ in range(20):
            chosen = np.flatnonzero(o.scores(0, 2, 0, 1, actual) > 0)
            assert chosen.size == 2 and np.isin(chosen, actual).sum() == 1
    exact = PrefetchOracle(1, 1)
    exact.reset(tr, None)
    assert np.flatnonzero(exact.scores(0, 2, 0, 1, actual) > 0).tolist() == [2, 5]


def test_oracle_stochastic_rounding_by_hand():
    """P = R = 0.8 on a = 2 of n = 8: R·a = 1.6 and R·a/P = 2 (whole), so with the batch's
    draw u: m = 1 + [u < 0.6] true experts and s = 2 in all (one other expert when m = 1).
    P = 0.5, R = 0.75, a = 2: R·a = 1.5, R·a/P = 3: m = 1 + [u < 0.5], s = 3."""
    from paging.predict.prefetch import _sround

    assert [_sround(1.6, u) for u in (0.0, 0.59, 0.61, 0.99)] == [2, 2, 1, 1]
    assert _sround(2.0, 0.999) == 2 and _sround(0.3, 0.2) == 1 and _sround(0.3, 0.3) == 0
    tr = generators.zipf(n=8, layers=2, tokens=3, seed=0, topk=2, expand="groups")
    for (P, R), s_size in (((0.8, 0.8), 2), ((0.5, 0.75), 3)):
        m_hi = R * 2 - 1  # the fraction of R·a, as computed
        o = PrefetchOracle(P, R, seed=4)
        o.reset(tr, None)
        twin = np.random.default_rng(4)  # the oracle's stream: u, then the two choices, ...
        for _ in range(30):
            u = twin.random()
            chosen = np.flatnonzero(o.scores(0, 2, 0, 1, np.array([2, 5])) > 0)
            m = 1 + (u < m_hi)
            assert chosen.size == s_size and np.isin(chosen, [2, 5]).sum() == m
            twin.choice(np.array([2, 5]), size=m, replace=False)
            if s_size > m:
                twin.choice(np.array([0, 1, 3, 4, 6, 7]), size=s_size - m, replace=False)
            twin.random(s_size)


@pytest.mark.parametrize("P, R", [(0.8, 0.8), (0.5, 0.5), (0.9, 0.6), (0.6, 0.9), (1.0, 0.7),
                                  (0.7, 1.0)])
def test_oracle_measured_precision_and_recall_are_the_requested_ones(P, R):
    """Over ~4,000 batches (top-2, n = 8, no cut by the strategy) the measured precision and
    recall equal P and R within 4 standard errors. The bound: recall's numerator Σm is a sum
    over batches of stochastic roundings of R·a, each of variance <= that of a binomial
    (a, R) (a whole-number variable of mean x has variance >= frac(x)(1 − frac(x)), which the
    stochastic rounding attains), so SE(R̂) <= sqrt(R(1 − R)/Σa); likewise for precision
    with Σ(m + f) proposed experts. P or R = 1 is met exactly. The first model (rounding per
    batch to the nearest) misses P = R = 0.8 by far: precision 1."""
    tr = generators.zipf(n=8, layers=4, tokens=1000, seed=3, topk=2, expand="groups")
    pf = Prefetcher(make_prefetch_predictor(f"oracle:precision={P},recall={R},seed=7"),
                    make_strategy("topk:overfetch=4"))  # K·F = 8 = n: nothing cut
    pf.reset(tr, 0)
    p_hat, r_hat = pf.predicted_right / pf.predicted, pf.predicted_right / pf.actual
    assert pf.actual > 7000
    assert abs(r_hat - R) <= 4 * math.sqrt(R * (1 - R) / pf.actual)
    assert abs(p_hat - P) <= 4 * math.sqrt(P * (1 - P) / pf.predicted)
    assert (r_hat == 1.0) == (R == 1.0) and (p_hat == 1.0) == (P == 1.0)
    again = Prefetcher(make_prefetch_predictor(f"oracle:precision={P},recall={R},seed=7"),
                       make_strategy("topk:overfetch=4"))
    again.reset(tr, 0)
    assert again.pages == pf.pages  # the seed fixes every draw
    if (P, R) == (0.8, 0.8):
        old = Prefetcher(make_prefetch_predictor("oracle:precision=0.8,recall=0.8,seed=7,"
                                        "rounding=nearest"), make_strategy("topk:overfetch=4"))
        old.reset(tr, 0)
        assert old.predicted_right == old.predicted and old.predicted == old.actual


def test_transition_learns_on_other_sequences_only():
    """Training: token 0 uses {0} then {1} at layer 1, token 1 uses {0} then {1}:
    C[0][0][1] = 2 (layer 0 -> 1), C[1][1][0] = 1 (layer 1 -> layer 0 of the next token)."""
    lay = Layout(2, 2)
    train = from_routing(np.array([[[0], [1]], [[0], [1]]]), lay, expand="groups")
    train = Trace(lay, train.pages, train.steps, "train", train.token, train.rank)
    tp = Transition([train])
    assert tp.C[0, 0].tolist() == [0, 2] and tp.C[1, 1].tolist() == [1, 0]
    with pytest.raises(PagingError, match="fitted on train"):
        Prefetcher(tp).reset(train, 0)
    with pytest.raises(PagingError, match="needs training sequences"):
        Prefetcher(Transition()).reset(train, 0)
    other = Trace(lay, train.pages, train.steps, "other", train.token, train.rank)
    res = simulate(other, "lru", 2, prefetch=Prefetcher(tp))
    assert res.extra["prefetch_precision"] == 1.0 and res.misses == 1


@settings(max_examples=40, deadline=None)
@given(trace=topk_traces(max_tokens=8), k=st.integers(1, 12), seed=st.integers(0, 99),
       name=st.sampled_from(POLICIES),
       pred=st.sampled_from(["oracle:precision=0.6,recall=0.8,seed=2", "previous-token",
                             "frequency"]),
       strat=st.sampled_from(["topk:overfetch=1.5", "percentile:p=60"]),
       miss=st.sampled_from(["fetch", "drop:rank=1", "substitute", "drop:score=0.5"]))
def test_counters_add_up_and_the_run_verifies(trace, k, seed, name, pred, strat, miss):
    trace = scored(trace)
    pf = Prefetcher(make_prefetch_predictor(pred), make_strategy(strat))
    r = simulate(trace, name, k, seed=seed, record=True, prefetch=pf, miss=miss)
    verify(trace, r)
    x = r.extra
    assert r.requests == r.hits + r.misses + r.dropped + r.substituted
    assert x["prefetches"] == x["prefetch_useful"] + x["prefetch_wasted"]
    assert len(r.events["prefetched"]) == x["prefetches"]
    assert sum(int(v) for v in x["replaced_ranks"].values()) == r.dropped + r.substituted
    if miss == "fetch":
        assert r.dropped == r.substituted == 0
    again = simulate(trace, name, k, seed=seed, record=True,
                     prefetch=Prefetcher(make_prefetch_predictor(pred), make_strategy(strat)),
                     miss=miss)
    assert again.to_dict() == r.to_dict()


# -- 3. miss handling ----------------------------------------------------------------------------
def test_drop_by_rank_by_hand():
    """ℓ=1, n=4, groups of 2, k=4: token 0 {0,1}, token 1 {2,3}, token 2 {0,2}; drop:rank=1
    drops every missing expert of rank 1: 1 (t1) and 3 (t3); 2 at t5 is a miss again? no: 2
    was fetched at t2 and is cached, a hit. Misses 0, 2 (fetched), hits 0 (t4), 2 (t5)."""
    tr = scored(from_routing(np.array([[[0, 1]], [[2, 3]], [[0, 2]]]), Layout(4, 1),
                             expand="groups"))
    r = simulate(tr, "lru", 4, record=True, miss="drop:rank=1")
    assert (r.misses, r.hits, r.dropped, r.substituted) == (2, 2, 2, 0)
    assert r.extra["dropped_mass"] == pytest.approx(0.6)  # two rank-1 experts of score 0.3
    assert r.extra["top1_changed_share"] == 0.0 and r.extra["replaced_ranks"] == {"1": 2}
    verify(tr, r)


def test_substitute_picks_the_most_requested_resident_of_the_layer():
    """ℓ=1, n=4, k=3, rounds: t0 0 misses with nothing of its layer cached: fetched. t1 1:
    0 is cached (1 request): substituted by 0, even with room (the handler substitutes every
    miss it can). t2 0 hits. t3 3 misses: fetched? no: 0 is cached, substituted again; t4 2
    likewise. The requests counted per page (0: 2, 1: 1, 3: 1, ...) decide among several."""
    tr = scored(from_routing(np.array([[[0]], [[1]], [[0]], [[3]], [[2]]]), Layout(4, 1)))
    r = simulate(tr, "lru", 3, record=True, miss="substitute")
    assert r.events["substituted"].tolist() == [[1, 0], [3, 0], [4, 0]]
    assert (r.misses, r.hits, r.substituted) == (1, 1, 3)
    assert r.extra["top1_changed_share"] == 3 / 5  # each request is its own top-1 group
    # with 0 and 1 cached (1 fetched by drop-free LRU first), the most requested one wins
    tr2 = scored(from_routing(np.array([[[1]], [[0]], [[0]], [[2]]]), Layout(4, 1)))
    class Later(Substitute):  # fetch until told to substitute
        on = False

        def decide(self, state, t, page):
            return super().decide(state, t, page) if self.on else (FETCH, 0)

    for record in (False, True):
        handler = Later()
        stats = MissStats(handler)
        sim = Simulation(tr2.layout, make_policy("lru"), 3, steps=tr2.steps, score=tr2.score,
                         rank=tr2.rank, miss=handler, observers=[stats], record=record)
        for p in (1, 0, 0):  # fetch 1, then 0 (requested twice)
            sim.serve(p)
        handler.on = True
        sim.serve(2)  # 0 and 1 cached: the more requested 0 substitutes
        assert stats.substituted == 1 and handler.requested[:3] == [2, 1, 1]
        assert stats.substituted_log == ([(3, 0)] if record else [])  # logged when recording
    verify(tr, r)


def test_fetch_priority_mixed_precision_residents():
    """ℓ=1, n=4; level sizes 8/4/2 bytes, budget 12. Scores 0.7, 0.3, 0.1, 0.7 with cuts
    0.5/0.25: page 0 at level 0 (8 B), 1 at level 1 (4 B): 12 B, full. Page 2 at level 2
    (2 B): LRU evicts 0 (8 B) -> 6 B used. Page 3 at level 0 (8 B): 14 > 12, evict 1 (4 B)
    -> 10 B. Cost 4+2+1+4 = 11, bytes 8+4+2+8 = 22."""
    lay = Layout(4, 1)
    tr = from_routing(np.array([[[0]], [[1]], [[2]], [[3]]]), lay,
                      scores=np.array([[[0.7]], [[0.3]], [[0.1]], [[0.7]]]))
    sizes, P = np.full(4, 8), 4
    fp = FetchPriority(("int8", "int4", "int2"), (0.5, 0.25)).bind(
        [sizes, sizes // 2, sizes // 4], [np.full(P, 4.0), np.full(P, 2.0), np.full(P, 1.0)])
    r = simulate(tr, "lru", budget=12, sizes=sizes, costs=np.full(P, 4.0), record=True, miss=fp)
    assert r.evictions.tolist() == [[2, 0], [3, 1]]
    assert r.cost == 11.0 and r.bytes_fetched == 22
    assert r.extra["fetch_levels"] == {"int8": 2, "int4": 1, "int2": 1}
    verify(tr, r, costs=np.full(P, 4.0), sizes=sizes)


def test_lhu_counts_only_high_precision_uses():
    """Same run as above with LHU at budget 12 and a request of 1 before 3: levels 0 (page 0),
    1 (page 1), 2 (page 2). LHU counts: 0 -> 1, 1 -> 0, 2 -> 0. Page 2 needs 2 B: 12 + 2 > 12:
    fewest high-precision uses, ties LRU: page 1 (count 0, older than nothing else at 0)."""
    lay = Layout(4, 1)
    tr = from_routing(np.array([[[0]], [[1]], [[2]]]), lay,
                      scores=np.array([[[0.7]], [[0.3]], [[0.1]]]))
    sizes, P = np.full(4, 8), 4
    fp = FetchPriority(("int8", "int4", "int2"), (0.5, 0.25)).bind(
        [sizes, sizes // 2, sizes // 4], [np.full(P, 4.0), np.full(P, 2.0), np.full(P, 1.0)])
    r = simulate(tr, "lhu", budget=12, sizes=sizes, record=True, miss=fp)
    assert r.evictions.tolist() == [[2, 1]]
    lru = simulate(tr, "lru", budget=12, sizes=sizes, record=True, miss=fp)
    assert lru.evictions.tolist() == [[2, 0]]


def test_score_based_by_hand():
    """ℓ=1, n=3, k=2: 0 (0.9), 1 (0.2), 2 (0.5): evict the lowest history: 1. Then 1 (0.2)
    again: histories 0: 0.9, 2: 0.5 -> evict 2."""
    tr = from_routing(np.array([[[0]], [[1]], [[2]], [[1]]]), Layout(3, 1),
                      scores=np.array([[[0.9]], [[0.2]], [[0.5]], [[0.2]]]))
    r = simulate(tr, "score-based", 2, record=True)
    assert r.evictions.tolist() == [[2, 1], [3, 2]]


@pytest.mark.parametrize("spec,msg", [
    ("drop", "exactly one of rank=R or score=S"),
    ("drop:rank=0", "rank must be an integer >= 1"),
    ("fetch-priority", "needs precisions"),
    ("fetch-lowest-bit:levels=int4", "needs at least 2 precision levels"),
    ("flush", "unknown miss handler"),
])
def test_bad_miss_specs(spec, msg):
    with pytest.raises(PagingError, match=msg):
        make_miss(spec)


def test_a_cascade_past_the_chains_end_says_so():
    """fetch-priority's three levels from int4 would run past int2: the error names the
    precision and the chain (it used to ask for --model, which was given)."""
    with pytest.raises(PagingError, match=r"needs 3 precision levels from --precision int4, "
                                          r"and the chain bf16 > int8 > int4 > int2 has 2"):
        make_miss("fetch-priority", "int4")
    with pytest.raises(PagingError, match="from --precision int2, and the chain .* has 1"):
        make_miss("fetch-lowest-bit", "int2")
    assert make_miss("fetch-priority:levels=int4/int2", "int4").levels == ("int4", "int2")


@pytest.mark.parametrize("spec,precision", [("fetch-lowest-bit:levels=int4/int8", "int4"),
                                            ("fetch-lowest-bit:levels=int4/int4", "int4"),
                                            ("fetch-priority:levels=bf16/int2/int4", "bf16")])
def test_cascade_levels_must_go_down_the_chain(spec, precision):
    """fetch-lowest-bit fetches at its last level, so levels=int4/int8 fetched every miss at
    int8, above the run's int4 (the "lowest bit" at twice the bytes): one error instead.
    Levels may skip a step of the chain (bf16/int4)."""
    with pytest.raises(PagingError, match=r"levels must go down the chain bf16 > int8 > int4 > "
                                          r"int2 \(each below the one before\)"):
        make_miss(spec, precision)
    assert make_miss("fetch-lowest-bit:levels=bf16/int4", "bf16").levels == ("bf16", "int4")


@pytest.mark.parametrize("cuts", ["0.5/nan", "nan/0.25", "inf/0.25", "0.5/-inf"])
def test_fetch_priority_refuses_cuts_that_are_not_finite(cuts):
    """A NaN cut compares false both ways, so it passed the "cuts must decrease" check and
    sent no miss below it (cuts=0.5/nan fetched nothing at int2): one error naming the cuts."""
    with pytest.raises(PagingError, match=f"cuts must be finite numbers c1 > c2 > ..., got "
                                          f"{cuts}"):
        make_miss(f"fetch-priority:cuts={cuts}", "int8")
    assert make_miss("fetch-priority:cuts=0.6/-1", "int8").cuts == (0.6, -1.0)


# -- timeline ------------------------------------------------------------------------------------
def test_late_prefetch_stalls_by_hand():
    """ℓ=2, n=2, groups of 1, k=2, fetch 10 ms per page; c = expert compute, a = non-expert.
    Token 0: layer 0 page 0 misses: a, transfer lands at a + 10, compute -> a + 10 + c. The
    oracle then prefetches page 3 (layer 1), issued behind it: lands at a + 20. Layer 1 starts
    at a + 10 + c + a and hits page 3, which lands at a + 20 > that (10 > c + a): it waits
    (late), then computes: total a + 20 + c."""
    lay = Layout(2, 2)
    tr = from_routing(np.array([[[0], [1]]]), lay, expand="groups")
    m, q, h = get_model("mixtral-8x7b"), get_precision("int4"), get_hardware("link-5gbps")
    c, a = expert_compute_ms(m, q, h, 1), non_expert_ms(m, h, 1)
    assert c + a < 10
    fetch, sizes = np.full(4, 10.0), np.full(4, 5)
    r = simulate(tr, "lru", 2, record=True, prefetch=Prefetcher(PrefetchOracle()))
    assert r.misses == 1 and r.extra["prefetches"] == 1
    tm = timeline_run(tr, r, model=m, precision=q, hardware=h, fetch_ms=fetch, sizes=sizes)
    assert tm.prefetch_late == 1 and tm.bytes_moved == 10
    assert tm.time_ms == pytest.approx((a + 20 + c) + 0.0)
    assert tm.stall_ms == pytest.approx(10 + (a + 20 - (a + 10 + c + a)))


def test_default_runs_keep_todays_timeline():
    tr = groups_trace(tokens=15)
    m, q, h = get_model("mixtral-8x7b"), get_precision("int4"), get_hardware("link-5gbps")
    P = tr.layout.n_pages
    fetch, sizes = np.full(P, 19.8), np.full(P, 99)
    plain = simulate(tr, "lru", 10, record=True)
    t0 = timeline(tr, plain.hit_mask, model=m, precision=q, hardware=h, fetch_ms=fetch,
                  sizes=sizes)
    t1 = timeline_run(tr, plain, model=m, precision=q, hardware=h, fetch_ms=fetch, sizes=sizes)
    ext = simulate(tr, "lru", 10, record=True, miss="drop:rank=9")  # drops nothing
    t2 = timeline_run(tr, ext, model=m, precision=q, hardware=h, fetch_ms=fetch, sizes=sizes)
    assert t0 == t1
    assert (t2.time_ms, t2.stall_ms, t2.bytes_moved) == (t0.time_ms, t0.stall_ms, t0.bytes_moved)
    assert ext.misses == plain.misses and np.array_equal(ext.hit_mask, plain.hit_mask)


# -- CLI -----------------------------------------------------------------------------------------
def _cli(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


GEN = "zipf:n=8,layers=4,tokens=30,seed=0,topk=2"


def test_cli_defaults_are_unchanged(capsys):
    _, a, _ = _cli(capsys, "simulate", GEN, "--policy", "lru", "--k", "6", "--json")
    _, b, _ = _cli(capsys, "simulate", GEN, "--policy", "lru", "--k", "6", "--json", "--miss",
                   "fetch")
    assert a == b  # --miss fetch is the default path, byte for byte
    ra = json.loads(a)
    assert "prefetches" not in ra[0] and "dropped" not in ra[0]
    _, c, _ = _cli(capsys, "simulate", GEN, "--policy", "lru", "--k", "6", "--json", "--engine",
                   "reference", "--miss", "drop:rank=9")  # a handler that drops nothing
    rc = json.loads(c)
    core = ("requests", "misses", "hits", "miss_ratio", "collision_misses", "per_layer_misses")
    assert [r[k] for r in ra for k in core] == [r[k] for r in rc for k in core]
    assert rc[0]["dropped"] == 0 and rc[0]["miss"] == "drop:rank=9"


def test_cli_prefetch_fields(capsys):
    code, out, _ = _cli(capsys, "simulate", GEN, "--expand", "groups", "--policy", "lru",
                        "--k", "4", "--prefetch", "oracle", "--prefetch-strategy",
                        "topk:overfetch=1", "--json")
    row = json.loads(out)[0]
    assert code == 0 and row["misses"] == 2 and row["prefetch_precision"] == 1.0
    for f in ("prefetches", "prefetch_useful", "prefetch_recall", "dropped", "dropped_mass",
              "substituted"):
        assert f in row


@pytest.mark.parametrize("argv,msg", [
    (["--prefetch", "oracle:precision=x"], "not a number"),
    (["--prefetch", "oracle", "--prefetch-strategy", "percentile:p=100"], "p must be in"),
    (["--prefetch", "oracle", "--prefetch-strategy", "topk:overfetch=0.5"], "overfetch"),
    (["--prefetch", "oracle", "--prefetch-strategy", "topk:overfetch"], "not key=value"),
    (["--prefetch", "magic"], "unknown prefetch predictor"),
    (["--prefetch-strategy", "topk"], "needs --prefetch"),
    (["--miss", "fetch-priority"], "needs precisions"),
    (["--miss", "drop:score=0.3"], "reads gate scores"),
    (["--policy", "score-based"], "reads gate scores"),
    (["--prefetch", "transition"], "give transition:train=FILE"),
])
def test_cli_bad_input_exits_2_with_one_line(capsys, argv, msg):
    base = ["simulate", GEN, "--k", "6", "--json"]
    if "--policy" not in argv:
        base += ["--policy", "lru"]
    code, out, err = _cli(capsys, *base, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and msg in err


@pytest.mark.parametrize("expand", ["rounds", "groups"])
@pytest.mark.parametrize("pred", ["oracle:precision=0.5,recall=0.5,seed=3", "previous-token",
                                  "frequency", "transition"])
def test_planned_scores_equal_the_per_batch_definition(pred, expand):
    """Every built-in ``score_matrix`` (array code, the plan of a run) equals the per-batch
    definition ``observe`` + ``scores`` called group by group, the base class's loop."""
    from paging.predict.prefetch import PrefetchPredictor, make_prefetch_predictor

    spec = "zipf:n=6,layers=4,tokens=40,seed={},topk=2"
    tr = load(spec.format(1), expand=expand)[0]
    train = load(spec.format(2), expand=expand)
    plans = []
    for vectorised in (True, False):
        p = make_prefetch_predictor(pred, train=train)
        p.reset(tr, np.random.default_rng(0))
        pf = Prefetcher(p)
        if not vectorised:  # the base class's loop over observe/scores
            p.score_matrix = PrefetchPredictor.score_matrix.__get__(p)
        seen = []
        orig = p.score_matrix
        p.score_matrix = lambda *a, _o=orig, _s=seen: _s.append(_o(*a)) or _s[-1]
        pf.reset(tr, 0)
        plans.append((seen[0], pf.pages, pf.start))
    (s1, p1, st1), (s2, p2, st2) = plans
    assert s1.shape == (len(st1) - 1, 6) and np.array_equal(s1, s2)
    assert p1 == p2 and st1 == st2 and len(p1) > 0


@pytest.mark.parametrize("strat", [TopK(1.0), TopK(1.5), Percentile(80), Percentile(30)])
def test_select_all_equals_select_row_by_row(strat):
    rng = np.random.default_rng(5)
    s = rng.integers(0, 4, size=(200, 8)).astype(float) * rng.random((200, 8))
    s[::7] = 0.0
    rows, ex = strat.select_all(s, 2)
    want = [(g, e) for g in range(200) for e in strat.select(s[g], 2)]
    assert list(zip(rows.tolist(), ex.tolist(), strict=True)) == want


@pytest.mark.parametrize("strat", [TopK(1.0), TopK(1.5), Percentile(80)])
def test_select_all_takes_one_k_per_row(strat):
    rng = np.random.default_rng(6)
    s = rng.random((50, 8))
    Ks = rng.integers(1, 9, size=50)
    rows, ex = strat.select_all(s, Ks)
    want = [(g, e) for g in range(50) for e in strat.select(s[g], int(Ks[g]))]
    assert list(zip(rows.tolist(), ex.tolist(), strict=True)) == want


def test_batched_prefill_targets_take_k_times_the_prompt():
    """ℓ=2, n=4, top-2, a prompt of 3 tokens then 2 decode tokens. Batched, the prefill pass
    is 2 groups (one per layer, every distinct expert of the prompt there) and the decode part
    4 groups of 2. The prefill's layer-1 target may need 2·3 = 6 > n experts: K = n = 4; the
    decode targets K = 2 (not the 4 of the largest group, nor its rank + 1)."""
    from paging.cost.timeline import batch_prefill

    experts = np.array([[[0, 1], [2, 3]], [[1, 2], [3, 0]], [[2, 3], [0, 1]],
                        [[0, 1], [1, 2]], [[3, 0], [2, 3]]])
    raw = from_routing(experts, Layout(4, 2), expand="groups")
    raw.meta.update(top_k=2, phase_bounds={"prefill": [0, 12], "decode": [12, 20]})
    tr, batch = batch_prefill(raw)
    assert tr.meta["prefill_tokens"] == 3
    # the prefill pass: layer 0's prompt experts {0,1},{1,2},{2,3} in order of first use, then
    # layer 1's {2,3},{3,0},{0,1} (pages 4 + e)
    assert tr.pages[:8].tolist() == [0, 1, 2, 3, 6, 7, 4, 5]
    pf = Prefetcher(PrefetchOracle(), TopK(1.0))
    pf.reset(tr, 0)
    # batches follow every group but the last: targets = the first request of groups 2..6
    lo = np.flatnonzero(np.r_[True, tr.steps[1:] != tr.steps[:-1]])
    hi = np.r_[lo[1:], tr.n_requests]
    Ks = pf.target_k(tr, hi[:-1])
    assert Ks.tolist() == [4, 2, 2, 2, 2]
    # the perfect oracle then prefetches exactly each target's experts: precision = recall = 1
    r = simulate(tr, "lru", 8, prefetch=pf)
    assert r.extra["prefetch_precision"] == 1.0 == r.extra["prefetch_recall"]


@pytest.mark.parametrize("pred", ["frequency", "oracle"])
def test_topk_overfetch_past_the_layer_is_every_proposed_expert(pred):
    """topk:overfetch=F takes round(K·F) experts, at most the layer's n: F = inf or 1e300
    (K·F past int64) prefetches what F = 4 (K·F = n = 8) does, on both engines (K·F was cast
    to a negative count, which prefetched nothing)."""
    tr = generators.zipf(n=8, layers=4, tokens=30, seed=1, topk=2, expand="groups")
    runs = {(f, e): simulate(tr, "lru", 12, prefetch=Prefetcher(
        make_prefetch_predictor(pred), make_strategy(f"topk:overfetch={f}")), engine=e)
        for f in ("4", "1e300", "inf") for e in ("reference", "fast")}
    want = runs["4", "reference"]
    assert want.extra["prefetches"] > 0
    for r in runs.values():
        assert (r.misses, r.extra["prefetches"], r.extra["prefetch_useful"]) == (
            want.misses, want.extra["prefetches"], want.extra["prefetch_useful"])
    assert make_strategy("topk:overfetch=inf").select(np.arange(8.0), 2) == list(range(7, 0, -1))


def test_a_warm_run_refuses_a_transition_fitted_on_its_own_sequences(tmp_path, capsys):
    """A warm run predicts every sequence it joins: transition:train=FILE on the simulated
    file itself was refused cold but taken warm (the joined trace has a name of its own), a
    predictor fitted on the requests it predicts. Another file is still taken."""
    experts = np.array([[[0, 1], [2, 0]], [[1, 2], [0, 1]], [[2, 0], [1, 2]]])
    write(from_routing(experts, Layout(3, 2), expand="groups", name="t"), tmp_path / "t.npz")
    write(from_routing(experts[::-1], Layout(3, 2), expand="groups", name="o"),
          tmp_path / "o.npz")
    for warm in ([], ["--warm"]):
        code = cli.main(["simulate", str(tmp_path / "t.npz"), "--policy", "lru", "--k", "3",
                         "--prefetch", f"transition:train={tmp_path / 't.npz'}", *warm])
        out, err = capsys.readouterr()
        assert code == 2 and out == "" and "transition was fitted on t, the sequence" in err
        assert cli.main(["simulate", str(tmp_path / "t.npz"), "--policy", "lru", "--k", "3",
                         "--prefetch", f"transition:train={tmp_path / 'o.npz'}", *warm]) == 0
        capsys.readouterr()


def test_transition_refuses_a_sequence_of_the_prompt_it_was_fitted_on():
    """A decode log's problem 0 and the prefill+decode dump of problem 0 are one prompt (most
    of their decode routings are the same): a transition fitted on one and run on the other
    reported training-set accuracy (the SpecMD figure's Eliseev rows did: precision 0.49-0.54
    against 0.44 held out). Refused by the prompt the sequences record (meta["sequence"]),
    warm runs too; without train=FILE such sequences are left out of the training set."""
    from paging.predict.prefetch import training_set
    from paging.warm import concat

    lay = Layout(3, 2)
    experts = np.array([[[0, 1], [2, 0]], [[1, 2], [0, 1]], [[2, 0], [1, 2]]])

    def seq(name, problem, ex=experts):
        return from_routing(ex, lay, expand="groups", name=name,
                            meta={"sequence": {"dataset": "h", "problem_id": problem}})

    p0, dump, p1 = seq("log#0", 0), seq("dump#0", 0, experts[::-1]), seq("log#1", 1)
    with pytest.raises(PagingError, match=r"fitted on log#0, the same prompt \(dataset h, "
                                          r"problem_id 0\) as dump#0"):
        Prefetcher(Transition([p0, p1])).reset(dump, 0)
    joined, _ = concat([p1, dump])
    with pytest.raises(PagingError, match="the same prompt"):
        Prefetcher(Transition([p0])).reset(joined, 0)
    Prefetcher(Transition([p1])).reset(dump, 0)  # (another prompt: taken)
    assert training_set("transition", dump, [p0, p1, dump]) == [p1]
    assert training_set("transition", p1, [p0, p1, dump]) == [p0, dump]
    plain = from_routing(experts, lay, expand="groups", name="x")  # (no prompt recorded)
    assert training_set("transition", plain, [p0, plain]) == [p0]
