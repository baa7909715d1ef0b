"""Kernel of FlashMoE's learned eviction (:class:`paging.policies.learned.FlashMoE`), shared
cache, rounds and groups mode, counted in pages or in bytes.

The reference scores the k candidates of an eviction in one batched numpy forward pass
(``MLP.forward``: float64 BLAS products, numpy's ``exp`` in SiLU) and evicts the first maximum.
A compiled loop that sums in another order may change a score's last bits, and so the argmax on a
near tie; BLAS's order is not ours to reproduce. The kernel therefore never *guesses* a near
tie: it decides alone only when its own float64 scores separate the winner from every other
candidate by more than ``tau``, a bound on the difference between any two float64 evaluations
of the network (any summation order, with or without fused multiply-adds, any ``exp`` within 4
ulps: :func:`error_bound`); otherwise it calls the reference's own computation, ``net.forward``
on the same (k, 2) feature matrix in the same candidate order, from the compiled loop (numba's
object mode), and takes that argmax. Every eviction is thus the reference's, decision for
decision (``tests/property/test_flashmoe_kernel.py``).

Speed comes from evaluating few candidates. The network's input is [1/r, f/max f] with r and f
integers. The kernel bounds the network over cells of that square by interval arithmetic
(:func:`cell_bounds`): one row per recency r = 1..``R_EXACT`` (1/r exact), then rows of
geometrically growing ranges of r, times ``V`` columns of f/max f; a row is bounded (numpy, in
object mode) the first time a run meets it, and kept for later runs of the same weights. At an
eviction every candidate gets its cell's [lo, hi] in O(1); only those whose hi reaches the
largest lo (less a margin covering every rounding) can win. When one candidate is left it is
the victim without any evaluation (its cell lies above every other's); otherwise only those
left are evaluated by the network. A candidate left out is provably below the winner, so
leaving it out changes no decision.

The policy's training-sequence refusal (:meth:`FlashMoE.reset`/``_touch``): when the model
was trained on a sequence of the run's length, the kernel stops once request ``PREFIX - 1``
has been seen by the policy and hands back the pages the policy saw until then; the wrapper
hashes them as the policy does and raises the same :class:`~paging.errors.PagingError`, or
runs again without the watch.

Left in the reference loop: the per-layer variant (``PerLayer`` over FlashMoE: no ``-dist``
name is registered), subclasses, and runs with a prefetcher or a miss handler
(:func:`paging.simulate.simulate`). A serving run feeds the kernel step by step from a
carried state (:class:`Carried`, :func:`flashmoe_state`). A routing hook is routed inside
this kernel (:mod:`paging.fast.routing`: each group as it starts, against the kernel's
residency), and the training-sequence watch then hashes the served pages, as the reference's
policy sees them. The network's scores are kept by their features (:data:`MEMO_MASK`).

Cost per request: O(1) for a hit or an insert; per eviction O(k) table look-ups plus one
O(h²) network evaluation per surviving candidate when more than one survives (h = 128 for the
shipped model; on the 2M-request benchmark trace 0.08 evaluations per eviction at k = 64, no
near tie), plus a numpy forward pass of all k candidates at a near tie; O(V·h²) numpy work the
first time a row of cells is met (in blocks of 32 rows, about 1 ms per row on the shipped model;
1,491 rows at most, kept per set of weights: 352 on that trace).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import math

import numpy as np
from numba import njit, objmode

from paging.fast.common import buffers, frozen, is_grouped, route_group, route_scratch
from paging.fast.lists import no_prior

FLASHMOE = 0

R_EXACT = 64  # recencies with a row of their own (1/r exact)
R_RATIO = 1.02  # growth of the r ranges of the rows beyond R_EXACT
R_MAX = 1 << 46  # rows up to here; the last row is [R_MAX, inf)
V = 64  # columns of f/max f
BLOCK = 32  # rows bounded together
_U = 2.0 ** -53  # unit roundoff of float64

# the prepared nets of the runs in progress (key -> Prepared): a near tie calls its numpy
# forward pass, a row not yet bounded its interval arithmetic
_NETS: dict[int, object] = {}
_KEYS = itertools.count()
_CACHE: dict[bytes, Prepared] = {}  # weights' digest -> prepared arrays (a few sets at most)


def _digest(net) -> bytes:
    h = hashlib.sha256()
    for a in list(net.W) + list(net.b):
        a = np.ascontiguousarray(a, dtype=np.float64)
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.digest()


def _silu_interval(lo: np.ndarray, hi: np.ndarray):
    """Range of silu(z) = z·σ(z) over [lo, hi] (silu decreases up to z* ≈ −1.2785, then
    increases; its minimum is ≈ −0.2785)."""
    z_star = -1.2784645427610738
    m = z_star / (1.0 + math.exp(-z_star))

    def silu(z):
        with np.errstate(over="ignore"):
            return z / (1.0 + np.exp(-z))

    s_lo, s_hi = silu(lo), silu(hi)
    out_lo = np.where(hi <= z_star, s_hi, np.where(lo >= z_star, s_lo, m))
    out_hi = np.maximum(s_lo, s_hi)
    return out_lo, out_hi


def _ibp(W, b, lo, hi):
    """Interval bounds of the network's output over the boxes [lo, hi] (rows), in
    midpoint-radius form; returns (out_lo, out_hi, largest |activation| per hidden layer)."""
    last = len(W) - 1
    amax = []
    for i, (w, c) in enumerate(zip(W, b, strict=True)):
        mid = (lo + hi) * 0.5
        rad = (hi - lo) * 0.5
        zm = mid @ w + c
        zr = rad @ np.abs(w)
        lo, hi = zm - zr, zm + zr
        if i < last:
            lo, hi = _silu_interval(lo, hi)
            amax.append(np.maximum(np.abs(lo), np.abs(hi)).max(axis=0))
    return lo[:, 0], hi[:, 0], amax


def error_bound(W, b) -> float:
    """A bound on |ŷ − y| for any float64 evaluation ŷ of the network at any input of
    [0, 1/2] × [0, 1], y the exact real value at the same (floating) input: per linear layer,
    a dot product of n terms plus the bias, summed in any order (fused or not), errs by at most
    γ_{n+1}·Σ|a_p w_pj| + |b_j|) on top of its inputs' errors carried through |W|; SiLU
    (z / (1 + exp(−z)), exp within 4 ulps) adds at most 8u relative and multiplies an input error
    by at most max|silu'| < 1.1. The largest activations come from interval arithmetic over the
    whole square."""
    box_lo = np.array([[0.0, 0.0]])
    box_hi = np.array([[0.5, 1.0]])
    _, _, amax = _ibp(W, b, box_lo, box_hi)
    a_abs = np.array([0.5, 1.0])
    err = np.zeros(2)
    last = len(W) - 1
    for i, (w, c) in enumerate(zip(W, b, strict=True)):
        n = w.shape[0] + 1
        gamma = n * _U / (1.0 - n * _U)
        aw = np.abs(w)
        z_err = err @ aw + gamma * (a_abs @ aw + np.abs(c))
        if i < last:
            a_abs = amax[i]
            err = 1.1 * z_err + 8.0 * _U * a_abs
        else:
            err = z_err
    return float(err[0])


@functools.cache
def rows():
    """The recency rows: ``(r_lo, r_hi)`` per row (r_hi = 0 for the open last row)."""
    lo = list(range(1, R_EXACT + 1))
    hi = list(lo)
    r = R_EXACT + 1
    while r < R_MAX:
        nxt = min(max(r + 1, int(r * R_RATIO)), R_MAX)
        lo.append(r)
        hi.append(nxt - 1)
        r = nxt
    lo.append(R_MAX)
    hi.append(0)
    out = np.array(lo, np.int64), np.array(hi, np.int64)
    for a in out:
        a.setflags(write=False)
    return out


def cell_bounds(W, b, slack: float, which) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi), each (len(which), V): the network's range over every cell of the rows
    ``which``, widened by ``slack`` (a cover for the rounding of the interval arithmetic
    itself). A cell's box is widened by 1e-12 so that the floating inputs that fall in it (1/r,
    f/max f, each one rounding of the exact ratio) are inside."""
    r_lo, r_hi = rows()
    r_lo, r_hi = r_lo[which], r_hi[which]
    u_hi = 1.0 / r_lo.astype(np.float64)
    u_lo = np.where(r_hi > 0, 1.0 / np.maximum(r_hi, 1).astype(np.float64), 0.0)
    widen = 1e-12
    u_lo = np.maximum(u_lo * (1.0 - widen), 0.0)
    u_hi = u_hi * (1.0 + widen)
    j = np.arange(V, dtype=np.float64)
    v_lo = np.maximum(j / V - widen, 0.0)
    v_hi = (j + 1.0) / V + widen
    R = r_lo.size
    box_lo = np.stack([np.repeat(u_lo, V), np.tile(v_lo, R)], axis=1)
    box_hi = np.stack([np.repeat(u_hi, V), np.tile(v_hi, R)], axis=1)
    lo, hi, _ = _ibp(W, b, box_lo, box_hi)
    return (lo - slack).reshape(R, V), (hi + slack).reshape(R, V)


