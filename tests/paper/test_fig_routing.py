"""experiments/fig_routing (quick): its CSV agrees with runs made here, standard routing keeps
all the mass, Belady is below every standard-routing cache, and routing lowers misses."""

from __future__ import annotations

import pytest

from experiments import common, fig_routing
from paging import simulate
from paging.io import load


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    out = tmp_path_factory.mktemp("fig_routing")
    csv_path = fig_routing.compute(out, quick=True, progress=lambda *_: None)
    assert (out / "fig_routing.json").exists()
    fig_routing.plot(csv_path, out)
    assert (out / "fig_routing.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return common.read_csv(csv_path)


def test_standard_rows_are_todays_runs(rows):
    synth = [r for r in rows if r["source"].startswith("router:") and r["kind"] == "pareto"]
    assert synth
    traces = {s: load(s, expand="groups")[0] for s in {r["source"] for r in synth}}
    for r in synth:
        if r["method"] == "standard":
            tr = traces[r["source"]]
            assert int(r["misses"]) == simulate(tr, r["policy"], int(r["k"])).misses
            assert float(r["retained_mass"]) == 1.0 and float(r["kl"]) == 0.0


def test_belady_and_routing_levels(rows):
    for panel in {int(r["panel"]) for r in rows}:
        pr = [r for r in rows if int(r["panel"]) == panel and r["kind"] == "pareto"]
        opt = next(int(r["misses"]) for r in pr if r["policy"] == "belady")
        std = [int(r["misses"]) for r in pr if r["method"] == "standard"
               and r["policy"] != "belady"]
        assert opt <= min(std)
        # every routed row keeps at most the original mass and pruning loses the most
        assert all(float(r["retained_mass"]) <= 1.0 + 1e-12 for r in pr
                   if r["policy"] != "opt-flex")


def test_flex_opt_line(rows):
    """The routing-flexible OPT line (j=1, upper bound): a feasible routing's Belady count, so
    at most Belady on the original requests; recomputed here; the exact optimum (ILP) is at or
    below it; and no online routing with the same allowed sets (top-1 kept: every method but
    pruning and max-rank j=0) beats the exact optimum."""
    from paging.offline.routing_flex import opt_routing_flex

    for panel in {int(r["panel"]) for r in rows if r["kind"] == "pareto"}:
        pr = [r for r in rows if int(r["panel"]) == panel and r["kind"] == "pareto"]
        (flex,) = [r for r in pr if r["policy"] == "opt-flex"]
        opt = next(int(r["misses"]) for r in pr if r["policy"] == "belady")
        assert int(flex["misses"]) <= opt
        if not flex["source"].startswith("router:"):
            continue
        tr = load(flex["source"], expand="groups")[0]
        k = int(flex["k"])
        assert opt_routing_flex(tr, k, "j=1", method="upper").misses == int(flex["misses"])
        exact = opt_routing_flex(tr, k, "j=1", method="ilp").misses
        assert exact <= int(flex["misses"])
        same_sets = [int(r["misses"]) for r in pr if r["policy"] not in ("belady", "opt-flex")
                     and r["method"] != "pruning" and r["param"] != "j=0"]
        assert same_sets and exact <= min(same_sets)
