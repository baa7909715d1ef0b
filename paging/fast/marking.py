"""Kernel for randomized Marking (Fiat et al. 1991) and Marking-DIST.

The reference (:class:`paging.policies.Marking`) evicts the candidate at index ⌊u·m⌋ of the m
unmarked, unpinned resident pages of the partition sorted by page id, with one
``rng.random()`` draw u per eviction. A ``numpy.random.Generator`` yields the same doubles
whether drawn one at a time or as a vector, so the caller draws ``rng.random(n)`` once and the
kernel consumes the draws in eviction order (across layers too, as the DIST sub-policies share
the run's generator).

Candidates live in a Fenwick tree over page ids (indicator: resident, unmarked, unpinned), so
counting the candidates of a partition (a contiguous page range) and finding the j-th one take
O(log nℓ); a phase end (every candidate marked) unmarks the partition in O(n log nℓ).

The cache, the marks and the count of draws consumed are a state (:func:`marking_state`) the
kernel starts from and leaves behind, so consecutive calls on consecutive pieces of a trace are
one run (:class:`paging.fast.CarriedRun`: serving steps, streamed chunks).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from paging.fast.common import buffers, is_grouped

#: the one kind of this family (``Policy.kernel = "marking:MARKING"``)
MARKING = 0

@njit(cache=True, nogil=True)
def _add(tree, i, delta):
    i += 1
    m = tree.size
    while i < m:
        tree[i] += delta
        i += i & (-i)


@njit(cache=True, nogil=True)
def _prefix(tree, i):
    """Number of candidates among pages 0..i-1."""
    s = 0
    while i > 0:
        s += tree[i]
        i -= i & (-i)
    return s


def marking_state(n_pages: int, n_parts: int):
    """A cold cache for :func:`marking_kernel`: the candidate tree, each page's residency, mark
    and pin, the room used and the room held by pinned pages per partition, each page's pass of
    its last eviction and its misses (a running total), and the draws consumed. Passing the
    state a call left to the next call, with the same draws, continues the same run: nothing in
    it is a request index, and a call ends with its last group unpinned."""
    P, parts = int(n_pages), int(n_parts)
    return (np.zeros(P + 1, np.int64), np.zeros(P, np.bool_), np.zeros(P, np.bool_),
            np.zeros(P, np.bool_), np.zeros(parts, np.int64), np.zeros(parts, np.int64),
            np.full(P, -1, np.int64), np.zeros(P, np.int64), np.zeros(1, np.int64))


@njit(cache=True, nogil=True)
def _unpin(pages, lo, hi, sizes, n_experts, dist, tree, resident, marked, pinned, held):
    """The group pages[lo:hi] is no longer pinned: its unmarked residents are candidates again."""
    for j in range(lo, hi):
        r = pages[j]
        if pinned[r]:
            pinned[r] = False
            if resident[r]:
                held[r // n_experts if dist else 0] -= sizes[r]
                if not marked[r]:
                    _add(tree, r, 1)


@njit(cache=True, nogil=True)
def _marking(pages, steps, sizes, n_experts, n_layers, caps, dist, draws, record, state):
    n = pages.size
    L = n_layers
    P = n_experts * n_layers
    tree, resident, marked, pinned, used, held, evicted_pass, page_miss, cnt = state
    top = 1
    while top * 2 <= P:
        top *= 2
    layer_of = np.arange(P) // n_experts
    hit_mask, ev, byp = buffers(n, record, P)
    misses = 0
    coll = 0
    n_ev = 0
    n_byp = 0
    n_draw = cnt[0]
    grouped = is_grouped(steps)
    g_start = 0
    g_end = 0
    for t in range(n):
        p = pages[t]
        s = steps[t]
        if grouped and t == g_end:
            # unpin the previous group, pin the next one; keep the candidate tree in step
            _unpin(pages, g_start, g_end, sizes, n_experts, dist, tree, resident, marked,
                   pinned, held)
            g_start = t
            g_end = t
            while g_end < n and steps[g_end] == s:
                r = pages[g_end]
                pinned[r] = True
                if resident[r]:
                    held[r // n_experts if dist else 0] += sizes[r]
                    if not marked[r]:
                        _add(tree, r, -1)
                g_end += 1
        z = layer_of[p]
        q = z if dist else 0
        if resident[p]:
            if record:
                hit_mask[t] = True
            if not marked[p]:
                marked[p] = True
                if not pinned[p]:
                    i = p + 1  # _add(tree, p, -1), written out (no refcounted call)
                    while i <= P:
                        tree[i] -= 1
                        i += i & (-i)
            continue
        misses += 1
        page_miss[p] += 1
        now_pass = s // L
        if evicted_pass[p] == now_pass:
            coll += 1
        need = sizes[p]
        if used[q] + need > caps[q]:
            if need > caps[q] - held[q]:
                # capacity 0, a page larger than its partition, or pinned pages filling it
                if record > 1:
                    byp[n_byp] = t
                n_byp += 1
                continue
            lo = q * n_experts if dist else 0
            hi = lo + n_experts if dist else P
            before = 0  # candidates below the partition (no eviction here changes it)
            i = lo
            while i > 0:
                before += tree[i]
                i -= i & (-i)
            while used[q] + need > caps[q]:
                m = -before
                i = hi
                while i > 0:
                    m += tree[i]
                    i -= i & (-i)
                if m == 0:
                    # every candidate is marked: a new phase; the sub-policy forgets its marks
                    for r in range(lo, hi):
                        if marked[r]:
                            marked[r] = False
                            if not pinned[r]:
                                _add(tree, r, 1)
                    m = _prefix(tree, hi) - before
                u = draws[n_draw]
                n_draw += 1
                # the candidate of rank before + ⌊u·m⌋ (Fenwick descent), then remove it
                rank = before + np.int64(u * m)
                victim = 0
                step = top
                while step > 0:
                    nxt = victim + step
                    if nxt <= P and tree[nxt] <= rank:
                        victim = nxt
                        rank -= tree[nxt]
                    step >>= 1
                i = victim + 1
                while i <= P:
                    tree[i] -= 1
                    i += i & (-i)
                resident[victim] = False
                used[q] -= sizes[victim]
                evicted_pass[victim] = now_pass
                if record > 1:
                    ev[n_ev, 0] = t
                    ev[n_ev, 1] = victim
                    n_ev += 1
        resident[p] = True
        marked[p] = True
        used[q] += need
        if pinned[p]:
            held[q] += need
    _unpin(pages, g_start, g_end, sizes, n_experts, dist, tree, resident, marked, pinned, held)
    cnt[0] = n_draw
    return misses, coll, page_miss, hit_mask, ev, n_ev, byp, n_byp


def marking_kernel(pages, steps, sizes, n_experts, n_layers, caps, dist, draws, record,
                   state=None):
    """Replay ``pages`` under randomized Marking; ``draws`` holds the run's uniform draws in
    order (at least one per eviction; a carried call consumes them from the state's count on);
    ``sizes`` and ``caps`` as in :mod:`paging.fast.lists`. ``state`` (:func:`marking_state`; a
    cold one when None) is the cache the call starts from and leaves behind: consecutive calls
    on consecutive pieces of one trace, each cut between two groups, are one run
    (:class:`paging.fast.CarriedRun`). Returns the tuple of :mod:`paging.fast.common`
    (per-page misses: the state's running totals)."""
    if state is None:
        state = marking_state(n_experts * n_layers, caps.size)
    return _marking(pages, steps, sizes, n_experts, n_layers, caps, dist, draws, record, state)
