"""Requests/s of the learned and designed eviction policies (issue 11) next to LRU, on
``zipf(n=8, layers=32, tokens=T, seed=0)`` (T = 62,500: the 2M-request benchmark trace; its
layout is Mixtral's, so the shipped FlashMoE model applies, and it was not trained on it).

Run: ``python benchmarks/bench_learned.py [--tokens T] [--k K ...] [--only POLICY ...]
[--real] [--ref-tokens R] [--mrc]``. One measurement per configuration (wall clock, after a
warm-up on a small trace that also compiles the kernels).
``--real`` times the six shipped real sequences of ``fig_learned`` instead (``PAGING_TRACES``),
one run each, summed: where token-match's match is used (on the Zipf trace its weight is 0).
``flashmoe`` (reference) scores the k candidates of each eviction in one batched forward pass
(numpy/BLAS): for small matrices, ``OPENBLAS_NUM_THREADS=1`` is faster on a busy machine
(measured: README). Its kernel (:mod:`paging.fast.learned`) runs on the whole trace and the
reference loop on the prefix, as for the token policies; the kernel's counters are printed too
(evictions, network evaluations, near ties handed to the reference's forward pass).

The token policies and robust-token-match run in their compiled kernels
(:mod:`paging.fast.tokens`, ``engine="fast"``) on the whole trace, and in the reference loop
(``engine="reference"``) on its first R tokens (``--ref-tokens``, default 2,000: 64,000
requests), whose rate is reported as the reference's (the time for the whole trace is that rate
extrapolated, and printed as such); both runs' misses are printed, and the kernel's misses on
the prefix are checked equal to the reference's.

``--mrc`` times ``paging mrc --policy token-match`` (k = 1..256, every sequence of the file) on
Mixtral's HumanEval routing file (``$PAGING_TRACES/mixtral-8x7b-instruct-vllm/
humaneval_2_routing.jsonl``) as a command, wall clock including the interpreter's start and the
kernels' load from numba's cache (a first run also compiles them), and ``miss_curve`` in
process after a warm-up.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from paging import generators
from paging.policies import make_policy
from paging.simulate import simulate

POLICIES = (("lru", "fast"), ("lru", "reference"), ("llru", "auto"), ("lfu", "auto"),
            ("token-hazard", "fast"), ("token-hazard", "reference"),
            ("token-decay", "fast"), ("token-decay", "reference"),
            ("token-match", "fast"), ("token-match", "reference"),
            ("robust-token-match", "fast"), ("robust-token-match", "reference"),
            ("flashmoe", "fast"), ("flashmoe", "reference"))
#: the policies whose reference runs take the prefix (--ref-tokens) on the Zipf trace
PREFIX = {"token-hazard", "token-decay", "token-match", "robust-token-match", "flashmoe"}
MIXTRAL = os.path.join("mixtral-8x7b-instruct-vllm", "humaneval_2_routing.jsonl")


def time_mrc() -> None:
    from paging.io import load
    from paging.mrc import miss_curve

    root = os.environ.get("PAGING_TRACES")
    path = os.path.join(root, MIXTRAL) if root else None
    if path is None or not os.path.exists(path):
        print(f"--mrc: set PAGING_TRACES to the folder holding {MIXTRAL}")
        return
    seqs = load(path)
    n = sum(t.n_requests for t in seqs)
    cmd = [sys.executable, "-m", "paging", "mrc", path, "--policy", "token-match", "--json"]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    dt = time.perf_counter() - t0
    print(f"paging mrc --policy token-match: {len(seqs)} sequences, {n} requests, k = 1..256: "
          f"{dt:.1f} s (command, wall clock)", flush=True)
    miss_curve(seqs[0].head(2000), "token-match", progress=False)  # warm-up
    t0 = time.perf_counter()
    total = sum(miss_curve(t, "token-match", progress=False) for t in seqs)
    dt = time.perf_counter() - t0
    runs = 256 * len(seqs)
    print(f"miss_curve in process: {dt:.2f} s for {runs} runs ({1000 * dt / runs:.1f} ms per "
          f"run); misses at k = 64, 200: {int(total[63])}, {int(total[199])}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=62500)
    ap.add_argument("--ref-tokens", type=int, default=2000)
    ap.add_argument("--k", type=int, action="append", default=None)
    ap.add_argument("--only", action="append", default=None, metavar="POLICY")
    ap.add_argument("--real", action="store_true")
    ap.add_argument("--mrc", action="store_true")
    a = ap.parse_args()
    if a.mrc:
        time_mrc()
        return
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
    prefix = None
    if not a.real and a.ref_tokens < a.tokens:
        prefix = [t.head(a.ref_tokens * t.layout.n_layers) for t in traces]
    for k in a.k or [64]:
        for name, engine in chosen:
            runs = prefix if (engine == "reference" and name in PREFIX and prefix) else traces
            m = sum(t.n_requests for t in runs)
            t0 = time.perf_counter()
            misses = sum(simulate(t, make_policy(name), k, engine=engine).misses for t in runs)
            dt = time.perf_counter() - t0
            label = f"{name} ({engine})" if engine != "auto" else name
            note = ""
            if runs is not traces:
                fast = sum(simulate(t, make_policy(name), k, engine="fast").misses for t in runs)
                assert fast == misses, (name, k, fast, misses)
                note = (f"  [first {m} requests; {n / (m / dt):,.0f} s extrapolated to the "
                        f"whole trace; kernel's misses on them equal]")
            if name == "flashmoe" and engine == "fast":
                note += "  [" + flashmoe_counters(runs, k) + "]"
            print(f"k={k:<4d} {label:32s} {m / dt:14,.0f} requests/s  "
                  f"({dt:8.2f} s, {misses} misses){note}", flush=True)


def flashmoe_counters(traces, k: int) -> str:
    """The FlashMoE kernel's counters over ``traces`` (a second run): evictions, network
    evaluations, near ties decided by the reference's forward pass."""
    import numpy as np

    from paging import fast
    from paging.fast.learned import execute

    stats = np.zeros(3, np.int64)
    for t in traces:
        one = np.zeros(3, np.int64)
        pol = make_policy("flashmoe")
        execute(t, fast.plan(pol), np.ones(t.layout.n_pages, np.int64), k, 0, pol, one)
        stats += one
    return (f"{stats[0]} evictions, {stats[1]} network evaluations, {stats[2]} near ties "
            "handed to numpy")


if __name__ == "__main__":
    main()
