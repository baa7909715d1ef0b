"""The latency timeline (paging.cost.timeline) and ``paging simulate --model``.

Hand-computed stream schedules, the batched-prefill transform on a small trace, the timeline
against the cost model's formulas on a preset, and the command line (JSON fields, bad input).
"""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
from conftest import needs_traces
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import topk_traces

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
from paging.errors import PagingError
from paging.warm import concat

#: the kernel's last arguments for today's timeline: no per-token overhead, one copy stream
ONE_STREAM = (np.zeros(0, bool), 0.0, 1, True, 0.0, np.zeros(0), np.zeros(0, bool))


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
    total, at_marks, stall, busy, nbytes, late, _ = _timeline(*args, np.array([2, 3]),
                                                              *ONE_STREAM)
    # group 0 (requests 0, 1) ends at 6.5, group 1 (request 2) at 10
    assert total == 10.0 and at_marks.tolist() == [6.5, 10.0]
    assert stall == 6.0 and busy == 7.0 and nbytes == 10 + 30 and late == 0


def test_a_step_starts_from_the_copy_stream_it_inherits():
    """A serving step with a prefetcher inherits the copy stream (busy until x0 = 5) and a page
    in flight (page 0 lands at 3, prefetched and unused). One group: request 0 hits page 0,
    request 1 misses page 1 (2 ms). Non-expert 0.5 -> c = 0.5; the hit waits for page 0:
    stall 2.5, late 1, computes 3..4; the miss queues behind x0: lands 7, stall 3, computes
    7..8. Total 8, stall 5.5, busy 2, the stream free at 7; page 0 no longer fresh."""
    none_f, none_i = np.zeros(0), np.zeros(0, np.int64)
    ready, fresh = np.array([3.0, 0.0]), np.array([True, False])
    out = _timeline(np.array([0, 0]), np.array([0, 1], np.int8), np.array([0, 1]),
                    np.array([1.0, 2.0]), np.array([10, 20]), none_f, none_i, none_i, none_i,
                    np.zeros(0, bool), np.array([1.0, 1.0]), 0.0, np.array([0.5, 0.0]), 0.0,
                    none_i, np.zeros(0, bool), 0.0, 1, True, 5.0, ready, fresh)
    total, _, stall, busy, nbytes, late, x = out
    assert (total, stall, busy, nbytes, late, x) == (8.0, 5.5, 2.0, 20, 1, 7.0)
    assert ready.tolist() == [3.0, 0.0] and fresh.tolist() == [False, False]


def test_transfers_queue_on_one_copy_stream():
    # one group of three misses of 2 ms each: transfers land at 2, 4, 6; each expert computes
    # 1 ms as soon as it has landed: 2..3, 4..5, 6..7 -> stalls 2 + 1 + 1 = 4, total 7.
    # (constants instead of per-request arrays: compute 1 ms, no non-expert work)
    none_f, none_i = np.zeros(0), np.zeros(0, np.int64)
    total, _, stall, busy, _, _, _ = _timeline(
        np.zeros(3, np.int64), np.ones(3, np.int8), np.arange(3), np.full(3, 2.0),
        np.ones(3, np.int64), none_f, none_i, none_i, none_i, np.zeros(0, bool), none_f, 1.0,
        none_f, 0.0, none_i, *ONE_STREAM)
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
    (["--budget-gb", "-1", "--model", "granite-3.0-1b-a400m"],
     "--budget-gb must be a number of GB > 0, got -1.0"),
    # (below one byte the host tier said "a budget of 1e-12 GB is ...", naming no option)
    (["--k", "2", "--model", "granite-3.0-1b-a400m", "--host-gb", "1e-12"],
     "error: --host-gb: a budget of 1e-12 GB is less than one byte"),
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


# -- sensitivity options: per-token overhead, a second prefetch stream ------------------------
from paging.cost.timeline import timeline_options, timeline_run  # noqa: E402

STEPS4 = np.arange(4)  # two tokens x two layers, one request per group
NEW_TOKEN = np.array([True, False, True, False])


def _one_mark(res):
    """A kernel's result with its clock readings for one mark as a number (0.0 for none)."""
    total, at_marks, *rest = res
    return (total, float(at_marks[0]) if at_marks.size else 0.0, *rest)


def _marks(mark):
    return np.array([mark] if mark else [], np.int64)


