"""The package's own ``.npz`` trace file: several sequences, exact round trip.

Arrays (``numpy.savez``, no pickles)::

    format      "paging-trace-npz/1"
    n_experts, n_layers, expand     the layout and expansion mode (scalars)
    names       S sequence names (unicode)
    offsets     S+1 int64: sequence s is requests offsets[s]:offsets[s+1]
    pages, steps                    int64, all sequences back to back (steps restart at 0)
    token, rank (int64), score (float64)    optional: present when every sequence has them
                                    (token and rank follow the layer clock, as in a CSV:
                                    :mod:`paging.io.csvtrace`)
    logits, logit_offsets           optional (every sequence has router logits): float64
                                    (ΣT, ℓ, n), sequence s holds rows logit_offsets[s]:[s+1]
    meta        S JSON strings (each sequence's ``Trace.meta``)
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Sequence

import numpy as np

from paging.errors import INT64_MAX, PagingError
from paging.io._common import no_phases
from paging.io._pages import as_list, build_trace, reexpand
from paging.io.atomic import atomic_path
from paging.io.formats import TraceFormat
from paging.layout import Layout
from paging.trace import EXPANSIONS, Trace

FORMAT = "paging-trace-npz/1"
_OPTIONAL = (("token", np.int64), ("rank", np.int64), ("score", np.float64))


def _json_default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


def write_npz(traces: Trace | Sequence[Trace], path: str | os.PathLike, *,
              compress: bool = False) -> None:
    """Write one or several traces (one layout, one expansion mode) to ``path`` atomically."""
    ts = as_list(traces)
    if not ts:
        raise PagingError("nothing to write: no sequences")
    if len({t.expand for t in ts}) > 1:
        raise PagingError("the traces mix rounds and groups mode; one file holds one mode")
    lay = ts[0].layout
    arrays = {
        "format": np.array(FORMAT),
        "n_experts": np.array(lay.n_experts, dtype=np.int64),
        "n_layers": np.array(lay.n_layers, dtype=np.int64),
        "expand": np.array(ts[0].expand),
        "names": np.array([t.name for t in ts], dtype=str),
        "offsets": np.r_[0, np.cumsum([t.n_requests for t in ts])].astype(np.int64),
        "pages": np.concatenate([t.pages for t in ts]),
        "steps": np.concatenate([t.steps for t in ts]),
        "meta": np.array([json.dumps(t.meta, default=_json_default) for t in ts], dtype=str),
    }
    for key, dt in _OPTIONAL:
        if all(getattr(t, key) is not None for t in ts):
            arrays[key] = np.concatenate([getattr(t, key) for t in ts]).astype(dt)
    if all(t.logits is not None for t in ts):
        arrays["logits"] = np.concatenate([t.logits for t in ts], axis=0)
        arrays["logit_offsets"] = np.r_[0, np.cumsum([t.logits.shape[0] for t in ts])].astype(
            np.int64)
    save = np.savez_compressed if compress else np.savez
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        save(fh, **arrays)


def stored_header(need, n_experts, n_layers, file: str) -> tuple[Layout, str]:
    """The stored trace's layout and mode, checked (``need(key, kind)``: a member's value,
    typed; shared by the whole-file reader and the chunked one, :mod:`paging.io.chunks`)."""

    def scalar(key: str, kind: str):
        a = np.asarray(need(key, kind))
        if a.ndim != 0:  # (int() of an array was a TypeError traceback)
            raise PagingError(f"array {key!r} has shape {a.shape}; expected a scalar "
                              f"({'an integer' if kind == 'int' else 'a string'})", file)
        return a.item()

    fmt = str(scalar("format", "str"))
    if fmt != FORMAT:
        raise PagingError(f"format is {fmt!r}; expected {FORMAT!r}", file)
    try:
        lay = Layout(int(scalar("n_experts", "int")), int(scalar("n_layers", "int")))
    except PagingError as e:  # (n_experts 0, or a layout int64 ids cannot name: the file's)
        raise PagingError(e.message, e.file or file, e.line) from None
    for name, v, have in (("n_experts", n_experts, lay.n_experts),
                          ("n_layers", n_layers, lay.n_layers)):
        if v is not None and v != have:
            raise PagingError(f"the file stores {name}={have}, got {name}={v}; a stored trace "
                              "keeps its layout", file)
    mode = str(scalar("expand", "str"))
    if mode not in EXPANSIONS:
        raise PagingError(f"expand is {mode!r}; expected one of {', '.join(EXPANSIONS)}", file)
    return lay, mode


def read_npz(path: str | os.PathLike, *, expand: str = "rounds", strict: bool = False,
             phase: str = "both", n_experts: int | None = None,
             n_layers: int | None = None) -> list[Trace]:
    """Read a ``.npz`` written by :func:`write_npz`; the traces come back in mode ``expand``
    (re-expanded through their token/rank columns when stored in the other mode, see
    :func:`paging.io._pages.reexpand`). ``strict`` has no effect (stored traces have no incomplete
    tokens); ``n_experts``/``n_layers``, when given, must match the stored layout."""
    file = str(path)
    no_phases(phase, file, ".npz trace")
    with open_npz(path, "a file written by paging trace convert") as z:
        try:
            data = {k: z[k] for k in z.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
            raise PagingError(f"not a readable .npz file ({e}); expected a file written by "
                              "paging trace convert", file) from None

    def need(key: str, kind: str) -> np.ndarray:
        if key not in data:
            raise PagingError(f"missing array {key!r}; expected a paging trace .npz with "
                              "pages, steps, offsets, names, n_experts, n_layers, expand", file)
        a = data[key]
        if kind == "int" and not np.issubdtype(a.dtype, np.integer):
            raise PagingError(f"array {key!r} has dtype {a.dtype}; expected integers", file)
        if kind == "float" and not np.issubdtype(a.dtype, np.number):
            raise PagingError(f"array {key!r} has dtype {a.dtype}; expected numbers", file)
        if kind == "str" and a.dtype.kind != "U":
            raise PagingError(f"array {key!r} has dtype {a.dtype}; expected strings", file)
        return a

    lay, mode = stored_header(need, n_experts, n_layers, file)
    names = need("names", "str").reshape(-1)
    off = need("offsets", "int").astype(np.int64).reshape(-1)
    pages = as_int64("pages", need("pages", "int"), file).reshape(-1)
    steps = as_int64("steps", need("steps", "int"), file).reshape(-1)
    opt = {k: (as_int64(k, need(k, "int"), file) if dt is np.int64
               else need(k, "float").astype(dt)).reshape(-1)
           for k, dt in _OPTIONAL if k in data}
    metas = need("meta", "str").reshape(-1) if "meta" in data else None
    S = names.size
    if (off.size != S + 1 or off[0] != 0 or off[-1] != pages.size or (np.diff(off) < 0).any()
            or steps.size != pages.size or any(a.size != pages.size for a in opt.values())
            or (metas is not None and metas.size != S)):
        raise PagingError(f"inconsistent array sizes ({S} names, {off.size} offsets, "
                          f"{pages.size} pages, {steps.size} steps); expected offsets = 0 .. "
                          "len(pages) with one more entry than names", file)
    for key in ("token", "rank"):
        if key in opt:
            check_nonnegative(key, opt[key], file)
    check_scores(opt.get("score", np.zeros(0)), file)
    logits = lo_off = None
    if "logits" in data:
        logits = need("logits", "float").astype(np.float64)
        lo_off = need("logit_offsets", "int").astype(np.int64).reshape(-1)
        if (logits.ndim != 3 or logits.shape[1:] != (lay.n_layers, lay.n_experts)
                or lo_off.size != S + 1 or lo_off[0] != 0 or lo_off[-1] != logits.shape[0]
                or (np.diff(lo_off) < 0).any()):
            raise PagingError(f"array 'logits' has shape {logits.shape} with {lo_off.size} "
                              f"offsets; expected (tokens, {lay.n_layers}, {lay.n_experts}) and "
                              "one more offset than names", file)
    traces = []
    for s in range(S):
        a, b = int(off[s]), int(off[s + 1])
        nm = str(names[s])
        meta = {}
        if metas is not None:
            try:
                meta = json.loads(str(metas[s]))
            except (json.JSONDecodeError, RecursionError):
                raise PagingError(f"meta of sequence {nm} is not valid JSON", file) from None
            if not isinstance(meta, dict):
                raise PagingError(f"meta of sequence {nm} is not a JSON object", file)
        if "source" in meta and meta["source"] != file:
            meta.setdefault("converted_from", meta["source"])
        meta["source"] = file
        tr = build_trace(lambda i, nm=nm: (f"sequence {nm}: ", None), file,
                         lay, pages[a:b], steps[a:b], nm,
                         *(opt[k][a:b] if k in opt else None for k, _ in _OPTIONAL), mode, meta,
                         None if logits is None else logits[lo_off[s]:lo_off[s + 1]])
        traces.append(reexpand(tr, expand))
    if not traces:
        raise PagingError("the file holds no sequences", file)
    return traces


def open_npz(path: str | os.PathLike, expected: str) -> np.lib.npyio.NpzFile:
    """``np.load(path)`` of an ``.npz`` archive (to close, ``with``); a file numpy cannot read,
    or a single ``.npy`` array (``np.load`` returns the array itself: a TypeError traceback at
    ``with``), is one :class:`PagingError` naming the file and what was ``expected``."""
    file = str(path)
    try:
        z = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise PagingError(f"not a readable .npz file ({e}); expected {expected}", file) from None
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise PagingError(f"not an .npz archive (a single .npy array of shape {z.shape}); "
                          f"expected {expected}", file)
    return z


def as_int64(key: str, values: np.ndarray, file: str, at: int = 0) -> np.ndarray:
    """An integer array as int64, refusing an unsigned value int64 cannot hold (the cast made
    2^64 - 1 into -1, and the error then named page -1); ``at``: the index of ``values[0]``
    in the file's array (a chunk's), which the error names."""
    if values.dtype.kind == "u" and values.size and int(values.max()) > INT64_MAX:
        i = int(np.flatnonzero(values.reshape(-1) > INT64_MAX)[0])
        raise PagingError(f"array {key!r} holds {int(values.reshape(-1)[i])}, beyond int64, "
                          f"at index {at + i}; expected ids below 2^63", file)
    return values.astype(np.int64)


def check_nonnegative(key: str, values: np.ndarray, file: str, at: int = 0) -> None:
    """Token ids and ranks are non-negative (as a CSV's cells must be): a negative one would
    index the routing table from its end when the trace is expanded again (``at``: as
    :func:`as_int64`)."""
    if values.size and int(values.min()) < 0:
        i = int(np.flatnonzero(values.reshape(-1) < 0)[0])
        raise PagingError(f"array {key!r} holds a negative value ({int(values.reshape(-1)[i])}) "
                          f"at index {at + i}; expected non-negative "
                          f"{'token ids' if key == 'token' else 'ranks'}", file)


def check_scores(values: np.ndarray, file: str, at: int = 0) -> None:
    """Gate scores are finite and non-negative (``at``: as :func:`as_int64`)."""
    bad = np.flatnonzero(~(np.isfinite(values) & (values >= 0)).reshape(-1))
    if bad.size:
        raise PagingError(f"array 'score' holds {float(values.reshape(-1)[bad[0]])} at index "
                          f"{at + int(bad[0])}; expected finite non-negative gate scores", file)


TRACE_FORMATS = (TraceFormat("npz", read_npz, write_npz, extensions=(".npz",),
                             description="the package's own multi-sequence .npz", order=30),)
