"""Trace readers and writers (paging.io): small hand-checked files, round trips, libCacheSim
bytes, and the real traces of ../shared/traces when PAGING_TRACES is set."""

from __future__ import annotations

import json
import struct
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from conftest import TRACES, needs_traces  # noqa: I001

from paging.errors import PagingError
from paging.io import (
    detect_format,
    load,
    read_csv,
    read_nested_json,
    read_npz,
    read_routing_jsonl,
    write,
    write_csv,
    write_libcachesim_csv,
    write_npz,
    write_oracle_general,
)
from paging.io.libcachesim import oracle_general_records
from paging.layout import Layout
from paging.trace import from_pages, from_routing


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def rec(p, t, z, ex, sc=None, **kw):
    r = {"dataset": "d", "problem_id": p, "token_idx": t, "layer": z, "experts": ex}
    if sc is not None:
        r["gating_probs"] = sc
    r.update(kw)
    return r


# -- routing-log JSONL ---------------------------------------------------------------------------
@pytest.fixture
def routing_file(tmp_path) -> Path:
    """2 layers, experts 0..2, top-2; problem 0: tokens 0,1 complete, token 2 lacks layer 1;
    problem 1: one token. File order is layer-major and shuffled."""
    rows = [
        rec(0, 1, 0, [2, 0], [0.6, 0.4]),
        rec(0, 0, 0, [1, 0], [0.7, 0.3]),
        rec(1, 0, 1, [0, 1], [0.5, 0.5]),
        rec(0, 2, 0, [0, 1], [0.9, 0.1]),
        rec(0, 0, 1, [2, 1], [0.8, 0.2]),
        rec(0, 1, 1, [1, 2], [0.55, 0.45]),
        rec(1, 0, 0, [2, 1], [0.6, 0.4]),
    ]
    return write_jsonl(tmp_path / "r.jsonl", rows)


def test_a_byte_order_mark_is_not_part_of_the_text(tmp_path, routing_file):
    """Spreadsheets write a UTF-8 byte-order mark before the first line: a CSV trace (read
    whole or streamed) and a routing log with one read as they do without it."""
    from paging.stream import simulate_stream

    tr = from_pages([0, 4, 1, 3, 0, 5], Layout(3, 2))
    write_csv(tr, tmp_path / "t.csv")
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + (tmp_path / "t.csv").read_bytes())
    assert detect_format(bom) == "csv"
    (a,), (b,) = load(str(tmp_path / "t.csv")), load(str(bom))
    assert np.array_equal(a.pages, b.pages) and np.array_equal(a.steps, b.steps)
    (res,) = simulate_stream(str(bom), "lru", 2)
    assert res.misses == 6
    jb = tmp_path / "bom.jsonl"
    jb.write_bytes(b"\xef\xbb\xbf" + routing_file.read_bytes())
    assert [t.pages.tolist() for t in load(str(jb))] == [
        t.pages.tolist() for t in load(str(routing_file))]


def test_routing_rounds_exact(routing_file):
    t0, t1 = read_routing_jsonl(routing_file)
    assert t0.name == "r.jsonl#problem_id=0" and t1.name == "r.jsonl#problem_id=1"
    assert t0.layout == Layout(3, 2)
    # token 0: rank-0 round (1 | 2), rank-1 round (0 | 1); token 1: (2 | 1), (0 | 2); page = z*3+e
    assert t0.pages.tolist() == [1, 5, 0, 4, 2, 4, 0, 5]
    assert t0.steps.tolist() == list(range(8))
    assert t0.token.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert t0.rank.tolist() == [0, 0, 1, 1, 0, 0, 1, 1]
    assert t0.score.tolist() == [0.7, 0.8, 0.3, 0.2, 0.6, 0.55, 0.4, 0.45]
    assert t0.meta["n_tokens"] == 2 and t0.meta["top_k"] == 2
    assert t0.meta["dropped_tokens"] == 1 and t0.meta["dropped_token_ids"] == [2]
    assert t0.meta["rows"] == 5 and t0.meta["source"] == str(routing_file)
    assert t1.pages.tolist() == [2, 3, 1, 4] and t1.meta["dropped_tokens"] == 0


def test_routing_groups_exact(routing_file):
    t0 = read_routing_jsonl(routing_file, expand="groups")[0]
    assert t0.pages.tolist() == [1, 0, 5, 4, 2, 0, 4, 5]
    assert t0.steps.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]


