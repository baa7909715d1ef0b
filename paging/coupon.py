"""The parallel coupon collector: exact cover times, Monte Carlo, and Theorem 5's bound.

There are N coupon types and C collectors; in every round each collector draws one coupon type
uniformly at random, independently of everything else, and collectors do not share. ``T(N, C)``
is the number of rounds after which *every* collector holds all N types; its mean is the *cover
time*. The problem is studied by M. Ferrante and A. Tagliavini, "On the coupon-collector's
problem with several parallel collections", arXiv:1609.04174, 2016 (ref. [12] of Angelopoulos
et al.); C = 1 is the classical coupon collector, E[T(N, 1)] = N·H_N (e.g. G. Blom, L. Holst,
D. Sandell, *Problems and Snapshots from the World of Probability*, Springer 1994, ref. [4]).

Angelopoulos et al. (Sec. 3.2, Theorem 5) prove ``E[T(N, C)] >= max(N·H_N, log(C)/6)`` for
N >= 2; :mod:`proofs.theorem5` checks that bound against the exact values below. The paper's
proof of Theorem 4 (randomized layered paging) uses the cover time through the step
"Cr >= E[T(n, ℓ)]/n"; :mod:`adversaries.theorem4` and the ledger (:mod:`proofs.theorem4`) show
why that argument gives only the smaller ρ(n, ℓ) = E[L]/(ℓn) < E[T(n, ℓ)]/n.

Exact values
------------
The collectors are independent and identical, so with ``S(t) = P(T(N, 1) > t)``

    P(T(N, C) <= t) = (1 - S(t))**C,       E[T(N, C)] = sum_{t>=0} 1 - (1 - S(t))**C.

* :func:`expected_cover_time` (floating point, any N, C) computes ``S(t)`` from the Markov chain
  of the number of distinct coupons held by one collector, phase by phase: T(N, 1) is a sum of
  independent geometric phases with success probabilities (N-j)/N, j = 0..N-1, and adding a
  geometric phase to X is the positive recurrence ``S_Y(t) = q·S_Y(t-1) + p·S_X(t-1)``. Every
  quantity is a sum of non-negative terms, so nothing cancels (the inclusion-exclusion formula
  ``S(t) = sum_j (-1)^(j+1) binom(N, j) (1-j/N)^t`` loses all digits in double precision for N in
  the hundreds). The series is truncated with a proven tail bound (see the function).
* :func:`expected_cover_time_exact` (exact rational, small N and C) sums the same series in
  closed form through inclusion-exclusion with exact integers.
"""

from __future__ import annotations

import math
from fractions import Fraction
from math import comb

import numpy as np

from paging.errors import PagingError, positive_int

#: Two-sided 95% normal quantile, Phi^{-1}(0.975).
_Z95 = 1.959963984540054


#: the largest N of the series (:func:`expected_cover_times`): its cost is N·t_max with
#: t_max ~ 40·N terms, quadratic in N (N = 1,000 0.75 s, 3,000 2.7 s, 10,000 28 s measured)
MAX_SERIES_N = 15_000

#: the longest :func:`monte_carlo_cover_time` run taken, in estimated seconds
#: (:func:`mc_estimate`); a longer one is refused up front with its estimate
MAX_MC_SECONDS = 1200.0
#: the most bytes one chunk of :func:`monte_carlo_cover_time` holds (its coupon flags and
#: per-collector counters): C collectors of one trial are one chunk however many they are
MAX_MC_BYTES = 4 * 10**9
#: measured on this 2-core machine (2026-11-29): a round of a chunk's draws costs about 6.5 µs
#: of numpy overhead, and a draw 12 ns while a chunk's coupon flags fit in cache (chunks of up
#: to 4e6 flags) but 26–61 ns when one trial's collectors need a larger chunk (C·N from 3e7:
#: the random flag updates miss the cache); the estimate takes 7 µs, 12.5 ns and 65 ns
_ROUND_SECONDS, _DRAW_SECONDS, _BIG_DRAW_SECONDS = 7e-6, 12.5e-9, 65e-9
#: a Monte Carlo run estimated at least this long shows its progress bar
MC_BAR_SECONDS = 10.0


