"""paging's compiled kernels and one-pass miss curves against libCacheSim, in one process.

Run (needs the ``bench`` extra: ``pip install -e '.[bench]'``)::

    python benchmarks/bench_vs_libcachesim.py [--json] [--seed S] [--tokens T]
    python benchmarks/bench_vs_libcachesim.py --scale [--json]

The trace is layered Zipf (Angelopoulos et al., Sec. 5.1): n=8 experts, ℓ=32 layers, a=1, h=0,
62,500 tokens = 2,000,000 requests (:func:`paging.generators.zipf`). It is written once as a
libCacheSim oracleGeneral file (:func:`paging.io.write_oracle_general`, object size 1) and both
sides read that file: libCacheSim through its ``TraceReader``, we through ``numpy.fromfile``
(pages from ``obj_id``, Belady's next uses from ``next_access_vtime``). Measured:

1. single-k throughput at k=64 for LRU, FIFO and Belady: libCacheSim's ``process_trace``
   against :func:`paging.fast.run`; trace loading excluded on both sides (libCacheSim reads its
   memory-mapped file inside ``process_trace``, which we cannot separate; the file is read once
   before timing so it is in the page cache); best of 3;
2. the full k = 1..256 LRU and OPT (Belady) curves: a libCacheSim per-k loop (a new cache of k
   objects, ``hashpower=12``, per k) against our one-pass :func:`paging.mrc.miss_curve`;
3. the LLRU one-pass curve against one single-k (k=64) LLRU run;
4. weighted paging: the same trace with object sizes (seeded, 1..100 bytes per page) written
   to a second oracleGeneral file, a byte budget of 64 mean objects; libCacheSim's GDSF
   against our GDSF kernel with cost 10^6 (libCacheSim's constant), best of 3. Miss counts are
   reported, not required equal: the libcachesim 0.3.5 binding's GDSF sometimes neither
   admits a missed object nor evicts (see benchmarks/README.md);
5. the latency timeline's overhead: ``simulate(record="hits")`` + :func:`paging.cost.timeline`
   against a plain ``simulate`` (LRU, mixtral-8x7b int4 preset at k=64, groups are single
   requests on this trace).

Every miss count must agree: libCacheSim's LRU/FIFO/Belady misses equal ours for every k
(``misses = round(miss_ratio · n_req)``, exact for N < 2^53), and the one-pass curves equal
single runs. Cache sizes are in objects: every object has size 1 and the cache holds k bytes
(checked: after a run, ``get_n_obj() == get_occupied_byte() == k``).

``--json`` prints one JSON line last: requests, lru/fifo/belady_throughput_ratio (ours/theirs),
lru_curve_speedup and opt_curve_speedup (their time / ours), llru_curve_vs_single_run (curve
time / single-run time), peak_memory_mb (peak RSS of this process), agree, and the raw times.

``--scale`` instead builds a 100,000,000-request trace of the same distribution and reports the
time and peak memory of the LRU and LLRU one-pass curves (checked against single runs at k=64).

Targets (measured here, never asserted in tests): throughput ≥ 1.0x libCacheSim, LRU curve
≥ 50x faster than the libCacheSim per-k sweep, OPT curve ≥ 20x, LLRU curve within 10x of one
single-k LLRU run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

N_EXPERTS, N_LAYERS, TOKENS, K_SINGLE = 8, 32, 62_500, 64
SCALE_TOKENS = 3_125_000  # 100,000,000 requests
HASHPOWER = 12


def peak_mb() -> float:
    """Peak resident set size of this process so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def best_of(fn, repeat: int):
    """(best wall time, last result) of ``repeat`` calls."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def zipf_trace(tokens: int, seed: int):
    from paging.generators import zipf

    return zipf(n=N_EXPERTS, layers=N_LAYERS, tokens=tokens, a=1.0, h=0.0, seed=seed)


def read_oracle(path: Path):
    """Our side of the shared file: a rounds-mode Trace from ``obj_id`` and the next-use array
    from ``next_access_vtime`` (1-based position of the next request, -1 for none)."""
    from paging.io.libcachesim import ORACLE_GENERAL
    from paging.layout import Layout
    from paging.trace import from_pages

    rec = np.fromfile(path, dtype=ORACLE_GENERAL)
    trace = from_pages(rec["obj_id"].astype(np.int64), Layout(N_EXPERTS, N_LAYERS),
                       name=path.name)
    nv = rec["next_access_vtime"]
    nu = np.where(nv < 0, rec.size, nv - 1).astype(np.int64)
    return trace, nu


class LibCacheSim:
    """libCacheSim's side: one C reader over the oracleGeneral file."""

    def __init__(self, path: Path):
        import libcachesim as lcs

        self.lcs = lcs
        self.reader = lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE,
                                      lcs.ReaderInitParam(ignore_obj_size=False))
        self.classes = {"lru": lcs.LRU, "fifo": lcs.FIFO, "belady": lcs.Belady}

    def cache(self, name: str, k: int):
        return self.classes[name](cache_size=k, hashpower=HASHPOWER)

    def misses(self, cache) -> int:
        self.reader.reset()
        miss_ratio, _ = cache.process_trace(self.reader)
        return int(round(miss_ratio * cache._cache.n_req))

    def curve(self, name: str, ks) -> list[int]:
        return [self.misses(self.cache(name, k)) for k in ks]


