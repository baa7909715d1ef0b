"""Theorem 4 of Angelopoulos et al. 2025: Yao's distribution for randomized layered paging.

    Every randomized algorithm for ℓ-layered paging with n experts (cache k = nℓ − 1) has
    competitive ratio at least max(H_n, log(ℓ)/(6n)).

Construction (proof of Theorem 4, via Yao's principle): request t is a uniformly random expert
of layer t mod ℓ (the paper writes "layer i mod ℓ" for 1-based layers L_1..L_ℓ, i.e. off by one:
Sec. 2.2 puts request i in layer (i − 1 mod ℓ) + 1). Against a deterministic algorithm A:

1. A's cache misses one of the nℓ pages; the round requests that page's layer once, uniformly,
   so P(A misses in a round) >= 1/n and E[A(σ)] >= R/n on R rounds. (The printed
   "E(A(σ)) >= |σ|/(ℓ_n)" is a garble of |σ|/(ℓn) = R/n.)
2. OPT (Belady) misses once per *block*. The proof equates a block with the parallel coupon
   collector's cover time, E[block] = ℓ·E[T(n, ℓ)] requests, and concludes
   Cr >= E[T(n, ℓ)]/n. That overestimates the block: after a miss at layer j on page p, OPT
   evicts the page whose next request is furthest, and the next miss is the first request of
   that page, i.e. the block ends when the *other* k pages have all been requested. So layer j
   needs only the n − 1 pages other than p, and the layers after j start drawing in the same
   round. With F_m(q) = P(q uniform draws from n types include m given types)
   = sum_i (−1)^i C(m, i) (1 − i/n)^q, and the layers at offsets d = 1..ℓ − 1 (needing n types)
   and d = ℓ (layer j, needing n − 1):

       P(L <= qℓ + u) = F_n(q + 1)^u · F_n(q)^(ℓ−1−u) · F_{n−1}(q),   u = 0..ℓ−1,
       E[L] = sum_{q>=0} sum_{u<ℓ} (1 − P(L <= qℓ + u)),

   the same for every starting layer (rotation symmetry), so by the renewal theorem
   E[OPT(σ)] ~ Rℓ/E[L] and the proof's argument gives exactly

       Cr >= ρ(n, ℓ) = E[L]/(ℓn)   (:func:`yao_value`),

   and no more: "evict a page of the current layer" attains E[A] = R/n + O(1). Term by term
   E[L] < ℓ·E[T(n, ℓ)], so ρ(n, ℓ) < E[T(n, ℓ)]/n: the intermediate claim is too strong. For
   ℓ = 1, ρ = H_{n−1} = H_k (the classical value), below the claimed H_n: Theorem 4 fails at
   ℓ = 1, where H_k-competitive algorithms exist (McGeoch & Sleator, Algorithmica 6, 1991;
   Achlioptas, Chrobak & Noga, TCS 234, 2000). For ℓ >= 2, ρ(n, ℓ) >= H_n on every grid point
   of :mod:`proofs.theorem4` (equality at n = ℓ = 2), so the stated bound survives there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from math import comb

import numpy as np

from adversaries.base import (
    AdversaryResult,
    certify_random,
    exact_ratio,
    layout_of,
    policy_of,
    require_k,
    seed_of,
    steady_ratio,
)
from paging.coupon import coverage_terms, harmonic, power_sum_product
from paging.errors import PagingError, positive_int
from paging.generators import uniform
from paging.policies.base import Policy

NAME = "theorem4"

#: Largest number of coefficient products the exact expansion of E[L] will attempt.
EXACT_WORK_LIMIT = 200_000


# -- the exact value of the proof's argument -------------------------------------------------------

def _cdf_terms(m: int, n: int, shift: int) -> dict[int, Fraction]:
    """F_m(q + shift) as {b: a} meaning sum_b a·(b/n)^q (:func:`paging.coupon.coverage_terms`
    with (b/n)^shift folded into the coefficients)."""
    return {b: Fraction(a * b**shift, n**shift) for b, a in coverage_terms(m, n).items()}


def _opt_block_mean_exact(n: int, L: int) -> Fraction:
    budget = EXACT_WORK_LIMIT

    def mul(a: dict, b: dict) -> dict:
        nonlocal budget
        budget -= len(a) * len(b)
        if budget < 0:
            raise OverflowError
        return power_sum_product(a, b)

    A, B, C = _cdf_terms(n, n, 1), _cdf_terms(n, n, 0), _cdf_terms(n - 1, n, 0)
    pow_a = [{1: Fraction(1)}]
    for _ in range(L - 1):
        pow_a.append(mul(pow_a[-1], A))
    bc = [C]  # bc[v] = F_n(q)^v · F_{n-1}(q)
    for _ in range(L - 1):
        bc.append(mul(bc[-1], B))
    total = Fraction(0)
    d = n ** L  # every product has ℓ factors: base = key / n^ℓ
    for u in range(L):
        prod = mul(pow_a[u], bc[L - 1 - u])
        assert prod.get(d) == 1  # the constant term: 1 - P(L <= s) -> 0
        # sum_{q>=0} (1 - sum_b a_b (b/d)^q) = -sum_{b<d} a_b · d/(d - b)
        total -= sum((a * Fraction(d, d - b) for b, a in prod.items() if b != d), Fraction(0))
    return total


def _cdf_float(m: int, n: int, q_max: int) -> np.ndarray:
    """F_m(q), q = 0..q_max, from the chain 'j of the m given types seen' (no cancellation)."""
    out = np.empty(q_max + 1)
    dist = np.zeros(m + 1)
    dist[0] = 1.0
    step = np.array([(m - j) / n for j in range(m + 1)])
    for q in range(q_max + 1):
        out[q] = dist[m]
        moved = dist * step
        dist = dist - moved
        dist[1:] += moved[:-1]
    return out


def _tail_length(n: int, L: int) -> int:
    """q_max of :func:`_tail_probabilities`: P(L > s) <= ℓ·n·((n−1)/n)^(s/ℓ − 1) (union bound
    over layers and types), so the series stops where that is below 1e-18."""
    return math.ceil((math.log(L * n) + 42.0) / math.log(n / (n - 1))) + 2


#: the largest n of :func:`build`: its exact values (ρ by :func:`opt_block_moments`, E[T(n, ℓ)]
#: by :func:`paging.coupon.expected_cover_time`) take time quadratic in n (n = 10,000: 5 s and
#: 21 s measured; n = 100,000 would be about an hour, with no progress to show)
MAX_BUILD_N = 15_000


def check_values(n: int, L: int) -> None:
    """Refuse up front an (n, ℓ) whose values :func:`build` cannot compute in reasonable time
    and memory (before any sequence is drawn): n above :data:`MAX_BUILD_N`, or a tail table of
    (q_max + 1)·ℓ floats (and its temporaries, 32 bytes each) beyond the available memory."""
    from paging.memory import available, human

    if n > MAX_BUILD_N:
        raise PagingError(f"{NAME} computes rho(n, l) and E[T(n, l)]/n by series quadratic in n "
                          f"(n = 10,000: about 25 s); expected n <= {MAX_BUILD_N:,}, got "
                          f"n={n:,}")
    need = 32 * (_tail_length(n, L) + 1) * L
    if need > available():
        raise PagingError(f"{NAME}: the series of rho(n, l) for n={n:,}, layers={L:,} needs "
                          f"about {human(need)} of memory; this machine has "
                          f"{human(available())} available: expected fewer experts or layers")


def _tail_probabilities(n: int, L: int) -> np.ndarray:
    """P(L > qℓ + u) as an array [q, u] (floating point, no cancellation)."""
    q_max = _tail_length(n, L)
    fn, fm = _cdf_float(n, n, q_max + 1), _cdf_float(n - 1, n, q_max)
    with np.errstate(divide="ignore"):
        ln, lm = np.log(fn), np.log(fm)  # -inf where F = 0 (too few draws)
    out = np.empty((q_max + 1, L))
    for u in range(L):
        s = lm.copy()
        if u:
            s += u * ln[1:q_max + 2]
        if L - 1 - u:
            s += (L - 1 - u) * ln[:q_max + 1]
        out[:, u] = -np.expm1(s)  # 1 - P(L <= qℓ+u)
    return out


def opt_block_moments(n: int, layers: int) -> tuple[float, float]:
    """(E[L], Var L) in floating point: E[L²] = sum_s (2s + 1)·P(L > s).

    The block lengths between OPT's misses are i.i.d. (each depends only on the draws after the
    miss, and its law does not depend on the layer, by rotation symmetry), so by the renewal
    central limit theorem OPT's count on N requests has mean ≈ N/E[L] and variance
    ≈ N·Var(L)/E[L]³; :mod:`proofs.theorem4` uses it for its statistical tolerance.
    """
    n, L = positive_int("n", n, 2), positive_int("layers", layers)
    tail = _tail_probabilities(n, L)
    s = np.arange(tail.size, dtype=np.float64).reshape(tail.shape)  # s = qℓ + u
    mean = math.fsum(tail.ravel().tolist())
    second = math.fsum(((2 * s + 1) * tail).ravel().tolist())
    return mean, second - mean * mean


def opt_block_mean(n: int, layers: int, exact: bool | None = None) -> Fraction | float:
    """E[L]: expected requests from one OPT miss to the next on the uniform layered sequence.

    Exact (Fraction) for small n, ℓ (or when ``exact=True``); floating point otherwise
    (:func:`opt_block_moments`, the series truncated at a tail below 1e-18). See the module
    docstring for the formula.
    """
    n, L = positive_int("n", n, 2), positive_int("layers", layers)
    # distinct bases after u and ℓ − u factors are at most C(n+u, u)·C(n+ℓ−u, ℓ−u): skip the
    # exact attempt when even that bound is far beyond the budget
    est = sum(comb(n + u, u) * comb(n + L - u, L - u) for u in range(L))
    if exact is None and est > 20 * EXACT_WORK_LIMIT:
        exact = False
    if exact is not False:
        try:
            return _opt_block_mean_exact(n, L)
        except OverflowError:
            if exact:
                raise PagingError(f"n={n}, layers={L} is too large for the exact series") from None
    return opt_block_moments(n, L)[0]


def yao_value(n: int, layers: int, exact: bool | None = None) -> Fraction | float:
    """ρ(n, ℓ) = E[L]/(ℓn): what the proof's distribution forces, lim E[A]/E[OPT] for the best A.

    >>> yao_value(2, 1), yao_value(2, 2)   # H_1 (= H_k, k = 1) and H_2
    (Fraction(1, 1), Fraction(3, 2))
    """
    el = opt_block_mean(n, layers, exact)
    return el / (layers * n)


def cover_time_ratio(n: int, layers: int, exact: bool | None = None) -> Fraction | float:
    """E[T(n, ℓ)]/n, the proof's intermediate bound (:mod:`paging.coupon`).

    ``exact=None``: a Fraction when :func:`paging.coupon.expected_cover_time_exact` accepts
    (n, ℓ) (it refuses large cases up front, in microseconds), else a float; ``exact=False``:
    always the floating-point series (what :func:`build` reports); ``exact=True``: a Fraction or
    a :class:`PagingError`.
    """
    from paging.coupon import expected_cover_time, expected_cover_time_exact

    if exact is not False:
        try:
            return expected_cover_time_exact(n, layers) / n
        except PagingError:
            if exact:
                raise
    return expected_cover_time(n, layers) / n


def stated_bound(n: int, layers: int) -> Fraction | float:
    """max(H_n, log(ℓ)/(6n)), the bound stated in Theorem 4 (natural log): the exact Fraction
    H_n when it is the larger term (ties included), else the float log(ℓ)/(6n)."""
    h = harmonic(n)
    lg = math.log(layers) / (6 * n)
    return h if h >= lg else lg


def default_rounds(layers: int) -> int:
    """max(500, 40000/ℓ) rounds: about 40,000 requests per sequence, at least 500 rounds."""
    return max(500, 40_000 // layers)


def build(policy: str | Policy = "lru", *, n: int, layers: int, rounds: int | None = None,
          k: int | None = None, seed: int | None = 0, sequences: int = 4,
          show: bool | None = None) -> AdversaryResult:
    """Estimate E[A]/E[OPT] on Theorem 4's distribution for one registered policy.

    Parameters
    ----------
    policy : str or Policy
        Any policy; randomized ones get an independent seed per sequence.
    n, layers : int
        n >= 2 experts per layer (Theorem 5 needs N >= 2), ℓ >= 1 layers.
    rounds : int, optional
        Rounds per sequence (default :func:`default_rounds`).
    k : int, optional
        Must be nℓ − 1 if given.
    seed : int or None
        Seeds the sequences and the policy's randomness (``numpy.random.SeedSequence``; None
        draws fresh entropy).
    sequences : int
        Independent sequences; the ratio is total A over total OPT (at most
        :data:`~adversaries.base.MAX_SEQUENCES`).
    show : bool, optional
        The progress bar over the sequences (default: on a terminal).

    Returns
    -------
    AdversaryResult
        ``bound`` = max(H_n, log(ℓ)/(6n)) (:func:`stated_bound`); ``params`` holds ρ(n, ℓ)
        (:func:`yao_value`), E[T(n, ℓ)]/n (floating point), the steady-state ratio
        (A − k)/(OPT − k) summed over sequences (drops the k compulsory misses both must make),
        and per-round miss rates next to 1/n (step 1) and ℓ/E[L] (OPT's rate).
    """
    return build_many([policy], n=n, layers=layers, rounds=rounds, k=k, seed=seed,
                      sequences=sequences, show=show)[0]


def build_many(policies: Sequence[str | Policy], *, n: int, layers: int,
               rounds: int | None = None, k: int | None = None, seed: int | None = 0,
               sequences: int = 4, show: bool | None = None) -> list[AdversaryResult]:
    """:func:`build` for several policies on the same sequences: the sequences, OPT's misses and
    the exact values are computed once; result i is what ``build(policies[i], ...)`` returns."""
    lay = layout_of(n, layers)
    n, L = lay.n_experts, lay.n_layers
    if n < 2:
        raise PagingError(f"{NAME} needs n >= 2 experts per layer (Theorem 5 assumes N >= 2), "
                          f"got n={n}")
    k = require_k(k, n * L - 1, NAME, "nl = k + 1 in the proof")
    check_values(n, L)
    R = default_rounds(L) if rounds is None else positive_int("rounds", rounds)
    S = positive_int("sequences", sequences)
    seed = seed_of(seed)
    pols = [policy_of(p) for p in policies]

    def draw(rng: np.random.Generator, j: int):
        # request t is a uniform expert of layer t mod ℓ (the proof's distribution)
        return uniform(n, L, R, seed=rng,
                       name=f"theorem4:n={n},layers={L},rounds={R},seed={seed}#{j}")

    traces, per_policy = certify_random(pols, k, draw, sequences=S, seed=seed, show=show,
                                          requests=R * L)
    el = opt_block_mean(n, L)
    common = {"n": n, "layers": L, "rounds": R, "seed": seed, "sequences": S,
              "yao_value": el / (L * n), "cover_time_ratio": cover_time_ratio(n, L, exact=False)}
    bound = stated_bound(n, L)
    out = []
    for pol, per_seq in zip(pols, per_policy, strict=True):
        online = sum(a for a, _ in per_seq)
        opt = sum(o for _, o in per_seq)
        out.append(AdversaryResult(
            name=NAME, policy=pol.name, k=k, trace=traces[0], online_misses=online,
            opt_misses=opt, ratio=exact_ratio(online, opt), bound=bound,
            bound_name="max(H_n, log(l)/(6n))",
            params={**common, "steady_ratio": steady_ratio(online, opt, k, S),
                    "online_per_round": Fraction(online, R * S), "one_over_n": Fraction(1, n),
                    "opt_per_round": Fraction(opt, R * S), "opt_rate_predicted": L / el,
                    "per_sequence": per_seq},
            traces=traces))
    return out
