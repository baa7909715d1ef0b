"""Pieces shared by the compiled kernels: output buffers and group pinning.

Every kernel replays a trace exactly as :class:`paging.simulate.Simulation` does (same
residency, bypass and collision rules) and returns the same tuple::

    (misses, collisions, per_layer_misses, hit_mask, evictions, n_evictions, bypassed, n_bypassed)

``record`` is 0 (nothing), 1 (the hit mask only, what the latency timeline reads) or 2
(everything). ``hit_mask``, ``evictions`` (rows ``(t, page)``) and ``bypassed`` then have room
for every request (a run evicts at most once per insertion) and are empty otherwise; the caller
trims them to ``n_evictions`` / ``n_bypassed`` rows.

Pinning (groups mode): when a group (a run of equal steps) starts, the kernels stamp its pages
(``pin[p] = step``, or a flag in the Marking kernel), so that they are skipped as victims while
the group is served (:meth:`paging.simulate.Simulation.pin_group`). A rounds-mode trace has
singleton groups whose only page is the one requested, which is never resident when a victim is
chosen, so kernels skip pinning altogether when no two consecutive requests share a step
(:func:`is_grouped`).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.core import cgutils
from numba.extending import intrinsic

#: request outcomes of the phase kernels (:mod:`paging.fast.phases`, the token kernel's
#: phases): what ``MissStats`` reads after the run
HIT, FETCHED, DROPPED, SUBSTITUTED = 0, 1, 2, 3


def frozen(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a`` (no copy; ``a`` itself when it already is read-only).

    numba compiles a kernel once per argument types, and a read-only array is a type apart
    from a writable one: a kernel called with a trace's arrays (read-only,
    :mod:`paging.trace`) and again with a writable piece of the same dtype compiles twice
    (the token kernel about 80-110 s each time on this machine, cold). The callers pass every
    array a kernel only reads through this, so that each kernel has one signature per
    shape of run (plain, with phases, carried state)."""
    a = np.asarray(a)
    if not a.flags.writeable:
        return a
    v = a.view()
    v.setflags(write=False)
    return v


@intrinsic
def borrow(typingctx, a):
    """The array ``a`` without its reference count (its meminfo and parent pointers null),
    for a kernel's state arrays that the caller keeps alive for the whole call.

    numba counts references atomically: every non-inlined call that takes an array, and
    every inlined helper that binds one to an argument, increments and decrements its count
    (a ``lock`` instruction each), and the token kernels, whose helpers take a tuple of 13
    arrays, paid many such counts per request (benchmarks/README.md, "Reference counts"). A
    borrowed view has no count: numba's increments and decrements test the null pointer
    and return. Valid only while the array it views is alive, so it must not outlive the
    kernel call that made it (never returned, stored or boxed)."""
    def codegen(context, builder, sig, args):
        src = context.make_array(a)(context, builder, value=args[0])
        out = context.make_array(a)(context, builder)
        for field in ("data", "shape", "strides", "itemsize", "nitems"):
            setattr(out, field, getattr(src, field))
        out.meminfo = cgutils.get_null_value(out.meminfo.type)
        out.parent = cgutils.get_null_value(out.parent.type)
        return out._getvalue()

    return a(a), codegen


@njit(cache=True, nogil=True)
def hold(a) -> int:
    """A use of ``a`` numba cannot drop. A kernel that reads its own array through a
    :func:`borrow` view calls it after its last read of the view: numba frees an array after
    its last use, and the view does not count as one."""
    return a.size


@njit(cache=True, nogil=True)
def is_grouped(steps) -> bool:
    """True when two consecutive requests share a step (a groups-mode trace with K >= 2)."""
    for i in range(1, steps.size):
        if steps[i] == steps[i - 1]:
            return True
    return False


