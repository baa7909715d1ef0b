"""Descriptive statistics of traces (``paging trace info``).

Per sequence and in total: tokens kept and incomplete tokens dropped, top-K, requests after
expansion, distinct pages, the per-layer popularity entropy and the reuse distances.

Popularity entropy of layer z
    ``H_z = -sum_e p_e log2 p_e`` with ``p_e`` the share of layer-z requests that go to expert e;
    at most ``log2 n`` (uniform requests, the input of Theorem 4 in Angelopoulos et al.), 0 when
    one expert takes every request of the layer.
Reuse distance
    For every request that has a later request of the same page, the gap ``j - i`` in requests to
    that next request (the quantity Belady's rule ranks by). ``cold`` counts first requests (one
    per distinct page). A page lives in one layer, so in rounds mode every gap is a multiple of ℓ;
    the ``*_rounds`` values are the gap in forward passes, ``(steps[j] - steps[i]) / ℓ`` (rounds in
    rounds mode, tokens in groups mode). Percentiles use numpy's linear interpolation.
Totals pool the requests of all sequences (no gap crosses a sequence boundary: each sequence is
simulated from an empty cache).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from paging.errors import PagingError
from paging.trace import Trace, n_distinct


def _entropy_bits(counts: np.ndarray) -> list[float | None]:
    """Entropy (bits) of each row of ``counts`` (None for a row without requests)."""
    out: list[float | None] = []
    for row in counts:
        s = row.sum()
        if s == 0:
            out.append(None)
            continue
        p = row[row > 0] / s
        out.append(float(max(0.0, -(p * np.log2(p)).sum())))
    return out


def _gaps(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Gaps to the next request of the same page, in requests and in forward passes."""
    nu = trace.next_use
    i = np.flatnonzero(nu < trace.n_requests)
    j = nu[i]
    return j - i, (trace.steps[j] - trace.steps[i]) // trace.layout.n_layers


def _summary(gaps: np.ndarray, rounds: np.ndarray, cold: int) -> dict:
    out: dict = {"count": int(gaps.size), "cold": int(cold)}
    for suffix, g in (("", gaps), ("_rounds", rounds)):
        if g.size:
            med, p90 = np.percentile(g, [50, 90])
            out.update({f"min{suffix}": int(g.min()), f"median{suffix}": float(med),
                        f"p90{suffix}": float(p90), f"max{suffix}": int(g.max())})
        else:
            out.update({f"min{suffix}": None, f"median{suffix}": None, f"p90{suffix}": None,
                        f"max{suffix}": None})
    return out


def _tokens(trace: Trace) -> int:
    if "n_tokens" in trace.meta:
        return int(trace.meta["n_tokens"])
    if trace.token is not None:
        return n_distinct(trace.token)
    return int(trace.passes[-1]) + 1 if trace.n_requests else 0


def _top_k(trace: Trace) -> int | None:
    return trace.top_k if trace.n_requests else None


def _row(name: str, traces: Sequence[Trace]) -> dict:
    lay = traces[0].layout
    counts = np.zeros(lay.n_pages, dtype=np.int64)
    gaps, rounds = [], []
    for t in traces:
        counts += np.bincount(t.pages, minlength=lay.n_pages)
        g, r = _gaps(t)
        gaps.append(g)
        rounds.append(r)
    cold = sum(int(np.unique(t.pages).size) for t in traces)
    ent = _entropy_bits(counts.reshape(lay.n_layers, lay.n_experts))
    have = [h for h in ent if h is not None]
    ks = {_top_k(t) for t in traces}
    row = {
        "trace": name,
        "tokens": sum(_tokens(t) for t in traces),
        "dropped_tokens": sum(int(t.meta.get("dropped_tokens", 0)) for t in traces),
        "top_k": ks.pop() if len(ks) == 1 else None,
        "requests": int(sum(t.n_requests for t in traces)),
        "distinct_pages": int((counts > 0).sum()),
        "entropy_bits": ent,
        "mean_entropy_bits": float(np.mean(have)) if have else None,
        "reuse": _summary(np.concatenate(gaps), np.concatenate(rounds), cold),
    }
    if len(traces) == 1 and "phases" in traces[0].meta:
        row["phases"] = traces[0].meta["phases"]
    return row


