"""Exact, hand-checked examples for every policy (the numbers are worked out in comments)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paging import Layout, from_pages, from_routing, simulate
from paging.policies import make_policy
from paging.policies.base import Context
from paging.policies.layered import LeastStaleLayer
from paging.verify import verify

BELADY_STRING = [1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5]


@pytest.mark.parametrize("engine", ["reference", "fast"])
@pytest.mark.parametrize("policy,k,misses", [
    ("fifo", 3, 9), ("fifo", 4, 10),      # Belady's anomaly: more frames, more faults
    ("lru", 3, 10), ("lru", 4, 8),
    ("belady", 3, 7), ("belady", 4, 6),
])
def test_belady_anomaly_string(policy, k, misses, engine):
    trace = from_pages(BELADY_STRING, Layout(n_experts=6, n_layers=1))
    res = simulate(trace, policy, k, record=True, engine=engine)
    assert res.misses == misses
    verify(trace, res)


# Layered example for LLRU (Angelopoulos et al., Sec. 4, Def. 2), l = 3 layers of n = 2 experts:
# pages layer0 {0,1}, layer1 {2,3}, layer2 {4,5}; k = 5; sequence 0 2 4 | 1 3 5 | 0 2 4.
# t=5 (page 5, a miss, cache {0,2,4,1,3} full): d = t - tau = 5,4,3,2,1 for pages 0,2,4,1,3;
#   R = d // 3 = 1,1,1,0,0; among R = 1: D = (tau - t) mod 3 = (-5)%3=1, (-4)%3=2, (-3)%3=0
#   -> evict page 2 (D = 2): the page of the layer just served. LRU would evict page 0.
# t=6 page 0: hit.  t=7 page 2: miss; tau = 0:6, 4:2, 1:3, 3:4, 5:5 -> d = 1,5,4,3,2,
#   R = 0,1,1,1,0; among R = 1 (pages 4,1,3): D = 1,2,0 -> evict page 1.
# t=8 page 4: hit.  LLRU: 7 misses, evictions (5,2), (7,1).
LLRU_SEQ = [0, 2, 4, 1, 3, 5, 0, 2, 4]


def test_llru_hand_example():
    trace = from_pages(LLRU_SEQ, Layout(n_experts=2, n_layers=3))
    res = simulate(trace, "llru", 5, record=True, engine="reference")
    assert res.misses == 7
    assert res.evictions.tolist() == [[5, 2], [7, 1]]
    assert res.hit_mask.tolist() == [False] * 6 + [True, False, True]
    # LRU: t5 evicts 0, t6 (0) evicts 2, t7 (2) evicts 4, t8 (4) evicts 1: 9 misses
    lru = simulate(trace, "lru", 5, record=True, engine="reference")
    assert lru.misses == 9
    assert lru.evictions.tolist() == [[5, 0], [6, 2], [7, 4], [8, 1]]
    # OPT: at t5 evict a page never used again (1 or 3; ties -> larger id 3), then all hit
    opt = simulate(trace, "belady", 5, record=True, engine="reference")
    assert opt.misses == 6 and opt.evictions.tolist() == [[5, 3]]


def test_llru_latest_hand_example():
    """Definition 2's other reading on the same sequence: at t = 5 (layer 2) pages 0, 2, 4 share
    R = 1; (τ − t − 1) mod 3 = 0, 1, 2, so page 4 (layer 2, the current layer, next at t = 8)
    goes first, where llru evicts page 2 (next at t = 7). Then t6 (0) and t7 (2) hit, t8 (4)
    misses with R = 0 for 0, 2 and R = 1 for 1 (τ = 3), 3 (τ = 4), 5 (τ = 5): 5 has
    (5 − 8 − 1) mod 3 = 2, the largest, so 5 goes: 7 misses, like llru."""
    trace = from_pages(LLRU_SEQ, Layout(n_experts=2, n_layers=3))
    res = simulate(trace, "llru-latest", 5, record=True)
    assert res.evictions.tolist() == [[5, 4], [8, 5]]
    assert res.misses == 7
    verify(trace, res)
    # inside one layer both readings are LRU: the -dist variants agree with lru-dist
    assert (simulate(trace, "llru-latest-dist", 5).misses
            == simulate(trace, "lru-dist", 5).misses)


def test_llru_groups_mode_uses_the_group_clock():
    # l = 2, n = 3, top-2 groups: token0 layer0 {0,1}, layer1 {3,4}; token1 layer0 {2,0}.
    # steps 0,0,1,1,2,2; k = 4. Request 4 (page 2, step 2, layer 0) misses with cache
    # {0,1,3,4}; page 0 is pinned (same group). tau(step): 1->0, 3->1, 4->1; t = 2:
    # R = 1,0,0 -> evict page 1.
    table = np.array([[[0, 1], [0, 1]], [[2, 0], [2, 1]]])
    trace = from_routing(table, Layout(3, 2), expand="groups")
    assert trace.pages.tolist()[:6] == [0, 1, 3, 4, 2, 0]
    res = simulate(trace, "llru", 4, record=True, engine="reference")
    assert res.evictions.tolist()[0] == [4, 1]
    verify(trace, res)


def test_fifo_ignores_hits_lru_does_not():
    # one layer of 4 experts, k = 2: 0 1 0 2 -> FIFO evicts 0 (first in), LRU evicts 1
    trace = from_pages([0, 1, 0, 2], Layout(4, 1))
    assert simulate(trace, "fifo", 2, record=True).evictions.tolist() == [[3, 0]]
    assert simulate(trace, "lru", 2, record=True).evictions.tolist() == [[3, 1]]


def test_lfu_counts_survive_eviction_and_ties_go_to_lru():
    # k = 2: 0 0 1 2 (evict 1: count 1 < 2) 1 (evict 2: counts 0:2, 2:1 -> 2) 3
    # at t=5: cache {0, 1}, counts 0:2, 1:2 (history count) -> tie -> LRU: 0 (last t=1)
    trace = from_pages([0, 0, 1, 2, 1, 3], Layout(4, 1))
    res = simulate(trace, "lfu", 2, record=True, engine="reference")
    assert res.evictions.tolist() == [[3, 1], [4, 2], [5, 0]]


@pytest.mark.parametrize("engine", ["reference", "fast"])
@pytest.mark.parametrize("name", ["lfu", "lhu", "score-based"])
def test_frequency_and_score_ties_go_to_lru_as_the_conventions_table_says(name, engine):
    # one layer of 3 experts, k = 2, every gate score 0.5: 1 0 2. At t=2 pages 1 (last t=0)
    # and 0 (last t=1) tie (one use each, score sum 0.5 each): the least recently used, page
    # 1, goes (not the smaller id 0). docs/guide/conventions.md's tie-break column must say
    # so (it said "none" for lhu and score-based).
    trace = from_routing([[[1]], [[0]], [[2]]], Layout(3, 1), scores=[[[0.5]]] * 3)
    res = simulate(trace, name, 2, record=True, engine=engine)
    assert res.evictions.tolist() == [[2, 1]]
    table = (Path(__file__).resolve().parents[2] / "docs/guide/conventions.md").read_text()
    row = next(line for line in table.splitlines() if line.startswith(f"| `{name}` |"))
    assert row.split(" | ")[2] == "least recently used"


def test_fwf_flushes_whole_cache():
    # k = 2: 0 1 2 (full: flush 0 and 1, insert 2) 0 (room: no eviction) 1 (full: flush 2, 0)
    trace = from_pages([0, 1, 2, 0, 1], Layout(4, 1))
    res = simulate(trace, "fwf", 2, record=True, engine="reference")
    assert res.evictions.tolist() == [[2, 0], [2, 1], [4, 2], [4, 0]]
    assert res.misses == 5


@pytest.mark.parametrize("engine", ["reference", "fast"])
def test_fld_two_readings_of_the_layer_distance(engine):
    # l = 4, n = 1 (pages = layers 0..3), k = 3; 0 1 2 3: at t=3 (layer 3) the plain distances
    # |layer - 3| are 3, 2, 1 for pages 0, 1, 2 -> fld evicts page 0; the cyclic distances
    # (layer - 3) mod 4 are 1, 2, 3 -> fld-cyclic evicts page 2
    trace = from_pages([0, 1, 2, 3], Layout(1, 4))
    assert simulate(trace, "fld", 3, record=True, engine=engine).evictions.tolist() == [[3, 0]]
    assert simulate(trace, "fld-cyclic", 3, record=True,
                    engine=engine).evictions.tolist() == [[3, 2]]


@pytest.mark.parametrize("engine", ["reference", "fast"])
def test_fld_ties_evict_the_layer_behind(engine):
    # l = 3, n = 2 (layers {0,1} {2,3} {4,5}), k = 3; 0 2 4 | 0 3: at t=4 (page 3, layer 1) the
    # cache is {0 (layer 0, last t=3), 2 (layer 1), 4 (layer 2, last t=2)}: pages 0 and 4 are
    # both at distance 1; the layer behind (0) goes first although page 4 is older
    trace = from_pages([0, 2, 4, 0, 3], Layout(2, 3))
    assert simulate(trace, "fld", 3, record=True, engine=engine).evictions.tolist() == [[4, 0]]
    assert simulate(trace, "lru", 3, record=True, engine=engine).evictions.tolist() == [[4, 2]]


@pytest.mark.parametrize("engine", ["reference", "fast"])
def test_least_stale_readings_differ_on_left_and_current(engine):
    # l = 4, n = 2 (layers {0,1} {2,3} {4,5} {6,7}), k = 3; pages 0 2 4 6 | 0 2.
    # t=3 (page 6, pass 0, layer 3): cache {0,2,4} all current; every reading evicts the lowest
    # layer, page 0. t=4 (page 0, pass 1, layer 0): {2,4,6} all stale, none left: page 2.
    # t=5 (page 2, pass 1, layer 1): cache {4 (stale, layer 2), 6 (stale, layer 3),
    # 0 (current, layer 0: left)}: least-stale and least-stale-upcoming evict the left page 0;
    # least-stale-layer (stale first: the current queue only when nothing is stale) and LRU
    # evict the lowest stale layer's page 4.
    trace = from_pages([0, 2, 4, 6, 0, 2], Layout(2, 4))
    ev = {p: simulate(trace, p, 3, record=True, engine=engine).evictions.tolist()
          for p in ("least-stale", "least-stale-upcoming", "least-stale-layer", "lru")}
    assert ev["least-stale"] == ev["least-stale-upcoming"] == [[3, 0], [4, 2], [5, 0]]
    assert ev["least-stale-layer"] == ev["lru"] == [[3, 0], [4, 2], [5, 4]]


@pytest.mark.parametrize("engine", ["reference", "fast"])
def test_least_stale_readings_differ_on_the_current_layer(engine):
    # l = 3, n = 2, k = 3; 0 2 4 | 0 3: at t=4 (page 3, pass 1, layer 1) the cache is
    # {0 (current, layer 0), 2 (stale, layer 1), 4 (stale, layer 2)}. least-stale (left:
    # layer < 1) evicts the current left page 0; least-stale-upcoming (layer <= 1 evictable
    # first, stale before current) and least-stale-layer (stale, lowest layer) evict page 2.
    trace = from_pages([0, 2, 4, 0, 3], Layout(2, 3))
    ev = {p: simulate(trace, p, 3, record=True, engine=engine).evictions.tolist()
          for p in ("least-stale", "least-stale-upcoming", "least-stale-layer")}
    assert ev == {"least-stale": [[4, 0]], "least-stale-upcoming": [[4, 2]],
                  "least-stale-layer": [[4, 2]]}


class _StaleLeftLayer(LeastStaleLayer):
    """Sec. 4.2's queues with *left* as an explicit second test: (stale, left, layer, last)."""

    name = "stale-left-layer"

    def evict_key(self, t, page):
        L, n = self.ctx.layout.n_layers, self.ctx.layout.n_experts
        s = int(self.ctx.steps[t])
        stale = self.last_step[page] // L < s // L
        return (stale, page // n < s % L, -(page // n), -self.last[page])


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 3), L=st.integers(1, 4), k=st.integers(1, 6), groups=st.booleans(),
       draw=st.lists(st.integers(0, 2**16), min_size=1, max_size=60))
