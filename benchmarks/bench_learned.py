"""Requests/s of the learned and designed eviction policies (issue 11) next to LRU, on
``zipf(n=8, layers=32, tokens=T, seed=0)`` (T = 62,500: the 2M-request benchmark trace; its
layout is Mixtral's, so the shipped FlashMoE model applies, and it was not trained on it).

Run: ``python benchmarks/bench_learned.py [--tokens T] [--k K ...] [--only POLICY ...]
[--real]``. One measurement per configuration (wall clock, after a warm-up on a small trace).
``--real`` times the six shipped real sequences of ``fig_learned`` instead (``PAGING_TRACES``),
one run each, summed: where token-match's match is used (on the Zipf trace its weight is 0).
``flashmoe`` scores the k candidates of each eviction in one batched forward pass (numpy/BLAS):
for small matrices,
``OPENBLAS_NUM_THREADS=1`` is faster on a busy machine (measured: README).
"""

from __future__ import annotations

import argparse
import time

from paging import generators
from paging.policies import make_policy
from paging.simulate import simulate

POLICIES = (("lru", "fast"), ("lru", "reference"), ("llru", "auto"), ("lfu", "auto"),
            ("token-hazard", "auto"), ("token-decay", "auto"), ("token-match", "auto"),
            ("flashmoe", "auto"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=62500)
    ap.add_argument("--k", type=int, action="append", default=None)
    ap.add_argument("--only", action="append", default=None, metavar="POLICY")
    ap.add_argument("--real", action="store_true")
    a = ap.parse_args()
    if a.real:
        from experiments import common
        from experiments.fig_learned import DEFAULT_SOURCES

        sources = common.sources_or_skip(None, DEFAULT_SOURCES, print)
        if sources is None:
            return
        traces = [t for s in sources for t in common.load_sequences(s)]
    else:
        traces = [generators.zipf(n=8, layers=32, tokens=a.tokens, seed=0)]
    small = generators.zipf(n=8, layers=32, tokens=50, seed=0)
    chosen = [(name, engine) for name, engine in POLICIES if not a.only or name in a.only]
    for name, engine in chosen:
        simulate(small, make_policy(name), 43, engine=engine)  # compile, load the model
    n = sum(t.n_requests for t in traces)
    print(f"{n} requests in {len(traces)} sequence(s)")
    for k in a.k or [64]:
        for name, engine in chosen:
            t0 = time.perf_counter()
            misses = sum(simulate(t, make_policy(name), k, engine=engine).misses for t in traces)
            dt = time.perf_counter() - t0
            label = f"{name} ({engine})" if engine != "auto" else name
            print(f"k={k:<4d} {label:22s} {n / dt:14,.0f} requests/s  "
                  f"({dt:8.1f} s, {misses} misses)", flush=True)


if __name__ == "__main__":
    main()