@njit(cache=True, nogil=True)
def buffers(n, record, carried=0):
    """Hit mask (``record`` >= 1), eviction log and bypass log (``record`` == 2), sized for
    ``n`` requests; empty otherwise. A kernel whose call may start from a carried state (a
    streamed or served run fed piece by piece: :class:`paging.fast.CarriedRun`) can also evict
    the pages that state holds: ``carried`` (its number of pages) more rows of the log."""
    m = n if record >= 1 else 0
    e = n if record >= 2 else 0
    return (np.zeros(m, np.bool_), np.zeros((e + carried if e else 0, 2), np.int64),
            np.zeros(e, np.int64))


@njit(cache=True, nogil=True, inline="always")
def route_scratch(n):
    """The scratch arrays of :func:`route_group` for ``n`` experts: ``(rank, pos, taken, zz)``
    (every kernel that routes allocates them once per run)."""
    return np.empty(n, np.int64), np.empty(n, np.int64), np.zeros(n, np.bool_), np.empty(n)


@njit(cache=True, nogil=True, inline="always")
def group_ranking(src, lo, K, base, n, g, order, rank, taken):
    """Group g's ranking into ``rank``: row g of ``order`` (full logits) when ``order`` has
    rows, else the group's experts ``src[lo:lo+K] - base`` then every other expert by id
    (:func:`route_group`'s, :func:`clock_static`'s); ``taken`` (scratch) is left all False."""
    for e in range(n):
        taken[e] = False
    if order.shape[0] > 0:
        for i in range(n):
            rank[i] = order[g, i]
    else:
        for i in range(K):
            e = src[lo + i] - base
            rank[i] = e
            taken[e] = True
        c = K
        for e in range(n):
            if not taken[e]:
                rank[c] = e
                c += 1
        for e in range(n):
            taken[e] = False


@njit(cache=True, nogil=True)
def route_group(src, lo, K, base, n, g, order, m, j, kout, resident, rank, taken, out, o0,
                cp, zz, pos):
    """Cache-aware routing of one (token, layer) group (:mod:`paging.fast.routing`): the experts
    served for the group ``src[lo:lo+K]`` (pages ``base + expert``), written to
    ``out[o0:o0+c]``; returns c.

    The ranking is row ``g`` of ``order`` (full logits) when ``order`` has rows, else the
    group's experts then every other expert by id. Served: the top ``j``, then the experts of
    rank < ``m`` that are ``resident`` in rank order, then the rest of the ranking, cut at
    ``kout`` (Alg. 1; pruning is ``m`` = 0 and ``kout`` = ``j``).

    ``cp`` = ``(logits, token, known, bonus)``: when ``bonus`` has entries, the hook is
    ``cache-prior`` (Eq. 9): z' = z + ``bonus[g]`` (λ·Δavg) for the resident experts and the top
    ``j``, the top ``kout`` of z' served, ties by rank. z is the row ``logits[token[g], layer]``
    when ``logits`` has rows, else ``known[t]`` (log of the score) for the group's requests and
    their minimum for every other expert (:meth:`paging.routing.CachePrior.logits_of`).

    ``rank``, ``pos`` (int64) and ``taken``, ``zz`` are scratch arrays of n entries. ``src`` is
    read before ``out`` is written, so they may be one array (the list kernel routes its served
    sequence in place)."""
    group_ranking(src, lo, K, base, n, g, order, rank, taken)
    logits, token, known, bonus = cp
    if bonus.size > 0:
        for i in range(n):
            pos[rank[i]] = i
        if logits.shape[0] > 0:
            z = base // n
            for e in range(n):
                zz[e] = logits[token[g], z, e]
        else:
            mn = known[lo]
            for i in range(lo + 1, lo + K):
                if known[i] < mn:
                    mn = known[i]
            for e in range(n):
                zz[e] = mn
            for i in range(K):
                zz[src[lo + i] - base] = known[lo + i]
        b = bonus[g]
        for e in range(n):
            if resident[base + e] or pos[e] < j:
                zz[e] = zz[e] + b
        for c in range(kout):
            best = -1
            for e in range(n):
                if not taken[e] and (best < 0 or zz[e] > zz[best] or (
                        zz[e] == zz[best] and pos[e] < pos[best])):
                    best = e
            out[o0 + c] = base + best
            taken[best] = True
        return kout
    c = 0
    for i in range(min(j, n)):
        if c >= kout:
            break
        e = rank[i]
        out[o0 + c] = base + e
        taken[e] = True
        c += 1
    for i in range(min(m, n)):
        if c >= kout:
            break
        e = rank[i]
        if not taken[e] and resident[base + e]:
            out[o0 + c] = base + e
            taken[e] = True
            c += 1
    for i in range(n):
        if c >= kout:
            break
        e = rank[i]
        if not taken[e]:
            out[o0 + c] = base + e
            taken[e] = True
            c += 1
    return c


