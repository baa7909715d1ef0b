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
  :func:`batch_prefill`).

The copy stream takes only demand transfers today; prefetches (SpecMD) will be queued on it
too, ahead of the requests they anticipate, which is why it is a stream of its own.

Reported: time to first token (the prefill phase, when the trace has one), decode time, time per
output token and tokens/s, stall time and its fraction of the total, bytes moved.
Cost: O(N) in a compiled loop (the timeline adds a fraction of a simulated run's time).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from numba import njit

from paging.cost.arith import expert_compute_ms, non_expert_ms
from paging.errors import PagingError
from paging.trace import Trace


@njit(cache=True, nogil=True)
def _timeline(steps, pages, miss, fetch_ms, sizes, first, comp, comp1, lay, lay1, mark):
    """Replay the groups. Per request: fetch time and bytes of its page, expert compute
    ``comp[i]`` (or ``comp1`` when ``comp`` is empty), non-expert time ``lay[i]`` (or ``lay1``)
    charged when ``first[i]`` (every request when ``first`` is empty). Returns ``(total,
    at_mark, stall_ms, copy_busy_ms, bytes_moved)``: the compute stream's final time, its time
    when the group holding request ``mark - 1`` ends (the prefill's end; 0 when ``mark`` is 0),
    the stall, the copy stream's busy time and the bytes moved."""
    n = steps.size
    c = 0.0  # compute stream free at
    x = 0.0  # copy stream free at
    stall = 0.0
    busy = 0.0
    nbytes = 0
    at_mark = 0.0
    all_first = first.size == 0
    i = 0
    while i < n:
        j = i + 1
        while j < n and steps[j] == steps[i]:
            j += 1
        for r in range(i, j):
            if all_first or first[r]:
                c += lay[r] if lay.size else lay1
        t0 = c  # the router has decided: demand transfers are issued now, back to back
        land = x if x > t0 else t0
        for r in range(i, j):  # resident experts run first
            if not miss[r]:
                c += comp[r] if comp.size else comp1
        for r in range(i, j):  # each missing expert runs once its transfer has landed
            if miss[r]:
                p = pages[r]
                land += fetch_ms[p]
                busy += fetch_ms[p]
                nbytes += sizes[p]
                if land > c:
                    stall += land - c
                    c = land
                c += comp[r] if comp.size else comp1
        x = land
        if i < mark <= j:
            at_mark = c
        i = j
    return c, at_mark, stall, busy, nbytes


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

    def to_dict(self) -> dict:
        return asdict(self)


def _tokens_and_first(trace: Trace) -> tuple[np.ndarray, np.ndarray | None]:
    """Token of every request, and whether the request opens its (token, layer) (None: every
    request does, a trace without ranks)."""
    tok = trace.token if trace.token is not None else trace.passes
    first = None if trace.rank is None else np.asarray(trace.rank == 0)
    return np.asarray(tok), first


def _n_distinct(a: np.ndarray) -> int:
    """Distinct values of ``a``: O(N) for the non-decreasing token arrays of traces."""
    if a.size == 0:
        return 0
    d = np.diff(a)
    if (d >= 0).all():
        return int(np.count_nonzero(d)) + 1
    return int(np.unique(a).size)


def timeline(trace: Trace, hit_mask: np.ndarray, *, model, precision, hardware,
             fetch_ms: np.ndarray, sizes: np.ndarray, batch: np.ndarray | None = None) -> Timing:
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

    Returns
    -------
    Timing
    """
    N = trace.n_requests
    mask = np.asarray(hit_mask, dtype=bool)
    if mask.shape != (N,):
        raise PagingError(f"the hit mask has {mask.size} entries for a trace of {N} requests")
    b = np.ones(N, dtype=np.int64) if batch is None else np.asarray(batch, dtype=np.int64)
    if b.shape != (N,) or (b < 1).any():
        raise PagingError("batch must give a token count >= 1 for every request")
    tok, first = _tokens_and_first(trace)
    empty = np.zeros(0)
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
    bounds = trace.meta.get("phase_bounds") or {}
    pre = bounds.get("prefill")
    has_prefill = pre is not None and pre[1] > pre[0]
    total, at_pre, stall, busy, nbytes = _timeline(
        trace.steps, trace.pages, ~mask, np.asarray(fetch_ms, dtype=np.float64),
        np.asarray(sizes, dtype=np.int64), np.zeros(0, bool) if first is None else first,
        comp, comp1, lay, lay1, int(pre[1]) if has_prefill else 0)
    if has_prefill:
        ttft = float(at_pre)
        dec = bounds.get("decode", [pre[1], N])
        dec_tokens = _n_distinct(tok[dec[0]:dec[1]])
    else:
        ttft = None
        dec_tokens = _n_distinct(tok)
    decode_ms = total - (ttft or 0.0)
    tpot = decode_ms / dec_tokens if dec_tokens else None
    tps = dec_tokens / (decode_ms / 1e3) if dec_tokens and decode_ms > 0 else None
    return Timing(time_ms=total, compute_ms=total - stall, stall_ms=stall,
                  stall_fraction=stall / total if total else 0.0, copy_busy_ms=busy,
                  bytes_moved=int(nbytes), ttft_ms=ttft, decode_ms=decode_ms,
                  decode_tokens=dec_tokens, tpot_ms=tpot, tokens_per_s=tps)


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
    prefill phase comes back in groups mode with ``batch`` all ones.
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
    out_p, out_s, out_b, out_t, out_r = [], [], [], [], []
    for z in range(L):
        sel = pages[:hi][layers[:hi] == z]
        if sel.size == 0:
            continue
        uniq, idx, counts = np.unique(sel, return_index=True, return_counts=True)
        order = np.argsort(idx, kind="stable")
        out_p.append(uniq[order])
        out_b.append(counts[order])
        out_s.append(np.full(order.size, z, dtype=np.int64))
        out_t.append(np.zeros(order.size, dtype=np.int64))
        out_r.append(np.arange(order.size, dtype=np.int64))
    n_pre = sum(a.size for a in out_p)
    # decode: one group per (token, layer) in execution order, numbered after the prefill pass
    dp, dl, dt = pages[hi:], layers[hi:], tok[hi:]
    order = np.lexsort((np.arange(dp.size), dl, dt))
    dp, dl, dt = dp[order], dl[order], dt[order]
    new_tok = np.unique(dt, return_inverse=True)[1].astype(np.int64) + (1 if n_pre else 0)
    d_steps = new_tok * L + dl
    d_rank = np.zeros(dp.size, dtype=np.int64)
    if dp.size:
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
    t = Trace(lay, pages_out, steps_out, trace.name, token_out, rank_out, None, "groups", meta)
    return t, batch.astype(np.int64)