def harmonic(n: int) -> Fraction:
    """The harmonic number ``H_n = 1 + 1/2 + ... + 1/n`` as an exact fraction (H_0 = 0). Its
    denominators grow with n, so the cost is about quadratic (n = 10^4 0.04 s, 10^5 3 s)."""
    n = positive_int("n", n, minimum=0)
    return sum((Fraction(1, i) for i in range(1, n + 1)), Fraction(0))


#: Euler–Mascheroni constant γ
_EULER_GAMMA = 0.5772156649015329


def n_harmonic(n: int) -> float:
    """``N·H_N`` as a float: the exact product rounded once for N <= :data:`MAX_SERIES_N` (the
    ledger's and the figures' sizes); beyond it the asymptotic series ``H_N = ln N + γ +
    1/(2N) − 1/(12N²) + 1/(120N⁴)`` (the next term, 1/(252N⁶), is below 10^-27 there), in
    constant time where the exact fraction would take seconds to hours."""
    n = positive_int("n", n, minimum=0)
    if n <= MAX_SERIES_N:
        return float(n * harmonic(n))
    x = float(n)
    return x * (math.log(x) + _EULER_GAMMA + 1 / (2 * x) - 1 / (12 * x**2) + 1 / (120 * x**4))


def theorem5_bound(n: int, collectors: int) -> float:
    """Theorem 5 of Angelopoulos et al.: ``E[T(N, C)] >= max(N·H_N, log(C)/6)`` for N >= 2.

    Returns the right-hand side (natural logarithm). N = 1 is excluded by the theorem (and the
    claim is false there: T(1, C) = 1 while log(C)/6 grows), so it raises :class:`PagingError`.
    """
    n = positive_int("the number of coupons N", n, minimum=2)
    c = positive_int("the number of collectors C", collectors)
    return max(n_harmonic(n), math.log(c) / 6.0)


# -- floating point: the distinct-coupon Markov chain -------------------------------------------

def survival_single(n: int, t_max: int, show: bool | None = False) -> np.ndarray:
    """``S(t) = P(T(N, 1) > t)`` for ``t = 0 .. t_max-1`` (one collector, N = ``n`` types).

    T(N, 1) = G_1 + ... + G_N with independent geometric G_j >= 1 of success probability
    ``p_j = (N-j+1)/N`` (the wait for the j-th new coupon). Adding a phase G (success p,
    q = 1 - p) to X gives ``S_{X+G}(t) = q·S_{X+G}(t-1) + p·S_X(t-1)`` with ``S(t) = 1`` for
    t < 0: a first-order recursive filter with non-negative coefficients (computed by
    :func:`scipy.signal.lfilter`), so the result has small *relative* error even where
    S(t) ~ 1e-300. Cost O(N·t_max); ``show``: a progress bar over the N phases (None: on a
    terminal).
    """
    from scipy.signal import lfilter

    from paging.progress import bar

    n = positive_int("the number of coupons N", n)
    t_max = positive_int("t_max", t_max)
    s = np.zeros(t_max)  # X = 0: P(X > t) = 0 for t >= 0
    with bar(n, "coupon series", unit="phase", show=show) as pb:
        for j in range(1, n + 1):
            q = (j - 1) / n  # the j-th new coupon fails with probability (j-1)/N per draw
            p = 1.0 - q
            x = np.empty(t_max)
            x[0] = 1.0  # S_X(-1) = 1
            x[1:] = s[:-1]
            s, _ = lfilter([p], [1.0, -q], x, zi=[q])  # zi = q·S_Y(-1), S_Y(-1) = 1
            pb.update()
    return s


