"""Every registered online policy × every phase of the loop, in one run (issue 22, item 5).

On ``zipf(n=8, layers=32, tokens=T, seed=0)`` (T = 62,500: 2M requests, rounds mode, synthetic
gate scores and ranks as in ``bench_specmd.py``), for each policy of ``paging policies`` that
needs no model and no predictor file (the clairvoyant Belady is in, as the offline reference)
and each phase:

* ``plain`` — k = 43 pages;
* ``transition`` — the transition prefetcher (fitted on another seed's 2,000 tokens), top-K 1.5;
* ``fetch-lowest-bit``, ``fetch-priority`` — the precision cascades in a byte budget (4/2/1
  bytes a page, 172 bytes);
* ``drop:rank=1``, ``substitute`` — the other miss handlers;
* ``timeline`` — ``RunSpec(policy, budget=8 GB, model="mixtral-8x7b", precision="int4")``:
  the cost model's weights, the run and the latency timeline (:func:`paging.run.run`);
* ``routing`` — ``pruning:j=1`` (compiled for every built-in online policy,
  ``bench_routing.py``), on a top-2 trace of as many requests in groups mode
  (``load("zipf:...,topk=2", expand="groups")``: routing reads the (token, layer) groups);
* ``algorithm-1`` — SpecMD's three phases together on that trace: ``max-rank:j=1`` (a hook
  that reads the cache, so each group is routed in the kernel), ``drop:rank=1`` on the
  routed ranks and the ``frequency`` prefetcher (top-K).

A warm run is one run of the same kernel over the sequences joined (:mod:`paging.warm`), and a
serving step is a pinned group of the same kernel (``bench_serve.py``), so neither is a column.

A cell is timed ``--repeat`` times with ``engine="fast"`` on the whole trace, when the kernel
takes the run (default 3, the best kept: the first repeat also computes what the trace caches,
such as Belady's next uses, which libCacheSim reads from the oracleGeneral file), and once with
``engine="reference"`` on the first ``--prefix`` requests (default 20,000); the kernel's result
on that prefix is compared with the reference's (every field) and a cell whose results differ
is marked. When the kernel refuses the run, the cell says "ref." with the reference's rate.
With ``libcachesim`` installed (the ``bench`` extra), LRU, FIFO, LFU, ARC, LeCaR, GDSF and
Belady are also timed in libCacheSim on the same requests (an oracleGeneral file, k = 43
objects of size 1; GDSF with its own constant cost; the best of ``--repeat`` runs, each on a
new cache) and their miss counts printed
beside ours. Measured, never asserted; numbers in ``benchmarks/README.md``.

Run: ``python benchmarks/bench_matrix.py [--tokens T] [--prefix N] [--policy P ...]
[--phase NAME ...] [--repeat R] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_specmd import K, configurations, with_scores  # noqa: E402

from paging import generators  # noqa: E402
from paging.errors import PagingError  # noqa: E402
from paging.policies import make_policy, policy_names  # noqa: E402
from paging.run import RunSpec, run  # noqa: E402
from paging.simulate import simulate  # noqa: E402

PHASES = {  # column -> configuration of bench_specmd (None: the column's own recipe)
    "plain": "no phases (plain kernel)",
    "transition": "+ transition topk:1.5",
    "fetch-lowest-bit": "+ fetch-lowest-bit (bf16/int8)",
    "fetch-priority": "+ fetch-priority (bf16/int8/int4)",
    "drop:rank=1": "+ drop:rank=1",
    "substitute": "+ substitute",
    "timeline": None,
    "routing": None,
    "algorithm-1": None,
}
LIBCACHESIM = {"lru": "LRU", "fifo": "FIFO", "lfu": "LFU", "arc": "ARC", "lecar": "LeCaR",
               "gdsf": "GDSF", "belady": "Belady"}


def policies() -> list[str]:
    out = []
    for name in policy_names():
        pol = make_policy(name)
        if getattr(pol, "needs_model", False):
            continue  # a model file of the layout (flashmoe: bench_learned.py)
        out.append(name)
    return out


def _kw(phase: str, confs) -> dict | None:
    key = PHASES[phase]
    return None if key is None else confs[key]()


def timed(tr, policy: str, phase: str, confs, engine: str):
    """``(seconds, result dict)`` of one cell; PagingError when the engine refuses it."""
    t0 = time.perf_counter()
    if phase == "timeline":
        spec = RunSpec(policy, budget=8_000_000_000, model="mixtral-8x7b", precision="int4",
                       engine=engine)
        (row,) = run(spec, [tr])
        return time.perf_counter() - t0, row
    if phase == "routing":
        r = simulate(_routed(tr.n_requests), policy, K, routing="pruning:j=1", engine=engine)
        return time.perf_counter() - t0, r.to_dict()
    if phase == "algorithm-1":
        from paging.predict.prefetch import Prefetcher, make_prefetch_predictor, make_strategy

        r = simulate(_routed(tr.n_requests), policy, K, routing="max-rank:j=1",
                     miss="drop:rank=1", engine=engine,
                     prefetch=Prefetcher(make_prefetch_predictor("frequency"),
                                         make_strategy(None)))
        return time.perf_counter() - t0, r.to_dict()
    kw = _kw(phase, confs)
    k = kw.pop("k", None)
    r = simulate(tr, policy, k, engine=engine, **kw)
    return time.perf_counter() - t0, r.to_dict()


@functools.cache
def _routed(n_requests: int):
    """A top-2 groups-mode trace of ``n_requests`` requests (32 layers, 8 experts)."""
    from paging.io import load

    (tr,) = load(f"zipf:n=8,layers=32,tokens={-(-n_requests // 64)},topk=2,seed=0",
                 expand="groups")
    return tr.head(n_requests)


def libcachesim_rows(tr, k: int, repeat: int = 1) -> dict:
    """``{policy: (req/s, misses)}`` of libCacheSim on ``tr``'s pages (empty without it), the
    best of ``repeat`` runs, each on a new cache."""
    try:
        import libcachesim as lcs
    except ImportError:
        return {}
    from paging.io import write_oracle_general

    out = {}
    with tempfile.TemporaryDirectory(prefix="paging-matrix-") as tmp:
        path = Path(tmp) / "t.oracleGeneral"
        write_oracle_general(tr, path)
        reader = lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE,
                                 lcs.ReaderInitParam(ignore_obj_size=False))
        for ours, theirs in LIBCACHESIM.items():
            cls = getattr(lcs, theirs, None)
            if cls is None:
                continue
            best = None
            for _ in range(max(repeat, 1)):
                cache = cls(cache_size=k, hashpower=12)
                reader.reset()
                t0 = time.perf_counter()
                ratio, _ = cache.process_trace(reader)
                dt = time.perf_counter() - t0
                if best is None or dt < best[0]:
                    best = (dt, int(round(ratio * cache._cache.n_req)))
            out[ours] = (tr.n_requests / best[0], best[1])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=62_500)
    ap.add_argument("--prefix", type=int, default=20_000)
    ap.add_argument("--policy", action="append", default=None)
    ap.add_argument("--phase", action="append", default=None, choices=list(PHASES))
    ap.add_argument("--repeat", type=int, default=3,
                    help="time each kernel cell (and libCacheSim) this many times, keep the best")
    ap.add_argument("--json", default=None, metavar="FILE", help="write the cells as JSON")
    a = ap.parse_args()
    tr = with_scores(generators.zipf(n=8, layers=32, tokens=a.tokens, seed=0))
    head = tr.head(min(a.prefix, tr.n_requests))
    small = with_scores(generators.zipf(n=8, layers=32, tokens=40, seed=0))
    confs = configurations(generators.zipf(n=8, layers=32, tokens=2000, seed=1))
    names = a.policy or policies()
    phases = a.phase or list(PHASES)
    cells = []
    print(f"{tr.n_requests:,} requests, k={K}; reference on the first {head.n_requests:,}; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}", flush=True)
    for name in names:
        line = [name]
        for phase in phases:
            cell = {"policy": name, "phase": phase}
            try:
                timed(small, name, phase, confs, "fast")  # compile (or load the cache)
                dk, rk = min((timed(tr, name, phase, confs, "fast") for _ in range(a.repeat)),
                             key=lambda x: x[0])
                cell.update(kernel_req_s=tr.n_requests / dk, misses=rk["misses"])
            except PagingError as e:
                cell["refused"] = str(e)
            try:
                dr, rr = timed(head, name, phase, confs, "reference")
            except PagingError as e:  # the phase does not apply to this policy
                cell["error"] = str(e)
                line.append("n/a")
                cells.append(cell)
                continue
            cell["reference_req_s"] = head.n_requests / dr
            if "kernel_req_s" in cell:
                _, rh = timed(head, name, phase, confs, "fast")
                cell["equal_on_prefix"] = rh == rr
                mark = "" if cell["equal_on_prefix"] else " DIFFER"
                kr, rr_ = cell["kernel_req_s"], cell["reference_req_s"]
                line.append(f"{kr / 1e6:.2f}M ({kr / rr_:.0f}x){mark}")
            else:
                line.append(f"ref. {cell['reference_req_s'] / 1e3:.1f}k")
            cells.append(cell)
        print(" | ".join(line), flush=True)
    lib = libcachesim_rows(tr, K, a.repeat) if "plain" in phases else {}
    if lib:
        print(f"libCacheSim on the same {tr.n_requests:,} requests, k={K} objects:")
    for name, (rate, misses) in lib.items():
        ours = next((c for c in cells if c["policy"] == name and c["phase"] == "plain"), None)
        if ours is None:
            continue
        ours.update(libcachesim_req_s=rate, libcachesim_misses=misses)
        if "misses" not in ours:  # no kernel: the reference loop's misses on the whole trace
            ours["misses"] = simulate(tr, name, K, engine="reference").misses
        kr = ours.get("kernel_req_s")
        print(f"libCacheSim {LIBCACHESIM[name]}: {rate / 1e6:.2f}M req/s, {misses:,} misses; "
              f"ours {'' if kr is None else f'{kr / 1e6:.2f}M req/s, '}"
              f"{ours.get('misses', '?')} misses", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(cells, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
