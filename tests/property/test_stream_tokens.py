"""Streamed token policies (:class:`paging.fast.tokens.Streamed`, :class:`paging.stream.
_TokenRun`): a run fed a file's chunks, keeping no request of the chunks before, equals the
run on the sequence read whole, decision for decision (misses per page, collisions,
bypasses; every streamed run verified chunk by chunk), with the token ids and the top-K the
file stores (rounds mode: K walks per token), and after a failed bound (the sequence read
again at the next margin)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import paging.fast.tokens as T
import paging.stream as PS
from paging import simulate
from paging.generators import zipf
from paging.io import load, write_npz
from paging.io.csvtrace import write_csv
from paging.mrc import miss_curve
from paging.stream import miss_curve_stream, stream_run

TOKEN_POLICIES = ["token-hazard", "token-decay", "token-match", "robust-token-match",
                  "token-hazard-dist", "token-decay-dist", "token-match-dist",
                  "robust-token-match-dist", "robust:lru,token-decay"]


def _same(a, b) -> None:
    assert a.misses == b.misses
    assert np.array_equal(a.page_misses, b.page_misses)
    assert a.collision_misses == b.collision_misses
    assert a.bypasses == b.bypasses


@st.composite
def _case(draw):
    n = draw(st.integers(2, 6))
    L = draw(st.integers(1, 4))
    topk = draw(st.integers(1, min(3, n)))
    mode = draw(st.sampled_from(["rounds", "groups"]))
    tr = zipf(n, L, draw(st.integers(1, 60)), seed=draw(st.integers(0, 10**6)), topk=topk,
              expand=mode, name="z")
    if draw(st.booleans()):  # no recorded top-K: the readers take the largest rank + 1
        tr = dataclasses.replace(tr, meta={})
    pol = draw(st.sampled_from(TOKEN_POLICIES))
    lo = L if pol.endswith("-dist") else 1
    k = draw(st.integers(lo, n * L))
    return tr, mode, pol, k, draw(st.sampled_from(["npz", "csv"])), draw(st.integers(1, 50))


def _written(tmp_path_factory, tr, fmt: str, mode: str):
    """``tr`` written as a ``.npz`` or CSV file, and the file's sequence read whole."""
    f = tmp_path_factory.mktemp("t") / f"z.{fmt}"
    (write_npz if fmt == "npz" else write_csv)(tr, f)
    return f, load(f, expand=mode)[0]


@settings(deadline=None)
@given(_case())
def test_a_streamed_token_run_is_the_whole_run(tmp_path_factory, case):
    tr, mode, pol, k, fmt, chunk = case
    f, whole = _written(tmp_path_factory, tr, fmt, mode)
    ref = simulate(whole, pol, k)
    (out,) = stream_run(f, [(pol, k)], chunk=chunk, expand=mode, verify=True)
    _same(out.results[0], ref)
    # the chunks as an iterable (read once: exact sums from the start), token ids not given:
    # equal where the whole run reads one token per walk too (no tokens, or top-1 rounds)
    if whole.token is None or (mode == "rounds" and whole.top_k == 1):
        cuts = [(tr.pages[a:a + chunk], tr.steps[a:a + chunk])
                for a in range(0, len(tr.pages), chunk)]
        (it,) = stream_run(cuts, [(pol, k)], layout=tr.layout, expand=mode)
        _same(it.results[0], ref)


@settings(deadline=None, max_examples=10)
@given(_case())
def test_a_streamed_token_curve_is_the_whole_curve(tmp_path_factory, case):
    tr, mode, pol, _, fmt, chunk = case
    f, whole = _written(tmp_path_factory, tr, fmt, mode)
    got = miss_curve_stream(f, pol, chunk=chunk, expand=mode)[0]
    assert np.array_equal(got, np.asarray(miss_curve(whole, pol)))


