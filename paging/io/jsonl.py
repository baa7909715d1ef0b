"""Routing-log JSONL readers: one JSON object per (sequence, token, layer) routing decision.

Two layouts of the same records are read (the second is detected automatically):

*routing log* (e.g. ``humaneval_2_routing.jsonl``)
    ``{"dataset": "humaneval", "problem_id": 0, "layer": 0, "experts": [6, 5],
    "gating_probs": [0.70, 0.30], "token_idx": 0}``. The file order does not matter: the access
    order is (sequence keys, token, layer).
*raw prefill+decode dump* (e.g. ``humaneval_p0_prefill_decode_raw.jsonl``)
    rows carry ``token_pos`` instead of ``token_idx`` and the FILE ORDER is the execution order:
    first the prefill, layer-major (for layer 0..ℓ-1, one row per prompt position), then the decode
    steps, each walking the layers with ``token_pos`` 0. Tokens are rebuilt from the file order: the
    prefill block ends at the first row whose layer is lower than the previous row's layer, and a
    decode step starts at every row whose layer is not higher than the previous row's.

    **Prefill order.** A real prefill runs the whole prompt batch layer by layer (all positions
    at layer 0, then all at layer 1, ...). The paging model of Angelopoulos et al. (Sec. 2.1-2.2)
    serves one token at a time, walking the ℓ layers in order, so the reader orders the prefill
    *token-major*: each prompt position becomes a token that walks layers 0..ℓ-1, positions in
    ascending order, followed by the decode tokens in execution order.

    Limits of the reconstruction: a decode-only dump would have its first step labelled prefill
    (a one-position prompt walking the layers looks the same), and two consecutive incomplete decode
    steps whose layers happen to keep increasing across the boundary merge into one (still
    incomplete, so still dropped, but counted once).

Both layouts: a token that lacks some layer is dropped and counted (``meta["dropped_tokens"]``);
with ``strict=True`` it is an error naming the file and the line of the token's first row. Tokens
are then expanded by :func:`paging.trace.from_routing` (``rounds``: Sec. 5.1 of the paper, one round
per rank; or ``groups``).
"""

from __future__ import annotations

import itertools
import math
import os

import numpy as np

from paging.errors import PagingError
from paging.io._common import (
    check_experts,
    check_int,
    check_phase,
    check_scores,
    describe,
    layout_for,
    no_phases,
    read_text,
    seq_name,
)
from paging.io.formats import TraceFormat
from paging.layout import Layout
from paging.options import parse_json
from paging.trace import Trace, from_routing

DEFAULT_FIELDS: dict = {
    "sequence": ("dataset", "problem_id"),
    "token": "token_idx",
    "layer": "layer",
    "experts": "experts",
    "scores": "gating_probs",
    "position": "token_pos",
    "logits": "logits",
}


def merge_fields(fields: dict | None) -> dict:
    """The default field names updated with ``fields`` (unknown keys are an error)."""
    out = dict(DEFAULT_FIELDS)
    for k, v in (fields or {}).items():
        if k not in DEFAULT_FIELDS:
            raise PagingError(f"unknown field option {k!r}; expected some of "
                              f"{', '.join(DEFAULT_FIELDS)}")
        if k == "sequence":
            v = (v,) if isinstance(v, str) else tuple(v)
        out[k] = v
    return out


def parse_jsonl(text: str, file: str) -> list[tuple[int, dict]]:
    """``(line, record)`` for every non-blank line; malformed JSON is an error with its line."""
    out = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        rec = parse_json(raw, file, "one JSON object per line", lineno)
        if not isinstance(rec, dict):
            raise PagingError(f"expected a JSON object per line, got {type(rec).__name__} "
                              f"{describe(rec)}", file, lineno)
        out.append((lineno, rec))
    if not out:
        raise PagingError("the file is empty; expected one JSON routing record per line "
                          "(sequence keys, token, layer, experts)", file, 1)
    return out


def _check_logits(value: object, what: str, file: str, line: int,
                  n_experts: int | None) -> list[float]:
    """A list of finite router logits, one per expert (``n_experts`` of them when known)."""
    if not isinstance(value, list) or not value:
        raise PagingError(f"{what} must be a non-empty list of numbers (one logit per expert), "
                          f"got {describe(value)}", file, line)
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise PagingError(f"{what} holds {describe(v)}; expected finite numbers", file, line)
    if n_experts is not None and len(value) != n_experts:
        raise PagingError(f"{what} has {len(value)} entries; expected one per expert "
                          f"(n_experts={n_experts})", file, line)
    return value


