"""Weighted offline optimum: networkx vs OR-Tools vs HiGHS on the same interval network.

Layered Zipf traces (``paging.generators.zipf(n=8, layers=32, tokens=T, seed=0)``), two cost
tiers (1 and 10, drawn per page from ``numpy.random.default_rng(0)``), a shared cache of
k = 64 pages and the DIST split. Every solver must give the same optimum; prints a table of
seconds. ``--no-networkx`` skips the slow pure-Python solver on 100,000 requests.

    python benchmarks/bench_weighted_opt.py [--sizes 10000 100000] [--no-networkx]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from paging.generators import zipf
from paging.offline import intervals
from paging.offline.flow import min_cost_flow


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--k", type=int, default=64)
    ap.add_argument("--no-networkx", action="store_true")
    args = ap.parse_args()
    rows = []
    for n in args.sizes:
        trace = zipf(n=8, layers=32, tokens=n // 32, seed=0)
        costs = np.where(np.random.default_rng(0).random(256) < 0.5, 1.0, 10.0)
        for dist in (False, True):
            model = intervals.build(trace, intervals.partition_capacities(trace, args.k, dist),
                                    dist=dist, costs=costs, sizes=None)
            solvers = ["ortools", "highs"] + ([] if args.no_networkx else ["networkx"])
            found = {}
            for solver in solvers:
                t0 = time.perf_counter()
                res = min_cost_flow(model, costs, trace.pages, solver)
                found[solver] = (res.cost, time.perf_counter() - t0)
            costs_found = {c for c, _ in found.values()}
            assert len(costs_found) == 1, found
            rows.append((len(trace), "dist" if dist else "shared", costs_found.pop(),
                         *(f"{found[s][1]:.2f}" if s in found else "-"
                           for s in ("ortools", "highs", "networkx"))))
    head = ("requests", "cache", "OPT cost", "ortools s", "highs s", "networkx s")
    print("  ".join(f"{h:>10}" for h in head))
    for r in rows:
        print("  ".join(f"{str(x):>10}" for x in r))


if __name__ == "__main__":
    main()
