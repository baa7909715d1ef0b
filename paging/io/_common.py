"""Shared helpers of the trace readers: value checks that name the file and line, sequence names.

Every check raises :class:`~paging.errors.PagingError` with the file and the 1-based line of the
offending record, and a message that says what is wrong and what was expected.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from paging.errors import INT64_MAX, PagingError
from paging.layout import Layout

PHASES = ("both", "prefill", "decode")


def describe(value: object) -> str:
    """A short rendering of a JSON value for error messages."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_int(value: object, what: str, file: str, line: int | None, limit: int | None = None,
              limit_name: str = "") -> int:
    """A non-negative JSON integer (not a bool, not a float such as ``3.0``), below ``limit``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise PagingError(f"{what} must be a non-negative integer, got {describe(value)}",
                          file, line)
    if value < 0:
        raise PagingError(f"{what} must be a non-negative integer, got {value}", file, line)
    if value > INT64_MAX:
        raise PagingError(f"{what} is out of range ({value}); expected an integer below 2^63",
                          file, line)
    if limit is not None and value >= limit:
        raise PagingError(f"{what} {value} is out of range; expected 0..{limit - 1} "
                          f"({limit_name}={limit})", file, line)
    return value


def text_int(cell: str, what: str, file: str, line: int | None) -> int:
    """A non-negative decimal integer written as text (a CSV cell), checked as
    :func:`check_int` checks a JSON one."""
    if not (cell.isascii() and cell.isdigit()):
        raise PagingError(f"{what} {cell!r} is not a non-negative integer", file, line)
    return check_int(int(cell), what, file, line)


def check_experts(value: object, what: str, file: str, line: int | None,
                  n_experts: int | None = None) -> list[int]:
    """A non-empty list of distinct expert ids (non-negative integers, below ``n_experts``)."""
    if not isinstance(value, list) or not value:
        raise PagingError(f"{what} must be a non-empty list of expert ids, got {describe(value)}",
                          file, line)
    for e in value:
        check_int(e, f"expert id in {what}", file, line)
        if n_experts is not None and e >= n_experts:
            raise PagingError(f"expert id {e} in {what} is out of range; expected "
                              f"0..{n_experts - 1} (n_experts={n_experts})", file, line)
    if len(set(value)) != len(value):
        raise PagingError(f"{what} lists an expert twice ({value}); the top-K experts of one "
                          "token and layer must be distinct", file, line)
    return value


def check_scores(value: object, what: str, n: int, file: str, line: int | None) -> list[float]:
    """A list of ``n`` finite, non-negative gate scores."""
    if not isinstance(value, list):
        raise PagingError(f"{what} must be a list of {n} gate scores, got {describe(value)}",
                          file, line)
    if len(value) != n:
        raise PagingError(f"{what} has {len(value)} scores for {n} experts; expected one score "
                          "per expert", file, line)
    for s in value:
        if isinstance(s, bool) or not isinstance(s, (int, float)):
            raise PagingError(f"{what} must hold numbers, got {describe(s)}", file, line)
        if not math.isfinite(s) or s < 0:
            raise PagingError(f"{what} must hold finite non-negative scores, got {s}", file,
                              line)
    return value


#: the most pages the inferred part of a layout (from a file's largest ids) may span (a model's
#: experts are thousands; every run keeps arrays of this length, so one stray id of 10^9
#: would ask for gigabytes): a larger one is refused, naming the id; an explicit size is taken
#: as given
MAX_INFERRED_PAGES = 2**24


def layout_for(max_expert: int, max_layer: int, n_experts: int | None, n_layers: int | None,
               file: str, expert_line: int | None = None,
               layer_line: int | None = None) -> Layout:
    """The layout of a routing file: the explicit sizes when given, else max id + 1
    (``expert_line``, ``layer_line``: the lines of the largest ids, named when the layout so
    inferred would exceed :data:`MAX_INFERRED_PAGES`)."""
    for name, v in (("n_experts", n_experts), ("n_layers", n_layers)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer))
                              or v < 1):
            raise PagingError(f"{name} must be an integer >= 1, got {v!r}")
    E = int(n_experts) if n_experts is not None else max_expert + 1
    L = int(n_layers) if n_layers is not None else max_layer + 1
    inferred = (E if n_experts is None else 1) * (L if n_layers is None else 1)
    if inferred > MAX_INFERRED_PAGES:
        what, line = ((f"expert id {max_expert}", expert_line) if n_experts is None
                      and (n_layers is not None or max_expert >= max_layer)
                      else (f"layer id {max_layer}", layer_line))
        raise PagingError(f"{what} gives an inferred layout of {E:,} experts x {L:,} layers, "
                          f"more than {MAX_INFERRED_PAGES:,} pages; expected the model's ids "
                          "(pass --n-experts and --layers to check them against its layout)",
                          file, line)
    return Layout(E, L)


def check_phase(phase: str) -> str:
    if phase not in PHASES:
        raise PagingError(f"phase must be one of {', '.join(PHASES)}, got {phase!r}")
    return phase


def no_phases(phase: str, file: str, kind: str) -> None:
    """Formats without prefill/decode information accept only ``phase="both"``."""
    if check_phase(phase) != "both":
        raise PagingError(f"phase={phase} needs a trace that records prefill and decode (the raw "
                          f"prefill+decode dump or nested prefill/decode JSON); this {kind} has "
                          "no phases", file)


def seq_name(file: str, parts: list[tuple[str, object]]) -> str:
    """``basename#key=value,key=value`` (just the basename when there are no parts)."""
    base = os.path.basename(str(file))
    if not parts:
        return base
    return base + "#" + ",".join(f"{k}={v}" for k, v in parts)


