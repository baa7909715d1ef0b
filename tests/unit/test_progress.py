"""Progress bars of the long commands (paging.progress): drawn on stderr when it is a terminal
or when forced, silent otherwise (pipes, logs, tests, --json), and never mixed into stdout."""

from __future__ import annotations

import io
import json
import sys
import time

from paging import progress
from paging.cli import main
from paging.generators import zipf
from paging.learned.train import train_flashmoe


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_showing_follows_the_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert not progress.showing()
    assert progress.showing(True) and not progress.showing(False)
    monkeypatch.setattr(sys, "stderr", _Terminal())
    assert progress.showing() and not progress.showing(False)


def test_a_bar_is_drawn_only_on_a_terminal(monkeypatch):
    for stream, drawn in ((io.StringIO(), False), (_Terminal(), True)):
        monkeypatch.setattr(sys, "stderr", stream)
        with progress.bar(3, "work", unit="step") as b:
            for _ in range(3):
                b.update()
        assert ("work" in stream.getvalue()) is drawn


def test_log_lines_go_above_the_bar(monkeypatch):
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    with progress.bar(2, "work") as b:
        progress.write("a line")
        b.update(2)
    # the bar is erased, the line written on a line of its own, the bar drawn again below it
    # (a plain print would append the line to the bar: "... 0/2 [...]a line")
    parts = term.getvalue().split("\r")
    assert "a line\n" in parts, parts
    i = parts.index("a line\n")
    assert i > 1 and parts[i - 1].strip() == "" and parts[i - 2].startswith("work:")
    assert any(p.startswith("work:") for p in parts[i + 1:]), parts


def test_training_draws_label_and_epoch_bars_on_a_terminal(monkeypatch):
    tr = zipf(n=4, layers=3, tokens=60, a=1.0, seed=0)
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    train_flashmoe([tr], 5, seed=0, epochs=2, hidden=8)
    out = term.getvalue()
    assert "label (Belady)" in out and "seq/s" in out and "epoch/s" in out
    quiet = io.StringIO()
    monkeypatch.setattr(sys, "stderr", quiet)
    train_flashmoe([tr], 5, seed=0, epochs=2, hidden=8)
    assert quiet.getvalue() == ""


def test_figs_bar_on_a_terminal_and_log_lines_intact(tmp_path, monkeypatch):
    from experiments.run_all import run_figures

    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    written = run_figures(only=["coupon"], out_dir=str(tmp_path), quick=True)
    assert written["coupon"]
    out = term.getvalue()
    assert "0/1 [" in out and "fig/s" in out  # the bar over the figures
    quiet = io.StringIO()
    monkeypatch.setattr(sys, "stderr", quiet)
    run_figures(only=["coupon"], out_dir=str(tmp_path / "q"), quick=True)
    assert "fig/s" not in quiet.getvalue() and "coupon:" in quiet.getvalue()  # log lines only
    # every log line is whole: "[figs ...] coupon: ..." starts a line of its own
    assert any(line.lstrip("\r").startswith("[figs") and "coupon:" in line
               for line in out.splitlines())


def test_mrc_bar_on_a_terminal_but_not_under_json(monkeypatch, capsys):
    import paging.mrc

    # FIFO is not a stack policy: its curve is one run per k, with a bar past a work threshold
    monkeypatch.setattr(paging.mrc, "_PROGRESS_WORK", 0)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    spec = "zipf:n=4,layers=3,tokens=200,a=1.0,seed=0"
    assert main(["mrc", spec, "--policy", "fifo"]) == 0
    assert "mrc fifo" in capsys.readouterr().err
    assert main(["mrc", spec, "--policy", "fifo", "--json"]) == 0
    cap = capsys.readouterr()
    json.loads(cap.out)  # stdout is one JSON document
    assert "mrc fifo" not in cap.err


