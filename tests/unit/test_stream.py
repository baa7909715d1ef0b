"""Streaming (issue 22 item 4): the chunked readers and the simulation carried across chunks
equal the whole-trace readers and the in-memory simulation exactly."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from paging import Layout, simulate
from paging.errors import PagingError
from paging.generators import zipf, zipf_chunks
from paging.io import load, write_csv, write_npz, write_oracle_general
from paging.io.chunks import checked_chunks, open_chunks
from paging.mrc import miss_curve
from paging.stream import miss_curve_stream, simulate_stream, stream_run
from paging.trace import TraceError, from_pages
from tests.strategies import round_traces, topk_traces

#: the prediction policies with their default (frequency) predictor
PRED_POLICIES = ["blind-oracle", "predictive-marker", "lmarker", "robust-blind-oracle",
                 "blind-oracle-dist", "predictive-marker-dist", "lmarker-dist",
                 "robust-blind-oracle-dist"]
LIST_POLICIES = ["lru", "fifo", "fwf", "llru", "llru-latest", "fld", "fld-cyclic",
                 "least-stale", "least-stale-layer", "least-stale-upcoming", "lru-dist",
                 "llru-dist", "fifo-dist", "fwf-dist", "lfu", "lfu-dist", "arc", "arc-dist",
                 "lecar", "lecar-dist", "marking", "marking-dist", "gdsf", "landlord-dist",
                 "layered-landlord", *PRED_POLICIES]
CURVES = ["lru", "lru-dist", "llru-dist"]


def _cuts(draw, n: int) -> list[int]:
    """Random chunk boundaries of n requests (empty chunks included)."""
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=8)))
    return [0, *cuts, n]


def _chunks(trace, bounds, steps=True):
    return [(trace.pages[a:b], trace.steps[a:b] if steps else None)
            for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _same(a, b) -> None:
    da, db = a.to_dict(), b.to_dict()
    db["trace"] = da["trace"]
    assert da == db
    assert np.array_equal(a.page_misses, b.page_misses)


@st.composite
def _case(draw):
    tr = draw(st.one_of(round_traces(max_rounds=20), topk_traces(max_tokens=8)))
    bounds = _cuts(draw, tr.n_requests)
    pols = draw(st.lists(st.sampled_from(LIST_POLICIES), min_size=1, max_size=4, unique=True))
    ks = draw(st.lists(st.integers(1, tr.layout.n_pages + 1), min_size=1, max_size=3))
    return tr, bounds, pols, ks, draw(st.integers(0, 2))


@given(_case())
def test_streamed_runs_equal_the_in_memory_runs(case):
    tr, bounds, pols, ks, seed = case  # seed: LeCaR's and Marking's draws
    runs = [(p, k) for p in pols for k in ks]
    rounds = not tr.is_grouped
    curves = CURVES if rounds else []
    (out,) = stream_run(_chunks(tr, bounds), runs, curves, layout=tr.layout, expand=tr.expand,
                        seed=seed)
    assert out.requests == tr.n_requests
    for (p, k), res in zip(runs, out.results, strict=True):
        _same(simulate(tr, p, k, seed=seed), res)
    for name in curves:
        assert np.array_equal(out.curves[name], miss_curve(tr, name)), name


#: every curve route of paging.stream.curve_policy: one pass (LRU's and the priority
#: policies', per layer for -dist), shares (-dist without a stack), per k (the rest, and every
#: policy in groups mode)
CURVE_POLICIES = ["lru", "llru", "llru-latest", "lfu", "fld", "fld-cyclic", "least-stale",
                  "least-stale-layer", "least-stale-upcoming", "lru-dist", "lfu-dist",
                  "fld-dist", "fifo", "fwf", "marking", "gdsf", "layered-landlord", "arc",
                  "lecar", "fifo-dist", "fwf-dist", "gdsf-dist", "arc-dist", "marking-dist",
                  "lecar-dist", *PRED_POLICIES]


@given(st.one_of(round_traces(max_rounds=20), topk_traces(max_tokens=8)), st.data())
def test_streamed_curves_equal_the_in_memory_curves(tr, data):
    """Every streamable policy's curve (one pass, shares or one run per k) equals
    ``miss_curve``'s on the whole trace, for random chunk cuts and seeds."""
    bounds = _cuts(data.draw, tr.n_requests)
    pols = data.draw(st.lists(st.sampled_from(CURVE_POLICIES), min_size=1, max_size=3,
                              unique=True))
    seed = data.draw(st.integers(0, 2))
    (out,) = stream_run(_chunks(tr, bounds), curves=pols, layout=tr.layout, expand=tr.expand,
                        seed=seed)
    for name in pols:
        assert np.array_equal(out.curves[name], miss_curve(tr, name, seed=seed)), name


