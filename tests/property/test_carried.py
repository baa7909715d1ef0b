"""A run carried from piece to piece (:class:`paging.fast.CarriedRun`, what a serving run and a
streamed trace feed step by step) equals the one-call run of the same kernel: the hit mask,
the misses and the per-page misses, for the list family, LFU, the credit policies (with the
pages' costs and sizes), ARC, LeCaR and Marking (with the run's seed), pages and byte budgets,
shared and per layer, cut at any group boundaries."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import topk_traces

from paging import fast, generators
from paging.policies import make_policy
from paging.simulate import simulate

CARRIED = ("lru", "fifo", "fwf", "llru", "least-stale", "fld", "lfu", "lru-dist", "lfu-dist",
           "llru-dist", "arc", "arc-dist", "lecar", "lecar-dist", "marking", "marking-dist",
           "greedy-dual", "landlord", "gdsf", "layered-landlord", "gdsf-dist",
           "layered-landlord-dist")


@given(tr=topk_traces(max_tokens=8), name=st.sampled_from(CARRIED), k=st.integers(1, 8),
       byte=st.booleans(), seed=st.integers(0, 3), data=st.data())
def test_a_carried_run_fed_in_pieces_equals_one_run(tr, name, k, byte, seed, data):
    policy = make_policy(name)
    spec = fast.plan(policy)
    assert fast.carries(spec)
    P = tr.layout.n_pages
    sizes = np.asarray(data.draw(st.lists(st.integers(1, 3), min_size=P, max_size=P)),
                       dtype=np.int64) if byte else None
    # the credit policies' rates read the costs (ties of equal credits included: costs 1, 2)
    costs = np.asarray(data.draw(st.lists(st.sampled_from([1.0, 2.0, 0.5]), min_size=P,
                                          max_size=P)))
    cap = {"budget": k * 3} if byte else {"k": k}  # every page fits a budget of 3 or more
    whole = simulate(tr, name, sizes=sizes, costs=costs, record="hits", engine="reference",
                     seed=seed, **cap)
    run = fast.CarriedRun(tr.layout, spec, k * 3 if byte else k, sizes, seed=seed, costs=costs,
                          sizes=sizes)
    hits = [run.feed(tr.pages[lo:hi], tr.steps[lo:hi], hits=True)
            for lo, hi in _pieces(tr, data)]
    mask = np.concatenate(hits) if hits else np.zeros(0, bool)
    assert np.array_equal(mask, whole.hit_mask)
    assert int(run.page_misses.sum()) == whole.misses
    assert run.collisions == whole.collision_misses and run.bypasses == whole.bypasses


TOKEN_CARRIED = ("token-hazard", "token-decay", "token-match", "token-match-dist",
                 "token-decay-dist", "robust-token-match", "robust-token-match-dist",
                 "robust:token-decay,lru,margin=k")


def _pieces(tr, data):
    """``tr`` cut at up to 4 group boundaries drawn by ``data``: the pieces' bounds."""
    bounds = np.flatnonzero(np.r_[True, tr.steps[1:] != tr.steps[:-1]]) if tr.n_requests \
        else np.zeros(0, np.int64)
    cuts = sorted(set(data.draw(st.lists(st.sampled_from(bounds.tolist()), max_size=4))
                      if bounds.size else []))
    return [(lo, hi) for lo, hi in zip([0, *cuts], [*cuts, tr.n_requests], strict=True)
            if hi > lo]


#: the prediction policies with the frequency predictor (the markers with the run's seed), and
#: Score-Based (each piece given its gate scores)
PRED_CARRIED = ("blind-oracle", "blind-oracle-dist", "predictive-marker",
                "predictive-marker-dist", "lmarker", "lmarker-dist", "robust-blind-oracle",
                "robust-blind-oracle-dist", "score-based", "score-based-dist")


@given(tr=topk_traces(max_tokens=8), name=st.sampled_from(TOKEN_CARRIED + PRED_CARRIED),
       k=st.integers(1, 8), byte=st.booleans(), seed=st.integers(0, 3), data=st.data())
def test_a_carried_token_or_prediction_run_equals_the_reference(tr, name, k, byte, seed,
                                                                 data):
    """The token policies (one token per walk, ``steps // ℓ``, as a serving run reads them)
    and the prediction policies carried from piece to piece, against the reference loop on
    the same trace without tokens; Score-Based with gate scores of few values (ties in the
    sums), each piece given its own."""
    from paging.trace import Trace

    score = None
    if name.startswith("score-based"):
        score = np.random.default_rng(seed).choice([0.25, 0.5, 1.0], tr.n_requests)
    tr = Trace(tr.layout, tr.pages, tr.steps, tr.name, expand=tr.expand,
               score=score)  # one token a walk
    P = tr.layout.n_pages
    sizes = np.asarray(data.draw(st.lists(st.integers(1, 3), min_size=P, max_size=P)),
                       dtype=np.int64) if byte else None
    cap = {"budget": k * 3} if byte else {"k": k}
    whole = simulate(tr, name, sizes=sizes, record="hits", engine="reference", seed=seed,
                     **cap)
    spec = fast.plan(make_policy(name))
    # (a token run keeps its requests, to redo them when a bound fails: not for a stream)
    assert fast.carries(spec) and fast.carries(spec, bounded_memory=True) == (
        name in PRED_CARRIED)
    run = fast.CarriedRun(tr.layout, spec, k * 3 if byte else k, sizes, seed=seed, sizes=sizes)
    hits = [run.feed(tr.pages[lo:hi], tr.steps[lo:hi], hits=True,
                     scores=None if score is None else score[lo:hi])
            for lo, hi in _pieces(tr, data)]
    mask = np.concatenate(hits) if hits else np.zeros(0, bool)
    assert np.array_equal(mask, whole.hit_mask)
    assert np.array_equal(run.page_misses, whole.page_misses)
    assert run.collisions == whole.collision_misses and run.bypasses == whole.bypasses


