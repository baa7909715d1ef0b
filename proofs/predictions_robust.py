"""Ledger row: the robust combiner of BlindOracle and LRU (robust-blind-oracle).

Statement (proved in :class:`paging.policies.predictive.RobustBlindOracle`'s docstring):
ALG ≤ 3·min(BO, LRU), where BO and LRU are the misses of the two simulated algorithms on the
same sequence. (The row checked 6·min(BO, LRU) + 2 + k·(S + 1) before, S the switches: so
loose that a combiner evicting LRU's victims whatever the leader, or inside the leader's cache,
met it everywhere on the grid.) It makes Wei 2020's "min of
both" (via Fiat et al. 1991's deterministic combination) explicit; Wei's own constants are
not checked (paper not in ../shared/papers).

Grid: the instances of :mod:`proofs.predictions_common`, k ∈ {2, 4, 8}, the oracle with
η ∈ {0, 0.5, 2, 10, 50} and the predictors of :func:`proofs.predictions_common.predictor_family`
(jitter, shifted, random, reversed — with reversed predictions BlindOracle evicts the page needed
soonest, so the combiner has to switch to LRU — and frequency). Margin: bound − ALG in misses.
BO, LRU and S in the bound are computed independently of the combiner, which keeps its own
counts on virtual caches: BO and LRU by simulating BlindOracle (a fresh predictor of the same
spec) and LRU, S by replaying the switching rule (leader's misses > 2 × the other's, after each
request) on their recorded misses; the combiner's own counts and switches must agree with them
(a combiner reporting counts too large would otherwise loosen its own bound).

Power checks: BlindOracle alone with the reversed predictions is held to the same bound and
fails it (the combiner passes, switching); LRU passed off as the combiner is held to it and
fails it (plain LRU met the old bound on the whole grid).
"""

from __future__ import annotations

import numpy as np

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

STATEMENT = "robust-blind-oracle: ALG ≤ 3·min(BO, LRU)"


def replay_switches(bo_hits, lru_hits) -> int:
    """The switches of the follow-the-leader rule (BlindOracle first; switch when the leader's
    misses exceed twice the other's, checked after each request) on two recorded hit masks."""
    counts = np.stack([np.cumsum(~np.asarray(bo_hits)), np.cumsum(~np.asarray(lru_hits))], 1)
    leader = switches = 0
    for c in counts:
        if c[leader] > 2 * c[1 - leader]:
            leader, switches = 1 - leader, switches + 1
    return switches


def check() -> LedgerRow:
    best, holds, points, max_switches = None, True, 0, 0
    disagree = []               # the combiner's own counts/switches against independent runs
    power = None
    lru_power = []              # LRU passed off as the combiner
    for label, trace, k in grid():
        specs = [f"oracle:eta={e:g},seed={s}" for e in ETAS for s in SEEDS] + [
            name for name, _ in predictor_family(trace) if name != "exact"]
        for spec in specs:
            pred = dict(predictor_family(trace)).get(spec, spec)
            pol = RobustBlindOracle(predictor=pred)
            alg = simulate(trace, pol, k).misses
            # a fresh predictor of the same spec for the independent BlindOracle run
            bo_run = simulate(trace, BlindOracle(
                predictor=dict(predictor_family(trace)).get(spec, spec)), k, record=True)
            lru_run = simulate(trace, "lru", k, record=True)
            bo, lru = bo_run.misses, lru_run.misses
            switches = replay_switches(bo_run.hit_mask, lru_run.hit_mask)
            if [bo, lru, switches] != [*pol.cost, pol.switches]:
                disagree.append({"trace": label, "k": k, "predictor": spec,
                                 "reported": [*pol.cost, pol.switches],
                                 "independent": [bo, lru, switches]})
            points += 1
            m = min(bo, lru)
            margin = 3 * m - alg
            if lru > 3 * m:
                lru_power.append({"trace": label, "k": k, "predictor": spec, "lru": lru,
                                  "bo": bo})
            holds &= margin >= 0
            max_switches = max(max_switches, switches)
            if best is None or margin < best[0]:
                best = (margin, {"trace": label, "k": k, "predictor": spec, "alg": alg,
                                 "bo": bo, "lru": lru, "switches": switches})
            if spec == "reversed" and power is None:
                bo_rev = simulate(trace, BlindOracle(predictor=ReversedPredictor()), k).misses
                if bo_rev > 3 * min(bo_rev, lru):
                    power = {"trace": label, "k": k, "blind_oracle_reversed": bo_rev,
                             "lru": lru, "combiner": alg, "switches": switches}
    notes = (f"{points} runs; at most {max_switches} switches. BO, LRU and S from independent "
             f"runs and the replayed rule; the combiner's own counts and switches agree on "
             f"{points - len(disagree)} of {points}"
             + (f" (disagreements, e.g. {disagree[:2]})" if disagree else "") + ".")
    power_checks = [PowerCheck(
        name="BlindOracle alone passed off as the combiner",
        description="BlindOracle with reversed predictions held to 3·min(BO, LRU) must fail",
        fails=power is not None, detail=f"first failure: {power}"), PowerCheck(
        name="LRU passed off as the combiner",
        description="LRU's misses held to 3·min(BO, LRU) must fail somewhere",
        fails=bool(lru_power), detail=f"fails on {len(lru_power)} runs, e.g. {lru_power[:1]}")]
    return LedgerRow(theorem="Robust BlindOracle/LRU combiner (this package; after Wei 2020)",
                     statement=STATEMENT,
                     grid=f"{len(instances())} traces x k={list(KS)} x (oracle eta="
                          f"{list(ETAS)} x seeds {list(SEEDS)}, jitter x3, shifted x2, random, "
                          "reversed, frequency)",
                     smallest_margin=int(best[0]), holds=bool(holds and not disagree),
                     witness=best[1], notes=notes, power_checks=power_checks)