def test_least_stale_layer_already_puts_left_first_in_each_queue(n, L, k, groups, draw):
    # the docstring's claim: the lowest layers are the left ones, so (stale, layer, last)
    # evicts as (stale, left, layer, last) would, in rounds and in groups mode
    if groups:
        K = min(2, n)
        tokens = [[sorted(((d >> (2 * z)) + j) % n for j in range(K)) for z in range(L)]
                  for d in draw[:15]]
        trace = from_routing(tokens, Layout(n, L))
    else:
        trace = from_pages([(i % L) * n + d % n for i, d in enumerate(draw)], Layout(n, L))
    a = simulate(trace, "least-stale-layer", k, record=True, engine="reference")
    b = simulate(trace, _StaleLeftLayer(), k, record=True, engine="reference")
    assert a.evictions.tolist() == b.evictions.tolist() and a.misses == b.misses


def test_least_stale_layer_prefers_stale_then_lowest_layer():
    # l = 2, n = 3: pages layer0 {0,1,2}, layer1 {3,4,5}; k = 3.
    # rounds (= passes): [0 3] [1 4] [2 ...]. At t=3 (page 4, pass 1), cache {0,3,1}:
    # 0 and 3 are stale (pass 0), 1 current; lowest layer first -> evict 0.
    trace = from_pages([0, 3, 1, 4, 2, 5], Layout(3, 2))
    res = simulate(trace, "least-stale-layer", 3, record=True, engine="reference")
    assert res.evictions.tolist()[0] == [3, 0]
    # t=4 (page 2, pass 2), cache {3,1,4}: all stale; layer0 page 1 goes first
    assert res.evictions.tolist()[1] == [4, 1]


