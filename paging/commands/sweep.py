"""``paging sweep SPEC.toml --out FILE.parquet [--scheduler ADDRESS] [--workers N] [--json]``.

Runs the grid of a TOML spec (:mod:`paging.sweep`) on Dask: a LocalCluster of ``--workers``
threads by default (``--processes`` for processes), or the workers of a running scheduler.
Threads by default: the compiled kernels release the GIL, and process workers each pay the
imports, the kernels' load and the trace loading again (``benchmarks/bench_sweep.py``: 2,000
cells on 2 CPUs, 7.8 s with 2 threads against 21.8 s with 2 processes).

The output is one tidy table, Parquet (or CSV when FILE ends in ``.csv``), one row per cell,
with the fields of ``paging simulate --json``; it is rewritten atomically after every batch,
and a re-run skips the cells it already holds.
"""

from __future__ import annotations

from paging.options import int64


def add_parser(sub) -> None:
    p = sub.add_parser("sweep", help="run a TOML grid of simulations on Dask into one table",
                       description="Expand SPEC.toml (traces, policies, k or budget_gb, seeds, "
                       "expand, model, precision, hardware, prefetch, prefetch_strategy, "
                       "miss, routing, warm, timeline, lifetimes; a [serve] table for serving "
                       "runs) into cells and simulate each on Dask. The table (Parquet, or CSV "
                       "by name) is written atomically in batches; a re-run skips the cells it "
                       "already holds.")
    p.add_argument("spec", metavar="SPEC.toml", help="the sweep spec (TOML)")
    p.add_argument("--out", required=True, metavar="FILE",
                   help="output table: .parquet (default format) or .csv")
    p.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="address of a running Dask scheduler (tcp://host:8786); default: a "
                        "local cluster")
    p.add_argument("--workers", type=int64, default=None, metavar="N",
                   help="local workers (default: CPU count, at most 8); 0 runs in this "
                        "process without Dask")
    p.add_argument("--processes", action="store_true",
                   help="local workers are processes instead of threads of one process (for "
                        "policies without a compiled kernel, whose Python loop holds the GIL)")
    p.add_argument("--verify", action="store_true",
                   help="check every cell's run independently (capacity, every request "
                        "served, misses = the eviction log; a cell read off a miss curve "
                        "against a verified run at its k)")
    p.add_argument("--warm", action="store_true",
                   help="run each file's sequences back to back through one cache (warm = "
                        "[true] unless the spec sets warm, which must then include true)")
    p.add_argument("--json", action="store_true",
                   help='print one JSON object {"out", "cells", "ran", "skipped"}; no progress '
                        "bar")
    p.set_defaults(func=run)


#: the most local workers --workers starts (each is a process)
MAX_WORKERS = 256


def run(args) -> int:
    import os

    from paging.cli import print_json
    from paging.errors import PagingError, positive_int
    from paging.sweep import run_sweep

    if args.workers is not None:
        if args.scheduler is not None:
            raise PagingError("--workers sets up a local cluster; with --scheduler the "
                              "scheduler's workers run the cells, drop --workers")
        positive_int("--workers", args.workers, minimum=0)
        if args.workers > MAX_WORKERS:  # (each a process: a thousand hung the machine)
            raise PagingError(f"--workers {args.workers} is more than {MAX_WORKERS}; expected "
                              "local workers this machine can start (--scheduler for a "
                              "cluster)")
    workers = args.workers if args.workers is not None else min(os.cpu_count() or 1, 8)
    from paging.io.atomic import check_target
    from paging.serve.sweep import is_serving, run_serve_sweep

    check_target(args.out)  # (a folder or a path below a file: refused before the cells run)

    opts = dict(scheduler=args.scheduler, workers=workers, processes=args.processes,
                progress=False if args.json else None)
    if is_serving(args.spec):  # a [serve] table: a serving sweep (paging.serve.sweep)
        if args.warm:
            raise PagingError("--warm does not apply to a serving sweep (serving is warm)")
        summary = run_serve_sweep(args.spec, args.out, verify=args.verify, **opts)
    else:
        summary = run_sweep(args.spec, args.out, warm=args.warm, verify=args.verify, **opts)
    if args.json:
        print_json(summary)
    else:
        print(f"wrote {summary['out']}: {summary['cells']} cells ({summary['ran']} run, "
              f"{summary['skipped']} already there)")
    return 0
