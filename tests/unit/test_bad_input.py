"""Bad input found by a review of the readers: each is one line on stderr naming the file (and
the line where there is one) and what was expected, exit status 2, no traceback and no output
file left behind."""

from __future__ import annotations

import pytest

from paging.cli import main

ZIPF = "zipf:n=4,layers=2,tokens=6,seed=0"


@pytest.fixture
def one_line(capsys):
    """Run ``paging ARGV``: exit status ``rc``, one ``error:`` line holding every fragment."""

    def run(argv, *fragments, rc=2):
        got = main([str(a) for a in argv])
        out, err = capsys.readouterr()
        assert got == rc, (got, err)
        assert err.count("\n") == 1 and err.startswith("error: "), err
        assert "Traceback" not in err
        for f in fragments:
            assert f in err, (f, err)
        return err

    return run


def deep(levels: int = 100_000) -> str:
    return "[" * levels + "]" * levels


def test_json_and_toml_nested_too_deeply_are_one_line(tmp_path, one_line):
    """Every JSON and TOML reader refused a document nested past the parser's depth with a
    RecursionError traceback: the JSONL trace (a deep line mid-file, named), a nested JSON
    trace, --sizes/--costs, a model .json, record --prompts and a sweep spec."""
    too_deep = "not valid JSON (nested too deeply to read)"
    good = ('{"dataset": "h", "problem_id": 0, "layer": 0, "experts": [0, 1], '
            '"token_idx": 0}\n')
    log = tmp_path / "deep.jsonl"
    log.write_text(good * 3 + '{"experts": ' + deep() + "}\n" + good)
    one_line(["simulate", log, "--policy", "lru", "--k", "2"],
             f"{log}:4: {too_deep}; expected one JSON object per line")
    nested = tmp_path / "deep.json"
    nested.write_text('{"prompts": ' + deep() + "}")
    one_line(["simulate", nested, "--policy", "lru", "--k", "2"],
             f"{nested}: {too_deep}; expected one JSON document")
    weights = tmp_path / "w.json"
    weights.write_text(deep())
    for kind, what in (("sizes", "integers >= 1 (bytes)"), ("costs", "finite numbers >= 0")):
        one_line(["simulate", ZIPF, "--policy", "lru", "--budget-gb", "1", f"--{kind}",
                  weights], f"{weights}: {too_deep}; expected a list of 8 {what}")
    model = tmp_path / "m.json"
    model.write_text('{"name": ' + deep() + "}")
    one_line(["plan", ZIPF, "--model", model, "--hardware", "pcie3", "--budget-gb", "1"],
             f"{model}: {too_deep}; expected a model file of JSON keys")
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('"hello"\n' + deep() + "\n")
    out = tmp_path / "rec.jsonl"
    one_line(["record", "--tiny", "mixtral", "--prompts", prompts, "--out", out],
             f"{prompts}:2: {too_deep}; expected a string or an object with prompt")
    assert not out.exists()
    spec = tmp_path / "s.toml"
    spec.write_text("traces = " + deep() + "\n")
    one_line(["sweep", spec, "--out", tmp_path / "s.csv"],
             f"{spec}: not valid TOML (nested too deeply to read); expected a sweep spec")
    assert not (tmp_path / "s.csv").exists()


def test_a_csv_field_beyond_the_csv_modules_limit_names_its_line(tmp_path, one_line):
    """A field longer than 131,072 characters was a ``_csv.Error`` traceback in the package's
    CSV reader (whole and --stream) and the libCacheSim CSV reader."""
    big = "x" * 200_000
    trace = tmp_path / "t.csv"
    trace.write_text("# paging-trace n_experts=4 n_layers=2 expand=rounds\nstep,page\n0,0\n"
                     f"1,1\n2,{big}\n3,2\n")
    for stream in ([], ["--stream"]):
        one_line(["simulate", trace, "--policy", "lru", "--k", "2", *stream],
                 f"{trace}:5: not valid CSV (field larger than field limit (131072)); "
                 "expected one request per row")
    cache = tmp_path / "t.libcachesim.csv"
    cache.write_text(f"time,obj_id\n0,1\n1,{big}\n")
    one_line(["simulate", cache, "--policy", "lru", "--k", "2"],
             f"{cache}:3: not valid CSV (field larger than field limit (131072)); expected a "
             "CSV cache trace")


