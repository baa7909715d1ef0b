"""Helpers of the page-based formats (``.npz``, CSV): trace construction whose layered-order
errors point at a line, and re-expansion of a stored trace into the requested mode."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from paging.errors import PagingError
from paging.trace import EXPANSIONS, Trace, TraceError, from_routing


def as_list(traces: Trace | Sequence[Trace]) -> list[Trace]:
    """A list of traces from one trace or a sequence of them (all sharing one layout)."""
    out = [traces] if isinstance(traces, Trace) else list(traces)
    if not all(isinstance(t, Trace) for t in out):
        raise PagingError("expected a Trace or a list of Traces")
    if len({t.layout for t in out}) > 1:
        raise PagingError("the traces have different layouts; one file holds one layout")
    return out


def build_trace(line_of: Callable[[int], tuple[str, int | None]], file: str, *args,
                **kw) -> Trace:
    """``Trace(*args, **kw)``, with a layered-order error (:class:`~paging.trace.TraceError`)
    reported at the file and line of the offending request: ``line_of(i)`` gives a message
    prefix and the 1-based line of request i (None for binary files)."""
    try:
        return Trace(*args, **kw)
    except TraceError as e:
        prefix, line = line_of(e.request)
        raise PagingError(f"{prefix}{e.detail}", file, line) from None
    except PagingError as e:  # e.g. malformed logits: name the file
        if e.file is not None:
            raise
        raise PagingError(e.message, file) from None


def reexpand(trace: Trace, expand: str) -> Trace:
    """``trace`` in expansion mode ``expand``.

    A trace with ``token`` and ``rank`` columns is rebuilt into its routing table
    ``experts[token, layer, rank]`` and expanded again by :func:`paging.trace.from_routing`. A trace
    without them and without groups (every request its own step) is the same sequence in either
    mode (a group of one), so only the label changes.
    """
    if expand not in EXPANSIONS:
        raise PagingError(f"expand must be one of {', '.join(EXPANSIONS)}, got {expand!r}")
    if trace.expand == expand:
        return trace
    lay = trace.layout
    if trace.token is not None and trace.rank is not None and trace.n_requests:
        # (the ids numbered 0..T-1 in their order: a trace's ids increase from token to token,
        # and a file's may skip, up to 2^63 - 1, which a table by id could not hold)
        ids, tok = np.unique(trace.token, return_inverse=True)
        T, K = ids.size, int(trace.rank.max()) + 1
        table = np.full((T, lay.n_layers, K), -1, dtype=np.int64)
        idx = (tok.reshape(-1), trace.layers, trace.rank)
        table[idx] = lay.expert_of(trace.pages)
        filled = np.zeros(table.shape, dtype=np.int64)
        np.add.at(filled, idx, 1)
        if trace.n_requests == table.size and (filled == 1).all():
            scores = None
            if trace.score is not None:
                scores = np.zeros(table.shape)
                scores[idx] = trace.score
            return from_routing(table, lay, expand, scores, trace.name, trace.meta,
                                None if trace.logits is None else trace.logits[ids])
    single = trace.rank is None or trace.n_requests == 0 or int(trace.rank.max()) == 0
    if single and not trace.is_grouped:
        return Trace(lay, trace.pages, trace.steps, trace.name, trace.token, trace.rank,
                     trace.score, expand, trace.meta, trace.logits)
    raise PagingError(f"trace {trace.name} is stored in {trace.expand} mode without complete "
                      f"token and rank columns, so it cannot be expanded in {expand} mode; "
                      f"use --expand {trace.expand}")
