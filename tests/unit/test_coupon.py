"""The parallel coupon collector (paging.coupon), checked against independent computations:
an exact absorbing Markov chain on the joint state, 100-digit inclusion-exclusion (mpmath), the
classical N·H_N, and a seeded Monte Carlo run."""

from __future__ import annotations

import json
import math
import sys
from fractions import Fraction
from itertools import combinations_with_replacement, product
from math import comb

import mpmath
import numpy as np
import pytest

from paging.cli import main
from paging.coupon import (
    _exact_terms_bound,
    coverage_terms,
    expected_cover_time,
    expected_cover_time_exact,
    expected_cover_times,
    harmonic,
    monte_carlo_cover_time,
    power_sum_product,
    survival_single,
    theorem5_bound,
)
from paging.errors import PagingError


def joint_chain_cover_time(n: int, c: int) -> Fraction:
    """E[T(n, c)] from the absorbing Markov chain on the joint state (distinct coupons held by
    each collector). Counts never decrease, so h(s) = (1 + sum_{s' != s} P(s, s') h(s')) /
    (1 - P(s, s)) can be solved from the absorbing state backwards, exactly."""
    from functools import cache
    from itertools import product

    @cache
    def h(state: tuple) -> Fraction:
        if all(x == n for x in state):
            return Fraction(0)
        acc = Fraction(1)
        # each collector independently gains a coupon w.p. (n - x)/n
        options = [[(x, Fraction(x, n)), (x + 1, Fraction(n - x, n))] if x < n
                   else [(x, Fraction(1))] for x in state]
        stay = Fraction(1)
        for x in state:
            stay *= Fraction(x, n) if x < n else 1
        for combo in product(*options):
            nxt = tuple(sorted(s for s, _ in combo))
            p = math.prod((q for _, q in combo), start=Fraction(1))
            if nxt != tuple(sorted(state)):
                acc += p * h(nxt)
        return acc / (1 - stay)

    return h(tuple([0] * c))


def mp_cover_time(n: int, c: int, dps: int = 100) -> mpmath.mpf:
    """E[T(n, c)] by inclusion-exclusion at ``dps`` digits: stable at high precision."""
    with mpmath.workdps(dps):
        ratios = [mpmath.mpf(n - j) / n for j in range(n + 1)]
        coef = [(-1) ** (j + 1) * mpmath.mpf(comb(n, j)) for j in range(n + 1)]
        powers = [mpmath.mpf(1)] * (n + 1)
        q = mpmath.mpf(n - 1) / n
        total, t = mpmath.mpf(0), 0
        while True:
            s = mpmath.fsum(coef[j] * powers[j] for j in range(1, n + 1))
            total += 1 - (1 - s) ** c
            powers = [p * r for p, r in zip(powers, ratios, strict=True)]
            t += 1
            if c * n * n * q**t < mpmath.mpf(10) ** (-40):  # union-bound tail
                return total


@pytest.mark.parametrize("n", [1, 2, 3, 5, 10, 33, 64])
def test_one_collector_is_n_harmonic(n):
    nh = sum((Fraction(n, i) for i in range(1, n + 1)), Fraction(0))
    assert expected_cover_time_exact(n, 1) == nh
    assert expected_cover_time(n, 1) == pytest.approx(float(nh), rel=1e-14)
    # harmonic() against mpmath's H_n = digamma(n + 1) + Euler's gamma (not a sum of 1/i)
    with mpmath.workdps(60):
        h = harmonic(n)
        assert abs(mpmath.mpf(h.numerator) / h.denominator - mpmath.harmonic(n)) < 1e-50


def test_harmonic_by_hand():
    # H_5 = (60 + 30 + 20 + 15 + 12)/60; H_10 = 7381/2520 (lcm(1..10) = 2520)
    assert [harmonic(n) for n in (0, 1, 2, 3, 5, 10)] == [
        0, 1, Fraction(3, 2), Fraction(11, 6), Fraction(137, 60), Fraction(7381, 2520)]