def run_main(args) -> dict:
    if args.out is None:  # a temporary file, removed afterwards
        with tempfile.TemporaryDirectory(prefix="paging-bench-") as tmp:
            res = _run_main(args, Path(tmp))
        res["trace_file"] = None
        return res
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    return _run_main(args, out_dir)


def _run_main(args, out_dir: Path) -> dict:
    import libcachesim

    import paging
    from paging import fast
    from paging.commands.common import format_table
    from paging.io import write_oracle_general
    from paging.mrc import miss_curve
    from paging.policies import make_policy

    path = out_dir / f"zipf_n8_l32_t{args.tokens}_s{args.seed}.oracleGeneral"
    gen = zipf_trace(args.tokens, args.seed)
    write_oracle_general(gen, path)
    trace, nu_file = read_oracle(path)
    N, P = trace.n_requests, trace.layout.n_pages
    agree = bool(np.array_equal(trace.pages, gen.pages))
    agree &= bool(np.array_equal(trace.next_use, nu_file))  # Belady's input, as libCacheSim's
    lib = LibCacheSim(path)
    ks = list(range(1, P + 1))

    # warm-up: compile (or load the numba cache), read the file into the page cache
    for name in ("lru", "fifo", "belady", "llru"):
        fast.run(trace.head(1000), make_policy(name), K_SINGLE)
        miss_curve(trace.head(1000), name)
    c = lib.cache("lru", K_SINGLE)
    lib.misses(c)
    sized_in_objects = c.get_n_obj() == K_SINGLE and c.get_occupied_byte() == K_SINGLE
    agree &= bool(sized_in_objects)

    rows = []
    res = {"requests": N, "n_experts": N_EXPERTS, "n_layers": N_LAYERS, "k_single": K_SINGLE,
           "seed": args.seed}
    for name in ("lru", "fifo", "belady"):
        t_lib, m_lib = best_of(lambda n=name: lib.misses(lib.cache(n, K_SINGLE)), args.repeat)
        pol = make_policy(name)
        t_us, r = best_of(lambda p=pol: fast.run(trace, p, K_SINGLE), args.repeat)
        ok = r.misses == m_lib
        agree &= ok
        res[f"{name}_throughput_ratio"] = t_lib / t_us
        res[f"{name}_mreq_s_ours"] = N / t_us / 1e6
        res[f"{name}_mreq_s_libcachesim"] = N / t_lib / 1e6
        rows.append((f"{name} k={K_SINGLE} throughput", f"{N / t_lib / 1e6:.1f} Mreq/s",
                     f"{N / t_us / 1e6:.1f} Mreq/s", f"{t_lib / t_us:.2f}x ours/theirs",
                     f"{r.misses} {'=' if ok else '!='} {m_lib}"))

    for name, key in (("lru", "lru"), ("belady", "opt")):
        # one timed sweep on each side (after the warm-up): libCacheSim's takes tens of seconds
        t_lib, theirs = best_of(lambda n=name: lib.curve(n, ks), 1)
        t_us, ours = best_of(lambda n=name: miss_curve(trace, n), 1)
        ok = ours.tolist() == theirs
        agree &= ok
        res[f"{key}_curve_speedup"] = t_lib / t_us
        res[f"{key}_curve_s_ours"] = t_us
        res[f"{key}_curve_s_libcachesim"] = t_lib
        rows.append((f"{key.upper()} curve k=1..{P}", f"{t_lib:.2f} s", f"{t_us:.3f} s",
                     f"{t_lib / t_us:.0f}x faster", "all k equal" if ok else "DIFFER"))

    rows += weighted_rows(lib.lcs, trace, rec_path(out_dir, path), res, args)
    agree &= res["weighted_agree"]

    pol = make_policy("llru")
    t_single, r = best_of(lambda: fast.run(trace, pol, K_SINGLE), args.repeat)
    t_curve, curve = best_of(lambda: miss_curve(trace, "llru"), args.repeat)
    ok = int(curve[K_SINGLE - 1]) == r.misses
    agree &= ok
    res["llru_curve_vs_single_run"] = t_curve / t_single
    res["llru_curve_s"] = t_curve
    res["llru_single_s"] = t_single
    rows.append((f"LLRU curve vs one k={K_SINGLE} run", f"{t_single:.3f} s (single)",
                 f"{t_curve:.3f} s (curve)", f"{t_curve / t_single:.1f}x a single run",
                 f"k={K_SINGLE}: {int(curve[K_SINGLE - 1])} {'=' if ok else '!='} {r.misses}"))

    res["peak_memory_mb"] = peak_mb()
    res["agree"] = bool(agree)
    res["libcachesim_version"] = getattr(libcachesim, "__version__", "?")
    res["paging_version"] = paging.__version__
    res["cpus"] = os.cpu_count()
    res["load_average"] = os.getloadavg()[0]
    res["python"] = platform.python_version()
    res["trace_file"] = str(path)

    print(f"layered Zipf n={N_EXPERTS} ℓ={N_LAYERS} a=1 seed={args.seed}: {N:,} requests, "
          f"oracleGeneral {path}")
    print(f"libCacheSim {res['libcachesim_version']}, hashpower={HASHPOWER}, object size 1; "
          f"{res['cpus']} CPUs, load average {res['load_average']:.2f}")
    head = ("measurement", "libCacheSim", "paging", "ratio", "miss counts")
    print(format_table([dict(zip(head, r, strict=True)) for r in rows], list(head)))
    print(f"peak memory {res['peak_memory_mb']:.0f} MB; all miss counts agree: {res['agree']}")
    return res


