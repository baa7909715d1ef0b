"""The weighted offline optimum, one front door: :func:`opt_weighted`.

Page p costs ``w(p) >= 0`` per miss (a bypass is a miss) and occupies ``s(p) >= 1`` bytes; the
cache holds k pages (``k=``, sizes then only count ``bytes_fetched``) or a byte budget B
(``budget=``); ``dist=True`` splits either with ``layout.dist_shares``. The semantics are those
of :mod:`paging.offline.intervals` (the rules of :mod:`paging.simulate`): with unit costs and
sizes the optimum is ``simulate(trace, "belady", k).misses``.

Methods: ``"flow"`` (exact min-cost flow, uniform sizes: :mod:`paging.offline.flow`), ``"ilp"``
(exact, CBC: the unit ILP of :mod:`paging.offline.ilp` for unit costs and k, else the sized ILP
of :mod:`paging.offline.sizes`), ``"lp"`` (HiGHS LP relaxation: lower bound, and its rounding)
and ``"foo"`` (FOO-L / FOO-U by min-cost flow). ``"auto"``: flow when the sizes are uniform in
every partition (always with ``k``), else the ILP up to ``AUTO_ILP_MAX`` requests and FOO above.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np

from paging.errors import INT64_MAX, PagingError, brief
from paging.offline import intervals
from paging.offline import sizes as sized
from paging.offline.flow import min_cost_flow
from paging.trace import Trace
from paging.weights import as_costs, as_sizes

METHODS = ("auto", "flow", "ilp", "lp", "foo")
AUTO_ILP_MAX = 5000   # requests; above, "auto" with variable sizes gives FOO's bounds


@dataclass
class WeightedOpt:
    """Result of :func:`opt_weighted`.

    ``cost`` is the exact cost (``math.fsum`` over its misses) of the schedule found, ``misses``
    its number of misses; ``lower <= OPT <= upper = cost``. For exact methods ``lower == upper
    == cost`` and ``exact``; for the bounds ``lp`` and ``foo`` the schedule is the rounded one
    and ``hit_mask`` is None. ``bytes_fetched`` sums ``s(p)`` over the misses when sizes were
    given (else None); ``capacities`` are the partitions' capacities (pages or bytes).
    """

    cost: float
    misses: int
    hit_mask: np.ndarray | None = field(repr=False)
    method: str
    exact: bool
    lower: float
    upper: float
    bytes_fetched: int | None = None
    capacities: list[int] = field(default_factory=list)


def opt_weighted(trace: Trace, *, k: int | None = None, budget: int | None = None,
                 costs=None, sizes=None, dist: bool = False, method: str = "auto",
                 time_limit: float = 60, solver: str = "ortools",
                 progress: bool | None = False) -> WeightedOpt:
    """Minimum total fetch cost of ``trace``: exact (flow, ilp) or bounds (lp, foo).

    Parameters
    ----------
    trace : Trace
        Rounds or groups mode (a group must fit its partition, else :class:`PagingError`).
    k, budget : int
        Exactly one: the cache holds k pages, or ``budget`` bytes (>= the smallest requested
        page; a larger page is bypassed).
    costs : array of n_pages floats, optional
        Fetch cost per page id (default all 1.0).
    sizes : array of n_pages ints, optional
        Size in bytes per page id (default all 1).
    dist : bool
        Per-layer partition (``layout.dist_shares`` of k or of the budget).
    method : {"auto", "flow", "ilp", "lp", "foo"}
    time_limit : float
        Seconds allowed to CBC (``ilp``).
    solver : {"ortools", "networkx", "highs"}
        The min-cost-flow solver of ``flow`` (and ``foo``: ortools or networkx).
    progress : bool or None
        ``ilp``: an elapsed-time bar bounded by ``time_limit`` that names the model's size
        (None: when stderr is a terminal; :func:`paging.offline.ilp.solve_cbc`); ``flow``,
        ``lp``, ``foo``: the seconds elapsed in the solver, which reports no progress, beside
        the time expected (:data:`SECONDS_PER_REQUEST_SQUARED`: a flow takes a few seconds at
        10^5 requests and grows about quadratically).

    Returns
    -------
    WeightedOpt
        ``lower <= OPT <= upper``; ``OPT = cost`` when ``exact``. With unit costs and sizes,
        ``cost == simulate(trace, "belady", k).misses`` (``"belady-dist"`` with ``dist``).

    Examples
    --------
    >>> from paging.layout import Layout
    >>> from paging.trace import from_pages
    >>> t = from_pages([0, 1, 2, 0, 1, 2], Layout(3, 1))
    >>> opt_weighted(t, k=2, costs=[5.0, 1.0, 1.0]).cost   # keep page 0: misses 0 1 2 1 or 2
    8.0
    """
    n_pages = trace.layout.n_pages
    if method not in METHODS:
        raise PagingError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    w = np.ones(n_pages) if costs is None else as_costs(costs, n_pages)
    s = None if sizes is None else as_sizes(sizes, n_pages)
    if (k is None) == (budget is None):
        raise PagingError("give exactly one of k (pages) or budget (bytes)")
    if k is not None:
        from paging.errors import check_k

        cap = check_k(k, n_pages)
    else:
        if isinstance(budget, bool) or not isinstance(budget, numbers.Integral) or budget < 1:
            raise PagingError(f"budget must be an integer >= 1 (bytes), got {budget!r}")
        if budget > INT64_MAX:  # (the solvers' int64 capacities)
            raise PagingError(f"budget must be at most 2^63 - 1 bytes, got {brief(budget)}")
        cap = int(budget)
        if trace.n_requests and s is not None:
            smallest = int(s[np.unique(trace.pages)].min())
            if cap < smallest:
                raise PagingError(f"budget {cap} bytes is smaller than every requested page "
                                  f"(the smallest is {smallest} bytes)")
    caps = intervals.partition_capacities(trace, cap, dist)
    unit = _unit_reduction(trace, caps, dist, s if budget is not None else None)
    if method == "auto":
        method = ("flow" if unit is not None
                  else "ilp" if trace.n_requests <= AUTO_ILP_MAX else "foo")
    pages = trace.pages

    if method == "flow":
        if unit is None:
            raise PagingError("method flow needs one page size per partition (min-cost flow is "
                              "exact only for uniform sizes); use ilp, lp or foo")
        model = intervals.build(trace, unit[0], dist=dist, costs=w, sizes=unit[1])
        with _solving(model, f"min-cost flow ({solver})", progress, solver):
            res = min_cost_flow(model, w, pages, solver)
        return _result(res.hit_mask, w, s, pages, "flow", res.exact, res.lower, caps,
                       keep_mask=True)
    if method == "ilp" and costs is None and sizes is None and k is not None:
        from paging.offline.ilp import solve_ilp

        hit = solve_ilp(trace, cap, dist=dist, time_limit=time_limit,
                        progress=progress).hit_mask
        return _result(hit, w, s, pages, "ilp", True, None, caps, keep_mask=True)
    model = intervals.build(trace, caps, dist=dist, costs=w,
                            sizes=s if budget is not None else None)
    if method == "ilp":
        hit, _ = sized.ilp_schedule(model, time_limit=time_limit, progress=progress)
        return _result(hit, w, s, pages, "ilp", True, None, caps, keep_mask=True)
    with _solving(model, "LP relaxation (HiGHS)" if method == "lp" else "FOO's flow (OR-Tools)",
                  progress, "highs" if method == "lp"
                  else "networkx" if solver == "networkx" else "foo"):
        if method == "lp":
            b = sized.lp_bound(model, w, pages)
        else:
            b = sized.foo_bounds(model, w, pages, solver if solver != "highs" else "ortools")
    return _result(b.hit_mask, w, s, pages, method, b.lower == b.upper, b.lower, caps,
                   keep_mask=False)


#: seconds per squared request of each solver (the time grows about quadratically), measured
#: on the layered Zipf traces of ``benchmarks/bench_weighted_opt.py`` (n = 8, ℓ = 32, two cost
#: tiers; sizes 2 and 4 bytes for lp and foo) at 5·10^4 to 2·10^5 requests, on 2 shared cores:
#: OR-Tools' flow 4 s and FOO 18 s at 10^5 (65 s at 2·10^5), HiGHS 54 s; networkx is about two
#: orders of magnitude slower than OR-Tools. The estimate a running solve shows next to its
#: elapsed time (none of them reports progress).
SECONDS_PER_REQUEST_SQUARED = {"ortools": 1e-9, "foo": 2e-9, "highs": 5.5e-9, "networkx": 1e-7}


def _solving(model, what: str, progress: bool | None, solver: str = "ortools"):
    """:func:`paging.progress.ticking` with no limit, naming the solver, the model's size and
    the time expected (:data:`SECONDS_PER_REQUEST_SQUARED` of ``solver``)."""
    from paging.progress import ticking

    expected = SECONDS_PER_REQUEST_SQUARED[solver] * float(model.n_requests) ** 2
    return ticking(None, f"{what}: {model.n_requests:,} requests, {model.n_intervals:,} "
                   f"intervals (no progress reported; expected about {max(expected, 1):,.0f} "
                   "s, quadratic in the requests)", show=progress)


def _unit_reduction(trace: Trace, caps: list[int], dist: bool, s: np.ndarray | None):
    """``(caps_in_pages, unit_sizes)`` when every partition's cacheable requested pages have
    one size (always when ``s`` is None: a cache of k pages), else None. A partition of
    capacity C whose pages all have size s_z holds ``C // s_z`` pages; a page larger than C
    gets a unit size above the new capacity, so it stays bypassed."""
    if s is None:
        return caps, None
    part = trace.layers if dist else np.zeros(trace.n_requests, dtype=np.int64)
    units = np.ones(trace.layout.n_pages, dtype=np.int64)
    new_caps = []
    for z, c in enumerate(caps):
        p = np.unique(trace.pages[part == z])
        fits = p[s[p] <= c]
        distinct = np.unique(s[fits])
        if distinct.size > 1:
            return None
        size = int(distinct[0]) if distinct.size else 1
        new_caps.append(c // size)
        units[p[s[p] > c]] = c // size + 1
    return new_caps, units


def _result(hit, w, s, pages, method, exact, lower, caps, *, keep_mask) -> WeightedOpt:
    cost = math.fsum(w[pages[~hit]].tolist())
    fetched = None if s is None else int(s[pages[~hit]].sum())
    return WeightedOpt(cost=cost, misses=int((~hit).sum()), hit_mask=hit if keep_mask else None,
                       method=method, exact=bool(exact),
                       lower=cost if lower is None else float(lower), upper=cost,
                       bytes_fetched=fetched, capacities=[int(c) for c in caps])