def _ext(kind, fetch, pf_at, pf_page, *, lay=0.0, overhead=0.0, streams=1, shared=True,
         mark=0):
    none_f, none_i = np.zeros(0), np.zeros(0, np.int64)
    return _one_mark(_timeline(
        STEPS4, np.array(kind, np.int8), np.arange(4), np.asarray(fetch, float),
        np.full(len(fetch), 10, np.int64), none_f, none_i, np.array(pf_at, np.int64),
        np.array(pf_page, np.int64), np.zeros(0, bool), none_f, 1.0, none_f, lay, _marks(mark),
        NEW_TOKEN, overhead, streams, shared, 0.0, none_f, np.zeros(0, bool))[:6])


def test_token_overhead_by_hand():
    """Token 0 = groups 0, 1; token 1 = groups 2, 3; non-expert 0.5, expert 1 ms; request 0
    misses (3 ms), request 3 misses (4 ms); overhead o = 2 ms at each token's first group.
    o = 0: g0 0.5 -> lands 3.5 (stall 3) -> 4.5; g1 5.0 -> 6.0; g2 6.5 -> 7.5; g3 8.0 -> lands
    12 (stall 4) -> 13. o = 2: g0 2.5 -> lands 5.5 -> 6.5; g1 7 -> 8; g2 8 + 2 + 0.5 = 10.5 ->
    11.5; g3 12 -> lands 16 -> 17. The end of token 0 (mark 2): 6.0 and 8.0."""
    fetch = [3.0, 0.0, 0.0, 4.0]
    kind = [1, 0, 0, 1]
    t0 = _ext(kind, fetch, [], [], lay=0.5, mark=2)
    t2 = _ext(kind, fetch, [], [], lay=0.5, overhead=2.0, mark=2)
    assert t0[:3] == (13.0, 6.0, 7.0)
    assert t2[:3] == (17.0, 8.0, 7.0)  # total, end of token 0, stall (unchanged)
    assert _one_mark(_timeline(
        STEPS4, np.array(kind, np.int8), np.arange(4), np.array(fetch), np.full(4, 10, np.int64),
        np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64),
        np.zeros(0, bool), np.zeros(0), 1.0, np.zeros(0), 0.5, _marks(2), np.zeros(0, bool),
        2.0, 1, True, 0.0, np.zeros(0), np.zeros(0, bool)))[:2] == (13.0, 6.0)
    # (no token starts given: nothing charged)


# pages 0..4: request r serves page r; page 4 is a prefetch never used (6 ms), the others 4 ms
FETCH5 = [4.0, 4.0, 4.0, 4.0, 6.0]
KIND5 = [1, 0, 1, 0]  # 0 misses, 1 hits (prefetched after g0), 2 misses, 3 hits (after g2)
PF_AT, PF_PAGE = [1, 2, 3], [1, 4, 3]  # after g0: page 1; after g1: page 4; after g2: page 3


def test_one_copy_stream_by_hand():
    """Expert 1 ms, no non-expert work. g0: 0 lands 4 (stall 4), c 5; page 1 queued behind:
    lands 8. g1: hit on 1 waits 5 -> 8 (late), c 9; page 4 queued: lands 14. g2: 2 waits
    behind page 4: lands 18 (stall 9), c 19; page 3 lands 22. g3: hit on 3 waits 19 -> 22
    (late), c 23. Stall 4 + 3 + 9 + 3 = 19."""
    total, _, stall, busy, nbytes, late = _ext(KIND5, FETCH5, PF_AT, PF_PAGE)
    assert (total, stall, busy, nbytes, late) == (23.0, 19.0, 22.0, 50, 2)