#: the rules a routed run's miss handler decides by (:func:`clock_group`): the handler's
#: decision reads the served request's routed rank and router weight, known once its group is
#: routed (``fetch-lowest-bit`` and ``substitute`` need no rule: their level is one constant,
#: their choice is made in the kernel)
RULE_NONE, RULE_DROP_RANK, RULE_DROP_SCORE, RULE_PRIORITY = 0, 1, 2, 3


def no_rule():
    """The ``rule`` of a run whose handler arrays are made before it (no routing in the
    kernel): ``(code, rank cut, score cut, cuts, scores, probs, served ranks, served scores)``,
    every array empty."""
    return (RULE_NONE, 0, 0.0, np.zeros(0), np.zeros(0), np.zeros((0, 0)),
            np.zeros(0, np.int64), np.zeros(0))


@njit(cache=True, nogil=True)
def clock_group(rank, pos, n, K, has_order, base, g, lo, served, o0, c, rule, act, lvl):
    """The routed rank and router weight of the ``c`` requests served for group g
    (``served[o0:o0+c]``, pages ``base + expert``; the trace's group starts at ``lo`` and
    has K requests), as :meth:`paging.routing.RoutedRun.choose` writes them, then the miss
    handler's decision for each (``act``, ``lvl``), as :func:`paging.fast.phases.miss_actions`
    makes it from a request's rank and score.

    ``rank`` is the group's ranking (:func:`route_group`'s scratch after it routed the group:
    row g of the order with full logits, else the group's experts then the rest by id);
    ``pos`` is scratch. The rank is the expert's place in that ranking (``order.index(e)``),
    or K for an expert outside the group when there are no logits. ``rule`` (:func:`no_rule`)
    = ``(code, rcut, scut, cuts, tscore, prob, srank, sscore)``: the served ranks go to
    ``srank``; when ``sscore`` has entries the weights go there, ``prob[g, e]`` (the softmax
    of the group's logits) when ``prob`` has rows, else the trace's gate score of the group's
    request of that expert (``tscore[lo + rank]``), 0 for an expert outside the group."""
    code, rcut, scut, cuts, tscore, prob, srank, sscore = rule
    for i in range(n):
        pos[rank[i]] = i
    for i in range(o0, o0 + c):
        e = served[i] - base
        r = pos[e]
        if not has_order and r > K:
            r = K
        srank[i] = r
        if sscore.size > 0:
            w = 0.0
            if prob.shape[0] > 0:
                w = prob[g, e]
            elif r < K:
                w = tscore[lo + r]
            sscore[i] = w
    decide(code, rcut, scut, cuts, srank, sscore, act, lvl, o0, o0 + c)


@njit(cache=True, nogil=True)
def decide(code, rcut, scut, cuts, rank, score, act, lvl, lo, hi):
    """The miss handler's decision for requests ``lo..hi-1`` from their ranks and gate
    scores, by rule ``code`` (:func:`paging.fast.phases.handler_rule`): ``drop:rank=R``
    (``act`` 1 when the rank is >= R), ``drop:score=S`` (when the score is < S) and
    ``fetch-priority`` (``lvl``: the number of cuts above the score), as
    :class:`paging.miss.Drop` and :class:`paging.miss.FetchPriority` decide one request. The
    one rule of every compiled path: the plan made before a run
    (:func:`paging.fast.phases.miss_actions`), a serving step's, a routed group's
    (:func:`clock_group`)."""
    for i in range(lo, hi):
        if code == RULE_DROP_RANK:
            act[i] = 1 if rank[i] >= rcut else 0
        elif code == RULE_DROP_SCORE:
            act[i] = 1 if score[i] < scut else 0
        elif code == RULE_PRIORITY:
            level = 0
            for x in cuts:
                if score[i] < x:
                    level += 1
            lvl[i] = level


