"""Streaming the prediction policies with the ``frequency`` predictor (BlindOracle,
PredictiveMarker, LMarker, the robust combiner, their -dist forms): each chunk served alone by
:class:`paging.fast.predictive.Carried` from the count of requests so far, the markers' chains
renumbered between calls, a chunk longer than ``PIECE`` served in calls cut between groups;
and Score-Based, the same kernel, with the gate scores a ``.npz`` or CSV stores."""

from __future__ import annotations

import os

import numpy as np
import pytest
from conftest import TRACES, needs_traces
from hypothesis import assume, given
from hypothesis import strategies as st

from paging import fast, simulate
from paging.fast import predictive
from paging.generators import zipf
from paging.io import load, write_csv, write_npz
from paging.mrc import miss_curve
from paging.policies import make_policy
from paging.stream import stream_run
from paging.trace import Trace
from tests.strategies import round_traces, topk_traces

PRED = ["blind-oracle", "predictive-marker", "lmarker", "robust-blind-oracle",
        "blind-oracle-dist", "predictive-marker-dist", "lmarker-dist",
        "robust-blind-oracle-dist"]


def _same(a, b) -> None:
    da, db = a.to_dict(), b.to_dict()
    db["trace"] = da["trace"]
    assert da == db
    assert np.array_equal(a.page_misses, b.page_misses)


@given(st.one_of(round_traces(max_rounds=30), topk_traces(max_tokens=10)), st.data())
def test_streamed_prediction_runs_equal_whole_runs_in_calls_of_any_length(tr, data):
    """Random chunk cuts, calls of 1-7 requests (so the chains are renumbered over and over,
    and a chunk is split between groups), every policy, seeds, at k pages and under byte
    budgets (where one request can evict several pages), checked chunk by chunk or not
    (``verify``: the eviction logs of the split calls joined): the whole run's numbers."""
    P = tr.layout.n_pages
    pols = data.draw(st.lists(st.sampled_from(PRED), min_size=1, max_size=3, unique=True))
    ks = data.draw(st.lists(st.integers(1, P + 1), min_size=1, max_size=2))
    sizes = np.array(data.draw(st.lists(st.integers(1, 4), min_size=P, max_size=P)))
    budget = data.draw(st.integers(int(sizes.max()), int(sizes.sum()) + 1))
    piece = data.draw(st.integers(1, 7))
    chunk = data.draw(st.integers(1, 40))
    seed = data.draw(st.integers(0, 3))
    verify = data.draw(st.booleans())  # (the split calls' counts with and without their logs)
    runs = [(p, k) for p in pols for k in ks]
    chunks = [(tr.pages[a:a + chunk], tr.steps[a:a + chunk])
              for a in range(0, tr.n_requests, chunk)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(predictive, "PIECE", piece)
        (out,) = stream_run(chunks, runs, layout=tr.layout, expand=tr.expand, seed=seed,
                            verify=verify, budgets=[(p, budget) for p in pols], sizes=sizes)
    want = ([simulate(tr, p, k, seed=seed, sizes=sizes) for p, k in runs]
            + [simulate(tr, p, budget=budget, seed=seed, sizes=sizes) for p in pols])
    for a, b in zip(want, out.results, strict=True):
        _same(a, b)


@given(st.one_of(round_traces(max_rounds=30), topk_traces(max_tokens=10)), st.data())
def test_streamed_score_based_reads_the_files_scores(tr, data):
    """Score-Based and Score-Based-DIST from a ``.npz`` and a CSV with random gate scores (ties
    included), rounds and groups, random chunk sizes, at k pages and a byte budget, verified
    chunk by chunk, and their curves: the runs of the file read whole."""
    import tempfile

    assume(tr.n_requests > 0)  # (a CSV holds at least one row)
    P = tr.layout.n_pages
    score = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.125, 0.25, 0.5, 0.75, 1.0]),
                                        min_size=tr.n_requests, max_size=tr.n_requests)))
    tr = Trace(tr.layout, tr.pages, tr.steps, "s", tr.token, tr.rank, score, tr.expand,
               tr.meta)
    sizes = np.array(data.draw(st.lists(st.integers(1, 4), min_size=P, max_size=P)))
    k = data.draw(st.integers(1, P + 1))
    budget = data.draw(st.integers(int(sizes.max()), int(sizes.sum()) + 1))
    chunk = data.draw(st.integers(1, 20))
    names = ["score-based", "score-based-dist"]
    with tempfile.TemporaryDirectory() as d:
        for f, write in ((f"{d}/s.npz", write_npz), (f"{d}/s.csv", write_csv)):
            write(tr, f)
            (whole,) = load(f, expand=tr.expand)
            (out,) = stream_run(f, [(p, k) for p in names], names, chunk=chunk,
                                expand=tr.expand, verify=True, sizes=sizes,
                                budgets=[(p, budget) for p in names])
            want = ([simulate(whole, p, k, sizes=sizes) for p in names]
                    + [simulate(whole, p, budget=budget, sizes=sizes) for p in names])
            for a, b in zip(want, out.results, strict=True):
                _same(a, b)
            for p in names:
                assert np.array_equal(out.curves[p], miss_curve(whole, p)), (f, p)