def _sort_key(v: object) -> tuple:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return (0, v, "")
    return (1, 0, str(v))


class _Rows:
    """The validated rows of one sequence, in file order."""

    def __init__(self) -> None:
        self.lines: list[int] = []
        self.tok: list[int] = []
        self.layer: list[int] = []
        self.experts: list[list[int]] = []
        self.scores: list[list[float] | None] = []
        self.logits: list[list[float] | None] = []
        self.k: int | None = None
        self.k_line = 0


def read_routing_jsonl(path: str | os.PathLike, *, expand: str = "rounds", strict: bool = False,
                       phase: str = "both", fields: dict | None = None,
                       n_experts: int | None = None, n_layers: int | None = None) -> list[Trace]:
    """Read a routing-log JSONL file (or a raw prefill+decode dump) into one Trace per sequence.

    Parameters
    ----------
    path:
        The ``.jsonl`` file.
    expand:
        ``"rounds"`` (Angelopoulos et al., Sec. 5.1: token t becomes K rounds, round r requests
        every layer's r-th listed expert) or ``"groups"`` (see :mod:`paging.trace`).
    strict:
        Make an incomplete token (one lacking some layer) an error instead of dropping it.
    phase:
        ``"both"``, ``"prefill"`` or ``"decode"``; only the raw prefill+decode dump has phases.
    fields:
        Field names, defaults :data:`DEFAULT_FIELDS` (``sequence`` keys ``dataset, problem_id``;
        ``token_idx``, ``layer``, ``experts``, ``gating_probs``; ``token_pos`` marks the raw dump).
        A sequence key missing from the first record is not used.
    n_experts, n_layers:
        The layout; inferred as the largest id + 1 in the file when not given. An id at or above
        an explicit value is an error.

    Returns
    -------
    list[Trace]
        One trace per sequence, sorted by the sequence keys, named
        ``FILE#key=value`` (only keys that differ between sequences; the last key when all agree),
        plus ``,phase=prefill`` / ``,phase=decode`` when a single phase is selected. ``meta`` holds
        ``source, format, rows, n_tokens, top_k, dropped_tokens, sequence, scores`` and, for the
        raw dump, ``phase, phases, phase_bounds``.
    """
    f = merge_fields(fields)
    file = str(path)
    check_phase(phase)
    records = parse_jsonl(read_text(path), file)
    line0, rec0 = records[0]
    raw = f["token"] not in rec0 and f["position"] in rec0
    tok_field = f["position"] if raw else f["token"]
    if not raw:
        no_phases(phase, file, "routing log")
    keys = [k for k in f["sequence"] if k in rec0]

    groups: dict[tuple, _Rows] = {}
    max_e = max_z = -1
    max_z_line = max_e_line = None
    layers_seen: set[int] = set()
    logit_len = logit_line = None
    for line, rec in records:
        seq = []
        for k in keys:
            if k not in rec:
                raise PagingError(f"missing field {k!r} (a sequence key the first record has); "
                                  "expected every record to name its sequence", file, line)
            v = rec[k]
            if v is not None and not isinstance(v, (str, int, float, bool)):
                raise PagingError(f"sequence key {k!r} must be a string or a number, got "
                                  f"{describe(v)}", file, line)
            seq.append(v)
        for k in (tok_field, f["layer"], f["experts"]):
            if k not in rec:
                raise PagingError(f"missing field {k!r}; expected the fields {tok_field}, "
                                  f"{f['layer']}, {f['experts']}", file, line)
        tok = check_int(rec[tok_field], tok_field, file, line)
        z = check_int(rec[f["layer"]], f["layer"], file, line, n_layers, "n_layers")
        ex = check_experts(rec[f["experts"]], f["experts"], file, line, n_experts)
        sc = rec.get(f["scores"])
        if sc is not None:
            sc = check_scores(sc, f["scores"], len(ex), file, line)
        lg = rec.get(f["logits"])
        if lg is not None:
            lg = _check_logits(lg, f["logits"], file, line, n_experts)
            if logit_len is None:
                logit_len, logit_line = len(lg), line
            elif len(lg) != logit_len:
                raise PagingError(f"{f['logits']} has {len(lg)} entries here and {logit_len} at "
                                  f"line {logit_line}; expected one logit per expert",
                                  file, line)
        g = groups.get(tuple(seq))
        if g is None:
            g = groups[tuple(seq)] = _Rows()
        if g.k is None:
            g.k, g.k_line = len(ex), line
        elif len(ex) != g.k:
            raise PagingError(f"top-K changes within a sequence: {len(ex)} experts here, {g.k} "
                              f"at line {g.k_line}; expected the same K for every row", file, line)
        g.lines.append(line)
        g.tok.append(tok)
        g.layer.append(z)
        g.experts.append(ex)
        g.scores.append(sc)
        g.logits.append(lg)
        if max(ex) > max_e:
            max_e, max_e_line = max(ex), line
        if z > max_z:
            max_z, max_z_line = z, line
        layers_seen.add(z)
    if n_layers is None and len(layers_seen) < max_z + 1:
        # every token walks every layer: a layer below the largest id that no record names
        # means that id is wrong (the inferred layout would drop every token as incomplete)
        gap = list(itertools.islice((x for x in range(max_z) if x not in layers_seen), 6))
        shown = ", ".join(map(str, gap[:5])) + (", ..." if len(gap) > 5 else "")
        raise PagingError(f"layer {max_z} here, but no record names layer {shown}; expected "
                          "layer ids 0..L-1 with every layer present (pass --layers L to "
                          "check the ids against the model's)", file, max_z_line)
    if logit_len is not None and n_experts is None:
        max_e = max(max_e, logit_len - 1)  # the logits name every expert of the layer
    layout = layout_for(max_e, max_z, n_experts, n_layers, file, max_e_line, max_z_line)
    if logit_len is not None and logit_len != layout.n_experts:
        raise PagingError(f"{f['logits']} has {logit_len} entries; expected one per expert "
                          f"(n_experts={layout.n_experts})", file, logit_line)

    order = sorted(groups, key=lambda s: tuple(_sort_key(v) for v in s))
    varying = [i for i, _ in enumerate(keys) if len({s[i] for s in order}) > 1]
    if keys and not varying:
        varying = [len(keys) - 1]
    traces = []
    for seq in order:
        g = groups[seq]
        parts = [(keys[i], seq[i]) for i in varying]
        base_meta = {"source": file, "rows": len(g.lines),
                     "sequence": dict(zip(keys, seq, strict=True))}
        if raw:
            traces.append(_raw_trace(g, layout, expand, strict, phase, file, parts, base_meta))
        else:
            name = seq_name(file, parts)
            tok = np.asarray(g.tok, dtype=np.int64)
            table, scores, kept, dropped, logits = _build_table(
                g, tok, np.arange(tok.size), layout, strict, file, name, lambda t: f"token {t}")
            meta = dict(base_meta, format="routing-jsonl", dropped_tokens=len(dropped),
                        dropped_token_ids=[int(t) for t in dropped], scores=scores is not None)
            traces.append(from_routing(table, layout, expand, scores, name, meta, logits))
    return traces