def test_streamed_priority_curve_by_hand():
    """LFU on one layer of 3 experts, pages 0 0 1 2 1 0 in two chunks (the stack carried
    across the cut). The stacks before each request, top first: -, [0], [0], [1 0], [2 0 1]
    (at the request of 2, the 2-page cache evicts 1, count 1, rather than 0, count 2), [1 0 2]:
    depths inf, 1, inf, inf, 3, 2, so k = 1 misses 5, k = 2 misses 4, k = 3 misses 3."""
    lay = Layout(3, 1)
    (m,) = miss_curve_stream([(np.array([0, 0, 1]), None), (np.array([2, 1, 0]), None)],
                             "lfu", layout=lay)
    assert m.tolist() == [5, 4, 3]
    assert m.tolist() == miss_curve(from_pages([0, 0, 1, 2, 1, 0], lay), "lfu").tolist()


@given(_case(), st.data())
def test_streamed_weighted_runs_equal_the_in_memory_runs(case, data):
    """Page sizes and fetch costs, at k pages and under byte budgets (bypasses included: a
    -dist layer's share may hold no page)."""
    tr, bounds, pols, ks, seed = case
    P = tr.layout.n_pages
    sizes = np.array(data.draw(st.lists(st.integers(1, 4), min_size=P, max_size=P)))
    costs = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 3.0]), min_size=P,
                                        max_size=P)))
    budgets = data.draw(st.lists(st.integers(1, int(sizes.sum()) + 1), min_size=1,
                                 max_size=2))
    budgets = [max(b, int(sizes.min())) for b in budgets]
    runs = [(p, k) for p in pols for k in ks]
    by_bytes = [(p, b) for p in pols for b in budgets]
    (out,) = stream_run(_chunks(tr, bounds), runs, layout=tr.layout, expand=tr.expand,
                        seed=seed, budgets=by_bytes, costs=costs, sizes=sizes)
    want = ([simulate(tr, p, k, seed=seed, costs=costs, sizes=sizes) for p, k in runs]
            + [simulate(tr, p, budget=b, seed=seed, costs=costs, sizes=sizes)
               for p, b in by_bytes])
    assert len(out.results) == len(want)
    for a, b in zip(want, out.results, strict=True):
        _same(a, b)