def rec_path(out_dir: Path, path: Path) -> Path:
    return out_dir / (path.stem + "_sized.oracleGeneral")


def weighted_rows(lcs, trace, sized_path: Path, res: dict, args) -> list[tuple]:
    """GDSF with sizes against libCacheSim, and the timeline's overhead (items 4 and 5)."""
    from paging import fast
    from paging.cost import get_hardware, get_model, page_costs, page_sizes
    from paging.cost.timeline import timeline
    from paging.io.libcachesim import oracle_general_records
    from paging.policies import make_policy
    from paging.simulate import simulate

    N, P = trace.n_requests, trace.layout.n_pages
    sizes = np.random.default_rng(args.seed).integers(1, 101, P).astype(np.int64)
    rec = oracle_general_records(trace)
    rec["obj_size"] = sizes[rec["obj_id"].astype(np.int64)]
    rec.tofile(sized_path)
    budget = int(K_SINGLE * sizes.mean())
    reader = lcs.TraceReader(str(sized_path), lcs.TraceType.ORACLE_GENERAL_TRACE,
                             lcs.ReaderInitParam(ignore_obj_size=False))

    def theirs():
        cache = lcs.GDSF(cache_size=budget, hashpower=HASHPOWER)
        reader.reset()
        mr, _ = cache.process_trace(reader)
        return int(round(mr * cache._cache.n_req))

    costs = np.full(P, 1e6)
    pol = make_policy("gdsf")
    fast.run(trace.head(1000), pol, budget=budget, costs=costs, sizes=sizes)
    t_lib, m_lib = best_of(theirs, args.repeat)
    t_us, r = best_of(lambda: fast.run(trace, pol, budget=budget, costs=costs, sizes=sizes),
                      args.repeat)
    res.update(gdsf_throughput_ratio=t_lib / t_us, gdsf_mreq_s_ours=N / t_us / 1e6,
               gdsf_mreq_s_libcachesim=N / t_lib / 1e6, gdsf_misses_ours=r.misses,
               gdsf_misses_libcachesim=m_lib, gdsf_budget_bytes=budget)
    rows = [(f"GDSF budget={budget} B throughput", f"{N / t_lib / 1e6:.1f} Mreq/s",
             f"{N / t_us / 1e6:.1f} Mreq/s", f"{t_lib / t_us:.2f}x ours/theirs",
             f"{r.misses} vs {m_lib} ({(r.misses - m_lib) / m_lib:+.2%})")]
    for name in ("greedy-dual", "landlord", "layered-landlord"):
        p = make_policy(name)
        fast.run(trace.head(1000), p, budget=budget, costs=costs, sizes=sizes)
        t_w, rw = best_of(lambda p=p: fast.run(trace, p, budget=budget, costs=costs,
                                               sizes=sizes), args.repeat)
        res[f"{name}_mreq_s"] = N / t_w / 1e6
        rows.append((f"{name} budget={budget} B", "-", f"{N / t_w / 1e6:.1f} Mreq/s", "-",
                     f"{rw.misses}"))

    m = get_model("mixtral-8x7b")
    hw = get_hardware("link-5gbps")
    msz = page_sizes(m, "int4")
    fetch = page_costs(m, "int4", hw, np.zeros(P, np.int8))
    lru = make_policy("lru")

    def plain():
        return simulate(trace, lru, K_SINGLE, costs=fetch, sizes=msz)

    def timed():
        r = simulate(trace, lru, K_SINGLE, costs=fetch, sizes=msz, record="hits")
        return timeline(trace, r.hit_mask, model=m, precision="int4", hardware=hw,
                        fetch_ms=fetch, sizes=msz)

    timed()
    t_plain, r0 = best_of(plain, args.repeat)
    t_timed, tm = best_of(timed, args.repeat)
    ok = tm.stall_ms > 0 and abs(tm.stall_ms - r0.cost) <= 1e-6 * r0.cost
    res.update(timeline_overhead=t_timed / t_plain, timeline_s=t_timed, plain_run_s=t_plain,
               weighted_agree=bool(ok))
    rows.append((f"LRU k={K_SINGLE} run + timeline", f"{t_plain:.3f} s (plain run)",
                 f"{t_timed:.3f} s (recorded + timeline)", f"{t_timed / t_plain:.2f}x a run",
                 "stall = Σ fetch" if ok else "stall != Σ fetch"))
    return rows


