"""ZipMoE's rank-based hit model (Yang et al., Sec. 3.4 "Hierarchical Cache Planning", App. C
Algorithm 2, App. D Theorem D.1 = Theorem 3.2).

The model, as this module reads it:

1. *Ranks* (Sec. 3.4 "Rank-Based Workload Modeling"): in each layer the experts are ranked by
   how often the trace selects them (rank 1 = most often; ties broken by the lower expert id);
   ``f_r`` is the fraction of (token, layer) groups of that layer that select the rank-r expert
   (the *inclusion probability*; with top-k routing ``sum_r f_r = k``).
2. *Selection probabilities* ``q_r`` (App. D): the paper samples k-subsets by independent
   Bernoulli(q_r) trials conditioned on exactly k successes (conditional Bernoulli / conditional
   Poisson sampling). App. C calls ``q`` the "normalized counterpart" of ``f``; App. D, which the
   proof of Theorem 3.2 needs, obtains it from Chen, Dempster & Liu (Biometrika 1994): weights
   ``w`` with ``P(S) ∝ prod_{i in S} w_i`` and inclusion probabilities exactly ``f``, then
   ``q_i = w_i / (1 + w_i)``. We follow App. D (:func:`selection_probabilities`).
3. *Per-pool counts* (Sec. 3.4, Algorithm 2): pools are contiguous rank intervals; the number of
   selected experts in a pool under the *unconditioned* Bernoulli trials is Poisson-binomial,
   computed by the DP ``Φ(h) <- Φ(h)(1 - q_r) + Φ(h - 1) q_r`` (:func:`poisson_binomial`).
4. *Joint hit pattern* (Sec. 3.4): ``P(h | sum h = k) = Φ_M(k_rem) / Φ_N(k) · prod_p Φ_p(h_p)``
   with the miss pool M = the ranks in no pool (:func:`hit_pattern_distribution`).

Every function that takes probabilities accepts ``fractions.Fraction`` (exact arithmetic) where
it says so; the tests compare with brute-force enumeration exactly.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Sequence

import numpy as np

from paging.errors import PagingError, positive_int

__all__ = ["rank_counts", "inclusion_probabilities", "selection_probabilities",
           "poisson_binomial", "pool_ranges", "hit_pattern_distribution",
           "hit_pattern_bruteforce", "subset_distribution", "conditional_marginals", "entropy",
           "max_entropy_subsets", "same_marginals_perturbation", "empirical_hit_patterns",
           "predicted_hit_patterns", "trace_fit", "TRACE_FIT_SOURCES"]


# -- validation --------------------------------------------------------------------------------
def _probabilities(q, name: str = "q", open_interval: bool = False) -> list:
    """``q`` as a list, each entry a real number in [0, 1] (or (0, 1)), else a PagingError."""
    try:
        items = list(q)
    except TypeError:
        raise PagingError(f"{name} must be a sequence of probabilities, got {q!r}") from None
    for i, x in enumerate(items):
        if isinstance(x, bool) or not isinstance(x, numbers.Real) or not (0 <= x <= 1) \
                or (open_interval and not 0 < x < 1):
            rng = "(0, 1)" if open_interval else "[0, 1]"
            raise PagingError(f"{name}[{i}] must be a probability in {rng}, got {x!r}")
    return items


def _k(k, n: int) -> int:
    k = positive_int("k (experts selected per token and layer)", k)
    if k > n:
        raise PagingError(f"k must be at most the number of experts n = {n}, got k = {k}")
    return k


# -- 1. ranks from a trace ---------------------------------------------------------------------
def _groups(trace) -> tuple[np.ndarray, np.ndarray]:
    """(group key, layer) of every request: one group per (token, layer)."""
    L = trace.layout.n_layers
    if trace.token is not None:
        key = np.asarray(trace.token, dtype=np.int64) * L + trace.layers
    elif trace.is_grouped:
        key = np.asarray(trace.steps, dtype=np.int64)
    else:
        raise PagingError(f"trace {trace.name}: needs token ids or groups expansion to know "
                          "which requests form one (token, layer) selection")
    return key, np.asarray(trace.layers)


def rank_counts(trace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-layer activation counts sorted into frequency ranks (Sec. 3.4).

    Returns ``(counts, order, groups)``: ``counts[z, r]`` how many (token, layer-z) groups
    selected the rank-r expert of layer z (rank 0 = most frequent; ties by lower expert id),
    ``order[z, r]`` that expert's id, ``groups[z]`` the number of groups of layer z. A group is
    one (token, layer) selection (:func:`_groups`); an expert listed twice in a group counts once.
    O(N + ℓ n log n) for N requests.
    """
    n, L = trace.layout.n_experts, trace.layout.n_layers
    key, _ = _groups(trace)
    expert = np.asarray(trace.pages) % n
    uniq = np.unique(key * n + expert)           # distinct (group, expert)
    g, e = uniq // n, uniq % n
    z = g % L                                     # key mod ℓ is the layer in both cases
    counts = np.zeros((L, n), dtype=np.int64)
    np.add.at(counts, (z, e), 1)
    groups = np.zeros(L, dtype=np.int64)
    np.add.at(groups, np.unique(key) % L, 1)
    order = np.lexsort((np.broadcast_to(np.arange(n), (L, n)), -counts), axis=1)
    return np.take_along_axis(counts, order, axis=1), order, groups


