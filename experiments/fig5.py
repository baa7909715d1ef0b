"""Figure 5: misses normalised by OPT at k = 200 for LRU, LRU-DIST, LLRU and Marking.

Angelopoulos et al., Sec. 5.2, Fig. 5 shows box plots over 10 traces per model (Llama-MoE and
Mixtral). We use every sequence of every routing file given (default: Mixtral HumanEval
problems 0 and 1 from humaneval_2_routing.jsonl, the prefill+decode raw dump of problem 0 as a
separate run, and granite's 3 prompts), grouped into one panel per model (the ``model`` the file
names, else its folder; sequences of different layouts are never pooled), and draw the box plot
together with every individual point: with 3 sequences per model a box is not a distribution.

Each sequence is simulated from an empty cache (expanded into rounds, Sec. 5.1); OPT is Belady's
rule. Marking's misses are the mean over ``MARKING_SEEDS`` runs (seeds in fig5.json).

Run: ``python -m experiments.fig5 [--out DIR] [--quick] [--trace PATH ...]``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from experiments import common

NAME = "fig5"
REAL_TRACES = True  # drawn from real traces: compute() takes traces= (the --trace option)
DEFAULT_SOURCES = (
    "mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl",
    "mixtral-8x7b-instruct-vllm/humaneval_p0_prefill_decode_raw.jsonl",
    "granite-3.0-1b-a400m-instruct/moe_expert_trace.json",
)
K = 200
DETERMINISTIC = ("lru", "lru-dist", "llru")
RANDOMIZED = ("marking",)
POLICIES = DETERMINISTIC + RANDOMIZED
MARKING_SEEDS = tuple(range(10))
QUICK_MARKING_SEEDS = (0, 1)
QUICK_ROUNDS = 40
COLUMNS = ("model", "source", "trace", "layout", "requests", "k", "policy", "misses",
           "misses_sd", "n_seeds", "opt_misses", "ratio")
SUMMARY_COLUMNS = ("model", "layout", "n_sequences", "k", "policy", "ratio_median", "ratio_mean",
                   "ratio_min", "ratio_max", "llru_fewer_mean", "llru_fewer_min",
                   "llru_fewer_max")


def compute(out_dir, *, traces: Sequence[str] | None = None, quick: bool = False,
            k: int = K, seeds: Sequence[int] | None = None, max_requests: int | None = None,
            progress=None) -> Path | None:
    """Compute ``out_dir/fig5.csv`` (one row per sequence and policy), ``fig5_summary.csv``
    (per model and policy) and ``fig5.json``; return the CSV path, or None (with a one-line
    message) when no real trace is available."""
    from paging.errors import check_k
    from paging.simulate import simulate

    log = progress or common.Progress(NAME)
    k = check_k(k)
    sources = common.sources_or_skip(traces, DEFAULT_SOURCES, log)
    if sources is None:
        return None
    seeds = tuple(seeds) if seeds is not None else (QUICK_MARKING_SEEDS if quick
                                                    else MARKING_SEEDS)
    rows, runs = [], []
    for source in sources:
        seqs = common.load_sequences(source)
        log(f"{source}: {len(seqs)} sequence{'s' if len(seqs) != 1 else ''}")
        for trace in seqs:
            limit = max_requests or (QUICK_ROUNDS * trace.layout.n_layers if quick else None)
            full = trace.n_requests
            if limit is not None and trace.n_requests > limit:
                trace = trace.head(limit)
            if trace.n_requests == 0:
                log(f"  {trace.name}: empty, skipped")
                continue
            model = common.model_of(trace, source)
            n_pages = trace.layout.n_pages
            if k >= n_pages:
                log(f"  note: k={k} >= {n_pages} pages of {trace.name}: everything fits")
            opt = simulate(trace, "belady", k).misses
            base = {"model": model, "source": source, "trace": trace.name,
                    "layout": common.layout_label(trace), "requests": trace.n_requests, "k": k,
                    "opt_misses": opt}
            for policy in DETERMINISTIC:
                m = simulate(trace, policy, k).misses
                rows.append(dict(base, policy=policy, misses=m, misses_sd=None, n_seeds=None,
                                 ratio=m / opt))
            for policy in RANDOMIZED:
                ms = np.array([simulate(trace, policy, k, seed=s).misses for s in seeds],
                              dtype=np.float64)
                sd = float(ms.std(ddof=1)) if ms.size > 1 else 0.0
                rows.append(dict(base, policy=policy, misses=float(ms.mean()), misses_sd=sd,
                                 n_seeds=len(seeds), ratio=float(ms.mean()) / opt))
            log(f"  {trace.name}: {trace.n_requests} requests, OPT={opt}, "
                + ", ".join(f"{r['policy']}={r['ratio']:.3f}" for r in rows[-len(POLICIES):]))
            runs.append(dict(common.sequence_record(trace), source=source, model=model,
                             requests_full=full, max_requests=limit))
    if not rows:
        log("skipped: no sequence")
        return None
    out = Path(out_dir)
    csv_path = common.write_csv(out / f"{NAME}.csv", COLUMNS, rows,
                                sort_by=("model", "source", "trace", "policy"))
    summary = summarize(common.read_csv(csv_path))
    common.write_csv(out / f"{NAME}_summary.csv", SUMMARY_COLUMNS, summary,
                     sort_by=("model", "layout", "policy"))
    common.write_json(common.params_path(csv_path), {
        "figure": NAME,
        "paper": "Angelopoulos et al., Sec. 5.2, Fig. 5 (10 traces per model there)",
        "k": k,
        "policies": list(POLICIES),
        "normalised_by": "belady (OPT)",
        "marking_seeds": list(seeds),
        "marking_aggregate": "mean over the seeds (misses_sd: sample standard deviation)",
        "sources": [common.source_record(s) for s in sources],
        "sequences": runs,
        "expand": "rounds",
        "phase": "both",
        "quick": quick,
        "summary": "fig5_summary.csv: per model and policy, the median/mean/min/max of "
                   "misses/OPT over the sequences; llru_fewer_*: 1 - LLRU/policy per sequence",
    })
    for r in summary:
        line = (f"{r['model']} ({r['layout']}): {r['policy']}/OPT median "
                f"{r['ratio_median']:.3f} over {r['n_sequences']} sequences")
        if r["llru_fewer_mean"] is not None:
            line += (f"; LLRU makes {100 * r['llru_fewer_mean']:.1f}% fewer faults (mean over "
                     "sequences)")
        log(line)
    log(f"wrote {csv_path}")
    return csv_path


def summarize(rows: list[dict[str, str]]) -> list[dict]:
    """Per model (and layout) and policy: statistics of misses/OPT over the sequences and
    LLRU's relative saving ``1 - LLRU/policy`` per sequence. Reads the rows of fig5.csv."""
    out = []
    for model, layout in sorted({(r["model"], r["layout"]) for r in rows}):
        mr = [r for r in rows if (r["model"], r["layout"]) == (model, layout)]
        # a sequence is (source, trace): two files of the same name in same-named folders
        # give the same trace name and model
        llru = {_sequence(r): float(r["misses"]) for r in mr if r["policy"] == "llru"}
        for policy in sorted({r["policy"] for r in mr}):
            pr = [r for r in mr if r["policy"] == policy]
            ratio = np.array([float(r["ratio"]) for r in pr])
            fewer = np.array([1.0 - llru[_sequence(r)] / float(r["misses"]) for r in pr
                              if policy != "llru" and float(r["misses"]) > 0])
            out.append({"model": model, "layout": layout, "n_sequences": len(pr),
                        "k": int(pr[0]["k"]), "policy": policy,
                        "ratio_median": float(np.median(ratio)),
                        "ratio_mean": float(ratio.mean()), "ratio_min": float(ratio.min()),
                        "ratio_max": float(ratio.max()),
                        "llru_fewer_mean": float(fewer.mean()) if fewer.size else None,
                        "llru_fewer_min": float(fewer.min()) if fewer.size else None,
                        "llru_fewer_max": float(fewer.max()) if fewer.size else None})
    return out


