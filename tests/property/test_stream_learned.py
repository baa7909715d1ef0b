"""Streaming FlashMoE (:class:`paging.fast.learned.Carried`, each chunk served alone from the
state the last one left) with its training-sequence watch: a streamed run refuses the
sequences the whole run refuses, with the same error, and otherwise gives its numbers."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_flashmoe_kernel import nets

from paging.errors import PagingError
from paging.generators import zipf
from paging.io import write_csv, write_npz
from paging.layout import Layout
from paging.learned.model import PREFIX, FlashMoEModel, fingerprint, load_model, shipped_model_path
from paging.simulate import simulate
from paging.stream import stream_run
from paging.trace import from_pages

MIXTRAL = Layout(8, 32)


def _outcome(go):
    """A run's result as a dict (its trace name left out), or its error's message."""
    try:
        res = go()
    except PagingError as e:
        return str(e)
    d = res.to_dict()
    d.pop("trace")
    return d, res.page_misses.tolist()


@given(tokens=st.integers(1, 24), topk=st.integers(1, 3), seed=st.integers(0, 99),
       mode=st.sampled_from(["rounds", "groups"]), k=st.integers(1, 257),
       chunk=st.integers(1, 300))
def test_streamed_flashmoe_equals_the_whole_run(tokens, topk, seed, mode, k, chunk):
    """The shipped model on Mixtral's layout, top-1 to 3, rounds and groups, any chunk size,
    verified chunk by chunk: the whole run's numbers."""
    tr = zipf(8, 32, tokens, seed=seed, topk=topk, expand=mode)
    chunks = [(tr.pages[a:a + chunk], tr.steps[a:a + chunk])
              for a in range(0, tr.n_requests, chunk)]
    (out,) = stream_run(chunks, [("flashmoe", k)], layout=tr.layout, expand=mode, verify=True)
    assert _outcome(lambda: out.results[0]) == _outcome(lambda: simulate(tr, "flashmoe", k))


@given(tokens=st.sampled_from([3, 17, 40]), data=st.data())
def test_a_streamed_run_refuses_what_the_whole_run_refuses(tokens, data):
    """A model (random weights) trained on the sequence itself, on the sequence with its first
    request changed, or on one a round longer, at k pages or a byte budget small enough to serve
    some of the first ``PREFIX`` requests uncached (the policy does not hear those, so its prefix
    hash differs and the whole run is not refused): streamed from a ``.npz`` (the length known up
    front), a CSV and chunks (known at the end), the same error or the same numbers as in memory."""
    tr = zipf(8, 16, tokens, seed=data.draw(st.integers(0, 9)), name="s")
    assert (tr.n_requests > PREFIX) == (tokens == 40)  # (48, 272 or 640 requests)
    other = tr.pages.copy()
    other[0] = (other[0] + 1) % 8
    # the sequence itself, another first request, or one more round (the same first PREFIX
    # requests when there are more, but another length: not this sequence)
    trained = data.draw(st.sampled_from([
        tr, from_pages(other, tr.layout, name="t"),
        from_pages(np.concatenate([tr.pages, tr.pages[:16]]), tr.layout, name="u")]))
    model = data.draw(nets(tr.layout))
    model = FlashMoEModel(model.net, tr.layout, {"trained_on": [fingerprint(trained)]})
    P = tr.layout.n_pages
    sizes = np.array(data.draw(st.lists(st.integers(1, 4), min_size=P, max_size=P)))
    cap = {"k": data.draw(st.integers(1, P + 1))} if data.draw(st.booleans()) else {
        "budget": data.draw(st.integers(1, 8)), "sizes": sizes}
    chunk = data.draw(st.integers(1, 60))
    with tempfile.TemporaryDirectory() as d:
        path = model.save(f"{d}/m.npz")
        name = f"flashmoe:model={path}"
        want = _outcome(lambda: simulate(tr, name, **cap))
        run = ([(name, cap["k"])], {}) if "k" in cap else ([], {
            "budgets": [(name, cap["budget"])], "sizes": sizes})
        write_npz(tr, f"{d}/s.npz")
        write_csv(tr, f"{d}/s.csv")
        chunks = [(tr.pages[a:a + chunk], tr.steps[a:a + chunk])
                  for a in range(0, tr.n_requests, chunk)]
        for src, kw in ((f"{d}/s.npz", {}), (f"{d}/s.csv", {}), (chunks, {"layout": tr.layout})):
            got = _outcome(lambda src=src, kw=kw: stream_run(
                src, run[0], chunk=chunk, verify=True, **run[1], **kw)[0].results[0])
            assert got == want, src


def test_the_cli_refuses_a_training_sequence_streamed(tmp_path):
    """The shipped model was trained on the Mixtral HumanEval sequences: a sequence of the
    same length whose prefix is one of them (here a copy of the model's recorded fingerprint
    on a synthetic sequence) is refused by ``paging simulate --stream`` with the whole run's
    one line and exit status 2, no row printed."""
    import subprocess
    import sys

    tr = zipf(8, 32, 30, seed=1, name="s")
    base = load_model(shipped_model_path(MIXTRAL))
    FlashMoEModel(base.net, MIXTRAL, {"trained_on": [fingerprint(tr)]}).save(tmp_path / "m.npz")
    write_npz(tr, tmp_path / "s.npz")
    pol = f"flashmoe:model={tmp_path / 'm.npz'}"
    outs = [subprocess.run([sys.executable, "-m", "paging", "simulate", str(tmp_path / "s.npz"),
                            "--policy", pol, "--k", "64", *extra], capture_output=True,
                           text=True, timeout=300)
            for extra in ([], ["--stream", "--chunk", "100"])]
    for r in outs:
        assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
        assert "was trained on sequence 's'" in r.stderr
    assert outs[0].stderr == outs[1].stderr


def test_the_watch_keeps_the_prefix_only():
    """The watch keeps the first PREFIX requests' pages only (a long stream holds no more):
    after 2,240 requests in chunks of 300, of unknown length, it holds 512 entries and checks
    at the end: a record of another prefix ends the watch, one of this prefix (every request
    heard at k = 64) is refused."""
    from paging import fast
    from paging.learned.model import page_hash
    from paging.policies import make_policy

    tr = zipf(8, 32, 70, seed=2)
    for h, refused in (("0" * 64, False), (page_hash(tr.pages[:PREFIX]), True)):
        run = fast.CarriedRun(MIXTRAL, fast.plan(make_policy("flashmoe")), 64)
        run.state.records = [{"n_requests": tr.n_requests, "name": "x", "prefix_sha256": h}]
        for a in range(0, tr.n_requests, 300):
            run.feed(tr.pages[a:a + 300], tr.steps[a:a + 300])
        assert len(run.state.heard) == PREFIX
        if refused:
            with pytest.raises(PagingError, match="trained on sequence 'x'"):
                run.state.finish()
        else:
            run.state.finish()
            assert run.state.records == []