def inclusion_probabilities(trace) -> np.ndarray:
    """``f[z, r]``: the fraction of layer-z groups that select the rank-r expert (Sec. 3.4's
    rank-based marginal inclusion probability list, one list per layer). O(N + ℓ n log n)."""
    counts, _, groups = rank_counts(trace)
    return counts / np.maximum(groups, 1)[:, None]


# -- 2. Chen, Dempster & Liu (1994): selection probabilities from inclusion probabilities ------
def _esp(w: Sequence, k: int) -> list:
    """Elementary symmetric polynomials e_0..e_k of ``w`` (App. D Eq. 23, R(j, N)). O(nk)."""
    e = [w[0] * 0 + 1] + [w[0] * 0] * k if len(w) else [1] + [0] * k
    for x in w:
        for j in range(k, 0, -1):
            e[j] = e[j] + x * e[j - 1]
    return e


def conditional_marginals(q: Sequence, k: int) -> list:
    """Inclusion probabilities of conditional Bernoulli sampling: P(i in S | |S| = k) for
    independent X_i ~ Bernoulli(q_i) (App. D Eq. 24 with w_i = q_i/(1 - q_i)). Exact with
    Fractions; q_i = 1 is allowed (the expert is always in). O(n²k)."""
    q = _probabilities(q)
    n = len(q)
    k = _k(k, n)
    out = []
    total = poisson_binomial(q)[k]
    if total == 0:
        raise PagingError(f"no k-subset has positive probability under q (k = {k})")
    for i in range(n):
        rest = poisson_binomial(q[:i] + q[i + 1:])
        out.append(q[i] * rest[k - 1] / total)
    return out


