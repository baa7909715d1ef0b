"""Trace readers and writers.

:func:`load` is the one entry point: a generator spec (``zipf:...``, ``uniform:...``,
``cyclic:...``, :mod:`paging.generators`) or a file, whose format comes from its extension or its
contents:

===================  =======================================================  ==================
format               files                                                    module
===================  =======================================================  ==================
``jsonl``            routing log, one record per (sequence, token, layer);    :mod:`.jsonl`
                     or the raw prefill+decode dump (``token_pos`` rows)
``nested``           nested prefill/decode JSON (``{"prompts": {...}}``)      :mod:`.nested`
``npz``              the package's own multi-sequence ``.npz``                :mod:`.npz`
``csv``              plain CSV, one request per row                           :mod:`.csvtrace`
``oracle-general``   libCacheSim oracleGeneral (``.oracleGeneral``, .bin)     :mod:`.cachetrace`
``libcachesim-csv``  CSV cache trace, header naming ``obj_id`` (optionally    :mod:`.cachetrace`
                     time, ``obj_size``; ``.libcachesim.csv``)
``text``             one object id per line (``.txt``)                        :mod:`.cachetrace`
===================  =======================================================  ==================

The last three are generic cache traces (block, CDN, key-value): read as one layer of dense
page ids (``meta["object_ids"]`` maps back, :func:`trace_sizes` gives the object sizes), or as
layered page ids with ``n_experts`` and ``n_layers`` (:mod:`.cachetrace`).

Writers: :func:`write_npz`, :func:`write_csv` (exact round trip with the readers),
:func:`write_libcachesim_csv` and :func:`write_oracle_general` (libCacheSim), or :func:`write`
choosing by name. Every reader returns ``list[Trace]`` (one per sequence) and raises
:class:`~paging.errors.PagingError` with the file and 1-based line for bad input; every writer
goes through :func:`paging.io.atomic.atomic_path`, so a failure leaves no partial file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from paging.errors import PagingError, positive_int
from paging.io._common import all_dropped, distinct_names
from paging.io.cachetrace import (
    ID_COLUMNS,
    read_libcachesim_csv,
    read_oracle_general,
    read_text_ids,
    trace_sizes,
)
from paging.io.csvtrace import read_csv, write_csv
from paging.io.formats import TraceFormat
from paging.io.jsonl import DEFAULT_FIELDS, read_routing_jsonl
from paging.io.libcachesim import ORACLE_GENERAL, write_libcachesim_csv, write_oracle_general
from paging.io.nested import read_nested_json
from paging.io.npz import read_npz, write_npz
from paging.trace import Trace


def _discover_formats() -> dict[str, TraceFormat]:
    """Every module of :mod:`paging.io` that declares ``TRACE_FORMATS``: name -> format, in
    ``order`` (then module order). A new format is a new module; nothing here lists it."""
    import importlib
    import pkgutil

    found = []
    for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        found += getattr(importlib.import_module(f"{__name__}.{m.name}"), "TRACE_FORMATS", ())
    return {f.name: f for f in sorted(found, key=lambda f: f.order)}


#: the one registry of trace formats (:class:`~paging.io.formats.TraceFormat`)
FORMATS: dict[str, TraceFormat] = _discover_formats()
READ_FORMATS = tuple(FORMATS)
WRITE_FORMATS = tuple(name for name, f in FORMATS.items() if f.write is not None)
# the formats detect_format() knows by their contents; any other is known by its extensions
# (or its sniff)
_BUILT_IN = ("jsonl", "nested", "npz", "csv", "oracle-general", "libcachesim-csv", "text")
_EXT = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".npz": "npz", ".csv": "csv",
        ".oraclegeneral": "oracle-general", ".bin": "oracle-general", ".txt": "text"}
_WRITE_EXT = {".npz": "npz", ".csv": "csv", ".oraclegeneral": "oracle-general",
              ".bin": "oracle-general"}

__all__ = ["load", "detect_format", "resolve_path", "write", "read_routing_jsonl",
           "read_nested_json", "read_npz", "read_csv", "read_oracle_general",
           "read_libcachesim_csv", "read_text_ids", "trace_sizes", "write_npz", "write_csv",
           "write_libcachesim_csv", "write_oracle_general", "DEFAULT_FIELDS", "READ_FORMATS",
           "WRITE_FORMATS", "FORMATS", "TraceFormat"]


def resolve_path(source: str | os.PathLike) -> Path:
    """``source`` if it exists, else ``$PAGING_TRACES/source`` if that exists; otherwise a
    :class:`PagingError` naming the path."""
    p = Path(source)
    if p.exists():
        return p
    root = os.environ.get("PAGING_TRACES")
    if root and not p.is_absolute() and (Path(root) / p).exists():
        return Path(root) / p
    where = f" (nor under PAGING_TRACES={root})" if root else ""
    exts = ", ".join([".jsonl", ".json", ".npz", ".csv", ".oracleGeneral", ".txt"]
                     + [e for f in _added_formats() for e in f.extensions])
    raise PagingError(f"no such trace file{where}; expected a trace file ({exts}) or a "
                      "generator spec such as zipf:n=8,layers=32,tokens=1000",
                      str(source))


def _added_formats() -> list[TraceFormat]:
    """The registered formats beyond the built-in ones (the messages name them too)."""
    return [f for name, f in FORMATS.items() if name not in _BUILT_IN]


def _first_line(head: bytes) -> str:
    return head.split(b"\n", 1)[0].decode("utf-8", "replace").strip()


def _csv_kind(first: str) -> str | None:
    """``"csv"`` (the package's), ``"libcachesim-csv"`` (a cache trace) or None, from the first
    line of a CSV file."""
    if first.startswith("#"):
        return "csv"
    cols = [c.strip().lower() for c in first.split(",")]
    if "page" in cols:
        return "csv"
    if any(c in cols for c in ID_COLUMNS):
        return "libcachesim-csv"
    return None


#: compressed files, refused with the tool that decompresses them: the tool, the file name
#: endings, and the magic bytes the file starts with (bzip2: "BZh", the block size, then the
#: magic of a block or of the end of the stream; a text file may start with "BZh")
_COMPRESSED = (("gzip", (".gz", ".gzip"), re.compile(rb"\x1f\x8b\x08")),
               ("bzip2", (".bz2",), re.compile(rb"BZh[1-9](1AY&SY|\x17rE8P\x90)")),
               ("xz", (".xz",), re.compile(rb"\xfd7zXZ\x00")),
               ("zstd", (".zst", ".zstd"), re.compile(rb"\x28\xb5\x2f\xfd")))


def _compression(name: str, head: bytes) -> str | None:
    """The tool that compressed a file, told by its name's ending or (any name but an
    oracleGeneral one, whose first record's time may happen to start so) its first bytes."""
    binary = Path(name).suffix in (".oraclegeneral", ".bin")
    for tool, endings, magic in _COMPRESSED:
        if name.endswith(endings) or (not binary and magic.match(head)):
            return tool
    return None


def detect_format(path: str | os.PathLike) -> str:
    """The format of a trace file (one of :data:`READ_FORMATS`): from the contents when they are
    unambiguous (zip magic; a first line that is a complete JSON object; a CSV header naming
    ``page`` or ``obj_id``; binary data in whole 24-byte records; a first line holding one
    integer), else the extension (``.oracleGeneral``/``.bin``, ``.libcachesim.csv``, ``.txt``,
    ``.jsonl``, ``.json``, ``.npz``, ``.csv``)."""
    p = Path(path)
    if p.is_dir():
        raise PagingError("is a directory; expected a trace file", str(path))
    with open(p, "rb") as fh:
        head = fh.read(1 << 16)
    head = head.removeprefix(b"\xef\xbb\xbf")  # (a UTF-8 byte-order mark: text, read as such)
    name = p.name.lower()
    for f in FORMATS.values():  # a format registered beyond the built-in ones
        # (its extensions, else its sniff: the conditional expression had bound the sniff into
        # its else branch, so a format with extensions was never known by its contents)
        if f.name not in _BUILT_IN and ((bool(f.extensions) and name.endswith(f.extensions))
                                        or (f.sniff is not None and f.sniff(head))):
            return f.name
    if head.startswith(b"PK\x03\x04"):
        return "npz"
    tool = _compression(name, head)
    if tool is not None:
        raise PagingError(f"compressed trace ({tool}); decompress it first ({tool} -d) and read "
                          "the uncompressed file", str(path))
    if name.endswith(".libcachesim.csv"):
        return "libcachesim-csv"
    ext = _EXT.get(p.suffix.lower())
    if ext == "oracle-general":
        return ext
    if ext in ("jsonl", "npz"):
        return ext
    if ext == "csv":
        return _csv_kind(_first_line(head.lstrip())) or "csv"
    if b"\x00" in head:  # binary: oracleGeneral when it is made of whole records
        if p.stat().st_size % ORACLE_GENERAL.itemsize == 0:
            return "oracle-general"
        raise PagingError("binary file of unknown format; expected an oracleGeneral trace "
                          "(24-byte records), .npz, or a text trace", str(path))
    text = head.lstrip()
    if text.startswith(b"{"):
        import json

        try:  # a complete object on the first line that is not the nested document -> JSONL
            obj = json.loads(_first_line(text))
            return "nested" if isinstance(obj, dict) and "prompts" in obj else "jsonl"
        except (ValueError, RecursionError):  # (the reader names what is wrong)
            return "nested"
    if ext == "json":
        return "nested"
    if ext == "text":  # after the JSON check: a routing log named .txt is still a routing log
        return ext
    if not text:
        raise PagingError("the file is empty; expected a trace", str(path), 1)
    first = _first_line(text)
    kind = _csv_kind(first)
    if kind is not None:
        return kind
    if first.lstrip("-").isdigit():
        return "text"
    added = "".join(f", {f.description or f.name} ({', '.join(f.extensions)})"
                    for f in _added_formats())
    raise PagingError("cannot tell the trace format; expected a .jsonl routing log, .json "
                      "prefill/decode trace, .npz, .csv, an oracleGeneral trace, a text file "
                      f"of object ids{added} (or pass --format)", str(path), 1)


def load(source: str | os.PathLike, *, expand: str = "rounds", strict: bool = False,
         phase: str = "both", fields: dict | None = None, n_experts: int | None = None,
         n_layers: int | None = None, format: str | None = None) -> list[Trace]:
    """Load a trace: a generator spec or a file (see the module docstring).

    Parameters
    ----------
    source:
        ``zipf:...`` / ``uniform:...`` / ``cyclic:...`` spec, or a path; a relative path that does
        not exist is also looked up under ``$PAGING_TRACES``.
    expand:
        ``"rounds"`` (Angelopoulos et al., Sec. 5.1) or ``"groups"``; stored ``.npz``/CSV traces
        are re-expanded through their token/rank columns when stored in the other mode.
    strict:
        Incomplete tokens (a layer missing) are an error instead of being dropped and counted.
    phase:
        ``"both"``, ``"prefill"`` or ``"decode"`` for traces that record both phases.
    fields:
        Field names of routing-log JSONL (:data:`DEFAULT_FIELDS`).
    n_experts, n_layers:
        Layout override (routing formats), the layout of a CSV without a header comment, or
        (both) the layout of a cache trace whose ids are page ids (:mod:`.cachetrace`).
    format:
        One of :data:`READ_FORMATS` to skip detection (:func:`detect_format`).

    Returns
    -------
    list[Trace]
        One trace per sequence.
    """
    from paging.generators import is_spec, parse_spec

    sizes = (("n_experts", "--n-experts", n_experts), ("n_layers", "--layers", n_layers))
    if is_spec(source):
        for name, option, v in sizes:
            if v is not None:
                raise PagingError(f"{name} is set by the generator spec itself; drop {option}")
        if format is not None:
            raise PagingError(f"--format {format} applies to trace files, not to generator "
                              "specs")
        if phase != "both":
            raise PagingError(f"phase={phase} needs a trace with prefill and decode; generated "
                              "sequences have no phases")
        return parse_spec(str(source), expand=expand)
    for name, option, v in sizes:  # (before the reading, which checks ids against them)
        if v is not None:
            positive_int(f"{name} ({option})", v)
    path = resolve_path(source)
    try:
        if format is not None and format not in READ_FORMATS:
            raise PagingError(f"unknown trace format {format!r}; expected one of "
                              f"{', '.join(READ_FORMATS)}")
        fmt = format or detect_format(path)
        if fmt in ("oracle-general", "npz"):  # (the requests, told from the file's header)
            from paging.memory import check_requests

            check_requests(_file_requests(path, fmt), "Read it a chunk at a time where the "
                           "run allows it (paging simulate or mrc --stream: oracleGeneral with "
                           "--n-experts and --layers, .npz; paging sweep streams an .npz above "
                           "$PAGING_STREAM_BYTES), or cut it", str(path))
        if fmt == "jsonl":
            traces = read_routing_jsonl(path, expand=expand, strict=strict, phase=phase,
                                        fields=fields, n_experts=n_experts, n_layers=n_layers)
        else:
            if fields:
                raise PagingError("field names apply to routing-log JSONL only", str(path))
            kw = {"expand": expand, "strict": strict, "phase": phase, "n_experts": n_experts,
                  "n_layers": n_layers}
            traces = FORMATS[fmt].read(path, **kw)
    except OSError as e:
        raise PagingError(f"cannot read the file: {e.strerror or e}", str(path)) from None
    check_sequences(traces, str(path))
    return traces


def check_sequences(traces: Sequence[Trace], file: str) -> None:
    """Refuse what a reader accepts sequence by sequence but a run would silently mistake:

    * two sequences of one name (a sweep's rows, ``--sequence`` and the warm order tell
      sequences by name: the second was lost from a sweep table, ``problem_id`` 0 and "0"
      being one name);
    * a sequence whose every token was dropped as incomplete (a layout larger than the
      file's, ``--layers 33`` on a 32-layer file, gave zero requests and a "perfect" cache).
    """
    distinct_names([t.name for t in traces], file)
    for t in traces:
        all_dropped(t.name, t.n_requests, t.meta, t.layout.n_layers, file)


def _file_requests(path: Path, fmt: str) -> int | None:
    """The requests of an oracleGeneral file (24-byte records) or a ``.npz`` trace (its
    ``pages`` array's length, from the archive's header), None when they cannot be told
    without reading it (the reader then reports what is wrong)."""
    import zipfile

    import numpy as np

    try:
        if fmt == "oracle-general":
            return path.stat().st_size // 24
        with zipfile.ZipFile(path) as z, z.open("pages.npy") as fh:
            version = np.lib.format.read_magic(fh)
            read = {(1, 0): np.lib.format.read_array_header_1_0,
                    (2, 0): np.lib.format.read_array_header_2_0}.get(version)
            return None if read is None else int(np.prod(read(fh)[0]))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return None


def format_for(path: str | os.PathLike, to: str | None = None,
               option: str | None = "--to") -> str:
    """The output format: ``to`` when given, else from the extension of ``path``. ``option``
    names the caller's option that sets the format, for the error message (None: it has
    none)."""
    if to is not None:
        if to not in WRITE_FORMATS:
            raise PagingError(f"unknown output format {to!r}; expected one of "
                              f"{', '.join(WRITE_FORMATS)}")
        return to
    name = Path(path).name.lower()
    for f in FORMATS.values():  # the longest matching extension wins (.libcachesim.csv)
        for ext in sorted(f.extensions, key=len, reverse=True):
            if f.write is not None and name.endswith(ext) and len(ext) > len(Path(name).suffix):
                return f.name
    fmt = _WRITE_EXT.get(Path(path).suffix.lower())
    if fmt is None:
        fmt = next((f.name for f in FORMATS.values() if f.write is not None
                    and f.name not in _BUILT_IN and name.endswith(f.extensions)), None)
    if fmt is None:
        hint = f", or pass {option} {'|'.join(WRITE_FORMATS)}" if option else ""
        raise PagingError(f"cannot tell the output format from the name {Path(path).name!r}; "
                          f"use .npz, .csv, .libcachesim.csv, .oracleGeneral (or .bin){hint}")
    return fmt


def write(traces: Trace | Sequence[Trace], path: str | os.PathLike,
          to: str | None = None) -> str:
    """Write ``traces`` to ``path`` in format ``to`` (default: from the extension, see
    :func:`format_for`); returns the format used. Atomic: a failure leaves no file."""
    fmt = format_for(path, to)
    try:
        FORMATS[fmt].write(traces, path)
    except OSError as e:
        raise PagingError(f"cannot write the file: {e.strerror or e}", str(path)) from None
    return fmt