@given(_case(), st.data())
def test_streamed_runs_verify(case, data):
    """``verify=True`` checks every chunk's logs against the cache replayed so far and the
    totals at the end: every streamed run passes, at k pages and under byte budgets, and its
    numbers are the unchecked run's."""
    tr, bounds, pols, ks, seed = case
    P = tr.layout.n_pages
    sizes = np.array(data.draw(st.lists(st.integers(1, 4), min_size=P, max_size=P)))
    costs = np.array(data.draw(st.lists(st.sampled_from([0.1, 0.5, 1.0, 3.0]), min_size=P,
                                        max_size=P)))
    runs = [(p, k) for p in pols for k in ks]
    by_bytes = [(p, max(int(sizes.sum()) // 2, int(sizes.max()))) for p in pols]
    kw = {"layout": tr.layout, "expand": tr.expand, "seed": seed, "budgets": by_bytes,
          "costs": costs, "sizes": sizes}
    (checked,) = stream_run(_chunks(tr, bounds), runs, verify=True, **kw)
    (plain,) = stream_run(_chunks(tr, bounds), runs, **kw)
    for a, b in zip(checked.results, plain.results, strict=True):
        _same(a, b)


def test_the_streamed_verifier_catches_a_false_log():
    """The logs of an LRU run (k = 2, one layer of 4 experts, pages 0 1 2 0 1 in chunks of 3
    and 2) each altered in one place: every alteration fails with its reason."""
    from paging.fast import CarriedRun, plan
    from paging.policies import make_policy
    from paging.verify import StreamVerifier, VerificationError

    lay = Layout(4, 1)
    pieces = [(np.array([0, 1, 2]), np.array([0, 1, 2])), (np.array([0, 1]), np.array([3, 4]))]

    def logs():
        run = CarriedRun(lay, plan(make_policy("lru")), 2)
        return [run.feed(p, s, log=True) for p, s in pieces]

    good = logs()
    # the run: misses 0 1 2 (evicts 0 at request 2) 0 (evicts 1) 1 (evicts 2): five misses
    assert [g[0].tolist() for g in good] == [[False] * 3, [False] * 2]
    assert [g[1].tolist() for g in good] == [[[2, 0]], [[0, 1], [1, 2]]]
    res = simulate(from_pages([0, 1, 2, 0, 1], lay), "lru", 2)

    def check(piece, field, value, result=res):
        v = StreamVerifier(lay, "x", "lru", 2, False)
        for i, ((p, s), g) in enumerate(zip(pieces, logs(), strict=True)):
            g = list(g)
            if i == piece:
                g[field] = value
            v.feed(p, s, *g)
        v.finish(result)

    check(0, 0, good[0][0])  # unaltered: passes
    bad = [
        (0, 0, np.array([False, False, True]), "hit but the page is not cached"),
        (1, 1, np.zeros((0, 2), np.int64), "above its capacity"),
        (1, 1, np.array([[0, 3], [1, 2]]), "not a resident"),
        (0, 1, np.array([[2, 0], [2, 1]]), "although the page fitted|above"),
        (1, 2, np.array([1]), "bypass"),
    ]
    for piece, field, value, why in bad:
        with pytest.raises(VerificationError, match=why):
            check(piece, field, value)
    with pytest.raises(VerificationError, match="misses"):
        check(0, 0, good[0][0], result=simulate(from_pages([0, 1, 2, 0, 1], lay), "lru", 3))


@given(topk_traces(max_tokens=10, expand="groups"), st.integers(1, 7))
def test_chunks_that_split_a_group_give_the_same_run(tr, size):
    # every size cuts groups; the groups and the pins must come out whole
    bounds = list(range(0, tr.n_requests, size)) + [tr.n_requests]
    for p in ("lru", "llru", "fwf"):
        for k in (1, 2, tr.layout.n_pages):
            (res,) = simulate_stream(_chunks(tr, bounds), p, k, layout=tr.layout,
                                     expand="groups")
            _same(simulate(tr, p, k), res)


@given(round_traces(max_rounds=20), st.data())
def test_rounds_chunks_without_steps_count_on(tr, data):
    bounds = _cuts(data.draw, tr.n_requests)
    (m,) = miss_curve_stream(_chunks(tr, bounds, steps=False), "lru", layout=tr.layout)
    assert np.array_equal(m, miss_curve(tr, "lru"))


def _bad_traces():
    lay = Layout(3, 2)
    good = np.array([0, 3, 1, 4, 2, 5, 0, 3])
    bad = good.copy()
    bad[5] = 2  # layer 0 where layer 1 is due
    yield lay, bad, None, "rounds", "wrong layer order: request 5 is page 2"
    bad = good.copy()
    bad[6] = 9
    yield lay, bad, None, "rounds", "request 6 is page 9, expected a page id in 0..5"
    steps = np.array([0, 1, 2, 3, 3, 4, 5, 6])
    yield lay, good, steps, "rounds", "request 4 has step 3 after 3"
    yield lay, np.array([0, 1, 0]), np.array([0, 0, 0]), "groups", "requests page 0 twice"
    yield lay, good, np.arange(1, 9), "rounds", "the first step must be 0, got 1"


@pytest.mark.parametrize("size", [1, 2, 3, 5, 100])
def test_chunk_validation_matches_the_whole_trace_check(size):
    from paging.trace import Trace

    for lay, pages, steps, mode, _ in _bad_traces():
        s = np.arange(pages.size) if steps is None else steps
        with pytest.raises(TraceError) as whole:
            Trace(lay, pages, s, "t", expand=mode)
        chunks = [(pages[i:i + size], s[i:i + size]) for i in range(0, pages.size, size)]
        with pytest.raises(TraceError) as streamed:
            list(checked_chunks(chunks, lay, mode, "t"))
        assert str(streamed.value) == str(whole.value)
        assert streamed.value.request == whole.value.request


@pytest.fixture
def traces():
    r = zipf(4, 3, 400, seed=2, name="r")
    g = zipf(4, 3, 150, seed=3, topk=2, expand="groups", name="g")
    g2 = zipf(4, 3, 90, seed=4, topk=3, expand="groups", name="g2")
    return r, g, g2


@pytest.mark.parametrize("chunk", [1, 7, 64, 10**6])
def test_chunked_readers_equal_the_whole_file_readers(tmp_path, traces, chunk):
    r, g, g2 = traces
    files = {"r.npz": [r], "g.npz": [g, g2], "r.csv": [r], "g.csv": [g, g2]}
    for fname, ts in files.items():
        (write_npz if fname.endswith("npz") else write_csv)(ts, tmp_path / fname)
        mode = ts[0].expand
        whole = load(tmp_path / fname, expand=mode)
        seqs = open_chunks(tmp_path / fname, chunk=chunk, expand=mode)
        got = []
        for seq in seqs:
            parts = list(seq.chunks)
            assert all(p.size <= chunk for p, _ in parts)
            got.append((seq.name, np.concatenate([p for p, _ in parts]),
                        np.concatenate([s for _, s in parts])))
        assert [(t.name, t.pages.tolist(), t.steps.tolist()) for t in whole] == \
            [(n, p.tolist(), s.tolist()) for n, p, s in got]
        outs = stream_run(tmp_path / fname, [("lru", 3), ("llru", 5)], chunk=chunk,
                          expand=mode)
        for t, o in zip(whole, outs, strict=True):
            _same(simulate(t, "lru", 3), o.results[0])
            _same(simulate(t, "llru", 5), o.results[1])
    write_oracle_general(r, tmp_path / "r.oracleGeneral")
    kw = {"n_experts": 4, "n_layers": 3}
    (t,) = load(tmp_path / "r.oracleGeneral", **kw)
    (o,) = stream_run(tmp_path / "r.oracleGeneral", [("lru", 4)], ["lru"], chunk=chunk, **kw)
    _same(simulate(t, "lru", 4), o.results[0])
    assert np.array_equal(o.curves["lru"], miss_curve(t, "lru"))


def _error(fn) -> str:
    with pytest.raises(PagingError) as e:
        fn()
    return str(e.value)


@pytest.mark.parametrize("chunk", [1, 3, 1000])
def test_chunked_readers_report_the_whole_file_errors(tmp_path, chunk):
    lay = Layout(3, 2)
    pages = np.array([0, 3, 1, 4, 2, 5, 0, 3, 1, 4])
    write_oracle_general(from_pages(pages, lay), tmp_path / "a.oracleGeneral")
    bad = tmp_path / "b.oracleGeneral"
    raw = np.fromfile(tmp_path / "a.oracleGeneral", dtype=np.uint8).copy()
    rec = raw.view([("time", "<u4"), ("obj_id", "<u8"), ("obj_size", "<u4"),
                    ("next_access_vtime", "<i8")])
    rec["obj_id"][7] = 1  # layer 0 where layer 1 is due
    rec.tofile(bad)
    kw = {"n_experts": 3, "n_layers": 2}

    def streamed(path, **k):
        return lambda: [list(s.chunks) for s in open_chunks(path, chunk=chunk, **k)]

    assert (_error(streamed(bad, **kw)) == _error(lambda: load(bad, **kw))
            and "record 7 (byte 168)" in _error(lambda: load(bad, **kw)))
    rec["obj_id"][7] = 40
    rec.tofile(bad)
    assert _error(streamed(bad, **kw)) == _error(lambda: load(bad, **kw))
    assert "needs the whole file" in _error(streamed(bad))
    csv = tmp_path / "c.csv"
    rows = "\n".join(f"s,{i},{p}" for i, p in enumerate([0, 3, 1, 4, 4, 5]))
    csv.write_text("# paging-trace n_experts=3 n_layers=2 expand=rounds\nsequence,step,page\n"
                   + rows + "\n")
    assert _error(streamed(csv)) == _error(lambda: load(csv))
    assert "c.csv:7: wrong layer order" in _error(streamed(csv))
    csv.write_text("sequence,step,page\n" + rows.replace("4,4", "4,x") + "\n")
    assert (_error(streamed(csv, n_experts=3, n_layers=2))
            == _error(lambda: load(csv, n_experts=3, n_layers=2)))
    g = zipf(4, 3, 20, seed=3, topk=2, expand="groups")
    write_npz(g, tmp_path / "g.npz")
    assert "use --expand groups" in _error(streamed(tmp_path / "g.npz"))


def test_zipf_chunks_reproduce_zipf():
    whole = zipf(8, 32, 70_000, seed=11, a=1.2).pages  # more than one 2^21-cell block
    parts = list(zipf_chunks(8, 32, 70_000, seed=11, a=1.2))
    assert len(parts) > 1 and np.array_equal(np.concatenate(parts), whole)


def test_a_per_k_curve_too_large_to_carry_is_refused_before_reading(monkeypatch):
    import paging.stream

    def chunks():
        raise AssertionError("read before the refusal")
        yield

    monkeypatch.setattr(paging.stream, "CURVE_STATE_BYTES", 10**4)
    msg = _error(lambda: miss_curve_stream(chunks(), "fifo", layout=Layout(8, 4)))
    assert "one per size" in msg and "GB" in msg and "fifo" in msg
    # (a -dist curve without a stack: a run per layer and share, as many)
    msg = _error(lambda: miss_curve_stream(chunks(), "fifo-dist", layout=Layout(8, 4)))
    assert "a layer and a share each" in msg and "fifo-dist" in msg
    # the one-pass curves carry one stack, whatever the limit
    (m,) = miss_curve_stream([(np.array([0, 8, 1, 9]), None)], "lru", layout=Layout(8, 2))
    assert m.tolist()[:2] == [4, 4]


@given(round_traces(max_rounds=20), st.data())
def test_belady_streams_from_oracle_general_next_access_times(tr, data):
    """Belady and Belady-DIST read an oracleGeneral file's next-access times chunk by chunk:
    runs (verified) and curves equal the in-memory ones, whose next uses are computed."""
    import tempfile

    assume(tr.n_requests > 0)  # (an oracleGeneral file holds at least one request)
    chunk = data.draw(st.integers(1, tr.n_requests))
    ks = data.draw(st.lists(st.integers(1, tr.layout.n_pages), min_size=1, max_size=3))
    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "t.oracleGeneral")
        write_oracle_general(tr, f)
        lay = tr.layout
        # the file's next uses, read chunk by chunk, are the trace's own (none: its length)
        (seq,) = open_chunks(f, chunk=chunk, n_experts=lay.n_experts, n_layers=lay.n_layers,
                             next_use=True)
        assert np.array_equal(np.concatenate([c[2] for c in seq.chunks]), tr.next_use)
        runs = [(p, k) for p in ("belady", "belady-dist") for k in ks]
        (out,) = stream_run(f, runs, ["belady", "belady-dist"], chunk=chunk,
                            n_experts=lay.n_experts, n_layers=lay.n_layers, verify=True)
    for (p, k), res in zip(runs, out.results, strict=True):
        _same(simulate(tr, p, k), res)
    for name in ("belady", "belady-dist"):
        assert np.array_equal(out.curves[name], miss_curve(tr, name)), name


def test_belady_dist_curve_with_a_partial_last_round(tmp_path):
    """Belady-DIST's streamed curve on a trace whose last round is cut short (7 requests, 2
    layers of 3): layer 0 requests 0 1 2 1 (its requests 0..3), layer 1 page 3 three times.
    At layer 0's request 2 with 2 slots holding {0, 1}, page 0 is never requested again and
    page 1 is at layer request 3 = 7 // 2: Belady evicts 0, then 1 hits (3 misses in the
    layer, not 4). k = 3 gives layer 0 two slots: 3 + 1 = 4 misses."""
    lay = Layout(3, 2)
    tr = from_pages([0, 3, 1, 3, 2, 3, 1], lay)
    f = tmp_path / "t.oracleGeneral"
    write_oracle_general(tr, f)
    for chunk in (1, 3, 7):
        (m,) = miss_curve_stream(f, "belady-dist", n_experts=3, n_layers=2, chunk=chunk)
        assert m.tolist() == [7, 5, 4, 4, 4, 4] == miss_curve(tr, "belady-dist").tolist()


def test_next_access_times_are_checked(tmp_path):
    """A next-access time that does not name the next request of the same page is an error
    naming the record: one that points elsewhere, one not after its own request, one past the
    end of the trace."""
    from paging.io.libcachesim import ORACLE_GENERAL

    tr = from_pages([0, 1, 0, 1, 0, 1], Layout(1, 2))  # next accesses 3 4 5 6 -1 -1 (1-based)
    f = tmp_path / "t.oracleGeneral"
    write_oracle_general(tr, f)
    good = np.fromfile(f, dtype=ORACLE_GENERAL)
    assert good["next_access_vtime"].tolist() == [3, 4, 5, 6, -1, -1]

    def run(nv):
        rec = good.copy()
        rec["next_access_vtime"] = nv
        rec.tofile(f)
        return stream_run(str(f), [("belady", 1)], n_experts=1, n_layers=2, chunk=2)

    assert run([3, 4, 5, 6, -1, -1])[0].results[0].misses == 6
    big = np.iinfo(np.int64).max  # (libCacheSim reads it as "none" too)
    assert run([3, 4, 5, 6, big, -1])[0].results[0].misses == 6
    assert "said at request 4" in _error(lambda: run([5, 4, 5, 6, -1, -1]))
    assert "record 2" in _error(lambda: run([3, 4, 2, 6, -1, -1]))  # (not after itself)
    for bad in (9, 7, 0, -2):  # past the end (1-based 7 of 6 requests), or no position
        msg = _error(lambda bad=bad: run([3, 4, 5, 6, bad, -1]))
        assert "record 4" in msg and "names no later request" in msg
    assert "said never" in _error(lambda: run([3, 4, -1, 6, -1, -1]))
    # page 0's last request promises request 5, which is page 1's
    assert "not requested again" in _error(lambda: run([3, 4, 5, 6, 6, -1]))


def test_a_trace_too_large_for_memory_is_refused_before_reading(tmp_path, monkeypatch):
    """Reading whole a trace whose pages and steps alone (16 bytes a request) exceed the
    available memory is refused up front, naming the file and the size, for oracleGeneral,
    .npz and generator specs; one that fits is read."""
    import paging.memory

    tr = zipf(4, 3, 100, seed=1)
    write_npz(tr, tmp_path / "z.npz")
    write_oracle_general(tr, tmp_path / "z.oracleGeneral")
    monkeypatch.setattr(paging.memory, "available", lambda: 300 * 16 - 1)
    for f in ("z.npz", "z.oracleGeneral"):
        msg = _error(lambda f=f: load(str(tmp_path / f), n_experts=4, n_layers=3))
        assert "300 requests need about 4.8 KB" in msg and f in msg and "--stream" in msg
    assert "300 requests" in _error(lambda: load("zipf:n=4,layers=3,tokens=100,seed=1"))
    monkeypatch.setattr(paging.memory, "available", lambda: 300 * 16)
    (whole,) = load(str(tmp_path / "z.npz"))
    assert np.array_equal(whole.pages, tr.pages)
    assert load("zipf:n=4,layers=3,tokens=100,seed=1")[0].n_requests == 300


def test_a_page_requested_2_to_the_23_times_keeps_its_lfu_rank():
    """A carried LFU run keys a page (count + 1) · stride + t: with a stride of 2^40 a page
    requested 2^23 times overflowed int64 and became the first victim (21 misses in memory,
    4 streamed). The stride is now 2^31, and a run longer than that is refused."""
    import paging.fast

    lay = Layout(3, 1)
    pages = np.r_[np.zeros((1 << 23) + 5, np.int64), np.tile([1, 2], 10), [0]]
    tr = from_pages(pages, lay)
    (o,) = stream_run([(tr.pages, None)], [("lfu", 2)], layout=lay)
    assert o.results[0].misses == simulate(tr, "lfu", 2).misses == 21
    assert paging.fast._CARRIED_STRIDE == 1 << 31


def test_a_carried_lfu_run_longer_than_its_stride_is_refused(monkeypatch):
    import paging.fast

    monkeypatch.setattr(paging.fast, "_CARRIED_STRIDE", 8)
    chunks = [(np.array([0, 1, 2, 0]), None), (np.array([1, 2, 0, 1]), None)]
    assert "at most 7 requests" in _error(lambda: stream_run(chunks, [("lfu", 2)],
                                                             layout=Layout(3, 1)))


def test_an_npz_whose_arrays_end_before_their_headers_say_is_an_error(tmp_path):
    """An .npz whose pages and steps headers (and offsets) promise 100 more requests than the
    arrays hold: read whole it is refused; streamed it was read as shorter (exit 0), or looped
    on empty chunks without end. Now both name the file and stop."""
    import io
    import zipfile

    write_npz(zipf(4, 3, 100, seed=1), tmp_path / "z.npz")
    src = zipfile.ZipFile(tmp_path / "z.npz")
    with zipfile.ZipFile(tmp_path / "short.npz", "w") as dst:
        for name in src.namelist():
            data = src.read(name)
            key = name[:-4]
            if key in ("pages", "steps", "offsets"):
                a = np.lib.format.read_array(io.BytesIO(data))
                buf = io.BytesIO()
                if key == "offsets":
                    a = a.copy()
                    a[-1] += 100
                    np.lib.format.write_array(buf, a)
                else:
                    np.lib.format.write_array_header_1_0(
                        buf, {"descr": np.lib.format.dtype_to_descr(a.dtype),
                              "fortran_order": False, "shape": (a.size + 100,)})
                    buf.write(a.tobytes())
                data = buf.getvalue()
            dst.writestr(name, data)
    f = str(tmp_path / "short.npz")
    for chunk in (7, 1000):
        msg = _error(lambda chunk=chunk: simulate_stream(f, "lru", 4, chunk=chunk))
        assert "ends after 300 of the 400 values" in msg and "short.npz" in msg


def test_refusals():
    lay = Layout(2, 2)
    chunks = [(np.array([0, 2]), None)]
    # Belady: next uses come only with an oracleGeneral file
    assert "oracleGeneral" in _error(lambda: simulate_stream(chunks, "belady", 1, layout=lay))
    assert "oracleGeneral" in _error(lambda: miss_curve_stream(chunks, "belady", layout=lay))
    # (the oracle predictor reads the future: not streamed; Score-Based reads gate scores,
    # which chunks of (pages, steps) do not bring)
    pm = "predictive-marker:oracle"
    assert "no streaming kernel" in _error(lambda: simulate_stream(chunks, pm, 1, layout=lay))
    assert "no streamed miss curve" in _error(lambda: miss_curve_stream(chunks, pm, layout=lay))
    for go in (lambda: simulate_stream(chunks, "score-based-dist", 1, layout=lay),
               lambda: miss_curve_stream(chunks, "score-based", layout=lay)):
        assert "reads gate scores and stream has none" in _error(go)
    assert "needs their layout" in _error(lambda: simulate_stream(chunks, "lru", 1))


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "paging", *args], capture_output=True,
                          text=True, timeout=300, env=env)


