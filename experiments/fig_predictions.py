"""Paging with predictions: competitive ratio (misses / OPT) against the prediction error η.

For BlindOracle, PredictiveMarker, LMarker and the robust BlindOracle/LRU combiner, each fed
the noisy oracle ``oracle:eta=η,seed=s`` (:class:`paging.predict.OraclePredictor`: Gaussian
noise scaled so that Σ|pred − next| = η·OPT, Lykouris & Vassilvitskii's normalisation), and
for LRU and Marking (which use no prediction: flat lines), on layered Zipf (n=8, ℓ=32, a=1) and
on the longest sequence of each shipped real trace (as Fig. 4; rounds expansion). The cache is
k = ``K_FRACTION`` of the pages (64 of 256 for Zipf and Mixtral, 192 of 768 for granite).

Consistency is the ratio at η = 0 (BlindOracle and the combiner are exactly OPT there);
robustness is how the ratio grows with η. With this normalisation the noise per request is
η·OPT/N on average, so η must reach the hundreds before predictions reorder pages; at large η
the noisy predictions are close to random and BlindOracle approaches random eviction (the
combiner keeps following it while it stays within twice LRU's misses). Randomized policies use
run seed = noise seed.

Run: ``python -m experiments.fig_predictions [--out DIR] [--quick] [--trace PATH ...]``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from experiments import common

NAME = "fig_predictions"
REAL_TRACES = True
DEFAULT_SOURCES = (
    "mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl",
    "granite-3.0-1b-a400m-instruct/moe_expert_trace.json",
)
ZIPF = "zipf:n=8,layers=32,tokens={tokens},a=1.0,h=0,seed=0"
TOKENS = 1000
K_FRACTION = 0.25
ETAS = (0.0, 1.0, 10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0, 10000.0, 100000.0)
SEEDS = (0, 1)
PREDICTIVE = ("blind-oracle", "predictive-marker", "lmarker", "robust-blind-oracle")
BASELINES = ("lru", "marking")
POLICIES = PREDICTIVE + BASELINES
LABELS = {"blind-oracle": "BlindOracle", "predictive-marker": "PredictiveMarker",
          "lmarker": "LMarker", "robust-blind-oracle": "Robust BO/LRU", "lru": "LRU",
          "marking": "Marking"}
STYLE = {"blind-oracle": ("tab:red", "-", "o"), "predictive-marker": ("tab:blue", "-", "s"),
         "lmarker": ("tab:cyan", "--", "^"), "robust-blind-oracle": ("tab:green", "-", "D"),
         "lru": ("black", ":", None), "marking": ("tab:purple", ":", None)}
QUICK = {"etas": (0.0, 10.0, 1000.0, 100000.0), "tokens": 40, "seeds": (0,), "rounds": 40}
COLUMNS = ("panel", "source", "trace", "requests", "n_pages", "k", "policy", "eta", "seed",
           "misses", "opt", "ratio")


def _traces(traces, quick: bool, tokens: int, log):
    """(source, trace) pairs: the Zipf spec, then the real traces (when available)."""
    from paging.io import load

    spec = ZIPF.format(tokens=tokens)
    out = [(spec, load(spec)[0])]
    sources = common.sources_or_skip(traces, DEFAULT_SOURCES, log) or []
    for source in sources:
        seqs = common.load_sequences(source)
        if not seqs:
            continue
        trace = max(seqs, key=lambda t: t.n_requests)
        if quick and trace.n_requests > QUICK["rounds"] * trace.layout.n_layers:
            trace = trace.head(QUICK["rounds"] * trace.layout.n_layers)
        out.append((source, trace))
    return out


def compute(out_dir, *, traces: Sequence[str] | None = None, quick: bool = False,
            etas: Sequence[float] | None = None, tokens: int | None = None,
            seeds: Sequence[int] | None = None, progress=None) -> Path:
    """Compute ``out_dir/fig_predictions.csv`` (one row per panel, policy, η and seed) and
    its JSON of parameters."""
    from paging import simulate

    log = progress or common.Progress("pred")
    q = QUICK if quick else {}
    etas = tuple(float(e) for e in (etas or q.get("etas", ETAS)))
    tokens = int(tokens or q.get("tokens", TOKENS))
    seeds = tuple(seeds if seeds is not None else q.get("seeds", SEEDS))
    rows, panels = [], []
    for panel, (source, trace) in enumerate(_traces(traces, quick, tokens, log)):
        P = trace.layout.n_pages
        k = max(1, int(round(K_FRACTION * P)))
        opt = simulate(trace, "belady", k).misses
        base = {"panel": panel, "source": source, "trace": trace.name,
                "requests": trace.n_requests, "n_pages": P, "k": k, "opt": opt}
        flat = {p: {s: simulate(trace, p, k, seed=s).misses for s in seeds} for p in BASELINES}
        for eta in etas:
            for s in seeds:
                for p in POLICIES:
                    m = (flat[p][s] if p in flat else
                         simulate(trace, f"{p}:oracle:eta={eta:g},seed={s}", k, seed=s).misses)
                    rows.append(dict(base, policy=p, eta=eta, seed=s, misses=m, ratio=m / opt))
            log(f"panel {panel} ({trace.name}, k={k}): eta={eta:g} done")
        panels.append({"panel": panel, "source": common.source_record(source),
                       "trace": trace.name, "requests": trace.n_requests, "k": k, "opt": opt})
    out = Path(out_dir)
    csv_path = common.write_csv(out / f"{NAME}.csv", COLUMNS, rows,
                                sort_by=("panel", "policy", "eta", "seed"))
    common.write_json(common.params_path(csv_path), {
        "figure": NAME,
        "what": "misses / OPT against the prediction error eta (sum |pred - next| = eta * OPT)",
        "predictor": "oracle:eta=E,seed=S (Gaussian noise, paging.predict.OraclePredictor)",
        "policies": list(POLICIES), "etas": list(etas), "seeds": list(seeds),
        "k_fraction": K_FRACTION, "zipf": ZIPF.format(tokens=tokens), "quick": quick,
        "panels": panels, "expand": "rounds", "opt": "belady",
    })
    log(f"wrote {csv_path}")
    return csv_path


def curves(rows: list[dict[str, str]], panel: int, policy: str):
    """(η values, mean ratio over seeds) of one panel and policy, from the CSV rows."""
    pr = [r for r in rows if int(r["panel"]) == panel and r["policy"] == policy]
    etas = sorted({float(r["eta"]) for r in pr})
    return np.array(etas), np.array([np.mean([float(r["ratio"]) for r in pr
                                              if float(r["eta"]) == e]) for e in etas])


def plot(csv_path, out_dir) -> list[Path]:
    """Draw fig_predictions.png/.pdf from the CSV alone: one panel per trace, ratio against
    η (symmetric-log x axis so that η = 0 shows). BlindOracle and PredictiveMarker are drawn
    wide and pale: under Gaussian noise the combiner never leaves BlindOracle (BO stays below
    twice LRU's misses) and LMarker nearly equals PredictiveMarker, so the curves overlap."""
    plt = common.pyplot()
    rows = common.read_csv(csv_path)
    panels = sorted({int(r["panel"]) for r in rows})
    fig, axes = plt.subplots(1, len(panels), figsize=(4.8 * len(panels), 3.9), squeeze=False,
                             layout="constrained")
    for ax, panel in zip(axes[0], panels, strict=True):
        for policy in POLICIES:
            x, y = curves(rows, panel, policy)
            color, ls, marker = STYLE[policy]
            wide = policy in ("blind-oracle", "predictive-marker")  # drawn under their twins
            ax.plot(x, y, ls, color=color, marker=marker, ms=7 if wide else 4,
                    lw=3.5 if wide else 1.3, alpha=0.45 if wide else 1.0, label=LABELS[policy])
        r0 = next(r for r in rows if int(r["panel"]) == panel)
        ax.set_xscale("symlog", linthresh=1.0)
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_xlabel("prediction error η (Σ|pred − next| = η·OPT)")
        ax.set_ylabel("misses / OPT")
        ax.set_title(f"{r0['trace']}\n{r0['requests']} requests, k={r0['k']} of "
                     f"{r0['n_pages']} pages", fontsize=8)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle("Paging with predictions: consistency (η = 0) and robustness", fontsize=10)
    paths = common.save_figure(fig, out_dir, NAME)
    plt.close(fig)
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main(sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