@njit(cache=True, nogil=True)
def clock_static(pages, bounds, order, served, served_lo, n, L, steps, rule, act, lvl):
    """:func:`clock_group` over every group of a served sequence chosen before the run
    (``pruning``: group g served ``served[served_lo[g]:served_lo[g + 1]]``), each group's
    ranking rebuilt as :func:`route_group` builds it."""
    rank = np.empty(n, np.int64)
    pos = np.empty(n, np.int64)
    taken = np.zeros(n, np.bool_)
    has_order = order.shape[0] > 0
    for g in range(bounds.size - 1):
        lo = bounds[g]
        K = bounds[g + 1] - lo
        base = (steps[lo] % L) * n
        group_ranking(pages, lo, K, base, n, g, order, rank, taken)
        clock_group(rank, pos, n, K, has_order, base, g, lo, served, served_lo[g],
                    served_lo[g + 1] - served_lo[g], rule, act, lvl)


@njit(cache=True, nogil=True, inline="always")
def unlink(nxt, prv, head, tail, q, v):
    """Take page v out of the intrusive doubly linked list q (``nxt``/``prv`` indexed by page;
    ``head[q]`` the end ``prv`` runs to, ``tail[q]`` the other). The list, LFU and phase
    kernels' main loops write these four branches inline: there a call measured 25–40% slower
    (numba's inlining of a helper into those large loops)."""
    a = prv[v]
    b = nxt[v]
    if a >= 0:
        nxt[a] = b
    else:
        head[q] = b
    if b >= 0:
        prv[b] = a
    else:
        tail[q] = a


@njit(cache=True, nogil=True, inline="always")
def append(nxt, prv, head, tail, q, v):
    """Put page v at the ``tail`` end of list q."""
    e = tail[q]
    prv[v] = e
    nxt[v] = -1
    if e >= 0:
        nxt[e] = v
    else:
        head[q] = v
    tail[q] = v


# -- SpecMD's phases in the token kernel (paging.fast.tokens). The phase kernel
# (paging.fast.phases) writes the same steps inline: with these helpers inlined into its large
# loop, benchmarks/paired.py measured 12 of its cells (lru, lfu, arc, blind-oracle x transition,
# fetch-priority, substitute) at medians of 0.81-1.00x (2026-11-27), as unlink's note says ---

@njit(cache=True, nogil=True, inline="always")
def pin_pages(pin, pages, lo, hi, stamp):
    """Stamp ``pages[lo:hi]`` as pinned (``pin[p] == stamp`` while they are)."""
    for j in range(lo, hi):
        pin[pages[j]] = stamp


@njit(cache=True, nogil=True, inline="always")
def pin_batch(pin, pages, g_start, g_end, pf_pages, b_lo, b_hi, stamp):
    """Pin the group just served and its prefetch batch (``Simulation.prefetch_group``)."""
    pin_pages(pin, pages, g_start, g_end, stamp)
    pin_pages(pin, pf_pages, b_lo, b_hi, stamp)


@njit(cache=True, nogil=True, inline="always")
def most_requested(resident, pin, stamp, requested, z, n_experts):
    """``substitute``'s page for a miss of layer z: its resident, unpinned expert requested
    most so far (ties to the lower id), or -1 when there is none."""
    hp = -1
    best_n = -1
    for y in range(z * n_experts, z * n_experts + n_experts):
        if resident[y] and pin[y] != stamp and requested[y] > best_n:
            hp = y
            best_n = requested[y]
    return hp


