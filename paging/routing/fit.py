"""Fit the synthetic router model (:func:`paging.generators.router`) to a real top-K trace.

Three statistics of a trace with token, rank (and, for the third, gate score) columns:

``popularity``
    per layer, the share of the top-K slots each expert takes, sorted in decreasing order and
    averaged over layers (a length-n curve summing to 1);
``reuse``
    the share of a token's top-K experts (per layer) that the previous token of the same layer
    also selected (token-to-token persistence);
``gap``
    the median of log(score of rank 0 / score of rank 1): the logit gap z₁ − z₂ between the two
    best experts (softmax weights, renormalised or not, have the same ratio).

:func:`fit_router` grid-searches the model's ``a`` (Zipf exponent), ``rho`` (AR(1)
persistence) and ``sigma`` (logit noise scale) to minimise the squared error of the three
(popularity as the L1 distance of the curves), simulating the model with the trace's n, ℓ, K
and 400 tokens per candidate (seed 0). The constants in
:data:`paging.generators.ROUTER_FIT` come from::

    python -m paging.routing.fit $PAGING_TRACES/mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl
"""

from __future__ import annotations

import itertools
import json
import sys

import numpy as np

from paging.errors import PagingError
from paging.trace import Trace

A_GRID = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5)
RHO_GRID = (0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
SIGMA_GRID = (0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0)


def _table(trace: Trace) -> np.ndarray:
    """``experts[T, ℓ, K]`` of a trace with token and rank columns."""
    if trace.token is None or trace.rank is None:
        raise PagingError(f"trace {trace.name}: fitting needs token and rank columns")
    lay = trace.layout
    T, K = int(trace.token.max()) + 1, int(trace.rank.max()) + 1
    e = np.full((T, lay.n_layers, K), -1, dtype=np.int64)
    e[trace.token, trace.layers, trace.rank] = lay.expert_of(trace.pages)
    return e


def trace_stats(traces) -> dict:
    """The three statistics (module docstring) pooled over ``traces`` (one layout)."""
    pops, reuse, gaps = [], [], []
    for tr in traces:
        e = _table(tr)
        n = tr.layout.n_experts
        T, L, K = e.shape
        for z in range(L):
            c = np.bincount(e[:, z].ravel(), minlength=n).astype(float)
            pops.append(np.sort(c)[::-1] / c.sum())
        if T > 1:
            prev = np.zeros((T, L, n), dtype=bool)
            np.put_along_axis(prev, e, True, axis=2)
            reuse.append(np.take_along_axis(prev[:-1], e[1:], axis=2).mean())
        if tr.score is not None and K > 1:
            s = np.zeros(e.shape)
            s[tr.token, tr.layers, tr.rank] = tr.score
            ok = (s[:, :, 0] > 0) & (s[:, :, 1] > 0)
            gaps.append(np.log(s[:, :, 0][ok] / s[:, :, 1][ok]))
    return {"popularity": np.mean(pops, axis=0),
            "reuse": float(np.mean(reuse)) if reuse else None,
            "gap": float(np.median(np.concatenate(gaps))) if gaps else None}


def fit_router(traces, tokens: int = 400) -> tuple[dict, dict, dict]:
    """``(constants, real statistics, fitted model's statistics)`` by grid search."""
    from paging.generators import router

    traces = list(traces)
    real = trace_stats(traces)
    lay = traces[0].layout
    K = int(traces[0].rank.max()) + 1
    best = None
    for a, rho, sigma in itertools.product(A_GRID, RHO_GRID, SIGMA_GRID):
        sim = trace_stats([router(lay.n_experts, lay.n_layers, tokens, k=K, seed=0, a=a, rho=rho,
                                  sigma=sigma, expand="groups")])
        err = float(np.abs(sim["popularity"] - real["popularity"]).sum()) ** 2
        if real["reuse"] is not None:
            err += (sim["reuse"] - real["reuse"]) ** 2
        if real["gap"] is not None:
            err += ((sim["gap"] - real["gap"]) / max(real["gap"], 1e-9)) ** 2
        if best is None or err < best[0]:
            best = (err, {"a": a, "rho": rho, "sigma": sigma}, sim)
    return best[1], real, best[2]


def main(argv=None) -> int:
    """``python -m paging.routing.fit TRACE``: the fitted constants and the three statistics as
    JSON; bad input is one ``error:`` line and status 2 (:func:`paging.cli.guarded`)."""
    from paging.cli import guarded

    return guarded(_main, sys.argv[1:] if argv is None else argv)


def _main(argv) -> int:
    from paging.io import load

    if len(argv) != 1:
        print("usage: python -m paging.routing.fit TRACE", file=sys.stderr)
        return 2
    consts, real, sim = fit_router(load(argv[0], expand="groups"))

    def show(d):
        return {k: (np.round(v, 3).tolist() if isinstance(v, np.ndarray) else
                    (None if v is None else round(v, 3))) for k, v in d.items()}

    print(json.dumps({"fit": consts, "real": show(real), "model": show(sim)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
