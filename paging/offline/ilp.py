"""OPT (and OPT-DIST) as an integer program, solved by CBC through pulp.

Unit-cost demand paging from an empty cache, with the simulator's rules (:mod:`paging.simulate`):
one shared cache of k pages, or (``dist=True``) layer z holds at most ``layout.dist_shares(k)[z]``
pages; a partition of capacity 0 serves every request by *bypass* (always a miss); in groups mode
the pages of the current (token, layer) group are pinned while it is served.

Interval formulation
--------------------
Number the *steps* of a partition (``trace.steps`` restricted to its requests: one request per
step in rounds mode, one group of K distinct pages in groups mode) h = 0, 1, .... A request of page
p at step h whose previous request (in the same partition) is at step g is a hit iff p stays in
the cache from step g to step h. For g = h - 1 it always can (p is in the cache after step g and,
in groups mode, pinned during step h), so it is a hit. For g <= h - 2 one binary variable
``y[g, h]`` says "kept": the interval then occupies a slot during the steps g+1 .. h-1. After step
h the cache holds the |G_h| pages of step h's group plus the kept intervals that span h, so

    maximise  sum y    subject to   |G_h| + sum_{g < h < h'} y[g, h'] <= capacity   for every h.

Every feasible y is realised by a demand-paging run (after step h evict every page that is neither
in G_h nor kept over h; a missing page of G_h always finds an unpinned victim because the target
set has at most ``capacity`` pages), and every run gives a feasible y, so the optimum is OPT:
``misses = requests - (always-hits + max sum y)``. The capacity rows are written with one
continuous occupancy variable per step, ``occ_h = occ_{h-1} + (intervals entering at h) -
(intervals leaving at h)``, ``0 <= occ_h <= capacity - |G_h|``, so the model has O(requests)
non-zeros instead of O(requests x pages). The constraint matrix of the interval form is an
interval (consecutive-ones) matrix, hence totally unimodular: the LP relaxation is integral and
CBC finishes at the root. This is the classical view of offline paging as interval scheduling /
min-cost flow (cf. Belady, IBM Systems Journal 5(2), 1966; the paper's OPT, Sec. 2.2).

Groups mode is supported when every partition with capacity >= 1 can hold its largest group
(capacity >= K). With 1 <= capacity < K the simulator serves some pages of a pinned group by
bypass, a rule this model does not encode, so :func:`opt_ilp` raises :class:`PagingError`.

Cost: O(N) variables and constraints for N requests; solving a few thousand requests takes well
under a second (see the tests and ``paging opt --method ilp``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from paging.errors import PagingError, check_k
from paging.trace import Trace


@dataclass
class IlpResult:
    """The optimum and how it was found.

    ``hit_mask[i]`` is True when request i is a hit in the optimal schedule found; ``method``
    says how CBC proved the optimum.
    """

    misses: int
    hit_mask: np.ndarray = field(repr=False)
    k: int
    dist: bool
    method: str


@dataclass
class _Interval:
    start: int      # local step of the previous request
    end: int        # local step of this request
    request: int    # index of this request in the trace


def _partitions(trace: Trace, k: int, dist: bool) -> tuple[np.ndarray, list[int]]:
    """Partition of every request and the capacities (shared cache or DIST shares)."""
    if dist:  # partition = the request's layer
        return trace.layers, [int(c) for c in trace.layout.dist_shares(k)]
    return np.zeros(trace.n_requests, dtype=np.int64), [k]


def solve_ilp(trace: Trace, k: int, *, dist: bool = False, time_limit: float = 60,
              relax: bool = True, progress: bool | None = False) -> IlpResult:
    """Solve the interval program of the module docstring; see :func:`opt_ilp`.

    ``relax=True`` (default) solves the LP relaxation first and accepts it when it is integral
    (always, in exact arithmetic: the matrix is totally unimodular); ``relax=False`` runs CBC's
    branch and bound directly (slower, same optimum). ``progress``: :func:`solve_cbc`'s bar.
    """
    import pulp

    k = check_k(k, trace.layout.n_pages)
    check_time_limit(time_limit)
    part, caps = _partitions(trace, k, dist)
    pages, steps = trace.pages.tolist(), trace.steps.tolist()
    hit = np.zeros(trace.n_requests, dtype=bool)
    prob = pulp.LpProblem("paging_opt", pulp.LpMaximize)
    new_var = variable_factory(pulp, prob)
    y_vars: list[tuple[pulp.LpVariable, int]] = []
    for z, cap in enumerate(caps):
        idx = np.flatnonzero(part == z).tolist()
        if not idx or cap == 0:
            continue  # capacity 0: every request bypasses the cache (a miss), as in simulate()
        # local steps and group sizes
        local, sizes, last_step = [], [], None
        for i in idx:
            if steps[i] != last_step:
                sizes.append(0)
                last_step = steps[i]
            sizes[-1] += 1
            local.append(len(sizes) - 1)
        big = max(sizes)
        if big > cap:
            where = f"layer {z}" if dist else "the cache"
            raise PagingError(f"the ILP needs every group to fit in its partition: {where} has "
                              f"{cap} slot(s) but a group of {big} pages (groups mode with "
                              "k < K); use --method belady or a larger k")
        prev: dict[int, int] = {}
        entering: list[list[int]] = [[] for _ in sizes]   # interval ids entering at step h
        leaving: list[list[int]] = [[] for _ in sizes]    # interval ids no longer spanning h
        intervals: list[_Interval] = []
        for i, h in zip(idx, local, strict=True):
            p = pages[i]
            g = prev.get(p)
            prev[p] = h
            if g is None:
                continue  # first request: a compulsory miss
            if g == h - 1:
                hit[i] = True  # kept through no other step: always a hit
                continue
            j = len(intervals)
            intervals.append(_Interval(g, h, i))
            entering[g + 1].append(j)
            leaving[h].append(j)
        if not intervals:
            continue
        y = [new_var(f"y_{z}_{j}", cat=pulp.LpBinary) for j in range(len(intervals))]
        y_vars += [(v, iv.request) for v, iv in zip(y, intervals, strict=True)]
        occ, ub = None, None   # current occupancy variable and its upper bound
        for h, size in enumerate(sizes):
            if entering[h] or leaving[h]:
                new = new_var(f"occ_{z}_{h}", lowBound=0)
                expr = pulp.lpSum(y[j] for j in entering[h]) - pulp.lpSum(y[j] for j in leaving[h])
                if occ is not None:
                    occ.upBound = ub
                    expr = expr + occ
                prob += (new == expr, f"flow_{z}_{h}")
                occ, ub = new, cap - size
            elif occ is not None:
                ub = min(ub, cap - size)
        if occ is not None:
            occ.upBound = ub
    method = "none needed"
    if y_vars:
        prob += pulp.lpSum(v for v, _ in y_vars)
        # The matrix is totally unimodular, so the LP relaxation (Clp's simplex, a vertex) is
        # integral and its optimum is the ILP optimum. Integrality is checked, not assumed:
        # should a solution come back fractional, CBC branches (presolve off: it is slow here).
        fractional = False
        if relax:
            method = "LP relaxation (integral: totally unimodular)"
            solve_cbc(pulp, prob, mip=False, time_limit=time_limit, progress=progress)
            values = [v.varValue or 0.0 for v, _ in y_vars]
            fractional = any(abs(x - round(x)) > 1e-6 for x in values)
        if not relax or fractional:
            method = ("branch and bound" if not relax
                      else "branch and bound (the LP vertex was fractional)")
            solve_cbc(pulp, prob, mip=True, time_limit=time_limit, progress=progress)
            values = [v.varValue or 0.0 for v, _ in y_vars]
        for x, (_, i) in zip(values, y_vars, strict=True):
            if x > 0.5:
                hit[i] = True
    misses = int(trace.n_requests - hit.sum())
    return IlpResult(misses=misses, hit_mask=hit, k=k, dist=dist, method=method)


def check_time_limit(time_limit, what: str = "time_limit") -> float:
    """``time_limit`` as a float, or a :class:`PagingError` unless it is a finite number of
    seconds > 0 (``what``: its name in the message). Infinity is refused: the elapsed-time bar
    of :func:`solve_cbc` is bounded by it (tqdm cannot draw a bar of infinite length: its
    thread died with a traceback and left the process hanging), and NaN or a limit <= 0 gave
    CBC nothing to solve in ("not solved to optimality within nan s (CBC: Infeasible)")."""
    if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float)) \
            or not math.isfinite(time_limit) or not time_limit > 0:
        raise PagingError(f"{what} must be a finite number of seconds > 0, got {time_limit!r}")
    return float(time_limit)


def variable_factory(pulp, prob):
    """``new_var(name, lowBound=None, upBound=None, cat="Continuous")`` for ``prob``: PuLP >= 3.3
    attaches variables to their problem (``prob.add_variable``; the direct ``LpVariable``
    constructor is deprecated there), older PuLP builds them directly."""
    if hasattr(prob, "add_variable"):
        return prob.add_variable

    def new_var(name, lowBound=None, upBound=None, cat="Continuous"):  # noqa: N803
        return pulp.LpVariable(name, lowBound, upBound, cat=cat)

    return new_var


def solve_cbc(pulp, prob, *, mip: bool, time_limit: float,
              hint: str = "raise the time limit or use --method belady",
              progress: bool | None = False) -> None:
    """Run CBC (quiet, one thread: deterministic) and insist on a proven optimum (else a
    :class:`PagingError` ending with ``hint``). Every pulp model of the package is solved here.
    ``progress``: an elapsed-time bar bounded by ``time_limit`` naming the model's size
    (:func:`paging.progress.ticking`; None: when stderr is a terminal), since CBC reports no
    progress and a branch and bound can run to the limit.

    A CBC on the PATH is used through ``COIN_CMD``; otherwise the binary bundled with pulp
    (``PULP_CBC_CMD``, whose PuLP-4 deprecation warning is silenced here).
    """
    import warnings

    time_limit = check_time_limit(time_limit)
    kw = dict(msg=False, mip=mip, timeLimit=time_limit, threads=1,
              presolve=None if not mip else False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        solver = pulp.COIN_CMD(**kw)
        if not solver.available():
            solver = pulp.PULP_CBC_CMD(**kw)
        if progress is False:
            prob.solve(solver)
        else:
            from paging.progress import ticking

            n_vars = prob.numVariables()
            n_int = sum(1 for v in prob.variables() if v.cat == pulp.LpInteger)
            what = ("branch and bound" if mip else "LP")
            desc = (f"CBC {what}: {n_int:,} binaries, {n_vars - n_int:,} continuous, "
                    f"{prob.numConstraints():,} rows")
            with ticking(time_limit, desc, show=progress):
                prob.solve(solver)
    if prob.status != pulp.LpStatusOptimal or prob.sol_status != pulp.LpSolutionOptimal:
        raise PagingError(f"the ILP was not solved to optimality within {time_limit:g} s (CBC: "
                          f"{pulp.LpStatus[prob.status]}); {hint}")


def opt_ilp(trace: Trace, k: int, *, dist: bool = False, time_limit: float = 60,
            progress: bool | None = False) -> int:
    """Minimum number of misses of ``trace`` with a cache of ``k`` pages, by integer programming.

    Parameters
    ----------
    trace : Trace
        Rounds mode, or groups mode when every partition of capacity >= 1 holds a whole group.
    k : int
        Cache size, >= 1.
    dist : bool
        Per-layer partition (OPT-DIST): layer z has ``trace.layout.dist_shares(k)[z]`` slots and a
        layer with 0 slots always misses.
    time_limit : float
        Seconds allowed to CBC; a :class:`PagingError` if optimality is not proven by then.

    Returns
    -------
    int
        OPT(σ) (or OPT-DIST(σ)): equals ``simulate(trace, "belady", k).misses`` (resp.
        ``"belady-dist"``), Belady's rule being optimal for unit costs (Belady 1966), which the
        test suite checks on random traces.

    Examples
    --------
    >>> from paging.layout import Layout
    >>> from paging.trace import from_pages
    >>> belady_anomaly = from_pages([1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5], Layout(6, 1))
    >>> opt_ilp(belady_anomaly, 3), opt_ilp(belady_anomaly, 4)
    (7, 6)
    """
    return solve_ilp(trace, k, dist=dist, time_limit=time_limit, progress=progress).misses
