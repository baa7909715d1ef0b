"""ZipMoE figure: expected sparse-layer makespan against the memory budget, with and without
compressed pools, predicted by the planner and measured on a replay of the real traces.

Yang et al. (ZipMoE), Sec. 3.4 and App. C Algorithm 4: for each budget the planner
(:func:`paging.zipmoe.planner.plan_trace`) picks the split over the pools F, C, S, E (grid step
``DELTA``) and, as the baseline without compressed pools, puts everything in F. *Predicted*: the
hit model's law over hit patterns times Algorithm 3's estimate; *simulated*: the trace replayed
through the pools as nested perfect-LFU caches of the one simulator, each (token, layer)'s
actual hit pattern timed by Algorithm 3 and by the exact Algorithm 1 schedule. Each model uses
its own preset (mixtral-8x7b, granite-3.0-1b-a400m; bf16; hardware pcie3, whose 3.5 GB/s SSD is
the paper's). Values are means over the sequences of a file (each sequence weighted equally).

Run: ``python -m experiments.fig_zipmoe [--out DIR] [--quick] [--trace PATH ...]``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from experiments import common

NAME = "fig_zipmoe"
REAL_TRACES = True
DEFAULT_SOURCES = (
    "mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl",
    "granite-3.0-1b-a400m-instruct/moe_expert_trace.json",
)
HARDWARE = "pcie3"
DELTA = 0.05
#: budgets in GB per model: the whole expert set is 90.2 GB (Mixtral) and 2.42 GB (Granite)
BUDGETS = {"mixtral-8x7b": (4.0, 8.0, 12.0, 16.0, 20.0, 30.0, 40.0, 60.0),
           "granite-3.0-1b-a400m": (0.1, 0.2, 0.4, 0.6, 0.8, 1.2, 1.6, 2.0)}
#: budgets at which the replay is also timed by the exact Algorithm 1 schedule (slow on
#: granite: about 40 s a budget); Algorithm 3's estimate is computed at every budget
EXACT_AT = {"mixtral-8x7b": (8.0, 20.0), "granite-3.0-1b-a400m": (0.2, 0.6)}
QUICK = {"budgets": {"mixtral-8x7b": (8.0, 20.0), "granite-3.0-1b-a400m": (0.2, 0.6)},
         "delta": 0.25, "sequences": 1, "exact": False}
COLUMNS = ("panel", "source", "model", "trace", "budget_gb", "variant", "sizes",
           "predicted_layer_ms", "simulated_alg3_layer_ms", "simulated_alg1_layer_ms",
           "static_alg3_layer_ms")


def compute(out_dir, *, traces: Sequence[str] | None = None, quick: bool = False,
            progress=None) -> Path | None:
    """Compute ``out_dir/fig_zipmoe.csv`` (+ JSON); None when no real trace is available."""
    from paging.cost import budget_bytes, get_hardware, get_model
    from paging.zipmoe.planner import plan_trace

    log = progress or common.Progress(NAME)
    sources = common.sources_or_skip(traces, DEFAULT_SOURCES, log)
    if sources is None:
        return None
    q = QUICK if quick else {}
    delta = q.get("delta", DELTA)
    exact = q.get("exact", True)
    hw = get_hardware(HARDWARE)
    rows, panels = [], []
    for panel, source in enumerate(sources):
        seqs = common.load_sequences(source, expand="groups")
        if q.get("sequences"):
            seqs = seqs[:q["sequences"]]
        if not seqs:
            log(f"{source}: no sequence, panel skipped")
            continue
        name = common.preset_for(seqs[0].layout)
        if name is None:  # (a user's trace of another layout: the figure skips it)
            log(f"{source}: no model preset has {seqs[0].layout.n_layers} layers x "
                f"{seqs[0].layout.n_experts} experts, panel skipped")
            continue
        model = get_model(name)
        if common.top_k(seqs[0]) != model.top_k:  # (Algorithm 3 averages groups of its top-K)
            log(f"{source}: top-{common.top_k(seqs[0])}, {model.name} routes top-{model.top_k}; "
                "panel skipped")
            continue
        budgets = q.get("budgets", BUDGETS).get(model.name, BUDGETS["mixtral-8x7b"])
        memo: dict = {}
        for gb in budgets:
            at = exact and gb in EXACT_AT.get(model.name, ())
            res = [plan_trace(tr, model, hw, budget_bytes(gb), delta=delta, exact=at,
                              memo=memo) for tr in seqs]
            for r in res:
                for variant in ("plan", "baseline"):
                    x = r[variant]
                    rows.append({
                        "panel": panel, "source": source, "model": model.name,
                        "trace": r["trace"], "budget_gb": gb, "variant": variant,
                        "sizes": "/".join(str(x["sizes"][p]) for p in "FCSE"),
                        "predicted_layer_ms": x["predicted_layer_ms"],
                        "simulated_alg3_layer_ms": x["simulated"]["alg3_layer_ms"],
                        "simulated_alg1_layer_ms": x["simulated"].get("alg1_layer_ms"),
                        "static_alg3_layer_ms": x["static"]["alg3_layer_ms"]})
            p = np.mean([r["plan"]["predicted_layer_ms"] for r in res])
            b = np.mean([r["baseline"]["predicted_layer_ms"] for r in res])
            log(f"{model.name} {gb:g} GB: predicted {p:.3f} ms/layer with compressed pools, "
                f"{b:.3f} without")
        panels.append({"panel": panel, "source": common.source_record(source),
                       "model": model.name, "budgets_gb": list(budgets),
                       "sequences": [common.sequence_record(t) for t in seqs]})
    if not rows:
        log("skipped: no sequence to plot")
        return None
    out = Path(out_dir)
    csv_path = common.write_csv(out / f"{NAME}.csv", COLUMNS, rows,
                                sort_by=("panel", "budget_gb", "variant", "trace"))
    common.write_json(common.params_path(csv_path), {
        "figure": NAME,
        "paper": "Yang et al., ZipMoE, Sec. 3.4 and App. C (Algorithms 3-4)",
        "hardware": HARDWARE, "precision": "bf16", "delta": delta, "pools": "FCSE",
        "baseline": "pools F only",
        "exact_algorithm1_at_gb": {m: list(v) for m, v in EXACT_AT.items()} if exact else {},
        "zipmoe_parameters": "paging.cost.pools.ZIPMOE_SOURCES (docs/COST_MODEL.md)",
        "replay": "nested lfu-dist caches of paging.simulate.simulate, groups mode",
        "panels": panels, "quick": quick, "seeds": "none (every step is deterministic)",
    })
    log(f"wrote {csv_path}")
    return csv_path


def plot(csv_path, out_dir) -> list[Path]:
    """Draw fig_zipmoe.png/.pdf from the CSV alone: one panel per model, makespan per layer
    (mean over sequences) against the budget."""
    plt = common.pyplot()
    rows = common.read_csv(csv_path)
    panels = sorted({int(r["panel"]) for r in rows})
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 3.8), squeeze=False)
    style = {"plan": ("tab:blue", "compressed pools FCSE"), "baseline": ("tab:red", "F only")}
    for ax, panel in zip(axes[0], panels, strict=True):
        mine = [r for r in rows if int(r["panel"]) == panel]
        for variant, (color, label) in style.items():
            sel = [r for r in mine if r["variant"] == variant]
            gbs = sorted({float(r["budget_gb"]) for r in sel})

            def mean(col, sel=sel, gbs=gbs):
                return [np.mean([float(r[col]) for r in sel if float(r["budget_gb"]) == g
                                 and r[col] != ""] or [np.nan]) for g in gbs]

            ax.plot(gbs, mean("predicted_layer_ms"), "-", color=color, label=f"{label}: "
                    "predicted")
            ax.plot(gbs, mean("simulated_alg3_layer_ms"), "o", color=color, ms=5, mfc="none",
                    label=f"{label}: replay, Alg. 3")
            alg1 = mean("simulated_alg1_layer_ms")
            if not all(np.isnan(alg1)):
                ax.plot(gbs, alg1, "x", color=color, ms=5, label=f"{label}: replay, Alg. 1")
        ax.set_xlabel("memory budget (GB)")
        ax.set_ylabel("expected makespan per layer (ms)")
        ax.set_title(f"{mine[0]['model']} (bf16, pcie3 SSD)", fontsize=9)
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7)
    paths = common.save_figure(fig, out_dir, NAME)
    plt.close(fig)
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main(sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