def test_second_prefetch_stream_by_hand():
    """The same run with prefetches on their own stream, issued when the group's demand has
    landed. Separate link: g0: 0 lands 4, c 5; page 1 from 4: lands 8. g1: hit on 1 waits
    5 -> 8, c 9; page 4, queued at 5 behind page 1, runs 8 -> 14. g2: 2 on the demand
    stream 9 -> 13 (stall 4), c 14; page 3 queued at 13 behind page 4: 14 -> 18.
    g3: hit on 3 waits 14 -> 18, c 19. Stall 4 + 3 + 4 + 4 = 15.
    Shared link: g0, g1 as before (never two transfers at once), c 9 after g1, page 4 in
    flight 8 -> (5 ms left at 9). g2: 2 and page 4 split the link: 2 needs 4 ms of work, page
    4 has 5 left: both at half speed, 2 lands at 9 + 8 = 17 (stall 8), page 4 has 1 left;
    c 18; page 3 queued at 17. g3: page 4 lands 18, page 3 18 -> 22; hit waits 18 -> 22,
    c 23. Stall 4 + 3 + 8 + 4 = 19 (the link is as busy as with one stream)."""
    sep = _ext(KIND5, FETCH5, PF_AT, PF_PAGE, streams=2, shared=False)
    shr = _ext(KIND5, FETCH5, PF_AT, PF_PAGE, streams=2, shared=True)
    assert (sep[0], sep[2], sep[3], sep[4], sep[5]) == (19.0, 15.0, 22.0, 50, 2)
    assert (shr[0], shr[2], shr[3], shr[4], shr[5]) == (23.0, 19.0, 22.0, 50, 2)


def test_concurrent_demand_and_prefetch_share_the_link_by_hand():
    """A demand miss issued while a long prefetch is in flight, shared link: g0 hits (c 1) and
    prefetches page 4 (6 ms) from 0; g1 misses page 1 (4 ms) at 1: page 4 has 5 left, both at
    half speed: page 1 lands at 1 + 8 = 9 (page 4 has 1 left), c 10; page 4 lands at 10. One
    stream: page 1 waits for page 4 (lands 6), lands 10, c 11. Separate: lands 5, c 6."""
    kind, fetch = [0, 1, 0, 0], [4.0, 4.0, 4.0, 4.0, 6.0]
    one = _ext(kind, fetch, [1], [4])
    shr = _ext(kind, fetch, [1], [4], streams=2, shared=True)
    sep = _ext(kind, fetch, [1], [4], streams=2, shared=False)
    # g2, g3 hit: +2 ms after g1
    assert (one[0], shr[0], sep[0]) == (13.0, 12.0, 8.0)
    assert (one[2], shr[2], sep[2]) == (9.0, 8.0, 4.0)


def test_options_default_to_todays_numbers_and_bad_values():
    from paging.generators import zipf
    from paging.predict.prefetch import Prefetcher, PrefetchOracle

    tr = zipf(n=8, layers=4, tokens=12, seed=0, topk=2, expand="groups")
    m, q, h = get_model("mixtral-8x7b"), get_precision("int4"), get_hardware("link-5gbps")
    fetch, sizes = np.full(32, 19.8), np.full(32, 99)
    kw = dict(model=m, precision=q, hardware=h, fetch_ms=fetch, sizes=sizes)
    plain = simulate(tr, "lru", 6, record=True)
    pf = simulate(tr, "lru", 6, record=True, prefetch=Prefetcher(PrefetchOracle(0.5, 0.5, seed=1)))
    for res in (plain, pf):
        base = timeline_run(tr, res, **kw)
        assert timeline_run(tr, res, **kw, token_overhead_ms=0.0, prefetch_streams=1) == base
        more = timeline_run(tr, res, **kw, token_overhead_ms=1.5)
        if res is plain:  # demand only: everything shifts, 12 tokens x 1.5 ms
            assert more.time_ms == pytest.approx(base.time_ms + 12 * 1.5)
            assert more.stall_ms == pytest.approx(base.stall_ms)
        else:  # prefetches in flight overlap the overhead: less stall, at most 18 ms more
            assert base.time_ms < more.time_ms <= base.time_ms + 12 * 1.5 + 1e-9
            assert more.stall_ms < base.stall_ms
    # without prefetches a second stream changes nothing
    assert timeline_run(tr, plain, **kw, prefetch_streams=2) == timeline_run(tr, plain, **kw)
    two = timeline_run(tr, pf, **kw, prefetch_streams=2, prefetch_link="separate")
    assert two.time_ms <= timeline_run(tr, pf, **kw).time_ms
    for bad, msg in ((dict(token_overhead_ms=-1), "^the per-token overhead must be a finite "
                                                     "number of ms >= 0, got -1$"),
                     (dict(token_overhead_ms=float("nan")), "^the per-token overhead .* got nan$"),
                     (dict(prefetch_streams=3), "^prefetch streams must be 1 .* got 3$"),
                     (dict(prefetch_link="fast"), "^prefetch link must be shared or separate, "
                                                  "got 'fast'$")):
        with pytest.raises(PagingError, match=msg):  # (a one-line error, not a traceback)
            timeline_options(**bad)