def plot(csv_path, out_dir) -> list[Path]:
    """Draw fig5.png/.pdf from the CSV alone: one panel per model, a box per policy with every
    sequence drawn as a point."""
    plt = common.pyplot()
    rows = common.read_csv(csv_path)
    models = sorted({(r["model"], r["layout"]) for r in rows})
    fig, axes = plt.subplots(1, len(models), figsize=(5.6 * len(models), 4.6), squeeze=False,
                             layout="constrained")
    for ax, (model, layout) in zip(axes[0], models, strict=True):
        mr = [r for r in rows if (r["model"], r["layout"]) == (model, layout)]
        traces = sorted({_sequence(r) for r in mr})
        policies = [p for p in POLICIES if any(r["policy"] == p for r in mr)]
        data = [[float(r["ratio"]) for r in mr if r["policy"] == p] for p in policies]
        ax.boxplot(data, widths=0.5, showfliers=False, medianprops={"color": "black"})
        markers = "oDs^vP*Xh<>p"
        named = [t for _, t in traces]
        for ti, seq in enumerate(traces):
            for pi, p in enumerate(policies):
                v = [float(r["ratio"]) for r in mr if r["policy"] == p and _sequence(r) == seq]
                if v:
                    # fixed horizontal offsets (no random jitter: the figure is reproducible)
                    x = pi + 1 + (ti - (len(traces) - 1) / 2) * 0.08
                    ax.plot([x], v, markers[ti % len(markers)], ms=5, alpha=0.85,
                            color=common.POLICY_STYLE[p][0])
            source, tname = seq
            label = tname if named.count(tname) == 1 else f"{source} {tname}"
            ax.plot([], [], markers[ti % len(markers)], ms=5, color="grey",
                    label=_short(label))  # legend entry: the marker names the sequence
        ax.set_xticks(range(1, len(policies) + 1),
                      [common.POLICY_LABELS[p] for p in policies])
        ax.axhline(1.0, color="black", lw=0.8, ls=":")
        ax.set_ylabel("misses / OPT misses")
        r0 = mr[0]
        ax.set_title(f"{model}\n{layout}, k={r0['k']}, {len(traces)} sequences",
                     fontsize=9)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7, title="sequence", title_fontsize=7)
    fig.suptitle("Misses normalised by OPT (cf. Angelopoulos et al., Fig. 5)", fontsize=10)
    paths = common.save_figure(fig, out_dir, NAME)
    plt.close(fig)
    return paths


def _sequence(row: dict[str, str]) -> tuple[str, str]:
    """The sequence a CSV row belongs to: its source and its name in the source."""
    return row["source"], row["trace"]


def _short(name: str, width: int = 48) -> str:
    return name if len(name) <= width else "..." + name[-(width - 3):]


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main(sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
