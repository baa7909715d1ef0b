"""``paging trace info`` / ``paging trace convert`` through ``paging.cli.main``, and the numbers
of ``paging.stats.trace_info`` on hand-checked sequences."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from paging.cli import main
from paging.io import load
from paging.layout import Layout
from paging.stats import trace_info
from paging.trace import from_pages, from_routing

GOOD = '{"dataset": "d", "problem_id": 0, "token_idx": 0, "layer": 0, "experts": [1, 2], ' \
       '"gating_probs": [0.6, 0.4]}\n'


def row(**kw) -> str:
    r = {"dataset": "d", "problem_id": 0, "token_idx": 0, "layer": 1, "experts": [1, 2],
         "gating_probs": [0.6, 0.4]}
    r.update(kw)
    return json.dumps(r) + "\n"


def drop(key: str) -> str:
    r = json.loads(row())
    del r[key]
    return json.dumps(r) + "\n"


NESTED_BAD = ('{"num_layers": 1,\n "prompts": {\n  "p": {\n   "prefill": [[[0, 1]]],\n'
              '   "decode": [[[2, "3"]]]\n  }\n }\n}\n')

# (file name, contents, line the error must name)
BAD_FILES = [
    ("truncated.jsonl", GOOD + GOOD[:40], 2),
    ("not_json.jsonl", "experts: 1, 2\n", 1),
    ("not_object.jsonl", GOOD + "[1, 2]\n", 2),
    ("string_expert.jsonl", GOOD + row(experts=["1", 2]), 2),
    ("float_expert.jsonl", GOOD + row(experts=[1.0, 2]), 2),
    ("bool_expert.jsonl", GOOD + GOOD + row(experts=[True, 2]), 3),
    ("negative_expert.jsonl", GOOD + row(experts=[-1, 2]), 2),
    ("negative_layer.jsonl", GOOD + row(layer=-1), 2),
    ("string_token.jsonl", GOOD + row(token_idx="0"), 2),
    ("nan_score.jsonl", GOOD + row().replace("0.6, 0.4", "NaN, 0.4"), 2),
    ("inf_score.jsonl", GOOD + row().replace("0.6, 0.4", "0.6, Infinity"), 2),
    ("negative_score.jsonl", GOOD + row(gating_probs=[1.2, -0.2]), 2),
    ("short_scores.jsonl", GOOD + row(gating_probs=[1.0]), 2),
    ("missing_experts.jsonl", GOOD + drop("experts"), 2),
    ("missing_layer.jsonl", GOOD + drop("layer"), 2),
    ("repeated_expert.jsonl", GOOD + row(experts=[2, 2]), 2),
    ("duplicate_row.jsonl", GOOD + row() + GOOD, 3),
    ("topk_change.jsonl", GOOD + row(experts=[1, 2, 3], gating_probs=[0.5, 0.3, 0.2]), 2),
    ("empty.jsonl", "", 1),
    ("blank.jsonl", "\n\n", 1),
    ("nested_bad_expert.json", NESTED_BAD, 5),
    ("nested_truncated.json", NESTED_BAD[:60], 4),
    ("nested_no_prompts.json", '{"model": "m",\n "layers": []}\n', 1),
    ("empty.json", "", 1),
    ("wrong_layer.csv", "# paging-trace n_experts=2 n_layers=2\npage\n0\n1\n", 4),
    ("bad_page.csv", "# paging-trace n_experts=2 n_layers=2\npage\n0\n1.0\n", 4),
    ("bad_step.csv", "# paging-trace n_experts=2 n_layers=2\nstep,page\n0,0\n2,2\n", 4),
    ("short_row.csv", "# paging-trace n_experts=2 n_layers=2\nstep,page\n0,0\n1\n", 4),
    ("nan_score.csv", "# paging-trace n_experts=2 n_layers=1\npage,score\n0,nan\n", 3),
    ("no_layout.csv", "page\n0\n", 1),
    ("bad_comment.csv", "# paging-trace n_experts=two\npage\n0\n", 1),
    # ids beyond int64, or so large that the inferred layout would take gigabytes
    ("huge_page.csv", "# paging-trace n_experts=2 n_layers=2\npage\n0\n" + "9" * 23 + "\n", 4),
    ("huge_token.jsonl", GOOD + row(token_idx=10**23), 2),
    ("huge_layer_id.jsonl", GOOD + row(layer=10**23), 2),
    ("huge_layer.jsonl", GOOD + row(layer=10**9), 2),
    ("huge_expert.jsonl", GOOD + row(experts=[1, 10**9]), 2),
]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def assert_one_error_line(err: str, *fragments: str) -> None:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and "Traceback" not in err
    for f in fragments:
        assert f in lines[0], (f, lines[0])


@pytest.mark.parametrize("name,content,line", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_input_one_error_line(tmp_path, capsys, name, content, line):
    f = tmp_path / name
    f.write_text(content)
    rc, out, err = run(capsys, "trace", "info", str(f))
    assert rc == 2 and out == ""
    assert_one_error_line(err, f"{name}:{line}: ")
    out_file = tmp_path / "out" / "converted.npz"
    rc, out, err = run(capsys, "trace", "convert", str(f), str(out_file))
    assert rc == 2
    assert_one_error_line(err, f"{name}:{line}: ")
    assert not out_file.exists() and not any((tmp_path / "out").glob("*"))


def test_ids_beyond_int64_and_capacities_beyond_int64(tmp_path, capsys):
    """Whole and streamed: an id or a capacity int64 cannot hold is one error line naming it
    (they were tracebacks: OverflowError, StopIteration), and an inferred layout of a stray id
    of 10^9 is refused before anything is allocated."""
    big = "9" * 23
    f = tmp_path / "h.csv"
    f.write_text(f"# paging-trace n_experts=2 n_layers=2 expand=rounds\nsequence,step,page\n"
                 f"s,0,0\ns,1,{big}\n")
    for extra in ((), ("--stream",)):
        rc, out, err = run(capsys, "simulate", str(f), "--policy", "lru", "--k", "2", *extra)
        assert rc == 2 and out == ""
        assert_one_error_line(err, "h.csv:4: ", f"page is out of range ({big})", "below 2^63")
    txt = tmp_path / "h.txt"
    txt.write_text(f"1\n0\n{big}\n")
    rc, _, err = run(capsys, "simulate", str(txt), "--n-experts", "2", "--layers", "1",
                     "--policy", "lru", "--k", "2")
    assert rc == 2
    assert_one_error_line(err, "h.txt:3: ", f"object id {big} is out of range",
                          "expected a page id 0..1")
    txt.write_text("0\n1\n--5\n")  # (a ValueError traceback once the minus signs were stripped)
    rc, _, err = run(capsys, "simulate", str(txt), "--n-experts", "2", "--layers", "1",
                     "--policy", "lru", "--k", "2")
    assert rc == 2
    assert_one_error_line(err, "h.txt:3: ", "object id '--5' is not an integer")
    lc = tmp_path / "h.libcachesim.csv"
    lc.write_text(f"obj_id,size\n1,3\n{big},4\n")
    rc, _, err = run(capsys, "simulate", str(lc), "--n-experts", "2", "--layers", "1",
                     "--policy", "lru", "--k", "2")
    assert rc == 2
    assert_one_error_line(err, "h.libcachesim.csv:3: ", f"object id {big} is out of range")
    lc.write_text(f"obj_id,size\n1,3\n0,{big}\n")  # a size int64 cannot hold
    rc, _, err = run(capsys, "simulate", str(lc), "--policy", "lru", "--k", "2")
    assert rc == 2
    assert_one_error_line(err, "h.libcachesim.csv:3: ", f"object size is out of range ({big})")
    hl = tmp_path / "hl.csv"  # a layout whose pages int64 ids cannot name
    hl.write_text(f"# paging-trace n_experts={2**64} n_layers=2\npage\n0\n")
    for extra in ((), ("--stream",)):
        rc, out, err = run(capsys, "simulate", str(hl), "--policy", "lru", "--k", "2", *extra)
        assert rc == 2 and out == ""
        assert_one_error_line(err, "hl.csv:1: ", "more pages than int64 ids can name")
    j = tmp_path / "e.jsonl"
    j.write_text(GOOD + row(experts=[1, 10**9]))
    rc, _, err = run(capsys, "simulate", str(j), "--policy", "lru", "--k", "2")
    assert rc == 2
    assert_one_error_line(err, "e.jsonl:2: ", "expert id 1000000000 gives an inferred layout",
                          "more than 16,777,216 pages")
    # an explicit size is taken as given: only the inferred part of the layout is bounded
    from paging.io._common import layout_for

    assert layout_for(1, 1, 10**9, None, "f").n_pages == 2 * 10**9
    npz = tmp_path / "a.npz"
    rc, _, _ = run(capsys, "trace", "convert", "zipf:n=4,layers=3,tokens=6,seed=0", str(npz))
    assert rc == 0
    sizes = tmp_path / "sizes.json"
    sizes.write_text(json.dumps([1000] * 12))
    for extra in ((), ("--stream",)):
        rc, out, err = run(capsys, "simulate", str(npz), "--policy", "lru", "--k", str(2**63),
                           *extra)
        assert rc == 2 and out == ""
        assert_one_error_line(err, f"argument --k: {2**63} is out of range")
        rc, out, err = run(capsys, "simulate", str(npz), "--policy", "fifo", "--budget-gb",
                           "1e10", "--sizes", str(sizes), *extra)
        assert rc == 2 and out == ""
        assert_one_error_line(err, "the byte budget must be at most 2^63 - 1 bytes")
        rc, out, err = run(capsys, "simulate", str(npz), "--policy", "fifo", "--budget-gb",
                           "1e300", "--sizes", str(sizes), *extra)  # (one short line)
        assert rc == 2 and out == ""
        assert_one_error_line(err, "at most 2^63 - 1 bytes, got 1.000e309")
        rc, out, _ = run(capsys, "simulate", str(npz), "--policy", "lru", "--k",
                         str(2**63 - 1), "--json", *extra)
        (res,) = json.loads(out)  # k = 2^63 - 1 runs: only the cold misses
        assert rc == 0 and res["misses"] == len(set(load(npz)[0].pages.tolist())) == 10
    from paging import simulate  # the Python API's own check (the CLI's parser is first)
    from paging.errors import PagingError

    with pytest.raises(PagingError, match=r"k must be at most 2\^63 - 1, got 9223372036854775808"):
        simulate(load(npz)[0], "lru", 2**63)


def test_option_errors(tmp_path, capsys):
    f = tmp_path / "ok.jsonl"
    f.write_text(GOOD + row())
    rc, _, err = run(capsys, "trace", "info", str(f), "--n-experts", "2")
    assert rc == 2
    assert_one_error_line(err, "ok.jsonl:1: ",
                          "expert id 2 in experts is out of range; expected 0..1")
    rc, _, err = run(capsys, "trace", "info", str(f), "--strict")
    assert rc == 0 and err == ""
    f.write_text(GOOD)  # with --layers 2, token 0 lacks layer 1
    rc, _, err = run(capsys, "trace", "info", str(f), "--layers", "2", "--strict")
    assert rc == 2
    assert_one_error_line(err, "ok.jsonl:1: ", "strict mode")
    rc, _, err = run(capsys, "trace", "info", str(tmp_path / "missing.jsonl"))
    assert rc == 2
    assert_one_error_line(err, "missing.jsonl: no such trace file")
    rc, _, err = run(capsys, "trace", "info", "zipf:n=8,layers=32,tokens=10,a=NaN")
    assert rc == 2
    assert_one_error_line(err, "zipf:n=8,layers=32,tokens=10,a=NaN", "finite")
    rc, _, err = run(capsys, "trace", "convert", str(f), str(tmp_path / "x.npz"), "--to", "xml")
    assert rc == 2 and not (tmp_path / "x.npz").exists()
    assert_one_error_line(err, "invalid choice")


# -- statistics ----------------------------------------------------------------------------------
def test_trace_info_by_hand():
    # one layer of two experts, pages 0 0 1 0: next uses 0->1 (gap 1), 1->3 (gap 2)
    t = from_pages([0, 0, 1, 0], Layout(2, 1), name="s")
    info = trace_info(t)
    (r,) = info["sequences"]
    assert (r["trace"], r["tokens"], r["top_k"], r["requests"], r["distinct_pages"]) == \
        ("s", 4, 1, 4, 2)
    # p = (3/4, 1/4): H = 2 - (3/4) log2 3
    assert r["entropy_bits"][0] == pytest.approx(2 - 0.75 * math.log2(3))
    assert info["max_entropy_bits"] == 1.0
    assert r["reuse"] == {"count": 2, "cold": 2, "min": 1, "median": 1.5, "p90": 1.9, "max": 2,
                          "min_rounds": 1, "median_rounds": 1.5, "p90_rounds": 1.9,
                          "max_rounds": 2}


def test_trace_info_cyclic_and_totals():
    # cyclic n=2, l=2: pages 0 2 1 3 0 2 1 3; every page recurs after n*l = 4 requests = 2 rounds
    a = load("cyclic:n=2,layers=2,rounds=4")[0]
    b = from_pages([0, 2, 0, 3], Layout(2, 2), name="b")
    info = trace_info([a, b])
    ra, rb, tot = info["sequences"][0], info["sequences"][1], info["total"]
    assert ra["reuse"]["count"] == 4 and ra["reuse"]["min"] == ra["reuse"]["max"] == 4
    assert ra["reuse"]["max_rounds"] == 2 and ra["entropy_bits"] == [1.0, 1.0]
    assert rb["reuse"]["count"] == 1 and rb["reuse"]["cold"] == 3 and rb["distinct_pages"] == 3
    # totals: requests 8 + 4, union of pages 4, cold = 4 + 3 first requests, gaps pooled
    # (four gaps of 4 and b's gap of 2)
    assert (tot["requests"], tot["distinct_pages"], tot["reuse"]["cold"]) == (12, 4, 7)
    assert tot["reuse"]["count"] == 5 and tot["reuse"]["min"] == 2
    # layer 0 pooled: a requests experts 0 1 0 1, b requests 0 0 -> p = (2/3, 1/3),
    # H = log2 3 - 2/3
    assert tot["entropy_bits"][0] == pytest.approx(math.log2(3) - 2 / 3)


def test_trace_info_groups_rounds_gap():
    table = np.array([[[0, 1]], [[1, 2]], [[0, 2]]])  # 3 tokens, 1 layer, top-2
    t = from_routing(table, Layout(3, 1), expand="groups")
    r = trace_info(t)["sequences"][0]
    # requests 0 1 | 1 2 | 0 2: page 0 at 0->4 (gap 4, 2 tokens), 1 at 1->2 (1, 1), 2 at 3->5 (2, 1)
    assert (r["reuse"]["min"], r["reuse"]["max"], r["reuse"]["max_rounds"]) == (1, 4, 2)
    assert r["top_k"] == 2 and r["tokens"] == 3


def test_info_json_and_table(tmp_path, capsys):
    f = tmp_path / "r.jsonl"
    f.write_text(GOOD + row(experts=[0, 2]) + row(token_idx=1, layer=0, experts=[2, 1]))
    rc, out, err = run(capsys, "trace", "info", str(f), "--json")
    assert rc == 0 and err == ""
    info = json.loads(out)
    (r,) = info["sequences"]
    assert r["trace"] == "r.jsonl#problem_id=0"
    assert (r["tokens"], r["dropped_tokens"], r["top_k"], r["requests"]) == (1, 1, 2, 4)
    assert (info["n_experts"], info["n_layers"], info["expand"]) == (3, 2, "rounds")
    rc, out, _ = run(capsys, "trace", "info", str(f), "--expand", "groups")
    assert rc == 0 and "r.jsonl#problem_id=0" in out and "expand=groups" in out
    assert "per-layer popularity entropy" in out


# -- convert -------------------------------------------------------------------------------------
@pytest.fixture
def jsonl(tmp_path) -> Path:
    f = tmp_path / "in.jsonl"
    lines = [row(problem_id=p, token_idx=t, layer=z, experts=[(t + z + p) % 3, 3],
                 gating_probs=[0.75, 0.25]) for p in range(2) for t in range(3) for z in range(2)]
    f.write_text("".join(lines))
    return f


@pytest.mark.parametrize("expand", ["rounds", "groups"])
@pytest.mark.parametrize("out_name,to", [("t.npz", None), ("t.csv", None), ("t.data", "npz")])
def test_convert_round_trip(tmp_path, capsys, jsonl, out_name, to, expand):
    out = tmp_path / out_name
    argv = ["trace", "convert", str(jsonl), str(out), "--expand", expand]
    rc, stdout, err = run(capsys, *argv, *(["--to", to] if to else []))
    assert rc == 0 and err == "" and "2 sequence(s), 24 requests" in stdout
    a, b = load(jsonl, expand=expand), load(out, expand=expand)
    assert [t.name for t in a] == [t.name for t in b]
    for x, y in zip(a, b, strict=True):
        for f in ("pages", "steps", "token", "rank", "score"):
            assert np.array_equal(getattr(x, f), getattr(y, f)), f


def test_convert_libcachesim(tmp_path, capsys, jsonl):
    rc, _, err = run(capsys, "trace", "convert", str(jsonl), str(tmp_path / "t.oracleGeneral"))
    assert rc == 0 and (tmp_path / "t.oracleGeneral").stat().st_size == 24 * 24
    # (two sequences back to back: a note says the second's ids are offset)
    assert err.count("\n") == 1 and "offset by s x" in err
    rc, _, _ = run(capsys, "trace", "convert", "cyclic:n=2,layers=1,rounds=3",
                   str(tmp_path / "c.csv"), "--to", "libcachesim-csv")
    assert rc == 0 and (tmp_path / "c.csv").read_text() == "time,obj_id\n0,0\n1,1\n2,0\n"


def test_convert_one_sequence(tmp_path, capsys, jsonl):
    """``--sequence`` writes one sequence, by index or by name: a libCacheSim file of it alone
    keeps its layered page ids (no note), and reads back as that sequence's pages; an unknown
    one is one error line, exit 2, no file."""
    from paging.io.chunks import open_chunks

    whole = load(jsonl)
    for which in ("1", whole[1].name):
        out = tmp_path / "one.oracleGeneral"
        rc, stdout, err = run(capsys, "trace", "convert", str(jsonl), str(out), "--sequence",
                              which)
        assert rc == 0 and err == "" and "1 sequence(s), 12 requests" in stdout
        (seq,) = open_chunks(out, n_experts=4, n_layers=2)
        assert np.concatenate([c[0] for c in seq.chunks]).tolist() == whole[1].pages.tolist()
    for bad in ("2", "\u00b2"):  # (a superscript two is a digit to str.isdigit, not to int)
        rc, _, err = run(capsys, "trace", "convert", str(jsonl), str(tmp_path / "x.npz"),
                         "--sequence", bad)
        assert rc == 2 and not (tmp_path / "x.npz").exists()
        assert_one_error_line(err, "expected an index 0..1 or a name")


def test_convert_failure_leaves_no_file(tmp_path, capsys, monkeypatch, jsonl):
    out = tmp_path / "o" / "e.oracleGeneral"
    rc, _, err = run(capsys, "trace", "convert", "cyclic:n=2,layers=1,rounds=0", str(out))
    assert rc == 2 and not out.exists()
    assert_one_error_line(err, "no requests")
    rc, _, err = run(capsys, "trace", "convert", str(jsonl), str(tmp_path / "o" / "t.xyz"))
    assert rc == 2 and not any((tmp_path / "o").glob("*"))
    assert_one_error_line(err, "cannot tell the output format")

    from paging.errors import PagingError

    def half_written(fh, **arrays):  # a writer that fails after writing part of the file
        fh.write(b"PK\x03\x04 partial")
        raise PagingError("disk full")

    monkeypatch.setattr(np, "savez", half_written)
    rc, _, err = run(capsys, "trace", "convert", str(jsonl), str(tmp_path / "o" / "t.npz"))
    assert rc == 2 and not any((tmp_path / "o").glob("*"))
    assert_one_error_line(err, "disk full")


def test_converted_files_get_the_umask_mode_not_0600(tmp_path):
    """Files written by ``trace convert`` used to keep mkstemp's 0600."""
    import os
    import stat

    old = os.umask(0o022)
    try:
        out = tmp_path / "t.npz"
        assert main(["trace", "convert", "cyclic:n=2,layers=2,rounds=3", str(out)]) == 0
        assert stat.S_IMODE(out.stat().st_mode) == 0o644
        os.umask(0o077)
        out2 = tmp_path / "t2.csv"
        assert main(["trace", "convert", "cyclic:n=2,layers=2,rounds=3", str(out2)]) == 0
        assert stat.S_IMODE(out2.stat().st_mode) == 0o600
    finally:
        os.umask(old)