def test_least_stale_counts_a_prefetched_expert_as_current():
    # SpecMD: current = "used in the current pass or selected by prefetching". l = 3, n = 2,
    # k = 3, pages 0 2 4 | 0 3 as above, but page 4 prefetched at t=3 (after page 0 of pass 1):
    # at t=4 the cache {0, 2, 4} has 0 current (left), 2 stale, 4 current (prefetched, right):
    # page 4's key says current, page 2's stale, and the left page 0 is still the victim.
    pol = make_policy("least-stale")
    trace = from_pages([0, 2, 4, 0, 3], Layout(2, 3))
    ctx = Context(layout=trace.layout, capacity=3, rng=np.random.default_rng(0),
                  steps=trace.steps, n_requests=len(trace.pages))
    pol.reset(ctx)
    for t, p in enumerate([0, 2, 4]):
        pol.on_insert(t, p)
    pol.on_hit(3, 0)
    pol.on_prefetch(3, 4)
    assert pol.evict_key(4, 4)[1] is False  # prefetched in pass 1: current, not stale
    assert pol.evict_key(4, 2)[1] is True
    assert max((0, 2, 4), key=lambda q: pol.evict_key(4, q)) == 0


def test_marking_is_seeded_and_uses_one_draw_per_eviction():
    trace = from_pages([0, 1, 2, 3, 0, 1, 2, 3, 4, 0], Layout(5, 1))
    a = simulate(trace, "marking", 2, seed=7, record=True)
    b = simulate(trace, "marking", 2, seed=7, record=True)
    assert a.evictions.tolist() == b.evictions.tolist()
    # reproduce the first eviction by hand: t=2, marks {0,1} -> new phase, pick among [0,1]
    u = np.random.default_rng(7).random()
    assert a.evictions[0].tolist() == [2, [0, 1][int(u * 2)]]


