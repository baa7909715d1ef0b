"""Ledger row for ZipMoE's Theorem 3.2 (= Theorem D.1): the DP procedure's law on k-subsets
(independent Bernoulli(q) conditioned on exactly k selections, q from Chen, Dempster & Liu 1994)
is the maximum-entropy law with the observed inclusion probabilities f (Yang et al., Sec. 3.4,
App. D).

Seeded grid: n = 3..8, k = 1..min(n − 1, 4), three random f per (n, k) (Dirichlet scaled to sum k,
redrawn until max f < 1). For each: q = :func:`~paging.zipmoe.hitmodel.selection_probabilities`,
the DP law = :func:`~paging.zipmoe.hitmodel.subset_distribution`, and an *independent*
maximum-entropy solution (:func:`~paging.zipmoe.hitmodel.max_entropy_subsets`, classical IPF on
the subsets). Compared: ``max |P_DP − P_maxent|``, entropies, and the DP law's marginals against f.
Power checks: a different law with the same marginals (null-space perturbation) passed off as the
maximum-entropy law must be rejected (strictly lower entropy), and q = f (the inclusion
probabilities themselves, capped at 1) passed off as Chen et al.'s q must be rejected by the
marginal check. (App. C calls q "the normalized counterpart" of f but the same sentence says q
comes from IPF, so q = f is not App. C's reading; the check is only a power check.)
"""

from __future__ import annotations

import numpy as np

from paging.zipmoe import hitmodel as hm
from proofs.ledger import Erratum, LedgerRow, PowerCheck

SEED = 32
TOL = 1e-9


def _random_f(rng, n: int, k: int) -> np.ndarray:
    while True:
        f = rng.dirichlet(np.ones(n)) * k
        if f.max() < 0.95:
            return f


def check() -> LedgerRow:
    """Run the grid (about a second)."""
    rng = np.random.default_rng(SEED)
    worst_diff, worst_h, worst_marg, min_gap, naive_err = 0.0, 0.0, 0.0, np.inf, 0.0
    witness, runs, power_runs = {}, 0, 0
    for n in range(3, 9):
        for k in range(1, min(n, 5)):
            for _ in range(3):
                f = _random_f(rng, n, k)
                q = hm.selection_probabilities(f, k)
                dp = hm.subset_distribution(list(q), k)
                me = hm.max_entropy_subsets(f, k)
                diff = max(abs(float(dp[S]) - me[S]) for S in dp)
                dh = abs(hm.entropy(dp) - hm.entropy(me))
                marg = float(np.max(np.abs(np.array(hm.conditional_marginals(list(q), k)) - f)))
                runs += 1
                if diff >= worst_diff:
                    worst_diff = diff
                    witness = {"n": n, "k": k, "f": [round(float(x), 6) for x in f],
                               "max_abs_diff": float(diff), "entropy_diff": dh}
                worst_h, worst_marg = max(worst_h, dh), max(worst_marg, marg)
                if 1 < k < n - 1:   # C(n, k) > n + 1: the marginals leave freedom
                    other = hm.same_marginals_perturbation(dp, n, k)
                    min_gap = min(min_gap, hm.entropy(dp) - hm.entropy(other))
                    power_runs += 1
                naive = np.array(hm.conditional_marginals(list(np.minimum(f, 1.0)), k))
                naive_err = max(naive_err, float(np.max(np.abs(naive - f))))
    # the printed Eq. 24 update, w <- w·f_i/R(k, N), on one instance
    f = np.array([0.9, 0.6, 0.3, 0.2])
    w = f.copy()
    for _ in range(50):
        w = w * f / hm._esp(list(w), 2)[2]
    printed_err = float(np.max(np.abs(np.array(hm.conditional_marginals(
        list(w / (1 + w)), 2)) - f)))
    holds = worst_diff < TOL and worst_marg < TOL and worst_h < TOL
    power_checks = [
        # strictly lower entropy, by more than the float noise of the agreement
        PowerCheck(name="another law with the same marginals",
                   description="a null-space perturbation of the DP law (same inclusion "
                               "probabilities) passed off as the maximum-entropy law: its "
                               "entropy must be strictly lower",
                   fails=bool(power_runs) and min_gap > 10 * max(worst_h, 1e-13),
                   detail=f"on {power_runs} instances, entropy lower by at least "
                          f"{min_gap:.3e} nats (noise {worst_h:.2e})"),
        PowerCheck(name="q = f passed off as Chen et al.'s q",
                   description="the marginal check run with q = min(f, 1) in place of the "
                               "IPF weights",
                   fails=naive_err > 100 * TOL,
                   detail=f"worst marginal error {naive_err:.3f} on the grid"),
    ]
    errata = [
        Erratum(
            where="App. D, the update below Eq. 23 (modified IPF of Chen et al. 1994)",
            printed="w_i^(t+1) <- w_i^(t) · f_i / R(k, N)",
            problem="dividing by R(k, N) rescales every weight by f_i / const, so w_i ∝ f_i^t "
                    "drifts to the largest f instead of fitting the marginals: after 50 steps on "
                    f"f = (0.9, 0.6, 0.3, 0.2), k = 2, the marginal error is {printed_err:.3f}",
            corrected="w_i^(t+1) <- w_i^(t) · f_i / f_i^(t), with f_i^(t) of Eq. 24 (Chen et "
                      "al.'s step; Eq. 24 defines f_i^(t) and the printed update never uses it)",
            verified=worst_marg < TOL and printed_err > 0.01, grade="error",
            witness=f"f = (0.9, 0.6, 0.3, 0.2), k = 2, 50 printed updates: marginal error "
                    f"{printed_err:.3f}"),
        Erratum(
            where="App. D, Eq. 17 (KKT), first line",
            printed="−log P(S) − 1 + α + 1_{|S|≠k} + Σ λ_i = 0",
            problem="the multiplier is missing: the term is β_S·1_{|S|≠k}",
            corrected="−log P(S) − 1 + α + β_S·1_{|S|≠k} + Σ_{i∈S, |S|=k} λ_i = 0; Eq. 18 "
                      "follows unchanged",
            verified=None, grade="typo",
            witness="text comparison (Eq. 18 needs β_S); no computation"),
    ]
    notes = (f"{runs} instances: max |P_DP − P_maxent| = {worst_diff:.2e}, max entropy "
             f"difference {worst_h:.2e} nats, max marginal error of the DP law {worst_marg:.2e}. "
             "The theorem needs 0 < f_i < 1 and "
             "sum f = k (Chen et al.'s existence condition); f_i in {0, 1} fixes the expert "
             "out or in.")
    return LedgerRow(
        theorem="ZipMoE Theorem 3.2",
        statement="P_DP(S) ∝ Π_{i∈S} q_i Π_{i∉S}(1 − q_i) on |S| = k, with q from Chen et al., "
                  "is the maximum-entropy law on k-subsets with inclusion probabilities f",
        grid=f"seed {SEED}: n = 3..8, k = 1..min(n − 1, 4), 3 random f each",
        smallest_margin=TOL - worst_diff, holds=bool(holds), witness=witness, errata=errata,
        notes=notes, power_checks=power_checks)


if __name__ == "__main__":
    print(check())
