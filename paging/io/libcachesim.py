"""Writers for libCacheSim (Yang et al., github.com/1a1a11a/libCacheSim): CSV and oracleGeneral.

Object ids and times
    The object id of request i is its page (``layer * n_experts + expert``); the time is the
    request's index in the file (0, 1, 2, ...), which libCacheSim reads as a 32-bit timestamp.
    Every object has size 1, so a cache of ``k`` objects (``--ignore-obj-size 1``) is a cache of
    ``k`` pages.

Several sequences in one file
    libCacheSim replays one request stream, while this package simulates each sequence from an
    empty cache. The writers put the sequences back to back and give sequence s the object ids
    ``page + s * n_pages``, so no sequence can hit on another's pages. For LRU, FIFO and Belady
    every object of an earlier sequence ranks below every object of the current one (older, or
    never requested again), so the misses equal the sum of separate empty-cache runs; for
    frequency-based policies (LFU, ARC, ...) they do not. Write one sequence per file (pass a
    single Trace) to compare with :func:`paging.simulate.simulate` exactly.

Groups mode
    libCacheSim has no pinned groups; a groups-mode trace is written as its flat request order.

Reading the files back in libCacheSim (conventions checked in libCacheSim's source, see below)
    CSV (columns ``time,obj_id`` with a header row; column numbers start at 1 in
    ``traceReader/generalReader/csv.c``; without a size column the object size is 1)::

        cachesim trace.csv csv lru 64 --ignore-obj-size 1 \\
            -t "time-col=1, obj-id-col=2, obj-id-is-num=true, delimiter=,, has-header=true"

        # Python bindings (pip install libcachesim)
        p = libcachesim.ReaderInitParam(has_header=True, has_header_set=True, delimiter=",",
                                        obj_id_is_num=True, obj_id_is_num_set=True)
        p.time_field, p.obj_id_field = 1, 2
        reader = libcachesim.TraceReader("trace.csv", libcachesim.TraceType.CSV_TRACE, p)

    oracleGeneral (needed by libCacheSim's Belady)::

        cachesim trace.oracleGeneral oracleGeneral belady 64 --ignore-obj-size 1
        reader = libcachesim.TraceReader("trace.oracleGeneral",
                                         libcachesim.TraceType.ORACLE_GENERAL_TRACE)

oracleGeneral record (24 bytes, little-endian, packed), from libCacheSim
``libCacheSim/traceReader/customizedReader/oracle/oracleGeneralBin.h``::

    struct { uint32_t clock_time; uint64_t obj_id; uint32_t obj_size; int64_t next_access_vtime; }

``next_access_vtime`` follows ``libCacheSim/bin/traceUtils/traceConvOracleGeneral.cpp``
(``convert_to_oracleGeneral``: "next_access_vtime is the reference count of the next access to the
same object (reference count starts with 1)"): the converter reads the trace backwards, stores the
backward index of the next access, and ``_reverse_file`` writes ``n_req - that index``; for the
request at 0-based position i whose next access is at position j this is ``j + 1``, i.e. the 1-based
position of the next request of the same object, and -1 when there is none (the reader turns -1
into "infinitely far").
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from paging.errors import PagingError
from paging.io._pages import as_list
from paging.io.atomic import atomic_path
from paging.trace import Trace, next_use

#: One oracleGeneral request: 24 bytes, little-endian, no padding.
ORACLE_GENERAL = np.dtype([("time", "<u4"), ("obj_id", "<u8"), ("obj_size", "<u4"),
                           ("next_access_vtime", "<i8")])
assert ORACLE_GENERAL.itemsize == 24


def object_ids(traces: Trace | Sequence[Trace]) -> np.ndarray:
    """Object ids of all requests, sequences back to back: ``page + s * n_pages`` for sequence s."""
    ts = as_list(traces)
    if not ts or sum(t.n_requests for t in ts) == 0:
        raise PagingError("nothing to write: the trace has no requests; libCacheSim needs at "
                          "least one")
    n_pages = ts[0].layout.n_pages
    ids = np.concatenate([t.pages + s * n_pages for s, t in enumerate(ts)])
    if ids.size >= 2**32:
        raise PagingError(f"{ids.size} requests do not fit libCacheSim's 32-bit time field; "
                          "write fewer than 2**32 requests per file")
    return ids


def oracle_general_records(traces: Trace | Sequence[Trace]) -> np.ndarray:
    """The oracleGeneral records of ``traces`` as a structured array (see the module docstring)."""
    ids = object_ids(traces)
    nxt = next_use(ids)  # 0-based index of the next request of the same object, len if none
    rec = np.empty(ids.size, dtype=ORACLE_GENERAL)
    rec["time"] = np.arange(ids.size, dtype=np.uint32)
    rec["obj_id"] = ids
    rec["obj_size"] = 1
    rec["next_access_vtime"] = np.where(nxt < ids.size, nxt + 1, -1)
    return rec


def write_oracle_general(traces_or_trace: Trace | Sequence[Trace],
                         path: str | os.PathLike) -> None:
    """Write libCacheSim's oracleGeneral binary trace (24-byte records; see the module docstring
    for the next-access convention and the object ids of several sequences). Written atomically.
    """
    rec = oracle_general_records(traces_or_trace)
    with atomic_path(path) as tmp:
        rec.tofile(tmp)


def write_libcachesim_csv(traces_or_trace: Trace | Sequence[Trace],
                          path: str | os.PathLike) -> None:
    """Write a libCacheSim CSV trace: header ``time,obj_id``, one request per row (the reader
    parameters are in the module docstring). Written atomically."""
    ids = object_ids(traces_or_trace)
    table = np.column_stack([np.arange(ids.size, dtype=np.int64), ids])
    with atomic_path(path) as tmp, open(tmp, "w", encoding="ascii", newline="\n") as fh:
        fh.write("time,obj_id\n")
        np.savetxt(fh, table, fmt="%d", delimiter=",")