def test_the_top_k_walks_of_a_token_matter():
    """The property tests can fail: read as one token per walk, a top-2 rounds trace's run
    differs from the whole run (which reads its tokens, two walks each)."""
    tr = zipf(8, 8, 300, seed=21, topk=2, name="z")
    ref = simulate(tr, "token-decay", 5)
    cuts = [(tr.pages, tr.steps)]
    (it,) = stream_run(cuts, [("token-decay", 5)], layout=tr.layout)
    assert it.results[0].misses != ref.misses


# runs whose bound fails with no margin (tests/property/test_token_bounds.py's RUNS)
REDONE = [("token-match", 8, 8, 2000, 1, 21), ("token-decay-dist", 32, 4, 2000, 1, 42)]


def test_a_failed_bound_reads_the_sequence_again(tmp_path, monkeypatch):
    """With no margin (ENTER = 0) these runs turn BOUNDED and a bound fails later: the stream
    reads the file (or the spec) again for the run at the next margin, here exact sums; a
    chunk iterable, which cannot be read twice, gets exact sums from the start. Each equals
    the whole run."""
    monkeypatch.setattr(T, "ENTER", (0.0,))
    starts = []
    orig = PS._TokenRun.restart

    def restart(self):
        orig(self)
        starts.append(self.enter)

    monkeypatch.setattr(PS._TokenRun, "restart", restart)
    for name, n, L, tokens, seed, k in REDONE:
        tr = zipf(n, L, tokens, seed=seed, name="z")
        write_npz(tr, tmp_path / "z.npz")
        ref = simulate(tr, name, k)
        spec = f"zipf:n={n},layers={L},tokens={tokens},seed={seed}"
        for src in (tmp_path / "z.npz", spec):
            starts.clear()
            (out,) = stream_run(src, [(name, k)], chunk=1000, verify=True)
            _same(out.results[0], ref)
            assert starts == [0.0, None]  # (margin 0, then the sequence again, exactly)
            assert out.passes == 2
        starts.clear()
        cuts = [(tr.pages[a:a + 777], tr.steps[a:a + 777])
                for a in range(0, len(tr.pages), 777)]
        (out,) = stream_run(cuts, [(name, k)], layout=tr.layout)
        _same(out.results[0], ref)
        assert starts == [None]


def test_the_memory_a_streamed_run_keeps_does_not_grow_with_the_trace():
    """:class:`paging.fast.tokens.Streamed` keeps no request: fed 10 chunks of 20,000
    requests (160 kB of pages each), the memory allocated and still held (tracemalloc, which
    sees numpy's arrays) grows by less than one chunk's pages from the second chunk to the
    last (a run that kept its chunks would hold 8 more); its misses are the whole run's."""
    import tracemalloc

    from paging import fast
    from paging.fast import _caps
    from paging.policies import make_policy
    from paging.weights import unit_sizes

    tr = zipf(8, 4, 50_000, seed=1)
    lay = tr.layout
    run = T.Streamed(lay, fast.plan(make_policy("token-match")), _caps(lay, 9, False),
                     unit_sizes(lay.n_pages), T.ENTER[0])
    m = len(tr.pages) // 10
    held = []
    tracemalloc.start()
    try:
        for a in range(0, len(tr.pages), m):
            run.feed(tr.pages[a:a + m].copy(), tr.steps[a:a + m].copy())
            held.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
    assert run.n == len(tr.pages) and len(held) == 10
    assert held[-1] - held[1] < 8 * m
    assert run.totals[0] == simulate(tr, "token-match", 9).misses


def test_every_token_policy_streams_in_the_smallest_chunks(tmp_path):
    """Chunks of 1, 2 and 7 requests (a chunk of one request: the indices the state keeps
    move by one each time, and a partition's last request is the window's first index), top-2
    rounds and groups, at three sizes each."""
    for mode in ("rounds", "groups"):
        tr = zipf(4, 3, 40, seed=7, topk=2, expand=mode, name="z")
        write_npz(tr, tmp_path / "z.npz")
        for pol in TOKEN_POLICIES:
            for k in (3, 6, 9):
                ref = simulate(tr, pol, k)
                for chunk in (1, 2, 7):
                    (out,) = stream_run(tmp_path / "z.npz", [(pol, k)], chunk=chunk,
                                        expand=mode)
                    _same(out.results[0], ref)