@pytest.mark.parametrize("value", ["³", "٤", "1_0", "+4"])
def test_csv_header_comment_integers_are_ascii_digits(tmp_path, one_line, value):
    """``n_experts=³`` in a CSV trace's header comment was a ValueError traceback and
    ``n_experts=٤`` silently 4 (``str.isdigit`` and ``int()`` take non-ASCII digits)."""
    trace = tmp_path / "t.csv"
    trace.write_text(f"# paging-trace n_experts={value} n_layers=2 expand=rounds\nstep,page\n"
                     "0,0\n1,5\n")
    for stream in ([], ["--stream"]):
        one_line(["simulate", trace, "--policy", "lru", "--k", "2", *stream],
                 f"{trace}:1: n_experts={value} in the header comment; expected an integer >= 1")


def test_cache_trace_ids_are_numeric_only_as_ascii_digits(tmp_path):
    """``int()`` took ``1_000`` for ``1000`` (and ``٤`` for 4), so two distinct ids of a text
    or libCacheSim CSV trace were one object; only ASCII digits are numeric now, and leading
    zeros stay numeric (libCacheSim's ``strtoull`` reads ``01`` as 1)."""
    from paging.io import load

    text = tmp_path / "ids.txt"
    text.write_text("1_000\n1000\n٤\n4\n1000\n")
    (t,) = load(text)
    assert t.pages.tolist() == [0, 1, 2, 3, 1]
    assert t.meta["object_ids"] == ["1_000", "1000", "٤", "4"]
    cache = tmp_path / "ids.libcachesim.csv"
    cache.write_text("time,obj_id\n0,1_000\n1,1000\n2, 7\n3,7\n")
    (t,) = load(cache)
    assert t.pages.tolist() == [0, 1, 2, 2]  # (a cell's spaces are stripped, as before)
    assert t.meta["object_ids"] == ["1_000", "1000", "7"]
    lead = tmp_path / "lead.txt"
    lead.write_text("01\n1\n002\n2\n")
    (t,) = load(lead)
    assert t.pages.tolist() == [0, 0, 1, 1] and t.meta["object_ids"].tolist() == [1, 2]


def _npz(tmp_path, name="t.npz", **changes):
    """A trace .npz written by the package, with some members replaced."""
    import numpy as np

    from paging.io import load, write_npz

    path = tmp_path / name
    write_npz(load(ZIPF), path)
    with np.load(path) as z:
        data = dict(z)
    data.update(changes)
    with open(path, "wb") as fh:
        np.savez(fh, **data)
    return path


def test_an_npy_array_is_not_an_npz_archive(tmp_path, one_line):
    """``np.load`` returns the array itself for a .npy file: one named .npz was a TypeError
    traceback (``with`` on an array) in the trace reader and in ``flashmoe:model=``; a .npz
    archive named .npy given to --sizes was an AttributeError."""
    import numpy as np

    npy = tmp_path / "a.npy"
    np.save(npy, np.arange(5))
    fake = tmp_path / "a.npz"
    fake.write_bytes(npy.read_bytes())
    one_line(["simulate", fake, "--policy", "lru", "--k", "2"],
             f"{fake}: not an .npz archive (a single .npy array of shape (5,)); expected a file "
             "written by paging trace convert")
    one_line(["simulate", fake, "--policy", "lru", "--k", "2", "--stream"],
             f"{fake}: not a readable .npz file (File is not a zip file)")
    for model in (npy, fake):
        one_line(["simulate", ZIPF, "--policy", f"flashmoe:model={model}", "--k", "2"],
                 f"{model}: the file is not a FlashMoE model file (not an .npz archive: a "
                 "single .npy array of shape (5,))")
    archive = tmp_path / "s.npy"
    archive.write_bytes(_npz(tmp_path).read_bytes())
    one_line(["simulate", ZIPF, "--policy", "lru", "--budget-gb", "1", "--sizes", archive],
             f"{archive}: an .npz archive, not a .npy array; expected a .npy array of 8 "
             "integers >= 1 (bytes)")


@pytest.mark.parametrize("key,value,kind", [("n_experts", [4, 4], "an integer"),
                                            ("n_layers", [[2]], "an integer"),
                                            ("expand", ["rounds"], "a string"),
                                            ("format", ["paging-trace-npz/1"] * 2, "a string")])
