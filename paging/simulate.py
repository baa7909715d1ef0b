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
from paging.miss import DROP, FETCH, MissHandler
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
             record: bool | str = False, engine: str = "auto", prefetch=None,
             miss=None, routing=None) -> Result:
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
        insists on one; ``reference`` always runs the Python loop below. Runs with a
        prefetcher or a miss handler always take the reference loop.
    prefetch : paging.predict.prefetch.Prefetcher, optional
        After each group (SpecMD Algorithm 1: gate -> serve -> prefetch), its predictor and
        strategy propose the next request's layer; the pages are inserted without a request
        (:meth:`Simulation.prefetch_group`). None: no prefetching (today's runs).
    miss : paging.miss.MissHandler or str, optional
        What a miss does (``fetch``, ``fetch-lowest-bit``, ``fetch-priority``, ``drop:rank=R``,
        ``drop:score=S``, ``substitute``; :mod:`paging.miss`). None or ``fetch``: fetch at the
        run's precision (today's runs).
    routing : str or paging.routing.Router, optional
        Cache-aware routing (:mod:`paging.routing`): ``pruning:j=J``, ``max-rank:j=J,m=M``,
        ``cumsum:tau=T``, ``cache-prior:lambda=L``; called once per (token, layer) group before
        its requests, seeing the cache. None or ``standard``: the trace's requests (today's
        runs, compiled kernels). Routed runs need groups (``expand="groups"``, or K = 1) and
        add ``retained_mass``, ``top1_changed``, ``kl`` to ``Result.extra``. A hook given as
        an instance keeps its running state across the calls it is given (Cache-Prior's Δavg
        runs over the sequences of a run); a spec string is a fresh hook, and
        :func:`paging.routing.router_for_run` one primed with the run's earlier sequences.

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
    from paging.miss import make_miss

    miss = make_miss(miss)
    from paging.routing import make_router

    router = make_router(routing)
    if router is not None:
        if engine == "fast":
            raise PagingError("cache-aware routing runs in the reference loop only")
        if prefetch is not None or miss is not None:
            raise PagingError("cache-aware routing with prefetching or miss handling is not "
                              "supported; give one of them")
        return _run(trace, policy, k, budget, costs, sizes, seed, level, None, None, router)
    if prefetch is not None or miss is not None:
        if engine == "fast":
            raise PagingError("prefetching and miss handling run in the reference loop only")
        return _run(trace, policy, k, budget, costs, sizes, seed, level, prefetch, miss)
    if engine != "reference":
        from paging import fast

        res = fast.run(trace, policy, k=k, budget=budget, costs=costs, sizes=sizes, seed=seed,
                       record=record)
        if res is not None:
            return res
        if engine == "fast":
            raise PagingError(f"policy {policy.name} has no compiled kernel")
    return _run(trace, policy, k, budget, costs, sizes, seed, level, None, None)


def token_visits(trace) -> int:
    """How often the layer clock walks every layer per token: the trace's top-K in the rounds
    expansion (round r holds every layer's r-th expert), 1 in groups mode or without a top-K."""
    if trace.expand != "rounds" or trace.token is None:
        return 1
    return max(int(trace.meta.get("top_k", 1) or 1), 1)