def trace_info(traces: Trace | Sequence[Trace]) -> dict:
    """Statistics of one or several sequences of one layout (see the module docstring).

    Returns
    -------
    dict
        ``{"n_experts", "n_layers", "n_pages", "expand", "n_sequences", "max_entropy_bits",
        "sequences": [row, ...], "total": row}``; a row holds ``trace, tokens, dropped_tokens,
        top_k, requests, distinct_pages, entropy_bits (per layer), mean_entropy_bits, reuse``
        (``count, cold, min, median, p90, max`` and the same with ``_rounds``), plus ``phases``
        when the sequence records prefill and decode. In the total, ``distinct_pages`` is the
        union over sequences and ``reuse.cold`` the sum of per-sequence first requests.

    Cost: O(N log N) for N requests (the next-use sort).
    """
    ts = [traces] if isinstance(traces, Trace) else list(traces)
    if not ts:
        raise PagingError("no sequences to describe")
    lay = ts[0].layout
    if any(t.layout != lay for t in ts):
        raise PagingError("the sequences have different layouts")
    modes = {t.expand for t in ts}
    return {
        "n_experts": lay.n_experts,
        "n_layers": lay.n_layers,
        "n_pages": lay.n_pages,
        "expand": modes.pop() if len(modes) == 1 else "mixed",
        "n_sequences": len(ts),
        "max_entropy_bits": math.log2(lay.n_experts),
        "sequences": [_row(t.name, [t]) for t in ts],
        "total": _row("total", ts),
    }


def _fmt(v: object, nd: int = 1) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def format_info(info: dict) -> str:
    """``trace_info`` as a human-readable table."""
    head = ("trace", "tokens", "dropped", "top-K", "requests", "pages", "H mean",
            "reuse n", "cold", "gap med", "gap p90", "gap max", "rounds med")
    rows = []
    for r in info["sequences"] + ([info["total"]] if info["n_sequences"] > 1 else []):
        u = r["reuse"]
        rows.append((r["trace"], _fmt(r["tokens"]), _fmt(r["dropped_tokens"]), _fmt(r["top_k"]),
                     _fmt(r["requests"]), _fmt(r["distinct_pages"]),
                     _fmt(r["mean_entropy_bits"], 2), _fmt(u["count"]), _fmt(u["cold"]),
                     _fmt(u["median"]), _fmt(u["p90"]), _fmt(u["max"]),
                     _fmt(u["median_rounds"])))
    widths = [max(len(h), *(len(x[i]) for x in rows)) for i, h in enumerate(head)]

    def line(cells) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    out = [f"layout: {info['n_experts']} experts x {info['n_layers']} layers "
           f"({info['n_pages']} pages), expand={info['expand']}, "
           f"{info['n_sequences']} sequence(s)",
           line(head), line(["-" * w for w in widths])]
    out += [line(r) for r in rows]
    for r in info["sequences"]:
        if "phases" in r:
            ph = ", ".join(f"{k}: {v['tokens']} tokens kept, {v['dropped']} dropped"
                           for k, v in r["phases"].items())
            out.append(f"{r['trace']}: {ph}")
    ent = info["total"]["entropy_bits"]
    out.append(f"per-layer popularity entropy (bits, max log2 n = "
               f"{info['max_entropy_bits']:.2f}): " + " ".join(_fmt(h, 2) for h in ent))
    out.append("reuse gaps in requests to the next request of the same page; 'rounds med' = "
               "median gap in forward passes")
    return "\n".join(out)
