"""The ``paging`` command as DESIGN.md's contract states it ("The `paging` command"): every
sub-command with the options the contract names, the ``--json`` documents (one on stdout, the
fields it promises), the trace rules (sequences from an empty cache, the ``trace`` field,
``rounds`` by default, dropped and ``--strict``), generator specs, lower-case policy names,
``$PAGING_TRACES``, and exit statuses (0; 1 for a theorem that fails; 2 and one line
``error: FILE:LINE: ...`` for bad input).

Numbers are hand-checked on ``cyclic:n=3,layers=2,rounds=4`` = pages 0 3 1 4 2 5 0 3 (round i
requests expert i mod 3 of layers 0 and 1, page = layer*3 + expert):

* LRU, k = 1..5: every request misses (8); k = 6: the 6 cold misses.
* Belady, k = 2: 0 3 miss; 1 evicts 3 (0 comes back first); 4, 2, 5 miss, each evicting the
  page never requested again; 0 hits; 3 misses: 7. k = 3: 0 3 1, then 4 2 5 each evict a page
  not requested again, 0 and 3 hit: 6.
* Per layer (-dist): layer 0 sees 0 1 2 0, layer 1 sees 3 4 5 3. k = 2 gives each layer one
  slot: 4 + 4 = 8. k = 4, two slots each: LRU misses 4 per layer (8), Belady 3 (0 1 miss, 2
  evicts 1, 0 hits): 6.
"""

from __future__ import annotations

import json
import os
import sys
import types
from fractions import Fraction

import pytest
from conftest import TRACES, needs_traces

from paging.cli import build_parser, main

CYC = "cyclic:n=3,layers=2,rounds=4"
CYC_PAGES = [0, 3, 1, 4, 2, 5, 0, 3]
CONTRACT_POLICIES = ("lru", "fifo", "lfu", "fwf", "marking", "llru", "least-stale", "fld",
                     "belady", "lru-dist", "llru-dist", "marking-dist", "belady-dist")


def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def run_json(capsys, argv: list[str]):
    """The one JSON document a ``--json`` run prints on stdout (json.loads refuses anything
    after it), exit status 0."""
    rc, out, err = run(capsys, [*argv, "--json"])
    assert rc == 0, err
    return json.loads(out)


def one_error_line(capsys, argv: list[str]) -> str:
    """Bad input: exit status 2, nothing on stdout, one line ``error: ...`` on stderr."""
    rc, out, err = run(capsys, argv)
    assert rc == 2 and out == "", (argv, out, err)
    assert err.startswith("error: ") and err.count("\n") == 1, (argv, err)
    assert "Traceback" not in err
    return err


def _parser(*path: str):
    p = build_parser()
    for name in path:
        sub = next(a for a in p._actions if a.__class__.__name__ == "_SubParsersAction")
        p = sub.choices[name]
    return p


def _options(*path: str) -> dict:
    return {s: a for a in _parser(*path)._actions for s in a.option_strings}


# ---------------------------------------------------------------- the sub-commands and options

CONTRACT_OPTIONS = {
    ("simulate",): ["--policy", "--k", "--expand", "--seed", "--json", "--warm", "--costs",
                    "--sizes", "--budget-gb", "--model", "--precision", "--hardware",
                    "--prefetch", "--prefetch-strategy", "--miss", "--routing", "--strict"],
    ("mrc",): ["--policy", "--json"],
    ("opt",): ["--k", "--method", "--dist", "--json", "--costs", "--routing-flex"],
    ("trace", "info"): ["--json", "--strict"],
    ("trace", "convert"): ["--to"],
    ("coupon",): ["--n", "--collectors", "--exact", "--mc", "--trials", "--seed", "--json"],
    ("adversary",): ["--json", "--policy", "--n", "--layers", "--k", "--length", "--budget",
                     "--seed"],
    ("proofs",): ["--json"],
    ("figs",): ["--only"],
    ("policies",): ["--json"],
    ("cost", "presets"): ["--json"],
    ("plan",): ["--model", "--hardware", "--budget-gb", "--json"],
    ("sweep",): ["--scheduler", "--workers", "--out", "--warm"],
    ("record",): [],
    ("serve",): ["--model", "--budget-gb", "--policy", "--rate", "--clients", "--arrivals",
                 "--duration", "--max-batch", "--max-tokens", "--prefetch", "--miss",
                 "--routing", "--json"],
}


