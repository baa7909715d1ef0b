"""Figures 4 and 5 on small inputs the scripts have never seen: a routing log written here (in
the Mixtral log's JSONL layout, with other ids, sizes and one lossy row) and a seeded top-2 Zipf
generator spec.

Every number in the CSVs is recomputed independently: the expected trace is built here from the
routing table with paging.trace.from_routing (not through paging.io), and misses come from the
reference simulator loop (engine="reference"), not from paging.mrc or the compiled kernels.
Golden numbers pin a few values computed once.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from experiments import common, fig4, fig5
from paging.layout import Layout
from paging.simulate import simulate
from paging.trace import from_routing

SPEC = "zipf:n=4,layers=3,tokens=30,a=1.0,h=0,seed=7,topk=2"
LAYOUT = Layout(n_experts=4, n_layers=3)
SEEDS = (0, 1, 2)


def _quiet(_msg):
    pass


def write_routing_log(path) -> dict[int, np.ndarray]:
    """A routing log for problems 3 (9 tokens) and 7 (14 tokens, the last one missing layer 2,
    so it is dropped), layer-major like humaneval_2_routing.jsonl; returns the complete tokens'
    tables ``experts[token, layer, rank]``."""
    rng = np.random.default_rng(11)
    tables = {pid: np.array([[rng.permutation(4)[:2] for _ in range(3)] for _ in range(T)])
              for pid, T in ((3, 9), (7, 14))}
    lines = []
    for pid, table in tables.items():
        for z in range(3):
            for t in range(table.shape[0]):
                if (pid, t, z) == (7, 13, 2):
                    continue  # lossy, as in the real log: this token lacks a layer
                w = float(rng.uniform(0.5, 0.9))
                lines.append(json.dumps({"dataset": "mbpp", "problem_id": pid, "layer": z,
                                         "experts": [int(e) for e in table[t, z]],
                                         "gating_probs": [w, 1 - w], "token_idx": t}))
    path.write_text("\n".join(lines) + "\n")
    return {3: tables[3], 7: tables[7][:13]}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("in") / "my-moe-model"  # the folder names the model
    d.mkdir()
    log = d / "my_routing.jsonl"
    tables = write_routing_log(log)
    expected = {name: from_routing(tables[pid], LAYOUT, name=name)
                for pid, name in ((3, "my_routing.jsonl#dataset=mbpp,problem_id=3"),
                                  (7, "my_routing.jsonl#dataset=mbpp,problem_id=7"))}
    return log, expected


def _spec_trace():
    from paging.io import load

    (trace,) = load(SPEC)
    return trace


def _by_name(expected, name):
    """The independently built trace of a sequence (names: the reader's; we match on the
    problem id, the one part both agree on)."""
    pid = name.rsplit("problem_id=", 1)[-1]
    (trace,) = [t for n, t in expected.items() if n.endswith(f"problem_id={pid}")]
    return trace


# -- Figure 4 ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fig4_csv(inputs, tmp_path_factory):
    log, _ = inputs
    out = tmp_path_factory.mktemp("fig4")
    return fig4.compute(out, traces=[str(log), SPEC], seeds=SEEDS, progress=_quiet)


def test_fig4_picks_the_longest_sequence_and_covers_every_k(fig4_csv):
    rows = common.read_csv(fig4_csv)
    panels = {int(r["panel"]): r for r in rows}
    assert panels[0]["trace"].endswith("problem_id=7")  # 13 complete tokens > 9
    assert int(panels[0]["requests"]) == 13 * 2 * 3
    assert panels[1]["trace"] == SPEC and int(panels[1]["requests"]) == 30 * 2 * 3
    for panel in (0, 1):
        for policy in fig4.POLICIES:
            ks = [int(r["k"]) for r in rows if int(r["panel"]) == panel and r["policy"] == policy]
            assert ks == list(range(1, 13))


def test_fig4_curves_match_the_reference_simulator(fig4_csv, inputs):
    _, expected = inputs
    rows = common.read_csv(fig4_csv)
    traces = {0: _by_name(expected, "problem_id=7"), 1: _spec_trace()}
    for r in rows:
        trace, k = traces[int(r["panel"])], int(r["k"])
        if r["policy"] == "marking":
            runs = [simulate(trace, "marking", k, seed=s, engine="reference").misses
                    for s in SEEDS]
            assert r["misses"] == f"{np.mean(runs):.6f}", r
            assert r["misses_sd"] == f"{np.std(runs, ddof=1):.6f}" and r["n_seeds"] == "3"
        else:
            want = simulate(trace, r["policy"], k, engine="reference").misses
            assert int(r["misses"]) == want, r


# (panel, policy, k) -> misses, computed once
FIG4_GOLDEN = {
    (0, "lru", 6): "50", (0, "llru", 6): "50", (0, "lru-dist", 6): "46", (0, "belady", 6): "27",
    (0, "marking", 6): "45.000000", (1, "lru", 8): "75", (1, "llru", 8): "73",
    (1, "belady", 8): "38", (1, "belady", 12): "12",
}


# (panel, policy) -> (n_k_fewer_than_llru, min_k, max_k, n_k_llru_at_most) of the summary,
# computed once
FIG4_VS_LLRU_GOLDEN = {
    (0, "lru"): ("0", "", "", "12"), (0, "lru-dist"): ("6", "1", "9", "6"),
    (1, "lru"): ("1", "11", "11", "11"), (1, "marking"): ("3", "7", "11", "9"),
}


def test_fig4_golden(fig4_csv):
    rows = {(int(r["panel"]), r["policy"], int(r["k"])): r["misses"]
            for r in common.read_csv(fig4_csv)}
    for key, want in FIG4_GOLDEN.items():
        assert rows[key] == want, key
    summary = {(int(s["panel"]), s["policy"]): s
               for s in common.read_csv(fig4_csv.parent / "fig4_summary.csv")}
    columns = ("n_k_fewer_than_llru", "min_k_fewer_than_llru", "max_k_fewer_than_llru",
               "n_k_llru_at_most")
    for key, want in FIG4_VS_LLRU_GOLDEN.items():
        assert tuple(summary[key][c] for c in columns) == want, key


def test_fig4_summary_and_params(fig4_csv):
    out = fig4_csv.parent
    summary = common.read_csv(out / "fig4_summary.csv")
    rows = common.read_csv(fig4_csv)
    for s in summary:
        panel = int(s["panel"])
        curve = {r["policy"]: {} for r in rows}
        for r in rows:
            if int(r["panel"]) == panel:
                curve[r["policy"]][int(r["k"])] = float(r["misses"])
        ratio = [curve[s["policy"]][k] / curve["belady"][k] for k in range(1, 13)]
        assert float(s["max_ratio_to_opt"]) == pytest.approx(max(ratio), abs=1e-6)
        mine, llru = curve[s["policy"]], curve["llru"]
        fewer = [k for k in range(1, 13) if mine[k] < llru[k]]
        assert int(s["n_k_fewer_than_llru"]) == len(fewer)
        assert (s["min_k_fewer_than_llru"], s["max_k_fewer_than_llru"]) == \
            ((str(min(fewer)), str(max(fewer))) if fewer else ("", ""))
        assert int(s["n_k_llru_at_most"]) == sum(llru[k] <= mine[k] for k in range(1, 13))
        assert s["n_k"] == "12"
    params = json.loads(common.params_path(fig4_csv).read_text())
    assert params["marking_seeds"] == list(SEEDS)
    assert params["panels"][0]["selected"]["dropped_tokens"] == 1
    assert params["panels"][1]["source"] == {"source": SPEC, "kind": "generator"}


# -- Figure 5 ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fig5_csv(inputs, tmp_path_factory):
    log, _ = inputs
    out = tmp_path_factory.mktemp("fig5")
    return fig5.compute(out, traces=[str(log), SPEC], k=5, seeds=SEEDS, progress=_quiet)


def test_fig5_rows_match_the_reference_simulator(fig5_csv, inputs):
    _, expected = inputs
    rows = common.read_csv(fig5_csv)
    assert len(rows) == 3 * len(fig5.POLICIES)  # 2 problems + the spec
    assert {r["model"] for r in rows} == {"my-moe-model", "zipf"}  # the file's folder; generator
    for r in rows:
        trace = _spec_trace() if r["trace"] == SPEC else _by_name(expected, r["trace"])
        assert int(r["requests"]) == trace.n_requests and r["k"] == "5"
        opt = simulate(trace, "belady", 5, engine="reference").misses
        assert int(r["opt_misses"]) == opt
        if r["policy"] == "marking":
            m = np.mean([simulate(trace, "marking", 5, seed=s, engine="reference").misses
                         for s in SEEDS])
        else:
            m = simulate(trace, r["policy"], 5, engine="reference").misses
        assert float(r["misses"]) == pytest.approx(m, abs=1e-6)
        assert r["ratio"] == f"{m / opt:.6f}"


# (trace suffix, policy) -> (misses, opt_misses), computed once
FIG5_GOLDEN = {
    ("problem_id=3", "lru"): ("47", "27"), ("problem_id=7", "llru"): ("59", "34"),
    ("problem_id=7", "lru-dist"): ("53", "34"), (SPEC, "llru"): ("128", "75"),
    (SPEC, "marking"): ("139.000000", "75"),
}


def test_fig5_golden(fig5_csv):
    rows = common.read_csv(fig5_csv)
    for (suffix, policy), want in FIG5_GOLDEN.items():
        (r,) = [r for r in rows if r["trace"].endswith(suffix) and r["policy"] == policy]
        assert (r["misses"], r["opt_misses"]) == want, (suffix, policy)


def test_fig5_summary(fig5_csv):
    rows = common.read_csv(fig5_csv)
    summary = common.read_csv(fig5_csv.parent / "fig5_summary.csv")
    model = "my-moe-model"
    (s,) = [s for s in summary if s["model"] == model and s["policy"] == "lru"]
    ratios = [float(r["ratio"]) for r in rows if r["model"] == model and r["policy"] == "lru"]
    assert s["n_sequences"] == "2"
    assert float(s["ratio_median"]) == pytest.approx(np.median(ratios), abs=1e-6)
    llru = {r["trace"]: float(r["misses"]) for r in rows if r["policy"] == "llru"}
    fewer = [1 - llru[r["trace"]] / float(r["misses"]) for r in rows
             if r["model"] == model and r["policy"] == "lru"]
    assert float(s["llru_fewer_mean"]) == pytest.approx(np.mean(fewer), abs=1e-6)


# -- both ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("mod, kw", [(fig4, {}), (fig5, {"k": 5})])
def test_same_seed_gives_byte_identical_files(tmp_path, inputs, mod, kw):
    log, _ = inputs
    a = mod.compute(tmp_path / "a", traces=[str(log), SPEC], seeds=SEEDS, progress=_quiet, **kw)
    b = mod.compute(tmp_path / "b", traces=[str(log), SPEC], seeds=SEEDS, progress=_quiet, **kw)
    for name in (a.name, a.with_suffix(".json").name, f"{mod.NAME}_summary.csv"):
        assert (a.parent / name).read_bytes() == (b.parent / name).read_bytes(), name


@pytest.mark.parametrize("mod", [fig4, fig5])
def test_plot_reads_only_the_csv(tmp_path, fig4_csv, fig5_csv, mod):
    csv_path = {fig4: fig4_csv, fig5: fig5_csv}[mod]
    copy = tmp_path / csv_path.name  # alone in a fresh folder: no JSON, no traces
    copy.write_bytes(csv_path.read_bytes())
    files = mod.plot(copy, tmp_path)
    assert [f.name for f in files] == [f"{mod.NAME}.png", f"{mod.NAME}.pdf"]
    assert all(f.stat().st_size > 1000 for f in files)


def test_without_real_traces_the_figures_are_skipped(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("PAGING_TRACES", raising=False)
    assert fig4.compute(tmp_path) is None
    assert fig5.compute(tmp_path) is None
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all("skipped" in line and "PAGING_TRACES" in line for line in err)
    assert list(tmp_path.iterdir()) == []


def test_fig5_never_pools_different_layouts(tmp_path):
    # two unnamed models in one folder: same label (the folder), different layouts
    folder = tmp_path / "runs"
    folder.mkdir()
    write_routing_log(folder / "a.jsonl")  # 4 experts x 3 layers
    rows = []
    for t in range(6):
        for z in range(2):
            rows.append(json.dumps({"problem_id": 0, "layer": z, "token_idx": t,
                                    "experts": [(t + z) % 5, (t + z + 2) % 5]}))
    (folder / "b.jsonl").write_text("\n".join(rows) + "\n")  # 5 experts x 2 layers
    csv_path = fig5.compute(tmp_path / "out", traces=[str(folder / "a.jsonl"),
                                                      str(folder / "b.jsonl")],
                            k=4, seeds=(0,), progress=_quiet)
    summary = common.read_csv(csv_path.parent / "fig5_summary.csv")
    lru = {(s["model"], s["layout"]): s["n_sequences"] for s in summary if s["policy"] == "lru"}
    assert lru == {("runs", "3 layers x 4 experts, top-2"): "2",
                   ("runs", "2 layers x 5 experts, top-2"): "1"}
    assert len(fig5.plot(csv_path, tmp_path / "out")) == 2


def test_fig5_keeps_same_named_sequences_of_different_sources_apart(tmp_path):
    # x/runs/log.jsonl and y/runs/log.jsonl: same model label (the folder), same layout and the
    # same sequence name "log.jsonl#problem_id=3", different requests
    x, y = tmp_path / "x" / "runs", tmp_path / "y" / "runs"
    x.mkdir(parents=True)
    y.mkdir(parents=True)
    write_routing_log(x / "log.jsonl")
    lines = [json.dumps({"dataset": "mbpp", "problem_id": 3, "layer": z, "token_idx": t,
                         "experts": [(t * z) % 4, (t * z + 1 + t % 3) % 4]})
             for z in range(3) for t in range(12)]
    (y / "log.jsonl").write_text("\n".join(lines) + "\n")
    sources = [str(x / "log.jsonl"), str(y / "log.jsonl")]
    csv_path = fig5.compute(tmp_path / "out", traces=sources, k=4, seeds=(0,), progress=_quiet)
    rows = common.read_csv(csv_path)
    llru = {(r["source"], r["trace"]): float(r["misses"]) for r in rows if r["policy"] == "llru"}
    name = "log.jsonl#problem_id=3"
    assert len(llru) == 3 and llru[(sources[0], name)] != llru[(sources[1], name)]
    (s,) = [s for s in common.read_csv(csv_path.parent / "fig5_summary.csv")
            if s["policy"] == "lru"]
    assert (s["model"], s["n_sequences"]) == ("runs", "3")
    fewer = [1 - llru[(r["source"], r["trace"])] / float(r["misses"]) for r in rows
             if r["policy"] == "lru"]
    assert len(fewer) == 3
    assert float(s["llru_fewer_mean"]) == pytest.approx(np.mean(fewer), abs=1e-6)
    assert float(s["llru_fewer_min"]) == pytest.approx(min(fewer), abs=1e-6)
    assert float(s["llru_fewer_max"]) == pytest.approx(max(fewer), abs=1e-6)
    assert len(fig5.plot(csv_path, tmp_path / "out")) == 2
