"""``paging figs --only serving`` (experiments/fig_serving.py): its rows recomputed here with
the library, the figure drawn from the CSV alone, byte-identical on a re-run."""

from __future__ import annotations

import os

import pytest
from conftest import TRACES, needs_traces

from experiments import common, fig_serving

SOURCES = [os.path.join(TRACES or "", s) for s in fig_serving.DEFAULT_SOURCES]


@needs_traces
def test_quick_figure_rows_are_serve_runs(tmp_path):
    from paging.io import load
    from paging.run import RunSpec
    from paging.serve import Arrivals, ServeSpec, serve

    assert fig_serving.main(["--quick", "--out", str(tmp_path), *[
        a for s in SOURCES for a in ("--trace", s)]]) == 0
    assert {p.name for p in tmp_path.iterdir()} == {f"fig_serving.{e}" for e in
                                                   ("csv", "json", "png", "pdf")}
    rows = common.read_csv(tmp_path / "fig_serving.csv")
    q = fig_serving.QUICK
    rate = [r for r in rows if r["kind"] == "rate"]
    assert len(rate) == len(fig_serving.HARDWARE) * len(fig_serving.BUDGETS_GB) * \
        len(q["rates"]) * len(q["policies"])
    seqs = [t for s in SOURCES for t in load(s, expand="groups")]
    row = next(r for r in rate if r["policy"] == "llru" and r["hardware"] == "pcie4"
               and float(r["budget_gb"]) == 8.0 and float(r["rate"]) == 2.0)
    # the row's setting served here through the library (not the figure's own helper): 8 GB
    # of Mixtral int4 experts (99,090,432 B) hold 80, batches of up to 16 requests of at most
    # 256 tokens, arrivals seeded 0
    res = serve(RunSpec("llru", budget=8 * 10**9, model="mixtral-8x7b", precision="int4",
                        hardware="pcie4"),
                ServeSpec(Arrivals(rate=2.0, duration=q["duration"]), max_batch=16,
                          max_tokens=256, seed=0), seqs, show=False)
    s = res.summary
    assert int(row["misses"]) == s["misses"] and int(row["capacity"]) == s["capacity"] == 80
    assert float(row["p99_tpot_ms"]) == pytest.approx(s["p99_tpot_ms"], abs=1e-6)
    assert int(row["opt_misses"]) <= int(row["misses"])
    # batching: the closed loop at batch 8 requests more experts per step than at batch 1
    batch = {int(r["max_batch"]): r for r in rows if r["kind"] == "batch" and
             r["policy"] == "lru"}
    assert int(batch[8]["expert_requests"]) > int(batch[1]["expert_requests"])
    first = (tmp_path / "fig_serving.csv").read_bytes()
    assert fig_serving.main(["--quick", "--out", str(tmp_path / "b"), *[
        a for s in SOURCES for a in ("--trace", s)]]) == 0
    assert (tmp_path / "b" / "fig_serving.csv").read_bytes() == first
