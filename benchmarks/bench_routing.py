"""Compiled cache-aware routing hooks (paging.fast.routing) against the reference loop, with LRU
or any policy given by ``--policy`` (repeatable; the list policies run in the list kernel, the
others of the phase kernel in :func:`paging.fast.phases.phase_kernel`) (issue 22 item 1).

Run::

    python benchmarks/bench_routing.py [--json] [--k 64] [--prefix 200000] [--repeat 3]
                                       [--policy lru --policy arc ...] [--hook max-rank:j=1 ...]

Trace: ``zipf:n=8,layers=32,tokens=31250,topk=2,seed=0`` loaded with ``expand="groups"``
(2,000,000 requests, 1,000,000 (token, layer) groups of 2, expert ids only). For each hook:

1. the kernel (``simulate(..., routing=hook, engine="fast")``, nothing recorded) on the whole
   trace, best of ``--repeat`` (after one warm-up run that compiles);
2. the reference loop (``engine="reference"``) on the first ``--prefix`` requests, one run, as
   requests per second (trace requests: the slots before routing);
3. on that prefix, the recorded kernel and reference runs compared field by field (every Result
   field, ``extra``'s routing fields, the served sequence).

Throughput counts the trace's requests (slots) per second, so pruning (which serves fewer) is
comparable with the others. ``--json`` prints one JSON line last.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import time

import numpy as np

from paging.errors import PagingError
from paging.io import load
from paging.simulate import simulate

TRACE = "zipf:n=8,layers=32,tokens=31250,topk=2,seed=0"
HOOKS = ("pruning:j=1", "max-rank:j=1", "max-rank:j=0,m=2", "cumsum:tau=0.5", "cumsum:tau=0.9,j=0",
         "cache-prior:lambda=0.5")


def _same(a, b) -> bool:
    for f in dataclasses.fields(b):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(y, np.ndarray):
            if not np.array_equal(x, y):
                return False
        elif isinstance(y, dict):
            if x.keys() != y.keys() or any(
                    not np.array_equal(x[k], y[k]) if isinstance(y[k], np.ndarray)
                    else x[k] != y[k] for k in y):
                return False
        elif x != y:
            return False
    return True


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=64)
    ap.add_argument("--prefix", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--policy", action="append", help="policy spec (default: lru)")
    ap.add_argument("--hook", action="append", help=f"routing hook (default: {', '.join(HOOKS)})")
    a = ap.parse_args()
    trace = load(TRACE, expand="groups")[0]
    N = trace.n_requests
    prefix = trace.head(a.prefix)
    rows = []
    print(f"trace {TRACE} groups: {N:,} requests, k = {a.k}, "
          f"{platform.processor() or platform.machine()}, load {os.getloadavg()[0]:.1f}")
    for pol, hook in ((p, h) for p in a.policy or ["lru"] for h in a.hook or HOOKS):
        try:
            simulate(prefix, pol, a.k, routing=hook, engine="fast")
            compiled = True
        except PagingError:  # no kernel for this run (engine="fast" refuses): reference only
            compiled = False
        best = None
        res = None
        if compiled:
            for _ in range(a.repeat):
                t0 = time.perf_counter()
                res = simulate(trace, pol, a.k, routing=hook, engine="fast")
                dt = time.perf_counter() - t0
                best = dt if best is None else min(best, dt)
        t0 = time.perf_counter()
        simulate(prefix, pol, a.k, routing=hook, engine="reference")
        dref = time.perf_counter() - t0
        same = None
        if compiled:
            same = _same(simulate(prefix, pol, a.k, routing=hook, record=True, engine="fast"),
                         simulate(prefix, pol, a.k, routing=hook, record=True,
                                  engine="reference"))
        row = {"policy": pol, "hook": hook, "compiled": compiled,
               "kernel_req_s": N / best if best else None, "kernel_s": best,
               "reference_req_s": prefix.n_requests / dref,
               "misses": None if res is None else res.misses,
               "served": None if res is None else res.requests,
               "prefix_equal": same}
        rows.append(row)
        ks = (f"{row['kernel_req_s'] / 1e6:6.2f} Mreq/s ({best:.2f} s)" if best
              else "   (reference only)")
        ratio = f"{row['kernel_req_s'] / row['reference_req_s']:6.0f}x" if best else "      -"
        print(f"{pol:12s} {hook:24s} kernel {ks}  "
              f"reference {row['reference_req_s'] / 1e3:7.1f} kreq/s  {ratio}  "
              f"misses {row['misses']}  prefix equal {same}", flush=True)
    if a.json:
        print(json.dumps({"trace": TRACE, "k": a.k, "requests": N, "rows": rows}))


if __name__ == "__main__":
    main()
