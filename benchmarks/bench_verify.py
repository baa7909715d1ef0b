"""The verifier (``paging.verify.verify``) against its Python replay alone (``_Replay.piece``, the
specification, which ``verify`` calls only to name a fault the compiled replay found), on
recorded runs of a layered Zipf trace: LRU and FIFO-DIST at k = 64 on
``zipf:n=8,layers=32,tokens=R/32,a=1.0,h=0,seed=0`` (rounds), and LRU with the ``frequency``
prefetcher (top-K) and ``drop:rank=1`` on ``zipf:n=8,layers=32,tokens=T,seed=0,topk=2`` in
groups mode with gate scores 0.7 / 0.3. Each case: ``verify`` once to compile, then timed;
then the Python replay of the same logs, timed once.

    .venv/bin/python benchmarks/bench_verify.py                 # 10^7 requests, T = 100000
    .venv/bin/python benchmarks/bench_verify.py --requests 1000000 --tokens 10000
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _cases(requests: int, tokens: int):
    from paging import simulate
    from paging.generators import zipf
    from paging.predict.prefetch import Prefetcher, make_prefetch_predictor, make_strategy
    from paging.trace import Trace

    tr = zipf(8, 32, requests // 32, a=1.0, h=0.0, seed=0)
    for pol in ("lru", "fifo-dist"):
        yield f"{pol} k=64, {tr.n_requests:,} requests", tr, simulate(tr, pol, 64, record=True)
    g = zipf(8, 32, tokens, seed=0, topk=2, expand="groups")
    g = Trace(g.layout, g.pages, g.steps, g.name, g.token, g.rank,
              np.where(g.rank == 0, 0.7, 0.3), g.expand, g.meta)
    pf = Prefetcher(make_prefetch_predictor("frequency"), make_strategy("topk:overfetch=1"))
    yield (f"lru k=64 + frequency prefetch + drop:rank=1, {g.n_requests:,} requests", g,
           simulate(g, "lru", 64, record=True, miss="drop:rank=1", prefetch=pf))


def _python_replay(tr, res) -> float:
    from paging.verify import _by_time, _Replay

    def fail(msg):
        raise AssertionError(msg)

    evs = res.events or {}
    rep = _Replay(tr.layout, res.capacity, res.dist, res.budget, None, fail)
    t0 = time.perf_counter()
    rep.piece(tr.pages, tr.steps, np.asarray(res.hit_mask),
              _by_time(np.asarray(res.evictions).reshape(-1, 2)),
              set(np.asarray(res.bypassed).tolist()),
              dropped=set(np.asarray(evs.get("dropped", []), np.int64).tolist()),
              subst={int(t): int(q) for t, q in np.asarray(
                  evs.get("substituted", np.zeros((0, 2))), np.int64).reshape(-1, 2)},
              pf_ins=_by_time(evs.get("prefetched")),
              pf_out=_by_time(evs.get("prefetch_evictions")))
    return time.perf_counter() - t0


def main() -> int:
    from paging.verify import verify

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=10_000_000)
    ap.add_argument("--tokens", type=int, default=100_000)
    a = ap.parse_args()
    print("| run | verify() | the Python replay alone |")
    print("|---|---|---|")
    for name, tr, res in _cases(a.requests, a.tokens):
        verify(tr, res)  # (compiles)
        t0 = time.perf_counter()
        verify(tr, res)
        fast = time.perf_counter() - t0
        print(f"| {name} | {fast:.2f} s | {_python_replay(tr, res):.2f} s |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
