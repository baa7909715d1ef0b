"""ZipMoE's planner (paging.zipmoe.planner), `paging plan` and fig_zipmoe."""

import itertools
import json
import os
from fractions import Fraction as F

import numpy as np
import pytest

from paging.cli import main
from paging.cost.pools import PoolTimes
from paging.errors import PagingError
from paging.layout import Layout
from paging.trace import from_routing
from paging.zipmoe import planner as zp
from paging.zipmoe.hitmodel import hit_pattern_bruteforce

# u = 4, K = 2, ρ = 1/2 -> v = ρu/K = 1; c = 2; one thread; one tensor per expert
TINY = PoolTimes(u=4.0, v=1.0, c=2.0, p=0.0, tensors=1, K=2, L=1, rho=0.5)
FORMS = {"F": 100, "C": 75, "S": 50, "E": 25}     # s = 100: C = 50 + 25, S = 50, E = 25
MIXTRAL = "mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl"
needs_traces = pytest.mark.skipif(not os.environ.get("PAGING_TRACES"),
                                  reason="needs $PAGING_TRACES (the real traces)")


def test_alg3_by_hand_for_each_state():
    # k = 1: F needs nothing; C: 2 decompressions of 2 on 1 thread = 4; S: E-reads 2·1 = 2,
    # T_decomp = (2 + 4)/1 = 6; E: SM read 4, decompress 4; M: I/O 4 + 2 = 6, decomp 6
    got = [float(zp.alg3(h, 1, TINY)) for h in
           [(1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1), (0, 0, 0, 0)]]
    assert got == [0.0, 4.0, 6.0, 4.0, 6.0]


def test_split_grid_order_and_count():
    g = zp.split_grid("FCSE", F(1, 2))
    assert [tuple(int(x[p] * 2) for p in "FCSE") for x in g] == [
        (2, 0, 0, 0), (1, 1, 0, 0), (1, 0, 1, 0), (1, 0, 0, 1), (0, 2, 0, 0), (0, 1, 1, 0),
        (0, 1, 0, 1), (0, 0, 2, 0), (0, 0, 1, 1), (0, 0, 0, 2)]
    assert len(list(zp.split_grid("FCSE", 0.05))) == 1771 == zp.grid_size("FCSE", 0.05)  # C(23,3)
    for pools, m in (("FC", 7), ("FSE", 5), ("F", 4), ("CSE", 1)):  # the old product filter
        want = [h for h in itertools.product(range(m, -1, -1), repeat=len(pools) - 1)
                if sum(h) <= m]
        got = [tuple(int(x[p] * m) for p in pools[:-1]) for x in zp.split_grid(pools, F(1, m))]
        assert got == want and len(got) == zp.grid_size(pools, F(1, m))


def test_a_grid_beyond_the_cap_is_refused_up_front_with_its_size():
    """δ = 1e-9 walked C(10^9 + 3, 3) splits without a word; the size is named instead."""
    assert zp.grid_size("FCSE", 0.001) == 167_668_501 > zp.MAX_SPLITS
    assert zp.check_grid("FCSE", 0.005) == 1_373_701 <= zp.MAX_SPLITS
    with pytest.raises(PagingError, match="delta=0.001 over the pools FCSE makes 167,668,501 "
                                          "splits; expected at most 2,000,000"):
        zp.plan([np.array([0.5, 0.5])], 1, 10**9, 2, {"F": 100, "C": 50, "S": 40, "E": 30},
                None, "FCSE", 0.001)


def test_tiny_plan_by_hand():
    # n = 2 ranks, k = 1, q = (1/2, 1/4): P(rank 0) = (1/2·3/4) / (1/2·3/4 + 1/2·1/4) = 3/4.
    # Budget 80 B, one layer, δ = 1/2; the 10 splits give (S_F, S_C, S_S, S_E):
    #   F 80/100 -> all M: 6            F/C 40, 40 -> 0, 0: 6        F/S -> 0, 40/50 = 0: 6
    #   F/E -> E = 40/25 = 1: rank 0 in E: 3/4·4 + 1/4·6 = 4.5      C = 80/75 = 1: 4.5
    #   C/S -> 0: 6     C/E -> E 1: 4.5     S = 80/50 = 1: 6 (an S hit costs as much as a miss)
    #   S/E -> S 0, E 1: 4.5                E = 80/25 = 3, capped at 2: both in E: 4
    qs = [[0.5, 0.25]]
    p = zp.plan(qs, 1, 80, 2, FORMS, TINY, "FCSE", F(1, 2))
    assert p.sizes == {"F": 0, "C": 0, "S": 0, "E": 2}
    assert p.ratios == {"F": 0, "C": 0, "S": 0, "E": 1}
    assert (p.layer_ms, p.token_ms, p.evaluated, p.distinct) == (4.0, 4.0, 10, 5)
    assert p.table == [((0, 0, 0, 0), 6.0), ((0, 0, 0, 1), 4.5), ((0, 0, 0, 2), 4.0),
                       ((0, 0, 1, 0), 6.0), ((0, 1, 0, 0), 4.5)]
    # with F only, 80 B hold nothing; 100 B hold rank 0: 1/4 · 6 = 1.5
    assert zp.plan(qs, 1, 100, 2, FORMS, TINY, "F", 0.5).layer_ms == 1.5
    # two identical layers: the per-token makespan doubles, the per-layer one does not
    p2 = zp.plan(qs * 2, 1, 160, 2, FORMS, TINY, "FCSE", F(1, 2))
    assert (p2.layer_ms, p2.token_ms) == (4.0, 8.0)


