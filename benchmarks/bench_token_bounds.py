"""token-decay's and token-match's kernels with their bounded log-losses on and off
(:mod:`paging.fast.tokens`, "BOUNDED mode"), in one process: requests/s of each (best of
``--repeat``, the two modes alternated), their misses (equal, or the script fails), how many
token ends the bounded run scored within the bound (and, for token-match, with only its β
rows within it: BETA mode) and whether it was redone.

Run: ``python benchmarks/bench_token_bounds.py [--tokens T] [--k K] [--repeat R] [--real]``.
The trace is ``zipf(n=8, layers=32, tokens=T, seed=0)`` (T = 62,500: the 2M-request benchmark
trace). ``--real`` instead reports, for the shipped routing files (``PAGING_TRACES``), at
k = 32, 64, 128, how many token ends turn BOUNDED (timing those short sequences says little).

``--margins`` compares the margin ladders ``(500,)`` and :data:`paging.fast.tokens.ENTER` (the
module constant set between runs, alternated, best of ``--repeat``; the misses equal), and
``--safety`` counts the runs whose bound fails at each first margin of ``--first`` on a grid of
Zipf traces (n = 8, ℓ = 32, ``--tokens`` tokens, a = 0.7 and 1.2, seeds 1 and 2, k = 20 and
100; token-match, token-decay-dist, token-match-dist).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from paging import fast, generators, io  # noqa: E402
from paging.fast import tokens  # noqa: E402
from paging.policies import make_policy  # noqa: E402
from paging.weights import unit_sizes  # noqa: E402

POLICIES = ("token-match", "token-decay", "robust-token-match", "token-match-dist",
            "token-decay-dist")
REAL = ("mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl",
        "mixtral-8x7b-instruct-vllm/humaneval_p0_prefill_decode_raw.jsonl",
        "granite-3.0-1b-a400m-instruct/moe_expert_trace.json")


def run(trace, name: str, k: int, bounded: bool) -> tuple[float, int, dict]:
    info: dict = {}
    plan = fast.plan(make_policy(name))
    t0 = time.perf_counter()
    out = tokens.execute(trace, plan, unit_sizes(trace.layout.n_pages), k, 0, bounded=bounded,
                         info=info)
    return time.perf_counter() - t0, int(out[0]), info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=62_500)
    ap.add_argument("--k", type=int, default=43)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--real", action="store_true")
    ap.add_argument("--margins", action="store_true")
    ap.add_argument("--safety", action="store_true")
    ap.add_argument("--first", default="5,50", help="--safety: first margins, comma-separated")
    a = ap.parse_args()
    if a.margins or a.safety:
        return margins(a)
    if a.real:
        root = os.environ.get("PAGING_TRACES")
        if not root:
            sys.exit("bench_token_bounds: --real needs PAGING_TRACES (the shipped traces)")
        for rel in REAL:
            seqs = io.load(os.path.join(root, rel))
            seqs = seqs if isinstance(seqs, list) else [seqs]
            for name in POLICIES:
                for k in (32, 64, 128):
                    infos = [run(s, name, k, True)[2] for s in seqs]
                    print(f"{rel} | {name} | k={k} | {len(seqs)} sequences | bounded token "
                          f"ends {sum(i['bounded'] for i in infos)} | redone "
                          f"{sum(i['redone'] for i in infos)}")
        return
    trace = generators.zipf(n=8, layers=32, tokens=a.tokens, seed=0)
    small = generators.zipf(n=8, layers=32, tokens=50, seed=0)
    print(f"{trace.n_requests:,} requests, k={a.k}, best of {a.repeat}; load average "
          f"{os.getloadavg()[0]:.1f}")
    for name in POLICIES:
        run(small, name, a.k, True)  # compile, or load from numba's cache
        best = {True: float("inf"), False: float("inf")}
        seen = {}
        for _ in range(a.repeat):
            for bounded in (False, True):
                dt, misses, info = run(trace, name, a.k, bounded)
                best[bounded] = min(best[bounded], dt)
                seen[bounded] = (misses, info)
        assert seen[True][0] == seen[False][0], (name, seen)
        rate = {b: trace.n_requests / best[b] / 1e6 for b in best}
        info = seen[True][1]
        print(f"{name} | exact {rate[False]:.2f} M/s | bounded {rate[True]:.2f} M/s | "
              f"{best[False] / best[True]:.2f}x | misses {seen[True][0]:,} | bounded token ends "
              f"{info['bounded']:,} (β only {info['beta_bounded']:,}) | redone {info['redone']}")


def margins(a) -> None:
    """``--margins`` and ``--safety`` (see the module docstring)."""
    ladder = tokens.ENTER
    names = ("token-match", "token-decay", "token-match-dist", "token-decay-dist")
    try:
        if a.margins:
            trace = generators.zipf(n=8, layers=32, tokens=a.tokens, seed=0)
            small = generators.zipf(n=8, layers=32, tokens=50, seed=0)
            best: dict = {}
            for name in names:
                run(small, name, a.k, True)
            for r in range(a.repeat):
                for lad in ((500.0,), ladder) if r % 2 == 0 else (ladder, (500.0,)):
                    tokens.ENTER = lad
                    for name in names:
                        dt, misses, info = run(trace, name, a.k, True)
                        key = (name, lad)
                        best[key] = min(best.get(key, (float("inf"),))[0], dt), misses, info
            for name in names:
                (d0, m0, i0), (d1, m1, i1) = best[(name, (500.0,))], best[(name, ladder)]
                assert m0 == m1, (name, m0, m1)
                print(f"{name} | (500,) {trace.n_requests / d0 / 1e6:.2f} M/s, bounded "
                      f"{i0['bounded']:,} | {ladder} {trace.n_requests / d1 / 1e6:.2f} M/s, "
                      f"bounded {i1['bounded']:,}, margin used {i1['enter']}")
        if a.safety:
            for first in (float(x) for x in a.first.split(",")):
                tokens.ENTER = (first,)
                failed = total = 0
                for seed in (1, 2):
                    for z in (0.7, 1.2):
                        tr = generators.zipf(n=8, layers=32, tokens=a.tokens, a=z, seed=seed)
                        for k in (20, 100):
                            for name in ("token-match", "token-decay-dist",
                                         "token-match-dist"):
                                failed += run(tr, name, k, True)[2]["redone"]
                                total += 1
                print(f"first margin {first:g}: {failed} of {total} runs with a failed bound")
    finally:
        tokens.ENTER = ladder


if __name__ == "__main__":
    main()
