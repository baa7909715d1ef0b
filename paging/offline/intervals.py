"""The interval network of weighted (and variable-size) offline paging, shared by the solvers of
:mod:`paging.offline.flow` and :mod:`paging.offline.sizes`.

Same model and semantics as :mod:`paging.offline.ilp` (read its docstring first), generalised to
a fetch cost ``w(p) >= 0`` and a size ``s(p) >= 1`` per page:

* partitions: one shared cache of capacity C, or (``dist=True``) layer z with
  ``layout.dist_shares(C)[z]``; C counts pages (``k``) or bytes (a budget ``B``, every page then
  occupies ``s(p)`` bytes; with ``k`` every page occupies one slot whatever its size);
* a page that can never fit its partition (``s(p) > capacity``, capacity 0 included) is
  *bypassed*: every request of it is a miss and it never occupies space;
* the local steps of a partition are ``trace.steps`` (shared) or ``trace.steps // ℓ`` (DIST: the
  forward pass, since layer z is requested at steps z, z+ℓ, ...); the group of a step is the set
  of its requests in the partition, and its *load* is the total size of its cacheable pages;
* a request of a cacheable page p at local step h whose previous request is at step g is a hit
  for free when g = h - 1, and otherwise an *interval* (g, h): kept, it occupies s(p) during the
  steps g+1 .. h-1. With ``y`` the kept intervals, a schedule is feasible iff for every step u

      load(u) + sum_{intervals (g, h) with g < u < h} s(p) · y[g, h]  <=  capacity,

  and every feasible ``y`` is realised by a demand-paging run (as in :mod:`paging.offline.ilp`:
  after step u evict everything that is neither in the group of u nor kept over u). In groups
  mode a partition whose group load exceeds its capacity is refused (:class:`PagingError`), as
  :func:`paging.offline.ilp.opt_ilp` refuses ``k < K``; that load counts cacheable pages only
  (a bypassed page takes no space), so with unit sizes the rule is exactly ilp.py's.

The cost of the schedule is the sum of ``w(p)`` over the first requests of cacheable pages, the
bypassed requests and the intervals not kept. Building the model is O(N log N) (one stable sort
of the pages), vectorised.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from paging.errors import PagingError
from paging.trace import Trace


@dataclass
class IntervalModel:
    """Everything the solvers need, as flat numpy arrays.

    Nodes are numbered partition by partition: partition z owns the nodes ``node0[z] ..
    node0[z] + H_z`` (``H_z`` local steps); node ``node0[z] + u`` is the boundary before its
    step u. ``chain_cap[e]`` is the room left by the group of the step of chain arc e (from node
    ``chain_tail[e]`` to ``chain_tail[e] + 1``). Interval j of request ``iv_request[j]`` goes from
    node ``iv_tail[j]`` (its first spanned step) to ``iv_head[j]`` (the step of the request),
    occupies ``iv_size[j]`` and saves ``iv_cost[j]`` when kept.
    """

    n_requests: int
    n_nodes: int
    chain_tail: np.ndarray
    chain_cap: np.ndarray
    chain_load: np.ndarray
    part_source: np.ndarray   # first node of every partition
    part_sink: np.ndarray     # last node of every partition
    iv_tail: np.ndarray
    iv_head: np.ndarray
    iv_size: np.ndarray
    iv_cost: np.ndarray
    iv_request: np.ndarray
    free_hit: np.ndarray = field(repr=False)   # requests that hit in every schedule
    fixed_miss: np.ndarray = field(repr=False)  # first requests and bypasses: always misses
    bypassed: np.ndarray = field(repr=False)
    capacities: list[int] = field(default_factory=list)

    @property
    def n_intervals(self) -> int:
        return int(self.iv_tail.size)

    def hit_mask(self, kept: np.ndarray) -> np.ndarray:
        """The hit mask of the schedule that keeps the intervals where ``kept`` is True."""
        hit = self.free_hit.copy()
        hit[self.iv_request[np.asarray(kept, dtype=bool)]] = True
        return hit


def partition_capacities(trace: Trace, capacity: int, dist: bool) -> list[int]:
    """The capacity of every partition: ``[C]``, or ``layout.dist_shares(C)`` with ``dist``."""
    if dist:
        return [int(c) for c in trace.layout.dist_shares(capacity)]
    return [int(capacity)]


def build(trace: Trace, caps: list[int], *, dist: bool, costs: np.ndarray,
          sizes: np.ndarray | None) -> IntervalModel:
    """The interval model of ``trace`` (see the module docstring).

    ``caps`` holds the capacity of every partition (:func:`partition_capacities`). ``sizes=None``
    means every page occupies one unit (a cache of k pages); otherwise page p occupies
    ``sizes[p]`` units (bytes of a budget). ``costs`` has one entry per page id. O(N log N).
    """
    n = trace.n_requests
    caps = [int(c) for c in caps]
    pages = trace.pages
    if dist:
        part, local = trace.layers, trace.steps // trace.layout.n_layers
    else:
        part, local = np.zeros(n, dtype=np.int64), trace.steps
    caps_arr = np.asarray(caps, dtype=np.int64)
    req_size = np.ones(n, dtype=np.int64) if sizes is None else sizes[pages].astype(np.int64)
    cacheable = req_size <= caps_arr[part]

    # local steps per partition: H_z = max local step + 1 (every step of a partition occurs)
    n_parts = len(caps)
    H = np.zeros(n_parts, dtype=np.int64)
    if n:
        np.maximum.at(H, part, local + 1)
    node0 = np.r_[0, np.cumsum(H + 1)[:-1]].astype(np.int64)
    n_nodes = int((H + 1).sum())
    step_id = node0[part] + local  # global id of the request's step (= node before the step)

    # load of every step and the room left for kept intervals
    load = np.bincount(step_id, weights=np.where(cacheable, req_size, 0),
                       minlength=n_nodes).astype(np.int64) if n else np.zeros(n_nodes, np.int64)
    is_step = np.ones(n_nodes, dtype=bool)
    is_step[node0 + H] = False  # the last node of each partition closes it: no step
    node_part = np.repeat(np.arange(n_parts), H + 1)
    room = caps_arr[node_part] - load
    bad = np.flatnonzero(is_step & (room < 0))
    if bad.size:
        u = int(bad[0])
        z = int(node_part[u])
        where = f"layer {z}" if dist else "the cache"
        unit = "slot(s)" if sizes is None else "byte(s)"
        what = (f"a group of {int(load[u])} pages" if sizes is None
                else f"a group of {int(load[u])} bytes")
        raise PagingError(f"the optimum needs every group to fit in its partition: {where} has "
                          f"{caps[z]} {unit} but {what} (groups mode); use a larger capacity")
    chain_tail = np.flatnonzero(is_step)
    chain_cap = room[chain_tail]

    # previous request of the same page (a page stays in one partition)
    order = np.argsort(pages, kind="stable")
    same = np.r_[False, pages[order][1:] == pages[order][:-1]] if n else np.zeros(0, bool)
    prev = np.full(n, -1, dtype=np.int64)
    prev[order[same]] = order[np.flatnonzero(same) - 1]
    has_prev = prev >= 0
    gap = np.where(has_prev, local - local[np.maximum(prev, 0)], 0)
    free_hit = cacheable & has_prev & (gap == 1)
    is_iv = cacheable & has_prev & (gap >= 2)
    iv_request = np.flatnonzero(is_iv)
    iv_head = step_id[iv_request]
    iv_tail = step_id[prev[iv_request]] + 1
    costs = np.asarray(costs, dtype=np.float64)
    return IntervalModel(
        n_requests=n, n_nodes=n_nodes, chain_tail=chain_tail, chain_cap=chain_cap,
        chain_load=load[chain_tail], part_source=node0, part_sink=node0 + H,
        iv_tail=iv_tail, iv_head=iv_head, iv_size=req_size[iv_request],
        iv_cost=costs[pages[iv_request]], iv_request=iv_request, free_hit=free_hit,
        fixed_miss=~cacheable | ~has_prev, bypassed=~cacheable, capacities=caps)


def schedule_cost(trace: Trace, hit: np.ndarray, costs: np.ndarray) -> float:
    """The exact cost ``fsum(w(p) over the misses of hit)`` of a schedule (``math.fsum``)."""
    import math

    miss_pages = trace.pages[~np.asarray(hit, dtype=bool)]
    return math.fsum(np.asarray(costs, dtype=np.float64)[miss_pages].tolist())
