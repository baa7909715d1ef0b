"""Ledger row: the adversary search rediscovers the known lower bounds, from random starts.

The search (:mod:`adversaries.search`: simulated annealing with random restarts over repeated
layered motifs, OPT exact by Belady) is given only the policy and the instance size; no
hand-made construction seeds it. What it must find (each a classical or the paper's bound):

* LRU, FIFO and FWF on k + 1 pages: ratio >= k − ε (Sleator & Tarjan 1985: no deterministic
  policy beats k; the cyclic sequence gives k·(1 − O(k/N)) at N requests; ε = 0.15 at
  k = 3 with 384 requests), and the issue's done-when: LRU, n = 4, ℓ = 2, k = 7, default budget,
  ratio >= 6.5;
* LLRU: Theorem 2 of Angelopoulos et al. 2025, "every deterministic layered paging algorithm
  has competitive ratio at least k − ℓ + 1 (with k = nℓ − 1)", on (n, ℓ) in {(2, 2), (3, 2),
  (2, 3)};
* Marking: mean ratio (32 fresh seeds, 95 % CI) at most 2H_k (Fiat et al. 1991: "its expected
  cost on any sequence of requests is within a factor of 2H_k of optimum") and at least
  0.85·H_k (the search gets close to the H_k every randomized policy is held to);
* LFU: the ratio grows with the sequence length (24, 48, 96 rounds), at least doubling from
  the first to the last (LFU is not competitive).

Margin: the smallest of (found − bound) over the lower bounds and (2H_k − CI upper end) for
Marking (exact Fractions where both sides are). Every found ratio is certified: the witness is
re-simulated and both runs verified (:func:`adversaries.search.certify`).

Power check: the same searches with budget 0 (the random start genomes only, no search) must
fail the row's checks: a random sequence reaches none of these bounds.
"""

from __future__ import annotations

from fractions import Fraction

from adversaries.search import search
from proofs.ledger import LedgerRow, PowerCheck

EPS = Fraction(15, 100)
LLRU_SIZES = ((2, 2), (3, 2), (2, 3))
LFU_LENGTHS = (24, 48, 96)
SEED = 0


def harmonic(k: int) -> Fraction:
    return sum((Fraction(1, i) for i in range(1, k + 1)), Fraction(0))


def checks(budget: int | None) -> list[dict]:
    """Every check of the row, run with ``budget`` (None: the row's budgets)."""
    def b(default):
        return default if budget is None else budget

    out = []

    def lower(label, policy, n, L, k, bound, bname, bud, **kw):
        r = search(policy, n=n, layers=L, k=k, budget=bud, seed=SEED, show=False, **kw)
        out.append({"check": label, "policy": policy, "n": n, "layers": L, "k": k,
                    "ratio": r.ratio, "bound": bound, "bound_name": bname,
                    "margin": Fraction(r.ratio) - bound, "ok": r.ratio >= bound,
                    "verified": r.certificate["verified"], "requests": r.trace.n_requests,
                    "evaluations": r.evaluations})

    lower("done-when", "lru", 4, 2, 7, Fraction(13, 2), "6.5", b(None))
    for pol in ("lru", "fifo", "fwf"):
        lower("k+1 pages", pol, 2, 2, 3, 3 - EPS, "k - 0.15", b(1500))
    for n, L in LLRU_SIZES:
        k = n * L - 1
        lower("Theorem 2", "llru", n, L, k, Fraction(k - L + 1), "k - l + 1", b(2000))
    k = 3
    r = search("marking", n=2, layers=2, k=k, budget=b(800), seed=SEED, seeds=4, show=False)
    lo, hi = r.ci
    h = harmonic(k)
    out.append({"check": "Marking <= 2H_k", "policy": "marking", "n": 2, "layers": 2, "k": k,
                "ratio": r.ratio, "ci95": [lo, hi], "bound": 2 * h, "bound_name": "2H_k",
                "margin": float(2 * h) - hi, "ok": hi <= 2 * h,
                "verified": r.certificate["verified"], "requests": r.trace.n_requests})
    out.append({"check": "Marking near H_k", "policy": "marking", "n": 2, "layers": 2, "k": k,
                "ratio": r.ratio, "bound": float(Fraction(85, 100) * h),
                "bound_name": "0.85 H_k", "margin": r.ratio - float(Fraction(85, 100) * h),
                "ok": r.ratio >= float(Fraction(85, 100) * h),
                "verified": r.certificate["verified"], "requests": r.trace.n_requests})
    lfu = [search("lfu", n=2, layers=2, k=3, length=T, budget=b(None), seed=SEED, show=False)
           for T in LFU_LENGTHS]
    ratios = [x.ratio for x in lfu]
    grows = all(ratios[i] < ratios[i + 1] for i in range(len(ratios) - 1)) \
        and ratios[-1] >= 2 * ratios[0]
    out.append({"check": "LFU grows", "policy": "lfu", "n": 2, "layers": 2, "k": 3,
                "lengths": list(LFU_LENGTHS), "ratios": ratios, "bound": 2 * ratios[0],
                "bound_name": "strictly increasing, last >= 2 x first",
                "margin": ratios[-1] - 2 * ratios[0], "ok": grows,
                "verified": all(x.certificate["verified"] for x in lfu),
                "requests": [x.trace.n_requests for x in lfu]})
    return out


def check() -> LedgerRow:
    rows = checks(None)
    holds = all(r["ok"] and r["verified"] for r in rows)
    worst = min(rows, key=lambda r: float(r["margin"]))
    weak = checks(0)
    failed = [r["check"] + ":" + r["policy"] for r in weak if not r["ok"]]
    power = PowerCheck(
        name="budget 0 (random start genomes only)",
        description="the same searches without any search step must not reach the bounds",
        fails=bool(failed),
        detail=f"fails {len(failed)} of {len(weak)} checks: {', '.join(failed)}" if failed
        else "a random start passed every check: the thresholds do not discriminate")
    summary = "; ".join(
        f"{r['check']} {r['policy']} n={r['n']},l={r['layers']},k={r['k']}: "
        + (f"{[str(x) for x in r['ratios']]}" if "ratios" in r else f"{float(r['ratio']):.4f}")
        + f" vs {r['bound_name']}" for r in rows)
    margin = worst["margin"]
    return LedgerRow(
        theorem="Adversary search rediscovers known lower bounds (this package, issue 24)",
        statement="from random starts: LRU/FIFO/FWF >= k − ε on k + 1 pages; LLRU >= k − ℓ + 1 "
                  "(Theorem 2); Marking's mean <= 2H_k and near H_k; LFU grows with length",
        grid=f"lru n=4,l=2,k=7 default budget; lru/fifo/fwf n=2,l=2,k=3; llru (n,l) in "
             f"{list(LLRU_SIZES)}, k = nl − 1; marking n=2,l=2,k=3; lfu n=2,l=2,k=3, lengths "
             f"{list(LFU_LENGTHS)}; seed {SEED}",
        smallest_margin=margin if isinstance(margin, Fraction) else float(margin),
        holds=bool(holds), witness={k: v for k, v in worst.items()},
        notes="found ratios (lower bounds found, each certified by re-simulation and "
              "verification): " + summary, power_checks=[power])
