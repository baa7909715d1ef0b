"""Cache-aware routing (paging.routing): hand-checked hooks, the standard-equivalences,
verified routed runs, the trace's logits field and the CLI's bad input."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from paging.errors import PagingError
from paging.generators import parse_spec, router
from paging.io import load, write_npz
from paging.layout import Layout
from paging.routing import (
    CachePrior,
    Cumsum,
    Group,
    MaxRank,
    Pruning,
    make_router,
    quality,
    router_for_run,
)
from paging.simulate import simulate
from paging.trace import from_routing
from paging.verify import verify

LOGITS = np.array([3.0, 2.0, 1.0, 0.0, -1.0])  # rank = expert id


def _g(logits=LOGITS, experts=(0, 1), scores=None):
    return Group(0, 0, list(experts), scores, None if logits is None else np.asarray(logits),
                 5 if logits is None else len(logits))


def _ready(r, K=2, n=5, logits=True):
    tr = from_routing(np.array([[list(range(K))]]), Layout(n, 1), "groups",
                      logits=np.zeros((1, 1, n)) if logits else None)
    r.reset(tr)
    return r


# -- the hooks, by hand ---------------------------------------------------------------------------
def test_max_rank_promotes_cached_experts_of_rank_below_m():
    # r = 0,1,2,3,4; top-J = {0}; cached {3, 4}; M = 4 → rank < 4 cached: 3 → serve 0, 3
    assert _ready(MaxRank(1, 4)).route(_g(), {3, 4}) == [0, 3]
    # M = 3: expert 3 has rank 3, not < 3 → standard
    assert _ready(MaxRank(1, 3)).route(_g(), {3, 4}) == [0, 1]
    # J = 0: both slots to cached experts, best rank first
    assert _ready(MaxRank(0)).route(_g(), {4, 3}) == [3, 4]
    # nothing cached: standard
    assert _ready(MaxRank(0)).route(_g(), set()) == [0, 1]


def test_max_rank_allowed_sets_follow_the_contract():
    must, allowed = _ready(MaxRank(1, 4)).allowed(_g())
    assert must == {0} and allowed == {0, 1, 2, 3}


def test_cumsum_m_from_the_cumulative_softmax():
    w = np.exp(LOGITS) / np.exp(LOGITS).sum()  # 0.636, 0.234, 0.086, 0.032, 0.012
    c = _ready(Cumsum(0.6, 1))
    assert c.m_of(_g()) == 1 and w[0] >= 0.6
    assert _ready(Cumsum(0.95, 1)).m_of(_g()) == 3  # 0.636+0.234+0.086 = 0.956
    assert _ready(Cumsum(0.95, 1)).route(_g(), {2, 4}) == [0, 2]
    assert _ready(Cumsum(0.6, 1)).route(_g(), {2, 4}) == [0, 1]  # M=1 <= K: standard


def test_cache_prior_adds_lambda_times_the_logit_range():
    # Δavg = 3 − (−1) = 4 on the first token; λ = 0.3 → +1.2 on cached {2}: z'(2) = 2.2 > 2.0
    assert _ready(CachePrior(0.3, 1)).route(_g(), {2}) == [0, 2]
    # λ = 0.2 → z'(2) = 1.8 < 2.0: standard
    assert _ready(CachePrior(0.2, 1)).route(_g(), {2}) == [0, 1]
    # J = 0, λ = 0.3, cached {1, 2}: z' = 3, 3.2, 2.2 → 1 then 0
    assert _ready(CachePrior(0.3, 0)).route(_g(), {1, 2}) == [1, 0]


def test_cache_prior_avg_logit_reads_spec_md_literally():
    """avg=logit (SpecMD Eq. 1, "Δavg is the historical average logit value"): logits 3, 2,
    1, 0, −1 average 1; λ = 1.5, J = 0, cached {2}: z'(2) = 1 + 1.5 = 2.5 > 2 → expert 2
    replaces expert 1 (with the range, Δavg = 4, it would at λ = 0.3 already). Logits −1, −2,
    −3, −4, −5 average −3: the "boost" pushes a cached top-2 expert out: z'(1) = −2 − 3 = −5
    < −3 (expert 2) at λ = 1, so the uncached expert 2 is served."""
    assert _ready(CachePrior(1.5, 0, avg="logit")).route(_g(), {2}) == [0, 2]
    assert _ready(CachePrior(0.9, 0, avg="logit")).route(_g(), {2}) == [0, 1]
    neg = [-1.0, -2.0, -3.0, -4.0, -5.0]
    assert _ready(CachePrior(1.0, 0, avg="logit")).route(_g(neg), {1}) == [0, 2]
    assert make_router("cache-prior:lambda=1,j=0,avg=logit").spec() == \
        "cache-prior:lambda=1,j=0,avg=logit"
    with pytest.raises(PagingError, match="avg must be range or logit"):
        make_router("cache-prior:lambda=1,avg=median")


def test_cache_prior_running_average_of_the_range():
    r = _ready(CachePrior(0.25, 0))
    r.route(_g([1.0, 0.0, 0.0, 0.0, -1.0]), set())  # range 2
    # second token: range 4 → Δavg = 3, bonus 0.75: z'(2) = 1.75 < 2 → standard
    assert r.route(_g(), {2}) == [0, 1]


def test_pruning_keeps_the_top_j():
    assert _ready(Pruning(1)).route(_g(), {2, 3}) == [0]


def test_top_k_only_max_rank_fills_from_any_cached_expert():
    g = _g(None, (0, 1), [0.7, 0.3])
    r = MaxRank(1)
    r.reset(from_routing(np.array([[[0, 1]]]), Layout(5, 1), "groups", scores=[[[0.7, 0.3]]]))
    assert r.route(g, {4, 3}) == [0, 3]  # unknown ranks: lowest expert id first
    ret, changed, kl = quality(g, [0, 3])
    assert ret == pytest.approx(0.7) and not changed and kl > 0
    with pytest.raises(PagingError, match="no logits"):
        MaxRank(1, 3).reset(from_routing(np.array([[[0, 1]]]), Layout(5, 1), "groups"))


def test_quality_proxies_by_hand():
    g = _g()
    w = np.exp(LOGITS) / np.exp(LOGITS).sum()
    ret, changed, kl = quality(g, [0, 1])
    assert (ret, changed, kl) == (1.0, False, 0.0)
    ret, changed, kl = quality(g, [1, 2])
    assert ret == pytest.approx((w[1] + w[2]) / (w[0] + w[1])) and changed
    # the ε-smoothed KL, computed here by hand over the 3 experts involved
    a = np.array([w[0], w[1], 0]) / (w[0] + w[1])
    b = np.array([0, w[1], w[2]]) / (w[1] + w[2])
    p, q = 0.99 * a + 0.002, 0.99 * b + 0.002
    assert kl == pytest.approx(float(np.sum(p * np.log(p / q))))


# -- the equivalences and routed runs --------------------------------------------------------------
@pytest.fixture(scope="module")
def synth():
    return router(8, 4, 150, k=2, seed=3, expand="groups")


@pytest.mark.parametrize("policy", ["lru", "llru", "least-stale", "fifo", "lfu"])
@pytest.mark.parametrize("spec", ["standard", "cache-prior:lambda=0", "pruning:j=2",
                                  "max-rank:j=2", "cumsum:tau=1e-9"])
def test_neutral_routings_equal_the_fast_path(synth, policy, spec):
    base = simulate(synth, policy, 12)  # compiled kernel
    res = simulate(synth, policy, 12, routing=spec, record=True)
    verify(synth, res)
    assert (res.misses, res.requests, res.hits) == (base.misses, base.requests, base.hits)


def test_routed_runs_are_verified_and_deterministic(synth):
    for spec in ("pruning:j=1", "max-rank:j=1,m=4", "cumsum:tau=0.9", "cache-prior:lambda=0.5"):
        a = simulate(synth, "lru", 12, routing=spec, record=True)
        b = simulate(synth, "lru", 12, routing=spec, record=True)
        verify(synth, a)
        assert a.to_dict() == b.to_dict()
        assert a.misses < simulate(synth, "lru", 12).misses
        assert a.extra["slots"] == synth.n_requests


def test_golden_numbers_synthetic(synth):
    got = {s: simulate(synth, "lru", 12, routing=s).misses
           for s in ("standard", "max-rank:j=1", "cache-prior:lambda=0.5")}
    assert got == GOLDEN_SYNTH


# regression pins of this implementation (standard = the compiled kernel's count)
GOLDEN_SYNTH = {"standard": 687, "max-rank:j=1": 333, "cache-prior:lambda=0.5": 366}


def test_verifier_rejects_a_forged_routing(synth):
    res = simulate(synth, "lru", 12, routing="max-rank:j=1", record=True)
    sp = res.events["served_pages"].copy()
    sp[0] = (sp[0] + synth.layout.n_experts) % synth.layout.n_pages  # another layer's page
    res.events["served_pages"] = sp
    from paging.verify import VerificationError

    with pytest.raises(VerificationError, match="layer"):
        verify(synth, res)


def test_routing_refuses_rounds_and_clairvoyance(synth):
    rounds = router(8, 4, 10, k=2, seed=0)
    with pytest.raises(PagingError, match="groups"):
        simulate(rounds, "lru", 4, routing="max-rank:j=1")
    with pytest.raises(PagingError, match="clairvoyant"):
        simulate(synth, "belady", 4, routing="max-rank:j=1")


@pytest.mark.parametrize("spec, msg", [
    ("pruning:j=3", "j must be in 1..2"), ("max-rank:j=3", "j must be in 0..2"),
    ("cumsum:tau=0", "tau must be in"), ("cumsum:tau=1.5", "tau must be in"),
    ("cache-prior:lambda=-0.1", "lambda must be in"), ("cache-prior:lambda=nan", "lambda"),
    ("teleport", "unknown routing"), ("max-rank:q=1", "unknown option")])
def test_bad_routing_options(synth, spec, msg):
    with pytest.raises(PagingError, match=msg):
        simulate(synth, "lru", 4, routing=spec)


# -- the generator and the logits field ------------------------------------------------------------
def test_router_generator_is_seeded_and_carries_logits():
    a = parse_spec("router:n=8,layers=3,tokens=20,k=2,seed=5", "groups")[0]
    b = router(8, 3, 20, k=2, seed=5, expand="groups")
    assert np.array_equal(a.pages, b.pages) and np.array_equal(a.logits, b.logits)
    assert a.logits.shape == (20, 3, 8) and a.meta["synthetic"]
    # the requests are the top-2 of the logits, rank 0 the largest
    top = np.argsort(-a.logits, axis=2, kind="stable")[:, :, :2]
    assert np.array_equal(a.layout.expert_of(a.pages).reshape(20, 3, 2), top)


def test_logits_round_trip_npz(tmp_path):
    t = router(6, 2, 7, k=2, seed=1, expand="groups")
    write_npz([t], tmp_path / "t.npz")
    back = load(str(tmp_path / "t.npz"), expand="groups")[0]
    assert np.array_equal(back.logits, t.logits) and np.array_equal(back.pages, t.pages)
    rounds = load(str(tmp_path / "t.npz"), expand="rounds")[0]
    assert np.array_equal(rounds.logits, t.logits)


def _jsonl(tmp_path, logits_row):
    rows = []
    for tok in range(2):
        for z in range(2):
            rows.append({"problem_id": 0, "token_idx": tok, "layer": z, "experts": [0, 1],
                         "gating_probs": [0.6, 0.4], "logits": logits_row})
    p = tmp_path / "r.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows).replace('"NaN"', "NaN"))
    return p


def test_jsonl_logits_are_read(tmp_path):
    t = load(str(_jsonl(tmp_path, [1.0, 0.5, 0.0, -1.0])), expand="groups")[0]
    assert t.layout.n_experts == 4 and t.logits.shape == (2, 2, 4)


@pytest.mark.parametrize("row, msg", [([1.0, "NaN"], "finite"), ([1.0], "one per expert")])
def test_jsonl_bad_logits_exit_2(tmp_path, row, msg):
    p = _jsonl(tmp_path, row)
    if row == [1.0]:  # experts 0, 1 need 2 logits
        p.write_text(p.read_text())
    out = subprocess.run([sys.executable, "-m", "paging", "simulate", str(p), "--policy", "lru",
                          "--k", "2", "--routing", "max-rank:j=1", "--json"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and str(p) in lines[0] and ":1:" in lines[0] and msg in lines[0]


# -- the command line ----------------------------------------------------------------------
def _cli(*args):
    return subprocess.run([sys.executable, "-m", "paging", "simulate", *args],
                          capture_output=True, text=True)


def test_cli_routing_json_fields():
    out = _cli("router:n=8,layers=4,tokens=60,k=2,seed=0", "--policy", "lru", "--k", "8",
               "--routing", "cache-prior:lambda=0.5", "--json")
    assert out.returncode == 0, out.stderr
    row = json.loads(out.stdout)[0]
    res = simulate(router(8, 4, 60, k=2, seed=0, expand="groups"), "lru", 8,
                   routing="cache-prior:lambda=0.5")
    assert row["misses"] == res.misses
    for f in ("retained_mass", "top1_changed", "kl"):
        assert row[f] == res.extra[f] and math.isfinite(row[f])


def test_cli_standard_routing_is_todays_run():
    a = _cli("zipf:n=8,layers=4,tokens=50,topk=2,seed=1", "--policy", "lru", "--k", "6", "--json")
    b = _cli("zipf:n=8,layers=4,tokens=50,topk=2,seed=1", "--policy", "lru", "--k", "6",
             "--routing", "standard", "--json")
    assert a.returncode == b.returncode == 0 and a.stdout == b.stdout


@pytest.mark.parametrize("opt, msg", [
    ("max-rank:j=3", "j must be in 0..2"), ("cumsum:tau=0", "tau must be in"),
    ("cumsum:tau=2", "tau must be in"), ("cache-prior:lambda=-1", "lambda must be in"),
    ("nope", "unknown routing")])
def test_cli_bad_routing_exit_2(opt, msg):
    out = _cli("router:n=8,layers=4,tokens=10,k=2,seed=0", "--policy", "lru", "--k", "8",
               "--routing", opt, "--json")
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and msg in out.stderr
    assert "Traceback" not in out.stderr


# -- Δavg over the sequences of a run (Eq. 10: "a running average over sequences and tokens") ----
def _one_group(logits, experts=(0, 1), name="seq"):
    return from_routing(np.array([[list(experts)]]), Layout(len(logits), 1), "groups",
                        logits=np.array([[logits]], dtype=float), name=name)


def test_cache_prior_delta_runs_over_the_sequences_of_a_run():
    seq_a = _one_group([1.0, 0.0, 0.0, 0.0, -1.0], name="a")  # range 2
    seq_b = _one_group(list(LOGITS), name="b")                 # range 4
    g_b = _g()  # sequence b's group: logits 3, 2, 1, 0, −1, top-2 = {0, 1}, expert 2 cached
    # delta=run: Δavg at b = (2 + 4) / 2 = 3; λ = 0.3 → bonus 0.9: z'(2) = 1.9 < 2 → standard
    run = CachePrior(0.3, 1)
    run.reset(seq_a)
    run.route(_g([1.0, 0.0, 0.0, 0.0, -1.0]), set())
    run.reset(seq_b)
    assert run.route(g_b, {2}) == [0, 1]
    assert run._range_sum == [6.0] and run._range_n == [2]
    # delta=sequence: Δavg restarts at b: 4 → bonus 1.2: z'(2) = 2.2 > 2 → expert 2 served
    seq = CachePrior(0.3, 1, delta="sequence")
    seq.reset(seq_a)
    seq.route(_g([1.0, 0.0, 0.0, 0.0, -1.0]), set())
    seq.reset(seq_b)
    assert seq.route(g_b, {2}) == [0, 2]
    assert seq._range_sum == [4.0] and seq._range_n == [1]
    # priming with the earlier sequence (no routing of it) leaves the same running sums
    primed = make_router("cache-prior:lambda=0.3")
    primed.prime([seq_a])
    primed.reset(seq_b)
    assert primed.route(g_b, {2}) == [0, 1]
    assert router_for_run("cache-prior:lambda=0.3", [seq_a])._range_sum == [2.0]
    assert make_router("cache-prior:lambda=0.3,delta=sequence").spec() == \
        "cache-prior:lambda=0.3,j=1,delta=sequence"
    assert make_router("cache-prior:lambda=0.3").spec() == "cache-prior:lambda=0.3,j=1"


def test_priming_equals_routing_the_earlier_sequences(tmp_path):
    """A run over two sequences: routing the first through the same hook, or priming a fresh
    hook with it, gives the second sequence the same Δavg, hence the same run; the CLI (one
    file, two sequences) reports exactly that, and delta=sequence reports the fresh-hook run.
    The first sequence's logits are wider (σ = 4), so carrying its ranges raises the second's
    Δavg: more bias, fewer misses, less mass than restarting."""
    a = router(8, 4, 40, k=2, seed=11, expand="groups", name="a", sigma=4.0)
    b = router(8, 4, 40, k=2, seed=12, expand="groups", name="b")
    hook = CachePrior(0.4, 1)
    simulate(a, "lru", 8, routing=hook)
    carried = simulate(b, "lru", 8, routing=hook, record=True)
    verify(b, carried)
    primed = simulate(b, "lru", 8, routing=router_for_run("cache-prior:lambda=0.4", [a]))
    assert carried.to_dict() == primed.to_dict()
    fresh = simulate(b, "lru", 8, routing="cache-prior:lambda=0.4")
    assert carried.misses < fresh.misses
    assert carried.extra["retained_mass"] < fresh.extra["retained_mass"]
    write_npz([a, b], tmp_path / "ab.npz")
    rows = {}
    for d in ("run", "sequence"):
        out = _cli(str(tmp_path / "ab.npz"), "--policy", "lru", "--k", "8", "--routing",
                   f"cache-prior:lambda=0.4,delta={d}", "--json")
        assert out.returncode == 0, out.stderr
        rows[d] = json.loads(out.stdout)
    assert [r["misses"] for r in rows["run"]] == \
        [simulate(a, "lru", 8, routing="cache-prior:lambda=0.4").misses, carried.misses]
    assert [r["misses"] for r in rows["sequence"]] == \
        [simulate(a, "lru", 8, routing="cache-prior:lambda=0.4").misses, fresh.misses]
    assert rows["run"][1]["retained_mass"] == carried.extra["retained_mass"]


def _prefilled(t, tokens):
    """``t`` with its first ``tokens`` tokens a prefill phase."""
    cut = int(np.searchsorted(t.token, tokens))
    return dataclasses.replace(t, meta=dict(t.meta, phase_bounds={
        "prefill": [0, cut], "decode": [cut, t.n_requests]}))


def test_phase_decode_serves_a_prefill_as_ranked():
    """``phase=decode`` (Sec. 4.5: "applied only during autoregressive generation"): one layer
    of 4 experts, top 2, k = 3, LRU, max-rank:j=1 without logits (any cached expert fills the
    second slot, lowest id first). Tokens: [0, 1], [2, 3] (the prefill), [3, 2], [1, 0].
    phase=both: token 1 serves [2, 0] (expert 0 is cached); phase=decode serves the prefill
    as ranked, [2, 3] (evicting 0), and routes the decode: token 2 serves [3, 2] (its second
    choice is cached anyway), token 3 [1, 2] (expert 0 is not cached; 2 comes first of the
    cached experts in its ranking 1, 0, 2, 3).
    A trace without a prefill routes the same either way."""
    tr = _prefilled(from_routing(np.array([[[0, 1]], [[2, 3]], [[3, 2]], [[1, 0]]]),
                                 Layout(4, 1), "groups"), 2)
    served = {ph: simulate(tr, "lru", 3, routing=f"max-rank:j=1,phase={ph}", record=True
                           ).events["served_pages"].tolist() for ph in ("both", "decode")}
    assert served["decode"] == [0, 1, 2, 3, 3, 2, 1, 2]
    assert served["both"][2:4] == [2, 0]
    res = simulate(tr, "lru", 3, routing="max-rank:j=1,phase=decode")
    assert res.extra["routing"] == "max-rank:j=1,phase=decode"
    assert res.extra["retained_mass"] == pytest.approx((1 + 1 + 1 + 0.5) / 4)
    plain = dataclasses.replace(tr, meta={})
    assert simulate(plain, "lru", 3, routing="max-rank:j=1,phase=decode").to_dict() == \
        dict(simulate(plain, "lru", 3, routing="max-rank:j=1").to_dict(),
             routing="max-rank:j=1,phase=decode")
    with pytest.raises(PagingError, match="phase must be both or decode"):
        make_router("pruning:j=1,phase=prefill")


def test_prefill_mask_of_a_warm_run_is_each_sequences():
    from paging.trace import prefill_mask
    from paging.warm import concat

    a = _prefilled(router(4, 2, 5, k=2, seed=1, expand="groups", name="a"), 2)
    b = _prefilled(router(4, 2, 4, k=2, seed=2, expand="groups", name="b"), 3)
    joined, _ = concat([a, b])
    assert prefill_mask(a).tolist() == [True] * 8 + [False] * 12
    assert prefill_mask(joined).tolist() == prefill_mask(a).tolist() + prefill_mask(b).tolist()
    assert not prefill_mask(dataclasses.replace(a, meta={})).any()


def test_phase_decode_primes_cache_prior_with_decode_groups_only():
    """Cache-Prior with phase=decode never sees a prefill group: priming a fresh hook with
    the earlier sequence counts only its decode groups in Δavg, and equals routing it."""
    a = _prefilled(router(8, 4, 40, k=2, seed=11, expand="groups", name="a", sigma=4.0), 10)
    b = _prefilled(router(8, 4, 40, k=2, seed=12, expand="groups", name="b"), 10)
    spec = "cache-prior:lambda=0.4,phase=decode"
    hook = make_router(spec)
    simulate(a, "lru", 8, routing=hook)
    assert hook._range_n == [30] * 4  # 40 tokens, 10 of them the prefill, per layer
    carried = simulate(b, "lru", 8, routing=hook)
    primed = router_for_run(spec, [a])
    assert primed._range_n == [30] * 4
    assert simulate(b, "lru", 8, routing=primed).to_dict() == carried.to_dict()


def test_routing_then_the_miss_handler_by_hand():
    """SpecMD Algorithm 1 (routing, then miss handling on what was routed): one layer of 4
    experts, top 2, k = 2, LRU, drop:rank=1. Tokens [0, 1], [2, 3], [1, 3].
    Standard routing: 0 fetched, 1 dropped (rank 1, missing); 2 fetched, 3 dropped; 1 fetched
    (evicting 0), 3 dropped: 3 misses, 3 drops, no hit.
    max-rank:j=1: token 0 as above; token 1 serves [2, 0] (0 is cached): 2 fetched, 0 hits;
    token 2 serves [1, 0] (0 is the first cached expert in its ranking 1, 3, 0, 2): 1 fetched
    (evicting 2, the least recent), 0 hits: 3 misses, 1 drop, 2 hits. The routed ranks are
    0, 1, 0, 2 (0 is the trace's rank 2 of token 1: K, outside its top 2), 0, 2; the drop's
    is 1. Both engines give these numbers (the compiled one decides the drop from the ranks
    it routes in the kernel)."""
    tr = from_routing(np.array([[[0, 1]], [[2, 3]], [[1, 3]]]), Layout(4, 1), "groups")
    plain = simulate(tr, "lru", 2, miss="drop:rank=1")
    assert (plain.misses, plain.extra["dropped"], plain.hits) == (3, 3, 0)
    for engine in ("reference", "fast"):
        res = simulate(tr, "lru", 2, miss="drop:rank=1", routing="max-rank:j=1", record=True,
                       engine=engine)
        assert (res.misses, res.extra["dropped"], res.hits) == (3, 1, 2)
        assert res.events["served_pages"].tolist() == [0, 1, 2, 0, 1, 0]
        assert res.events["dropped"].tolist() == [1]
        assert res.extra["replaced_ranks"] == {"1": 1}
        assert res.extra["routing"] == "max-rank:j=1" and res.extra["miss"] == "drop:rank=1"
        verify(tr, res)


def test_cli_routing_with_miss_handling_and_a_model(tmp_path):
    """paging simulate --routing --miss --prefetch --model: one row with the routing's quality
    proxies, the handler's and the prefetcher's counters and the timeline of the served
    requests (their drops and prefetches on the copy stream), equal to the run and the
    timeline assembled here by hand."""
    from paging.cost.setup import CostSetup
    from paging.cost.timeline import timeline_run
    from paging.predict.prefetch import Prefetcher, make_prefetch_predictor, make_strategy
    from paging.routing.served import served_trace

    spec = "zipf:n=8,layers=32,tokens=12,topk=2,seed=4"
    out = _cli(spec, "--policy", "lru", "--k", "40", "--model", "mixtral-8x7b", "--routing",
               "max-rank:j=1", "--miss", "drop:rank=1", "--prefetch", "frequency", "--verify",
               "--json")
    assert out.returncode == 0, out.stderr
    (row,) = json.loads(out.stdout)
    assert row["dropped"] > 0 and row["prefetches"] > 0 and 0 < row["retained_mass"] < 1
    assert row["requests"] == row["hits"] + row["misses"] + row["dropped"]
    (tr,) = load(spec, expand="groups")
    cm = CostSetup.from_names("mixtral-8x7b")
    costs, sizes = cm.weights(tr)
    res = simulate(tr, "lru", 40, costs=costs, sizes=sizes, record=True, miss="drop:rank=1",
                   routing="max-rank:j=1",
                   prefetch=Prefetcher(make_prefetch_predictor("frequency"), make_strategy(None)))
    tm = timeline_run(served_trace(tr, res), res, model=cm.model, precision=cm.precision,
                      hardware=cm.hardware, fetch_ms=costs, sizes=sizes)
    assert {f: row[f] for f in ("misses", "dropped", "prefetches", "retained_mass")} == {
        f: res.to_dict()[f] for f in ("misses", "dropped", "prefetches", "retained_mass")}
    assert (row["tokens_per_s"], row["prefetch_late"], row["time_ms"]) == (
        tm.tokens_per_s, tm.prefetch_late, tm.time_ms)


def test_cache_prior_bad_delta():
    with pytest.raises(PagingError, match="delta must be run or sequence"):
        make_router("cache-prior:lambda=0.3,delta=token")


# -- λ on full logits, and what a top-2 trace leaves of it -------------------------------------
def test_lambda_changes_decisions_on_full_logits():
    """On a full-logit trace (the router: generator) λ = 0.01, 0.5 and 1 route differently:
    more bias, fewer misses and less retained mass."""
    tr = router(8, 4, 200, k=2, seed=5, expand="groups")
    got = {lam: simulate(tr, "lru", 12, routing=f"cache-prior:lambda={lam}")
           for lam in (0.01, 0.5, 1.0)}
    misses = [got[lam].misses for lam in (0.01, 0.5, 1.0)]
    mass = [got[lam].extra["retained_mass"] for lam in (0.01, 0.5, 1.0)]
    assert misses[0] > misses[1] > misses[2]
    assert mass[0] > mass[1] > mass[2]
    assert mass[0] < 1.0 and misses[0] < simulate(tr, "lru", 12).misses


def test_top2_scores_only_cache_prior_is_max_rank_for_every_lambda():
    """Without logits (top-2 gate scores only, as the Mixtral logs) the unknown experts get the
    2nd logit, so with J = 1 every λ > 0 serves what max-rank:j=1 serves (module docstring);
    λ matters with J = 0."""
    import dataclasses

    full = router(8, 4, 120, k=2, seed=2, expand="groups")
    sc = full.score.reshape(-1, 2)
    scores = (sc / sc.sum(axis=1, keepdims=True)).ravel()  # renormalised over the top 2
    tr = dataclasses.replace(full, logits=None, score=scores)
    mr = simulate(tr, "lru", 10, routing="max-rank:j=1", record=True)
    for lam in (0.01, 0.5, 1.0):
        cp = simulate(tr, "lru", 10, routing=f"cache-prior:lambda={lam}", record=True)
        assert np.array_equal(cp.events["served_pages"], mr.events["served_pages"])
        assert cp.extra["retained_mass"] == mr.extra["retained_mass"]
    j0 = {lam: simulate(tr, "lru", 10, routing=f"cache-prior:lambda={lam},j=0").misses
          for lam in (0.01, 1.0)}
    assert j0[0.01] != j0[1.0]


@pytest.mark.parametrize("argv, message", [
    (["no-such-trace.jsonl"], "error: no-such-trace.jsonl: no such trace file"),
    (["cyclic:n=4,layers=2,rounds=5"], "error: trace cyclic:n=4,layers=2,rounds=5: fitting "
                                       "needs token and rank columns"),
])
def test_fit_bad_input_is_one_line_and_status_2(capsys, argv, message):
    """``python -m paging.routing.fit`` (docs/guide/routing.md) printed a traceback and exited
    1 on a missing file or a trace without token and rank columns."""
    from paging.routing.fit import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1 and "Traceback" not in err