class Prepared:
    """What the kernel reads of one network: flat weights and their offsets (``wf``, ``bf``,
    ``dims``, ``woff``, ``boff``), the rows' first recencies (``r_lo``, ``rmap`` for the direct
    rows), the cells' bounds (``lo``, ``hi``: a row is computed when a run first needs it, its
    ``filled`` flag then set), the near-tie threshold ``tau`` and the pruning ``margin``."""

    def __init__(self, net):
        self.W = [np.ascontiguousarray(w, dtype=np.float64) for w in net.W]
        self.b = [np.ascontiguousarray(c, dtype=np.float64) for c in net.b]
        W = self.W
        self.dims = np.array([W[0].shape[0]] + [w.shape[1] for w in W], np.int64)
        self.woff = np.zeros(len(W) + 1, np.int64)
        self.boff = np.zeros(len(W) + 1, np.int64)
        for i, w in enumerate(W):
            self.woff[i + 1] = self.woff[i] + w.size
            self.boff[i + 1] = self.boff[i] + w.shape[1]
        self.wf = np.concatenate([w.ravel() for w in W])
        self.bf = np.concatenate(self.b)
        e = error_bound(self.W, self.b)
        tiny = 1e-300
        self.tau = 4.0 * e + tiny  # two evaluations differ by at most 2e
        self.slack = 4.0 * e + tiny  # the interval arithmetic's own rounding
        self.margin = 3.0 * self.tau + self.slack
        self.r_lo = rows()[0]
        self.rmap = np.zeros(R_EXACT + 1, np.int64)  # row of r <= R_EXACT: r - 1
        self.rmap[1:] = np.arange(R_EXACT)
        R = self.r_lo.size
        self.lo = np.zeros((R, V))
        self.hi = np.zeros((R, V))
        self.filled = np.zeros(R, np.uint8)

    def fill(self, row: int) -> None:
        """Bound the cells of ``row`` and of the rows of its block of ``BLOCK`` (one numpy
        pass: runs meet neighbouring recencies)."""
        a = row - row % BLOCK
        which = np.arange(a, min(a + BLOCK, self.filled.size))
        lo, hi = cell_bounds(self.W, self.b, self.slack, which)
        self.lo[which] = lo
        self.hi[which] = hi
        self.filled[which] = 1


