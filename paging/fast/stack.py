"""One-pass stack-distance kernels behind :mod:`paging.mrc` (rounds-mode traces).

Both kernels return ``hist`` with ``hist[d]`` = the number of requests whose page sits at depth
d (1-based) of the policy's stack just before the request, and ``hist[0]`` = first requests
(depth ∞). A cache of k pages hits exactly the requests of depth ≤ k (the inclusion property,
Mattson, Gecsei, Slutz & Traiger, "Evaluation techniques for storage hierarchies", IBM Systems
Journal 9(2):78-117, 1970, doi:10.1147/sj.92.0078), so ``misses(k) = N − Σ_{d≤k} hist[d]``.

As in :mod:`paging.fast.lists`, small loops are written out in place: a numba helper call that
takes arrays pays atomic reference counting on every call.
"""

from __future__ import annotations

import numpy as np
from numba import njit

LLRU, FLD, LEAST_STALE, LFU, BELADY, FLD_CYCLIC, LEAST_STALE_LAYER, LEAST_STALE_UP = range(8)
LLRU_LATEST = 8

#: the ``stride`` of a streamed priority curve (:func:`priority_stack_update`): request times
#: below it keep the priorities' order; LFU's count · stride + t stays within int64 for
#: counts below it too
STREAM_STRIDE = 1 << 31


@njit(cache=True, nogil=True, inline="always")
def _priority(kind, z, c, t, L, n, stride, last_y, stale, static):
    """Eviction priority (larger = evicted first) of a page of layer ``z`` at time ``t``
    (current layer ``c``), last requested at ``last_y``; scalars only (no array arguments,
    so the inlined call costs nothing)."""
    if kind == LLRU or kind == LLRU_LATEST:
        r = c - z
        r = r + L if r < 0 else r
        if kind == LLRU:
            return t - last_y - r + (L - r if r > 0 else 0)
        return t - last_y - r + L - 1 - r
    if kind == FLD:
        d = z - c if z >= c else c - z
        return (2 * d + (1 if z < c else 0)) * stride + n - last_y
    if kind == FLD_CYCLIC:
        r = z - c
        r = r + L if r < 0 else r
        return r * stride + n - last_y
    if kind == LEAST_STALE or kind == LEAST_STALE_UP:
        left = z < c or (kind == LEAST_STALE_UP and z == c)
        q = (2 if left else 0) + (1 if stale else 0)
        return (q * L + L - 1 - z) * stride + n - last_y
    if kind == LEAST_STALE_LAYER:
        return ((L if stale else 0) + L - 1 - z) * stride + n - last_y
    return static


@njit(cache=True, nogil=True)
def lru_stack_hist(pages, n_pages):
    """LRU stack-distance histogram in O(N log nℓ) time and O(nℓ) memory.

    The depth of a re-request of p is 1 + the number of distinct pages requested since p's
    previous request, i.e. the number of "last request" marks at or after that request. The
    marks live in a Fenwick tree over *virtual* times: a window of M = 4·nℓ slots that is
    compacted (the ≤ nℓ live marks renumbered 0, 1, ...) whenever it fills, so the tree stays
    small and cache-resident instead of spanning all N requests.
    """
    state = lru_stack_state(n_pages)
    lru_stack_update(pages, *state)
    return state[3]


@njit(cache=True, nogil=True)
def lru_stack_state(n_pages):
    """The empty stack of :func:`lru_stack_update`: ``(tree, vt, owner, hist, counters)``."""
    M = max(4 * n_pages, 64)
    return (np.zeros(M + 1, np.int64), np.full(n_pages, -1, np.int64), np.full(M, -1, np.int64),
            np.zeros(n_pages + 1, np.int64), np.zeros(2, np.int64))


@njit(cache=True, nogil=True)
def lru_stack_update(pages, tree, vt, owner, hist, counters):
    """Add the stack depths of ``pages`` to ``hist``, continuing from the stack the arrays hold
    (:func:`lru_stack_state`; ``counters`` = the next virtual time and the number of live
    marks). Consecutive calls on consecutive pieces of a trace give the histogram of the whole
    trace (:mod:`paging.stream`)."""
    n = pages.size
    M = owner.size
    cur = counters[0]
    live = counters[1]
    for t in range(n):
        p = pages[t]
        v = vt[p]
        if v >= 0:
            # marks at virtual times 0..v
            before = 0
            i = v + 1
            while i > 0:
                before += tree[i]
                i -= i & (-i)
            hist[live - before + 1] += 1
            i = v + 1
            while i <= M:
                tree[i] -= 1
                i += i & (-i)
            owner[v] = -1
            live -= 1
        else:
            hist[0] += 1
        if cur == M:
            # compact: renumber the live marks 0..live-1 in time order, rebuild the tree
            j = 0
            for i in range(M):
                q = owner[i]
                if q >= 0:
                    owner[i] = -1
                    owner[j] = q
                    vt[q] = j
                    j += 1
            tree[:] = 0
            for i in range(1, M + 1):  # linear-time Fenwick build over ones at 1..j
                if i <= j:
                    tree[i] += 1
                up = i + (i & (-i))
                if up <= M:
                    tree[up] += tree[i]
            cur = j
        vt[p] = cur
        owner[cur] = p
        i = cur + 1
        while i <= M:
            tree[i] += 1
            i += i & (-i)
        live += 1
        cur += 1
    counters[0] = cur
    counters[1] = live


