"""The verifier (:func:`paging.verify.verify`) against runs tampered in one place, each worked
out by hand: every tampering that breaks a claimed check must be refused with a
:class:`~paging.verify.VerificationError` that says what is wrong (never accepted, never another
exception)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from paging import Layout, Trace, from_pages, simulate
from paging.miss import FetchLowestBit
from paging.policies import make_policy
from paging.policies.dist import PerLayer
from paging.result import Result
from paging.verify import VerificationError, verify


class _FixedShares(PerLayer):
    """LRU per layer on fixed shares (as :mod:`proofs.theorem1`'s, which checks nothing)."""

    def __init__(self, shares):
        super().__init__(lambda: make_policy("lru"))
        self.s = np.asarray(shares, dtype=np.int64)

    def shares(self, layout, k):
        return self.s


# two layers of two experts: pages 0, 1 (layer 0) and 2, 3 (layer 1), each requested once
TWO_BY_TWO = Trace(Layout(2, 2), [0, 2, 1, 3], [0, 1, 2, 3], "t")


def test_per_layer_shares_above_k_are_refused():
    """Shares of 2 and 2 in a cache of k = 2: every page stays cached (4 misses, no eviction),
    4 pages in a cache of 2. The run's own shares were the verifier's capacity, so it passed."""
    res = simulate(TWO_BY_TWO, _FixedShares([2, 2]), 2, record=True, engine="reference")
    assert res.misses == 4 and res.evictions.size == 0
    assert res.shares.tolist() == [2, 2]
    with pytest.raises(VerificationError, match=r"shares \[2, 2\].*at most C=2"):
        verify(TWO_BY_TWO, res)
    # shares that split k (2 + 0) pass: layer 1's pages are bypassed
    ok = simulate(TWO_BY_TWO, _FixedShares([2, 0]), 2, record=True, engine="reference")
    assert ok.bypassed.tolist() == [1, 3]
    verify(TWO_BY_TWO, ok)
    # a share per layer, none negative
    for bad in ([2], [3, -1]):
        with pytest.raises(VerificationError, match="shares"):
            verify(TWO_BY_TWO, dataclasses.replace(ok, shares=np.array(bad)))


def _one_slot_run(events: dict, extra: dict | None = None) -> tuple[Trace, Result]:
    """Pages 0 then 1 in a cache of one page (0 evicted at request 1), with ``events``."""
    tr = from_pages([0, 1], Layout(4, 1))
    res = Result(policy="lru", k=1, trace="t", requests=2, misses=2,
                 per_layer_misses=np.array([2]), cost=2.0,
                 page_misses=np.array([1, 1, 0, 0]), hit_mask=np.array([False, False]),
                 evictions=np.array([[1, 0]]), bypassed=np.zeros(0, np.int64),
                 extra=extra, events=events)
    return tr, res


def test_prefetch_rows_outside_the_run_are_refused():
    """A prefetch log's rows name the request they precede: 1..N-1 here. Rows at request 2
    (past the run) or -1 were skipped by the replay, so two prefetches into the full cache of
    one page passed."""
    tr, res = _one_slot_run({"prefetched": np.zeros((0, 2), np.int64),
                             "prefetch_evictions": np.zeros((0, 2), np.int64)},
                            {"prefetches": 0})
    verify(tr, res)
    past = dataclasses.replace(res, extra={"prefetches": 2}, events={
        "prefetched": np.array([[2, 2], [2, 3]]), "prefetch_evictions": np.zeros((0, 2))})
    with pytest.raises(VerificationError, match=r"prefetch log names request 2, outside the "
                                                r"run's 0\.\.1"):
        verify(tr, past)
    before = dataclasses.replace(res, events={
        "prefetched": np.zeros((0, 2)), "prefetch_evictions": np.array([[-1, 1]])})
    with pytest.raises(VerificationError, match="prefetch-eviction log names request -1"):
        verify(tr, before)


def _cascade_run():
    """fetch-lowest-bit under a 2-byte budget, 2 layers of one 2-byte expert (1 byte at level
    1): both misses fetched at level 1, then two hits (tests/unit/test_robust.py)."""
    tr = from_pages([0, 1, 0, 1], Layout(1, 2))
    sizes = np.array([2, 2])
    miss = FetchLowestBit(("bf16", "int8")).bind([sizes, sizes // 2],
                                                 [np.ones(2), np.ones(2) / 2])
    res = simulate(tr, "lru", budget=2, sizes=sizes, miss=miss, record=True)
    assert res.events["fetch_levels"].tolist() == [1, 1] and res.cost == 1.0
    verify(tr, res, sizes=sizes)
    return tr, res, sizes


@pytest.mark.parametrize("level", [-1, 2])
def test_a_fetch_level_the_run_does_not_have_is_refused(level):
    """Levels 0 and 1 only: level -1 was read as the last level (accepted: the same size and
    cost as level 1), level 2 raised an IndexError."""
    tr, res, sizes = _cascade_run()
    ev = dict(res.events, fetch_levels=np.array([1, level]))
    with pytest.raises(VerificationError, match=rf"level {level}.*levels 0\.\.1"):
        verify(tr, dataclasses.replace(res, events=ev), sizes=sizes)


def test_a_budget_run_without_sizes_says_so():
    """A byte-budget run verified without its page sizes: the message named the bytes fetched
    (3) against None instead of the missing sizes."""
    tr = from_pages([0, 1], Layout(4, 1))
    res = simulate(tr, "lru", budget=3, sizes=[1, 2, 1, 1], record=True)
    assert res.bytes_fetched == 3
    with pytest.raises(VerificationError, match="needs its page sizes"):
        verify(tr, res)


def test_the_capacity_is_the_one_the_run_was_asked_for(monkeypatch):
    """a, b, a in a cache of k = 1 misses 3 times; a simulator that ran it with k = 2 (and said
    so) hits the second a, and its log is a feasible run of k = 2. ``simulate`` under
    ``verifying()`` held the run to the result's own k; it now holds it to the k asked for."""
    import importlib

    from paging.simulate import verifying

    sim_mod = importlib.import_module("paging.simulate")  # (paging.simulate is the function)

    tr = from_pages([0, 1, 0], Layout(4, 1))
    real = sim_mod._simulate
    monkeypatch.setattr(sim_mod, "_simulate", lambda trace, policy, k=None, **kw:
                        real(trace, policy, None if k is None else k + 1, **kw))
    res = sim_mod.simulate(tr, "lru", 1, record=True)
    assert res.k == 2 and res.hit_mask.tolist() == [False, False, True]
    verify(tr, res)  # (a feasible run of its own k)
    with verifying(), pytest.raises(VerificationError, match="asked for k=1, the result has k=2"):
        sim_mod.simulate(tr, "lru", 1)
    with pytest.raises(VerificationError, match="asked for a budget of 2 bytes, the result "
                                                "has k=2"):
        verify(tr, res, budget=2, sizes=[1, 1, 1, 1])


def test_a_streamed_result_has_the_capacity_that_was_checked():
    """The stream verifier replays the run at its own capacity (k = 2 here: a, b, a hits once);
    a result that reports another k was not compared with it."""
    from paging.verify import StreamVerifier

    lay = Layout(4, 1)
    v = StreamVerifier(lay, "t", "lru", 2, False)
    v.feed(np.array([0, 1, 0]), np.array([0, 1, 2]), np.array([False, False, True]),
           np.zeros((0, 2), np.int64), np.zeros(0, np.int64))
    res = Result(policy="lru", k=2, trace="t", requests=3, misses=2,
                 per_layer_misses=np.array([2]), cost=2.0, page_misses=np.array([1, 1, 0, 0]))
    v.finish(res)
    with pytest.raises(VerificationError, match="checked had k=2, the result has k=3"):
        v.finish(dataclasses.replace(res, k=3))


def _three_requests(k: int, prefetched, prefetch_evictions) -> tuple[Trace, Result]:
    """Pages 0, 1, 2 in a cache of k pages, all misses, no demand eviction, and the given
    prefetch logs."""
    tr = from_pages([0, 1, 2], Layout(4, 1))
    res = Result(policy="lru", k=k, trace="t", requests=3, misses=3,
                 per_layer_misses=np.array([3]), cost=3.0,
                 page_misses=np.array([1, 1, 1, 0]), hit_mask=np.zeros(3, bool),
                 evictions=np.zeros((0, 2), np.int64), bypassed=np.zeros(0, np.int64),
                 extra={"prefetches": len(prefetched)},
                 events={"prefetched": np.array(prefetched, np.int64).reshape(-1, 2),
                         "prefetch_evictions": np.array(prefetch_evictions,
                                                        np.int64).reshape(-1, 2)})
    return tr, res


@pytest.mark.parametrize("k, prefetched, prefetch_evictions", [
    (2, [], [[2, 1]]),  # {0, 1}: 1 evicted by no prefetch, then 2 enters without an eviction
    (3, [[2, 3]], [[2, 0]]),  # {0, 1} + 3 fits in 3 pages: 0 need not go
])
def test_a_prefetch_eviction_that_made_no_needed_room_is_refused(k, prefetched,
                                                                 prefetch_evictions):
    """A prefetch evicts only when the pages it inserts do not fit (as a miss does): an
    eviction logged for no prefetch, or for prefetched pages that fitted, was accepted."""
    tr, res = _three_requests(k, prefetched, prefetch_evictions)
    with pytest.raises(VerificationError, match="before request 2 evicted from partition 0 "
                                                "although"):
        verify(tr, res)
    # the honest logs: k = 2 evicts 0 for 2 at request 2 (no prefetch); k = 3 prefetches 3
    # into {0, 1} and evicts 0 for 2
    tr, ok = _three_requests(k, [], []) if k == 2 else _three_requests(k, [[2, 3]], [])
    verify(tr, dataclasses.replace(ok, evictions=np.array([[2, 0]]),
                                   extra={"prefetches": ok.extra["prefetches"]}))


def test_collision_misses_are_counted_from_the_logs_and_a_wrong_count_is_refused():
    # n = 2, ℓ = 2 (layer 0: pages 0, 1; layer 1: 2, 3), k = 1, LRU, rounds: 0 2 | 0 2 | 0.
    # t1 evicts 0 (pass 0), t2 evicts 2 (pass 1), t3 requests 2 in pass 1: a collision (evicted
    # earlier in the same pass); t2's miss on 0 (evicted in pass 0, now pass 1) and t4's on 0
    # (evicted at t3 in pass 1, now pass 2) are not. One collision miss.
    from paging.verify import Collisions

    tr = from_pages([0, 2, 0, 2, 0], Layout(2, 2))
    res = simulate(tr, "lru", 1, record=True)
    assert res.collision_misses == 1 and res.evictions.tolist() == [[1, 0], [2, 2], [3, 0],
                                                                    [4, 2]]
    verify(tr, res)
    for wrong in (0, 2):
        with pytest.raises(VerificationError, match="collision misses"):
            verify(tr, dataclasses.replace(res, collision_misses=wrong))
    # fed in two pieces cut inside pass 1, the count carries the eviction of page 2 at t2
    ev, fetched = np.asarray(res.evictions), ~np.asarray(res.hit_mask)
    c = Collisions(4, 2)
    c.piece(tr.pages[:3], tr.steps[:3], fetched[:3], ev[ev[:, 0] < 3])
    c.piece(tr.pages[3:], tr.steps[3:], fetched[3:], ev[ev[:, 0] >= 3] - [3, 0])
    assert c.count == 1
    # a prefetch eviction logged before request i is in request i - 1's pass: page 2 evicted
    # by a prefetch after t1 (pass 0) is no collision at t3 (pass 1); after t2 (pass 1) it is
    for row, want in ((2, 0), (3, 1)):
        c = Collisions(4, 2)
        c.piece(tr.pages[:4], tr.steps[:4], np.array([0, 0, 0, 1], bool), np.zeros((0, 2)),
                np.array([[row, 2]]))
        assert c.count == want, row
