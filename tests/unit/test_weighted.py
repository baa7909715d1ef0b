"""Weighted paging in the one simulator: costs, sizes, byte budgets and the credit policies.

Exact, hand-checked examples (worked out in the comments), the reductions that must hold
exactly (unit weights reproduce the unweighted runs; GreedyDual with unit costs is LRU; Landlord
with unit sizes is GreedyDual), and the verifier's power on tampered weighted runs.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import round_traces, scored_for, topk_traces

from paging import Layout, from_pages, simulate
from paging.errors import PagingError
from paging.fast import has_kernel
from paging.policies import POLICY_NAMES, make_policy
from paging.verify import VerificationError, verify

ENGINES = ["reference", "fast"]
ONE_LAYER = Layout(n_experts=4, n_layers=1)
A, B, C, D = 0, 1, 2, 3


# (name, engine): "fast" only for the policies that have a kernel (ARC and LeCaR run in the
# reference loop only)
NAME_ENGINE = [(name, engine) for name in POLICY_NAMES for engine in ENGINES
               if engine == "reference" or has_kernel(make_policy(name))]


@pytest.mark.parametrize("name, engine", NAME_ENGINE)
@given(trace=st.one_of(round_traces(), topk_traces()), k=st.integers(1, 12))
def test_unit_weights_reproduce_the_unweighted_run(name, engine, trace, k):
    """Costs of 1 and sizes of 1 with a budget of k bytes change nothing: same hits, same
    evictions, and cost = misses, bytes = misses. (A policy without a kernel, ARC or LeCaR,
    runs the reference loop under "fast" too.)"""
    trace = scored_for(name, trace)
    if engine == "fast" and not has_kernel(make_policy(name)):
        engine = "reference"
    P = trace.layout.n_pages
    plain = simulate(trace, name, k, record=True, engine=engine)
    ones = simulate(trace, name, budget=k, costs=np.ones(P), sizes=np.ones(P, np.int64),
                    record=True, engine=engine)
    assert plain.misses == ones.misses and plain.cost == plain.misses == ones.cost
    assert plain.bytes_fetched is None and ones.bytes_fetched == ones.misses
    assert np.array_equal(plain.hit_mask, ones.hit_mask)
    assert np.array_equal(plain.evictions, ones.evictions)
    assert ones.k is None and ones.budget == k and plain.budget is None


@pytest.mark.parametrize("engine", ENGINES)
@given(trace=st.one_of(round_traces(), topk_traces()), k=st.integers(1, 12))
def test_greedy_dual_with_unit_costs_is_lru(engine, trace, k):
    """H(p) = L(τ_p) + 1 with L non-decreasing in time: ordering by (H, last request) is
    ordering by the last request, LRU's order (and the same holds per layer for -dist)."""
    for gd, lru in (("greedy-dual", "lru"), ("greedy-dual-dist", "lru-dist")):
        a = simulate(trace, gd, k, record=True, engine=engine)
        b = simulate(trace, lru, k, record=True, engine=engine)
        assert np.array_equal(a.evictions, b.evictions) and a.misses == b.misses


@pytest.mark.parametrize("engine", ENGINES)
@given(trace=round_traces(), k=st.integers(1, 12), data=st.data())
def test_landlord_with_unit_sizes_is_greedy_dual(engine, trace, k, data):
    P = trace.layout.n_pages
    costs = np.array(data.draw(st.lists(st.floats(0, 50), min_size=P, max_size=P)))
    a = simulate(trace, "landlord", k, costs=costs, record=True, engine=engine)
    b = simulate(trace, "greedy-dual", k, costs=costs, record=True, engine=engine)
    assert np.array_equal(a.evictions, b.evictions) and a.cost == b.cost


# a = page 0 costs 10, b and c cost 1, k = 2, sequence a b c a b c (one layer):
# GreedyDual: t0 a H=10; t1 b H=1; t2 c misses, evict b (H 1 < 10), L=1, c H=2; t3 a hits,
#   H=1+10=11; t4 b misses, evict c (2 < 11), L=2, b H=3; t5 c misses, evict b (3), L=3.
#   Misses at t0 t1 t2 t4 t5: cost 10+1+1+1+1 = 14, evictions (2,b) (4,c) (5,b).
# LRU misses all six: cost 24. The weighted optimum keeps a: 13 (here Belady's schedule).
WEIGHTED_SEQ = [A, B, C, A, B, C]
WEIGHTED_COSTS = np.array([10.0, 1.0, 1.0, 1.0])


