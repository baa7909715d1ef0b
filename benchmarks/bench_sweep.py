"""`paging sweep` overhead: a 2,000-cell sweep on the shipped traces, against a plain loop.

Cells: the 5 sequences of the shipped traces (Mixtral HumanEval routing: 2, granite: 3) x 4
policies that are not stack algorithms (fifo, fwf, marking, marking-dist: every cell is one
simulation, no one-pass curve) x 20 cache sizes (k = 8, 16, ..., 160) x 5 seeds = 2,000 cells.
Wall times (best of ``--repeat``, each into a fresh output file):

* ``loop``: the traces loaded once, ``simulate()`` per cell, rows kept in a list;
* ``sweep-0``: ``run_sweep(..., workers=0)`` (in-process, no Dask: planning, table, batches);
* ``dask-1``, ``dask-2``: a LocalCluster of 1 and 2 worker threads (the default; start-up
  included);
* ``dask-2-processes``: 2 worker processes (``--processes``).

Per-cell overhead = (time - loop) / cells. Needs $PAGING_TRACES.

    PAGING_TRACES=../shared/traces python benchmarks/bench_sweep.py [--repeat 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

MIXTRAL = "mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl"
GRANITE = "granite-3.0-1b-a400m-instruct/moe_expert_trace.json"
POLICIES = ["fifo", "fwf", "marking", "marking-dist"]
KS = list(range(8, 161, 8))
SEEDS = [0, 1, 2, 3, 4]
SPEC = f"""traces = ["{MIXTRAL}", "{GRANITE}"]
policies = {json.dumps(POLICIES)}
k = {KS}
seeds = {SEEDS}
"""


def plain_loop() -> int:
    from paging.io import load
    from paging.simulate import simulate

    rows = []
    for f in (MIXTRAL, GRANITE):
        for tr in load(f):
            for p in POLICIES:
                for k in KS:
                    for s in SEEDS:
                        rows.append(simulate(tr, p, k, seed=s).to_dict())
    return len(rows)


def main(argv=None) -> int:
    from paging.sweep import _traces, run_sweep

    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if not os.environ.get("PAGING_TRACES"):
        raise SystemExit("set PAGING_TRACES to the shipped traces folder")
    plain_loop()  # compile the kernels once (numba caches them on disk for the workers too)
    with tempfile.TemporaryDirectory() as d:
        spec = Path(d) / "spec.toml"
        spec.write_text(SPEC)
        runs = {
            "loop": plain_loop,
            "sweep-0": lambda out: run_sweep(spec, out, workers=0, progress=False),
            "dask-1": lambda out: run_sweep(spec, out, workers=1, progress=False),
            "dask-2": lambda out: run_sweep(spec, out, workers=2, progress=False),
            "dask-2-processes": lambda out: run_sweep(spec, out, workers=2, processes=True,
                                                      progress=False),
        }
        res, cells = {}, None
        for name, fn in runs.items():
            best = float("inf")
            for r in range(args.repeat):
                out = Path(d) / f"{name}-{r}.parquet"
                _traces.cache_clear()  # every run loads the traces, as the loop does
                t0 = time.perf_counter()
                got = fn() if name == "loop" else fn(out)
                best = min(best, time.perf_counter() - t0)
                if name == "loop":
                    cells = got
                else:
                    assert got["ran"] == cells, got
            res[name] = best
    table = {n: {"seconds": round(t, 3), "per_cell_overhead_ms":
                 round((t - res["loop"]) / cells * 1e3, 3)} for n, t in res.items()}
    doc = {"cells": cells, "cpus": os.cpu_count(), "runs": table}
    if args.json:
        print(json.dumps(doc))
    else:
        print(f"{cells} cells, {os.cpu_count()} CPUs")
        for n, v in table.items():
            print(f"{n:16s} {v['seconds']:8.2f} s   overhead {v['per_cell_overhead_ms']:7.3f} "
                  "ms/cell")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
