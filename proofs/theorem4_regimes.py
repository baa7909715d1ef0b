"""Ledger row: Theorem 4's corrected bound ρ(n, ℓ) beyond the exact grid, and its log ℓ/(6n) term
in its own regime.

:mod:`proofs.theorem4` checks ρ(n, ℓ) = E[L]/(ℓn) (the exact value of the proof's Yao argument,
:func:`adversaries.theorem4.yao_value`) against max(H_n, log(ℓ)/(6n)) on n <= 6, ℓ <= 6, where
H_n is always the larger term: log(ℓ)/(6n) > H_n needs ℓ > exp(6n·H_n), i.e. ℓ > e^18 ≈ 6.6e7
at n = 2 and ℓ > e^33 ≈ 2.1e14 at n = 3. The package's floating-point path for E[L] sums an
array of q_max × ℓ tail probabilities, so it stops near ℓ ≈ 10^6 (memory); this row adds an
independent closed form that reaches any ℓ:

    E[L] = Σ_{q>=0} Σ_{u<ℓ} (1 − F_n(q+1)^u F_n(q)^(ℓ−1−u) F_{n−1}(q))
         = Σ_{q>=0} (ℓ − F_{n−1}(q)·(a^ℓ − b^ℓ)/(a − b)),   a = F_n(q+1), b = F_n(q),

(the sum over u is geometric), with F_m(q) = Σ_i (−1)^i C(m, i)(1 − i/n)^q, evaluated in
mpmath at 40 digits (the difference a^ℓ − b^ℓ cancels) and truncated where the union bound
ℓn((n−1)/n)^q drops below 10^-40.

Checks in the verdict:

1. the closed form equals the exact rational ρ on n = 2..5, ℓ = 1..5 (relative error < 1e-18)
   and the floating-point path at n = 2, ℓ = 10^3, 10^4 (< 1e-12);
2. ρ(n, ℓ) >= H_n for every ℓ >= 2 on a larger grid, n = 2..12, ℓ = 2..16 and 32..1024
   (exact rationals for n, ℓ <= 6, the floating-point path beyond, with tolerance 1e-12
   relative; the exact margin is 0 at n = ℓ = 2);
3. the stated bound in the regime of its log term: ρ(n, ℓ) >= max(H_n, log(ℓ)/(6n)) for n = 2, 3
   and ℓ = 10^j, j = 1..18, plus ℓ just above exp(6n·H_n) (closed form).

No proof of ρ(n, ℓ) >= H_n for ℓ >= 2 is given here or in the paper (the paper's chain goes
through E[T(n, ℓ)]/n, which the corrected argument does not reach): it is a numerical finding
on the grid. Theorem 4 is not extended to k < nℓ − 1 (its Yao value would need OPT's block law
with nℓ − k pages missing); Theorem 2's proof is (:mod:`proofs.theorem2_general`).

Power checks (same values): H_(n+1) in place of H_n must fail on the larger grid; the log term
with constant 1 in place of 1/(6n) must fail at n = 2 for large ℓ (ρ(2, ℓ) grows like
log2(ℓ)/2 ≈ 0.72·log ℓ); and the closed form with F_n in place of F_{n−1} for the opening layer
(the proof's block, one coupon too many) must disagree with the exact values.
"""

from __future__ import annotations

import math
from math import comb

from adversaries import theorem4 as adv
from paging.coupon import harmonic
from proofs.ledger import LedgerRow, PowerCheck

DPS = 40
EXACT_GRID = [(n, L) for n in range(2, 6) for L in range(1, 6)]
LARGE_NS = tuple(range(2, 13))
LARGE_LS = (*range(2, 17), 32, 64, 128, 256, 512, 1024)
LOG_NS = (2, 3)
LOG_LS = tuple(10**j for j in range(1, 19))
RTOL = 1e-12


def rho_closed(n: int, layers: int, opening: int | None = None):
    """ρ(n, ℓ) from the closed form of the module docstring (an mpmath number). ``opening``:
    the number of types the opening layer needs (n − 1 in the proof's corrected block; n for
    the power check)."""
    import mpmath as mp

    m = n - 1 if opening is None else opening
    with mp.workdps(DPS):
        nn, L = mp.mpf(n), mp.mpf(layers)

        def F(k: int, q: int):
            return mp.fsum((-1) ** i * comb(k, i) * (1 - mp.mpf(i) / nn) ** q
                           for i in range(k + 1))

        q_max = math.ceil((math.log(layers * n) + DPS * math.log(10))
                          / math.log(n / (n - 1))) + 2
        total = mp.mpf(0)
        for q in range(q_max + 1):
            a, b, c = F(n, q + 1), F(n, q), F(m, q)
            geo = L * a ** (layers - 1) if a == b else (a ** layers - b ** layers) / (a - b)
            total += L - c * geo
        return total / (L * nn)