def prepare(net) -> Prepared:
    """The :class:`Prepared` arrays of ``net`` (an :class:`~paging.learned.mlp.MLP`), cached by
    the weights' digest (the rows filled by earlier runs are kept)."""
    key = _digest(net)
    got = _CACHE.get(key)
    if got is None:
        got = Prepared(net)
        if len(_CACHE) >= 4:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = got
    return got


def _reference_choice(key, r, cnt, f_max) -> int:
    """The reference's decision (:meth:`FlashMoE.victim`): its features and its batched
    forward pass over the candidates in their order, then the first maximum."""
    feats = np.stack([1.0 / r.astype(np.float64), cnt / int(f_max)], axis=1)
    score = _NETS[int(key)][1].forward(feats)
    return int(np.argmax(score))


def _fill_row(key, row) -> int:
    _NETS[int(key)][0].fill(int(row))
    return int(row)


@njit(cache=True)
def _fill(key, row):
    """Bound the cells of ``row`` (numpy, in object mode); returns ``row``."""
    with objmode(got="int64"):
        got = _fill_row(key, row)
    return got


@njit(cache=True)
def _choose(key, r, cnt, f_max):
    """The reference's choice among the candidates (numpy, in object mode)."""
    with objmode(got="int64"):
        got = _reference_choice(key, r, cnt, f_max)
    return got