@pytest.mark.parametrize("n,c", [(2, 2), (2, 3), (3, 2), (3, 3), (4, 2), (4, 3), (2, 5)])
def test_exact_equals_joint_markov_chain(n, c):
    assert expected_cover_time_exact(n, c) == joint_chain_cover_time(n, c)


def test_small_exact_values():
    # T(2,1) = 1 + Geom(1/2): P(T > t) = 2^(1-t) (t >= 1), so E[T(2,2)] = 6 - (1 + 4/3) = 11/3
    assert expected_cover_time_exact(2, 2) == Fraction(11, 3)
    assert expected_cover_time_exact(3, 2) == Fraction(1909, 280)
    assert expected_cover_time_exact(1, 7) == 1


@pytest.mark.parametrize("n,c", [(2, 2), (3, 7), (5, 4), (8, 6), (10, 3), (2, 200)])
def test_series_matches_exact_rational(n, c):
    assert expected_cover_time(n, c) == pytest.approx(float(expected_cover_time_exact(n, c)),
                                                      rel=2e-15)


@pytest.mark.parametrize("n,c", [(64, 32), (64, 1), (17, 1000)])
def test_series_matches_100_digit_inclusion_exclusion(n, c):
    ref = mp_cover_time(n, c)
    got = expected_cover_time(n, c)
    assert abs(got - float(ref)) <= 3e-15 * float(ref)
    if (n, c) == (64, 32):
        assert mpmath.nstr(ref, 20) == "521.42764467504301503"


def test_survival_single_matches_inclusion_exclusion():
    n = 5
    s = survival_single(n, 40)
    for t in range(40):
        exact = sum(Fraction((-1) ** (j + 1) * comb(n, j)) * Fraction(n - j, n) ** t
                    for j in range(1, n + 1))
        assert s[t] == pytest.approx(float(exact), rel=1e-14, abs=0)
    assert s[:n].tolist() == [1.0] * n  # fewer than N draws never cover


def test_stable_for_hundreds_of_coupons():
    # inclusion-exclusion in doubles fails here; the chain stays accurate and monotone in C
    e = expected_cover_times(300, [1, 2, 10, 1000])
    assert e[0] == pytest.approx(float(300 * harmonic(300)), rel=1e-14)
    assert np.all(np.diff(e) > 0)


def test_huge_collector_counts():
    # N = 2: P(T(2,1) > t) = 2^(1-t), so E[T(2,C)] = 1 + sum_{s>=0} 1 - (1 - 2^-s)^C ~ log2 C
    c = 2**40
    ref = 1 + math.fsum(-math.expm1(c * math.log1p(-(2.0**-s))) for s in range(1, 200)) + 1
    assert expected_cover_time(2, c) == pytest.approx(ref, rel=1e-14)


def test_monte_carlo_is_seeded_and_covers_the_exact_value():
    exact = float(expected_cover_time_exact(6, 5))
    mean, lo, hi = monte_carlo_cover_time(6, 5, trials=4000, seed=11)
    assert (mean, lo, hi) == monte_carlo_cover_time(6, 5, trials=4000, seed=11)
    assert lo < exact < hi
    assert hi - lo < 0.1 * exact
    assert monte_carlo_cover_time(1, 9, trials=3, seed=0) == (1.0, 1.0, 1.0)
    m1, lo1, hi1 = monte_carlo_cover_time(4, 2, trials=1, seed=0)
    assert m1 >= 4 and math.isnan(lo1) and math.isnan(hi1)


def test_theorem5_bound():
    assert theorem5_bound(2, 1) == 3.0
    assert theorem5_bound(4, 1000) == pytest.approx(25 / 3)
    c = 10**9  # log(C)/6 = 3.45 > 2·H_2 = 3
    assert theorem5_bound(2, c) == pytest.approx(math.log(c) / 6)
    with pytest.raises(PagingError, match="N must be an integer >= 2"):
        theorem5_bound(1, 5)


