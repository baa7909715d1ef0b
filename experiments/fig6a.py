"""Figure 6a: OPT-DIST / OPT on layered Zipf traces (a = 2, k = 16) over a grid of n and ℓ.

Angelopoulos et al., Sec. 5.3, Fig. 6a: "a synthetic trace generated with a Zipf distribution,
for a range of values of n and ℓ and a fixed cache of size k" (k = 16, a = 2). The paper states
neither the grid nor the trace length; we use n = 2..16 experts and ℓ = 2..16 layers,
``TOKENS`` tokens per trace (one expert per layer per token, so TOKENS·ℓ requests) and
``SEEDS`` independent traces per cell. The heat map shows the mean ratio over the seeds; the
CSV keeps every seed.

OPT is Belady's rule on the shared cache, OPT-DIST Belady per layer on k // ℓ slots (+1 for the
first k mod ℓ layers), both through :func:`paging.simulate.simulate`; traces come from
:func:`paging.generators.zipf` (p_j ∝ 1/(j+h)^a, h = 0).

Run: ``python -m experiments.fig6a [--out DIR] [--quick]``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from experiments import common

NAME = "fig6a"
REAL_TRACES = False  # synthetic: no traces= argument, no --trace option
A = 2.0
H = 0.0
K = 16
N_VALUES = tuple(range(2, 17))
L_VALUES = tuple(range(2, 17))
TOKENS = 5000
SEEDS = tuple(range(10))
PERM = "random"  # which expert holds each popularity rank: a per-layer random permutation
QUICK = {"n_values": (2, 4, 8, 16), "l_values": (2, 4, 8, 16), "tokens": 200, "seeds": (0, 1)}
COLUMNS = ("n", "layers", "k", "a", "h", "tokens", "seed", "requests", "opt", "opt_dist",
           "ratio")


def cell(n: int, layers: int, *, k: int, a: float, h: float, tokens: int, seed: int) -> dict:
    """OPT and OPT-DIST misses on one seeded layered Zipf trace."""
    from paging.generators import zipf
    from paging.simulate import simulate

    trace = zipf(n=n, layers=layers, tokens=tokens, a=a, h=h, seed=seed, perm=PERM)
    opt = simulate(trace, "belady", k).misses
    opt_dist = simulate(trace, "belady-dist", k).misses
    return {"n": n, "layers": layers, "k": k, "a": a, "h": h, "tokens": tokens, "seed": seed,
            "requests": trace.n_requests, "opt": opt, "opt_dist": opt_dist,
            "ratio": opt_dist / opt}


def compute(out_dir, *, quick: bool = False, n_values: Sequence[int] | None = None,
            l_values: Sequence[int] | None = None, tokens: int | None = None,
            seeds: Sequence[int] | None = None, k: int = K, a: float = A, h: float = H,
            progress=None) -> Path:
    """Compute ``out_dir/fig6a.csv`` (one row per n, ℓ, seed) and ``fig6a.json``."""
    log = progress or common.Progress(NAME)
    q = QUICK if quick else {}
    n_values = tuple(n_values or q.get("n_values", N_VALUES))
    l_values = tuple(l_values or q.get("l_values", L_VALUES))
    tokens = int(tokens or q.get("tokens", TOKENS))
    seeds = tuple(seeds if seeds is not None else q.get("seeds", SEEDS))
    rows = []
    for i, layers in enumerate(l_values):
        for n in n_values:
            for s in seeds:
                rows.append(cell(n, layers, k=k, a=a, h=h, tokens=tokens, seed=s))
        worst = max(r["ratio"] for r in rows if r["layers"] == layers)
        log(f"layers={layers} ({i + 1}/{len(l_values)}): {len(n_values)} values of n x "
            f"{len(seeds)} seeds done; max OPT-DIST/OPT {worst:.3f}")
    out = Path(out_dir)
    csv_path = common.write_csv(out / f"{NAME}.csv", COLUMNS, rows,
                                sort_by=("n", "layers", "seed"))
    common.write_json(common.params_path(csv_path), {
        "figure": NAME,
        "paper": "Angelopoulos et al., Sec. 5.3, Fig. 6a",
        "generator": "paging.generators.zipf (one expert per layer per token, rounds)",
        "perm": PERM, "a": a, "h": h, "k": k,
        "n_values": list(n_values), "l_values": list(l_values),
        "tokens": tokens, "requests": "tokens * layers", "seeds": list(seeds),
        "opt": "belady", "opt_dist": "belady-dist", "aggregate": "mean ratio over the seeds",
        "quick": quick,
    })
    log(f"wrote {csv_path}")
    return csv_path


def mean_grid(rows: list[dict[str, str]]):
    """(n values, ℓ values, mean ratio[ℓ, n]) from the CSV rows."""
    ns = sorted({int(r["n"]) for r in rows})
    ls = sorted({int(r["layers"]) for r in rows})
    grid = np.full((len(ls), len(ns)), np.nan)
    for li, L in enumerate(ls):
        for ni, n in enumerate(ns):
            v = [float(r["ratio"]) for r in rows if int(r["n"]) == n and int(r["layers"]) == L]
            if v:
                grid[li, ni] = float(np.mean(v))
    return ns, ls, grid


def plot(csv_path, out_dir) -> list[Path]:
    """Draw fig6a.png/.pdf (heat map of the mean ratio) from the CSV alone."""
    plt = common.pyplot()
    rows = common.read_csv(csv_path)
    ns, ls, grid = mean_grid(rows)
    r0 = rows[0]
    k = int(r0["k"])
    n_seeds = len({r["seed"] for r in rows})
    fig, ax = plt.subplots(figsize=(0.42 * len(ns) + 2.6, 0.36 * len(ls) + 1.8))
    im = ax.imshow(grid, origin="lower", cmap="viridis", aspect="auto",
                   vmin=1.0, vmax=max(1.0, float(np.nanmax(grid))))
    ax.set_xticks(range(len(ns)), [str(n) for n in ns])
    ax.set_yticks(range(len(ls)), [str(L) for L in ls])
    ax.set_xlabel("experts per layer n")
    ax.set_ylabel("layers ℓ")
    small = len(ns) * len(ls) <= 400
    for li in range(len(ls)):
        for ni in range(len(ns)):
            v = grid[li, ni]
            if small and np.isfinite(v):
                ax.text(ni, li, f"{v:.2f}", ha="center", va="center", fontsize=5.5,
                        color="white" if v < 1.0 + 0.6 * (np.nanmax(grid) - 1.0) else "black")
            if ns[ni] * ls[li] <= k:  # everything fits: both OPTs only miss compulsorily
                ax.add_patch(plt.Rectangle((ni - 0.5, li - 0.5), 1, 1, fill=False,
                                           ec="white", lw=0.6))
    fig.colorbar(im, ax=ax, label="OPT-DIST misses / OPT misses")
    ax.set_title(f"Zipf a={float(r0['a']):g}, k={k}, {r0['tokens']} tokens, mean of {n_seeds} "
                 "seeds\n(outlined: n·ℓ ≤ k, everything fits) — cf. Fig. 6a", fontsize=8)
    paths = common.save_figure(fig, out_dir, NAME)
    plt.close(fig)
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main(sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
