"""Compiled SpecMD phases: the list policies, LFU, LHU, Belady, the credit policies, Marking,
ARC, LeCaR, Score-Based and the prediction policies (BlindOracle, PredictiveMarker, LMarker,
the robust combiner) with prefetching and miss handling (and the token policies, in their own
kernel: the end of this docstring).

:func:`run_phases` replays a trace exactly as the reference loop
(:func:`paging.simulate._run` over :class:`paging.simulate.Simulation`) does when it is given a
prefetcher (:class:`paging.predict.prefetch.Prefetcher`) or a miss handler
(:mod:`paging.miss`), for the list policies of :mod:`paging.fast.lists`, LFU, LHU, Belady, the
credit policies of :mod:`paging.fast.credit`, Marking, ARC, LeCaR, Score-Based and the
prediction policies (and their ``-dist`` variants): same misses, per-layer misses, collision
misses, bypasses, hit mask, eviction log (rows and order), and the observers' counters and logs
(:class:`paging.observers.PrefetchStats`, :class:`paging.observers.MissStats`), field by field.

What is planned before the run and what the kernel decides:

* prefetching: no built-in predictor reads the cache, so :meth:`Prefetcher.plan` makes the
  whole run's *plan* (every batch's pages, in insertion order) before the loop, for both
  engines; its group bounds, the targets' true experts, the transition, frequency and
  previous-token scores and the top-K and percentile selections are the compiled loops at the
  end of this module (equal to the numpy definitions, tested); the oracle's draws stay numpy,
  batch by batch. The kernel inserts batch g after group g, with the group just served and
  the batch pinned (:meth:`Simulation.prefetch_group`); resident pages are skipped, a page
  that cannot be given room is a skipped prefetch. A prefetch is a touch at the last request
  served: the page goes to the head of its list. That is the reference's order: its
  ``last``/``inserted`` move to that request's index t, and among pages with the same t the
  reference's ``max`` takes the one first in the partition's dict (insertion order): the page
  served at t (inserted at or before t), then the batch in insertion order, which is the order
  of the list's tail.
* miss handling: ``fetch-lowest-bit``, ``fetch-priority`` and ``drop`` decide from the
  request alone (its rank or gate score): their action and precision level per request are
  arrays made before the run. ``substitute`` reads the cache (the most requested resident,
  unpinned expert of the layer) and is decided inside the kernel, with the request counts.
  The handlers' counters (drops, dropped mass summed in request order, replaced ranks, fetch
  levels) are computed from the kernel's per-request outcomes after the run.

LLRU and LLRU-latest (and their ``-dist`` variants) with prefetching: a prefetched page's last
step is the step of the group served before it (another layer), so inside a layer LLRU's key
(R, D) is no longer ordered by recency and the per-layer-tail victim rule of the list kernel
does not hold. Their victims are then found by a scan of the partition's lists: the largest
(R, D), then the oldest request index, then the page touched first (the reference's dict order
among equal keys, as above); a list runs from its oldest touch, where R is largest, so only its
oldest R bucket is visited. Without prefetching they take the per-layer tails.

LFU (kind ``LFU_SCAN``): :class:`paging.policies.LFU` evicts the fewest requests, then the
oldest last touch (``PriorityPolicy``: a hit, an insertion and a substitute's hit count a
request and move the last touch to t; a prefetch moves the last touch to t, the request served
last, and leaves the count), then the page first in the partition's dict. Its list is kept in
insertion order (no move on a hit), which is that dict's order, and an eviction scans it from
the oldest insertion: O(k) per eviction, where the plain heap kernel is O(log k), because a
prefetch gives several pages one last touch and the dict order then decides.

The credit policies (kinds ``CREDIT + kind``: GreedyDual, Landlord, GDSF, Layered Landlord,
:mod:`paging.policies.weighted`) likewise: a hit, an insertion, a prefetch (an insertion,
``Policy.on_prefetch``) and a substitute's hit set ``H(p) = L + c(p)`` with the partition's L
(GDSF counting the request first, or restarting at 1 on an insertion); an eviction scans the
insertion-ordered list for the smallest (H, then Layered Landlord's largest R and D, then the
oldest last request), the first in the dict among equals, and L becomes the victim's H. The
rates read the run's costs and sizes, whatever the precision level fetched, as the reference's.

Marking (kind ``MARK_SCAN``, :class:`paging.policies.Marking`): a hit, an insertion (a
prefetch too) and a substitute's hit mark the page, an eviction unmarks it; a victim is the
unmarked unpinned page of the partition at index ⌊u·m⌋ by id
(:func:`paging.policies.base.pick_uniform`), u the next of the run's draws
(:func:`paging.fast.marking_draws`, drawn for at most one eviction per insertion), after
erasing the partition's marks when none is unmarked: O(partition) per eviction.

LHU (kind ``LHU_SCAN``; its plain kernel is LFU's) is LFU counting only the uses at the run's
precision: a hit or a substitute's hit on a page resident at level 0, an insertion fetched at
level 0. Belady (kind ``BELADY_SCAN``) evicts the furthest next request, ties to the larger id:
a page's next request is ``next_use[t]`` when it is requested at t, and its own first request
after t when it is touched at another page's request (a prefetch after t, a substitute serving
t; :class:`paging.offline.belady.Belady`), found in the page's sorted requests.

Score-Based (kind ``SCORE_SCAN``) is LFU with each page's summed gate scores for its count: a
hit, an insertion and a substitute's hit add the score of the request served (a substitute the
score of the request it serves), a prefetch adds nothing.

BlindOracle (kind ``BLIND_SCAN``, with the ``oracle`` or ``frequency`` predictor,
:mod:`paging.policies.predictive`) evicts the largest prediction, then the least recently
requested, then the first in the partition's dict. The policy hears a request once
(``PredictivePolicy._see``, per partition for ``-dist``): a hit, a substitute's hit (the
substitute is predicted: the ``oracle``'s next request of that page after t with request t's
error, :meth:`OraclePredictor.predict`) and an insertion ask the predictor and set the page's
latest request to t; a prefetch sets prediction t + 1 and latest request t
(``on_prefetch``). One reading of the reference is reproduced as it stands: an eviction for a
prefetch after a request the policy did not hear (dropped, bypassed, or of another layer's
partition) calls ``victim(t, x)``, which asks the predictor about the prefetched page x, so
the ``frequency`` predictor counts x once more (its prediction is then replaced by
``on_prefetch``'s).

PredictiveMarker and LMarker (kinds ``PMARK_SCAN``, ``LMARK_SCAN``) add the marking phases and
chains of ``_MarkingBase``: a hit, a substitute's hit and an insertion mark the page, a
prefetch does not; an eviction unmarks the victim and records the current chain. The first
victim call of a request (and the first after a new phase) updates the chain with the page it
is called with, so a prefetch's eviction after a request that evicted nothing (a hit, a miss
with room, a drop) makes the prefetched page the one that starts a chain, or continues the
chain of the eviction that removed it in this phase, as the reference does. The victim is the
furthest unmarked candidate (BlindOracle's order) or, when the chain is longer than H_k
(PredictiveMarker) or the page was stale (LMarker), the unmarked candidate at ⌊u·m⌋ by id, u
the next of the run's draws; with no unmarked candidate a new phase begins (marks, evictions
and chains erased).

The robust combiner (kind ``ROBUST_SCAN``): every request the policy hears (the same places)
is also a request of its virtual BlindOracle and LRU caches (``RobustBlindOracle._see``: their
miss counts, the leader switching when its count exceeds twice the other's), and so is the
prefetched page x of a prefetch's eviction after a request it did not hear. The virtual
BlindOracle keeps its pages in insertion order and evicts the largest (prediction, −latest
request), the first inserted among equals (a prefetch batch gives its pages equal ones); the
virtual caches read the pages' current predictions, which a prefetch sets. The real victim is
the least recently requested candidate outside the leader's virtual cache, else the least
recently requested candidate, the first in the partition's dict among equals. A shared
combiner ends with the run's ``leader``, ``switches`` and ``cost``, as after a reference run.

ARC and LeCaR (kinds ``ARC_SCAN``, ``LECAR_SCAN``, :class:`paging.policies.adaptive.ARC`,
``LeCaR``) keep their own lists beside the partition's, one family per partition as in
:mod:`paging.fast.adaptive`: ARC's T1, T2, B1, B2 and target p; LeCaR's histories H_LRU and
H_LFU with eviction times, its weights, and each page's in-cache frequency and the time it was
reached (the partition's list, moved on a hit, is LeCaR's recency order). A hit and a
substitute's hit are ARC's case I (to T2's MRU end) and LeCaR's +1. An *arrival*, a missed
request or a prefetched page (a prefetch is an insertion, ``on_prefetch`` = ``on_insert``), is
processed once per (request index, page), by the first victim call or the insertion: ARC's
cases II and III (p moves, the page leaves its ghost list and enters T2), LeCaR's regret (the
page leaves the history, the weights move). ARC's victim is case IV's trimming then REPLACE;
LeCaR's is the least recently used or the least frequently used candidate (the earliest to
reach its count, then the first in recency order), one of the run's draws deciding when they
differ (:func:`paging.fast.marking_draws`, shared across layers for ``lecar-dist`` as the
reference's generator). An eviction by LeCaR's O(k) scan, where its plain kernel is O(1).

Not compiled (:func:`unsupported` says why; ``engine="auto"`` takes the reference loop,
``engine="fast"`` refuses), each for a written reason:

* FlashMoE (:mod:`paging.fast.learned`): its kernel is a loop of its own (the network's
  cell bounds, the reference's forward pass at a near tie), and its reference also checks the
  first pages it is touched with against the sequences its model was trained on, which a
  prefetch or a substitute changes; the phases would be a third copy of this loop.
* the combiner over the token policies with prefetching: refused before any run (its
  virtual caches follow requests only: ``Policy.prefetches``, read by
  :func:`paging.simulate.simulate` and :class:`paging.run.RunSpec`).
* subclasses of the prefetcher and of the handlers.

The token policies (token-hazard, token-decay, token-match, the combiner over them, and
their ``-dist`` forms) run the same phases in their own kernel,
:func:`paging.fast.tokens.token_kernel`, whose per-token state this kernel does not hold:
:func:`run_phases` hands their runs to it (the same plan, handler arrays and outputs).

Routing (:mod:`paging.fast.routing`): a routed run of one of this kernel's policies runs here,
each group routed as it starts (the ``route`` argument of :func:`phase_kernel`); without
phases the list family's routed runs take the list kernel instead. With a prefetcher or a
miss handler (SpecMD's Algorithm 1), the handler reads each served request's routed rank and
router weight, known only once its group is routed: the kernel computes them as it routes the
group and fills ``act`` and ``lvl`` for the group's requests from them
(:func:`paging.fast.common.clock_group`, the route's ``rule``).

User predictors and strategies need nothing special: the plan is all the kernel reads.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from paging.fast.adaptive import (
    _B1,
    _B2,
    _NL,
    _T1,
    _T2,
    _arc_ghost,
    _arc_victim,
    _lecar_regret,
    _push,
    _unlink,
)
from paging.fast.common import (
    DROPPED,
    FETCHED,
    SUBSTITUTED,
    append,
    borrow,
    clock_group,
    frozen,
    hold,
    is_grouped,
    no_rule,
    route_group,
    route_scratch,
    unlink,
)
from paging.fast.credit import GDSF, GREEDY_DUAL
from paging.fast.credit import LAYERED as LAYERED_LANDLORD
from paging.fast.lists import (
    FIFO,
    FLD,
    FLD_CYCLIC,
    FWF,
    LAYERED,
    LEAST_STALE,
    LEAST_STALE_UP,
    LLRU,
    LLRU_LATEST,
    LRU,
    no_prior,
)
from paging.fast.predictive import (
    BLIND,
    FREQUENCY,
    LMARKER,
    ORACLE,
    PMARKER,
    ROBUST,
    SCORE,
    marker_pages,
    predictions,
    predictor_kind,
)

__all__ = ["phase_kernel", "unsupported", "run_phases", "no_route"]

#: the phase kernel's kind for LFU (the heap family's, :mod:`paging.fast.heaps`): its lists
#: keep insertion order and an eviction scans the partition (module docstring)
LFU_SCAN = 100
#: LHU (:class:`paging.policies.scored.LHU`, whose plain kernel is LFU's)
LHU_SCAN = 101
#: Belady (the heap family's other kernel)
BELADY_SCAN = 102
#: Score-Based (the prediction family's SCORE kernel)
SCORE_SCAN = 103
#: BlindOracle (the prediction family's BLIND kernel) with the ``oracle`` or ``frequency``
#: predictor
BLIND_SCAN = 104
#: PredictiveMarker and LMarker (the prediction family's PMARKER and LMARKER kernels)
PMARK_SCAN = 105
LMARK_SCAN = 106
#: the robust combiner of BlindOracle and LRU (the prediction family's ROBUST kernel)
ROBUST_SCAN = 107
#: the credit kinds (:mod:`paging.fast.credit`) are CREDIT + their kind there
CREDIT = 200
#: Marking (:mod:`paging.fast.marking`)
MARK_SCAN = 300
#: ARC and LeCaR (:mod:`paging.fast.adaptive`): their own lists beside the partition's
ARC_SCAN = 400
LECAR_SCAN = 401



@njit(cache=True, nogil=True, inline="always")
def _victim(kind, q, s, now_pass, L, tail, prv, pin, stamp, last_step, last_pass):
    """The next victim of partition ``q`` (``q`` is 0 for a shared cache) for every list kind
    but FWF, with the pages stamped ``stamp`` pinned; -1 when there is none. The rules of
    :func:`paging.fast.lists.list_kernel`."""
    victim = -1
    if kind == LRU or kind == FIFO:
        victim = tail[q]
        while victim >= 0 and pin[victim] == stamp:
            victim = prv[victim]
    elif kind == LLRU or kind == LLRU_LATEST:
        c = s - now_pass * L
        best = -1
        for zz in range(L):
            v = tail[zz]
            while v >= 0 and pin[v] == stamp:
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
        c = s - now_pass * L
        for dd in range(L - 1, -1, -1):
            for side in range(2):
                zz = c - dd if side == 0 else c + dd
                if zz < 0 or zz >= L or (side == 1 and dd == 0):
                    continue
                victim = tail[zz]
                while victim >= 0 and pin[victim] == stamp:
                    victim = prv[victim]
                if victim >= 0:
                    break
            if victim >= 0:
                break
    elif kind == FLD_CYCLIC:
        c = s - now_pass * L
        for dd in range(L - 1, -1, -1):
            zz = c + dd
            if zz >= L:
                zz -= L
            victim = tail[zz]
            while victim >= 0 and pin[victim] == stamp:
                victim = prv[victim]
            if victim >= 0:
                break
    elif kind == LEAST_STALE or kind == LEAST_STALE_UP:
        c = s - now_pass * L
        if kind == LEAST_STALE_UP:
            c += 1
        first_left = -1
        stale_right = -1
        first_right = -1
        for zz in range(L):
            v = tail[zz]
            while v >= 0 and pin[v] == stamp:
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
    else:  # LEAST_STALE_LAYER
        first = -1
        for zz in range(L):
            v = tail[zz]
            while v >= 0 and pin[v] == stamp:
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
    return victim


@njit(cache=True, nogil=True, inline="always")
def _next_after(occ_pos, occ_start, x, t, n):
    """The first request of page x after request t (n: never)."""
    lo = occ_start[x]
    hi = occ_start[x + 1]
    i = lo + np.searchsorted(occ_pos[lo:hi], t, side="right")
    return occ_pos[i] if i < hi else n


@njit(cache=True, nogil=True, inline="always")
def _credit_touch(H, infl, freq, last_t, last_step, wcost, wsize, ck, p, q, t, s):
    """``GreedyDual._touch`` of page p at request t (step s) in partition q: the last request,
    and the credit ``H = L + c(p)`` (GreedyDual c = w; Landlord and Layered Landlord w/s;
    GDSF f·w/s, its count f already updated)."""
    last_t[p] = t
    last_step[p] = s
    if ck == GREEDY_DUAL:
        c = wcost[p]
    elif ck == GDSF:
        c = freq[p] * wcost[p] / float(wsize[p])
    else:
        c = wcost[p] / float(wsize[p])
    H[p] = infl[q] + c


@njit(cache=True, nogil=True, inline="always")
def _predict(pkind, preds, row, next_use, occ_pos, occ_start, fcount, pages, x, t, n):
    """The prediction a predictor gives when asked about page x at request t
    (:meth:`paging.predict.Predictor.predict`): ``frequency`` counts the ask and predicts
    t + (t + 1)/c; ``oracle`` reads its prediction of request t, or, for another page than the
    one requested at t, x's own next request after t with request t's error."""
    if pkind == FREQUENCY:
        c = fcount[x] + 1
        fcount[x] = c
        return t + (t + 1) / c
    if x == pages[t]:
        return preds[row, t]
    return float(_next_after(occ_pos, occ_start, x, t, n)) + (preds[row, t] - float(next_use[t]))


@njit(cache=True, nogil=True)
def _robust_hear(y, q, vc, in_bo, bnx, bpv, bhd, btl, bcnt, in_lru, lnx, lpv, lhd, ltl, lcnt,
                 bpred, last_t, rob):
    """``RobustBlindOracle._see`` after the prediction: page y is a request of the virtual
    BlindOracle (its pages in insertion order; a miss there evicts the largest prediction, then
    the least recently requested, then the first inserted) and of the virtual LRU, both of
    ``vc`` pages; then the leader switches when its miss count exceeds twice the other's.
    ``rob[q]`` = (leader, switches, BlindOracle's misses, LRU's misses, ``vc``)."""
    if not in_bo[y]:
        rob[q, 2] += 1
        if bcnt[q] >= vc:
            best = -1
            bk = 0.0
            bl = 0
            v = bhd[q]
            while v >= 0:
                if best < 0 or bpred[v] > bk or (bpred[v] == bk and last_t[v] < bl):
                    best = v
                    bk = bpred[v]
                    bl = last_t[v]
                v = bnx[v]
            unlink(bnx, bpv, bhd, btl, q, best)
            in_bo[best] = False
            bcnt[q] -= 1
        append(bnx, bpv, bhd, btl, q, y)
        in_bo[y] = True
        bcnt[q] += 1
    if in_lru[y]:
        if ltl[q] != y:
            unlink(lnx, lpv, lhd, ltl, q, y)
            append(lnx, lpv, lhd, ltl, q, y)
    else:
        rob[q, 3] += 1
        if lcnt[q] >= vc:
            h = lhd[q]
            unlink(lnx, lpv, lhd, ltl, q, h)
            in_lru[h] = False
            lcnt[q] -= 1
        append(lnx, lpv, lhd, ltl, q, y)
        in_lru[y] = True
        lcnt[q] += 1
    lead = rob[q, 0]
    if rob[q, 2 + lead] > 2 * rob[q, 3 - lead]:
        rob[q, 0] = 1 - lead
        rob[q, 1] += 1


@njit(cache=True, nogil=True, inline="always")
def _arrive(arc, ak, als, target, akey, htime, w_lru, w_lfu, adp, q, t, x, c):
    """The arrival of page x at request t (a miss, or a prefetch after t) in partition q, once
    per (t, x) (``akey[:, q]``): ARC's cases II and III (``akey[2, q]`` says which ghost list
    x was in), or LeCaR's regret (:mod:`paging.fast.adaptive`)."""
    if akey[0, q] == t and akey[1, q] == x:
        return
    akey[0, q] = t
    akey[1, q] = x
    if arc:
        akey[2, q] = _arc_ghost(ak, als, target, q, x, ak[2, x], c)
    else:
        _lecar_regret(ak, als, htime, w_lru, w_lfu, q, t, x, ak[2, x], adp[q, 0], adp[q, 1])