def test_routing_strict_names_line(routing_file):
    with pytest.raises(PagingError) as e:
        read_routing_jsonl(routing_file, strict=True)
    assert e.value.file == str(routing_file) and e.value.line == 4
    assert "token 2" in e.value.message and "missing layer 1" in e.value.message


def test_routing_explicit_layout(routing_file):
    t = read_routing_jsonl(routing_file, n_experts=4, n_layers=2)[0]
    assert t.layout == Layout(4, 2) and t.pages.tolist()[:2] == [1, 6]
    with pytest.raises(PagingError) as e:
        read_routing_jsonl(routing_file, n_experts=2)
    assert e.value.line == 1 and "out of range" in e.value.message


def test_routing_custom_fields(tmp_path):
    rows = [{"req": 7, "tok": t, "lay": z, "ids": [t + z]} for t in range(2) for z in range(2)]
    f = write_jsonl(tmp_path / "c.jsonl", rows)
    (t,) = read_routing_jsonl(f, fields={"sequence": "req", "token": "tok", "layer": "lay",
                                         "experts": "ids"})
    # n_experts = max id + 1 = 3; page = layer * 3 + expert
    assert t.name == "c.jsonl#req=7" and t.pages.tolist() == [0, 4, 1, 5]
    assert t.score is None and t.meta["top_k"] == 1


def test_routing_duplicate_and_topk_errors(tmp_path):
    f = write_jsonl(tmp_path / "dup.jsonl", [rec(0, 0, 0, [1]), rec(0, 0, 1, [0]),
                                              rec(0, 0, 0, [2])])
    with pytest.raises(PagingError) as e:
        read_routing_jsonl(f)
    assert e.value.line == 3 and "line 1" in e.value.message and "duplicate" in e.value.message
    f = write_jsonl(tmp_path / "k.jsonl", [rec(0, 0, 0, [1, 2]), rec(0, 0, 1, [0])])
    with pytest.raises(PagingError) as e:
        read_routing_jsonl(f)
    assert e.value.line == 2 and "top-K" in e.value.message


def test_routing_phase_rejected(routing_file):
    with pytest.raises(PagingError, match="no phases"):
        read_routing_jsonl(routing_file, phase="decode")


# -- raw prefill+decode dump ---------------------------------------------------------------------
def raw(z, pos, ex):
    return {"dataset": "d", "problem_id": 5, "layer": z, "token_pos": pos, "experts": ex}


@pytest.fixture
def raw_file(tmp_path) -> Path:
    """2 layers, top-1. Prefill (layer-major): positions 0,1,2 at layer 0, positions 0,2 at
    layer 1 (position 1 incomplete). Decode: step A walks layers 0,1; step B only layer 1; step C
    layers 0,1."""
    rows = [raw(0, 0, [1]), raw(0, 1, [2]), raw(0, 2, [0]),
            raw(1, 0, [3]), raw(1, 2, [4]),
            raw(0, 0, [2]), raw(1, 0, [0]),
            raw(1, 0, [1]),
            raw(0, 0, [3]), raw(1, 0, [2])]
    return write_jsonl(tmp_path / "raw.jsonl", rows)


def test_raw_token_major_prefill_then_decode(raw_file):
    (t,) = read_routing_jsonl(raw_file)
    assert t.name == "raw.jsonl#problem_id=5" and t.layout == Layout(5, 2)
    # prefill pos 0: (1, 3); pos 2: (0, 4); decode A: (2, 0); decode C: (3, 2)
    assert t.pages.tolist() == [1, 8, 0, 9, 2, 5, 3, 7]
    m = t.meta
    assert m["format"] == "routing-jsonl-raw" and m["dropped_tokens"] == 2
    assert m["phases"] == {"prefill": {"rows": 5, "positions": 3, "tokens": 2, "dropped": 1},
                           "decode": {"rows": 5, "steps": 3, "tokens": 2, "dropped": 1}}
    assert m["phase_bounds"] == {"prefill": [0, 4], "decode": [4, 8]}


def test_raw_phase_selection(raw_file):
    (pre,) = read_routing_jsonl(raw_file, phase="prefill")
    (dec,) = read_routing_jsonl(raw_file, phase="decode")
    assert pre.name == "raw.jsonl#problem_id=5,phase=prefill"
    assert pre.pages.tolist() == [1, 8, 0, 9] and pre.meta["dropped_tokens"] == 1
    assert dec.name == "raw.jsonl#problem_id=5,phase=decode"
    assert dec.pages.tolist() == [2, 5, 3, 7] and dec.meta["dropped_tokens"] == 1