@pytest.mark.parametrize("call", [
    lambda: expected_cover_time(0, 3), lambda: expected_cover_time(3, 0),
    lambda: expected_cover_time_exact(True, 2), lambda: monte_carlo_cover_time(3, 2, 0, 0),
    lambda: monte_carlo_cover_time(3, 2, 10, -1), lambda: expected_cover_time(3, 2.5),
])
def test_bad_arguments(call):
    with pytest.raises(PagingError):
        call()


def test_exact_refuses_large_cases(monkeypatch):
    import paging.coupon

    monkeypatch.setattr(paging.coupon, "EXACT_BITS_LIMIT", 2_000)  # E[T(8,8)] needs 16,454 bits
    with pytest.raises(PagingError, match="too large for exact rational arithmetic; use the "
                                          "floating-point series \\(drop --exact"):
        expected_cover_time_exact(8, 8)
    monkeypatch.setattr(paging.coupon, "EXACT_TERMS_LIMIT", 100)
    with pytest.raises(PagingError, match="too large for exact rational"):
        expected_cover_time_exact(40, 2)  # 39 + binom(40, 2) = 819 non-zero terms


@pytest.mark.parametrize("n,c", [(12, 12), (8, 32), (500, 3), (3, 2**100)])
def test_exact_refuses_hopeless_cases_before_any_arithmetic(n, c, monkeypatch):
    """The up-front terms bound refuses, not the denominator guard after minutes of sums
    (E[T(12,12)] alone used to run 7.5 s before refusing): the power sums are never built."""
    import paging.coupon

    def no_arithmetic(*_):
        raise AssertionError("the power sums were built before the refusal")

    monkeypatch.setattr(paging.coupon, "coverage_terms", no_arithmetic)
    monkeypatch.setattr(paging.coupon, "power_sum_product", no_arithmetic)
    with pytest.raises(PagingError, match="too large for exact rational"):
        expected_cover_time_exact(n, c)


def distinct_products(n: int, c: int) -> int:
    """Distinct products of c numbers from 0..n-1, by enumerating the multisets."""
    return len({math.prod(m) for m in combinations_with_replacement(range(n), c)})


@pytest.mark.parametrize("n", [2, 3, 4, 5, 7, 9])
def test_terms_bound_against_enumeration(n):
    # products of c numbers from {1, 2, 3} are 2^j 3^k with j + k <= c, all distinct, so for
    # n <= 4 (and for c = 1) the hockey-stick count is exact; from n = 5 and c = 2 on
    # (2·2 = 4·1) it is a strict upper bound
    for c in range(1, 7):
        count = sum(distinct_products(n, j) for j in range(1, c + 1))
        bound = _exact_terms_bound(n, c)
        assert bound == count if n <= 4 or c == 1 else bound > count, (n, c)


def test_coverage_terms_and_power_sum_product_by_enumeration():
    # F_2(q): q uniform draws from 3 types include types 0 and 1, counted over all 3^q draws
    f = coverage_terms(2, 3)
    assert f == {3: 1, 2: -2, 1: 1}
    for q in range(6):
        hits = sum({0, 1} <= set(d) for d in product(range(3), repeat=q))
        assert sum(Fraction(a) * Fraction(b, 3) ** q for b, a in f.items()) == Fraction(hits,
                                                                                      3**q)
    # (1 - 2·2^q + 0^q)(3^q - 1) = 3^q - 1 - 2·6^q + 2·2^q + (0·3)^q - (0·1)^q: the two
    # base-0 terms cancel and are dropped
    a, b = {1: 1, 2: -2, 0: 1}, {3: 1, 1: -1}
    prod = power_sum_product(a, b)
    assert prod == {3: 1, 1: -1, 6: -2, 2: 2}
    for q in range(5):
        def value(terms, q=q):
            return sum(c * x**q for x, c in terms.items())  # Python: 0**0 == 1
        assert value(prod) == value(a) * value(b)