@njit(cache=True, nogil=True)
def phase_kernel(pages, steps, slots, level_slots, n_experts, n_layers, caps, dist, kind,
                 record, pf_start, pf_pages, pf_size, act, lvl, substitute, scan, wcost, wsize,
                 draws, next_use, occ_pos, occ_start, gscore, pkind, preds, pred_row, hks, rob,
                 adp, route):
    """Replay ``pages`` under list policy ``kind``, or one of the scanned kinds (``LFU_SCAN``,
    ``LHU_SCAN``, ``BELADY_SCAN``, ``SCORE_SCAN``, ``CREDIT + kind``, ``MARK_SCAN``,
    ``ARC_SCAN``, ``LECAR_SCAN``: module docstring), with SpecMD's phases.

    ``slots[p]``: the room page p takes at the run's precision (1, or its size for a byte
    budget); ``level_slots[l, p]``: its room at precision level l (row 0 unused). Prefetch
    plan (empty ``pf_start``: no prefetcher): batch g, ``pf_pages[pf_start[g]:pf_start[g+1]]``,
    follows group g; ``pf_size[p]`` is what a prefetch of p adds to the prefetched bytes. Miss
    handling: ``act[t]`` 1 drops a missing request t, ``lvl[t]`` its fetch level (both empty:
    fetch at level 0); ``substitute`` serves a miss with the most requested resident unpinned
    expert of its layer (ties to the lower id) when there is one.

    ``wcost``, ``wsize``: the pages' fetch costs and sizes the credit policies' rates read (the
    run's, whatever the level fetched); ``draws``: Marking's uniform draws, one per eviction
    in order (prefetch evictions included); ``next_use``, and the requests of each page x,
    ``occ_pos[occ_start[x]:occ_start[x + 1]]`` in order: Belady's next uses; ``gscore``: the
    requests' gate scores (Score-Based); ``pkind``, ``preds``, ``pred_row``: BlindOracle's
    predictor (:func:`_predict`; ``preds[pred_row[q]]`` the ``oracle``'s row of partition q);
    ``hks[q]``: PredictiveMarker's H_k of partition q; ``rob[q]``: the robust combiner's
    (leader, switches, BlindOracle's misses, LRU's misses), zeros on entry; ``adp[q]``: LeCaR's
    learning rate, discount and history size in partition q (:func:`adaptive.lecar_params`).

    ``route`` (:func:`no_route`, or :func:`paging.fast.routing.run_routed`'s) is ``(order, m,
    j, cp, prob, rule)``: when ``m`` has entries, each group is first routed by
    :func:`paging.fast.common.route_group` against the cache as it stands (row g of ``order``,
    ``m[g]``, ``j``, ``cp``: one served expert per slot), its served pages written over
    ``pages`` in place, then served and pinned; when ``prob`` has rows, the served request's
    gate score, ``prob[g, expert]``, is written over ``gscore`` (Score-Based reads it); when
    ``rule`` (:func:`paging.fast.common.no_rule`) has served-rank room, the served requests'
    routed ranks and router weights are written there and the handler's ``act`` and ``lvl``
    for them decided from them (:func:`paging.fast.common.clock_group`).

    Returns ``(misses, collisions, page_miss, hit_mask, evictions, n_evictions, bypassed,
    n_bypassed, outcome, subst, pf_counts, pf_log, n_pf_log, pf_ev, n_pf_ev)``: ``outcome[t]``
    (HIT, FETCHED, DROPPED, SUBSTITUTED; filled when ``record`` >= 1 or a miss handler is
    given), ``subst[t]`` the substitute of request t; ``pf_counts`` = (prefetches, useful,
    wasted, skipped, bytes); the prefetch log and the prefetch-eviction log, rows
    ``(t + 1, page)``, filled when ``record`` >= 1.
    """
    n = pages.size
    L = n_layers
    P = n_experts * n_layers
    layered = False
    for z in LAYERED:
        if kind == z:
            layered = True
    per_layer_lists = dist or layered
    nl = L if per_layer_lists else 1
    nxt = np.full(P, -1, np.int64)
    prv = np.full(P, -1, np.int64)
    head = np.full(nl, -1, np.int64)
    tail = np.full(nl, -1, np.int64)
    resident = np.zeros(P, np.bool_)
    room = np.zeros(P, np.int64)
    used = np.zeros(caps.size, np.int64)
    pin = np.full(P, -1, np.int64)
    seen = np.full(P, -1, np.int64)
    evicted_pass = np.full(P, -1, np.int64)
    last_step = np.zeros(P, np.int64)
    last_pass = np.zeros(P, np.int64)
    last_t = np.zeros(P, np.int64)  # request index of the last touch (layered kinds)
    seq = np.zeros(P, np.int64)  # order of the touches (layered kinds)
    n_touch = 0
    page_miss = np.zeros(P, np.int64)
    requested = np.zeros(P, np.int64)
    pending = np.zeros(P, np.bool_)
    layer_of = np.arange(P) // n_experts
    smax = 1  # the largest room a page can take: bounds what pinned pages hold
    for y in range(P):
        smax = max(smax, slots[y])
        for lv in range(1, level_slots.shape[0]):
            smax = max(smax, level_slots[lv, y])
    has_pf = pf_start.size > 0
    n_pf = pf_pages.size
    handled = act.size > 0
    leveled = lvl.size > 0
    hit_mask = np.zeros(n if record >= 1 else 0, np.bool_)
    ev = np.zeros((n + n_pf if record >= 2 else 0, 2), np.int64)
    byp = np.zeros(n if record >= 2 else 0, np.int64)
    outcome = np.zeros(n if (record >= 1 or handled or substitute or leveled) else 0, np.int8)
    subst = np.full(n if substitute else 0, -1, np.int64)
    pf_log = np.zeros((n_pf if record >= 1 else 0, 2), np.int64)
    pf_ev = np.zeros((n + n_pf if record >= 1 and has_pf else 0, 2), np.int64)
    misses = 0
    coll = 0
    n_ev = 0
    n_byp = 0
    n_pf_log = 0
    n_pf_ev = 0
    prefetches = 0
    useful = 0
    wasted = 0
    skipped = 0
    pf_bytes = 0
    grouped = is_grouped(steps)
    sb = kind == SCORE_SCAN  # Score-Based: LFU with summed gate scores for counts
    lfu = kind == LFU_SCAN or kind == LHU_SCAN or sb
    bel = kind == BELADY_SCAN
    bnu = np.zeros(P if bel else 0, np.int64)  # Belady: each cached page's next request
    lhu = kind == LHU_SCAN  # LFU counting only the uses at level 0 (the run's precision)
    plevel = np.zeros(P if lhu else 0, np.int64)  # LHU: the level a resident page was fetched at
    # LFU's and LHU's request counts, Score-Based's summed scores (kept after eviction; counts
    # as floats: exact below 2**53)
    count = np.zeros(P if lfu else 0)
    credit = CREDIT <= kind < MARK_SCAN
    mark = kind == MARK_SCAN
    pm = kind == PMARK_SCAN or kind == LMARK_SCAN  # the markers (PredictiveMarker, LMarker)
    marked = np.zeros(P if mark or pm else 0, np.bool_)
    n_draw = 0
    blind = kind == BLIND_SCAN
    robust = kind == ROBUST_SCAN
    predf = blind or pm or robust  # the prediction policies
    bpred = np.zeros(P if predf else 0)  # each page's latest prediction
    fcount = np.zeros(P if predf else 0, np.int64)  # the frequency predictor's counts
    heard = np.full(caps.size, -1, np.int64)  # the request each partition's policy heard last
    # the markers' phases and chains (paging.policies.predictive._MarkingBase), per partition
    evc = np.zeros(P if pm else 0, np.int64)  # chain of the eviction that removed the page ...
    evph = np.full(P if pm else 0, -1, np.int64)  # ... valid while this is the partition's phase
    mphase = np.zeros(caps.size, np.int64)
    vt = np.full(caps.size, -1, np.int64)  # the request whose chain is current
    cur = np.zeros(caps.size, np.int64)  # the current chain
    stale = np.zeros(caps.size, np.bool_)  # whether that request's page was stale
    # (at most two chains an insertion: its first eviction, and one after a new phase)
    chain_len = np.zeros(2 * (n + pf_pages.size) + 1 if pm else 0, np.int64)
    nch = 0
    # the robust combiner's virtual caches (lists per partition, oldest first)
    rP = P if robust else 0
    in_bo = np.zeros(rP, np.bool_)
    bnx = np.full(rP, -1, np.int64)
    bpv = np.full(rP, -1, np.int64)
    bhd = np.full(caps.size, -1, np.int64)
    btl = np.full(caps.size, -1, np.int64)
    bcnt = np.zeros(caps.size, np.int64)
    in_lru = np.zeros(rP, np.bool_)
    lnx = np.full(rP, -1, np.int64)
    lpv = np.full(rP, -1, np.int64)
    lhd = np.full(caps.size, -1, np.int64)
    ltl = np.full(caps.size, -1, np.int64)
    lcnt = np.zeros(caps.size, np.int64)
    # ARC and LeCaR: their lists (ARC's T1, T2, B1, B2; LeCaR's histories H_LRU, H_LFU as B1,
    # B2) of one family per partition (paging.fast.adaptive); the partition's own list is
    # LeCaR's recency order, as LRU's
    arc = kind == ARC_SCAN
    lecar = kind == LECAR_SCAN
    adapt = arc or lecar
    aP = P if adapt else 0
    ak = np.zeros((3, aP), np.int64)
    als = np.full((3, caps.size * _NL if adapt else 0), -1, np.int64)
    als[2, :] = 0
    target = np.zeros(caps.size)  # ARC's p
    akey = np.full((3, caps.size), -1, np.int64)  # the arrival processed last, ARC's ghost
    htime = np.zeros(aP, np.int64)  # LeCaR: the eviction time of a page in a history
    lfreq = np.zeros(aP, np.int64)  # LeCaR: in-cache frequency, and when it was reached
    lfreq_t = np.zeros(aP, np.int64)
    w_lru = np.full(caps.size, 0.5)  # LeCaR's weights
    w_lfu = np.full(caps.size, 0.5)
    a_keep = True  # ARC: the victim becomes a ghost
    a_exp = 0  # LeCaR: the history the victim joins (_B1: H_LRU, _B2: H_LFU, 0: none)
    ck = kind - CREDIT  # GREEDY_DUAL, LANDLORD, GDSF or LAYERED (credit kinds only)
    # the scanned kinds keep their lists in insertion order (the reference's dict order)
    move = (kind != FIFO and kind != FWF and kind < LFU_SCAN) or lecar
    H = np.zeros(P if credit else 0)  # the credits of the cached pages
    infl = np.zeros(caps.size)  # L, per partition: the credit of its last victim
    freq = np.zeros(P if credit else 0, np.int64)  # GDSF: requests since the page entered
    prev_s = -1
    now_pass = 0
    g_start = 0
    g_end = 0
    group = -1
    stamp = -2  # the pin stamp of the pages pinned now (-2: none, rounds mode)
    next_stamp = 0
    hstamp = 0
    # the lists and the inlined helpers' arrays through views without reference counts
    # (:func:`borrow`), the arrays held to the end
    own = (nxt, prv, head, tail, pin, last_step, last_pass, H, infl, freq, last_t)
    nxt, prv, head, tail, pin = borrow(nxt), borrow(prv), borrow(head), borrow(tail), borrow(pin)
    last_step, last_pass, last_t = borrow(last_step), borrow(last_pass), borrow(last_t)
    H, infl, freq = borrow(H), borrow(infl), borrow(freq)
    pages, steps, slots = borrow(pages), borrow(steps), borrow(slots)
    r_order, r_m, r_j, r_cp, r_prob, r_rule = route
    routed = r_m.size > 0
    clocked = r_rule[6].size > 0  # the served ranks and scores, the handler's decisions
    r_rank, r_pos, r_taken, r_zz = route_scratch(n_experts)
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
            j = t
            while j < n and steps[j] == s:
                j += 1
            g_start = t
            g_end = j
            if routed:  # the group's served experts, chosen against the cache as it stands
                base = (s - now_pass * L) * n_experts
                route_group(pages, t, j - t, base, n_experts, group, r_order, r_m[group], r_j,
                            j - t, resident, r_rank, r_taken, pages, t, r_cp, r_zz, r_pos)
                if r_prob.shape[0] > 0:
                    for i in range(t, j):
                        gscore[i] = r_prob[group, pages[i] - base]
                if clocked:
                    clock_group(r_rank, r_pos, n_experts, j - t, r_order.shape[0] > 0, base,
                                group, t, pages, t, j - t, r_rule, act, lvl)
                p = pages[t]
            if grouped:
                stamp = next_stamp
                next_stamp += 1
                for j in range(g_start, g_end):
                    pin[pages[j]] = stamp
            else:
                stamp = -2
        z = layer_of[p]
        l = z if per_layer_lists else 0
        if substitute:
            requested[p] += 1
        # one pass of the loop body below serves request t (sub = 0), then, at the end of a
        # group that has a prefetch batch, inserts the batch's pages one by one (sub = 1..)
        b_lo = 0
        b_hi = 0
        if has_pf and t + 1 == g_end and g_end < n:
            b_lo = pf_start[group]
            b_hi = pf_start[group + 1]
        batch_pinned = False
        for sub in range(b_hi - b_lo + 1):
            prefetching = sub > 0
            if prefetching:
                x = pf_pages[b_lo + sub - 1]
                if resident[x]:
                    continue
                if not batch_pinned:  # pin the group just served and the batch
                    batch_pinned = True
                    stamp = next_stamp
                    next_stamp += 1
                    for j in range(g_start, g_end):
                        pin[pages[j]] = stamp
                    for j in range(b_lo, b_hi):
                        pin[pf_pages[j]] = stamp
                zx = layer_of[x]
                lx = zx if per_layer_lists else 0
                need = slots[x]
                level = 0
            else:
                x = p
                zx = z
                lx = l
                hp = -1  # the page the policy sees a hit on: p, or the substitute serving it
                if resident[p]:
                    if record >= 1:
                        hit_mask[t] = True
                    if pending[p]:
                        pending[p] = False
                        useful += 1
                    hp = p
                else:
                    level = 0
                    if handled and act[t] != 0:
                        outcome[t] = DROPPED
                        continue
                    if substitute:
                        best_n = -1
                        for y in range(z * n_experts, z * n_experts + n_experts):
                            if resident[y] and pin[y] != stamp and requested[y] > best_n:
                                hp = y
                                best_n = requested[y]
                        if hp >= 0:
                            outcome[t] = SUBSTITUTED
                            subst[t] = hp
                if hp >= 0:
                    lb = layer_of[hp] if per_layer_lists else 0
                    if move and head[lb] != hp:
                        a = prv[hp]
                        b = nxt[hp]
                        nxt[a] = b
                        if b >= 0:
                            prv[b] = a
                        else:
                            tail[lb] = a
                        h = head[lb]
                        prv[hp] = -1
                        nxt[hp] = h
                        prv[h] = hp
                        head[lb] = hp
                    if layered:
                        last_step[hp] = s
                        last_pass[hp] = now_pass
                        last_t[hp] = t
                        seq[hp] = n_touch
                        n_touch += 1
                    if lfu:
                        if sb:  # a substitute adds the score of the request it serves
                            count[hp] += gscore[t]
                        elif not lhu or plevel[hp] == 0:
                            count[hp] += 1.0
                        last_t[hp] = t
                    if mark:
                        marked[hp] = True
                    if arc:  # case I: to T2's MRU end
                        qa = z if dist else 0
                        _unlink(ak, als, qa, hp)
                        _push(ak, als, qa, _T2, hp)
                    if lecar:
                        lfreq[hp] += 1
                        lfreq_t[hp] = t
                    if bel:  # a substitute is next used at its own next request
                        bnu[hp] = next_use[t] if hp == p else _next_after(occ_pos, occ_start,
                                                                           hp, t, n)
                    if credit and ck == GDSF:
                        freq[hp] += 1
                    if credit:
                        _credit_touch(H, infl, freq, last_t, last_step, wcost, wsize, ck, hp,
                                      z if dist else 0, t, s)
                    if predf:  # the policy hears request t: a prediction for hp (p or its
                        qh = z if dist else 0  # substitute), its latest request t
                        if heard[qh] != t:
                            heard[qh] = t
                            bpred[hp] = _predict(pkind, preds, pred_row[qh], next_use, occ_pos,
                                                 occ_start, fcount, pages, hp, t, n)
                            last_t[hp] = t
                            if robust:
                                _robust_hear(hp, qh, rob[qh, 4], in_bo, bnx, bpv, bhd,
                                             btl, bcnt, in_lru, lnx, lpv, lhd, ltl, lcnt,
                                             bpred, last_t, rob)
                        if pm:
                            marked[hp] = True
                    continue
                if leveled:
                    level = lvl[t]
                if outcome.size > 0:
                    outcome[t] = FETCHED
                misses += 1
                page_miss[p] += 1
                if evicted_pass[p] == now_pass:
                    coll += 1
                need = slots[p] if level == 0 else level_slots[level, p]
            q = zx if dist else 0
            if used[q] + need > caps[q]:
                held = 0  # room of the pinned resident pages of the partition
                n_pinned = g_end - g_start + (b_hi - b_lo if prefetching else 0)
                if stamp >= 0 and n_pinned * smax > caps[q] - need:  # else they cannot fill it
                    hstamp += 1
                    for j in range(g_start, g_end + (b_hi - b_lo if prefetching else 0)):
                        r = pages[j] if j < g_end else pf_pages[b_lo + j - g_end]
                        if resident[r] and seen[r] != hstamp and (not dist or layer_of[r] == zx):
                            seen[r] = hstamp
                            held += room[r]
                if need > caps[q] - held:
                    if prefetching:
                        skipped += 1
                    else:
                        if record > 1:
                            byp[n_byp] = t
                        n_byp += 1
                    continue
                while used[q] + need > caps[q]:
                    if kind == FWF:
                        v = tail[q]
                        while v >= 0:
                            u = prv[v]
                            if pin[v] != stamp:
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
                                used[q] -= room[v]
                                evicted_pass[v] = now_pass
                                if pending[v]:
                                    pending[v] = False
                                    wasted += 1
                                if prefetching:
                                    if record >= 1:
                                        pf_ev[n_pf_ev, 0] = t + 1
                                        pf_ev[n_pf_ev, 1] = v
                                        n_pf_ev += 1
                                elif record > 1:
                                    ev[n_ev, 0] = t
                                    ev[n_ev, 1] = v
                                    n_ev += 1
                            v = u
                        break
                    if scan:
                        # LLRU with prefetching: a prefetched page carries the step of the
                        # group before it, so no list is ordered by the key; scan the
                        # partition for the largest (R, D), then the oldest request index,
                        # then the first touched (the reference's dict order among equals)
                        victim = -1
                        bR = 0
                        bD = 0
                        bl = 0
                        bs = 0
                        for zz in range(q if dist else 0, q + 1 if dist else L):
                            # a list runs from the oldest touch: R only falls towards its head,
                            # so only its oldest R bucket can hold the list's best key
                            v = tail[zz]
                            top = -1
                            while v >= 0:
                                if pin[v] != stamp:
                                    tau = last_step[v]
                                    R = (s - tau) // L
                                    if top < 0:
                                        top = R
                                    elif R < top:
                                        break
                                    D = (tau - s) % L if kind == LLRU else (tau - s - 1) % L
                                    if victim < 0 or R > bR or (R == bR and (
                                            D > bD or (D == bD and (
                                                last_t[v] < bl or (last_t[v] == bl
                                                                   and seq[v] < bs))))):
                                        victim = v
                                        bR = R
                                        bD = D
                                        bl = last_t[v]
                                        bs = seq[v]
                                v = prv[v]
                    elif lfu:
                        # the fewest requests, then the oldest last touch, then the first in
                        # the partition's dict: its list runs from the oldest insertion (no
                        # move on a hit), which the scan visits first
                        victim = -1
                        bc = 0.0
                        bl = 0
                        v = tail[q]
                        while v >= 0:
                            if pin[v] != stamp and (victim < 0 or count[v] < bc or (
                                    count[v] == bc and last_t[v] < bl)):
                                victim = v
                                bc = count[v]
                                bl = last_t[v]
                            v = prv[v]
                    elif predf or mark:
                        # victim(t, x) first asks the predictor about x when the policy has
                        # not heard request t (a prefetch after a request dropped or bypassed,
                        # or of another layer's partition): the prefetched page is counted,
                        # and its prediction then replaced by on_prefetch's
                        if predf and heard[q] != t:
                            heard[q] = t
                            val = _predict(pkind, preds, pred_row[q], next_use, occ_pos,
                                           occ_start, fcount, pages, x, t, n)
                            if not prefetching:
                                bpred[x] = val
                                last_t[x] = t
                            if robust:  # (a prefetched page's prediction and latest
                                # request are read by none of the virtual caches' decisions
                                # before on_prefetch replaces them)
                                _robust_hear(x, q, rob[q, 4], in_bo, bnx, bpv, bhd, btl,
                                             bcnt, in_lru, lnx, lpv, lhd, ltl, lcnt, bpred,
                                             last_t, rob)
                        rand = mark  # Marking: always a uniform unmarked candidate
                        m = 0
                        lo_p = zx * n_experts if dist else 0
                        hi_p = lo_p + n_experts if dist else P
                        if pm or mark:
                            # the unmarked candidates (Marking, _MarkingBase._unmarked); none:
                            # a new phase (the partition's marks erased, and the markers'
                            # evictions and chains, every candidate counts)
                            for y in range(lo_p, hi_p):
                                if resident[y] and pin[y] != stamp and not marked[y]:
                                    m += 1
                            if m == 0:
                                for y in range(lo_p, hi_p):
                                    marked[y] = False
                                    if resident[y] and pin[y] != stamp:
                                        m += 1
                                mphase[q] += 1
                                vt[q] = -1
                        if pm:
                            # the chain, once per request (and again after a new phase): x
                            # evicted earlier in the phase continues the chain of that
                            # eviction, else it starts one (x is the prefetched page for a
                            # prefetch's eviction, as victim(t, x) is called with it)
                            if vt[q] != t:
                                vt[q] = t
                                st = evph[x] == mphase[q]
                                stale[q] = st
                                if st:
                                    evph[x] = -1
                                    cur[q] = evc[x]
                                    chain_len[cur[q]] += 1
                                else:
                                    cur[q] = nch
                                    chain_len[nch] = 1
                                    nch += 1
                            if kind == PMARK_SCAN:
                                rand = chain_len[cur[q]] > hks[q]
                            else:
                                rand = stale[q]
                        victim = -1
                        if rand:  # the unmarked candidate of rank ⌊u·m⌋ by page id
                            # (pick_uniform)
                            pick = int(draws[n_draw] * m)
                            n_draw += 1
                            for y in range(lo_p, hi_p):
                                if resident[y] and pin[y] != stamp and not marked[y]:
                                    if pick == 0:
                                        victim = y
                                        break
                                    pick -= 1
                        # else the furthest prediction (of the unmarked candidates for the
                        # markers), then the least recently requested, then the first in the
                        # partition's dict (the list's insertion order)
                        bk = 0.0
                        bl = 0
                        if robust:
                            # the least recently requested candidate outside the leader's
                            # virtual cache, else the least recently requested candidate;
                            # the first in the partition's dict among equals
                            out_v = -1
                            ol = 0
                            lead_bo = rob[q, 0] == 0
                            v = tail[q]
                            while v >= 0:
                                if pin[v] != stamp:
                                    lv_ = last_t[v]
                                    if victim < 0 or lv_ < bl:
                                        victim = v
                                        bl = lv_
                                    if not (in_bo[v] if lead_bo else in_lru[v]) and (
                                            out_v < 0 or lv_ < ol):
                                        out_v = v
                                        ol = lv_
                                v = prv[v]
                            if out_v >= 0:
                                victim = out_v
                        v = tail[q] if not (rand or robust) else -1
                        while v >= 0:
                            if pin[v] != stamp and not (pm and marked[v]) and (
                                    victim < 0 or bpred[v] > bk or (
                                        bpred[v] == bk and last_t[v] < bl)):
                                victim = v
                                bk = bpred[v]
                                bl = last_t[v]
                            v = prv[v]
                    elif bel:
                        # the furthest next request, ties (never again) to the larger id
                        victim = -1
                        bn = 0
                        v = tail[q]
                        while v >= 0:
                            if pin[v] != stamp and (victim < 0 or bnu[v] > bn or (
                                    bnu[v] == bn and v > victim)):
                                victim = v
                                bn = bnu[v]
                            v = prv[v]
                    elif credit:
                        # the smallest credit, then (Layered Landlord) LLRU's largest R and D,
                        # then the oldest last request, then the first in the partition's dict
                        # (the list's insertion order, as LFU's)
                        victim = -1
                        bh = 0.0
                        bl = 0
                        bR = 0
                        bD = 0
                        v = tail[q]
                        while v >= 0:
                            if pin[v] != stamp:
                                R = 0
                                D = 0
                                if ck == LAYERED_LANDLORD:
                                    R = (s - last_step[v]) // L
                                    D = (last_step[v] - s) % L
                                if victim < 0 or H[v] < bh or (H[v] == bh and (
                                        R > bR or (R == bR and (D > bD or (
                                            D == bD and last_t[v] < bl))))):
                                    victim = v
                                    bh = H[v]
                                    bl = last_t[v]
                                    bR = R
                                    bD = D
                            v = prv[v]
                    elif adapt:
                        _arrive(arc, ak, als, target, akey, htime, w_lru, w_lfu, adp, q, t, x,
                                caps[q])
                        if arc:
                            victim, a_keep = _arc_victim(ak, als, target, akey[2, q], q,
                                                         caps[q], pin, stamp)
                        else:
                            # the least recently used candidate, and the fewest requests
                            # then the earliest time that count was reached (the first in
                            # recency order among equals); a draw when they differ
                            c_lru = -1
                            c_lfu = -1
                            f_min = 0
                            f_t = 0
                            v = tail[q]
                            while v >= 0:
                                if pin[v] != stamp:
                                    if c_lru < 0:
                                        c_lru = v
                                    if c_lfu < 0 or lfreq[v] < f_min or (
                                            lfreq[v] == f_min and lfreq_t[v] < f_t):
                                        c_lfu = v
                                        f_min = lfreq[v]
                                        f_t = lfreq_t[v]
                                v = prv[v]
                            victim = c_lru
                            a_exp = 0
                            if c_lru != c_lfu:
                                ud = draws[n_draw]
                                n_draw += 1
                                if ud < w_lru[q]:
                                    a_exp = _B1
                                else:
                                    a_exp = _B2
                                    victim = c_lfu
                    else:
                        victim = _victim(kind, q, s, now_pass, L, tail, prv, pin, stamp,
                                         last_step, last_pass)
                    if victim < 0:  # cannot happen: the room check found unpinned pages
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
                    used[q] -= room[victim]
                    evicted_pass[victim] = now_pass
                    if mark or pm:
                        marked[victim] = False
                    if pm:  # on_evict: removed by the current chain's eviction
                        evc[victim] = cur[q]
                        evph[victim] = mphase[q]
                    if credit:  # on_evict: L becomes the victim's credit; GDSF forgets
                        infl[q] = H[victim]
                        freq[victim] = 0
                    if arc:  # on_evict: out of T1 or T2, into B1 or B2 unless case IV.A
                        wv = ak[2, victim]
                        _unlink(ak, als, q, victim)
                        if a_keep:
                            _push(ak, als, q, _B1 if wv == _T1 else _B2, victim)
                    if lecar and a_exp:  # on_evict: into the expert's history, trimmed
                        htime[victim] = t
                        _push(ak, als, q, a_exp, victim)
                        hi = q * _NL + a_exp
                        while als[2, hi] > int(adp[q, 2]):
                            _unlink(ak, als, q, als[0, hi])
                    if pending[victim]:
                        pending[victim] = False
                        wasted += 1
                    if prefetching:
                        if record >= 1:
                            pf_ev[n_pf_ev, 0] = t + 1
                            pf_ev[n_pf_ev, 1] = victim
                            n_pf_ev += 1
                    elif record > 1:
                        ev[n_ev, 0] = t
                        ev[n_ev, 1] = victim
                        n_ev += 1
            h = head[lx]
            prv[x] = -1
            nxt[x] = h
            if h >= 0:
                prv[h] = x
            else:
                tail[lx] = x
            head[lx] = x
            resident[x] = True
            room[x] = need
            used[q] += need
            if layered:
                last_step[x] = s
                last_pass[x] = now_pass
                last_t[x] = t
                seq[x] = n_touch
                n_touch += 1
            if lfu:  # a prefetch moves last, not the count (PriorityPolicy.on_prefetch)
                last_t[x] = t
                if lhu:
                    plevel[x] = level
                if not prefetching and (sb or not lhu or level == 0):
                    count[x] += gscore[t] if sb else 1.0
            if mark:  # (a prefetch is an insertion: Policy.on_prefetch)
                marked[x] = True
            if bel:
                bnu[x] = _next_after(occ_pos, occ_start, x, t, n) if prefetching else next_use[t]
            if predf:
                if prefetching:  # on_prefetch: predicted for request t + 1, last touched at
                    bpred[x] = float(t + 1)  # t; the markers do not mark it
                    last_t[x] = t
                else:
                    if heard[q] != t:  # on_insert hears request t (unless a victim call did)
                        heard[q] = t
                        bpred[x] = _predict(pkind, preds, pred_row[q], next_use, occ_pos,
                                            occ_start, fcount, pages, x, t, n)
                        last_t[x] = t
                        if robust:
                            _robust_hear(x, q, rob[q, 4], in_bo, bnx, bpv, bhd, btl,
                                         bcnt, in_lru, lnx, lpv, lhd, ltl, lcnt, bpred,
                                         last_t, rob)
                    if pm:
                        marked[x] = True
            if adapt:  # on_insert (on_prefetch too): the arrival, unless a victim call made it
                _arrive(arc, ak, als, target, akey, htime, w_lru, w_lfu, adp, q, t, x, caps[q])
                if arc:
                    _push(ak, als, q, _T2 if akey[2, q] else _T1, x)
                else:
                    lfreq[x] = 1
                    lfreq_t[x] = t
            if credit and ck == GDSF:  # (a prefetch is an insertion: Policy.on_prefetch)
                freq[x] = 1
            if credit:
                _credit_touch(H, infl, freq, last_t, last_step, wcost, wsize, ck, x,
                              q, t, s)
            if prefetching:
                prefetches += 1
                pf_bytes += pf_size[x]
                pending[x] = True
                if record >= 1:
                    pf_log[n_pf_log, 0] = t + 1
                    pf_log[n_pf_log, 1] = x
                    n_pf_log += 1
        # a batch ends its group: the next request starts a new one, with its own pins
    for y in range(P):
        if pending[y]:
            wasted += 1
    pf_counts = np.array([prefetches, useful, wasted, skipped, pf_bytes], np.int64)
    hold(own[0]), hold(own[1]), hold(own[2]), hold(own[3]), hold(own[4]), hold(own[5])
    hold(own[6]), hold(own[7]), hold(own[8]), hold(own[9]), hold(own[10])
    return (misses, coll, page_miss, hit_mask, ev, n_ev, byp, n_byp, outcome, subst, pf_counts,
            pf_log, n_pf_log, pf_ev, n_pf_ev)