@pytest.mark.parametrize("path", list(CONTRACT_OPTIONS), ids=" ".join)
def test_every_sub_command_takes_the_options_the_contract_names(path):
    opts = _options(*path)
    missing = [o for o in CONTRACT_OPTIONS[path] if o not in opts]
    assert not missing, f"paging {' '.join(path)} lacks {missing}"


def test_the_choices_the_contract_names():
    assert _options("simulate")["--expand"].choices == ("rounds", "groups")
    assert {"belady", "ilp", "flow", "lp", "foo"} <= set(_options("opt")["--method"].choices)
    assert set(_options("trace", "convert")["--to"].choices) == {
        "npz", "csv", "libcachesim-csv", "oracle-general"}
    # required where the contract has no brackets (simulate's --k may be a budget instead)
    for path, opt in [(("simulate",), "--policy"), (("mrc",), "--policy"),
                      (("coupon",), "--n"), (("coupon",), "--collectors"),
                      (("plan",), "--model"), (("plan",), "--budget-gb"),
                      (("sweep",), "--out"), (("serve",), "--model"), (("serve",), "--policy")]:
        assert _options(*path)[opt].required, (path, opt)


def test_a_missing_or_unknown_command_or_option_is_one_line(capsys):
    assert "required: COMMAND" in one_error_line(capsys, [])
    assert "invalid choice: 'nope'" in one_error_line(capsys, ["nope"])
    for argv in (["simulate", CYC, "--k", "2"], ["mrc", CYC], ["coupon", "--n", "3"],
                 ["trace"], ["cost"], ["policies", "--bogus"], ["proofs", "--bogus"],
                 ["opt", CYC, "--k", "2", "--method", "bogus"],
                 ["simulate", CYC, "--policy", "lru", "--k", "2", "--expand", "bogus"]):
        one_error_line(capsys, argv)


# ---------------------------------------------------------------- simulate, mrc, opt


def test_simulate_json_is_one_list_with_the_promised_fields(capsys):
    rows = run_json(capsys, ["simulate", CYC, "--policy", "lru", "--policy", "belady",
                             "--k", "2", "--k", "6"])
    assert isinstance(rows, list) and len(rows) == 4
    for r in rows:
        assert {"trace", "policy", "k", "requests", "misses", "hits", "miss_ratio"} <= set(r)
        assert r["trace"] == CYC and r["requests"] == 8
        assert r["hits"] == 8 - r["misses"] and r["miss_ratio"] == r["misses"] / 8
    got = {(r["policy"], r["k"]): r["misses"] for r in rows}
    assert got == {("lru", 2): 8, ("lru", 6): 6, ("belady", 2): 7, ("belady", 6): 6}


def test_policy_names_are_lower_case_with_dist_variants(capsys):
    rows = run_json(capsys, ["simulate", CYC, "--k", "2", "--k", "4"]
                    + [a for p in ("lru-dist", "belady-dist", "llru-dist", "marking-dist")
                       for a in ("--policy", p)])
    got = {(r["policy"], r["k"]): r["misses"] for r in rows}
    # (marking at two slots per layer: 0 1 miss, 2 evicts one of them at random, 0 may hit)
    assert got.pop(("marking-dist", 4)) in (6, 7, 8)
    assert got == {("lru-dist", 2): 8, ("lru-dist", 4): 8, ("belady-dist", 2): 8,
                   ("belady-dist", 4): 6, ("llru-dist", 2): 8, ("llru-dist", 4): 8,
                   ("marking-dist", 2): 8}
    # a name given in capitals is the lower-case policy in the output
    rows = run_json(capsys, ["simulate", CYC, "--policy", "LRU-Dist", "--k", "2"])
    assert [r["policy"] for r in rows] == ["lru-dist"]
    names = {r["name"] for r in run_json(capsys, ["policies"])}
    assert set(CONTRACT_POLICIES) <= names and all(n == n.lower() for n in names)


