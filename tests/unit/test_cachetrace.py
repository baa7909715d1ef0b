"""Generic cache traces (paging.io.cachetrace): oracleGeneral, libCacheSim CSV and id-per-line
text, read as one layer of dense page ids or as layered page ids; sizes for byte budgets;
format detection; read-back of our own libCacheSim writers; libCacheSim's own miss counts when
the optional ``libcachesim`` package is installed."""

from __future__ import annotations

import json

import numpy as np
import pytest

from paging.cli import main
from paging.errors import PagingError
from paging.io import (
    detect_format,
    load,
    read_oracle_general,
    trace_sizes,
    write_libcachesim_csv,
    write_oracle_general,
)
from paging.io.cachetrace import read_oracle_general_records
from paging.io.libcachesim import ORACLE_GENERAL
from paging.layout import Layout
from paging.simulate import simulate
from paging.trace import from_pages


def oracle_file(path, ids, sizes=None):
    """Raw oracleGeneral records for ``ids`` (next access computed independently, by a scan)."""
    n = len(ids)
    rec = np.zeros(n, dtype=ORACLE_GENERAL)
    rec["time"] = np.arange(n)
    rec["obj_id"] = ids
    rec["obj_size"] = 1 if sizes is None else sizes
    nxt = []
    for i, o in enumerate(ids):
        j = next((j for j in range(i + 1, n) if ids[j] == o), None)
        nxt.append(-1 if j is None else j + 1)
    rec["next_access_vtime"] = nxt
    rec.tofile(path)
    return path


# -- generic traces: dense ids in order of first appearance ---------------------------------------
def test_text_trace_dense_ids_and_lru_by_hand(tmp_path):
    f = tmp_path / "ids.txt"
    f.write_text("# a block trace\n10\n20\n\n10\n30\n20\n10\n")
    (t,) = load(f)
    assert t.layout == Layout(3, 1)
    assert t.pages.tolist() == [0, 1, 0, 2, 1, 0]
    assert list(t.meta["object_ids"]) == [10, 20, 30]
    assert trace_sizes(t) is None
    # LRU k=2: 10 m, 20 m, 10 h, 30 m (evicts 20), 20 m (evicts 10), 10 m
    assert simulate(t, "lru", 2).misses == 5
    assert simulate(t, "lru", 3).misses == 3


def test_text_trace_string_ids(tmp_path):
    f = tmp_path / "keys.txt"
    f.write_text("b\na\nb\nc\n")
    (t,) = load(f)
    assert t.pages.tolist() == [0, 1, 0, 2]
    assert t.meta["object_ids"] == ["b", "a", "c"]


def test_csv_with_header_sizes_and_string_ids(tmp_path):
    f = tmp_path / "cdn.csv"
    f.write_text("timestamp,obj_id,obj_size\n5,x,100\n6,y,300\n7,x,100\n8,z,0\n9,y,999\n")
    assert detect_format(f) == "libcachesim-csv"
    (t,) = load(f)
    assert t.pages.tolist() == [0, 1, 0, 2, 1]
    assert t.meta["object_ids"] == ["x", "y", "z"]
    # first request's size wins; size 0 counts as 1 byte
    assert trace_sizes(t).tolist() == [100, 300, 1]
    assert t.meta["size_changes"] == 1 and t.meta["zero_sizes"] == 1


def test_oracle_general_sizes_and_byte_budget_by_hand(tmp_path):
    f = oracle_file(tmp_path / "t.oracleGeneral", [7, 9, 7, 5, 9], sizes=[4, 6, 4, 5, 6])
    (t,) = load(f)
    assert t.pages.tolist() == [0, 1, 0, 2, 1]
    assert t.meta["object_ids"].tolist() == [7, 9, 5]
    assert trace_sizes(t).tolist() == [4, 6, 5]
    # LRU with 10 bytes: 7 m {7}, 9 m {7,9}=10, 7 h, 5 m (evict LRU 9: {7,5}=9), 9 m (evict 7,
    # then 5 fits? 5+6=11 > 10, evict 5 too) -> 4 misses
    res = simulate(t, "lru", budget=10, sizes=trace_sizes(t))
    assert res.misses == 4


