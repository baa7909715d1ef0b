"""Warm caches: the sequences of a trace run back to back through one cache and one policy state.

SpecMD measures its TTFT on a server whose expert cache is still warm from the previous request;
every run of this package was cold (each sequence from an empty cache). Warm is a property of the
run, not a second loop: :func:`concat` joins the sequences into one trace — each sequence starts
a new forward pass, its steps and tokens shifted past the previous one's — and the one simulator
(:func:`paging.simulate.simulate`) replays it like any trace. ``meta["warm"]`` keeps each
sequence's bounds, so :func:`split` turns the run's hit mask into per-sequence counts and the
timeline (:mod:`paging.cost.timeline`) reports each sequence's TTFT and decode rate, the copy
stream carrying over from one request to the next (a prefetch still in flight at the end of a
request delays the next one, as on a server).

The order is the file order, or a permutation drawn from a seed (:func:`order`). Every earlier
number is a cold run and stays one: warm runs only when asked for (``--warm``, ``warm=True``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from paging.errors import PagingError
from paging.trace import Trace, group_starts, sequence_bounds, sequence_record

__all__ = ["concat", "order", "split", "sequence_bounds", "prefill_ranges"]


def order(traces: Sequence[Trace], seed: int | None = None) -> list[Trace]:
    """The sequences in file order (``seed=None``) or in the order of
    ``numpy.random.default_rng(seed).permutation``."""
    traces = list(traces)
    if seed is None:
        return traces
    perm = np.random.default_rng(seed).permutation(len(traces))
    return [traces[i] for i in perm.tolist()]


def concat(traces: Sequence[Trace], batches: Sequence[np.ndarray | None] | None = None
           ) -> tuple[Trace, np.ndarray | None]:
    """One trace of ``traces`` back to back, and the joined ``batch`` counts (or None).

    Every sequence must have the layout and expansion of the first and end with its forward
    pass complete (its last request on the last layer), so that the next one opens a new pass
    on layer 0. Steps and tokens of sequence i are shifted past sequence i−1's; ranks, scores
    and logits follow when every sequence has them. ``meta["warm"]`` lists, per sequence, its
    ``name``, request range ``[start, end)``, its ``phase_bounds`` shifted to the joined trace
    (absent when it has none) and ``prefill_tokens`` (a :func:`~paging.cost.timeline.
    batch_prefill` trace's prompt length, else 0). ``batches`` (one array or None per
    sequence: the tokens each request serves) are joined the same way.
    """
    traces = list(traces)
    if not traces:
        raise PagingError("a warm run needs at least one sequence")
    first = traces[0]
    lay, mode = first.layout, first.expand
    L = lay.n_layers
    parts: dict[str, list] = {"pages": [], "steps": [], "token": [], "rank": [], "score": [],
                              "logits": []}
    seqs, step0, tok0, start = [], 0, 0, 0
    has = {f: all(getattr(t, f) is not None for t in traces) for f in ("rank", "score",
                                                                       "logits")}
    for i, t in enumerate(traces):
        if (t.layout.n_experts, t.layout.n_layers) != (lay.n_experts, lay.n_layers):
            raise PagingError(f"warm: sequence {t.name} has {t.layout.n_layers} layers x "
                              f"{t.layout.n_experts} experts, expected {L} x {lay.n_experts} "
                              f"(those of {first.name})")
        if t.expand != mode:
            raise PagingError(f"warm: sequence {t.name} is in {t.expand} mode, expected {mode}")
        n = t.n_requests
        if n and int(t.steps[-1]) % L != L - 1 and i < len(traces) - 1:
            raise PagingError(f"warm: sequence {t.name} ends on layer {int(t.steps[-1]) % L}, "
                              f"expected its last forward pass complete (layer {L - 1})")
        tok = _token_ids(t) if any(u.token is not None for u in traces) else t.passes
        parts["pages"].append(t.pages)
        parts["steps"].append(t.steps + step0)
        parts["token"].append(tok + tok0)
        for f in ("rank", "score"):
            if has[f]:
                parts[f].append(getattr(t, f))
        if has["logits"]:
            rows = int(tok.max()) + 1 if n else 0
            parts["logits"].append(np.asarray(t.logits)[:rows])
        seqs.append(sequence_record(t, start))
        if n:
            step0 += (int(t.steps[-1]) // L + 1) * L
            tok0 += int(tok.max()) + 1
        start += n

    def join(f):
        return np.concatenate(parts[f]) if parts[f] else np.zeros(0, np.int64)

    meta = {"warm": seqs, "warm_of": [t.name for t in traces], "top_k": first.meta.get("top_k")}
    if any(t.meta.get("batched_prefill") for t in traces):
        meta["batched_prefill"] = True
    logits = np.concatenate(parts["logits"]) if has["logits"] else None
    name = f"warm({len(traces)}: {first.name} ... {traces[-1].name})" if len(traces) > 1 \
        else f"warm({first.name})"
    # (no sequence with token ids: none joined, so a token is a pass as in a cold run)
    tokens = join("token") if any(t.token is not None for t in traces) else None
    out = Trace(lay, join("pages"), join("steps"), name, tokens,
                join("rank") if has["rank"] else None, join("score") if has["score"] else None,
                mode, meta, logits)
    batch = None
    if batches is not None and any(b is not None for b in batches):
        batch = np.concatenate([np.ones(t.n_requests, np.int64) if b is None
                                else np.asarray(b, np.int64) for t, b in zip(traces, batches,
                                                                            strict=True)])
    return out, batch


def _token_ids(t: Trace) -> np.ndarray:
    """The token ids of ``t``'s requests when it joins sequences that have them: its
    ``token`` column, else made from the layer clock: in rounds mode with ranks a token opens
    at each pass of rank 0 (its K rounds are one token, as the joined rank column says);
    otherwise each pass is a token. (Each pass its own id made a rank-only rounds trace with
    K > 1 break the token rule once joined: "token 1 starts with rank 1".) When no sequence
    has token ids the joined trace has none either, and a token is a pass, as in a cold run
    of each."""
    if t.token is not None:
        return t.token
    p = t.passes
    if t.expand == "rounds" and t.rank is not None and p.size:
        opens = np.r_[True, p[1:] != p[:-1]] & (t.rank == 0)
        opens[0] = True
        return np.cumsum(opens) - 1
    return p


def prefill_ranges(trace: Trace) -> list[tuple[int, int, int]]:
    """``(start, end, prompt tokens)`` of every batched prefill pass in ``trace`` (one per
    sequence of a joined trace; none unless the trace was made by ``batch_prefill``)."""
    if not trace.meta.get("batched_prefill"):
        return []
    out = []
    for rec in sequence_bounds(trace):
        pre = (rec.get("phase_bounds") or {}).get("prefill")
        if pre and pre[1] > pre[0] and rec["prefill_tokens"] > 0:
            out.append((int(pre[0]), int(pre[1]), int(rec["prefill_tokens"])))
    return out


def _quality(trace: Trace, served_pages, served_steps, lo: int, hi: int) -> dict:
    """The quality proxies of a routed run over the groups of requests ``lo..hi-1`` of
    ``trace`` (means over the groups, as a run's), each group's served experts being those
    served for its step."""
    from paging.routing import Group, quality

    lay = trace.layout
    n, L = lay.n_experts, lay.n_layers
    steps = trace.steps[lo:hi]
    starts = lo + group_starts(steps) if hi > lo else []
    ends = list(starts[1:]) + [hi] if hi > lo else []
    sums, G = [0.0, 0, 0.0], 0
    for a, b in zip(starts, ends, strict=True):
        s = int(trace.steps[a])
        z = s % L
        base = z * n
        x0, x1 = np.searchsorted(served_steps, [s, s + 1])
        tok = int(trace.token[a]) if trace.token is not None else None
        g = Group(z, tok, (trace.pages[a:b] - base).tolist(),
                  None if trace.score is None else trace.score[a:b].tolist(),
                  None if trace.logits is None else trace.logits[tok, z], n)
        r, c, k = quality(g, (np.asarray(served_pages[x0:x1]) - base).tolist())
        sums[0] += r
        sums[1] += c
        sums[2] += k
        G += 1
    return {"retained_mass": sums[0] / G if G else 1.0, "top1_changed": sums[1] / G if G
            else 0.0, "kl": sums[2] / G if G else 0.0}


def split(trace: Trace, result) -> list[dict]:
    """Per-sequence counts of a run on a joined trace: ``trace`` (the sequence's name),
    ``position`` (0-based, in run order), ``requests``, ``misses``, ``hits`` and, for a sequence
    with a prefill phase, ``prefill_misses``. Needs the run's hit mask.

    A routed run (``result.events["served_steps"]``) serves other requests than the trace's:
    a sequence's are those served for its steps, and its row gets the routing's quality
    proxies over its own groups (``retained_mass``, ``top1_changed``, ``kl``:
    :func:`paging.routing.quality` of each group's experts and the ones served for it, as the
    run sums them over all). A run with a miss handler needs its recorded
    events (``record=True``): a dropped or substituted request is neither a hit nor a miss (as
    in the run's own counts), and the sequence's ``dropped``, ``substituted`` and, for a
    precision cascade, ``low_precision_fetches`` (its fetches below the first level) are
    added."""
    from paging.routing.served import served_index

    if result.hit_mask is None:
        raise PagingError("per-sequence counts need a recorded run (simulate(..., "
                          "record=True or 'hits'))")
    hit = np.asarray(result.hit_mask, dtype=bool)
    ev = result.events or {}
    N = hit.size
    served = ev.get("served_steps")

    def where(i: int) -> int:  # request i of the trace (or its end) as an index of the run
        return i if served is None else served_index(trace, served, i)

    drop = sub = low = None
    if ev.get("dropped") is not None:  # the miss handler's events
        drop = np.zeros(N, bool)
        drop[ev["dropped"]] = True
        sub = np.zeros(N, bool)
        sub[np.asarray(ev["substituted"]).reshape(-1, 2)[:, 0]] = True
        if ev.get("fetch_levels") is not None:  # each fetch's level, in request order
            low = np.zeros(N, bool)
            low[np.flatnonzero(~hit & ~drop & ~sub)[np.asarray(ev["fetch_levels"]) > 0]] = True
    out = []
    for i, rec in enumerate(sequence_bounds(trace)):
        a, b = where(rec["start"]), where(rec["end"])
        h = int(hit[a:b].sum())
        row = {"trace": rec["name"], "position": i, "requests": b - a, "hits": h,
               "misses": b - a - h}
        if drop is not None:
            d, su = int(drop[a:b].sum()), int(sub[a:b].sum())
            row.update(misses=b - a - h - d - su, dropped=d, substituted=su)
            if low is not None:
                row["low_precision_fetches"] = int(low[a:b].sum())
        if served is not None:
            row.update(_quality(trace, ev["served_pages"], served, rec["start"], rec["end"]))
        pre = (rec.get("phase_bounds") or {}).get("prefill")
        if pre:
            p0, p1 = where(pre[0]), where(pre[1])
            row["prefill_misses"] = int(p1 - p0 - hit[p0:p1].sum() - (
                0 if drop is None else drop[p0:p1].sum() + sub[p0:p1].sum()))
        out.append(row)
    return out