#: list kernels whose victim rule needs every page of a layer to be touched only at that
#: layer's steps, which a prefetch breaks (module docstring): with prefetching, their victim is
#: found by a scan of the partition (O(k) per eviction) instead of the per-layer tails
_SCANNED = ("list:LLRU", "list:LLRU_LATEST")


def _own_kernel(policy) -> str | None:
    """The ``kernel`` string the policy's class declares (its factory's class for ``-dist``)."""
    from paging.policies.dist import PerLayer

    cls = type(policy.factory()) if type(policy) is PerLayer else type(policy)
    return vars(cls).get("kernel")


def unsupported(trace, policy, budget, prefetch, miss, routed=False) -> str | None:
    """Why :func:`run_phases` cannot run this configuration (one line), or None when it can.
    A configuration the reference loop refuses (a handler that needs gate scores on a trace
    without them, ...) is unsupported here too, so that the reference gives its error.
    ``routed``: a routed run (:func:`paging.fast.routing.run_routed`), whose served requests
    take their ranks from the routing, not from the trace."""
    from paging import fast
    from paging.fast.tokens import ROBUST
    from paging.miss import Drop, FetchLowestBit, FetchPriority, MissHandler, Substitute
    from paging.predict.prefetch import Prefetcher

    spec = fast.plan(policy)
    if policy.needs_scores and trace.score is None and not routed:
        # (the reference's error, not numba's; a routed run reads the served requests' scores,
        # and its kernel gives that error itself when the trace has no logits either)
        return f"{policy.name} reads gate scores and the trace has none"
    if spec is None or spec[0] not in ("list", "credit", "marking", "heap", "adaptive",
                                       "predictive", "token"):
        return (f"policy {policy.name} has no compiled kernel with prefetching or miss handling "
                "(the list policies, LFU, LHU, Belady, the credit policies, Marking, ARC, "
                "LeCaR, Score-Based, the prediction policies and the token policies do: lru, "
                "fifo, fwf, llru, fld, least-stale, lfu, lhu, belady, greedy-dual, landlord, "
                "gdsf, layered-landlord, marking, arc, lecar, score-based, blind-oracle, "
                "predictive-marker, lmarker, robust-blind-oracle, token-hazard, token-decay, "
                "token-match, ...)")
    if prefetch is not None:
        if type(prefetch) is not Prefetcher:
            return f"prefetcher {type(prefetch).__name__} is not the built-in Prefetcher"
        if spec[0] == "token" and spec[1] == ROBUST:  # the reference raises at its first one
            return f"{policy.name} refuses prefetching (its virtual caches follow requests)"
    if miss is not None:
        if type(miss) not in (MissHandler, FetchLowestBit, FetchPriority, Drop, Substitute):
            return f"miss handler {type(miss).__name__} is not a built-in handler"
        if miss.needs_scores and trace.score is None or (
                miss.needs_ranks and trace.rank is None and not routed):
            return f"{miss.name} needs gate scores or ranks the trace does not have"
        if miss.uses_levels and (miss.level_sizes is None or budget is None):
            return f"{miss.name} needs bound precision levels and a byte budget"
    return None