@pytest.mark.parametrize("name,n,L,tokens,seed,k,what", [
    ("token-match", 8, 16, 2000, 1, 42, "bounded"),
    ("token-match", 8, 8, 2000, 1, 21, "redone"),
    ("token-decay-dist", 32, 4, 2000, 1, 42, "redone")])
def test_a_carried_token_run_redoes_its_pieces_when_a_bound_fails(monkeypatch, name, n, L,
                                                                  tokens, seed, k, what):
    """With no margin (ENTER = 0) these runs turn BOUNDED, and two of them fail a bound later
    (tests/property/test_token_bounds.py's RUNS): fed in 50 pieces, the carried run redoes
    the pieces so far with exact sums at the failing piece, and every piece's hits, and the
    totals, are the reference's."""
    from paging.fast import tokens as T

    monkeypatch.setattr(T, "ENTER", (0.0,))
    tr = generators.zipf(n=n, layers=L, tokens=tokens, seed=seed)
    whole = simulate(tr, name, k, record="hits", engine="reference")
    run = fast.CarriedRun(tr.layout, fast.plan(make_policy(name)), k)
    cuts = np.linspace(0, tr.n_requests // L, 51).astype(np.int64) * L
    mask = np.concatenate([run.feed(tr.pages[lo:hi], tr.steps[lo:hi], hits=True)
                           for lo, hi in zip(cuts[:-1], cuts[1:], strict=True)])
    assert np.array_equal(mask, whole.hit_mask)
    assert np.array_equal(run.page_misses, whole.page_misses)
    assert run.collisions == whole.collision_misses
    ist = run.state.S[0]
    if what == "bounded":
        assert ist[:, T.I_NAPX].sum() > 0 and run.state.enter == 0.0
    else:  # redone with exact sums: no bounded token end in the run kept
        assert ist[:, T.I_NAPX].sum() == 0 and run.state.enter is None


def test_what_does_not_carry():
    """The oracle predictor and Belady read the future: whole traces only; a stream keeps no
    requests, so not the token policies' CarriedRun (a stream runs them in
    tokens.Streamed); the prediction policies (Score-Based among them) serve each piece alone
    and carry in a stream too."""
    for name in ("blind-oracle:oracle", "belady"):
        assert not fast.carries(fast.plan(make_policy(name)))
    assert not fast.carries(fast.plan(make_policy("token-match")), bounded_memory=True)
    for name in ("lru", "blind-oracle", "score-based", "lmarker-dist"):
        assert fast.carries(fast.plan(make_policy(name)), bounded_memory=True)


@pytest.mark.parametrize("name", CARRIED + TOKEN_CARRIED + PRED_CARRIED + ("lhu", "lfu-dist"))
@pytest.mark.parametrize("k", [3, 7])
def test_the_residency_a_carried_run_reports_is_the_reference_cache(name, k):
    """``CarriedRun.resident()`` (what a routed serving step reads between two layers) after
    every group of a run fed group by group equals the cache of the reference loop's run at
    that point, rebuilt from its hit mask, eviction log and bypasses."""
    from paging.trace import Trace

    tr = generators.zipf(n=6, layers=3, tokens=120, seed=k, a=0.8, topk=2, expand="groups")
    score = np.random.default_rng(k).random(tr.n_requests)  # (Score-Based reads them)
    tr = Trace(tr.layout, tr.pages, tr.steps, tr.name, expand=tr.expand,
               score=score)  # one token a walk
    ref = simulate(tr, name, k, record=True, engine="reference", seed=1)
    evicted = {}
    for t, v in np.asarray(ref.evictions).reshape(-1, 2).tolist():
        evicted.setdefault(t, []).append(v)
    bypassed = set(np.asarray(ref.bypassed).tolist())
    run = fast.CarriedRun(tr.layout, fast.plan(make_policy(name)), k, seed=1)
    cache = np.zeros(tr.layout.n_pages, bool)
    starts = np.flatnonzero(np.r_[True, np.diff(tr.steps) != 0])
    ends = np.r_[starts[1:], tr.n_requests]
    for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True):
        run.feed(tr.pages[lo:hi], tr.steps[lo:hi], scores=score[lo:hi])
        for t in range(lo, hi):
            cache[evicted.get(t, [])] = False
            if not ref.hit_mask[t] and t not in bypassed:
                cache[tr.pages[t]] = True
        np.testing.assert_array_equal(np.asarray(run.resident(), bool), cache, err_msg=f"{lo}")
    assert cache.sum() > 0
