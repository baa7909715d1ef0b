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
    sim = Simulation(trace.layout, policy, k, steps=trace.steps, seed=seed, record=record,
                     next_use=trace.next_use if policy.clairvoyant else None, score=trace.score)
    pages = trace.pages.tolist()
    if not trace.is_grouped:
        for p in pages:
            sim.serve(p)
        return sim.result(trace.name)
    ends = _group_bounds(trace.steps).tolist()
    for t, p in enumerate(pages):
        if t == 0 or ends[t] != ends[t - 1]:
            sim.pin_group(pages[t:ends[t]])  # Sec. "groups": the K experts cannot evict each other
        sim.serve(p)
    return sim.result(trace.name)


class Simulation:
    """The reference loop, one request at a time.

    :func:`simulate` feeds it a whole trace; an adaptive adversary (Theorem 2) feeds it page by
    page, choosing each request after looking at :attr:`resident`. The layer clock ``steps``
    must be known in advance (its length is the number of requests); pages need not be.
    """

    def __init__(self, layout, policy: Policy, k: int, *, steps, seed: int | None = 0,
                 record: bool = False, next_use=None, score=None):
        self.layout, self.policy, self.k, self.seed, self.record = layout, policy, k, seed, record
        self.steps = np.asarray(steps, dtype=np.int64)
        self._steps = self.steps.tolist()
        self.n_requests = len(self._steps)
        part_of, caps = policy.partitions(layout, k)
        self.dist = part_of is not None
        self.part_of = [0] * layout.n_pages if part_of is None else np.asarray(part_of).tolist()
        self.caps = [int(c) for c in caps]
        if policy.clairvoyant and next_use is None:
            raise PagingError(f"{policy.name} is clairvoyant: it needs the whole trace")
        policy.reset(Context(
            layout=layout, capacity=self.caps[0] if len(self.caps) == 1 else k,
            rng=np.random.default_rng(seed), steps=self.steps, n_requests=self.n_requests,
            next_use=next_use, score=score))
        self.parts: list[dict[int, None]] = [{} for _ in self.caps]  # insertion-ordered
        self.pinned: frozenset = frozenset()
        self._group: list[int] = []
        self.evicted_pass = [-1] * layout.n_pages
        self.per_layer = [0] * layout.n_layers
        self.t = self.misses = self.collisions = 0
        self.hit_mask: list[bool] = []
        self.evictions: list[tuple[int, int]] = []
        self.bypassed: list[int] = []

    @property
    def resident(self) -> set[int]:
        """The pages in the cache now (a new set: O(k); use ``page in sim`` for one page)."""
        return {q for part in self.parts for q in part}

    def __contains__(self, page: int) -> bool:
        """Whether ``page`` is in the cache now, in O(1)."""
        return page in self.parts[self.part_of[page]]

    def pin_group(self, pages) -> None:
        """Pin the pages of the group about to be served (groups mode)."""
        self.pinned = frozenset(pages)

    def serve(self, p: int) -> bool:
        """Serve the next request, page ``p``; return True on a hit."""
        t, policy = self.t, self.policy
        if t >= self.n_requests:
            raise PagingError(f"the run was set up for {self.n_requests} requests")
        self.t += 1
        res = self.parts[self.part_of[p]]
        if p in res:
            if self.record:
                self.hit_mask.append(True)
            policy.on_hit(t, p)
            return True
        if self.record:
            self.hit_mask.append(False)
        self.misses += 1
        self.per_layer[p // self.layout.n_experts] += 1
        now_pass = self._steps[t] // self.layout.n_layers
        if self.evicted_pass[p] == now_pass:
            self.collisions += 1
        cap, pinned = self.caps[self.part_of[p]], self.pinned
        if len(res) >= cap:
            if cap == 0 or all(q in pinned for q in res):
                self.bypassed.append(t)  # nothing may be evicted: serve without caching
                return False
            out = policy.victims(t, p, CacheView(res, pinned))
            if not out:
                raise RuntimeError(f"{policy.name}: victims() returned nothing at t={t}")
            for v in out:
                if v not in res or v in pinned or v == p:
                    raise RuntimeError(f"{policy.name}: invalid victim {v} at t={t} "
                                       "(not a resident unpinned page of the partition)")
                del res[v]
                self.evicted_pass[v] = now_pass
                policy.on_evict(t, v)
                if self.record:
                    self.evictions.append((t, v))
        res[p] = None
        policy.on_insert(t, p)
        return False

    def result(self, name: str = "trace") -> Result:
        rec = self.record
        return Result(
            policy=self.policy.name, k=self.k, trace=name, requests=self.t, misses=self.misses,
            per_layer_misses=np.array(self.per_layer, dtype=np.int64),
            collision_misses=self.collisions, bypasses=len(self.bypassed), seed=self.seed,
            dist=self.dist,
            hit_mask=np.array(self.hit_mask, dtype=bool) if rec else None,
            evictions=np.array(self.evictions, dtype=np.int64).reshape(-1, 2) if rec else None,
            bypassed=np.array(self.bypassed, dtype=np.int64) if rec else None,
        )
