"""The simulator's core: one cache served one request at a time (:class:`Simulation`).

:func:`paging.simulate.simulate` feeds it a whole trace; Theorem 2's adaptive adversary feeds
it page by page; a robust combiner (:mod:`paging.policies.robust`) runs its virtual caches on
it; a serving run (:mod:`paging.serve`) feeds it one batch step at a time. It imports the
policy *interface* (:mod:`paging.policies.base`) and never the policy registry, so a policy
may run simulations of its own without an import circle (the rules it enforces: the docstring
of :mod:`paging.simulate`).
"""

from __future__ import annotations

import numpy as np

from paging.errors import INT64_MAX, PagingError, brief, check_k
from paging.miss import DROP, FETCH, MissHandler
from paging.observers import Observer
from paging.policies.base import CacheView, Context, Policy
from paging.result import Result, build_result
from paging.trace import group_starts, top1_groups
from paging.weights import as_costs, as_sizes, unit_costs, unit_sizes

__all__ = ["Simulation", "CacheState", "check_capacity", "group_bounds"]


def group_bounds(steps: np.ndarray) -> np.ndarray:
    """``end[i]``: one past the last request of request i's group (same step)."""
    n = steps.size
    if n == 0:
        return np.zeros(0, np.int64)
    starts = group_starts(steps)
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
    if budget > INT64_MAX:
        raise PagingError(f"the byte budget must be at most 2^63 - 1 bytes, got {brief(budget)}")
    if sizes is None:
        raise PagingError("a byte budget needs page sizes (sizes=..., --sizes FILE or --model)")
    smallest = int(np.min(sizes))
    if budget < smallest:
        raise PagingError(f"a budget of {int(budget)} bytes holds no page: the smallest page "
                          f"has {smallest} bytes")
    largest = int(np.max(sizes))
    if int(budget) > INT64_MAX - largest:
        # (the kernels test the bytes a partition holds plus the page asked for in int64: a
        # budget of 2^63 - 1 with pages of 2^62 wrapped, and they kept three such pages)
        raise PagingError(f"a budget of {brief(int(budget))} bytes with pages of up to "
                          f"{brief(largest)} bytes: the bytes cached plus one page must fit in "
                          f"int64; expected a budget of at most 2^63 - 1 - {brief(largest)}")
    return None, int(budget)