class _State:
    """What the observers read of a finished run (the reference's CacheState, after the loop)."""

    def __init__(self, trace, costs, sizes):
        self.layout, self.costs, self.sizes = trace.layout, costs, sizes
        self.has_scores = trace.score is not None
        self._rank, self._steps = trace.rank, trace.steps
        self._n = trace.n_requests

    def groups_served(self) -> int:
        if self._rank is None:
            return self._n
        from paging.trace import top1_groups

        return top1_groups(self._steps, self._rank)


def handler_rule(miss) -> tuple:
    """``(code, rank cut, score cut, cuts)`` of a built-in handler's decision from a request's
    rank and gate score (:func:`paging.fast.common.decide`): ``drop:rank=R``,
    ``drop:score=S``, ``fetch-priority``'s cuts; ``RULE_NONE`` for any other handler."""
    from paging.fast.common import RULE_DROP_RANK, RULE_DROP_SCORE, RULE_NONE, RULE_PRIORITY
    from paging.miss import Drop, FetchPriority

    if type(miss) is Drop:
        if miss.rank is not None:
            return RULE_DROP_RANK, int(miss.rank), 0.0, np.zeros(0)
        return RULE_DROP_SCORE, 0, float(miss.score), np.zeros(0)
    if type(miss) is FetchPriority:
        return RULE_PRIORITY, 0, 0.0, np.array(miss.cuts, dtype=np.float64)
    return RULE_NONE, 0, 0.0, np.zeros(0)