def test_cli_stream_equals_the_in_memory_commands(tmp_path):
    tr = zipf(4, 3, 300, seed=5, name="z")
    write_npz(tr, tmp_path / "z.npz")
    f = str(tmp_path / "z.npz")
    a = _cli("simulate", f, "--policy", "lru", "--policy", "llru-dist", "--k", "3", "--k", "6",
             "--json")
    b = _cli("simulate", f, "--policy", "lru", "--policy", "llru-dist", "--k", "3", "--k", "6",
             "--json", "--stream", "--chunk", "17")
    assert a.returncode == 0 and b.returncode == 0, b.stderr
    assert a.stdout == b.stdout
    # the curves' three routes: one pass (lru, lfu), shares (fifo-dist), one run per k
    # (marking, with its seed)
    for pol in (["lru"], ["lfu"], ["fifo-dist"], ["marking", "--seed", "2"],
                ["token-match"], ["predictive-marker-dist", "--seed", "1"]):
        a = _cli("mrc", f, "--policy", *pol, "--json")
        b = _cli("mrc", f, "--policy", *pol, "--json", "--stream", "--chunk", "10")
        assert a.returncode == 0 and b.returncode == 0, b.stderr
        assert a.stdout == b.stdout
    for pol, why in (("belady", "only from an oracleGeneral file"),
                     ("score-based", "reads gate scores and z has none")):
        r = _cli("mrc", f, "--policy", pol, "--stream")  # (f: an .npz, no next uses)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert why in r.stderr
    # page sizes and costs, at k pages and under a byte budget (1e-8 GB = 10 bytes)
    rng = np.random.default_rng(3)
    (tmp_path / "s.json").write_text(str(rng.integers(1, 4, 12).tolist()))
    (tmp_path / "c.json").write_text(str(rng.random(12).round(3).tolist()))
    w = ["--sizes", str(tmp_path / "s.json"), "--costs", str(tmp_path / "c.json")]
    for cap in (["--k", "4"], ["--budget-gb", "1e-8", "--budget-gb", "2e-8", "--verify"]):
        cmd = ["simulate", f, "--policy", "gdsf", "--policy", "lru-dist", *cap, *w, "--json"]
        a, b = _cli(*cmd), _cli(*cmd, "--stream", "--chunk", "29")
        assert a.returncode == 0 and b.returncode == 0, b.stderr
        assert a.stdout == b.stdout and '"cost"' in a.stdout
    for extra, why in (
            (["--policy", "belady", "--k", "3"],
             f"--policy belady reads next uses, which a stream has only from an oracleGeneral "
             f"file (next_access_vtime), not from {f}; drop --stream"),
            (["--policy", "lru", "--budget-gb", "1"],
             "--stream with --budget-gb needs --sizes FILE"),
            (["--policy", "lru", "--k", "3", "--prefetch", "oracle"],
             "--stream does not support --prefetch: "),
            (["--policy", "lru", "--k", "3", "--model", "mixtral-8x7b"],
             "--stream does not support --model: ")):
        r = _cli("simulate", f, "--stream", *extra)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert r.stderr.startswith(f"error: {why}"), (extra, r.stderr)