def test_raw_strict_and_duplicate(raw_file, tmp_path):
    with pytest.raises(PagingError) as e:
        read_routing_jsonl(raw_file, strict=True)
    assert e.value.line == 2 and "prompt position 1" in e.value.message
    f = write_jsonl(tmp_path / "rawdup.jsonl", [raw(0, 0, [1]), raw(0, 0, [2]), raw(1, 0, [0])])
    with pytest.raises(PagingError) as e:
        read_routing_jsonl(f)
    assert e.value.line == 2 and "first at line 1" in e.value.message


# -- nested prefill/decode JSON ------------------------------------------------------------------
@pytest.fixture
def nested_file(tmp_path) -> Path:
    doc = {"model": "m", "num_layers": 2, "num_experts": 4, "top_k": 2, "prompts": {
        "a": {"prompt_len": 2, "prefill": [[[0, 1], [2, 3]], [[1, 2], [3, 0]]],
              "decode": [[[3, 2], [1, 0]], [[0, 1]]]},
        "b": {"prompt_len": 1, "prefill": [[[2, 0], [0, 2]]], "decode": [[[1, 3], [2, 1]]]}}}
    f = tmp_path / "n.json"
    f.write_text(json.dumps(doc, indent=2))
    return f


def test_nested_both_phases(nested_file):
    a, b = read_nested_json(nested_file)
    assert a.name == "n.json#prompt=a" and b.name == "n.json#prompt=b"
    assert a.layout == Layout(4, 2)
    # a: prefill 0 -> rounds (0|6), (1|7); prefill 1 -> (1|7), (2|4); decode 0 -> (3|5), (2|4)
    assert a.pages.tolist() == [0, 6, 1, 7, 1, 7, 2, 4, 3, 5, 2, 4]
    assert a.meta["dropped_tokens"] == 1 and a.meta["n_tokens"] == 3
    assert a.meta["phases"] == {"prefill": {"positions": 2, "tokens": 2, "dropped": 0},
                                "decode": {"steps": 2, "tokens": 1, "dropped": 1}}
    assert a.meta["phase_bounds"] == {"prefill": [0, 8], "decode": [8, 12]}
    assert b.pages.tolist() == [2, 4, 0, 6, 1, 6, 3, 5]


def test_nested_phase_and_strict(nested_file):
    a, _ = read_nested_json(nested_file, phase="decode", expand="groups")
    assert a.name == "n.json#prompt=a,phase=decode"
    assert a.pages.tolist() == [3, 2, 5, 4] and a.steps.tolist() == [0, 0, 1, 1]
    with pytest.raises(PagingError) as e:
        read_nested_json(nested_file, strict=True)
    text = nested_file.read_text().splitlines()
    # the incomplete decode token [[0, 1]] of prompt a: its line is where its list opens
    assert e.value.line is not None and text[e.value.line - 1].strip() == "["
    assert "decode[1]" in e.value.message


def test_nested_bad_value_line(tmp_path):
    f = tmp_path / "bad.json"
    f.write_text('{"prompts": {"p": {\n"prefill": [[[0, 1]],\n [[1, "x"]]],\n'
                 '"decode": []}}}\n')
    with pytest.raises(PagingError) as e:
        read_nested_json(f)
    assert e.value.line == 3 and "expert id" in e.value.message


def test_nested_prompt_len_must_count_the_prefill_positions(nested_file):
    doc = json.loads(nested_file.read_text())
    doc["prompts"]["b"]["prompt_len"] = 2
    nested_file.write_text(json.dumps(doc, indent=2))
    with pytest.raises(PagingError, match="prompt 'b' declares prompt_len=2 but lists 1 prefill "
                                          "positions; expected them equal") as e:
        read_nested_json(nested_file)
    assert nested_file.read_text().splitlines()[e.value.line - 1].strip() == '"prompt_len": 2,'
    assert read_nested_json(nested_file, phase="decode")[1].n_requests == 4  # (not read)


# -- npz and CSV round trips ---------------------------------------------------------------------
def _same(a, b):
    assert a.name == b.name and a.layout == b.layout and a.expand == b.expand
    for f in ("pages", "steps", "token", "rank", "score"):
        x, y = getattr(a, f), getattr(b, f)
        assert (x is None and y is None) or (x.dtype == y.dtype and np.array_equal(x, y)), f