def _truncation(n: int, c: float, rtol: float, lower: float) -> int:
    """Number of terms t_max of the series for N = ``n`` >= 2 and C = ``c``.

    Union bound: ``S(t) <= N·((N-1)/N)^t``, and ``1 - (1-S)^C <= C·S``, so
    ``sum_{t >= t_max} P(T(N,C) > t) <= C·N·sum_{t>=t_max} q^t = C·N^2·q^t_max`` (q = (N-1)/N).
    We choose t_max so that this is at most ``rtol·lower``, with ``lower = N·H_N <= E[T(N,C)]``
    (E[T(N,C)] >= E[T(N,1)] = N·H_N: Theorem 5, first part).
    """
    need = math.log(c) + 2.0 * math.log(n) - math.log(rtol * lower)
    return max(n + 1, math.ceil(need / math.log(n / (n - 1))) + 1)


def expected_cover_times(n: int, collectors, *, rtol: float = 1e-15,
                         show: bool | None = None) -> np.ndarray:
    """:func:`expected_cover_time` for one N and an array of collector counts (shares the work).

    Returns a float array with ``E[T(n, c)]`` for every ``c`` in ``collectors``. N above
    :data:`MAX_SERIES_N` is refused up front (the cost is quadratic in N); from N = 2,000 (a
    few seconds) the phases go by under a progress bar (``show``: on a terminal by default).
    """
    n = positive_int("the number of coupons N", n)
    if n > MAX_SERIES_N:  # (refused up front, not a silent run of minutes or hours)
        raise PagingError(f"N = {n:,} is more than {MAX_SERIES_N:,}: the series takes time "
                          f"quadratic in N (N = 3,000 2.7 s, N = 10,000 28 s); expected "
                          f"N <= {MAX_SERIES_N:,}, or the Monte Carlo estimate")
    cs = [positive_int("the number of collectors C", c)
          for c in np.atleast_1d(collectors).tolist()]  # numpy scalars as Python ints
    if not 0 < rtol < 1:
        raise PagingError(f"rtol must be in (0, 1), got {rtol!r}")
    if n == 1:
        return np.ones(len(cs))  # one type: every collector finishes in round 1
    lower = n_harmonic(n)
    lengths = [_truncation(n, float(c), rtol, lower) for c in cs]
    s = survival_single(n, max(lengths), show=show if n >= 2_000 else False)
    with np.errstate(divide="ignore"):
        log_f = np.log1p(-s)  # log P(T(N,1) <= t); -inf while t < N
    out = np.empty(len(cs))
    for i, (c, length) in enumerate(zip(cs, lengths, strict=True)):
        # P(T(N,C) > t) = 1 - F^C = -expm1(C log F): no cancellation even when C·S is tiny
        terms = -np.expm1(float(c) * log_f[:length])
        ones = int(np.searchsorted(-terms, -1.0, side="right"))  # leading terms equal to 1
        out[i] = ones + math.fsum(terms[ones:].tolist())
    return out


def expected_cover_time(n: int, collectors: int, *, rtol: float = 1e-15) -> float:
    """The cover time ``E[T(N, C)]`` of the parallel coupon collector (floating point).

    Parameters
    ----------
    n : int
        Number of coupon types N >= 1.
    collectors : int
        Number of independent collectors C >= 1.
    rtol : float
        Bound on the truncation error relative to the result.

    Returns
    -------
    float
        ``E[T(N, C)] = sum_{t>=0} 1 - (1 - S(t))^C`` with ``S(t) = P(T(N, 1) > t)`` computed by
        :func:`survival_single` (no cancellation, so stable for N in the hundreds and C up to
        2^100 and beyond).

    Notes
    -----
    Truncation: the series stops at t_max with the proven tail bound
    ``C·N^2·((N-1)/N)^t_max <= rtol·N·H_N <= rtol·E[T(N, C)]`` (union bound on the missing
    coupons). Rounding: every term is built from non-negative sums and summed with
    :func:`math.fsum`; the test suite measures agreement with 100-digit inclusion-exclusion
    (mpmath) to ~1e-15 relative for N = 64. Cost O(N·t_max) with
    ``t_max ≈ N·(log C + 2 log N + 35)``.

    Examples
    --------
    >>> round(expected_cover_time(2, 1), 12)   # 2·H_2
    3.0
    >>> round(expected_cover_time(6, 1), 12)   # 6·H_6 = 14.7
    14.7
    """
    return float(expected_cover_times(n, [collectors], rtol=rtol)[0])


