"""Weighted offline optimum (paging.offline.flow, sizes, weighted; paging.io.weights; the opt
command): hand-checked instances, an exhaustive search over every cache schedule on tiny traces,
and cross-checks flow == ILP == brute force, flow(unit costs) == Belady, LP <= ILP,
FOO-L <= ILP <= FOO-U."""

from __future__ import annotations

import argparse
import json
import math
from itertools import combinations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from strategies import group_exceeds_its_partition, page_weights, round_traces, topk_traces

from paging.cli import main
from paging.errors import PagingError
from paging.generators import zipf
from paging.io.weights import read_weights
from paging.layout import Layout
from paging.offline import intervals
from paging.offline.flow import min_cost_flow, quantise
from paging.offline.weighted import opt_weighted
from paging.simulate import simulate
from paging.trace import Trace, from_pages, from_routing
from paging.weights import as_sizes


def brute_force(trace: Trace, costs, sizes, cap: int, dist: bool, by_bytes: bool) -> float:
    """Exhaustive search over every schedule: after each step the partition holds any subset of
    (what it held) ∪ (the step's group) that contains the group's cacheable pages and fits;
    a request costs w(p) unless its page was held. Independent of the interval model."""
    lay = trace.layout
    caps = lay.dist_shares(cap) if dist else [cap]
    total = 0.0
    for z, c in enumerate(caps):
        sel = [i for i in range(len(trace)) if not dist or trace.pages[i] // lay.n_experts == z]
        size = {int(p): (int(sizes[p]) if by_bytes else 1) for p in trace.pages[sel]}
        steps: dict[int, list[int]] = {}
        for i in sel:
            steps.setdefault(int(trace.steps[i]), []).append(int(trace.pages[i]))
        best = {frozenset(): 0.0}
        for group in steps.values():
            fit = [p for p in group if size[p] <= c]
            bypass = math.fsum(costs[p] for p in group if size[p] > c)
            nxt: dict[frozenset, float] = {}
            for held, v in best.items():
                fetch = math.fsum(costs[p] for p in fit if p not in held)
                pool = sorted(held - set(fit))
                for r in range(len(pool) + 1):
                    for extra in combinations(pool, r):
                        new = frozenset(fit) | frozenset(extra)
                        if sum(size[p] for p in new) <= c:
                            val = v + fetch + bypass
                            if val < nxt.get(new, math.inf):
                                nxt[new] = val
            if not nxt:
                raise PagingError("group does not fit")
            best = nxt
        total += min(best.values())
    return total


# ---- hand-checked instances ---------------------------------------------------------------

def test_expensive_page_is_kept():
    t = from_pages([0, 1, 2, 0, 1, 2], Layout(3, 1))
    # k = 2. w = (5, 1, 1): compulsory 5+1+1 = 7; keep 0 over steps 1-2 (a hit at step 3);
    # then 1 misses at step 4 (step 2 holds 2 and 0) and 2 hits at step 5: OPT = 7 + 1 = 8.
    # w = (1, 5, 1): compulsory 7; keep 1 over steps 2-3 (a hit at step 4); 0 misses at step 3
    # and 2 misses at step 5 (step 3 would hold 0, 1, 2): OPT = 7 + 1 + 1 = 9 (keeping 0
    # instead costs 7 + 5 = 12).
    for method in ("flow", "ilp"):
        assert opt_weighted(t, k=2, costs=[5, 1, 1], method=method).cost == 8.0
        assert opt_weighted(t, k=2, costs=[1, 5, 1], method=method).cost == 9.0
    assert opt_weighted(t, k=2).cost == simulate(t, "belady", 2).misses == 4


def test_variable_sizes_by_hand():
    # budget 4 bytes; sizes a=0:3, b=1:1, c=2:1; sequence a b c a b c, unit costs.
    # a occupies 3 of 4 bytes at its steps; b and c (1 byte each) cannot both stay with a.
    # Compulsory 3. Keep a (steps 1,2: a + b = 4 ok, a + c = 4 ok): a hits; b at step 4:
    # spans 2,3: step 2 holds c + a (4) + b = 5 > 4: miss; c at 5 spans 3,4: a(3) + b(1)... step 3
    # holds a (3) + c (1) = 4 ok, step 4 holds b (1) + c (1) = 2 ok -> hit. Total 3 + 1 = 4.
    t = from_pages([0, 1, 2, 0, 1, 2], Layout(3, 1))
    sizes = [3, 1, 1]
    r = opt_weighted(t, budget=4, sizes=sizes, method="ilp")
    assert (r.cost, r.misses, r.exact) == (4.0, 4, True)
    assert r.hit_mask.tolist() == [False, False, False, True, False, True]
    assert r.bytes_fetched == 3 + 1 + 1 + 1
    assert brute_force(t, np.ones(3), np.array(sizes), 4, False, True) == 4.0
    # budget 2: page 0 (3 bytes) never fits and is bypassed (2 misses); b, c fit together
    r2 = opt_weighted(t, budget=2, sizes=sizes, method="ilp")
    assert (r2.cost, r2.misses) == (4.0, 4)   # 0 twice, b and c compulsory, then hits
    # budget 3 with uniform-size partitions? no: sizes differ -> auto picks the ILP
    assert opt_weighted(t, budget=4, sizes=sizes).method == "ilp"


def test_sizes_in_bytes():
    # test_variable_sizes_by_hand with pages of a Mixtral expert (352,321,536 bytes) and of
    # 1e15 bytes: the optimum is still 4. The LP's lower bound was 4.33 (costs per byte below
    # HiGHS's tolerance) and, at 1e15, the ILP's "exact" optimum 5.
    t = from_pages([0, 1, 2, 0, 1, 2], Layout(3, 1))
    for unit in (352_321_536, 10**15):
        for method in ("ilp", "lp", "foo"):
            r = opt_weighted(t, budget=4 * unit, sizes=[3 * unit, unit, unit], method=method)
            assert r.lower <= 4.0 <= r.cost and (method != "ilp" or r.cost == 4.0)
    # gcd 1, sizes near 1e9: pages 0 and 1 together pass the budget by 4 bytes, so the last
    # request (page 1, kept over two requests of page 0) misses: 3 + 1 + 2 compulsory + 3 = 9.
    # The ILP kept it (6, "exact"); the ILP and LP refuse such sizes, FOO is exact in integers.
    t = from_pages([1, 1, 1, 2, 1, 0, 0, 1], Layout(3, 1))
    sized = dict(budget=7_000_000_005, sizes=[3_000_000_005, 4_000_000_004, 999_999_997],
                 costs=[2.0, 3.0, 1.0])
    for method in ("ilp", "lp"):
        with pytest.raises(PagingError, match=f"--method {method}: the page sizes reach "
                           "4,000,000,004 units of their greatest common divisor"):
            opt_weighted(t, method=method, **sized)
    foo = opt_weighted(t, method="foo", **sized)
    assert foo.lower <= 9.0 <= foo.upper
    assert brute_force(t, np.array(sized["costs"]), np.array(sized["sizes"]), sized["budget"],
                       False, True) == 9.0


def test_solvers_without_progress_show_the_time_elapsed(capsys, monkeypatch):
    # a flow reports no progress and took minutes past 3e5 requests with nothing on the terminal
    monkeypatch.setattr("paging.progress.TICK_DELAY", 0)
    t = from_pages([0, 1, 2, 0, 1, 2], Layout(3, 1))
    for method in ("flow", "lp", "foo"):
        opt_weighted(t, k=2, costs=[5, 1, 1], method=method, progress=True)
    err = capsys.readouterr().err
    for what in ("min-cost flow (ortools)", "LP relaxation (HiGHS)", "FOO's flow (OR-Tools)"):
        assert f"{what}: 6 requests, 3 intervals" in err
    opt_weighted(t, k=2, costs=[5, 1, 1], method="flow")   # (the default: silent)
    assert capsys.readouterr().err == ""


def test_uniform_sizes_reduce_to_pages():
    t = from_pages([0, 1, 2, 0, 1, 2], Layout(3, 1))
    # every page 10 bytes, budget 25 bytes = 2 pages: same as k = 2
    r = opt_weighted(t, budget=25, sizes=[10, 10, 10], costs=[5, 1, 1])
    assert (r.method, r.cost, r.bytes_fetched) == ("flow", 8.0, 40)


def test_dist_and_groups():
    # Layout(3, 2) rounds: layer 0 pages 0,1,2, layer 1 pages 3,4,5; k = 3 -> shares (2, 1)
    t = from_pages([0, 3, 1, 4, 2, 3, 0, 4, 1, 3, 2, 4], Layout(3, 2))
    assert opt_weighted(t, k=3, dist=True).cost == simulate(t, "belady-dist", 3).misses == 10
    # groups: one layer of 4 experts, groups {0,1}, {2,3}, {0,1}; k = 3 keeps one of 0, 1:
    # with w(0) = 4 keep 0: cost 4+1+1+1 (compulsory) + 1 (page 1 again) = 8
    g = from_routing([[[0, 1]], [[2, 3]], [[0, 1]]], Layout(4, 1), expand="groups")
    assert opt_weighted(g, k=3, costs=[4, 1, 1, 1]).cost == 8.0
    assert opt_weighted(g, k=3, costs=[4, 1, 1, 1], method="ilp").cost == 8.0
    with pytest.raises(PagingError, match="group of 2 pages"):
        opt_weighted(g, k=1, costs=[4, 1, 1, 1])
    with pytest.raises(PagingError, match="group of 4 bytes"):
        opt_weighted(g, budget=3, sizes=[2, 2, 1, 1], method="ilp")


def test_non_dyadic_costs_are_bounded_and_reported_exactly():
    t = zipf(4, 2, 60, seed=2)
    costs = np.full(8, 0.1)
    r = opt_weighted(t, k=3, costs=costs)
    assert r.lower <= r.cost == r.upper
    assert r.cost == math.fsum([0.1] * r.misses)
    assert r.upper - r.lower < 1e-6
    q, scale, lossless = quantise(np.array([1.0, 10.0]))
    assert (q.tolist(), scale, lossless) == ([1, 10], 1.0, True)
    q, scale, lossless = quantise(np.array([0.5, 1.25]))
    assert lossless and scale == 2.0 ** 30 and q.tolist() == [2 ** 29, 5 * 2 ** 28]


def test_validation_messages():
    t = from_pages([0, 1, 2, 0], Layout(3, 1))
    cases = [
        (dict(k=2, costs=[1, 1]), r"costs: expected 3 costs \(one per page id\), got 2"),
        (dict(k=2, costs=[1, float("nan"), 1]), "costs: entry 1 is nan; expected a finite"),
        (dict(k=2, costs=[1, -1, 1]), "costs: entry 1 is -1.0; expected a finite number >= 0"),
        (dict(k=2, sizes=[1, 0, 1]), "sizes: entry 1 is 0; expected an integer number of "
                                     "bytes >= 1"),
        (dict(k=2, sizes=[1, 1.5, 1]), "sizes: entry 1 is 1.5"),
        (dict(), "exactly one of k"),
        (dict(k=2, budget=3), "exactly one of k"),
        (dict(budget=0, sizes=[1, 1, 1]), "budget must be an integer >= 1"),
        (dict(budget=2, sizes=[3, 4, 5]), "smaller than every requested page .the smallest "
                                          "is 3 bytes"),
        (dict(k=2, method="belady"), "method must be one of"),
        (dict(budget=5, sizes=[1, 2, 3], method="flow"), "method flow needs one page size"),
    ]
    for kwargs, msg in cases:
        with pytest.raises(PagingError, match=msg):
            opt_weighted(t, **kwargs)
    # a budget below the largest page is fine: page 2 (5 bytes) is bypassed twice? once here
    r = opt_weighted(t, budget=4, sizes=[1, 2, 5], method="ilp")
    assert (r.cost, r.misses) == (3.0, 3)


def test_empty_trace():
    e = from_pages([], Layout(2, 2))
    for method in ("flow", "ilp", "lp", "foo"):
        r = opt_weighted(e, k=2, method=method)
        assert (r.cost, r.misses, r.lower, r.upper) == (0.0, 0, 0.0, 0.0)


# ---- properties -----------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(round_traces(max_rounds=6), st.data())
def test_flow_unit_costs_equal_belady(trace, data):
    k = data.draw(st.integers(1, trace.layout.n_pages + 1))
    dist = data.draw(st.booleans())
    r = opt_weighted(trace, k=k, dist=dist, method="flow")
    assert r.exact and r.cost == simulate(trace, "belady-dist" if dist else "belady", k).misses


@settings(max_examples=40, deadline=None)
@given(st.one_of(round_traces(max_rounds=5), topk_traces(expand="groups", max_tokens=4)),
       st.data())
def test_flow_equals_ilp_and_solvers_agree(trace, data):
    costs, _ = data.draw(page_weights(trace.layout.n_pages))
    k = data.draw(st.integers(1, trace.layout.n_pages + 1))
    dist = data.draw(st.booleans())
    if group_exceeds_its_partition(trace, k, dist):  # refused by design, by every method
        for method in ("flow", "ilp"):
            with pytest.raises(PagingError, match="every group to fit in its partition"):
                opt_weighted(trace, k=k, costs=costs, dist=dist, method=method)
        return
    flow = opt_weighted(trace, k=k, costs=costs, dist=dist, method="flow")
    ilp = opt_weighted(trace, k=k, costs=costs, dist=dist, method="ilp")
    assert flow.exact and flow.cost == ilp.cost
    model = intervals.build(trace, intervals.partition_capacities(trace, k, dist), dist=dist,
                            costs=costs, sizes=None)
    for solver in ("networkx", "highs"):
        assert min_cost_flow(model, costs, trace.pages, solver).cost == flow.cost
    if len(trace) <= 8:
        assert flow.cost == brute_force(trace, costs, None, k, dist, False)


@settings(max_examples=40, deadline=None)
@given(st.one_of(round_traces(max_rounds=4), topk_traces(expand="groups", max_tokens=3)),
       st.data())
def test_sizes_ilp_bounds_and_brute_force(trace, data):
    costs, sizes = data.draw(page_weights(trace.layout.n_pages))
    budget = data.draw(st.integers(1, 12))
    dist = data.draw(st.booleans())
    assume(len(trace) == 0 or budget >= sizes[np.unique(trace.pages)].min())
    if group_exceeds_its_partition(trace, budget, dist, sizes):  # refused by design
        for method in ("ilp", "lp", "foo"):
            with pytest.raises(PagingError, match="every group to fit in its partition"):
                opt_weighted(trace, budget=budget, costs=costs, sizes=sizes, dist=dist,
                             method=method)
        return
    ilp = opt_weighted(trace, budget=budget, costs=costs, sizes=sizes, dist=dist,
                       method="ilp")
    lp = opt_weighted(trace, budget=budget, costs=costs, sizes=sizes, dist=dist, method="lp")
    foo = opt_weighted(trace, budget=budget, costs=costs, sizes=sizes, dist=dist, method="foo")
    tol = 1e-6 * max(1.0, ilp.cost)
    assert lp.lower <= ilp.cost + tol and ilp.cost <= lp.upper + tol
    assert foo.lower <= ilp.cost + tol <= foo.upper + 2 * tol
    if len(trace) <= 8:
        assert math.isclose(ilp.cost, brute_force(trace, costs, sizes, budget, dist, True),
                            abs_tol=1e-9)


@settings(max_examples=30, deadline=None)
@given(round_traces(max_rounds=5), st.data())
def test_sized_ilp_with_unit_sizes_equals_flow(trace, data):
    costs, _ = data.draw(page_weights(trace.layout.n_pages))
    budget = data.draw(st.integers(1, trace.layout.n_pages + 1))
    ones = np.ones(trace.layout.n_pages, dtype=np.int64)
    a = opt_weighted(trace, budget=budget, sizes=ones, costs=costs, method="ilp")
    b = opt_weighted(trace, k=budget, costs=costs, method="flow")
    assert a.cost == b.cost
    # and the unit ILP of paging.offline.ilp gives the same as the sized ILP with unit costs
    c = opt_weighted(trace, budget=budget, sizes=ones, method="ilp")
    assert c.cost == opt_weighted(trace, k=budget, method="ilp").cost


def test_a_long_trace_fast_solver_matches_highs():
    t = zipf(8, 8, 500, seed=0)  # 4000 requests
    costs = np.where(np.random.default_rng(0).random(64) < 0.5, 1.0, 10.0)
    model = intervals.build(t, [16], dist=False, costs=costs, sizes=None)
    a = min_cost_flow(model, costs, t.pages, "ortools")
    b = min_cost_flow(model, costs, t.pages, "highs")
    assert a.exact and a.cost == b.cost


# ---- weight files ---------------------------------------------------------------------------

def test_read_weights(tmp_path):
    good = tmp_path / "c.json"
    good.write_text("[1, 2.5, 0]")
    assert read_weights(good, 3, "costs").tolist() == [1.0, 2.5, 0.0]
    np.save(tmp_path / "s.npy", np.array([1, 2, 3]))
    assert read_weights(tmp_path / "s.npy", 3, "sizes").tolist() == [1, 2, 3]
    bad = {
        "[1, 2]": ("costs", "expected 3 costs .one per page id., got 2"),
        "[1, NaN, 2]": ("costs", "entry 1 is nan; expected a finite number >= 0"),
        "[1, -2, 2]": ("costs", "entry 1 is -2.0; expected a finite number >= 0"),
        '[1, "a", 2]': ("costs", 'entry 1 is "a"'),
        "[1, 2.5, 2]": ("sizes", "entry 1 is 2.5; expected an integer number of bytes >= 1"),
        "[1, 0, 2]": ("sizes", "entry 1 is 0"),
        '{"a": 1}': ("sizes", "expected a JSON list of 3 integers >= 1 .bytes., got dict"),
        "[1, 2,": ("costs", "not valid JSON"),
        # beyond int64: the cast wrapped to -2^63 and named that (a warning first)
        "[1, 1e30, 2]": ("sizes", "entry 1 is 1e.30; expected an integer number of bytes from "
                                  "1 to 2.63 - 1"),
        f"[1, {2**63}, 2]": ("sizes", f"entry 1 is {2**63}; expected"),
        f"[1, {2**70}, 2]": ("sizes", f"entry 1 is {2**70}; expected"),
    }
    for text, (kind, msg) in bad.items():
        f = tmp_path / "bad.json"
        f.write_text(text)
        with pytest.raises(PagingError, match=msg) as e:
            read_weights(f, 3, kind)
        assert e.value.file == str(f)
    with pytest.raises(PagingError, match="no such costs file"):
        read_weights(tmp_path / "missing.json", 3, "costs")
    with pytest.raises(PagingError, match="^.*: not a regular file; expected a JSON list"):
        read_weights(tmp_path, 3, "sizes")  # (a directory was "no such sizes file")
    np.save(tmp_path / "u.npy", np.array([1, 2**64 - 1, 1], dtype=np.uint64))
    with pytest.raises(PagingError, match=f"entry 1 is {2**64 - 1}; expected"):
        read_weights(tmp_path / "u.npy", 3, "sizes")
    with pytest.raises(PagingError, match="sizes: entry 1 is 18446744073709551615; expected"):
        as_sizes(np.array([1, 2**64 - 1, 1], dtype=np.uint64), 3)  # (the array API alike)
    with pytest.raises(PagingError, match=f"sizes: entry 1 is {2**64}; expected an integer"):
        as_sizes([1, 2**64, 1], 3)  # (a list beyond uint64: numpy's object array)
    np.save(tmp_path / "short.npy", np.array([1.0, 2.0]))
    with pytest.raises(PagingError, match=r"got an array of shape \(2,\)"):
        read_weights(tmp_path / "short.npy", 3, "costs")


# ---- the command ----------------------------------------------------------------------------

SPEC = "zipf:n=4,layers=2,tokens=30,seed=0"


def run_json(capsys, *argv):
    assert main(["opt", SPEC, *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_unit_rows_unchanged_plus_cost(capsys):
    rows = run_json(capsys, "--k", "3")
    assert set(rows[0]) == {"trace", "policy", "method", "k", "dist", "requests", "misses",
                            "hits", "miss_ratio", "cost"}
    assert rows[0]["cost"] == rows[0]["misses"]
    flow = run_json(capsys, "--k", "3", "--method", "flow")
    assert flow[0]["cost"] == rows[0]["misses"]


def test_cli_costs_and_sizes(tmp_path, capsys):
    c, s = tmp_path / "c.json", tmp_path / "s.npy"
    c.write_text(json.dumps([1, 10] * 4))
    np.save(s, np.array([2] * 8))
    rows = run_json(capsys, "--k", "3", "--costs", str(c))
    assert rows[0]["method"] == "flow" and "upper" not in rows[0]
    assert rows[0]["exact"] and rows[0]["lower"] == rows[0]["cost"]  # (integer costs: lossless)
    ilp = run_json(capsys, "--k", "3", "--costs", str(c), "--method", "ilp")
    assert ilp[0]["cost"] == rows[0]["cost"]
    sized = run_json(capsys, "--budget-gb", "6e-9", "--costs", str(c), "--sizes", str(s))
    r = sized[0]
    assert r["budget_bytes"] == 6 and r["cost"] == rows[0]["cost"]   # 6 bytes = 3 pages of 2
    assert r["exact"] and r["lower"] == r["upper"] == r["cost"]
    assert r["bytes_fetched"] == 2 * r["misses"]
    foo = run_json(capsys, "--budget-gb", "6e-9", "--sizes", str(s), "--method", "foo")
    assert foo[0]["lower"] <= foo[0]["upper"]


def test_cli_budget_is_rounded_down_as_its_help_says(tmp_path, capsys):
    """The help said "round(G * 1e9)" while the budget is budget_bytes's, rounded down: 5.9e-9
    GB is 5 bytes (2 pages of 2), not 6."""
    from paging.commands.opt import add_parser

    s = tmp_path / "s.npy"
    np.save(s, np.array([2] * 8))
    (r,) = run_json(capsys, "--budget-gb", "5.9e-9", "--sizes", str(s))
    assert r["budget_bytes"] == 5
    parser = argparse.ArgumentParser(prog="paging")
    add_parser(parser.add_subparsers())
    with pytest.raises(SystemExit):
        parser.parse_args(["opt", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "1 GB = 1e9 bytes, rounded down to whole bytes" in text and "round(G" not in text


def test_cli_sizes_that_vary_take_the_ilp_by_default(tmp_path, capsys):
    """A review: with sizes that vary the default method, flow, refused them ("use ilp, lp or
    foo"); the default is opt_weighted's auto now, which names the method it used."""
    s = tmp_path / "s.json"
    s.write_text(json.dumps([1, 2, 3, 1, 2, 3, 1, 2]))
    (r,) = run_json(capsys, "--budget-gb", "4e-9", "--sizes", str(s))
    (ilp,) = run_json(capsys, "--budget-gb", "4e-9", "--sizes", str(s), "--method", "ilp")
    assert r["method"] == "ilp" and r["exact"] and r["cost"] == ilp["cost"]
    assert main(["opt", SPEC, "--budget-gb", "4e-9", "--sizes", str(s), "--method", "flow"]) == 2
    assert "method flow needs one page size per partition" in capsys.readouterr().err


@pytest.mark.parametrize("argv, msg", [
    (["--k", "3", "--costs", "MISSING.json"], "error: MISSING.json: no such costs file"),
    (["--k", "3", "--costs", "{c}", "--method", "belady"], "error: --method belady is optimal"),
    (["--k", "3", "--budget-gb", "1"], "error: give exactly one of --k"),
    ([], "error: give exactly one of --k"),
    (["--budget-gb", "1"], "error: --budget-gb needs --sizes"),
    (["--k", "3", "--costs", "{bad}"], "error: {bad}: entry 1 is nan"),
])
def test_cli_bad_input(tmp_path, capsys, argv, msg):
    c, bad = tmp_path / "c.json", tmp_path / "bad.json"
    c.write_text(json.dumps([1] * 8))
    bad.write_text("[1, NaN, 1, 1, 1, 1, 1, 1]")
    argv = [a.format(c=c, bad=bad) for a in argv]
    assert main(["opt", SPEC, *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(msg.format(bad=bad)) and err.count("\n") == 1
    assert "Traceback" not in err


@pytest.mark.parametrize("limit", [float("nan"), -1.0, 0, float("inf")])
def test_every_cbc_model_refuses_a_time_limit_that_is_not_finite_and_positive(limit):
    """solve_cbc, the one entry of every pulp model, checks the limit: the sized ILP and the
    routing-flexible program passed NaN to CBC ("not solved within nan s (CBC: Infeasible)")
    and an infinite limit to an elapsed-time bar tqdm cannot draw."""
    from paging.offline.routing_flex import opt_routing_flex, parse_flex

    t = from_pages([0, 1, 2, 0, 1, 2], Layout(3, 1))
    with pytest.raises(PagingError, match="time_limit must be a finite number of seconds > 0"):
        opt_weighted(t, k=2, costs=[5.0, 1.0, 1.0], method="ilp", time_limit=limit)
    with pytest.raises(PagingError, match="time_limit must be a finite number of seconds > 0"):
        opt_weighted(t, budget=3, sizes=[1, 2, 2], method="ilp", time_limit=limit)
    r = from_routing([[[0, 1]], [[2, 1]], [[0, 2]]], Layout(3, 1), scores=[[[.6, .4]]] * 3)
    with pytest.raises(PagingError, match="time_limit must be a finite number of seconds > 0"):
        opt_routing_flex(r, 2, parse_flex("j=1"), method="ilp", time_limit=limit)


def test_a_weighted_ilp_out_of_time_suggests_a_method_that_takes_costs(monkeypatch):
    """The sized ILP (costs or sizes) out of time said "raise the time limit or use --method
    belady", a method paging opt refuses with --costs/--sizes/--budget-gb; it now names the
    bounds, lp and foo. (CBC's result is replaced by "Not Solved": no clock involved.)"""
    import pulp

    def not_solved(self, solver=None, **kw):
        self.status, self.sol_status = pulp.LpStatusNotSolved, pulp.LpSolutionNoSolutionFound
        return self.status

    monkeypatch.setattr(pulp.LpProblem, "solve", not_solved)
    t = from_pages([0, 1, 2, 0, 1, 2], Layout(3, 1))
    for kw in (dict(k=2, costs=[5.0, 1.0, 1.0]), dict(budget=3, sizes=[1, 2, 2])):
        with pytest.raises(PagingError) as e:
            opt_weighted(t, method="ilp", **kw)
        assert "not solved to optimality" in str(e.value)
        assert "--method lp or foo" in str(e.value) and "belady" not in str(e.value)


def test_solvers_without_progress_show_the_time_they_are_expected_to_take(capsys, monkeypatch):
    """The flow, LP and FOO solves report no progress and grow about quadratically (FOO took 65 s
    at 2·10^5 requests, about half an hour expected at 10^6): their ticker showed the seconds
    elapsed only, with no estimate. It now names the time expected from the request count:
    3·10^5 requests, OR-Tools' 1e-9 s per squared request -> 90 s; FOO 2e-9 -> 180 s; HiGHS
    5.5e-9 -> 495 s; networkx 1e-7 -> 9,000 s; a small model says 1 s."""
    from types import SimpleNamespace

    from paging.offline.weighted import _solving

    monkeypatch.setattr("paging.progress.TICK_DELAY", 0)
    big = SimpleNamespace(n_requests=300_000, n_intervals=250_000)
    for solver, seconds in (("ortools", "90"), ("foo", "180"), ("highs", "495"),
                            ("networkx", "9,000")):
        with _solving(big, "solver", True, solver):
            pass
        err = capsys.readouterr().err
        assert (f"solver: 300,000 requests, 250,000 intervals (no progress reported; expected "
                f"about {seconds} s, quadratic in the requests)") in err, err
    t = from_pages([0, 1, 2, 0, 1, 2], Layout(3, 1))
    for method in ("flow", "lp", "foo"):
        opt_weighted(t, k=2, costs=[5, 1, 1], method=method, progress=True)
        assert "expected about 1 s" in capsys.readouterr().err
