"""Cross-check against libCacheSim (optional: ``pip install -e '.[bench]'``).

LRU, FIFO and Belady miss counts on the real traces, written as oracleGeneral files by our
writer, must equal libCacheSim's exactly. Skipped when libcachesim is not installed (it is not
a test dependency); the golden numbers it confirms are asserted unconditionally in
test_real_traces.py.
"""

from __future__ import annotations

import os

import pytest
from conftest import needs_traces
from test_real_traces import GOLDEN, GRANITE, MIXTRAL

from paging.io import load
from paging.io.libcachesim import write_oracle_general

lcs = pytest.importorskip("libcachesim")


@needs_traces
def test_libcachesim_agrees_on_golden_numbers(tmp_path):
    root = os.environ["PAGING_TRACES"]
    traces = {
        t.name: t for t in load(os.path.join(root, MIXTRAL)) + load(os.path.join(root, GRANITE))
    }
    classes = {"lru": lcs.LRU, "fifo": lcs.FIFO, "belady": lcs.Belady}
    for name in sorted({name for name, _ in GOLDEN}):
        path = tmp_path / f"{len(list(tmp_path.iterdir()))}.oracleGeneral"
        write_oracle_general(traces[name], path)  # once per trace, read for every k
        for k in sorted(k for nm, k in GOLDEN if nm == name):
            for pol, cls in classes.items():
                reader = lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE)
                ratio = cls(cache_size=k).process_trace(reader)
                ratio = ratio[0] if isinstance(ratio, tuple) else ratio
                assert round(ratio * traces[name].n_requests) == GOLDEN[(name, k)][pol], \
                    (name, k, pol)
