"""Compiled simulation kernels for the built-in policies (numba, ``nogil``).

:func:`run` replays a trace under a built-in policy and returns the same
:class:`~paging.simulate.Result` as the reference loop :func:`paging.simulate.simulate` with
``engine="reference"`` — misses, per-layer misses, collision misses, bypasses and, with
``record=True``, the hit mask, the eviction log (same rows, same order) and the bypassed
requests, in rounds and groups mode. ``tests/property/test_kernels.py`` checks this equality on
random traces for every policy below.

Built in (exact types only: a subclass may change any hook, so it runs in the reference loop):
LRU, FIFO, FWF, LLRU, FLD, Least-Stale (:mod:`paging.fast.lists`), LFU, Belady
(:mod:`paging.fast.heaps`), Marking (:mod:`paging.fast.marking`) and :class:`PerLayer` around
any of these classes (the ``-dist`` variants).

Costs per request (N requests, cache k, ℓ layers, groups of K): LRU, FIFO O(1) (O(K) with
pinning); LLRU, FLD, Least-Stale O(1) per hit and O(ℓ) per miss; FWF O(1) amortized; LFU,
Belady O(log k); Marking O(log nℓ) plus O(nℓ log nℓ) per phase.
"""

from __future__ import annotations

import numpy as np

from paging.fast.heaps import heap_kernel
from paging.fast.lists import list_kernel
from paging.fast.marking import marking_kernel

__all__ = ["run", "plan", "has_kernel", "run_misses", "marking_draws", "needs_next_use"]

# family, kind of the base policies (keys: the policy classes, filled lazily to avoid a cycle)
_LIST, _HEAP, _MARK = "list", "heap", "marking"
_PLANS: dict[type, tuple[str, int]] = {}


def _plans() -> dict[type, tuple[str, int]]:
    if not _PLANS:
        from paging.fast import heaps, lists
        from paging.offline.belady import Belady
        from paging.policies.classic import FIFO, FWF, LFU, LRU, Marking
        from paging.policies.layered import FLD, LLRU, LeastStale

        _PLANS.update({
            LRU: (_LIST, lists.LRU), FIFO: (_LIST, lists.FIFO), FWF: (_LIST, lists.FWF),
            LLRU: (_LIST, lists.LLRU), FLD: (_LIST, lists.FLD),
            LeastStale: (_LIST, lists.LEAST_STALE),
            LFU: (_HEAP, heaps.LFU), Belady: (_HEAP, heaps.BELADY), Marking: (_MARK, 0),
        })
    return _PLANS


def plan(policy) -> tuple[str, int, bool] | None:
    """``(family, kind, dist)`` of the kernel that reproduces ``policy``, or None.

    Exact type checks: a subclass of a built-in policy may override any hook, so it has no
    kernel. ``PerLayer`` qualifies when its factory builds an exact built-in class; LLRU, FLD
    and Least-Stale then evict as LRU inside a layer (:mod:`paging.fast.lists`).
    """
    from paging.fast import lists
    from paging.policies.dist import PerLayer

    plans = _plans()
    if type(policy) is PerLayer:
        proto = policy.factory()
        found = plans.get(type(proto))
        if found is None:
            return None
        family, kind = found
        if family == _LIST and kind >= lists.LLRU:
            kind = lists.LRU
        return family, kind, True
    found = plans.get(type(policy))
    if found is None:
        return None
    return found[0], found[1], False


def has_kernel(policy) -> bool:
    """Whether :func:`run` reproduces ``policy`` (see :func:`plan`)."""
    return plan(policy) is not None


def marking_draws(seed, n: int) -> np.ndarray:
    """The uniform draws of a Marking run: ``default_rng(seed).random(n)``, the same doubles the
    reference draws one eviction at a time."""
    return np.random.default_rng(seed).random(max(int(n), 1))


def _caps(layout, k: int, dist: bool) -> np.ndarray:
    if dist:
        return layout.dist_shares(k)
    return np.array([k], dtype=np.int64)


def _execute(pages, steps, next_use, layout, k, spec, draws, record):
    family, kind, dist = spec
    caps = _caps(layout, k, dist)
    n, L = layout.n_experts, layout.n_layers
    if family == _LIST:
        return list_kernel(pages, steps, n, L, caps, dist, kind, record)
    if family == _HEAP:
        return heap_kernel(pages, steps, next_use, n, L, caps, dist, kind, record)
    return marking_kernel(pages, steps, n, L, caps, dist, draws, record)


def needs_next_use(spec) -> bool:
    """Whether the kernel of ``spec`` reads next-use times (Belady and Belady-DIST)."""
    from paging.fast import heaps

    return spec[0] == _HEAP and spec[1] == heaps.BELADY


def _no_next_use() -> np.ndarray:
    a = np.zeros(0, dtype=np.int64)
    a.setflags(write=False)
    return a


def run(trace, policy, k: int, *, seed: int | None = 0, record: bool = False):
    """Replay ``trace`` under ``policy`` with a cache of ``k`` pages in a compiled kernel.

    Parameters
    ----------
    trace : Trace
        Rounds or groups mode; groups are pinned while served, as in the reference loop.
    policy : Policy
        A built-in policy instance (:func:`plan`); anything else returns None.
    k : int
        Cache size, already validated (:func:`paging.errors.check_k`).
    seed : int or None
        Seeds ``numpy.random.default_rng``; Marking pre-draws ``rng.random(N)`` and consumes the
        draws in eviction order, the same doubles as the reference's one-at-a-time draws.
    record : bool
        Also return the hit mask, the eviction log and the bypassed requests.

    Returns
    -------
    Result or None
        Exactly what ``simulate(trace, policy, k, seed=seed, record=record,
        engine="reference")`` returns (every field), or None when ``policy`` has no kernel.

    Cost: see the module docstring (O(1) per request for LRU and FIFO in rounds mode, O(log k)
    for Belady and LFU), plus O(N) for ``trace.next_use`` on a first Belady run.
    """
    from paging.simulate import Result

    spec = plan(policy)
    if spec is None:
        return None
    nu = trace.next_use if needs_next_use(spec) else _no_next_use()
    draws = marking_draws(seed, trace.n_requests) if spec[0] == _MARK else None
    out = _execute(trace.pages, trace.steps, nu, trace.layout, int(k), spec, draws, record)
    misses, coll, per_layer, hit_mask, ev, n_ev, byp, n_byp = out
    return Result(
        policy=policy.name, k=int(k), trace=trace.name, requests=trace.n_requests,
        misses=int(misses), per_layer_misses=per_layer, collision_misses=int(coll),
        bypasses=int(n_byp), seed=seed, dist=spec[2],
        hit_mask=hit_mask if record else None,
        evictions=ev[:n_ev].copy() if record else None,
        bypassed=byp[:n_byp].copy() if record else None,
    )


def run_misses(trace, spec, k: int, *, draws=None, next_use=None) -> int:
    """Total misses of one run for a kernel ``spec`` (:func:`plan`), no Result built: the inner
    step of per-k miss-curve sweeps (:mod:`paging.mrc`). Releases the GIL while it runs."""
    if next_use is None:
        next_use = trace.next_use if needs_next_use(spec) else _no_next_use()
    return int(_execute(trace.pages, trace.steps, next_use, trace.layout, int(k), spec, draws,
                        False)[0])