def miss_actions(miss, N: int, rank, score, rule=None) -> tuple:
    """``(act, lvl)`` of a built-in handler for N requests of ranks ``rank`` and gate scores
    ``score`` (each None when the handler does not read it): the drop flags (``drop``: rank >=
    R, or score < S) and the fetch levels (``fetch-lowest-bit``: the lowest; ``fetch-priority``:
    the number of cuts above the score), each empty when the handler sets none
    (:func:`paging.fast.common.decide`). With neither ``rank`` nor ``score`` the arrays are
    only sized (zeros): a routed run's kernel decides as it routes each group. ``rule``:
    :func:`handler_rule` of ``miss``, when the caller keeps it (a serving step's layers)."""
    from paging.fast.common import RULE_DROP_RANK, RULE_DROP_SCORE, RULE_PRIORITY, decide
    from paging.miss import FetchLowestBit

    act = np.zeros(0, np.int8)
    lvl = np.zeros(0, np.int64)
    if type(miss) is FetchLowestBit:
        return act, np.full(N, len(miss.levels) - 1, np.int64)
    code, rcut, scut, cuts = handler_rule(miss) if rule is None else rule
    if code in (RULE_DROP_RANK, RULE_DROP_SCORE):
        act = np.zeros(N, np.int8)
    elif code == RULE_PRIORITY:
        lvl = np.zeros(N, np.int64)
    else:
        return act, lvl
    if rank is None and score is None:
        return act, lvl
    rank = np.zeros(0, np.int64) if rank is None else np.asarray(rank, dtype=np.int64)
    score = np.zeros(0) if score is None else np.asarray(score, dtype=np.float64)
    decide(code, rcut, scut, cuts, rank, score, act, lvl, 0, N)
    return act, lvl


