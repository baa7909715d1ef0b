"""The latency timeline (paging.cost.timeline) and ``paging simulate --model``.

Hand-computed stream schedules, the batched-prefill transform on a small trace, the timeline
against the cost model's formulas on a preset, and the command line (JSON fields, bad input).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import needs_traces

from paging import Layout, from_routing, simulate
from paging.cli import main
from paging.cost import (
    expert_compute_ms,
    get_hardware,
    get_model,
    get_precision,
    non_expert_ms,
    page_costs,
    page_sizes,
    transfer_ms,
)
from paging.cost.timeline import _timeline, batch_prefill, timeline


def test_stream_schedule_by_hand():
    # group 0 = requests 0, 1 (step 0); group 1 = request 2 (step 1).
    # group 0: non-expert 0.5 -> c = 0.5; request 0 misses: copy 0.5..5.5; request 1 hits:
    #   computes 0.5..1.5; request 0 waits for its transfer: stall 4, computes 5.5..6.5.
    # group 1: non-expert 0.5 -> c = 7; request 2 misses: copy 7..9 (the copy stream is free
    #   since 5.5): stall 2, computes 9..10. Total 10 ms, stall 6 ms, copy stream busy 7 ms.
    none_f, none_i = np.zeros(0), np.zeros(0, np.int64)
    args = (np.array([0, 0, 1]), np.array([1, 0, 1], np.int8), np.array([0, 1, 2]),
            np.array([5.0, 0.0, 2.0]), np.array([10, 20, 30]), none_f, none_i, none_i, none_i,
            np.zeros(0, bool), np.array([1.0, 1.0, 1.0]), 0.0, np.array([0.5, 0.0, 0.5]), 0.0)
    total, at_marks, stall, busy, nbytes, late = _timeline(*args, np.array([2, 3]))
    # group 0 (requests 0, 1) ends at 6.5, group 1 (request 2) at 10
    assert total == 10.0 and at_marks.tolist() == [6.5, 10.0]
    assert stall == 6.0 and busy == 7.0 and nbytes == 10 + 30 and late == 0


def test_transfers_queue_on_one_copy_stream():
    # one group of three misses of 2 ms each: transfers land at 2, 4, 6; each expert computes
    # 1 ms as soon as it has landed: 2..3, 4..5, 6..7 -> stalls 2 + 1 + 1 = 4, total 7.
    # (constants instead of per-request arrays: compute 1 ms, no non-expert work)
    none_f, none_i = np.zeros(0), np.zeros(0, np.int64)
    total, _, stall, busy, _, _ = _timeline(
        np.zeros(3, np.int64), np.ones(3, np.int8), np.arange(3), np.full(3, 2.0),
        np.ones(3, np.int64), none_f, none_i, none_i, none_i, np.zeros(0, bool), none_f, 1.0,
        none_f, 0.0, none_i)
    assert total == 7.0 and stall == 4.0 and busy == 6.0


LAY = Layout(n_experts=3, n_layers=2)
# two prompt tokens, top-1: token 0 -> layer 0 expert 0, layer 1 expert 1; token 1 -> expert 2,
# expert 1; then one decode token: expert 0, expert 2. Pages: layer·3 + expert.
ROUTING = np.array([[[0], [1]], [[2], [1]], [[0], [2]]])


def small_trace():
    meta = {"phase_bounds": {"prefill": [0, 4], "decode": [4, 6]}}
    return from_routing(ROUTING, LAY, expand="rounds", meta=meta)


def test_batch_prefill_by_hand():
    tr = small_trace()
    assert tr.pages.tolist() == [0, 4, 2, 4, 0, 5]
    bt, batch = batch_prefill(tr)
    # prefill pass: layer 0 needs experts 0 and 2 (one token each), layer 1 expert 1 (two
    # tokens); the decode token follows as groups
    assert bt.pages.tolist() == [0, 2, 4, 0, 5]
    assert bt.steps.tolist() == [0, 0, 1, 2, 3]
    assert batch.tolist() == [1, 1, 2, 1, 1]
    assert bt.expand == "groups" and bt.meta["phase_bounds"] == {"prefill": [0, 3],
                                                                 "decode": [3, 5]}


def test_timeline_matches_the_cost_model_formulas():
    """Every request misses (k = 1 on a trace of distinct pages per layer): the total is the sum
    of non-expert, expert-compute and transfer times, as the cost model computes them."""
    m = get_model("granite-3.0-1b-a400m")
    q, hw = get_precision("int4"), get_hardware("pcie4")
    table = np.arange(3)[:, None, None] + np.zeros((3, 24, 1), np.int64)  # 3 tokens, distinct
    tr = from_routing(table, m.layout, expand="groups")
    sizes = page_sizes(m, q)
    fetch = page_costs(m, q, hw, np.zeros(m.layout.n_pages, np.int8))
    r = simulate(tr, "lru", 1, costs=fetch, sizes=sizes, record=True)
    assert r.misses == tr.n_requests == 72
    tm = timeline(tr, r.hit_mask, model=m, precision=q, hardware=hw, fetch_ms=fetch,
                  sizes=sizes)
    per_request = (non_expert_ms(m, hw, 1) + transfer_ms(m.expert_bytes(q), hw)
                   + expert_compute_ms(m, q, hw, 1))
    assert tm.time_ms == pytest.approx(72 * per_request, rel=1e-12)
    assert tm.stall_ms == pytest.approx(r.cost, rel=1e-12)  # nothing overlaps a demand fetch
    assert tm.bytes_moved == r.bytes_fetched == 72 * m.expert_bytes(q)
    assert tm.ttft_ms is None and tm.decode_tokens == 3
    assert tm.tokens_per_s == pytest.approx(3 / (tm.time_ms / 1e3))


def test_timeline_splits_prefill_and_decode():
    m = get_model(str(_tiny_model_file()))
    q, hw = get_precision("bf16"), get_hardware("link-5gbps")
    bt, batch = batch_prefill(small_trace())
    sizes = page_sizes(m, q)
    fetch = page_costs(m, q, hw, np.zeros(6, np.int8))
    r = simulate(bt, "lru", 6, costs=fetch, sizes=sizes, record=True)
    tm = timeline(bt, r.hit_mask, model=m, precision=q, hardware=hw, fetch_ms=fetch,
                  sizes=sizes, batch=batch)
    # prefill: layer 0 (2 tokens: non-expert at 2 tokens, experts 0 and 2 fetched, 1 token
    # each), layer 1 (expert 1 fetched, 2 tokens); decode: page 0 hits, page 5 misses
    c1, c2 = expert_compute_ms(m, q, hw, 1), expert_compute_ms(m, q, hw, 2)
    f = transfer_ms(m.expert_bytes(q), hw)
    # layer 0: both transfers queue: land f, 2f; expert 0 computes f..f+c1, expert 2 waits
    # until 2f (> f + c1 here), so the layer ends at n + 2f + c1
    ttft = non_expert_ms(m, hw, 2) + 2 * f + c1 + f + c2 + non_expert_ms(m, hw, 2)
    assert tm.ttft_ms == pytest.approx(ttft, rel=1e-12)
    decode = non_expert_ms(m, hw, 1) + c1 + non_expert_ms(m, hw, 1) + f + c1
    assert tm.decode_ms == pytest.approx(decode, rel=1e-12)
    assert tm.decode_tokens == 1 and tm.tpot_ms == pytest.approx(decode)


def _tiny_model_file(tmp=None):
    import tempfile
    from pathlib import Path

    d = Path(tmp or tempfile.mkdtemp())
    p = d / "tiny.json"
    p.write_text(json.dumps({"name": "tiny", "n_layers": 2, "n_experts": 3, "top_k": 1,
                             "d_model": 1024, "d_ff": 2048, "n_matrices": 3,
                             "non_expert_params": 4_000_000}))
    return p


def test_cli_model_fields_and_consistency(capsys):
    assert main(["simulate", "uniform:n=8,layers=32,tokens=40,seed=1", "--policy", "lru",
                 "--policy", "landlord", "--budget-gb", "4.35", "--model", "mixtral-8x7b",
                 "--precision", "int4", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    m = get_model("mixtral-8x7b")
    eb = m.expert_bytes("int4")
    for row in rows:
        for f in ("cost", "bytes_fetched", "capacity", "stall_ms", "time_ms", "tokens_per_s",
                  "model", "precision", "hardware", "budget_bytes"):
            assert f in row
        assert row["capacity"] == 4_350_000_000 // eb == 43 and row["k"] is None
        assert row["bytes_fetched"] == row["misses"] * eb
        assert row["cost"] == pytest.approx(row["misses"] * transfer_ms(eb, get_hardware(
            "link-5gbps")), rel=1e-12)
        assert row["tokens_per_s"] == pytest.approx(40 / (row["time_ms"] / 1e3))
    # a budget of 43 experts and k = 43 pages are the same cache
    assert main(["simulate", "uniform:n=8,layers=32,tokens=40,seed=1", "--policy", "lru",
                 "--k", "43", "--model", "mixtral-8x7b", "--precision", "int4", "--json"]) == 0
    by_k = json.loads(capsys.readouterr().out)[0]
    assert by_k["misses"] == rows[0]["misses"] and by_k["time_ms"] == rows[0]["time_ms"]


def test_cli_two_tier_costs_differ(capsys):
    """--host-gb puts the most requested experts in DRAM and the rest on the SSD tier: SSD
    fetches cost more, so the same misses cost more than with everything in DRAM."""
    args = ["simulate", "zipf:n=8,layers=32,tokens=200,seed=2", "--policy", "lru", "--k", "64",
            "--model", "mixtral-8x7b", "--precision", "int4", "--hardware", "pcie4", "--json"]
    assert main(args) == 0
    one = json.loads(capsys.readouterr().out)[0]
    assert main(args + ["--host-gb", "10"]) == 0
    two = json.loads(capsys.readouterr().out)[0]
    assert one["misses"] == two["misses"] and two["cost"] > one["cost"]


@pytest.mark.parametrize("extra,msg", [
    (["--k", "4", "--budget-gb", "1"], "not both"),
    (["--budget-gb", "1"], "needs page sizes"),
    (["--k", "4", "--precision", "int4"], "need --model"),
    (["--k", "4", "--model", "no-such-model"], "unknown model"),
    (["--k", "4", "--model", "mixtral-8x7b"], "has 32 layers x 8 experts, the trace"),
    (["--k", "4", "--prefill", "batched"], "needs --model"),
    (["--budget-gb", "-1", "--model", "granite-3.0-1b-a400m"], "budget must be"),
])
def test_cli_bad_input_is_one_line(capsys, extra, msg):
    rc = main(["simulate", "cyclic:n=2,layers=2,rounds=3", "--policy", "lru", *extra])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and err.startswith("error: ") and msg in err


@needs_traces
def test_mixtral_prefill_batched_end_to_end(capsys):
    """The raw prefill+decode dump at SpecMD's setting (4-bit, 5 GB/s, 5% of the 16-bit model =
    4.35 GB = 43 experts): the batched prefill loads each layer's experts once."""
    assert main(["simulate", "mixtral-8x7b-instruct-vllm/humaneval_p0_prefill_decode_raw.jsonl",
                 "--policy", "lru", "--budget-gb", "4.35", "--model", "mixtral-8x7b",
                 "--precision", "int4", "--prefill", "batched", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    # 32 prefill groups (all 8 experts of each layer are used by the 59 complete prompt
    # tokens) + 35 decode tokens x 32 layers x 2 experts
    assert row["requests"] == 256 + 35 * 64
    assert row["ttft_ms"] > 0 and row["tokens_per_s"] > 0