def test_a_long_marker_run_keeps_a_fixed_state():
    """PredictiveMarker-DIST and LMarker over 60,000 requests in chunks of 6,000, calls of at
    most 500: the chains array keeps its length P + 2 · 500 + 1 (a whole run's holds one chain per
    request), the chains are renumbered (fewer live than were made), and the misses are the
    whole run's, at two seeds."""
    tr = zipf(8, 4, 15_000, seed=4)
    P = tr.layout.n_pages
    renumbered = []
    compact = predictive._compact_chains

    def counted(S, *a):
        renumbered.append(int(S[-1][0]))
        compact(S, *a)
        assert int(S[-1][0]) < renumbered[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(predictive, "PIECE", 500)
        mp.setattr(predictive, "_compact_chains", counted)
        for name in ("predictive-marker-dist", "lmarker"):
            for seed in (0, 5):
                renumbered.clear()
                run = fast.CarriedRun(tr.layout, fast.plan(make_policy(name)), 11, seed=seed)
                for a in range(0, tr.n_requests, 6000):
                    run.feed(tr.pages[a:a + 6000], tr.steps[a:a + 6000])
                    assert run.state.S[predictive._CHAINS].size == P + 2 * 500 + 1
                assert len(renumbered) > 10
                assert int(run.page_misses.sum()) == simulate(tr, name, 11, seed=seed).misses


def test_a_streamed_marker_under_a_byte_budget_equals_the_whole_run():
    """LMarker and PredictiveMarker-DIST in 30 bytes of pages of 1-4 bytes, 12,000 requests in
    chunks of 1,000: a request may evict several pages, all within the one marking-chain step
    its request index opens (the index read from the run's start in every chunk)."""
    tr = zipf(8, 4, 3000, seed=4)
    sizes = np.random.default_rng(0).integers(1, 5, tr.layout.n_pages)
    chunks = [(tr.pages[a:a + 1000], tr.steps[a:a + 1000]) for a in range(0, tr.n_requests,
                                                                            1000)]
    names = ["lmarker", "predictive-marker-dist"]
    (out,) = stream_run(chunks, budgets=[(n, 30) for n in names], sizes=sizes,
                        layout=tr.layout)
    for name, res in zip(names, out.results, strict=True):
        _same(simulate(tr, name, budget=30, sizes=sizes), res)


def test_split_calls_count_their_bypasses_unverified():
    """LMarker-DIST at k = 2 on 3 layers (one layer gets no slot: a third of the requests
    served uncached), chunks of 100 served in calls of at most 7, not verified (the calls'
    bypass logs are not filled then; the count is the kernel's): the whole run's 300
    bypasses (a review found 0: the joined calls counted their empty logs)."""
    tr = zipf(4, 3, 300, seed=1)
    chunks = [(tr.pages[a:a + 100], tr.steps[a:a + 100]) for a in range(0, tr.n_requests, 100)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(predictive, "PIECE", 7)
        (out,) = stream_run(chunks, [("lmarker-dist", 2)], layout=tr.layout)
    whole = simulate(tr, "lmarker-dist", 2)
    assert whole.bypasses == 300
    _same(whole, out.results[0])


def test_a_byte_budget_can_start_two_chains_a_request():
    """LMarker in 8 bytes of pages of 1-5 bytes, calls of at most 2 requests: a request's
    evictions may start a chain and, running out of unmarked pages, a new phase and a second
    chain; the chains array holds two a request (a review's case: one a request overflowed
    it, an unchecked write in the kernel, then an IndexError)."""
    tr = zipf(3, 4, 54, seed=13, topk=3)
    sizes = np.array([5, 3, 2, 3, 1, 1, 2, 5, 2, 4, 1, 3])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(predictive, "PIECE", 2)
        (out,) = stream_run([(tr.pages, tr.steps)], budgets=[("lmarker", 8)], sizes=sizes,
                            layout=tr.layout)
    _same(simulate(tr, "lmarker", budget=8, sizes=sizes), out.results[0])


def test_a_group_longer_than_a_call_is_served_whole():
    """Groups of 3 requests (one layer of 4 experts, top-3, groups mode) in calls of at most 1
    request: each group is served whole in one call, which may start 2 · 3 chains, more than
    the array of P + 2 · 1 + 1 = 7 holds; it grows (a review's case: the run stopped on the
    array's length)."""
    tr = zipf(4, 1, 200, seed=2, topk=3, expand="groups")
    chunks = [(tr.pages[a:a + 9], tr.steps[a:a + 9]) for a in range(0, tr.n_requests, 9)]
    for name in ("predictive-marker", "lmarker"):
        for k in (2, 3):
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(predictive, "PIECE", 1)
                (out,) = stream_run(chunks, [(name, k)], layout=tr.layout, expand="groups",
                                    verify=True)
            _same(simulate(tr, name, k), out.results[0])


def test_renumbering_keeps_the_live_chains_by_hand():
    """Four pages of one partition: pages 0 and 2 evicted in the current phase 3 by chains 7
    and 9 (lengths 2 and 5), page 1 in the old phase 2 by chain 8, page 3 never: the live
    chains 7 and 9 become 0 and 1 with their lengths, page 1's stale link is left as it was,
    and the count of chains is 2."""
    S = predictive.pred_state(4, 1, 10)
    evc, evph, phase, chain_len, cnt = S[14], S[15], S[16], S[predictive._CHAINS], S[-1]
    evc[:] = [7, 8, 9, 0]
    evph[:] = [3, 2, 3, -1]
    phase[0] = 3
    chain_len[7:10] = [2, 4, 5]
    cnt[0] = 10
    predictive._compact_chains(S, 4, False)
    assert evc.tolist() == [0, 8, 1, 0]
    assert chain_len[:2].tolist() == [2, 5]
    assert int(cnt[0]) == 2


def test_the_cli_streams_a_prediction_policy_as_it_reads_it_whole(tmp_path):
    """``paging simulate --stream --verify`` and ``paging mrc --stream`` of the markers: the
    JSON of the commands reading the file whole."""
    from test_stream_tokens import assert_cli_streams_as_whole

    write_npz(zipf(4, 3, 200, seed=2, name="z"), tmp_path / "z.npz")
    assert_cli_streams_as_whole(str(tmp_path / "z.npz"), [
        "--policy", "predictive-marker", "--policy", "robust-blind-oracle-dist", "--k", "4",
        "--k", "7", "--seed", "3"], ["--policy", "lmarker"], 13)


#: Score-Based and PredictiveMarker on the two Mixtral HumanEval sequences (the routing log
#: converted to .npz with its gate scores), at k = 43 and 200: misses of the file read whole,
#: (problem 0, problem 1)
MIXTRAL_GOLDEN = {("score-based", 43): (4078, 12554), ("score-based", 200): (983, 2610),
                  ("predictive-marker", 43): (4662, 14120),
                  ("predictive-marker", 200): (939, 2597)}


@needs_traces
def test_streamed_real_trace_golden(tmp_path):
    """The Mixtral routing log converted to ``.npz`` (``paging trace convert``: its gate
    scores kept), streamed in chunks of 1,000 and verified: the golden misses of the log read
    whole, and each run's numbers equal to the converted file's read whole."""
    src = os.path.join(TRACES, "mixtral-8x7b-instruct-vllm", "humaneval_2_routing.jsonl")
    write_npz(load(src), tmp_path / "h.npz")
    outs = stream_run(tmp_path / "h.npz", list(MIXTRAL_GOLDEN), chunk=1000, verify=True)
    wholes = load(tmp_path / "h.npz")
    assert len(outs) == len(wholes) == 2
    for s, (out, whole) in enumerate(zip(outs, wholes, strict=True)):
        for (p, k), res in zip(MIXTRAL_GOLDEN, out.results, strict=True):
            assert res.misses == MIXTRAL_GOLDEN[p, k][s], (s, p, k)
            _same(simulate(whole, p, k), res)