def test_cli_json(capsys):
    assert main(["coupon", "--n", "3", "--collectors", "2", "--exact", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["expected_fraction"] == "1909/280" and rec["method"] == "rational"
    assert rec["bound"] == 5.5 and rec["n"] == 3 and rec["collectors"] == 2
    assert main(["coupon", "--n", "64", "--collectors", "32", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["method"] == "series"
    assert rec["expected"] == pytest.approx(521.42764467504301503, rel=1e-15)
    assert main(["coupon", "--n", "6", "--collectors", "5", "--mc", "--trials", "4000",
                 "--seed", "11", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    mean, lo, hi = monte_carlo_cover_time(6, 5, 4000, 11)
    assert (rec["expected"], rec["ci_low"], rec["ci_high"]) == (mean, lo, hi)
    assert rec["trials"] == 4000 and rec["seed"] == 11 and rec["method"] == "monte-carlo"


@pytest.mark.parametrize("argv, message", [
    (["--n", "0", "--collectors", "2"], "N must be an integer >= 1, got 0"),
    (["--n", "2", "--collectors", "0"], "C must be an integer >= 1, got 0"),
    (["--n", "2", "--collectors", "2", "--mc", "--trials", "0"], "trials must be an integer >= 1"),
    (["--n", "2", "--collectors", "2", "--mc", "--seed", "-1"], "seed must be an integer >= 0"),
    (["--n", "2", "--collectors", "2", "--trials", "5"], "apply only to --mc"),
    (["--n", "2", "--collectors", "2", "--exact", "--mc"], "not allowed with argument"),
    (["--n", "two", "--collectors", "2"], "argument --n: expected an integer, got 'two'"),
    (["--n", "12", "--collectors", "12", "--exact"], "too large for exact rational"),
    # a run of hours refused up front (a review found --n 2^63 - 1 silent for minutes)
    (["--n", str(2**63 - 1), "--collectors", "2"], "is more than 15,000"),
    (["--n", "15001", "--collectors", "2", "--exact"], "too large for exact rational"),
    # Monte Carlo is bounded by its draws, not by N: 10^4 x 10^3 x 10^5 x 12.1 draws
    (["--n", "100000", "--collectors", "1000", "--mc"], "(1.2e+13 coupon draws in"),
    # many rounds of few collectors: 10^6 coupons, one collector (it ran silently for minutes)
    (["--n", "1000000", "--collectors", "1", "--mc", "--trials", "1000"],
     "would take about 27,793 s (1.4e+10 coupon draws in 3.9e+09 rounds); expected at most "
     "1,200 s"),
    (["--n", "2", "--collectors", str(2**31), "--mc", "--trials", "1"],
     "2,147,483,648 collectors of 2 coupons need about 1.1e+11 bytes at once; expected at most "
     "4e+09"),
])
def test_cli_errors(argv, message, capsys):
    assert main(["coupon", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_cli_exact_fraction_beyond_the_int_str_limit(capsys):
    # E[T(8, 8)] has a 16,454-bit denominator (~4,950 digits), above Python's default limit of
    # 4,300 digits for int -> str; the command prints it and leaves the limit as it was
    get_limit = getattr(sys, "get_int_max_str_digits", lambda: None)  # Python >= 3.10.7
    limit = get_limit()
    assert main(["coupon", "--n", "8", "--collectors", "8", "--exact", "--json"]) == 0
    assert get_limit() == limit
    num, den = json.loads(capsys.readouterr().out)["expected_fraction"].split("/")
    assert len(den) > 4300
    value = expected_cover_time_exact(8, 8)
    assert (num[-12:], den[-12:]) == (str(value.numerator % 10**12).zfill(12),
                                      str(value.denominator % 10**12).zfill(12))


def test_fig_coupon_csv_and_plot(tmp_path):
    from experiments import common, fig_coupon

    csv_path = fig_coupon.compute(tmp_path, n_values=(2, 3), log2_c=(0, 1, 30),
                                  progress=lambda msg: None)
    rows = {(int(r["n"]), int(r["collectors"])): r for r in common.read_csv(csv_path)}
    assert len(rows) == 6
    assert float(rows[3, 2]["expected"]) == pytest.approx(1909 / 280, abs=1e-6)
    assert float(rows[2, 1]["ratio"]) == 1.0 and rows[2, 1]["active_term"] == "n_h_n"
    big = rows[2, 2**30]  # log(2^30)/6 = 3.47 > 2·H_2 = 3
    assert big["active_term"] == "log_c_over_6"
    assert float(big["bound"]) == pytest.approx(30 * math.log(2) / 6, abs=1e-6)
    files = fig_coupon.plot(csv_path, tmp_path)
    assert sorted(p.suffix for p in files) == [".pdf", ".png"]
    assert all(p.stat().st_size > 1000 for p in files)


def test_the_api_refuses_what_the_command_refuses_and_shows_its_progress(capsys, monkeypatch):
    """The caps live in paging.coupon, so a notebook gets them too: the series beyond
    MAX_SERIES_N (quadratic in N), Monte Carlo beyond MAX_MC_SECONDS; below them the long loops
    show a bar when asked, and the bar changes no number."""
    from paging import coupon

    with pytest.raises(PagingError, match="N = 15,001 is more than 15,000: the series"):
        coupon.expected_cover_times(coupon.MAX_SERIES_N + 1, [2])
    with pytest.raises(PagingError, match="coupon draws in .* rounds.; expected at most 1,200 s"):
        coupon.monte_carlo_cover_time(10**6, 10**3, 10)
    assert coupon.survival_single(5, 40, show=True).tolist() == \
        coupon.survival_single(5, 40, show=False).tolist()
    assert "coupon series" in capsys.readouterr().err
    quiet = coupon.monte_carlo_cover_time(4, 3, 50, seed=2, show=False)
    assert capsys.readouterr().err == ""
    # (estimated below MC_BAR_SECONDS: no bar even when asked, so the small runs stay quiet)
    assert coupon.monte_carlo_cover_time(4, 3, 50, seed=2, show=True) == quiet
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(coupon, "MC_BAR_SECONDS", 0.0)  # (a bar over the rounds)
    assert coupon.monte_carlo_cover_time(4, 3, 50, seed=2, show=True) == quiet
    assert "coupon rounds (estimated)" in capsys.readouterr().err


def test_the_monte_carlo_estimate_is_within_its_measured_factor():
    """mc_estimate's model on hand-checkable sizes: N = 4, C = 3, 50 trials is one chunk of 150
    collectors, 50·3·4·H_4 ≈ 50·3·4·2.0895 draws (its H_N: ln 4 + γ + 1/8) and 4·(H + ln 150)
    rounds."""
    from paging.coupon import mc_estimate

    est = mc_estimate(4, 3, 50)
    h = math.log(4) + 0.5772156649015329 + 1 / 8
    assert est["chunk"] == 4_000_000 // 12 and est["draws"] == pytest.approx(600 * h)
    assert est["rounds"] == pytest.approx(4 * (h + math.log(150)))
    assert est["bytes"] == 150 * (4 + 48)
    assert est["seconds"] == pytest.approx(est["rounds"] * 7e-6 + est["draws"] / 8e7)
    # one trial of 10^5 collectors of 300 coupons: 3e7 flags, past the cache (65 ns a draw:
    # a review measured 2x the 12.5 ns estimate there)
    big = mc_estimate(300, 10**5, 1)
    assert big["chunk"] == 1 and big["seconds"] == pytest.approx(
        big["rounds"] * 7e-6 + big["draws"] * 65e-9)


def test_n_harmonic_is_the_exact_product_then_the_asymptotic_series():
    """N·H_N as the exact product rounded once up to MAX_SERIES_N (unchanged numbers), then the
    asymptotic series, within a few units in the last place of the exact value."""
    from paging.coupon import MAX_SERIES_N, n_harmonic

    for n in (1, 2, 7, 1000, MAX_SERIES_N):
        assert n_harmonic(n) == float(n * harmonic(n))
    for n in (MAX_SERIES_N + 1, 20_000, 40_000):
        assert n_harmonic(n) == pytest.approx(float(n * harmonic(n)), rel=4e-16)
    assert n_harmonic(10**18) == pytest.approx(1e18 * (18 * math.log(10) + 0.5772156649015329),
                                               rel=1e-15)
