"""Chunked readers: a trace file read as bounded ``(pages, steps)`` chunks (issue 22).

:func:`open_chunks` is the streaming counterpart of :func:`paging.io.load` for the formats whose
requests can be read in order without holding the file: libCacheSim oracleGeneral (layered page
ids, ``--n-experts`` and ``--layers``), the package's ``.npz`` and its CSV. It returns one
:class:`ChunkedTrace` per sequence; iterating a ChunkedTrace's ``chunks`` reads the file a
chunk at a time, each chunk at most ``chunk`` requests (int64 ``pages`` and ``steps`` arrays).

Every chunk is validated by the check a whole trace is built with
(:class:`paging.trace.ChunkCheck`): the same one-line :class:`~paging.errors.PagingError`
naming the file, the line (text) or record (binary) and the expectation, with the layered
order, the step clock and the distinct pages of a group checked across chunk boundaries. An
error is raised when the offending chunk is read, so a run may have consumed the chunks before
it.

What streaming does not do (the whole-file readers do): re-expand a sequence into the other
mode (``expand`` must be the mode the file stores; a CSV without ``expand=`` in its header
comment is read in the mode asked), number the objects of a *generic* cache trace (that needs
every id first), or read the optional ``logits`` (no streamed run routes). The ``token`` and
``rank`` columns are checked against the layer clock as the whole readers check them
(:func:`paging.trace.token_violation`) and passed on when asked (``tokens=True``: the token
policies read the ids; a sequence's largest rank is read in a first pass where they need it,
:attr:`ChunkedTrace.visits`); the ``score`` column is passed on when asked (``scores=True``:
Score-Based reads the gate scores) and checked to be finite and non-negative either way.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import os
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np
from numba import njit

from paging.errors import PagingError
from paging.io._common import all_dropped, csv_records, distinct_names, text_int
from paging.layout import Layout
from paging.trace import ChunkCheck

__all__ = ["ChunkedTrace", "ChunkCheck", "open_chunks", "checked_chunks", "DEFAULT_CHUNK",
           "STREAM_FORMATS"]

#: requests per chunk by default: 2^22 (32 MB of int64 pages and steps)
DEFAULT_CHUNK = 1 << 22
#: a CSV chunk holds at most this many rows (parsed into Python lists, ~100 bytes a row)
_CSV_BATCH = 1 << 18
#: the formats :func:`open_chunks` reads
STREAM_FORMATS = ("oracle-general", "npz", "csv")


@dataclass
class ChunkedTrace:
    """One sequence read chunk by chunk: ``chunks`` yields validated ``(pages, steps)`` int64
    arrays (read once, in order; a file's sequences one after the other)."""

    name: str
    layout: Layout
    expand: str
    chunks: Iterable[tuple[np.ndarray, np.ndarray]]
    n_requests: int | None = None
    #: the chunks are ``(pages, steps, next_use)``: each request's next request of the same
    #: page (its index in the sequence), or ``n_requests`` when there is none, as
    #: :func:`paging.trace.next_use` has it (an oracleGeneral file's next-access times,
    #: validated: :func:`open_chunks` with ``next_use=True``)
    next_use: bool = False
    #: the chunks are ``(pages, steps, token)``: the token id of each request, which the token
    #: policies read (a ``.npz`` or CSV that stores them: :func:`open_chunks` with
    #: ``tokens=True``)
    tokens: bool = False
    #: the file stores token ids that were not asked for (``tokens=False``): a stream of the
    #: token policies refuses the sequence (they read them)
    tokens_unread: bool = False
    #: the chunks end with each request's gate score (float64), which Score-Based reads (a
    #: ``.npz`` or CSV that stores them: :func:`open_chunks` with ``scores=True``)
    scores: bool = False
    #: how often the layer clock walks every layer per token (:func:`paging.trace.
    #: token_visits`: the top-K a reader recorded, else the largest rank + 1, in rounds mode
    #: with tokens; else 1)
    visits: int = 1
    #: a fresh iterator over the same chunks (the sequence read again from the start), or None
    #: when the source cannot be read twice (set by :func:`paging.stream.stream_run`)
    reopen: Callable[[], Iterable] | None = None

    def columns(self, item: tuple) -> tuple:
        """``(pages, steps, next_use, token, score)`` of one of the chunks, None where they
        bring no such column (the columns come in this order)."""
        i = 2
        got = []
        for has in (self.next_use, self.tokens, self.scores):
            got.append(item[i] if has else None)
            i += has
        return (item[0], item[1], *got)


#: libCacheSim's readers take both -1 and INT64_MAX as "no next access"
_NO_NEXT = np.iinfo(np.int64).max


@njit(cache=True, nogil=True)
def _next_access_fault(pages, nxt, t0, n, promised, last):
    """Check a chunk's next-access times against the ones before: request t0 + i of page p must
    be where p's previous request said it would come back (``promised[p]``, -1 before its first
    request), and name a later request of the trace's ``n`` (``n``: none). Returns the chunk
    index of the first fault, or -1; ``promised`` and ``last`` (each page's last request) carry
    to the next chunk."""
    for i in range(pages.size):
        p = pages[i]
        t = t0 + i
        if promised[p] != -1 and promised[p] != t:
            return i
        if nxt[i] <= t or nxt[i] > n:
            return i
        promised[p] = nxt[i]
        last[p] = t
    return -1


def checked_chunks(chunks: Iterable, layout: Layout, expand: str = "rounds",
                   name: str = "stream") -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Validate an iterable of ``(pages, steps)`` chunks of one sequence (any integer arrays;
    ``steps`` None means rounds mode, continuing the step count) as :class:`ChunkCheck` does;
    yields them as contiguous int64 arrays."""
    chk = ChunkCheck(layout, expand, name)
    for item in chunks:
        pages, steps = item
        p = np.ascontiguousarray(pages, dtype=np.int64).reshape(-1)
        if steps is None:
            s = np.arange(chk.offset, chk.offset + p.size, dtype=np.int64)
        else:
            s = np.ascontiguousarray(steps, dtype=np.int64).reshape(-1)
        chk.check(p, s)
        yield p, s


def _positive(chunk) -> int:
    if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise PagingError(f"the chunk size must be an integer >= 1, got {chunk!r}")
    return int(chunk)


# -- oracleGeneral -----------------------------------------------------------------------------
def _oracle_general(path, chunk, expand, n_experts, n_layers, tokens: bool = False,
                    scores: bool = False,
                    next_use: bool = False) -> list[ChunkedTrace]:
    # (``tokens``, ``scores``: an oracleGeneral record stores neither, so its chunks never
    # bring them)
    from paging.io.cachetrace import _check_layout, read_oracle_general_records
    from paging.io.libcachesim import ORACLE_GENERAL

    file = str(path)
    layout = _check_layout(n_experts, n_layers, file)
    if layout is None:
        raise PagingError("streaming reads an oracleGeneral trace as layered page ids: pass "
                          "--n-experts and --layers (a generic trace numbers its objects by "
                          "first appearance, which needs the whole file)", file)
    if expand != "rounds":
        raise PagingError(f"--expand {expand} needs groups, and an oracleGeneral trace has one "
                          "request per step; use --expand rounds", file)
    n = read_oracle_general_records(path).size  # checks the size (a memmap, nothing read)
    size = ORACLE_GENERAL.itemsize

    def where(i, lines):
        return f"record {i} (byte {i * size}): ", None

    def id_message(v):
        v = int(v) % 2**64  # (the record's uint64: ids >= 2^63 were read as negative int64)
        return (f"object id {v} is out of range; expected a page id 0..{layout.n_pages - 1} "
                f"(n_experts={layout.n_experts}, n_layers={layout.n_layers})")

    def chunks():
        chk = ChunkCheck(layout, "rounds", os.path.basename(file), file, where, id_message)
        # (next_use: where each page's last request said it comes back, and that request)
        promised = np.full(layout.n_pages, -1, np.int64)
        last = np.full(layout.n_pages, -1, np.int64)
        with open(path, "rb") as fh:
            start = 0
            while start < n:
                rec = np.fromfile(fh, dtype=ORACLE_GENERAL, count=min(chunk, n - start))
                pages = rec["obj_id"].astype(np.int64)  # ids >= 2^63 turn negative: refused
                nv = rec["next_access_vtime"] if next_use else None
                del rec
                steps = np.arange(start, start + pages.size, dtype=np.int64)
                chk.check(pages, steps)
                if next_use:  # 1-based positions, -1: none (paging.io.libcachesim)
                    none = (nv == -1) | (nv == _NO_NEXT)
                    # (none: the trace's length, as paging.trace.next_use has it; any other
                    # value out of 1..n is refused, -2 and n + 1 included)
                    nxt = np.where(none, n, np.where(nv < 1, -1, nv - 1)).astype(np.int64)
                    nxt[~none & (nxt >= n)] = n + 1
                    del nv, none
                    _check_next(pages, nxt, start, n, promised, last, where, file)
                    yield pages, steps, nxt
                else:
                    yield pages, steps
                start += pages.size
        if next_use:
            _check_next_end(promised, last, n, where, file)

    return [ChunkedTrace(os.path.basename(file), layout, "rounds", chunks(), n, next_use)]


def _check_next(pages, nxt, t0, n, promised, last, where, file: str) -> None:
    """One chunk's next-access times (:func:`_next_access_fault`; ``n``: the trace's length,
    "none"), as a one-line error naming the record."""
    i = int(_next_access_fault(pages, nxt, t0, n, promised, last))
    if i < 0:
        return
    t, p = t0 + i, int(pages[i])
    prefix, _ = where(t, None)
    said = int(promised[p])
    if said != -1 and said != t:
        back = "never" if said == n else f"at request {said}"
        raise PagingError(f"{prefix}page {p} is requested here, but the next-access time of "
                          f"its request {int(last[p])} said {back}; expected the position of "
                          "the next request of the same object (libCacheSim's "
                          f"next_access_vtime){_WHOLE}", file)
    raise PagingError(f"{prefix}its next-access time names no later request of the trace's "
                      f"{n}; expected a 1-based position after this request's ({t + 1}), or "
                      f"-1{_WHOLE}", file)


def _check_next_end(promised, last, n: int, where, file: str) -> None:
    """At the end of the file no page may be promised a next request."""
    open_ = np.flatnonzero((promised != -1) & (promised != n))
    if open_.size:
        p = int(open_[0])
        prefix, _ = where(int(last[p]), None)
        raise PagingError(f"{prefix}page {p}'s next access is at request {int(promised[p])}, "
                          f"but the page is not requested again; expected -1{_WHOLE}", file)


#: what a user with a file whose next-access times are wrong can do
_WHOLE = (" (read whole, with --no-stream, Belady computes the next uses from the requests "
          "themselves)")


# -- npz ---------------------------------------------------------------------------------------
class _Member:
    """A ``.npy`` member of a zip read sequentially (stored or deflated)."""

    def __init__(self, zf: zipfile.ZipFile, key: str, file: str):
        self.fh = zf.open(key + ".npy")
        fmt = np.lib.format
        version = fmt.read_magic(self.fh)
        if version == (1, 0):
            shape, _, dtype = fmt.read_array_header_1_0(self.fh)
        else:
            shape, _, dtype = fmt.read_array_header_2_0(self.fh)
        self.shape, self.dtype, self.key, self.file = shape, dtype, key, file
        self.size = int(np.prod(shape)) if shape else 1
        self.done = 0  # values read so far

    def read(self, count: int) -> np.ndarray:
        """The next ``count`` values; an array that ends before its header's size is an error
        (the whole-file reader's, as it words it)."""
        import zlib

        n = count * self.dtype.itemsize
        try:
            buf = self.fh.read(n)
        except (OSError, EOFError, zipfile.BadZipFile, zlib.error) as e:
            raise PagingError(f"not a readable .npz file ({e}, in array {self.key!r}); expected "
                              "a file written by paging trace convert", self.file) from None
        if len(buf) < n:
            raise PagingError(f"not a readable .npz file (EOF: array {self.key!r} ends after "
                              f"{self.done + len(buf) // self.dtype.itemsize:,} of the "
                              f"{self.size:,} values its header gives); expected a file "
                              "written by paging trace convert", self.file)
        self.done += count
        return np.frombuffer(buf, dtype=self.dtype, count=count)


def _rank_max(zf: zipfile.ZipFile, file: str, off: np.ndarray, chunk: int) -> np.ndarray:
    """Each sequence's largest rank (-1: none), read through the ``rank`` array once."""
    m = _Member(zf, "rank", file)
    out = np.full(off.size - 1, -1, np.int64)
    pos = 0
    while pos < m.size:
        c = min(chunk, m.size - pos)
        r = m.read(c).astype(np.int64)
        first = int(np.searchsorted(off, pos, side="right")) - 1
        for q in range(max(first, 0), off.size - 1):
            a, b = max(int(off[q]), pos) - pos, min(int(off[q + 1]), pos + c) - pos
            if a >= c:
                break
            if b > a:
                out[q] = max(int(out[q]), int(r[a:b].max()))
        pos += c
    return out


def _npz(path, chunk, expand, n_experts, n_layers, tokens: bool = False,
         scores: bool = False) -> list[ChunkedTrace]:
    from paging.io.npz import _OPTIONAL, as_int64, check_nonnegative, check_scores, stored_header

    file = str(path)
    try:
        zf = zipfile.ZipFile(path)
        keys = {n[:-4] for n in zf.namelist() if n.endswith(".npy")}
        small = {}
        for key in ("format", "n_experts", "n_layers", "expand", "names", "offsets", "meta"):
            if key in keys:
                with zf.open(key + ".npy") as fh:
                    small[key] = np.lib.format.read_array(fh, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise PagingError(f"not a readable .npz file ({e}); expected a file written by "
                          "paging trace convert", file) from None

    def need(key: str, kind: str) -> np.ndarray:
        if key not in keys:
            raise PagingError(f"missing array {key!r}; expected a paging trace .npz with "
                              "pages, steps, offsets, names, n_experts, n_layers, expand", file)
        a = small[key] if key in small else None
        dt = a.dtype if a is not None else members[key].dtype
        if kind == "int" and not np.issubdtype(dt, np.integer):
            raise PagingError(f"array {key!r} has dtype {dt}; expected integers", file)
        if kind == "float" and not np.issubdtype(dt, np.number):
            raise PagingError(f"array {key!r} has dtype {dt}; expected numbers", file)
        if kind == "str" and dt.kind != "U":
            raise PagingError(f"array {key!r} has dtype {dt}; expected strings", file)
        return a

    members: dict[str, _Member] = {}
    lay, mode = stored_header(need, n_experts, n_layers, file)
    if mode != expand:
        raise PagingError(f"the file stores {mode} mode and streaming reads a trace as stored; "
                          f"use --expand {mode} (or read it whole to re-expand it)", file)
    names = need("names", "str").reshape(-1)
    off = need("offsets", "int").astype(np.int64).reshape(-1)
    for key in ("pages", "steps"):  # (a missing one: need's one-line error, not zipfile's)
        if key not in keys:
            need(key, "int")
    for key in ("pages", "steps", *(k for k, _ in _OPTIONAL if k in keys)):
        try:
            members[key] = _Member(zf, key, file)
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
            raise PagingError(f"not a readable .npz file ({e}); expected a file written by "
                              "paging trace convert", file) from None
    need("pages", "int")
    need("steps", "int")
    for key, dt in _OPTIONAL:
        if key in members:
            need(key, "int" if dt is np.int64 else "float")
    metas = need("meta", "str").reshape(-1) if "meta" in keys else None
    S = names.size
    N = members["pages"].size
    if (off.size != S + 1 or off[0] != 0 or off[-1] != N or (np.diff(off) < 0).any()
            or members["steps"].size != N or any(m.size != N for m in members.values())
            or (metas is not None and metas.size != S)):
        raise PagingError(f"inconsistent array sizes ({S} names, {off.size} offsets, "
                          f"{N} pages, {members['steps'].size} steps); expected offsets = 0 .. "
                          "len(pages) with one more entry than names", file)
    if S == 0:
        raise PagingError("the file holds no sequences", file)
    distinct_names([str(nm) for nm in names], file)  # (as paging.io.check_sequences)
    parsed = []
    for s in range(S):
        meta = {}
        if metas is not None:
            try:
                meta = json.loads(str(metas[s]))
            except (json.JSONDecodeError, RecursionError):
                raise PagingError(f"meta of sequence {names[s]} is not valid JSON",
                                  file) from None
            if not isinstance(meta, dict):
                raise PagingError(f"meta of sequence {names[s]} is not a JSON object", file)
        all_dropped(str(names[s]), int(off[s + 1] - off[s]), meta, lay.n_layers, file)
        parsed.append(meta)
    with_tokens = tokens and "token" in members
    visits = [1] * S  # (paging.trace.token_visits of each sequence read whole)
    if with_tokens and mode == "rounds":
        from paging.trace import top_k_of

        top = np.full(S, -1, np.int64)
        # (the rank column is read first where a sequence's meta records no top-K: 0 below)
        if "rank" in members and any(top_k_of(m, None, lambda: 0) == 0 for m in parsed):
            try:
                top = _rank_max(zf, file, off, chunk)
            except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
                raise PagingError(f"not a readable .npz file ({e}); expected a file written "
                                  "by paging trace convert", file) from None
        visits = [top_k_of(m, int(top[q]) if top[q] >= 0 else None)
                  for q, m in enumerate(parsed)]

    def chunks(a: int, b: int, nm: str):
        chk = ChunkCheck(lay, mode, nm, file, lambda i, lines: (f"sequence {nm}: ", None))
        pos = a
        while pos < b:
            m = min(chunk, b - pos)
            pages = as_int64("pages", members["pages"].read(m), file, pos)
            steps = as_int64("steps", members["steps"].read(m), file, pos)
            sc = None
            if "score" in members:
                sc = members["score"].read(m)
                check_scores(sc, file, pos)
            cols = {}
            for key in ("token", "rank"):
                if key in members:
                    # (read to keep the members in step, and checked against the layer clock)
                    cols[key] = v = as_int64(key, members[key].read(m), file, pos)
                    check_nonnegative(key, v, file, pos)
            token = cols.get("token") if with_tokens else None
            pos += m
            chk.check(pages, steps, token=cols.get("token"), rank=cols.get("rank"))
            yield ((pages, steps) + ((token,) if with_tokens else ())
                   + ((sc.astype(np.float64),) if with_scores else ()))

    with_scores = scores and "score" in members
    return [ChunkedTrace(str(names[s]), lay, mode, chunks(int(off[s]), int(off[s + 1]),
                                                          str(names[s])),
                         int(off[s + 1] - off[s]), tokens=with_tokens, visits=visits[s],
                         tokens_unread="token" in members and not with_tokens,
                         scores=with_scores)
            for s in range(S)]


# -- CSV ---------------------------------------------------------------------------------------
def _text_lines(path, file: str):
    """The lines of a UTF-8 file, decoded one at a time (a bad byte names its line), without a
    leading byte-order mark (as :func:`paging.io._common.read_text`)."""
    with open(path, "rb") as fh:
        for n, raw in enumerate(fh, start=1):
            try:
                yield raw.decode("utf-8").removeprefix("\ufeff") if n == 1 else \
                    raw.decode("utf-8")
            except UnicodeDecodeError:
                raise PagingError("the file is not UTF-8 text (binary data?); expected a JSON "
                                  "or CSV trace", file, n) from None


def _csv(path, chunk, expand, n_experts, n_layers, tokens: bool = False,
         ranks: bool = False, scores: bool = False) -> list[ChunkedTrace]:
    from paging.io.csvtrace import COLUMNS, MAGIC, _header_comment, declared_layout

    file = str(path)
    lines = _text_lines(path, file)
    first = next(lines, "")
    rest = itertools.chain([first], lines)
    skip = 0
    declared: dict = {}
    if first.startswith("#"):
        if not first.startswith(MAGIC):
            raise PagingError(f"unexpected comment; the only comment allowed is a first line "
                              f"'{MAGIC} n_experts=N n_layers=L expand=MODE'", file, 1)
        declared = _header_comment(first.rstrip("\r\n"), file)
        rest, skip = lines, 1
    elif not first.strip():
        raise PagingError("the file is empty; expected a header row with a 'page' column", file,
                          1)
    lay = declared_layout(declared, n_experts, n_layers, file)
    mode = declared.get("expand", expand)
    if mode != expand:
        raise PagingError(f"the file stores {mode} mode and streaming reads a trace as stored; "
                          f"use --expand {mode} (or read it whole to re-expand it)", file, 1)
    reader = csv.reader(rest)
    header = None
    line = skip
    for rec in csv_records(reader, file, skip):
        line = reader.line_num + skip
        if not rec or (len(rec) == 1 and not rec[0].strip()):
            continue
        header = [c.strip() for c in rec]
        break
    if header is None:
        raise PagingError("no header row; expected a header such as 'sequence,step,page'", file,
                          1)
    for c in header:
        if c not in COLUMNS:
            raise PagingError(f"unknown column {c!r}; expected some of {', '.join(COLUMNS)}",
                              file, line)
    if len(set(header)) != len(header):
        raise PagingError("a column appears twice in the header row", file, line)
    if "page" not in header:
        raise PagingError("the header row has no 'page' column; expected a header such as "
                          "'sequence,step,page'", file, line)
    if ("expand" not in declared and expand == "groups" and "token" in header
            and "rank" in header and "step" in header):
        raise PagingError("a CSV with token and rank columns and no expand= in its header "
                          "comment may need re-expanding, which streaming does not do; read it "
                          "whole (without --stream)", file, 1)
    base = os.path.basename(file)
    col = {c: i for i, c in enumerate(header)}
    batch = min(chunk, _CSV_BATCH)  # rows are parsed into Python lists first

    def rows():
        """Batches ``(sequence, pages, steps, lines, extras, scores, tokens, ranks)`` of at
        most ``chunk`` rows of one sequence (``tokens``/``ranks``: the columns, for the
        check against the layer clock)."""
        seen: set[str] = set()
        cur = None
        pages: list[int] = []
        steps: list[int] = []
        where: list[int] = []
        toks: list[int] = []
        scs: list[float] = []
        tks: list[int] = []
        rks: list[int] = []
        for rec in csv_records(reader, file, skip):
            ln = reader.line_num + skip
            if not rec or (len(rec) == 1 and not rec[0].strip()):
                continue
            if len(rec) != len(header):
                raise PagingError(f"row has {len(rec)} fields; expected {len(header)} "
                                  f"({','.join(header)})", file, ln)
            seq = rec[col["sequence"]].strip() if "sequence" in col else base
            if seq != cur:
                if seq in seen:
                    raise PagingError(f"sequence {seq!r} appears again after other sequences; "
                                      "expected the rows of a sequence to be contiguous", file,
                                      ln)
                if pages:
                    yield cur, pages, steps, where, toks, scs, tks, rks
                    pages, steps, where, toks, scs, tks, rks = [], [], [], [], [], [], []
                seen.add(seq)
                cur = seq
            vals = {}
            for c, cell in zip(header, rec, strict=True):
                if c == "sequence":
                    continue
                cell = cell.strip()
                if c == "score":
                    try:
                        v = float(cell)
                    except ValueError:
                        v = math.nan
                    if not math.isfinite(v) or v < 0:
                        raise PagingError(f"score {cell!r} is not a finite non-negative number",
                                          file, ln)
                    if with_scores:
                        scs.append(v)
                else:
                    vals[c] = text_int(cell, c, file, ln)
            pages.append(vals["page"])
            steps.append(vals.get("step", -1))
            where.append(ln)
            if extra is not None:
                toks.append(vals[extra])
            if "token" in vals:
                tks.append(vals["token"])
            if "rank" in vals:
                rks.append(vals["rank"])
            if len(pages) >= batch:
                yield cur, pages, steps, where, toks, scs, tks, rks
                pages, steps, where, toks, scs, tks, rks = [], [], [], [], [], [], []
        if pages:
            yield cur, pages, steps, where, toks, scs, tks, rks
        if cur is None:
            raise PagingError("the file has a header but no rows; expected one request per "
                              "row", file, reader.line_num + skip)

    def chunks(batches, nm):
        chk = ChunkCheck(lay, mode, nm, file, lambda i, ls: ("", int(ls[i - chk.offset])))
        for _, pages, steps, where, toks, scs, tks, rks in batches:
            p = np.asarray(pages, dtype=np.int64)
            if "step" in col:
                s = np.asarray(steps, dtype=np.int64)
            else:
                s = np.arange(chk.offset, chk.offset + p.size, dtype=np.int64)
            chk.check(p, s, np.asarray(where, dtype=np.int64),
                      token=np.asarray(tks, dtype=np.int64) if "token" in col else None,
                      rank=np.asarray(rks, dtype=np.int64) if "rank" in col else None)
            yield ((p, s) + (() if extra is None else (np.asarray(toks, dtype=np.int64),))
                   + ((np.asarray(scs, dtype=np.float64),) if with_scores else ()))

    from paging.trace import top_k_of

    with_tokens = tokens and "token" in col
    with_scores = scores and "score" in col
    # (the third column of the chunks: the token ids asked for, or the ranks of a first pass)
    extra = "token" if with_tokens else "rank" if ranks and "rank" in col else None
    rounds = with_tokens and mode == "rounds"
    top = {}
    if rounds and "rank" in col:  # each sequence's largest rank, read by this reader first
        for seq in _csv(path, chunk, expand, n_experts, n_layers, ranks=True):
            top[seq.name] = max((int(c[2].max()) for c in seq.chunks if c[2].size),
                                default=None)
    # (paging.trace.token_visits of each sequence read whole: a CSV records no top_k)
    return _Sequences((ChunkedTrace(nm, lay, mode, chunks(batches, nm), tokens=with_tokens,
                                    visits=top_k_of({}, top.get(nm)) if rounds else 1,
                                    tokens_unread="token" in col and not with_tokens,
                                    scores=with_scores)
                       for nm, batches in itertools.groupby(rows(), key=lambda b: b[0])))


class _Sequences:
    """The sequences of a CSV, found while reading: iterate it (each sequence's chunks before
    the next sequence)."""

    def __init__(self, gen):
        self._gen = gen

    def __iter__(self):
        return self._gen


_READERS = {"oracle-general": _oracle_general, "npz": _npz, "csv": _csv}


def open_chunks(source: str | os.PathLike, *, chunk: int = DEFAULT_CHUNK, expand: str = "rounds",
                n_experts: int | None = None, n_layers: int | None = None,
                format: str | None = None, next_use: bool = False,
                tokens: bool = False, scores: bool = False) -> Iterable[ChunkedTrace]:
    """The sequences of a trace file, each read in chunks of at most ``chunk`` requests.

    Parameters
    ----------
    source : str or PathLike
        An oracleGeneral, ``.npz`` or CSV trace (also looked up under ``$PAGING_TRACES``).
    chunk : int
        Requests per chunk (the memory a chunk takes: 16 bytes a request, plus the reader's
        buffer).
    expand : str
        The mode to read the sequences in; it must be the mode the file stores (see the module
        docstring).
    n_experts, n_layers : int, optional
        The layout of an oracleGeneral trace (required) or of a CSV without a header comment.
    format : str, optional
        One of :data:`STREAM_FORMATS` instead of detecting it.
    next_use : bool
        Chunks of ``(pages, steps, next_use)`` (:attr:`ChunkedTrace.next_use`): the next-access
        times an oracleGeneral file stores, checked as they are read (each request is where its
        page's previous request said; none is promised past the end); what Belady reads. The
        other formats do not store them.
    tokens : bool
        Chunks of ``(pages, steps, token)`` for the sequences of a ``.npz`` or CSV that stores
        token ids (:attr:`ChunkedTrace.tokens`, with :attr:`ChunkedTrace.visits`: what the
        token policies read); the other sequences' chunks stay ``(pages, steps)``.
    scores : bool
        Chunks that end with each request's gate score (float64) for the sequences of a
        ``.npz`` or CSV that stores them (:attr:`ChunkedTrace.scores`: what Score-Based
        reads), after the token ids when both are asked for
        (:meth:`ChunkedTrace.columns`).

    Returns
    -------
    iterable of ChunkedTrace
        In file order; consume a sequence's chunks before moving on to the next sequence.
    """
    from paging.io import detect_format, resolve_path

    chunk = _positive(chunk)
    path = resolve_path(source)
    fmt = format or detect_format(path)
    if fmt not in _READERS:
        raise PagingError(f"streaming reads {', '.join(STREAM_FORMATS)} traces, not {fmt}; "
                          "convert it first (paging trace convert FILE OUT.npz) or read it "
                          "whole (without --stream)", str(path))
    if next_use and fmt != "oracle-general":
        raise PagingError(f"a streamed {fmt} trace has no next-access times (Belady reads "
                          "them): an oracleGeneral file stores them; read this one whole "
                          "(without --stream)", str(path))
    if next_use:
        return _oracle_general(path, chunk, expand, n_experts, n_layers, next_use=True)
    return _READERS[fmt](path, chunk, expand, n_experts, n_layers, tokens=tokens,
                         scores=scores)

