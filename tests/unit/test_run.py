"""The one run recipe (paging.run, issue 21): RunSpec validation, run() against the simulator
and the timeline called by hand, verification, and the training set of a learned predictor."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from conftest import TRACES, needs_traces

from paging import cli
from paging.cost.setup import CostSetup
from paging.cost.timeline import batch_prefill, timeline_run
from paging.errors import PagingError
from paging.io import load
from paging.run import RunSpec, execute, run
from paging.simulate import simulate

GEN = "zipf:n=4,layers=3,tokens=40,topk=2,seed=5"


@pytest.mark.parametrize("kw, msg", [
    (dict(), "exactly one capacity"),
    (dict(k=3, budget=10), "exactly one capacity"),
    (dict(k=3, prefetch_strategy="topk"), "^--prefetch-strategy needs --prefetch$"),
    (dict(k=3, prefill="batched"), "timing option: it needs --model"),
    (dict(k=3, prefill="later"), "prefill must be tokens or batched"),
    (dict(k=3, timeline={"token_overhead_ms": 1.0}), "timing options: they need --model"),
    (dict(k=3, warm_seed=1), "it needs --warm"),
    (dict(k=3, model="mixtral-8x7b", prefetch="oracle",
          timeline={"prefetch_link": "separate"}), "needs --prefetch-streams 2"),
    (dict(k=3, miss="fetch-priority", model="mixtral-8x7b"), "give the cache as --budget-gb"),
    (dict(k=3, routing="max-rank:j=1", policy="belady"), "is clairvoyant"),
    (dict(k=3, prefetch="psychic"), "unknown prefetch predictor"),
    # the combiners refuse a prefetcher before the run, not at its first prefetch (one that
    # never prefetched was accepted: serve with --prefetch-strategy percentile and routing)
    (dict(k=3, prefetch="frequency", policy="robust-token-match"),
     "robust-token-match does not support prefetching"),
    (dict(k=3, prefetch="frequency", policy="robust-token-match-dist"), "does not support"),
    (dict(k=3, prefetch="frequency", policy="robust:lru,lfu"), "does not support"),
])
def test_runspec_refuses_inconsistent_recipes(kw, msg):
    kw = {"policy": "lru", **kw}
    with pytest.raises(PagingError, match=msg):
        RunSpec(**kw)
    with pytest.raises(PagingError, match="unknown policy"):
        RunSpec("nope", k=3)


def test_routing_with_a_model_times_the_served_requests(capsys):
    """paging simulate --routing --model: the row has the routing's quality proxies and the
    timeline of the served requests (tests/unit/test_timeline.py checks the numbers); both
    engines agree; --prefill batched (one group per layer for the whole prompt) is refused
    with routing, which decides per (token, layer)."""
    rows = {}
    for eng in ("reference", "auto"):
        assert cli.main(["simulate", "zipf:n=8,layers=32,tokens=20,topk=2,seed=1", "--policy",
                         "lfu", "--k", "40", "--model", "mixtral-8x7b", "--routing",
                         "max-rank:j=1", "--engine", eng, "--verify", "--json"]) == 0
        (rows[eng],) = json.loads(capsys.readouterr().out)
    assert {k: v for k, v in rows["auto"].items() if k != "engine"} == {
        k: v for k, v in rows["reference"].items() if k != "engine"}
    row = rows["auto"]
    assert row["tokens_per_s"] > 0 and row["retained_mass"] < 1 and row["decode_tokens"] == 20
    assert "prefetch_late" not in row
    with pytest.raises(PagingError, match="give one of them"):
        RunSpec("lru", k=3, model="mixtral-8x7b", routing="pruning:j=1", prefill="batched")
    (tr,) = load(GEN, expand="groups")
    from paging.routing.served import served_trace

    with pytest.raises(PagingError, match="need a recorded run"):
        served_trace(tr, simulate(tr, "lru", 3, routing="pruning:j=1"))


def test_run_equals_simulate_and_the_timeline_by_hand():
    (tr,) = load(GEN, expand="groups")
    spec = RunSpec("llru", k=5, seed=2)
    assert run(spec, [tr]) == [simulate(tr, "llru", 5, seed=2).to_dict()]
    # with a model: the cost model's weights and the timeline, assembled here by hand
    (mx,) = load("zipf:n=8,layers=32,tokens=6,topk=2,seed=1", expand="groups")
    spec = RunSpec("lru", budget=4_670_240_063, model="mixtral-8x7b", precision="int4")
    (row,) = run(spec, [mx])
    cm = CostSetup.from_names("mixtral-8x7b", "int4")
    costs, sizes = cm.weights(mx)
    res = simulate(mx, "lru", budget=4_670_240_063, costs=costs, sizes=sizes, record="hits")
    tm = timeline_run(mx, res, model=cm.model, precision=cm.precision, hardware=cm.hardware,
                      fetch_ms=costs, sizes=sizes)
    assert row == dict(res.to_dict(), **cm.timed_fields(res, tm))


def test_verify_checks_every_run_and_keeps_the_outcome(monkeypatch):
    """verify=True hands the run, recorded in full, to paging.verify.verify (once, on this
    trace) and changes none of its numbers: the rows are the unverified run's."""
    import paging.verify

    (tr,) = load(GEN, expand="groups")
    spec = RunSpec("lru", k=4, prefetch="oracle:precision=1,recall=1")
    (plain,) = execute(spec, [tr])
    checked, real = [], paging.verify.verify

    def counting(trace, res, **kw):
        checked.append((trace, res))
        return real(trace, res, **kw)

    monkeypatch.setattr(paging.verify, "verify", counting)
    (out,) = execute(dataclasses.replace(spec, verify=True), [tr])
    assert [(t.name, r) for t, r in checked] == [(tr.name, out.result)]
    assert out.result.evictions is not None and plain.result.evictions is None
    assert out.rows == plain.rows and out.rows[0]["prefetches"] > 0


