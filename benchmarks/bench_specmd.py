"""Requests/s of SpecMD's phases (prefetching, miss handling): the compiled phase kernel
(:mod:`paging.fast.phases`) against the reference loop, with LRU on
``zipf(n=8, layers=32, tokens=T, seed=0)`` (T = 62,500: 2M requests, rounds mode, k = 43).

Run: ``python benchmarks/bench_specmd.py [--tokens T] [--prefix N] [--only NAME ...]
[--policy P]`` (``--policy``: another list policy than LRU, e.g. ``least-stale``).

Each configuration runs once through ``simulate(..., engine="fast")`` on the whole trace (the
prefetch plan included: it is made inside the call), and once through
``engine="reference"`` on the first ``--prefix`` requests (default 200,000), whose rate is
extrapolated to the whole trace; the kernel is also run on that prefix and its Result compared
with the reference's (every field: printed, not asserted). Measured, never asserted.

The benchmark trace has one expert per token and layer and no gate scores; the handlers that
read scores or ranks get synthetic ones: scores U(0, 1) from ``default_rng(0)``, rank 1 when
the score is below 0.5 and 0 otherwise. The cascades count the cache in bytes: 4 bytes a page at
level 0 (bf16), 2 at int8, 1 at int4, a budget of 43 level-0 pages (172 bytes), fetch costs
4/2/1. A warm-up run of every configuration on a small trace comes first (numba compiles, or
loads its cache).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from paging import generators
from paging.miss import FetchLowestBit, FetchPriority, make_miss
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
from paging.trace import Trace

K = 43


def with_scores(tr: Trace) -> Trace:
    """Seeded gate scores and ranks for a top-1 rounds trace. A rounds-mode pass has one rank,
    and the next pass continues its token (rank + 1) or starts one (rank 0): passes alternate
    between rank 0 and rank 1 (two-round tokens), so ``drop:rank=1`` drops half the misses.
    (The ranks were drawn per request, which the trace's check refuses since 2026-11-29.)"""
    score = np.random.default_rng(0).random(tr.n_requests)
    rank = (tr.steps // tr.layout.n_layers) % 2
    return Trace(tr.layout, tr.pages, tr.steps, tr.name, tr.token, rank, score, tr.expand,
                 tr.meta)


def configurations(train):
    """``name -> (make the keyword arguments of simulate)``: fresh prefetchers and handlers on
    every call (a run resets them)."""
    P = 8 * 32
    s4, s2, s1 = np.full(P, 4), np.full(P, 2), np.full(P, 1)
    c4, c2, c1 = np.full(P, 4.0), np.full(P, 2.0), np.full(P, 1.0)
    byte = dict(budget=K * 4, sizes=s4, costs=c4)
    transition = Transition([train])  # fitted once (a Python pass over the training trace)
    return {
        "no phases (plain kernel)": lambda: dict(k=K),
        "+ transition topk:1.5": lambda: dict(k=K, prefetch=Prefetcher(transition,
                                                                           TopK(1.5))),
        "+ previous-token topk:1": lambda: dict(k=K, prefetch=Prefetcher(PreviousToken(),
                                                                             TopK(1.0))),
        "+ frequency percentile:80": lambda: dict(k=K, prefetch=Prefetcher(Frequency(),
                                                                               Percentile(80))),
        "+ oracle topk:1": lambda: dict(k=K, prefetch=Prefetcher(PrefetchOracle(),
                                                                     TopK(1.0))),
        "+ fetch-lowest-bit (bf16/int8)": lambda: dict(
            miss=FetchLowestBit(("bf16", "int8")).bind([s4, s2], [c4, c2]), **byte),
        "+ fetch-priority (bf16/int8/int4)": lambda: dict(
            miss=FetchPriority(("bf16", "int8", "int4"), (0.5, 0.25)).bind(
                [s4, s2, s1], [c4, c2, c1]), **byte),
        "+ drop:score=0.3": lambda: dict(k=K, miss=make_miss("drop:score=0.3")),
        "+ drop:rank=1": lambda: dict(k=K, miss=make_miss("drop:rank=1")),
        "+ substitute": lambda: dict(k=K, miss=make_miss("substitute")),
        "+ transition topk:1.5 + substitute": lambda: dict(
            k=K, prefetch=Prefetcher(transition, TopK(1.5)), miss=make_miss("substitute")),
    }


def timed(tr, engine, kw, policy="lru"):
    k = kw.pop("k", None)
    t0 = time.perf_counter()
    r = simulate(tr, policy, k, engine=engine, **kw)
    return time.perf_counter() - t0, r


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=62500)
    ap.add_argument("--prefix", type=int, default=200_000)
    ap.add_argument("--only", action="append", default=None,
                    help="run only the configurations whose name contains this")
    ap.add_argument("--policy", default="lru", help="the eviction policy (default lru)")
    a = ap.parse_args()
    tr = with_scores(generators.zipf(n=8, layers=32, tokens=a.tokens, seed=0))
    head = tr.head(min(a.prefix, tr.n_requests))
    small = with_scores(generators.zipf(n=8, layers=32, tokens=50, seed=0))
    train = generators.zipf(n=8, layers=32, tokens=2000, seed=1)
    confs = configurations(train)
    if a.only:
        confs = {name: f for name, f in confs.items() if any(o in name for o in a.only)}
    for make in confs.values():
        timed(small, "fast", make(), a.policy)  # compile
    print(f"{a.policy}, {tr.n_requests} requests, k={K}; reference on the first "
          f"{head.n_requests}")
    print(f"{'configuration':40s} {'kernel req/s':>14s} {'(s)':>7s} {'reference req/s':>16s} "
          f"{'(s, extrap.)':>13s} {'speed-up':>9s}  misses  equal")
    for name, make in confs.items():
        dk, rk = timed(tr, "fast", make(), a.policy)
        dr, rr = timed(head, "reference", make(), a.policy)
        _, rh = timed(head, "fast", make(), a.policy)
        same = rh.to_dict() == rr.to_dict()
        rate_k, rate_r = tr.n_requests / dk, head.n_requests / dr
        print(f"{name:40s} {rate_k:14,.0f} {dk:7.2f} {rate_r:16,.0f} "
              f"{tr.n_requests / rate_r:13.1f} {rate_k / rate_r:8.0f}x  {rk.misses}  "
              f"{'yes' if same else 'NO'}", flush=True)


if __name__ == "__main__":
    main()
