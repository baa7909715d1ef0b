"""Miss curves (paging.mrc): every curve equals per-k simulation in the reference loop.

The one-pass curves (stack distances, Mattson's priority stack, per-layer DIST sums) share no
code with the reference simulator, so agreeing with it for every k on random traces checks them
independently; a few curves are also checked by hand.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import round_traces, scored_for, topk_traces

from paging import cli
from paging.commands.mrc import curve_report
from paging.layout import Layout
from paging.mrc import curve_method, miss_curve, miss_curves
from paging.policies import LRU, POLICY_NAMES, register
from paging.predict import Predictor
from paging.simulate import simulate
from paging.trace import from_pages, from_routing

ONE_PASS = ["lru", "llru", "llru-latest", "lfu", "fld", "fld-cyclic", "least-stale",
            "least-stale-upcoming",
            "least-stale-layer", "belady"]


def per_k(trace, name, seed=0):
    return [simulate(trace, name, k, seed=seed, engine="reference").misses
            for k in range(1, trace.layout.n_pages + 1)]


# -- hand-checked curves ---------------------------------------------------------------------
# Belady's anomaly string 1,2,3,4,1,2,5,1,2,3,4,5 (pages 0..4 of one layer of 6 experts)
ANOMALY = from_pages(np.array([1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5]) - 1, Layout(6, 1))


def test_lru_curve_by_hand():
    # k=3: only the 1, 2 after 5 hit (10 misses); k=4: 1, 2 hit twice each (8); k>=5: cold only
    assert miss_curve(ANOMALY, "lru").tolist() == [12, 12, 10, 8, 5, 5]


def test_belady_curve_by_hand():
    # k=2: hits on 1 (t5, t8) and 5 (t12) -> 9; k=3: the textbook 7; k=4: 6
    assert miss_curve(ANOMALY, "belady").tolist() == [12, 9, 7, 6, 5, 5]


def test_fifo_curve_shows_beladys_anomaly():
    curve = miss_curve(ANOMALY, "fifo")
    assert curve.tolist() == [12, 12, 9, 10, 5, 5]  # more misses with k=4 than with k=3
    assert curve_method(ANOMALY, "fifo") == "per-k"


def test_curves_that_are_not_stack_curves_are_not_monotonized():
    """FIFO's anomaly survives every route a non-stack curve takes: one run per k, in memory
    and streamed, and FIFO-DIST's runs of each layer per share, in memory and streamed in
    chunks that cut rounds. Two layers of 6 experts: layer 0 requests the anomaly string,
    layer 1 one expert throughout (1 miss with a share, 12 without). FIFO-DIST's shares are
    (⌈k/2⌉, ⌊k/2⌋), layer 0's FIFO misses 12, 12, 12, 9, 10, 5, 5 with 0..6 slots: k = 5, 6
    miss 9 + 1 = 10 and k = 7, 8 miss 10 + 1 = 11."""
    from paging.stream import miss_curve_stream

    pages = ANOMALY.pages
    (m,) = miss_curve_stream([(pages[i:i + 5], None) for i in range(0, 12, 5)], "fifo",
                             layout=ANOMALY.layout)
    assert m.tolist() == [12, 12, 9, 10, 5, 5]
    lay = Layout(6, 2)
    both = np.ravel(np.column_stack([pages, np.full(12, 6)]))  # layer 1: page 6 throughout
    want = [24, 13, 13, 13, 10, 10, 11, 11, 6, 6, 6, 6]
    assert miss_curve(from_pages(both, lay), "fifo-dist").tolist() == want
    (m,) = miss_curve_stream([(both[i:i + 3], None) for i in range(0, 24, 3)], "fifo-dist",
                             layout=lay)
    assert m.tolist() == want


def test_layer_aware_policies_are_lru_on_one_layer():
    for name in ("llru", "fld", "fld-cyclic", "least-stale", "least-stale-upcoming",
                 "least-stale-layer"):
        assert miss_curve(ANOMALY, name).tolist() == [12, 12, 10, 8, 5, 5], name


def test_lfu_curve_by_hand():
    # k=4: 1..4 cold; 5 evicts 3 (count 1, older than 4); 3 evicts 4; 4 evicts 5; 5 evicts 3
    # (count 2, older than 4) -> 8. k=2: equal counts fall back to LRU and every request but
    # the 2 at t9 misses -> 11.
    assert miss_curve(ANOMALY, "lfu").tolist() == [12, 11, 10, 8, 5, 5]


def test_dist_curve_sums_layer_curves():
    """Two layers, cyclic over 3 experts each; LRU-DIST with share s per layer misses every
    request while s < 3 and only the 3 cold misses per layer once s = 3."""
    lay = Layout(3, 2)
    pages = np.array([0, 3, 1, 4, 2, 5] * 4)
    tr = from_pages(pages, lay)
    # shares: k=1 -> (1,0), k=2 -> (1,1), ..., k=5 -> (3,2), k=6 -> (3,3)
    assert miss_curve(tr, "lru-dist").tolist() == [24, 24, 24, 24, 15, 6]
    assert curve_method(tr, "lru-dist") == "per-layer"


def test_methods():
    tr = from_pages([0, 3, 1, 4], Layout(3, 2))
    for name in ONE_PASS:
        assert curve_method(tr, name) == "stack"
        assert curve_method(tr, f"{name}-dist") == "per-layer"
    for name in ("fifo", "fwf", "marking", "marking-dist"):
        assert curve_method(tr, name) == "per-k"
    grp = from_routing(np.array([[[0, 1], [2, 0]]]), Layout(3, 2), expand="groups")
    assert all(curve_method(grp, name) == "per-k" for name in POLICY_NAMES)


# -- every curve equals per-k simulation ---------------------------------------------------------
@pytest.mark.parametrize("name", POLICY_NAMES)
@given(trace=round_traces(max_rounds=16), seed=st.integers(0, 1000))
def test_curve_equals_per_k_rounds(name, trace, seed):
    trace = scored_for(name, trace)
    curve = miss_curve(trace, name, seed=seed)
    assert curve.dtype == np.int64 and curve.shape == (trace.layout.n_pages,)
    assert curve.tolist() == per_k(trace, name, seed)


@pytest.mark.parametrize("name", POLICY_NAMES)
@given(trace=topk_traces(), seed=st.integers(0, 1000))
def test_curve_equals_per_k_topk(name, trace, seed):
    trace = scored_for(name, trace)
    assert miss_curve(trace, name, seed=seed).tolist() == per_k(trace, name, seed)


@pytest.mark.parametrize("name", POLICY_NAMES)
@given(trace=st.one_of(round_traces(max_rounds=10), topk_traces()), seed=st.integers(0, 3))
def test_curve_ends_from_the_trace_alone(name, trace, seed):
    """The two ends of every curve, from the trace alone (not from a simulation): at k = 1 in
    rounds mode the one slot holds the page just requested (every request is served), so a
    request hits exactly when it repeats the one before (a -dist form's k = 1 leaves the other
    layers no slot); once every cache holds all its
    distinct pages (k >= the distinct pages, or for a -dist form every layer's share >= its
    layer's distinct pages) only first requests miss."""
    trace = scored_for(name, trace)
    curve = miss_curve(trace, name, seed=seed, progress=False)
    lay, p = trace.layout, trace.pages
    distinct = np.unique(p)
    if trace.n_requests and not trace.is_grouped and not name.endswith("-dist"):
        assert curve[0] == trace.n_requests - int((p[1:] == p[:-1]).sum())
    per_layer = np.bincount(distinct // lay.n_experts, minlength=lay.n_layers)
    for k in range(1, lay.n_pages + 1):
        full = ((lay.dist_shares(k) >= per_layer).all() if name.endswith("-dist")
                else k >= distinct.size)
        if full:
            assert curve[k - 1] == distinct.size, (k, curve.tolist())


@pytest.mark.parametrize("name", ONE_PASS + [f"{n}-dist" for n in ONE_PASS])
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_stack_curves_on_longer_traces(name, seed):
    """Hundreds of requests over many pages: deep stacks, LLRU orders that change over time."""
    rng = np.random.default_rng(seed)
    lay = Layout(int(rng.integers(2, 7)), int(rng.integers(1, 6)))
    n = lay.n_layers * int(rng.integers(20, 80))
    w = rng.random(lay.n_experts) ** 3
    experts = rng.choice(lay.n_experts, size=n, p=w / w.sum())
    tr = from_pages((np.arange(n) % lay.n_layers) * lay.n_experts + experts, lay)
    curve = miss_curve(tr, name)
    assert curve.tolist() == per_k(tr, name)
    # inclusion: a larger cache never misses more; a -dist form's too (every layer's share
    # grows with k, and each layer's curve is a stack curve)
    assert (np.diff(curve) <= 0).all()


def test_parallel_sweep_equals_sequential():
    """Large enough for the thread pool (N·nℓ ≥ 200,000): Marking and FIFO per k."""
    rng = np.random.default_rng(5)
    lay = Layout(8, 4)
    n = 8000
    tr = from_pages((np.arange(n) % 4) * 8 + rng.integers(0, 8, n), lay)
    for name in ("marking", "fifo", "marking-dist"):
        got = miss_curve(tr, name, seed=11, progress=False)
        want = [simulate(tr, name, k, seed=11).misses for k in range(1, 33)]
        assert got.tolist() == want


def test_the_kernels_per_k_curve_says_it_falls_back(capsys, monkeypatch):
    """Issue 22: `paging mrc` "says when it falls back"; the compiled per-k runs on threads were
    silent (only the reference loop's processes said so)."""
    import paging.mrc

    monkeypatch.setattr(paging.mrc.os, "cpu_count", lambda: 2)
    tr = from_pages((np.arange(8000) % 4) * 8 + np.arange(8000) % 8, Layout(8, 4), name="z")
    miss_curve(tr, "fifo", progress=None)
    assert ("mrc fifo on z: no one-pass curve, 32 runs of the compiled kernel on 2 threads\n"
            in capsys.readouterr().err)
    miss_curve(tr, "fifo", progress=False)
    assert capsys.readouterr().err == ""


def test_user_policy_falls_back_to_the_reference(monkeypatch):
    from paging import policies

    class MRU(LRU):
        name = "test-mru"

        def evict_key(self, t, page):
            return self.last[page]

    monkeypatch.setattr(policies, "REGISTRY", dict(policies.REGISTRY))
    monkeypatch.setattr(policies, "POLICY_NAMES", policies.POLICY_NAMES)
    register("test-mru", MRU)
    tr = ANOMALY
    assert curve_method(tr, "test-mru") == "per-k"
    curve = miss_curve(tr, "test-mru")
    assert curve.tolist() == per_k(tr, "test-mru")
    assert curve.tolist() != miss_curve(tr, "lru").tolist()


def test_miss_curves_and_empty_trace():
    got = miss_curves(ANOMALY, ["lru", "belady"])
    assert list(got) == ["lru", "belady"]
    assert got["belady"].tolist() == [12, 9, 7, 6, 5, 5]
    empty = from_pages([], Layout(2, 2))
    assert miss_curve(empty, "llru").tolist() == [0, 0, 0, 0]


def test_progress_bar_only_when_asked(capsys):
    miss_curve(ANOMALY, "fifo", progress=True)
    assert "mrc fifo" in capsys.readouterr().err
    miss_curve(ANOMALY, "fifo", progress=False)
    assert capsys.readouterr().err == ""


# -- the command ---------------------------------------------------------------------------------
def test_report_sums_sequences():
    a = from_pages([0, 1, 0, 2], Layout(3, 1), name="a")
    b = from_pages([2, 2, 1], Layout(3, 1), name="b")
    doc = curve_report([a, b], "lru")
    assert doc["requests"] == 7 and doc["k"] == [1, 2, 3]
    assert [t["trace"] for t in doc["traces"]] == ["a", "b"]
    assert doc["traces"][0]["misses"] == [4, 3, 3] and doc["traces"][1]["misses"] == [2, 2, 2]
    assert doc["misses"] == [6, 5, 5]
    assert "trace" not in doc
    one = curve_report([a], "lru")
    assert one["trace"] == "a" and "traces" not in one and one["misses"] == [4, 3, 3]


def test_cli_json(capsys):
    spec = "zipf:n=4,layers=3,tokens=60,a=1.0,h=0,seed=2"
    assert cli.main(["mrc", spec, "--policy", "LLRU", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["policy"] == "llru" and doc["requests"] == 180 and doc["trace"] == spec
    assert doc["k"] == list(range(1, 13))
    from paging.io import load

    tr = load(spec)[0]
    assert doc["misses"] == per_k(tr, "llru")


def test_cli_groups_and_table(capsys):
    spec = "zipf:n=4,layers=2,tokens=20,seed=1,topk=2"
    assert cli.main(["mrc", spec, "--policy", "belady", "--expand", "groups"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("belady on") and out[1].split() == ["k", "misses", "hits",
                                                                "miss_ratio"]
    assert len(out) == 2 + 8
    from paging.io import load

    tr = load(spec, expand="groups")[0]
    assert [int(line.split()[1]) for line in out[2:]] == per_k(tr, "belady")


def test_cli_errors(capsys):
    assert cli.main(["mrc", "zipf:n=2,layers=2,tokens=3", "--policy", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown policy 'nope'") and err.count("\n") == 1
    assert cli.main(["mrc", "no-such-file.jsonl", "--policy", "lru"]) == 2
    assert capsys.readouterr().err.startswith("error: no-such-file.jsonl: ")


def test_scheduler_note_names_the_route_it_ignores_the_scheduler_for(capsys):
    """With --scheduler, a curve computed here says how: LRU-DIST's is one pass per layer, but
    ARC-DIST's and FIFO-DIST's (no stack algorithm: each layer run once per share) were also
    called a "one-pass curve". No scheduler is contacted for either (the address is unused)."""
    spec = "zipf:n=3,layers=2,tokens=10,seed=1"
    for name, how in (("lru-dist", "one-pass curve"),
                      ("arc-dist", "per-layer curve (each layer run once per share)"),
                      ("fifo-dist", "per-layer curve (each layer run once per share)")):
        assert cli.main(["mrc", spec, "--policy", name, "--scheduler", "tcp://127.0.0.1:9",
                         "--json"]) == 0
        err = capsys.readouterr().err
        assert err == f"mrc {name}: {how}, computed here; --scheduler not used\n", err


class _LatestFirst(Predictor):
    """A user predictor (the latest request predicted furthest): no kernel runs it."""

    name = "mrc-latest-first"

    def predict(self, t, page):
        return float(t)


def test_reference_loop_curves_run_their_sizes_in_processes(monkeypatch, capsys):
    """A policy with no kernel (blind-oracle with a user predictor) runs one reference loop per
    k, in processes when the work is large enough (here forced), saying so; the curve equals the
    sizes run one by one in this process."""
    from paging import fast, mrc
    from paging.io import load
    from paging.policies import make_policy
    from paging.predict import PREDICTORS, register_predictor

    if _LatestFirst.name not in PREDICTORS:
        register_predictor(_LatestFirst.name, _LatestFirst)
    name = f"blind-oracle:{_LatestFirst.name}"
    assert not fast.has_kernel(make_policy(name))
    (tr,) = load("zipf:n=4,layers=3,tokens=120,seed=2")
    one_by_one = per_k(tr, name)
    monkeypatch.setattr(mrc, "_PROCESS_WORK", 0)
    monkeypatch.setattr(mrc.os, "cpu_count", lambda: 2)
    assert miss_curve(tr, name, progress=None).tolist() == one_by_one
    assert "12 runs of the reference loop on" in capsys.readouterr().err


def test_scheduler_runs_the_sizes_on_dask_workers_and_gives_the_same_curve(tmp_path, capsys,
                                                                           monkeypatch):
    """``paging mrc --scheduler``: a per-k curve (FIFO's kernel; LeCaR, randomized, and a policy
    registered at run time, whichever loop runs them) computed on the workers of a running
    scheduler equals the one computed here; a one-pass curve says it ignores the scheduler."""
    pytest.importorskip("dask.distributed")
    from dask.distributed import LocalCluster

    from paging import policies
    from paging.generators import zipf
    from paging.io import write

    monkeypatch.setattr(policies, "REGISTRY", dict(policies.REGISTRY))
    monkeypatch.setattr(policies, "POLICY_NAMES", policies.POLICY_NAMES)

    class _Mine(LRU):  # a subclass: no kernel of its own, so the reference loop
        name = "mine-for-dask"

    register("mine-for-dask", _Mine, dist=False)
    tr = zipf(n=4, layers=3, tokens=60, topk=1, seed=3)
    path = tmp_path / "t.npz"
    write([tr], path)
    with LocalCluster(n_workers=2, processes=False, protocol="tcp", host="127.0.0.1",
                      dashboard_address=None) as cluster:
        addr = cluster.scheduler_address
        for name in ("fifo", "lecar", "mine-for-dask"):
            here = miss_curve(tr, name, seed=4)
            there = miss_curve(tr, name, seed=4, scheduler=addr, progress=False)
            assert there.tolist() == here.tolist()
        assert cli.main(["mrc", str(path), "--policy", "fifo", "--scheduler", addr,
                         "--json"]) == 0
        out = capsys.readouterr()
        assert json.loads(out.out)["misses"] == miss_curve(tr, "fifo").tolist()
        assert cli.main(["mrc", str(path), "--policy", "lru", "--scheduler", addr]) == 0
        assert "one-pass curve, computed here; --scheduler not used" in capsys.readouterr().err
    assert miss_curve(tr, "mine-for-dask").tolist() == [
        simulate(tr, "lru", k).misses for k in range(1, 13)]


def test_unreachable_scheduler_for_mrc_is_one_line(tmp_path, capsys):
    pytest.importorskip("dask.distributed")
    from paging.generators import zipf
    from paging.io import write

    path = tmp_path / "t.npz"
    write([zipf(n=4, layers=3, tokens=20, topk=1, seed=3)], path)
    assert cli.main(["mrc", str(path), "--policy", "fifo", "--scheduler",
                     "tcp://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot reach the Dask scheduler" in err
