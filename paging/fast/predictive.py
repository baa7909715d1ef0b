"""Kernels of the score-reading and the prediction policies: Score-Based
(:class:`paging.policies.scored.ScoreBased`), BlindOracle, PredictiveMarker, LMarker and the
robust combiner of BlindOracle and LRU (:mod:`paging.policies.predictive`), shared and per
layer (``-dist``), rounds and groups mode, counted in pages or in bytes.

One loop serves every kind; what differs is the per-request update (the hook the reference
calls on a hit, before the victims of a miss, or on an insert) and the victim rule:

* Score-Based: H(p) += score(t) on every request of p that is served; evict the candidate of
  smallest H, ties to the least recently requested.
* the prediction policies remember, for each page, the prediction made at its latest request
  and its index (``PredictivePolicy.pred``, ``.last``); "furthest" is the largest prediction,
  ties to the least recently requested. BlindOracle evicts the furthest candidate.
  PredictiveMarker and LMarker keep the marking phases and the chains of
  ``paging.policies.predictive._MarkingBase`` (marks, the chain of the eviction that removed a
  page in the current phase, the chain lengths) and evict the furthest unmarked candidate, or a
  uniform one: one draw u from the run's generator, the unmarked candidate at index ⌊u·m⌋ by
  page id (:func:`paging.policies.base.pick_uniform`). The generator yields the same doubles
  one at a time or as a vector, so the caller pre-draws ``rng.random(N)`` (the most draws a
  run can make: at most one per eviction) and the kernel consumes them in eviction order,
  across layers too (the ``-dist`` sub-policies share the run's generator), as for Marking
  (:func:`paging.fast.marking_draws`). The robust combiner runs its virtual BlindOracle and
  LRU caches of c = max(capacity, 1) pages, counts their misses, switches leader when the
  leader's count exceeds twice the other's, and evicts the least recently requested candidate
  outside the leader's virtual cache (else the least recently requested candidate).

Every rule above is a total order (a request index is unique), so the order in which the
reference lists the candidates never matters.

The predictions. A predictor is asked once per request the policy hears (``_see``), so a
request served without being cached (a bypass: no hook) is not predicted. The two built-in
predictors are reproduced exactly:

* ``oracle`` (:class:`~paging.predict.OraclePredictor`): its prediction of request t does not
  depend on the cache nor on which requests were predicted (the true next arrival plus noise
  drawn at reset, scaled by η·OPT at the partition's capacity), so the wrapper computes the
  whole array with the predictor's own code (:meth:`OraclePredictor.predictions`) once per
  distinct partition capacity (a ``-dist`` run has at most two distinct shares) and the kernel
  reads ``preds[row, t]``;
* ``frequency`` (:class:`~paging.predict.FrequencyPredictor`): page p's count of *predicted*
  requests, so it depends on the bypasses; the kernel keeps the count and evaluates the
  predictor's formula t + (t + 1)/c in float64 (the same division and addition as Python's).

Left in the reference loop (:func:`supports` is False, so :func:`paging.fast.plan` returns
None): any other predictor (a learned or user-registered one may keep any state and read
anything the context offers), a subclass of the two (it may change ``predict``), a ``-dist``
policy whose factory hands the same predictor object to every layer (the layers' resets would
overwrite one another's predictions; ``make_policy`` builds one per layer), and, as for every
kernel, a subclass of a policy that does not declare its own ``kernel``. Runs with a prefetcher
or a miss handler take the phase kernel (:mod:`paging.fast.phases`, the same predictions and
victim rules), routing hooks the reference loop. A compiled run leaves the policy object as it
was, except what a reference run leaves that callers read: a shared policy's ``oracle``
predictor is reset (its ``pred``, ``values`` and ``opt``), a shared combiner ends with its
``leader``, ``switches`` and ``cost``; the other bookkeeping (``pred``/``last`` dicts, marks,
the ``frequency`` predictor's counts, a ``-dist`` policy's sub-policies) exists only after a
reference run.

Cost per request: O(1) for a hit and for a miss with room (plus, for the combiner, O(c) when
its virtual BlindOracle evicts); per eviction O(k) (a pass over the partition's resident keys,
the markers' over its unmarked pages only), plus an expected O(m) quickselect for a uniform
draw among m unmarked pages; before the run O(N) for the oracle's predictions (and a Belady
run for its OPT when η > 0) and the markers' draws.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from paging.fast.common import buffers, frozen, is_grouped

#: the kinds of this family (``Policy.kernel = "predictive:KIND"``)
SCORE, BLIND, PMARKER, LMARKER, ROBUST = range(5)
#: predictor kinds: a precomputed array (``oracle``) or the frequency formula in the kernel
ORACLE, FREQUENCY = 0, 1


@njit(cache=True, nogil=True)
def _select(a, m, j):
    """The j-th smallest (0-based) of the distinct values a[:m], reordering a[:m]
    (quickselect, middle pivot)."""
    lo = 0
    hi = m - 1
    while lo < hi:
        pivot = a[(lo + hi) >> 1]
        i = lo
        k = hi
        while i <= k:
            while a[i] < pivot:
                i += 1
            while a[k] > pivot:
                k -= 1
            if i <= k:
                x = a[i]
                a[i] = a[k]
                a[k] = x
                i += 1
                k -= 1
        if j <= k:
            hi = k
        elif j >= i:
            lo = i
        else:
            return a[j]
    return a[j]


@njit(cache=True, nogil=True, inline="always")
def _swap(clist, ckey, clast, cpos, i, j):
    """Swap slots i and j of a partition's resident list (pages, keys, latest requests)."""
    a = clist[i]
    b = clist[j]
    clist[i] = b
    clist[j] = a
    cpos[b] = i
    cpos[a] = j
    x = ckey[i]
    ckey[i] = ckey[j]
    ckey[j] = x
    y = clast[i]
    clast[i] = clast[j]
    clast[j] = y