def test_score_based_dist_without_scores_named_alike_whole_and_streamed(tmp_path, capsys):
    """`paging mrc` of score-based-dist on a trace without gate scores names the -dist policy
    and the sequence, whole as streamed and as `paging simulate` does (the whole curve named
    score-based and "the trace")."""
    f = tmp_path / "o.oracleGeneral"
    from paging.io import write_oracle_general

    write_oracle_general([from_pages([0, 2, 1, 3, 0, 2], Layout(2, 2), name="x")], f)
    lay = ("--n-experts", "2", "--layers", "2")
    want = "score-based-dist reads gate scores and o.oracleGeneral has none"
    for argv in (("mrc", str(f), *lay, "--policy", "score-based-dist"),
                 ("mrc", str(f), *lay, "--policy", "score-based-dist", "--stream"),
                 ("simulate", str(f), *lay, "--policy", "score-based-dist", "--k", "2")):
        rc, out, err = run(capsys, *argv)
        assert rc == 2 and out == ""
        assert_one_error_line(err, want)


def test_layout_options_are_checked_before_the_file_and_named_as_options(capsys, jsonl):
    """--n-experts 0 on a file was blamed on the first expert id ("expected 0..-1"); it is refused
    before the reading. On a generator spec the message names the option the command has
    (--layers, not --n_layers)."""
    for opt, val, want in (("--n-experts", "0", "n_experts (--n-experts) must be an integer >= 1, "
                            "got 0"),
                           ("--layers", "-2", "n_layers (--layers) must be an integer >= 1, "
                            "got -2")):
        rc, out, err = run(capsys, "trace", "info", str(jsonl), opt, val)
        assert rc == 2 and out == ""
        assert_one_error_line(err, want)
    for opt, name in (("--n-experts", "n_experts"), ("--layers", "n_layers")):
        rc, out, err = run(capsys, "trace", "info", "zipf:n=3,layers=2,tokens=3,seed=0", opt, "2")
        assert rc == 2
        assert_one_error_line(err, f"{name} is set by the generator spec itself; drop {opt}")


def test_an_added_format_is_known_by_its_extension_or_by_its_sniff(tmp_path, monkeypatch):
    # TraceFormat: "sniff recognizes a file by its first 64 KiB when the extension does not";
    # a format with extensions was never sniffed (the sniff sat in the conditional's else)
    import paging.io as io
    from paging.io.formats import TraceFormat

    fmt = TraceFormat(name="magic", read=lambda *a, **k: [], extensions=(".mgc",),
                      sniff=lambda head: head.startswith(b"MAGIC1"))
    monkeypatch.setitem(io.FORMATS, "magic", fmt)
    (tmp_path / "a.mgc").write_bytes(b"anything")
    (tmp_path / "b.dat").write_bytes(b"MAGIC1 rest")
    (tmp_path / "c.txt").write_text("1\n2\n")
    assert io.detect_format(tmp_path / "a.mgc") == "magic"
    assert io.detect_format(tmp_path / "b.dat") == "magic"
    assert io.detect_format(tmp_path / "c.txt") == "text"
