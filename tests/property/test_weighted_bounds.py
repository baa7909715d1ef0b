"""Weighted paging's guarantees on hypothesis-generated instances, against the exact optimum.

* GreedyDual, Landlord and Layered Landlord cost at most k·OPT_w from an empty cache
  (Young 1994, 2002), OPT_w by min-cost flow; LRU, which ignores costs, does not (power check).
* With sizes and a byte budget: LP <= ILP <= every shared-cache online policy, FOO-L <= ILP <=
  FOO-U (the ledger row ``proofs.offline_bounds`` runs a seeded grid of the same check).
The ledger rows themselves are run in ``test_ledger_rows_hold``.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import long_round_traces, round_traces

import proofs.greedy_dual as gd
import proofs.offline_bounds as ob
from paging.layout import Layout
from paging.simulate import simulate
from paging.trace import from_pages


@given(trace=long_round_traces(max_rounds=80, min_pages=2, max_pages=8), data=st.data())
def test_credit_policies_are_k_competitive_for_weighted_paging(trace, data):
    P = trace.layout.n_pages
    costs = np.array(data.draw(st.lists(st.sampled_from([1.0, 3.0, 10.0, 100.0]),
                                        min_size=P, max_size=P)))
    k = data.draw(st.integers(1, P))
    _, margins = gd.margins(trace, costs, k)
    assert set(margins) == {"greedy-dual", "landlord", "layered-landlord"}  # (none left out)
    assert all(m >= 0 for m in margins.values()), margins


def test_lru_fails_the_weighted_bound():
    """The power check by hand: pages a (cost 100), b, c (cost 1), k = 2, the cycle a b c
    repeated 20 times. LRU misses all 60 requests: 20·102 = 2040. OPT keeps a after its first
    fetch and alternates b, c in the other slot (every b and c request misses), except at the
    end: after the last a (t=57) it evicts a for b, so the final c (t=59) hits:
    100 + 39 = 139. k·OPT = 278 < 2040."""
    tr = from_pages([0, 1, 2] * 20, Layout(3, 1))
    costs = np.array([100.0, 1.0, 1.0])
    opt, m = gd.margins(tr, costs, 2, ("greedy-dual", "lru"))
    assert opt == 139.0
    assert simulate(tr, "lru", 2, costs=costs).cost == 2040.0 and m["lru"] == 278 - 2040
    assert m["greedy-dual"] >= 0


@settings(max_examples=25)
@given(trace=round_traces(max_experts=3, max_layers=2, max_rounds=8), data=st.data())
def test_offline_bounds_sandwich_the_ilp(trace, data):
    P = trace.layout.n_pages
    if trace.n_requests == 0:
        return
    costs = np.array(data.draw(st.lists(st.sampled_from([1.0, 2.0, 5.0]), min_size=P,
                                        max_size=P)))
    sizes = np.array(data.draw(st.lists(st.integers(1, 3), min_size=P, max_size=P)))
    budget = data.draw(st.integers(int(sizes.max()), int(sizes.sum())))
    b = ob.bounds(trace, costs, sizes, budget)
    tol = 1e-6 * max(1.0, b["ilp"])
    assert b["lp"] <= b["ilp"] + tol and b["foo_l"] <= b["ilp"] + tol
    assert b["ilp"] <= b["foo_u"] + tol
    assert b["ilp"] <= b["best_online"] + tol and b["ilp_dist"] <= b["best_dist"] + tol


def test_ledger_rows_hold():
    for mod in (gd, ob):
        row = mod.check()
        assert row.holds and row.stands, row
        assert row.smallest_margin >= 0
    # the power checks found violations
    assert "breaks the same bound on 0 " not in gd.check().notes
