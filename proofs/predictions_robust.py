"""Ledger row: the robust combiner of BlindOracle and LRU (robust-blind-oracle).

Statement (proved in :class:`paging.policies.predictive.RobustBlindOracle`'s docstring):
ALG ≤ 6·min(BO, LRU) + 2 + k·(S + 1), where BO and LRU are the misses of the two simulated
algorithms on the same sequence and S the number of switches. It makes Wei 2020's "min of
both" (via Fiat et al. 1991's deterministic combination) explicit; Wei's own constants are
not checked (paper not in ../shared/papers).

Grid: the instances of :mod:`proofs.predictions_common`, k ∈ {2, 4, 8}, the oracle with
η ∈ {0, 0.5, 2, 10, 50} and the predictors of :func:`proofs.predictions_common.predictor_family`
(jitter, shifted, random, reversed — with reversed predictions BlindOracle evicts the page needed
soonest, so the combiner has to switch to LRU — and frequency). Margin: bound − ALG in misses.

Power check: BlindOracle alone with the reversed predictions is held to the same bound with
S = 0 and fails it; the combiner passes with S ≥ 1.
"""

from __future__ import annotations

from paging import simulate
from paging.policies.predictive import BlindOracle, RobustBlindOracle
from proofs.ledger import LedgerRow, PowerCheck
from proofs.predictions_common import (
    ETAS,
    KS,
    SEEDS,
    ReversedPredictor,
    grid,
    instances,
    predictor_family,
)

STATEMENT = "robust-blind-oracle: ALG ≤ 6·min(BO, LRU) + 2 + k·(S + 1)  (S: switches)"


def check() -> LedgerRow:
    best, holds, points, max_switches = None, True, 0, 0
    power = None
    for label, trace, k in grid():
        specs = [f"oracle:eta={e:g},seed={s}" for e in ETAS for s in SEEDS] + [
            name for name, _ in predictor_family(trace) if name != "exact"]
        for spec in specs:
            pred = dict(predictor_family(trace)).get(spec, spec)
            pol = RobustBlindOracle(predictor=pred)
            alg = simulate(trace, pol, k).misses
            points += 1
            m = min(pol.cost)
            margin = 6 * m + 2 + k * (pol.switches + 1) - alg
            holds &= margin >= 0
            max_switches = max(max_switches, pol.switches)
            if best is None or margin < best[0]:
                best = (margin, {"trace": label, "k": k, "predictor": spec, "alg": alg,
                                 "bo": pol.cost[0], "lru": pol.cost[1],
                                 "switches": pol.switches})
            if spec == "reversed" and power is None:
                bo = simulate(trace, BlindOracle(predictor=ReversedPredictor()), k).misses
                if bo > 6 * min(bo, pol.cost[1]) + 2 + k:
                    power = {"trace": label, "k": k, "blind_oracle_reversed": bo,
                             "lru": pol.cost[1], "combiner": alg,
                             "switches": pol.switches}
    notes = f"{points} runs; at most {max_switches} switches."
    power_checks = [PowerCheck(
        name="BlindOracle alone passed off as the combiner",
        description="BlindOracle with reversed predictions held to 6·min(BO, LRU) + 2 + k with "
                    "S = 0 (no switch) must fail",
        fails=power is not None, detail=f"first failure: {power}")]
    return LedgerRow(theorem="Robust BlindOracle/LRU combiner (this package; after Wei 2020)",
                     statement=STATEMENT,
                     grid=f"{len(instances())} traces x k={list(KS)} x (oracle eta="
                          f"{list(ETAS)} x seeds {list(SEEDS)}, jitter x3, shifted x2, random, "
                          "reversed, frequency)",
                     smallest_margin=int(best[0]), holds=bool(holds),
                     witness=best[1], notes=notes, power_checks=power_checks)