def _miss_plan(trace, miss):
    """``(act, lvl, substitute, level_slots)`` of a built-in handler (``unsupported`` said
    yes): the per-request drop flags and fetch levels, made before the run
    (:func:`miss_actions`)."""
    act, lvl = miss_actions(miss, trace.n_requests, trace.rank, trace.score)
    return (act, lvl, *handler_room(trace, miss))


def handler_room(trace, miss) -> tuple:
    """``(substitute, level_slots)`` of :func:`phase_kernel` for a built-in handler: whether
    it is ``substitute``, and each page's room at each precision level (one row of zeros
    without levels)."""
    from paging.miss import Substitute

    if miss is not None and miss.uses_levels:
        level_slots = np.array(miss.level_sizes, dtype=np.int64)
    else:
        level_slots = np.zeros((1, trace.layout.n_pages), np.int64)
    return type(miss) is Substitute, level_slots


def no_route():
    """The ``route`` argument of :func:`phase_kernel` for a run without routing."""
    return (np.zeros((0, 0), np.int64), np.zeros(0, np.int64), 0, no_prior(), np.zeros((0, 0)),
            no_rule())


def phase_kind(policy, spec) -> int:
    """The :func:`phase_kernel` kind of ``policy`` (``spec`` = :func:`paging.fast.plan`'s, of a
    family :func:`unsupported` admits)."""
    from paging.fast import adaptive

    family, kind, _ = spec
    if family == "heap":  # LFU, LHU (whose plain kernel is LFU's) or Belady
        from paging.fast import heaps
        from paging.policies.dist import PerLayer
        from paging.policies.scored import LHU

        proto = policy.factory() if type(policy) is PerLayer else policy
        return (BELADY_SCAN if kind == heaps.BELADY
                else LHU_SCAN if type(proto) is LHU else LFU_SCAN)
    if family == "credit":
        return CREDIT + kind
    if family == "marking":
        return MARK_SCAN
    if family == "adaptive":
        return ARC_SCAN if kind == adaptive.ARC else LECAR_SCAN
    if family == "predictive":
        return {SCORE: SCORE_SCAN, BLIND: BLIND_SCAN, PMARKER: PMARK_SCAN,
                LMARKER: LMARK_SCAN, ROBUST: ROBUST_SCAN}[kind]
    return kind


