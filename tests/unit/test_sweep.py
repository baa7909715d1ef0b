"""``paging sweep``: spec validation, the serial table, Dask (local cluster and a separately
started scheduler) giving the same table, kill-and-resume, the one-pass curve route."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from paging.cli import main
from paging.errors import PagingError
from paging.simulate import simulate
from paging.sweep import load_spec, read_table, run_sweep

pytest.importorskip("dask.distributed")
pytest.importorskip("pyarrow")

TRACE = "zipf:n=4,layers=2,tokens=60,a=1.0,h=0,seed=3"
SPEC = f"""
traces = ["{TRACE}", "cyclic:n=3,layers=2,rounds=20"]
policies = ["lru", "marking", "fifo"]
k = [2, 3, 5]
seeds = [0, 1]
"""


def spec_file(tmp_path, text=SPEC):
    f = tmp_path / "spec.toml"
    f.write_text(text)
    return f


def serial(tmp_path, out="serial.parquet"):
    run_sweep(spec_file(tmp_path), tmp_path / out, workers=0)
    return read_table(tmp_path / out)


def test_serial_table_matches_simulate(tmp_path):
    from paging.io import load

    rows = serial(tmp_path)
    assert len(rows) == 2 * 3 * 3 * 2  # traces x policies x k x seeds
    keys = [(r["source"], r["policy"], r["seed"], r["k"]) for r in rows]
    assert keys == sorted(keys)  # sorted by the key columns
    (tr,) = load(TRACE)
    for r in rows:
        if r["source"] == TRACE:
            res = simulate(tr, r["policy"], r["k"], seed=r["seed"])
            assert (r["misses"], r["hits"], r["requests"]) == (res.misses, res.hits, 120)
    # lru is a stack policy swept at 3 k: read off the one-pass curve
    assert {r["method"] for r in rows if r["policy"] == "lru"} == {"mrc"}
    assert {r["method"] for r in rows if r["policy"] != "lru"} == {"simulate"}
    assert all(r["per_layer_misses"] is None for r in rows if r["method"] == "mrc")
    # cyclic with 3 experts per layer and k=5 < 6 pages: LRU misses every request
    cyc = [r for r in rows if r["source"].startswith("cyclic") and r["policy"] == "lru"]
    assert [r["misses"] for r in cyc if r["seed"] == 0] == [40, 40, 40]


def test_local_cluster_and_separate_scheduler_give_the_serial_table(tmp_path):
    from dask.distributed import LocalCluster

    want = serial(tmp_path)
    run_sweep(spec_file(tmp_path), tmp_path / "dask.parquet", workers=2, processes=False)
    assert read_table(tmp_path / "dask.parquet") == want
    with LocalCluster(n_workers=2, processes=False, protocol="tcp", host="127.0.0.1",
                      dashboard_address=None) as cluster:
        run_sweep(spec_file(tmp_path), tmp_path / "sched.parquet",
                  scheduler=cluster.scheduler_address)
    assert read_table(tmp_path / "sched.parquet") == want


def test_kill_and_resume_gives_the_same_table(tmp_path, monkeypatch):
    import paging.sweep as sweep

    want = serial(tmp_path)
    out = tmp_path / "resumed.csv"  # the CSV route (lists as JSON text) round-trips too
    monkeypatch.setattr(sweep, "BATCH_CELLS", 7)

    def kill(n_rows):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec_file(tmp_path), out, workers=0, on_batch=kill)
    partial = read_table(out)  # a valid table with the first batch only
    assert 7 <= len(partial) < len(want)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".resumed")]  # no temp file
    summary = run_sweep(spec_file(tmp_path), out, workers=0)
    assert summary["skipped"] == len(partial) and summary["ran"] == len(want) - len(partial)
    assert read_table(out) == want
    again = run_sweep(spec_file(tmp_path), out, workers=0)
    assert again["ran"] == 0 and read_table(out) == want


def test_one_handler_at_every_precision_is_one_value(tmp_path):
    """fetch-lowest-bit's default levels start at the run's precision, so it and
    fetch-lowest-bit:levels=bf16/int8 are two handlers (one at precision bf16 only), while
    the same levels in another case are one."""
    head = (f'traces = ["{TRACE}"]\npolicies = ["lru"]\nbudget_gb = [4]\n'
            'model = ["mixtral-8x7b"]\n')
    spec = load_spec(spec_file(tmp_path, head + 'miss = ["fetch-lowest-bit", '
                                                '"fetch-lowest-bit:levels=bf16/int8"]\n'))
    assert len(spec.miss) == 2
    with pytest.raises(PagingError, match="the same value once normalised"):
        load_spec(spec_file(tmp_path, head + 'miss = ["fetch-lowest-bit:levels=int8/int4", '
                                             '"fetch-lowest-bit:levels=INT8/int4"]\n'))


@pytest.mark.parametrize("text, message, line", [
    ('traces = ["router:n=8,layers=4,tokens=20,seed=0"]\npolicies = ["lru"]\nk = [4]\n'
     'expand = ["groups"]\nrouting = ["standard", "pruning:j=3"]\n', "j must be in 1..2", 5),
    ('traces = ["zipf:n=8,layers=4,tokens=20,seed=0"]\npolicies = ["lru"]\nk = [4]\n'
     'model = ["mixtral-8x7b"]\n', "model mixtral-8x7b has 32 layers x 8 experts", 4),
])
def test_a_sequence_a_cell_cannot_run_is_refused_at_its_key(tmp_path, capsys, text, message,
                                                            line):
    """A routing hook's J above a sequence's K, or a model of another layout, is refused before
    any cell runs, at the spec file and the key's line (the first such cell stopped the sweep
    with the run's message only: no file, no line, the cells before it written)."""
    f = spec_file(tmp_path, text)
    assert main(["sweep", str(f), "--out", str(tmp_path / "o.csv"), "--workers", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {f}:{line}: ") and message in err and err.count("\n") == 1
    assert not (tmp_path / "o.csv").exists()


def test_a_cells_own_refusal_names_the_spec(tmp_path, monkeypatch):
    """A refusal only a cell's run finds, naming no file, is named at the spec file and the
    line of the key its first word names."""
    import paging.sweep as sweep

    def refuse(task):
        raise PagingError("routing max-rank:j=1: no")

    monkeypatch.setattr(sweep, "run_task", refuse)
    f = spec_file(tmp_path, SPEC + 'routing = ["standard"]\n')
    with pytest.raises(PagingError) as e:
        run_sweep(f, tmp_path / "o.csv", workers=0)
    assert (e.value.file, e.value.line, e.value.message) == (str(f), 6,
                                                             "routing max-rank:j=1: no")


def test_budget_from_cache_trace_sizes(tmp_path):
    ids = tmp_path / "t.csv"
    ids.write_text("time,obj_id,obj_size\n0,7,4\n1,9,6\n2,7,4\n3,5,5\n4,9,6\n")
    spec = spec_file(tmp_path, f'traces = ["{ids.name}"]\npolicies = ["lru"]\n'
                               "budget_gb = [1e-8]\n")
    run_sweep(spec, tmp_path / "b.parquet", workers=0)
    (row,) = read_table(tmp_path / "b.parquet")
    assert (row["budget_bytes"], row["misses"], row["bytes_fetched"]) == (10, 4, 21)
    assert row["source"] == "t.csv"  # found next to the spec


@pytest.mark.parametrize("text, message, line", [
    ('traces = ["x"]\npolices = ["lru"]\nk = [1]\n', "unknown key 'polices'", 2),
    (f'traces = ["{TRACE}"]\npolicies = []\nk = [1]\n', "empty grid: 'policies'", 2),
    (f'traces = ["{TRACE}"]\npolicies = ["lru"]\nk = ["4"]\n', "k must be integers", 3),
    (f'traces = ["{TRACE}"]\npolicies = ["lru"]\nk = [4]\nseeds = [1.5]\n', "seeds must be", 4),
    (f'traces = ["{TRACE}"]\npolicies = ["lru"]\nk = [4]\nbudget_gb = [1.0]\n', "not both",
     None),
    (f'traces = ["{TRACE}"]\npolicies = ["nope"]\nk = [4]\n', "nope", 2),
    (f'traces = ["{TRACE}"]\npolicies = ["lru"]\nk = [4]\nrouting = ["cumsum"]\n',
     "routing 'cumsum': give tau=T", 4),
    ('traces = ["x"]\nk = = 3\n', "not valid TOML", 2),
    (f'traces = ["{TRACE}"]\npolicies = ["lru"]\nk = [4]\nprefetch = ["psychic"]\n',
     "unknown prefetch predictor 'psychic'", 4),
    (f'traces = ["{TRACE}"]\npolicies = ["lru"]\nk = [4]\nprefetch = ["frequency"]\n'
     'prefetch_strategy = ["percentile:p=100"]\n', "p must be in (0.0, 100.0)", 5),
    (f'traces = ["{TRACE}"]\npolicies = ["lru"]\nk = [4]\nprefetch_strategy = ["topk"]\n',
     "prefetch_strategy needs prefetch", 4),
    (f'traces = ["{TRACE}"]\npolicies = ["lru"]\nk = [4]\nmiss = ["drop:rank=0"]\n',
     "rank must be an integer >= 1", 4),
    (f'traces = ["{TRACE}"]\npolicies = ["lru"]\nk = [4]\nmiss = ["fetch-priority"]\n',
     "it needs model = [...]", 4),
    (f'traces = ["{TRACE}"]\npolicies = ["lru"]\nk = [4]\nmodel = ["mixtral-8x7b"]\n'
     'miss = ["fetch-lowest-bit"]\n', "budget_gb = [...], not k", 5),
    (f'traces = ["{TRACE}"]\npolicies = ["lru"]\nbudget_gb = [4]\nmodel = ["mixtral-8x7b"]\n'
     'precision = ["bf16", "int8"]\nmiss = ["fetch-lowest-bit:levels=bf16/int4"]\n',
     "must be --precision (int8) (model mixtral-8x7b, precision int8)", 6),
    (f'traces = ["{TRACE}"]\npolicies = ["lru"]\nk = [4]\ntimeline = ["token_overhead_ms=1"]\n',
     "need model", 4),
    (f'traces = ["{TRACE}"]\npolicies = ["lru"]\nk = [4]\nmodel = ["mixtral-8x7b"]\n'
     'timeline = ["prefetch_streams=2"]\n', "needs prefetch", 5),
    (f'traces = ["{TRACE}"]\npolicies = ["lru"]\nk = [4]\nmodel = ["mixtral-8x7b"]\n'
     'timeline = ["token_overhead_ms=-2"]\n', "overhead must be", 5),
    (f'traces = ["{TRACE}"]\npolicies = ["lru"]\nk = [4]\nmodel = ["mixtral-8x7b"]\n'
     'timeline = ["speed=2"]\n', "KEY one of", 5),
    # two spellings of one value: the same cells, run and counted twice (only the text was
    # compared, or nothing, for these keys)
    (f'traces = ["{TRACE}"]\npolicies = ["blind-oracle:oracle:eta=0.5", '
     '"blind-oracle:oracle:eta=0.50,seed=0"]\nk = [4]\n', "the same value once normalised", 2),
    (f'traces = ["{TRACE}"]\npolicies = ["lru"]\nk = [4]\n'
     'prefetch = ["frequency", "Frequency"]\n', "prefetch lists 'frequency' and", 4),
    (f'traces = ["{TRACE}"]\npolicies = ["lru"]\nk = [4]\nprefetch = ["frequency"]\n'
     'prefetch_strategy = ["topk", "topk:overfetch=1"]\n', "prefetch_strategy lists", 5),
    (f'traces = ["{TRACE}"]\npolicies = ["lru"]\nk = [4]\n'
     'miss = ["drop:rank=1", "DROP: rank = 01"]\n', "miss lists 'drop:rank=1' and", 4),
    (f'traces = ["{TRACE}"]\npolicies = ["lru"]\nk = [4]\n'
     'routing = ["max-rank:m=2", "max-rank:j=1,m=2"]\n', "routing lists", 4),
])
def test_bad_specs(tmp_path, text, message, line):
    with pytest.raises(PagingError) as e:
        load_spec(spec_file(tmp_path, text))
    assert message in e.value.message and e.value.line == line


def test_bad_spec_on_the_command_line_writes_nothing(tmp_path, capsys):
    spec = spec_file(tmp_path, 'traces = ["zipf:n=2,layers=1,tokens=5"]\npolicies = ["lru"]\n')
    out = tmp_path / "o.parquet"
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {spec}: give the cache sizes")
    assert list(tmp_path.iterdir()) == [spec]


def test_an_out_file_of_another_format_is_refused(tmp_path, capsys):
    """``--out table.json`` was written as Parquet under that name."""
    out = tmp_path / "o.json"
    assert main(["sweep", str(spec_file(tmp_path)), "--out", str(out), "--workers", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Parquet (.parquet) or CSV (.csv), not .json" in err
    assert not out.exists()


def test_unreachable_scheduler_is_one_line_within_seconds(tmp_path, capsys, monkeypatch):
    """The client is asked to connect within 5 s (Dask's default waits 30 s), and the refusal
    is one line."""
    import dask.distributed

    asked = []
    real = dask.distributed.Client

    def client(*args, **kw):
        asked.append((args, kw))
        return real(*args, **kw)

    monkeypatch.setattr(dask.distributed, "Client", client)
    rc = main(["sweep", str(spec_file(tmp_path)), "--out", str(tmp_path / "o.parquet"),
               "--scheduler", "tcp://127.0.0.1:9", "--json"])
    assert rc == 2
    assert asked == [(("tcp://127.0.0.1:9",), {"timeout": "5s"})]
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in err
    assert not (tmp_path / "o.parquet").exists()


def test_cli_json_summary(tmp_path, capsys):
    out = tmp_path / "o.parquet"
    assert main(["sweep", str(spec_file(tmp_path)), "--out", str(out), "--workers", "0",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"out": str(out), "cells": 36, "ran": 36,
                                                   "skipped": 0}


def test_prefetch_and_miss_keys_pass_through_to_simulate(tmp_path):
    from paging.io import load
    from paging.miss import make_miss
    from paging.predict.prefetch import Prefetcher, make_prefetch_predictor, make_strategy

    two = "zipf:n=4,layers=3,tokens=40,topk=2,seed=1"
    spec = spec_file(tmp_path, f"""
traces = ["{two}"]
policies = ["lru", "least-stale"]
k = [5, 7]
expand = ["groups"]
prefetch = ["none", "oracle:precision=0.5,recall=1,seed=2", "frequency"]
prefetch_strategy = ["topk:overfetch=1", "percentile:p=60"]
miss = ["fetch", "drop:rank=1"]
""")
    run_sweep(spec, tmp_path / "s.csv", workers=0)
    rows = read_table(tmp_path / "s.csv")
    # per policy and k: no prefetch (strategy null) + 2 predictors x 2 strategies, x 2 miss
    assert len(rows) == 2 * 2 * (1 + 2 * 2) * 2
    assert {r["prefetch_strategy"] for r in rows if r["prefetch"] is None} == {None}
    (tr,) = load(two, expand="groups")
    for r in rows:
        pf = (None if r["prefetch"] is None else
              Prefetcher(make_prefetch_predictor(r["prefetch"]),
                         make_strategy(r["prefetch_strategy"])))
        res = simulate(tr, r["policy"], r["k"], prefetch=pf, miss=make_miss(r["miss"]))
        d = res.to_dict()
        assert (r["misses"], r["hits"], r["method"]) == (res.misses, res.hits, "simulate")
        for f in ("prefetches", "prefetch_useful", "prefetch_precision", "dropped"):
            assert r[f] == d.get(f)
    drop = [r for r in rows if r["miss"] == "drop:rank=1"]
    assert drop and all(r["dropped"] > 0 for r in drop)
    assert all(r["prefetches"] > 0 for r in rows if r["prefetch"])


def test_precision_cascades_equal_simulate(tmp_path, capsys):
    """fetch-lowest-bit and fetch-priority cells (budget_gb, each precision's own levels) equal
    paging simulate --json, low_precision_fetches being its fetches below the first level."""
    gen = "router:n=8,layers=32,tokens=12,k=2,seed=0"
    spec = spec_file(tmp_path, f"""
traces = ["{gen}"]
policies = ["lru", "arc"]
budget_gb = [2, 4]
expand = ["groups"]
model = ["mixtral-8x7b"]
precision = ["bf16", "int8"]
miss = ["fetch", "fetch-lowest-bit", "fetch-priority"]
""")
    run_sweep(spec, tmp_path / "c.csv", workers=0)
    rows = read_table(tmp_path / "c.csv")
    assert len(rows) == 2 * 2 * 2 * 3
    for r in rows:
        args = ["simulate", gen, "--policy", r["policy"], "--budget-gb", str(r["budget_gb"]),
                "--expand", "groups", "--model", "mixtral-8x7b", "--precision",
                r["precision"], "--json"] + ([] if r["miss"] is None else ["--miss", r["miss"]])
        assert main(args) == 0
        (d,) = json.loads(capsys.readouterr().out)
        levels = list(d.get("fetch_levels", {}).values())
        assert (r["misses"], r["bytes_fetched"], r["time_ms"], r["capacity"]) == (
            d["misses"], d["bytes_fetched"], d["time_ms"], d["capacity"])
        assert r["low_precision_fetches"] == (sum(levels[1:]) if r["miss"] else None)
    low = [r["low_precision_fetches"] for r in rows if r["miss"]]
    assert min(low) > 0  # every cascade cell fetched below its precision
    # a table written before the column existed resumes (the column null in its old rows)
    import csv

    from paging.sweep import COLUMN_NAMES

    with open(tmp_path / "c.csv", newline="", encoding="utf-8") as fh:
        old = [r for r in csv.DictReader(fh) if r["miss"] == ""]
    with open(tmp_path / "c.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, [c for c in COLUMN_NAMES if c != "low_precision_fetches"],
                           extrasaction="ignore")
        w.writeheader()
        w.writerows(old)
    again = run_sweep(spec, tmp_path / "c.csv", workers=0)
    assert (again["ran"], again["skipped"]) == (len(rows) - len(old), len(old))
    assert sorted(map(repr, read_table(tmp_path / "c.csv"))) == sorted(map(repr, rows))


def test_transition_trains_as_in_simulate(tmp_path, capsys):
    """A generated spec is one sequence: transition without train=FILE is refused before any
    run; with train=FILE (a path next to the spec) the cells equal paging simulate's."""
    from paging.io import load, write

    one = "zipf:n=4,layers=3,tokens=40,topk=2,seed=1"
    with pytest.raises(PagingError) as e:
        run_sweep(spec_file(tmp_path, f'traces = ["{one}"]\npolicies = ["lru"]\nk = [5]\n'
                                      'expand = ["groups"]\nprefetch = ["transition"]\n'),
                  tmp_path / "t.csv", workers=0)
    assert "give transition:train=FILE" in e.value.message and e.value.file == one
    assert not (tmp_path / "t.csv").exists()
    write(load("zipf:n=4,layers=3,tokens=60,topk=2,seed=9", expand="groups"),
          tmp_path / "train.npz")
    spec = spec_file(tmp_path, f'traces = ["{one}"]\npolicies = ["lru"]\nk = [5, 7]\n'
                               'expand = ["groups"]\nprefetch = ["transition:train=train.npz"]\n')
    run_sweep(spec, tmp_path / "t.csv", workers=0)
    rows = read_table(tmp_path / "t.csv")
    for r in rows:
        assert main(["simulate", one, "--policy", "lru", "--k", str(r["k"]), "--expand",
                     "groups", "--prefetch", f"transition:train={tmp_path / 'train.npz'}",
                     "--json"]) == 0
        (d,) = json.loads(capsys.readouterr().out)
        assert (r["misses"], r["prefetches"], r["prefetch_useful"]) == (
            d["misses"], d["prefetches"], d["prefetch_useful"])
    assert all(r["prefetches"] > 0 for r in rows)


def test_routing_key_adds_routed_cells(tmp_path):
    text = ('traces = ["router:n=8,layers=4,tokens=40,k=2,seed=0"]\npolicies = ["lru"]\n'
            'k = [12, 16]\nexpand = ["groups"]\nrouting = ["standard", "max-rank:j=1"]\n')
    run_sweep(spec_file(tmp_path, text), tmp_path / "r.parquet", workers=0)
    rows = read_table(tmp_path / "r.parquet")
    from paging.generators import router

    tr = router(8, 4, 40, k=2, seed=0, expand="groups")
    got = {(r["routing"], r["k"]): r["misses"] for r in rows}
    assert got == {(rt, k): simulate(tr, "lru", k, routing=rt).misses
                   for rt in ("standard", "max-rank:j=1") for k in (12, 16)}
    routed = [r for r in rows if r["routing"] == "max-rank:j=1"]
    assert all(0 < r["retained_mass"] < 1 for r in routed)
    with pytest.raises(PagingError, match=r"routing max-rank:j=1 decides per \(token, layer\) "
                                          r'group: use expand = \["groups"\]'):
        load_spec_text = text.replace('expand = ["groups"]\n', "")
        run_sweep(spec_file(tmp_path, load_spec_text), tmp_path / "x.parquet", workers=0)
    assert not (tmp_path / "x.parquet").exists()


def test_warm_key_runs_a_files_sequences_back_to_back(tmp_path, capsys):
    from paging.io import load, write
    from paging.warm import concat, split

    seqs = [load(f"zipf:n=4,layers=3,tokens={t},seed={s}")[0] for t, s in ((30, 1), (20, 2))]
    seqs = [type(t)(t.layout, t.pages, t.steps, f"s{i}", t.token, t.rank, t.score, t.expand,
                    t.meta) for i, t in enumerate(seqs)]
    write(seqs, tmp_path / "two.npz")
    text = ('traces = ["two.npz"]\npolicies = ["lru", "llru"]\nk = [4, 6]\n'
            'warm = [false, true]\n')
    run_sweep(spec_file(tmp_path, text), tmp_path / "w.csv", workers=0)
    rows = read_table(tmp_path / "w.csv")
    assert len(rows) == 2 * 2 * 2 * 2  # policies x k x warm x sequences
    joined, _ = concat(load(str(tmp_path / "two.npz")))
    for r in rows:
        if r["warm"]:
            res = simulate(joined, r["policy"], r["k"], record="hits")
            seq = split(joined, res)[r["position"]]
            assert (r["trace"], r["misses"], r["requests"]) == (seq["trace"], seq["misses"],
                                                                seq["requests"])
        else:
            (tr,) = [t for t in load(str(tmp_path / "two.npz")) if t.name == r["trace"]]
            assert r["misses"] == simulate(tr, r["policy"], r["k"]).misses
            assert r["position"] is None
    # the first sequence is the same warm or cold; --warm on the command line = warm = [true]
    first = {(r["policy"], r["k"], r["warm"]): r["misses"] for r in rows if r["trace"] == "s0"}
    assert all(first[(p, k, True)] == first[(p, k, False)] for p, k, _ in first)
    spec2 = spec_file(tmp_path, text.replace("warm = [false, true]\n", ""))
    assert main(["sweep", str(spec2), "--out", str(tmp_path / "c.csv"), "--workers", "0",
                 "--warm", "--json"]) == 0
    capsys.readouterr()
    assert {r["warm"] for r in read_table(tmp_path / "c.csv")} == {True}
    # --warm against a spec that sets warm = false was dropped without a word (cold rows,
    # exit 0: a review of the command's contract); it is one line naming the spec's line
    spec3 = spec_file(tmp_path, text.replace("warm = [false, true]", "warm = false"))
    assert main(["sweep", str(spec3), "--out", str(tmp_path / "d.csv"), "--workers", "0",
                 "--warm"]) == 2
    assert capsys.readouterr().err == (
        f"error: {spec3}:4: paging sweep --warm asks for warm runs, but the spec sets warm = "
        "false; expected warm = true or [false, true] in the spec, or no --warm\n")
    assert not (tmp_path / "d.csv").exists()
    with pytest.raises(PagingError, match="warm must be true, false"):
        load_spec(spec_file(tmp_path, text.replace("[false, true]", '"yes"')))


def test_routed_cells_with_a_model_are_timed_as_simulate(tmp_path, capsys):
    """routing with model = [...]: each cell's timing is paging simulate --routing --model's
    (the timeline of the served requests), cold and warm."""
    text = ('traces = ["zipf:n=8,layers=32,tokens=12,topk=2,seed=2"]\npolicies = ["lru"]\n'
            'k = [40]\nexpand = ["groups"]\nmodel = ["mixtral-8x7b"]\nprecision = ["int4"]\n'
            'routing = ["standard", "pruning:j=1", "max-rank:j=1"]\nwarm = [false, true]\n')
    run_sweep(spec_file(tmp_path, text), tmp_path / "t.csv", workers=0)
    rows = read_table(tmp_path / "t.csv")
    assert len(rows) == 3 * 2
    for r in rows:
        assert main(["simulate", "zipf:n=8,layers=32,tokens=12,topk=2,seed=2", "--policy",
                     "lru", "--k", "40", "--expand", "groups", "--model", "mixtral-8x7b",
                     "--precision", "int4", "--routing", r["routing"], "--json"]
                    + (["--warm"] if r["warm"] else [])) == 0
        want = json.loads(capsys.readouterr().out)[0]
        assert (r["misses"], r["tpot_ms"], r["tokens_per_s"]) == pytest.approx(
            (want["misses"], want["tpot_ms"], want["tokens_per_s"]), rel=1e-12)
    tps = {(r["routing"], r["warm"]): r["tokens_per_s"] for r in rows}
    assert tps[("pruning:j=1", False)] > tps[("standard", False)]  # half the experts


def test_routed_cells_take_miss_handlers(tmp_path, capsys):
    """routing with miss = [...] (SpecMD's phases 1 and 2 together): each cell equals paging
    simulate --routing --miss."""
    gen = "zipf:n=8,layers=4,tokens=30,topk=2,seed=2"
    text = (f'traces = ["{gen}"]\npolicies = ["lru"]\nk = [6]\nexpand = ["groups"]\n'
            'routing = ["standard", "max-rank:j=1"]\nmiss = ["fetch", "drop:rank=1"]\n')
    run_sweep(spec_file(tmp_path, text), tmp_path / "m.csv", workers=0)
    rows = read_table(tmp_path / "m.csv")
    assert len(rows) == 4
    for r in rows:
        assert main(["simulate", gen, "--policy", "lru", "--k", "6", "--expand", "groups",
                     "--routing", r["routing"], "--miss", r["miss"], "--json"]) == 0
        (want,) = json.loads(capsys.readouterr().out)
        assert (r["misses"], r["dropped"], r["retained_mass"]) == (
            want["misses"], want.get("dropped"), want.get("retained_mass"))
    drops = {(r["routing"], r["miss"]): r["dropped"] for r in rows}
    assert drops[("max-rank:j=1", "drop:rank=1")] < drops[("standard", "drop:rank=1")]


def test_lifetimes_key_adds_the_lifetime_columns(tmp_path, capsys):
    """lifetimes = true: every cell simulated (LRU at two sizes is not read off its curve) and
    its lifetimes equal paging simulate --lifetimes; refused with a prefetcher or a non-bool,
    naming the line."""
    gen = "zipf:n=8,layers=4,tokens=30,topk=2,seed=2"
    text = (f'traces = ["{gen}"]\npolicies = ["lru"]\nk = [6, 10]\nexpand = ["groups"]\n'
            'routing = ["standard", "max-rank:j=1"]\nlifetimes = true\n')
    run_sweep(spec_file(tmp_path, text), tmp_path / "l.csv", workers=0)
    rows = read_table(tmp_path / "l.csv")
    assert len(rows) == 4 and {r["method"] for r in rows} == {"simulate"}
    for r in rows:
        assert main(["simulate", gen, "--policy", "lru", "--k", str(r["k"]), "--expand",
                     "groups", "--routing", r["routing"], "--lifetimes", "--json"]) == 0
        (want,) = json.loads(capsys.readouterr().out)
        assert (r["lifetime_tokens"], r["lifetime_tokens_all"], r["residencies"]) == (
            want["lifetime_tokens"], want["lifetime_tokens_all"], want["residencies"])
    for extra, msg in (('prefetch = ["frequency"]\n', "not with prefetch"),
                       ("", "lifetimes must be true or false")):
        bad = text + extra if extra else text.replace("lifetimes = true", 'lifetimes = "yes"')
        with pytest.raises(PagingError, match=msg) as e:
            load_spec(spec_file(tmp_path, bad))
        assert e.value.line == 6


def test_warm_cells_take_the_routing_key(tmp_path, capsys):
    """warm = [true] with routing = [...]: each sequence's row equals paging simulate --warm
    --routing's (the requests served for that sequence: pruning serves fewer than the trace
    holds; the quality proxies of its own groups), and the rows add up to the joined run's."""
    from paging.generators import router
    from paging.io import write_npz

    seqs = [router(8, 4, t, k=2, seed=s, expand="groups", name=f"s{i}")
            for i, (t, s) in enumerate(((30, 1), (20, 2)))]
    write_npz(seqs, tmp_path / "two.npz")
    text = ('traces = ["two.npz"]\npolicies = ["lru", "lfu"]\nk = [6]\nexpand = ["groups"]\n'
            'routing = ["standard", "pruning:j=1", "max-rank:j=1"]\nwarm = [true]\n')
    run_sweep(spec_file(tmp_path, text), tmp_path / "w.csv", workers=0)
    rows = read_table(tmp_path / "w.csv")
    assert len(rows) == 2 * 3 * 2  # policies x routing x sequences
    for (pol, rt), got in itertools.groupby(sorted(rows, key=lambda r: (
            r["policy"], r["routing"], r["position"])), key=lambda r: (r["policy"],
                                                                       r["routing"])):
        got = list(got)
        assert main(["simulate", str(tmp_path / "two.npz"), "--policy", pol, "--k", "6",
                     "--expand", "groups", "--routing", rt, "--warm", "--json"]) == 0
        *want, total = json.loads(capsys.readouterr().out)
        assert [(r["trace"], r["requests"], r["misses"], r["hits"], r["retained_mass"],
                 r["kl"]) for r in got] == [
            (w["trace"], w["requests"], w["misses"], w["hits"], w.get("retained_mass"),
             w.get("kl")) for w in want]
        assert sum(r["requests"] for r in got) == total["requests"]
        assert sum(r["misses"] for r in got) == total["misses"]
    pruned = [r["requests"] for r in rows if r["routing"] == "pruning:j=1"]
    assert sum(pruned) == sum(t.n_requests for t in seqs)  # (top-1 of 2, x 2 policies)


def test_cache_prior_cells_carry_delta_over_the_file(tmp_path):
    """A routed sweep cell of a file's second sequence runs with Cache-Prior's Δavg primed by
    the first sequence, as ``paging simulate`` does (delta=run); delta=sequence restarts it."""
    from paging.generators import router
    from paging.io import write_npz
    from paging.routing import router_for_run

    a = router(8, 4, 40, k=2, seed=11, expand="groups", name="a", sigma=4.0)
    b = router(8, 4, 40, k=2, seed=12, expand="groups", name="b")
    write_npz([a, b], tmp_path / "ab.npz")
    text = (f'traces = ["{tmp_path / "ab.npz"}"]\npolicies = ["lru"]\nk = [8]\n'
            'expand = ["groups"]\nrouting = ["cache-prior:lambda=0.4", '
            '"cache-prior:lambda=0.4,delta=sequence"]\n')
    run_sweep(spec_file(tmp_path, text), tmp_path / "cp.parquet", workers=0)
    got = {(r["trace"], r["routing"]): r["misses"] for r in read_table(tmp_path / "cp.parquet")}
    run, seq = "cache-prior:lambda=0.4", "cache-prior:lambda=0.4,delta=sequence"
    assert got[("b", run)] == simulate(b, "lru", 8, routing=router_for_run(run, [a])).misses
    assert got[("b", seq)] == simulate(b, "lru", 8, routing=run).misses != got[("b", run)]
    assert got[("a", run)] == got[("a", seq)] == simulate(a, "lru", 8, routing=run).misses


def test_timeline_key_passes_the_options_to_the_timeline(tmp_path):
    """timeline = [...] sweeps the latency timeline's options: each cell equals simulate +
    timeline_run with them; "default" is the null key (today's timeline)."""
    from paging.cost.setup import CostSetup
    from paging.cost.timeline import timeline_run
    from paging.io import load
    from paging.predict.prefetch import Prefetcher, make_prefetch_predictor
    from paging.sweep import timeline_kwargs

    src = "zipf:n=8,layers=32,tokens=20,topk=2,seed=3"
    text = (f'traces = ["{src}"]\npolicies = ["lru"]\nk = [40]\nexpand = ["groups"]\n'
            'model = ["mixtral-8x7b"]\nprecision = ["int4"]\n'
            'prefetch = ["oracle:precision=0.5,recall=0.5,seed=1"]\n'
            'timeline = ["default", "token_overhead_ms=5", '
            '"prefetch_link=separate, prefetch_streams=2"]\n')
    run_sweep(spec_file(tmp_path, text), tmp_path / "t.csv", workers=0)
    rows = read_table(tmp_path / "t.csv")
    assert sorted((r["timeline"] or "") for r in rows) == [
        "", "prefetch_streams=2,prefetch_link=separate", "token_overhead_ms=5"]
    (tr,) = load(src, expand="groups")
    cm = CostSetup.from_names("mixtral-8x7b", "int4")
    costs, sizes = cm.weights(tr)
    res = simulate(tr, "lru", 40, costs=costs, sizes=sizes, record=True, prefetch=Prefetcher(
        make_prefetch_predictor("oracle:precision=0.5,recall=0.5,seed=1")))
    for r in rows:
        tm = timeline_run(tr, res, model=cm.model, precision=cm.precision,
                          hardware=cm.hardware, fetch_ms=costs, sizes=sizes,
                          **timeline_kwargs(r["timeline"]))
        assert (r["misses"], r["time_ms"], r["stall_ms"]) == (res.misses, tm.time_ms,
                                                              tm.stall_ms)
    assert len({r["time_ms"] for r in rows}) == 3


def test_timeline_values_run_as_given(tmp_path, capsys):
    """A timeline value is run from its canonical text: its number is exact. (``{x:g}`` kept 6
    digits: token_overhead_ms=1234567.5 ran as 1234570 and its key said so, and two values
    equal to 6 digits were refused as "the same options twice".)"""
    src = "zipf:n=8,layers=32,tokens=3,topk=2,seed=3"
    text = (f'traces = ["{src}"]\npolicies = ["lru"]\nk = [40]\nexpand = ["groups"]\n'
            'model = ["mixtral-8x7b"]\n'
            'timeline = ["token_overhead_ms=1234567.5", "token_overhead_ms=1234568"]\n')
    run_sweep(spec_file(tmp_path, text), tmp_path / "t.csv", workers=0)
    rows = read_table(tmp_path / "t.csv")
    assert sorted(r["timeline"] for r in rows) == ["token_overhead_ms=1234567.5",
                                                  "token_overhead_ms=1234568"]
    for r in rows:
        ms = r["timeline"].partition("=")[2]
        assert main(["simulate", src, "--expand", "groups", "--policy", "lru", "--k", "40",
                     "--model", "mixtral-8x7b", "--token-overhead-ms", ms, "--json"]) == 0
        assert r["time_ms"] == json.loads(capsys.readouterr().out)[0]["time_ms"]


def test_a_trace_file_too_large_to_read_is_streamed(tmp_path, monkeypatch):
    """A .npz above $PAGING_STREAM_BYTES: each policy x seed streams every k in one pass; the
    rows equal the sweep that reads the file whole (misses, hits, requests, per sequence),
    with ``method`` "stream" and the fields of ``paging simulate --stream``. Axes a stream
    cannot take, and policies that do not stream, are refused before anything runs."""
    from paging.generators import zipf
    from paging.io import write_npz

    # (top-2 rounds: the token policy reads the file's token ids, two walks a token)
    seqs = [zipf(4, 2, 80, seed=s, topk=2, name=f"s{s}") for s in (1, 2)]
    write_npz(seqs, tmp_path / "big.npz")
    text = """traces = ["big.npz"]
policies = ["lru", "marking", "fifo-dist", "token-decay", "predictive-marker"]
k = [2, 3, 5]
seeds = [0, 1]
"""
    spec_file(tmp_path, text)
    run_sweep(tmp_path / "spec.toml", tmp_path / "whole.csv", workers=0)
    whole = read_table(tmp_path / "whole.csv")
    monkeypatch.setenv("PAGING_STREAM_BYTES", "10")
    run_sweep(tmp_path / "spec.toml", tmp_path / "streamed.csv", workers=0)
    streamed = read_table(tmp_path / "streamed.csv")
    assert len(streamed) == len(whole) == 2 * 5 * 3 * 2  # sequences x policies x k x seeds
    for a, b in zip(whole, streamed, strict=True):
        assert [a[c] for c in ("trace", "policy", "seed", "k", "misses", "hits", "requests")] \
            == [b[c] for c in ("trace", "policy", "seed", "k", "misses", "hits", "requests")]
        assert b["method"] == "stream" and b["per_layer_misses"] is not None
    for extra, why in (('model = ["mixtral-8x7b"]', "drop model"),
                       ('prefetch = ["oracle"]', "drop prefetch"),
                       ('warm = true', "drop warm")):
        spec_file(tmp_path, text + extra + "\n")
        with pytest.raises(PagingError, match=why):
            run_sweep(tmp_path / "spec.toml", tmp_path / "x.csv", workers=0)
    # (the oracle predictor reads the whole trace's next uses)
    spec_file(tmp_path, text.replace('"lru"', '"predictive-marker:oracle"'))
    with pytest.raises(PagingError, match="no streaming kernel"):
        run_sweep(tmp_path / "spec.toml", tmp_path / "x.csv", workers=0)
    assert not (tmp_path / "x.csv").exists()


def test_a_bad_request_of_a_streamed_trace_is_one_line_from_dask_workers(tmp_path):
    """A streamed trace's bad request is found on a worker as the file is read; the worker
    returns the error instead of raising it, so the command prints one line (no worker log and
    traceback before it), exits 2 and writes no table."""
    import io
    import os
    import subprocess
    import sys
    import zipfile

    from paging.generators import zipf
    from paging.io import write_npz

    write_npz(zipf(4, 3, 100, seed=1), tmp_path / "ok.npz")
    src = zipfile.ZipFile(tmp_path / "ok.npz")
    with zipfile.ZipFile(tmp_path / "bad.npz", "w") as dst:
        for name in src.namelist():
            data = src.read(name)
            if name == "pages.npy":
                a = np.lib.format.read_array(io.BytesIO(data)).copy()
                a[150] = 99  # not a page of the 4 x 3 layout
                buf = io.BytesIO()
                np.lib.format.write_array(buf, a)
                data = buf.getvalue()
            dst.writestr(name, data)
    spec_file(tmp_path, 'traces = ["bad.npz"]\npolicies = ["lru", "fifo"]\nk = [4]\n')
    r = subprocess.run([sys.executable, "-m", "paging", "sweep", str(tmp_path / "spec.toml"),
                        "--out", str(tmp_path / "t.csv"), "--workers", "2"],
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, PAGING_STREAM_BYTES="10"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "request 150 is page 99" in r.stderr and "bad.npz" in r.stderr
    assert not (tmp_path / "t.csv").exists()


@pytest.mark.parametrize("name, text, noun, line", [
    ("grid.toml", 'traces = ["x"]\npolicies = [lru]\n', "sweep spec", 2),
    ("serving.toml", '[serve]\nrates = [1]\nbad key = 3\n', "serving sweep spec", 3),
    ("model.toml", 'name = "m"\nn_layers = \n', "model file", 2),
])
def test_a_toml_syntax_error_is_named_as_file_and_line(tmp_path, name, text, noun, line):
    """The three TOML readers (sweep spec, serving sweep spec, model file) report a syntax error
    as FILE:LINE, as every other file error (the serving spec and the model file had it inside
    the message, or not at all), and say what the file should hold."""
    from paging.cost import get_model
    from paging.serve.sweep import _read

    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    read = {"grid.toml": load_spec, "serving.toml": _read, "model.toml": get_model}[name]
    with pytest.raises(PagingError) as e:
        read(str(p) if name == "model.toml" else p)
    msg = str(e.value)
    assert msg.startswith(f"{p}:{line}: not valid TOML (") and "(at line" not in msg
    assert f"expected a {noun}" in msg
    p.write_bytes(b"\xff\n")
    with pytest.raises(PagingError, match=f"^{p}: the (sweep spec|model file) is not UTF-8"):
        read(str(p) if name == "model.toml" else p)


def test_a_policy_reading_scores_the_trace_lacks_is_refused_before_any_cell(tmp_path,
                                                                           monkeypatch):
    """Cells run without RunSpec.check, so score-based on a trace without gate scores ended the
    sweep at its first such cell, after the others had been written (a review: 448 rows left,
    the message naming no file). The plan refuses it, naming the source, before any cell
    runs (run_task is never called) and nothing is written."""
    import paging.sweep as sw

    calls = []
    monkeypatch.setattr(sw, "run_task", lambda task: calls.append(task) or [])
    spec = tmp_path / "s.toml"
    spec.write_text('traces = ["zipf:n=4,layers=3,tokens=20,seed=0"]\n'
                    'policies = ["fifo", "score-based"]\nk = [2, 3]\n', encoding="utf-8")
    out = tmp_path / "t.csv"
    with pytest.raises(PagingError, match="^zipf:n=4,layers=3,tokens=20,seed=0: score-based "
                                          "reads gate scores and .* has none"):
        sw.run_sweep(spec, out, workers=0, progress=False)
    assert calls == [] and not out.exists()


def test_lifetimes_asked_of_a_table_made_without_them_is_refused(tmp_path):
    """lifetimes is not a cell key: a spec asking for it "resumed" a table made without it,
    ran nothing and left every lifetime cell empty (a review). It is refused; the table made
    with lifetimes resumes (0 runs), and so does one made with them by a spec without."""
    spec = tmp_path / "s.toml"
    base = 'traces = ["zipf:n=4,layers=3,tokens=20,seed=0"]\npolicies = ["lru"]\nk = [2, 3]\n'
    spec.write_text(base, encoding="utf-8")
    out = tmp_path / "t.csv"
    run_sweep(spec, out, workers=0, progress=False)
    before = out.read_bytes()
    spec.write_text(base + "lifetimes = true\n", encoding="utf-8")
    with pytest.raises(PagingError, match="t.csv: the table was made without lifetimes"):
        run_sweep(spec, out, workers=0, progress=False)
    assert out.read_bytes() == before
    with_lt = tmp_path / "l.csv"
    assert run_sweep(spec, with_lt, workers=0, progress=False)["ran"] == 2
    assert run_sweep(spec, with_lt, workers=0, progress=False)["ran"] == 0
    spec.write_text(base, encoding="utf-8")
    assert run_sweep(spec, with_lt, workers=0, progress=False)["ran"] == 0


def test_toml_line_is_one_finder_for_keys_tables_and_dotted_keys():
    """paging.options.toml_line: the line of a key, a table or a dotted key, quoted or bare,
    never a line inside a multi-line string (sweep specs, [serve], model files)."""
    from paging.options import toml_line

    text = ('source = """\nk = 1 in the paper\n"""\nk = [3]\n"seeds" = [0]\n'
            '[serve]\nduration = 1\n')
    assert [toml_line(text, key) for key in ("k", "seeds", "serve", "duration", "rates")] == \
        [4, 5, 6, 7, None]
    assert toml_line('serve.duration = 1\n', "serve") == 1
    assert toml_line('[["serve"]]\n', "serve") == 1