@njit(cache=True)
def _score(x0, x1, wf, bf, dims, woff, boff, a, z):
    """The network at [x0, x1] in float64 (this loop's order: within ``tau`` of numpy's)."""
    nl = dims.size - 1
    a[0] = x0
    a[1] = x1
    for i in range(nl):
        d_in = dims[i]
        d_out = dims[i + 1]
        wo = woff[i]
        bo = boff[i]
        for j in range(d_out):
            z[j] = 0.0
        for p in range(d_in):
            ap = a[p]
            row = wo + p * d_out
            for j in range(d_out):
                z[j] += ap * wf[row + j]
        if i == nl - 1:
            return z[0] + bf[bo]
        for j in range(d_out):
            v = z[j] + bf[bo + j]
            a[j] = v / (1.0 + math.exp(-v))
    return 0.0


@njit(cache=True)
def _row(r, r_lo, rmap):
    if r <= rmap.size - 1:
        return rmap[r]
    lo = rmap.size - 1
    hi = r_lo.size - 1
    while lo < hi:  # the last row whose r_lo <= r
        mid = (lo + hi + 1) >> 1
        if r_lo[mid] <= r:
            lo = mid
        else:
            hi = mid - 1
    return lo


#: the network's scores a run keeps, direct-mapped by its features (r, f, max f): a score is
#: the same function of them at every eviction, and an eviction that meets features scored
#: before (a batched step's next eviction meets the same candidates) reads the score kept
#: instead of evaluating the network again (the key is compared whole: no decision changes)
MEMO_MASK = (1 << 12) - 1


def flashmoe_state(P: int) -> tuple:
    """A cold state of :func:`flashmoe_kernel` over P pages, for a run fed piece by piece
    (:class:`Carried`): the resident pages (``slot``, ``where``) with their insertion stamps,
    each page's last step and request count, its pin and the pass of its last eviction, the
    per-page misses, then ``(m, used, f_max, prev_s, now_pass, group, t)``: the resident
    count, the room used, the largest count, the last step and pass seen, the groups seen and
    the requests given so far (the next piece's first stamp); then the network's scores
    computed so far (:data:`MEMO_MASK`)."""
    i64 = np.int64
    return (np.zeros(P, i64), np.full(P, -1, i64), np.zeros(P, i64), np.full(P, -1, i64),
            np.zeros(P, i64), np.full(P, -1, i64), np.full(P, -1, i64), np.zeros(P, i64),
            np.array([0, 0, 0, -1, 0, -1, 0], i64), np.zeros((MEMO_MASK + 1, 3), i64),
            np.zeros(MEMO_MASK + 1))


