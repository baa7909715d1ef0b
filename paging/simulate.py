"""THE reference simulator: one loop for every policy.

``simulate(trace, policy, k)`` replays ``trace`` from an empty cache of ``k`` pages. Every policy,
online or offline, shared or per-layer (DIST), runs through the same loop below; the compiled
kernels of :mod:`paging.fast` must reproduce it exactly and are used automatically for built-in
policies (``engine="auto"``).

Rules the loop enforces (and :func:`paging.verify.verify` checks independently):

* demand paging: a page enters the cache only when it is requested and missing; evictions
  happen only on a miss whose partition is full;
* partitions: one shared cache of k pages, or (DIST) layer z holds at most ``k//ℓ`` pages plus
  one for the first ``k mod ℓ`` layers;
* groups (``expand="groups"``): the pages of the current (token, layer) group are pinned while
  it is served, so they cannot evict each other;
* bypass: when the partition has capacity 0, or all its resident pages are pinned, the page is
  served straight from slow memory (a miss) and not cached.

A *collision miss* (SpecMD, Sec. 4) is a miss on a page evicted earlier in the same forward pass
(``trace.passes``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from paging.errors import PagingError, check_k
from paging.policies.base import CacheView, Context, Policy
from paging.trace import Trace


@dataclass
class Result:
    """Outcome of one run. ``hit_mask``, ``evictions`` (rows ``(t, page)``) and ``bypassed``
    (request indices) are filled when the run was asked to ``record``."""

    policy: str
    k: int
    trace: str
    requests: int
    misses: int
    per_layer_misses: np.ndarray
    collision_misses: int = 0
    bypasses: int = 0
    seed: int | None = None
    dist: bool = False
    hit_mask: np.ndarray | None = field(default=None, repr=False)
    evictions: np.ndarray | None = field(default=None, repr=False)
    bypassed: np.ndarray | None = field(default=None, repr=False)

    @property
    def hits(self) -> int:
        return self.requests - self.misses

    @property
    def miss_ratio(self) -> float:
        return self.misses / self.requests if self.requests else 0.0

    def to_dict(self) -> dict:
        return {
            "trace": self.trace,
            "policy": self.policy,
            "k": self.k,
            "requests": self.requests,
            "misses": self.misses,
            "hits": self.hits,
            "miss_ratio": self.miss_ratio,
            "collision_misses": self.collision_misses,
            "bypasses": self.bypasses,
            "per_layer_misses": [int(x) for x in self.per_layer_misses],
            "seed": self.seed,
        }


def _group_bounds(steps: np.ndarray) -> np.ndarray:
    """``end[i]``: one past the last request of request i's group (same step)."""
    n = steps.size
    starts = np.flatnonzero(np.r_[True, steps[1:] != steps[:-1]])
    ends = np.r_[starts[1:], n]
    return np.repeat(ends, np.diff(np.r_[starts, n]))


def simulate(trace: Trace, policy: Policy | str, k: int, *, seed: int | None = 0,
             record: bool = False, engine: str = "auto") -> Result:
    """Replay ``trace`` under ``policy`` with a cache of ``k`` pages.

    Parameters
    ----------
    trace : Trace
    policy : Policy or str
        A policy instance (it is reset first) or a registered name such as ``"llru"`` or
        ``"lru-dist"`` (:func:`paging.policies.make_policy`).
    k : int
        Cache size, >= 1.
    seed : int
        Seeds the run's ``numpy.random.Generator`` (only randomized policies draw from it).
    record : bool
        Also return the hit mask, the eviction log and the bypassed requests.
    engine : {"auto", "reference", "fast"}
        ``auto`` runs a compiled kernel when the policy is a built-in that has one; ``fast``
        insists on one; ``reference`` always runs the Python loop below.

    Returns
    -------
    Result

    Cost: O(N) hook calls plus the policy's victim cost per miss (O(k) for priority policies).
    """
    from paging.policies import make_policy

    if isinstance(policy, str):
        policy = make_policy(policy)
    k = check_k(k, trace.layout.n_pages)
    if engine not in ("auto", "reference", "fast"):
        raise PagingError(f"engine must be auto, reference or fast, got {engine!r}")
    if engine != "reference":
        from paging import fast

        res = fast.run(trace, policy, k, seed=seed, record=record)
        if res is not None:
            return res
        if engine == "fast":
            raise PagingError(f"policy {policy.name} has no compiled kernel")
    return _reference(trace, policy, k, seed, record)


def _reference(trace: Trace, policy: Policy, k: int, seed: int | None, record: bool) -> Result:
    lay = trace.layout
    n, L = lay.n_experts, lay.n_layers
    pages = trace.pages.tolist()
    steps = trace.steps
    passes = trace.passes.tolist()
    N = len(pages)
    part_of, caps = policy.partitions(lay, k)
    part_of = [0] * lay.n_pages if part_of is None else np.asarray(part_of).tolist()
    caps = [int(c) for c in caps]
    policy.reset(Context(
        layout=lay, capacity=caps[0] if len(caps) == 1 else k,
        rng=np.random.default_rng(seed), steps=steps, n_requests=N,
        next_use=trace.next_use if policy.clairvoyant else None, score=trace.score))

    resident: list[dict[int, None]] = [{} for _ in caps]  # per partition, insertion-ordered
    grouped = trace.is_grouped
    group_end = _group_bounds(steps).tolist() if grouped else None
    pinned: frozenset = frozenset()
    evicted_pass = [-1] * lay.n_pages
    per_layer = [0] * L
    misses = collisions = 0
    hit_mask = [False] * N if record else None
    evictions: list[tuple[int, int]] = []
    bypassed: list[int] = []

    t = 0
    while t < N:
        if grouped and (t == 0 or steps[t] != steps[t - 1]):
            pinned = frozenset(pages[t:group_end[t]])
        p = pages[t]
        q = part_of[p]
        res = resident[q]
        if p in res:
            if record:
                hit_mask[t] = True
            policy.on_hit(t, p)
            t += 1
            continue
        misses += 1
        per_layer[p // n] += 1
        if evicted_pass[p] == passes[t]:
            collisions += 1
        if len(res) >= caps[q]:
            view = CacheView(res, pinned)
            if caps[q] == 0 or not any(True for _ in _unpinned(res, pinned)):
                bypassed.append(t)  # nothing may be evicted: serve without caching
                t += 1
                continue
            out = policy.victims(t, p, view)
            if not out:
                raise RuntimeError(f"{policy.name}: victims() returned nothing at t={t}")
            for v in out:
                if v not in res or v in pinned or v == p:
                    raise RuntimeError(f"{policy.name}: invalid victim {v} at t={t} "
                                       "(not a resident unpinned page of the partition)")
                del res[v]
                evicted_pass[v] = passes[t]
                policy.on_evict(t, v)
                if record:
                    evictions.append((t, v))
        res[p] = None
        policy.on_insert(t, p)
        t += 1

    return Result(
        policy=policy.name, k=k, trace=trace.name, requests=N, misses=misses,
        per_layer_misses=np.array(per_layer, dtype=np.int64), collision_misses=collisions,
        bypasses=len(bypassed), seed=seed, dist=part_of_is_layers(policy),
        hit_mask=np.array(hit_mask, dtype=bool) if record else None,
        evictions=np.array(evictions, dtype=np.int64).reshape(-1, 2) if record else None,
        bypassed=np.array(bypassed, dtype=np.int64) if record else None,
    )


def _unpinned(res: dict, pinned: frozenset):
    return (q for q in res if q not in pinned)


def part_of_is_layers(policy: Policy) -> bool:
    return bool(getattr(policy, "per_layer", False))