def selection_probabilities(f: Sequence[float], k: int, tol: float = 1e-11,
                            max_iter: int = 20_000) -> np.ndarray:
    """Selection probabilities ``q`` whose conditional-Bernoulli k-subset law has inclusion
    probabilities exactly ``f`` (App. D, after Chen, Dempster & Liu, Biometrika 81(3) 1994).

    Iterates ``w_i <- w_i · f_i / f_i(w)`` from ``w = f``, where ``f_i(w) = w_i R(k-1, N∖i) /
    R(k, N)`` (Eq. 24). The printed update ``w_i · f_i / R(k, N)`` is a PDF-conversion garble or
    slip (it is not scale invariant and does not fix ``f``); Chen et al.'s step divides by
    ``f_i^{(t)}``, the quantity Eq. 24 defines and never uses otherwise. Experts with f_i = 0
    get q_i = 0 and those with f_i = 1 get q_i = 1 (they are in every subset); the rest are
    fitted on the remaining k' slots. Returns q with ``q_i = w_i / (1 + w_i)``, where ``w`` is
    scaled so that ``max w = 1`` (q is unique only up to that scale, Chen et al.). Converges
    geometrically; O(n² k) per iteration.

    Raises PagingError unless every f_i is in [0, 1] and ``sum f = k`` (to 1e-9 · k).
    """
    f = np.asarray(_probabilities(f, "f"), dtype=float)
    n = f.size
    k = _k(k, n)
    if abs(f.sum() - k) > 1e-9 * k:
        raise PagingError(f"inclusion probabilities must sum to k = {k} (top-k routing selects "
                          f"exactly k experts), got {f.sum():.12g}")
    q = np.where(f >= 1.0, 1.0, 0.0)
    free = (f > 0) & (f < 1)
    kk = k - int((f >= 1.0).sum())
    if kk <= 0 or not free.any():
        return q
    ff = f[free]
    w = ff.copy()
    for _ in range(max_iter):
        e = _esp(list(w), kk)
        # R(kk-1, N∖i) for every i at once, by the stable (subtraction-free) DP on each row
        E = np.zeros((w.size, kk))
        E[:, 0] = 1.0
        for j in range(w.size):
            row = np.arange(w.size) != j
            E[row, 1:] = E[row, 1:] + w[j] * E[row, :-1]
        r = E[:, kk - 1]
        fit = w * r / e[kk]
        w = w * ff / fit
        w /= w.max()
        if np.max(np.abs(fit - ff)) < tol:
            break
    else:  # pragma: no cover - geometric convergence (Chen et al.), kept as a guard
        raise PagingError("selection_probabilities did not converge; are the f feasible?")
    q[free] = w / (1.0 + w)
    return q


# -- 3. Algorithm 2: the Poisson-binomial DP -----------------------------------------------------
def poisson_binomial(q: Sequence) -> list:
    """Algorithm 2 (App. C; Sec. 3.4's ``DP[i][j][p]``): ``Φ(h)`` = P(exactly h of independent
    Bernoulli(q_r) trials succeed), h = 0..|q|. Generic arithmetic: Fractions give exact
    values. O(|q|²).

    >>> from fractions import Fraction
    >>> poisson_binomial([Fraction(1, 2), Fraction(1, 3)])
    [Fraction(1, 3), Fraction(1, 2), Fraction(1, 6)]
    """
    q = _probabilities(q)
    one = q[0] * 0 + 1 if q else 1
    phi = [one] + [one * 0] * len(q)
    for qr in q:
        for h in range(len(q), 0, -1):       # Algorithm 2 lines 6-8, h from |S| down to 1
            phi[h] = phi[h] * (1 - qr) + phi[h - 1] * qr
        phi[0] = phi[0] * (1 - qr)           # line 10
    return phi


def pool_ranges(sizes: Sequence[int], n: int) -> list[range]:
    """Rank ranges of the pools (0-based ranks), in order, plus the miss pool M (the tail of the
    rank list) last: pool p holds ranks ``[u_p, v_p]`` with ``v_p - u_p + 1 = S_p`` (Sec. 3.4
    "we map the cache pools onto the expert frequency ranks sequentially"). O(P)."""
    n = positive_int("n (experts per layer)", n)
    out, lo = [], 0
    for i, s in enumerate(sizes):
        if isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 0:
            raise PagingError(f"pool size {i} must be an integer >= 0, got {s!r}")
        out.append(range(lo, lo + int(s)))
        lo += int(s)
    if lo > n:
        raise PagingError(f"the pools hold {lo} experts but a layer has only n = {n}")
    out.append(range(lo, n))
    return out