def test_mrc_json_is_one_object_for_every_k(capsys):
    doc = run_json(capsys, ["mrc", CYC, "--policy", "lru"])
    assert {k: doc[k] for k in ("policy", "requests", "k", "misses")} == {
        "policy": "lru", "requests": 8, "k": [1, 2, 3, 4, 5, 6], "misses": [8, 8, 8, 8, 8, 6]}
    doc = run_json(capsys, ["mrc", CYC, "--policy", "belady"])
    assert doc["k"] == [1, 2, 3, 4, 5, 6] and doc["misses"] == [8, 7, 6, 6, 6, 6]


@pytest.mark.parametrize("expand", ["rounds", "groups"])
def test_mrc_equals_simulate_at_every_k(capsys, expand):
    """"misses for every k = 1..nℓ": the curve of each contract policy is the simulated
    misses at each k (with top-2 requests, where rounds and groups differ)."""
    spec = "zipf:n=3,layers=2,tokens=10,topk=2,seed=3"
    for policy in CONTRACT_POLICIES:
        doc = run_json(capsys, ["mrc", spec, "--policy", policy, "--expand", expand])
        assert doc["k"] == [1, 2, 3, 4, 5, 6]
        rows = run_json(capsys, ["simulate", spec, "--policy", policy, "--expand", expand]
                        + [a for k in doc["k"] for a in ("--k", str(k))])
        assert [r["misses"] for r in rows] == doc["misses"], policy


def test_opt_belady_ilp_and_dist(capsys):
    for method in ("belady", "ilp"):
        rows = run_json(capsys, ["opt", CYC, "--k", "2", "--k", "4", "--method", method])
        assert [(r["k"], r["misses"]) for r in rows] == [(2, 7), (4, 6)], method
        rows = run_json(capsys, ["opt", CYC, "--k", "2", "--k", "4", "--method", method,
                                 "--dist"])
        assert [(r["k"], r["misses"]) for r in rows] == [(2, 8), (4, 6)], method
    rows = run_json(capsys, ["opt", CYC, "--k", "2"])
    assert rows[0]["method"] == "belady" and rows[0]["trace"] == CYC


def test_same_seed_same_result(capsys):
    argv = ["simulate", "zipf:n=4,layers=3,tokens=40,seed=1", "--policy", "marking", "--k",
            "5", "--seed", "7"]
    first = run_json(capsys, argv)
    assert run_json(capsys, argv) == first and first[0]["seed"] == 7
    # a run's result does not depend on the other runs of the command
    many = run_json(capsys, argv[:-2] + ["--policy", "lru", "--k", "3", "--seed", "7"])
    assert [r["misses"] for r in many if (r["policy"], r["k"]) == ("marking", 5)] == \
        [first[0]["misses"]]


# ---------------------------------------------------------------- traces


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_default_expansion_is_rounds_in_the_listed_order(tmp_path, capsys):
    """Round r holds every layer's r-th expert in the order the trace lists them (not sorted
    by score); groups keep a (token, layer)'s experts together."""
    src = _jsonl(tmp_path / "t.jsonl", [
        {"problem_id": 0, "token_idx": 0, "layer": 0, "experts": [1, 3],
         "gating_probs": [0.2, 0.8]},
        {"problem_id": 0, "token_idx": 0, "layer": 1, "experts": [2, 0],
         "gating_probs": [0.9, 0.1]}])

    def pages(*extra):
        out = tmp_path / "o.csv"
        rc, _, err = run(capsys, ["trace", "convert", src, str(out), *extra])
        assert rc == 0, err
        lines = [ln.split(",") for ln in out.read_text().splitlines()[2:]]
        return [int(c[2]) for c in lines]

    assert pages() == pages("--expand", "rounds") == [1, 6, 3, 4]
    assert pages("--expand", "groups") == [1, 3, 6, 4]
    # simulate reads rounds by default: the same numbers as --expand rounds, not as groups
    spec = "zipf:n=4,layers=2,tokens=20,topk=2,seed=0"
    base = ["simulate", spec, "--policy", "lru", "--k", "3"]
    default = run_json(capsys, base)[0]["misses"]
    assert default == run_json(capsys, base + ["--expand", "rounds"])[0]["misses"]
    assert default != run_json(capsys, base + ["--expand", "groups"])[0]["misses"]


