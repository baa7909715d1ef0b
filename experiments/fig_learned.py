"""WORK IN PROGRESS (issue 11, not resolved): not registered in ``paging figs`` and its
policies are not in the default registry yet (``enu`` and ``flashmoe`` must be registered
first: ``paging.policies.register``); the held-out evaluation has not been run to the end.

Learned and learning-augmented eviction: leave-one-sequence-out at k=200, and misses vs k.

For every sequence of the real traces (default: the shipped Mixtral files, 3 sequences, and
granite's 3 prompts), held out in turn:

* FlashMoE (:class:`paging.policies.learned.FlashMoE`) is trained on the OTHER sequences of
  the same layout (Belady's evictions at k=200, seed 0; :func:`paging.learned.train.
  train_flashmoe`) and evaluated on the held-out one; the model records its training
  sequences and the policy refuses to run on one of them;
* Expected-Next-Use (``enu``) gets its one parameter γ from the grid ``GAMMAS``, chosen on the
  OTHER sequences (both models: the best mean "% fewer misses than the best baseline"), and
  is evaluated on the held-out one; ``enu`` with its registered default γ = 1 is reported too;
* the baselines are every registered online policy of the families ``BASELINE_FAMILIES``
  (taken from the registry at run time, so ``arc`` and ``lecar`` join when registered),
  Marking with seed 0.

``fig_learned_loso.csv`` holds one row per held-out sequence (best baseline, each new policy,
% fewer = 1 − misses/best); ``fig_learned_baselines.csv`` every baseline's misses;
``fig_learned.csv`` misses against k on the longest sequence of each file for ENU (γ = 1),
LRU, LLRU, LRU-DIST and OPT. The plot is drawn from fig_learned.csv alone.

Run: ``python -m experiments.fig_learned [--out DIR] [--quick] [--trace PATH ...]``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from experiments import common

NAME = "fig_learned"
REAL_TRACES = True
DEFAULT_SOURCES = (
    "mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl",
    "mixtral-8x7b-instruct-vllm/humaneval_p0_prefill_decode_raw.jsonl",
    "granite-3.0-1b-a400m-instruct/moe_expert_trace.json",
)
K = 200
BASELINE_FAMILIES = ("lru", "fifo", "lfu", "fwf", "marking", "llru", "fld", "least-stale",
                     "arc", "lecar")
GAMMAS = (1.0, 0.995, 0.99, 0.98, 0.97)
QUICK_GAMMAS = (1.0,)
CURVE_POLICIES = ("enu", "lru", "llru", "lru-dist", "belady")
LABELS = {"enu": "ENU (γ=1)", "lru": "LRU", "llru": "LLRU", "lru-dist": "LRU-DIST",
          "belady": "OPT"}
QUICK_ROUNDS = 12
QUICK_EPOCHS = 1
SEED = 0
COLUMNS = ("panel", "trace", "model", "layout", "requests", "policy", "k", "misses")
LOSO_COLUMNS = ("trace", "model", "requests", "opt", "best_baseline", "best_misses",
                "flashmoe", "flashmoe_fewer", "enu_gamma", "enu", "enu_fewer", "enu_default",
                "enu_default_fewer", "target_met")
BASE_COLUMNS = ("trace", "policy", "k", "misses")


def baselines() -> list[str]:
    """The online baselines registered now (families above, with their -dist variants)."""
    from paging.policies import policy_names

    return [n for n in policy_names(clairvoyant=False)
            if n.removesuffix("-dist") in BASELINE_FAMILIES]


def k_grid(n_pages: int, quick: bool) -> list[int]:
    """Cache sizes of the curve: 16 (quick: 4) sizes spread over 1..nℓ, plus K."""
    m = 4 if quick else 16
    ks = {int(round(x)) for x in np.linspace(n_pages / m, n_pages, m)} | {min(K, n_pages)}
    return sorted(k for k in ks if k >= 1)


def compute(out_dir, *, traces: Sequence[str] | None = None, quick: bool = False,
            progress=None) -> Path | None:
    """Compute the three CSVs (+ fig_learned.json) into ``out_dir``; return the curve CSV, or
    None (after one "skipped" line) when no real trace is available."""
    from paging.learned.model import check_held_out
    from paging.learned.train import train_flashmoe
    from paging.policies.learned import ExpectedNextUse, FlashMoE
    from paging.simulate import simulate

    log = progress or common.Progress(NAME)
    sources = common.sources_or_skip(traces, DEFAULT_SOURCES, log)
    if sources is None:
        return None
    seqs, model_of, panels = [], {}, []
    for src in sources:
        loaded = common.load_sequences(src)
        if quick:
            loaded = [t.head(QUICK_ROUNDS * t.layout.n_layers)
                      if t.n_requests > QUICK_ROUNDS * t.layout.n_layers else t for t in loaded]
        for t in loaded:
            model_of[t.name] = common.model_of(t, src)
        seqs += loaded
        if loaded:
            panels.append(max(loaded, key=lambda t: t.n_requests))
    base = baselines()
    gammas = QUICK_GAMMAS if quick else GAMMAS
    epochs = QUICK_EPOCHS if quick else None

    base_rows, misses = [], {}  # misses[(trace, policy)]
    for t in seqs:
        for p in base + ["belady"]:
            misses[(t.name, p)] = simulate(t, p, K, seed=SEED).misses
            if p != "belady":
                base_rows.append({"trace": t.name, "policy": p, "k": K,
                                  "misses": misses[(t.name, p)]})
        for g in gammas:
            misses[(t.name, f"enu:{g}")] = simulate(t, ExpectedNextUse(g), K).misses
        log(f"{t.name}: baselines and enu grid at k={K}")

    def best(name):
        return min((misses[(name, p)], p) for p in base)

    def fewer(name, m):
        return 1.0 - m / best(name)[0]

    loso = []
    for t in seqs:
        train = [s for s in seqs if s is not t and s.layout == t.layout]
        others = [s for s in seqs if s is not t]
        # gamma: best mean "% fewer than the best baseline" on the other sequences
        g_star = max(gammas, key=lambda g: (np.mean([fewer(s.name, misses[(s.name, f"enu:{g}")])
                                                     for s in others]) if others else 0.0, g))
        fm = None
        if train:
            kw = {} if epochs is None else {"epochs": epochs}
            model = train_flashmoe(train, K, seed=SEED, **kw)
            check_held_out(model, t)  # never evaluate on a training sequence
            fm = simulate(t, FlashMoE(model), K).misses
        b, bp = best(t.name)
        enu_m = misses[(t.name, f"enu:{g_star}")]
        enu_d = misses[(t.name, "enu:1.0")]
        loso.append({
            "trace": t.name, "model": model_of[t.name], "requests": t.n_requests,
            "opt": misses[(t.name, "belady")], "best_baseline": bp, "best_misses": b,
            "flashmoe": fm, "flashmoe_fewer": None if fm is None else fewer(t.name, fm),
            "enu_gamma": g_star, "enu": enu_m, "enu_fewer": fewer(t.name, enu_m),
            "enu_default": enu_d, "enu_default_fewer": fewer(t.name, enu_d),
            "target_met": int(max(fewer(t.name, enu_m), fewer(t.name, fm or b)) >= 0.05)})
        log(f"{t.name}: held out (flashmoe trained on {len(train)} sequences, gamma {g_star})")

    rows = []
    for i, t in enumerate(panels):
        for k in k_grid(t.layout.n_pages, quick):
            for p in CURVE_POLICIES:
                rows.append({"panel": i, "trace": t.name, "model": model_of[t.name],
                             "layout": common.layout_label(t), "requests": t.n_requests,
                             "policy": p, "k": k, "misses": simulate(t, p, k, seed=SEED).misses})
        log(f"{t.name}: curves")

    out = Path(out_dir)
    csv_path = common.write_csv(out / f"{NAME}.csv", COLUMNS, rows, ("panel", "policy", "k"))
    common.write_csv(out / f"{NAME}_loso.csv", LOSO_COLUMNS, loso, ("model", "trace"))
    common.write_csv(out / f"{NAME}_baselines.csv", BASE_COLUMNS, base_rows, ("trace", "policy"))
    common.write_json(common.params_path(csv_path), {
        "k": K, "seed": SEED, "quick": quick, "quick_rounds": QUICK_ROUNDS if quick else None,
        "baselines": base, "gammas": list(gammas), "flashmoe_epochs": epochs or "default",
        "sources": [common.source_record(s) for s in sources],
        "sequences": [common.sequence_record(t) for t in seqs]})
    return csv_path


def plot(csv_path, out_dir) -> list[Path]:
    """Misses against k, one panel per file, from fig_learned.csv alone."""
    plt = common.pyplot()
    rows = common.read_csv(csv_path)
    panels = sorted({int(r["panel"]) for r in rows})
    fig, axes = plt.subplots(1, max(len(panels), 1), figsize=(5.5 * max(len(panels), 1), 4),
                             squeeze=False)
    for ax, i in zip(axes[0], panels, strict=False):
        sub = [r for r in rows if int(r["panel"]) == i]
        for p in CURVE_POLICIES:
            pts = sorted((int(r["k"]), int(r["misses"])) for r in sub if r["policy"] == p)
            if pts:
                ks, ms = zip(*pts, strict=True)
                ax.plot(ks, ms, marker="o", ms=3, label=LABELS.get(p, p))
        ax.set_title(f"{sub[0]['model']}: {sub[0]['trace']}", fontsize=8)
        ax.set_xlabel("cache size k (pages)")
        ax.set_ylabel("misses")
        ax.legend(fontsize=7)
    return common.save_figure(fig, out_dir, NAME)


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main(sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