def hit_pattern_distribution(q: Sequence, sizes: Sequence[int], k: int) -> dict:
    """The joint hit pattern of Sec. 3.4: ``P(h | sum h = k) = Φ_M(k_rem)/Φ_N(k) · prod_p
    Φ_p(h_p)``, for pools of ``sizes`` on ranks 0, 1, ... and the miss pool M on the rest.

    Returns ``{(h_1, ..., h_P, h_M): probability}`` over every pattern with positive
    probability (h_M = k_rem = k - sum h_p). Exact with Fractions. O(n² + number of patterns·P).
    Raises PagingError when no k-subset has positive probability.
    """
    q = _probabilities(q)
    k = _k(k, len(q))
    ranges = pool_ranges(sizes, len(q))
    phis = [poisson_binomial([q[r] for r in rg]) for rg in ranges]
    total = poisson_binomial(q)[k]                 # Φ_N(k), the global DP table
    if total == 0:
        raise PagingError(f"no k-subset has positive probability under q (k = {k})")
    out = {}
    for h in itertools.product(*(range(min(len(rg), k) + 1) for rg in ranges[:-1])):
        rem = k - sum(h)
        if rem < 0 or rem > len(ranges[-1]):
            continue
        p = phis[-1][rem]
        for hp, phi in zip(h, phis[:-1], strict=True):
            p = p * phi[hp]
        if p:
            out[(*h, rem)] = p / total
    return out


def hit_pattern_bruteforce(q: Sequence, sizes: Sequence[int], k: int) -> dict:
    """Reference for :func:`hit_pattern_distribution`: enumerate all 2^n outcomes of the
    independent Bernoulli(q) trials, keep those with exactly k successes, count successes per
    pool, normalise. Exact with Fractions. O(2^n n)."""
    q = _probabilities(q)
    n = len(q)
    k = _k(k, n)
    ranges = pool_ranges(sizes, n)
    pool_of = [next(i for i, rg in enumerate(ranges) if r in rg) for r in range(n)]
    out: dict = {}
    total = 0
    for bits in itertools.product((0, 1), repeat=n):
        if sum(bits) != k:
            continue
        p = 1
        for b, qr in zip(bits, q, strict=True):
            p = p * (qr if b else 1 - qr)
        if not p:
            continue
        h = [0] * len(ranges)
        for r, b in enumerate(bits):
            h[pool_of[r]] += b
        out[tuple(h)] = out.get(tuple(h), 0) + p
        total = total + p
    if not total:
        raise PagingError(f"no k-subset has positive probability under q (k = {k})")
    return {h: p / total for h, p in out.items()}


# -- Theorem 3.2: subset laws and entropy --------------------------------------------------------
def subset_distribution(q: Sequence, k: int) -> dict[tuple[int, ...], object]:
    """The k-subset law of the DP procedure (App. D Eq. 19-22): P(S) ∝ prod_{i in S} q_i
    prod_{i not in S} (1 - q_i) over the C(n, k) subsets S (sorted tuples). Exact with
    Fractions. O(C(n, k) n)."""
    q = _probabilities(q)
    n = len(q)
    k = _k(k, n)
    weights = {}
    for S in itertools.combinations(range(n), k):
        p = 1
        for i in range(n):
            p = p * (q[i] if i in S else 1 - q[i])
        weights[S] = p
    total = sum(weights.values())
    if not total:
        raise PagingError(f"no k-subset has positive probability under q (k = {k})")
    return {S: p / total for S, p in weights.items()}


def entropy(dist) -> float:
    """Shannon entropy in nats of a distribution given as a mapping or sequence of masses."""
    vals = dist.values() if isinstance(dist, dict) else dist
    return -sum(float(p) * math.log(float(p)) for p in vals if p > 0)


def _constraints(n: int, k: int) -> tuple[list, np.ndarray]:
    subsets = list(itertools.combinations(range(n), k))
    A = np.array([[1.0 if i in S else 0.0 for S in subsets] for i in range(n)])
    return subsets, A


