"""Empirical worst-case ratios of the designed and learned policies (issue 24, item 3).

The adversary search (:mod:`adversaries.search`) run against token-match, token-decay,
token-hazard, FlashMoE, ARC, LeCaR and the robust combiner on small layered instances, next to
LRU and LLRU for scale. Every number is a **lower bound found** on the policy's competitive
ratio at that instance size (the search may miss worse sequences), never a proof of the ratio.

FlashMoE runs with the shipped Mixtral model transferred to the small layout on purpose
(``FlashMoEModel.transfer``: its features [1/r, f/max f] do not depend on the layout); no model
was trained for these layouts.

``python -m adversaries.empirical [--budget B]`` prints the README table (Markdown).
"""

from __future__ import annotations

import argparse

from adversaries.search import search

#: (n, layers, k, rounds): small instances, short sequences (most of these policies run in
#: the Python reference loop)
INSTANCES = ((3, 2, 4, 30), (4, 2, 6, 30))
POLICIES = ("lru", "llru", "token-match", "token-decay", "token-hazard", "flashmoe", "arc",
            "lecar", "robust-token-match")
BUDGET = 400
SEED = 0


def make(name: str):
    """A policy object for ``name`` (FlashMoE: the shipped model, transferred)."""
    if name == "flashmoe":
        from paging.layout import Layout
        from paging.learned.model import load_model, shipped_model_path
        from paging.policies.learned import FlashMoE

        base = load_model(shipped_model_path(Layout(8, 32)))
        return FlashMoE(model=lambda lay: base.transfer(lay))
    return name


def table(budget: int = BUDGET, seed: int = SEED, policies=POLICIES, instances=INSTANCES,
          show: bool | None = False) -> list[dict]:
    rows = []
    for name in policies:
        for n, L, k, T in instances:
            r = search(make(name), n=n, layers=L, k=k, length=T, budget=budget, seed=seed,
                       show=show)
            rows.append({"policy": name, "n": n, "layers": L, "k": k, "rounds": T,
                         "ratio": float(r.ratio), "ratio_exact": str(r.ratio),
                         "ci95": r.ci, "online": r.online_misses, "opt": r.opt_misses,
                         "verified": r.certificate["verified"], "result": r})
    return rows


def markdown(rows) -> str:
    inst = sorted({(r["n"], r["layers"], r["k"], r["rounds"]) for r in rows})
    head = "| policy | " + " | ".join(f"n={n}, ℓ={L}, k={k}, {T} rounds" for n, L, k, T in inst)
    lines = [head + " |", "|---|" + "---|" * len(inst)]
    for name in dict.fromkeys(r["policy"] for r in rows):
        cells = []
        for key in inst:
            r = next(x for x in rows if x["policy"] == name
                     and (x["n"], x["layers"], x["k"], x["rounds"]) == key)
            cell = f"{r['ratio']:.3f} ({r['online']:g}/{r['opt']})"
            if r["ci95"] is not None:
                cell += f" ±{(r['ci95'][1] - r['ci95'][0]) / 2:.3f}"
            cells.append(cell)
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--budget", type=int, default=BUDGET)
    p.add_argument("--seed", type=int, default=SEED)
    a = p.parse_args(argv)
    print(markdown(table(a.budget, a.seed, show=None)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
