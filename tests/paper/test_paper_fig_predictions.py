"""experiments/fig_predictions.py: misses / OPT against the prediction error η."""

from __future__ import annotations

import json

import pytest
from conftest import needs_traces

from experiments import common, fig_predictions
from paging import simulate
from paging.io import load


def _quiet(_msg):
    pass


def _rows(path):
    return common.read_csv(path)


def test_quick_zipf_is_deterministic_and_consistent(tmp_path, monkeypatch):
    monkeypatch.delenv("PAGING_TRACES", raising=False)
    a = fig_predictions.compute(tmp_path / "a", quick=True, progress=_quiet)
    b = fig_predictions.compute(tmp_path / "b", quick=True, progress=_quiet)
    assert a.read_bytes() == b.read_bytes()
    assert common.params_path(a).read_bytes() == common.params_path(b).read_bytes()
    rows = _rows(a)
    assert {r["panel"] for r in rows} == {"0"}  # no real traces: the Zipf panel only
    assert len(rows) == len(fig_predictions.POLICIES) * 4  # 4 quick η values, 1 seed
    r0 = rows[0]
    trace = load(r0["source"])[0]
    assert (int(r0["k"]), int(r0["n_pages"])) == (64, 256)
    assert int(r0["opt"]) == simulate(trace, "belady", 64).misses
    at = {(r["policy"], float(r["eta"])): r for r in rows}
    # consistency: BlindOracle and the combiner are OPT with exact predictions
    for p in ("blind-oracle", "robust-blind-oracle"):
        assert at[(p, 0.0)]["ratio"] == "1.000000"
    # LRU and Marking use no predictions: the same misses at every η
    for p in ("lru", "marking"):
        assert len({at[(p, e)]["misses"] for e in (0.0, 10.0, 1000.0, 100000.0)}) == 1
    # every ratio is misses / OPT, and one predictive cell matches a direct run
    for r in rows:
        assert float(r["ratio"]) == pytest.approx(int(r["misses"]) / int(r["opt"]), abs=1e-6)
    want = simulate(trace, "lmarker:oracle:eta=1000,seed=0", 64, seed=0).misses
    assert int(at[("lmarker", 1000.0)]["misses"]) == want
    # large noise makes BlindOracle worse than at η = 0
    assert float(at[("blind-oracle", 100000.0)]["ratio"]) > 1.5
    files = fig_predictions.plot(a, tmp_path / "a")
    assert [f.suffix for f in files] == [".png", ".pdf"] and all(f.stat().st_size > 1000
                                                                 for f in files)
    params = json.loads(common.params_path(a).read_text())
    assert params["quick"] and params["etas"] == [0.0, 10.0, 1000.0, 100000.0]


@needs_traces
def test_quick_real_traces_panels(tmp_path):
    rows = _rows(fig_predictions.compute(tmp_path, quick=True, progress=_quiet))
    traces = {int(r["panel"]): (r["trace"], r["k"], r["requests"]) for r in rows}
    assert traces[1] == ("humaneval_2_routing.jsonl#problem_id=1", "64", str(40 * 32))
    assert traces[2] == ("moe_expert_trace.json#prompt=code", "192", str(40 * 24))
    for panel in (1, 2):
        at = {(r["policy"], float(r["eta"])): r for r in rows if int(r["panel"]) == panel}
        assert at[("blind-oracle", 0.0)]["ratio"] == "1.000000"
