"""The requests a routed run served, as a trace of their own.

A routing hook (:mod:`paging.routing`) changes what each (token, layer) group requests, so the
run's hit mask is over the *served* requests, not the trace's: a recorded routed run keeps them
in ``result.events`` (``served_pages``, ``served_steps``; :meth:`RoutedRun.finish
<paging.routing.RoutedRun.finish>` and the compiled :func:`paging.fast.routing.run_routed`).
:func:`served_trace` turns them into a :class:`~paging.trace.Trace` that an observer of a plain
run reads as it reads the trace: the latency timeline replays it (a routed ``paging simulate
--model`` run, :func:`paging.cost.timeline.timeline_run`), and :func:`served_index` maps a
position of the trace (a sequence's bounds, a prefill's end) to the run's, as
:func:`paging.warm.split` does for the per-sequence counts.

What the served trace holds, per served request: its page and step (the group's: a routed
group is served with the trace's layer clock), the group's token, and as ``rank`` its position
among the requests served for the group (0 opens the group: the request at which the timeline
charges the layer's non-expert work). Gate scores and logits are not carried: the served
requests' router weights belong to the hook's decisions (the quality proxies), not to what the
timeline charges. ``meta`` is the trace's, with its request positions (``phase_bounds``, the
warm run's sequence records) mapped to the served requests.
"""

from __future__ import annotations

import numpy as np

from paging.errors import PagingError
from paging.trace import Trace, group_starts

__all__ = ["served_index", "served_trace"]


def served_index(trace: Trace, served_steps: np.ndarray, i: int) -> int:
    """Request ``i`` of ``trace`` (or its end, ``i >= trace.n_requests``) as an index of the
    run that served ``served_steps``: the first request served for request i's group."""
    if i >= trace.n_requests:
        return int(served_steps.size)
    return int(np.searchsorted(served_steps, trace.steps[i]))


def _map_bounds(trace: Trace, ss: np.ndarray, bounds: dict) -> dict:
    return {ph: [served_index(trace, ss, int(a)), served_index(trace, ss, int(b))]
            for ph, (a, b) in bounds.items()}


def served_trace(trace: Trace, result) -> Trace:
    """The requests a recorded routed run (``simulate(trace, ..., routing=..., record=...)``)
    served, as a groups-mode trace (module docstring)."""
    ev = result.events or {}
    if ev.get("served_pages") is None or ev.get("served_steps") is None:
        raise PagingError("the served requests of a routed run need a recorded run "
                          "(simulate(..., routing=..., record=True or 'hits'))")
    sp = np.asarray(ev["served_pages"], dtype=np.int64)
    ss = np.asarray(ev["served_steps"], dtype=np.int64)
    M = sp.size
    if ss.shape != (M,):
        raise PagingError(f"a routed run logged {M} served pages and {ss.size} steps")
    g = np.searchsorted(trace.steps, ss)  # the trace's first request of each served group
    if M and (g.max() >= trace.n_requests or (trace.steps[g] != ss).any()):
        raise PagingError("the served steps are not groups of the trace")
    tok = trace.token if trace.token is not None else trace.passes
    starts = group_starts(ss)  # each served request's position in its group
    pos = np.arange(M, dtype=np.int64) - np.repeat(starts, np.diff(np.r_[starts, M]))
    meta = dict(trace.meta)
    if meta.get("phase_bounds"):
        meta["phase_bounds"] = _map_bounds(trace, ss, meta["phase_bounds"])
    if meta.get("warm"):
        recs = []
        for rec in meta["warm"]:
            rec = dict(rec, start=served_index(trace, ss, int(rec["start"])),
                       end=served_index(trace, ss, int(rec["end"])))
            if rec.get("phase_bounds"):
                rec["phase_bounds"] = _map_bounds(trace, ss, rec["phase_bounds"])
            recs.append(rec)
        meta["warm"] = recs
    meta.setdefault("top_k", trace.top_k)
    return Trace(trace.layout, sp, ss, name=trace.name, token=np.asarray(tok)[g], rank=pos,
                 expand="groups", meta=meta)