def test_npz_scalar_members_that_are_arrays_are_named(tmp_path, one_line, key, value, kind):
    """An .npz whose ``n_experts`` (or another scalar member) is an array was a TypeError
    traceback (``int()`` of an array), whole and streamed."""
    import numpy as np

    path = _npz(tmp_path, **{key: np.array(value)})
    shape = np.array(value).shape
    for stream in ([], ["--stream"]):
        one_line(["simulate", path, "--policy", "lru", "--k", "2", *stream],
                 f"{path}: array {key!r} has shape {shape}; expected a scalar ({kind})")


@pytest.mark.parametrize("n,message", [
    (0, "n_experts must be an integer >= 1, got 0"),
    (-4, "n_experts must be an integer >= 1, got -4"),
    (2**62, "a layout of 4611686018427387904 experts x 2 layers has more pages than int64 ids "
            "can name")])
def test_an_npz_layout_error_names_the_file(tmp_path, one_line, n, message):
    """An .npz's n_experts of 0, -4 or 2^62 was refused by the layout without naming the
    file."""
    import numpy as np

    path = _npz(tmp_path, n_experts=np.array(n, dtype=np.int64))
    for stream in ([], ["--stream"]):
        one_line(["simulate", path, "--policy", "lru", "--k", "2", *stream],
                 f"error: {path}: {message}")


def test_convert_of_a_trace_without_requests_names_the_source(tmp_path, one_line):
    """``paging trace convert`` of a trace without requests (an .npz keeps an empty sequence)
    to a libCacheSim format said "nothing to write: the trace has no requests" without a file.
    (A file whose every token is dropped is refused when it is read, naming the layout.)"""
    from paging.io import write
    from paging.layout import Layout
    from paging.trace import Trace

    src = tmp_path / "empty.npz"
    write([Trace(Layout(2, 2), [], [], "e")], src)
    for name in ("o.oracleGeneral", "o.libcachesim.csv"):
        out = tmp_path / name
        one_line(["trace", "convert", src, out],
                 f"error: {src}: nothing to write: the trace has no requests; libCacheSim "
                 "needs at least one")
        assert not out.exists()
    dropped = tmp_path / "dropped.jsonl"
    dropped.write_text('{"dataset": "h", "problem_id": 0, "layer": 0, "experts": [0, 1], '
                       '"token_idx": 0}\n{"dataset": "h", "problem_id": 0, "layer": 1, '
                       '"experts": [1, 0], "token_idx": 1}\n')
    one_line(["trace", "convert", dropped, tmp_path / "o.oracleGeneral"],
             f"error: {dropped}: sequence dropped.jsonl#problem_id=0: all 2 tokens lack some of "
             "the 2 layers 0..1 and were dropped")


BOM = "\ufeff"


def test_a_byte_order_mark_is_skipped_by_every_text_reader(tmp_path, capsys):
    """The trace readers skipped a leading byte-order mark, but a TOML spec with one was "not
    valid TOML (Invalid statement)", a model .json and a --sizes list were refused and
    ``serve --arrivals`` read "expected an arrival time in seconds, got '\\ufeff0'"."""
    from paging.cost import get_model
    from paging.io.weights import read_weights
    from paging.options import read_toml
    from paging.serve import read_arrivals
    from paging.serve.sweep import is_serving

    spec = tmp_path / "s.toml"
    spec.write_text(BOM + '[serve]\nrates = [1]\n', encoding="utf-8")
    assert read_toml(spec, "a spec")[0] == {"serve": {"rates": [1]}} and is_serving(spec)
    model = tmp_path / "m.json"
    model.write_text(BOM + '{"n_layers": 2, "n_experts": 4, "top_k": 2, "d_model": 1024, '
                     '"d_ff": 512, "n_matrices": 3, "non_expert_params": 1000000}',
                     encoding="utf-8")
    assert get_model(str(model)).n_experts == 4
    sizes = tmp_path / "s.json"
    sizes.write_text(BOM + "[1, 2, 3]", encoding="utf-8")
    assert read_weights(sizes, 3, "sizes").tolist() == [1, 2, 3]
    arrivals = tmp_path / "a.txt"
    arrivals.write_text(BOM + "0\n0.5\n", encoding="utf-8")
    assert list(read_arrivals(arrivals)) == [0.0, 0.5]
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(BOM + f'traces = ["{ZIPF}"]\npolicies = ["lru"]\nk = [2]\n',
                     encoding="utf-8")
    out = tmp_path / "sweep.csv"
    assert main(["sweep", str(sweep), "--out", str(out)]) == 0
    out.write_text(BOM + out.read_text(encoding="utf-8"), encoding="utf-8")  # (resumed)
    assert main(["sweep", str(sweep), "--out", str(out)]) == 0
    assert "(0 run, 1 already there)" in capsys.readouterr().out