def test_dist_shares_and_zero_share_layers():
    lay = Layout(n_experts=2, n_layers=3)
    assert lay.dist_shares(7).tolist() == [3, 2, 2]
    assert lay.dist_shares(2).tolist() == [1, 1, 0]
    # k = 2: layer 2 has no slot, every request of layer 2 misses (bypass)
    trace = from_pages([0, 2, 4, 0, 2, 4], lay)
    res = simulate(trace, "lru-dist", 2, record=True)
    assert res.misses == 4 and res.bypasses == 2
    assert res.per_layer_misses.tolist() == [1, 1, 2]
    verify(trace, res)


def test_groups_pin_the_group_and_bypass_when_nothing_is_evictable():
    # one layer, top-2 groups {0,1} {2,3}, k = 1: the second page of each group cannot evict
    # the first (pinned), so it is bypassed
    trace = from_routing(np.array([[[0, 1]], [[2, 3]]]), Layout(4, 1), expand="groups")
    res = simulate(trace, "lru", 1, record=True)
    assert res.misses == 4 and res.bypasses == 2
    assert res.bypassed.tolist() == [1, 3]
    verify(trace, res)


@pytest.mark.parametrize("ell,k", [(1, 3), (2, 5), (3, 8), (4, 11)])
def test_theorem3_cyclic_sequence(ell, k):
    # Theorem 3: n = (k+1)/l, round i requests expert i mod n of every layer. LRU misses every
    # request; OPT misses k + ceil((N - k)/k) (k compulsory, then one miss every k requests).
    n = (k + 1) // ell
    rounds = 7 * n
    pages = [z * n + (i % n) for i in range(rounds) for z in range(ell)]
    trace = from_pages(pages, Layout(n, ell))
    N = len(pages)
    assert simulate(trace, "lru", k).misses == N
    assert simulate(trace, "belady", k).misses == k + math.ceil((N - k) / k)


def test_unknown_policy_and_bad_k():
    from paging.errors import PagingError

    trace = from_pages([0], Layout(1, 1))
    with pytest.raises(PagingError, match="unknown policy 'nope'"):
        simulate(trace, "nope", 1)
    with pytest.raises(PagingError, match="k must be an integer >= 1"):
        simulate(trace, "lru", 0)
    with pytest.raises(PagingError):
        make_policy("")
