"""The offline optimum with routing flexibility (paging.offline.routing_flex): hand-checked
instances, the integer program against exhaustive enumeration, LP <= ILP <= upper <= Belady, and
the optimum below every online routing policy with the same allowed sets."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paging.cli import main
from paging.errors import PagingError
from paging.generators import router
from paging.layout import Layout
from paging.offline.routing_flex import (
    belady_misses,
    flex_exhaustive,
    flex_instance,
    flex_program,
    flex_upper,
    opt_routing_flex,
    parse_flex,
)
from paging.simulate import simulate
from paging.trace import from_routing

ROUTER = "router:n=4,layers=2,tokens=3,k=2,seed=0"


def _table(experts, n, scores=None, logits=None):
    e = np.asarray(experts)
    s = np.ones(e.shape) if scores is None else scores
    return from_routing(e, Layout(n, e.shape[1]), "groups", scores=s, logits=logits)


def test_hand_example_top1_any_expert():
    # one layer of 3 experts, top-1, j = 0: every token may take any expert. The original
    # routing 0,1,2,0,1,2 with k = 1 misses 6 times (Belady can do nothing with k = 1); taking
    # expert 0 every time costs the one compulsory miss.
    t = _table([[[0]], [[1]], [[2]], [[0]], [[1]], [[2]]], 3)
    r = opt_routing_flex(t, 1, "j=0")
    assert (r.belady, r.misses, r.exact, r.method) == (6, 1, True, "ilp")
    assert len(set(r.choice)) == 1  # one expert for every token
    # j = 1 keeps every original expert: no flexibility left, OPT_flex = Belady
    assert opt_routing_flex(t, 1, "j=1").misses == 6


def test_hand_example_top2_keep_first():
    # ROUTER's 3 tokens x 2 layers x top-2 (pages 0..3 layer 0, 4..7 layer 1); j = 1 keeps the
    # top-1 pages 2, 7, 1, 7, 1, 4: 4 distinct pages, so >= 4 misses; with k = 4 the free slot
    # of group (0, 0) can load page 1 and that of (0, 1) page 4, after which everything hits:
    # OPT_flex = 4, while Belady on the original routing needs 7.
    (t,) = [router(4, 2, 3, k=2, seed=0, expand="groups")]
    assert t.pages.tolist() == [2, 3, 7, 6, 1, 3, 7, 6, 1, 3, 4, 5]
    inst = flex_instance(t, "j=1")
    assert inst.must == [(2,), (7,), (1,), (7,), (1,), (4,)]
    r = opt_routing_flex(t, 4, "j=1")
    assert (r.belady, r.misses) == (7, 4)
    assert belady_misses(inst, r.choice, 4) == 4  # the program's routing really costs that
    assert flex_exhaustive(inst, 4) == 4
    assert simulate(t, "belady", 4).misses == 7


def test_allowed_sets_with_logits_and_top_k_only():
    logits = np.array([[[3.0, 2.0, 1.0, 0.0]]])  # one token, one layer: ranks 0, 1, 2, 3
    t = _table([[[0, 1]]], 4, scores=[[[0.6, 0.4]]], logits=logits)
    assert flex_instance(t, "j=1").allowed == [(1, 2, 3)]      # m defaults to n
    assert flex_instance(t, "j=1,m=3").allowed == [(1, 2)]     # rank < 3, plus the original
    assert flex_instance(t, "j=1,m=1").allowed == [(1,)]       # only the original second
    top_k_only = _table([[[2, 0]]], 4, scores=[[[0.6, 0.4]]])
    assert flex_instance(top_k_only, "j=1").allowed == [(0, 1, 3)]  # any expert of the layer
    assert flex_instance(top_k_only, "j=1,m=2").allowed == [(0,)]
    with pytest.raises(PagingError, match="ranks >= 2 are unknown"):
        flex_instance(top_k_only, "j=1,m=3")


@pytest.mark.parametrize("text, message", [
    ("m=2", "needs j=J"), ("j=-1", "j must be an integer >= 0"), ("j=1,m=0", "m must be"),
    ("j=1,x=2", "unknown option"), ("j", "not key=value"), ("j=a", "not an integer"),
])
def test_parse_errors(text, message):
    with pytest.raises(PagingError, match=message):
        parse_flex(text)


def test_instance_errors():
    t = router(4, 2, 3, k=2, seed=0, expand="groups")
    with pytest.raises(PagingError, match="j must be <= K = 2"):
        flex_instance(t, "j=3")
    with pytest.raises(PagingError, match="m must be <= 4"):
        flex_instance(t, "j=1,m=5")
    with pytest.raises(PagingError, match="cannot hold a group of 2"):
        opt_routing_flex(t, 1, "j=1")
    no_scores = from_routing(np.zeros((2, 2, 1), dtype=int), Layout(4, 2), "groups")
    with pytest.raises(PagingError, match="needs router scores"):
        flex_instance(no_scores, "j=0")


@st.composite
def instances(draw):
    n = draw(st.integers(2, 4))
    layers = draw(st.integers(1, 2))
    tokens = draw(st.integers(1, 4))
    K = draw(st.integers(1, min(2, n)))
    seed = draw(st.integers(0, 10_000))
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(tokens, layers, n))
    experts = np.argsort(-logits, axis=2, kind="stable")[:, :, :K]
    if draw(st.booleans()):
        experts = rng.permuted(np.tile(np.arange(n), (tokens, layers, 1)), axis=2)[:, :, :K]
        logits = None  # top-K only, in an order of their own
    t = _table(experts, n, scores=np.ones(experts.shape), logits=logits)
    j = draw(st.integers(0, K))
    m = draw(st.one_of(st.none(), st.integers(1, n if logits is not None else K)))
    k = draw(st.integers(K, layers * n))
    return t, f"j={j}" + ("" if m is None else f",m={m}"), k


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_program_equals_exhaustive_and_bounds_are_ordered(case):
    t, spec, k = case
    inst = flex_instance(t, spec)
    if inst.n_routings > 3000:
        return
    exact = flex_exhaustive(inst, k)
    value, choice = flex_program(inst, k)
    assert int(round(value)) == exact
    assert belady_misses(inst, choice, k) == exact
    lp, _ = flex_program(inst, k, relax=True)
    upper, up_choice = flex_upper(inst, k)
    belady = belady_misses(inst, inst.original_choice(), k)
    assert lp <= exact + 1e-6
    assert exact <= upper <= belady
    assert belady_misses(inst, up_choice, k) == upper
    assert belady == simulate(t, "belady", k).misses


@pytest.mark.parametrize("policy", ["lru", "llru", "least-stale"])
def test_optimum_is_below_every_online_routing_policy(policy):
    t = router(6, 3, 30, k=2, seed=4, expand="groups")
    for k in (4, 9):
        flex = opt_routing_flex(t, k, "j=1", method="ilp")  # logits: any expert of the layer
        assert flex.misses <= flex.belady
        for routing in ("standard", "max-rank:j=1", "max-rank:j=1,m=3", "cumsum:tau=0.9",
                        "cache-prior:lambda=0.5", "cache-prior:lambda=2"):
            online = simulate(t, policy, k, routing=routing).misses
            assert flex.misses <= online, (routing, k)


def test_cli_json_and_errors(capsys, tmp_path):
    assert main(["opt", ROUTER, "--k", "4", "--routing-flex", "j=1", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["misses"], row["method"], row["belady"], row["exact"]) == (4, "ilp", 7, True)
    assert main(["opt", ROUTER, "--k", "4", "--routing-flex", "j=1", "--method", "upper",
                 "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["misses"], row["method"], row["lower"]) == (4, "upper", 4.0)
    for argv, message in [
        (["--routing-flex", "j=3"], "j must be <= K = 2"),
        (["--routing-flex", "j=1", "--method", "flow"], "--method ilp, lp or upper"),
        (["--routing-flex", "j=1", "--dist"], "not --budget-gb"),
        (["--method", "upper"], "needs --routing-flex"),
    ]:
        assert main(["opt", ROUTER, "--k", "4", *argv]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert main(["opt", "zipf:n=4,layers=2,tokens=3,topk=2", "--k", "4",
                 "--routing-flex", "j=1"]) == 2
    assert "needs router scores" in capsys.readouterr().err


def test_the_program_shows_cbcs_bar(capsys, monkeypatch):
    # a branch and bound runs to --time-limit (300 s by default): it had no bar on a terminal
    monkeypatch.setattr("paging.progress.TICK_DELAY", 0)
    t = from_routing([[[0], [0]], [[1], [1]], [[0], [1]]], Layout(2, 2), "groups",
                     scores=[[[1.0], [1.0]]] * 3)
    for method in ("ilp", "lp"):
        opt_routing_flex(t, 2, "j=0", method=method, progress=True)
        assert "CBC " in capsys.readouterr().err
    opt_routing_flex(t, 2, "j=0", method="ilp")   # (the default: silent)
    assert capsys.readouterr().err == ""
