"""Kernel for the credit (GreedyDual-family) policies: GreedyDual, Landlord, GDSF, Layered
Landlord (:mod:`paging.policies.weighted`).

Each partition keeps its inflation value L and every cached page its credit H(p) = L + c(p),
set at the page's last request. GreedyDual, Landlord and GDSF evict the smallest
(H, last request index) from an indexed binary min-heap per partition (O(log k) per request);
a hit re-places the page in its heap (its credit usually grows, but with pinned groups L can
fall, and a hit's credit with it). Layered Landlord evicts the smallest
(H, −R, −D, last request) where R and D are LLRU's (they change with the current step): it
keeps one list per partition sorted by (H, last request). A touched page goes after the last
page of credit <= its own (the tail when rates are equal and L does not fall: O(1); otherwise
the walk passes the pages of larger credit). The victim is found from the head: the first
unpinned page has the smallest credit and, of those, the oldest step τ0, hence the largest
R = (s − τ0) // ℓ; only the pages of that credit that follow it with τ <= s − R·ℓ share that
R (those of at most ℓ steps), so an eviction reads those pages only (`bench_matrix.py --policy
layered-landlord --phase plain`: 6.6–7.1 M req/s, where the scan of every resident ran at
3.3–4.2 M).

The float arithmetic is the reference's, operation for operation (``L + w/s``, ``f·w/s``),
so credits, ties and victims are identical. Pinned pages (groups mode) at the top of a heap
are set aside while victims are popped, as in :mod:`paging.fast.heaps`.

The heaps or lists, the credits, L and the count of requests served are a state
(:func:`credit_state`) a call starts from and leaves behind, so consecutive calls on
consecutive pieces of a trace are one run (:class:`paging.fast.CarriedRun`: serving steps,
streamed chunks); a whole run's kernel allocates its own (:func:`_credit`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from paging.fast.common import borrow, buffers, hold, is_grouped, unlink

GREEDY_DUAL, LANDLORD, GDSF, LAYERED = 0, 1, 2, 3


@njit(cache=True, nogil=True)
def _sift_up(hk, ht, hp, pos, base, i):
    key = hk[base + i]
    tie = ht[base + i]
    page = hp[base + i]
    while i > 0:
        j = (i - 1) >> 1
        if hk[base + j] < key or (hk[base + j] == key and ht[base + j] <= tie):
            break
        hk[base + i] = hk[base + j]
        ht[base + i] = ht[base + j]
        hp[base + i] = hp[base + j]
        pos[hp[base + i]] = i
        i = j
    hk[base + i] = key
    ht[base + i] = tie
    hp[base + i] = page
    pos[page] = i


@njit(cache=True, nogil=True)
def _sift_down(hk, ht, hp, pos, base, size, i):
    key = hk[base + i]
    tie = ht[base + i]
    page = hp[base + i]
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        d = c + 1
        if d < size and (hk[base + d] < hk[base + c]
                         or (hk[base + d] == hk[base + c] and ht[base + d] < ht[base + c])):
            c = d
        if hk[base + c] > key or (hk[base + c] == key and ht[base + c] >= tie):
            break
        hk[base + i] = hk[base + c]
        ht[base + i] = ht[base + c]
        hp[base + i] = hp[base + c]
        pos[hp[base + i]] = i
        i = c
    hk[base + i] = key
    ht[base + i] = tie
    hp[base + i] = page
    pos[page] = i


@njit(cache=True, nogil=True)
def _pop_top(hk, ht, hp, pos, base, hs, q):
    top = hp[base]
    pos[top] = -1
    hs[q] -= 1
    m = hs[q]
    if m > 0:
        hk[base] = hk[base + m]
        ht[base] = ht[base + m]
        hp[base] = hp[base + m]
        pos[hp[base]] = 0
        _sift_down(hk, ht, hp, pos, base, m, 0)
    return top


@njit(cache=True, nogil=True)
def _push(hk, ht, hp, pos, base, hs, q, page, key, tie):
    i = hs[q]
    hs[q] += 1
    hk[base + i] = key
    ht[base + i] = tie
    hp[base + i] = page
    pos[page] = i
    _sift_up(hk, ht, hp, pos, base, i)


@njit(cache=True, nogil=True, inline="always")
def _insert_sorted(nxt, prv, head, tail, credit, q, p, h):
    """Put page p (credit h, requested now: the latest request of the list) after the last
    page of credit <= h, so that the list stays sorted by (credit, last request). With
    unit rates and a rising L that is the tail (O(1)); otherwise the walk passes the pages of
    larger credit."""
    u = tail[q]
    while u >= 0 and credit[u] > h:
        u = prv[u]
    prv[p] = u
    if u >= 0:
        b = nxt[u]
        nxt[u] = p
    else:
        b = head[q]
        head[q] = p
    nxt[p] = b
    if b >= 0:
        prv[b] = p
    else:
        tail[q] = p


def _credit_cold(n_experts, n_layers, caps, dist, scan):
    """:func:`credit_state`'s arrays (numpy here, and inside the whole run's kernel)."""
    P = n_experts * n_layers
    nparts = caps.size
    m_all = 0  # each partition's heap holds at most its capacity or its pages
    for q in range(nparts):
        m_all += min(caps[q], n_experts if dist else P)
    m_all = 1 if scan else max(m_all, 1)  # (Layered Landlord keeps a list, no heap)
    return (np.zeros(m_all, np.float64),   # heap: credit
            np.zeros(m_all, np.int64),     # heap: last request index (tie-break)
            np.zeros(m_all, np.int64),     # heap: page
            np.zeros(nparts, np.int64),    # heap sizes
            np.zeros(nparts, np.int64),    # room used
            np.zeros(nparts, np.float64),  # L of each partition
            np.full(P, -1, np.int64),      # heap position (0 for a resident in the list)
            np.zeros(P, np.float64),       # credit
            np.zeros(P, np.int64),         # last request index
            np.zeros(P, np.int64),         # last step
            np.zeros(P, np.int64),         # GDSF's frequency
            np.full(P, -1, np.int64),      # pin stamps (steps)
            np.full(P, -1, np.int64),      # pass of the last eviction
            np.zeros(P, np.int64),         # misses (a running total)
            np.full(P if scan else 0, -1, np.int64),  # Layered Landlord: a list per
            np.full(P if scan else 0, -1, np.int64),  # partition, sorted by (credit, last)
            np.full(nparts, -1, np.int64),
            np.full(nparts, -1, np.int64),
            np.zeros(1, np.int64))         # requests served (the next call's t0)


_credit_fresh = njit(cache=True, nogil=True, inline="always")(_credit_cold)


def credit_state(n_experts: int, n_layers: int, caps: np.ndarray, dist: bool, kind: int):
    """A cold cache for :func:`credit_kernel`: the heaps (or Layered Landlord's sorted lists),
    each partition's L and room used, each page's credit, last request index and step,
    frequency, pin stamp, pass of its last eviction and misses, and the requests served (the
    next call's t0: the tie-breaking request indices stay those of the whole run). Passing
    the state a call left to the next call continues the same run."""
    return _credit_cold(int(n_experts), int(n_layers), caps, bool(dist), kind == LAYERED)


@njit(cache=True, nogil=True, inline="always")
def _rate(kind, f, c, s):
    """A page's credit over L when requested: GDSF's frequency·cost/size, GreedyDual's cost,
    Landlord's (and Layered Landlord's) cost/size."""
    if kind == GDSF:
        return f * c / s
    if kind == GREEDY_DUAL:
        return c
    return c / s


def _credit(CARRIED):
    """The credit kernel starting from the ``state`` given (``CARRIED``), else from a cold
    one of its own (``state`` unread; a whole run's arrays are then its own, as LeCaR's,
    :func:`paging.fast.adaptive._lecar`)."""

    def credit_kernel(pages, steps, costs, sizes, slots, n_experts, n_layers, caps, dist, kind,
                      record, state):
        n = pages.size
        L = n_layers
        P = n_experts * n_layers
        nparts = caps.size
        part_pages = n_experts if dist else P
        off = np.zeros(nparts + 1, np.int64)  # each partition's first slot in the heap arrays
        for q in range(nparts):
            off[q + 1] = off[q] + min(caps[q], part_pages)
        scan = kind == LAYERED
        if not CARRIED:
            state = _credit_fresh(n_experts, n_layers, caps, dist, scan)
        (hk, ht, hp, hs, used, infl, pos, credit, last, last_step, freq, pin, evicted_pass,
         page_miss, nxt, prv, head, tail, cnt) = state
        t0 = cnt[0]
        aside_p = np.zeros(P, np.int64)  # pinned pages set aside while victims are popped
        aside_k = np.zeros(P, np.float64)
        aside_t = np.zeros(P, np.int64)
        hit_mask, ev, byp = buffers(n, record, P)
        misses = 0
        coll = 0
        n_ev = 0
        n_byp = 0
        grouped = is_grouped(steps)
        layer_of = np.arange(P) // n_experts
        # the heap and lists through views without reference counts (:func:`borrow`: every call
        # of a heap helper counted its arrays), the arrays held to the end
        own = (hk, ht, hp, pos, hs, credit, nxt, prv, head, tail)
        hk, ht, hp, pos, hs = borrow(hk), borrow(ht), borrow(hp), borrow(pos), borrow(hs)
        credit, nxt, prv, head, tail = (borrow(credit), borrow(nxt), borrow(prv), borrow(head),
                                        borrow(tail))
        prev_s = -1
        now_pass = 0
        g_start = 0
        g_end = 0
        for t in range(n):
            p = pages[t]
            s = steps[t]
            if s != prev_s:
                if s == prev_s + 1:
                    if s - now_pass * L >= L:
                        now_pass += 1
                else:
                    now_pass = s // L
                prev_s = s
                if grouped:
                    j = t
                    while j < n and steps[j] == s:
                        pin[pages[j]] = s
                        j += 1
                    g_start = t
                    g_end = j
            z = layer_of[p]
            q = z if dist else 0
            base = off[q]
            i = pos[p]
            if i >= 0:
                if record:
                    hit_mask[t] = True
                if kind == GDSF:
                    freq[p] += 1
                h = infl[q] + _rate(kind, freq[p], costs[p], sizes[p])
                credit[p] = h
                last[p] = t0 + t
                last_step[p] = s
                if scan:  # re-place the page in its partition's sorted list
                    unlink(nxt, prv, head, tail, q, p)
                    _insert_sorted(nxt, prv, head, tail, credit, q, p, h)
                else:  # re-place the page: its credit usually grew (sift down), but it can
                    # shrink when L fell (a pinned page of smallest credit forced a larger victim,
                    # then that page went at a smaller L): sift up first
                    hk[base + i] = h
                    ht[base + i] = t0 + t
                    _sift_up(hk, ht, hp, pos, base, i)
                    _sift_down(hk, ht, hp, pos, base, hs[q], pos[p])
                continue
            misses += 1
            page_miss[p] += 1
            if evicted_pass[p] == now_pass:
                coll += 1
            need = slots[p]
            if used[q] + need > caps[q]:
                held = 0  # room held by pinned resident pages of the partition (groups mode)
                if grouped:
                    for j in range(g_start, g_end):
                        r = pages[j]
                        if pos[r] >= 0 and (not dist or layer_of[r] == z):
                            held += slots[r]
                if need > caps[q] - held:
                    if record > 1:
                        byp[n_byp] = t
                    n_byp += 1
                    continue
                n_aside = 0
                while used[q] + need > caps[q]:
                    victim = -1
                    if scan:
                        # smallest (credit, -R, -D, last) among unpinned residents (LLRU's R, D).
                        # The list is sorted by (credit, last request), so its first unpinned page
                        # has the smallest credit c and, of those, the oldest step τ0: the largest
                        # R = (s - τ) // ℓ is τ0's, and only the pages of credit c that follow it
                        # with τ <= s - R·ℓ (at most ℓ steps' pages) share it. A page of layer zz
                        # is requested only at steps ≡ zz (mod ℓ), so with r = (c - zz) mod ℓ
                        # (c = s mod ℓ) R·ℓ + D = s - τ - r + (ℓ - r if r > 0 else 0): one
                        # integer orders (R, D), with no division (as the list kernel's LLRU)
                        cnow = s - now_pass * L
                        v = head[q]
                        while pin[v] == s:
                            v = nxt[v]
                        bk = credit[v]
                        lim = s - ((s - last_step[v]) // L) * L
                        bkey = -1
                        bl = 0
                        while v >= 0 and credit[v] == bk and last_step[v] <= lim:
                            if pin[v] != s:
                                r = cnow - layer_of[v]
                                r = r + L if r < 0 else r
                                key = s - last_step[v] - r + (L - r if r > 0 else 0)
                                if key > bkey or (key == bkey and last[v] < bl):
                                    victim = v
                                    bkey = key
                                    bl = last[v]
                            v = nxt[v]
                        unlink(nxt, prv, head, tail, q, victim)
                        pos[victim] = -1
                    else:
                        while pin[hp[base]] == s:
                            aside_k[n_aside] = hk[base]
                            aside_t[n_aside] = ht[base]
                            aside_p[n_aside] = _pop_top(hk, ht, hp, pos, base, hs, q)
                            n_aside += 1
                        victim = _pop_top(hk, ht, hp, pos, base, hs, q)
                    infl[q] = credit[victim]
                    used[q] -= slots[victim]
                    freq[victim] = 0
                    evicted_pass[victim] = now_pass
                    if record > 1:
                        ev[n_ev, 0] = t
                        ev[n_ev, 1] = victim
                        n_ev += 1
                for a in range(n_aside):
                    _push(hk, ht, hp, pos, base, hs, q, aside_p[a], aside_k[a], aside_t[a])
            freq[p] = 1
            h = infl[q] + _rate(kind, freq[p], costs[p], sizes[p])
            credit[p] = h
            last[p] = t0 + t
            last_step[p] = s
            if scan:
                _insert_sorted(nxt, prv, head, tail, credit, q, p, h)
                pos[p] = 0  # resident (pos is a heap index for the other kinds)
            else:
                _push(hk, ht, hp, pos, base, hs, q, p, h, t0 + t)
            used[q] += need
        hold(own[0]), hold(own[1]), hold(own[2]), hold(own[3]), hold(own[4])
        hold(own[5]), hold(own[6]), hold(own[7]), hold(own[8]), hold(own[9])
        cnt[0] = t0 + n
        return misses, coll, page_miss, hit_mask, ev, n_ev, byp, n_byp

    credit_kernel.__qualname__ = f"credit_kernel{'_carried' if CARRIED else ''}"
    return njit(cache=True, nogil=True)(credit_kernel)


_CREDIT = {c: _credit(c) for c in (False, True)}
#: the state argument of a whole run's kernel, which starts from a cold state of its own
_NO_STATE = _credit_cold(0, 0, np.zeros(0, np.int64), False, False)


def credit_kernel(pages, steps, costs, sizes, slots, n_experts, n_layers, caps, dist, kind,
                  record, state=None):
    """Replay ``pages`` under a credit policy ``kind``. ``costs`` and ``sizes`` are the pages'
    w and s (the credit rates); ``slots`` the room each page takes in ``caps`` (all 1 for a
    cache counted in pages, = ``sizes`` for a byte budget). ``state`` (:func:`credit_state`; a
    cold one when None) is the cache the call starts from and leaves behind: consecutive calls
    on consecutive pieces of one trace, each cut between two groups, are one run
    (:class:`paging.fast.CarriedRun`). Returns the tuple of :mod:`paging.fast.common`
    (per-page misses: the state's running totals)."""
    return _CREDIT[state is not None](pages, steps, costs, sizes, slots, n_experts, n_layers,
                                      caps, dist, kind, record,
                                      _NO_STATE if state is None else state)

