"""Readers for generic cache traces: libCacheSim oracleGeneral, libCacheSim CSV, plain id lists.

Three formats from outside the MoE world, so that block, CDN and key-value traces run through
the same simulator and one-pass miss curves (:mod:`paging.mrc`):

===================  =======================================================================
``oracle-general``   libCacheSim's binary trace (``.oracleGeneral``, ``.bin``): packed 24-byte
                     records ``{uint32 clock_time; uint64 obj_id; uint32 obj_size;
                     int64 next_access_vtime}`` (:data:`paging.io.libcachesim.ORACLE_GENERAL`)
``libcachesim-csv``  CSV with a header row naming an object-id column (``obj_id``, ``id``,
                     ``key`` or ``obj``) and optionally a time (``time``, ``timestamp``,
                     ``clock_time``) and a size column (``obj_size``, ``size``); what
                     :func:`paging.io.write_libcachesim_csv` writes (``.libcachesim.csv``)
``text``             one object id per line (``.txt``); blank lines and ``#`` comments skipped
===================  =======================================================================

Two ways to read them
    *Generic* (the default): one layer (ℓ = 1) whose "experts" are the distinct objects,
    numbered densely in order of first appearance (page 0 is the first object requested).
    Ids are numeric when every id of the file is ASCII digits below 2^63; leading zeros do not
    count (``01`` and ``1`` are one object, as in libCacheSim, which reads numeric ids with
    ``strtoull``), while ``1_000``, ``+7`` or non-ASCII digits make every id a string (so
    ``1_000`` and ``1000`` are two objects).
    ``trace.meta["object_ids"]`` maps page -> original id (an integer array, or a list of
    strings for CSV/text traces with non-numeric ids), ``trace.meta["sizes"]`` gives each
    page's size in bytes when the file has sizes (:func:`trace_sizes`).

    *Layered* (``n_experts`` and ``n_layers`` given): the ids are page ids
    (``layer * n_experts + expert``) and must fit the layout and follow the layer order
    (request i a page of layer ``i mod ℓ``); the first offending record is reported with its
    index (binary) or line (text) and what was expected.

Sizes
    An object's size is the size of its first request (libCacheSim's caches also keep the size
    an object was inserted with); later requests with another size are counted in
    ``meta["size_changes"]``. Size 0 (metadata-only requests in some public traces) counts as
    1 byte, because the package's sizes are integers >= 1; ``meta["zero_sizes"]`` counts them.
    Times are ignored: the request order is the file order.
"""

from __future__ import annotations

import csv
import io
import os
import re
from pathlib import Path

import numpy as np

from paging.errors import PagingError
from paging.io._common import csv_records, no_phases, read_text, text_int
from paging.io._pages import build_trace
from paging.io.formats import TraceFormat
from paging.io.libcachesim import ORACLE_GENERAL, write_libcachesim_csv, write_oracle_general
from paging.layout import Layout
from paging.trace import Trace

__all__ = ["read_oracle_general", "read_oracle_general_records", "read_libcachesim_csv",
           "read_text_ids", "trace_sizes", "ID_COLUMNS", "TIME_COLUMNS", "SIZE_COLUMNS"]

#: Header names accepted for the object id, time and size columns of a CSV cache trace.
ID_COLUMNS = ("obj_id", "id", "key", "obj")
TIME_COLUMNS = ("time", "timestamp", "clock_time", "ts")
SIZE_COLUMNS = ("obj_size", "size")


def trace_sizes(trace: Trace) -> np.ndarray | None:
    """Size in bytes of every page id of ``trace`` as recorded in its file, or None.

    Generic cache traces read from oracleGeneral or from a CSV with a size column carry their
    object sizes (``trace.meta["sizes"]``, one int64 per page id, >= 1); every other trace
    returns None. ``paging simulate TRACE --budget-gb G`` uses them when no ``--sizes`` is given.
    """
    s = trace.meta.get("sizes")
    if s is None:
        return None
    a = np.asarray(s, dtype=np.int64)
    if a.shape != (trace.layout.n_pages,):
        return None
    return a


def _check_layout(n_experts, n_layers, file: str) -> Layout | None:
    if n_experts is None and n_layers is None:
        return None
    if n_experts is None or n_layers is None:
        raise PagingError("a cache trace is read as layered only with both --n-experts and "
                          "--layers (ids are then page ids layer * n_experts + expert); give "
                          "both, or neither to read it as a generic trace (one layer)", file)
    return Layout(n_experts, n_layers)