def test_cli_streams_big_files_by_itself(tmp_path):
    import os

    write_npz(zipf(4, 3, 100, seed=1), tmp_path / "z.npz")
    f = str(tmp_path / "z.npz")
    env = dict(os.environ, PAGING_STREAM_BYTES="10")
    r = _cli("simulate", f, "--policy", "lru", "--k", "3", env=env)
    assert r.returncode == 0 and "streaming it" in r.stderr
    r = _cli("simulate", f, "--policy", "lru", "--k", "3", "--no-stream", env=env)
    assert r.returncode == 0 and r.stderr == ""
    r = _cli("simulate", f, "--policy", "belady", "--k", "3", env=env)
    assert r.returncode == 0 and "reading it whole" in r.stderr
    r = _cli("mrc", f, "--policy", "lru", "--stream", "--no-stream")
    assert r.returncode == 2 and "contradict" in r.stderr
    # --chunk: refused with --no-stream, a note when the trace is read whole (it was ignored
    # silently), and used without a note when the file streams by itself
    r = _cli("simulate", f, "--policy", "lru", "--k", "3", "--chunk", "7", "--no-stream")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--no-stream" in r.stderr
    r = _cli("simulate", f, "--policy", "lru", "--k", "3", "--chunk", "7")
    assert r.returncode == 0 and "note: --chunk 7 is unused" in r.stderr
    r = _cli("mrc", f, "--policy", "lru", "--chunk", "7", env=env)
    assert r.returncode == 0 and "streaming it" in r.stderr and "unused" not in r.stderr
    # a groups-mode file read as rounds (the default): the stream reads a file as stored, the
    # whole reader re-expands it, so a big one is read whole after a note (it was an error)
    write_npz(zipf(4, 3, 30, seed=1, topk=2, expand="groups"), tmp_path / "g.npz")
    g = str(tmp_path / "g.npz")
    for cmd in (["simulate", g, "--policy", "lru", "--k", "4"], ["mrc", g, "--policy", "lru"]):
        big = _cli(*cmd, "--json", env=env)
        assert big.returncode == 0 and "reading it whole (the file stores groups" in big.stderr
        assert "--stream" not in big.stderr  # (no advice to drop a flag not given)
        assert big.stdout == _cli(*cmd, "--json").stdout