def _run(trace, policy, k, budget, costs, sizes, seed, level, prefetch, miss,
         router=None) -> Result:
    """The reference loop over a whole trace, with the extensions' phases when given (DESIGN.md
    "Extensions on the one simulator"): per group, the routing hook chooses the experts served
    (:class:`paging.routing.RoutedRun`), the group is pinned (groups mode), its requests are
    served (a miss goes to the miss handler), then the prefetcher inserts its proposals for the
    next request's layer. Without any of them it is the plain reference run."""
    routed = None
    clock = dict(steps=trace.steps, score=trace.score, rank=trace.rank, token=trace.token)
    if router is not None:
        from paging.routing import RoutedRun

        routed = RoutedRun(trace, router, policy)
        clock = routed.buffers()
    sim = Simulation(trace.layout, policy, k, budget=budget, costs=costs, sizes=sizes,
                     seed=seed, record=level > 0,
                     next_use=trace.next_use if policy.clairvoyant else None, miss=miss,
                     visits=token_visits(trace), **clock)
    sim.extended = prefetch is not None or miss is not None
    if prefetch is not None:
        prefetch.reset(trace, seed)  # the plan: every batch's proposals (no predictor reads
        sim.predicted = prefetch.predicted  # the cache), with its precision/recall counts
        sim.predicted_right = prefetch.predicted_right
        sim.actual = prefetch.actual
    pages = trace.pages.tolist()
    N = len(pages)
    ends = _group_bounds(trace.steps).tolist()
    grouped = trace.is_grouped
    lo = 0
    while lo < N:
        hi = ends[lo]
        group = pages[lo:hi] if routed is None else routed.choose(sim, lo, hi)
        if grouped:  # groups: the K experts of a (token, layer) cannot evict each other
            sim.pin_group(group)
        for p in group:
            sim.serve(p)
        if prefetch is not None and hi < N:
            prefetch.after_group(sim, lo, hi)
        lo = hi
    res = sim.result(trace.name)
    if level == 1:
        res.evictions = res.bypassed = None
    if routed is not None:
        routed.finish(sim, res, level > 0)
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
                 next_use=None, score=None, rank=None, miss: MissHandler | None = None,
                 token=None, visits: int = 1):
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
        self.miss = miss
        self.levels: dict[int, int] = {}  # resident page -> precision level, when not 0
        n_levels = 1
        if miss is not None and miss.uses_levels:
            if miss.level_sizes is None:
                raise PagingError(f"{miss.name} needs the sizes and costs of its precisions "
                                  "(bind them: paging.miss.cascade_weights, or --model)")
            if self.budget is None:
                raise PagingError(f"{miss.name} mixes precisions: count the cache in bytes "
                                  "(a budget), not in pages")
            n_levels = len(miss.level_sizes)
        self._level_size = None if miss is None else miss.level_sizes
        self.level_misses = [[0] * P for _ in range(n_levels)]
        # a run counted in pages gives every page one slot, whatever its size in bytes
        self._size = [1] * P if self.budget is None else self.sizes.tolist()
        policy.reset(Context(
            layout=layout, capacity=self.caps[0] if len(self.caps) == 1 else capacity,
            rng=np.random.default_rng(seed), steps=self.steps, n_requests=self.n_requests,
            next_use=next_use, score=score,
            costs=unit_costs(P) if self.costs is None else self.costs,
            sizes=unit_sizes(P) if self.sizes is None else self.sizes, levels=self.levels,
            token=token, visits=int(visits)))
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
        # SpecMD extensions (prefetching, miss handling): counters and their logs
        self.requested = [0] * P if miss is not None else None
        self.fetch_levels: list[int] | None = [] if record and n_levels > 1 else None
        self.dropped = self.substituted = self.top1_changed = 0
        self.dropped_mass = 0.0
        self.replaced_ranks: dict[int, int] = {}
        self.dropped_log: list[int] = []
        self.substituted_log: list[tuple[int, int]] = []
        self.prefetches = self.prefetch_useful = self.prefetch_wasted = 0
        self.prefetch_skipped = self.prefetch_bytes = 0
        self._pending: dict[int, None] = {}  # prefetched pages not yet requested
        self.pf_log: list[tuple[int, int]] = []  # (next request index, page)
        self.pf_evictions: list[tuple[int, int]] = []  # (next request index, victim)
        self.predicted = self.predicted_right = self.actual = 0  # set-based precision/recall
        self.extended = False  # True when a prefetcher or a miss handler was attached

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

    def score_at(self, t: int) -> float:
        """Gate score of request ``t`` (the trace's ``score``)."""
        return float(self._score[t])

    def rank_at(self, t: int) -> int:
        """Rank of request ``t`` in its top-K list (0 when the trace has no ranks)."""
        return 0 if self._rank is None else int(self._rank[t])

    def _make_room(self, t: int, q: int, p: int, need: int, pinned, log) -> bool:
        """Evict victims of partition ``q`` until ``need`` more fits (the policy chooses); False
        (nothing evicted) when no eviction can make room: the bypass rule."""
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
                if v in self._pending:  # a prefetched page evicted before any request
                    del self._pending[v]
                    self.prefetch_wasted += 1
                policy.on_evict(t, v)
                if log is not None:
                    log.append((t if log is self.evictions else self.t, v))
        return True

    def serve(self, p: int) -> bool:
        """Serve the next request, page ``p``; return True on a hit."""
        t, policy = self.t, self.policy
        if t >= self.n_requests:
            raise PagingError(f"the run was set up for {self.n_requests} requests")
        self.t += 1
        q = self.part_of[p]
        res = self.parts[q]
        if self.requested is not None:
            self.requested[p] += 1
        if p in res:
            if self.record:
                self.hit_mask.append(True)
            if self._pending and p in self._pending:  # first request of a prefetched page
                del self._pending[p]
                self.prefetch_useful += 1
            policy.on_hit(t, p)
            return True
        if self.record:
            self.hit_mask.append(False)
        level = 0
        if self.miss is not None:
            act, arg = self.miss.decide(self, t, p)
            if act != FETCH:
                self._replaced(t, act, arg)
                return False
            level = arg
        self.misses += 1
        self.page_misses[p] += 1
        now_pass = self._steps[t] // self.layout.n_layers
        if self.evicted_pass[p] == now_pass:
            self.collisions += 1
        need = self._size[p] if level == 0 else self._level_size[level][p]
        if level:
            self.level_misses[level][p] += 1
        if self.fetch_levels is not None:
            self.fetch_levels.append(level)
        if not self._make_room(t, q, p, need, self.pinned,
                               self.evictions if self.record else None):
            self.bypassed.append(t)  # no eviction can make room: serve without caching
            return False
        res[p] = need
        self.used[q] += need
        if level:
            self.levels[p] = level
        policy.on_insert(t, p)
        return False

    def _replaced(self, t: int, act: int, q: int) -> None:
        """Count a dropped (``act`` = DROP) or substituted (SUBSTITUTE by page ``q``) request."""
        r = self.rank_at(t)
        self.replaced_ranks[r] = self.replaced_ranks.get(r, 0) + 1
        if r == 0:
            self.top1_changed += 1
        if act == DROP:
            self.dropped += 1
            if self._score is not None:
                self.dropped_mass += float(self._score[t])
            if self.record:
                self.dropped_log.append(t)
            return
        if q not in self.parts[self.part_of[q]] or q // self.layout.n_experts != \
                self._steps[t] % self.layout.n_layers:
            raise RuntimeError(f"{self.miss.name}: substitute {q} at t={t} is not a resident "
                               "page of the requested layer")
        self.substituted += 1
        if self.record:
            self.substituted_log.append((t, q))
        self.policy.on_hit(t, q)

    def prefetch(self, page: int) -> bool:
        """Insert ``page`` without a request (SpecMD Algorithm 1, phase 3), after the last
        request served; True when it was inserted.

        Nothing happens when the page is resident. Room is made as for a miss (the policy's
        victims, the same pinning: the pages pinned now cannot be evicted); when no eviction
        can make room the prefetch is skipped (counted in ``prefetch_skipped``). The page enters
        at level 0 (the run's precision). The policy sees ``on_prefetch(t, page)``, ``t`` = the
        last request served.
        """
        if self.t == 0:
            raise PagingError("a prefetch comes after a request: serve the first one first")
        q = self.part_of[page]
        res = self.parts[q]
        if page in res:
            return False
        t = self.t - 1
        need = self._size[page]
        if not self._make_room(t, q, page, need, self.pinned,
                               self.pf_evictions if self.record else None):
            self.prefetch_skipped += 1
            return False
        res[page] = need
        self.used[q] += need
        self.prefetches += 1
        self.prefetch_bytes += int(self.sizes[page]) if self.sizes is not None else 1
        self._pending[page] = None
        if self.record:
            self.pf_log.append((self.t, page))
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
        if not self.extended:
            return res
        res.dropped, res.substituted = self.dropped, self.substituted
        if len(self.level_misses) > 1:  # mixed precisions: each fetch at its level's weights
            res.cost, res.bytes_fetched = self._level_totals(res.page_misses)
        self._pending_to_wasted()
        groups = self._groups()
        res.extra = {
            "prefetches": self.prefetches,
            "prefetch_useful": self.prefetch_useful,
            "prefetch_wasted": self.prefetch_wasted,
            "prefetch_skipped": self.prefetch_skipped,
            "prefetch_bytes": self.prefetch_bytes,
            "prefetch_precision": (self.predicted_right / self.predicted
                                   if self.predicted else None),
            "prefetch_recall": self.predicted_right / self.actual if self.actual else None,
            "dropped": self.dropped,
            "dropped_mass": self.dropped_mass if self._score is not None else None,
            "substituted": self.substituted,
            "replaced_ranks": {str(r): c for r, c in sorted(self.replaced_ranks.items())},
            "top1_changed_share": self.top1_changed / groups if groups else 0.0,
            "fetch_levels": ({(self.miss.levels[lv] if self.miss and self.miss.levels
                               else str(lv)): c for lv, c in enumerate(self._level_counts())}),
            "miss": "fetch" if self.miss is None else self.miss.spec(),
        }
        if rec:
            res.events = {
                "dropped": np.array(self.dropped_log, dtype=np.int64),
                "substituted": np.array(self.substituted_log, dtype=np.int64).reshape(-1, 2),
                "prefetched": np.array(self.pf_log, dtype=np.int64).reshape(-1, 2),
                "prefetch_evictions": np.array(self.pf_evictions,
                                               dtype=np.int64).reshape(-1, 2),
                "fetch_levels": (None if self.fetch_levels is None
                                 else np.array(self.fetch_levels, dtype=np.int64)),
                "level_sizes": None if self._level_size is None else
                [np.asarray(x, dtype=np.int64) for x in self._level_size],
                "level_costs": None if self.miss is None or self.miss.level_costs is None
                else list(self.miss.level_costs),
            }
        return res

    def _pending_to_wasted(self) -> None:
        """At the end of the run, prefetched pages never requested are wasted."""
        self.prefetch_wasted += len(self._pending)
        self._pending.clear()

    def _groups(self) -> int:
        """(token, layer) groups served: requests of rank 0 (every request without ranks)."""
        if self._rank is None:
            return self.t
        return sum(1 for r in self._rank[:self.t] if r == 0)

    def _level_counts(self) -> list[int]:
        tot = sum(self.page_misses)
        rest = [sum(x) for x in self.level_misses[1:]]
        return [tot - sum(rest), *rest]

    def _level_totals(self, page_misses: np.ndarray) -> tuple[float, int]:
        """``(cost, bytes)`` of the fetches, each at its level's cost and size (exact sum)."""
        from paging.result import exact_dot

        lm = [np.array(x, dtype=np.int64) for x in self.level_misses[1:]]
        c0 = np.asarray(page_misses, dtype=np.int64) - sum(lm)
        counts = np.concatenate([c0, *lm])
        costs = [unit_costs(c0.size) if self.costs is None else self.costs,
                 *self.miss.level_costs[1:]]
        sizes = [self.sizes, *[np.asarray(x) for x in self._level_size[1:]]]
        cost = exact_dot(counts, np.concatenate(costs))
        nbytes = int(np.dot(counts, np.concatenate(sizes).astype(np.int64)))
        return cost, nbytes