def test_each_sequence_from_an_empty_cache_with_its_trace_field(tmp_path, capsys):
    rows = [{"problem_id": p, "token_idx": t, "layer": layer, "experts": [e]}
            for p in (0, 1) for layer in (0, 1) for t, e in enumerate([0, 1, 2, 0])]
    src = _jsonl(tmp_path / "two.jsonl", rows)
    # layer 1's pages are 3 + expert; each sequence is 0 3 1 4 2 5 0 3
    out = run_json(capsys, ["simulate", src, "--policy", "lru", "--k", "6", "--n-experts",
                            "3"])
    assert [(r["trace"], r["requests"], r["misses"]) for r in out] == [
        ("two.jsonl#problem_id=0", 8, 6), ("two.jsonl#problem_id=1", 8, 6)]
    # --warm keeps the cache: the second sequence then hits every request
    warm = run_json(capsys, ["simulate", src, "--policy", "lru", "--k", "6", "--n-experts",
                             "3", "--warm"])
    per_seq = [r for r in warm if not r.get("warm_total")]
    assert [(r["trace"], r["misses"]) for r in per_seq] == [("two.jsonl#problem_id=0", 6),
                                                             ("two.jsonl#problem_id=1", 0)]


def test_a_token_missing_a_layer_is_dropped_and_counted_or_strict(tmp_path, capsys):
    rows = [{"problem_id": 0, "token_idx": 0, "layer": 0, "experts": [0]},
            {"problem_id": 0, "token_idx": 1, "layer": 0, "experts": [1]},
            {"problem_id": 0, "token_idx": 0, "layer": 1, "experts": [1]}]
    src = _jsonl(tmp_path / "gap.jsonl", rows)
    info = run_json(capsys, ["trace", "info", src, "--n-experts", "2"])
    (seq,) = info["sequences"]
    assert (seq["trace"], seq["tokens"], seq["dropped_tokens"], seq["requests"]) == (
        "gap.jsonl#problem_id=0", 1, 1, 2)
    strict = ["--n-experts", "2", "--strict"]
    for argv in (["trace", "info", src], ["simulate", src, "--policy", "lru", "--k", "1"],
                 ["mrc", src, "--policy", "lru"], ["opt", src, "--k", "1"]):
        err = one_error_line(capsys, argv + strict)
        assert err == (f"error: {src}:2: token 1 of gap.jsonl#problem_id=0 has 1 of 2 layers "
                       "(missing layer 1); strict mode expects every layer of every token\n")


@needs_traces
def test_the_shipped_trace_names_its_sequences(capsys):
    src = "mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl"
    info = run_json(capsys, ["trace", "info", os.path.join(TRACES, src)])
    # (83 and 255 tokens in the file; 2 and 3 of them lack some layer: 81 and 252 tokens of
    # 32 layers x top-2)
    assert [(s["trace"], s["tokens"], s["dropped_tokens"], s["requests"])
            for s in info["sequences"]] == [
        ("humaneval_2_routing.jsonl#problem_id=0", 81, 2, 5184),
        ("humaneval_2_routing.jsonl#problem_id=1", 252, 3, 16128)]
    err = one_error_line(capsys, ["trace", "info", os.path.join(TRACES, src), "--strict"])
    assert err == (f"error: {os.path.join(TRACES, src)}:82: token 81 of "
                   "humaneval_2_routing.jsonl#problem_id=0 has 31 of 32 layers (missing "
                   "layer 13); strict mode expects every layer of every token\n")