def run_kind(policy, spec, prefetching: bool) -> tuple[int, bool]:
    """``(kind, scan)``: the :func:`phase_kernel` kind of ``policy`` and whether its victims
    are found by a scan (LLRU and LLRU-latest with prefetching, module docstring; the -dist
    variants' kernel is LRU's, so the kind is then set to the LLRU key's)."""
    kind = phase_kind(policy, spec)
    scan = prefetching and _own_kernel(policy) in _SCANNED
    if scan:
        kind = LLRU if _own_kernel(policy) == "list:LLRU" else LLRU_LATEST
    return kind, scan


def partition_inputs(kind, caps, slots, by_bytes: bool, n_pages: int):
    """``(hks, rob, adp)`` of :func:`phase_kernel`: PredictiveMarker's H_k of each partition
    (in pages; under a byte budget, ``by_bytes``, of its bytes), the robust combiner's
    counters (zeros) and the pages of its virtual caches (as ``marker_k``), and LeCaR's
    learning rate, discount and history size per partition."""
    from paging.fast import adaptive

    hks = np.zeros(caps.size)
    rob = np.zeros((caps.size, 5), np.int64)
    if kind == ROBUST_SCAN:  # the pages of its virtual caches (RobustBlindOracle.reset)
        rob[:, 4] = marker_pages(caps, slots, n_pages, by_bytes)
    adp = np.zeros((caps.size, 3))
    if kind == LECAR_SCAN:
        lr, dr, hist_cap = adaptive.lecar_params(caps)
        adp = np.column_stack([np.full(caps.size, lr), dr, hist_cap.astype(np.float64)])
    if kind == PMARK_SCAN:
        from paging.policies.predictive import harmonic

        hks = np.array([harmonic(k) for k in marker_pages(caps, slots, n_pages,
                                                          by_bytes).tolist()])
    return hks, rob, adp