def test_a_big_file_with_a_trace_that_does_not_stream_is_read_whole(tmp_path):
    """A file above the threshold streams by itself only when every TRACE given can: beside a
    libCacheSim CSV or a spec that does not stream, all are read whole after a note naming
    why (the big file was streamed, then the other TRACE stopped the run with an error asking
    to drop a --stream never given)."""
    import os

    write_npz(zipf(4, 3, 50, seed=1), tmp_path / "z.npz")
    f = str(tmp_path / "z.npz")
    (tmp_path / "ids.txt").write_text("0\n4\n8\n1\n")  # (one id per line: not streamed)
    env = dict(os.environ, PAGING_STREAM_BYTES="100")
    for other, why in (([str(tmp_path / "ids.txt"), "--n-experts", "4", "--layers", "3"],
                        "ids.txt: streaming reads"),
                       (["zipf:n=4,layers=3,tokens=5,topk=2"], "generates zipf specs with topk=1")):
        cmd = ["simulate", f, *other, "--policy", "lru", "--k", "3", "--json"]
        r = _cli(*cmd, env=env)
        assert r.returncode == 0 and "reading it whole" in r.stderr and why in r.stderr, r.stderr
        assert "--stream" not in r.stderr  # (no advice to drop a flag not given)
        assert r.stdout == _cli(*cmd).stdout
    """``mrc --verify`` on a file that would stream by itself reads it whole after a note (it
    was an error telling the user to add --no-stream); with --stream it is one line."""
    import os

    write_npz(zipf(4, 3, 50, seed=1), tmp_path / "z.npz")
    f = str(tmp_path / "z.npz")
    env = dict(os.environ, PAGING_STREAM_BYTES="10")
    r = _cli("mrc", f, "--policy", "lru", "--verify", "--json", env=env)
    assert r.returncode == 0 and "reading it whole" in r.stderr, r.stderr
    assert '"verified": true' in r.stdout
    r = _cli("mrc", f, "--policy", "lru", "--verify", "--stream")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--verify" in r.stderr