@pytest.mark.parametrize("engine", ENGINES)
def test_greedy_dual_hand_example(engine):
    tr = from_pages(WEIGHTED_SEQ, ONE_LAYER)
    gd = simulate(tr, "greedy-dual", 2, costs=WEIGHTED_COSTS, record=True, engine=engine)
    assert gd.cost == 14.0 and gd.misses == 5
    assert gd.evictions.tolist() == [[2, B], [4, C], [5, B]]
    lru = simulate(tr, "lru", 2, costs=WEIGHTED_COSTS, engine=engine)
    assert lru.cost == 24.0 and lru.misses == 6
    opt = simulate(tr, "belady", 2, costs=WEIGHTED_COSTS, engine=engine)
    assert opt.cost == 13.0 and opt.misses == 4
    verify(tr, gd, costs=WEIGHTED_COSTS)


# Byte budget 4, sizes a=3, b=1, c=1, d=2, LRU, sequence a b c d a:
# a (3) and b (1) fill 4 bytes; c needs 1: evict LRU a -> b, c (2 bytes); d needs 2: fits
# (4 bytes); a needs 3 with 4 used: evict b (3 used), c (2 used), d (0 used), insert a.
# Five misses, evictions (2,a) (4,b) (4,c) (4,d), bytes fetched 3+1+1+2+3 = 10.
SIZES = np.array([3, 1, 1, 2], dtype=np.int64)


@pytest.mark.parametrize("engine", ENGINES)
def test_budget_evicts_until_the_page_fits(engine):
    tr = from_pages([A, B, C, D, A], ONE_LAYER)
    r = simulate(tr, "lru", budget=4, sizes=SIZES, record=True, engine=engine)
    assert r.misses == 5 and r.bytes_fetched == 10 and r.cost == 5.0
    assert r.evictions.tolist() == [[2, A], [4, B], [4, C], [4, D]]
    verify(tr, r, sizes=SIZES)
    # counted in pages (k = 3), sizes only count the bytes: a b c fill, d evicts a, a evicts b
    p = simulate(tr, "lru", 3, sizes=SIZES, record=True, engine=engine)
    assert p.evictions.tolist() == [[3, A], [4, B]] and p.bytes_fetched == 10


# Landlord (GreedyDual-Size) prefers to evict large cheap pages: budget 4, sizes a=3, b=1,
# c=1, costs a=3 (credit 1 per byte), b=2, c=2 (credit 2 per byte). Sequence a b c:
# a H=1, b H=2; c (1 byte) with 4 used: evict a (smallest H, L=1), c H=1+2=3.
# LRU would also evict a; with sequence b a c LRU evicts b (2 bytes free? no: 4 used, need 1,
# evict LRU b -> 3 used, c fits) while Landlord still evicts a (H 1 < 2).
@pytest.mark.parametrize("engine", ENGINES)
def test_landlord_prefers_large_cheap_pages(engine):
    costs = np.array([3.0, 2.0, 2.0, 1.0])
    tr = from_pages([B, A, C], ONE_LAYER)
    ll = simulate(tr, "landlord", budget=4, costs=costs, sizes=SIZES, record=True, engine=engine)
    assert ll.evictions.tolist() == [[2, A]]
    lru = simulate(tr, "lru", budget=4, costs=costs, sizes=SIZES, record=True, engine=engine)
    assert lru.evictions.tolist() == [[2, B]]
    gd = simulate(tr, "greedy-dual", budget=4, costs=costs, sizes=SIZES, record=True,
                  engine=engine)
    assert gd.evictions.tolist() == [[2, B]]  # GreedyDual ignores sizes: b (2) < a (3)


# GDSF: unit costs, sizes 1, k = 2, sequence a a b c: a H=0+1·1=1 then hit H=0+2=2; b H=1;
# c misses: evict b (1 < 2), L=1, c H=1+1=2. Then a: hit. LRU would evict a at c? No: LRU
# order at c is a (t1), b (t2): evicts a. GDSF keeps the twice-used a.
@pytest.mark.parametrize("engine", ENGINES)
def test_gdsf_keeps_frequent_pages(engine):
    tr = from_pages([A, A, B, C, A], ONE_LAYER)
    g = simulate(tr, "gdsf", 2, record=True, engine=engine)
    assert g.evictions.tolist() == [[3, B]] and g.misses == 3
    lru = simulate(tr, "lru", 2, record=True, engine=engine)
    assert lru.evictions.tolist() == [[3, A], [4, B]] and lru.misses == 4


