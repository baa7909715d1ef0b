"""Compiled cache-aware routing of a serving step (:meth:`paging.serve.engine._Server.
_serve_routed_compiled`; the reference is :meth:`~paging.serve.engine._Server._serve_routed`).

On each layer of a step, every token of the step is routed against the cache's residency as
the layer before left it, with its gate scores (or 1/K weights), by the hooks' rule as
:mod:`paging.fast.routing` compiles it for ``paging simulate --routing``
(:func:`paging.fast.common.route_group`), and the union of what the tokens chose is the
layer's group. :func:`route_tokens` routes one layer (any carried kernel family: the caller
reads the residency between layers, :meth:`paging.fast.CarriedRun.resident`);
:func:`routed_list_step`, :func:`routed_heap_step`, :func:`routed_arc_step`,
:func:`routed_credit_step`, :func:`routed_marking_step` and :func:`routed_lecar_step` route and
serve a whole step of the list and heap families, ARC, the credit policies, Marking and LeCaR
in one call (the token and prediction policies route layer by layer). They are six functions
of the same shape because each calls
its family's kernel: numba takes a compiled function as an argument, but a caller compiled
that way is compiled again in every process (its cache entries do not match: a test with
``cache=True`` wrote a new one on each of three runs), which would cost every serving run
seconds. The
quality proxies are summed token by token in the same loop, in the reference's order.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from paging.fast.adaptive import _ARC_GROUPS, _LECAR, _T1, _T2
from paging.fast.common import route_group, route_scratch
from paging.fast.credit import _CREDIT
from paging.fast.heaps import heap_kernel
from paging.fast.lists import list_kernel
from paging.fast.marking import _marking
from paging.routing import KL_EPS

__all__ = ["route_tokens", "routed_list_step", "routed_heap_step", "routed_arc_step",
           "routed_credit_step", "routed_marking_step", "routed_lecar_step", "serving_hook",
           "PRUNE", "MAX_RANK", "CUMSUM", "PRIOR", "PRIOR_MEAN"]

_CARRIED_CREDIT = _CREDIT[True]  # (credit_kernel's kernel for a given state)
_CARRIED_LECAR = _LECAR[True, True]  # (lecar_kernel's: groups mode, a given state)

#: the hooks :func:`route_tokens` runs (:func:`serving_hook`)
PRUNE, MAX_RANK, CUMSUM, PRIOR, PRIOR_MEAN = range(5)


@njit(cache=True, nogil=True)
def route_tokens(X, W, KN, z, n, resident, hook, j, m, tau, lam, rsum, rn, q, logits, free,
                 worst=False):
    """One layer of a serving step routed (:meth:`paging.serve.engine._Server._serve_routed`,
    the reference): each row of ``X`` (a token's experts on layer ``z`` in rank order, -1
    padded; a row without any is skipped) routed by :func:`paging.fast.common.route_group`
    against ``resident`` as it stands (every token of the step sees the cache before the
    layer's experts are loaded), its ranking the row's experts then every other expert by id.
    ``W``: the row's router weights (its gate scores, else 1/K each; :meth:`paging.routing.
    Group.probs`), ``KN`` their logarithms (numpy's ``log``, as
    :meth:`paging.routing.CachePrior.logits_of` takes them).

    ``hook``: PRUNE (the top ``j``), MAX_RANK (the top j, cached experts of rank < ``m``, then
    the rest, cut at K), CUMSUM (max-rank with M the fewest experts whose weights reach
    ``tau``, n when they never do and the row has fewer than n: :meth:`paging.routing.
    Cumsum.m_of`) or PRIOR (Eq. 9: the top K of ``log w + λ·Δavg·m̃``, Δavg the layer's running
    mean of the rows' log-weight ranges, kept in ``rsum[z]``, ``rn[z]`` across calls in the
    reference's order; PRIOR_MEAN: the same with the rows' mean log-weight, ``avg=logit``).
    A token with ``free[t]`` (when ``free`` is not empty) is not routed: it is served its row
    as ranked and leaves Δavg alone (a prompt token with ``phase=decode``,
    :mod:`paging.routing`). The quality proxies of every row (:func:`paging.routing.quality`)
    are added to ``q`` = (Σ retained, Σ top-1 changed, Σ KL, rows) token by token, as the
    reference's ``+=``.

    Returns ``(pages, cnt, score, rank)``: the union of the served experts in order of first
    use (pages ``z·n + e``), the tokens routed to each, and each one's largest router weight
    and smallest rank over those tokens, or with ``worst`` the smallest weight and the largest
    rank (a token's weight of an expert outside its top-K is 0 and its rank K, as ``paging
    simulate``'s routing gives a routed request; what Score-Based reads in serving,
    :meth:`paging.serve.engine._Server._serve_routed`)."""
    T, K = X.shape
    base = z * n
    rank, pos_s, taken, zz = route_scratch(n)
    order = np.zeros((0, 0), np.int64)
    src = np.empty(max(K, 1), np.int64)
    kn = np.empty(max(K, 1))
    out = np.empty(max(K, n), np.int64)
    bonus = np.zeros(1)
    prior = hook == PRIOR or hook == PRIOR_MEAN
    cp = (logits, np.zeros(0, np.int64), kn, bonus if prior else bonus[:0])
    wa = np.zeros(n)
    ina = np.zeros(n, np.bool_)
    inb = np.zeros(n, np.bool_)
    count = np.zeros(n, np.int64)
    first = np.empty(n, np.int64)
    best_w = np.zeros(n)
    best_r = np.zeros(n, np.int64)
    nf = 0
    for t in range(T):
        k = 0
        for r in range(K):
            e = X[t, r]
            if e >= 0:
                src[k] = base + e
                kn[k] = KN[t, r]
                wa[e] = W[t, r]
                k += 1
        if k == 0:
            continue
        if free.size > 0 and free[t]:  # served as ranked: its row, in order
            for i in range(k):
                out[i] = src[i]
            c = k
        else:
            mm = m
            if hook == CUMSUM:
                acc = 0.0
                mm = -1
                for i in range(k):
                    acc += wa[src[i] - base]
                    if acc >= tau:
                        mm = i + 1
                        break
                if mm < 0:
                    mm = n if k < n else k
            elif prior:
                hi = kn[0]
                lo = kn[0]
                acc = kn[0]
                for i in range(1, k):
                    hi = max(hi, kn[i])
                    lo = min(lo, kn[i])
                    acc += kn[i]
                rsum[z] += acc / k if hook == PRIOR_MEAN else hi - lo
                rn[z] += 1
                bonus[0] = lam * (rsum[z] / rn[z])
            kout = min(j, k) if hook == PRUNE else k
            c = route_group(src, 0, k, base, n, 0, order, 0 if hook == PRUNE else mm, j, kout,
                            resident, rank, taken, out, 0, cp, zz, pos_s)
        orig = 0.0
        for i in range(k):
            ina[src[i] - base] = True
            orig += wa[src[i] - base]
        kept = 0.0
        top = False
        for i in range(c):
            e = out[i] - base
            inb[e] = True
            r = k  # the expert's rank for this token: its place in the row, else K
            if ina[e]:
                kept += wa[e]
                for i2 in range(k):
                    if src[i2] == out[i]:
                        r = i2
                        break
            if out[i] == src[0]:
                top = True
            if count[e] == 0:
                first[nf] = e
                nf += 1
                best_w[e] = wa[e]
                best_r[e] = r
            elif worst:
                best_w[e] = min(best_w[e], wa[e])
                best_r[e] = max(best_r[e], r)
            else:
                best_w[e] = max(best_w[e], wa[e])
                best_r[e] = min(best_r[e], r)
            count[e] += 1
        q[0] += kept / orig if orig > 0 else 1.0
        if not top:
            q[1] += 1.0
        q[2] += _kl(wa, ina, inb, orig, kept, n)
        q[3] += 1.0
        for i in range(k):
            e = src[i] - base
            wa[e] = 0.0
            ina[e] = False
        for i in range(c):
            inb[out[i] - base] = False
    pages = np.empty(nf, np.int64)
    cnt = np.empty(nf, np.int64)
    score = np.empty(nf)
    rnk = np.empty(nf, np.int64)
    for i in range(nf):
        pages[i] = base + first[i]
        cnt[i] = count[first[i]]
        score[i] = best_w[first[i]]
        rnk[i] = best_r[first[i]]
    return pages, cnt, score, rnk


# -- each family's residency, read from its carried state (:meth:`paging.fast.CarriedRun.
# resident` reads it through these too): a page is cached when it is on the list kernel's or
# Marking's residency array, has a heap or credit position, is on ARC's T1 or T2, or on
# LeCaR's recency list
@njit(cache=True, nogil=True)
def in_list(state):
    return state[4]


@njit(cache=True, nogil=True)
def in_heap(state):
    return state[4] >= 0


@njit(cache=True, nogil=True)
def in_credit(state):
    return state[6] >= 0


@njit(cache=True, nogil=True)
def in_marking(state):
    return state[1]


@njit(cache=True, nogil=True)
def in_arc(state):
    on = state[0][2]
    return (on == _T1) | (on == _T2)


@njit(cache=True, nogil=True)
def in_lecar(state):
    return state[0][2] == _T1


@njit(cache=True, nogil=True)
def routed_list_step(XL, WL, KL, step, n, L, hook, j, m, tau, lam, rsum, rn, q, nolog, free, slots,
                     caps, dist, kind, state, route):
    """A whole serving step with a routing hook for the list family, in one call: on each
    layer z, the tokens ``XL[z]`` routed by :func:`route_tokens` against the residency the
    list kernel's ``state`` holds, then their union served by
    :func:`paging.fast.lists.list_kernel` (clock ``step·L + z``), the state carried from layer
    to layer as :meth:`paging.fast.CarriedRun.feed` carries it between calls. Returns the
    step's ``(pages, cnt, hits, collisions, bypasses)`` and the per-page misses (the state's
    running totals; empty when no layer had a token)."""
    acc = _step_buffers(L, n)
    for z in range(L):
        pz, cz, _, _ = route_tokens(XL[z], WL[z], KL[z], z, n, in_list(state), hook, j, m,
                                    tau, lam, rsum, rn, q, nolog, free)
        if pz.size > 0:
            _put(acc, pz, cz, list_kernel(pz, np.full(pz.size, step * L + z, np.int64), slots,
                                          n, L, caps, dist, kind, 1, state, route))
    return _taken(acc)


@njit(cache=True, nogil=True)
def routed_heap_step(XL, WL, KL, step, n, L, hook, j, m, tau, lam, rsum, rn, q, nolog, free, slots,
                     caps, dist, kind, state, next_use):
    """:func:`routed_list_step` for the heap family (LFU, LHU: :func:`paging.fast.heaps.
    heap_kernel`; a page is resident when it has a heap position)."""
    acc = _step_buffers(L, n)
    for z in range(L):
        pz, cz, _, _ = route_tokens(XL[z], WL[z], KL[z], z, n, in_heap(state), hook, j, m,
                                    tau, lam, rsum, rn, q, nolog, free)
        if pz.size > 0:
            _put(acc, pz, cz, heap_kernel(pz, np.full(pz.size, step * L + z, np.int64),
                                          next_use, slots, n, L, caps, dist, kind, 1, state))
    return _taken(acc)


@njit(cache=True, nogil=True)
def routed_arc_step(XL, WL, KL, step, n, L, hook, j, m, tau, lam, rsum, rn, q, nolog, free, slots,
                    caps, dist, state):
    """:func:`routed_list_step` for ARC (:func:`paging.fast.adaptive.arc_kernel`'s groups-mode
    kernel; a page is resident on T1 or T2)."""
    acc = _step_buffers(L, n)
    for z in range(L):
        pz, cz, _, _ = route_tokens(XL[z], WL[z], KL[z], z, n, in_arc(state), hook, j, m,
                                    tau, lam, rsum, rn, q, nolog, free)
        if pz.size > 0:
            _put(acc, pz, cz, _ARC_GROUPS(pz, np.full(pz.size, step * L + z, np.int64), slots,
                                          n, L, caps, dist, 1, state))
    return _taken(acc)


@njit(cache=True, nogil=True)
def routed_credit_step(XL, WL, KL, step, n, L, hook, j, m, tau, lam, rsum, rn, q, nolog, free,
                       costs, sizes, slots, caps, dist, kind, state):
    """:func:`routed_list_step` for the credit policies (:func:`paging.fast.credit.
    credit_kernel`'s carried kernel; a page is resident when it has a position)."""
    acc = _step_buffers(L, n)
    for z in range(L):
        pz, cz, _, _ = route_tokens(XL[z], WL[z], KL[z], z, n, in_credit(state), hook, j, m,
                                    tau, lam, rsum, rn, q, nolog, free)
        if pz.size > 0:
            _put(acc, pz, cz, _CARRIED_CREDIT(pz, np.full(pz.size, step * L + z, np.int64),
                                              costs, sizes, slots, n, L, caps, dist, kind, 1,
                                              state))
    return _taken(acc)


@njit(cache=True, nogil=True)
def routed_marking_step(XL, WL, KL, step, n, L, hook, j, m, tau, lam, rsum, rn, q, nolog, free,
                        slots, caps, dist, state, draws):
    """:func:`routed_list_step` for randomized Marking (:func:`paging.fast.marking.
    marking_kernel`; its residency array). ``draws``: the run's draws from the state's count
    on, enough for the whole step; each layer's call goes on from where the one before
    stopped (the state counts them), as consecutive pieces do."""
    acc = _step_buffers(L, n)
    for z in range(L):
        pz, cz, _, _ = route_tokens(XL[z], WL[z], KL[z], z, n, in_marking(state), hook, j, m,
                                    tau, lam, rsum, rn, q, nolog, free)
        if pz.size > 0:
            _put(acc, pz, cz, _marking(pz, np.full(pz.size, step * L + z, np.int64), slots,
                                       n, L, caps, dist, draws, 1, state))
    return _taken(acc)


@njit(cache=True, nogil=True)
def routed_lecar_step(XL, WL, KL, step, n, L, hook, j, m, tau, lam, rsum, rn, q, nolog, free,
                      slots, caps, dist, state, draws, lr, dr, hist_cap):
    """:func:`routed_marking_step` for LeCaR (:func:`paging.fast.adaptive.lecar_kernel`'s
    carried groups-mode kernel; a page is resident on its recency list)."""
    acc = _step_buffers(L, n)
    for z in range(L):
        pz, cz, _, _ = route_tokens(XL[z], WL[z], KL[z], z, n, in_lecar(state), hook, j, m,
                                    tau, lam, rsum, rn, q, nolog, free)
        if pz.size > 0:
            _put(acc, pz, cz, _CARRIED_LECAR(pz, np.full(pz.size, step * L + z, np.int64),
                                             slots, n, L, caps, dist, draws, lr, dr, hist_cap,
                                             1, state))
    return _taken(acc)


@njit(cache=True, nogil=True)
def _step_buffers(L, n):
    """A step's pages, tokens per page and hits (room for n a layer), ``(filled, collisions,
    bypasses)`` and, in a list of one, the kernel's per-page misses."""
    pm = [np.zeros(0, np.int64)]
    return (np.empty(L * n, np.int64), np.empty(L * n, np.int64), np.empty(L * n, np.bool_),
            np.zeros(3, np.int64), pm)


@njit(cache=True, nogil=True)
def _put(acc, pz, cz, out):
    """A layer's served pages, their tokens and the kernel's ``out`` (its hits, collisions,
    bypasses and per-page misses) added to the step's buffers."""
    pages, cnt, hits, c, pm = acc
    o = c[0]
    h = out[3]
    for i in range(pz.size):
        pages[o + i] = pz[i]
        cnt[o + i] = cz[i]
        hits[o + i] = h[i]
    c[0] = o + pz.size
    c[1] += out[1]
    c[2] += out[7]
    pm[0] = out[2]


@njit(cache=True, nogil=True)
def _taken(acc):
    pages, cnt, hits, c, pm = acc
    o = c[0]
    return pages[:o], cnt[:o], hits[:o], c[1], c[2], pm[0]


@njit(cache=True, nogil=True)
def _kl(wa, ina, inb, orig, kept, n):
    """The KL proxy of :func:`paging.routing.quality` for one group: ``wa`` the weights of its
    experts (``ina``), ``inb`` the served ones, ``orig`` and ``kept`` their weight sums; over
    the experts of either side in ascending id order, as the reference iterates them."""
    eps = KL_EPS
    u = eps / n
    kl = 0.0
    for e in range(n):
        ka = ina[e] and orig > 0
        kb = inb[e] and kept > 0
        if not (ka or kb):
            continue
        pa = wa[e] / orig if ka else 0.0
        pb = wa[e] / kept if kb else 0.0
        p = (1 - eps) * pa + u
        q = (1 - eps) * pb + u
        kl += p * np.log(p / q)
    return kl if kl > 0.0 else 0.0


def serving_hook(router, n: int):
    """``(hook, j, m, tau, lam)`` of :func:`route_tokens` for a built-in hook a serving run
    routes compiled (``pruning``, ``max-rank``, ``cumsum``, ``cache-prior``: exact types),
    else None."""
    from paging.routing import CachePrior, Cumsum, MaxRank, Pruning

    if type(router) is Pruning:
        return PRUNE, int(router.j), 0, 0.0, 0.0
    if type(router) is MaxRank:
        return MAX_RANK, int(router.j), n if router.m is None else int(router.m), 0.0, 0.0
    if type(router) is Cumsum:
        return CUMSUM, int(router.j), 0, float(router.tau), 0.0
    if type(router) is CachePrior:
        return (PRIOR_MEAN if router.avg == "logit" else PRIOR), int(router.j), 0, 0.0, \
            float(router.lam)
    return None
