"""The outcome of one simulated run (:class:`Result`), shared by the reference loop
(:mod:`paging.simulate`) and the compiled kernels (:mod:`paging.fast`).

It lives in its own module so that the kernels sit *below* the simulator: ``paging.fast``
imports this module, ``paging.simulate`` imports ``paging.fast``, and nothing imports back.

Weighted paging (Young 1994; DESIGN.md "per-page weights"): a page p has a fetch cost
w(p) >= 0 and a size s(p) >= 1. A run's ``cost`` is the sum of w over the fetched pages (every
miss fetches its page, a bypass included) and ``bytes_fetched`` the sum of s over them; both
come from the per-page miss counts by one function (:func:`weighted_totals`), so the two
engines agree to the last bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from paging.errors import INT64_MAX


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Veltkamp's split of doubles into two halves of 26 bits (exact: hi + lo == a)."""
    c = 134217729.0 * a  # 2^27 + 1
    hi = c - (c - a)
    return hi, a - hi


def exact_dot(counts: np.ndarray, values: np.ndarray) -> float:
    """Σ counts[i]·values[i] correctly rounded to a double: each product is split exactly into
    two doubles (Dekker's TwoProduct; counts < 2^53) and the parts summed with
    :func:`math.fsum`. Equal to ``math.fsum`` over the values repeated counts times, so the
    verifier's per-miss sum and the result's per-page sum agree to the last bit."""
    c = np.asarray(counts, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    p = c * v
    ch, cl = _split(c)
    vh, vl = _split(v)
    err = ((ch * vh - p) + ch * vl + cl * vh) + cl * vl
    return math.fsum(np.concatenate([p, err]).tolist())


def weighted_totals(page_misses: np.ndarray, costs: np.ndarray | None,
                    sizes: np.ndarray | None) -> tuple[float, int | None]:
    """``(cost, bytes_fetched)`` of a run from its per-page miss counts.

    ``cost = Σ_p misses(p)·w(p)``, the exact sum rounded once (:func:`exact_dot`), or the number
    of misses when ``costs`` is None (unit costs); ``bytes_fetched = Σ_p misses(p)·s(p)`` (exact
    integers), None when ``sizes`` is None.
    """
    m = np.asarray(page_misses, dtype=np.int64)
    if costs is None:
        cost = float(m.sum())
    else:
        nz = np.flatnonzero(m)
        cost = exact_dot(m[nz], np.asarray(costs, dtype=np.float64)[nz])
    nbytes = None
    if sizes is not None:
        s = np.asarray(sizes, dtype=np.int64)
        if m.size and int(m.sum()) * max(int(s.max()), 0) > INT64_MAX:  # (int64 would wrap)
            nz = np.flatnonzero(m)
            nbytes = sum(a * b for a, b in zip(m[nz].tolist(), s[nz].tolist(), strict=True))
        else:
            nbytes = int(np.dot(m, s))
    return cost, nbytes


@dataclass
class Result:
    """Outcome of one run.

    ``k`` is the cache size in pages, or None for a byte-budget run (then ``budget`` holds the
    budget in bytes). ``capacity`` is the integer the partitions split: k, or the budget.
    ``cost`` is Σ w(p) over the misses (= ``misses`` with unit costs), ``bytes_fetched``
    Σ s(p) over the misses (None when the run had no sizes). ``page_misses[p]`` counts the
    misses on page p. ``hit_mask``, ``evictions`` (rows ``(t, page)``) and ``bypassed`` (request
    indices) are filled when the run was asked to ``record``.

    Runs with a prefetcher or a miss handler (:mod:`paging.miss`, :mod:`paging.predict.prefetch`)
    also fill ``dropped``, ``substituted`` (then ``requests = hits + misses + dropped +
    substituted``, ``misses`` = the fetched requests), ``extra`` (their counters, added to
    :meth:`to_dict`) and, when recorded, ``events`` (the logs :func:`paging.verify.verify`
    replays). On default runs these stay 0/None and every count is unchanged.
    """

    policy: str
    k: int | None
    trace: str
    requests: int
    misses: int
    per_layer_misses: np.ndarray
    collision_misses: int = 0
    bypasses: int = 0
    seed: int | None = None
    dist: bool = False
    budget: int | None = None
    cost: float = 0.0
    bytes_fetched: int | None = None
    page_misses: np.ndarray | None = field(default=None, repr=False)
    hit_mask: np.ndarray | None = field(default=None, repr=False)
    evictions: np.ndarray | None = field(default=None, repr=False)
    bypassed: np.ndarray | None = field(default=None, repr=False)
    dropped: int = 0
    substituted: int = 0
    extra: dict | None = None
    events: dict | None = field(default=None, repr=False)
    #: each layer's capacity when a per-layer policy fixed other shares than the DIST ones
    #: (:meth:`paging.policies.dist.PerLayer.shares`; None: ``dist_shares(capacity)``), which
    #: :func:`paging.verify.verify` holds the run to
    shares: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def hits(self) -> int:
        """requests = hits + misses + dropped + substituted (:mod:`paging.miss`)."""
        return self.requests - self.misses - self.dropped - self.substituted

    @property
    def miss_ratio(self) -> float:
        return self.misses / self.requests if self.requests else 0.0

    @property
    def capacity(self) -> int:
        """What the partitions split: k pages, or the byte budget."""
        return int(self.budget if self.k is None else self.k)

    def to_dict(self) -> dict:
        d = {
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
            "cost": self.cost,
            "bytes_fetched": self.bytes_fetched,
        }
        if self.budget is not None:
            d["budget_bytes"] = self.budget
        if self.extra is not None:  # prefetching / miss handling (absent on default runs)
            d.update(self.extra)
        return d


def build_result(*, policy: str, k: int | None, budget: int | None, trace: str, requests: int,
                 page_misses: np.ndarray, n_layers: int, collisions: int, bypasses: int,
                 seed: int | None, dist: bool, costs: np.ndarray | None,
                 sizes: np.ndarray | None, hit_mask=None, evictions=None,
                 bypassed=None) -> Result:
    """A :class:`Result` with the derived totals (misses, per-layer misses, cost, bytes)
    computed in one place for both engines."""
    pm = np.asarray(page_misses, dtype=np.int64)
    cost, nbytes = weighted_totals(pm, costs, sizes)
    return Result(
        policy=policy, k=k, trace=trace, requests=int(requests), misses=int(pm.sum()),
        per_layer_misses=pm.reshape(n_layers, -1).sum(axis=1), collision_misses=int(collisions),
        bypasses=int(bypasses), seed=seed, dist=dist, budget=budget, cost=cost,
        bytes_fetched=nbytes, page_misses=pm, hit_mask=hit_mask, evictions=evictions,
        bypassed=bypassed)