class CacheState:
    """What an extension may read of a run (miss handlers, routing hooks, observers): which
    pages are cached, pinned or evictable, the requests' gate scores and ranks, the run's page
    sizes and costs. Read-only: only the simulator changes the cache."""

    __slots__ = ("_sim",)

    def __init__(self, sim: Simulation):
        self._sim = sim

    @property
    def layout(self):
        return self._sim.layout

    @property
    def t(self) -> int:
        """Requests served so far."""
        return self._sim.t

    @property
    def pinned(self) -> frozenset:
        return self._sim.pinned

    @property
    def sizes(self):
        return self._sim.sizes

    @property
    def costs(self):
        return self._sim.costs

    @property
    def has_scores(self) -> bool:
        return self._sim._score is not None

    def __contains__(self, page: int) -> bool:
        return page in self._sim

    def evictable(self, page: int) -> bool:
        """Cached and not pinned: a page a substitute or a victim may be."""
        return page in self._sim and page not in self._sim.pinned

    def cached_in_layer(self, layer: int) -> list[int]:
        """The cached experts (0..n-1) of ``layer``, ascending; O(n)."""
        n = self._sim.layout.n_experts
        base = layer * n
        return [e for e in range(n) if base + e in self._sim]

    def score_at(self, t: int) -> float:
        return self._sim.score_at(t)

    def rank_at(self, t: int) -> int:
        return self._sim.rank_at(t)

    def step_at(self, t: int) -> int:
        return self._sim._steps[t]

    def groups_served(self) -> int:
        """(token, layer) groups served: steps holding a request of rank 0 (a batched
        prefill's group holds several; every request without ranks)."""
        sim = self._sim
        if sim._rank is None:
            return sim.t
        return top1_groups(sim._steps[:sim.t], sim._rank[:sim.t])


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

    Extensions read the cache through :attr:`state` (a :class:`CacheState`); ``observers``
    (:mod:`paging.observers`) watch the run and own the result fields they report (a run with
    observers has ``Result.extra``).
    """

    def __init__(self, layout, policy: Policy, k: int | None, *, steps, budget: int | None = None,
                 costs=None, sizes=None, seed: int | None = 0, record: bool = False,
                 next_use=None, score=None, rank=None, miss: MissHandler | None = None,
                 token=None, visits: int = 1, observers=(), pages=None):
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
        for who in (policy, miss):
            if who is not None and who.needs_scores and score is None:
                raise PagingError(f"{who.name} reads gate scores and the trace has none")
            if who is not None and getattr(who, "needs_ranks", False) and rank is None:
                raise PagingError(f"{who.name} reads expert ranks and the trace has none")
        self._score = None if score is None else np.asarray(score, dtype=np.float64).tolist()
        self._rank = None if rank is None else np.asarray(rank, dtype=np.int64).tolist()
        self._score_array = score  # (what the policy's context holds: write_routing)
        self.miss = miss
        self.levels: dict[int, int] = {}  # resident page -> precision level, when not 0
        if miss is not None and miss.uses_levels:
            if miss.level_sizes is None:
                raise PagingError(f"{miss.name} needs the sizes and costs of its precisions "
                                  "(bind them: paging.miss.cascade_weights, or --model)")
            if self.budget is None:
                raise PagingError(f"{miss.name} mixes precisions: count the cache in bytes "
                                  "(a budget), not in pages")
        self._level_size = None if miss is None else miss.level_sizes
        # a run counted in pages gives every page one slot, whatever its size in bytes
        self._size = [1] * P if self.budget is None else self.sizes.tolist()
        policy.reset(Context(
            layout=layout, capacity=self.caps[0] if len(self.caps) == 1 else capacity,
            rng=np.random.default_rng(seed), steps=self.steps, n_requests=self.n_requests,
            next_use=next_use, score=score,
            costs=unit_costs(P) if self.costs is None else self.costs,
            sizes=unit_sizes(P) if self.sizes is None else self.sizes, levels=self.levels,
            token=token, visits=int(visits), in_bytes=self.budget is not None,
            pages=pages if policy.clairvoyant else None))
        # resident page -> the room it occupies (1, or its size at its level); insertion-ordered
        self.parts: list[dict[int, int]] = [{} for _ in self.caps]
        self.used = [0] * len(self.caps)
        self.pinned: frozenset = frozenset()
        self.evicted_pass = [-1] * P
        self.page_misses = [0] * P
        self.t = self.misses = self.collisions = 0
        self.hit_mask: list[bool] = []
        self.evictions: list[tuple[int, int]] = []
        self.bypassed: list[int] = []
        self.state = CacheState(self)
        # who hears the loop's events: the observers, and a miss handler that counts requests
        self.observers: list[Observer] = list(observers)
        watch = [*self.observers, *([miss] if isinstance(miss, Observer) else [])]
        for ob in watch:
            ob.start(self.state, record)
        self._watch = tuple(watch)

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

    def serve_group(self, pages, pin: bool = True) -> list[bool]:
        """Serve the requests of one group in order, its pages pinned while it is served
        (groups mode: the K experts of a (token, layer), or a serving step's union of a layer's
        experts, cannot evict each other); whether each was a hit."""
        if pin:
            self.pin_group(pages)
        serve = self.serve
        return [serve(p) for p in pages]

    def write_clock(self, lo: int, steps) -> None:
        """Write the layer clock of requests ``lo, lo+1, ...`` before they are served: a run
        whose requests are known only as it goes (a serving run, :mod:`paging.serve`) is set up
        with room for the most requests it can make and writes each step's clock here. Online
        policies read ``ctx.steps[t]`` only once request t is served, so they see it."""
        steps = [int(s) for s in steps]
        hi = lo + len(steps)
        if lo < self.t or hi > self.n_requests:
            raise PagingError(f"the clock of requests {lo}..{hi - 1} cannot be written: "
                              f"{self.t} served, room for {self.n_requests}")
        self.steps[lo:hi] = steps
        self._steps[lo:hi] = steps

    def write_routing(self, lo: int, rank, score) -> None:
        """Write the ranks and gate scores of requests ``lo, lo+1, ...`` before they are served
        (:meth:`write_clock`'s counterpart for a run set up with ``rank`` and ``score`` buffers:
        a serving run's step); None leaves one as it is."""
        for new, old in ((rank, self._rank), (score, self._score)):
            if new is not None:
                if old is None:
                    raise ValueError("write_routing: the run was set up without that buffer")
                new = np.asarray(new).tolist()
                hi = lo + len(new)
                if lo < self.t or hi > self.n_requests:
                    raise PagingError(f"the ranks or scores of requests {lo}..{hi - 1} cannot "
                                      f"be written: {self.t} served, room for "
                                      f"{self.n_requests}")
                old[lo:hi] = new
        if score is not None and self._score_array is not None:
            self._score_array[lo:lo + len(score)] = score

    def score_at(self, t: int) -> float:
        """Gate score of request ``t`` (the trace's ``score``)."""
        return float(self._score[t])

    def rank_at(self, t: int) -> int:
        """Rank of request ``t`` in its top-K list (0 when the trace has no ranks)."""
        return 0 if self._rank is None else int(self._rank[t])

    def _make_room(self, t: int, q: int, p: int, need: int, pinned,
                   prefetching: bool = False) -> bool:
        """Evict victims of partition ``q`` until ``need`` more fits (the policy chooses); False
        (nothing evicted) when no eviction can make room: the bypass rule. A request's
        evictions go to the eviction log (recorded runs); a prefetch's to the observers."""
        res, cap, policy = self.parts[q], self.caps[q], self.policy
        if self.used[q] + need <= cap:
            return True
        held = sum(res[r] for r in pinned if r in res) if pinned else 0
        if need > cap - held:
            return False
        now_pass = self._steps[t] // self.layout.n_layers
        view = CacheView(res, pinned)
        while self.used[q] + need > cap:
            out = policy.victims(t, p, view)
            if not out:
                raise RuntimeError(f"{policy.name}: victims() returned nothing at t={t}")
            for v in out:
                if v not in res or v in pinned or v == p:
                    raise RuntimeError(f"{policy.name}: invalid victim {v} at t={t} "
                                       "(not a resident unpinned page of the partition)")
                self.used[q] -= res.pop(v)
                self.evicted_pass[v] = now_pass
                if self.levels:
                    self.levels.pop(v, None)
                for ob in self._watch:
                    ob.on_evict(t, v, prefetching)
                policy.on_evict(t, v)
                if self.record and not prefetching:
                    self.evictions.append((t, v))
        return True

    def serve(self, p: int) -> bool:
        """Serve the next request, page ``p``; return True on a hit."""
        t, policy = self.t, self.policy
        if t >= self.n_requests:
            raise PagingError(f"the run was set up for {self.n_requests} requests")
        self.t += 1
        q = self.part_of[p]
        res = self.parts[q]
        watch = self._watch
        for ob in watch:
            ob.on_request(t, p)
        if p in res:
            if self.record:
                self.hit_mask.append(True)
            for ob in watch:
                ob.on_hit(t, p)
            policy.on_hit(t, p)
            return True
        if self.record:
            self.hit_mask.append(False)
        level = 0
        if self.miss is not None:
            act, arg = self.miss.decide(self.state, t, p)
            if act != FETCH:
                self._replaced(t, p, act, arg)
                return False
            level = arg
        self.misses += 1
        self.page_misses[p] += 1
        now_pass = self._steps[t] // self.layout.n_layers
        if self.evicted_pass[p] == now_pass:
            self.collisions += 1
        need = self._size[p] if level == 0 else self._level_size[level][p]
        for ob in watch:
            ob.on_fetch(t, p, level)
        if not self._make_room(t, q, p, need, self.pinned):
            self.bypassed.append(t)  # no eviction can make room: serve without caching
            return False
        res[p] = need
        self.used[q] += need
        if level:
            self.levels[p] = level
        policy.on_insert(t, p)
        return False

    def _replaced(self, t: int, p: int, act: int, q: int) -> None:
        """A request handled without fetching: dropped (``act`` = DROP) or served by the
        resident substitute ``q`` of its layer (the policy sees a hit on ``q``)."""
        if act != DROP:
            if q not in self.parts[self.part_of[q]] or q // self.layout.n_experts != \
                    self._steps[t] % self.layout.n_layers:
                raise RuntimeError(f"{self.miss.name}: substitute {q} at t={t} is not a "
                                   "resident page of the requested layer")
        for ob in self._watch:
            ob.on_replace(t, p, act, q)
        if act != DROP:
            self.policy.on_hit(t, q)

    def prefetch(self, page: int) -> bool:
        """Insert ``page`` without a request (SpecMD Algorithm 1, phase 3), after the last
        request served; True when it was inserted.

        Nothing happens when the page is resident. Room is made as for a miss (the policy's
        victims, the same pinning: the pages pinned now cannot be evicted); when no eviction
        can make room the prefetch is skipped (observers hear ``on_prefetch_skipped``). The page
        enters at level 0 (the run's precision). The policy sees ``on_prefetch(t, page)``, ``t``
        = the last request served.
        """
        if self.t == 0:
            raise PagingError("a prefetch comes after a request: serve the first one first")
        q = self.part_of[page]
        res = self.parts[q]
        if page in res:
            return False
        t = self.t - 1
        need = self._size[page]
        if not self._make_room(t, q, page, need, self.pinned, prefetching=True):
            for ob in self._watch:
                ob.on_prefetch_skipped(t, page)
            return False
        res[page] = need
        self.used[q] += need
        for ob in self._watch:
            ob.on_prefetch(t, page)
        self.policy.on_prefetch(t, page)
        return True

    def prefetch_group(self, pages, keep=()) -> int:
        """Prefetch ``pages`` (in order) with ``keep`` (the group just served) and the batch
        itself pinned, so a prefetch never evicts the group that is running nor another page of
        its batch. Returns how many were inserted."""
        batch = [int(x) for x in pages]
        parts, part_of = self.parts, self.part_of
        if all(x in parts[part_of[x]] for x in batch):  # all resident: nothing happens
            return 0
        saved = self.pinned
        self.pinned = frozenset(saved) | frozenset(keep) | frozenset(batch)
        try:
            return sum(self.prefetch(x) for x in batch)
        finally:
            self.pinned = saved

    def result(self, name: str = "trace") -> Result:
        rec = self.record
        res = build_result(
            policy=self.policy.name, k=self.k, budget=self.budget, trace=name, requests=self.t,
            page_misses=np.array(self.page_misses, dtype=np.int64),
            n_layers=self.layout.n_layers, collisions=self.collisions,
            bypasses=len(self.bypassed), seed=self.seed, dist=self.dist, costs=self.costs,
            sizes=self.sizes,
            hit_mask=np.array(self.hit_mask, dtype=bool) if rec else None,
            evictions=np.array(self.evictions, dtype=np.int64).reshape(-1, 2) if rec else None,
            bypassed=np.array(self.bypassed, dtype=np.int64) if rec else None,
        )
        if self.dist and self.caps != self.layout.dist_shares(res.capacity).tolist():
            res.shares = np.array(self.caps, dtype=np.int64)  # (fixed shares: the verifier's)
        for ob in self.observers:
            ob.finish(res)
        return res

    def set_clock(self, t: int, step: int, rank: int, score: float | None = None) -> None:
        """The routing phase (:class:`paging.routing.RoutedRun`) writes the clock of the request
        it is about to serve as ``t``: what is served is known only as the run goes."""
        self._steps[t] = step
        self._rank[t] = rank
        if score is not None:
            self._score[t] = score