@pytest.mark.parametrize("tool,module,ending", [("gzip", "gzip", ".gz"), ("bzip2", "bz2", ".bz2"),
                                                ("xz", "lzma", ".xz")])
def test_compressed_traces_are_told_by_name_and_magic(tmp_path, one_line, tool, module, ending):
    """A .zst trace was "compressed trace; decompress it first", a gzipped one "binary file of
    unknown format" (or a UTF-8 error): gzip, bzip2 and xz are told by their name's ending or
    their magic bytes, as zstd is."""
    import importlib

    data = importlib.import_module(module).compress(b"step,page\n0,0\n1,1\n")
    for name in (f"t.csv{ending}", "t.csv", "t", f"t.oracleGeneral{ending}"):
        path = tmp_path / name
        path.write_bytes(data)
        one_line(["simulate", path, "--policy", "lru", "--k", "2", "--n-experts", "1",
                  "--layers", "2"],
                 f"error: {path}: compressed trace ({tool}); decompress it first ({tool} -d) "
                 "and read the uncompressed file")


def test_a_text_trace_starting_like_bzip2_is_still_text(tmp_path):
    """bzip2 is told by more than its "BZh" (a text id may start so)."""
    from paging.io import detect_format

    path = tmp_path / "ids.txt"
    path.write_text("BZh9\nBZh9\n")
    assert detect_format(path) == "text"


def test_sigterm_removes_the_half_written_output(tmp_path):
    """SIGTERM (``timeout``, ``kill``) during ``paging trace convert`` killed the process at
    once and left the hidden temporary file ``.big.csv.XXXX.csv`` beside the output; while an
    output is written the temporary file is now removed, one line, exit status 143 (128 + 15).
    """
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    import paging

    out = tmp_path / "big.csv"
    env = dict(os.environ, PYTHONPATH=str(Path(paging.__file__).parent.parent))
    p = subprocess.Popen([sys.executable, "-m", "paging", "trace", "convert",
                          "zipf:n=8,layers=32,tokens=100000,a=1.0,seed=0", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 50
    while not list(tmp_path.glob(".big.csv.*")) and p.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.005)
    if p.poll() is not None:
        p.communicate()
        pytest.skip("the conversion ended before it could be interrupted")
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=50)
    assert p.returncode == 143, (p.returncode, err)
    assert err == "error: terminated\n"
    assert list(tmp_path.iterdir()) == []


def test_sigterm_during_a_compiled_run_ends_it_at_once():
    """A SIGTERM handler set for the whole command (an earlier version) was run inside a
    callback of the token kernel, where its exception was lost: the run went on and exited 0
    with its full output. Outside the writing of an output SIGTERM keeps its default action."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    import paging

    env = dict(os.environ, PYTHONPATH=str(Path(paging.__file__).parent.parent))
    p = subprocess.Popen([sys.executable, "-m", "paging", "simulate",
                          "zipf:n=64,layers=32,tokens=600000,a=1.0,h=0,seed=0", "--policy",
                          "token-hazard", "--k", "1000", "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(3)
    if p.poll() is not None:
        p.communicate()
        pytest.skip("the run ended before it could be signalled")
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=60)
    # killed by the signal itself (the default action): a Python handler, which runs only once
    # the kernel returns, would exit 143 or (its exception lost) 0 with the full output
    assert p.returncode == -signal.SIGTERM and out == ""


def test_an_interrupt_inside_compiled_code_is_an_interrupt(capsys):
    """Ctrl-C inside a numba-compiled function surfaces as ``SystemError: CPUDispatcher(...)
    returned a result with an exception set`` (the KeyboardInterrupt its context): that was a
    traceback and exit status 1, now "error: interrupted" and 130 as any Ctrl-C."""
    from paging.cli import guarded

    def compiled_run():
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise SystemError("CPUDispatcher(<function kernel>) returned a result with an "
                              "exception set") from None

    assert guarded(compiled_run) == 130
    assert capsys.readouterr().err == "error: interrupted\n"

    def nested():  # (numba's _numba_unpickle wraps the interrupt in several SystemErrors)
        try:
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt as k:
                raise SystemError("<function _numba_unpickle> returned a result with an "
                                  "exception set") from k
        except SystemError as s:
            raise SystemError("CPUDispatcher(<function heap_kernel>) returned a result with "
                              "an exception set") from s

    assert guarded(nested) == 130
    assert capsys.readouterr().err == "error: interrupted\n"

    def other_bug():
        raise SystemError("something else")

    with pytest.raises(SystemError, match="something else"):
        guarded(other_bug)


@pytest.mark.parametrize("spec,message", [
    ("mixtral:layers=0", "--tiny mixtral:layers=0: layers must be an integer >= 1, got 0"),
    ("mixtral:topk=9", "--tiny mixtral:topk=9: topk must be at most experts (4), got 9"),
    ("nosuch", "--tiny: unknown family 'nosuch'; expected one of mixtral")])
def test_record_tiny_options_are_checked_before_torch(tmp_path, one_line, spec, message):
    """``paging record --tiny mixtral:layers=0`` was refused with "needs the optional record
    extra (torch)" where torch is missing: the options are checked first."""
    prompts = tmp_path / "p.txt"
    prompts.write_text("hello\n")
    out = tmp_path / "r.jsonl"
    one_line(["record", "--tiny", spec, "--prompts", prompts, "--out", out], message)
    assert not out.exists()