@njit(cache=True, nogil=True, inline="always")
def pinned_room(pages, g_start, g_end, pf_pages, b_lo, n_batch, resident, seen, hstamp, dist,
                layer_of, z, room):
    """What the pinned resident pages hold of the partition of layer z (every layer when
    not ``dist``): the group ``pages[g_start:g_end]`` and, for a prefetch, the first
    ``n_batch`` pages of its batch from ``pf_pages[b_lo]``, each counted once (``seen`` =
    ``hstamp``, a fresh stamp per call)."""
    held = 0
    for j in range(g_start, g_end + n_batch):
        r = pages[j] if j < g_end else pf_pages[b_lo + j - g_end]
        if resident[r] and seen[r] != hstamp and (not dist or layer_of[r] == z):
            seen[r] = hstamp
            held += room[r]
    return held


class SoFar:
    """The requests of a run fed piece by piece, kept whole (a carried kernel that reads
    request indices from the run's start, or redoes the run: :class:`paging.fast.tokens.
    Carried`, :class:`paging.fast.predictive.Carried`): ``rows`` int64 rows (pages, steps,
    ...) grown by doubling; :meth:`append` adds a piece's columns and returns where it
    starts, :meth:`row` is row r of the run so far (a contiguous view). ``dtype``: the rows'
    type (int64, or int8 for flags)."""

    def __init__(self, rows: int, dtype=np.int64):
        self.a = np.zeros((rows, 1024), dtype)
        self.n = 0

    def append(self, *cols) -> int:
        lo = self.n
        hi = lo + len(cols[0])
        if hi > self.a.shape[1]:
            grown = np.zeros((self.a.shape[0], max(hi, 2 * self.a.shape[1])), self.a.dtype)
            grown[:, :lo] = self.a[:, :lo]
            self.a = grown
        for r, col in enumerate(cols):
            self.a[r, lo:hi] = col
        self.n = hi
        return lo

    def row(self, r: int) -> np.ndarray:
        return self.a[r, :self.n]


def piece_plan(batches, across, n_groups: int, close=None) -> tuple:
    """A piece's prefetch plan as the carried runs with phases take it
    (:meth:`paging.fast.carried_phases.CarriedPhases.feed`, the token policies'
    :meth:`paging.fast.tokens.CarriedPhases.feed`; ``batches``: a list per group, or
    ``(sizes, pages)``; ``across``: the batch after the piece before's last group, or None;
    ``close``: the batch after its own last group when the piece closes, or None):
    ``(across, sizes, pages)``, int64 arrays, ``sizes`` the batches after its first
    ``n_groups - 1`` groups (missing ones empty, extra ones dropped) and, when it closes, the
    batch after its last, ``pages`` theirs one after another."""
    a, sizes, pages = _open_plan(batches, across, n_groups)
    if close is not None:
        sizes = np.concatenate((sizes, (len(close),)))
        pages = np.concatenate((pages, np.asarray(close, np.int64)))
    return a, sizes, pages


def _open_plan(batches, across, n_groups: int) -> tuple:
    """:func:`piece_plan` without a closing batch."""
    if across is None and not len(batches):  # (a piece without batches: every call of a
        none = np.zeros(0, np.int64)  # routed serving step's layers)
        return none, np.zeros(max(n_groups - 1, 0), np.int64), none
    if isinstance(batches, tuple) and len(batches) == 2:  # (sizes, pages)
        b_sizes, b_pages = batches
    else:
        b_sizes = [len(b) for b in batches]
        b_pages = [p for b in batches for p in b]
    b_sizes = np.asarray(b_sizes, np.int64)[:max(n_groups - 1, 0)]
    if b_sizes.size < n_groups - 1:  # (the missing ones empty)
        b_sizes = np.concatenate((b_sizes, np.zeros(n_groups - 1 - b_sizes.size, np.int64)))
    a = np.asarray(across if across is not None else [], np.int64)
    return a, b_sizes, np.asarray(b_pages, np.int64)[:int(b_sizes.sum())]
