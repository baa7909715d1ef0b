"""Token ids and ranks held to the layer clock (paging.trace.token_violation), whole and
streamed; sparse token ids re-expanded; duplicate sequence names and sequences whose every
token was dropped refused at load (a review: permuted, zeroed or per-request token ids were
read without complaint and changed the token policies' misses, the groups re-expansion's order
and the serving model's; `--layers 33` on a 32-layer file gave zero requests and a "perfect"
cache; two sequences of one name lost one from a sweep table)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from paging.cli import main
from paging.errors import PagingError
from paging.io import load, write
from paging.layout import Layout
from paging.trace import Trace, TraceError, from_routing, token_violation

LAY = Layout(4, 2)
# two tokens, top-2: rounds mode walks (token 0, rank 0), (0, 1), (1, 0), (1, 1), each over
# layers 0 and 1
EXPERTS = np.array([[[0, 1], [2, 3]], [[1, 2], [3, 0]]])


def rounds_trace(**change) -> Trace:
    tr = from_routing(EXPERTS, LAY, "rounds")
    cols = {"token": tr.token.copy(), "rank": tr.rank.copy()}
    for key, (i, v) in change.items():
        cols[key][i] = v
    return Trace(LAY, tr.pages, tr.steps, "t", cols["token"], cols["rank"], None, "rounds")


def test_the_expansions_columns_are_what_the_rule_says():
    tr = from_routing(EXPERTS, LAY, "rounds")
    assert tr.token.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert tr.rank.tolist() == [0, 0, 1, 1, 0, 0, 1, 1]
    gr = from_routing(EXPERTS, LAY, "groups")
    assert gr.token.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert gr.rank.tolist() == [0, 1, 0, 1, 0, 1, 0, 1]
    for t in (tr, gr):
        assert token_violation(t.steps, t.token, t.rank, 2, t.expand) is None


@pytest.mark.parametrize("change, message", [
    ({"token": (1, 1)}, "request 1 (step 1) has token id 1 inside the forward pass of token 0; "
                        "expected one token id per forward pass (steps // 2 layers)"),
    ({"token": (4, 0)}, "request 4 (step 4) has rank 0 after a round of rank 1; expected the "
                        "rounds of a token to have ranks 0, 1, ..., K-1"),
    ({"rank": (3, 0)}, "request 3 (step 3) has rank 0 inside a round of rank 1; expected one "
                       "rank per round in rounds mode"),
    ({"rank": (4, 1)}, "request 4 (step 4) starts token 1 with rank 1; expected its first "
                       "round to have rank 0"),
])
def test_rounds_mode_violations_are_named_at_their_request(change, message):
    with pytest.raises(TraceError, match="^trace t: " + message.replace("(", r"\(")
                       .replace(")", r"\)").replace(".", r"\.")) as e:
        rounds_trace(**change)
    assert e.value.request == int(message.split()[1])


def test_token_ids_that_go_down_are_refused_and_ones_that_skip_are_kept():
    with pytest.raises(TraceError, match=r"request 4 \(step 4\) starts a forward pass with "
                                         "token id 0 after token 3; expected token ids to "
                                         "increase from token to token$"):
        Trace(LAY, [0, 4, 1, 5] * 2, range(8), "t", [3] * 4 + [0] * 4, [0, 0, 1, 1] * 2)
    ok = Trace(LAY, [0, 4, 1, 5] * 2, range(8), "t", [3] * 4 + [2 ** 62] * 4,
               [0, 0, 1, 1] * 2)
    assert ok.token[-1] == 2 ** 62


def test_groups_mode_one_pass_per_token():
    """(A group's ranks need not be distinct: a serving step's group gives each expert the
    best rank any of its tokens gave it.)"""
    pages, steps = [0, 1, 6, 7, 1, 2, 7, 4], [0, 0, 1, 1, 2, 2, 3, 3]
    Trace(LAY, pages, steps, "g", [0] * 4 + [5] * 4, [0, 1] * 4, expand="groups")
    Trace(LAY, pages, steps, "g", [0] * 4 + [5] * 4, [1] * 8, expand="groups")
    with pytest.raises(TraceError, match=r"request 4 \(step 2\) starts a forward pass with "
                                         r"token id 0 after token 0; .* \(groups mode: one "
                                         "forward pass per token; a trace in rounds order is "
                                         "read with --expand rounds\\)"):
        Trace(LAY, pages, steps, "g", [0] * 8, [0, 1] * 4, expand="groups")
    with pytest.raises(TraceError, match=r"request 3 \(step 1\) has token id 1 inside the "
                                         "forward pass of token 0"):
        Trace(LAY, pages, steps, "g", [0, 0, 0, 1, 1, 1, 1, 1], [0, 1] * 4, expand="groups")


def test_a_violation_beyond_the_first_validation_block_is_numbered_in_the_whole_trace(
        monkeypatch):
    import paging.trace

    monkeypatch.setattr(paging.trace, "_CHUNK", 3)  # (blocks of 3 requests: the prev carry)
    with pytest.raises(TraceError, match=r"request 4 \(step 4\) has rank 0 after"):
        rounds_trace(token=(4, 0))
    rounds_trace()


@pytest.mark.parametrize("ext", [".npz", ".csv"])
@pytest.mark.parametrize("stream", [False, True])
def test_a_file_with_decreasing_token_ids_is_one_line_naming_it(tmp_path, capsys, ext, stream):
    good = from_routing(EXPERTS, LAY, "rounds", name="s")
    path = tmp_path / f"t{ext}"
    write([good], path)
    if ext == ".npz":
        d = dict(np.load(path, allow_pickle=False))
        d["token"] = d["token"][::-1].copy()
        np.savez(path, **d)
    else:
        lines = path.read_text(encoding="utf-8").splitlines()
        head = [i for i, ln in enumerate(lines) if ln.startswith("sequence")][0]
        cols = lines[head].split(",")
        t = cols.index("token")
        rows = [ln.split(",") for ln in lines[head + 1:]]
        for r, v in zip(rows, [1, 1, 1, 1, 0, 0, 0, 0], strict=True):
            r[t] = str(v)
        path.write_text("\n".join(lines[:head + 1] + [",".join(r) for r in rows]) + "\n",
                        encoding="utf-8")
    argv = ["simulate", str(path), "--policy", "lru", "--k", "2"] + (["--stream"] if stream
                                                                      else [])
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err
    where = f"{path}:{head + 6}: " if ext == ".csv" else f"{path}: sequence s: "
    # token 1's rounds, then token 0's: the ids go down at request 4, whole and streamed
    assert err == (f"error: {where}request 4 (step 4) starts a forward pass with token id 0 "
                   "after token 1; expected token ids to increase from token to token\n"), err


def test_sparse_and_huge_token_ids_reexpand_as_their_order(tmp_path):
    """Groups re-expansion numbered its table by token id: ids up to 2^62 asked for an
    array of 2^62 rows. Now the ids' order numbers the table, and the result equals the
    re-expansion of the dense ids."""
    dense = from_routing(EXPERTS, LAY, "rounds", name="s")
    sparse = Trace(LAY, dense.pages, dense.steps, "s", np.where(dense.token == 1, 2 ** 62, 7),
                   dense.rank)
    for tr, name in ((dense, "d"), (sparse, "s")):
        write([tr], tmp_path / f"{name}.npz")
    a, = load(tmp_path / "d.npz", expand="groups")
    b, = load(tmp_path / "s.npz", expand="groups")
    assert a.pages.tolist() == b.pages.tolist() and a.steps.tolist() == b.steps.tolist()
    assert b.token.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]


def test_two_sequences_of_one_name_are_refused_whole_and_streamed(tmp_path, capsys):
    a = from_routing(EXPERTS, LAY, "rounds", name="s")
    write([a, from_routing(EXPERTS[::-1].copy(), LAY, "rounds", name="s")], tmp_path / "d.npz")
    with pytest.raises(PagingError, match="sequences 1 and 2 are both named 's'; expected "
                                          "distinct sequence names"):
        load(tmp_path / "d.npz")
    for extra in ([], ["--stream"]):
        assert main(["simulate", str(tmp_path / "d.npz"), "--policy", "lru", "--k", "2",
                     *extra]) == 2
        assert capsys.readouterr().err == (f"error: {tmp_path / 'd.npz'}: sequences 1 and 2 "
                                           "are both named 's'; expected distinct sequence "
                                           "names\n")


def test_jsonl_ids_that_name_one_sequence_twice_are_refused(tmp_path):
    import json

    rows = [{"problem_id": pid, "token_idx": t, "layer": z, "experts": [z, 1 - z]}
            for pid in (0, "0") for t in range(2) for z in range(2)]
    f = tmp_path / "r.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(PagingError, match="sequences 1 and 2 are both named "
                                          "'r.jsonl#problem_id=0'"):
        load(f)


def test_a_layout_larger_than_the_file_drops_every_token_and_is_refused(tmp_path, capsys):
    import json

    rows = [{"problem_id": 0, "token_idx": t, "layer": z, "experts": [z, 1 - z]}
            for t in range(3) for z in range(2)]
    f = tmp_path / "r.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert load(f)[0].n_requests == 12
    assert main(["simulate", str(f), "--policy", "lru", "--k", "2", "--layers", "3"]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: {f}: sequence r.jsonl#problem_id=0: all 3 tokens lack some of the "
                   "3 layers 0..2 and were dropped; expected the layout of the file (check "
                   "--layers/--n-experts, or read with --strict to see the first incomplete "
                   "token)\n")


@given(st.integers(1, 4), st.integers(1, 3), st.integers(1, 3), st.integers(0, 2 ** 31),
       st.sampled_from(["rounds", "groups"]))
def test_every_expansion_keeps_the_rule(n_tokens, layers, k, seed, expand):
    """from_routing's expansions, their re-expansion and a chunked check agree with the rule
    everywhere (a check that refused a valid trace would break every reader)."""
    from paging.io._pages import reexpand
    from paging.io.chunks import ChunkCheck

    rng = np.random.default_rng(seed)
    n = k + int(rng.integers(0, 3))
    ex = np.stack([[rng.permutation(n)[:k] for _ in range(layers)]
                   for _ in range(n_tokens)])
    lay = Layout(n, layers)
    tr = from_routing(ex, lay, expand)
    other = reexpand(tr, "groups" if expand == "rounds" else "rounds")
    for t in (tr, other):
        assert token_violation(t.steps, t.token, t.rank, layers, t.expand) is None
        chk = ChunkCheck(lay, t.expand, t.name)
        cut = int(rng.integers(0, t.n_requests + 1))
        for lo, hi in ((0, cut), (cut, t.n_requests)):
            chk.check(t.pages[lo:hi], t.steps[lo:hi], token=t.token[lo:hi],
                      rank=t.rank[lo:hi])


@pytest.mark.parametrize("stream", [False, True])
def test_an_npz_sequence_whose_every_token_was_dropped_is_refused_whole_and_streamed(
        tmp_path, capsys, stream):
    """The streamed reader had only the duplicate-name half of the load-time checks: an
    all-dropped sequence ran as zero requests with --stream (and so for every file above
    $PAGING_STREAM_BYTES)."""
    good = from_routing(EXPERTS, LAY, "rounds", name="good")
    empty = from_routing(np.zeros((0, 2, 2), int), LAY, "rounds", name="empty",
                         meta={"dropped_tokens": 5})
    path = tmp_path / "d.npz"
    write([good, empty], path)
    assert main(["simulate", str(path), "--policy", "lru", "--k", "2",
                 "--stream" if stream else "--no-stream"]) == 2
    assert capsys.readouterr().err == (f"error: {path}: sequence empty: all 5 tokens lack some "
                                       "of the 2 layers 0..1 and were dropped; expected the "
                                       "layout of the file (check --layers/--n-experts, or "
                                       "read with --strict to see the first incomplete token)"
                                       "\n")


def test_a_repeated_step_in_rounds_mode_points_to_groups_whole_and_streamed(tmp_path, capsys):
    """A trace in groups order read in rounds mode repeats a step: both readers say how to read
    it (the streamed one said only that steps must advance)."""
    hint = ("request 1 has step 0 after 0; steps must advance by 1 per request in rounds mode "
            "and by 0 or 1 in groups mode; a repeated step is a group: a trace in groups order "
            "reads with --expand groups")
    with pytest.raises(TraceError, match=hint + "$"):
        Trace(LAY, [0, 1], [0, 0], "t")
    with pytest.raises(TraceError, match=r"has step 3 after 0; steps must advance by 1 per "
                                         "request in rounds mode and by 0 or 1 in groups mode$"):
        Trace(LAY, [0, 1], [0, 3], "t", expand="groups")
    csv = tmp_path / "g.csv"
    csv.write_text("sequence,step,page\nt,0,0\nt,0,1\n")
    assert main(["simulate", str(csv), "--n-experts", "4", "--layers", "2", "--policy", "lru",
                 "--k", "2", "--stream"]) == 2
    assert capsys.readouterr().err == f"error: {csv}:3: {hint}\n"
