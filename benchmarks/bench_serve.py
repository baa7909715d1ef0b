"""A simulated hour of serving (issue 23, "Done when"): Mixtral int4 on pcie4 at 8 GB, Poisson
arrivals at 1 request/s for 3,600 s, requests resampled from the Mixtral decode logs and the
prefill+decode dump, continuous batching (max batch 16, 512 tokens per step).

For each policy: the wall time of the serving run (what ``paging.serve.serve`` does, the
offline bound left out and timed apart: Belady on the produced stream and its replay), the
engine's rates (simulated requests, tokens, steps and expert requests per wall second) and the
run's p99 TPOT. ``--prefetch``, ``--miss``, ``--routing`` and ``--engine`` are ``paging
serve``'s (the compiled serving cache, ``--engine auto``, or the reference loop;
``summary["engine"]`` says which ran). Measured, never asserted; numbers in
``benchmarks/README.md``.

Run: ``PAGING_TRACES=../shared/traces python benchmarks/bench_serve.py [--duration S]
[--rate R] [--policy P ...] [--prefetch SPEC] [--miss SPEC] [--routing SPEC] [--engine E]
[--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path

from paging.cost import budget_bytes
from paging.io import load
from paging.run import RunSpec
from paging.serve import Arrivals, ServeSpec
from paging.serve.engine import _Server

FILES = ("mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl",
         "mixtral-8x7b-instruct-vllm/humaneval_p0_prefill_decode_raw.jsonl")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=3600.0)
    ap.add_argument("--rate", type=float, default=1.0)
    ap.add_argument("--budget-gb", type=float, default=8.0)
    ap.add_argument("--policy", action="append", default=None)
    ap.add_argument("--prefetch", default=None)
    ap.add_argument("--miss", default=None)
    ap.add_argument("--routing", default=None)
    ap.add_argument("--engine", default="auto", choices=("auto", "fast", "reference"))
    ap.add_argument("--json", default=None, metavar="FILE")
    a = ap.parse_args()
    root = os.environ.get("PAGING_TRACES")
    if not root:
        raise SystemExit("set PAGING_TRACES to the directory of the routing traces")
    traces = [t for f in FILES for t in load(Path(root) / f, expand="groups")]
    policies = a.policy or ["lru", "llru", "least-stale", "lfu", "token-match"]
    out = []
    print(f"{a.duration:g} s of Poisson arrivals at {a.rate:g}/s, Mixtral int4, pcie4, "
          f"{a.budget_gb:g} GB, max batch 16, 512 tokens/step, prefetch {a.prefetch}, miss "
          f"{a.miss}, routing {a.routing}, engine {a.engine}; {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    for name in policies:
        spec = RunSpec(name, budget=budget_bytes(a.budget_gb), model="mixtral-8x7b",
                       precision="int4", hardware="pcie4", prefetch=a.prefetch, miss=a.miss,
                       routing=a.routing, engine=a.engine)
        ss = ServeSpec(Arrivals(rate=a.rate, duration=a.duration), max_batch=16,
                       max_tokens=512, bound=False)
        t0 = time.perf_counter()
        server = _Server(spec, ss, traces)  # what serve() does, keeping the server
        server.run(False)
        res = server.result()
        run_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        bound = server.bound(res)  # the offline reference, timed apart
        bound_s = time.perf_counter() - t1
        s = res.summary
        tokens = sum(res.steps["tokens"])
        row = {"policy": name, "prefetch": a.prefetch, "miss": a.miss, "routing": a.routing,
               "engine": s["engine"], "requests": s["requests"],
               "completed": s["completed"], "steps": s["steps"],
               "expert_requests": s["expert_requests"], "tokens": tokens,
               "wall_s": run_s, "bound_wall_s": bound_s,
               "simulated_s": s["makespan_ms"] / 1e3,
               "requests_per_wall_s": s["requests"] / run_s,
               "tokens_per_wall_s": tokens / run_s,
               "expert_requests_per_wall_s": s["expert_requests"] / run_s,
               "miss_ratio": s["miss_ratio"], "p99_tpot_ms": s["p99_tpot_ms"],
               "opt_misses": bound["opt_misses"]}
        out.append(row)
        print(f"{name:12s} {s['engine']:9s} {s['requests']:5d} requests, {s['steps']:6d} steps, "
              f"{s['expert_requests']:9,d} expert requests: {run_s:7.1f} s "
              f"({row['requests_per_wall_s']:.0f} req/s, {row['tokens_per_wall_s']:,.0f} "
              f"tok/s, {row['expert_requests_per_wall_s'] / 1e6:.2f} M expert req/s); "
              f"bound {bound_s:.1f} s; simulated {row['simulated_s']:,.0f} s; miss ratio "
              f"{s['miss_ratio']:.3f}, p99 TPOT {s['p99_tpot_ms']:.0f} ms", flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory {peak:.0f} MB")
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
