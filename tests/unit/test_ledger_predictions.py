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


@pytest.mark.parametrize("mod", [predictions_blind_oracle, predictions_marker,
                                 predictions_robust])
def test_row_holds(mod):
    row = mod.check()
    assert row.holds and row.stands, row
    assert row.smallest_margin >= 0 and row.witness
    assert "Power check" in row.notes or "Power checks" in row.notes


def test_blind_oracle_row_is_tight_at_eta_zero():
    row = predictions_blind_oracle.check()
    assert row.smallest_margin == 0 and row.witness["eta"] == 0.0
    assert row.witness["bo"] == row.witness["opt"]


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