def test_cli_verify_flag(capsys):
    assert cli.main(["simulate", GEN, "--policy", "fifo", "--k", "4", "--verify",
                     "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["misses"] == simulate(load(GEN)[0], "fifo", 4).misses


def test_cli_verify_catches_a_miscounted_run_with_status_3(capsys, monkeypatch):
    """`paging simulate --verify` runs inside :func:`paging.simulate.verifying`: a run whose
    miss count disagrees with its own hit mask is one line and exit status 3 (unchecked, the
    wrong count is printed)."""
    import dataclasses
    import importlib

    module = importlib.import_module("paging.simulate")  # (the package exports the function)
    real = module._simulate

    def miscounted(*a, **kw):
        res = real(*a, **kw)
        return dataclasses.replace(res, misses=res.misses + 1)

    monkeypatch.setattr(module, "_simulate", miscounted)
    argv = ["simulate", GEN, "--policy", "fifo", "--k", "4", "--json"]
    assert cli.main(argv) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["misses"] == simulate(load(GEN)[0], "fifo", 4).misses  # (both miscounted)
    assert cli.main(argv + ["--verify"]) == 3
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("error: a run failed its independent verification: ")


@needs_traces
def test_batched_transition_trains_on_the_other_sequences_only():
    """A cold run on one sequence of a file trains ``transition`` on the file's other
    sequences, also with a batched prefill (an earlier version passed the batched copy of the
    simulated sequence to the training rule, which kept it in the training set, and the
    predictor then refused the run)."""
    src = f"{TRACES}/mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl"
    a, b = load(src, expand="groups")
    spec = RunSpec("lru", budget=4_670_240_063, model="mixtral-8x7b", precision="int4",
                   prefill="batched", prefetch="transition")
    (row,) = run(spec, [a, b], only=[1])
    (own,) = run(spec, [a, b], only=[1], train=[a])
    assert row == own
    with pytest.raises(PagingError, match="the sequence it would predict"):
        run(spec, [a, b], only=[1], train=[a, b])
    assert row["prefetches"] > 0
    assert np.isfinite(row["tokens_per_s"]) and batch_prefill(b)[0].n_requests == row["requests"]
