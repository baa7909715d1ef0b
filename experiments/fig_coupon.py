"""Coupon figure: the exact cover time E[T(N, C)] of the parallel coupon collector against
Theorem 5's lower bound max(N·H_N, log(C)/6) (Angelopoulos et al., Sec. 3.2).

For N coupon types and C = 1, 2, 4, ..., 2^100 collectors,
:func:`paging.coupon.expected_cover_times` gives E[T(N, C)] (numerically exact: truncation
below 1e-15 relative). The CSV also carries the intermediate bounds of the proof:
t*/2 = log(C/log 2)/(2 log(N/(N-1))) (the Markov step), the printed chain's
(N-1)/(4N-2)·log(C/log 2), and the stronger (N-1)/2·log(C/log 2) obtained with
log(N/(N-1)) <= 1/(N-1) (see proofs/theorem5.py). The log(C)/6 term exceeds N·H_N only when
log C > 6·N·H_N: N = 2 (C > e^18 ≈ 2^26), N = 3 (C > e^33 ≈ 2^48), N = 4 (C > e^50 ≈ 2^73),
N = 5 (C > e^68.5 ≈ 2^99); the figure reaches C = 2^100 to show it.

Run: ``python -m experiments.fig_coupon [--out DIR] [--quick]``; ``compute`` writes the CSV
(+ JSON of parameters), ``plot`` draws PNG + PDF from the CSV alone.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path

from experiments import common

NAME = "fig_coupon"
REAL_TRACES = False  # synthetic: no traces= argument, no --trace option
N_VALUES = (2, 3, 4, 8, 16, 32, 64, 128)
LOG2_C = tuple(range(0, 101))
QUICK = {"n_values": (2, 8, 32), "log2_c": tuple(range(0, 101, 5))}
PLOT_N = (2, 8, 64)
COLUMNS = ("n", "log2_collectors", "collectors", "expected", "n_h_n", "log_c_over_6", "bound",
           "active_term", "ratio", "proof_t_half", "printed_chain", "corrected_chain")


def rows_for(n: int, log2_c: Sequence[int]) -> list[dict]:
    """One CSV row per C = 2^e: the exact cover time and every bound of Theorem 5's proof."""
    from paging.coupon import expected_cover_times, harmonic

    cs = [2**e for e in log2_c]
    expected = expected_cover_times(n, cs)
    nh = float(n * harmonic(n))
    out = []
    for e, c, ex in zip(log2_c, cs, expected, strict=True):
        lg = math.log(c) / 6
        core = math.log(c / math.log(2))  # log(C/log 2) > 0 for C >= 1
        out.append({
            "n": n, "log2_collectors": e, "collectors": c, "expected": float(ex),
            "n_h_n": nh, "log_c_over_6": lg, "bound": max(nh, lg),
            "active_term": "n_h_n" if nh >= lg else "log_c_over_6",
            "ratio": float(ex) / max(nh, lg),
            "proof_t_half": core / (2 * math.log(n / (n - 1))),
            "printed_chain": (n - 1) / (4 * n - 2) * core,
            "corrected_chain": (n - 1) / 2 * core,
        })
    return out


def compute(out_dir, *, quick: bool = False, n_values: Sequence[int] | None = None,
            log2_c: Sequence[int] | None = None, progress=None) -> Path:
    """Compute ``out_dir/fig_coupon.csv`` (one row per N and C) and ``fig_coupon.json``."""
    log = progress or common.Progress("coupon")
    q = QUICK if quick else {}
    n_values = tuple(n_values or q.get("n_values", N_VALUES))
    log2_c = tuple(log2_c if log2_c is not None else q.get("log2_c", LOG2_C))
    if any(n < 2 for n in n_values):
        from paging.errors import PagingError

        raise PagingError(f"Theorem 5 needs N >= 2 coupon types, got {min(n_values)}")
    rows = []
    for n in n_values:
        rows += rows_for(n, log2_c)
        worst = min(r["ratio"] for r in rows if r["n"] == n)
        log(f"N={n}: {len(log2_c)} values of C done; smallest E/bound {worst:.4f}")
    csv_path = common.write_csv(Path(out_dir) / f"{NAME}.csv", COLUMNS, rows,
                                sort_by=("n", "log2_collectors"))
    common.write_json(common.params_path(csv_path), {
        "figure": NAME,
        "paper": "Angelopoulos et al., Sec. 3.2, Theorem 5",
        "quantity": "E[T(N,C)], parallel coupon collector, exact series "
                    "(paging.coupon.expected_cover_times, truncation < 1e-15 relative)",
        "bound": "max(N*H_N, log(C)/6), natural log",
        "n_values": list(n_values), "log2_collectors": list(log2_c), "quick": quick,
    })
    log(f"wrote {csv_path}")
    return csv_path


def plot(csv_path, out_dir) -> list[Path]:
    """Draw fig_coupon.png/.pdf from the CSV alone: (a) E[T(N,C)] and the bounds against C for a
    few N, (b) E[T(N,C)] / Theorem 5's bound for every N."""
    plt = common.pyplot()
    rows = common.read_csv(csv_path)
    ns = sorted({int(r["n"]) for r in rows})
    by_n = {n: sorted((r for r in rows if int(r["n"]) == n),
                      key=lambda r: int(r["log2_collectors"])) for n in ns}
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4))
    cmap = plt.get_cmap("viridis")
    shown = [n for n in ns if n in PLOT_N] or ns[:3]
    for i, n in enumerate(shown):
        rs = by_n[n]
        x = [int(r["log2_collectors"]) for r in rs]
        col = cmap(i / max(1, len(shown) - 1) * 0.85)
        ax.plot(x, [float(r["expected"]) for r in rs], "-", color=col, label=f"E[T], N={n}")
        ax.plot(x, [float(r["bound"]) for r in rs], "--", color=col,
                label=f"max(N·H_N, log C/6), N={n}")
        ax.plot(x, [max(float(r["corrected_chain"]), 1e-3) for r in rs], ":", color=col,
                label=f"(N−1)/2·log(C/log 2), N={n}")
    ax.set_yscale("log")
    ax.set_xlabel("log2 C (collectors)")
    ax.set_ylabel("rounds")
    ax.set_title("(a) cover time and lower bounds", fontsize=9)
    ax.legend(fontsize=6, ncol=1, loc="lower right")
    for i, n in enumerate(ns):
        rs = by_n[n]
        bx.plot([int(r["log2_collectors"]) for r in rs], [float(r["ratio"]) for r in rs],
                color=cmap(i / max(1, len(ns) - 1) * 0.85), label=f"N={n}")
        switch = [int(r["log2_collectors"]) for r in rs if r["active_term"] == "log_c_over_6"]
        if switch:  # where log(C)/6 takes over from N·H_N
            bx.axvline(switch[0], color=cmap(i / max(1, len(ns) - 1) * 0.85), lw=0.6, ls=":")
    bx.axhline(1.0, color="black", lw=0.8)
    bx.set_xlabel("log2 C (collectors)")
    bx.set_ylabel("E[T(N,C)] / max(N·H_N, log C/6)")
    bx.set_title("(b) slack of Theorem 5 (dotted: log C/6 becomes the larger term)", fontsize=9)
    bx.legend(fontsize=6, ncol=2)
    paths = common.save_figure(fig, out_dir, NAME)
    plt.close(fig)
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main(sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
