"""Cross-check against libCacheSim (optional: ``pip install -e '.[bench]'``).

LRU, FIFO and Belady miss counts on the real traces, written as oracleGeneral files by our
writer, must equal libCacheSim's exactly. Skipped when libcachesim is not installed (it is not
a test dependency); the golden numbers it confirms are asserted unconditionally in
test_real_traces.py.
"""

from __future__ import annotations

import os

import numpy as np
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


# ARC and LeCaR on the benchmark's trace (layered Zipf n=8, ℓ=32, a=1, seed 0), shortened to
# 2,000 tokens (64,000 requests). ARC is deterministic and must agree exactly (the readings in
# paging/policies/adaptive.py follow libCacheSim's ARC.c). LeCaR is randomized and draws from
# a different generator (libCacheSim: next_rand() % 100 / 100; we: the run's numpy generator),
# so only the distribution can agree: libCacheSim's count must lie within the range of our
# counts over 8 seeds widened by 4 standard deviations (measured on 5,000 tokens: k=32 ours
# 126,890-126,896 vs 126,891; k=64 103,655-103,710 vs 103,663; k=128 52,973-53,161 vs 53,017).
def _zipf_file(tmp_path, tokens=2000):
    from paging.generators import zipf

    trace = zipf(n=8, layers=32, tokens=tokens, a=1.0, h=0.0, seed=0)
    path = tmp_path / "zipf.oracleGeneral"
    write_oracle_general(trace, path)
    return trace, path


def _lcs_misses(cls, path, k, n_requests):
    reader = lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE)
    ratio = cls(cache_size=k).process_trace(reader)
    ratio = ratio[0] if isinstance(ratio, tuple) else ratio
    return round(ratio * n_requests)


def test_libcachesim_arc_agrees_exactly(tmp_path):
    from paging import simulate

    trace, path = _zipf_file(tmp_path)
    for k in (8, 32, 64, 128, 200):
        assert simulate(trace, "arc", k).misses == _lcs_misses(lcs.ARC, path, k,
                                                               trace.n_requests), k


def test_libcachesim_lecar_agrees_in_distribution(tmp_path):
    from paging import simulate

    trace, path = _zipf_file(tmp_path)
    for k in (32, 64, 128):
        ours = np.array([simulate(trace, "lecar", k, seed=s).misses for s in range(8)])
        theirs = _lcs_misses(lcs.LeCaR, path, k, trace.n_requests)
        slack = 4 * ours.std() + 1
        assert ours.min() - slack <= theirs <= ours.max() + slack, (k, ours.tolist(), theirs)
