"""Requests/s of the reference loop with SpecMD's phases (prefetching, miss handling) next to
LRU's compiled kernel, on ``zipf(n=8, layers=32, tokens=T, seed=0)`` (T = 62,500: 2M requests).

Run: ``python benchmarks/bench_specmd.py [--tokens T]``. One measurement per configuration
(wall clock, after a warm-up run of the kernel on a small trace).
"""

from __future__ import annotations

import argparse
import time

from paging import generators
from paging.predict.prefetch import (
    Frequency,
    Percentile,
    Prefetcher,
    PrefetchOracle,
    PreviousToken,
    TopK,
    Transition,
)
from paging.simulate import simulate


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=62500)
    ap.add_argument("--k", type=int, default=43)
    a = ap.parse_args()
    tr = generators.zipf(n=8, layers=32, tokens=a.tokens, seed=0)
    train = generators.zipf(n=8, layers=32, tokens=2000, seed=1)
    simulate(generators.zipf(n=8, layers=32, tokens=50, seed=0), "lru", a.k)  # compile
    runs = [
        ("lru kernel", dict(engine="fast")),
        ("lru reference loop", dict(engine="reference")),
        ("lru + oracle topk:1", dict(prefetch=Prefetcher(PrefetchOracle(), TopK(1.0)))),
        ("lru + frequency percentile:80", dict(prefetch=Prefetcher(Frequency(),
                                                                   Percentile(80)))),
        ("lru + oracle p=r=0.5 topk:1", dict(prefetch=Prefetcher(PrefetchOracle(0.5, 0.5, 1),
                                                                   TopK(1.0)))),
        ("lru + previous-token topk:1", dict(prefetch=Prefetcher(PreviousToken(), TopK(1.0)))),
        ("lru + transition topk:1.5", dict(prefetch=Prefetcher(Transition([train]),
                                                               TopK(1.5)))),
        ("lru + substitute", dict(miss="substitute")),
    ]
    print(f"{tr.n_requests} requests, k={a.k}")
    for name, kw in runs:
        t0 = time.perf_counter()
        r = simulate(tr, "lru", a.k, **kw)
        dt = time.perf_counter() - t0
        print(f"{name:34s} {tr.n_requests / dt:14,.0f} requests/s  ({dt:.2f} s, "
              f"{r.misses} misses)")


if __name__ == "__main__":
    main()