def _two_traces(expand="rounds"):
    lay = Layout(3, 2)
    table = np.array([[[0, 2], [1, 0]], [[2, 1], [2, 0]]])
    scores = np.array([[[0.1, 0.2], [1 / 3, 0.5]], [[0.25, 2.5e-7], [0.9, 0.1]]])
    t1 = from_routing(table, lay, expand, scores, name="x.jsonl#p=0,phase=prefill")
    t2 = from_routing(table[::-1], lay, expand, scores[::-1], name="x.jsonl#p=1")
    return [t1, t2]


@pytest.mark.parametrize("expand", ["rounds", "groups"])
@pytest.mark.parametrize("ext", ["npz", "csv"])
def test_round_trip(tmp_path, expand, ext):
    ts = _two_traces(expand)
    f = tmp_path / f"t.{ext}"
    (write_npz if ext == "npz" else write_csv)(ts, f)
    back = (read_npz if ext == "npz" else read_csv)(f, expand=expand)
    assert len(back) == 2
    for a, b in zip(ts, back, strict=True):
        _same(a, b)


def test_npz_keeps_meta_and_reexpands(tmp_path):
    ts = _two_traces("rounds")
    write_npz(ts, tmp_path / "t.npz")
    back = read_npz(tmp_path / "t.npz", expand="groups")
    assert back[0].meta["top_k"] == 2 and back[0].meta["source"] == str(tmp_path / "t.npz")
    for a, b in zip(_two_traces("groups"), back, strict=True):
        _same(a, b)


