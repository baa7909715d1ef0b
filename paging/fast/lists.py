"""Kernels on intrusive doubly linked lists: LRU, FIFO, FWF, LLRU, FLD and Least-Stale (both
readings of the last two, :mod:`paging.policies.layered`).

The lists are threaded through two arrays indexed by page id (``nxt``, ``prv``), so a hit, an
insertion and an eviction cost O(1) and no hashing is needed: page ids are dense in 0..nℓ-1.
A list runs from its head (most recently touched, or most recently inserted for FIFO/FWF) to
its tail (the next victim). Victim rules, each equal to the reference policy's ``evict_key``
maximum (:mod:`paging.policies.classic`, :mod:`paging.policies.layered`):

* LRU, FIFO: the tail of the partition's list (LRU moves a page to the head on every touch,
  FIFO only on insertion), skipping pinned pages. O(1) per request in rounds mode, O(K) in
  groups mode.
* FWF: every unpinned page of the partition, oldest insertion first (the reference evicts
  ``cache.candidates`` in insertion order).
* LLRU, FLD, Least-Stale (shared cache): one recency list per layer. Inside a layer these
  keys order pages by recency alone — D, the layer distance and *left* are the same for every
  page of a layer because its steps are all ≡ layer (mod ℓ), and R and staleness only grow with
  age —
  so the victim is the best of the ℓ per-layer tails: O(ℓ) per miss, O(1) per hit.
* For the same reason LLRU-DIST, FLD-DIST and Least-Stale-DIST, whose partitions are single
  layers, evict exactly as LRU-DIST; :mod:`paging.fast` runs them with the LRU kind.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from paging.fast.common import buffers, is_grouped, route_group, route_scratch

LRU, FIFO, FWF, LLRU, FLD, LEAST_STALE, FLD_CYCLIC, LEAST_STALE_LAYER, LEAST_STALE_UP = range(9)
LLRU_LATEST = 9
#: the kinds whose victim depends on the layer (one recency list per layer, a page's last step
#: and pass kept); a new kind that is not layered needs nothing here
LAYERED = (LLRU, FLD, LEAST_STALE, FLD_CYCLIC, LEAST_STALE_LAYER, LEAST_STALE_UP, LLRU_LATEST)


def no_route():
    """The ``route`` argument of :func:`list_kernel` for a run without routing."""
    return (np.zeros((0, 0), np.int64), np.zeros(0, np.int64), 0, np.zeros(0, np.int64),
            no_prior())


def no_prior():
    """The ``cp`` argument of :func:`paging.fast.common.route_group` for a hook other than
    ``cache-prior``. Its logits are read-only, as a trace's are, so that a kernel called with
    either has one compiled signature."""
    return (no_logits(), np.zeros(0, np.int64), np.zeros(0), np.zeros(0))


def no_logits():
    """An empty read-only ``(0, 0, 0)`` logits array (:func:`no_prior`)."""
    a = np.zeros((0, 0, 0))
    a.setflags(write=False)
    return a


def list_state(n_pages, n_layers, n_caps):
    """A cold cache for :func:`list_kernel`: the lists, residency, room used and the per-page
    stamps. A run on a fresh state replays a trace from an empty cache; passing the state a run
    returned to the next call continues the same run (:mod:`paging.stream`)."""
    P, L = int(n_pages), int(n_layers)
    return (np.full(P, -1, np.int64), np.full(P, -1, np.int64), np.full(L, -1, np.int64),
            np.full(L, -1, np.int64), np.zeros(P, np.bool_), np.zeros(n_caps, np.int64),
            np.full(P, -1, np.int64), np.full(P, -1, np.int64), np.zeros(P, np.int64),
            np.zeros(P, np.int64), np.zeros(P, np.int64))


@njit(cache=True, nogil=True)
def list_kernel(pages, steps, sizes, n_experts, n_layers, caps, dist, kind, record, state,
                route):
    """Replay ``pages`` (layer clock ``steps``) under a list policy ``kind``.

    ``caps`` holds the capacity of each partition: one entry (shared cache) or one per layer
    (``dist``), in the units of ``sizes`` (one per page id: all 1 for a cache counted in pages,
    bytes for a budget). On a miss, victims are taken until the page fits. Returns the tuple
    described in :mod:`paging.fast.common`, whose misses and collisions count this call's
    requests and whose per-page misses are the state's running totals.

    ``state`` (:func:`list_state`) is the cache the run starts from and leaves behind, updated
    in place: consecutive calls on consecutive pieces of one trace, each cut between two groups,
    give the counts of one call on the whole trace.

    ``route`` (:func:`no_route`, or :func:`paging.fast.routing.run_routed`'s) is
    ``(order, m, j, out, cp)``: when ``m`` has entries, each group is first routed by
    :func:`paging.fast.common.route_group` against the cache as it stands (row g of ``order``,
    ``m[g]``, the top ``j``, K served, ``cp`` for ``cache-prior``), and the experts chosen are
    written to ``out`` (the caller passes ``out`` and ``pages`` as one array, so the run serves
    what was chosen).

    The list operations are written out in place: in numba, a helper call that takes arrays
    costs atomic reference counting per call, which halves the speed of this loop.
    """
    n = pages.size
    L = n_layers
    P = n_experts * n_layers
    layered = False
    for z in LAYERED:
        if kind == z:
            layered = True
    per_layer_lists = dist or layered
    nxt, prv, head, tail, resident, used, pin, evicted_pass, last_step, last_pass, page_miss = \
        state
    layer_of = np.arange(P) // n_experts
    hit_mask, ev, byp = buffers(n, record, P)
    r_order, r_m, r_j, r_out, r_cp = route
    routed = r_m.size > 0
    rank, r_pos, taken, r_zz = route_scratch(n_experts)
    g_idx = 0
    misses = 0
    coll = 0
    n_ev = 0
    n_byp = 0
    grouped = is_grouped(steps)
    move = kind != FIFO and kind != FWF
    prev_s = -1
    now_pass = 0
    g_start = 0
    g_end = 0
    for t in range(n):
        p = pages[t]
        s = steps[t]
        if s != prev_s:
            # the forward pass s // ℓ, without a division per request
            if s == prev_s + 1:
                if s - now_pass * L >= L:
                    now_pass += 1
            else:
                now_pass = s // L
            prev_s = s
            if routed:
                j = t
                while j < n and steps[j] == s:
                    j += 1
                route_group(pages, t, j - t, (s - now_pass * L) * n_experts, n_experts, g_idx,
                            r_order, r_m[g_idx], r_j, j - t, resident, rank, taken, r_out, t,
                            r_cp, r_zz, r_pos)
                g_idx += 1
                p = pages[t]
            if grouped:
                j = t
                while j < n and steps[j] == s:
                    pin[pages[j]] = s
                    j += 1
                g_start = t
                g_end = j
        z = layer_of[p]
        l = z if per_layer_lists else 0
        if resident[p]:
            if record:
                hit_mask[t] = True
            if move and head[l] != p:
                # move to the head: p is not the head, so it has a predecessor
                a = prv[p]
                b = nxt[p]
                nxt[a] = b
                if b >= 0:
                    prv[b] = a
                else:
                    tail[l] = a
                h = head[l]
                prv[p] = -1
                nxt[p] = h
                prv[h] = p
                head[l] = p
            if layered:
                last_step[p] = s
                last_pass[p] = now_pass
            continue
        misses += 1
        page_miss[p] += 1
        if evicted_pass[p] == now_pass:
            coll += 1
        q = z if dist else 0
        need = sizes[p]
        if used[q] + need > caps[q]:
            held = 0  # room held by pinned resident pages of the partition (groups mode)
            if grouped:
                for j in range(g_start, g_end):
                    r = pages[j]
                    if resident[r] and (not dist or layer_of[r] == z):
                        held += sizes[r]
            if need > caps[q] - held:
                # capacity 0, a page larger than its partition, or pinned pages filling it:
                # serve the page from slow memory without caching it
                if record > 1:
                    byp[n_byp] = t
                n_byp += 1
                continue
            while used[q] + need > caps[q]:
                victim = -1
                if kind == LRU or kind == FIFO:
                    victim = tail[q]
                    while victim >= 0 and pin[victim] == s:
                        victim = prv[victim]
                elif kind == FWF:
                    # flush: every unpinned page of the partition, oldest insertion first
                    v = tail[q]
                    while v >= 0:
                        u = prv[v]
                        if pin[v] != s:
                            b = nxt[v]
                            if u >= 0:
                                nxt[u] = b
                            else:
                                head[q] = b
                            if b >= 0:
                                prv[b] = u
                            else:
                                tail[q] = u
                            resident[v] = False
                            used[q] -= sizes[v]
                            evicted_pass[v] = now_pass
                            if record > 1:
                                ev[n_ev, 0] = t
                                ev[n_ev, 1] = v
                                n_ev += 1
                        v = u
                    break
                elif kind == LLRU or kind == LLRU_LATEST:
                    # Def. 2: largest R = (t - τ) // ℓ, then largest D = (τ - t) mod ℓ, as one
                    # number R·ℓ + D (llru-latest: D = (τ - t - 1) mod ℓ = ℓ - 1 - r). A page
                    # of layer z is requested only at steps ≡ z (mod ℓ), so (t - τ) mod ℓ =
                    # (c - z) mod ℓ needs no division; (R, D) differ across layers, and inside
                    # a layer the oldest page has the largest R (the tail).
                    c = s - now_pass * L
                    best = -1
                    for zz in range(L):
                        v = tail[zz]
                        while v >= 0 and pin[v] == s:
                            v = prv[v]
                        if v < 0:
                            continue
                        r = c - zz
                        r = r + L if r < 0 else r
                        if kind == LLRU:
                            key = s - last_step[v] - r + (L - r if r > 0 else 0)
                        else:
                            key = s - last_step[v] - r + L - 1 - r
                        if key > best:
                            best = key
                            victim = v
                elif kind == FLD:
                    # the largest |layer - c|; of two layers at one distance the one behind
                    c = s - now_pass * L
                    for dd in range(L - 1, -1, -1):
                        for side in range(2):
                            zz = c - dd if side == 0 else c + dd
                            if zz < 0 or zz >= L or (side == 1 and dd == 0):
                                continue
                            victim = tail[zz]
                            while victim >= 0 and pin[victim] == s:
                                victim = prv[victim]
                            if victim >= 0:
                                break
                        if victim >= 0:
                            break
                elif kind == FLD_CYCLIC:
                    # the layer furthest ahead of the current one: (c-1) mod ℓ first, c last
                    c = s - now_pass * L
                    for dd in range(L - 1, -1, -1):
                        zz = c + dd
                        if zz >= L:
                            zz -= L
                        victim = tail[zz]
                        while victim >= 0 and pin[victim] == s:
                            victim = prv[victim]
                        if victim >= 0:
                            break
                elif kind == LEAST_STALE or kind == LEAST_STALE_UP:
                    # left layers (z < c; z <= c for LEAST_STALE_UP) before the rest; in each,
                    # the lowest layer whose oldest unpinned page is stale, else the lowest
                    # layer with a page
                    c = s - now_pass * L
                    if kind == LEAST_STALE_UP:
                        c += 1
                    first_left = -1
                    stale_right = -1
                    first_right = -1
                    for zz in range(L):
                        v = tail[zz]
                        while v >= 0 and pin[v] == s:
                            v = prv[v]
                        if v < 0:
                            continue
                        if zz < c:
                            if last_pass[v] < now_pass:
                                victim = v
                                break
                            if first_left < 0:
                                first_left = v
                        else:
                            if first_left >= 0:
                                break
                            if stale_right < 0 and last_pass[v] < now_pass:
                                stale_right = v
                            if first_right < 0:
                                first_right = v
                    if victim < 0:
                        if first_left >= 0:
                            victim = first_left
                        elif stale_right >= 0:
                            victim = stale_right
                        else:
                            victim = first_right
                else:  # LEAST_STALE_LAYER: the lowest layer holding a stale page, else the lowest
                    first = -1
                    for zz in range(L):
                        v = tail[zz]
                        while v >= 0 and pin[v] == s:
                            v = prv[v]
                        if v < 0:
                            continue
                        if first < 0:
                            first = v
                        if last_pass[v] < now_pass:
                            victim = v
                            break
                    if victim < 0:
                        victim = first
                if victim < 0:  # cannot happen: the room check above found unpinned pages
                    break
                lv = layer_of[victim] if per_layer_lists else 0
                a = prv[victim]
                b = nxt[victim]
                if a >= 0:
                    nxt[a] = b
                else:
                    head[lv] = b
                if b >= 0:
                    prv[b] = a
                else:
                    tail[lv] = a
                resident[victim] = False
                used[q] -= sizes[victim]
                evicted_pass[victim] = now_pass
                if record > 1:
                    ev[n_ev, 0] = t
                    ev[n_ev, 1] = victim
                    n_ev += 1
        h = head[l]
        prv[p] = -1
        nxt[p] = h
        if h >= 0:
            prv[h] = p
        else:
            tail[l] = p
        head[l] = p
        resident[p] = True
        used[q] += need
        if layered:
            last_step[p] = s
            last_pass[p] = now_pass
    return misses, coll, page_miss, hit_mask, ev, n_ev, byp, n_byp
