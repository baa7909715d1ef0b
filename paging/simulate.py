"""THE reference simulator: one loop for every policy.

``simulate(trace, policy, k)`` replays ``trace`` from an empty cache of ``k`` pages (or of a byte
budget, with per-page sizes and fetch costs: weighted paging). Every policy,
online or offline, shared or per-layer (DIST), runs through the same loop below; the compiled
kernels of :mod:`paging.fast` must reproduce it exactly and are used automatically for built-in
policies (``engine="auto"``).

Rules the loop enforces (and :func:`paging.verify.verify` checks independently):

* demand paging: a page enters the cache only when it is requested and missing; evictions
  happen only on a miss whose page does not fit in its partition;
* capacity: k pages, or a byte budget B with page sizes s(p) (weighted paging with sizes:
  evict until the page fits);
* partitions: one shared cache, or (DIST) layer z holds at most ``C//ℓ`` (pages or bytes) plus
  one for the first ``C mod ℓ`` layers, C = k or B;
* groups (``expand="groups"``): the pages of the current (token, layer) group are pinned while
  it is served, so they cannot evict each other;
* bypass: when no eviction can make room (capacity 0, a page larger than its partition, or
  pinned pages filling it), the page is served straight from slow memory (a miss, paying its
  cost) and not cached;
* costs: a miss on page p costs w(p) (default 1); the run's ``cost`` is their sum.

A *collision miss* (SpecMD, Sec. 4) is a miss on a page evicted earlier in the same forward pass
(``trace.passes``).
"""

from __future__ import annotations

import numpy as np

from paging.errors import PagingError, check_k
from paging.policies.base import CacheView, Context, Policy
from paging.result import Result, build_result
from paging.trace import Trace
from paging.weights import as_costs, as_sizes, unit_costs, unit_sizes

__all__ = ["simulate", "Simulation", "Result", "check_capacity"]


def _group_bounds(steps: np.ndarray) -> np.ndarray:
    """``end[i]``: one past the last request of request i's group (same step)."""
    n = steps.size
    starts = np.flatnonzero(np.r_[True, steps[1:] != steps[:-1]])
    ends = np.r_[starts[1:], n]
    return np.repeat(ends, np.diff(np.r_[starts, n]))


def check_capacity(k, budget, sizes, n_pages: int) -> tuple[int | None, int | None]:
    """Validate the capacity of a run: exactly one of ``k`` (pages) or ``budget`` (bytes, which
    needs ``sizes``). Returns ``(k, budget)`` as ints (one of them None)."""
    if (k is None) == (budget is None):
        raise PagingError("give exactly one capacity: k (pages) or a byte budget")
    if k is not None:
        return check_k(k, n_pages), None
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1:
        raise PagingError(f"the byte budget must be an integer >= 1, got {budget!r}")
    if sizes is None:
        raise PagingError("a byte budget needs page sizes (sizes=..., --sizes FILE or --model)")
    smallest = int(np.min(sizes))
    if budget < smallest:
        raise PagingError(f"a budget of {int(budget)} bytes holds no page: the smallest page "
                          f"has {smallest} bytes")
    return None, int(budget)


def simulate(trace: Trace, policy: Policy | str, k: int | None = None, *,
             budget: int | None = None, costs=None, sizes=None, seed: int | None = 0,
             record: bool | str = False, engine: str = "auto") -> Result:
    """Replay ``trace`` under ``policy`` with a cache of ``k`` pages or ``budget`` bytes.

    Parameters
    ----------
    trace : Trace
    policy : Policy or str
        A policy instance (it is reset first) or a registered name such as ``"llru"`` or
        ``"lru-dist"`` (:func:`paging.policies.make_policy`).
    k : int, optional
        Cache size in pages, >= 1 (every page occupies one slot, whatever its size).
    budget : int, optional
        Cache size in bytes (needs ``sizes``): on a miss, pages are evicted until the requested
        page fits. Exactly one of ``k`` and ``budget``.
    costs : array-like, optional
        Fetch cost w(p) >= 0 of every page id (weighted paging); default 1. The run's ``cost``
        is Σ w over its misses; weighted policies (GreedyDual, Landlord, GDSF) read them.
    sizes : array-like, optional
        Size s(p) >= 1 in bytes of every page id; default 1. ``bytes_fetched`` is Σ s over the
        misses.
    seed : int
        Seeds the run's ``numpy.random.Generator`` (only randomized policies draw from it).
    record : bool or "hits"
        Also return the hit mask, the eviction log and the bypassed requests (True), or only
        the hit mask (``"hits"``: what the latency timeline needs, at a fraction of the cost).
    engine : {"auto", "reference", "fast"}
        ``auto`` runs a compiled kernel when the policy is a built-in that has one; ``fast``
        insists on one; ``reference`` always runs the Python loop below.

    Returns
    -------
    Result

    With unit costs and sizes (the defaults) every count equals the unweighted run's.
    Cost: O(N) hook calls plus the policy's victim cost per eviction (O(k) for priority
    policies).
    """
    from paging.policies import make_policy

    if isinstance(policy, str):
        policy = make_policy(policy)
    P = trace.layout.n_pages
    costs = None if costs is None else as_costs(costs, P)
    sizes = None if sizes is None else as_sizes(sizes, P)
    k, budget = check_capacity(k, budget, sizes, P)
    from paging.fast import record_level

    level = record_level(record)
    if engine not in ("auto", "reference", "fast"):
        raise PagingError(f"engine must be auto, reference or fast, got {engine!r}")
    if engine != "reference":
        from paging import fast

        res = fast.run(trace, policy, k=k, budget=budget, costs=costs, sizes=sizes, seed=seed,
                       record=record)
        if res is not None:
            return res
        if engine == "fast":
            raise PagingError(f"policy {policy.name} has no compiled kernel")
    sim = Simulation(trace.layout, policy, k, budget=budget, costs=costs, sizes=sizes,
                     steps=trace.steps, seed=seed, record=level > 0,
                     next_use=trace.next_use if policy.clairvoyant else None, score=trace.score)
    pages = trace.pages.tolist()
    if not trace.is_grouped:
        for p in pages:
            sim.serve(p)
    else:
        ends = _group_bounds(trace.steps).tolist()
        for t, p in enumerate(pages):
            if t == 0 or ends[t] != ends[t - 1]:
                sim.pin_group(pages[t:ends[t]])  # groups: the K experts cannot evict each other
            sim.serve(p)
    res = sim.result(trace.name)
    if level == 1:
        res.evictions = res.bypassed = None
    return res