@pytest.mark.parametrize("seed", range(6))
def test_predicted_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 7))
    k = int(rng.integers(1, min(n, 3) + 1))
    q = [F(int(rng.integers(1, 10)), 10) for _ in range(n)]
    cuts = np.sort(rng.integers(0, n + 1, size=4))
    sizes = tuple(int(x) for x in np.diff(np.r_[0, cuts]))
    t = PoolTimes(u=3.0, v=0.5, c=1.5, p=0.0, tensors=2, K=3, L=2, rho=0.5)
    exact = zp.expected_makespan_exact(q, sizes, k, t)
    brute = zp.expected_makespan_exact(q, sizes, k, t, law=hit_pattern_bruteforce(q, sizes, k))
    assert exact == brute and isinstance(exact, F)
    assert zp.expected_makespan(q, sizes, k, t) == pytest.approx(float(exact), rel=1e-12)


def test_schedule_makespans_by_hand():
    # one M expert: E-chunks arrive at 1 and 2, SM at 6; one thread decompresses 1-3, 3-5;
    # ready at 6 (= Algorithm 3's 6). With p = 1 and one F hit: GPU runs F 0-1, M 6-7
    assert zp.schedule_makespans((0, 0, 0, 0, 1), TINY) == (6.0, 6.0)
    t = PoolTimes(u=4.0, v=1.0, c=2.0, p=1.0, tensors=1, K=2, L=1, rho=0.5)
    assert zp.schedule_makespans((1, 0, 0, 0, 1), t) == (6.0, 7.0)
    assert zp.schedule_makespans((2, 0, 0, 0, 0), t) == (0.0, 2.0)


def test_exact_schedules_of_many_chunks_show_a_bar(capsys, monkeypatch):
    # their cost grows with the square of the chunks: --shards 1000 ran minutes, silent
    monkeypatch.setattr("paging.progress.showing", lambda show=None: show is None or show)
    patterns = {(0, 0, 0, 0, 1): 4, (1, 0, 0, 0, 0): 1}
    zp._pattern_means(patterns, TINY, True, {})               # 2 chunks a group: no bar
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(zp, "EXACT_BAR_CHUNKS", 2)
    out = zp._pattern_means(patterns, TINY, True, {})
    assert "Algorithm 1 schedules of the replayed patterns" in capsys.readouterr().err
    assert out["alg1_layer_ms"] == (4 * 6.0 + 0.0) / 5        # (the same numbers)


def test_replay_by_hand():
    # one layer of 3 experts, top-1: 0 0 1 0 2 1. F = perfect LFU of 1 slot hits at t=1 only;
    # F+C = LFU of 2 slots also hits t=3 (0 stays: count 3 > 1). Others miss.
    tr = from_routing(np.array([0, 0, 1, 0, 2, 1])[:, None, None], Layout(3, 1),
                      expand="groups")
    r = zp.replay(tr, (1, 1, 0, 0))
    assert r == {"patterns": {(0, 0, 0, 0, 1): 4, (1, 0, 0, 0, 0): 1, (0, 1, 0, 0, 0): 1},
                 "groups": 6, "nesting_violations": 0}


@pytest.mark.parametrize("call, message", [
    (lambda: zp.plan([[0.5, 0.25]], 1, 10, 2, FORMS, TINY), "holds no expert"),
    (lambda: zp.plan([[0.5, 0.25]], 1, 80, 2, FORMS, TINY, "FX"), "distinct letters"),
    (lambda: zp.plan([[0.5, 0.25]], 1, 80, 2, FORMS, TINY, delta=0.3), "1/m for an integer"),
    (lambda: zp.expected_makespan([0.5, 1.5], (1, 0, 0, 0), 1, TINY), r"q\[1\] must be a "
     "probability"),
    (lambda: zp.layer_selection_probabilities([[1.2, -0.2]], 1), r"f\[0\]\[0\] must be a "
     "probability"),
])
def test_bad_input(call, message):
    with pytest.raises(PagingError, match=message):
        call()