def test_generator_specs(tmp_path, capsys):
    def table(spec):
        out = tmp_path / "g.csv"
        rc, _, err = run(capsys, ["trace", "convert", spec, str(out)])
        assert rc == 0, err
        head, *rows = out.read_text().splitlines()[1:]
        cols = head.split(",")
        return [dict(zip(cols, r.rsplit(",", len(cols) - 1), strict=True)) for r in rows]

    # rounds=R: R rounds of one request per layer, round i = expert i mod n of every layer
    assert [int(r["page"]) for r in table(CYC)] == CYC_PAGES
    # tokens=T: T requests per layer; topk=K: K distinct experts per (token, layer)
    assert len(table("zipf:n=8,layers=4,tokens=5,seed=0")) == 5 * 4
    assert len(table("uniform:n=4,layers=8,tokens=5,seed=1")) == 5 * 8
    rows = table("zipf:n=5,layers=3,tokens=6,topk=3,seed=2")
    assert len(rows) == 6 * 3 * 3
    groups = {}
    for r in rows:
        groups.setdefault((r["token"], int(r["page"]) // 5), []).append(int(r["page"]))
    assert len(groups) == 6 * 3 and all(len(set(g)) == 3 for g in groups.values())
    # a=1.0 and h=0 are the defaults
    assert [r["page"] for r in table("zipf:n=8,layers=3,tokens=30,a=1.0,h=0,seed=0")] == \
        [r["page"] for r in table("zipf:n=8,layers=3,tokens=30,seed=0")]


@pytest.mark.parametrize("to", ["npz", "csv", "libcachesim-csv", "oracle-general"])
def test_trace_convert_to_each_format_and_read_back_by_contents(tmp_path, capsys, to):
    out = tmp_path / "converted.data"  # (no extension: the reader tells the format)
    rc, _, err = run(capsys, ["trace", "convert", CYC, str(out), "--to", to])
    assert rc == 0, err
    rows = run_json(capsys, ["simulate", str(out), "--policy", "belady", "--k", "2"])
    assert [(r["requests"], r["misses"]) for r in rows] == [(8, 7)]


def test_relative_trace_paths_are_also_tried_under_paging_traces(tmp_path, monkeypatch,
                                                                   capsys):
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    rc, _, err = run(capsys, ["trace", "convert", CYC, str(root / "sub" / "c.npz")])
    assert rc == 0, err
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("PAGING_TRACES", str(root))
    rows = run_json(capsys, ["simulate", "sub/c.npz", "--policy", "lru", "--k", "6"])
    assert [r["misses"] for r in rows] == [6]
    err = one_error_line(capsys, ["simulate", "sub/none.npz", "--policy", "lru", "--k", "6"])
    assert err.startswith(f"error: sub/none.npz: no such trace file (nor under "
                          f"PAGING_TRACES={root})")


# ---------------------------------------------------------------- bad input


def test_bad_input_is_one_line_with_file_and_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"problem_id": 0, "token_idx": 0, "layer": 0, "experts": [0]}\n'
                   '{"broken": \n', encoding="utf-8")
    for argv in (["simulate", str(bad), "--policy", "lru", "--k", "2"],
                 ["mrc", str(bad), "--policy", "lru"], ["opt", str(bad), "--k", "2"],
                 ["trace", "info", str(bad)], ["trace", "convert", str(bad),
                                               str(tmp_path / "x.npz")]):
        assert one_error_line(capsys, argv).startswith(f"error: {bad}:2: not valid JSON")
    assert not (tmp_path / "x.npz").exists()
    # no FILE:LINE where there is no file
    assert one_error_line(capsys, ["simulate", CYC, "--policy", "lru", "--k", "0"]) == (
        "error: k must be an integer >= 1 (the layout has 6 pages), got 0\n")


# ---------------------------------------------------------------- the other commands


def test_coupon(capsys):
    doc = run_json(capsys, ["coupon", "--n", "3", "--collectors", "2", "--exact"])
    # E[T(3,2)] = sum_t 1 - (1 - 3(2/3)^t + 3(1/3)^t)^2 = 1909/280; N*H_N = 11/2
    assert doc["expected_fraction"] == "1909/280" and doc["bound"] == 5.5
    mc = ["coupon", "--n", "3", "--collectors", "2", "--mc", "--trials", "200", "--seed", "4"]
    first = run_json(capsys, mc)
    assert first == run_json(capsys, mc) and (first["trials"], first["seed"]) == (200, 4)
    assert "not allowed with argument --exact" in one_error_line(
        capsys, ["coupon", "--n", "3", "--collectors", "2", "--exact", "--mc"])
    one_error_line(capsys, ["coupon", "--n", "3", "--collectors", "2", "--trials", "9"])


def test_adversary(capsys):
    doc = run_json(capsys, ["adversary", "theorem3", "--n", "2", "--layers", "2"])
    # Theorem 3: on the cyclic sequence over k + 1 pages LRU misses every request
    assert (doc["adversary"], doc["policy"], doc["k"]) == ("theorem3", "lru", 3)
    assert doc["online_misses"] == doc["requests"] > doc["opt_misses"]
    search = ["adversary", "search", "--policy", "lru", "--n", "2", "--layers", "2", "--k",
              "3", "--length", "6", "--budget", "20", "--seed", "1"]
    first = run_json(capsys, search)
    assert first == run_json(capsys, search) and first["certificate"]["verified"] is True
    assert one_error_line(capsys, search[:7] + search[9:]) == \
        "error: adversary search needs --k K\n"