@njit(cache=True, nogil=True)
def predictive_kernel(pages, steps, sizes, n_experts, n_layers, caps, dist, kind, pkind,
                      preds, pred_row, score, hks, vcaps, draws, record, S, t0):
    """Replay ``pages`` under the policy ``kind``. ``sizes[p]`` is the room page p takes in
    the partition capacities ``caps`` (one partition, or one per layer with ``dist``);
    ``pkind`` says where predictions come from (``preds[pred_row[q], t]`` for partition q, or
    the frequency formula); ``score`` the gate scores (Score-Based); ``hks[q]`` the harmonic
    number H_k of partition q (PredictiveMarker); ``vcaps[q]`` the pages of the combiner's
    virtual caches of partition q (:func:`_vcaps`); ``draws`` the run's uniform draws
    (PredictiveMarker, LMarker). ``S`` is the run's state (:func:`pred_state`): None (a
    whole run: made in the kernel), a fresh one, or the one an earlier call left after the
    run's first ``t0`` requests (a run carried from piece to piece, :class:`Carried`: each
    call is given its piece alone, whose request i is the run's request ``t0 + i``; the keys,
    tie-breaks and the markers' request clock read that absolute index); its
    ``leader``, ``switches`` and ``cost`` (the virtual BlindOracle's and LRU's misses) end as
    each partition's combiner state, its ``page_miss`` counts every call's misses. Returns
    the tuple of :mod:`paging.fast.common` (the logs index the piece's requests), then the
    combiner's ``(leader, switches, cost)``.

    Partition q's resident pages are ``clist[q·span : q·span + ccount[q]]`` (insertion order
    does not matter: every rule is a total order), with their keys alongside (``ckey``: the
    prediction, or −H for Score-Based, so that every victim is the largest key, ties to the
    smallest ``clast``), so that a victim is one pass over contiguous arrays. The markers keep
    the unmarked pages first, ``clist[q·span : q·span + ucount[q]]``: marking a page moves it
    past that boundary, a new phase (every resident page unmarked) moves the boundary to the
    end, so that only the unmarked pages are scanned."""
    n = pages.size
    L = n_layers
    P = n_experts * n_layers
    span = n_experts if dist else P
    marking = kind == PMARKER or kind == LMARKER
    robust = kind == ROBUST
    # a whole run's state is made here (None: numba prunes the other branch, and the arrays
    # allocated in the kernel are known apart, which its loop is faster for), a carried one's
    # comes in
    # (at most two chains a request: one at its first eviction, one after a new phase, which
    # comes at most once a request under a byte budget)
    St = pred_state(P, caps.size, 2 * n + 1 if marking else 1) if S is None else S
    (resident, used, clist, ckey, clast, cpos, ccount, pin, evicted_pass, page_miss, unm, hist,
     fcount, ucount, evc, evph, phase, vt, cur, stale, chain_len, in_bo, bolist, bkey, blast,
     bopos, bocount, in_lru, lprev, lnext, lhead, ltail, lcount, leader, switches, cost,
     cnt) = St
    nch = cnt[0]
    n_draw = cnt[1]
    hit_mask, ev, byp = buffers(n, record, P if t0 > 0 else 0)
    misses = 0
    coll = 0
    n_ev = 0
    n_byp = 0
    grouped = is_grouped(steps)
    prev_s = -1
    g_start = 0
    g_end = 0
    for t in range(n):
        T = t0 + t  # the run's request index
        p = pages[t]
        s = steps[t]
        if s != prev_s:
            prev_s = s
            if grouped:
                j = t
                while j < n and steps[j] == s:
                    pin[pages[j]] = s
                    j += 1
                g_start = t
                g_end = j
        z = p // n_experts
        q = z if dist else 0
        base = q * span
        hit = resident[p]
        need = sizes[p]
        if hit:
            if record:
                hit_mask[t] = True
        else:
            misses += 1
            page_miss[p] += 1
            if evicted_pass[p] == s // L:
                coll += 1
            if used[q] + need > caps[q]:
                held = 0
                if grouped:
                    for j in range(g_start, g_end):
                        r = pages[j]
                        if resident[r] and (not dist or r // n_experts == z):
                            held += sizes[r]
                if need > caps[q] - held:
                    # capacity 0, a page larger than its partition, or pinned pages filling
                    # it: served uncached, and the policy hears nothing
                    if record > 1:
                        byp[n_byp] = t
                    n_byp += 1
                    continue
        # the policy hears request t (on_hit, victims or on_insert: once)
        if kind == SCORE:
            hist[p] += score[t]
            key = -hist[p]
        elif pkind == FREQUENCY:
            c = fcount[p] + 1
            fcount[p] = c
            key = T + (T + 1) / c
        else:
            key = preds[pred_row[q], T]
        if robust:
            vc = vcaps[q]
            if in_bo[p]:
                j = bopos[p]
                bkey[j] = key
                blast[j] = T
            else:
                cost[q, 0] += 1
                bn = bocount[q]
                if bn >= vc:  # the virtual BlindOracle evicts its furthest page
                    bj = base
                    bk = bkey[base]
                    bl = blast[base]
                    for j in range(base + 1, base + bn):
                        kj = bkey[j]
                        if kj > bk or (kj == bk and blast[j] < bl):
                            bj = j
                            bk = kj
                            bl = blast[j]
                    in_bo[bolist[bj]] = False
                    mv = base + bn - 1
                    bolist[bj] = bolist[mv]
                    bkey[bj] = bkey[mv]
                    blast[bj] = blast[mv]
                    bopos[bolist[bj]] = bj
                    bn -= 1
                j = base + bn
                bolist[j] = p
                bkey[j] = key
                blast[j] = T
                bopos[p] = j
                bocount[q] = bn + 1
                in_bo[p] = True
            if in_lru[p]:
                if ltail[q] != p:  # move to the tail
                    a = lprev[p]
                    b = lnext[p]
                    if a >= 0:
                        lnext[a] = b
                    else:
                        lhead[q] = b
                    lprev[b] = a
                    lprev[p] = ltail[q]
                    lnext[p] = -1
                    lnext[ltail[q]] = p
                    ltail[q] = p
            else:
                cost[q, 1] += 1
                if lcount[q] >= vc:
                    h = lhead[q]
                    b = lnext[h]
                    lhead[q] = b
                    if b >= 0:
                        lprev[b] = -1
                    else:
                        ltail[q] = -1
                    in_lru[h] = False
                    lcount[q] -= 1
                lprev[p] = ltail[q]
                lnext[p] = -1
                if ltail[q] >= 0:
                    lnext[ltail[q]] = p
                else:
                    lhead[q] = p
                ltail[q] = p
                in_lru[p] = True
                lcount[q] += 1
            lead = leader[q]
            if cost[q, lead] > 2 * cost[q, 1 - lead]:
                leader[q] = 1 - lead
                switches[q] += 1
        if hit:
            j = cpos[p]
            ckey[j] = key
            clast[j] = T
            if marking and j < base + ucount[q]:  # mark p: past the unmarked pages
                _swap(clist, ckey, clast, cpos, j, base + ucount[q] - 1)
                ucount[q] -= 1
            continue
        while used[q] + need > caps[q]:
            hi = base + ccount[q]
            bj = -1
            if kind == SCORE or kind == BLIND:
                bk = 0.0
                bl = 0
                for j in range(base, hi):
                    if grouped and pin[clist[j]] == s:
                        continue
                    kj = ckey[j]
                    if bj < 0 or kj > bk or (kj == bk and clast[j] < bl):
                        bj = j
                        bk = kj
                        bl = clast[j]
            elif robust:
                inlead = in_bo if leader[q] == 0 else in_lru
                out = -1
                bl = 0
                ol = 0
                for j in range(base, hi):
                    v = clist[j]
                    if grouped and pin[v] == s:
                        continue
                    lj = clast[j]
                    if bj < 0 or lj < bl:
                        bj = j
                        bl = lj
                    if not inlead[v] and (out < 0 or lj < ol):
                        out = j
                        ol = lj
                if out >= 0:
                    bj = out
            else:
                # the unmarked candidates: slots base.. base + m (rounds mode), or the slots
                # unm[:m] (groups mode: the pinned pages skipped)
                m = 0
                if grouped:
                    for j in range(base, base + ucount[q]):
                        if pin[clist[j]] != s:
                            unm[m] = j
                            m += 1
                else:
                    m = ucount[q]
                if m == 0:
                    # every candidate is marked: a new phase (marks, evictions, chains erased)
                    ucount[q] = ccount[q]
                    if grouped:
                        for j in range(base, hi):
                            if pin[clist[j]] != s:
                                unm[m] = j
                                m += 1
                    else:
                        m = ccount[q]
                    phase[q] += 1
                    vt[q] = -1
                if vt[q] != T:
                    vt[q] = T
                    st = evph[p] == phase[q]
                    stale[q] = st
                    if st:  # the eviction that removed p continues its chain
                        evph[p] = -1
                        ch = evc[p]
                        chain_len[ch] += 1
                        cur[q] = ch
                    else:   # a clean page starts a new chain
                        cur[q] = nch
                        chain_len[nch] = 1
                        nch += 1
                if kind == PMARKER:
                    rand = chain_len[cur[q]] > hks[q]
                else:
                    rand = stale[q]
                if rand:  # the unmarked candidate of rank ⌊u·m⌋ by page id
                    u = draws[n_draw]
                    n_draw += 1
                    for i in range(m):
                        unm[i] = clist[unm[i] if grouped else base + i]
                    bj = cpos[_select(unm, m, np.int64(u * m))]
                else:
                    bk = 0.0
                    bl = 0
                    for i in range(m):
                        j = unm[i] if grouped else base + i
                        kj = ckey[j]
                        if bj < 0 or kj > bk or (kj == bk and clast[j] < bl):
                            bj = j
                            bk = kj
                            bl = clast[j]
                v = clist[bj]
                evc[v] = cur[q]
                evph[v] = phase[q]
                # out of the unmarked pages: to the boundary, which moves down by one
                _swap(clist, ckey, clast, cpos, bj, base + ucount[q] - 1)
                ucount[q] -= 1
                bj = base + ucount[q]
            victim = clist[bj]
            mv = hi - 1
            clist[bj] = clist[mv]
            ckey[bj] = ckey[mv]
            clast[bj] = clast[mv]
            cpos[clist[bj]] = bj
            ccount[q] -= 1
            resident[victim] = False
            used[q] -= sizes[victim]
            evicted_pass[victim] = s // L
            if record > 1:
                ev[n_ev, 0] = t
                ev[n_ev, 1] = victim
                n_ev += 1
        j = base + ccount[q]
        clist[j] = p
        ckey[j] = key
        clast[j] = T
        cpos[p] = j
        ccount[q] += 1
        resident[p] = True
        used[q] += need
    cnt[0] = nch
    cnt[1] = n_draw
    return misses, coll, page_miss, hit_mask, ev, n_ev, byp, n_byp, (leader, switches, cost)


# -- set-up (Python) ---------------------------------------------------------------------------
def predictor_kind(predictor) -> int | None:
    from paging.predict import FrequencyPredictor, OraclePredictor

    return {OraclePredictor: ORACLE, FrequencyPredictor: FREQUENCY}.get(type(predictor))


def supports(policy, proto, kind: int, dist: bool) -> bool:
    """Whether the kernel reproduces ``policy`` (``proto`` its policy, or its ``-dist``
    factory's product): Score-Based always; a prediction policy when its predictor is
    ``oracle`` or ``frequency`` (exact types) and, per layer, each layer gets its own."""
    if kind == SCORE:
        return True
    if predictor_kind(proto.predictor) is None:
        return False
    return not dist or policy.factory().predictor is not proto.predictor




def predictions(trace, caps, proto, policy=None, dist=False, slots=None):
    """``(preds, pred_row)``: the ``oracle`` predictor's prediction of every request,
    ``preds[pred_row[q], t]`` for partition q of capacity ``caps[q]`` (its values depend on
    the partition's capacity only: one row per distinct share), made by the predictor's own
    code; empty rows for the ``frequency`` predictor, computed in the kernel. A shared
    ``policy`` given has its own predictor reset, as by a reference run. ``slots``: the room
    each page takes (a byte budget's sizes; None or ones: a capacity in pages), which the
    oracle's OPT reads as a reference run's context gives it."""
    from paging.policies.base import Context
    from paging.predict import OraclePredictor

    pred_row = np.zeros(caps.size, np.int64)
    if predictor_kind(proto.predictor) != ORACLE:
        return np.zeros((1, 0)), pred_row
    lay = trace.layout
    in_bytes = slots is not None and bool((np.asarray(slots) != 1).any())
    rows: dict[int, int] = {}
    arrays = []
    for i, c in enumerate(caps.tolist()):
        if c not in rows:
            ctx = Context(layout=lay, capacity=int(c), rng=np.random.default_rng(0),
                          steps=trace.steps, n_requests=trace.n_requests,
                          next_use=trace.next_use, in_bytes=in_bytes,
                          sizes=np.asarray(slots, dtype=np.int64) if in_bytes else None)
            rows[c] = len(arrays)
            if policy is not None and not dist:  # the policy's own predictor, reset as
                policy.predictor.reset(ctx)      # by a reference run
                arrays.append(policy.predictor.values)
            else:
                pr = OraclePredictor(proto.predictor.eta, proto.predictor.seed)
                arrays.append(pr.predictions(ctx))
        pred_row[i] = rows[c]
    return np.ascontiguousarray(np.stack(arrays)), pred_row


@njit(cache=True, nogil=True, inline="always")
def pred_state(P, parts, chains):
    """A cold state of :func:`predictive_kernel` over ``parts`` partitions of P pages, with
    room for ``chains`` marking chains (at most two a request, and one more): the cache
    (``resident``, ``used``, the partitions' resident lists with their keys and latest
    requests, ``pin``, the pass of each page's last eviction, ``page_miss``), Score-Based's
    sums, the frequency predictor's counts, the markers' phases and chains, the combiner's
    virtual BlindOracle and LRU and its ``leader``, ``switches`` and ``cost``, and the counts
    of chains and of draws consumed."""
    i64 = np.int64
    return (np.zeros(P, np.bool_), np.zeros(parts, i64), np.zeros(P, i64), np.zeros(P),
            np.zeros(P, i64), np.zeros(P, i64), np.zeros(parts, i64), np.full(P, -1, i64),
            np.full(P, -1, i64), np.zeros(P, i64), np.zeros(P, i64), np.zeros(P),
            np.zeros(P, i64), np.zeros(parts, i64), np.zeros(P, i64), np.full(P, -1, i64),
            np.zeros(parts, i64), np.full(parts, -1, i64), np.zeros(parts, i64),
            np.zeros(parts, np.bool_), np.zeros(max(chains, 1), i64), np.zeros(P, np.bool_),
            np.zeros(P, i64), np.zeros(P), np.zeros(P, i64), np.zeros(P, i64),
            np.zeros(parts, i64), np.zeros(P, np.bool_), np.full(P, -1, i64),
            np.full(P, -1, i64), np.full(parts, -1, i64), np.full(parts, -1, i64),
            np.zeros(parts, i64), np.zeros(parts, i64), np.zeros(parts, i64),
            np.zeros((parts, 2), i64), np.zeros(2, i64))


#: where :func:`pred_state`'s tuple keeps the marking chains
_CHAINS = 20


def marker_pages(caps, slots, n_pages: int, in_bytes: bool | None = None) -> np.ndarray:
    """Each partition's capacity in pages as the markers and the robust combiner's virtual
    caches count it (:func:`paging.predict.marker_k`: the capacity, or, under a byte budget,
    the smallest pages it holds); ``in_bytes`` None: a budget when some page weighs more than
    one. The one computation of both kernels (this one's and the phase kernel's)."""
    from paging.predict import marker_k

    if in_bytes is None:
        in_bytes = bool((np.asarray(slots) != 1).any())
    return np.array([marker_k(c, slots if in_bytes else None, n_pages) for c in caps.tolist()],
                    dtype=np.int64)


def _hks(kind: int, caps, slots, n_pages: int) -> np.ndarray:
    """H_k of each partition (PredictiveMarker; in pages, or, under a byte budget, of its
    bytes), zeros for the other kinds."""
    from paging.policies.predictive import harmonic

    if kind != PMARKER:
        return np.zeros(caps.size)
    return np.array([harmonic(k) for k in marker_pages(caps, slots, n_pages).tolist()])


def _vcaps(caps, slots, n_pages: int) -> np.ndarray:
    """The pages of the robust combiner's virtual BlindOracle and LRU in each partition, as
    ``RobustBlindOracle.reset`` counts them (:func:`marker_pages`)."""
    return marker_pages(caps, slots, n_pages)


#: the most requests one kernel call of a carried marker run serves: its chains array holds
#: the live chains (at most one per page) and at most two new chains per request of the call
#: (one at its first eviction, one more when a byte budget's evictions start a new phase)
PIECE = 1 << 14


class Carried:
    """A prediction-policy run fed piece by piece (a serving run's steps, a streamed trace's
    chunks: :class:`paging.fast.CarriedRun`), each piece cut between two groups; the
    ``frequency`` predictor only (``oracle`` reads the future, which a carried run does not
    have), and Score-Based, each piece given its requests' gate scores. Each kernel call serves
    its piece alone from the state the last one left, its request i being the run's request
    ``t0 + i`` (the keys t + (t + 1)/c, the tie-breaks and the markers' request clock read
    that absolute index, as a whole run's): no request of the pieces before is kept.

    PredictiveMarker's and LMarker's chains: a chain is read only through a page evicted in
    the current phase of its partition (``evph[p]`` equal to ``phase[q]``; phases only grow),
    so before a call that could outgrow the chains array (two new chains a request at most)
    the live chains are renumbered 0..m−1 (m at most one per page: :func:`_compact_chains`)
    and a piece longer than :data:`PIECE` is served in calls of at most that many requests,
    cut between groups. The array is P + 2·:data:`PIECE` + 1 long whatever the run's
    length (a group of more than :data:`PIECE` requests is served whole, the array grown for
    it: a group holds at most P pages). Their draws are
    :class:`paging.fast.CarriedRun`'s, from the count the state keeps (``S[-1][1]``).
    :meth:`feed` returns the piece's tuple of :mod:`paging.fast.common`."""

    def __init__(self, layout, spec, caps: np.ndarray, slots: np.ndarray):
        self.layout, self.spec, self.slots = layout, spec, slots
        self.caps = np.ascontiguousarray(caps, dtype=np.int64)
        self.kind = spec[1]
        self.hks = _hks(self.kind, self.caps, slots, layout.n_pages)
        self.vcaps = _vcaps(self.caps, slots, layout.n_pages)
        self.marking = self.kind in (PMARKER, LMARKER)
        P = layout.n_pages
        self.S = pred_state(P, self.caps.size, P + 2 * PIECE + 1 if self.marking else 1)
        self.n = 0  # the requests served so far

    def feed(self, pages, steps, hits: bool, draws: np.ndarray, scores=None,
             log: bool = False):
        """Serve the next piece with the run's draws from the state's count on (Score-Based:
        with its requests' gate ``scores``); its hit mask (the fourth item) is filled when
        ``hits`` or ``log``, and its eviction and bypass logs (indices into the piece) when
        ``log``."""
        score = np.zeros(0)
        if self.kind == SCORE:
            if scores is None or len(scores) != len(pages):
                raise ValueError("Score-Based's carried run needs each request's gate score")
            score = np.ascontiguousarray(scores, dtype=np.float64)
        rec = 2 if log else 1 if hits else 0
        n = len(pages)
        if not self.marking or n <= PIECE:
            return self._call(pages, steps, score, draws, rec)
        outs = []
        lo = 0
        while lo < n:
            hi = min(lo + PIECE, n)
            if hi < n:  # (cut between two groups: before the group request hi is in)
                hi = int(np.searchsorted(steps[lo:hi + 1], steps[hi], side="left")) + lo
                if hi == lo:  # (a group longer than a piece: whole)
                    hi = lo + int(np.searchsorted(steps[lo:], steps[lo], side="right"))
            outs.append((lo, self._call(pages[lo:hi], steps[lo:hi], score[lo:hi], draws,
                                        rec)))
            lo = hi
        return _joined(outs, rec)

    def _call(self, pages, steps, score, draws, rec: int):
        """One kernel call on ``pages`` (its chains renumbered first when they could run out)."""
        S = self.S
        chains = S[_CHAINS]
        need = int(S[-1][0]) + 2 * len(pages) + 1
        if self.marking and need > chains.size:
            _compact_chains(S, self.layout.n_experts, bool(self.spec[2]))
            need = int(S[-1][0]) + 2 * len(pages) + 1
            if need > chains.size:  # (a group longer than PIECE, served whole: at most P)
                grown = np.zeros(need, np.int64)
                grown[:chains.size] = chains
                self.S = S = (*S[:_CHAINS], grown, *S[_CHAINS + 1:])
        lay = self.layout
        # read-only inputs, as a whole run's (common.frozen; the slots are CarriedRun's)
        out = predictive_kernel(frozen(pages), frozen(steps), self.slots, lay.n_experts,
                                lay.n_layers, self.caps, self.spec[2], self.kind, FREQUENCY,
                                frozen(np.zeros((1, 0))), np.zeros(self.caps.size, np.int64),
                                frozen(score), self.hks, self.vcaps, frozen(draws), rec, S,
                                self.n)[:8]
        self.n += len(pages)
        return out


def _compact_chains(S, n_experts: int, dist: bool) -> None:
    """Renumber the markers' live chains 0..m−1 in the state ``S`` (:func:`pred_state`): a
    chain is live while a page it evicted in the current phase of the page's partition can
    continue it (``evph[p] == phase[q]``); the others are never read again (a phase only
    grows, and a new eviction writes ``evc`` and ``evph`` together). The current chain
    ``cur[q]`` is read only within the request that set it, so never across two calls."""
    evc, evph, phase, cur, chain_len, cnt = S[14], S[15], S[16], S[18], S[_CHAINS], S[-1]
    P = evc.size
    part = np.arange(P) // n_experts if dist else np.zeros(P, np.int64)
    live = evph == phase[part]
    ids, inv = np.unique(evc[live], return_inverse=True)
    chain_len[:ids.size] = chain_len[ids]
    evc[live] = inv
    cur[:] = 0
    cnt[0] = ids.size


def _joined(outs: list, rec: int) -> tuple:
    """The tuple of :mod:`paging.fast.common` of one piece served in several calls,
    ``outs`` = ``[(offset, tuple), ...]``: counts summed, logs shifted by their call's
    offset and joined, the running per-page misses the last call's."""
    misses = sum(int(o[0]) for _, o in outs)
    coll = sum(int(o[1]) for _, o in outs)
    hit_mask = np.concatenate([o[3] for _, o in outs]) if rec else np.zeros(0, np.bool_)
    ev = [o[4][:o[5]] + np.array([lo, 0]) for lo, o in outs]
    byp = [o[6][:o[7]] + lo for lo, o in outs]
    ev = np.concatenate(ev) if ev else np.zeros((0, 2), np.int64)
    byp = np.concatenate(byp) if byp else np.zeros(0, np.int64)
    # (the logs are filled only when asked for; the counts are the kernel's)
    return (misses, coll, outs[-1][1][2], hit_mask, ev, sum(int(o[5]) for _, o in outs), byp,
            sum(int(o[7]) for _, o in outs))


def execute(trace, spec, slots, capacity: int, record: int, draws=None, policy=None):
    """Run the kernel of ``spec`` (:func:`paging.fast.plan`: its ``proto`` carries the
    predictor) on ``trace``; ``slots[p]`` is the room page p takes in ``capacity``; ``draws``
    the run's uniform draws (PredictiveMarker, LMarker). A shared combiner given as
    ``policy`` ends with the run's ``leader`` and ``switches``."""
    from paging.errors import PagingError

    _, kind, dist = spec
    proto = spec.proto
    lay = trace.layout
    caps = lay.dist_shares(capacity) if dist else np.array([capacity], dtype=np.int64)
    caps = np.ascontiguousarray(caps, dtype=np.int64)
    pkind = FREQUENCY
    preds = np.zeros((1, 0))
    pred_row = np.zeros(caps.size, np.int64)
    score = np.zeros(0)
    if kind == SCORE:
        if trace.score is None:  # the reference's error, naming the policy (a -dist one too)
            who = policy.name if policy is not None else proto.name + ("-dist" if dist else "")
            raise PagingError(f"{who} reads gate scores and the trace has none")
        score = np.ascontiguousarray(trace.score, dtype=np.float64)
    else:
        pkind = predictor_kind(proto.predictor)
        preds, pred_row = predictions(trace, caps, proto, policy, dist, slots)
    hks = _hks(kind, caps, slots, lay.n_pages)
    if draws is None:
        draws = np.zeros(1)
    out = predictive_kernel(frozen(trace.pages), frozen(trace.steps), frozen(slots),
                            lay.n_experts, lay.n_layers, caps, dist, kind, pkind, frozen(preds),
                            pred_row, frozen(score), hks, _vcaps(caps, slots, lay.n_pages),
                            frozen(draws), record, None, 0)
    if policy is not None and kind == ROBUST and not dist:
        # what a reference run leaves (RobustBlindOracle.cost, .leader, .switches)
        leader, switches, cost = out[8]
        policy.leader, policy.switches = int(leader[0]), int(switches[0])
        policy.cost = [int(c) for c in cost[0]]
    return out[:8]
