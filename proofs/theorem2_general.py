"""Ledger row: Theorem 2 for every ℓ <= k < nℓ, not only the proof's k = nℓ − 1.

Theorem 2's proof (Angelopoulos et al., Sec. 3.1) takes k = nℓ − 1, but its two counting steps
never use it: the adversary only needs *a* page missing from A's cache at the start of every
round, which exists whenever k < nℓ; A misses at least once per round; and rounds that differ
from the previous one in at most one request hold at most ℓ + g distinct pages over g + 1
rounds, so OPT's evicting misses are at least k − ℓ + 1 rounds apart whatever n is. The
certificate of :mod:`proofs.theorem2` therefore reads, for every ℓ <= k < nℓ,

    A(σ) >= (k − ℓ + 1)·OPT(σ) − (k + 1)(k − ℓ),

so Cr(A) >= k − ℓ + 1 on that whole range (for k >= nℓ every page fits and Cr = 1: the
erratum recorded in Theorem 2's row). This row runs the same construction as
:func:`adversaries.theorem2.build` (round 0 asks expert 0 of every layer; round i repeats round
i − 1 except that the smallest page missing from A's cache is requested in its own layer),
written out here because ``build`` insists on k = nℓ − 1, for every k in ℓ..nℓ − 2 and checks
the certificate and both counting steps with exact integers.

Grid: (n, ℓ) in {(3, 1), (4, 1), (3, 2), (4, 2), (2, 3), (3, 3), (2, 4)}, every k in ℓ..nℓ − 2,
R in {k − ℓ + 2, 3k(k − ℓ + 1)} rounds, ten deterministic online policies. Margin: A minus the
right-hand side. Power checks (same runs): the ratio k − ℓ + 2 in place of k − ℓ + 1 must fail on
the long runs, and OPT's evictions "k − ℓ + 2 rounds apart" must be contradicted somewhere.
"""

from __future__ import annotations

import numpy as np

from adversaries.theorem2 import additive_constant
from paging.layout import Layout
from paging.policies import make_policy
from paging.simulate import Simulation, simulate
from paging.trace import from_pages
from proofs.ledger import LedgerRow, PowerCheck

GRID = [(3, 1), (4, 1), (3, 2), (4, 2), (2, 3), (3, 3), (2, 4)]
POLICIES = ("lru", "fifo", "lfu", "fwf", "llru", "llru-latest", "least-stale", "fld", "arc",
            "greedy-dual")


def adaptive(policy: str, n: int, layers: int, k: int, rounds: int):
    """``(trace, A's misses, A's fewest misses in a round)`` of the construction above."""
    lay = Layout(n, layers)
    sim = Simulation(lay, make_policy(policy), k, steps=np.arange(rounds * layers), seed=0)
    cur = [lay.page(z, 0) for z in range(layers)]
    pages, fewest = [], None
    for i in range(rounds):
        if i > 0:
            resident = sim.resident
            p = next(q for q in range(lay.n_pages) if q not in resident)
            cur[int(lay.layer_of(p))] = p
        before = sim.misses
        for q in cur:
            sim.serve(q)
        pages.extend(cur)
        m = sim.misses - before
        fewest = m if fewest is None else min(fewest, m)
    return from_pages(pages, lay), sim.misses, fewest


def check() -> LedgerRow:
    best, holds, runs = None, True, 0
    step_failures, ratio_up, gap_up = [], [], []
    for n, L in GRID:
        for k in range(L, n * L - 1):
            g, c = k - L + 1, additive_constant(k, L)
            lengths = sorted({g + 1, 3 * k * g})
            for name in POLICIES:
                for R in lengths:
                    tr, a, fewest = adaptive(name, n, L, k, R)
                    opt = simulate(tr, "belady", k, record=True)
                    o = opt.misses
                    runs += 1
                    margin = a - (g * o - c)
                    holds &= margin >= 0
                    if best is None or margin < best[0]:
                        best = (margin, {"n": n, "layers": L, "k": k, "rounds": R,
                                         "policy": name, "online": a, "opt": o, "c": c})
                    ev = sorted({int(t) // L for t, _ in opt.evictions.tolist()})
                    gaps = [b - a_ for a_, b in zip(ev, ev[1:], strict=False)]
                    if fewest < 1 or (ev and ev[0] < g) or any(d < g for d in gaps):
                        step_failures.append((n, L, k, R, name))
                    if any(d < g + 1 for d in gaps):
                        gap_up.append((n, L, k, R, name))
                    if R == lengths[-1] and a < (g + 1) * o - c:
                        ratio_up.append((n, L, k, R, name))
    # examples away from the trivial k = ℓ (k − ℓ + 1 = 1)
    ratio_up.sort(key=lambda w: -w[2])
    gap_up.sort(key=lambda w: -w[2])
    power_checks = [
        PowerCheck(name="ratio k − ℓ + 2", description="A >= (k − ℓ + 2)·OPT − (k + 1)(k − ℓ) "
                   "on the long runs", fails=bool(ratio_up),
                   detail=f"fails on {len(ratio_up)} long runs, e.g. (n, ℓ, k, R, policy) = "
                          f"{ratio_up[:2]}"),
        PowerCheck(name="OPT's evictions k − ℓ + 2 rounds apart",
                   description="the counting step with a gap one round longer",
                   fails=bool(gap_up), detail=f"contradicted on {len(gap_up)} runs, e.g. (n, "
                                              f"ℓ, k, R, policy) = {gap_up[:2]}"),
    ]
    margin, witness = best
    notes = (f"{runs} runs over k = ℓ..nℓ − 2. Counting steps (A >= 1 miss per round, OPT's "
             "evictions >= k − ℓ + 1 rounds apart, the first in round >= k − ℓ + 1): "
             f"{len(step_failures)} failures. The finding: the proof extends unchanged to every "
             "ℓ <= k < nℓ (it needs a missing page, not exactly one). Theorem 4 for "
             "k < nℓ − 1 is not examined (its Yao value would need OPT's block law with "
             "nℓ − k pages missing).")
    return LedgerRow(
        theorem="Theorem 2 for ℓ <= k < nℓ − 1 (the proof extended)",
        statement="ℓ <= k < nℓ, every deterministic A: A(σ) >= (k − ℓ + 1)·OPT(σ) − "
                  "(k + 1)(k − ℓ) on the adaptive σ, so Cr(A) >= k − ℓ + 1",
        grid=f"(n, ℓ) in {GRID}, k = ℓ..nℓ − 2, R in {{k − ℓ + 2, 3k(k − ℓ + 1)}}, policies "
             f"{', '.join(POLICIES)}",
        smallest_margin=margin, holds=bool(holds and not step_failures), witness=witness,
        notes=notes, power_checks=power_checks)


if __name__ == "__main__":
    from proofs import format_ledger, run_ledger

    print(format_ledger(run_ledger(["proofs.theorem2_general"])))