def test_proofs_exit_status_and_json(monkeypatch, capsys):
    """0 when every theorem stands, 1 when one does not; --json one list of rows."""
    import proofs
    from proofs.ledger import LedgerRow, PowerCheck

    def module(name, holds):
        row = LedgerRow(theorem=name, statement="s", grid="g", smallest_margin=Fraction(0),
                        holds=holds, witness={}, power_checks=[PowerCheck("w", "d", True)])
        mod = types.ModuleType(f"proofs.contract_{name}")
        mod.check = lambda: row
        monkeypatch.setitem(sys.modules, mod.__name__, mod)
        return mod.__name__

    monkeypatch.setattr(proofs, "MODULES", (module("a", True),))
    rows = run_json(capsys, ["proofs"])
    assert [r["theorem"] for r in rows] == ["a"]
    monkeypatch.setattr(proofs, "MODULES", (module("a", True), module("b", False)))
    rc, out, _ = run(capsys, ["proofs", "--json"])
    assert rc == 1 and [r["holds"] for r in json.loads(out)] == [True, False]


def test_figs_only(tmp_path, capsys):
    rc, _, err = run(capsys, ["figs", "--only", "coupon", "--quick", "--out",
                              str(tmp_path)])
    assert rc == 0, err
    assert sorted(p.name for p in tmp_path.iterdir() if p.stem == "fig_coupon") == [
        "fig_coupon.csv", "fig_coupon.json", "fig_coupon.pdf", "fig_coupon.png"]
    assert "unknown figure 'nope'" in one_error_line(capsys, ["figs", "--only", "nope"])


def test_cost_presets_names(capsys):
    doc = run_json(capsys, ["cost", "presets"])
    assert [m["name"] for m in doc["models"]] == [
        "olmoe-1b-7b", "mixtral-8x7b", "qwen1.5-moe-a2.7b", "phi-3.5-moe", "granite-3.0-1b-a400m"]
    assert [m["name"] for m in doc["precisions"]] == ["bf16", "int8", "int4", "int2"]
    assert [m["name"] for m in doc["hardware"]] == ["link-5gbps", "pcie3", "pcie4", "pcie5"]


def test_plan(capsys):
    spec = "zipf:n=8,layers=32,tokens=6,topk=2,seed=0"
    rows = run_json(capsys, ["plan", spec, "--model", "mixtral-8x7b", "--hardware", "pcie4",
                             "--budget-gb", "20"])
    assert [(r["trace"], r["model"], r["hardware"], r["budget_bytes"]) for r in rows] == [
        (spec, "mixtral-8x7b", "pcie4", 20_000_000_000)]


def test_sweep_writes_the_simulated_numbers(tmp_path, capsys):
    pytest.importorskip("pyarrow")  # (the `sweep` extra: Parquet)
    spec = tmp_path / "s.toml"
    spec.write_text(f'traces = ["{CYC}"]\npolicies = ["lru", "belady"]\nk = [2, 6]\n',
                    encoding="utf-8")
    out = tmp_path / "t.parquet"
    doc = run_json(capsys, ["sweep", str(spec), "--workers", "0", "--out", str(out)])
    assert (doc["cells"], doc["ran"]) == (4, 4)
    import pandas as pd

    table = pd.read_parquet(out)
    got = {(p, int(k)): int(m) for p, k, m in zip(table.policy, table.k, table.misses,
                                                  strict=True)}
    assert got == {("lru", 2): 8, ("lru", 6): 6, ("belady", 2): 7, ("belady", 6): 6}


def test_serve(capsys):
    spec = "zipf:n=8,layers=32,tokens=12,topk=2,seed=0"
    base = ["serve", spec, "--model", "mixtral-8x7b", "--budget-gb", "10", "--policy", "lru",
            "--max-batch", "2", "--max-tokens", "8", "--no-bound"]
    runs = run_json(capsys, base + ["--rate", "2", "--duration", "1"])
    assert isinstance(runs, list) and runs[0]["summary"]["policy"] == "lru"
    assert one_error_line(capsys, base + ["--duration", "1"]) == (
        "error: give the arrivals as one of --rate R, --clients N or --arrivals FILE\n")