# -- exact rational -----------------------------------------------------------------------------

#: Limits of :func:`expected_cover_time_exact`: the up-front bound on the number of power-sum
#: terms (:func:`_exact_terms_bound`), and bits of the denominator while summing.
EXACT_TERMS_LIMIT = 400_000
EXACT_BITS_LIMIT = 250_000


def coverage_terms(m: int, n: int) -> dict[int, int]:
    """``F_m(q)``, the probability that q uniform draws from N = ``n`` types include ``m`` given
    types, as a power sum in q.

    Inclusion-exclusion over the given types that were missed:
    ``F_m(q) = sum_{i=0}^{m} (-1)^i binom(m, i) ((N - i)/N)^q`` (every q >= 0, with 0^0 = 1),
    returned as ``{N - i: (-1)^i binom(m, i)}``, i.e. ``{b: a}`` meaning ``sum_b a·(b/N)^q``.

    >>> coverage_terms(2, 3)   # F_2(q) = 1 - 2(2/3)^q + (1/3)^q
    {3: 1, 2: -2, 1: 1}
    """
    return {n - i: (-1) ** i * comb(m, i) for i in range(m + 1)}


def power_sum_product(a: dict, b: dict) -> dict:
    """The product of two power sums in q, ``(sum_x a_x·x^q)·(sum_y b_y·y^q) =
    sum_z (sum_{xy = z} a_x·b_y)·z^q``, as ``{base: coefficient}``.

    Bases are integers over an implied common denominator (N^c after c factors of
    :func:`coverage_terms`), coefficients ints or Fractions; zero coefficients are dropped (the
    result has at most as many terms as there are distinct products xy). Cost len(a)·len(b).
    """
    out: dict = {}
    for x, c in a.items():
        for y, e in b.items():
            out[x * y] = out.get(x * y, 0) + c * e
    return {z: c for z, c in out.items() if c}


def _exact_terms_bound(n: int, c_max: int) -> int:
    """An upper bound on the power-sum terms :func:`expected_cover_time_exact` builds, counted
    only up to :data:`EXACT_TERMS_LIMIT` (O(min(N, C)) small multiplications).

    ``S^c`` has one term per distinct product of c numbers from {0..N-1}: at most
    binom(N-2+c, c) non-zero ones plus 0, and sum_{c=1}^{C} binom(N-2+c, c) = binom(N-1+C, C) - 1
    (hockey-stick identity). Distinct products are often far fewer (for N = 11 they have the
    primes 2, 3, 5, 7 only), so the bound is loose but cheap; the denominator guard catches the
    cases it lets through.
    """
    a, b = max(n - 1, c_max), min(n - 1, c_max)
    est = 1  # binom(a + j, j), increasing in j; binom(a + b, b) = binom(N - 1 + C, C)
    for j in range(1, b + 1):
        est = est * (a + j) // j
        if est > EXACT_TERMS_LIMIT:
            return est
    return est - 1 + c_max


