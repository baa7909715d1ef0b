"""The benchmark scripts run, at a tiny size, and their kernels agree with the reference loop.

The benchmarks are measured by hand (never in CI), so nothing ran them between measurements:
``bench_specmd.with_scores`` drew a rank per request on a rounds trace, which the trace's own
check refuses since ranks are validated (one rank per round), and ``bench_matrix.py`` and
``bench_specmd.py`` stopped at start-up with a traceback, unnoticed. Here each script runs on a
few thousand requests (no timing is asserted: the rates are whatever the machine gives) and the
check every script makes of its kernels against the reference loop must pass.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _run(script: str, *args: str) -> str:
    out = subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True,
                         text=True, timeout=900, cwd=BENCH.parent)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def test_bench_matrix_every_cell_equals_the_reference_on_its_prefix(tmp_path):
    cells_file = tmp_path / "cells.json"
    _run("bench_matrix.py", "--tokens", "40", "--prefix", "300", "--repeat", "1",
         "--json", str(cells_file))
    cells = json.loads(cells_file.read_text())
    cells = cells["cells"] if isinstance(cells, dict) else cells
    timed = [c for c in cells if "kernel_req_s" in c]
    assert len(timed) > 100  # every registered online policy × the phases it takes
    assert all(c["equal_on_prefix"] for c in timed), [
        (c["policy"], c["phase"]) for c in timed if not c["equal_on_prefix"]]
    plain = {c["policy"] for c in timed if c["phase"] == "plain"}
    assert {"lru", "token-match", "robust-token-match", "arc", "lecar", "belady"} <= plain


def test_bench_specmd_configurations_equal_the_reference():
    lines = _run("bench_specmd.py", "--tokens", "60", "--prefix", "300").splitlines()
    rows = [ln for ln in lines if ln.rstrip().endswith((" yes", " NO"))]
    assert len(rows) >= 10 and all(ln.rstrip().endswith(" yes") for ln in rows), rows


@pytest.mark.parametrize("script,args", [
    ("bench_predictive.py", ("--tokens", "60", "--ref-tokens", "10", "--k", "8",
                             "--repeat", "1")),
    ("bench_adaptive.py", ("--tokens", "60", "--prefix", "500", "--k", "8", "--repeat", "1",
                           "--seeds", "1")),
])
def test_bench_scripts_that_exit_on_disagreement_pass(script, args):
    # (both return a non-zero status when a kernel and the reference loop disagree; the
    # adaptive one also times libCacheSim, the bench extra, which make test does not install)
    if script == "bench_adaptive.py":
        pytest.importorskip("libcachesim")
    assert _run(script, *args)