def csv_records(reader, file: str, skip: int = 0, expected: str = "one request per row"):
    """The records of ``reader`` (a :func:`csv.reader`; its ``line_num`` stays the caller's to
    read), with its :class:`csv.Error` (a field beyond the csv module's limit of 131,072
    characters, a NUL byte) one :class:`PagingError` naming the line (``reader.line_num`` plus
    the ``skip`` lines read before it)."""
    import csv

    while True:
        try:
            rec = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise PagingError(f"not valid CSV ({e}); expected {expected}", file,
                              reader.line_num + skip) from None
        yield rec


def read_text(path: str | os.PathLike, expected: str = "a JSON or CSV trace") -> str:
    """The file as UTF-8 text, without a leading byte-order mark (spreadsheets write one);
    undecodable bytes are an error naming the line and what the file should be."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise PagingError(f"the file is not UTF-8 text (binary data?); expected {expected}",
                          str(path), line) from None


def all_dropped(name: str, n_requests: int, meta: dict, n_layers: int, file: str) -> None:
    """A :class:`PagingError` when every token of sequence ``name`` was dropped as incomplete
    (``meta["dropped_tokens"]`` tokens and no request): a layout larger than the file's
    (``--layers 33`` on a 32-layer file) read as zero requests and a "perfect" cache. One rule
    for the whole readers (:func:`paging.io.check_sequences`) and the streamed ones."""
    dropped = meta.get("dropped_tokens") or 0
    if isinstance(dropped, bool) or not isinstance(dropped, int):
        raise PagingError(f"sequence {name}: meta dropped_tokens is {dropped!r}; expected a "
                          "count of tokens", file)
    if n_requests == 0 and dropped:
        raise PagingError(f"sequence {name}: all {dropped} tokens lack some of the {n_layers} "
                          f"layers 0..{n_layers - 1} and were dropped; expected the layout of "
                          "the file (check --layers/--n-experts, or read with --strict to see "
                          "the first incomplete token)", file)


def distinct_names(names, file: str) -> None:
    """A :class:`PagingError` when two sequences of a file share a name (a sweep's rows,
    ``--sequence`` and the warm order tell them by name: a sweep had kept one and lost the
    other's row). One rule for the whole readers and the streamed one."""
    seen: dict[str, int] = {}
    for i, nm in enumerate(names):
        if nm in seen:
            raise PagingError(f"sequences {seen[nm] + 1} and {i + 1} are both named {nm!r}; "
                              "expected distinct sequence names", file)
        seen[nm] = i
