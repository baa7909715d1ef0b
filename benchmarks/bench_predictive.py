"""Requests/s of the compiled score-based and prediction policies (issue 22, item 2) against
the reference loop, in one process.

Run: ``python benchmarks/bench_predictive.py [--json] [--tokens T] [--k K] [--ref-tokens R]
[--repeat N] [--only NAME ...]``.

The trace is the 2M-request benchmark trace of ``bench_vs_libcachesim.py``: layered Zipf,
n=8 experts, ℓ=32 layers, a=1, h=0, 62,500 tokens, seed 0 (:func:`paging.generators.zipf`,
rounds mode). Score-Based reads gate scores and the Zipf generator writes none, so every
request gets a synthetic score, U(0, 1) from ``numpy.random.default_rng(seed)`` (the same trace
otherwise). k = 64 pages (2 per layer on average).

Per policy: :func:`paging.fast.run` on the whole trace (best of ``--repeat``, after a warm-up
on a small trace that compiles the kernel; the time includes what the call does before the
kernel: the oracle's predictions, and for η > 0 its OPT run and noise, the markers'
pre-drawn uniforms; wall clock, and the process's CPU time, which a machine shared with other
jobs inflates less), and ``simulate(..., engine="reference")`` on the trace's first R tokens
(``--ref-tokens``, default 2,000: 64,000 requests; one run), whose rate is reported as the
reference's. The kernel is also run on that prefix and its Result compared with the
reference's (every field, the eviction log included): ``agree``.

libCacheSim has none of these policies, so there is no libCacheSim column; the LRU kernel on
the same trace is printed for scale (``bench_vs_libcachesim.py`` compares it with libCacheSim's
LRU).

``--json`` prints one JSON line last: per policy the kernel's requests/s (wall clock and CPU
time) and the reference's (wall clock), their ratio (wall clocks), the misses and ``agree``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

N_EXPERTS, N_LAYERS, TOKENS, K = 8, 32, 62_500, 64
POLICIES = ("score-based", "score-based-dist",
            "blind-oracle", "blind-oracle-dist", "blind-oracle:oracle",
            "blind-oracle:oracle:eta=10,seed=1",
            "predictive-marker", "predictive-marker-dist", "predictive-marker:oracle",
            "predictive-marker:oracle:eta=10,seed=1",
            "lmarker", "lmarker-dist", "lmarker:oracle",
            "robust-blind-oracle", "robust-blind-oracle-dist", "robust-blind-oracle:oracle")


def bench_trace(tokens: int, seed: int):
    """The layered Zipf trace with U(0, 1) gate scores."""
    from paging.generators import zipf
    from paging.trace import Trace

    tr = zipf(n=N_EXPERTS, layers=N_LAYERS, tokens=tokens, a=1.0, h=0.0, seed=seed)
    score = np.random.default_rng(seed).random(tr.n_requests)
    return Trace(tr.layout, tr.pages, tr.steps, tr.name, tr.token, tr.rank, score, tr.expand,
                 tr.meta)


def same(a, b) -> bool:
    fields = ("misses", "collision_misses", "bypasses", "requests")
    return (all(getattr(a, f) == getattr(b, f) for f in fields)
            and np.array_equal(a.per_layer_misses, b.per_layer_misses)
            and np.array_equal(a.hit_mask, b.hit_mask)
            and np.array_equal(a.evictions, b.evictions)
            and np.array_equal(a.bypassed, b.bypassed))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--tokens", type=int, default=TOKENS)
    ap.add_argument("--ref-tokens", type=int, default=2_000)
    ap.add_argument("--k", type=int, default=K)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", action="append", default=None)
    args = ap.parse_args(argv)

    from paging import fast
    from paging.policies import make_policy
    from paging.simulate import simulate

    trace = bench_trace(args.tokens, args.seed)
    prefix = trace.head(args.ref_tokens * N_LAYERS)
    N, Np = trace.n_requests, prefix.n_requests
    trace.next_use  # noqa: B018 (computed once, outside the timings: the trace caches it)
    prefix.next_use  # noqa: B018
    small = bench_trace(50, 1)
    names = args.only or list(POLICIES)
    print(f"layered Zipf n={N_EXPERTS} ℓ={N_LAYERS} a=1 h=0 seed={args.seed}: {N:,} requests, "
          f"U(0,1) scores; k={args.k}; reference on the first {Np:,} requests; "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.1f}")
    lru = make_policy("lru")
    fast.run(small, lru, args.k)
    t0 = time.perf_counter()
    r = fast.run(trace, lru, args.k)
    t_lru = time.perf_counter() - t0
    print(f"{'lru (kernel, for scale)':40s} {N / t_lru / 1e6:6.2f} Mreq/s   misses "
          f"{r.misses:,}")
    out = {"requests": N, "ref_requests": Np, "k": args.k, "seed": args.seed,
           "lru_mreq_s": N / t_lru / 1e6, "policies": {}}
    for name in names:
        fast.run(small, make_policy(name), args.k, seed=args.seed)  # compile / load
        best, cpu, res = float("inf"), float("inf"), None
        for _ in range(args.repeat):
            pol = make_policy(name)
            c0 = time.process_time()
            t0 = time.perf_counter()
            res = fast.run(trace, pol, args.k, seed=args.seed)
            best = min(best, time.perf_counter() - t0)
            cpu = min(cpu, time.process_time() - c0)
        if res is None:
            raise SystemExit(f"{name} has no kernel here: is this checkout's paging imported?")
        t0 = time.perf_counter()
        ref = simulate(prefix, make_policy(name), args.k, seed=args.seed, record=True,
                       engine="reference")
        t_ref = time.perf_counter() - t0
        got = fast.run(prefix, make_policy(name), args.k, seed=args.seed, record=True)
        ok = same(ref, got)
        kr, rr = N / best, Np / t_ref
        out["policies"][name] = {"kernel_mreq_s": kr / 1e6, "kernel_s": best,
                                 "kernel_cpu_mreq_s": N / cpu / 1e6, "kernel_cpu_s": cpu,
                                 "reference_kreq_s": rr / 1e3, "reference_s": t_ref,
                                 "speedup": kr / rr, "misses": res.misses,
                                 "prefix_misses": ref.misses, "agree": ok}
        print(f"{name:40s} {kr / 1e6:6.2f} Mreq/s ({best:.2f} s; CPU {N / cpu / 1e6:6.2f})   "
              f"reference "
              f"{rr / 1e3:7.1f} kreq/s   {kr / rr:6.0f}x   misses {res.misses:,}   "
              f"prefix agree: {ok}")
        sys.stdout.flush()
    if args.json:
        print(json.dumps(out))
    return 0 if all(v["agree"] for v in out["policies"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
