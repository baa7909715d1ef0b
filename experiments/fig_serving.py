"""Serving: latency under load and what batching does to the paging problem (issue 23).

Requests drawn (seeded) from the Mixtral-8x7B routing files arrive by a Poisson process and are
served by continuous batching (at most 16 running, 256 tokens per step) from one warm expert
cache (:func:`paging.serve.serve`), Mixtral int4 experts:

(a) ``rate``: p99 time per output token and output tokens/s against the arrival rate, for LRU,
    LLRU, LFU, Least-Stale, token-match and GreedyDual (with every expert of one size and one
    fetch time GreedyDual and Landlord are the same policy), at two GPU budgets (8 and 16 GB:
    80 and 161 of the 256 int4 experts) on two links (``link-5gbps``, SpecMD's, and
    ``pcie4``); with each run, Belady on the stream of batched groups it produced (a lower bound
    on that stream's misses), timed with the same schedule (:mod:`paging.serve`).
    The dashed line is the best, per rate, of the Belady replays of every policy's run: Belady
    minimises a stream's misses, not its p99 (which depends on where the misses fall and on the
    schedule the run's own speed made), so it is a reference, not a bound on the latency.
(b) ``batch``: the miss ratio against the batch size, a closed loop of B clients (no think
    time) with at most B running, ``pcie4`` and 8 GB: a step's layer requests the union of its
    tokens' experts, so at B >= 4 nearly every expert of a layer each step and the problem
    turns into a cyclic scan over ℓ layers that LRU loses entirely.

Decode logs have no prompt routing: their first 32 tokens (at most half the sequence) are
served as the prompt (:mod:`paging.serve.workload`); the prefill+decode dump uses its own
prefill. Drawing 30-70 requests from three sequences repeats their routing (said in the JSON).
Everything is seeded (seed 0). About 3.5 minutes (``--quick``: seconds).

Run: ``python -m experiments.fig_serving [--out DIR] [--quick] [--trace PATH ...]``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from experiments import common

NAME = "fig_serving"
REAL_TRACES = True
DEFAULT_SOURCES = (
    "mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl",
    "mixtral-8x7b-instruct-vllm/humaneval_p0_prefill_decode_raw.jsonl",
)
POLICIES = ("lru", "llru", "lfu", "least-stale", "token-match", "greedy-dual")
HARDWARE = ("link-5gbps", "pcie4")
BUDGETS_GB = (8.0, 16.0)
RATES = (0.25, 0.5, 1.0, 2.0)
BATCHES = (1, 2, 4, 8, 16, 32)
BATCH_POLICIES = ("lru", "llru", "least-stale")
FULL = {"duration": 20.0, "rates": RATES, "batches": BATCHES, "policies": POLICIES}
QUICK = {"duration": 3.0, "rates": (0.5, 2.0), "batches": (1, 8), "policies": ("lru", "llru")}
MAX_BATCH, MAX_TOKENS = 16, 256
MODEL = "mixtral-8x7b"
COLUMNS = ("kind", "hardware", "budget_gb", "capacity", "policy", "rate", "max_batch",
           "requests", "completed", "expert_requests", "misses", "miss_ratio", "p50_tpot_ms",
           "p99_tpot_ms", "p99_ttft_ms", "p99_e2e_ms", "tokens_per_s", "opt_misses",
           "opt_miss_ratio", "opt_p99_tpot_ms", "opt_tokens_per_s")


def _run(traces, policy, hardware, gb, arrivals, max_batch, progress=None):
    from paging.cost import budget_bytes
    from paging.run import RunSpec
    from paging.serve import ServeSpec, serve

    spec = RunSpec(policy, budget=budget_bytes(gb), model=MODEL, precision="int4",
                   hardware=hardware)
    res = serve(spec, ServeSpec(arrivals, max_batch=max_batch, max_tokens=MAX_TOKENS,
                                seed=0), traces, show=False)
    return res.summary


def compute(out_dir, *, traces: Sequence[str] | None = None, quick: bool = False,
            progress=None) -> Path | None:
    """Compute ``out_dir/fig_serving.csv`` (kinds ``rate`` and ``batch``) and its JSON."""
    from paging.progress import bar
    from paging.serve import Arrivals

    log = progress or common.Progress("serving")
    sources = common.sources_or_skip(traces, DEFAULT_SOURCES, log)
    if sources is None:
        return None
    seqs = [t for s in sources for t in common.load_sequences(s, expand="groups")]
    other = [t for t in seqs if common.preset_for(t.layout) != MODEL]
    if other:  # (a user's trace of another model: the budgets and the preset are Mixtral's)
        log(f"skipped {len(other)} sequence(s) not of {MODEL}'s layout (e.g. {other[0].name}, "
            f"{other[0].layout.n_layers} layers x {other[0].layout.n_experts} experts): the "
            "figure serves Mixtral-8x7B int4 experts")
        seqs = [t for t in seqs if common.preset_for(t.layout) == MODEL]
    if not seqs:
        log("skipped: no sequence of Mixtral-8x7B's layout")
        return None
    cfg = QUICK if quick else FULL
    rows = []
    n = len(HARDWARE) * len(BUDGETS_GB) * len(cfg["rates"]) * len(cfg["policies"]) + \
        len(cfg["batches"]) * len(BATCH_POLICIES if not quick else cfg["policies"])
    with bar(n, "fig_serving", unit="run") as pb:
        for hw in HARDWARE:
            for gb in BUDGETS_GB:
                for rate in cfg["rates"]:
                    arr = Arrivals(rate=rate, duration=cfg["duration"])
                    for pol in cfg["policies"]:
                        s = _run(seqs, pol, hw, gb, arr, MAX_BATCH)
                        rows.append(dict(_pick(s), kind="rate", hardware=hw, budget_gb=gb,
                                         rate=rate, max_batch=MAX_BATCH))
                        pb.update(1)
                log(f"{hw}, {gb:g} GB: rates done")
        for b in cfg["batches"]:
            arr = Arrivals(clients=b, think=0.0, duration=cfg["duration"])
            for pol in (BATCH_POLICIES if not quick else cfg["policies"]):
                s = _run(seqs, pol, "pcie4", 8.0, arr, b)
                rows.append(dict(_pick(s), kind="batch", hardware="pcie4", budget_gb=8.0,
                                 rate="", max_batch=b))
                pb.update(1)
        log("batch sizes done")
    out = Path(out_dir)
    csv_path = common.write_csv(out / f"{NAME}.csv", COLUMNS, rows,
                                sort_by=("kind", "hardware", "budget_gb", "policy", "rate",
                                         "max_batch"))
    common.write_json(common.params_path(csv_path), {
        "figure": NAME, "model": MODEL, "precision": "int4",
        "sources": [common.source_record(s) for s in sources],
        "sequences": [t.name for t in seqs], "duration_s": cfg["duration"],
        "max_batch": MAX_BATCH, "max_tokens": MAX_TOKENS, "scheduler": "continuous",
        "seed": 0, "quick": quick,
        "note": "requests are drawn with replacement from the sequences above: their routing "
                "repeats; decode logs serve their first 32 tokens (at most half) as the prompt",
        "bound": "Belady on the stream of batched groups each run produced, timed with the "
                 "run's schedule (opt_* columns); panel (a) draws the best of them per rate, "
                 "panel (b) LRU's",
    })
    log(f"wrote {csv_path}")
    return csv_path


def _pick(summary: dict) -> dict:
    return {c: summary.get(c) for c in COLUMNS if c in summary}


#: colour, line style, marker per policy (the same in every panel); GreedyDual is LRU at
#: uniform costs, so it is drawn dashed over LRU's line
STYLE = {"lru": ("tab:blue", "-", "o"), "llru": ("tab:green", "-", "^"),
         "lfu": ("tab:brown", "-", "P"), "least-stale": ("tab:orange", "-", "s"),
         "token-match": ("tab:purple", "-", "D"), "greedy-dual": ("black", ":", "x")}
BOUND_LABEL = "Belady, same schedule (best run)"


def _bound(rows, col: str, best) -> list[tuple[float, float]]:
    """Per rate, the best of the Belady replays of every policy's run (each is Belady's hits on
    that run's stream of groups, timed with that run's schedule)."""
    by_rate: dict[float, list[float]] = {}
    for r in rows:
        if r[col] != "":
            by_rate.setdefault(float(r["rate"]), []).append(float(r[col]))
    return sorted((x, best(v)) for x, v in by_rate.items())


def plot(csv_path, out_dir) -> list[Path]:
    """Draw fig_serving.png/.pdf from the CSV alone: per link and budget, p99 TPOT and
    throughput against the rate; then the miss ratio against the batch size."""
    plt = common.pyplot()
    rows = common.read_csv(csv_path)
    rate = [r for r in rows if r["kind"] == "rate"]
    batch = [r for r in rows if r["kind"] == "batch"]
    settings = sorted({(r["hardware"], float(r["budget_gb"])) for r in rate})
    fig, axes = plt.subplots(2, len(settings) + 1, figsize=(3.4 * (len(settings) + 1), 6.2),
                             squeeze=False, layout="constrained")
    policies = list(dict.fromkeys(r["policy"] for r in rate))
    for j, (hw, gb) in enumerate(settings):
        sr = [r for r in rate if r["hardware"] == hw and float(r["budget_gb"]) == gb]
        for i, (col, opt, label) in enumerate((("p99_tpot_ms", "opt_p99_tpot_ms",
                                                "p99 TPOT (ms)"),
                                               ("tokens_per_s", "opt_tokens_per_s",
                                                "output tokens/s"))):
            ax = axes[i][j]
            for pol in policies:
                pts = sorted((float(r["rate"]), float(r[col])) for r in sr
                             if r["policy"] == pol and r[col] != "")
                color, ls, marker = STYLE.get(pol, ("gray", "-", "o"))
                if pts:
                    ax.plot(*zip(*pts, strict=True), ls=ls, marker=marker, color=color, ms=3,
                            lw=1, label=pol + (" (= LRU here)" if pol == "greedy-dual" else ""))
            pts = _bound(sr, opt, min if i == 0 else max)
            if pts:
                ax.plot(*zip(*pts, strict=True), "--", color="red", lw=1, label=BOUND_LABEL)
            cap = sr[0]["capacity"]
            ax.set_title(f"{hw}, {gb:g} GB ({cap} experts)", fontsize=8)
            ax.set_xlabel("arrival rate (requests/s)", fontsize=7)
            ax.set_ylabel(label, fontsize=7)
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=6)
    ax = axes[0][len(settings)]
    for pol in dict.fromkeys(r["policy"] for r in batch):
        pts = sorted((int(r["max_batch"]), float(r["miss_ratio"])) for r in batch
                     if r["policy"] == pol)
        color, ls, marker = STYLE.get(pol, ("gray", "-", "o"))
        ax.plot(*zip(*pts, strict=True), ls=ls, marker=marker, color=color, ms=3, lw=1,
                label=pol)
    pts = sorted((int(r["max_batch"]), float(r["opt_miss_ratio"])) for r in batch
                 if r["policy"] == "lru")
    if pts:
        ax.plot(*zip(*pts, strict=True), "--", color="red", lw=1, label="Belady on LRU's stream")
    ax.set_xscale("log", base=2)
    ax.set_title("miss ratio vs batch size (pcie4, 8 GB)", fontsize=8)
    ax.set_xlabel("clients = max batch", fontsize=7)
    ax.set_ylabel("miss ratio", fontsize=7)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6)
    axes[1][len(settings)].axis("off")
    fig.suptitle("Serving Mixtral-8x7B int4 from one expert cache (continuous batching)",
                 fontsize=10)
    paths = common.save_figure(fig, out_dir, NAME)
    plt.close(fig)
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main(sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
