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

import contextlib
import contextvars

from paging.core import CacheState, Simulation, check_capacity, group_bounds
from paging.errors import PagingError
from paging.observers import MissStats, PrefetchStats
from paging.policies.base import Policy
from paging.result import Result
from paging.trace import Trace, token_visits
from paging.weights import as_costs, as_sizes

__all__ = ["simulate", "Simulation", "CacheState", "Result", "check_capacity", "verifying",
           "verifying_now"]

_VERIFY: contextvars.ContextVar[bool] = contextvars.ContextVar("paging_verify", default=False)


@contextlib.contextmanager
def verifying():
    """Inside the block every :func:`simulate` call records its run and checks it with
    :func:`paging.verify.verify` before returning it (``paging adversary --verify``, ``paging
    proofs --verify``, ``paging figs --verify``): a run that fails raises
    :class:`~paging.errors.VerificationError`. Runs of the interactive :class:`Simulation`
    are not covered (their callers replay them: :func:`adversaries.base.checked_online`)."""
    token = _VERIFY.set(True)
    try:
        yield
    finally:
        _VERIFY.reset(token)


def verifying_now() -> bool:
    """Whether :func:`simulate` calls are verified here (inside :func:`verifying`)."""
    return _VERIFY.get()


def simulate(trace: Trace, policy: Policy | str, k: int | None = None, *,
             budget: int | None = None, costs=None, sizes=None, seed: int | None = 0,
             record: bool | str = False, engine: str = "auto", prefetch=None,
             miss=None, routing=None, progress: bool | None = None) -> Result:
    """Replay ``trace`` under ``policy`` with a cache of ``k`` pages or ``budget`` bytes.

    Parameters
    ----------
    trace : Trace
    policy : Policy or str
        A policy instance (it is reset first) or a registered name such as ``"llru"`` or
        ``"lru-dist"`` (:func:`paging.policies.make_policy`). An instance of a built-in policy
        runs its compiled kernel (``engine="auto"``), which leaves the instance as it was; to
        read a policy's state after a run (``TokenMatch().beta()``), run it with
        ``engine="reference"``.
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
        prefetcher or a miss handler have kernels for the list policies (LRU, FIFO, FWF, FLD,
        Least-Stale, LLRU, and their ``-dist`` variants), LFU, LHU, Belady, the credit policies,
        Marking, ARC, LeCaR, Score-Based, the prediction policies and the token policies with
        the built-in prefetcher and handlers (:mod:`paging.fast.phases`); other
        configurations take the reference loop (``fast`` refuses them, saying why).
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
        runs, compiled kernels). Every built-in hook with every built-in online policy runs
        compiled (:mod:`paging.fast.routing`), with ``prefetch`` and ``miss`` too (SpecMD's
        Algorithm 1; FlashMoE with them excepted); user hooks and policies take the
        reference loop (``engine="fast"`` refuses them). Routed runs need groups
        (``expand="groups"``, or K = 1) and add ``retained_mass``, ``top1_changed``, ``kl``
        to ``Result.extra``. A hook given as an instance keeps its running state across the
        calls it is given (Cache-Prior's Δavg runs over the sequences of a run); a spec string
        is a fresh hook, and
        :func:`paging.routing.router_for_run` one primed with the run's earlier sequences.
    progress : bool, optional
        A progress bar on stderr for a run in the reference loop of at least
        :data:`PROGRESS_MIN` requests (the compiled kernels run millions a second and show
        none): ``None`` (the default) when stderr is a terminal, ``False`` never (``paging
        simulate --json``), ``True`` always.

    Returns
    -------
    Result

    With unit costs and sizes (the defaults) every count equals the unweighted run's.
    Cost: O(N) hook calls plus the policy's victim cost per eviction (O(k) for priority
    policies). Inside :func:`verifying` the run is recorded and verified before it is
    returned.
    """
    if _VERIFY.get():
        from paging.fast import record_level
        from paging.verify import verify

        record_level(record)  # (a bad value is refused inside the block too)
        res = _simulate(trace, policy, k, budget=budget, costs=costs, sizes=sizes, seed=seed,
                        record=True, engine=engine, prefetch=prefetch, miss=miss,
                        routing=routing, progress=progress)
        verify(trace, res, costs=costs, sizes=sizes, k=k, budget=budget)
        return res
    return _simulate(trace, policy, k, budget=budget, costs=costs, sizes=sizes, seed=seed,
                     record=record, engine=engine, prefetch=prefetch, miss=miss,
                     routing=routing, progress=progress)