def check() -> LedgerRow:
    import mpmath as mp

    # 1. the closed form against the exact rationals and the floating-point path
    agree, worst_dev, wrong_opening = True, 0.0, []
    for n, L in EXACT_GRID:
        ex = adv.yao_value(n, L, exact=True)
        with mp.workdps(DPS):
            exf = mp.mpf(ex.numerator) / ex.denominator
            dev = float(abs(rho_closed(n, L) - exf) / exf)
            bad = float(abs(rho_closed(n, L, opening=n) - exf) / exf)
        worst_dev = max(worst_dev, dev)
        agree &= dev < 1e-18
        if bad > 1e-6:
            wrong_opening.append((n, L, round(bad, 4)))
    float_dev = 0.0
    for L in (10**3, 10**4):
        f = adv.yao_value(2, L, exact=False)
        float_dev = max(float_dev, abs(float(rho_closed(2, L)) - f) / f)
    agree &= float_dev < 1e-12

    # 2. ρ >= H_n on the larger grid
    best, holds_hn, stronger = None, True, []
    increasing = True
    for n in LARGE_NS:
        h, h1 = float(harmonic(n)), float(harmonic(n + 1))
        prev = None
        for L in LARGE_LS:
            # exact rationals where Theorem 4's row has them (n, ℓ <= 6), floats beyond
            small = n <= 6 and L <= 6
            r = adv.yao_value(n, L, exact=small)
            margin = r - harmonic(n) if small else r - h
            holds_hn &= margin >= -RTOL * h
            if float(r) < h1:
                stronger.append((n, L))
            if prev is not None and r < prev:
                increasing = False
            prev = r
            if best is None or margin < best[0]:
                best = (margin, {"part": "rho >= H_n", "n": n, "layers": L, "rho": str(r),
                                 "H_n": str(harmonic(n))})

    # 3. the stated bound where its log term is the larger one
    holds_log, log_points, log_active, const_one = True, [], [], []
    for n in LOG_NS:
        h = float(harmonic(n))
        cross = math.exp(6 * n * h)
        for L in sorted({*LOG_LS, math.ceil(cross * 1.01)}):
            r = float(rho_closed(n, L))
            lg = math.log(L) / (6 * n)
            holds_log &= r >= max(h, lg)
            log_points.append((n, L))
            if lg > h:
                log_active.append({"n": n, "layers": f"{L:.3g}", "rho": round(r, 4),
                                   "log_term": round(lg, 4)})
            if r < math.log(L):
                const_one.append((n, f"{L:.0e}", round(r, 3), round(math.log(L), 3)))
    holds = bool(agree and holds_hn and holds_log and log_active)
    power_checks = [
        PowerCheck(name="H_(n+1) in place of H_n",
                   description="ρ(n, ℓ) >= H_(n+1) on the larger grid",
                   fails=bool(stronger),
                   detail=f"fails at {len(stronger)} (n, ℓ), e.g. {stronger[:3]}"),
        PowerCheck(name="log term with constant 1",
                   description="ρ(n, ℓ) >= log(ℓ) in place of log(ℓ)/(6n) on the log-regime "
                               "grid",
                   fails=bool(const_one),
                   detail=f"fails at {len(const_one)} points, e.g. (n, ℓ, ρ, log ℓ) = "
                          f"{const_one[:2]}"),
        PowerCheck(name="opening layer needs n types",
                   description="the closed form with F_n in place of F_{n−1} for the layer "
                               "that opened the block, compared with the exact ρ",
                   fails=len(wrong_opening) == len(EXACT_GRID),
                   detail=f"disagrees at {len(wrong_opening)} of {len(EXACT_GRID)} points, "
                          f"e.g. (n, ℓ, relative error) = {wrong_opening[:3]}"),
    ]
    notes = (f"Closed form vs exact ρ on n = 2..5, ℓ = 1..5: largest relative deviation "
             f"{worst_dev:.1e}; vs the floating-point path at n = 2, ℓ = 10^3, 10^4: "
             f"{float_dev:.1e}. Larger grid ({len(LARGE_NS)} x {len(LARGE_LS)} points, ℓ >= 2): "
             f"ρ >= H_n holds (smallest margin {best[0]} at n = {best[1]['n']}, "
             f"ℓ = {best[1]['layers']}); ρ "
             f"is increasing in ℓ along every n on the grid: {increasing}. Log regime "
             f"({len(log_points)} points, n = 2, 3, ℓ up to 10^18): the log term is the larger "
             f"one at {len(log_active)} points, e.g. {log_active[:2]}, and ρ exceeds it by far "
             "(ρ(2, ℓ) ≈ 0.72·log ℓ against log(ℓ)/12). No proof of ρ >= H_n (ℓ >= 2) is "
             "offered: a numerical finding. Theorem 4 for k < nℓ − 1: not examined.")
    return LedgerRow(
        theorem="Theorem 4, corrected bound beyond the exact grid",
        statement="k = nℓ − 1, ℓ >= 2: ρ(n, ℓ) >= H_n (larger grid), and ρ(n, ℓ) >= "
                  "max(H_n, log(ℓ)/(6n)) where the log term is the larger one",
        grid="closed form vs exact on n = 2..5, ℓ = 1..5; ρ >= H_n on n = 2..12, ℓ = 2..16, "
             "32..1024; log regime n = 2, 3, ℓ = 10^1..10^18 and just above exp(6n·H_n)",
        smallest_margin=best[0], holds=holds, witness=best[1], notes=notes,
        power_checks=power_checks)


if __name__ == "__main__":
    from proofs import format_ledger, run_ledger

    print(format_ledger(run_ledger(["proofs.theorem4_regimes"])))