def run_scale(args) -> dict:
    from paging import fast
    from paging.mrc import miss_curve
    from paging.policies import make_policy

    for name in ("lru", "llru"):  # compile / load the numba cache outside the timings
        miss_curve(zipf_trace(100, 0), name)
        fast.run(zipf_trace(100, 0), make_policy(name), K_SINGLE)
    t0 = time.perf_counter()
    trace = zipf_trace(SCALE_TOKENS, args.seed)
    t_gen = time.perf_counter() - t0
    res = {"requests": trace.n_requests, "generate_s": t_gen,
           "trace_memory_mb": (trace.pages.nbytes + trace.steps.nbytes) / 2**20}
    agree = True
    rows = []
    for name in ("lru", "llru"):
        t0 = time.perf_counter()
        curve = miss_curve(trace, name)
        t_curve = time.perf_counter() - t0
        t0 = time.perf_counter()
        single = fast.run(trace, make_policy(name), K_SINGLE).misses
        t_single = time.perf_counter() - t0
        ok = int(curve[K_SINGLE - 1]) == single
        agree &= ok
        res[f"{name}_curve_s"] = t_curve
        res[f"{name}_single_s"] = t_single
        rows.append(f"{name.upper():5s} curve k=1..{trace.layout.n_pages}: {t_curve:7.1f} s   "
                    f"one k={K_SINGLE} run: {t_single:6.1f} s   k={K_SINGLE} misses agree: {ok}")
    res["peak_memory_mb"] = peak_mb()
    res["agree"] = bool(agree)
    res["load_average"] = os.getloadavg()[0]
    print(f"scale: layered Zipf n={N_EXPERTS} ℓ={N_LAYERS}, {trace.n_requests:,} requests "
          f"(generated in {t_gen:.1f} s; pages+steps {res['trace_memory_mb']:.0f} MB)")
    for r in rows:
        print(r)
    print(f"peak memory {res['peak_memory_mb']:.0f} MB (whole process, trace included)")
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON line last")
    ap.add_argument("--scale", action="store_true",
                    help="LRU and LLRU curves on a 100,000,000-request trace instead")
    ap.add_argument("--seed", type=int, default=0, help="trace seed (default 0)")
    ap.add_argument("--tokens", type=int, default=TOKENS,
                    help=f"tokens of the main trace (default {TOKENS}: 2,000,000 requests)")
    ap.add_argument("--repeat", type=int, default=3, help="best of R timings (default 3)")
    ap.add_argument("--out", default=None, help="keep the oracleGeneral file in this directory "
                    "(default: a temporary file, removed afterwards)")
    args = ap.parse_args(argv)
    res = run_scale(args) if args.scale else run_main(args)
    if args.json:
        sys.stdout.write(json.dumps(res) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
