"""Plain CSV traces: one request per row.

::

    # paging-trace n_experts=8 n_layers=32 expand=rounds
    sequence,step,page,token,rank,score
    humaneval_2_routing.jsonl#problem_id=0,0,6,0,0,0.6959583759307861
    ...

A header row is required; ``page`` is the only required column (``page = layer * n_experts +
expert``); ``step``, ``token``, ``rank``, ``score`` and ``sequence`` are optional. Without ``step``
every request is its own step (rounds). Without ``sequence`` the file is one sequence named after
the file; with it, the rows of a sequence must be contiguous. The optional first comment line gives
the layout and the expansion mode; without it ``n_experts`` and ``n_layers`` must be passed in.
Request i of a sequence must be a page of layer ``steps[i] mod ℓ`` (Angelopoulos et al., Sec. 2.2);
a violation is reported as "wrong layer order" with its line. ``token`` and ``rank`` follow the
layer clock as the expansions make them (:func:`paging.trace.token_violation`): one token id per
forward pass (``step // ℓ``), ids that increase from token to token (every pass a new token in
groups mode), and in rounds mode one rank per round and a token's rounds ranked 0, 1, ..., K-1;
a violation is reported with its line.
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Sequence

import numpy as np

from paging.errors import PagingError
from paging.io._common import csv_records, no_phases, read_text, text_int
from paging.io._pages import as_list, build_trace, reexpand
from paging.io.atomic import atomic_path
from paging.io.formats import TraceFormat
from paging.layout import Layout
from paging.trace import EXPANSIONS, Trace

COLUMNS = ("sequence", "step", "page", "token", "rank", "score")
MAGIC = "# paging-trace"


def write_csv(traces: Trace | Sequence[Trace], path: str | os.PathLike) -> None:
    """Write traces as CSV (exact round trip with :func:`read_csv`: scores are written with
    Python's shortest exact float repr). Written atomically. A sequence without requests has
    no row to stand in, so it is refused (an ``.npz`` holds it)."""
    ts = as_list(traces)
    if not ts:
        raise PagingError("nothing to write: no sequences")
    for t in ts:
        if not t.n_requests:
            raise PagingError(f"sequence {t.name} has no requests, and a CSV trace holds a row "
                              "per request; expected non-empty sequences (write .npz to keep "
                              "empty ones)", str(path))
    if len({t.expand for t in ts}) > 1:
        raise PagingError("the traces mix rounds and groups mode; one file holds one mode")
    lay = ts[0].layout
    cols = ["sequence", "step", "page"]
    cols += [c for c in ("token", "rank", "score") if all(getattr(t, c) is not None for t in ts)]
    with atomic_path(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        fh.write(f"{MAGIC} n_experts={lay.n_experts} n_layers={lay.n_layers} "
                 f"expand={ts[0].expand}\n")
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(cols)
        for t in ts:
            data = [getattr(t, "steps" if c == "step" else "pages" if c == "page" else c)
                    .tolist() for c in cols[1:]]
            if "score" in cols:
                data[-1] = [repr(float(x)) for x in data[-1]]
            w.writerows(zip([t.name] * t.n_requests, *data, strict=True))


def _header_comment(line: str, file: str) -> dict:
    words = line[len(MAGIC):].split()
    out = {}
    for w in words:
        key, eq, val = w.partition("=")
        if not eq or key not in ("n_experts", "n_layers", "expand"):
            raise PagingError(f"unknown item {w!r} in the header comment; expected "
                              f"'{MAGIC} n_experts=N n_layers=L expand=rounds|groups'", file, 1)
        if key == "expand":
            if val not in EXPANSIONS:
                raise PagingError(f"expand={val} in the header comment; expected one of "
                                  f"{', '.join(EXPANSIONS)}", file, 1)
            out[key] = val
        else:
            if not (val.isascii() and val.isdigit()) or int(val) < 1:  # (not int()'s '٤', '1_0')
                raise PagingError(f"{key}={val} in the header comment; expected an integer >= 1",
                                  file, 1)
            out[key] = int(val)
    return out


def declared_layout(declared: dict, n_experts, n_layers, file: str) -> Layout:
    """The layout of a CSV trace: its header comment's, which ``n_experts``/``n_layers`` (when
    given) must match, else theirs (shared with the chunked reader, :mod:`paging.io.chunks`)."""
    sizes = {}
    for key, given in (("n_experts", n_experts), ("n_layers", n_layers)):
        if key in declared and given is not None and given != declared[key]:
            raise PagingError(f"the header comment says {key}={declared[key]}, got {key}={given}",
                              file, 1)
        sizes[key] = declared.get(key, given)
    if sizes["n_experts"] is None or sizes["n_layers"] is None:
        raise PagingError(f"the layout is unknown: no '{MAGIC} n_experts=N n_layers=L' first "
                          "line; pass n_experts and n_layers (--n-experts N --layers L)", file, 1)
    try:
        return Layout(sizes["n_experts"], sizes["n_layers"])
    except PagingError as e:  # (a header comment's layout int64 ids cannot name)
        raise PagingError(e.message, file, 1 if declared else None) from None


def read_csv(path: str | os.PathLike, *, expand: str = "rounds", strict: bool = False,
             phase: str = "both", n_experts: int | None = None,
             n_layers: int | None = None) -> list[Trace]:
    """Read a CSV trace (see the module docstring) into one Trace per sequence, in the order the
    sequences appear. The traces come back in mode ``expand`` (re-expanded through their token/rank
    columns when the file is in the other mode). ``strict`` has no effect (rows are requests);
    ``n_experts``/``n_layers`` are required without a header comment and must agree with it."""
    file = str(path)
    no_phases(phase, file, "CSV trace")
    text = read_text(path)
    if not text.strip():
        raise PagingError("the file is empty; expected a header row with a 'page' column", file,
                          1)
    first = 0
    declared: dict = {}
    if text.startswith("#"):
        head, _, _ = text.partition("\n")
        if not head.startswith(MAGIC):
            raise PagingError(f"unexpected comment; the only comment allowed is a first line "
                              f"'{MAGIC} n_experts=N n_layers=L expand=MODE'", file, 1)
        declared = _header_comment(head.rstrip("\r"), file)
        first = 1
    lay = declared_layout(declared, n_experts, n_layers, file)

    reader = csv.reader(io.StringIO(text.split("\n", first)[-1] if first else text))
    header = None
    rows: dict[str, list] = {}
    lines: list[int] = []
    order: list[str] = []
    seq_of: list[str] = []
    base = os.path.basename(file)
    for rec in csv_records(reader, file, first):
        line = reader.line_num + first
        if not rec or (len(rec) == 1 and not rec[0].strip()):
            continue
        if header is None:
            header = [c.strip() for c in rec]
            for c in header:
                if c not in COLUMNS:
                    raise PagingError(f"unknown column {c!r}; expected some of "
                                      f"{', '.join(COLUMNS)}", file, line)
            if len(set(header)) != len(header):
                raise PagingError("a column appears twice in the header row", file, line)
            if "page" not in header:
                raise PagingError("the header row has no 'page' column; expected a header such "
                                  "as 'sequence,step,page'", file, line)
            rows = {c: [] for c in header if c != "sequence"}
            continue
        if len(rec) != len(header):
            raise PagingError(f"row has {len(rec)} fields; expected {len(header)} "
                              f"({','.join(header)})", file, line)
        for c, cell in zip(header, rec, strict=True):
            cell = cell.strip()
            if c == "sequence":
                if not seq_of or cell != seq_of[-1]:
                    if cell in order:
                        raise PagingError(f"sequence {cell!r} appears again after other "
                                          "sequences; expected the rows of a sequence to be "
                                          "contiguous", file, line)
                    order.append(cell)
                seq_of.append(cell)
            elif c == "score":
                try:
                    v = float(cell)
                except ValueError:
                    v = math.nan
                if not math.isfinite(v) or v < 0:
                    raise PagingError(f"score {cell!r} is not a finite non-negative number",
                                      file, line)
                rows[c].append(v)
            else:
                rows[c].append(text_int(cell, c, file, line))
        lines.append(line)
    if header is None:
        raise PagingError("no header row; expected a header such as 'sequence,step,page'", file,
                          1)
    if not lines:
        raise PagingError("the file has a header but no rows; expected one request per row",
                          file, reader.line_num + first)
    cols = {c: np.asarray(v, dtype=np.float64 if c == "score" else np.int64)
            for c, v in rows.items()}
    line_arr = np.asarray(lines, dtype=np.int64)
    if "sequence" in header:
        seq = np.asarray(seq_of)
        bounds = np.r_[0, np.flatnonzero(seq[1:] != seq[:-1]) + 1, seq.size]
        names = [str(seq[a]) for a in bounds[:-1]]
    else:
        bounds = np.array([0, line_arr.size])
        names = [base]
    if "step" in cols:
        mode = declared.get("expand")
        if mode is None:
            grouped = any((np.diff(cols["step"][a:b]) == 0).any()
                          for a, b in zip(bounds[:-1], bounds[1:], strict=True))
            mode = "groups" if grouped else "rounds"
    else:
        mode = declared.get("expand", "rounds")
    traces = []
    for nm, a, b in zip(names, bounds[:-1], bounds[1:], strict=True):
        pages = cols["page"][a:b]
        steps = cols["step"][a:b] if "step" in cols else np.arange(b - a, dtype=np.int64)
        meta = {"source": file, "format": "csv", "rows": int(b - a)}
        opt = [cols[c][a:b] if c in cols else None for c in ("token", "rank", "score")]
        if opt[0] is not None:
            meta["n_tokens"] = int(np.unique(opt[0]).size)
        if opt[1] is not None and b > a:
            meta["top_k"] = int(opt[1].max()) + 1
        tr = build_trace(lambda i, a=a: ("", int(line_arr[a + i])), file,
                         lay, pages, steps, nm, *opt, mode, meta)
        traces.append(reexpand(tr, expand))
    return traces


TRACE_FORMATS = (TraceFormat("csv", read_csv, write_csv, extensions=(".csv",),
                             description="plain CSV, one request per row", order=40),)
