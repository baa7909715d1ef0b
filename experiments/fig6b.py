"""Figure 6b: OPT-DIST / OPT versus the Zipf parameter a (k = 64, ℓ = 32, n = 8).

Angelopoulos et al., Sec. 5.3, Fig. 6b: "Fault ratio between OPT and OPT-DIST on a Zipf
distribution with k=64, ℓ=32 and n=8 with a varying law parameter a". The paper states neither
the range of a nor the trace length; we use a = 0, 0.5, ..., 10, ``TOKENS`` tokens per trace
(TOKENS·ℓ requests) and ``SEEDS`` traces per value of a, and plot the mean with the min-max
range and every seed. The range reaches a = 10 because the paper's text describes three
regimes: a close to 0, intermediate a (the peak), and "a very big" (OPT ≈ OPT-DIST); a range
ending at 3 would not show the last one.

Run: ``python -m experiments.fig6b [--out DIR] [--quick]``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from experiments import common
from experiments.fig6a import PERM, cell

NAME = "fig6b"
REAL_TRACES = False  # synthetic: no traces= argument, no --trace option
K = 64
N = 8
LAYERS = 32
H = 0.0
A_VALUES = tuple(i / 2 for i in range(21))  # 0, 0.5, ..., 10
TOKENS = 5000
SEEDS = tuple(range(10))
QUICK = {"a_values": (0.0, 2.0, 4.0, 10.0), "tokens": 100, "seeds": (0, 1)}
COLUMNS = ("a", "n", "layers", "k", "h", "tokens", "seed", "requests", "opt", "opt_dist",
           "ratio")


def compute(out_dir, *, quick: bool = False, a_values: Sequence[float] | None = None,
            tokens: int | None = None, seeds: Sequence[int] | None = None, k: int = K,
            n: int = N, layers: int = LAYERS, h: float = H, progress=None) -> Path:
    """Compute ``out_dir/fig6b.csv`` (one row per a and seed) and ``fig6b.json``."""
    log = progress or common.Progress(NAME)
    q = QUICK if quick else {}
    a_values = tuple(float(a) for a in (a_values or q.get("a_values", A_VALUES)))
    tokens = int(tokens or q.get("tokens", TOKENS))
    seeds = tuple(seeds if seeds is not None else q.get("seeds", SEEDS))
    rows = []
    for i, a in enumerate(a_values):
        rs = [cell(n, layers, k=k, a=a, h=h, tokens=tokens, seed=s) for s in seeds]
        rows += rs
        log(f"a={a:g} ({i + 1}/{len(a_values)}): OPT-DIST/OPT mean "
            f"{np.mean([r['ratio'] for r in rs]):.3f} over {len(seeds)} seeds")
    out = Path(out_dir)
    csv_path = common.write_csv(out / f"{NAME}.csv", COLUMNS, rows, sort_by=("a", "seed"))
    common.write_json(common.params_path(csv_path), {
        "figure": NAME,
        "paper": "Angelopoulos et al., Sec. 5.3, Fig. 6b",
        "generator": "paging.generators.zipf (one expert per layer per token, rounds)",
        "perm": PERM, "a_values": list(a_values), "h": h, "k": k, "n": n, "layers": layers,
        "tokens": tokens, "requests": "tokens * layers", "seeds": list(seeds),
        "opt": "belady", "opt_dist": "belady-dist",
        "aggregate": "mean, min and max of the ratio over the seeds", "quick": quick,
    })
    log(f"wrote {csv_path}")
    return csv_path


def by_a(rows: list[dict[str, str]]):
    """(a values, list of per-seed ratio arrays) from the CSV rows."""
    avals = sorted({float(r["a"]) for r in rows})
    return avals, [np.array([float(r["ratio"]) for r in rows if float(r["a"]) == a])
                   for a in avals]


def plot(csv_path, out_dir) -> list[Path]:
    """Draw fig6b.png/.pdf from the CSV alone."""
    plt = common.pyplot()
    rows = common.read_csv(csv_path)
    avals, ratios = by_a(rows)
    mean = np.array([r.mean() for r in ratios])
    lo = np.array([r.min() for r in ratios])
    hi = np.array([r.max() for r in ratios])
    r0 = rows[0]
    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    ax.fill_between(avals, lo, hi, color="tab:red", alpha=0.2, lw=0, label="min-max over seeds")
    for a, r in zip(avals, ratios, strict=True):
        ax.plot([a] * r.size, r, ".", color="tab:red", ms=3, alpha=0.6)
    ax.plot(avals, mean, "-o", color="tab:red", ms=4, label="mean over seeds")
    ax.axhline(1.0, color="black", lw=0.8, ls=":")
    ax.set_xlabel("Zipf parameter a")
    ax.set_ylabel("OPT-DIST misses / OPT misses")
    ax.set_title(f"n={r0['n']}, ℓ={r0['layers']}, k={r0['k']}, {r0['tokens']} tokens, "
                 f"{len({r['seed'] for r in rows})} seeds — cf. Fig. 6b", fontsize=9)
    ax.set_ylim(bottom=min(0.95, float(lo.min()) - 0.05))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    paths = common.save_figure(fig, out_dir, NAME)
    plt.close(fig)
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main(sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