@njit(cache=True)
def flashmoe_kernel(pages, steps, sizes, n_experts, n_layers, cap, record, wf, bf, dims, woff,
                    boff, r_lo, rmap, lo_t, hi_t, filled, tau, margin, key, watch, seen, stats,
                    route, S=None):
    """Replay ``pages`` under FlashMoE on one shared partition of ``cap`` (``sizes`` in the
    same unit). ``watch`` > 0: stop once request ``watch - 1`` has been seen by the policy,
    its pages so far in ``seen``; the extra last return value is then the number of pages
    seen (else -1). ``stats``: evictions, network evaluations, near ties (reference calls).
    ``route`` = ``(order, m, j, cp)`` (:func:`paging.fast.routing.run_routed`; ``m`` empty: no
    routing): each group is first routed by :func:`paging.fast.common.route_group` against
    the cache as it stands, its served pages written over ``pages`` in place.

    ``S``: None for a whole run (its state made here: numba prunes the other branch), or the
    state (:func:`flashmoe_state`) an earlier call left, ``pages`` then being the next piece
    of the same run (groups mode: its groups pinned; the misses and collisions returned are
    the piece's, ``page_miss`` the run's, the logs the piece's with request indices from its
    start)."""
    n = pages.size
    L = n_layers
    P = n_experts * n_layers
    nv = lo_t.shape[1]
    n_direct = rmap.size  # r < n_direct: row r - 1
    carried = S is not None
    if S is None:
        # the resident pages, unordered (slot[0..m)), with their insertion stamps
        slot = np.zeros(P, np.int64)
        where = np.full(P, -1, np.int64)
        stamp = np.zeros(P, np.int64)
        last = np.full(P, -1, np.int64)
        count = np.zeros(P, np.int64)
        pin = np.full(P, -1, np.int64)
        evicted_pass = np.full(P, -1, np.int64)
        page_miss = np.zeros(P, np.int64)
        sv = np.array([0, 0, 0, -1, 0, -1, 0], np.int64)
        memo_k = np.zeros((MEMO_MASK + 1, 3), np.int64)
        memo_s = np.zeros(MEMO_MASK + 1)
    else:
        slot, where, stamp, last, count, pin, evicted_pass, page_miss, sv, memo_k, memo_s = S
    m = sv[0]
    used = sv[1]
    f_max = sv[2]
    t0 = sv[6]  # the stamp of the piece's first request
    hit_mask, ev, byp = buffers(n, record, m if carried else 0)
    c_page = np.zeros(P, np.int64)
    c_hi = np.zeros(P)
    c_score = np.zeros(P)
    hmax = 1
    for i in range(dims.size):
        hmax = max(hmax, dims[i])
    a = np.zeros(hmax)
    z = np.zeros(hmax)
    misses = 0
    coll = 0
    n_ev = 0
    n_byp = 0
    n_seen = 0
    grouped = carried or is_grouped(steps)  # (a carried run is a serving run's groups)
    prev_s = sv[3]
    now_pass = sv[4]
    g_start = 0
    g_end = 0
    r_order, r_m, r_j, r_cp = route
    routed = r_m.size > 0
    r_res = np.zeros(P if routed else 0, np.bool_)  # the routed layer's residency
    r_rank, r_pos, r_taken, r_zz = route_scratch(n_experts)
    group = sv[5]
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
            group += 1
            if routed:  # the group's served experts, chosen against the cache as it stands
                base = (s - now_pass * L) * n_experts
                for e in range(base, base + n_experts):
                    r_res[e] = where[e] >= 0
                j = t
                while j < n and steps[j] == s:
                    j += 1
                route_group(pages, t, j - t, base, n_experts, group, r_order, r_m[group], r_j,
                            j - t, r_res, r_rank, r_taken, pages, t, r_cp, r_zz, r_pos)
                p = pages[t]
            if grouped:
                j = t
                while j < n and steps[j] == s:
                    pin[pages[j]] = s
                    j += 1
                g_start = t
                g_end = j
        if where[p] >= 0:
            if record:
                hit_mask[t] = True
        else:
            misses += 1
            page_miss[p] += 1
            if evicted_pass[p] == now_pass:
                coll += 1
            need = sizes[p]
            if used + need > cap:
                held = 0
                if grouped:
                    for j in range(g_start, g_end):
                        x = pages[j]
                        if where[x] >= 0:
                            dup = False  # the reference counts a pinned page once
                            for jj in range(g_start, j):
                                if pages[jj] == x:
                                    dup = True
                                    break
                            if not dup:
                                held += sizes[x]
                if need > cap - held:
                    if record > 1:
                        byp[n_byp] = t
                    n_byp += 1
                    continue  # served without caching: the policy does not see it
                fm = max(f_max, count[p] + 1)
                scale = nv / fm  # f/max f * V (a column's box is widened for this rounding)
                while used + need > cap:
                    # the candidates and their cells' bounds
                    k = 0
                    best_lo = -np.inf
                    for i in range(m):
                        q = slot[i]
                        if grouped and pin[q] == s:
                            continue
                        r = s - last[q] + 1
                        col = int(count[q] * scale)
                        if col >= nv:
                            col = nv - 1
                        if r < n_direct:  # _row, written out (a call costs refcounts)
                            row = r - 1
                        else:
                            row = n_direct - 1
                            hi_row = r_lo.size - 1
                            while row < hi_row:  # the last row whose r_lo <= r
                                mid = (row + hi_row + 1) >> 1
                                if r_lo[mid] <= r:
                                    row = mid
                                else:
                                    hi_row = mid - 1
                        if not filled[row]:
                            row = _fill(key, row)
                        lo = lo_t[row, col]
                        if lo > best_lo:
                            best_lo = lo
                        c_page[k] = q
                        c_hi[k] = hi_t[row, col]
                        k += 1
                    stats[0] += 1
                    # the candidates that may win: one (its cell above every other's) is
                    # the victim; several are scored by the network
                    cut = best_lo - margin
                    b = -1
                    n_may = 0
                    for i in range(k):
                        if c_hi[i] >= cut:
                            n_may += 1
                            b = i
                    if n_may > 1:
                        bs = -np.inf
                        for i in range(k):
                            if c_hi[i] >= cut:
                                q = c_page[i]
                                rq = s - last[q] + 1
                                cq = count[q]
                                # the score of these features, if computed before (the same
                                # function of (r, f, max f): a batched step's evictions meet
                                # the same candidates again)
                                u = (rq * 40503 + cq * 65599 + fm * 2654435761) & MEMO_MASK
                                if memo_k[u, 0] == rq and memo_k[u, 1] == cq \
                                        and memo_k[u, 2] == fm:
                                    sc = memo_s[u]
                                else:
                                    sc = _score(1.0 / rq, cq / fm, wf, bf, dims, woff, boff, a,
                                                z)
                                    stats[1] += 1
                                    memo_k[u, 0] = rq
                                    memo_k[u, 1] = cq
                                    memo_k[u, 2] = fm
                                    memo_s[u] = sc
                                c_score[i] = sc
                                if sc > bs or bs == -np.inf:
                                    b = i
                                    bs = sc
                        clear = True
                        for i in range(k):
                            if i != b and c_hi[i] >= cut and c_score[i] >= bs - tau:
                                clear = False
                                break
                        if not clear:  # a near tie: the reference's own forward pass decides
                            stats[2] += 1
                            order = np.argsort(stamp[c_page[:k]])  # insertion order
                            cands = c_page[:k][order]
                            rr = s - last[cands] + 1
                            cc = count[cands]
                            b = order[_choose(key, rr, cc, fm)]
                    v = c_page[b]
                    i = where[v]
                    m -= 1
                    slot[i] = slot[m]
                    where[slot[i]] = i
                    where[v] = -1
                    used -= sizes[v]
                    evicted_pass[v] = now_pass
                    if record > 1:
                        ev[n_ev, 0] = t
                        ev[n_ev, 1] = v
                        n_ev += 1
            slot[m] = p
            where[p] = m
            stamp[p] = t0 + t
            m += 1
            used += need
        # the policy's _touch (on_hit, on_insert)
        last[p] = s
        c = count[p] + 1
        count[p] = c
        if c > f_max:
            f_max = c
        if watch > 0 and t < watch:
            seen[n_seen] = p
            n_seen += 1
            if t == watch - 1:
                return misses, coll, page_miss, hit_mask, ev, n_ev, byp, n_byp, n_seen
    sv[0] = m
    sv[1] = used
    sv[2] = f_max
    sv[3] = prev_s
    sv[4] = now_pass
    sv[5] = group
    sv[6] = t0 + n
    return misses, coll, page_miss, hit_mask, ev, n_ev, byp, n_byp, -1


