"""The paging-with-predictions ledger rows hold, with their power checks, and are in the
ledger."""

from __future__ import annotations

import pytest

import proofs
from paging import simulate
from proofs import predictions_blind_oracle, predictions_marker, predictions_robust
from proofs.predictions_common import ReversedPredictor, lfu_adversary


def test_rows_are_in_the_ledger():
    at = proofs.MODULES.index("proofs.predictions_blind_oracle")
    assert proofs.MODULES[at:at + 3] == ("proofs.predictions_blind_oracle",
                                   "proofs.predictions_marker", "proofs.predictions_robust")


@pytest.fixture(scope="module")
def rows():
    return {mod: mod.check() for mod in (predictions_blind_oracle, predictions_marker,
                                         predictions_robust)}


@pytest.mark.parametrize("mod", [predictions_blind_oracle, predictions_marker,
                                 predictions_robust])
def test_row_holds(rows, mod):
    row = rows[mod]
    assert row.holds and row.stands, row
    assert row.smallest_margin >= 0 and row.witness
    assert row.power_checks and all(pc.fails for pc in row.power_checks)


def test_blind_oracle_row_is_tight_at_eta_zero(rows):
    row = rows[predictions_blind_oracle]
    assert row.smallest_margin == 0 and row.witness["eta_l1"] == 0.0
    assert row.witness["bo"] == row.witness["opt"]


def test_blind_oracle_power_fails_at_positive_eta(rows):
    """The row informs beyond η = 0: the constant 1/2 fails on the tight instance (η = 10,
    BO − OPT = 10) and LRU passed off as BlindOracle fails at a small η > 0."""
    small, lru = rows[predictions_blind_oracle].power_checks
    assert small.fails and "'bo': 60, 'opt': 50, 'eta': 10.0" in small.detail
    assert lru.fails and "'eta': 4.0" in lru.detail


def test_tight_instance_by_hand():
    """Pattern 3 1 1 0 2 3 0 2, k = 2, page 3's prediction at t = 0 is 6 instead of 5. At t = 3
    (page 0) the cache holds 3 (pred. 6) and 1 (never again: pred. N): both evict 1. At t = 4
    (page 2) the cache holds 3 (pred. 6, true 5) and 0 (pred. 6): a tie, broken toward the least
    recently requested page 3, while OPT evicts 0 (next at 6). OPT then hits 3 at t = 5, misses
    0 at t = 6 (evicting 3) and hits 2: misses at t = 0, 1, 3, 4, 6 (5). BlindOracle misses 3
    at t = 5 (evicting 2, predicted 7, over 0, predicted 6), hits 0, misses 2 at t = 7: misses
    at t = 0, 1, 3, 4, 5, 7 (6). One miss more for one unit of error."""
    from paging.policies.predictive import BlindOracle
    from proofs.predictions_common import Recording, eta_l1, tight_instance

    tr, p, eta = tight_instance(copies=1)
    rec = Recording(p)
    r = simulate(tr, BlindOracle(predictor=rec), 2, record=True)
    assert eta == eta_l1(rec, tr) == 1.0
    assert r.evictions.tolist() == [[3, 1], [4, 3], [5, 2], [7, 3]]
    assert (r.misses, simulate(tr, "belady", 2).misses) == (6, 5)


def test_known_eta_predictors():
    """Shifted by 2 on pages 0 1 0 1 (N = 4): the odd page's two requests are predicted 2 late,
    η = 4; jitter with p = 1, w = 3 moves every prediction by 3: η = 3N."""
    from paging import Layout, from_pages
    from paging.policies.predictive import BlindOracle
    from proofs.predictions_common import JitterPredictor, Recording, ShiftedPredictor, eta_l1

    tr = from_pages([0, 1, 0, 1], Layout(2, 1))
    for pred, eta in ((ShiftedPredictor(2, tr.pages), 4.0), (JitterPredictor(1.0, 3), 12.0)):
        rec = Recording(pred)
        simulate(tr, BlindOracle(predictor=rec), 1)
        assert eta_l1(rec, tr) == eta


def test_power_check_instances():
    """LFU on its adversary (k=2): pages 0 and 1 ten times each, then 2 3 2 3 ... (30). The
    first 2 (t=20) evicts 0 (count 10, tied with 1: least recently used); then 2 and 3 evict
    each other (their counts stay below 1's 10) until 3's 10th request (t=39), where 2 has
    count 10 like 1 and 1, less recent, is evicted: 2 + 20 = 22 misses (perfect LFU: counts
    survive eviction). OPT: 4 misses (0, 1, 2, 3 once).
    22 > k·OPT + k = 10."""
    adv = lfu_adversary()
    assert simulate(adv, "lfu", 2).misses == 22
    assert simulate(adv, "belady", 2).misses == 4
    # reversed predictions: BlindOracle evicts the page needed next. k=1 of 2 pages: every
    # request after the first two is a miss either way; with k=2 of 3 pages 0 1 2 0 1 2:
    # at t2 it evicts 0 (needed at t3, soonest), at t3 it evicts 1 (needed at t4)
    from paging import Layout, from_pages
    from paging.policies.predictive import BlindOracle

    r = simulate(from_pages([0, 1, 2, 0, 1, 2], Layout(3, 1)),
                 BlindOracle(predictor=ReversedPredictor()), 2, record=True)
    assert r.evictions.tolist() == [[2, 0], [3, 1], [4, 2], [5, 0]]


def test_marker_row_fails_when_predictive_marker_ignores_its_predictions(monkeypatch):
    """PredictiveMarker with every victim uniform (randomized Marker: the same phases, the
    predictions ignored) must not pass the row: on cyclic:n=3,layers=3,rounds=120 at k = 8
    its mean over the run seeds exceeds 2·OPT = 104 at η = 0 (OPT 52, every phase's clean page
    costing it about H_8). Without that instance the row held for it (mean ≤ 1.95·OPT)."""
    from paging.policies.base import pick_uniform
    from paging.policies.predictive import PredictiveMarker

    def uniform(self, t, page, cache):
        unmarked, _ = self._unmarked(t, page, cache)
        return pick_uniform(self.ctx.rng, unmarked)

    monkeypatch.setattr(PredictiveMarker, "victim", uniform)
    row = predictions_marker.check()
    assert not row.holds and "Consistency (mean PredictiveMarker ≤ 2·OPT at η = 0): False" \
        in row.notes


def test_robust_row_fails_when_the_combiner_ignores_its_leader(monkeypatch):
    """A robust-blind-oracle evicting LRU's victim whatever the leader is plain LRU: on
    cyclic:n=3,layers=3,rounds=40 at k = 8 it makes LRU's 120 misses where BlindOracle with
    exact predictions makes OPT's 22. The old bound 6·min + 2 + k·(S + 1) = 142 let it stand;
    3·min = 66 does not."""
    from paging.policies.predictive import RobustBlindOracle

    def lru_victim(self, t, page, cache):
        self._see(t, page)
        return min(cache.candidates, key=lambda q: self.last[q])

    monkeypatch.setattr(RobustBlindOracle, "victim", lru_victim)
    row = predictions_robust.check()
    assert not row.holds and row.smallest_margin < 0