def test_simulate_reference_loop_bar_on_a_terminal_but_not_under_json(monkeypatch, capsys):
    """A long run in the reference loop (here routing with a miss handler, --engine
    reference) shows a bar naming the loop; the compiled run of the same options, --json and
    a short run show none."""
    sim = sys.modules["paging.simulate"]
    monkeypatch.setattr(sim, "PROGRESS_MIN", 1000)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    spec = "zipf:n=4,layers=3,tokens=200,topk=2,seed=0"
    args = ["simulate", spec, "--policy", "lru", "--k", "4", "--expand", "groups", "--routing",
            "max-rank:j=1", "--miss", "drop:rank=1"]
    assert main(args + ["--engine", "reference"]) == 0
    assert "simulate lru (reference loop)" in capsys.readouterr().err
    assert main(args + ["--engine", "reference", "--json"]) == 0
    cap = capsys.readouterr()
    json.loads(cap.out)
    assert "reference loop" not in cap.err
    assert main(args) == 0  # compiled
    assert "reference loop" not in capsys.readouterr().err
    monkeypatch.setattr(sim, "PROGRESS_MIN", 10 ** 9)
    assert main(args + ["--engine", "reference"]) == 0
    assert "reference loop" not in capsys.readouterr().err


def _compile_event(name: str, seconds: float) -> None:
    """numba's event of one compilation of ``name`` lasting ``seconds`` (as its dispatcher
    sends it on a cache miss)."""
    from types import SimpleNamespace

    from numba.core import event

    def kernel():
        pass

    kernel.__qualname__ = name
    data = {"dispatcher": SimpleNamespace(py_func=kernel)}
    event.start_event("numba:compile", data=data)
    time.sleep(seconds)
    event.end_event("numba:compile", data=data)


def test_a_long_compilation_is_announced_once():
    """A compilation longer than the delay: one line naming the kernel, then the watch ends."""
    out = io.StringIO()
    th = progress.compile_notice(delay=0.1, show=True, stream=out, poll=0.01)
    time.sleep(0.05)  # (the watcher registers its listener: numba is imported here)
    _compile_event("token_kernel", 0.4)
    th.join(2.0)
    assert not th.is_alive()
    assert out.getvalue().count("\n") == 1
    assert "numba is compiling a kernel (token_kernel)" in out.getvalue()


def test_a_short_compilation_or_none_is_not_announced():
    assert progress.compile_notice(show=False) is None  # (not a terminal: no watcher at all)
    out = io.StringIO()
    th = progress.compile_notice(delay=1.0, show=True, stream=out, poll=0.01)
    time.sleep(0.05)
    _compile_event("lru_kernel", 0.05)
    time.sleep(0.2)
    th.stop.set()
    th.join(2.0)
    assert not th.is_alive() and out.getvalue() == ""


def test_the_byte_budget_ilp_shows_its_size_and_time_limit_on_a_terminal(tmp_path, monkeypatch,
                                                                        capsys):
    """``paging opt --budget-gb G --sizes F --method ilp`` (CBC's branch and bound, up to the
    time limit per sequence) ran silently for minutes on a terminal: it shows an elapsed-time
    bar bounded by the time limit, naming the model's size; nothing under --json."""
    monkeypatch.setattr(progress, "TICK_DELAY", 0.0, raising=False)  # (it solves at once)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    sizes = tmp_path / "s.json"
    sizes.write_text(json.dumps([100, 250, 400, 100, 250, 400, 100, 250, 400, 100, 250, 400]))
    args = ["opt", "zipf:n=4,layers=3,tokens=30,a=1.0,seed=0", "--budget-gb", "8e-7",
            "--sizes", str(sizes), "--method", "ilp", "--time-limit", "120"]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "CBC branch and bound: " in err and " binaries, " in err and " rows" in err, err
    assert "/120 s" in err and "Traceback" not in err
    assert main(args + ["--json"]) == 0
    cap = capsys.readouterr()
    json.loads(cap.out)
    assert "CBC" not in cap.err