@pytest.mark.parametrize("argv,message", [
    (["simulate", ZIPF, "--policy", "lru", "--policy", "LRU", "--k", "3"],
     "--policy lists 'lru' and 'LRU', the same value once normalised; expected distinct values"),
    (["simulate", ZIPF, "--policy", "arc", "--k", "3", "--k", "2", "--k", "3"],
     "--k lists 3 twice; expected distinct values"),
    (["simulate", "zipf:n=8,layers=32,tokens=2", "--policy", "lru", "--model", "mixtral-8x7b",
      "--budget-gb", "8", "--budget-gb", "8.0"],
     "--budget-gb/--budget-pct lists '8 GB' twice"),
    (["serve", "zipf:n=8,layers=32,tokens=4", "--model", "mixtral-8x7b", "--policy", "lru",
      "--policy", "Lru", "--k", "4", "--rate", "1", "--duration", "5"],
     "--policy lists 'lru' and 'Lru'"),
    (["serve", "zipf:n=8,layers=32,tokens=4", "--model", "mixtral-8x7b", "--policy", "lru",
      "--budget-gb", "2", "--budget-gb", "2", "--rate", "1", "--duration", "5"],
     "--budget-gb lists '2 GB' twice"),
    # (a repeated rate ran twice and printed its rows twice; a serving sweep's rates refuse it)
    (["serve", "zipf:n=8,layers=32,tokens=4", "--model", "mixtral-8x7b", "--policy", "lru",
      "--k", "4", "--rate", "1", "--rate", "2", "--rate", "1.0", "--duration", "5"],
     "--rate lists '1' twice"),
    (["opt", ZIPF, "--k", "2", "--k", "2"], "--k lists 2 twice"),
])
def test_a_repeated_policy_or_cache_size_is_refused(one_line, argv, message):
    """``--policy lru --policy LRU`` (or ``--k 3 --k 3``) printed the same rows twice; a sweep
    spec refuses such a list, and so does the command line now, before any run."""
    one_line(argv, message)


@pytest.mark.parametrize("method", [["--method", "ilp"], ["--method", "flow"],
                                    ["--costs", "COSTS", "--method", "ilp"],
                                    ["--routing-flex", "j=1", "--method", "ilp"]])
@pytest.mark.parametrize("limit", ["nan", "-1", "0", "inf"])
def test_opt_refuses_a_time_limit_that_is_not_a_finite_positive_number(tmp_path, one_line,
                                                                         method, limit):
    """``paging opt --time-limit`` was checked only by the unit-cost ILP: with --costs (the
    sized ILP) or --routing-flex, NaN reached CBC and came back as "not solved to optimality
    within nan s (CBC: Infeasible); ... use --method belady" (a method --costs refuses), and
    inf drew an infinite bar whose thread died with a traceback on a terminal and left the
    command hanging. Refused up front, for every method."""
    costs = tmp_path / "c.json"
    costs.write_text("[" + ", ".join(["1"] * 8) + "]")
    trace = "router:n=4,layers=2,tokens=5,k=2,seed=0"
    argv = ["opt", trace, "--k", "3", *[str(costs) if a == "COSTS" else a for a in method],
            "--time-limit", limit]
    one_line(argv, "--time-limit must be a finite number of seconds > 0, got")
