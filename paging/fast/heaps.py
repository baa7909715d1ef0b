"""Kernels on indexed binary min-heaps: LFU and Belady.

Each partition keeps its resident pages in a binary heap keyed by one int64 that encodes the
reference policy's ``evict_key`` (the smallest key is evicted), with ``pos[page]`` giving the
page's slot so that a hit can re-sift it. Keys are unique, so the heap's internal layout never
changes a decision. Cost: O(log k) per request.

* LFU evicts the fewest requests so far, ties by the oldest last request:
  key = count·(N+1) + last (counts survive eviction, :class:`paging.policies.LFU`).
* Belady evicts the furthest next use, ties (pages never requested again, next use = N) by the
  larger page id: key = −(next_use·nℓ + page) (:class:`paging.offline.belady.Belady`).

Pinned pages (groups mode) at the top of the heap are popped aside, the victim taken below
them, and they are pushed back; at most K−1 pages of a group are pinned.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from paging.fast.common import buffers, is_grouped

LFU, BELADY = 0, 1


@njit(cache=True, nogil=True)
def _sift_up(hk, hp, pos, base, i):
    key = hk[base + i]
    page = hp[base + i]
    while i > 0:
        j = (i - 1) >> 1
        if hk[base + j] <= key:
            break
        hk[base + i] = hk[base + j]
        hp[base + i] = hp[base + j]
        pos[hp[base + i]] = i
        i = j
    hk[base + i] = key
    hp[base + i] = page
    pos[page] = i


@njit(cache=True, nogil=True)
def _sift_down(hk, hp, pos, base, size, i):
    key = hk[base + i]
    page = hp[base + i]
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and hk[base + c + 1] < hk[base + c]:
            c += 1
        if hk[base + c] >= key:
            break
        hk[base + i] = hk[base + c]
        hp[base + i] = hp[base + c]
        pos[hp[base + i]] = i
        i = c
    hk[base + i] = key
    hp[base + i] = page
    pos[page] = i


@njit(cache=True, nogil=True)
def _pop_top(hk, hp, pos, base, hs, q):
    """Remove the top of partition q's heap and return its page."""
    top = hp[base]
    pos[top] = -1
    hs[q] -= 1
    m = hs[q]
    if m > 0:
        hk[base] = hk[base + m]
        hp[base] = hp[base + m]
        _sift_down(hk, hp, pos, base, m, 0)
    return top


@njit(cache=True, nogil=True)
def _push(hk, hp, pos, base, hs, q, page, key):
    i = hs[q]
    hs[q] += 1
    hk[base + i] = key
    hp[base + i] = page
    _sift_up(hk, hp, pos, base, i)


def heap_state(n_experts: int, n_layers: int, caps: np.ndarray, dist: bool, stride: int):
    """A cold cache for :func:`heap_kernel`: the partitions' heaps (slots ``off[q]`` ..
    ``off[q+1]``), their sizes and room used, each page's slot, request count, pass of its last
    eviction and misses, and ``clock`` = (requests served so far, key stride). LFU's key orders
    by count, then by the index of the last request: ``stride`` must exceed every index of the
    run (the trace's length + 1 for one call; a bound on the whole stream when a run is fed
    piece by piece, :class:`paging.fast.CarriedRun`). Passing the state a call left to the
    next call continues the same run."""
    P = int(n_experts) * int(n_layers)
    nparts = caps.size
    part_pages = n_experts if dist else P
    off = np.zeros(nparts + 1, np.int64)
    for q in range(nparts):
        off[q + 1] = off[q] + min(int(caps[q]), part_pages)
    room = max(int(off[nparts]), 1)
    return (np.zeros(room, np.int64), np.zeros(room, np.int64), np.zeros(nparts, np.int64),
            np.zeros(nparts, np.int64), np.full(P, -1, np.int64), np.zeros(P, np.int64),
            np.full(P, -1, np.int64), np.zeros(P, np.int64), off,
            np.array([0, int(stride)], np.int64))


