"""Ledger row: the weighted offline bounds sandwich the exact optimum, which lies below every
online policy — LP <= ILP <= online, FOO-L <= ILP <= FOO-U — with variable sizes and costs.

Weighted paging with sizes (file caching) is NP-hard (Chrobak, Woeginger, Makino & Xu,
"Caching is hard — even in the fault model", Algorithmica 63, 2012), so the package offers an
exact ILP for small instances (:mod:`paging.offline.sizes`, CBC), its LP relaxation as a lower
bound (HiGHS) and FOO's lower and upper bounds (Berger, Beckmann & Harchol-Balter, "Practical
bounds on optimal caching with variable object sizes", POMACS 2(2), 2018). What must hold, on
every instance, for the cost Σ w(p) over the misses under a byte budget B:

* LP <= ILP (a relaxation) and FOO-L <= ILP <= FOO-U (FOO-U is the cost of a feasible schedule);
* ILP <= A for every online policy A of the registry, run by the one simulator under the same
  budget, sizes and costs (OPT is optimal among all feasible demand-paging schedules: the
  simulator's runs are such schedules, and a page larger than its partition is a miss in
  both). The shared-cache policies are compared with the shared ILP, the ``-dist`` ones with
  the per-layer ILP (OPT-DIST): a DIST layer whose byte share is smaller than a page bypasses
  it, which no shared-cache schedule may do, so DIST runs can cost less than the shared OPT
  (the weighted analogue of the README's "Bypass and OPT" note).

Grid (seeded, a few seconds): layouts with n·ℓ in 4..8, rounds-mode Zipf-like sequences of
20 rounds, sizes 1..4 bytes, costs in {1, 2, 5, 10}, budgets from the largest page to about half
the total size. Margins: ILP − LP, ILP − FOO-L, FOO-U − ILP, min_A(A) − ILP (exact where the
values are integers). Power check (:func:`power_check`): the checker must reject an optimum
that is too high; the ILP of budget B − 1 (a smaller cache) is passed off as OPT(B) and must
exceed some online policy's cost under B.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from paging.layout import Layout
from paging.offline.weighted import opt_weighted
from paging.policies import make_policy, policy_names
from paging.simulate import simulate
from paging.trace import from_pages
from proofs.ledger import LedgerRow, PowerCheck

SEED = 2018
LAYOUTS = [(2, 2), (4, 1), (3, 2), (2, 3), (4, 2)]
TRIALS = 6


def ONLINE() -> tuple[str, ...]:  # noqa: N802 (a constant, read at run time: the registry grows)
    """The registered online policies the grid runs (Score-Based needs gate scores the
    synthetic sequences do not have)."""
    return policy_names(clairvoyant=False, needs_scores=False)


def instances(seed: int = SEED):
    """``(trace, costs, sizes, budget)`` for the grid of the module docstring."""
    rng = np.random.default_rng(seed)
    for n, L in LAYOUTS:
        lay = Layout(n, L)
        w = 1.0 / np.arange(1, n + 1)
        for _ in range(TRIALS):
            rounds = 20
            e = np.array([rng.choice(n, p=w / w.sum()) for _ in range(rounds * L)])
            pages = (np.arange(rounds * L) % L) * n + e
            costs = rng.choice(np.array([1.0, 2.0, 5.0, 10.0]), lay.n_pages)
            sizes = rng.integers(1, 5, lay.n_pages)
            budget = int(rng.integers(int(sizes.max()), max(int(sizes.max()) + 1,
                                                             int(sizes.sum()) // 2 + 1)))
            yield from_pages(pages, lay, name=f"zipfish-n{n}-l{L}"), costs, sizes, budget


def bounds(trace, costs, sizes, budget: int) -> dict[str, float]:
    """ILP, LP and FOO-L/U values and the best online policy's cost on one instance."""
    kw = dict(budget=budget, costs=costs, sizes=sizes)
    ilp = opt_weighted(trace, method="ilp", **kw)
    ilp_dist = opt_weighted(trace, method="ilp", dist=True, **kw)
    lp = opt_weighted(trace, method="lp", **kw)
    foo = opt_weighted(trace, method="foo", **kw)
    online = {name: simulate(trace, name, seed=0, **kw).cost for name in ONLINE()}
    shared = {k: v for k, v in online.items() if not k.endswith("-dist")}
    dist = {k: v for k, v in online.items() if k.endswith("-dist")}
    best, best_d = min(shared, key=shared.get), min(dist, key=dist.get)
    return {"ilp": ilp.cost, "ilp_dist": ilp_dist.cost, "lp": lp.lower, "foo_l": foo.lower,
            "foo_u": foo.upper, "best_online": shared[best], "best_online_policy": best,
            "best_dist": dist[best_d], "best_dist_policy": best_d}


