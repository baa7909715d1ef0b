"""Ledger row: PredictiveMarker (Lykouris & Vassilvitskii 2018) and LMarker (Rohatgi 2020).

Stated bounds: PredictiveMarker is 2 + O(min(sqrt(η_ℓ1/OPT), log k))-competitive and
2-competitive with exact predictions [Lykouris & Vassilvitskii, ICML 2018 / J. ACM 2021];
LMarker is O(1 + min(log k, ·))-competitive [Rohatgi, SODA 2020]. The papers are not in
../shared/papers and the O(·) constants are not checked. What is checked with explicit
constants:

1. marking bound, every run: both are marking algorithms, so ALG ≤ k·OPT + k (at most k misses
   per phase; OPT misses at least once per phase after the first; Karlin et al. 1988);
2. consistency: with exact predictions (η = 0), the mean over run seeds of PredictiveMarker is
   at most 2·OPT [LV18]. For LMarker the same ratio is reported, not required (no explicit
   constant from Rohatgi).

Scaling (reported, no verdict): the largest mean PredictiveMarker/OPT per η on the grid.

Power check: LFU is not a marking algorithm and breaks the bound ALG ≤ k·OPT + k on
:func:`~proofs.predictions_common.lfu_adversary`; LRU breaks "≤ 2·OPT" on the cyclic
instance. Both violations are found by the same code, so the checks can fail.
"""

from __future__ import annotations

import numpy as np

from paging import simulate
from proofs.ledger import LedgerRow
from proofs.predictions_common import ETAS, KS, SEEDS, grid, instances, lfu_adversary, opt

STATEMENT = ("PredictiveMarker and LMarker: ALG ≤ k·OPT + k on every run (marking); "
             "E[PredictiveMarker] ≤ 2·OPT at η = 0 [LV18]")


def check() -> LedgerRow:
    best, holds, consistent = None, True, True
    worst_pm = {}
    worst_lm0 = 0.0
    power_lru = None
    for label, trace, k in grid():
        o = opt(trace, k)
        lru = simulate(trace, "lru", k).misses
        if lru > 2 * o and power_lru is None:
            power_lru = {"trace": label, "k": k, "lru": lru, "opt": o}
        for eta in ETAS:
            for s in SEEDS:
                spec = f"oracle:eta={eta:g},seed={s}"
                pm = [simulate(trace, f"predictive-marker:{spec}", k, seed=r).misses
                      for r in SEEDS]
                lm = [simulate(trace, f"lmarker:{spec}", k, seed=r).misses for r in SEEDS]
                for name, runs in (("predictive-marker", pm), ("lmarker", lm)):
                    margin = k * o + k - max(runs)
                    holds &= margin >= 0
                    if best is None or margin < best[0]:
                        best = (margin, {"policy": name, "trace": label, "k": k,
                                         "eta": eta, "seed": s, "misses": max(runs),
                                         "opt": o})
                worst_pm[eta] = max(worst_pm.get(eta, 0.0), float(np.mean(pm)) / o)
                if eta == 0:
                    consistent &= float(np.mean(pm)) <= 2 * o
                    worst_lm0 = max(worst_lm0, float(np.mean(lm)) / o)
    adv = lfu_adversary()
    lfu, o_adv = simulate(adv, "lfu", 2).misses, opt(adv, 2)
    power_lfu = lfu > 2 * o_adv + 2
    notes = (f"Consistency (mean PredictiveMarker ≤ 2·OPT at η = 0): {consistent}; largest "
             f"mean PredictiveMarker/OPT by η: "
             + ", ".join(f"η={e:g}: {r:.3f}" for e, r in sorted(worst_pm.items()))
             + f". LMarker at η = 0: largest mean/OPT {worst_lm0:.3f} (reported only). "
             f"Power checks: LFU on the LFU adversary (k=2) {lfu} misses > k·OPT + k = "
             f"{2 * o_adv + 2} (OPT {o_adv}): {power_lfu}; LRU > 2·OPT: {power_lru}.")
    return LedgerRow(theorem="Lykouris-Vassilvitskii 2018 / Rohatgi 2020 (marking with "
                             "predictions)", statement=STATEMENT,
                     grid=f"{len(instances())} traces x k={list(KS)} x eta={list(ETAS)} x "
                          f"noise seeds {list(SEEDS)} x run seeds {list(SEEDS)}",
                     smallest_margin=int(best[0]),
                     holds=bool(holds and consistent and power_lfu and power_lru),
                     witness=best[1], notes=notes)