@njit(cache=True, nogil=True)
def heap_kernel(pages, steps, next_use, sizes, n_experts, n_layers, caps, dist, kind, record,
                state):
    """Replay ``pages`` under LFU or Belady (``kind``); see :mod:`paging.fast.lists` for the
    arguments (``sizes`` and ``caps`` in the same unit). ``next_use`` is the trace's next-use
    array (read by Belady only; a Belady run is one call). ``state`` (:func:`heap_state`) is
    the cache the call starts from and leaves behind, updated in place: consecutive calls on
    consecutive pieces of one trace, each cut between two groups, give the counts of one call
    on the whole trace (misses and collisions per call, per-page misses running totals)."""
    n = pages.size
    L = n_layers
    P = n_experts * n_layers
    hk, hp, hs, used, pos, count, evicted_pass, page_miss, off, clock = state
    t_off = clock[0]
    stride = clock[1]
    pin = np.full(P, -1, np.int64)
    aside_p = np.zeros(P, np.int64)
    aside_k = np.zeros(P, np.int64)
    hit_mask, ev, byp = buffers(n, record, P)
    misses = 0
    coll = 0
    n_ev = 0
    n_byp = 0
    grouped = is_grouped(steps)
    layer_of = np.arange(P) // n_experts
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
        if kind == LFU:
            key = (count[p] + 1) * stride + t_off + t
        else:
            key = -(next_use[t] * P + p)
        down = -1  # slot to sift down from at the end of this request
        up = -1  # slot to sift up from
        i = pos[p]
        if i >= 0:
            if record:
                hit_mask[t] = True
            count[p] += 1
            hk[base + i] = key
            if kind == LFU:  # the key grew
                down = i
            else:  # the next use moved later: the key shrank
                up = i
        else:
            misses += 1
            page_miss[p] += 1
            if evicted_pass[p] == now_pass:
                coll += 1
            need = sizes[p]
            if used[q] + need <= caps[q]:
                up = hs[q]
                hs[q] += 1
                hk[base + up] = key
                hp[base + up] = p
                pos[p] = up
            else:
                held = 0  # room held by pinned resident pages of the partition (groups mode)
                if grouped:
                    for j in range(g_start, g_end):
                        r = pages[j]
                        if pos[r] >= 0 and (not dist or layer_of[r] == z):
                            held += sizes[r]
                if need > caps[q] - held:
                    # capacity 0, a page larger than its partition, or pinned pages filling
                    # it: serve the page from slow memory without caching it
                    if record > 1:
                        byp[n_byp] = t
                    n_byp += 1
                    continue
                top = hp[base]
                if pin[top] != s and used[q] - sizes[top] + need <= caps[q]:
                    # the usual case: one eviction makes room; the new page replaces the top,
                    # then sifts down
                    pos[top] = -1
                    hk[base] = key
                    hp[base] = p
                    pos[p] = 0
                    down = 0
                    used[q] -= sizes[top]
                    evicted_pass[top] = now_pass
                    if record > 1:
                        ev[n_ev, 0] = t
                        ev[n_ev, 1] = top
                        n_ev += 1
                else:
                    # several evictions (sizes), or pinned pages on top (groups mode): set the
                    # pinned ones aside, pop victims below them until the page fits, put the
                    # pinned ones back
                    n_aside = 0
                    while used[q] + need > caps[q] and hs[q] > 0:
                        if pin[hp[base]] == s:
                            aside_k[n_aside] = hk[base]
                            aside_p[n_aside] = _pop_top(hk, hp, pos, base, hs, q)
                            n_aside += 1
                            continue
                        victim = _pop_top(hk, hp, pos, base, hs, q)
                        used[q] -= sizes[victim]
                        evicted_pass[victim] = now_pass
                        if record > 1:
                            ev[n_ev, 0] = t
                            ev[n_ev, 1] = victim
                            n_ev += 1
                    for a in range(n_aside):
                        _push(hk, hp, pos, base, hs, q, aside_p[a], aside_k[a])
                    _push(hk, hp, pos, base, hs, q, p, key)
            used[q] += need
            count[p] += 1
        # the two sifts, written out in place (a helper call would pay atomic refcounts)
        if down >= 0:
            i = down
            m = hs[q]
            while True:
                c = 2 * i + 1
                if c >= m:
                    break
                if c + 1 < m and hk[base + c + 1] < hk[base + c]:
                    c += 1
                if hk[base + c] >= key:
                    break
                hk[base + i] = hk[base + c]
                hp[base + i] = hp[base + c]
                pos[hp[base + i]] = i
                i = c
            hk[base + i] = key
            hp[base + i] = p
            pos[p] = i
        elif up >= 0:
            i = up
            while i > 0:
                j = (i - 1) >> 1
                if hk[base + j] <= key:
                    break
                hk[base + i] = hk[base + j]
                hp[base + i] = hp[base + j]
                pos[hp[base + i]] = i
                i = j
            hk[base + i] = key
            hp[base + i] = p
            pos[p] = i
    clock[0] = t_off + n
    return misses, coll, page_miss, hit_mask, ev, n_ev, byp, n_byp


@njit(cache=True, nogil=True)
def chain_labels(next_use, label):
    """Propagate each chain's label along ``next_use`` (request t and ``next_use[t]`` are the
    same page): ``label`` holds the chains' first requests' labels, -1 elsewhere, and is
    filled in place and returned (:func:`paging.predict.opt_from_next_use`)."""
    N = next_use.size
    for t in range(N):
        if next_use[t] < N:
            label[next_use[t]] = label[t]
    return label