def test_csv_layout_options_and_errors(tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("page\n0\n3\n1\n")
    with pytest.raises(PagingError) as e:
        read_csv(f)
    assert e.value.line == 1 and "n_experts" in e.value.message
    (t,) = read_csv(f, n_experts=2, n_layers=2)
    assert t.name == "p.csv" and t.pages.tolist() == [0, 3, 1] and t.steps.tolist() == [0, 1, 2]
    f.write_text("page\n0\n3\n2\n")
    with pytest.raises(PagingError) as e:
        read_csv(f, n_experts=2, n_layers=2)
    assert e.value.line == 4 and "wrong layer order" in e.value.message
    f.write_text("# paging-trace n_experts=2 n_layers=2 expand=rounds\nsequence,page\n"
                 "a,0\na,2\nb,1\na,0\n")
    with pytest.raises(PagingError) as e:
        read_csv(f)
    assert e.value.line == 6 and "contiguous" in e.value.message


def test_csv_header_required_columns(tmp_path):
    f = tmp_path / "h.csv"
    f.write_text("# paging-trace n_experts=2 n_layers=1\nstep,pages\n0,1\n")
    with pytest.raises(PagingError) as e:
        read_csv(f)
    assert e.value.line == 2 and "unknown column 'pages'" in e.value.message


# -- libCacheSim writers -------------------------------------------------------------------------
def test_oracle_general_bytes_by_hand(tmp_path):
    # one layer of two experts: pages 0, 1, 0. libCacheSim's next_access_vtime is the 1-based
    # position of the next request of the same object (traceConvOracleGeneral.cpp), -1 if none.
    t = from_pages([0, 1, 0], Layout(2, 1))
    f = tmp_path / "t.oracleGeneral"
    write_oracle_general(t, f)
    data = f.read_bytes()
    assert len(data) == 3 * 24
    recs = [struct.unpack("<IQIq", data[i:i + 24]) for i in range(0, 72, 24)]
    assert recs == [(0, 0, 1, 3), (1, 1, 1, -1), (2, 0, 1, -1)]


def test_oracle_general_several_sequences_offset_ids(tmp_path):
    lay = Layout(2, 1)
    ts = [from_pages([0, 1, 0], lay, "a"), from_pages([1, 1], lay, "b")]
    rec = oracle_general_records(ts)
    # sequence 1 gets ids page + 1 * n_pages = page + 2, so no id is shared across sequences
    assert rec["obj_id"].tolist() == [0, 1, 0, 3, 3]
    assert rec["next_access_vtime"].tolist() == [3, -1, -1, 5, -1]
    assert rec["time"].tolist() == [0, 1, 2, 3, 4] and set(rec["obj_size"].tolist()) == {1}


def test_libcachesim_csv_text(tmp_path):
    t = from_pages([0, 3, 1, 3], Layout(2, 2))
    f = tmp_path / "t.libcachesim.csv"
    write_libcachesim_csv(t, f)
    assert f.read_text() == "time,obj_id\n0,0\n1,3\n2,1\n3,3\n"
    assert write(t, tmp_path / "u.libcachesim.csv") == "libcachesim-csv"


def test_empty_trace_not_written(tmp_path):
    t = from_pages([], Layout(2, 1))
    with pytest.raises(PagingError, match="no requests"):
        write_oracle_general(t, tmp_path / "e.oracleGeneral")
    assert list(tmp_path.iterdir()) == []


# -- load ----------------------------------------------------------------------------------------
def test_load_dispatch_and_env(tmp_path, monkeypatch, routing_file):
    monkeypatch.setenv("PAGING_TRACES", str(tmp_path))
    assert [t.name for t in load("r.jsonl")] == ["r.jsonl#problem_id=0", "r.jsonl#problem_id=1"]
    monkeypatch.delenv("PAGING_TRACES")
    with pytest.raises(PagingError) as e:
        load("r.jsonl")
    assert e.value.file == "r.jsonl" and "no such trace file" in e.value.message
    (g,) = load("cyclic:n=2,layers=2,rounds=2")
    assert g.pages.tolist() == [0, 2, 1, 3]


def test_detect_format_by_content(tmp_path, routing_file, nested_file):
    a = tmp_path / "routing.txt"
    a.write_bytes(routing_file.read_bytes())
    b = tmp_path / "nested.data"
    b.write_bytes(nested_file.read_bytes())
    c = tmp_path / "x.json"  # a routing log named .json
    c.write_bytes(routing_file.read_bytes())
    write_npz(_two_traces(), tmp_path / "t.npz")
    d = tmp_path / "t.bin"
    d.write_bytes((tmp_path / "t.npz").read_bytes())
    assert [detect_format(p) for p in (a, b, c, d)] == ["jsonl", "nested", "jsonl", "npz"]
    assert len(load(a)) == 2 and len(load(b)) == 2


# -- real traces (../shared/traces) --------------------------------------------------------------
def _jsonl_rows(name: str) -> list[dict]:
    with open(Path(TRACES) / "mixtral-8x7b-instruct-vllm" / name) as fh:
        return [json.loads(line) for line in fh]


@needs_traces
def test_real_humaneval_routing_counts():
    rows = _jsonl_rows("humaneval_2_routing.jsonl")
    layers = defaultdict(set)
    nrows = defaultdict(int)
    for r in rows:
        layers[(r["problem_id"], r["token_idx"])].add(r["layer"])
        nrows[r["problem_id"]] += 1
    traces = load("mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl")
    assert [t.name for t in traces] == ["humaneval_2_routing.jsonl#problem_id=0",
                                        "humaneval_2_routing.jsonl#problem_id=1"]
    for pid, t in enumerate(traces):
        toks = [k for k in layers if k[0] == pid]
        kept = sum(len(layers[k]) == 32 for k in toks)
        assert t.meta["rows"] == nrows[pid]
        assert t.meta["n_tokens"] == kept and t.meta["dropped_tokens"] == len(toks) - kept
        assert t.n_requests == kept * 2 * 32 and t.layout == Layout(8, 32)
    # golden numbers (PROVENANCE.md: 10,779 rows)
    assert len(rows) == 10779
    assert [(t.meta["rows"], t.meta["n_tokens"], t.meta["dropped_tokens"], t.n_requests)
            for t in traces] == [(2648, 81, 2, 5184), (8131, 252, 3, 16128)]


@needs_traces
def test_real_raw_prefill_decode_counts():
    rows = _jsonl_rows("humaneval_p0_prefill_decode_raw.jsonl")
    # independent reconstruction: prefill until the layer first goes down, then a decode step
    # starts whenever the layer does not go up
    pre, dec = defaultdict(set), defaultdict(set)
    in_prefill, step, prev = True, -1, None
    for r in rows:
        z = r["layer"]
        if in_prefill and prev is not None and z < prev:
            in_prefill = False
        if in_prefill:
            pre[r["token_pos"]].add(z)
        else:
            if step < 0 or z <= prev:
                step += 1
            dec[step].add(z)
        prev = z
    kept_pre = sum(len(v) == 32 for v in pre.values())
    kept_dec = sum(len(v) == 32 for v in dec.values())
    (t,) = load("mixtral-8x7b-instruct-vllm/humaneval_p0_prefill_decode_raw.jsonl")
    ph = t.meta["phases"]
    assert ph["prefill"]["positions"] == len(pre) and ph["prefill"]["tokens"] == kept_pre
    assert ph["decode"]["steps"] == len(dec) and ph["decode"]["tokens"] == kept_dec
    assert t.meta["dropped_tokens"] == len(pre) + len(dec) - kept_pre - kept_dec
    assert t.n_requests == (kept_pre + kept_dec) * 2 * 32
    assert (len(rows), len(pre), kept_pre, len(dec), kept_dec) == (6777, 135, 59, 83, 35)


@needs_traces
def test_real_granite_counts():
    path = Path(TRACES) / "granite-3.0-1b-a400m-instruct" / "moe_expert_trace.json"
    doc = json.loads(path.read_text())
    traces = load(path)
    assert [t.name for t in traces] == [f"moe_expert_trace.json#prompt={p}"
                                        for p in doc["prompts"]]
    for t, p in zip(traces, doc["prompts"].values(), strict=True):
        n_tok = len(p["prefill"]) + len(p["decode"])
        assert t.meta["n_tokens"] == n_tok and t.meta["dropped_tokens"] == 0
        assert t.n_requests == n_tok * 24 * 8 and t.layout == Layout(32, 24)
        # the first request is the first-listed expert of prompt position 0 at layer 0
        assert t.pages[0] == p["prefill"][0][0][0]
    assert [t.meta["n_tokens"] for t in traces] == [103, 108, 93]
    dec = load(path, phase="decode")
    assert [t.n_requests for t in dec] == [64 * 24 * 8] * 3


def test_csv_layered_errors_point_at_the_offending_row(tmp_path):
    """Trace validation reports the request; the CSV reader maps it to the file line."""
    from paging.io import read_csv

    head = "# paging-trace n_experts=3 n_layers=2 expand=groups\nstep,page\n"
    dup = tmp_path / "dup.csv"
    dup.write_text(head + "0,0\n0,1\n1,3\n1,3\n")  # the second page 3 (line 6) repeats in a group
    with pytest.raises(PagingError) as e:
        read_csv(dup)
    assert e.value.line == 6 and "requests page 3 twice" in e.value.message
    far = tmp_path / "far.csv"
    far.write_text(head + "0,0\n1,3\n2,9\n")  # page 9 (line 5) is out of range
    with pytest.raises(PagingError) as e:
        read_csv(far)
    assert e.value.line == 5 and "page 9" in e.value.message


def test_a_layer_id_beyond_the_layers_the_file_has_is_an_error(tmp_path):
    """Layer 7 among records of layers 0 and 1: the layout inferred from the largest id (8
    layers) would drop every token as incomplete, and the run reported 0 requests, exit 0.
    It is an error at the record with the largest layer; with --layers 2 the id's own one."""
    rows = [rec(0, 0, 0, [1]), rec(0, 0, 1, [0]), rec(0, 1, 0, [2]), rec(0, 1, 7, [0])]
    f = write_jsonl(tmp_path / "z.jsonl", rows)
    with pytest.raises(PagingError) as e:
        read_routing_jsonl(f)
    assert e.value.line == 4 and "no record names layer 2, 3, 4, 5, 6" in e.value.message
    with pytest.raises(PagingError) as e:
        read_routing_jsonl(f, n_layers=2)
    assert e.value.line == 4 and "n_layers" in e.value.message


def test_csv_refuses_an_empty_sequence_npz_keeps_it(tmp_path):
    """A CSV has a row per request, so an empty sequence has nothing to stand in: write_csv
    refuses it (it was dropped silently, breaking the round trip), leaving no file; .npz keeps
    it."""
    lay = Layout(2, 2)
    seqs = [from_pages([0, 2], lay, name="a"), from_pages([], lay, name="b")]
    out = tmp_path / "e.csv"
    with pytest.raises(PagingError, match="sequence b has no requests"):
        write_csv(seqs, out)
    assert not out.exists() and not list(tmp_path.iterdir())
    write_npz(seqs, tmp_path / "e.npz")
    back = load(tmp_path / "e.npz")
    assert [t.name for t in back] == ["a", "b"] and [t.n_requests for t in back] == [2, 0]
    write_csv(seqs[:1], out)
    assert [t.name for t in load(out)] == ["a"]