@njit(cache=True, nogil=True)
def priority_stack_hist(pages, next_use, n_experts, n_layers, kind):
    """Stack-depth histogram of a priority policy by Mattson's stack update, O(depth) per
    request (depth ≤ nℓ). Rounds mode: request t is at step t (layer t mod ℓ).

    At time t the policy's eviction order is a total order on pages that does not depend on the
    cache size (``prio`` below: larger = evicted first). The cache of size i holds the top i
    stack entries; on a request the stack is scanned from the top with a *carry*, the page the
    cache of size i−1 would evict: at depth i the larger-priority page of (carry, S[i]) is
    cache i's victim and travels on, the other stays at depth i; at the requested page's depth
    the carry takes its place (caches at least that large hit and keep their contents). The
    order may change with t (LLRU's R and D, FLD's distance, staleness): each update only uses
    the order at its own time, which is all the inclusion argument needs.

    Priorities (``evict_key`` of the reference policies, as one int64, larger evicted first):

    * LLRU: R·ℓ + D with d = t − last, R = d // ℓ, D = (−d) mod ℓ; d mod ℓ is
      (t − layer) mod ℓ because a page of layer z is only requested at steps ≡ z;
    * FLD: (|layer − c|, layer < c, −last); FLD-cyclic: ((layer − c) mod ℓ, −last);
    * Least-Stale: (layer < c, stale, −layer, −last), with layer ≤ c for -upcoming;
      Least-Stale-layer: (stale, −layer, −last);
    * LFU: (−count, −last);  Belady: (next use, page).
    """
    state = priority_stack_state(n_experts * n_layers)
    priority_stack_update(pages, next_use, n_experts, n_layers, kind, pages.size + 1, *state)
    return state[5]


@njit(cache=True, nogil=True)
def priority_stack_state(n_pages):
    """The empty stack of :func:`priority_stack_update`: ``(stack, last, count, lpass, sprio,
    hist, counters)``: the stack, each page's last request, request count, forward pass of
    the last request and static priority (LFU, Belady), the histogram, and ``counters`` =
    (the stack's depth, the layer of the last request, its forward pass, the requests so
    far)."""
    P = n_pages
    return (np.zeros(P, np.int64), np.zeros(P, np.int64), np.zeros(P, np.int64),
            np.zeros(P, np.int64), np.zeros(P, np.int64), np.zeros(P + 1, np.int64),
            np.array([0, -1, 0, 0], np.int64))


@njit(cache=True, nogil=True)
def priority_stack_update(pages, next_use, n_experts, n_layers, kind, stride, stack, last,
                          count, lpass, sprio, hist, counters):
    """Add the stack depths of ``pages`` to ``hist``, continuing from the stack the arrays hold
    (:func:`priority_stack_state`); request times count on from the pieces before, and
    ``next_use[i]`` is the next use of the piece's request i (read by Belady only).
    Consecutive calls on consecutive pieces of a trace give the histogram of the whole trace
    (:mod:`paging.stream`).

    ``stride`` combines a priority's parts into one int64 (the last request is its least
    significant part): any value above the last request time of the whole trace gives the same
    order (:func:`priority_stack_hist` passes the trace's length + 1; a stream, which does not
    know its length, a constant, :data:`STREAM_STRIDE`)."""
    L = n_layers
    P = n_experts * n_layers
    n = stride - 1
    layer_of = np.arange(P) // n_experts
    depth = counters[0]
    c = counters[1]  # layer of t
    now_pass = counters[2]
    t0 = counters[3]
    for i0 in range(pages.size):
        t = t0 + i0
        c += 1
        if c == L:
            c = 0
            now_pass += 1
        x = pages[i0]
        if depth > 0 and stack[0] == x:
            hist[1] += 1
        elif depth == 0:
            stack[0] = x
            depth = 1
            hist[0] += 1
        else:
            carry = stack[0]
            stack[0] = x
            # priority of the carry
            y = carry
            cp = _priority(kind, layer_of[y], c, t, L, n, stride, last[y], lpass[y] < now_pass,
                           sprio[y])
            i = 1
            while i < depth:
                y = stack[i]
                if y == x:
                    break
                py = _priority(kind, layer_of[y], c, t, L, n, stride, last[y],
                               lpass[y] < now_pass, sprio[y])
                # y is the victim of cache size i+1 when py > cp; the other page stays at
                # depth i+1 (branch-free: the outcome is data-dependent and unpredictable)
                sw = py > cp
                stack[i] = carry if sw else y
                carry = y if sw else carry
                cp = py if sw else cp
                i += 1
            if i < depth:
                stack[i] = carry
                hist[i + 1] += 1
            else:
                stack[depth] = carry
                depth += 1
                hist[0] += 1
        last[x] = t
        lpass[x] = now_pass
        count[x] += 1
        if kind == LFU:
            sprio[x] = -(count[x] * stride + t)
        elif kind == BELADY:
            sprio[x] = next_use[i0] * P + x
    counters[0] = depth
    counters[1] = c
    counters[2] = now_pass
    counters[3] = t0 + pages.size
