"""experiments/fig_learned.py (``paging figs --only learned``): misses against k for
token-match, token-decay, LRU, LLRU, LRU-DIST, LFU and OPT, each number recomputed here
independently."""

from __future__ import annotations

import json
import os

import pytest
from conftest import TRACES, needs_traces

from experiments import common, fig_learned
from paging import Layout, simulate
from paging.io import load

SPEC = "uniform:n=6,layers=4,tokens=60,seed=3,topk=2"


def _quiet(_msg):
    pass


def _check_rows(rows, traces):
    """Every row equals a reference simulate() run; OPT is the floor; ratio = misses / OPT."""
    assert rows
    by = {}
    for r in rows:
        t = traces[r["trace"]]
        k = int(r["k"])
        assert int(r["misses"]) == simulate(t, r["policy"], k, engine="reference").misses
        by.setdefault((r["trace"], k), {})[r["policy"]] = int(r["misses"])
        assert float(r["ratio"]) == pytest.approx(int(r["misses"]) / int(r["opt"]), abs=1e-6)
    for cell in by.values():
        assert set(cell) == set(fig_learned.POLICIES)
        assert all(cell["belady"] <= m for m in cell.values())
    return by


def test_synthetic_trace_is_deterministic_and_exact(tmp_path, monkeypatch):
    monkeypatch.delenv("PAGING_TRACES", raising=False)
    a = fig_learned.compute(tmp_path / "a", traces=[SPEC], progress=_quiet)
    b = fig_learned.compute(tmp_path / "b", traces=[SPEC], progress=_quiet)
    assert a.read_bytes() == b.read_bytes()
    assert common.params_path(a).read_bytes() == common.params_path(b).read_bytes()
    (trace,) = load(SPEC, expand="rounds")
    rows = common.read_csv(a)
    # 24 pages: K_VALUES does not fit, six sizes spread over ℓ..nℓ = 4..24 instead
    assert sorted({int(r["k"]) for r in rows}) == [4, 8, 12, 16, 20, 24]
    _check_rows(rows, {trace.name: trace})
    methods = {r["policy"]: r["method"] for r in rows}
    assert methods["token-match"] == "simulate" and methods["lru"] == "stack"
    assert methods["token-decay"] == "simulate"
    assert methods["belady"] == "stack" and methods["lru-dist"] == "per-layer"
    params = json.loads(common.params_path(a).read_text())
    assert "FlashMoE not plotted" in params["flashmoe"]
    assert params["summary_k200"] == [] == params["headroom_k200"]  # no k = 200 on 24 pages
    files = fig_learned.plot(a, tmp_path / "a")
    assert [f.suffix for f in files] == [".png", ".pdf"]
    assert all(f.stat().st_size > 1000 for f in files)


def test_k_grid():
    assert fig_learned.k_grid(Layout(8, 32), fig_learned.K_VALUES) == [32, 64, 100, 150, 200,
                                                                       250]
    assert fig_learned.k_grid(Layout(32, 24), fig_learned.K_VALUES) == [32, 64, 100, 150, 200,
                                                                        250]
    assert fig_learned.k_grid(Layout(4, 32), fig_learned.K_VALUES) == [32, 64, 100]
    assert fig_learned.k_grid(Layout(5, 2), (200,)) == [2, 4, 5, 7, 8, 10]


def test_summary_picks_the_best_plotted_baseline():
    rows = [{"panel": "0", "trace": "t", "k": "200", "policy": p, "misses": str(m)}
            for p, m in (("token-match", 93), ("token-decay", 95), ("lru", 120), ("llru", 100),
                         ("lru-dist", 110), ("lfu", 100), ("belady", 50))]
    (s,) = fig_learned.summarize(rows)
    assert (s["best_plotted"], s["best_plotted_misses"], s["opt"]) == ("lfu", 100, 50)
    assert (s["token_match"], s["token_decay"]) == (93, 95)
    assert s["change_token_match"] == pytest.approx(-0.07)
    assert s["change_token_decay"] == pytest.approx(-0.05)


# token-match and token-decay at k = 200 on the shipped Mixtral sequences: the golden numbers
# of tests/unit/test_designed_policies.py (GOLDEN_K200), and OPT's from the README's table
GOLDEN = {"humaneval_2_routing.jsonl#problem_id=0": (852, 884, 433),
          "humaneval_2_routing.jsonl#problem_id=1": (2096, 2276, 961),
          "humaneval_p0_prefill_decode_raw.jsonl#problem_id=0": (1037, 1027, 484)}


@needs_traces
def test_mixtral_golden_numbers_at_k200(tmp_path):
    srcs = [os.path.join(TRACES, "mixtral-8x7b-instruct-vllm", f)
            for f in ("humaneval_2_routing.jsonl", "humaneval_p0_prefill_decode_raw.jsonl")]
    path = fig_learned.compute(tmp_path, traces=srcs, ks=(64, 200), progress=_quiet)
    rows = common.read_csv(path)
    at = {(r["trace"], r["policy"], int(r["k"])): int(r["misses"]) for r in rows}
    assert {r["trace"] for r in rows} == set(GOLDEN)
    for name, (tm, td, opt) in GOLDEN.items():
        assert at[(name, "token-match", 200)] == tm
        assert at[(name, "token-decay", 200)] == td
        assert at[(name, "belady", 200)] == opt
    # spot-check the one-pass curves against simulate on the shortest sequence
    t = next(t for t in load(srcs[0], expand="rounds") if t.name.endswith("problem_id=0"))
    for p in ("lru", "llru", "lru-dist", "lfu", "belady"):
        assert at[(t.name, p, 200)] == simulate(t, p, 200).misses
    params = json.loads(common.params_path(path).read_text())
    summary = params["summary_k200"]
    assert [(s["best_plotted"], s["best_plotted_misses"]) for s in summary] == \
        [("llru", 899), ("lfu", 2621), ("llru", 1008)]
    # the headroom of token-decay's rule, recomputed with the clairvoyant variant directly
    from paging.policies.decay import TokenDecayLookahead
    traces = {t.name: t for src in srcs for t in load(src, expand="rounds")}
    for h in params["headroom_k200"]:
        for a in (0, 1):
            assert h[f"lookahead{a}"] == simulate(traces[h["trace"]], TokenDecayLookahead(a),
                                                  200).misses
    assert [h["lookahead1"] for h in params["headroom_k200"]] == [734, 1789, 860]