def test_cli_timing_options(capsys):
    """--token-overhead-ms and --prefetch-streams reach the timeline (the JSON equals
    timeline_run with the same options, and carries the options); given at their defaults
    they change no number."""
    from paging.cost.setup import CostSetup
    from paging.io import load
    from paging.predict.prefetch import Prefetcher, make_prefetch_predictor

    spec = "zipf:n=8,layers=32,tokens=30,seed=4,topk=2"
    base = ["simulate", spec, "--policy", "lru", "--k", "40", "--model", "mixtral-8x7b",
            "--precision", "int4", "--expand", "groups", "--prefetch",
            "oracle:precision=0.5,recall=0.5,seed=1", "--json"]
    assert main(base) == 0
    plain = capsys.readouterr().out
    assert main(base + ["--prefetch-streams", "1", "--token-overhead-ms", "0"]) == 0
    same = json.loads(capsys.readouterr().out)[0]
    assert {k: v for k, v in same.items() if k not in ("prefetch_streams",
                                                       "token_overhead_ms")} \
        == json.loads(plain)[0]
    assert main(base + ["--token-overhead-ms", "2.5", "--prefetch-streams", "2",
                        "--prefetch-link", "separate"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert (row["token_overhead_ms"], row["prefetch_streams"], row["prefetch_link"]) == \
        (2.5, 2, "separate")
    tr = load(spec, expand="groups")[0]
    cm = CostSetup.from_names("mixtral-8x7b", "int4")
    costs, sizes = cm.weights(tr)
    res = simulate(tr, "lru", 40, costs=costs, sizes=sizes, record=True, prefetch=Prefetcher(
        make_prefetch_predictor("oracle:precision=0.5,recall=0.5,seed=1")))
    tm = timeline_run(tr, res, model=cm.model, precision=cm.precision, hardware=cm.hardware,
                      fetch_ms=costs, sizes=sizes, token_overhead_ms=2.5, prefetch_streams=2,
                      prefetch_link="separate")
    assert row["time_ms"] == tm.time_ms and row["stall_ms"] == tm.stall_ms
    assert row["time_ms"] != json.loads(plain)[0]["time_ms"]


@pytest.mark.parametrize("extra,msg", [
    (["--token-overhead-ms", "1"], "need --model"),
    (["--model", "tiny", "--token-overhead-ms", "-1"], "overhead must be"),
    (["--model", "tiny", "--prefetch-streams", "2"], "needs --prefetch"),
    (["--model", "tiny", "--prefetch-link", "separate"], "needs --prefetch-streams 2"),
    (["--model", "tiny", "--prefetch-streams", "3"], "invalid choice"),
])
def test_cli_timing_options_bad_input(capsys, tmp_path, extra, msg):
    extra = [str(_tiny_model_file(tmp_path)) if x == "tiny" else x for x in extra]
    rc = main(["simulate", "cyclic:n=3,layers=2,rounds=3", "--policy", "lru", "--k", "2",
               *extra, "--json"])
    cap = capsys.readouterr()
    assert rc == 2 and cap.out == "" and cap.err.count("\n") == 1 and msg in cap.err


def test_timing_sensitivity_rows_are_one_run_replayed(tmp_path):
    """paging.cost.sensitivity: per configuration one verified run, its timeline replayed per
    variant (same misses; "today" = the default timeline; the batched prefill is one pass, so
    an overhead o adds exactly o to TTFT; a run without prefetches is the same on 2 streams)."""
    from paging.cost.sensitivity import timing_sensitivity
    from paging.predict.prefetch import Prefetcher, make_prefetch_predictor

    model = get_model(str(_tiny_model_file(tmp_path)))
    meta = {"phase_bounds": {"prefill": [0, 4], "decode": [4, 12]}}
    routing = np.array([[[0], [1]], [[2], [1]], [[0], [2]], [[1], [0]], [[2], [2]], [[0], [1]]])
    tr = from_routing(routing, LAY, expand="groups", meta=meta)
    configs = {"oracle": {"policy": "lru", "prefetch": "oracle:precision=1,recall=1,seed=0",
                          "strategy": "topk:overfetch=1"},
               "none": {"policy": "least-stale", "prefetch": None}}
    rows = timing_sensitivity(tr, budget=2 * int(page_sizes(model, get_precision("int4"))[0]),
                              configs=configs, token_overhead_ms=(3.0,), model=str(
                                  _tiny_model_file(tmp_path)))
    assert [r["variant"] for r in rows] == ["today", "+3 ms/token", "2 streams, shared link",
                                            "2 streams, separate links"] * 2
    q, h = get_precision("int4"), get_hardware("link-5gbps")
    bt, batch = batch_prefill(tr)
    fetch, sizes = page_costs(model, q, h, np.zeros(6, np.int8)), page_sizes(model, q)
    res = simulate(bt, "lru", budget=2 * int(sizes[0]), costs=fetch, sizes=sizes, record=True,
                   prefetch=Prefetcher(make_prefetch_predictor("oracle:precision=1,recall=1,seed=0")))
    kw = dict(model=model, precision=q, hardware=h, fetch_ms=fetch, sizes=sizes, batch=batch)
    for r, opts in zip(rows[:4], ({}, {"token_overhead_ms": 3.0}, {"prefetch_streams": 2},
                                  {"prefetch_streams": 2, "prefetch_link": "separate"}),
                       strict=True):
        tm = timeline_run(bt, res, **kw, **opts)
        assert (r["misses"], r["ttft_ms"], r["tokens_per_s"]) == (res.misses, tm.ttft_ms,
                                                                 tm.tokens_per_s)
    assert rows[1]["ttft_ms"] == pytest.approx(rows[0]["ttft_ms"] + 3.0)
    none = rows[4:]
    assert none[2]["time_ms"] == none[3]["time_ms"] == none[0]["time_ms"]
    with pytest.raises(PagingError, match="configuration x: give policy"):
        timing_sensitivity(tr, budget=10**9, configs={"x": {"prefetch": None}},
                           model=str(_tiny_model_file(tmp_path)))


@needs_traces
def test_timing_sensitivity_on_mixtral():
    """Config#1 (transition top-k 1.0, per-layer LRU) at 5 % of the 16-bit model, int4, 5 GB/s
    on the prefill+decode dump: "today" is fig_specmd's cold Eliseev '23 row (2,001 misses,
    0.721 tokens/s, TTFT 5,076 ms; transition fitted on problem 1, the other prompt). The
    decode is link-bound: a per-token overhead hides behind transfers in flight (about the
    same tokens/s, TTFT + o), a second stream sharing the link changes nothing, separate links
    (twice the bandwidth for prefetches) raise the rate."""
    from paging.cost import get_model, share_budget
    from paging.cost.sensitivity import timing_sensitivity
    from paging.io import load

    root = "mixtral-8x7b-instruct-vllm/"
    tr = load(root + "humaneval_p0_prefill_decode_raw.jsonl", expand="groups")[0]
    train = load(root + "humaneval_2_routing.jsonl", expand="groups")[1:]  # (not problem 0)
    rows = timing_sensitivity(tr, budget=share_budget(get_model("mixtral-8x7b"), 5),
                              train=train, token_overhead_ms=(20.0,))
    c1 = {r["variant"]: r for r in rows if r["config"] == "Config#1"}
    today = c1["today"]
    assert today["misses"] == 2001 and round(today["tokens_per_s"], 3) == 0.721
    assert round(today["ttft_ms"]) == 5076
    assert c1["+20 ms/token"]["ttft_ms"] == pytest.approx(today["ttft_ms"] + 20.0)
    assert c1["+20 ms/token"]["tokens_per_s"] == pytest.approx(today["tokens_per_s"],
                                                               rel=1e-2)
    assert c1["2 streams, shared link"]["tokens_per_s"] == pytest.approx(
        today["tokens_per_s"], rel=1e-2)
    assert c1["2 streams, separate links"]["tokens_per_s"] > 1.3 * today["tokens_per_s"]
    assert {r["config"] for r in rows} == {"Config#1", "Config#5"}


@functools.lru_cache(maxsize=1)
def _tiny_model():
    return get_model(str(_tiny_model_file()))  # one temporary file for every example


@settings(max_examples=40, deadline=None)
@given(trace=topk_traces(max_tokens=8), k=st.integers(1, 10),
       fetch=st.lists(st.floats(0.0, 20.0), min_size=15, max_size=15),
       pred=st.sampled_from(["oracle:precision=0.5,recall=0.5,seed=3", "oracle",
                             "previous-token", "frequency"]),
       overhead=st.floats(0.0, 5.0))
def test_stream_options_properties(trace, k, fetch, pred, overhead):
    """On random runs with prefetching: a second stream on a separate link never makes a run
    slower than one stream (every transfer starts no later); with a shared link the link
    moves at most its bandwidth, so the run is no faster than the separate one; without any
    prefetch the three are the same; the per-token overhead never shortens a run."""
    from paging.predict.prefetch import Prefetcher, make_prefetch_predictor

    P = trace.layout.n_pages
    costs = np.asarray(fetch[:P] + [1.0] * max(0, P - 15))
    m, q, h = _tiny_model(), get_precision("int4"), get_hardware("link-5gbps")
    res = simulate(trace, "lru", k, record=True, prefetch=Prefetcher(make_prefetch_predictor(pred)))
    kw = dict(model=m, precision=q, hardware=h, fetch_ms=costs, sizes=np.ones(P, np.int64))
    one = timeline_run(trace, res, **kw, token_overhead_ms=overhead)
    sep = timeline_run(trace, res, **kw, token_overhead_ms=overhead, prefetch_streams=2,
                       prefetch_link="separate")
    shr = timeline_run(trace, res, **kw, token_overhead_ms=overhead, prefetch_streams=2)
    eps = 1e-9 * (1 + one.time_ms)
    assert sep.time_ms <= one.time_ms + eps
    assert sep.time_ms <= shr.time_ms + eps
    assert one.bytes_moved == sep.bytes_moved == shr.bytes_moved
    assert one.copy_busy_ms == pytest.approx(sep.copy_busy_ms) == pytest.approx(
        shr.copy_busy_ms)
    if res.extra["prefetches"] == 0:
        assert one.time_ms == sep.time_ms == shr.time_ms
    assert timeline_run(trace, res, **kw).time_ms <= one.time_ms + eps


# -- routed runs: the timeline replays what the hook served -------------------------------------

def _routed_case(tmp_path, T=6):
    """A tiny-model trace (2 layers x 3 experts, top-2 with scores), the first 2 tokens a
    prefill, and the run settings."""
    rng = np.random.default_rng(3)
    L, n, K = LAY.n_layers, LAY.n_experts, 2
    e = np.array([[rng.permutation(n)[:K] for _ in range(L)] for _ in range(T)])
    s = np.tile([0.7, 0.3], (T, L, 1))

    def trace(table, prefill=True):
        g = table.shape[2] * L  # requests per token
        meta = {"phase_bounds": {"prefill": [0, 2 * g], "decode": [2 * g, T * g]}} \
            if prefill else {}
        return from_routing(table, LAY, expand="groups", scores=s[:, :, :table.shape[2]],
                            meta=meta)

    return e, trace, str(_tiny_model_file(tmp_path))


def test_routed_run_is_timed_on_the_requests_it_served(tmp_path):
    """``paging simulate --model --routing``: pruning:j=1 is timed as the standard run of the
    top-1 routing table; max-rank as the standard run of the table it served (its served
    pages, rebuilt here by hand); TTFT ends at the served prefill's end."""
    from paging.cost.setup import TIMING_FIELDS
    from paging.run import RunSpec, execute, run

    e, trace, m = _routed_case(tmp_path)
    tr = trace(e)
    (pruned,) = run(RunSpec("lru", k=3, model=m, routing="pruning:j=1"), [tr])
    (top1,) = run(RunSpec("lru", k=3, model=m), [trace(e[:, :, :1])])
    assert pruned["requests"] == top1["requests"] == e[:, :, 0].size
    assert {f: pruned[f] for f in TIMING_FIELDS} == {f: top1[f] for f in TIMING_FIELDS}
    assert pruned["ttft_ms"] is not None and "prefetch_late" not in pruned

    spec = RunSpec("lru", k=3, model=m, routing="max-rank:j=1")
    (out,) = execute(spec, [tr])
    (row,) = out.rows
    served = out.result.events["served_pages"].reshape(e.shape) - (
        np.arange(LAY.n_layers) * LAY.n_experts)[None, :, None]
    assert (served[:, :, 0] == e[:, :, 0]).all()  # the top 1 is kept
    assert (served != e).any()  # and the cache changed some second choices
    (plain,) = run(RunSpec("lru", k=3, model=m), [trace(served)])
    assert (row["misses"], row["hits"]) == (plain["misses"], plain["hits"])
    assert {f: row[f] for f in TIMING_FIELDS} == {f: plain[f] for f in TIMING_FIELDS}


@pytest.mark.parametrize("prefill", [True, False])
@pytest.mark.parametrize("routing", ["pruning:j=1", "max-rank:j=1"])
def test_warm_routed_run_rows_chain_in_time(tmp_path, routing, prefill):
    """A warm routed run with a model: each sequence's row starts where the one before ended,
    the last ends at the run's time, and the decode tokens add up (pruning serves half the
    requests, so the sequences' bounds must be mapped to the served ones)."""
    from paging.run import RunSpec, run

    e, trace, m = _routed_case(tmp_path)
    a, b = trace(e, prefill), trace(e[::-1].copy(), prefill)
    rows = run(RunSpec("llru", k=3, model=m, routing=routing, warm=True), [a, b])
    *seqs, total = rows
    assert [r["start_ms"] for r in seqs] == [0.0, seqs[0]["end_ms"]]
    assert seqs[-1]["end_ms"] == total["time_ms"]
    assert [r["decode_tokens"] for r in seqs] == ([4, 4] if prefill else [6, 6])
    assert sum(r["decode_tokens"] for r in seqs) == total["decode_tokens"]
    assert all((r["ttft_ms"] > 0) if prefill else r["ttft_ms"] is None for r in seqs)
    assert sum(r["requests"] for r in seqs) == total["requests"]


@needs_traces
def test_routed_speedup_golden_numbers_on_mixtral(capsys):
    """The routing guide's speedup row (Skliar et al.: "up to 2x speedup over standard LRU
    caching on mobile devices"): per-layer LRU at 4 of 8 experts, int4, pcie4. Decode tokens/s
    on HumanEval problem 0, standard -> cache-prior:lambda=0.5; on the prefill+decode file with
    phase=decode the prompt is served as ranked, so TTFT is the standard run's."""
    def row(name, routing):
        assert main(["simulate", f"mixtral-8x7b-instruct-vllm/{name}", "--expand", "groups",
                     "--policy", "lru-dist", "--k", "128", "--model", "mixtral-8x7b",
                     "--precision", "int4", "--hardware", "pcie4", "--routing", routing,
                     "--json"]) == 0
        return json.loads(capsys.readouterr().out)[0]

    decode_log, dump = "humaneval_2_routing.jsonl", "humaneval_p0_prefill_decode_raw.jsonl"
    std, cp = row(decode_log, "standard"), row(decode_log, "cache-prior:lambda=0.5")
    assert (std["misses"], cp["misses"]) == (2088, 960)
    assert std["tokens_per_s"] == pytest.approx(9.408587693056955, rel=1e-9)
    assert cp["tokens_per_s"] == pytest.approx(19.438384967857342, rel=1e-9)
    std, dec = row(dump, "standard"), row(dump, "cache-prior:lambda=0.5,phase=decode")
    assert dec["ttft_ms"] == std["ttft_ms"] == pytest.approx(6115.757970315093, rel=1e-9)
    assert std["tokens_per_s"] == pytest.approx(9.948340934874606, rel=1e-9)
    assert dec["tokens_per_s"] == pytest.approx(20.14016548549232, rel=1e-9)


def test_batched_prefill_keeps_each_experts_best_rank():
    """ℓ=1, n=4, top-2: prompt tokens [0, 1] and [2, 0], then the decode token [3, 1].
    Batched, the prefill group is experts 0, 1, 2 in order of first use, of best ranks 0
    (token 0's top-1), 1 and 0 (token 1's top-1), not their positions 0, 1, 2: drop:rank=1
    drops expert 1 there, not expert 2 (a top-1), and expert 1 in the decode again. The
    layer's non-expert work is charged once per group (the prefill group holds two experts of
    rank 0), and top1_changed_share counts groups, not requests of rank 0."""
    raw = from_routing(np.array([[[0, 1]], [[2, 0]], [[3, 1]]]), Layout(4, 1), expand="groups")
    raw.meta.update(top_k=2, phase_bounds={"prefill": [0, 4], "decode": [4, 6]})
    tr, batch = batch_prefill(raw)
    assert tr.pages.tolist() == [0, 1, 2, 3, 1] and tr.rank.tolist() == [0, 1, 0, 0, 1]
    assert batch.tolist() == [2, 1, 1, 1, 1]
    for engine in ("reference", "fast"):
        r = simulate(tr, "lru", 4, miss="drop:rank=1", record=True, engine=engine)
        assert r.events["dropped"].tolist() == [1, 4] and r.misses == 3
        assert r.extra["replaced_ranks"] == {"1": 2} and r.extra["top1_changed_share"] == 0
    # a second request, warm: its prefill group (experts 2, 1, 3 of best ranks 0, 1, 0) finds
    # 0 and 1 cached from the first (prefill [0, 1], decode [0, 1]) at k = 2: 2 and 3 are
    # both substituted by 0, one group of the 4 whose top-1 changed (not 2 of 5 requests of
    # rank 0)
    first = from_routing(np.array([[[0, 1]], [[0, 1]]]), Layout(4, 1), expand="groups")
    first.meta.update(top_k=2, phase_bounds={"prefill": [0, 2], "decode": [2, 4]})
    second = from_routing(np.array([[[2, 1]], [[3, 1]], [[0, 1]]]), Layout(4, 1),
                          expand="groups")
    second.meta.update(top_k=2, phase_bounds={"prefill": [0, 4], "decode": [4, 6]})
    joined, _ = concat(*zip(batch_prefill(first), batch_prefill(second), strict=True))
    assert joined.rank.tolist() == [0, 1, 0, 1, 0, 1, 0, 0, 1]
    for engine in ("reference", "fast"):
        s = simulate(joined, "lru", 2, miss="substitute", record=True, engine=engine)
        assert s.events["substituted"].tolist() == [[4, 0], [6, 0]]
        assert s.extra["top1_changed_share"] == 0.25
    m, q, hw = get_model("mixtral-8x7b"), get_precision("int4"), get_hardware("pcie4")
    fetch, sizes = np.full(4, 10.0), np.ones(4, np.int64)
    tm = timeline(tr, np.zeros(5, bool), model=m, precision=q, hardware=hw, fetch_ms=fetch,
                  sizes=sizes, batch=batch)
    c1 = expert_compute_ms(m, q, hw, 1)
    # prefill: the layer (2 tokens), three transfers back to back, expert 2 computes last;
    # decode: the layer (1 token), two transfers, expert 1 computes last
    assert tm.ttft_ms == pytest.approx(non_expert_ms(m, hw, 2) + 30 + c1, rel=1e-12)
    assert tm.time_ms == pytest.approx(tm.ttft_ms + non_expert_ms(m, hw, 1) + 20 + c1,
                                       rel=1e-12)


def test_a_batched_prefill_charges_the_layer_for_the_whole_prompt():
    """A batched prefill pass runs all T prompt tokens through each layer's non-expert
    weights; the group was charged for the tokens of the expert that opens it (200 of 400
    here), which the roofline tells apart once the pass is compute-bound (T > 161 on the A100
    preset)."""
    m = get_model(str(_tiny_model_file()))
    q, hw = get_precision("bf16"), get_hardware("link-5gbps")
    T = 400  # layer 0: the prompt alternates experts 0 and 1; layer 1: expert 0; one decode token
    table = np.array([[[t % 2], [0]] for t in range(T)] + [[[0], [0]]])
    tr = from_routing(table, LAY, expand="groups",
                      meta={"phase_bounds": {"prefill": [0, 2 * T],
                                             "decode": [2 * T, 2 * T + 2]}})
    bt, batch = batch_prefill(tr)
    assert batch[:3].tolist() == [T // 2, T // 2, T] and bt.meta["prefill_tokens"] == T
    assert non_expert_ms(m, hw, T) > non_expert_ms(m, hw, T // 2)  # (compute-bound here)
    sizes = page_sizes(m, q)
    fetch = page_costs(m, q, hw, np.zeros(6, np.int8))
    r = simulate(bt, "lru", 6, costs=fetch, sizes=sizes, record=True)
    tm = timeline(bt, r.hit_mask, model=m, precision=q, hardware=hw, fetch_ms=fetch,
                  sizes=sizes, batch=batch)
    f, lay = transfer_ms(m.expert_bytes(q), hw), non_expert_ms(m, hw, T)
    ch, ct = expert_compute_ms(m, q, hw, T // 2), expert_compute_ms(m, q, hw, T)
    layer0 = max(lay + f + ch, lay + 2 * f) + ch   # experts 0 and 1 fetched, 200 tokens each
    layer1 = layer0 + lay + f + ct                 # expert 0 of layer 1 fetched, 400 tokens
    assert tm.ttft_ms == pytest.approx(layer1, rel=1e-12)
