"""Warm caches (issue 19): sequences back to back through one cache and one policy state."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from conftest import TRACES, needs_traces
from hypothesis import given, settings
from hypothesis import strategies as st

from paging import cli
from paging.cost import get_hardware, get_model, get_precision, page_costs, page_sizes
from paging.cost.arith import model_bytes, share_budget
from paging.cost.timeline import timeline
from paging.errors import PagingError
from paging.layout import Layout
from paging.run import RunSpec, run
from paging.simulate import simulate
from paging.trace import from_routing
from paging.verify import verify
from paging.warm import concat, order, split

POLICIES = ["lru", "llru", "least-stale", "fld", "lfu", "marking", "belady", "lru-dist",
            "token-decay", "arc"]


def _table(rng, T, L, n, K):
    return np.stack([[rng.permutation(n)[:K] for _ in range(L)] for _ in range(T)])


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), policy=st.sampled_from(POLICIES),
       mode=st.sampled_from(["rounds", "groups"]), k=st.integers(1, 9),
       sizes=st.lists(st.integers(1, 5), min_size=1, max_size=3))
def test_warm_run_equals_the_concatenated_sequence_as_one_run(seed, policy, mode, k, sizes):
    # the specification: a warm run is the sequences' routing tables joined along the tokens and
    # simulated as ONE sequence (built here independently of paging.warm, from the tables)
    rng = np.random.default_rng(seed)
    lay = Layout(n_experts=4, n_layers=3)
    K = 2
    tables = [_table(rng, T, 3, 4, K) for T in sizes]
    seqs = [from_routing(t, lay, expand=mode, name=f"s{i}") for i, t in enumerate(tables)]
    joined = from_routing(np.concatenate(tables), lay, expand=mode, name="joined")
    warm, _ = concat(seqs)
    assert np.array_equal(warm.pages, joined.pages) and np.array_equal(warm.steps, joined.steps)
    a = simulate(warm, policy, k, record=True, seed=3)
    b = simulate(joined, policy, k, record=True, seed=3, engine="reference")
    assert np.array_equal(a.hit_mask, b.hit_mask) and a.misses == b.misses
    verify(warm, a)
    parts = split(warm, a)
    assert [p["requests"] for p in parts] == [s.n_requests for s in seqs]
    assert sum(p["misses"] for p in parts) == a.misses


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), policy=st.sampled_from(["lru", "lfu", "arc", "marking"]),
       k=st.integers(1, 9), sizes=st.lists(st.integers(1, 5), min_size=1, max_size=3),
       option=st.sampled_from([("miss", "drop:rank=1"), ("miss", "substitute"),
                               ("miss", "fetch-priority"), ("routing", "pruning:j=1"),
                               ("routing", "max-rank:j=1")]),
       engine=st.sampled_from(["auto", "reference"]))
def test_per_sequence_rows_of_a_handled_or_routed_warm_run_add_up(seed, policy, k, sizes,
                                                                  option, engine):
    """paging simulate --warm with a miss handler or a routing hook: each sequence's row
    counts its own requests (the served ones, routed, with the quality proxies of its own
    groups), a dropped or substituted request being neither hit nor miss as in the run's
    counts, so the rows add up to the run's requests, hits, misses, drops, substitutes and
    low-precision fetches, and the first sequence's row is its cold run. (Before, a routed
    warm run's rows were cut at the trace's request indices, and a handled one counted drops
    as misses.)"""
    from paging.cost import budget_bytes
    from paging.run import RunSpec, run

    rng = np.random.default_rng(seed)
    lay = Layout(n_experts=8, n_layers=32)  # (mixtral-8x7b's shape, for fetch-priority)
    seqs = []
    for i, T in enumerate(sizes):
        e = _table(rng, T, 32, 8, 2)
        top = rng.choice([0.5, 0.6, 0.75, 0.9], (T, 32, 1))
        seqs.append(from_routing(e, lay, expand="groups", name=f"s{i}",
                                 scores=np.concatenate([top, 1 - top], axis=2)))
    cap = {"k": k * 8}
    if option[1] == "fetch-priority":
        cap = {"budget": budget_bytes(k), "model": "mixtral-8x7b"}
    spec = RunSpec(policy, **cap, **{option[0]: option[1]}, warm=True, seed=seed,
                   engine=engine)
    rows = run(spec, seqs)
    total, parts = rows[-1], rows[:-1]
    assert total["warm_total"] and len(parts) == len(seqs)
    for f in ("requests", "hits", "misses", "dropped", "substituted"):
        if f in total:
            assert sum(p[f] for p in parts) == total[f], f
    if option[0] == "miss":
        assert all(p["requests"] == p["hits"] + p["misses"] + p["dropped"] + p["substituted"]
                   for p in parts)
    if option[1] == "fetch-priority":
        assert sum(p["low_precision_fetches"] for p in parts) == sum(
            list(total["fetch_levels"].values())[1:])
    (cold,) = run(RunSpec(policy, **cap, **{option[0]: option[1]}, seed=seed,
                          engine=engine), seqs[:1])
    for f in ("requests", "hits", "misses", "dropped", "substituted", "retained_mass",
              "top1_changed", "kl"):
        assert parts[0].get(f) == cold.get(f), f
    if option[0] == "routing":  # each row's quality proxies, over its own groups
        assert all(0 < p["retained_mass"] <= 1 and 0 <= p["top1_changed"] <= 1
                   for p in parts)
        assert min(p["retained_mass"] for p in parts) <= total["retained_mass"] \
            <= max(p["retained_mass"] for p in parts) + 1e-12


def test_first_sequence_is_its_cold_run_and_the_second_starts_warm():
    # pages by hand: l = 2, n = 2 (layers {0,1}, {2,3}), k = 2, LRU; both sequences request
    # 0 2 | 0 2. Cold, each misses twice (4 requests, 2 misses). Warm, the second finds 0 and 2
    # cached: 0 misses, so the run has 2 misses in all.
    lay = Layout(n_experts=2, n_layers=2)
    tab = np.array([[[0], [0]], [[0], [0]]])
    s1, s2 = (from_routing(tab, lay, name=n) for n in ("a", "b"))
    warm, _ = concat([s1, s2])
    r = simulate(warm, "lru", 2, record="hits")
    assert [p["misses"] for p in split(warm, r)] == [2, 0]
    assert simulate(s2, "lru", 2).misses == 2
    assert [p["trace"] for p in split(warm, r)] == ["a", "b"]


def test_order_by_seed_is_a_reproducible_permutation():
    names = [f"s{i}" for i in range(6)]
    seqs = [from_routing(np.zeros((1, 1, 1), int), Layout(1, 1), name=n) for n in names]
    assert [t.name for t in order(seqs)] == names
    a = [t.name for t in order(seqs, 7)]
    assert a == [t.name for t in order(seqs, 7)] and sorted(a) == names
    assert a == [names[i] for i in np.random.default_rng(7).permutation(6)]


def test_concat_refuses_other_layouts_modes_and_cut_passes():
    lay = Layout(n_experts=2, n_layers=2)
    a = from_routing(np.zeros((2, 2, 1), int), lay, name="a")
    with pytest.raises(PagingError, match="has 3 layers x 2 experts, expected 2 x 2"):
        concat([a, from_routing(np.zeros((1, 3, 1), int), Layout(2, 3), name="b")])
    with pytest.raises(PagingError, match="is in groups mode, expected rounds"):
        concat([a, from_routing(np.zeros((1, 2, 1), int), lay, expand="groups", name="c")])
    with pytest.raises(PagingError, match="ends on layer 0, expected its last forward pass"):
        concat([a.head(3), a])


def test_timeline_per_sequence_by_hand():
    # one decode token per sequence, l = 1, n = 2, top-1, k = 1: sequence a requests expert 0,
    # sequence b expert 0 again. Warm: a misses (copy f ms), b hits. Each token: non-expert work
    # e, expert compute c. a: e, wait for the copy (lands at e + f), compute c -> ends at
    # e + f + c; b: e + c. The timeline's per-sequence records say exactly that.
    lay = Layout(n_experts=2, n_layers=1)
    tab = np.array([[[0]]])
    s1, s2 = (from_routing(tab, lay, name=n) for n in ("a", "b"))
    warm, _ = concat([s1, s2])
    model, q, hw = get_model("mixtral-8x7b"), get_precision("int4"), get_hardware("link-5gbps")
    from paging.cost.arith import expert_compute_ms, non_expert_ms

    f = page_costs(model, q, hw, np.zeros(256, np.int64))[:2]
    sizes = page_sizes(model, q)[:2]
    r = simulate(warm, "lru", 1, record="hits")
    tm = timeline(warm, r.hit_mask, model=model, precision=q, hardware=hw, fetch_ms=f,
                  sizes=sizes)
    e, c = non_expert_ms(model, hw, 1), expert_compute_ms(model, q, hw, 1)
    a, b = tm.per_sequence
    assert a["start_ms"] == 0 and a["end_ms"] == pytest.approx(e + f[0] + c)
    assert b["start_ms"] == a["end_ms"] and b["decode_ms"] == pytest.approx(e + c)
    assert a["ttft_ms"] is None and b["decode_tokens"] == 1
    assert tm.time_ms == pytest.approx(b["end_ms"])


def test_share_budget_is_a_share_of_the_16_bit_model():
    m = get_model("mixtral-8x7b")
    # SpecMD Table 3: Mixtral 86.99 (GiB) in all; 32 x 8 experts of 3 x 4096 x 14336 x 2 bytes
    assert model_bytes(m) == 256 * 3 * 4096 * 14336 * 2 + 2 * m.non_expert_params
    assert round(model_bytes(m) / 2**30, 2) == 86.99
    assert share_budget(m, 5) == model_bytes(m) * 5 // 100
    assert share_budget(m, 100) == model_bytes(m)
    for bad in (0, -1, 101, float("nan"), True):
        with pytest.raises(PagingError, match="percentage in"):
            share_budget(m, bad)


def _cli(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


GEN = "zipf:n=4,layers=3,tokens=30,seed=1"


def test_cli_warm_rows_and_errors(capsys, tmp_path):
    code, out, _ = _cli(capsys, "simulate", GEN, "zipf:n=4,layers=3,tokens=20,seed=2", "--warm",
                        "--policy", "lru", "--k", "5", "--json")
    assert code == 0
    rows = json.loads(out)
    assert [r.get("position") for r in rows] == [0, 1, None]
    assert rows[2]["warm_total"] and rows[2]["misses"] == rows[0]["misses"] + rows[1]["misses"]
    cold = json.loads(_cli(capsys, "simulate", GEN, "--policy", "lru", "--k", "5",
                           "--json")[1])
    assert rows[0]["misses"] == cold[0]["misses"]
    code, _, err = _cli(capsys, "simulate", GEN, "--warm-seed", "1", "--policy", "lru",
                        "--k", "5")
    assert code == 2 and "needs --warm" in err
    code, _, err = _cli(capsys, "simulate", GEN, "zipf:n=4,layers=2,tokens=5,seed=2", "--warm",
                        "--policy", "lru", "--k", "5")
    assert code == 2 and "expected 3 x 4" in err
    code, _, err = _cli(capsys, "simulate", GEN, "--policy", "lru", "--budget-pct", "5")
    assert code == 2 and "needs --model" in err


@needs_traces
def test_warm_prefill_after_a_decode_sequence_golden():
    # issue 19: the prefill+decode dump after the decode log at 43 int4 experts, batched prefill
    import subprocess
    import sys

    d = f"{TRACES}/mixtral-8x7b-instruct-vllm"
    base = [sys.executable, "-m", "paging", "simulate", f"{d}/humaneval_2_routing.jsonl",
            f"{d}/humaneval_p0_prefill_decode_raw.jsonl", "--policy", "llru", "--policy",
            "lru-dist", "--k", "43", "--model", "mixtral-8x7b", "--precision", "int4",
            "--prefill", "batched", "--json"]
    warm = json.loads(subprocess.run(base + ["--warm"], capture_output=True, text=True,
                                     check=True).stdout)
    dump = {r["policy"]: r for r in warm if r.get("position") == 2}
    assert dump["llru"]["prefill_misses"] == 221 and dump["lru-dist"]["prefill_misses"] == 213
    assert round(dump["lru-dist"]["ttft_ms"]) == 4227 and round(dump["llru"]["ttft_ms"]) == 4385
    cold = json.loads(subprocess.run(base, capture_output=True, text=True, check=True).stdout)
    # cold, every one of the 256 experts is fetched once in the batched prefill
    assert {round(r["ttft_ms"]) for r in cold if "prefill" in r["trace"]} == {5079}


def test_sequences_without_token_ids_join_with_their_rounds_as_tokens():
    """A rounds trace with ranks and no token column (a CSV without it) made one token per
    round once joined with one that has ids, which the token rule refuses ("token 1 starts
    with rank 1"): its ids are now made from the ranks, equal to those of the same trace with
    its ids. Joined with sequences without ids only, the joined trace has none (a warm run of
    one such sequence made 308 misses with token-match where the cold run made 315)."""
    from paging.layout import Layout
    from paging.trace import Trace, from_routing
    from paging.warm import concat

    lay = Layout(4, 2)
    rng = np.random.default_rng(0)
    t = from_routing(np.stack([rng.permutation(4)[:2] for _ in range(6)]).reshape(3, 2, 2),
                     lay, "rounds")
    a = Trace(lay, t.pages, t.steps, "a", None, t.rank)
    b = Trace(lay, t.pages, t.steps, "b", t.token, t.rank)
    joined, _ = concat([a, b, a])
    assert joined.token.tolist() == (t.token.tolist() + (t.token + 3).tolist()
                                     + (t.token + 6).tolist())
    # no sequence with ids: none joined, so a token is a pass, as in a cold run of each
    assert concat([a, a])[0].token is None and concat([a, a])[0].rank is not None
    from paging import simulate

    cold = simulate(a, "token-match", 3).misses
    assert simulate(concat([a])[0], "token-match", 3).misses == cold


def test_host_tier_of_a_batched_run_is_placed_by_the_requests_as_read(tmp_path):
    """ℓ = 1, n = 3, top-1, host DRAM for one expert: a prompt of three tokens on expert 0,
    then decode 1, 2, 1. The trace requests 0 three times, 1 twice, 2 once: expert 0 in host
    DRAM (H ms a fetch), 1 and 2 on the SSD (S ms). Batched, the prefill is one request of 0;
    at one expert's budget the run fetches 0, 1, 2, 1: H + 3S, cold and warm. A warm run
    placed the tier by the batched requests (0 once, 1 twice: 2H + 2S), and so did a cold
    run for a cascade's lower levels (fetch-lowest-bit: every fetch at int4)."""
    (tmp_path / "m.toml").write_text("n_layers = 1\nn_experts = 3\ntop_k = 1\nd_model = 1024\n"
                                     "d_ff = 512\nn_matrices = 3\nnon_expert_params = 1000\n")
    model = str(tmp_path / "m.toml")
    m = get_model(model)
    tr = from_routing(np.array([[[0]], [[0]], [[0]], [[1]], [[2]], [[1]]]), m.layout,
                      meta={"phase_bounds": {"prefill": [0, 3], "decode": [3, 6]}})
    hw = get_hardware("link-5gbps")
    for q, miss, fetched in (("bf16", None, "bf16"), ("int8", "fetch-lowest-bit", "int4")):
        H, S = page_costs(m, fetched, hw, np.array([0, 1, 1], np.int8))[:2]
        size = m.expert_bytes(get_precision(q))
        spec = RunSpec("lru", budget=size, model=model, precision=q, host_gb=size / 1e9,
                       prefill="batched", miss=miss)
        cold = run(spec, [tr])[0]
        warm = run(dataclasses.replace(spec, warm=True), [tr])[-1]
        assert cold["misses"] == warm["misses"] == 4
        assert cold["cost"] == pytest.approx(H + 3 * S, rel=1e-12)
        assert warm["cost"] == pytest.approx(H + 3 * S, rel=1e-12)
