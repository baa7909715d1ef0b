"""Streaming a trace larger than memory (issue 22 item 4): LRU and LLRU at one k, and LRU's
miss curve, on a layered Zipf sequence of ``--requests`` requests, each case in a fresh process
whose peak RSS (``ru_maxrss``: interpreter, numba and the kernels included) is reported with
its wall time. ``--cases`` takes any policy that streams (the list family, LFU, the credit
policies, ARC, LeCaR, Marking, the token policies, the prediction policies with the frequency
predictor; seed 0's draws; belady and belady-dist with ``--file``, whose records hold the
next-access times), ``mrc`` (LRU's curve) and ``mrc:POLICY``, the curve of any of those
policies (one pass for LLRU, LFU, FLD and Least-Stale; one carried run per size k = 1..256 for
the others, on the machine's cores) and ``verify:POLICY``, the policy's run at k checked chunk
by chunk (``paging simulate --stream --verify``).

The sequence is ``zipf:n=8,layers=32,tokens=R/32,a=1,h=0,seed=0`` (Angelopoulos et al.,
Sec. 5.1; the spec ``paging simulate`` reads). Two sources:

* default: generated on the fly a chunk at a time (:func:`paging.generators.zipf_chunks`,
  2^21 requests per chunk, the same requests as the spec loaded whole) — nothing on disk;
* ``--file PATH``: first written chunk by chunk as a libCacheSim oracleGeneral file (24 bytes
  per request, next-access times filled by a backward pass), then streamed from the file
  (``open_chunks``, layered ids); the file is deleted at the end unless ``--keep``. 10^9
  requests take 24 GB: check ``df -h`` first.

``--weighted`` runs the policy cases as weighted paging: page sizes 1..4 units drawn from
``--seed`` (experts at mixed precisions), fetch costs equal to the sizes, and a byte budget of
k times the mean size instead of k pages (:func:`weights`).

``--check`` (sizes up to ~10^7) also runs the in-memory ``simulate``/``miss_curve`` and asserts
equality. A progress bar (tqdm, on stderr when it is a terminal) follows each pass.

    .venv/bin/python benchmarks/bench_stream.py                       # 10^7 requests
    .venv/bin/python benchmarks/bench_stream.py --requests 1000000000 --json
    .venv/bin/python benchmarks/bench_stream.py --requests 100000000 --file /tmp/z.oracleGeneral
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

N_EXPERTS, LAYERS = 8, 32
CASES = ("lru", "llru", "mrc")


def spec(requests: int, seed: int) -> str:
    if requests % LAYERS:
        raise SystemExit(f"--requests must be a multiple of {LAYERS} (one request per layer "
                         "per token)")
    return f"zipf:n={N_EXPERTS},layers={LAYERS},tokens={requests // LAYERS},a=1.0,h=0,seed={seed}"


def write_file(requests: int, seed: int, path: str, progress: bool) -> float:
    """The spec's requests as an oracleGeneral file, a chunk at a time; returns seconds."""
    import numpy as np
    from numba import njit

    from paging import progress as pbar
    from paging.generators import zipf_chunks
    from paging.io.libcachesim import ORACLE_GENERAL

    @njit(cache=False, nogil=True)
    def backward(ids, nxt_seen, start, out):
        # out[i] = 1-based position of the next request of ids[i], -1 if none (libCacheSim's)
        for i in range(ids.size - 1, -1, -1):
            p = ids[i]
            out[i] = nxt_seen[p]
            nxt_seen[p] = start + i + 1

    t0 = time.perf_counter()
    tmp = path + ".part"
    with open(tmp, "wb") as fh, pbar.bar(requests, "write", "req", progress) as bar:
        start = 0
        for pages in zipf_chunks(N_EXPERTS, LAYERS, requests // LAYERS, seed=seed):
            rec = np.zeros(pages.size, dtype=ORACLE_GENERAL)
            rec["time"] = np.arange(start, start + pages.size, dtype=np.uint32)
            rec["obj_id"] = pages
            rec["obj_size"] = 1
            rec.tofile(fh)
            start += pages.size
            bar.update(pages.size)
    # next-access times: one backward pass, a chunk at a time, rewritten in place
    chunk = 1 << 22
    nxt_seen = np.full(N_EXPERTS * LAYERS, -1, dtype=np.int64)
    with open(tmp, "r+b") as fh, pbar.bar(requests, "next access", "req", progress) as bar:
        end = requests
        while end > 0:
            lo = max(0, end - chunk)
            fh.seek(lo * ORACLE_GENERAL.itemsize)
            rec = np.fromfile(fh, dtype=ORACLE_GENERAL, count=end - lo)
            out = np.empty(rec.size, dtype=np.int64)
            backward(rec["obj_id"].astype(np.int64), nxt_seen, lo, out)
            rec["next_access_vtime"] = out
            fh.seek(lo * ORACLE_GENERAL.itemsize)
            rec.tofile(fh)
            bar.update(end - lo)
            end = lo
    os.replace(tmp, path)
    return time.perf_counter() - t0


def weights(seed: int, k: int) -> tuple:
    """``--weighted``: ``(sizes, costs, budget)``, sizes 1..4 per page from ``seed``, costs
    equal to them, the budget k times their mean (rounded)."""
    import numpy as np

    sizes = np.random.default_rng(seed).integers(1, 5, N_EXPERTS * LAYERS)
    return sizes, sizes.astype(float), int(round(k * sizes.mean()))


def run_case(case: str, source: str, k: int, chunk: int, progress: bool,
             weighted: int | None = None) -> dict:
    """One case in this process: wall time and peak RSS (``weighted``: the seed of
    :func:`weights`, or None)."""
    from paging.stream import stream_run

    kw = {"chunk": chunk, "progress": progress}
    budget = None
    curve = case.split(":", 1)[1] if case.startswith("mrc:") else "lru" if case == "mrc" \
        else None
    verify = case.startswith("verify:")
    policy = case.split(":", 1)[1] if verify else case
    if weighted is not None and curve is None:
        sizes, costs, budget = weights(weighted, k)
        kw.update(sizes=sizes, costs=costs)
    if not source.startswith("zipf:"):
        kw.update(n_experts=N_EXPERTS, n_layers=LAYERS)
    t0 = time.perf_counter()
    if curve is not None:
        (out,) = stream_run(source, curves=[curve], **kw)
        m = out.curves[curve]
        value = {"misses_at_k": int(m[k - 1]), "misses_k1_k256": [int(m[0]), int(m[-1])]}
    else:
        runs = ({"budgets": [(policy, budget)]} if budget is not None
                else {"runs": [(policy, k)]})
        (out,) = stream_run(source, **runs, verify=verify, **kw)
        value = {"misses_at_k": out.results[0].misses,
                 "collision_misses": out.results[0].collision_misses}
        if budget is not None:
            value.update(budget=budget, cost=out.results[0].cost)
    wall = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    return {"case": case, "requests": out.requests, "k": k, "chunks": out.chunks,
            "passes": out.passes,
            "wall_s": round(wall, 1), "peak_rss_mb": round(rss / 1e6), **value}


def check(source: str, k: int, rows: list[dict], weighted: int | None = None) -> None:
    from paging import simulate
    from paging.io import load
    from paging.mrc import miss_curve

    kw = {} if source.startswith("zipf:") else {"n_experts": N_EXPERTS, "n_layers": LAYERS}
    (tr,) = load(source, **kw)
    cap = {"k": k}
    if weighted is not None:
        sizes, costs, budget = weights(weighted, k)
        cap = {"budget": budget, "sizes": sizes, "costs": costs}
    for r in rows:
        case = r["case"]
        want = (int(miss_curve(tr, "lru")[k - 1]) if case == "mrc"
                else int(miss_curve(tr, case[4:])[k - 1]) if case.startswith("mrc:")
                else simulate(tr, case.removeprefix("verify:"), **cap).misses)
        assert r["misses_at_k"] == want, (r, want)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=10_000_000)
    ap.add_argument("--k", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--chunk", type=int, default=1 << 22, help="requests per chunk read")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--file", default=None, help="write an oracleGeneral file and stream it")
    ap.add_argument("--keep", action="store_true", help="keep the --file afterwards")
    ap.add_argument("--check", action="store_true", help="compare with the in-memory runs")
    ap.add_argument("--weighted", action="store_true",
                    help="page sizes and costs from --seed, a byte budget of k mean sizes")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)  # a case, in a child
    ap.add_argument("--source", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    progress = None if not a.json else False
    if a.one:
        print(json.dumps(run_case(a.one, a.source, a.k, a.chunk, progress,
                                  a.seed if a.weighted else None)))
        return 0
    source = spec(a.requests, a.seed)
    written = None
    if a.file:
        written = write_file(a.requests, a.seed, a.file, progress)
        source = a.file
    rows = []
    try:
        for case in a.cases.split(","):
            out = subprocess.run([sys.executable, __file__, "--one", case, "--source", source,
                                  "--k", str(a.k), "--chunk", str(a.chunk), "--seed",
                                  str(a.seed), *(["--weighted"] if a.weighted else []),
                                  *(["--json"] if a.json else [])],
                                 stdout=subprocess.PIPE, text=True, check=True)
            rows.append(json.loads(out.stdout))
            if not a.json:
                print(rows[-1], flush=True)
        if a.check:
            check(source, a.k, rows, a.seed if a.weighted else None)
    finally:
        if a.file and not a.keep and os.path.exists(a.file):
            os.remove(a.file)
    doc = {"source": "file" if a.file else "generated", "spec": spec(a.requests, a.seed),
           "write_s": None if written is None else round(written, 1), "rows": rows,
           "checked": a.check}
    if a.json:
        print(json.dumps(doc, indent=1))
    else:
        print("| case | requests | k | wall (s) | peak RSS (MB) | misses at k |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['case']} | {r['requests']:,} | {r['k']} | {r['wall_s']} | "
                  f"{r['peak_rss_mb']:,} | {r['misses_at_k']:,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