# Layered Landlord, unit costs: a deterministic marking algorithm with LLRU's order among the
# unmarked. The LLRU example of test_policies (ℓ=3, n=2, k=5, 0 2 4 | 1 3 5 | 0 2 4):
# t0..t4 fill the cache, all H = 1 (L = 0). t5 (page 5) misses: all five have H = 1, LLRU
# order evicts page 2 (R = 1, D = 2), L = 1, page 5 H = 2. t6 page 0 hits: H = 2. t7 page 2
# misses: H = 1 for 4, 1, 3 (unmarked), LLRU picks among them: R = 1,1,1 at t = 7
# (τ = 2, 3, 4: d = 5, 4, 3), D = (τ − t) mod 3 = 1, 2, 0 -> evict page 1. t8 page 4 hits.
@pytest.mark.parametrize("engine", ENGINES)
def test_layered_landlord_hand_example(engine):
    tr = from_pages([0, 2, 4, 1, 3, 5, 0, 2, 4], Layout(n_experts=2, n_layers=3))
    r = simulate(tr, "layered-landlord", 5, record=True, engine=engine)
    assert r.evictions.tolist() == [[5, 2], [7, 1]] and r.misses == 7


@pytest.mark.parametrize("engine", ENGINES)
def test_a_page_larger_than_the_budget_is_bypassed(engine):
    tr = from_pages([A, D, A, D], ONE_LAYER)
    sizes = np.array([1, 1, 1, 5], dtype=np.int64)
    r = simulate(tr, "landlord", budget=4, sizes=sizes, costs=WEIGHTED_COSTS, record=True,
                 engine=engine)
    assert r.misses == 3 and r.bypasses == 2 and r.bypassed.tolist() == [1, 3]
    assert r.cost == 10.0 + 1.0 + 1.0 and r.bytes_fetched == 1 + 5 + 5
    verify(tr, r, costs=WEIGHTED_COSTS, sizes=sizes)


def test_result_json_fields():
    tr = from_pages(WEIGHTED_SEQ, ONE_LAYER)
    # 6 bytes hold a (3), b (1), c (1): only the three first requests miss
    d = simulate(tr, "greedy-dual", budget=6, costs=WEIGHTED_COSTS, sizes=SIZES).to_dict()
    assert d["k"] is None and d["budget_bytes"] == 6 and d["cost"] == 12.0
    assert d["bytes_fetched"] == 3 + 1 + 1
    plain = simulate(tr, "lru", 2).to_dict()
    assert plain["cost"] == 6.0 and plain["bytes_fetched"] is None and "budget_bytes" not in plain


@pytest.mark.parametrize("kw,msg", [
    (dict(), "exactly one capacity"),
    (dict(k=2, budget=4, sizes=SIZES), "exactly one capacity"),
    (dict(budget=4), "needs page sizes"),
    (dict(budget=0, sizes=SIZES), "integer >= 1"),
    (dict(budget=4, sizes=np.array([5, 6, 7, 8])), "holds no page: the smallest page has 5"),
    (dict(k=2, costs=[1.0, 2.0]), "costs: expected 4 costs"),
    (dict(k=2, costs=[1.0, float("nan"), 1.0, 1.0]), "entry 1 is nan"),
    (dict(k=2, costs=[1.0, -1.0, 1.0, 1.0]), "entry 1 is -1.0"),
    (dict(k=2, sizes=[1, 0, 1, 1]), "entry 1 is 0"),
    (dict(k=2, sizes=[1, 1.5, 1, 1]), "entry 1 is 1.5"),
    (dict(k=2, sizes=[True, True, True, True]), "expected integer sizes, got booleans"),
    (dict(k=2, costs=[True, False, True, True]), "expected numeric costs, got booleans"),
])
def test_bad_weights_are_one_line_errors(kw, msg):
    tr = from_pages(WEIGHTED_SEQ, ONE_LAYER)
    with pytest.raises(PagingError, match=msg):
        simulate(tr, "lru", **kw)


def test_verifier_rejects_tampered_weighted_runs():
    tr = from_pages([A, B, C, D, A], ONE_LAYER)
    r = simulate(tr, "lru", budget=4, sizes=SIZES, costs=WEIGHTED_COSTS, record=True)
    verify(tr, r, sizes=SIZES, costs=WEIGHTED_COSTS)
    with pytest.raises(VerificationError, match="cost"):
        verify(tr, dataclasses.replace(r, cost=r.cost + 1), sizes=SIZES, costs=WEIGHTED_COSTS)
    with pytest.raises(VerificationError, match="bytes"):
        verify(tr, dataclasses.replace(r, bytes_fetched=1), sizes=SIZES, costs=WEIGHTED_COSTS)
    # an extra eviction of d at t=3 although d... (c fitted): evicting at t=3 is not needed
    ev = np.array([[2, A], [3, B], [4, C], [4, D]])
    with pytest.raises(VerificationError, match="fitted"):
        verify(tr, dataclasses.replace(r, evictions=ev), sizes=SIZES, costs=WEIGHTED_COSTS)
    # the same run checked against a smaller budget overflows it
    with pytest.raises(VerificationError, match="above its capacity"):
        verify(tr, dataclasses.replace(r, budget=3), sizes=SIZES, costs=WEIGHTED_COSTS)