class Simulation:
    """The reference loop, one request at a time.

    :func:`simulate` feeds it a whole trace; an adaptive adversary (Theorem 2) feeds it page by
    page, choosing each request after looking at :attr:`resident`. The layer clock ``steps``
    must be known in advance (its length is the number of requests); pages need not be.

    Capacity: ``k`` pages, or ``budget`` bytes with page ``sizes`` (each partition holds pages
    whose sizes add up to at most its share). On a miss whose page does not fit, the policy is
    asked for victims until it fits; when even evicting every unpinned page of the partition
    would not make room (capacity 0, a page larger than the partition, or pinned pages filling
    it), the page is served without being cached (a bypass). With unit sizes this is exactly
    the page-count rule.
    """

    def __init__(self, layout, policy: Policy, k: int | None, *, steps, budget: int | None = None,
                 costs=None, sizes=None, seed: int | None = 0, record: bool = False,
                 next_use=None, score=None):
        P = layout.n_pages
        self.layout, self.policy, self.seed, self.record = layout, policy, seed, record
        self.costs = None if costs is None else as_costs(costs, P)
        self.sizes = None if sizes is None else as_sizes(sizes, P)
        self.k, self.budget = check_capacity(k, budget, self.sizes, P)
        capacity = self.k if self.k is not None else self.budget
        self.steps = np.asarray(steps, dtype=np.int64)
        self._steps = self.steps.tolist()
        self.n_requests = len(self._steps)
        part_of, caps = policy.partitions(layout, capacity)
        self.dist = part_of is not None
        self.part_of = [0] * P if part_of is None else np.asarray(part_of).tolist()
        self.caps = [int(c) for c in caps]
        if policy.clairvoyant and next_use is None:
            raise PagingError(f"{policy.name} is clairvoyant: it needs the whole trace")
        # a run counted in pages gives every page one slot, whatever its size in bytes
        self._size = [1] * P if self.budget is None else self.sizes.tolist()
        policy.reset(Context(
            layout=layout, capacity=self.caps[0] if len(self.caps) == 1 else capacity,
            rng=np.random.default_rng(seed), steps=self.steps, n_requests=self.n_requests,
            next_use=next_use, score=score,
            costs=unit_costs(P) if self.costs is None else self.costs,
            sizes=unit_sizes(P) if self.sizes is None else self.sizes))
        self.parts: list[dict[int, None]] = [{} for _ in self.caps]  # insertion-ordered
        self.used = [0] * len(self.caps)
        self.pinned: frozenset = frozenset()
        self.evicted_pass = [-1] * P
        self.page_misses = [0] * P
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
        q = self.part_of[p]
        res = self.parts[q]
        if p in res:
            if self.record:
                self.hit_mask.append(True)
            policy.on_hit(t, p)
            return True
        if self.record:
            self.hit_mask.append(False)
        self.misses += 1
        self.page_misses[p] += 1
        now_pass = self._steps[t] // self.layout.n_layers
        if self.evicted_pass[p] == now_pass:
            self.collisions += 1
        cap, pinned, size = self.caps[q], self.pinned, self._size
        need = size[p]
        if self.used[q] + need > cap:
            held = sum(size[r] for r in pinned if r in res) if pinned else 0
            if need > cap - held:
                self.bypassed.append(t)  # no eviction can make room: serve without caching
                return False
            view = CacheView(res, pinned)
            while self.used[q] + need > cap:
                out = policy.victims(t, p, view)
                if not out:
                    raise RuntimeError(f"{policy.name}: victims() returned nothing at t={t}")
                for v in out:
                    if v not in res or v in pinned or v == p:
                        raise RuntimeError(f"{policy.name}: invalid victim {v} at t={t} "
                                           "(not a resident unpinned page of the partition)")
                    del res[v]
                    self.used[q] -= size[v]
                    self.evicted_pass[v] = now_pass
                    policy.on_evict(t, v)
                    if self.record:
                        self.evictions.append((t, v))
        res[p] = None
        self.used[q] += need
        policy.on_insert(t, p)
        return False

    def result(self, name: str = "trace") -> Result:
        rec = self.record
        return build_result(
            policy=self.policy.name, k=self.k, budget=self.budget, trace=name, requests=self.t,
            page_misses=np.array(self.page_misses, dtype=np.int64),
            n_layers=self.layout.n_layers, collisions=self.collisions,
            bypasses=len(self.bypassed), seed=self.seed, dist=self.dist, costs=self.costs,
            sizes=self.sizes,
            hit_mask=np.array(self.hit_mask, dtype=bool) if rec else None,
            evictions=np.array(self.evictions, dtype=np.int64).reshape(-1, 2) if rec else None,
            bypassed=np.array(self.bypassed, dtype=np.int64) if rec else None,
        )