@needs_traces
def test_cli_json_on_mixtral(capsys):
    rc = main(["plan", MIXTRAL, "--model", "mixtral-8x7b", "--budget-gb", "20", "--json",
               "--no-exact"])
    rows = json.loads(capsys.readouterr().out)
    assert rc == 0 and len(rows) == 2
    r = rows[0]
    assert (r["k"], r["layers"], r["n"], r["hardware"], r["precision"]) == \
        (2, 32, 8, "pcie3", "bf16")
    assert r["plan"]["sizes"] == {"F": 0, "C": 1, "S": 2, "E": 0}
    assert r["plan"]["ratios_exact"] == {"F": "0", "C": "2/5", "S": "3/5", "E": "0"}
    assert r["baseline"]["sizes"] == {"F": 1, "C": 0, "S": 0, "E": 0}
    assert r["plan"]["predicted_layer_ms"] == pytest.approx(85.6798173981, rel=1e-9)
    assert r["plan"]["simulated"]["alg3_layer_ms"] == pytest.approx(86.4550912, rel=1e-9)
    assert r["baseline"]["predicted_layer_ms"] == pytest.approx(109.886104462, rel=1e-9)
    assert r["plan"]["simulated"]["nesting_violations"] == 0
    assert r["plan"]["simulated"]["groups"] == 2592
    assert "alg1_layer_ms" not in r["plan"]["simulated"]


def test_cli_verify_checks_every_replay_and_changes_no_number(capsys, monkeypatch):
    """`paging plan --verify`: every pool level's replay (`simulate`) recorded and verified;
    the same plan and times. A replay whose miss count disagrees with its run is exit 3."""
    import dataclasses
    import importlib

    argv = ["plan", "router:n=8,layers=32,tokens=40,k=2,seed=0", "--model", "mixtral-8x7b",
            "--budget-gb", "20", "--no-exact", "--json"]
    assert main(argv) == 0
    (plain,) = json.loads(capsys.readouterr().out)
    assert main(argv + ["--verify"]) == 0
    (checked,) = json.loads(capsys.readouterr().out)
    assert checked.pop("verified") is True and checked == plain
    sim = importlib.import_module("paging.simulate")
    real = sim._simulate
    monkeypatch.setattr(sim, "_simulate", lambda *a, **kw: dataclasses.replace(
        real(*a, **kw), misses=real(*a, **kw).misses + 1))
    assert main(argv) == 0  # (unchecked: the replay reads only the hit mask)
    capsys.readouterr()
    assert main(argv + ["--verify"]) == 3
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: a run failed its independent verification")


@pytest.mark.parametrize("budget, extra, message", [
    ("20", ["--rho", "0"], "rho must be a number in (0, 1]"),
    ("20", ["--threads", "0"], "L (decompression threads) must be an integer >= 1"),
    ("20", ["--precision", "int4"], "precision int4 has no such split"),
    ("20", ["--pools", "FQ"], "distinct letters among F, C, S, E"),
    ("20", ["--delta", "0.3"], "1/m for an integer m"),
    ("0", [], "--budget-gb must be a number of GB > 0"),
    # 1e9 B over 32 layers < one E-form expert (63,417,877 B) per layer; read after the trace
    pytest.param("1", [], "holds no expert", marks=needs_traces),
])
def test_cli_bad_input_exit_2_one_line(capsys, budget, extra, message):
    argv = ["plan", MIXTRAL, "--model", "mixtral-8x7b", "--budget-gb", budget, *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err


@needs_traces
def test_figure_quick(tmp_path):
    from experiments import common, fig_zipmoe

    csv_path = fig_zipmoe.compute(tmp_path, quick=True, progress=lambda m: None)
    rows = common.read_csv(csv_path)
    assert len(rows) == 8                   # 2 models x 2 budgets x 1 sequence x 2 variants
    mix = {(r["budget_gb"], r["variant"]): r for r in rows if r["model"] == "mixtral-8x7b"}
    assert mix[("20.000000", "plan")]["sizes"] == "0/1/0/4"
    assert mix[("20.000000", "plan")]["predicted_layer_ms"] == "89.928208"
    assert mix[("20.000000", "baseline")]["predicted_layer_ms"] == "109.886104"
    assert mix[("8.000000", "baseline")]["sizes"] == "0/0/0/0"
    paths = fig_zipmoe.plot(csv_path, tmp_path)
    assert [p.suffix for p in paths] == [".png", ".pdf"] and all(p.stat().st_size for p in paths)
    assert json.loads(common.params_path(csv_path).read_text())["quick"] is True


def test_plan_refuses_a_trace_of_another_top_k(capsys):
    """A trace whose groups all hold another number of experts than the model's top-K gave no
    hit pattern to average (a ZeroDivisionError traceback); it is one error line."""
    from paging.cli import main

    for k in (7, 9):
        rc = main(["plan", f"router:n=32,layers=24,tokens=10,k={k},seed=0", "--model",
                   "granite-3.0-1b-a400m", "--budget-gb", "1", "--no-exact"])
        out, err = capsys.readouterr()
        assert rc == 2 and out == "" and err.count("\n") == 1, err
        assert f"routes {k} experts a token and layer" in err and "top-8" in err
