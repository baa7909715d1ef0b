"""The latency timeline: a simulated run replayed on one GPU compute stream and one copy stream.

An observer of the one simulator (DESIGN.md, "Extensions on the one simulator"): it reads a
recorded :class:`~paging.result.Result` (which requests hit) and the trace's layer clock, and
charges time by the cost model (:mod:`paging.cost.arith`):

* **groups.** A *group* is a run of requests with the same step: the K experts of one
  (token, layer) in groups mode, one request in rounds mode. Its non-expert work (attention,
  router, norms: :func:`~paging.cost.arith.non_expert_ms`) is charged once per (token, layer),
  at the request of rank 0 (rounds mode revisits a layer K times per token).
* **demand misses.** When a group starts (the router has decided), the missing experts are
  queued on the copy stream in request order; each transfer takes its page's fetch time
  (``fetch_ms[p]``: host or SSD tier, :func:`~paging.cost.arith.page_costs`) and starts when the
  copy stream is free. The compute stream runs the group's resident experts first, then each
  missing expert as soon as its transfer has landed: a miss *stalls its layer* until then.
  A bypassed request (served without caching) is a miss here too.
* **compute.** Each expert costs :func:`~paging.cost.arith.expert_compute_ms` for the number of
  tokens it serves (1, or the prompt tokens routed to it in a batched prefill,
  :func:`batch_prefill`); a batched prefill's layer charges its non-expert work for the whole
  prompt.

* **prefetches** (SpecMD Algorithm 1, phase 3; :func:`timeline_run` of a run with a
  prefetcher): the pages the loop prefetched after a group are queued on the same copy stream
  right after that group's demand transfers. Every page has a *ready time* (when its last
  prefetch landed); a request that hits a page whose transfer has not landed waits for it (a
  *late* prefetch: a partial stall, counted once per prefetch in ``prefetch_late``). Bytes
  moved include the prefetches.
* **miss handling** (:mod:`paging.miss`): a dropped request is neither fetched nor computed; a
  substituted one runs the substitute (a resident page) like a hit; a fetch at a lower
  precision level takes that level's fetch time and bytes.

Without prefetching and with the default miss handling the numbers are exactly those of the
demand-only replay (:func:`timeline` runs the same kernel as before).

Sensitivity options (:func:`timeline`, :func:`timeline_run`, ``paging simulate
--token-overhead-ms``, ``--prefetch-streams``, ``--prefetch-link``); their defaults leave every
number as it was:

* **per-token overhead** (``token_overhead_ms``, default 0): a fixed time charged on the
  compute stream once per token, when the token's first group starts (before its non-expert
  work): whatever a real engine spends per forward pass outside the modelled layers (kernel
  launches, the framework, sampling). A token is a value of the trace's token column: a decode
  token, a prompt token of a token-by-token prefill, or the one pass of a batched prefill
  (:func:`batch_prefill`), so TTFT gains one overhead with a batched prefill and each decode
  token one (TPOT grows by exactly the overhead when nothing waits on a transfer). It counts as
  compute, not stall. No paper gives a value: it is an input for sensitivity, not a constant.
* **prefetch streams** (``prefetch_streams``, default 1). SpecMD's watchdog "issu[es]
  non-blocking CUDA transfers when space allows" (App. A.3) and the prefetch loop "operates
  asynchronously" (Sec. 3.1.4). With 1, prefetches queue on the demand transfers' FIFO copy
  stream behind the group's demand misses (a demand miss waits for every prefetch queued
  before it). With 2, prefetches go on a second copy stream of their own, so a demand miss
  never queues behind a prefetch; a group's prefetches are still issued when its demand
  transfers have landed (Algorithm 1: "Phase 3: Prefetch submission" follows phase 2, where
  fetch "blocks until the expert loads"), as with one stream. ``prefetch_link``:
  ``"shared"`` (default with 2 streams) — the two streams share the link's bandwidth: while
  both transfer, each moves at half the link's rate (a fluid, processor-sharing split; the
  assumption is that the link, not the DMA engines, is the bottleneck and that it is split
  evenly between two concurrent copies);
  ``"separate"`` — each stream moves at the full rate whatever the other does (an upper bound
  on what a second stream can gain, as if prefetches had a link of their own). A page
  prefetched and still in flight makes its first use wait (``prefetch_late``) as before.
  ``copy_busy_ms`` stays the sum of the transfer times at full bandwidth.

Reported: time to first token (the prefill phase, when the trace has one), decode time, time per
output token and tokens/s, stall time and its fraction of the total, bytes moved.
Cost: O(N) in a compiled loop (the timeline adds a fraction of a simulated run's time).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from numba import njit

from paging.cost.arith import expert_compute_ms, non_expert_ms
from paging.errors import PagingError, check_time
from paging.trace import Trace, group_starts, n_distinct


@njit(cache=True, nogil=True)
def _timeline(steps, kind, used, fetch_ms, sizes, req_ms, req_bytes, pf_at, pf_page, first,
              comp, comp1, lay, lay1, marks, new_token, overhead, streams, shared, x0, ready0,
              fresh0):
    """Replay the groups on the streams.

    ``kind[r]``: 0 hit, 1 fetched miss, 2 dropped, 3 substituted; ``used[r]`` the page that
    serves request r (the substitute for kind 3). A fetched miss moves ``req_ms[r]`` /
    ``req_bytes[r]`` (its precision's), or its page's ``fetch_ms`` / ``sizes`` when those
    arrays are empty. Prefetch i (``pf_at[i]`` = index of the request after which it was
    issued + 1, non-decreasing) moves page ``pf_page[i]`` at the run's precision. Expert
    compute is ``comp[r]`` (or ``comp1`` when ``comp`` is empty), non-expert time ``lay[r]``
    (or ``lay1``) charged when ``first[r]`` (every request when ``first`` is empty). Returns
    ``(total, at_marks, stall_ms, copy_busy_ms, bytes_moved, late)``: the compute stream's final
    time, its time when the group holding request ``marks[m] - 1`` ends for every mark (the
    ends of prefills and of sequences; non-decreasing, 0 for a mark of 0), the stall, the copy
    stream's busy time, the bytes moved, the prefetched pages whose first use waited for
    their transfer, and the time the copy stream is free at the end.

    A replay can start from a copy stream busy until ``x0`` and from pages in flight: with
    ``ready0`` (when each page's transfer lands) and ``fresh0`` (prefetched and not used yet)
    given, non-empty, they are read and updated in place (a serving run carries them from
    step to step, :func:`step_time`); empty, the replay starts idle (one stream only).

    ``overhead`` ms go on the compute stream when a group opens a new token (``new_token[r]``
    at its first request; nothing when ``new_token`` is empty or ``overhead`` is 0).
    ``streams`` = 1: demand transfers and prefetches share one FIFO copy stream (the default);
    2: prefetches go on a second copy stream (:func:`timeline_run`), the link's bandwidth
    split evenly while both streams transfer (``shared``) or not (each at full speed)."""
    if streams == 2:
        return _two_streams(steps, kind, used, fetch_ms, sizes, req_ms, req_bytes, pf_at,
                            pf_page, first, comp, comp1, lay, lay1, marks, new_token, overhead,
                            shared)
    n = steps.size
    c = 0.0  # compute stream free at
    x = x0  # copy stream free at
    stall = 0.0
    busy = 0.0
    nbytes = 0
    late = 0
    at_marks = np.zeros(marks.size)
    m = 0
    while m < marks.size and marks[m] <= 0:
        m += 1
    carried = ready0.size > 0
    # when each page's last transfer lands; prefetched and not yet used
    ready = ready0 if carried else np.zeros(fetch_ms.size)
    fresh = fresh0 if carried else np.zeros(fetch_ms.size, dtype=np.bool_)
    all_first = first.size == 0
    per_request = req_ms.size > 0
    k = 0
    npf = pf_at.size
    track = npf > 0 or carried
    i = 0
    while i < n:
        j, c = _group_start(i, n, c, steps, new_token, overhead, first, all_first, lay, lay1)
        t0 = c  # the router has decided: demand transfers are issued now, back to back
        land = x if x > t0 else t0
        for r in range(i, j):  # resident (or substitute) experts first, each once it has landed
            if kind[r] == 0 or kind[r] == 3:
                if track:  # only prefetched pages can be resident but not landed yet
                    u = used[r]
                    if ready[u] > c:
                        stall += ready[u] - c
                        c = ready[u]
                        if fresh[u]:
                            late += 1
                    fresh[u] = False
                c += comp[r] if comp.size else comp1
        for r in range(i, j):  # each missing expert runs once its transfer has landed
            if kind[r] == 1:
                p = used[r]
                ms = req_ms[r] if per_request else fetch_ms[p]
                land += ms
                busy += ms
                nbytes += req_bytes[r] if per_request else sizes[p]
                if land > c:
                    stall += land - c
                    c = land
                c += comp[r] if comp.size else comp1
        while k < npf and pf_at[k] <= j:  # prefetches of this group, behind its demand
            p = pf_page[k]
            land += fetch_ms[p]
            busy += fetch_ms[p]
            nbytes += sizes[p]
            ready[p] = land
            fresh[p] = True
            k += 1
        x = land
        while m < marks.size and marks[m] <= j:
            at_marks[m] = c
            m += 1
        i = j
    return c, at_marks, stall, busy, nbytes, late, x


@njit(cache=True, nogil=True)
def _two_streams(steps, kind, used, fetch_ms, sizes, req_ms, req_bytes, pf_at, pf_page, first,
                 comp, comp1, lay, lay1, marks, new_token, overhead, shared):
    """:func:`_timeline` with prefetches on a second copy stream (module docstring,
    "prefetch streams"). The prefetch stream is a FIFO of the prefetches issued so far
    (``qh`` .. ``k`` − 1, the head with ``rem`` ms of work left at full bandwidth) simulated up
    to time ``pt``. Per group: advance it alone to the group's start t0; run the group's
    demand transfers (issued at t0 on the demand stream) against it — with ``shared``, each
    stream moves at half speed while both transfer (a fluid, processor-sharing split of one
    link), else the demand stream at full speed and the prefetch stream unaffected; queue the
    group's prefetches when its demand transfers have landed (SpecMD's Algorithm 1 submits
    them in phase 3, after phase 2's blocking fetches; the one-stream replay queues them
    behind the same transfers); then, when a hit needs a prefetch still queued, advance the
    prefetch stream alone until it lands (no demand transfer runs then: the next group's
    start is later)."""
    n = steps.size
    c = 0.0
    xd = 0.0  # demand stream free at
    stall = 0.0
    busy = 0.0
    nbytes = 0
    late = 0
    at_marks = np.zeros(marks.size)
    m = 0
    while m < marks.size and marks[m] <= 0:
        m += 1
    P = fetch_ms.size
    ready = np.zeros(P)  # when each page's latest transfer lands (inf: still queued)
    fresh = np.zeros(P, dtype=np.bool_)
    last = np.full(P, -1, np.int64)  # the page's latest prefetch (-1: none pending)
    dland = np.zeros(n)  # landing time of each demand transfer of the current group
    all_first = first.size == 0
    per_request = req_ms.size > 0
    npf = pf_at.size
    k = 0  # prefetches queued so far
    qh = 0  # head of the prefetch stream's queue
    rem = 0.0  # work left on the head (ms at full bandwidth)
    pt = 0.0  # the prefetch stream is simulated up to pt
    i = 0
    while i < n:
        j, c = _group_start(i, n, c, steps, new_token, overhead, first, all_first, lay, lay1)
        t0 = c
        pt, qh, rem = _run_alone(pt, qh, k, rem, t0, pf_page, fetch_ms, last, ready)
        # the group's demand transfers, issued at t0, against the prefetch stream
        tau = xd if xd > t0 else t0  # (free by t0: the compute stream waited for it)
        for r in range(i, j):
            if kind[r] != 1:
                continue
            p = used[r]
            w = req_ms[r] if per_request else fetch_ms[p]
            busy += w
            nbytes += req_bytes[r] if per_request else sizes[p]
            if not shared:
                tau += w
            else:
                while w > 0.0:
                    if qh < k:  # both streams move at half speed until one finishes
                        d = w if w <= rem else rem
                        tau += 2.0 * d
                        w -= d
                        rem -= d
                        if rem <= 0.0:
                            qh, rem = _land_head(qh, k, tau, pf_page, fetch_ms, last, ready)
                    else:
                        tau += w
                        w = 0.0
            dland[r] = tau
        xd = tau
        # this group's prefetches join the queue when its demand transfers have landed
        # (Algorithm 1: phase 3 follows phase 2, where a fetch blocks until the expert loads)
        if shared:
            if tau > pt:
                pt = tau  # the stream moved along with the demand transfers up to tau
        else:  # the stream alone up to tau
            pt, qh, rem = _run_alone(pt, qh, k, rem, tau, pf_page, fetch_ms, last, ready)
        while k < npf and pf_at[k] <= j:
            q = pf_page[k]
            if qh == k:
                rem = fetch_ms[q]
            busy += fetch_ms[q]
            nbytes += sizes[q]
            ready[q] = np.inf
            last[q] = k
            fresh[q] = True
            k += 1
        for r in range(i, j):  # resident (or substitute) experts first, each once it has landed
            if kind[r] == 0 or kind[r] == 3:
                u = used[r]
                if npf:
                    while last[u] >= 0:  # its prefetch is still queued: run the stream alone
                        pt += rem
                        qh, rem = _land_head(qh, k, pt, pf_page, fetch_ms, last, ready)
                    if ready[u] > c:
                        stall += ready[u] - c
                        c = ready[u]
                        if fresh[u]:
                            late += 1
                    fresh[u] = False
                c += comp[r] if comp.size else comp1
        for r in range(i, j):  # each missing expert runs once its transfer has landed
            if kind[r] == 1:
                p = used[r]
                land = dland[r]
                ready[p] = land
                last[p] = -1
                fresh[p] = False
                if land > c:
                    stall += land - c
                    c = land
                c += comp[r] if comp.size else comp1
        while m < marks.size and marks[m] <= j:
            at_marks[m] = c
            m += 1
        i = j
    return c, at_marks, stall, busy, nbytes, late, xd


@njit(cache=True, nogil=True)
def _group_start(i, n, c, steps, new_token, overhead, first, all_first, lay, lay1):
    """The end ``j`` of the group starting at request ``i`` (its requests share a step) and the
    compute clock once the router has decided: ``c`` plus a new token's overhead and the layer
    computation of every request that is the first of its layer pass."""
    j = i + 1
    while j < n and steps[j] == steps[i]:
        j += 1
    if overhead > 0.0 and new_token.size and new_token[i]:
        c += overhead
    for r in range(i, j):
        if all_first or first[r]:
            c += lay[r] if lay.size else lay1
    return j, c


@njit(cache=True, nogil=True)
def _land_head(qh, k, t, pf_page, fetch_ms, last, ready):
    """The head of the prefetch queue lands at ``t``: its page is ready (unless a later
    prefetch of the same page is queued) and the next one starts. Returns ``(qh, rem)``."""
    q = pf_page[qh]
    if last[q] == qh:
        ready[q] = t
        last[q] = -1
    qh += 1
    return qh, (fetch_ms[pf_page[qh]] if qh < k else 0.0)


@njit(cache=True, nogil=True)
def _run_alone(pt, qh, k, rem, until, pf_page, fetch_ms, last, ready):
    """The prefetch stream alone, at full speed, from ``pt`` up to ``until``: the transfers
    that finish land; returns ``(until, qh, rem)``."""
    while qh < k and pt + rem <= until:
        pt += rem
        qh, rem = _land_head(qh, k, pt, pf_page, fetch_ms, last, ready)
    if qh < k:
        rem -= until - pt
    return until, qh, rem


@dataclass
class Timing:
    """What the timeline reports (times in ms). ``ttft_ms`` is None for a trace without a
    prefill phase; ``decode_tokens`` counts the tokens of the decode phase (all tokens when the
    trace has no phases)."""

    time_ms: float
    compute_ms: float
    stall_ms: float
    stall_fraction: float
    copy_busy_ms: float
    bytes_moved: int
    ttft_ms: float | None
    decode_ms: float
    decode_tokens: int
    tpot_ms: float | None
    tokens_per_s: float | None
    prefetch_late: int | None = None
    #: a warm run (:mod:`paging.warm`): one record per sequence, in run order, with its
    #: ``start_ms`` / ``end_ms`` on the run's clock, ``ttft_ms`` (None without a prefill),
    #: ``decode_ms``, ``decode_tokens``, ``tpot_ms`` and ``tokens_per_s``; None for a cold run
    per_sequence: list | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def _tokens_and_first(trace: Trace) -> tuple[np.ndarray, np.ndarray | None]:
    """Token of every request, and whether the request opens its (token, layer) (None: every
    request does, a trace without ranks): the first of its group in groups mode (a batched
    prefill's group holds several experts of best rank 0), the round of rank 0 in rounds
    mode."""
    tok = trace.token if trace.token is not None else trace.passes
    if trace.rank is None:
        first = None
    elif trace.expand == "groups":
        first = np.zeros(trace.n_requests, dtype=bool)
        first[group_starts(trace.steps)] = True
    else:
        first = np.asarray(trace.rank == 0)
    return np.asarray(tok), first


#: prefetch copy streams a timeline may have, and how two of them share the link
PREFETCH_STREAMS = (1, 2)
PREFETCH_LINKS = ("shared", "separate")


def timeline_options(token_overhead_ms=0.0, prefetch_streams=1,
                     prefetch_link="shared") -> tuple[float, int, bool]:
    """Validate the sensitivity options (module docstring): ``(overhead, streams, shared)``,
    or a one-line :class:`PagingError`."""
    import math

    try:
        ov = float(token_overhead_ms)
    except (TypeError, ValueError):
        ov = math.nan
    if not (math.isfinite(ov) and ov >= 0):
        raise PagingError(f"the per-token overhead must be a finite number of ms >= 0, got "
                          f"{token_overhead_ms!r}")
    check_time("the per-token overhead", ov)
    if isinstance(prefetch_streams, bool) or prefetch_streams not in PREFETCH_STREAMS:
        raise PagingError(f"prefetch streams must be 1 (one copy stream) or 2 (a second, "
                          f"concurrent one for prefetches), got {prefetch_streams!r}")
    if prefetch_link not in PREFETCH_LINKS:
        raise PagingError(f"prefetch link must be shared or separate, got {prefetch_link!r}")
    return ov, int(prefetch_streams), prefetch_link == "shared"


def _new_token(tok: np.ndarray, overhead: float) -> np.ndarray:
    """Whether each request opens a new token (empty when there is no overhead to charge)."""
    if overhead <= 0 or tok.size == 0:
        return np.zeros(0, bool)
    return np.r_[True, tok[1:] != tok[:-1]]


def timeline(trace: Trace, hit_mask: np.ndarray, *, model, precision, hardware,
             fetch_ms: np.ndarray, sizes: np.ndarray, batch: np.ndarray | None = None,
             token_overhead_ms: float = 0.0, prefetch_streams: int = 1,
             prefetch_link: str = "shared") -> Timing:
    """Replay a recorded run on the cost model's streams (see the module docstring).

    Parameters
    ----------
    trace : Trace
        The simulated sequence (rounds or groups mode; a :func:`batch_prefill` trace for a
        realistic prefill).
    hit_mask : numpy.ndarray
        ``Result.hit_mask`` of the run (``simulate(..., record=True)``).
    model, precision, hardware
        :mod:`paging.cost` presets (objects).
    fetch_ms : numpy.ndarray
        Fetch time of every page id in ms (:func:`paging.cost.arith.page_costs`).
    sizes : numpy.ndarray
        Bytes of every page id (:func:`paging.cost.arith.page_sizes`).
    batch : numpy.ndarray, optional
        Tokens served by each request (default 1; :func:`batch_prefill` gives the counts).
    token_overhead_ms, prefetch_streams, prefetch_link
        The sensitivity options of the module docstring (defaults: today's timeline; a run
        without prefetches is the same with 1 or 2 streams).

    Returns
    -------
    Timing
    """
    ov, streams, shared = timeline_options(token_overhead_ms, prefetch_streams, prefetch_link)
    N = trace.n_requests
    mask = np.asarray(hit_mask, dtype=bool)
    if mask.shape != (N,):
        raise PagingError(f"the hit mask has {mask.size} entries for a trace of {N} requests")
    b = np.ones(N, dtype=np.int64) if batch is None else np.asarray(batch, dtype=np.int64)
    if b.shape != (N,) or (b < 1).any():
        raise PagingError("batch must give a token count >= 1 for every request")
    tok, first = _tokens_and_first(trace)
    comp, comp1, lay, lay1 = _compute_times(model, precision, hardware, b if batch is not None
                                            else None, N, trace)
    marks = _marks(trace)
    none_f, none_i = np.zeros(0), np.zeros(0, np.int64)
    total, at_marks, stall, busy, nbytes, _, _ = _timeline(
        trace.steps, (~mask).view(np.int8), trace.pages, np.asarray(fetch_ms, dtype=np.float64),
        np.asarray(sizes, dtype=np.int64), none_f, none_i, none_i, none_i,
        np.zeros(0, bool) if first is None else first, comp, comp1, lay, lay1, marks,
        _new_token(np.asarray(tok), ov), ov, streams, shared, 0.0, none_f, np.zeros(0, bool))
    return _timing(trace, tok, total, at_marks, stall, busy, nbytes, None)


def _compute_times(model, precision, hardware, batch, N, trace=None):
    """Per-request compute and non-expert times (arrays), or two constants without a batch.

    An expert computes for the tokens it serves (``batch``); a layer's non-expert work, for
    the tokens of its pass: the ``batch`` of the request that opens the group, except in a
    batched prefill pass of ``trace`` (:func:`paging.warm.prefill_ranges`), where every prompt
    token crosses the layer whichever expert opens the group (as the serving model charges a
    step's tokens, :mod:`paging.serve.engine`)."""
    empty = np.zeros(0)
    b = batch
    if batch is None:  # one token per request: two constants
        comp, lay = empty, empty
        comp1 = expert_compute_ms(model, precision, hardware, 1)
        lay1 = non_expert_ms(model, hardware, 1)
    else:
        comp = np.zeros(N)
        lay = np.zeros(N)
        comp1 = lay1 = 0.0
        for size in np.unique(b).tolist():
            sel = b == size
            comp[sel] = expert_compute_ms(model, precision, hardware, int(size))
            lay[sel] = non_expert_ms(model, hardware, int(size))
        if trace is not None:
            from paging.warm import prefill_ranges

            for lo, hi, tokens in prefill_ranges(trace):
                lay[lo:hi] = non_expert_ms(model, hardware, tokens)
    return comp, comp1, lay, lay1


def _marks(trace: Trace) -> np.ndarray:
    """Requests at which the timeline reads its clock: the prefill's end for a cold run; for a
    warm run (:mod:`paging.warm`) every sequence's prefill end and end."""
    if trace.meta.get("warm"):
        out = []
        for rec in trace.meta["warm"]:
            pre = (rec.get("phase_bounds") or {}).get("prefill")
            out += [int(pre[1]) if pre and pre[1] > pre[0] else int(rec["start"]),
                    int(rec["end"])]
        return np.asarray(out, dtype=np.int64)
    pre = (trace.meta.get("phase_bounds") or {}).get("prefill")
    has_prefill = pre is not None and pre[1] > pre[0]
    return np.asarray([int(pre[1])] if has_prefill else [], dtype=np.int64)


def _rates(decode_ms: float, dec_tokens: int) -> tuple[float | None, float | None]:
    tpot = decode_ms / dec_tokens if dec_tokens else None
    tps = dec_tokens / (decode_ms / 1e3) if dec_tokens and decode_ms > 0 else None
    return tpot, tps


def _per_sequence(trace, tok, at_marks) -> list[dict]:
    out, t0 = [], 0.0
    for i, rec in enumerate(trace.meta["warm"]):
        pre = (rec.get("phase_bounds") or {}).get("prefill")
        has_pre = bool(pre and pre[1] > pre[0])
        t_pre, t_end = float(at_marks[2 * i]), float(at_marks[2 * i + 1])
        a = int(pre[1]) if has_pre else int(rec["start"])
        dec_tokens = n_distinct(tok[a:int(rec["end"])])
        decode_ms = t_end - (t_pre if has_pre else t0)
        tpot, tps = _rates(decode_ms, dec_tokens)
        out.append({"trace": rec["name"], "position": i, "start_ms": t0, "end_ms": t_end,
                    "ttft_ms": t_pre - t0 if has_pre else None, "decode_ms": decode_ms,
                    "decode_tokens": dec_tokens, "tpot_ms": tpot, "tokens_per_s": tps})
        t0 = t_end
    return out


def _timing(trace, tok, total, at_marks, stall, busy, nbytes, late) -> Timing:
    N = trace.n_requests
    per = None
    if trace.meta.get("warm"):
        per = _per_sequence(trace, tok, at_marks)
        ttfts = [r["ttft_ms"] for r in per if r["ttft_ms"] is not None]
        ttft = sum(ttfts) if ttfts else None  # the run's time spent in prefills
        dec_tokens = sum(r["decode_tokens"] for r in per)
        decode_ms = sum(r["decode_ms"] for r in per)
    else:
        bounds = trace.meta.get("phase_bounds") or {}
        pre = bounds.get("prefill")
        if pre is not None and pre[1] > pre[0]:
            ttft = float(at_marks[0])
            dec = bounds.get("decode", [pre[1], N])
            dec_tokens = n_distinct(tok[dec[0]:dec[1]])
        else:
            ttft = None
            dec_tokens = n_distinct(tok)
        decode_ms = total - (ttft or 0.0)
    tpot, tps = _rates(decode_ms, dec_tokens)
    return Timing(time_ms=total, compute_ms=total - stall, stall_ms=stall,
                  stall_fraction=stall / total if total else 0.0, copy_busy_ms=busy,
                  bytes_moved=int(nbytes), ttft_ms=ttft, decode_ms=decode_ms,
                  decode_tokens=dec_tokens, tpot_ms=tpot, tokens_per_s=tps,
                  prefetch_late=None if late is None else int(late), per_sequence=per)


def timeline_run(trace: Trace, result, *, model, precision, hardware, fetch_ms: np.ndarray,
                 sizes: np.ndarray, batch: np.ndarray | None = None,
                 token_overhead_ms: float = 0.0, prefetch_streams: int = 1,
                 prefetch_link: str = "shared") -> Timing:
    """The timeline of a recorded :class:`~paging.result.Result`: :func:`timeline` on its hit
    mask for a default run (and for a routed run, given the trace of what it served,
    :func:`paging.routing.served.served_trace`); for a run with a prefetcher or a miss
    handler (``result.events``, ``simulate(..., record=True)``), the replay with prefetches
    on the copy stream (or their own, ``prefetch_streams=2``), ready times, dropped and
    substituted requests and per-level fetches (module docstring). ``prefetch_late`` counts
    the prefetches whose first use had to wait for their transfer. ``token_overhead_ms``,
    ``prefetch_streams`` and ``prefetch_link``: the sensitivity options of the module
    docstring (defaults: today's numbers).
    """
    ov, streams, shared = timeline_options(token_overhead_ms, prefetch_streams, prefetch_link)
    if result.hit_mask is None:
        raise PagingError("the timeline needs a recorded run (simulate(..., record=True))")
    ev = result.events
    # a default run, or a routed one (whose events are its served requests: ``trace`` is then
    # :func:`paging.routing.served.served_trace`)
    if ev is None or ("prefetched" not in ev and "dropped" not in ev):
        return timeline(trace, result.hit_mask, model=model, precision=precision,
                        hardware=hardware, fetch_ms=fetch_ms, sizes=sizes, batch=batch,
                        token_overhead_ms=ov, prefetch_streams=streams,
                        prefetch_link=prefetch_link)
    N = trace.n_requests
    mask = np.asarray(result.hit_mask, dtype=bool)
    if mask.shape != (N,):
        raise PagingError(f"the hit mask has {mask.size} entries for a trace of {N} requests")
    b = None if batch is None else np.asarray(batch, dtype=np.int64)
    pages = trace.pages
    fetch_ms = np.asarray(fetch_ms, dtype=np.float64)
    sizes = np.asarray(sizes, dtype=np.int64)
    kind = np.where(mask, 0, 1).astype(np.int8)
    kind[ev["dropped"]] = 2
    used = pages.copy()
    sub = ev["substituted"]
    kind[sub[:, 0]] = 3
    used[sub[:, 0]] = sub[:, 1]
    req_ms, req_bytes = fetch_ms[pages], sizes[pages]
    if ev["fetch_levels"] is not None:  # mixed precisions: each fetch at its level
        fetched = np.flatnonzero(kind == 1)
        lv = ev["fetch_levels"]
        costs = [fetch_ms, *[np.asarray(c, np.float64) for c in ev["level_costs"][1:]]]
        szs = [sizes, *[np.asarray(s, np.int64) for s in ev["level_sizes"][1:]]]
        for level in range(1, len(costs)):
            sel = fetched[lv == level]
            req_ms[sel] = costs[level][pages[sel]]
            req_bytes[sel] = szs[level][pages[sel]]
    pf = ev["prefetched"]
    tok, first = _tokens_and_first(trace)
    comp, comp1, lay, lay1 = _compute_times(model, precision, hardware, b, N, trace)
    marks = _marks(trace)
    total, at_marks, stall, busy, nbytes, late, _ = _timeline(
        trace.steps, kind, used, fetch_ms, sizes, req_ms, req_bytes, pf[:, 0].copy(),
        pf[:, 1].copy(), np.zeros(0, bool) if first is None else first, comp, comp1, lay, lay1,
        marks, _new_token(np.asarray(tok), ov), ov, streams, shared, 0.0, np.zeros(0),
        np.zeros(0, bool))
    return _timing(trace, tok, total, at_marks, stall, busy, nbytes, late)


def step_time(group_of: np.ndarray, hits: np.ndarray, pages: np.ndarray, fetch_ms: np.ndarray,
              sizes: np.ndarray, comp: np.ndarray, lay: np.ndarray, *, kind=None, used=None,
              req_ms=None, req_bytes=None, pf_at=None, pf_page=None, carry=None
              ) -> tuple[float, float, float, int]:
    """One forward pass of a serving step (:mod:`paging.serve`) on the streams, by the same
    kernel as :func:`timeline`: ``(time_ms, stall_ms, copy_busy_ms, bytes_moved)``.

    The requests are the step's groups in order (``group_of[r]``: the group of request r,
    non-decreasing; one group per layer, the union of the step's experts of that layer), with
    their hits, pages, expert compute ``comp[r]`` (for the tokens the expert serves) and the
    group's layer computation ``lay[r]`` charged at its first request. Without prefetches the
    copy stream is idle when a group ends (every transfer it queued has landed before the
    group's last expert runs), so consecutive steps do not interact and each starts from 0.
    A run with a miss handler gives ``kind`` (0 hit, 1 fetched, 2 dropped, 3 substituted),
    ``used`` (the page that serves each request) and per-request ``req_ms``/``req_bytes``
    (each fetch at its precision level), as :func:`timeline_run` reads them from a result.

    A run with a prefetcher gives the step's prefetches (``pf_at``: the end of the group
    after which each was issued, as in :func:`timeline`; ``pf_page``) and ``carry``, a
    :class:`StreamCarry` holding what the copy stream owes from earlier steps (it is busy
    until ``carry.x`` and pages are still in flight, on the run's clock): the step starts at
    ``carry.now``, and ``carry`` is updated in place to the step's end.
    """
    n = group_of.size
    first = np.ones(n, dtype=bool)
    first[1:] = group_of[1:] != group_of[:-1]
    none_f, none_i = np.zeros(0), np.zeros(0, np.int64)
    if carry is None:
        x0, ready, fresh = 0.0, none_f, np.zeros(0, bool)
    else:
        x0 = max(0.0, carry.x - carry.now)
        ready = carry.ready - carry.now  # on the step's clock
        fresh = carry.fresh
    total, _, stall, busy, nbytes, late, x = _timeline(
        group_of, (~hits).view(np.int8) if kind is None else kind,
        pages if used is None else used, fetch_ms, sizes,
        none_f if req_ms is None else req_ms, none_i if req_bytes is None else req_bytes,
        none_i if pf_at is None else pf_at, none_i if pf_page is None else pf_page, first,
        comp, 0.0, lay, 0.0, none_i, np.zeros(0, bool), 0.0, 1, True, x0, ready, fresh)
    if carry is not None:
        carry.ready = ready + carry.now
        carry.x = x + carry.now
        carry.late += late
    return total, stall, busy, int(nbytes)


@dataclass
class StreamCarry:
    """The copy stream between the steps of a serving run with prefetches (:func:`step_time`):
    the step's start ``now``, the time the stream is free ``x``, when each page's latest
    transfer lands (``ready``) and whether it was prefetched and not used yet (``fresh``), on
    the run's clock; ``late``: prefetched pages whose first use waited, so far."""

    ready: np.ndarray
    fresh: np.ndarray
    now: float = 0.0
    x: float = 0.0
    late: int = 0

    @classmethod
    def idle(cls, n_pages: int) -> StreamCarry:
        return cls(np.zeros(n_pages), np.zeros(n_pages, dtype=bool))

    def queue(self, pages, fetch_ms: np.ndarray, sizes: np.ndarray) -> int:
        """Prefetches issued after a step's last group join the copy stream in order, behind
        that group's demand transfers (as :func:`timeline` queues a group's prefetches); the
        bytes they move."""
        x = self.x
        moved = 0
        for p in pages:
            x += fetch_ms[p]
            moved += int(sizes[p])
            self.ready[p] = x
            self.fresh[p] = True
        self.x = x
        return moved


def batch_prefill(trace: Trace) -> tuple[Trace, np.ndarray]:
    """The execution order of a batched prefill: ``(trace, batch)``.

    A real prefill runs the whole prompt through one layer before the next, so at layer z it
    needs each distinct expert routed to by some prompt token once, and that expert then serves
    every prompt token routed to it. The readers replay the prefill token by token (the paging
    model's one-token-at-a-time order, :mod:`paging.io.jsonl`); this transform replaces the
    prefill part of ``trace`` (``meta["phase_bounds"]["prefill"]``) by one forward pass of ℓ
    groups — group z = the distinct experts of layer z in order of first use, ``batch`` = how
    many prompt tokens each serves — followed by the decode part in groups mode (one group per
    (token, layer)). The result is a groups-mode trace (``expand="groups"``); a trace without a
    prefill phase comes back in groups mode with ``batch`` all ones. Gate scores, when the trace
    has them, follow the requests; a prefill request's score is the sum of the scores of the
    prompt tokens it serves (the gate mass it carries: what Score-Based eviction accumulates).
    Ranks, when the trace has them, follow the requests too; a prefill request's rank is the
    best rank any of its prompt tokens gave it (as a serving step's group does: ``drop:rank=1``
    keeps an expert that is some token's top-1), else its position in its group.
    ``meta`` gains ``batched_prefill`` (True) and ``prefill_tokens`` (the prompt's length, which
    a prefetcher may use: :meth:`paging.predict.prefetch.Prefetcher.target_k`).
    """
    lay = trace.layout
    L = lay.n_layers
    bounds = trace.meta.get("phase_bounds") or {}
    pre = bounds.get("prefill", [0, 0])
    lo, hi = int(pre[0]), int(pre[1])
    if lo != 0:
        raise PagingError(f"trace {trace.name}: the prefill must come first to be batched")
    pages, layers = trace.pages, trace.layers
    tok, _ = _tokens_and_first(trace)
    out_p, out_s, out_b, out_t, out_r, out_g = [], [], [], [], [], []
    score, rank = trace.score, trace.rank
    for z in range(L):
        sel = pages[:hi][layers[:hi] == z]
        if sel.size == 0:
            continue
        uniq, idx, inv, counts = np.unique(sel, return_index=True, return_inverse=True,
                                           return_counts=True)
        order = np.argsort(idx, kind="stable")
        if score is not None:
            out_g.append(np.bincount(inv, weights=score[:hi][layers[:hi] == z],
                                     minlength=uniq.size)[order])
        out_p.append(uniq[order])
        out_b.append(counts[order])
        out_s.append(np.full(order.size, z, dtype=np.int64))
        out_t.append(np.zeros(order.size, dtype=np.int64))
        if rank is None:
            out_r.append(np.arange(order.size, dtype=np.int64))
        else:  # the best rank of each expert over the prompt tokens it serves
            best = np.full(uniq.size, np.iinfo(np.int64).max, dtype=np.int64)
            np.minimum.at(best, inv, rank[:hi][layers[:hi] == z])
            out_r.append(best[order])
    n_pre = sum(a.size for a in out_p)
    # decode: one group per (token, layer) in execution order, numbered after the prefill pass
    dp, dl, dt = pages[hi:], layers[hi:], tok[hi:]
    order = np.lexsort((np.arange(dp.size), dl, dt))
    dp, dl, dt = dp[order], dl[order], dt[order]
    dg = None if score is None else score[hi:][order]
    new_tok = np.unique(dt, return_inverse=True)[1].astype(np.int64) + (1 if n_pre else 0)
    d_steps = new_tok * L + dl
    d_rank = np.zeros(dp.size, dtype=np.int64)
    if rank is not None:
        d_rank = np.asarray(rank[hi:], dtype=np.int64)[order]
    elif dp.size:
        starts = np.r_[True, d_steps[1:] != d_steps[:-1]]
        grp = np.cumsum(starts) - 1
        first_idx = np.flatnonzero(starts)
        d_rank = np.arange(dp.size) - first_idx[grp]
    pages_out = np.concatenate([*out_p, dp]) if n_pre else dp
    steps_out = np.concatenate([*out_s, d_steps]) if n_pre else d_steps
    batch = np.concatenate([*out_b, np.ones(dp.size, np.int64)]) if n_pre \
        else np.ones(dp.size, np.int64)
    token_out = np.concatenate([*out_t, new_tok]) if n_pre else new_tok
    rank_out = np.concatenate([*out_r, d_rank]) if n_pre else d_rank
    meta = dict(trace.meta)
    meta["phase_bounds"] = {"prefill": [0, n_pre], "decode": [n_pre, n_pre + dp.size]}
    meta["batched_prefill"] = True
    meta["prefill_tokens"] = n_distinct(tok[:hi])
    score_out = None if score is None else (np.concatenate([*out_g, dg]) if n_pre else dg)
    t = Trace(lay, pages_out, steps_out, trace.name, token_out, rank_out, score_out, "groups",
              meta)
    return t, batch.astype(np.int64)
