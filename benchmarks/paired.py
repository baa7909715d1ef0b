"""Before/after rates of ``bench_matrix.py`` cells, measured in alternating pairs.

This VM's speed drifts by up to 30 % between minutes, so a change's effect is measured the
way benchmarks/README.md quotes it: the checkout at ``--base`` (a git worktree, made here and
removed afterwards) and the working tree run the same ``bench_matrix.py`` invocation in turn,
before, after, before, after, ..., and each pair gives a ratio (after / before) per cell. One
warm-up run on each side first compiles the kernels (numba's cache is per checkout).

Run::

    python benchmarks/paired.py --base COMMIT [--pairs 3] -- --policy arc --phase plain \\
        --repeat 8

Everything after ``--`` goes to ``bench_matrix.py`` (its ``--json`` is set here). Prints, per
(policy, phase) cell, the before and after rates of each pair and the ratios' minimum, median
and maximum; ``--json FILE`` writes them. Measured, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(tree: Path, args: list[str], out: Path) -> dict:
    """One ``bench_matrix.py`` invocation in ``tree``; its cells by (policy, phase)."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    subprocess.run([sys.executable, str(tree / "benchmarks" / "bench_matrix.py"), *args,
                    "--json", str(out)], cwd=tree, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    cells = json.loads(out.read_text())
    return {(c["policy"], c["phase"]): c.get("kernel_req_s") for c in cells}


def main() -> None:
    argv = sys.argv[1:]
    rest = []
    if "--" in argv:
        i = argv.index("--")
        argv, rest = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the commit measured as 'before'")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--json", default=None, metavar="FILE")
    a = ap.parse_args(argv)
    if a.pairs < 1:
        ap.error("--pairs must be >= 1")
    tmp = Path(tempfile.mkdtemp(prefix="paired-"))
    base = tmp / "base"
    subprocess.run(["git", "worktree", "add", "--detach", "-q", str(base), a.base], cwd=ROOT,
                   check=True)
    try:
        sides = {"before": base, "after": ROOT}
        for name, tree in sides.items():  # warm-up: numba compiles into each checkout's cache
            print(f"warm-up ({name})", flush=True)
            _run(tree, rest, tmp / "warm.json")
        rates: dict = {}
        for i in range(a.pairs):
            for name, tree in sides.items():
                for cell, r in _run(tree, rest, tmp / f"{name}.json").items():
                    rates.setdefault(cell, {"before": [], "after": []})[name].append(r)
            print(f"pair {i + 1} of {a.pairs} done", flush=True)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT,
                       check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    rows = []
    for (policy, phase), r in rates.items():
        ok = all(x for x in r["before"] + r["after"])
        ratios = [y / x for x, y in zip(r["before"], r["after"], strict=True)] if ok else []
        rows.append({"policy": policy, "phase": phase, **r, "ratios": ratios})
        if not ok:
            print(f"{policy:24s} {phase:18s} (a side has no kernel rate)")
            continue
        fmt = " ".join(f"{x / 1e6:.2f}/{y / 1e6:.2f}M" for x, y in zip(r["before"], r["after"],
                                                                      strict=True))
        print(f"{policy:24s} {phase:18s} before/after {fmt}  after/before min "
              f"{min(ratios):.2f} median {statistics.median(ratios):.2f} max {max(ratios):.2f}")
    if a.json:
        Path(a.json).write_text(json.dumps({"base": a.base, "pairs": a.pairs, "args": rest,
                                            "cells": rows}, indent=1))


if __name__ == "__main__":
    main()