def test_cli_budget_uses_trace_sizes(tmp_path, capsys):
    f = oracle_file(tmp_path / "t.oracleGeneral", [7, 9, 7, 5, 9], sizes=[4, 6, 4, 5, 6])
    assert main(["simulate", str(f), "--policy", "lru", "--budget-gb", "1e-8", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["budget_bytes"] == 10 and row["misses"] == 4
    assert row["bytes_fetched"] == 4 + 6 + 5 + 6


def test_mrc_on_a_cache_trace(tmp_path, capsys):
    f = tmp_path / "ids.txt"
    f.write_text("1\n2\n3\n1\n2\n3\n")
    assert main(["mrc", str(f), "--policy", "lru", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["k"] == [1, 2, 3] and doc["misses"] == [6, 6, 3]


# -- round trips with our own libCacheSim writers ------------------------------------------------
def layered_trace():
    lay = Layout(4, 2)  # request i is a page of layer i mod 2
    pages = [0, 4, 1, 5, 0, 6, 3, 4, 0, 5, 1, 7]
    return from_pages(pages, lay, name="lay")


def test_oracle_general_round_trip_layered(tmp_path):
    t = layered_trace()
    f = tmp_path / "t.oracleGeneral"
    write_oracle_general(t, f)
    (r,) = load(f, n_experts=4, n_layers=2)
    assert r.layout == t.layout
    assert r.pages.tolist() == t.pages.tolist()
    vt = read_oracle_general_records(f)["next_access_vtime"]
    file_next = np.where(vt < 0, len(t), vt - 1)  # 1-based position of the next access
    assert r.next_use.tolist() == file_next.tolist() == t.next_use.tolist()
    for pol in ("lru", "llru", "belady", "marking-dist"):
        for k in (1, 3, 5):
            assert simulate(r, pol, k).misses == simulate(t, pol, k).misses


def test_oracle_general_round_trip_generic_keeps_miss_counts(tmp_path):
    t = layered_trace()
    f = tmp_path / "t.bin"
    write_oracle_general(t, f)
    (g,) = read_oracle_general(f)
    assert g.layout.n_layers == 1
    assert g.meta["object_ids"][g.pages].tolist() == t.pages.tolist()
    assert trace_sizes(g).tolist() == [1] * g.layout.n_pages
    for pol in ("lru", "fifo", "lfu", "belady"):  # renaming pages does not change these
        for k in (1, 2, 4, 6):
            assert simulate(g, pol, k).misses == simulate(t, pol, k).misses, (pol, k)


def test_libcachesim_csv_round_trip(tmp_path):
    t = layered_trace()
    f = tmp_path / "t.libcachesim.csv"
    write_libcachesim_csv(t, f)
    assert detect_format(f) == "libcachesim-csv"
    (r,) = load(f, n_experts=4, n_layers=2)
    assert r.pages.tolist() == t.pages.tolist()
    g = tmp_path / "plain.csv"  # the same content with a plain .csv name is sniffed too
    g.write_text(f.read_text())
    (r2,) = load(g)
    assert r2.meta["object_ids"][r2.pages].tolist() == t.pages.tolist()


# -- layered reading errors: file, record/line, expectation --------------------------------------
def test_layered_out_of_range_binary_names_record(tmp_path):
    f = oracle_file(tmp_path / "t.oracleGeneral", [0, 4, 9])
    with pytest.raises(PagingError) as e:
        load(f, n_experts=4, n_layers=2)
    assert e.value.format() == (f"{f}: record 2 (byte 48): object id 9 is out of range; "
                                "expected a page id 0..7 (n_experts=4, n_layers=2)")


def test_an_object_id_past_2_63_is_named_as_stored(tmp_path):
    """An oracleGeneral id is a uint64: 2^63 is named as such (it was read as a negative
    int64 and printed as -9223372036854775808), read whole and streamed."""
    from paging.io.chunks import open_chunks

    f = oracle_file(tmp_path / "t.oracleGeneral", [0, 2**63, 1])
    want = (f"{f}: record 1 (byte 24): object id 9223372036854775808 is out of range; "
            "expected a page id 0..7 (n_experts=4, n_layers=2)")
    with pytest.raises(PagingError) as e:
        load(f, n_experts=4, n_layers=2)
    assert e.value.format() == want
    with pytest.raises(PagingError) as e:
        for seq in open_chunks(f, n_experts=4, n_layers=2):
            list(seq.chunks)
    assert e.value.format() == want


def test_layered_wrong_layer_order_names_line(tmp_path):
    f = tmp_path / "t.txt"
    f.write_text("0\n4\n5\n")
    with pytest.raises(PagingError) as e:
        load(f, n_experts=4, n_layers=2)
    assert e.value.file == str(f) and e.value.line == 3
    assert "wrong layer order" in e.value.message and "expected a page of layer 0" in \
        e.value.message


def test_layered_needs_both_sizes_and_integer_ids(tmp_path):
    f = tmp_path / "t.txt"
    f.write_text("0\nx\n")
    with pytest.raises(PagingError, match="both --n-experts and --layers"):
        load(f, n_experts=4)
    with pytest.raises(PagingError) as e:
        load(f, n_experts=4, n_layers=2)
    assert e.value.line == 2 and "'x' is not an integer" in e.value.message


def test_truncated_oracle_general(tmp_path, capsys):
    f = tmp_path / "t.oracleGeneral"
    f.write_bytes(b"\x01" * 30)
    assert main(["trace", "info", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"error: {f}: 30 bytes is not a whole number of 24-byte")


def test_format_option_forces_the_reader(tmp_path, capsys):
    f = tmp_path / "ids.dat"
    f.write_text("3\n3\n4\n")
    assert detect_format(f) == "text"  # sniffed: one integer on the first line
    assert main(["trace", "info", str(f), "--format", "text", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["sequences"][0]["requests"] == 3 and info["n_pages"] == 2
    assert main(["trace", "info", "zipf:n=2,layers=1,tokens=5,seed=0", "--format", "text"]) == 2
    assert "applies to trace files" in capsys.readouterr().err


def test_detection_by_extension_and_content(tmp_path):
    b = tmp_path / "noext"
    oracle_file(b, [1, 2, 1])
    assert detect_format(b) == "oracle-general"  # binary, whole 24-byte records
    assert detect_format(oracle_file(tmp_path / "x.bin", [1])) == "oracle-general"
    c = tmp_path / "t.csv"
    c.write_text("sequence,step,page\ns,0,0\n")
    assert detect_format(c) == "csv"


# -- libCacheSim's own miss counts (optional package) ---------------------------------------------
def test_libcachesim_reads_the_same_misses(tmp_path):
    lcs = pytest.importorskip("libcachesim")
    rng = np.random.default_rng(3)
    ids = (rng.zipf(1.3, 3000) % 200) * 1000 + 17  # sparse ids, skewed popularity
    size_of = {o: int(s) for o, s in zip(np.unique(ids), rng.integers(1, 50, 200), strict=False)}
    sizes = [size_of[o] for o in ids]
    for sized in (False, True):
        f = oracle_file(tmp_path / f"z{int(sized)}.oracleGeneral", ids.tolist(),
                        sizes if sized else None)
        (t,) = load(f)
        for k in (5, 20, 60, 400):  # objects (unit sizes) or bytes
            for name, cls in (("lru", lcs.LRU), ("fifo", lcs.FIFO), ("belady", lcs.Belady)):
                reader = lcs.TraceReader(str(f), lcs.TraceType.ORACLE_GENERAL_TRACE,
                                         lcs.ReaderInitParam(ignore_obj_size=False))
                ratio = cls(cache_size=k).process_trace(reader)
                ratio = ratio[0] if isinstance(ratio, tuple) else ratio
                if sized:
                    ours = simulate(t, name, budget=k, sizes=trace_sizes(t)).misses
                else:
                    ours = simulate(t, name, k).misses
                assert round(ratio * len(ids)) == ours, (sized, name, k)