def assert_cli_streams_as_whole(f: str, sim: list, mrc: list, chunk: int) -> None:
    """``paging simulate FILE *sim --json`` streamed and verified (chunks of ``chunk``), and
    ``paging mrc FILE *mrc --json`` streamed: the JSON of the commands reading it whole."""
    import subprocess
    import sys

    def cli(*args):
        r = subprocess.run([sys.executable, "-m", "paging", *args], capture_output=True,
                           text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        return r.stdout

    stream = ["--stream", "--chunk", str(chunk)]
    assert cli("simulate", f, *sim, "--json") == cli("simulate", f, *sim, "--json", *stream,
                                                     "--verify")
    assert cli("mrc", f, *mrc, "--json") == cli("mrc", f, *mrc, "--json", *stream)


def test_the_cli_streams_a_token_policy_as_it_reads_it_whole(tmp_path):
    """``paging simulate --stream --verify`` and ``paging mrc --stream`` on a top-2 rounds
    ``.npz`` (token ids, two walks a token): the JSON of the commands reading it whole."""
    write_npz(zipf(4, 3, 80, seed=2, topk=2, name="z"), tmp_path / "z.npz")
    assert_cli_streams_as_whole(str(tmp_path / "z.npz"), [
        "--policy", "token-match", "--policy", "robust-token-match-dist", "--k", "3", "--k",
        "7"], ["--policy", "token-decay"], 25)


def test_token_policies_stream_under_byte_budgets(tmp_path):
    """Page sizes 1..4 and costs, budgets of 7, 20 and 40 bytes (the -dist form bypasses at
    7: a layer's share below its largest page), verified chunk by chunk: the whole runs'
    misses, bypasses, cost and bytes."""
    tr = zipf(6, 4, 200, seed=4, topk=2, name="z")
    rng = np.random.default_rng(1)
    sizes = rng.integers(1, 5, tr.layout.n_pages)
    costs = rng.random(tr.layout.n_pages)
    write_npz(tr, tmp_path / "z.npz")
    bypassed = 0
    for pol in ("token-match", "token-decay-dist", "robust-token-match"):
        for b in (7, 20, 40):
            ref = simulate(tr, pol, budget=b, sizes=sizes, costs=costs)
            (out,) = stream_run(tmp_path / "z.npz", budgets=[(pol, b)], sizes=sizes,
                                costs=costs, chunk=33, verify=True)
            got = out.results[0]
            _same(got, ref)
            assert (got.cost, got.bytes_fetched) == (ref.cost, ref.bytes_fetched)
            bypassed += got.bypasses
    assert bypassed > 0


def test_chunks_opened_without_their_token_ids_are_refused_for_a_token_policy(tmp_path):
    """open_chunks reads a file's token ids only when asked: a token policy streamed over
    chunks opened without them would read one token per walk and differ from the whole run
    (it did, silently); it is refused, and the same chunks opened with them are the whole
    run. A CSV's sequences (an iterable found as the file is read) stream as they are."""
    from paging.errors import PagingError
    from paging.io.chunks import open_chunks

    tr = zipf(5, 3, 60, seed=3, topk=2, name="z")
    for fmt in ("npz", "csv"):
        f = tmp_path / f"z.{fmt}"
        (write_npz if fmt == "npz" else write_csv)(tr, f)
        ref = simulate(load(f)[0], "token-decay", 5)
        with pytest.raises(PagingError, match="tokens=True"):
            stream_run(list(open_chunks(f)), [("token-decay", 5)])
        (out,) = stream_run(open_chunks(f, tokens=True), [("token-decay", 5)])
        _same(out.results[0], ref)
        (lru,) = stream_run(open_chunks(f), [("lru", 5)])  # (no token policy: no refusal)
        assert lru.results[0].misses == simulate(tr, "lru", 5).misses