#: the ``route`` argument of :func:`flashmoe_kernel` for a run without routing
_NO_ROUTE = (np.zeros((0, 0), np.int64), np.zeros(0, np.int64), 0, no_prior())


class Carried:
    """A FlashMoE run fed piece by piece (a serving run's steps, a streamed trace's chunks:
    :class:`paging.fast.CarriedRun`), each piece cut between two groups: each call serves its
    piece from the state the last one left (:func:`flashmoe_state`; the kernel reads only the
    piece, the recencies being steps and the insertion stamps counted from the run's start),
    so no request is kept. The model is found as :meth:`FlashMoE.reset` finds it.

    The training-sequence watch: a serving run has none (its policy is told the run's room for
    its length, every request the workload could make, which no training sequence has). A
    stream's run turns it on (:meth:`watch`): as the policy, it keeps the pages of the first
    ``min(PREFIX, n)`` requests the policy hears (not those served uncached: the bypass log
    of those calls), and once request ``min(PREFIX, n) - 1`` has been heard and the sequence's
    length n is known (up front, or at :meth:`finish`), hashes them and raises the policy's
    error when they and n match a sequence the model was trained on. :meth:`feed` returns the
    piece's tuple of :mod:`paging.fast.common`."""

    def __init__(self, layout, spec, capacity: int, slots: np.ndarray):
        import weakref

        self.layout, self.slots, self.cap = layout, slots, int(capacity)
        self.model = model = spec.proto._model_for(layout)
        self.pr = pr = prepare(model.net)
        self.key = key = next(_KEYS)
        _NETS[key] = (pr, model.net)
        weakref.finalize(self, _NETS.pop, key, None)
        self.S = flashmoe_state(layout.n_pages)
        self.stats = np.zeros(3, np.int64)
        self.served = 0  # requests served so far
        self.n: int | None = None  # the sequence's length, when a watch knows it
        self.records: list = []  # the training sequences still watched for
        self.heard: list = []  # (page, heard by the policy) of the first PREFIX requests

    def watch(self, n_requests: int | None) -> None:
        """Watch for a training sequence (a stream's run), of ``n_requests`` requests when
        known."""
        self.n = n_requests
        self.records = [rec for rec in self.model.trained_on
                        if n_requests is None or rec.get("n_requests") == n_requests]

    def feed(self, pages, steps, hits: bool, log: bool = False):
        from paging.learned.model import PREFIX

        pr, lay = self.pr, self.layout
        watching = bool(self.records) and self.served < PREFIX
        rec = 2 if log or watching else 1 if hits else 0
        out = flashmoe_kernel(np.array(pages, dtype=np.int64), frozen(steps), self.slots,
                              lay.n_experts, lay.n_layers, self.cap, rec, pr.wf, pr.bf,
                              pr.dims, pr.woff, pr.boff, pr.r_lo, pr.rmap, pr.lo, pr.hi,
                              pr.filled, float(pr.tau), float(pr.margin), self.key, 0,
                              np.zeros(1, np.int64), self.stats, _NO_ROUTE, self.S)[:8]
        if watching:
            take = min(len(pages), PREFIX - self.served)
            heard = np.ones(take, dtype=bool)
            byp = out[6][:out[7]]
            heard[byp[byp < take]] = False
            self.heard += zip(np.asarray(pages[:take]).tolist(), heard.tolist(), strict=True)
        self.served += len(pages)
        if self.records and self.n is not None:
            self._check(self.n)
        return out

    def finish(self) -> None:
        """The sequence ended: its length is the requests served (the watch's last check)."""
        if self.records:
            self._check(self.served)

    def _check(self, n: int) -> None:
        """Once request ``min(PREFIX, n) - 1`` is served: the policy's training-sequence check
        (its error, or the watch ends)."""
        from paging.learned.model import PREFIX, check_prefix

        m = min(PREFIX, n)
        if self.served < m:
            return
        recs = [rec for rec in self.records if rec.get("n_requests") == n]
        self.records = []
        if m and self.heard[m - 1][1]:  # (the policy checks when it hears request m - 1)
            check_prefix(recs, [p for p, seen in self.heard[:m] if seen])

    @property
    def resident(self) -> np.ndarray:
        return self.S[1] >= 0


