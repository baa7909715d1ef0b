"""Weighted offline paging with variable page sizes: an exact ILP and FOO's bounds.

With sizes ``s(p)`` and a byte budget the offline optimum is NP-hard (it contains knapsack;
Chrobak, Woeginger, Makino & Xu, "Caching is hard -- even in the fault model", Algorithmica
63(4), 2012), so three tools, all on the interval model of :mod:`paging.offline.intervals`
(same semantics as :mod:`paging.offline.ilp`):

``ilp_schedule`` -- exact, small instances
    One binary ``y_j`` per interval j (page p_j kept between two requests), occupancy rows

        sum_{j spans u} s(p_j) · y_j  <=  C - load(u)     for every step u,

    written with one continuous occupancy variable per step (the trick of
    :mod:`paging.offline.ilp`, O(N) non-zeros), maximising the saving ``sum w(p_j) · y_j``;
    CBC's branch and bound (pulp). ``OPT = fixed + sum_j w(p_j) - max saving``.

``lp_bound`` -- the LP relaxation (``0 <= y_j <= 1``), by HiGHS
    A lower bound on OPT; rounding every interval with ``y_j < 1`` to a miss gives a feasible
    schedule, whose exact cost is the upper bound.

``foo_bounds`` -- FOO (Berger, Beckmann & Harchol-Balter, "Practical Bounds on Optimal Caching
with Variable Object Sizes", Proc. ACM Meas. Anal. Comput. Syst. (POMACS) 2(2), article 32,
SIGMETRICS 2018, doi:10.1145/3224427)
    FOO writes offline caching as a min-cost flow on the interval graph: a central path of
    capacity C (bytes), and for interval j an outer arc of capacity ``s_j`` and cost
    ``w_j / s_j`` per byte; ``s_j`` bytes enter at the interval's start and leave at its end.
    FOO-L is the cost of the min-cost flow (an interval may be partly cached) and is a lower
    bound on OPT; FOO-U rounds every interval that is not completely routed through the central
    path to a miss, a feasible schedule and an upper bound. These definitions are the ones of
    the issue; the paper's text and code were not available to check them here. Readings chosen:
    (1) the paper's model has no groups; the central arc of step u gets capacity
    ``C - load(u)`` (the requested page occupies its bytes at its step, as in the simulator);
    (2) their cost per byte is 1/s (object miss ratio) or 1 (byte miss ratio); a fetch cost
    w(p) is charged here as ``w(p)/s(p)`` per byte, which gives both as special cases; (3) the
    flow is solved by OR-Tools in units of ``g = gcd`` of the sizes with the capacities rounded
    down to multiples of g (every integral schedule still fits, so FOO-L stays a lower bound),
    and per-byte costs quantised down to multiples of ``1/Q`` (a lower cost only lowers the
    bound; see :func:`paging.offline.flow.quantise`). FOO-L is then the LP relaxation value up
    to that quantisation; :func:`lp_bound` gives it in floating point.

Costs: building is O(N log N); the ILP is exponential in the worst case (use it below a few
thousand requests); OR-Tools solves 10^5 requests in about 10 s, HiGHS in 10 s
to 130 s (``benchmarks/bench_weighted_opt.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from paging.errors import PagingError
from paging.offline.flow import highs_lp, interval_network, quantise, solve_network
from paging.offline.intervals import IntervalModel


@dataclass
class Bounds:
    """``lower <= OPT <= upper``; ``hit_mask`` is the schedule whose exact cost is ``upper``."""

    lower: float
    upper: float
    hit_mask: np.ndarray = field(repr=False)


def _fixed(model: IntervalModel, costs: np.ndarray, pages: np.ndarray) -> float:
    return math.fsum(costs[pages[model.fixed_miss]].tolist())


def _cost(costs: np.ndarray, pages: np.ndarray, hit: np.ndarray) -> float:
    return math.fsum(costs[pages[~hit]].tolist())


#: the widest span of positive costs the ILP and LP take, largest over smallest: CBC and HiGHS
#: work to absolute tolerances (and take coefficients of 1e20 and more for infinite), so the
#: costs are scaled by a power of two (exact in floating point) to put the smallest at 1 or
#: more, and the largest must then stay at most this. (Scaled down to [1, 2), costs of 1 to 3
#: beside one of 1e12 fell below the tolerances and the ILP returned a schedule 71 above the
#: optimum, called exact; unscaled, costs of 1e-9 did the same.)
SOLVER_COST_MAX = 1e15


def solver_scale(costs: np.ndarray, what: str) -> float:
    """The power of two that brings the smallest positive cost to [1, 2) when it is below 1
    (else 1); a :class:`PagingError` when the largest, so scaled, passes
    :data:`SOLVER_COST_MAX` (``what``: the method, for the message)."""
    c = np.asarray(costs, dtype=np.float64)
    pos = c[c > 0]
    if not pos.size:
        return 1.0
    lo, hi = float(pos.min()), float(pos.max())
    scale = 2.0 ** -math.floor(math.log2(lo)) if lo < 1 else 1.0
    if hi * scale > SOLVER_COST_MAX:
        raise PagingError(f"--method {what}: the costs span {lo:.3g} to {hi:.3g}, beyond what "
                          "CBC and HiGHS resolve (their tolerances are absolute); expected the "
                          f"largest at most {SOLVER_COST_MAX:.0e} times the smallest positive "
                          "one (--method flow reports whether its result is exact)")
    return scale


#: the largest page size the ILP and LP take, in units of the greatest common divisor of the
#: sizes and loads (:func:`_in_units`): CBC and HiGHS check the occupancy rows to a tolerance of
#: about 1e-7 of their coefficients, so with sizes of 1e7 units and more a schedule over the
#: budget by a few bytes passed as feasible (sizes near 1e9 bytes, gcd 1: an "exact" optimum
#: of 6 where every feasible schedule costs 9). FOO's flow is exact in integers at any size.
SOLVER_SIZE_MAX = 10**6


def solver_units(model: IntervalModel, what: str) -> IntervalModel:
    """:func:`_in_units` of ``model``; a :class:`PagingError` when a page, so measured, is
    larger than :data:`SOLVER_SIZE_MAX` units (``what``: the method, for the message)."""
    m = _in_units(model)
    if m.n_intervals and int(m.iv_size.max()) > SOLVER_SIZE_MAX:
        g = int(model.iv_size.max()) // int(m.iv_size.max())
        raise PagingError(f"--method {what}: the page sizes reach {int(m.iv_size.max()):,} "
                          f"units of their greatest common divisor ({g:,} bytes), beyond what "
                          "CBC and HiGHS resolve (their tolerances let a schedule pass the "
                          f"budget by a few bytes); expected at most {SOLVER_SIZE_MAX:,} units "
                          "(--method foo is exact in integers at any size)")
    return m


def ilp_schedule(model: IntervalModel, *, time_limit: float = 60,
                 progress: bool | None = False) -> tuple[np.ndarray, str]:
    """An optimal schedule of the interval model by CBC: ``(hit_mask, how)``.

    Maximises ``sum_j w_j · y_j`` subject to the occupancy rows of the module docstring, y
    binary. Raises :class:`PagingError` when CBC does not prove optimality within
    ``time_limit`` seconds. ``progress``: an elapsed-time bar bounded by ``time_limit``
    (:func:`paging.offline.ilp.solve_cbc`).
    """
    import pulp

    from paging.offline.ilp import solve_cbc, variable_factory

    m = solver_units(model, "ilp")  # (sizes in units of their gcd: CBC on bytes erred)
    kept = np.zeros(m.n_intervals, dtype=bool)
    if m.n_intervals == 0 or not np.any(m.iv_cost > 0):
        return m.hit_mask(kept), "none needed"
    prob = pulp.LpProblem("weighted_paging_opt", pulp.LpMaximize)
    new_var = variable_factory(pulp, prob)
    y = [new_var(f"y_{j}", cat=pulp.LpBinary) for j in range(m.n_intervals)]
    size, cost = m.iv_size.tolist(), (m.iv_cost * solver_scale(m.iv_cost, "ilp")).tolist()
    entering: dict[int, list[int]] = {}
    leaving: dict[int, list[int]] = {}
    for j, (a, b) in enumerate(zip(m.iv_tail.tolist(), m.iv_head.tolist(), strict=True)):
        entering.setdefault(a, []).append(j)
        leaving.setdefault(b, []).append(j)
    occ, ub = None, None
    for u, room in zip(m.chain_tail.tolist(), m.chain_cap.tolist(), strict=True):
        if u in entering or u in leaving:
            expr = (pulp.lpSum(size[j] * y[j] for j in entering.get(u, ()))
                    - pulp.lpSum(size[j] * y[j] for j in leaving.get(u, ())))
            new = new_var(f"occ_{u}", lowBound=0)
            if occ is not None:
                occ.upBound = ub
                expr = expr + occ
            prob += (new == expr, f"flow_{u}")
            occ, ub = new, room
        elif occ is not None:
            ub = min(ub, room)
    if occ is not None:
        occ.upBound = ub
    prob += pulp.lpSum(c * v for c, v in zip(cost, y, strict=True))
    solve_cbc(pulp, prob, mip=True, time_limit=time_limit, progress=progress,
              hint="raise the time limit, or use --method lp or foo (bounds) on large traces")
    kept = np.array([(v.varValue or 0.0) > 0.5 for v in y], dtype=bool)
    return m.hit_mask(kept), "branch and bound"


def lp_bound(model: IntervalModel, costs: np.ndarray, pages: np.ndarray) -> Bounds:
    """The LP relaxation of :func:`ilp_schedule` by HiGHS, and its rounding.

    ``lower = fixed + sum_j w_j - max_{0 <= y <= 1} sum_j w_j y_j`` (up to HiGHS's tolerance,
    about 1e-7 relative) ``<= OPT``; ``upper`` is the exact cost of the schedule that keeps the
    intervals with ``y_j = 1`` (every fractional interval a miss).
    """
    m = solver_units(model, "lp")  # (sizes in units of their gcd, and costs per unit scaled
    # to 1 or more: HiGHS's tolerances are absolute, and costs per byte of 3e-9 fell below them)
    costs = np.asarray(costs, dtype=np.float64)
    fixed = _fixed(m, costs, pages)
    per_unit = m.iv_cost / m.iv_size
    scale = solver_scale(per_unit, "lp")
    net = interval_network(m, per_unit * scale)
    x, fun = highs_lp(net)
    fun /= scale
    y = x[net.tail.size - m.n_intervals:]
    hit = m.hit_mask(y >= m.iv_size - 1e-9 * np.maximum(1, m.iv_size))
    upper = _cost(costs, pages, hit)
    lower = min(upper, fixed + math.fsum(m.iv_cost.tolist()) + fun)
    return Bounds(lower=lower, upper=upper, hit_mask=hit)


def _in_units(model: IntervalModel) -> IntervalModel:
    """The model with sizes and capacities divided by the gcd g of the interval and load sizes
    (capacities rounded down: an integral schedule fits iff it fits the rounded capacity)."""
    m = model
    parts = [m.iv_size, m.chain_load[m.chain_load > 0]]
    g = int(np.gcd.reduce(np.concatenate(parts))) if any(p.size for p in parts) else 1
    if g <= 1:
        return m
    caps = [c // g for c in m.capacities]
    node_cap = np.zeros(m.n_nodes, dtype=np.int64)
    for z, c in enumerate(caps):
        node_cap[m.part_source[z]:m.part_sink[z] + 1] = c
    load = m.chain_load // g
    return IntervalModel(
        n_requests=m.n_requests, n_nodes=m.n_nodes, chain_tail=m.chain_tail,
        chain_cap=node_cap[m.chain_tail] - load, chain_load=load, part_source=m.part_source,
        part_sink=m.part_sink, iv_tail=m.iv_tail, iv_head=m.iv_head, iv_size=m.iv_size // g,
        iv_cost=m.iv_cost, iv_request=m.iv_request, free_hit=m.free_hit,
        fixed_miss=m.fixed_miss, bypassed=m.bypassed, capacities=caps)


def foo_bounds(model: IntervalModel, costs: np.ndarray, pages: np.ndarray,
               solver: str = "ortools") -> Bounds:
    """FOO-L and FOO-U (module docstring) by min-cost flow in integer units.

    ``lower = fixed + sum_j q_j · (s_j - y_j) / Q <= OPT`` with ``q_j = floor(Q · w_j / s_j)``
    and y the optimal integral flow (units kept) of interval j; ``upper`` the exact cost of the
    schedule that keeps exactly the fully routed intervals. Cost: one min-cost flow on at most
    N + ℓ + 1 nodes and 2N arcs.
    """
    m = _in_units(model)
    costs = np.asarray(costs, dtype=np.float64)
    fixed = _fixed(m, costs, pages)
    q, scale, _ = quantise(m.iv_cost / m.iv_size, m.iv_size)
    net = interval_network(m, q)
    x = solve_network(net, solver)
    y = x[net.tail.size - m.n_intervals:].astype(np.int64)
    hit = m.hit_mask(y == m.iv_size)
    upper = _cost(costs, pages, hit)
    missed = int(np.dot(q, m.iv_size - y)) if y.size else 0  # exact in int64 (see quantise)
    return Bounds(lower=min(upper, fixed + missed / scale), upper=upper, hit_mask=hit)
