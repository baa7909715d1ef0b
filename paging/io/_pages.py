"""Helpers of the page-based formats (``.npz``, CSV): layered-order checks that point at a line,
and re-expansion of a stored trace into the requested mode."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from paging.errors import PagingError
from paging.layout import Layout
from paging.trace import EXPANSIONS, Trace, from_routing


def as_list(traces: Trace | Sequence[Trace]) -> list[Trace]:
    """A list of traces from one trace or a sequence of them (all sharing one layout)."""
    out = [traces] if isinstance(traces, Trace) else list(traces)
    if not all(isinstance(t, Trace) for t in out):
        raise PagingError("expected a Trace or a list of Traces")
    if len({t.layout for t in out}) > 1:
        raise PagingError("the traces have different layouts; one file holds one layout")
    return out


def check_layered(pages: np.ndarray, steps: np.ndarray, layout: Layout, expand: str,
                  where: Callable[[int], tuple[str, int | None]], file: str) -> None:
    """The checks of :class:`~paging.trace.Trace`, reported at a line. ``where(i)`` gives a prefix
    naming request i and its 1-based line (None for binary files)."""
    n, L = layout.n_experts, layout.n_layers

    def fail(i: int, msg: str) -> PagingError:
        prefix, line = where(int(i))
        return PagingError(f"{prefix}{msg}", file, line)

    bad = np.flatnonzero((pages < 0) | (pages >= layout.n_pages))
    if bad.size:
        i = bad[0]
        raise fail(i, f"page {int(pages[i])} is out of range; expected 0..{layout.n_pages - 1} "
                      f"(n_experts={n}, n_layers={L})")
    if steps.size == 0:
        return
    if steps[0] != 0:
        raise fail(0, f"the first step is {int(steps[0])}; expected 0")
    d = np.diff(steps)
    ok = (d == 1) if expand == "rounds" else ((d == 0) | (d == 1))
    bad = np.flatnonzero(~ok)
    if bad.size:
        i = bad[0] + 1
        rule = "by 1 per request (rounds)" if expand == "rounds" else "by 0 or 1 (groups)"
        raise fail(i, f"step {int(steps[i])} follows step {int(steps[i - 1])}; expected steps "
                      f"to advance {rule}")
    layer = pages // n
    bad = np.flatnonzero(layer != steps % L)
    if bad.size:
        i = bad[0]
        raise fail(i, f"wrong layer order: page {int(pages[i])} is in layer {int(layer[i])}, "
                      f"expected a page of layer {int(steps[i] % L)} (step {int(steps[i])} mod "
                      f"{L} layers)")
    if expand == "groups":
        order = np.lexsort((pages, steps))
        dup = np.flatnonzero((steps[order][1:] == steps[order][:-1])
                             & (pages[order][1:] == pages[order][:-1]))
        if dup.size:
            i = order[dup[0] + 1]
            raise fail(i, f"page {int(pages[i])} is requested twice in step {int(steps[i])}; "
                          "expected the experts of a group to differ")


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
        T, K = int(trace.token.max()) + 1, int(trace.rank.max()) + 1
        table = np.full((T, lay.n_layers, K), -1, dtype=np.int64)
        idx = (trace.token, trace.layers, trace.rank)
        table[idx] = lay.expert_of(trace.pages)
        filled = np.zeros(table.shape, dtype=np.int64)
        np.add.at(filled, idx, 1)
        if trace.n_requests == table.size and (filled == 1).all():
            scores = None
            if trace.score is not None:
                scores = np.zeros(table.shape)
                scores[idx] = trace.score
            return from_routing(table, lay, expand, scores, trace.name, trace.meta)
    single = trace.rank is None or trace.n_requests == 0 or int(trace.rank.max()) == 0
    if single and not trace.is_grouped:
        return Trace(lay, trace.pages, trace.steps, trace.name, trace.token, trace.rank,
                     trace.score, expand, trace.meta)
    raise PagingError(f"trace {trace.name} is stored in {trace.expand} mode without complete "
                      f"token and rank columns, so it cannot be expanded in {expand} mode; "
                      f"use --expand {trace.expand}")