def _build(ids: np.ndarray, sizes: np.ndarray | None, layout: Layout | None, file: str,
           expand: str, where) -> Trace:
    """The trace of object ids ``ids`` (int64 array, or object array of strings).

    ``where(i)`` names record i for error messages: ``(prefix, line or None)``."""
    name = os.path.basename(file)
    if expand != "rounds" and layout is None:
        raise PagingError(f"--expand {expand} needs a layered trace (pass --n-experts and "
                          "--layers); a generic cache trace has one request per step", file)
    meta: dict = {"format_ids": "generic" if layout is None else "layered"}
    if layout is None:
        if ids.size == 0:
            raise PagingError("the trace has no requests; expected at least one", file)
        uniq, first, inv = np.unique(ids, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")  # objects in order of first appearance
        rank = np.empty(order.size, dtype=np.int64)
        rank[order] = np.arange(order.size)
        pages = rank[inv.reshape(-1)]
        obj = uniq[order]
        meta["object_ids"] = obj if obj.dtype.kind in "iu" else [str(x) for x in obj]
        layout = Layout(int(order.size), 1)
    else:
        expect = (f"page id 0..{layout.n_pages - 1} (n_experts={layout.n_experts}, "
                  f"n_layers={layout.n_layers})")
        if ids.dtype.kind not in "iu":  # (strings: an id that is not an integer, or one
            for i, v in enumerate(ids):  # beyond 64 bits, which int64 cannot hold)
                text = str(v)
                if not re.fullmatch(r"-?[0-9]+", text):
                    prefix, line = where(i)
                    raise PagingError(f"{prefix}object id {v!r} is not an integer; a layered "
                                      f"trace needs a {expect}", file, line)
                if not 0 <= int(text) < layout.n_pages:
                    prefix, line = where(i)
                    raise PagingError(f"{prefix}object id {text} is out of range; expected a "
                                      f"{expect}", file, line)
        pages = ids.astype(np.int64, copy=False)
        bad = np.flatnonzero((ids < 0) | (ids >= layout.n_pages)) if ids.size else []
        if len(bad):
            i = int(bad[0])
            prefix, line = where(i)
            raise PagingError(f"{prefix}object id {int(ids[i])} is out of range; expected a "
                              f"{expect}", file, line)
    if sizes is not None:
        first_size = np.ones(layout.n_pages, dtype=np.int64)  # pages never requested: 1 byte
        seen, first_req = np.unique(pages, return_index=True)
        first_size[seen] = sizes[first_req]  # the size of each page's first request
        meta["size_changes"] = int(np.count_nonzero(sizes != first_size[pages]))
        meta["zero_sizes"] = int(np.count_nonzero(first_size[seen] == 0))
        meta["sizes"] = np.maximum(first_size, 1)
    return build_trace(where, file, layout, pages, np.arange(pages.size, dtype=np.int64), name,
                       expand="rounds", meta=meta)


def read_oracle_general_records(path: str | os.PathLike) -> np.ndarray:
    """The records of an oracleGeneral file as a read-only structured array (memory-mapped;
    fields ``time``, ``obj_id``, ``obj_size``, ``next_access_vtime``)."""
    file = str(path)
    size = Path(path).stat().st_size
    if size == 0:
        raise PagingError("the file is empty; expected oracleGeneral records of 24 bytes", file)
    if size % ORACLE_GENERAL.itemsize:
        raise PagingError(f"{size} bytes is not a whole number of 24-byte oracleGeneral "
                          f"records (record {size // ORACLE_GENERAL.itemsize} is cut short); "
                          "expected an uncompressed libCacheSim oracleGeneral trace (decompress "
                          ".zst files with `zstd -d` first)", file)
    return np.memmap(path, dtype=ORACLE_GENERAL, mode="r")


def read_oracle_general(path: str | os.PathLike, *, expand: str = "rounds",
                        n_experts: int | None = None, n_layers: int | None = None,
                        phase: str = "both", strict: bool = False) -> list[Trace]:
    """Read a libCacheSim oracleGeneral trace as one sequence (see the module docstring).

    Parameters
    ----------
    path : str or PathLike
        An uncompressed oracleGeneral file (24-byte little-endian records).
    expand : str
        ``"rounds"`` (every request its own step; ``"groups"`` is refused for generic traces).
    n_experts, n_layers : int, optional
        Both given: the ids are page ids of that layout (layered trace); neither: a generic
        trace with dense page ids and ``meta["object_ids"]``, ``meta["sizes"]``.

    Returns
    -------
    list[Trace]
        One trace, named after the file.

    Notes
    -----
    O(N log N) (dense renumbering by sorting). ``next_access_vtime`` is not needed: the
    simulator computes next uses itself (:attr:`paging.trace.Trace.next_use`); the round trip
    with :func:`paging.io.write_oracle_general` is tested to give the file's values.
    """
    file = str(path)
    no_phases(phase, file, "cache trace")
    layout = _check_layout(n_experts, n_layers, file)
    rec = read_oracle_general_records(path)
    ids = np.asarray(rec["obj_id"], dtype=np.uint64)
    if ids.size == 0 or int(ids.max()) < 2**63:  # (else uint64: an error names the id as is)
        ids = ids.astype(np.int64)
    sizes = np.asarray(rec["obj_size"], dtype=np.int64)

    def where(i):
        return f"record {i} (byte {i * ORACLE_GENERAL.itemsize}): ", None

    return [_build(ids, sizes, layout, file, expand, where)]


def _column(header: list[str], names: tuple[str, ...]) -> int | None:
    low = [h.strip().lower() for h in header]
    for n in names:
        if n in low:
            return low.index(n)
    return None


def _ids_array(values: list[str], layered: bool) -> np.ndarray:
    """Integer ids when every value is ASCII digits below 2^63 (or the trace is layered), else
    strings. Only ASCII digits are numeric: Python's ``int()`` would also take ``1_000``, `` 7``,
    ``+7`` and non-ASCII digits (``٤``), making ``1_000`` and ``1000`` one object. Leading zeros
    stay numeric (``01`` and ``1`` are one object), as libCacheSim reads a numeric id
    (``strtoull``)."""
    try:
        if not all(v.isascii() and v.isdigit() for v in values):
            raise ValueError("not every id is a decimal number")
        return np.array([int(v) for v in values], dtype=np.int64)
    except (ValueError, OverflowError):  # (ValueError also: int()'s 4,300-digit limit)
        if layered:
            return np.array(values, dtype=object)
        return np.array(values, dtype=str)


def read_libcachesim_csv(path: str | os.PathLike, *, expand: str = "rounds",
                         n_experts: int | None = None, n_layers: int | None = None,
                         phase: str = "both", strict: bool = False) -> list[Trace]:
    """Read a CSV cache trace with a header row (see the module docstring).

    The header must name an object-id column (:data:`ID_COLUMNS`); a size column
    (:data:`SIZE_COLUMNS`) gives ``meta["sizes"]``; other columns (time, operation, ...) are
    ignored. Ids are integers (ASCII digits; ``01`` is ``1``, as in libCacheSim), or any strings
    in a generic trace (see the module docstring). Returns one trace.
    """
    file = str(path)
    no_phases(phase, file, "cache trace")
    layout = _check_layout(n_experts, n_layers, file)
    rows = csv_records(csv.reader(io.StringIO(read_text(path))), file,
                       expected="a CSV cache trace, one request per row")
    header = next(rows, None)
    if not header:
        raise PagingError("the file is empty; expected a CSV header naming an obj_id column "
                          "(e.g. time,obj_id,obj_size)", file, 1)
    col = _column(header, ID_COLUMNS)
    if col is None:
        raise PagingError(f"no object-id column in the header {','.join(header)!r}; expected "
                          f"one named {' or '.join(ID_COLUMNS)}", file, 1)
    scol = _column(header, SIZE_COLUMNS)
    values: list[str] = []
    sizes: list[int] = []
    lines: list[int] = []
    for line, row in enumerate(rows, start=2):
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if len(row) <= max(col, scol if scol is not None else 0):
            raise PagingError(f"row has {len(row)} fields; expected {len(header)} (the header's "
                              "columns)", file, line)
        v = row[col].strip()
        if not v:
            raise PagingError("empty object id; expected an id in every row", file, line)
        values.append(v)
        lines.append(line)
        if scol is not None:
            sizes.append(text_int(row[scol].strip(), "object size", file, line))
    ids = _ids_array(values, layout is not None)

    def where(i):
        return "", lines[i]

    size_arr = np.array(sizes, dtype=np.int64) if scol is not None else None
    return [_build(ids, size_arr, layout, file, expand, where)]


def read_text_ids(path: str | os.PathLike, *, expand: str = "rounds",
                  n_experts: int | None = None, n_layers: int | None = None,
                  phase: str = "both", strict: bool = False) -> list[Trace]:
    """Read a plain text trace, one object id per line (blank lines and ``#`` comments are
    skipped). Ids are integers (ASCII digits; ``01`` is ``1``), or any strings without spaces
    in a generic trace (see the module docstring)."""
    file = str(path)
    no_phases(phase, file, "cache trace")
    layout = _check_layout(n_experts, n_layers, file)
    values: list[str] = []
    lines: list[int] = []
    for line, raw in enumerate(read_text(path).splitlines(), start=1):
        v = raw.strip()
        if not v or v.startswith("#"):
            continue
        if len(v.split()) != 1:
            raise PagingError(f"line {v[:40]!r} holds more than one field; expected one object "
                              "id per line", file, line)
        values.append(v)
        lines.append(line)
    ids = _ids_array(values, layout is not None)

    def where(i):
        return "", lines[i]

    return [_build(ids, None, layout, file, expand, where)]


TRACE_FORMATS = (
    TraceFormat("oracle-general", read_oracle_general, write_oracle_general,
                extensions=(".oraclegeneral", ".bin"),
                description="libCacheSim oracleGeneral (24-byte records)", order=50),
    TraceFormat("libcachesim-csv", read_libcachesim_csv, write_libcachesim_csv,
                extensions=(".libcachesim.csv",),
                description="CSV cache trace, a header naming obj_id", order=60),
    TraceFormat("text", read_text_ids, extensions=(".txt",),
                description="one object id per line", order=70),
)
