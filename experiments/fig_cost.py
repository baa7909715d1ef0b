"""The MoE cost model on real traces: decode tokens/s against the GPU memory budget.

For each routing file (default: the Mixtral decode log, the Mixtral prefill+decode dump and
granite's JSON) and each of its sequences, the sequence is put in the order a server runs it
(:func:`paging.cost.timeline.batch_prefill`: a batched prefill pass, then one group of K experts
per decode token and layer) and simulated with a byte budget from the model preset that matches
its layout (mixtral-8x7b, granite-3.0-1b-a400m, ...; :mod:`paging.cost`), at two precisions,
for LRU, LLRU, LRU-DIST, Least-Stale, Landlord (= GreedyDual here: every expert has one size)
and the offline bound (Belady's schedule: with one tier every fetch costs the same, so it
minimises the transfer time). The latency timeline (:func:`paging.cost.timeline.timeline`)
gives decode tokens/s, time to first token and the stall fraction.

A third panel is a weighted instance: Mixtral at int4 on ``pcie4`` with host DRAM holding the
most requested half of the experts and the rest on the SSD tier (fetches from the SSD cost
about 4.4x more, :func:`paging.cost.arith.transfer_ms`), where GreedyDual, Landlord and Layered
Landlord weigh the costs and LRU does not; the offline bound is the exact weighted optimum
(min-cost flow, :func:`paging.offline.weighted.opt_weighted`).

The SpecMD comparison (README, "Reproduction: the MoE cost model"): budget 5 % of Mixtral's
16-bit size (:func:`paging.cost.share_budget`: 4.67e9 bytes, Table 3's GB read as GiB like
every preset; 47 int4 experts), int4, ``link-5gbps``, on the prefill+decode dump: TTFT and
tokens/s.

Run: ``python -m experiments.fig_cost [--out DIR] [--quick] [--trace PATH ...]``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from experiments import common

NAME = "fig_cost"
REAL_TRACES = True
DEFAULT_SOURCES = (
    "mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl",
    "mixtral-8x7b-instruct-vllm/humaneval_p0_prefill_decode_raw.jsonl",
    "granite-3.0-1b-a400m-instruct/moe_expert_trace.json",
)
PRECISIONS = {"mixtral-8x7b": ("int4", "bf16")}
DEFAULT_PRECISIONS = ("bf16", "int4")
HARDWARE = "link-5gbps"
POLICIES = ("lru", "llru", "lru-dist", "least-stale", "landlord")
OPT = "belady"
TWO_TIER = {"model": "mixtral-8x7b", "precision": "int4", "hardware": "pcie4",
            "host_fraction": 0.5}
TWO_TIER_POLICIES = ("lru", "llru", "greedy-dual", "layered-landlord")
SPECMD = {"model": "mixtral-8x7b", "precisions": ("int4", "int8"), "hardware": "link-5gbps",
          "capacity_pct": 5}
N_BUDGETS, QUICK_BUDGETS = 14, 4
QUICK_TOKENS = 12
COLUMNS = ("panel", "model", "source", "trace", "precision", "hardware", "tiers", "budget_gb",
           "capacity", "policy", "requests", "misses", "fetch_ms", "tokens_per_s", "ttft_ms",
           "stall_fraction", "decode_tokens")


def budgets_gb(total_bytes: int, n: int) -> list[float]:
    """``n`` budgets from about 2% of the experts' bytes to all of them, log-spaced, rounded to
    3 significant digits (GB, 1 GB = 1e9 bytes)."""
    lo, hi = 0.02 * total_bytes / 1e9, total_bytes / 1e9
    return [float(f"{g:.3g}") for g in np.geomspace(lo, hi, n)]


def _sequences(source: str, quick: bool):
    for trace in common.load_sequences(source):
        if quick and trace.n_requests:  # the prefill (if any) and a few decode tokens
            tokens = trace.token if trace.token is not None else trace.passes
            bounds = trace.meta.get("phase_bounds") or {}
            pre = int(bounds.get("prefill", [0, 0])[1])
            if pre < trace.n_requests:
                cut = int(np.searchsorted(tokens, tokens[pre] + QUICK_TOKENS))
                trace = trace.head(cut)
                if bounds:  # head() drops the phase bounds of the full sequence
                    trace.meta["phase_bounds"] = {"prefill": [0, pre], "decode": [pre, cut]}
        if trace.n_requests:
            yield trace


def _run(seq, model, precision, hardware, budget, policy, fetch, sizes,
         opt_weighted=False) -> dict:
    """One policy on one sequence (batched prefill) as a :class:`~paging.run.RunSpec`; the
    offline weighted optimum (not a policy: a schedule from the min-cost flow) is timed on the
    same timeline."""
    if opt_weighted:
        from paging.cost.timeline import batch_prefill, timeline
        from paging.offline.weighted import opt_weighted as solve

        trace, batch = batch_prefill(seq)
        res = solve(trace, budget=budget, costs=fetch, sizes=sizes, method="flow")
        tm = timeline(trace, res.hit_mask, model=model, precision=precision, hardware=hardware,
                      fetch_ms=fetch, sizes=sizes, batch=batch)
        return {"requests": trace.n_requests, "misses": res.misses, "fetch_ms": res.cost,
                "tokens_per_s": tm.tokens_per_s, "ttft_ms": tm.ttft_ms,
                "stall_fraction": tm.stall_fraction, "decode_tokens": tm.decode_tokens}
    from paging.run import RunSpec, run

    (r,) = run(RunSpec(policy, budget=budget, model=model.name, precision=precision.name,
                       hardware=hardware.name, costs=fetch, sizes=sizes, prefill="batched"),
               [seq], check=False)
    return {"requests": r["requests"], "misses": r["misses"], "fetch_ms": r["cost"],
            "tokens_per_s": r["tokens_per_s"], "ttft_ms": r["ttft_ms"],
            "stall_fraction": r["stall_fraction"], "decode_tokens": r["decode_tokens"]}


def compute(out_dir, *, traces: Sequence[str] | None = None, quick: bool = False,
            progress=None) -> Path | None:
    """Compute ``out_dir/fig_cost.csv`` (one row per panel, sequence, precision, budget and
    policy), ``fig_cost_specmd.csv`` (the README's SpecMD comparison) and ``fig_cost.json``;
    None (with a one-line message) when no real trace is available."""
    from paging.cost import (
        budget_bytes,
        get_hardware,
        get_model,
        get_precision,
        page_costs,
        page_sizes,
        place_by_frequency,
        share_budget,
    )
    from paging.cost.timeline import batch_prefill

    log = progress or common.Progress(NAME)
    sources = common.sources_or_skip(traces, DEFAULT_SOURCES, log)
    if sources is None:
        return None
    n_budgets = QUICK_BUDGETS if quick else N_BUDGETS
    rows, specmd, runs = [], [], []
    for source in sources:
        for trace in _sequences(source, quick):
            lay = trace.layout
            name = common.preset_for(lay)
            if name is None:
                log(f"  {trace.name}: no model preset has {lay.n_layers} layers x "
                    f"{lay.n_experts} experts; skipped")
                continue
            model = get_model(name)
            runs.append(dict(common.sequence_record(batch_prefill(trace)[0]), source=source,
                             model=name))  # the sequence as simulated
            base = {"model": name, "source": source, "trace": trace.name}
            for q in PRECISIONS.get(name, DEFAULT_PRECISIONS):
                prec, hw = get_precision(q), get_hardware(HARDWARE)
                sizes = page_sizes(model, prec)
                fetch = page_costs(model, prec, hw, np.zeros(lay.n_pages, np.int8))
                for gb in budgets_gb(int(sizes.sum()), n_budgets):
                    budget = budget_bytes(gb)
                    if budget < int(sizes[0]) * lay.n_layers:  # DIST needs one slot per layer
                        continue
                    for pol in (*POLICIES, OPT):
                        out = _run(trace, model, prec, hw, budget, pol, fetch, sizes)
                        rows.append(dict(base, panel="one tier", precision=q, hardware=HARDWARE,
                                         tiers="host", budget_gb=gb,
                                         capacity=budget // int(sizes[0]), policy=pol, **out))
            if name == SPECMD["model"]:
                hw = get_hardware(SPECMD["hardware"])
                budget = share_budget(model, SPECMD["capacity_pct"])
                for q in SPECMD["precisions"]:
                    prec = get_precision(q)
                    sizes = page_sizes(model, prec)
                    fetch = page_costs(model, prec, hw, np.zeros(lay.n_pages, np.int8))
                    for pol in (*POLICIES, OPT):
                        out = _run(trace, model, prec, hw, budget, pol, fetch, sizes)
                        specmd.append(dict(base, panel="specmd", precision=q,
                                           hardware=hw.name, tiers="host",
                                           budget_gb=budget / 1e9,
                                           capacity=budget // int(sizes[0]), policy=pol, **out))
            if name == TWO_TIER["model"]:
                prec, hw = get_precision(TWO_TIER["precision"]), get_hardware(TWO_TIER["hardware"])
                sizes = page_sizes(model, prec)
                # the placement counts requests as served (one per expert in the prefill pass)
                freq = np.bincount(batch_prefill(trace)[0].pages, minlength=lay.n_pages)
                tiers = place_by_frequency(freq, int(TWO_TIER["host_fraction"] * lay.n_pages))
                fetch = page_costs(model, prec, hw, tiers)
                for gb in budgets_gb(int(sizes.sum()), n_budgets):
                    budget = budget_bytes(gb)
                    if budget < int(sizes[0]) * lay.n_experts:  # a group must fit
                        continue
                    for pol in (*TWO_TIER_POLICIES, "opt-weighted"):
                        out = _run(trace, model, prec, hw, budget, pol, fetch, sizes,
                                   opt_weighted=pol == "opt-weighted")
                        rows.append(dict(base, panel="two tiers", precision=prec.name,
                                         hardware=hw.name, tiers="host+ssd", budget_gb=gb,
                                         capacity=budget // int(sizes[0]), policy=pol, **out))
            log(f"  {trace.name}: {runs[-1]['requests']} requests ({name})")
    if not rows:
        log("skipped: no sequence with a model preset")
        return None
    out = Path(out_dir)
    keys = ("panel", "model", "source", "trace", "precision", "budget_gb", "policy")
    csv_path = common.write_csv(out / f"{NAME}.csv", COLUMNS, rows, sort_by=keys)
    if specmd:
        common.write_csv(out / f"{NAME}_specmd.csv", COLUMNS, specmd, sort_by=keys)
    common.write_json(common.params_path(csv_path), {
        "figure": NAME,
        "what": "decode tokens/s against the GPU memory budget (cost model + timeline)",
        "order": "batched prefill, then one group per decode token and layer (groups mode)",
        "hardware": HARDWARE, "precisions": {k: list(v) for k, v in PRECISIONS.items()},
        "default_precisions": list(DEFAULT_PRECISIONS), "policies": list(POLICIES),
        "offline_bound": "belady (one tier: uniform costs), opt-weighted = min-cost flow "
                         "(two tiers)",
        "two_tier": TWO_TIER, "two_tier_policies": list(TWO_TIER_POLICIES), "specmd": SPECMD,
        "budgets": f"{n_budgets} log-spaced budgets from 2% of the experts' bytes to all",
        "sources": [common.source_record(s) for s in sources], "sequences": runs,
        "quick": quick,
    })
    for r in specmd:
        log(f"SpecMD setting ({r['trace']}): {r['policy']}: TTFT {r['ttft_ms']} ms, "
            f"{r['tokens_per_s']} tokens/s")
    log(f"wrote {csv_path}")
    return csv_path


def plot(csv_path, out_dir) -> list[Path]:
    """fig_cost.png/.pdf from the CSV alone: one panel per (model, precision) with one tier,
    plus the two-tier panel; the sequence with the most decode tokens of each model."""
    plt = common.pyplot()
    from matplotlib import ticker

    rows = common.read_csv(csv_path)
    panels = sorted({(r["panel"], r["model"], r["precision"]) for r in rows},
                    key=lambda p: (p[0] != "one tier", p[1], p[2]))
    ncol = min(3, len(panels))
    nrow = -(-len(panels) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.8 * ncol, 4.0 * nrow), squeeze=False,
                             layout="constrained")
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    styles = dict(common.POLICY_STYLE)
    styles.update({"least-stale": ("tab:brown", "-.", "P"), "landlord": ("tab:cyan", "--", "*"),
                   "greedy-dual": ("tab:cyan", "--", "*"),
                   "layered-landlord": ("tab:pink", "-", "h"),
                   "opt-weighted": ("black", "-", "x")})
    labels = dict(common.POLICY_LABELS, **{"least-stale": "Least-Stale",
                                           "landlord": "Landlord (=GreedyDual)",
                                           "greedy-dual": "GreedyDual",
                                           "layered-landlord": "Layered Landlord",
                                           "belady": "OPT (Belady)",
                                           "opt-weighted": "OPT (weighted, flow)"})
    for ax, (panel, model, prec) in zip(axes.flat[:len(panels)], panels, strict=True):
        pr = [r for r in rows if (r["panel"], r["model"], r["precision"]) == (panel, model, prec)]
        # the sequence with the most decode tokens, then the most requests
        seq = max({(r["source"], r["trace"]) for r in pr},
                  key=lambda s: max((int(r["decode_tokens"]), int(r["requests"]), s) for r in pr
                                    if (r["source"], r["trace"]) == s))
        pr = [r for r in pr if (r["source"], r["trace"]) == seq]
        for pol in dict.fromkeys(r["policy"] for r in pr):
            pts = sorted((float(r["budget_gb"]), float(r["tokens_per_s"])) for r in pr
                         if r["policy"] == pol)
            c, ls, mk = styles.get(pol, ("grey", "-", "."))
            ax.plot(*zip(*pts, strict=True), color=c, ls=ls, marker=mk, ms=4,
                    label=labels.get(pol, pol))
        ax.set_xscale("log")
        ax.set_yscale("log")
        for axis in (ax.xaxis, ax.yaxis):  # plain numbers at 1, 2, 5 x 10^j
            axis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
            axis.set_major_formatter(ticker.FormatStrFormatter("%g"))
            axis.set_minor_formatter(ticker.NullFormatter())
        ax.set_xlabel("GPU memory budget for experts (GB)")
        ax.set_ylabel("decode tokens/s")
        hw = pr[0]["hardware"]
        ax.set_title(f"{model}, {prec}, {hw}, {pr[0]['tiers']}\n{_short(seq[1])}", fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    fig.suptitle("Predicted decode throughput (cost model + timeline; no prefetching)",
                 fontsize=10)
    paths = common.save_figure(fig, out_dir, NAME)
    plt.close(fig)
    return paths


def _short(name: str, width: int = 44) -> str:
    return name if len(name) <= width else "..." + name[-(width - 3):]


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main(sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