def test_the_run_recipe_says_what_a_stream_refuses():
    from paging.run import RunSpec

    assert RunSpec("lru", k=3).stream_refusal() is None
    assert RunSpec("lru", k=3, miss="fetch").stream_refusal() is None  # the default handler
    assert RunSpec("lru", k=3, warm=True).stream_refusal() == "--warm"
    assert RunSpec("lru", k=3, model="mixtral-8x7b").stream_refusal() == "--model"
    assert RunSpec("lru", k=3, miss="substitute").stream_refusal() == "--miss"
    assert RunSpec("lru", k=3, engine="reference").stream_refusal() == "--engine reference"


def test_a_streamed_npz_without_pages_or_steps_is_one_line(tmp_path):
    """It was zipfile's KeyError and a traceback; read whole it was already this line."""
    write_npz(zipf(4, 3, 20, seed=1), tmp_path / "good.npz")
    good = dict(np.load(tmp_path / "good.npz"))
    for key in ("pages", "steps"):
        np.savez(tmp_path / "bad.npz", **{k: v for k, v in good.items() if k != key})
        r = _cli("simulate", str(tmp_path / "bad.npz"), "--policy", "lru", "--k", "3",
                 "--stream")
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert f"missing array '{key}'" in r.stderr


def test_an_npz_with_a_negative_token_or_rank_is_one_line_whole_and_streamed(tmp_path):
    """A CSV cell must be a non-negative integer; an .npz's token and rank arrays were taken
    as they were, and a negative token indexed the routing table from its end when the trace
    was expanded again. Now both readers refuse it, with the same line."""
    write_npz(zipf(4, 3, 20, seed=1, topk=2), tmp_path / "good.npz")
    good = dict(np.load(tmp_path / "good.npz"))
    assert {"token", "rank"} <= set(good)
    for key in ("token", "rank"):
        bad = dict(good)
        bad[key] = good[key].copy()
        bad[key][7] = -3
        np.savez(tmp_path / "bad.npz", **bad)
        want = f"array '{key}' holds a negative value (-3)"
        for extra in ((), ("--stream",)):
            r = _cli("simulate", str(tmp_path / "bad.npz"), "--policy", "token-match", "--k",
                     "3", *extra)
            assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
            assert want in r.stderr and "Traceback" not in r.stderr


