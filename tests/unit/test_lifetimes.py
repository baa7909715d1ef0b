"""Cache lifetimes in tokens (paging.lifetimes; Skliar et al. Table 2): by hand, against a
naive replay of the eviction log on random runs, the run recipe and the CLI, and the Mixtral
row of Table 2 on the real logs."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from conftest import needs_traces
from hypothesis import given, settings
from hypothesis import strategies as st

from paging import cli
from paging.errors import PagingError
from paging.generators import router
from paging.io import load
from paging.layout import Layout
from paging.lifetimes import lifetimes
from paging.run import RunSpec, run
from paging.simulate import simulate
from paging.trace import from_routing


def _one_layer(pages, n=3):
    return from_routing(np.array(pages)[:, None, None], Layout(n, 1), "groups")


def test_lifetimes_by_hand():
    """One layer, k = 2, LRU, tokens 0, 1, 0, 2, 1 (a page per token). Page 0 enters at token 0,
    page 1 at 1; token 2 hits 0; token 3 evicts 1 (lived 3 − 1 = 2) for 2; token 4 evicts 0
    (4 − 0 = 4) for 1. Ended residencies: 2 and 4, mean 3. Open ones at the end (token 5):
    page 2 since 3 (2), page 1 since 4 (1): all four, mean (2 + 4 + 2 + 1) / 4 = 2.25."""
    tr = _one_layer([0, 1, 0, 2, 1])
    got = lifetimes(tr, simulate(tr, "lru", 2, record=True))
    assert got == {"lifetime_tokens": 3.0, "lifetime_tokens_all": 2.25, "residencies": 4}


def test_dropped_and_routed_requests_by_hand():
    """drop:rank=1 on tokens [0, 1], [2, 1] (one layer of 3, top 2), k = 1: page 0 enters at
    token 0, 1 is dropped (rank 1); 2 evicts 0 at token 1 (lived 1), 1 is dropped again: one
    ended residency of 1 token, one open (2, since token 1, to the end at 2: 1).
    pruning:j=1 serves the top 1 alone: 0 then 2, the same residencies."""
    tr = from_routing(np.array([[[0, 1]], [[2, 1]]]), Layout(3, 1), "groups")
    want = {"lifetime_tokens": 1.0, "lifetime_tokens_all": 1.0, "residencies": 2}
    assert lifetimes(tr, simulate(tr, "lru", 1, miss="drop:rank=1", record=True)) == want
    assert lifetimes(tr, simulate(tr, "lru", 1, routing="pruning:j=1", record=True)) == want


def _naive(trace, res):
    """The lifetimes by a replay of the run request by request (the served requests of a
    routed run): a set of residents with their entry tokens."""
    if res.events and res.events.get("served_pages") is not None:
        from paging.routing.served import served_trace

        trace = served_trace(trace, res)
    tok = trace.token
    out = {}
    for t, p in res.evictions.tolist():
        out.setdefault(t, []).append(p)
    since, closed = {}, []
    dropped = set((res.events or {}).get("dropped", np.zeros(0)).tolist())
    bypassed = set(res.bypassed.tolist())
    for t in range(trace.n_requests):
        for p in out.get(t, []):
            closed.append(tok[t] - since.pop(p))
        if not res.hit_mask[t] and t not in dropped and t not in bypassed:
            since[int(trace.pages[t])] = tok[t]
    end = int(tok.max()) + 1
    every = closed + [end - s for s in since.values()]
    return (np.mean(closed) if closed else None, np.mean(every) if every else None, len(every))


traces = st.builds(lambda n, L, T, K, seed: router(n, L, T, k=min(K, n), seed=seed,
                                                   expand="groups"),
                   st.integers(2, 6), st.integers(1, 3), st.integers(1, 12), st.integers(1, 3),
                   st.integers(0, 50))


@settings(max_examples=80, deadline=None)
@given(trace=traces, k=st.integers(1, 10),
       policy=st.sampled_from(["lru", "fifo", "lfu", "llru-dist", "arc", "marking"]),
       extra=st.sampled_from([{}, {"miss": "drop:rank=1"}, {"routing": "max-rank:j=1"},
                              {"routing": "pruning:j=1"}]))
def test_lifetimes_equal_a_naive_replay_on_both_engines(trace, k, policy, extra):
    got = {}
    for engine in ("auto", "reference"):
        res = simulate(trace, policy, k, record=True, seed=2, engine=engine, **extra)
        got[engine] = lifetimes(trace, res)
        a, b, n = _naive(trace, res)
        assert got[engine]["residencies"] == n
        for key, want in (("lifetime_tokens", a), ("lifetime_tokens_all", b)):
            assert (got[engine][key] is None) == (want is None)
            if want is not None:
                assert got[engine][key] == pytest.approx(want, rel=1e-12)
    assert got["auto"] == got["reference"]


def test_refusals():
    tr = _one_layer([0, 1, 0])
    with pytest.raises(PagingError, match="fully recorded run"):
        lifetimes(tr, simulate(tr, "lru", 1, record="hits"))
    with pytest.raises(PagingError, match="not with --prefetch"):
        RunSpec("lru", k=1, lifetimes=True, prefetch="frequency")
    assert RunSpec("lru", k=1, lifetimes=True).stream_refusal() == "--lifetimes"


def test_run_and_cli_rows(capsys):
    """run(lifetimes=True) adds the three fields to each cold row and to a warm run's total
    row only; paging simulate --lifetimes prints them."""
    gen = "zipf:n=4,layers=2,tokens=30,topk=2,seed=3"
    (tr,) = load(gen, expand="groups")
    (row,) = run(RunSpec("lru", k=3, lifetimes=True), [tr])
    assert {f: row[f] for f in ("lifetime_tokens", "lifetime_tokens_all", "residencies")} \
        == lifetimes(tr, simulate(tr, "lru", 3, record=True))
    *seqs, total = run(RunSpec("lru", k=3, lifetimes=True, warm=True), [tr, tr])
    assert "lifetime_tokens" not in seqs[0] and total["residencies"] > 0
    assert cli.main(["simulate", gen, "--policy", "lru", "--k", "3", "--expand", "groups",
                     "--lifetimes", "--json"]) == 0
    (out,) = json.loads(capsys.readouterr().out)
    assert out["lifetime_tokens"] == row["lifetime_tokens"]


@needs_traces
def test_table2_mixtral_row_on_the_real_logs():
    """Skliar et al. Table 2, Mixtral-8x7B at 4 / 8 experts per layer: lifetime 5 tokens with
    the original routing, 10 with Cache-Prior (λ = 0.5), miss rate 40 % -> 21 %. Per-layer
    LRU at k = 128 on HumanEval problem 0 (golden numbers)."""
    path = os.path.join(os.environ["PAGING_TRACES"],
                        "mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl")
    tr = load(path, expand="groups")[0]
    std = lifetimes(tr, simulate(tr, "lru-dist", 128, record=True))
    cp = lifetimes(tr, simulate(tr, "lru-dist", 128, record=True,
                                routing="cache-prior:lambda=0.5"))
    assert std == {"lifetime_tokens": pytest.approx(4.875510204081633, rel=1e-12),
                   "lifetime_tokens_all": pytest.approx(4.913314176245211, rel=1e-12),
                   "residencies": 2088}
    assert cp == {"lifetime_tokens": pytest.approx(9.911057692307692, rel=1e-12),
                  "lifetime_tokens_all": pytest.approx(10.614583333333334, rel=1e-12),
                  "residencies": 960}