def _simulate(trace: Trace, policy: Policy | str, k: int | None = None, *,
              budget: int | None = None, costs=None, sizes=None, seed: int | None = 0,
              record: bool | str = False, engine: str = "auto", prefetch=None,
              miss=None, routing=None, progress: bool | None = None) -> Result:
    """:func:`simulate`'s run."""
    from paging.policies import make_policy

    if isinstance(policy, str):
        policy = make_policy(policy)
    check = getattr(policy, "check_trace", None)  # (a learned policy's training prompts)
    if check is not None:
        check(trace)
    P = trace.layout.n_pages
    costs = None if costs is None else as_costs(costs, P)
    sizes = None if sizes is None else as_sizes(sizes, P)
    k, budget = check_capacity(k, budget, sizes, P)
    from paging.fast import record_level

    level = record_level(record)
    if engine not in ("auto", "reference", "fast"):
        raise PagingError(f"engine must be auto, reference or fast, got {engine!r}")
    if prefetch is not None and not policy.prefetches:  # (before the run, on either engine)
        raise PagingError(f"{policy.name} does not support prefetching (its virtual caches "
                          "follow requests only)")
    from paging.miss import make_miss

    miss = make_miss(miss)
    from paging.routing import make_router

    router = make_router(routing)
    if router is not None:  # (with a prefetcher or a handler: SpecMD's three phases)
        if engine != "reference":
            from paging.fast import plan
            from paging.fast.routing import run_routed, unrouted_why

            why = unrouted_why(trace, policy, router, budget, prefetch, miss)
            if why is None:
                return run_routed(trace, policy, router, plan(policy), k, budget, costs, sizes,
                                  seed, level, prefetch, miss)
            if engine == "fast":
                raise PagingError(f"no compiled kernel for routing {router.spec()} with "
                                  f"{policy.name}: {why}")
        return _run(trace, policy, k, budget, costs, sizes, seed, level, prefetch, miss, router,
                    progress)
    if prefetch is not None or miss is not None:
        if engine != "reference":
            from paging.fast import phases

            why = phases.unsupported(trace, policy, budget, prefetch, miss)
            if why is None:
                return phases.run_phases(trace, policy, k, budget, costs, sizes, seed, level,
                                         prefetch, miss)
            if engine == "fast":
                raise PagingError(f"no compiled kernel for this run: {why}")
        return _run(trace, policy, k, budget, costs, sizes, seed, level, prefetch, miss,
                    progress=progress)
    if engine != "reference":
        from paging import fast

        res = fast.run(trace, policy, k=k, budget=budget, costs=costs, sizes=sizes, seed=seed,
                       record=record)
        if res is not None:
            return res
        if engine == "fast":
            raise PagingError(f"policy {policy.name} has no compiled kernel")
    return _run(trace, policy, k, budget, costs, sizes, seed, level, None, None,
                progress=progress)


#: a reference-loop run of this many requests or more shows a progress bar (``progress``)
PROGRESS_MIN = 200_000
_TICK = 1 << 14  # requests between two updates of the bar


def _bar(N: int, name: str, progress: bool | None):
    """The reference loop's progress bar for a run of ``N`` requests, or None (a short run,
    ``progress=False``, or stderr not a terminal)."""
    from paging.progress import bar, showing

    if progress is False or N < PROGRESS_MIN or not showing(progress):
        return None
    return bar(N, f"simulate {name} (reference loop)", unit="req", show=True)


def _run(trace, policy, k, budget, costs, sizes, seed, level, prefetch, miss,
         router=None, progress: bool | None = None) -> Result:
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
    observers = []
    if prefetch is not None or miss is not None:  # SpecMD's phases: their counts
        if prefetch is not None:
            prefetch.reset(trace, seed)  # the plan: every batch's proposals (no predictor
            # reads the cache), with its precision/recall counts
        observers = [PrefetchStats(*((prefetch.predicted, prefetch.predicted_right,
                                      prefetch.actual) if prefetch is not None else ())),
                     MissStats(miss)]
    sim = Simulation(trace.layout, policy, k, budget=budget, costs=costs, sizes=sizes,
                     seed=seed, record=level > 0,
                     next_use=trace.next_use if policy.clairvoyant else None, miss=miss,
                     visits=token_visits(trace), observers=observers,
                     pages=trace.pages if policy.clairvoyant else None, **clock)
    pages = trace.pages.tolist()
    N = len(pages)
    ends = group_bounds(trace.steps).tolist()
    grouped = trace.is_grouped
    lo = 0
    pb = _bar(N, policy.name, progress)
    tick = _TICK
    while lo < N:
        hi = ends[lo]
        served = None if routed is None else routed.choose(sim, lo, hi)
        sim.serve_group(pages[lo:hi] if served is None else served, grouped)
        if prefetch is not None and hi < N:
            prefetch.after_group(sim, lo, hi, served)
        lo = hi
        if pb is not None and lo >= tick:
            pb.update(lo - pb.n)
            tick = lo + _TICK
    if pb is not None:
        pb.close()
    res = sim.result(trace.name)
    if level == 1:
        res.evictions = res.bypassed = None
    if routed is not None:
        routed.finish(sim, res, level > 0)
    return res