def max_entropy_subsets(f: Sequence[float], k: int, tol: float = 1e-13,
                        max_sweeps: int = 20_000) -> dict[tuple[int, ...], float]:
    """An *independent* solution of App. D's program (15): the maximum-entropy distribution on
    k-subsets with inclusion probabilities ``f``, by classical iterative proportional fitting
    on the subsets themselves (Deming & Stephan 1940; Csiszár, Ann. Prob. 1975): start from the
    uniform law on the C(n, k) subsets and, for each expert i in turn, rescale the subsets that
    contain i to total mass f_i and the others to 1 - f_i. The limit is the I-projection of the
    uniform law onto the constraint set, i.e. its maximum-entropy member. No use of the product
    form Eq. 18, of Chen et al.'s weights or of the DP. For n <= 8 (at most 70 subsets).
    Stops when every marginal is within ``tol``. O(C(n, k) n) per sweep."""
    f = np.asarray(_probabilities(f, "f"), dtype=float)
    n = f.size
    k = _k(k, n)
    if n > 8:
        raise PagingError(f"max_entropy_subsets is for small instances (n <= 8), got n = {n}")
    if abs(f.sum() - k) > 1e-9 * k:
        raise PagingError(f"inclusion probabilities must sum to k = {k}, got {f.sum():.12g}")
    subsets, A = _constraints(n, k)
    x = np.full(len(subsets), 1.0 / len(subsets))
    inside = A.astype(bool)
    for _ in range(max_sweeps):
        for i in range(n):
            a = x[inside[i]].sum()
            x[inside[i]] *= f[i] / a if a > 0 else 0.0
            b = x[~inside[i]].sum()
            x[~inside[i]] *= (1.0 - f[i]) / b if b > 0 else 0.0
        if np.max(np.abs(A @ x - f)) < tol:
            break
    return dict(zip(subsets, x, strict=True))


def same_marginals_perturbation(dist: dict, n: int, k: int, scale: float = 0.5) -> dict:
    """A *different* distribution with the same inclusion probabilities as ``dist``: move mass
    along a null-space direction of the marginal constraints (scipy.linalg.null_space), as far
    as ``scale`` times the largest step that keeps every mass >= 0. Used as the power check of
    Theorem 3.2 (its entropy must be strictly lower). Requires C(n, k) > n + 1 - (k == n)..."""
    from scipy.linalg import null_space

    subsets, A = _constraints(n, k)
    M = np.vstack([A, np.ones(len(subsets))])
    N = null_space(M)
    if N.shape[1] == 0:
        raise PagingError(f"with n = {n}, k = {k} the marginals determine the distribution")
    d = N[:, 0]
    x = np.array([float(dist[S]) for S in subsets])
    neg = d < -1e-14
    step = np.min(x[neg] / -d[neg]) if neg.any() else 1.0
    return dict(zip(subsets, np.clip(x + scale * step * d, 0.0, None), strict=True))


# -- real traces: predicted vs empirical hit patterns --------------------------------------------
def empirical_hit_patterns(trace, sizes: Sequence[int], k: int) -> tuple[dict, int]:
    """Counts of hit patterns in a trace: for each (token, layer) group that selects exactly k
    distinct experts, how many of them fall in each pool (ranks of that layer from
    :func:`rank_counts`, in-sample). Returns ``({pattern: count}, groups skipped)``. O(N)."""
    n, L = trace.layout.n_experts, trace.layout.n_layers
    ranges = pool_ranges(sizes, n)
    _, order, _ = rank_counts(trace)
    rank_of = np.empty_like(order)
    rank_of[np.arange(L)[:, None], order] = np.arange(n)[None, :]
    pool_of_rank = np.empty(n, dtype=np.int64)
    for i, rg in enumerate(ranges):
        pool_of_rank[list(rg)] = i
    key, layer = _groups(trace)
    expert = np.asarray(trace.pages) % n
    uniq, first = np.unique(key * n + expert, return_index=True)
    g, e = uniq // n, uniq % n
    z = layer[first]
    pool = pool_of_rank[rank_of[z, e]]
    groups, start = np.unique(g, return_index=True)
    sizes_g = np.diff(np.append(start, g.size))
    hist = np.zeros((groups.size, len(ranges)), dtype=np.int64)
    np.add.at(hist, (np.repeat(np.arange(groups.size), sizes_g), pool), 1)
    keep = sizes_g == k
    counts: dict = {}
    for row in map(tuple, hist[keep]):
        counts[row] = counts.get(row, 0) + 1
    return counts, int((~keep).sum())


