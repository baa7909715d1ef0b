"""ARC and LeCaR: the compiled kernels (paging.fast.adaptive) against the reference loop and
against libCacheSim's ARC and LeCaR, in one process (issue 22, item 2).

Run (needs the ``bench`` extra for libCacheSim: ``pip install -e '.[bench]'``)::

    python benchmarks/bench_adaptive.py [--json] [--k 64 --k 32 --k 128] [--prefix 200000]

The trace is the one of ``bench_vs_libcachesim.py``: layered Zipf n=8, ℓ=32, a=1, h=0, seed 0,
62,500 tokens = 2,000,000 requests, written once as an oracleGeneral file (object size 1) that
libCacheSim reads; we run the generated trace (whose pages are the file's, checked). Measured,
for ``arc``, ``lecar``, ``arc-dist`` and ``lecar-dist`` at each k:

1. the kernel (:func:`paging.fast.run`) on the whole trace, best of ``--repeat``;
2. the reference loop (``simulate(..., engine="reference")``, nothing recorded) on the first
   ``--prefix`` requests (one run; the whole trace would take tens of seconds per run),
   reported as requests per second; then a recorded reference run on the same prefix is
   compared with the kernel's field by field (misses, per-layer misses, hit mask, eviction
   log);
3. libCacheSim's ``ARC`` and ``LeCaR`` (``process_trace`` over the file, trace reading inside
   its timing as in ``bench_vs_libcachesim.py``), best of ``--repeat``, with their misses.

ARC is deterministic and follows libCacheSim's ARC.c (paging/policies/adaptive.py): the miss
counts must be equal. LeCaR is randomized and the two draw differently (libCacheSim:
``(next_rand() % 100) / 100`` from the process-wide MMIX linear congruential generator, which
its other uses and earlier runs advance; we: ``rng.random()`` from the run's seeded numpy
generator), so only distributions compare: ours over ``--seeds`` seeds (min, mean, max) against
each of libCacheSim's repeats. ``--json`` prints one JSON line last.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_vs_libcachesim import N_EXPERTS, N_LAYERS, TOKENS, best_of, peak_mb, zipf_trace  # noqa: E402

POLICIES = ("arc", "lecar", "arc-dist", "lecar-dist")
LIBCACHESIM = {"arc": "ARC", "lecar": "LeCaR"}


def _same(a, b) -> bool:
    return (a.misses == b.misses and a.bypasses == b.bypasses
            and np.array_equal(a.per_layer_misses, b.per_layer_misses)
            and np.array_equal(a.hit_mask, b.hit_mask)
            and np.array_equal(a.evictions, b.evictions))


def run(args) -> dict:
    import libcachesim as lcs

    import paging
    from paging import fast
    from paging.commands.common import format_table
    from paging.io import write_oracle_general
    from paging.io.libcachesim import ORACLE_GENERAL
    from paging.policies import make_policy
    from paging.simulate import simulate

    if not all(fast.has_kernel(make_policy(name)) for name in POLICIES):
        raise SystemExit(f"{paging.__file__}: this paging has no ARC/LeCaR kernels")
    trace = zipf_trace(args.tokens, args.seed)
    N = trace.n_requests
    prefix = trace.head(min(args.prefix, N))
    res: dict = {"requests": N, "prefix_requests": prefix.n_requests, "ks": args.k,
                 "seed": args.seed, "repeat": args.repeat, "lecar_seeds": args.seeds}
    agree = True
    with tempfile.TemporaryDirectory(prefix="paging-bench-") as tmp:
        path = Path(tmp) / "zipf.oracleGeneral"
        write_oracle_general(trace, path)
        rec = np.fromfile(path, dtype=ORACLE_GENERAL)
        agree &= bool(np.array_equal(rec["obj_id"].astype(np.int64), trace.pages))
        reader = lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE,
                                 lcs.ReaderInitParam(ignore_obj_size=False))

        def theirs(cls, k):
            cache = cls(cache_size=k, hashpower=12)
            reader.reset()
            mr, _ = cache.process_trace(reader)
            return int(round(mr * cache._cache.n_req))

        for name in POLICIES:  # compile (or load numba's cache) outside the timings
            fast.run(trace.head(1000), make_policy(name), 64, seed=0)
        theirs(lcs.ARC, 64)

        rows = []
        for k in args.k:
            for name in POLICIES:
                key = f"{name}_k{k}"
                pol = make_policy(name)
                t_k, r = best_of(lambda p=pol, k=k: fast.run(trace, p, k, seed=0), args.repeat)
                t0 = time.perf_counter()
                simulate(prefix, make_policy(name), k, seed=0, engine="reference")
                t_ref = time.perf_counter() - t0
                ref = simulate(prefix, make_policy(name), k, seed=0, record=True,
                               engine="reference")
                got = simulate(prefix, make_policy(name), k, seed=0, record=True, engine="fast")
                ok = _same(ref, got)
                agree &= ok
                kern, refr = N / t_k, prefix.n_requests / t_ref
                res[key] = {"kernel_mreq_s": kern / 1e6, "kernel_s": t_k, "misses": r.misses,
                            "reference_req_s": refr, "reference_s": t_ref,
                            "speedup_vs_reference": kern / refr, "prefix_equal": ok}
                lib_rate = lib_miss = "-"
                ratio = "-"
                counts = f"{r.misses:,}"
                if name.startswith("lecar"):
                    ours = [fast.run(trace, pol, k, seed=s).misses for s in range(args.seeds)]
                    res[key]["misses_over_seeds"] = ours
                    counts = f"{min(ours):,}–{max(ours):,} ({args.seeds} seeds)"
                if name in LIBCACHESIM:
                    cls = getattr(lcs, LIBCACHESIM[name])
                    times, lib = [], []
                    for _ in range(args.repeat):
                        t0 = time.perf_counter()
                        lib.append(theirs(cls, k))
                        times.append(time.perf_counter() - t0)
                    t_lib = min(times)
                    res[key].update(libcachesim_mreq_s=N / t_lib / 1e6, libcachesim_s=t_lib,
                                    libcachesim_misses=lib,
                                    ratio_vs_libcachesim=t_lib / t_k)
                    lib_rate = f"{N / t_lib / 1e6:.1f} Mreq/s"
                    ratio = f"{t_lib / t_k:.1f}x"
                    lib_miss = ", ".join(f"{m:,}" for m in sorted(set(lib)))
                    if name == "arc":
                        same = all(m == r.misses for m in lib)
                        agree &= same
                        res[key]["equal_to_libcachesim"] = same
                        lib_miss += " (=)" if same else " (DIFFER)"
                rows.append((name, str(k), f"{kern / 1e6:.1f} Mreq/s",
                             f"{refr / 1e3:.0f}k req/s", f"{kern / refr:.0f}x"
                             + ("" if ok else " DIFFER"), lib_rate, ratio, counts, lib_miss))

    res["agree"] = bool(agree)
    res["peak_memory_mb"] = peak_mb()
    res["libcachesim_version"] = getattr(lcs, "__version__", "?")
    res["paging_version"] = paging.__version__
    res["cpus"] = os.cpu_count()
    res["load_average"] = os.getloadavg()[0]
    res["python"] = platform.python_version()
    print(f"layered Zipf n={N_EXPERTS} ℓ={N_LAYERS} a=1 h=0 seed={args.seed}: {N:,} requests; "
          f"reference loop on the first {prefix.n_requests:,}; libCacheSim "
          f"{res['libcachesim_version']}; {res['cpus']} CPUs, load average "
          f"{res['load_average']:.2f}")
    head = ("policy", "k", "kernel", "reference", "kernel/ref", "libCacheSim", "ours/theirs",
            "misses (ours)", "misses (libCacheSim)")
    print(format_table([dict(zip(head, r, strict=True)) for r in rows], list(head)))
    print(f"kernel == reference on the prefix and ARC == libCacheSim: {res['agree']}")
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON line last")
    ap.add_argument("--k", type=int, action="append", default=None,
                    help="cache size (repeatable; default 64, 32, 128)")
    ap.add_argument("--prefix", type=int, default=200_000,
                    help="requests the reference loop runs (default 200,000)")
    ap.add_argument("--seed", type=int, default=0, help="trace seed (default 0)")
    ap.add_argument("--tokens", type=int, default=TOKENS,
                    help=f"tokens of the trace (default {TOKENS}: 2,000,000 requests)")
    ap.add_argument("--repeat", type=int, default=3, help="best of R timings (default 3)")
    ap.add_argument("--seeds", type=int, default=5,
                    help="LeCaR seeds for our miss-count range (default 5)")
    args = ap.parse_args(argv)
    args.k = args.k or [64, 32, 128]
    res = run(args)
    if args.json:
        sys.stdout.write(json.dumps(res) + "\n")
    return 0 if res["agree"] else 1  # (as bench_predictive.py: a disagreement is a failure)


if __name__ == "__main__":
    sys.exit(main())
