"""Figure 4: misses versus cache size k = 1..nℓ for LRU, LRU-DIST, LLRU, LFU, LFU-DIST, Marking
and OPT (LFU and LFU-DIST are not in the paper's figure; added for the issue "Learned and
learning-augmented eviction", item 5: perfect LFU, counts over the whole history).

Angelopoulos et al., Sec. 5.2, Fig. 4 plots one Llama-MoE and one Mixtral trace. We plot one
sequence of each routing file given (default: the shipped Mixtral 8x7B and granite-3.0-1b-a400m
traces): the LONGEST sequence of the file (most requests after rounds expansion; the first one
on ties). For the shipped files that is HumanEval problem 1 of humaneval_2_routing.jsonl and
the longest granite prompt with its prefill and decode phases. Traces are expanded into rounds
as in the paper (Sec. 5.1).

Miss curves come from :func:`paging.mrc.miss_curve` (one pass for the stack policies, per-k
simulation for Marking). Marking is randomized: the CSV holds the mean and standard deviation
over ``MARKING_SEEDS`` runs (seeds recorded in fig4.json).

Run: ``python -m experiments.fig4 [--out DIR] [--quick] [--trace PATH ...]``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from experiments import common

NAME = "fig4"
REAL_TRACES = True  # drawn from real traces: compute() takes traces= (the --trace option)
DEFAULT_SOURCES = (
    "mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl",
    "granite-3.0-1b-a400m-instruct/moe_expert_trace.json",
)
DETERMINISTIC = ("lru", "lru-dist", "llru", "lfu", "lfu-dist", "belady")
RANDOMIZED = ("marking",)
POLICIES = DETERMINISTIC + RANDOMIZED
PAPER_ONLINE = ("lru", "lru-dist", "llru", "marking")  # the online policies of Fig. 4
MARKING_SEEDS = tuple(range(10))
QUICK_MARKING_SEEDS = (0, 1)
QUICK_ROUNDS = 40  # --quick keeps the first 40 rounds (40·ℓ requests) of each sequence
COLUMNS = ("panel", "source", "trace", "model", "layout", "requests", "policy", "k", "misses",
           "misses_sd", "n_seeds")
SUMMARY_COLUMNS = ("panel", "trace", "policy", "max_ratio_to_opt", "k_at_max_ratio",
                   "mean_ratio_to_opt", "max_drop", "k_at_max_drop", "roughness",
                   "k_lowest_online", "n_k_fewer_than_llru", "min_k_fewer_than_llru",
                   "max_k_fewer_than_llru", "n_k_llru_at_most", "n_k")


def select_sequence(traces):
    """The sequence Fig. 4 shows from a file: the longest (first one on ties)."""
    if not traces:
        return None
    return max(traces, key=lambda t: t.n_requests)  # max() keeps the first of equal ones


def compute(out_dir, *, traces: Sequence[str] | None = None, quick: bool = False,
            seeds: Sequence[int] | None = None, max_requests: int | None = None,
            progress=None) -> Path | None:
    """Compute the miss curves into ``out_dir/fig4.csv`` (+ ``fig4.json``); return the CSV path,
    or None (with a one-line message) when no real trace is available.

    ``traces``: sources for :func:`paging.io.load` (default: the shipped files under
    $PAGING_TRACES). ``max_requests``: keep only the first requests of each sequence
    (``--quick``: 40 rounds)."""
    from paging.mrc import miss_curve

    log = progress or common.Progress(NAME)
    sources = common.sources_or_skip(traces, DEFAULT_SOURCES, log)
    if sources is None:
        return None
    seeds = tuple(seeds) if seeds is not None else (QUICK_MARKING_SEEDS if quick
                                                    else MARKING_SEEDS)
    rows, panels = [], []
    for panel, source in enumerate(sources):
        seqs = common.load_sequences(source)
        trace = select_sequence(seqs)
        if trace is None:
            log(f"{source}: no sequence, panel skipped")
            continue
        limit = max_requests or (QUICK_ROUNDS * trace.layout.n_layers if quick else None)
        full = trace.n_requests
        if limit is not None and trace.n_requests > limit:
            trace = trace.head(limit)
        n_pages = trace.layout.n_pages
        model = common.model_of(trace, source)
        layout = common.layout_label(trace)
        log(f"panel {panel}: {trace.name} ({model}; {layout}; {trace.n_requests} requests; "
            f"longest of {len(seqs)} sequences)")
        base = {"panel": panel, "source": source, "trace": trace.name, "model": model,
                "layout": layout, "requests": trace.n_requests}
        for policy in DETERMINISTIC:
            curve = np.asarray(miss_curve(trace, policy), dtype=np.int64)
            log(f"  {policy}: misses at k=1..{n_pages} done")
            rows += [dict(base, policy=policy, k=k, misses=int(curve[k - 1]), misses_sd=None,
                          n_seeds=None) for k in range(1, n_pages + 1)]
        for policy in RANDOMIZED:
            curves = []
            for i, s in enumerate(seeds):
                curves.append(np.asarray(miss_curve(trace, policy, seed=s), dtype=np.int64))
                log(f"  {policy}: seed {s} ({i + 1}/{len(seeds)}) done")
            c = np.vstack(curves).astype(np.float64)
            mean = c.mean(axis=0)
            sd = c.std(axis=0, ddof=1) if len(seeds) > 1 else np.zeros(n_pages)
            rows += [dict(base, policy=policy, k=k, misses=float(mean[k - 1]),
                          misses_sd=float(sd[k - 1]), n_seeds=len(seeds))
                     for k in range(1, n_pages + 1)]
        panels.append({"panel": panel, "source": common.source_record(source),
                       "sequences_in_file": [t.name for t in seqs],
                       "selected": common.sequence_record(trace),
                       "selected_requests_full": full, "max_requests": limit,
                       "k": [1, n_pages]})
    if not rows:
        log("skipped: no sequence to plot")
        return None
    out = Path(out_dir)
    csv_path = common.write_csv(out / f"{NAME}.csv", COLUMNS, rows,
                                sort_by=("panel", "policy", "k"))
    common.write_json(common.params_path(csv_path), {
        "figure": NAME,
        "paper": "Angelopoulos et al., Sec. 5.2, Fig. 4",
        "policies": list(POLICIES),
        "opt": "belady (Belady's rule = OPT for unit costs)",
        "marking_seeds": list(seeds),
        "marking_aggregate": "mean and sample standard deviation over the seeds",
        "selection": "the longest sequence of each source (most requests; first on ties)",
        "expand": "rounds",
        "phase": "both",
        "quick": quick,
        "quick_rounds": QUICK_ROUNDS if quick else None,
        "panels": panels,
    })
    summary = summarize(common.read_csv(csv_path))
    common.write_csv(out / f"{NAME}_summary.csv", SUMMARY_COLUMNS, summary,
                     sort_by=("panel", "policy"))
    for r in summary:
        if r["policy"] != "belady":
            log(f"panel {r['panel']} {r['policy']}: up to {r['max_ratio_to_opt']:.2f}x OPT "
                f"(k={r['k_at_max_ratio']}); largest one-step drop {r['max_drop']:.1%} of the "
                f"requests (k={r['k_at_max_drop']}); lowest online at {r['k_lowest_online']}"
                f"/{r['n_k']} cache sizes; fewer misses than LLRU at "
                f"{r['n_k_fewer_than_llru']}/{r['n_k']}")
    log(f"wrote {csv_path}")
    return csv_path


def summarize(rows: list[dict[str, str]]) -> list[dict]:
    """Per panel and policy, from the rows of fig4.csv:

    * ``max_ratio_to_opt`` (and its k), ``mean_ratio_to_opt`` over k: misses / OPT misses;
    * ``max_drop``: the largest decrease of misses from k to k+1, as a fraction of the requests,
      and ``roughness``: sum over k of |m(k+1) - 2 m(k) + m(k-1)| / requests. A staircase
      (LRU's "great fluctuation in performance depending on k", Sec. 5.2) has large values, a
      smooth curve small ones;
    * ``k_lowest_online``: at how many k the policy has no more misses than the best of the
      paper's online policies (LRU, LRU-DIST, LLRU, Marking; ties count for each tied policy):
      for those four, at how many k it is the lowest of them; for LFU and LFU-DIST (added,
      not in the paper), at how many k it would be; empty for OPT;
    * against LLRU, pairwise over k = 1..nℓ: ``n_k_fewer_than_llru``, at how many k the policy
      has strictly fewer misses than LLRU (Marking: its mean over the seeds), and the smallest
      and largest such k (``min_k_fewer_than_llru``, ``max_k_fewer_than_llru``; empty when
      there is none); ``n_k_llru_at_most``, at how many k LLRU has at most as many misses."""
    out = []
    for panel in sorted({int(r["panel"]) for r in rows}):
        pr = [r for r in rows if int(r["panel"]) == panel]
        requests = int(pr[0]["requests"])
        curves = {policy: np.array([m for _, m in sorted(
            (int(r["k"]), float(r["misses"])) for r in pr if r["policy"] == policy)])
            for policy in POLICIES}
        ks = np.arange(1, curves["belady"].size + 1)
        opt, llru = curves["belady"], curves["llru"]
        online = [p for p in POLICIES if p != "belady"]
        best = np.min(np.vstack([curves[p] for p in PAPER_ONLINE]), axis=0)
        for policy, m in curves.items():
            ratio = m / opt
            drop = m[:-1] - m[1:] if m.size > 1 else np.zeros(1)
            second = np.abs(np.diff(m, 2)).sum() if m.size > 2 else 0.0
            i_r, i_d = int(np.argmax(ratio)), int(np.argmax(drop))
            fewer = ks[m < llru]
            out.append({
                "panel": panel, "trace": pr[0]["trace"], "policy": policy,
                "max_ratio_to_opt": float(ratio[i_r]), "k_at_max_ratio": int(ks[i_r]),
                "mean_ratio_to_opt": float(ratio.mean()),
                "max_drop": float(drop[i_d]) / requests, "k_at_max_drop": int(ks[i_d]),
                "roughness": float(second) / requests,
                "k_lowest_online": (int(np.sum(m <= best + 1e-9)) if policy in online
                                    else None),
                "n_k_fewer_than_llru": int(fewer.size),
                "min_k_fewer_than_llru": int(fewer.min()) if fewer.size else None,
                "max_k_fewer_than_llru": int(fewer.max()) if fewer.size else None,
                "n_k_llru_at_most": int(np.sum(llru <= m)),
                "n_k": int(ks.size)})
    return out


def plot(csv_path, out_dir) -> list[Path]:
    """Draw fig4.png/.pdf from the CSV alone: one column per sequence; misses on top (the
    paper's Fig. 4), misses / OPT misses below (the "gap to OPT" of Sec. 5.2)."""
    plt = common.pyplot()
    rows = common.read_csv(csv_path)
    panels = sorted({int(r["panel"]) for r in rows})
    fig, axes = plt.subplots(2, len(panels), figsize=(6.2 * len(panels), 7.4), squeeze=False,
                             layout="constrained", height_ratios=(3, 2), sharex="col")
    for col, panel in enumerate(panels):
        top, bottom = axes[0][col], axes[1][col]
        prow = [r for r in rows if int(r["panel"]) == panel]
        curves = {}
        for policy in POLICIES:
            pr = [r for r in prow if r["policy"] == policy]
            if pr:
                curves[policy] = (np.array([int(r["k"]) for r in pr]),
                                  np.array([float(r["misses"]) for r in pr]), pr)
        opt = curves.get("belady")
        for policy, (k, m, pr) in curves.items():
            color, ls, _ = common.POLICY_STYLE[policy]
            label = common.POLICY_LABELS[policy]
            if pr[0]["n_seeds"]:
                label += f" (mean of {pr[0]['n_seeds']} seeds)"
                sd = np.array([float(r["misses_sd"] or 0) for r in pr])
                top.fill_between(k, m - sd, m + sd, color=color, alpha=0.2, lw=0)
            top.plot(k, m, ls, color=color, lw=1.3, label=label)
            if opt is not None and policy != "belady":
                bottom.plot(k, m / opt[1], ls, color=color, lw=1.1, label=label)
        r0 = prow[0]
        top.set_title(f"{r0['model']}\n{r0['trace']}\n{r0['layout']}, {r0['requests']} "
                      "requests", fontsize=9)
        top.set_ylabel("misses")
        top.set_ylim(bottom=0)
        top.legend(fontsize=8)
        bottom.set_ylabel("misses / OPT misses")
        bottom.axhline(1.0, color="black", lw=0.8, ls=":")
        bottom.set_xlabel("cache size k (pages)")
        bottom.set_xlim(1, max(int(r["k"]) for r in prow))
        for ax in (top, bottom):
            ax.grid(alpha=0.3)
    fig.suptitle("Misses versus cache size (cf. Angelopoulos et al., Fig. 4)", fontsize=10)
    paths = common.save_figure(fig, out_dir, NAME)
    plt.close(fig)
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main(sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
