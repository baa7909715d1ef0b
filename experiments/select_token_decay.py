"""Token-Decay's hyper-parameters by leave-one-sequence-out, and its held-out table (issue 11,
item 5).

For every sequence of the shipped real traces (the same six as ``fig_learned``, rounds
expansion) at k = 200: the misses of every existing online policy (``BASELINES``: LRU, FIFO, LFU,
FWF, Marking, LLRU, FLD, Least-Stale, ARC, LeCaR and their ``-dist`` variants; Marking and
LeCaR with seed 0) and of ``TokenDecay(lam, horizon)`` (its other parameters at their defaults)
on the grid ``GRID``. Leave-one-sequence-out: for each held-out sequence, the grid point with
the smallest mean relative change against the best baseline on the five OTHER sequences is
chosen (ties: the smaller (lam, horizon)), and its result on the held-out sequence is reported.
The README's table is this script's output.

Run: ``python -m experiments.select_token_decay [--trace PATH ...] [--k K]`` (~3 minutes; needs
the real traces: ``PAGING_TRACES`` or ``--trace``).
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Sequence

import numpy as np

from experiments import common
from experiments.fig_learned import DEFAULT_SOURCES
from paging.errors import PagingError

BASELINES = tuple(f"{p}{d}" for p in ("lru", "fifo", "lfu", "fwf", "marking", "llru", "fld",
                                      "least-stale", "arc", "lecar") for d in ("", "-dist"))
GRID = tuple(itertools.product((0.8, 0.9, 0.95, 0.98), (1, 2, 4)))
SEED = 0


def loso(results: dict, best: Sequence[int]) -> list[tuple]:
    """Leave-one-sequence-out choice. ``results[(lam, horizon)]``: misses per sequence;
    ``best[i]``: the best baseline's misses on sequence i. Returns, per held-out sequence i, the
    point chosen on the others and its held-out misses: ``(i, point, misses)``."""
    n = len(best)
    out = []
    for i in range(n):
        score = {g: float(np.mean([m[j] / best[j] - 1.0 for j in range(n) if j != i]))
                 for g, m in results.items()}
        g = min(score, key=lambda g: (score[g], g))
        out.append((i, g, results[g][i]))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", action="append", default=None, metavar="PATH")
    ap.add_argument("--k", type=int, default=200)
    a = ap.parse_args(argv)
    try:
        return _run(a)
    except PagingError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _run(a) -> int:
    from paging.policies.decay import TokenDecay
    from paging.simulate import simulate

    sources = common.sources_or_skip(a.trace, DEFAULT_SOURCES, print)
    if sources is None:
        return 0
    seqs = [t for s in sources for t in common.load_sequences(s)]
    base = [{p: simulate(t, p, a.k, seed=SEED).misses for p in BASELINES} for t in seqs]
    best = [min(b.items(), key=lambda kv: (kv[1], kv[0])) for b in base]
    opt = [simulate(t, "belady", a.k).misses for t in seqs]
    results = {g: [simulate(t, TokenDecay(lam=g[0], horizon=g[1]), a.k).misses for t in seqs]
               for g in GRID}
    print(f"k = {a.k}; grid (lam, horizon): misses per sequence")
    for g, m in results.items():
        print(f"  {g}: {m}")
    print("| sequence | best existing (misses) | chosen on the others | token-decay | change "
          "| OPT |")
    print("|---|---|---|---|---|---|")
    for i, g, m in loso(results, [b for _, b in best]):
        name, b = best[i]
        print(f"| {seqs[i].name} | {name} {b:,} | lam={g[0]}, horizon={g[1]} | {m:,} | "
              f"{m / b - 1.0:+.1%} | {opt[i]:,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