def _build_table(g: _Rows, tok: np.ndarray, rows: np.ndarray, layout: Layout, strict: bool,
                 file: str, name: str, label):
    """The routing table of the complete tokens among ``rows`` (indices into ``g``), whose token
    ids are ``tok[rows]``: returns ``(experts[T, ℓ, K], scores or None, kept ids, dropped ids,
    logits[T, ℓ, n] or None)`` (logits only when every kept row has them).
    ``label(token id)`` names a token in error messages."""
    L = layout.n_layers
    lines = np.asarray(g.lines, dtype=np.int64)[rows]
    t = tok[rows]
    z = np.asarray(g.layer, dtype=np.int64)[rows]
    order = np.lexsort((lines, z, t))
    same = (t[order][1:] == t[order][:-1]) & (z[order][1:] == z[order][:-1])
    if same.any():
        i = int(np.flatnonzero(same)[0])
        a, b = int(lines[order][i]), int(lines[order][i + 1])
        raise PagingError(f"duplicate row for {label(int(t[order][i]))}, layer "
                          f"{int(z[order][i])} (first at line {a}); expected one row per token "
                          f"and layer in {name}", file, b)
    uniq, first, counts = np.unique(t, return_index=True, return_counts=True)
    complete = counts == L
    dropped = uniq[~complete]
    if strict and dropped.size:
        # report the incomplete token whose first row comes first in the file
        first_line = np.minimum.reduceat(lines[np.argsort(t, kind="stable")],
                                         np.r_[0, np.cumsum(counts)[:-1]])
        j = int(np.argmin(np.where(complete, np.iinfo(np.int64).max, first_line)))
        have = set(z[t == uniq[j]].tolist())
        missing = [x for x in range(L) if x not in have]
        shown = ", ".join(map(str, missing[:5])) + (", ..." if len(missing) > 5 else "")
        raise PagingError(f"{label(int(uniq[j]))} of {name} has {int(counts[j])} of {L} layers "
                          f"(missing layer {shown}); strict mode expects every layer of every "
                          "token", file, int(first_line[j]))
    keep = np.isin(t, uniq[complete])
    sel = rows[keep][np.lexsort((z[keep], t[keep]))]
    K = g.k or 1
    T = int(complete.sum())
    ex = np.asarray([g.experts[i] for i in sel], dtype=np.int64).reshape(T, L, K)
    scores = None
    if sel.size and all(g.scores[i] is not None for i in sel):
        scores = np.asarray([g.scores[i] for i in sel], dtype=np.float64).reshape(T, L, K)
    logits = None
    if sel.size and all(g.logits[i] is not None for i in sel):
        logits = np.asarray([g.logits[i] for i in sel], dtype=np.float64).reshape(
            T, L, layout.n_experts)
    return ex, scores, uniq[complete], dropped, logits


