"""ZipMoE's hierarchical cache-pool planner (Yang et al., Sec. 3.4 "Hierarchical Cache
Planning", App. C Algorithms 3-4), and a replay of a trace through the pools it chooses.

The planner (Algorithm 4), as this module reads it:

1. per layer z, the rank-based inclusion probabilities ``f`` of the trace (in-sample,
   :func:`paging.zipmoe.hitmodel.inclusion_probabilities`, renormalised to sum to k) and their
   selection probabilities ``q`` (App. D, :func:`~paging.zipmoe.hitmodel.selection_probabilities`);
2. every memory split ``γ`` over the active pools Λ ⊆ {F, C, S, E} on a grid of step δ
   (``γ_p ∈ {0, δ, 2δ, ..., 1}``, ``Σ γ_p = 1``), enumerated from ``γ_F = 1`` down in
   lexicographic order; Algorithm 4 starts from ``(1, 0, 0, 0)`` and keeps a split only when it
   is *strictly* cheaper, so ties go to the earliest split;
3. experts per layer of each pool (Algorithm 4 line 6): ``S_p = floor(γ_p B / (ℓ · bytes_p))``
   (:func:`paging.cost.pools.pool_capacities`: the byte budget B split evenly over the ℓ layers,
   one partition for all layers, capped at n experts in hierarchy order);
4. the expected makespan of a layer: ``Σ_h P(h | Σh = k) · Alg3(h)`` over the hit patterns of
   Sec. 3.4 (:func:`~paging.zipmoe.hitmodel.hit_pattern_distribution`) and Algorithm 3's
   estimate (:func:`~paging.zipmoe.scheduler.estimate_makespan`), averaged over the layers
   (each decoded token crosses every layer once, so per token it is ℓ times that);
5. the split with the lowest expected makespan.

Algorithm 4's loops print ``h_F = 0..S_F`` and ``break`` when ``k_rem < 0``; we sum over exactly
the patterns with ``0 <= h_p <= min(S_p, k)`` and ``0 <= k_rem <= |M|`` (the rest have
probability 0). Algorithm 3 excludes GPU time (App. C: "excluding token execution").

The replay (:func:`replay`): ZipMoE's runtime dispatch (Sec. 3.4 "Pool Dispatching") puts an
expert in the first pool of F ≺ C ≺ S ≺ E whose cumulative rank threshold its *runtime*
frequency rank is below, evicting the least frequent on overflow. We read it with tolerance
δ = 0 as nested frequency-ranked caches: level j of the hierarchy is a perfect-LFU cache (the
one simulator, :func:`paging.simulate.simulate`, policy ``lfu-dist``: per-layer partitions of
``τ_j = S_F + ... + S_j`` experts) and a request is in the first pool whose level hits it
(LFU is a stack algorithm, so the levels nest; :func:`replay` counts any request where they do
not). Each (token, layer) group's hit pattern then gets Algorithm 3's estimate and the exact
makespan of Algorithm 1's schedule (:func:`~paging.zipmoe.scheduler.run_alg`), with and
without the GPU time p of each expert.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from paging.cost.pools import POOLS, PoolTimes, form_bytes, pool_capacities
from paging.errors import PagingError, positive_int
from paging.progress import bar
from paging.zipmoe import scheduler as zs
from paging.zipmoe.hitmodel import (
    _probabilities,
    hit_pattern_distribution,
    pool_ranges,
    selection_probabilities,
)

__all__ = ["check_pools", "split_grid", "alg3", "expected_makespan", "expected_makespan_exact",
           "layer_selection_probabilities", "Plan", "plan", "replay", "schedule_makespans",
           "plan_trace"]


# -- validation ---------------------------------------------------------------------------------
def check_pools(pools) -> tuple[str, ...]:
    """The active pools Λ as a tuple in hierarchy order (``"FCSE"``, ``"CS"``, ...)."""
    if not isinstance(pools, (str, tuple, list)) or not pools:
        raise PagingError(f"pools must be a non-empty subset of F, C, S, E, got {pools!r}")
    items = tuple(pools)
    bad = [p for p in items if p not in POOLS]
    if bad or len(set(items)) != len(items):
        raise PagingError(f"pools must be distinct letters among F, C, S, E, got {pools!r}")
    return tuple(p for p in POOLS if p in items)


def _delta(delta) -> int:
    """``1/δ`` as an int (the grid has steps of δ); δ in (0, 1] with 1/δ an integer."""
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real) or not 0 < delta <= 1:
        raise PagingError(f"the grid step delta must be a number in (0, 1], got {delta!r}")
    d = Fraction(str(delta)) if isinstance(delta, float) else Fraction(delta)
    if d.numerator != 1:
        raise PagingError(f"the grid step delta must be 1/m for an integer m (0.05, 0.1, 0.25), "
                          f"got {delta!r}")
    return d.denominator


#: the most splits :func:`plan` walks (``C(m + |Λ| - 1, |Λ| - 1)``, m = 1/δ): δ = 0.05 over
#: four pools is 1,771, δ = 0.01 176,851 (about 4 s); δ = 0.005, 1,373,701 splits, runs well
#: under a minute with a progress bar; δ = 0.001 would be 167,668,501
MAX_SPLITS = 2_000_000


def grid_size(pools, delta) -> int:
    """The number of splits of :func:`split_grid`, ``C(m + |Λ| - 1, |Λ| - 1)`` for m = 1/δ,
    computed without making them."""
    r = len(check_pools(pools)) - 1
    return math.comb(_delta(delta) + r, r)


def check_grid(pools, delta) -> int:
    """:func:`grid_size`, refused up front beyond :data:`MAX_SPLITS` with the size it would
    need (``--delta 1e-9`` walked 10^26 splits without a word)."""
    n = grid_size(pools, delta)
    if n > MAX_SPLITS:
        raise PagingError(f"the grid step delta={delta!r} over the pools "
                          f"{''.join(check_pools(pools))} makes {n:,} splits; expected at most "
                          f"{MAX_SPLITS:,} (a larger delta such as 0.01 or 0.05, or fewer "
                          "pools)")
    return n


def split_grid(pools, delta):
    """Algorithm 4 line 5: every ``γ`` with ``Σ_{p∈Λ} γ_p = 1``, ``γ_p ∈ δ·{0, 1, ..}``,
    ``γ_p = 0`` outside Λ, as ``{pool: Fraction}``, first ``γ_{first pool} = 1`` then
    lexicographically decreasing; made one at a time (an iterator). ``C(m + |Λ| - 1, |Λ| - 1)``
    splits for ``m = 1/δ`` (:func:`grid_size`).

    >>> [tuple(str(g[p]) for p in "FC") for g in split_grid("FC", 0.5)]
    [('1', '0'), ('1/2', '1/2'), ('0', '1')]
    """
    lam = check_pools(pools)
    m = _delta(delta)
    for head in _heads(m, len(lam) - 1):
        parts = (*head, m - sum(head))
        yield ({p: Fraction(i, m) for p, i in zip(lam, parts, strict=True)}
               | {p: Fraction(0) for p in POOLS if p not in lam})


def _heads(m: int, r: int):
    """Every ``r``-tuple of non-negative integers with sum <= m, lexicographically decreasing
    (``itertools.product(range(m, -1, -1), repeat=r)`` filtered, without its m^r candidates)."""
    if r == 0:
        yield ()
        return
    for first in range(m, -1, -1):
        for rest in _heads(m - first, r - 1):
            yield (first, *rest)


# -- Algorithm 3 --------------------------------------------------------------------------------
def alg3(h, k: int, t: PoolTimes):
    """Algorithm 3 (App. C) in ms for hit counts ``h = (h_F, h_C, h_S, h_E)`` (arrays
    broadcast; ints give a float): ``n_SM = n(k - h_F - h_C - h_S)``, ``n_E = nK(k - h_F - h_C -
    h_E)``, ``T_IO = n_SM·u + n_E·v``, ``n_D = nK(k - h_F)``, ``T_decomp = (n_E·v + n_D·c)/L``,
    ``max{T_IO, T_decomp}`` with n = ``t.tensors`` tensors per expert. Same formula as
    :func:`paging.zipmoe.scheduler.estimate_makespan` (exact arithmetic there). O(1)."""
    hF, hC, hS, hE = h
    n, K = t.tensors, t.K
    n_sm = n * (k - hF - hC - hS)
    n_e = n * K * (k - hF - hC - hE)
    t_io = n_sm * t.u + n_e * t.v
    n_d = n * K * (k - hF)
    return np.maximum(t_io, (n_e * t.v + n_d * t.c) / t.L)


def _sizes(sizes) -> tuple[int, int, int, int]:
    if isinstance(sizes, dict):
        sizes = tuple(sizes.get(p, 0) for p in POOLS)
    if len(sizes) != 4:
        raise PagingError(f"pool sizes must be four counts (F, C, S, E), got {sizes!r}")
    return tuple(int(s) for s in sizes)


class _Layer:
    """One layer's ``q`` with the truncated Poisson-binomial law of every rank interval cached
    (Algorithm 2; entries 0..k only, which later ranks never change) and ``Φ_N(k)``."""

    def __init__(self, q, k: int):
        self.q = np.asarray([float(x) for x in _probabilities(q)])
        self.k = k
        self.cache: dict = {}
        self.total = self.phi(0, self.q.size)[k] if k <= self.q.size else 0.0
        if not self.total > 0:
            raise PagingError(f"no k-subset has positive probability under q (k = {k})")

    def phi(self, lo: int, hi: int) -> np.ndarray:
        key = (lo, hi)
        if key not in self.cache:
            phi = np.zeros(self.k + 1)
            phi[0] = 1.0
            for qr in self.q[lo:hi]:          # Algorithm 2, lines 5-10, truncated at k
                phi[1:] = phi[1:] * (1 - qr) + phi[:-1] * qr
                phi[0] *= 1 - qr
            self.cache[key] = phi
        return self.cache[key]


class _Delays:
    """Algorithm 3 on the whole ``(k+1)^4`` grid of patterns, and ``k_rem`` there."""

    def __init__(self, k: int, t: PoolTimes):
        a = np.arange(k + 1)
        h = np.meshgrid(a, a, a, a, indexing="ij")
        rem = k - sum(h)
        self.ok = rem >= 0
        self.rem = np.clip(rem, 0, k)
        self.delay = alg3(h, k, t)


def _expected(layer: _Layer, sz, delays: _Delays) -> float:
    ranges = pool_ranges(sz, layer.q.size)
    ph = [layer.phi(rg.start, rg.stop) for rg in ranges]
    joint = np.einsum("a,b,c,d->abcd", *ph[:4])
    pm = np.where(delays.ok, ph[4][delays.rem], 0.0)
    return float(np.sum(joint * pm * delays.delay) / layer.total)


def expected_makespan(q, sizes, k: int, t: PoolTimes) -> float:
    """Expected Algorithm-3 makespan (ms) of one layer with selection probabilities ``q`` over
    the ranks and pools of ``sizes = (S_F, S_C, S_S, S_E)`` experts on ranks 0, 1, ... (Sec. 3.4,
    Algorithm 4 lines 7-29), vectorised over the ``(k+1)^4`` patterns: ``P(h) = Φ_M(k - Σh)
    Π_p Φ_p(h_p) / Φ_N(k)``. Equals :func:`expected_makespan_exact` (tested). O(n k + k⁴)."""
    k = positive_int("k (experts selected per token and layer)", k)
    return _expected(_Layer(q, k), _sizes(sizes), _Delays(k, t))


def expected_makespan_exact(q, sizes, k: int, t: PoolTimes, law=None):
    """Reference for :func:`expected_makespan`: the pattern law of
    :func:`~paging.zipmoe.hitmodel.hit_pattern_distribution` (or ``law``, e.g. the brute force
    :func:`~paging.zipmoe.hitmodel.hit_pattern_bruteforce`) times
    :func:`~paging.zipmoe.scheduler.estimate_makespan`, term by term. With Fraction ``q`` and
    rational times the result is an exact Fraction (times taken via ``Fraction(str(x))``)."""
    sz = _sizes(sizes)
    law = hit_pattern_distribution(q, sz, k) if law is None else law
    fr = {nm: Fraction(str(getattr(t, nm))) for nm in ("c", "v", "u")}
    out = 0
    for h, p in law.items():
        out += p * zs.estimate_makespan(k, tuple(h[:4]), fr["c"], fr["v"], fr["u"], t.L, t.K,
                                        t.tensors)
    return out


# -- the planner --------------------------------------------------------------------------------
def layer_selection_probabilities(f, k: int) -> list[np.ndarray]:
    """``q`` per layer from the per-layer inclusion probabilities ``f[z]`` (rows), each row
    scaled to sum to k first (groups with fewer than k distinct experts are rare; as
    :func:`~paging.zipmoe.hitmodel.predicted_hit_patterns`)."""
    out = []
    for z, fz in enumerate(np.atleast_2d(np.asarray(f, dtype=float))):
        _probabilities(fz, f"f[{z}]")
        if fz.sum() <= 0:
            raise PagingError(f"layer {z} has no requests: no inclusion probabilities")
        out.append(selection_probabilities(np.minimum(fz * (k / fz.sum()), 1.0), k))
    return out


@dataclass
class Plan:
    """Algorithm 4's answer: the split ``ratios`` (γ per pool), the experts per layer of each
    pool ``sizes``, the expected Algorithm-3 makespan per layer and per token (ms), and the
    number of splits (``evaluated``) and of distinct pool sizes (``distinct``) on the grid."""

    pools: tuple
    ratios: dict
    sizes: dict
    layer_ms: float
    token_ms: float
    evaluated: int
    distinct: int
    table: list = field(default_factory=list, repr=False)

    def to_dict(self) -> dict:
        return {"pools": "".join(self.pools),
                "ratios": {p: float(g) for p, g in self.ratios.items()},
                "ratios_exact": {p: str(g) for p, g in self.ratios.items()},
                "sizes": dict(self.sizes), "predicted_layer_ms": self.layer_ms,
                "predicted_token_ms": self.token_ms, "splits_evaluated": self.evaluated,
                "distinct_partitions": self.distinct}


def plan(qs, k: int, budget: int, n: int, forms: dict, t: PoolTimes, pools="FCSE",
         delta=0.05, allow_empty: bool = False) -> Plan:
    """Algorithm 4: the split of ``budget`` bytes over ``pools`` minimising the expected
    Algorithm-3 makespan averaged over the layers whose selection probabilities are ``qs``.

    Parameters
    ----------
    qs: one ``q`` per layer (:func:`layer_selection_probabilities`), each of length n.
    k: experts selected per (token, layer); budget: bytes (at least one expert per layer in
    the smallest active form);
    n: experts per layer; forms: bytes of one expert per pool
    (:func:`paging.cost.pools.form_bytes`); t: the times (:func:`paging.cost.pools.pool_times`);
    pools: Λ; delta: the grid step δ (1/m); allow_empty: accept a budget that holds no expert
    (every request then misses; used for the F-only baseline at small budgets).

    ``table`` holds one row per distinct partition: ``(sizes tuple, layer ms)``. Cost:
    O(#distinct partitions · ℓ · (n² + k⁴)).
    """
    lam = check_pools(pools)
    k = positive_int("k (experts selected per token and layer)", k)
    n = positive_int("n (experts per layer)", n)
    if isinstance(budget, bool) or not isinstance(budget, numbers.Integral) or budget < 1:
        raise PagingError(f"the budget must be a number of bytes >= 1, got {budget!r}")
    layers = len(qs)
    smallest = min(forms[p] for p in lam)
    if budget < smallest * layers and not allow_empty:  # one expert per layer at least
        raise PagingError(f"a budget of {budget:,} bytes holds no expert: {layers} layers need "
                          f"at least {smallest * layers:,} bytes for one expert each in the "
                          f"smallest form of the pools {''.join(lam)} ({smallest:,} bytes)")
    n_splits = check_grid(lam, delta)
    model = [_Layer(q, k) for q in qs]
    delays = _Delays(k, t)
    memo: dict = {}
    best, best_cost = None, math.inf
    # a bar (on a terminal) when the grid is large: δ = 0.005 is over a million splits
    with bar(n_splits, "plan splits", unit="split",
             show=None if n_splits > 50_000 else False) as pb:
        for g in split_grid(lam, delta):
            pb.update()
            sz = pool_capacities(budget, layers, n, g, forms)
            key = tuple(sz[p] for p in POOLS)
            if key not in memo:
                memo[key] = float(np.mean([_expected(m, key, delays) for m in model]))
            if memo[key] < best_cost:          # strictly cheaper only (Algorithm 4 line 30)
                best, best_cost = (g, sz), memo[key]
    g, sz = best
    return Plan(lam, g, sz, best_cost, best_cost * layers, n_splits, len(memo),
                sorted(memo.items()))


# -- replay through the pools ---------------------------------------------------------------------
def replay(trace, sizes, policy: str = "lfu-dist", seed: int = 0) -> dict:
    """Hit patterns of ``trace`` (groups mode) with the pools of ``sizes`` (experts per layer)
    as nested caches of the one simulator (module docstring). Returns ``{"patterns": {(h_F,
    h_C, h_S, h_E, h_M): count}, "groups": int, "nesting_violations": int}``; a group's
    pattern counts its distinct requests by the first level that hits them (M: none)."""
    from paging.simulate import simulate

    if trace.expand != "groups":
        raise PagingError(f"trace {trace.name}: the replay needs groups expansion "
                          "(expand='groups'): one (token, layer) selection per step")
    sz = _sizes(sizes)
    L = trace.layout.n_layers
    N = trace.n_requests
    level = np.full(N, 4, dtype=np.int64)         # 4 = miss pool
    prev = np.zeros(N, dtype=bool)
    violations = 0
    tau = 0
    for j, s in enumerate(sz):
        if s == 0:
            continue
        tau += s
        hits = simulate(trace, policy, k=tau * L, seed=seed, record="hits").hit_mask
        violations += int(np.sum(prev & ~hits))
        level[(level == 4) & hits] = j
        prev = prev | hits
    steps = np.asarray(trace.steps)
    _, grp = np.unique(steps, return_inverse=True)
    hist = np.zeros((grp.max() + 1 if N else 0, 5), dtype=np.int64)
    np.add.at(hist, (grp, level), 1)
    patterns: dict = {}
    for row in map(tuple, hist.tolist()):
        patterns[row] = patterns.get(row, 0) + 1
    return {"patterns": patterns, "groups": int(hist.shape[0]),
            "nesting_violations": violations}


def _as_fraction(x: float, unit: float) -> Fraction:
    return Fraction(x / unit).limit_denominator(10_000)


def schedule_makespans(pattern, t: PoolTimes) -> tuple[float, float]:
    """Exact makespans (ms) of Algorithm 1's schedule (:func:`~paging.zipmoe.scheduler.run_alg`)
    for one hit pattern ``(h_F, h_C, h_S, h_E, h_M)``: ``(reconstruction, with GPU)``.

    Experts in states C, S, E, M (in that order, Def. B.2; F hits need no reconstruction) with
    ``t.tensors`` tasks each; time unit ``u/K`` so that ``u = K``, ``ρu/K = ρ`` and ``c =
    c·K/u`` are exact (ρ and c to 1e-4 relative, ``limit_denominator``). *Reconstruction*: GPU
    times 0, the quantity Algorithm 3 estimates. *With GPU*: every selected expert runs for
    ``p`` on the one GPU stream, F hits first (ready at 0), the others in the schedule's
    priority order once reconstructed (the work-conserving rule of App. A)."""
    hF, hC, hS, hE, hM = (int(x) for x in pattern)
    states = ("C",) * hC + ("S",) * hS + ("E",) * hE + ("M",) * hM
    unit = t.u / t.K
    p = _as_fraction(t.p, unit)
    if not states:                        # F hits only: the GPU runs them back to back
        return 0.0, hF * t.p
    inst = zs.Instance(states, (0,) * len(states), t.K, _as_fraction(t.v * t.K / t.u, 1.0),
                       _as_fraction(t.c, unit), t.K, t.L, t.tensors)
    blocks = zs.cache_affinity_blocks(inst)
    s = zs.execute(inst, blocks)
    # with p = 0 the GPU starts every expert at its ready time: those are the ready times
    order = []
    for B in blocks:
        for task in B:
            if task[0] not in order:
                order.append(task[0])
    ready = [Fraction(0)] * hF + [s.starts[("G", e)] for e in order]
    g = Fraction(0)
    waiting = list(range(len(ready)))
    while waiting:
        t0 = max(g, min(ready[i] for i in waiting))
        i = next(x for x in waiting if ready[x] <= t0)
        waiting.remove(i)
        g = t0 + p
    with_gpu = max(g, s.makespan)
    return float(s.makespan) * unit, float(with_gpu) * unit


#: chunks per group (k experts · tensors · K shards) from which the exact schedules of the
#: replayed patterns get a bar (on a terminal): their cost grows with the square of the chunks,
#: about 4.6 s a pattern at K = 400 on Mixtral (2,400 chunks), against 0.02 s at the default 6
EXACT_BAR_CHUNKS = 1_000


def _pattern_means(patterns: dict, t: PoolTimes, exact: bool, memo: dict) -> dict:
    groups = sum(patterns.values())
    est = recon = gpu = 0.0
    if exact:
        todo = [h for h in patterns if h not in memo]
        chunks = max((sum(h) for h in todo), default=0) * t.tensors * t.K
        with bar(len(todo), "Algorithm 1 schedules of the replayed patterns", unit="pattern",
                 show=None if chunks >= EXACT_BAR_CHUNKS else False) as pb:
            for h in todo:
                memo[h] = schedule_makespans(h, t)
                pb.update()
    for h, cnt in patterns.items():
        k = sum(h)
        est += cnt * float(alg3(h[:4], k, t))
        if exact:
            recon += cnt * memo[h][0]
            gpu += cnt * memo[h][1]
    out = {"groups": groups, "alg3_layer_ms": est / groups,
           "mean_hits": [sum(h[i] * c for h, c in patterns.items()) / groups for i in range(5)]}
    if exact:
        out["alg1_layer_ms"] = recon / groups
        out["alg1_gpu_layer_ms"] = gpu / groups
    return out


def plan_trace(trace, model, hardware, budget: int, params=None, pools="FCSE", delta=0.05,
               precision="bf16", exact: bool = True, memo: dict | None = None) -> dict:
    """Plan the pools for one sequence and compare with its replay (``paging plan``).

    The trace must be in groups mode with the model's layout. Returns a dict with the plan
    (:meth:`Plan.to_dict`), the baseline without compressed pools (Λ = {F}: every budget byte
    to full experts, misses still read compressed chunks), the uncompressed reference (F pool
    only, a miss reads the raw BF16 tensors ``2u`` each and needs no decompression: Algorithm 3
    with ``v = c = 0`` and ``u`` doubled), and for the plan and the F-only baseline: the
    predicted per-layer/per-token ms, the replay through the one simulator (Algorithm 3 and,
    with ``exact``, Algorithm 1 on the actual patterns) and the same with *static* pools on the
    in-sample ranks (the model's own assumption; :func:`~paging.zipmoe.hitmodel.
    empirical_hit_patterns`)."""
    from dataclasses import replace

    from paging.cost.pools import ZipParams, pool_times
    from paging.zipmoe.hitmodel import empirical_hit_patterns, inclusion_probabilities

    params = params or ZipParams()
    model.check_layout(trace)
    k = model.top_k
    if trace.n_requests:  # (no group of k experts: no hit pattern to average, a division by 0)
        from paging.trace import group_starts

        sizes = np.diff(np.r_[group_starts(trace.steps), trace.n_requests])
        if not (sizes == k).any():
            raise PagingError(f"trace {trace.name} routes {int(sizes.max())} experts a token "
                              f"and layer, the model {model.name} top-{k}; expected the "
                              "model's top-K (a router: spec's k=)")
    L = trace.layout.n_layers
    forms = form_bytes(model, precision, params.rho)
    t = pool_times(model, hardware, params, precision)
    qs = layer_selection_probabilities(inclusion_probabilities(trace), k)
    memo = {} if memo is None else memo
    out = {"trace": trace.name, "model": model.name, "hardware": hardware.name,
           "precision": precision if isinstance(precision, str) else precision.name,
           "budget_bytes": int(budget), "k": k, "layers": L, "n": trace.layout.n_experts,
           "rho": params.rho, "L": params.threads, "K": params.shards, "u_ms": t.u,
           "v_ms": t.v, "c_ms": t.c, "p_ms": t.p, "tensors": t.tensors, "form_bytes": forms}
    raw = replace(t, u=2 * t.u, v=0.0, c=0.0)
    for name, lam in (("plan", pools), ("baseline", "F")):
        pl = plan(qs, k, budget, trace.layout.n_experts, forms, t, lam, delta,
                  allow_empty=name == "baseline")
        sz = tuple(pl.sizes[p] for p in POOLS)
        row = pl.to_dict()
        rep = replay(trace, sz)
        sim = _pattern_means(rep["patterns"], t, exact, memo)
        row["simulated"] = sim | {"nesting_violations": rep["nesting_violations"],
                                  "alg3_token_ms": sim["alg3_layer_ms"] * L}
        if exact:
            row["simulated"]["alg1_token_ms"] = sim["alg1_layer_ms"] * L
            row["simulated"]["alg1_gpu_token_ms"] = sim["alg1_gpu_layer_ms"] * L
        static, _ = empirical_hit_patterns(trace, sz, k)
        row["static"] = _pattern_means(static, t, False, memo)
        if name == "baseline":
            row["uncompressed_predicted_layer_ms"] = float(np.mean(
                [expected_makespan(q, sz, k, raw) for q in qs]))
            row["uncompressed_simulated_layer_ms"] = _pattern_means(
                rep["patterns"], raw, False, {})["alg3_layer_ms"]
        out[name] = row
    return out