def policy_inputs(trace, policy, spec, kind, caps, slots, budget, seed, n_inserts):
    """The policy's own inputs of :func:`phase_kernel`, ``draws`` to ``adp`` (its docstring),
    for a run of at most ``n_inserts`` insertions (requests and prefetches)."""
    from paging import fast

    pkind, preds, pred_row = FREQUENCY, np.zeros((1, 0)), np.zeros(caps.size, np.int64)
    hks, rob, adp = partition_inputs(kind, caps, slots, budget is not None,
                                     trace.layout.n_pages)
    if kind in (BLIND_SCAN, PMARK_SCAN, LMARK_SCAN, ROBUST_SCAN):  # the predictor's kind and
        pkind = predictor_kind(spec.proto.predictor)  # the oracle's predictions
        preds, pred_row = predictions(trace, caps, spec.proto, policy, spec[2],
                                      slots if budget is not None else None)
    return (
        # one draw per eviction at most: each insertion (a request or a prefetch) evicts pages
        # it needs room for, and so at most every page inserted before
        fast.marking_draws(seed, n_inserts) if fast.needs_draws(spec) else np.zeros(0),
        *_belady_arrays(trace, kind == BELADY_SCAN or (
            kind in (BLIND_SCAN, PMARK_SCAN, LMARK_SCAN, ROBUST_SCAN) and pkind == ORACLE)),
        np.array(trace.score, dtype=np.float64) if kind == SCORE_SCAN else np.zeros(0),
        pkind, preds, pred_row, hks, rob, adp)


def leave_state(policy, kind, dist, rob) -> None:
    """What a reference run leaves on the policy object: a shared robust combiner's ``leader``,
    ``switches`` and ``cost``."""
    if kind == ROBUST_SCAN and not dist:
        policy.leader, policy.switches = int(rob[0, 0]), int(rob[0, 1])
        policy.cost = [int(rob[0, 2]), int(rob[0, 3])]


def run_phases(trace, policy, k, budget, costs, sizes, seed, level, prefetch, miss):
    """The run :func:`paging.simulate._run` makes with ``prefetch`` and/or ``miss`` (a
    configuration :func:`unsupported` accepts), in :func:`phase_kernel`: the same
    :class:`~paging.result.Result`, every field, counters and logs."""
    from paging import fast
    from paging.weights import unit_costs, unit_sizes

    spec = fast.plan(policy)
    dist = spec[2]
    kind, scan = run_kind(policy, spec, prefetch is not None)
    P = trace.layout.n_pages
    N = trace.n_requests
    capacity = k if budget is None else budget
    slots = unit_sizes(P) if budget is None else sizes
    pf_start, pf_pages, pf_size = prefetch_arrays(trace, prefetch, seed, sizes)
    act, lvl, substitute, level_slots = _miss_plan(trace, miss)
    if spec[0] == "token":  # the token policies' own kernel, with the same phases
        from paging.fast.tokens import execute

        out = execute(trace, spec, slots, int(capacity), level, policy, phases=(
            pf_start, pf_pages, np.array(pf_size, dtype=np.int64), act, lvl, level_slots,
            substitute))
    else:
        caps = fast._caps(trace.layout, int(capacity), dist)
        inputs = policy_inputs(trace, policy, spec, kind, caps, slots, budget, seed,
                               N + pf_pages.size)
        out = phase_kernel(
            # a writable copy of the pages (a routed run writes the served ones over them),
            # the steps read-only, as every caller passes them: one compiled signature
            np.array(trace.pages, dtype=np.int64), trace.steps, slots, level_slots,
            trace.layout.n_experts, trace.layout.n_layers, caps, dist, kind, level, pf_start,
            pf_pages, pf_size, act, lvl, substitute, scan,
            unit_costs(P) if costs is None else costs,
            unit_sizes(P) if sizes is None else sizes, *inputs, no_route())
        leave_state(policy, kind, dist, inputs[-2])
    return phase_result(out, trace, trace.name, policy, k, budget, costs, sizes, seed, dist,
                        level, prefetch, miss, lvl)


def prefetch_arrays(trace, prefetch, seed, sizes) -> tuple:
    """``(pf_start, pf_pages, pf_size)`` of :func:`phase_kernel`: the prefetcher's plan for
    ``trace`` (:meth:`Prefetcher.plan`, the reference loop's), empty without one."""
    from paging.weights import unit_sizes

    if prefetch is not None:
        pf_pages, pf_start, _ = prefetch.plan(trace, seed)  # the reference loop's plan
        pf_pages = np.asarray(pf_pages, dtype=np.int64)
        pf_start = np.asarray(pf_start, dtype=np.int64)
    else:
        pf_start = np.zeros(0, np.int64)
        pf_pages = np.zeros(0, np.int64)
    P = trace.layout.n_pages
    return pf_start, pf_pages, unit_sizes(P) if sizes is None else sizes


def phase_result(out, served, name, policy, k, budget, costs, sizes, seed, dist, level,
                 prefetch, miss, lvl):
    """The :class:`~paging.result.Result` of a phase kernel's run (``out``: the tuple of
    :func:`phase_kernel`), with the prefetcher's and the handler's counters and logs.
    ``served`` has the ``layout``, ``pages``, ``rank``, ``score`` and ``n_requests`` of the
    requests served (the trace, or a routed run's served requests, their routed ranks and
    router weights), ``lvl`` their fetch levels."""
    from paging.observers import MissStats, PrefetchStats
    from paging.result import build_result

    (misses, coll, page_miss, hit_mask, ev, n_ev, byp, n_byp, outcome, subst, pf_counts, pf_log,
     n_pf_log, pf_ev, n_pf_ev) = out
    res = build_result(
        policy=policy.name, k=k, budget=budget, trace=name, requests=served.n_requests,
        page_misses=page_miss, n_layers=served.layout.n_layers, collisions=coll,
        bypasses=n_byp, seed=seed, dist=dist, costs=costs, sizes=sizes,
        hit_mask=hit_mask[:served.n_requests] if level else None,
        evictions=ev[:n_ev].copy() if level > 1 else None,
        bypassed=byp[:n_byp].copy() if level > 1 else None)
    state = _State(served, costs, sizes)
    rec = level > 0
    pstats = PrefetchStats(*((prefetch.predicted, prefetch.predicted_right, prefetch.actual)
                             if prefetch is not None else ()))
    pstats.start(state, rec)
    (pstats.prefetches, pstats.useful, pstats.wasted, pstats.skipped,
     pstats.bytes) = (int(x) for x in pf_counts)
    if rec:
        pstats.log = pf_log[:n_pf_log]
        pstats.evictions = pf_ev[:n_pf_ev]
    mstats = MissStats(miss)
    mstats.start(state, rec)
    _miss_counts(mstats, served, outcome, subst, lvl, rec)
    pstats.finish(res)
    mstats.finish(res)
    return res


def _belady_arrays(trace, needed: bool):
    """``(next_use, occ_pos, occ_start)`` of :func:`phase_kernel` (empty unless ``needed``)."""
    if not needed:  # (read-only, as a trace's next uses: one signature, common.frozen)
        return frozen(np.zeros(0, np.int64)), np.zeros(0, np.int64), np.zeros(1, np.int64)
    pages = np.asarray(trace.pages, dtype=np.int64)
    occ_pos = np.argsort(pages, kind="stable").astype(np.int64)
    counts = np.bincount(pages, minlength=trace.layout.n_pages)
    occ_start = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return frozen(np.asarray(trace.next_use, dtype=np.int64)), occ_pos, occ_start


def _miss_counts(mstats, trace, outcome, subst, lvl, rec) -> None:
    """Fill ``mstats`` (a started :class:`~paging.observers.MissStats`) from the requests'
    outcomes, as its event hooks would have during the run."""
    if outcome.size == 0:
        return
    P = trace.layout.n_pages
    pages = np.asarray(trace.pages)
    dropped = np.flatnonzero(outcome == DROPPED)
    swapped = np.flatnonzero(outcome == SUBSTITUTED)
    replaced = np.flatnonzero(outcome >= DROPPED)
    mstats.dropped, mstats.substituted = int(dropped.size), int(swapped.size)
    ranks = (np.zeros(replaced.size, np.int64) if trace.rank is None
             else np.asarray(trace.rank, dtype=np.int64)[replaced])
    from paging.trace import n_distinct

    counts = np.bincount(ranks) if ranks.size else np.zeros(0, np.int64)  # (ranks >= 0)
    mstats.replaced_ranks = {int(r): int(counts[r]) for r in np.flatnonzero(counts)}
    # groups whose top-1 was replaced (a batched prefill's group has several of rank 0)
    mstats.top1_changed = n_distinct(np.asarray(trace.steps)[replaced[ranks == 0]])
    if trace.score is not None and dropped.size:
        # the reference adds the scores one by one: a running (sequential) sum
        mstats.dropped_mass = float(np.cumsum(np.asarray(trace.score,
                                                         dtype=np.float64)[dropped])[-1])
    if rec:
        mstats.dropped_log = dropped.tolist()
        mstats.substituted_log = (np.stack([swapped, subst[swapped]], axis=1)
                                  if swapped.size else [])
    if len(mstats.level_misses) > 1:
        fetched = np.flatnonzero(outcome == FETCHED)
        lv = lvl[fetched]
        counts = np.bincount(lv * P + pages[fetched], minlength=len(mstats.level_misses) * P)
        mstats.level_misses = [[0] * P, *counts.reshape(-1, P)[1:].tolist()]
        if mstats._log_levels:
            mstats.fetch_log = lv.tolist()