def _raw_trace(g: _Rows, layout: Layout, expand: str, strict: bool, phase: str, file: str,
               parts: list, base_meta: dict) -> Trace:
    """One sequence of the raw prefill+decode dump (rows of ``g`` in file order)."""
    layer = np.asarray(g.layer, dtype=np.int64)
    pos = np.asarray(g.tok, dtype=np.int64)
    n = layer.size
    down = np.flatnonzero(layer[1:] < layer[:-1])
    n_pre = int(down[0]) + 1 if down.size else n
    # decode step s starts at every row whose layer does not increase
    dec = layer[n_pre:]
    starts = np.r_[True, dec[1:] <= dec[:-1]] if dec.size else np.zeros(0, bool)
    step = np.cumsum(starts) - 1
    offset = int(pos[:n_pre].max()) + 1 if n_pre else 0
    tok = np.r_[pos[:n_pre], offset + step]
    name_parts = parts + ([("phase", phase)] if phase != "both" else [])
    name = seq_name(file, name_parts)
    rows = np.arange(n)
    if phase == "prefill":
        rows = rows[:n_pre]
    elif phase == "decode":
        rows = rows[n_pre:]

    def label(t: int) -> str:
        return f"prompt position {t}" if t < offset else f"decode step {t - offset}"

    # both phases go through one table so incomplete tokens are dropped the same way
    table, scores, kept, dropped, logits = _build_table(g, tok, rows, layout, strict, file,
                                                        name, label)
    kept_pre = int((kept < offset).sum())
    drop_pre = int((dropped < offset).sum())
    K = g.k or 1
    per_token = K * layout.n_layers
    phases = {}
    bounds = {}
    if phase in ("both", "prefill"):
        phases["prefill"] = {"rows": n_pre, "positions": int(np.unique(pos[:n_pre]).size),
                             "tokens": kept_pre, "dropped": drop_pre}
        bounds["prefill"] = [0, kept_pre * per_token]
    if phase in ("both", "decode"):
        n_steps = int(step[-1]) + 1 if step.size else 0
        kept_dec, drop_dec = int(kept.size) - kept_pre, int(dropped.size) - drop_pre
        phases["decode"] = {"rows": n - n_pre, "steps": n_steps, "tokens": kept_dec,
                            "dropped": drop_dec}
        start = kept_pre * per_token
        bounds["decode"] = [start, start + kept_dec * per_token]
    meta = dict(base_meta, format="routing-jsonl-raw", rows=int(rows.size),
                dropped_tokens=int(dropped.size), scores=scores is not None, phase=phase,
                phases=phases, phase_bounds=bounds)
    return from_routing(table, layout, expand, scores, name, meta, logits)


TRACE_FORMATS = (TraceFormat("jsonl", read_routing_jsonl, extensions=(".jsonl", ".ndjson"),
                             description="routing log, one record per (sequence, token, layer); "
                                         "or the raw prefill+decode dump", order=10),)