def expected_cover_time_exact(n: int, collectors: int) -> Fraction:
    """The cover time ``E[T(N, C)]`` as an exact fraction (small N and C).

    By inclusion-exclusion over the missing coupons,
    ``S(t) = P(T(N,1) > t) = sum_{j=1}^{N} (-1)^(j+1) binom(N, j) ((N-j)/N)^t`` (valid for all
    t >= 0, with 0^0 = 1; :func:`coverage_terms`). Expanding
    ``1 - (1 - S)^C = sum_{c=1}^{C} (-1)^(c+1) binom(C, c) S^c`` writes
    ``S(t)^c = sum_m a_m (m / N^c)^t`` with integers m, a_m (collected exactly,
    :func:`power_sum_product`), and ``sum_{t>=0} (m/N^c)^t = N^c / (N^c - m)``. Hence

        E[T(N, C)] = sum_c (-1)^(c+1) binom(C, c) sum_m a_m N^c / (N^c - m).

    For C = 1 this is ``sum_j (-1)^(j+1) binom(N, j) N / j = N·H_N`` (the classical coupon
    collector, Blom, Holst & Sandell 1994). The work grows like the number of distinct products
    of c numbers from {0..N-1} and the denominators grow fast (E[T(10, 10)] has a 72,460-bit
    denominator). A :class:`PagingError` asks for :func:`expected_cover_time` instead when the
    bound of :func:`_exact_terms_bound` exceeds :data:`EXACT_TERMS_LIMIT` (at once, before any
    arithmetic) or the denominator grows beyond :data:`EXACT_BITS_LIMIT` bits (while summing).

    >>> expected_cover_time_exact(3, 1), expected_cover_time_exact(2, 2)
    (Fraction(11, 2), Fraction(11, 3))
    """
    n = positive_int("the number of coupons N", n)
    c_max = positive_int("the number of collectors C", collectors)
    if n == 1:
        return Fraction(1)
    too_large = (f"N={n}, C={c_max} is too large for exact rational arithmetic; use the "
                 "floating-point series (drop --exact; expected_cover_time in Python)")
    if _exact_terms_bound(n, c_max) > EXACT_TERMS_LIMIT:
        raise PagingError(too_large)
    # S = 1 - F_N: the terms of F_N without its constant 1 (base N), negated
    base = {b: -a for b, a in coverage_terms(n, n).items() if b != n}
    power = {1: 1}  # S^0 = 1 = (1/1)^t
    total = Fraction(0)
    for c in range(1, c_max + 1):
        if total.denominator.bit_length() > EXACT_BITS_LIMIT:
            raise PagingError(too_large)
        power = power_sum_product(power, base)
        d = n**c
        # sum_m a_m d/(d-m) over a common denominator, exactly
        inner = Fraction(0)
        for i, (m, a) in enumerate(power.items()):
            inner += Fraction(a * d, d - m)
            if i % 64 == 0 and inner.denominator.bit_length() > EXACT_BITS_LIMIT:
                raise PagingError(too_large)
        total += (-1) ** (c + 1) * comb(c_max, c) * inner
    return total


# -- Monte Carlo --------------------------------------------------------------------------------

