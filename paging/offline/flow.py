"""Weighted offline paging with uniform sizes: the exact optimum by min-cost flow.

Problem: pages have fetch costs ``w(p) >= 0``; a cache (or each DIST partition) holds C pages;
the cost of a run is the sum of ``w(p)`` over its misses. With unit costs Belady's rule is
optimal; with arbitrary costs the offline optimum is a min-cost flow on the *interval network*
(Chrobak, Karloff, Payne & Vishwanathan, "New results on server problems", SIAM J. Discrete
Math. 4(2):172-181, 1991, doi:10.1137/0404017 -- reference as given in the issue; its DOI was
not checked here -- who solve offline weighted paging, the k-server problem on a star metric,
by this reduction; see also the interval view of :mod:`paging.offline.ilp`).

Reduction (built by :func:`paging.offline.intervals.build`; all quantities per partition)
-----------------------------------------------------------------------------------------
A partition of capacity C has nodes ``v_0 .. v_H``, one before each local step u = 0..H-1 and
one after the last; C units of flow (the C cache slots) travel from ``v_0`` to ``v_H``:

* a *chain arc* ``v_u -> v_{u+1}`` per step u, with lower bound ``|G_u|`` (the slots that the
  group of step u occupies), upper bound C and cost 0: the slots that keep no interval over u;
* an *interval arc* ``v_{g+1} -> v_h`` per interval j (request of page p at step h, previous
  request at step g <= h - 2), capacity 1 and cost ``-w(p)``: a slot that keeps p from its
  request at g to its request at h, saving the fetch.

With ``y_j`` the flow on interval arc j, conservation at every node says that the kept intervals
spanning step u are ``C - f_u <= C - |G_u|``: exactly the rows
``|G_u| + sum_{g < u < h} y[g, h] <= C`` of the interval program of :mod:`paging.offline.ilp`,
so (the node-arc incidence matrix being totally unimodular, an optimal flow is integral)

    OPT = sum_{first requests, bypasses} w(p) + sum_j w(p_j) - max_y sum_j w(p_j) · y_j
        = fixed + sum_j w(p_j) + mincost(flow).

The lower bounds are removed the usual way (the chain arc of step u gets capacity
``C - |G_u|``, ``v_u`` a demand and ``v_{u+1}`` a supply of ``|G_u|``). With C the capacity of
the partition this is the flow formulation of offline weighted caching (the "k disjoint paths"
view of k-colouring intervals; Carlisle & Lloyd, "On the k-coloring of intervals", Discrete
Applied Mathematics 59:225-235, 1995). The network has at most
N + ℓ + 1 nodes and 2N arcs for N requests. (An equivalent form puts one unit of supply at the
start of every interval and a miss arc of cost ``w(p)``; OR-Tools' cost scaling is about 15x
slower on it, measured, hence this one.)

Integer costs
-------------
The solvers need integer arc costs. Costs are scaled by a power of two ``Q`` (``Q · max w``
close to ``2**31``) and rounded *down*: ``q(p) = floor(Q · w(p))``. When every ``Q · w(p)`` is
an integer (integer costs below ``2**31``, or dyadic fractions such as 0.5 or 1.25) nothing is
lost and the result is exact. Otherwise the schedule found is optimal for the quantised costs,
``lower = fixed + OPT_q / Q <= OPT`` (rounding down can only lower every cost), ``upper`` is the
true cost of the schedule found, computed exactly with ``math.fsum`` over its misses, and
``upper - lower <= (number of intervals) · 2**-31 · max w`` (a relative precision of about 5e-10
per interval).

Solvers
-------
``"ortools"``
    Google OR-Tools' ``SimpleMinCostFlow`` (cost scaling, Goldberg & Tarjan), C++: 100,000
    requests in about 10 s, growing about quadratically (37 s at 192,000, past 110 s at
    320,000; ``benchmarks/bench_weighted_opt.py``). OR-Tools is a base
    dependency: a binary wheel that installs in about 12 s here, and networkx's pure-Python
    network simplex is two orders of magnitude slower on long traces.
``"networkx"``
    ``networkx.network_simplex``: pure Python, the cross-check on small instances.
``"highs"``
    the same totally unimodular LP by ``scipy.optimize.linprog(method="highs")`` (float costs,
    no quantisation); the vertex it returns is integral up to a tolerance, which is checked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from paging.errors import PagingError
from paging.offline.intervals import IntervalModel

SOLVERS = ("ortools", "networkx", "highs")
_COST_BITS = 31   # quantised unit costs below 2**31: sums of N of them fit int64 for N < 2**32


@dataclass
class Network:
    """A min-cost flow instance: arcs ``tail[e] -> head[e]`` with capacity ``cap[e]`` and unit
    cost ``cost[e]``, node supplies ``supply[v]`` (positive: source, negative: sink)."""

    n_nodes: int
    tail: np.ndarray
    head: np.ndarray
    cap: np.ndarray
    cost: np.ndarray
    supply: np.ndarray = field(repr=False)


def interval_network(model: IntervalModel, unit_cost: np.ndarray) -> Network:
    """The network of the module docstring: chain arcs first (capacity = room, cost 0), then
    one interval arc per interval with capacity ``iv_size`` and unit cost ``-unit_cost[j]`` (per
    unit of size). The flow cost plus ``sum(unit_cost · iv_size)`` is the cost of the intervals
    not kept."""
    m = model
    supply = np.zeros(m.n_nodes, dtype=np.int64)
    caps = np.asarray(m.capacities, dtype=np.int64)
    np.add.at(supply, m.part_source, caps)
    np.add.at(supply, m.part_sink, -caps)
    np.add.at(supply, m.chain_tail, -m.chain_load)
    np.add.at(supply, m.chain_tail + 1, m.chain_load)
    return Network(
        n_nodes=m.n_nodes,
        tail=np.r_[m.chain_tail, m.iv_tail].astype(np.int64),
        head=np.r_[m.chain_tail + 1, m.iv_head].astype(np.int64),
        cap=np.r_[m.chain_cap, m.iv_size].astype(np.int64),
        cost=np.r_[np.zeros(m.chain_tail.size, dtype=unit_cost.dtype), -unit_cost],
        supply=supply)


def quantise(values: np.ndarray, amounts: np.ndarray | None = None
             ) -> tuple[np.ndarray, float, bool]:
    """``(q, Q, lossless)``: ``q = floor(Q · values)`` as int64 with Q a power of two, the
    largest with ``Q · max(values) < 2**31`` and ``Q · sum(values · amounts) < 2**62`` (so no
    flow cost overflows int64), Q = 1 when every value is an integer that already satisfies
    both; ``lossless`` says whether ``q == Q · values`` exactly. Multiplying by a power of two
    is exact in floating point."""
    values = np.asarray(values, dtype=np.float64)
    top = float(values.max()) if values.size else 0.0
    total = float(np.dot(values, amounts)) if amounts is not None and values.size else top
    if top <= 0:
        return np.zeros(values.size, dtype=np.int64), 1.0, True
    e = min(_COST_BITS - 1 - math.floor(math.log2(top)),
            61 - math.floor(math.log2(max(total, top))))
    scale = 1.0 if (e >= 0 and np.all(values == np.floor(values))) else 2.0 ** e
    scaled = values * scale
    q = np.floor(scaled)
    return q.astype(np.int64), scale, bool(np.all(q == scaled))


def solve_network(net: Network, solver: str = "ortools") -> np.ndarray:
    """An optimal flow (int64 per arc for ``ortools``/``networkx``, float for ``highs``).

    Raises :class:`PagingError` when the solver does not report an optimum (the interval
    network is always feasible: keep nothing, every chain arc carries C).
    """
    if solver not in SOLVERS:
        raise PagingError(f"solver must be one of {', '.join(SOLVERS)}, got {solver!r}")
    if net.tail.size == 0:
        return np.zeros(0, dtype=np.int64)
    if solver == "ortools":
        return _ortools(net)
    if solver == "networkx":
        return _networkx(net)
    return highs_lp(net)[0]


def _ortools(net: Network) -> np.ndarray:
    from ortools.graph.python import min_cost_flow

    mcf = min_cost_flow.SimpleMinCostFlow()
    arcs = mcf.add_arcs_with_capacity_and_unit_cost(net.tail, net.head, net.cap,
                                                    net.cost.astype(np.int64))
    mcf.set_nodes_supplies(np.arange(net.n_nodes, dtype=np.int64), net.supply)
    status = mcf.solve()
    if status != mcf.OPTIMAL:
        raise PagingError(f"OR-Tools min-cost flow did not find an optimum (status {status})")
    return np.asarray(mcf.flows(arcs), dtype=np.int64)


def _networkx(net: Network) -> np.ndarray:
    import networkx as nx

    g = nx.MultiDiGraph()
    for v, b in enumerate(net.supply.tolist()):
        g.add_node(v, demand=-b)
    for e, (u, v, c, w) in enumerate(zip(net.tail.tolist(), net.head.tolist(), net.cap.tolist(),
                                         net.cost.astype(np.int64).tolist(), strict=True)):
        g.add_edge(u, v, key=e, capacity=c, weight=w)
    _, flow = nx.network_simplex(g)
    return np.array([flow[u][v][e] for e, (u, v) in
                     enumerate(zip(net.tail.tolist(), net.head.tolist(), strict=True))],
                    dtype=np.int64)


def highs_lp(net: Network) -> tuple[np.ndarray, float]:
    """The flow LP ``min cost·x, incidence·x = supply, 0 <= x <= cap`` by HiGHS
    (``scipy.optimize.linprog``): the optimal x (float) and value. Float costs are allowed."""
    from scipy.optimize import linprog
    from scipy.sparse import csr_matrix

    m = net.tail.size
    if m == 0:
        return np.zeros(0), 0.0
    rows = np.r_[net.tail, net.head]
    cols = np.r_[np.arange(m), np.arange(m)]
    vals = np.r_[np.ones(m), -np.ones(m)]
    a = csr_matrix((vals, (rows, cols)), shape=(net.n_nodes, m))
    res = linprog(np.asarray(net.cost, dtype=np.float64), A_eq=a,
                  b_eq=net.supply.astype(np.float64),
                  bounds=np.column_stack([np.zeros(m), net.cap.astype(np.float64)]),
                  method="highs")
    if res.status != 0:
        raise PagingError(f"HiGHS did not solve the flow LP: {res.message}")
    return np.asarray(res.x, dtype=np.float64), float(res.fun)


@dataclass
class FlowResult:
    """A min-cost-flow optimum. ``hit_mask[i]``: request i hits in the schedule found;
    ``cost`` = ``upper`` its exact cost; ``lower`` a proven lower bound on OPT (equal to
    ``upper`` when ``exact``); ``scale`` the cost quantum Q (costs were ``floor(Q·w)/Q``)."""

    cost: float
    lower: float
    upper: float
    exact: bool
    hit_mask: np.ndarray = field(repr=False)
    solver: str = "ortools"
    scale: float = 1.0


def min_cost_flow(model: IntervalModel, costs: np.ndarray, trace_pages: np.ndarray,
                  solver: str = "ortools") -> FlowResult:
    """Solve the uniform-size model (``iv_size == 1``) of
    :func:`paging.offline.intervals.build` by min-cost flow.

    Parameters
    ----------
    model : IntervalModel
        Built with unit sizes (every interval occupies one slot).
    costs : np.ndarray
        ``w(p)`` per page id (finite, >= 0).
    trace_pages : np.ndarray
        The trace's pages (to price the misses of the schedule found).
    solver : {"ortools", "networkx", "highs"}

    Returns
    -------
    FlowResult
        ``cost = fsum(w(p) over misses)`` of an optimal schedule; exact (``lower == upper``)
        when the quantisation is lossless (see the module docstring), always for ``highs`` up to
        its tolerance.

    Cost: O(N log N) to build; OR-Tools' cost scaling runs in O(N² log(N·W)) worst case and
    close to linear time on these chain-like networks (see benchmarks/bench_weighted_opt.py).
    """
    if model.n_intervals and np.any(model.iv_size != 1):
        raise PagingError("min_cost_flow needs uniform sizes; use paging.offline.sizes")
    costs = np.asarray(costs, dtype=np.float64)
    fixed = math.fsum(costs[trace_pages[model.fixed_miss]].tolist())
    if solver == "highs":
        net = interval_network(model, model.iv_cost)
        x = solve_network(net, "highs")
        y = x[net.tail.size - model.n_intervals:]
        if y.size and np.max(np.abs(y - np.rint(y))) > 1e-6:
            raise PagingError("HiGHS returned a fractional vertex of the flow LP")
        hit = model.hit_mask(np.rint(y) == 1)
        true = _exact_cost(costs, trace_pages, hit)
        return FlowResult(cost=true, lower=true, upper=true, exact=True, hit_mask=hit,
                          solver=solver)
    q, scale, lossless = quantise(model.iv_cost)
    net = interval_network(model, q)
    x = solve_network(net, solver)
    y = x[net.tail.size - model.n_intervals:]
    hit = model.hit_mask(y == 1)
    true = _exact_cost(costs, trace_pages, hit)
    opt_q = int(np.dot(1 - y, q)) if y.size else 0  # exact integer arithmetic
    lower = true if lossless else min(true, fixed + opt_q / scale)
    return FlowResult(cost=true, lower=lower, upper=true, exact=lossless or lower == true,
                      hit_mask=hit, solver=solver, scale=scale)


def _exact_cost(costs: np.ndarray, pages: np.ndarray, hit: np.ndarray) -> float:
    return math.fsum(costs[pages[~hit]].tolist())