def _exact(x: float) -> Fraction | float:
    return Fraction(int(x)) if float(x).is_integer() else x


def check() -> LedgerRow:
    """Run the grid and return the ledger row."""
    worst = {}
    runs = 0
    holds = True
    witness = {}
    tight_online = 0
    for trace, costs, sizes, budget in instances():
        b = bounds(trace, costs, sizes, budget)
        runs += 1
        m = {"ILP - LP": b["ilp"] - b["lp"], "ILP - FOO-L": b["ilp"] - b["foo_l"],
             "FOO-U - ILP": b["foo_u"] - b["ilp"], "online - ILP": b["best_online"] - b["ilp"],
             "online-dist - ILP-dist": b["best_dist"] - b["ilp_dist"]}
        tight_online += m["online - ILP"] == 0
        for key, v in m.items():
            if v < -1e-6 * max(1.0, b["ilp"]):
                holds = False
            if key not in worst or v < worst[key][0]:
                worst[key] = (v, {"trace": trace.name, "budget": budget, **b})
    smallest = min(worst.values(), key=lambda x: x[0])
    witness = smallest[1]
    detail = "; ".join(f"min {key} = {v:.6g}" for key, (v, _) in worst.items())
    caught, tried = power_check()
    power = PowerCheck(
        name="OPT(B − 1) passed off as OPT(B)",
        description="the ILP of budget B − 1 (a smaller cache, so a larger cost) in place of "
                    "OPT(B): 'OPT <= every online policy' must fail on some instance",
        fails=caught > 0,
        detail=f"the wrong optimum exceeds the best deterministic shared-cache online policy "
               f"under B on {caught} of {tried} instances")
    return LedgerRow(
        theorem="Weighted offline bounds (LP, ILP, FOO)",
        statement="LP <= ILP <= every online policy (-dist ones: <= ILP-dist) and "
                  "FOO-L <= ILP <= FOO-U (byte budget, sizes and costs; cost = Σ w over the "
                  "misses)",
        grid=f"{len(LAYOUTS)} layouts (n·l 4..8) x {TRIALS} seeded instances (20 rounds, sizes "
             f"1..4, costs 1/2/5/10, budgets from the largest page to half the total), seed "
             f"{SEED}: {runs} instances, online = {len(ONLINE())} registered policies without "
             "gate scores",
        smallest_margin=_exact(smallest[0]),
        holds=holds,
        witness=witness,
        notes=(f"{detail}. The best online policy equals the ILP on {tight_online} of {runs} "
               "instances."),
        power_checks=[power],
    )


def power_check() -> tuple[int, int]:
    """Feed the checker a wrong optimum: the ILP of budget B − 1 (a smaller cache, so a larger
    cost) in place of OPT(B). 'wrong-OPT <= every online policy' must fail on some instance,
    or the ILP <= online check could not catch an optimum that is too high. Returns (instances
    where it fails, instances tried)."""
    caught = 0
    n = 0
    for trace, costs, sizes, budget in instances():
        if budget - 1 < int(sizes[np.unique(trace.pages)].min()):
            continue
        n += 1
        wrong = opt_weighted(trace, method="ilp", budget=budget - 1, costs=costs,
                             sizes=sizes).cost
        best = min(simulate(trace, name, budget=budget, costs=costs, sizes=sizes).cost
                   for name in ONLINE() if not make_policy(name).randomized
                   if not name.endswith("-dist"))
        caught += wrong > best
    return caught, n
