"""Kernels of the adaptive policies with ghost lists: ARC and LeCaR
(:mod:`paging.policies.adaptive`) and their per-layer variants, rounds and groups mode, caches
counted in pages or in bytes.

Both are built on intrusive doubly linked lists threaded through arrays indexed by page id (page
ids are dense in 0..nℓ-1), as in :mod:`paging.fast.lists`: a page is in at most one list of a
*family* at a time, so one ``next``/``prev``/``which list`` triple per page serves every list of
a family, and each partition (the shared cache, or one layer for ``-dist``) owns its own head,
tail and length per list. A list runs from its head (least recent, the reference's first dict
key) to its tail (most recent).

* ARC (``ARC``): T1, T2 (resident) and the ghosts B1, B2 of one partition are four lists of one
  family (they are disjoint: a page leaves its ghost list when it is inserted again). The target
  p is a float per partition, updated with the reference's float operations in its order; the
  REPLACE rule, the case IV trimming (once per victim, also under a byte budget) and the victim
  of T1 "without a ghost" are the reference's (:class:`paging.policies.adaptive.ARC`). O(1) per
  request in rounds mode; pinned pages (groups mode) are skipped from a list's head, O(K).
* LeCaR (``LECAR``): the recency list and the two histories H_LRU, H_LFU (FIFOs of evicted page
  ids with their eviction times) are lists of one family; the LFU order (fewest requests, then
  earliest time the page reached its count) is a second family: one list per frequency present
  in the partition, appended to when a page reaches that frequency (times only grow, so each
  list is ordered by that time), the frequency lists chained in increasing order (a page's
  frequency only grows by one, so its next list is the next one or a new one right after it:
  the O(1) LFU of Shah, Mitra and Matani, 2010). The LFU candidate is the head of the first
  list, skipping pinned pages. Regrets use libm ``pow`` and ``exp`` (Python's float ``**`` and
  ``math.exp``) in the reference's order, so the weights are the reference's to the last bit.
  The reference's ``ctx.rng.random()`` draws (one per eviction whose two candidates differ,
  across layers in run order for ``lecar-dist``, as its per-layer policies share the run's
  generator) are pre-drawn: ``rng.random(N)`` yields the same doubles
  (:func:`paging.fast.marking_draws`), consumed in order. O(1) per request; pinned pages cost
  O(K) per eviction.

Both kernels take ``sizes`` (the room each page takes: 1 in a cache counted in pages, bytes
under a budget) and the partitions' capacities in that unit, and evict until the page fits, as
:meth:`paging.core.Simulation.serve` does (a page that cannot fit even after evicting every
unpinned page of its partition is a bypass, unseen by the policy). As in the reference, ARC's c
and LeCaR's history size and discount read that capacity (bytes under a budget).

Each kernel starts from a state it leaves behind (:func:`arc_state`, :func:`lecar_state`), so
consecutive calls on consecutive pieces of one trace are one run
(:class:`paging.fast.CarriedRun`: serving steps, streamed chunks). LeCaR's state also counts the
draws consumed and the requests served: its eviction times are request indices of the whole
run (the regret's discount reads their differences).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from paging.fast.common import borrow, buffers, hold, is_grouped

#: the kinds of this family (``Policy.kernel = "adaptive:KIND"``)
ARC, LECAR = 0, 1

# the lists of one partition (index q * _NL + list): ARC's T1, T2, B1, B2; LeCaR uses _T1 as its
# recency list and _B1, _B2 as its histories H_LRU, H_LFU
_T1, _T2, _B1, _B2 = 1, 2, 3, 4
_NL = 5


@njit(cache=True, nogil=True, inline="always")
def _push(lk, ls, q, lst, p):
    """Append page p at the tail (most recent end) of list ``lst`` of partition q."""
    i = q * _NL + lst
    tl = ls[1, i]
    lk[0, p] = -1
    lk[1, p] = tl
    if tl >= 0:
        lk[0, tl] = p
    else:
        ls[0, i] = p
    ls[1, i] = p
    ls[2, i] += 1
    lk[2, p] = lst


@njit(cache=True, nogil=True, inline="always")
def _unlink(lk, ls, q, p):
    """Take page p out of its list (of partition q)."""
    i = q * _NL + lk[2, p]
    a = lk[1, p]
    b = lk[0, p]
    if a >= 0:
        lk[0, a] = b
    else:
        ls[0, i] = b
    if b >= 0:
        lk[1, b] = a
    else:
        ls[1, i] = a
    ls[2, i] -= 1
    lk[2, p] = 0


@njit(cache=True, nogil=True, inline="always")
def _oldest(lk, ls, q, lst, pin, s):
    """The first page of list ``lst`` (least recent first) that is not pinned (``pin[v] == s``),
    or -1."""
    v = ls[0, q * _NL + lst]
    while v >= 0 and pin[v] == s:
        v = lk[0, v]
    return v


@njit(cache=True, nogil=True, inline="always")
def _held(pages, sizes, lk, g_start, g_end, layer_of, dist, z, grouped):
    """Room held by the pinned resident pages of the partition (the group's)."""
    held = 0
    if grouped:
        for j in range(g_start, g_end):
            r = pages[j]
            w = lk[2, r]
            if (w == _T1 or w == _T2) and (not dist or layer_of[r] == z):
                held += sizes[r]
    return held


@njit(cache=True, nogil=True, inline="always")
def _arc_ghost(lk, ls, target, q, x, w, c):
    """ARC's cases II and III for page x, whose list is w, in partition q of capacity c: a
    ghost moves p and leaves its list. Returns 1 (it was in B1), 2 (in B2) or 0."""
    b = q * _NL
    if w == _B1:
        d = ls[2, b + _B2] / ls[2, b + _B1]
        target[q] = min(target[q] + max(d, 1.0), float(c))
        _unlink(lk, ls, q, x)
        return 1
    if w == _B2:
        d = ls[2, b + _B1] / ls[2, b + _B2]
        target[q] = max(target[q] - max(d, 1.0), 0.0)
        _unlink(lk, ls, q, x)
        return 2
    return 0


@njit(cache=True, nogil=True, inline="always")
def _arc_victim(lk, ls, target, ghost, q, c, pin, s):
    """ARC's victim in partition q and whether it becomes a ghost (``ARC.victim``: case IV's
    trimming unless the arrival hit a ghost, then REPLACE; pinned pages, ``pin[v] == s``,
    skipped)."""
    b = q * _NL
    v = -1
    keep = True
    replace = True
    if not ghost:
        if ls[2, b + _T1] + ls[2, b + _B1] >= c:  # case IV.A
            if ls[2, b + _B1] > 0:
                _unlink(lk, ls, q, ls[0, b + _B1])
            else:
                v = _oldest(lk, ls, q, _T1, pin, s)
                if v >= 0:  # T1 holds c pages: its LRU page leaves without a ghost
                    keep = False
                    replace = False
        elif (ls[2, b + _T1] + ls[2, b + _T2] + ls[2, b + _B1] + ls[2, b + _B2] >= 2 * c
              and ls[2, b + _B2] > 0):  # case IV.B
            _unlink(lk, ls, q, ls[0, b + _B2])
    if replace:
        n1 = ls[2, b + _T1]
        first = ((n1 > 0 and (n1 > target[q] or (n1 == target[q] and ghost == 2)))
                 or ls[2, b + _T2] == 0)
        v = _oldest(lk, ls, q, _T1 if first else _T2, pin, s)
        if v < 0:
            v = _oldest(lk, ls, q, _T2 if first else _T1, pin, s)
    return v, keep


@njit(cache=True, nogil=True, inline="always")
def _lecar_regret(lk, ls, htime, w_lru, w_lfu, q, t, x, w, lr, dr):
    """LeCaR's regret for page x, whose list is w (``_B1``: H_LRU, ``_B2``: H_LFU, else
    nothing happens), at request t in partition q: x leaves the history and the expert that
    evicted it loses weight (libm ``pow`` and ``exp`` in the reference's order)."""
    if w != _B1 and w != _B2:
        return
    r = math.pow(dr, float(t - htime[x]))
    _unlink(lk, ls, q, x)
    if w == _B1:
        wl = w_lru[q] * math.exp(-lr * r) + 1e-10
        tot = wl + w_lfu[q] + 2e-10
        w_lru[q] = wl / tot
        w_lfu[q] = (w_lfu[q] + 1e-10) / tot
    else:
        wf = w_lfu[q] * math.exp(-lr * r) + 1e-10
        tot = wf + w_lru[q] + 2e-10
        w_lfu[q] = wf / tot
        w_lru[q] = (w_lru[q] + 1e-10) / tot


def _compiled(fn, grouped: bool, carried: bool = False):
    """``fn`` compiled and cached under a name of its own per variant (``…_groups``,
    ``…_rounds``, and ``…_carried``). numba's cache keys a closure's entries on its values but
    keeps the variants in one index file, whose entries and data files two processes compiling
    two of them at once (pytest workers, Dask workers) can cross: a variant could then load
    another's code."""
    fn.__qualname__ = (f"{fn.__name__}_{'groups' if grouped else 'rounds'}"
                       f"{'_carried' if carried else ''}")
    return njit(cache=True, nogil=True)(fn)


def _arc(GROUPED):
    """ARC's kernel for traces with (``GROUPED`` True) or without groups of two or more
    requests (:func:`is_grouped`). The flag is a constant of each compiled kernel, so the
    rounds-mode one carries no pinning code (LLVM drops it; against libCacheSim's ARC,
    2.29–2.58x after, 1.90–2.23x before, benchmarks/README.md, "Compiled ARC and LeCaR").
    Each is cached under its own name (:func:`_compiled`)."""

    def arc_kernel(pages, steps, sizes, n_experts, n_layers, caps, dist, record, state):
        n = pages.size
        L = n_layers
        P = n_experts * n_layers
        lk, ls, target, used, pin, evicted_pass, page_miss = state
        layer_of = np.arange(P) // n_experts
        hit_mask, ev, byp = buffers(n, record, P)
        misses = 0
        coll = 0
        n_ev = 0
        n_byp = 0
        grouped = GROUPED
        prev_s = -1
        g_start = 0
        g_end = 0
        # the lists read through views without reference counts (:func:`borrow`), held to the end
        lk_own, ls_own, pin_own, layer_own = lk, ls, pin, layer_of
        lk, ls, pin, layer_of = borrow(lk), borrow(ls), borrow(pin), borrow(layer_of)
        pages, steps, sizes = borrow(pages), borrow(steps), borrow(sizes)
        s = -2  # no page is pinned in rounds mode (pin[v] is never -2)
        for t in range(n):
            p = pages[t]
            st = steps[t]
            if grouped:
                s = st
                if st != prev_s:
                    prev_s = st
                    j = t
                    while j < n and steps[j] == st:
                        pin[pages[j]] = st
                        j += 1
                    g_start = t
                    g_end = j
            z = layer_of[p]
            q = z if dist else 0
            w = lk[2, p]
            if w == _T1 or w == _T2:  # case I: a hit moves the page to T2's MRU end
                if record:
                    hit_mask[t] = True
                _unlink(lk, ls, q, p)
                _push(lk, ls, q, _T2, p)
                continue
            misses += 1
            page_miss[p] += 1
            now_pass = st // L
            if evicted_pass[p] == now_pass:
                coll += 1
            need = sizes[p]
            c = caps[q]
            if used[q] + need > c:
                held = _held(pages, sizes, lk, g_start, g_end, layer_of, dist, z, grouped)
                if need > c - held:
                    if record > 1:
                        byp[n_byp] = t
                    n_byp += 1
                    continue
            # cases II and III: adapt p, take the page off its ghost list
            ghost = _arc_ghost(lk, ls, target, q, p, w, c)
            b = q * _NL
            while used[q] + need > c:
                # _arc_victim written out (the phase kernel calls it): a call patched in measured
                # 0.69-1.13x (median 0.90) of this in `benchmarks/paired.py --pairs 3 --
                # --policy arc --phase plain --repeat 5` (2026-11-27)
                v = -1
                keep = True  # the victim becomes a ghost
                replace = True
                if not ghost:
                    if ls[2, b + _T1] + ls[2, b + _B1] >= c:  # case IV.A
                        if ls[2, b + _B1] > 0:
                            _unlink(lk, ls, q, ls[0, b + _B1])
                        else:
                            v = _oldest(lk, ls, q, _T1, pin, s)
                            if v >= 0:
                                keep = False
                                replace = False
                    elif (ls[2, b + _T1] + ls[2, b + _T2] + ls[2, b + _B1] + ls[2, b + _B2]
                          >= 2 * c and ls[2, b + _B2] > 0):  # case IV.B
                        _unlink(lk, ls, q, ls[0, b + _B2])
                if replace:
                    n1 = ls[2, b + _T1]
                    first = ((n1 > 0 and (n1 > target[q] or (n1 == target[q] and ghost == 2)))
                             or ls[2, b + _T2] == 0)
                    v = _oldest(lk, ls, q, _T1 if first else _T2, pin, s)
                    if v < 0:
                        v = _oldest(lk, ls, q, _T2 if first else _T1, pin, s)
                wv = lk[2, v]
                _unlink(lk, ls, q, v)
                if keep:
                    _push(lk, ls, q, _B1 if wv == _T1 else _B2, v)
                used[q] -= sizes[v]
                evicted_pass[v] = now_pass
                if record > 1:
                    ev[n_ev, 0] = t
                    ev[n_ev, 1] = v
                    n_ev += 1
            _push(lk, ls, q, _T2 if ghost else _T1, p)
            used[q] += need
        hold(lk_own)
        hold(ls_own)
        hold(pin_own)
        hold(layer_own)
        return misses, coll, page_miss, hit_mask, ev, n_ev, byp, n_byp

    return _compiled(arc_kernel, GROUPED)


_ARC_ROUNDS, _ARC_GROUPS = _arc(False), _arc(True)


def arc_state(n_pages: int, n_parts: int):
    """A cold cache for :func:`arc_kernel`: each page's list links (next, previous, which of
    T1, T2, B1, B2), each list's head, tail and length per partition, ARC's p and the room used
    per partition, the pin stamps, each page's pass of its last eviction and its misses (a
    running total). Passing the state a call left to the next call continues the same run:
    nothing in it is a request index (the pins are layer-clock steps)."""
    P, parts = int(n_pages), int(n_parts)
    ls = np.zeros((3, parts * _NL), np.int64)
    ls[0, :] = -1
    ls[1, :] = -1
    return (np.zeros((3, P), np.int64), ls, np.zeros(parts), np.zeros(parts, np.int64),
            np.full(P, -1, np.int64), np.full(P, -1, np.int64), np.zeros(P, np.int64))


def arc_kernel(pages, steps, sizes, n_experts, n_layers, caps, dist, record, state=None):
    """Replay ``pages`` (layer clock ``steps``) under ARC, one instance per partition of
    capacity ``caps[q]`` (the shared cache, or one per layer with ``dist``). ``state``
    (:func:`arc_state`; a cold one when None) is the cache the call starts from and leaves
    behind: consecutive calls on consecutive pieces of one trace, each cut between two groups,
    are one run (:class:`paging.fast.CarriedRun`). Returns the tuple of :mod:`paging.fast.common`
    (per-page misses: the state's running totals)."""
    if state is None:
        state = arc_state(n_experts * n_layers, caps.size)
    kernel = _ARC_GROUPS if is_grouped(steps) else _ARC_ROUNDS
    return kernel(pages, steps, sizes, n_experts, n_layers, caps, dist, record, state)


def _lecar_cold(P, parts):
    """:func:`lecar_state`'s arrays (numpy here, and inside the whole run's kernel)."""
    ls = np.zeros((3, parts * _NL), np.int64)
    ls[0, :] = -1
    ls[1, :] = -1
    cnt = np.zeros(3, np.int64)
    cnt[0] = P + 1
    return (np.zeros((3, P), np.int64), ls, np.zeros(P, np.int64), np.full(P, -1, np.int64),
            np.full(P, -1, np.int64), np.full(P, -1, np.int64), np.zeros((5, P + 1), np.int64),
            np.arange(P, -1, -1), np.full(parts, -1, np.int64), np.full(parts, 0.5),
            np.full(parts, 0.5), np.zeros(parts, np.int64), np.full(P, -1, np.int64),
            np.full(P, -1, np.int64), np.zeros(P, np.int64), cnt)


_lecar_fresh = njit(cache=True, nogil=True, inline="always")(_lecar_cold)


def _lecar(GROUPED, CARRIED):
    """LeCaR's kernel for traces with or without groups, as :func:`_arc`; ``CARRIED``: it
    starts from the ``state`` given (:func:`lecar_state`), else from a cold one of its own
    (``state`` unread). A whole run takes the second: with the state passed in, the plain
    kernel ran at 0.83-0.88x (three pairs of ``benchmarks/paired.py -- --policy lecar --phase
    plain``, 2026-11-27), the arrays then being the caller's."""

    def lecar_kernel(pages, steps, sizes, n_experts, n_layers, caps, dist, draws, lr, dr,
                     hist_cap, record, state):
        n = pages.size
        L = n_layers
        P = n_experts * n_layers
        # the recency list and histories; each history page's eviction time (a request index
        # counted from the run's start: t0 + t); the frequency lists: page links, and nodes (one
        # per frequency present in a partition: freq, head, tail, next node, prev node), a
        # stack of the free ones; each partition's node of least frequency, weights and room
        if not CARRIED:
            state = _lecar_fresh(P, caps.size)
        (lk, ls, htime, fnx, fpv, node_of, nd, free, first, w_lru, w_lfu, used, pin,
         evicted_pass, page_miss, cnt) = state
        n_free = cnt[0]
        t0 = cnt[2]
        layer_of = np.arange(P) // n_experts
        hit_mask, ev, byp = buffers(n, record, P)
        misses = 0
        coll = 0
        n_ev = 0
        n_byp = 0
        n_draw = cnt[1]
        grouped = GROUPED
        prev_s = -1
        g_start = 0
        g_end = 0
        s = -2
        for t in range(n):
            p = pages[t]
            st = steps[t]
            if grouped:
                s = st
                if st != prev_s:
                    prev_s = st
                    j = t
                    while j < n and steps[j] == st:
                        pin[pages[j]] = st
                        j += 1
                    g_start = t
                    g_end = j
            z = layer_of[p]
            q = z if dist else 0
            w = lk[2, p]
            if w == _T1:  # a hit: most recent, one more request
                if record:
                    hit_mask[t] = True
                _unlink(lk, ls, q, p)
                _push(lk, ls, q, _T1, p)
                x = node_of[p]
                f = nd[0, x] + 1
                y = nd[3, x]
                if y < 0 or nd[0, y] != f:  # a new node for frequency f, right after x
                    n_free -= 1
                    y = free[n_free]
                    nd[0, y] = f
                    nd[1, y] = -1
                    nd[2, y] = -1
                    nd[4, y] = x
                    nd[3, y] = nd[3, x]
                    if nd[3, x] >= 0:
                        nd[4, nd[3, x]] = y
                    nd[3, x] = y
                # out of x
                a = fpv[p]
                bb = fnx[p]
                if a >= 0:
                    fnx[a] = bb
                else:
                    nd[1, x] = bb
                if bb >= 0:
                    fpv[bb] = a
                else:
                    nd[2, x] = a
                if nd[1, x] < 0:  # x is empty: drop it (y follows it)
                    nd[4, y] = nd[4, x]
                    if nd[4, x] >= 0:
                        nd[3, nd[4, x]] = y
                    else:
                        first[q] = y
                    free[n_free] = x
                    n_free += 1
                # to the end of y
                tl = nd[2, y]
                fpv[p] = tl
                fnx[p] = -1
                if tl >= 0:
                    fnx[tl] = p
                else:
                    nd[1, y] = p
                nd[2, y] = p
                node_of[p] = y
                continue
            misses += 1
            page_miss[p] += 1
            now_pass = st // L
            if evicted_pass[p] == now_pass:
                coll += 1
            need = sizes[p]
            c = caps[q]
            if used[q] + need > c:
                if need > c - _held(pages, sizes, lk, g_start, g_end, layer_of, dist, z, grouped):
                    if record > 1:
                        byp[n_byp] = t
                    n_byp += 1
                    continue
            # a miss on a page in a history: a regret for the expert that evicted it
            # (_lecar_regret written out, as ARC's victim rule: a call patched in measured
            # 0.59-0.79x of this in three pairs of `benchmarks/paired.py -- --policy lecar
            # --phase plain`, 2026-11-27, although it is inlined; the cause is not known)
            if w == _B1 or w == _B2:
                r = math.pow(dr[q], float(t0 + t - htime[p]))
                _unlink(lk, ls, q, p)
                if w == _B1:
                    wl = w_lru[q] * math.exp(-lr * r) + 1e-10
                    tot = wl + w_lfu[q] + 2e-10
                    w_lru[q] = wl / tot
                    w_lfu[q] = (w_lfu[q] + 1e-10) / tot
                else:
                    wf = w_lfu[q] * math.exp(-lr * r) + 1e-10
                    tot = wf + w_lru[q] + 2e-10
                    w_lfu[q] = wf / tot
                    w_lru[q] = (w_lru[q] + 1e-10) / tot
            while used[q] + need > c:
                lru = _oldest(lk, ls, q, _T1, pin, s)
                x = first[q]
                lfu = -1
                while x >= 0:
                    v = nd[1, x]
                    while v >= 0 and pin[v] == s:
                        v = fnx[v]
                    if v >= 0:
                        lfu = v
                        break
                    x = nd[3, x]
                expert = 0
                v = lru
                if lru != lfu:
                    u = draws[n_draw]
                    n_draw += 1
                    if u < w_lru[q]:
                        expert = _B1
                    else:
                        expert = _B2
                        v = lfu
                # on_evict: out of the recency list and its frequency list, into a history
                _unlink(lk, ls, q, v)
                x = node_of[v]
                a = fpv[v]
                bb = fnx[v]
                if a >= 0:
                    fnx[a] = bb
                else:
                    nd[1, x] = bb
                if bb >= 0:
                    fpv[bb] = a
                else:
                    nd[2, x] = a
                if nd[1, x] < 0:
                    if nd[4, x] >= 0:
                        nd[3, nd[4, x]] = nd[3, x]
                    else:
                        first[q] = nd[3, x]
                    if nd[3, x] >= 0:
                        nd[4, nd[3, x]] = nd[4, x]
                    free[n_free] = x
                    n_free += 1
                node_of[v] = -1
                if expert:
                    htime[v] = t0 + t
                    _push(lk, ls, q, expert, v)
                    i = q * _NL + expert
                    while ls[2, i] > hist_cap[q]:
                        _unlink(lk, ls, q, ls[0, i])
                used[q] -= sizes[v]
                evicted_pass[v] = now_pass
                if record > 1:
                    ev[n_ev, 0] = t
                    ev[n_ev, 1] = v
                    n_ev += 1
            # on_insert: most recent, frequency 1
            _push(lk, ls, q, _T1, p)
            x = first[q]
            if x < 0 or nd[0, x] != 1:
                n_free -= 1
                y = free[n_free]
                nd[0, y] = 1
                nd[1, y] = -1
                nd[2, y] = -1
                nd[3, y] = x
                nd[4, y] = -1
                if x >= 0:
                    nd[4, x] = y
                first[q] = y
                x = y
            tl = nd[2, x]
            fpv[p] = tl
            fnx[p] = -1
            if tl >= 0:
                fnx[tl] = p
            else:
                nd[1, x] = p
            nd[2, x] = p
            node_of[p] = x
            used[q] += need
        cnt[0] = n_free
        cnt[1] = n_draw
        cnt[2] = t0 + n
        return misses, coll, page_miss, hit_mask, ev, n_ev, byp, n_byp

    return _compiled(lecar_kernel, GROUPED, CARRIED)


_LECAR = {(g, c): _lecar(g, c) for g in (False, True) for c in (False, True)}


def lecar_state(n_pages: int, n_parts: int):
    """A cold cache for :func:`lecar_kernel`: the recency list and the two histories (links and
    per-partition heads, tails and lengths), each history page's eviction time, the frequency
    lists and their nodes (P + 1 of them: a hit takes the next frequency's node before its old
    one may be freed) with the stack of free ones, each partition's node of least frequency,
    its two weights (0.5 each) and room used, the pin stamps, each page's pass of its last
    eviction and its misses (a running total), and three counts: the free nodes, the draws
    consumed and the requests served (the next call's t0, so the eviction times stay request
    indices of the whole run). Passing the state a call left to the next call, with the same
    draws, continues the same run."""
    return _lecar_cold(int(n_pages), int(n_parts))


#: the state argument of a whole run's kernel, which starts from a cold state of its own
_NO_LECAR_STATE = _lecar_cold(0, 0)


def lecar_kernel(pages, steps, sizes, n_experts, n_layers, caps, dist, draws, lr, dr,
                 hist_cap, record, state=None):
    """Replay ``pages`` under LeCaR, one instance per partition: learning rate ``lr``, discount
    ``dr[q]`` and history size ``hist_cap[q]`` per partition, ``draws`` the run's uniform draws
    in order (at least one per eviction; a carried call consumes them from the state's count
    on). ``state`` (:func:`lecar_state`; a cold one when None) is the cache the call starts
    from and leaves behind: consecutive calls on consecutive pieces of one trace, each cut
    between two groups, are one run (:class:`paging.fast.CarriedRun`). Returns the tuple of
    :mod:`paging.fast.common` (per-page misses: the state's running totals)."""
    kernel = _LECAR[bool(is_grouped(steps)), state is not None]
    if state is None:
        state = _NO_LECAR_STATE
    return kernel(pages, steps, sizes, n_experts, n_layers, caps, dist, draws, lr, dr,
                  hist_cap, record, state)


def lecar_params(caps: np.ndarray):
    """LeCaR's learning rate, and the discount and history size of each partition, as
    :meth:`paging.policies.adaptive.LeCaR.reset` sets them for a capacity (its class
    constants)."""
    from paging.policies.adaptive import LeCaR

    dr = np.array([LeCaR.DISCOUNT_BASE ** (1.0 / max(int(c), 1)) for c in caps])
    hist = np.array([int(c) // 2 for c in caps], dtype=np.int64)
    return float(LeCaR.LEARNING_RATE), dr, hist


def adaptive_kernel(pages, steps, sizes, n_experts, n_layers, caps, dist, kind, draws, record):
    """Run the kernel of ``kind`` (``draws``: the run's uniform draws, LeCaR only)."""
    if kind == ARC:
        return arc_kernel(pages, steps, sizes, n_experts, n_layers, caps, dist, record)
    if draws is None:
        raise ValueError("lecar's kernel needs the run's draws (paging.fast.marking_draws)")
    lr, dr, hist = lecar_params(caps)
    return lecar_kernel(pages, steps, sizes, n_experts, n_layers, caps, dist, draws, lr, dr,
                        hist, record)