def predicted_hit_patterns(trace, sizes: Sequence[int], k: int, pooled: bool = False) -> dict:
    """The model's hit-pattern law for a trace: per layer, ``q`` from that layer's ``f``
    (:func:`selection_probabilities`) and :func:`hit_pattern_distribution`, mixed with weights
    = the layer's share of groups. ``pooled=True`` uses one rank list for all layers (the mean of
    the per-layer ``f``, Sec. 3.4's identity-agnostic abstraction). O(ℓ · IPF + patterns)."""
    f = inclusion_probabilities(trace)
    _, _, groups = rank_counts(trace)
    if pooled:
        f, weights = f.mean(axis=0, keepdims=True), np.array([1.0])
    else:
        weights = groups / groups.sum()
    out: dict = {}
    for fz, wz in zip(f, weights, strict=True):
        fz = fz * (k / fz.sum())        # groups with != k experts are rare; renormalise to k
        dist = hit_pattern_distribution(list(selection_probabilities(np.minimum(fz, 1.0), k)),
                                        sizes, k)
        for h, p in dist.items():
            out[h] = out.get(h, 0.0) + wz * float(p)
    return out


def _fit_row(name: str, counts: dict, pred: dict, sizes, k: int, rng) -> dict:
    from scipy.stats import chi2

    N = sum(counts.values())
    cells = sorted(set(counts) | set(pred))
    obs = np.array([counts.get(c, 0) for c in cells], dtype=float)
    exp = np.array([pred.get(c, 0.0) for c in cells]) * N
    tv = 0.5 * float(np.abs(obs / N - exp / N).sum())
    # Pearson chi-square; cells with expected count < 5 are merged into one cell
    small = exp < 5
    o = np.append(obs[~small], obs[small].sum())
    e = np.append(exp[~small], exp[small].sum())
    if e[-1] == 0:
        o, e = o[:-1], e[:-1]
    stat = float(np.sum((o - e) ** 2 / np.where(e > 0, e, 1.0)))
    dof = max(int(o.size) - 1, 1)
    # sampling noise: the TV of N draws from the model itself (parametric bootstrap, 200 draws)
    p = exp / exp.sum()
    tvs = [0.5 * np.abs(rng.multinomial(N, p) / N - p).sum() for _ in range(200)]
    P = len(sizes) + 1
    mean_obs = [float(sum(c[i] * v for c, v in counts.items()) / N) for i in range(P)]
    mean_pred = [float(sum(c[i] * v for c, v in pred.items())) for i in range(P)]
    return {"trace": name, "k": k, "pools": list(sizes), "groups": N, "cells": len(cells),
            "tv": tv, "tv_noise_95": float(np.quantile(tvs, 0.95)), "chi2": stat, "dof": dof,
            "p_value": float(chi2.sf(stat, dof)), "mean_hits_observed": mean_obs,
            "mean_hits_predicted": mean_pred}


#: (file under $PAGING_TRACES, k, pool sizes): mixtral n = 8 top-2, granite n = 32 top-8.
TRACE_FIT_SOURCES = (
    ("mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl", 2, (2, 2, 2)),
    ("granite-3.0-1b-a400m-instruct/moe_expert_trace.json", 8, (8, 8, 8)),
)


def trace_fit(sources=TRACE_FIT_SOURCES, seed: int = 0, pooled: bool = False) -> list[dict]:
    """Goodness of fit of the hit model on real traces: one row per sequence with the total
    variation distance between the empirical and predicted laws of "how many of the k selected
    experts fall in each pool" (pools on ranks 0.., the miss pool last), the 95% quantile of that
    distance under sampling noise alone (N draws from the model, seeded), Pearson's chi-square
    (cells with expected count < 5 merged), its degrees of freedom and p-value, and the mean
    hits per pool observed and predicted (equal by construction: the model matches the
    marginals). Traces are read with :func:`paging.io.load` (``$PAGING_TRACES``)."""
    from paging.io import load

    rng = np.random.default_rng(seed)
    rows = []
    for path, k, sizes in sources:
        for tr in load(path, expand="groups"):
            counts, skipped = empirical_hit_patterns(tr, sizes, k)
            pred = predicted_hit_patterns(tr, sizes, k, pooled=pooled)
            row = _fit_row(tr.name, counts, pred, sizes, k, rng)
            row["skipped_groups"] = skipped
            row["model"] = "pooled ranks" if pooled else "per-layer ranks"
            rows.append(row)
    return rows
