"""The cost-model figure (experiments/fig_cost.py) in quick mode: files, reproducibility, the
CSV checked against the library (each row re-simulated independently) and the offline bound."""

from __future__ import annotations

import numpy as np
from conftest import needs_traces

from experiments import common, fig_cost
from paging.cli import main
from paging.cost import get_hardware, get_model, page_costs, page_sizes
from paging.cost.timeline import batch_prefill
from paging.io import load
from paging.simulate import simulate


def test_user_spec_trace_end_to_end(tmp_path, monkeypatch):
    """A generator spec with Mixtral's layout runs the figure without real traces; rerunning
    gives byte-identical CSV and JSON."""
    monkeypatch.delenv("PAGING_TRACES", raising=False)
    spec = "zipf:n=8,layers=32,tokens=30,seed=3,topk=2"
    out1, out2 = tmp_path / "a", tmp_path / "b"
    for out in (out1, out2):
        assert main(["figs", "--only", "cost", "--quick", "--trace", spec, "--out",
                     str(out)]) == 0
    for name in ("fig_cost.csv", "fig_cost.json", "fig_cost_specmd.csv"):
        assert (out1 / name).read_bytes() == (out2 / name).read_bytes()
    assert (out1 / "fig_cost.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = common.read_csv(out1 / "fig_cost.csv")
    assert {r["panel"] for r in rows} == {"one tier", "two tiers"}
    _check_rows(rows, spec)


def _check_rows(rows, source):
    """Every one-tier row equals an independent simulate() of the same budget; the offline
    bound has the fewest misses among the shared-cache policies at every budget."""
    # the quick cut: the first QUICK_TOKENS tokens, in a server's order
    (trace,) = load(source, expand="rounds")
    trace = trace.head(fig_cost.QUICK_TOKENS * trace.layout.n_layers * 2)  # top-2 rounds
    bt, _ = batch_prefill(trace)
    m, hw = get_model("mixtral-8x7b"), get_hardware("link-5gbps")
    by = {}
    for r in rows:
        if r["panel"] != "one tier":
            continue
        by.setdefault((r["precision"], r["budget_gb"]), {})[r["policy"]] = int(r["misses"])
    checked = 0
    for (prec, gb), pol in by.items():
        sizes = page_sizes(m, prec)
        fetch = page_costs(m, prec, hw, np.zeros(256, np.int8))
        budget = int(round(float(gb) * 1e9))
        for name in ("lru", "llru"):
            assert simulate(bt, name, budget=budget, sizes=sizes, costs=fetch).misses == pol[name]
            checked += 1
        shared = [v for k, v in pol.items() if not k.endswith("-dist")]
        assert pol["belady"] == min(shared)
    assert checked >= 4


def test_budgets_are_log_spaced():
    b = fig_cost.budgets_gb(10**10, 4)
    assert b == [0.2, 0.737, 2.71, 10.0]


@needs_traces
def test_quick_on_the_shipped_traces(tmp_path):
    assert fig_cost.compute(tmp_path, quick=True) is not None
    rows = common.read_csv(tmp_path / "fig_cost.csv")
    assert {r["model"] for r in rows} == {"mixtral-8x7b", "granite-3.0-1b-a400m"}
    spec = common.read_csv(tmp_path / "fig_cost_specmd.csv")
    # the SpecMD setting: 5 % of the 16-bit model (4.67e9 B) holds 47 int4 experts (99,090,432 B)
    assert {int(r["capacity"]) for r in spec if r["precision"] == "int4"} == {47}
    # a cold batched prefill loads every expert the prompt uses once: the same TTFT for every
    # policy; decode then differs
    dump = [r for r in spec if "raw" in r["trace"] and r["precision"] == "int4"]
    assert len({r["ttft_ms"] for r in dump}) == 1 and float(dump[0]["ttft_ms"]) > 1000
    tps = {r["policy"]: float(r["tokens_per_s"]) for r in dump}
    assert tps["belady"] == max(tps.values()) and tps["belady"] > tps["lru"]
    fig_cost.plot(tmp_path / "fig_cost.csv", tmp_path)
    assert (tmp_path / "fig_cost.pdf").read_bytes()[:5] == b"%PDF-"