def monte_carlo_cover_time(n: int, collectors: int, trials: int,
                           seed: int | None = 0, show: bool | None = None
                           ) -> tuple[float, float, float]:
    """Estimate ``E[T(N, C)]`` by simulating the coupon draws themselves.

    Each trial runs C collectors that draw uniform coupons (``Generator.integers``) round by
    round, recording the round in which each collector holds all N types; the sample is the
    largest of the C completion rounds. Vectorized over (trial, collector) pairs in chunks of
    about 4 million coupon flags; the chunking depends only on (N, C), so a seed gives the same
    result every time.

    Returns
    -------
    (mean, ci_low, ci_high) : tuple of float
        The sample mean and a 95% confidence interval by the central limit theorem,
        ``mean ± 1.96·s/sqrt(trials)`` with the sample standard deviation s (ddof = 1). With a
        single trial there is no spread estimate and the interval is ``(nan, nan)``.

    Cost (:func:`mc_estimate`): about ``trials·C·N·H_N`` draws, in rounds of draws whose
    numpy overhead dominates when few collectors are drawn together (N large, C·trials
    small). A run estimated beyond :data:`MAX_MC_SECONDS`, or whose chunk would hold more than
    :data:`MAX_MC_BYTES`, is refused up front with its estimate; one estimated past ten seconds
    goes by under a progress bar over the rounds (``show``: on a terminal by default).
    """
    n = positive_int("the number of coupons N", n)
    c = positive_int("the number of collectors C", collectors)
    trials = positive_int("trials", trials)
    if seed is not None:
        seed = positive_int("seed", seed, minimum=0)
    est = mc_estimate(n, c, trials)
    if est["bytes"] > MAX_MC_BYTES:
        raise PagingError(f"{c:,} collectors of {n:,} coupons need about {est['bytes']:.2g} "
                          f"bytes at once; expected at most {MAX_MC_BYTES:.0e}: fewer collectors "
                          "or coupons")
    if est["seconds"] > MAX_MC_SECONDS:
        raise PagingError(f"trials x C x N = {trials:,} x {c:,} x {n:,} would take about "
                          f"{est['seconds']:,.0f} s ({est['draws']:.2g} coupon draws in "
                          f"{est['rounds']:.2g} rounds); expected at most {MAX_MC_SECONDS:,.0f} "
                          "s: fewer trials, collectors or coupons")
    from paging.progress import bar

    rng = np.random.default_rng(seed)
    samples = np.empty(trials, dtype=np.int64)
    chunk = est["chunk"]
    with bar(round(est["rounds"]), "coupon rounds (estimated)", unit="round",
             show=show if est["seconds"] >= MC_BAR_SECONDS else False) as pb:
        for start in range(0, trials, chunk):
            _chunk(rng, samples, start, min(chunk, trials - start), n, c, pb)
    mean = float(samples.mean())
    if trials == 1:
        return mean, math.nan, math.nan
    half = _Z95 * float(samples.std(ddof=1)) / math.sqrt(trials)
    return mean, mean - half, mean + half


def mc_estimate(n: int, collectors: int, trials: int) -> dict:
    """What :func:`monte_carlo_cover_time` would cost: its chunk (trials drawn together), the
    expected ``draws`` (trials·C·N·H_N), ``rounds`` (each chunk runs until its last collector
    is done, about N·(H_N + ln(collectors in the chunk)) rounds), ``seconds`` (rounds at 7 µs,
    draws at 12.5 ns, or 65 ns in a chunk of more than 4e6 flags; measured here: five runs
    from N = 2 to 20,000 and C = 1 to 10^7 took 0.4–1.0 of their estimates) and the ``bytes``
    one chunk holds (its flags and about 48 bytes of counters and per-round temporaries per
    collector)."""
    c = collectors
    h = math.log(n) + _EULER_GAMMA + 1 / (2 * n)  # H_N, closely enough for an estimate
    chunk = max(1, 4_000_000 // (c * n))
    runs = min(chunk, trials) * c
    rounds = math.ceil(trials / chunk) * n * (h + math.log(runs))
    draws = float(trials) * c * n * h
    per_draw = _DRAW_SECONDS if runs * n <= 4_000_000 else _BIG_DRAW_SECONDS
    return {"chunk": chunk, "draws": draws, "rounds": rounds,
            "seconds": rounds * _ROUND_SECONDS + draws * per_draw,
            "bytes": float(runs) * (n + 48)}


def _chunk(rng, samples, start: int, m: int, n: int, c: int, pb=None) -> None:
    """Trials ``start .. start + m - 1`` of :func:`monte_carlo_cover_time` into ``samples``;
    ``pb`` counts the rounds."""
    runs = m * c
    seen = np.zeros((runs, n), dtype=bool)
    held = np.zeros(runs, dtype=np.int64)
    finish = np.zeros(runs, dtype=np.int64)
    active = np.arange(runs)
    rnd = 0
    while active.size:
        rnd += 1
        draw = rng.integers(0, n, size=active.size)
        new = ~seen[active, draw]
        seen[active, draw] = True
        held[active] += new
        done = held[active] == n
        finish[active[done]] = rnd
        active = active[~done]
        if pb is not None:
            pb.update()
    samples[start:start + m] = finish.reshape(m, c).max(axis=1)
