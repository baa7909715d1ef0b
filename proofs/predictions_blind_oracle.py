"""Ledger row: BlindOracle with predictions of ℓ1 error η (Wei 2020).

Statement checked: BO(σ) ≤ OPT(σ) + 2·η_ℓ1, i.e. competitive ratio 1 + 2·η_ℓ1/OPT (A. Wei,
"Better and simpler learning-augmented online caching", APPROX 2020, arXiv:2005.13716, the
bound for BlindOracle). The paper is not in ../shared/papers: the constant 2 is our reading
of its BlindOracle theorem and is checked as such (a failure would show here). With the
package's oracle (:class:`paging.predict.OraclePredictor`) η_ℓ1 = η·OPT exactly, so the bound
reads BO ≤ (1 + 2η)·OPT; at η = 0 BO must equal OPT.

Grid: :func:`proofs.predictions_common.instances` (layered Zipf and a cyclic sequence),
k ∈ {2, 4, 8}, η ∈ {0, 0.5, 2, 10, 50}, noise seeds 0-1. Margin: (1 + 2η)·OPT − BO, in
misses (exact integers times the η on the grid).

Power check: the same rule applied to LRU instead of BlindOracle must fail somewhere at η = 0
(LRU > OPT): it does (witness in the notes), so a violation would be seen.
"""

from __future__ import annotations

from fractions import Fraction

from paging import simulate
from proofs.ledger import LedgerRow
from proofs.predictions_common import ETAS, KS, SEEDS, grid, instances, opt

STATEMENT = "BO(σ) ≤ OPT(σ) + 2·η_ℓ1(σ)  [Wei 2020]; with η_ℓ1 = η·OPT: BO ≤ (1 + 2η)·OPT"


def check() -> LedgerRow:
    best, holds, points, exact0 = None, True, 0, True
    power = None
    for label, trace, k in grid():
        o = opt(trace, k)
        lru = simulate(trace, "lru", k).misses
        if lru > o and power is None:
            power = {"trace": label, "k": k, "lru": lru, "opt": o}
        for eta in ETAS:
            for s in SEEDS:
                bo = simulate(trace, f"blind-oracle:oracle:eta={eta:g},seed={s}", k).misses
                points += 1
                margin = (1 + 2 * Fraction(eta).limit_denominator()) * o - bo
                holds &= margin >= 0
                if eta == 0:
                    exact0 &= bo == o
                if best is None or margin < best[0]:
                    best = (margin, {"trace": label, "k": k, "eta": eta, "seed": s,
                                     "bo": bo, "opt": o})
    notes = (f"{points} runs. At η = 0 BlindOracle equals OPT on every instance: {exact0}. "
             "Power check: the same bound with LRU in place of BlindOracle fails at η = 0 "
             f"({power}). The bound is tight at η = 0 (margin 0 there), so the smallest "
             "margin is 0 by construction; the largest ratio BO/OPT on the grid is in the "
             "figure experiments/fig_predictions.py.")
    return LedgerRow(theorem="Wei 2020 (BlindOracle)", statement=STATEMENT,
                     grid=f"{len(instances())} traces x k={list(KS)} x eta={list(ETAS)} x "
                          f"noise seeds {list(SEEDS)}",
                     smallest_margin=best[0], holds=bool(holds and exact0 and power),
                     witness=best[1], notes=notes)


if __name__ == "__main__":
    from proofs import format_ledger, run_ledger

    print(format_ledger(run_ledger(["proofs.predictions_blind_oracle"])))