def test_an_npz_uint64_page_beyond_int64_is_named_as_stored(tmp_path):
    """2^64 - 1 in a uint64 pages array was cast to -1 and named as page -1."""
    write_npz(zipf(4, 3, 20, seed=1), tmp_path / "good.npz")
    good = dict(np.load(tmp_path / "good.npz"))
    pages = good["pages"].astype(np.uint64)
    pages[5] = 2**64 - 1
    np.savez(tmp_path / "bad.npz", **{**good, "pages": pages})
    for extra in ((), ("--stream",)):
        r = _cli("simulate", str(tmp_path / "bad.npz"), "--policy", "lru", "--k", "3", *extra)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert f"array 'pages' holds {2**64 - 1}, beyond int64" in r.stderr


def test_an_npz_bad_value_is_named_by_its_index(tmp_path):
    """A bad page id (beyond int64), token id (negative) or gate score (NaN) far into an .npz
    is named by its index in the file's array, read whole and in chunks (the line named only
    the array)."""
    tr = zipf(4, 3, 20, seed=1, topk=2)  # 120 requests
    write_npz(dataclasses.replace(tr, score=np.ones(tr.n_requests)), tmp_path / "good.npz")
    good = dict(np.load(tmp_path / "good.npz"))
    pages = good["pages"].astype(np.uint64)
    pages[100] = 2**64 - 1
    token = good["token"].copy()
    token[101] = -2
    score = good["score"].copy()
    score[102] = np.nan
    for key, arr, want in (("pages", pages, f"{2**64 - 1}, beyond int64, at index 100"),
                           ("token", token, "negative value (-2) at index 101"),
                           ("score", score, "holds nan at index 102")):
        np.savez(tmp_path / "bad.npz", **{**good, key: arr})
        assert want in _error(lambda: load(tmp_path / "bad.npz"))
        for chunk in (1, 7, 1000):
            def streamed(chunk=chunk):
                for seq in open_chunks(tmp_path / "bad.npz", chunk=chunk, tokens=True,
                                       scores=True):
                    for _ in seq.chunks:
                        pass
            assert want in _error(streamed), (key, chunk)


def test_an_npz_names_its_first_bad_value_whole_and_in_any_chunk_size(tmp_path):
    """Several uint64 ids beyond int64, and several negative ranks: the whole read and a read
    in chunks of 2 name the same (first) one."""
    write_npz(zipf(4, 3, 20, seed=1, topk=2), tmp_path / "good.npz")
    good = dict(np.load(tmp_path / "good.npz"))
    pages = good["pages"].astype(np.uint64)
    pages[[3, 6]] = [2**63, 2**64 - 1]
    rank = good["rank"].copy()
    rank[[4, 9]] = [-1, -7]
    for key, arr, want in (("pages", pages, f"holds {2**63}, beyond int64"),
                           ("rank", rank, "holds a negative value (-1)")):
        np.savez(tmp_path / "bad.npz", **{**good, key: arr})
        for extra in ((), ("--stream", "--chunk", "2")):
            r = _cli("mrc", str(tmp_path / "bad.npz"), "--policy", "lru", *extra)
            assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
            assert want in r.stderr, r.stderr
