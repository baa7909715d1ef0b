"""The ``paging`` command's argument parsing (paging.cli): one-line errors, exit status 2."""

from __future__ import annotations

import json

import pytest

from paging.cli import main


def test_an_abbreviated_option_is_not_taken_for_another(capsys):
    """``--out`` is no option of ``paging serve``: argparse's prefix matching would take it
    for ``--output-len`` (its one option starting so) and answer about that option; every
    sub-command refuses it as unknown, and ``--pol`` is not ``--policy``."""
    rc = main(["serve", "zipf:n=4,layers=2,tokens=10", "--model", "mixtral-8x7b", "--k", "3",
               "--policy", "lru", "--rate", "1", "--duration", "1", "--out", "x.json"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert "unrecognized arguments: --out x.json" in err
    assert main(["simulate", "zipf:n=4,layers=2,tokens=10", "--pol", "lru", "--k", "3"]) == 2
    assert "required: --policy" in capsys.readouterr().err


def test_other_commands_bad_numbers_and_files_are_one_line(tmp_path, capsys):
    """From a review of the commands beyond simulate/mrc/trace: integers int64 cannot hold,
    negative seeds, a run too large for memory, a NaN budget, non-UTF-8 model and arrival
    files and zero training epochs were tracebacks or silent; each is one line, exit 2, and
    writes nothing."""
    from paging.cli import main

    def one_line(argv, *fragments):
        rc = main(argv)
        out, err = capsys.readouterr()
        assert rc == 2 and out == "" and err.count("\n") == 1, err
        assert err.startswith("error: ") and "Traceback" not in err
        for f in fragments:
            assert f in err, (f, err)

    big = str(2**63)
    one_line(["coupon", "--n", "3", "--collectors", big, "--mc", "--trials", "2"],
             f"argument --collectors: {big} is out of range; expected an integer of 64 bits")
    one_line(["coupon", "--n", "3", "--collectors", str(2**40), "--mc", "--trials", "2"],
             "collectors of 3 coupons need about", "bytes at once")  # (before the allocation)
    one_line(["adversary", "theorem1", "--n", "3", "--layers", "2", "--rounds", str(10**12)],
             "error: 2,000,000,000,000 requests need about 96.0 TB of memory",
             "Expected fewer rounds (--rounds) for theorem1")  # (up front)
    spec = "router:n=8,layers=32,tokens=40,k=2,seed=0"
    one_line(["serve", spec, "--policy", "lru", "--model", "mixtral-8x7b", "--k", "16",
              "--rate", "5", "--duration", "1", "--seed", "-1"],
             "argument --seed: seed must be an integer >= 0, got -1")
    sizes = tmp_path / "s.json"
    sizes.write_text(json.dumps([100] * 12))
    for b, want in (("nan", "--budget-gb must be a number of GB > 0, got nan"),
                    ("inf", "--budget-gb must be a number of GB > 0, got inf"),
                    ("1e300", "budget must be at most 2^63 - 1 bytes, got 1.000e309")):
        one_line(["opt", "zipf:n=4,layers=3,tokens=20,seed=0", "--budget-gb", b, "--sizes",
                  str(sizes)], want)
    bad = tmp_path / "m.toml"
    bad.write_bytes(b"a\xff\n")
    one_line(["plan", "router:n=4,layers=3,tokens=10,k=2,seed=0", "--model", str(bad),
              "--budget-gb", "1"], "m.toml: the model file is not UTF-8 text")
    arr = tmp_path / "arr.txt"
    arr.write_bytes(b"0.5\n\xff\n")
    one_line(["serve", spec, "--policy", "lru", "--model", "mixtral-8x7b", "--k", "16",
              "--arrivals", str(arr)], "arr.txt: the arrivals file is not UTF-8 text")
    out = tmp_path / "fm.npz"
    one_line(["train", "flashmoe", "zipf:n=4,layers=3,tokens=30,seed=0", "--k", "4",
              "--epochs", "0", "--out", str(out)], "epochs must be an integer >= 1, got 0")
    assert not out.exists()
    folder = tmp_path / "folder"
    folder.mkdir()
    for o, says in ((str(folder), f"error: {folder}: is a folder; expected a file to write"),
                    ("", "error: the output file name is empty")):  # (tracebacks before)
        one_line(["train", "flashmoe", "zipf:n=4,layers=3,tokens=30,seed=0", "--k", "4",
                  "--epochs", "1", "--out", o], says)
    one_line(["train", "flashmoe", "zipf:n=4,layers=3,tokens=30,seed=0", "--k", "4",
              "--out", str(tmp_path / "m.json")], "a model file is a .npz archive; expected a "
             "name ending in .npz")  # (it wrote a zip archive under the .json name)
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    one_line(["figs", "--only", "coupon", "--quick", "--out", str(a_file)],
             "a_file: --out names a file; expected an output folder")  # (FileExistsError)
    one_line(["figs", "--only", "coupon", "--quick", "--out", ""], "--out is empty")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file", "arr.txt", "folder",
                                                          "m.toml", "s.json"]
    # serving: clients beyond the arrivals cap (a hang), --think without clients (ignored)
    serve = ["serve", spec, "--policy", "lru", "--model", "mixtral-8x7b", "--duration", "1",
             "--k", "16"]
    one_line([*serve, "--clients", str(2**63 - 1)], "is more than 10,000,000")
    one_line([*serve, "--rate", "5", "--think", "1"], "--think applies only to --clients")
    # sweeps: a negative seed (a traceback for randomized policies), a thousand local
    # workers (a hang), a resumed table with a hand-edited cell (a traceback)
    import csv

    spec = tmp_path / "sw.toml"
    table = tmp_path / "sw" / "t.csv"
    body = ('traces = ["zipf:n=4,layers=3,tokens=20,seed=0"]\npolicies = ["marking"]\n'
            "k = [2]\n")
    spec.write_text(body + "seeds = [-1]\n")
    one_line(["sweep", str(spec), "--out", str(table), "--workers", "0"],
             "sw.toml:4: seeds must be integers 0..2^63-1, got -1")
    spec.write_text(body + "seeds = [0]\n")
    one_line(["sweep", str(spec), "--out", str(table), "--workers", "1000"],
             "--workers 1000 is more than 256")
    assert not table.parent.exists()
    assert main(["sweep", str(spec), "--out", str(table), "--workers", "0"]) == 0
    capsys.readouterr()
    rows = list(csv.reader(table.open()))
    rows[1][rows[0].index("k")] = "xx"
    with table.open("w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)
    one_line(["sweep", str(spec), "--out", str(table), "--workers", "0"],
             "t.csv:2: cannot read the existing sweep table to resume (row 1:")


def test_an_output_path_that_cannot_be_written_is_refused_before_the_work(tmp_path, capsys):
    """--out naming a folder, or a path below a file, is one error line before the command's
    work, in every command that writes a file; nothing is written (the adversary's costs file
    was an IsADirectoryError traceback after the search, the sweep's a FileExistsError)."""
    folder = tmp_path / "taken.csv"
    folder.mkdir()
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    below = a_file / "x.csv"
    spec = tmp_path / "s.toml"
    spec.write_text('traces = ["zipf:n=4,layers=3,tokens=20,seed=0"]\npolicies = ["lru"]\n'
                    "k = [2]\n", encoding="utf-8")
    search = ["adversary", "search", "--policy", "lru", "--k", "3", "--n", "3", "--layers",
              "2", "--length", "4"]
    costs = tmp_path / "w.csv.costs.json"
    costs.mkdir()
    cases = [
        (search + ["--out", str(folder)], f"error: {folder}: is a folder"),
        (search + ["--weighted", "--out", str(tmp_path / "w.csv")],
         f"error: {costs}: is a folder; expected a file to write"),
        (search + ["--out", str(below)], f"error: {below}: cannot write below {a_file}, "
                                         "which is a file"),
        (["sweep", str(spec), "--out", str(below), "--workers", "0"], "which is a file"),
        (["sweep", str(spec), "--out", str(folder), "--workers", "0"], "is a folder"),
        (["trace", "convert", "zipf:n=3,layers=2,tokens=3,seed=0", str(folder)], "is a folder"),
        (["trace", "convert", "zipf:n=3,layers=2,tokens=3,seed=0", str(below)],
         "which is a file"),
    ]
    for argv, says in cases:
        rc = main(argv)
        out, err = capsys.readouterr()
        assert rc == 2 and err.count("\n") == 1 and err.startswith("error: "), (argv, err)
        assert says in err, (argv, err)
        assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file", "s.toml", "taken.csv",
                                                          "w.csv.costs.json"]
    assert list(folder.iterdir()) == [] and list(costs.iterdir()) == []
    # the adversary has no --to: its message does not offer one
    rc = main(search + ["--out", str(tmp_path / "x.xyz")])
    err = capsys.readouterr().err
    assert rc == 2 and "cannot tell the output format" in err and "--to" not in err


def test_atomic_path_names_the_file_it_cannot_write(tmp_path):
    """:func:`atomic_path` turns its own OSErrors (a folder in the way, a parent that is a file)
    into one :class:`PagingError` naming the path, and leaves no temporary file behind."""
    from paging.errors import PagingError
    from paging.io.atomic import atomic_path

    (tmp_path / "f").write_text("x")
    with pytest.raises(PagingError, match="cannot write below"):
        with atomic_path(tmp_path / "f" / "g.txt") as tmp:
            tmp.write_text("y")
    target = tmp_path / "t.txt"
    with pytest.raises(PagingError, match="t.txt: cannot write the file: Is a directory"):
        with atomic_path(target) as tmp:
            tmp.write_text("y")
            target.mkdir()  # (a folder appears while the file is written)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f", "t.txt"]


@pytest.mark.parametrize("argv", [
    ["trace", "convert", "cyclic:n=3,layers=2,rounds=4", "OUT", "--to", "csv"],
    ["sweep", "SPEC", "--out", "OUT", "--workers", "0"],
])
def test_an_output_that_is_a_pipe_or_device_is_refused_not_replaced(tmp_path, capsys, argv):
    """An output path naming a pipe or a device (``/dev/stdout``, ``/dev/null``) is refused in
    one line, and the pipe stays a pipe. The outputs are written beside the target and renamed
    over it, so ``paging trace convert T /dev/stdout --to csv`` run as root (a container's
    user) replaced the /dev/stdout link with a regular file holding the CSV, and exited 0 (a
    review of the command's stdout behaviour did so); a FIFO here stands for the device."""
    import os
    import stat

    fifo = tmp_path / "out.csv"
    os.mkfifo(fifo)
    spec = tmp_path / "s.toml"
    spec.write_text('traces = ["cyclic:n=3,layers=2,rounds=4"]\npolicies = ["lru"]\nk = [2]\n',
                    encoding="utf-8")
    argv = [{"OUT": str(fifo), "SPEC": str(spec)}.get(a, a) for a in argv]
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # (so that a writer would not block)
    try:
        rc = main(argv)
        err = capsys.readouterr().err
        assert rc == 2 and err == (f"error: {fifo}: is not a regular file (a device, pipe or "
                                   "socket); expected a file to write (outputs are written "
                                   "beside it and renamed into place)\n")
        assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    finally:
        os.close(reader)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv", "s.toml"]