def execute(trace, spec, slots, capacity: int, record: int, policy=None, stats=None, *,
            route=None, served=None, n_requests=None):
    """Run the FlashMoE kernel (``spec`` from :func:`paging.fast.plan`, whose ``proto`` is the
    policy) on ``trace``: the model is found as :meth:`FlashMoE.reset` finds it (the same
    errors), and the training-sequence check is made on the same prefix. ``stats`` (an int64
    array of 3, optional) receives the evictions, network evaluations and near ties.

    A routed run (:func:`paging.fast.routing.run_routed`) gives ``route`` (the kernel's) and
    ``served``, an array of the trace's length that receives the served pages, or, when the
    groups were routed before the run (``pruning``), the served sequence as ``trace`` and the
    routed trace's length as ``n_requests`` (the run's length the policy is told)."""
    from paging.learned.model import PREFIX, check_prefix

    proto = spec.proto if policy is None else policy
    lay = trace.layout
    model = proto._model_for(lay)
    if policy is not None:
        policy.model = model  # as after a reference run's reset
    net = model.net
    pr = prepare(net)
    n = trace.n_requests if n_requests is None else n_requests
    watch_recs = [rec for rec in model.trained_on if rec.get("n_requests") == n]
    watch = min(PREFIX, n) if watch_recs else 0
    st = np.zeros(3, np.int64) if stats is None else stats
    key = next(_KEYS)
    _NETS[key] = (pr, net)

    def go(watch, seen):
        # a writable copy of the pages (a routed run writes the served ones over them; numba
        # types the write for every run)
        pages = np.array(trace.pages, dtype=np.int64)
        out = flashmoe_kernel(pages, frozen(trace.steps), frozen(slots), lay.n_experts,
                              lay.n_layers, int(capacity), record, pr.wf, pr.bf, pr.dims,
                              pr.woff, pr.boff, pr.r_lo, pr.rmap, pr.lo, pr.hi, pr.filled,
                              float(pr.tau), float(pr.margin), key, watch, seen, st,
                              _NO_ROUTE if route is None else route)
        if served is not None:
            served[:] = pages
        return out

    try:
        seen = np.zeros(max(watch, 1), np.int64)
        out = go(watch, seen)
        if out[8] >= 0:  # the policy has seen request PREFIX - 1: its check
            check_prefix(watch_recs, seen[:out[8]])
            st[:] = 0
            out = go(0, seen)
    finally:
        _NETS.pop(key, None)
    return out[:8]
