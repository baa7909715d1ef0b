"""One command through the code (issue 21): ``paging simulate FILE --policy lru --budget-gb 8
--model mixtral-8x7b --prefetch transition`` passes through each module once, in order.

The issue counted, on the old main: ``commands/simulate.py`` entered 7 times, the policy name
turned into a policy 5 times, the transition predictor refitted for every run, the timeline run
by the command. Here a profiler records every call into a ``paging`` module from another module
while the command runs on a file of three sequences (cold runs: one run per sequence, each
training ``transition`` on the other two), and the test checks:

* the command module is entered once (its ``run``), and nothing calls back into it;
* the policy name is parsed once per run spec (validation) and built once per simulated run;
* the predictor is fitted once per simulated run, by the run recipe (:mod:`paging.run`);
* the timeline is run by the run recipe, once per simulated run, never by the command;
* per simulated run, the stages come in the order recipe → cost model → predictor →
  simulator → timeline, each once.
"""

from __future__ import annotations

import collections
import contextlib
import io
import json
import sys
from pathlib import Path

from paging import cli
from paging.generators import zipf
from paging.io import write

ROOT = str(Path(__file__).resolve().parents[2] / "paging") + "/"
N_SEQ = 3


def _module(frame) -> str | None:
    f = frame.f_code.co_filename
    return f[len(ROOT):] if f.startswith(ROOT) else None


def _profile(argv):
    """``(calls, rows)``: every call of a ``paging`` function as (module, function, caller's
    module), in order, and the command's JSON rows."""
    entries = []

    def prof(frame, event, arg):
        if event != "call":
            return
        mod = _module(frame)
        if mod is None:
            return
        back = frame.f_back
        caller = _module(back) if back is not None else None
        entries.append((mod, frame.f_code.co_name, caller))

    out = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()):  # compile the kernels unprofiled first (a
        assert cli.main(argv) == 0                     # profiler slows numba's compiler 3-4x)
    with contextlib.redirect_stdout(out):
        sys.setprofile(prof)
        try:
            code = cli.main(argv)
        finally:
            sys.setprofile(None)
    assert code == 0
    return entries, json.loads(out.getvalue())


def test_simulate_with_model_and_transition_passes_each_module_once(tmp_path):
    traces = [zipf(n=8, layers=32, tokens=12, topk=2, seed=s) for s in range(N_SEQ)]
    path = tmp_path / "three.npz"
    write(traces, path)
    argv = ["simulate", str(path), "--policy", "lru", "--budget-gb", "8", "--model",
            "mixtral-8x7b", "--prefetch", "transition", "--json"]
    entries, rows = _profile(argv)
    assert len(rows) == N_SEQ and all(r["prefetches"] > 0 for r in rows)
    count = collections.Counter((m, f) for m, f, _ in entries)

    # the command: entered once, from the CLI; nothing calls back into it
    into_command = [(f, c) for m, f, c in entries if m == "commands/simulate.py"
                    and c != m and f not in ("<module>", "add_parser")]
    assert into_command == [("run", "cli.py")]
    # the policy: parsed once (the RunSpec), built once per simulated run (the simulator)
    makers = [c for m, f, c in entries if (m, f) == ("policies/__init__.py", "make_policy")]
    assert makers == ["run.py"] + ["simulate.py"] * N_SEQ
    # the predictor: fitted once per run, from the recipe; the timeline: run by the recipe
    assert count[("predict/prefetch.py", "fit")] == N_SEQ
    timelines = [c for m, f, c in entries if (m, f) == ("cost/timeline.py", "timeline_run")]
    assert timelines == ["run.py"] * N_SEQ

    # per simulated run, in order: recipe -> cost model -> predictor -> simulator -> timeline
    stage = {("run.py", "run"): "recipe", ("cost/setup.py", "weights"): "cost",
             ("predict/prefetch.py", "fit"): "predictor",
             ("simulate.py", "simulate"): "simulator",
             ("cost/timeline.py", "timeline_run"): "timeline"}
    seen = [stage[(m, f)] for m, f, _ in entries if (m, f) in stage]
    assert seen == ["recipe", "cost", "predictor", "simulator", "timeline"] * N_SEQ
