"""Cache-aware routing: miss rate against retained router mass, and against the cache size.

Pareto panels (cf. Figs. 4 and 8 of "Mixture of Cache-Conditional Experts", Sec. 4): for the
four routing methods of :mod:`paging.routing` (Pruning, Max-Rank, Cumsum, Cache-Prior, each over
its hyper-parameter) with LRU, LLRU and Least-Stale caches of half the pages (the paper's "cache
size set to half the total number of experts"), the miss rate (misses over the trace's K
slots per group, as the paper normalises Pruning) against the retained router mass (a quality
PROXY, not perplexity). Standard routing is the point at mass 1; Belady on the original
requests is a horizontal line, and so is the routing-flexible offline optimum with j = 1 (top-1
kept, any expert of the layer in the other slots: the allowed sets of every method here but
Pruning and Max-Rank j = 0), drawn at its fast upper bound (:mod:`paging.offline.routing_flex`:
a feasible routing scored by Belady; the exact optimum is at or below it; the LP bound of
``paging opt --routing-flex j=1`` meets it on the synthetic panels and is 2 misses below it on
the Mixtral panel: 722 vs 724).

Panels: the first 128 tokens of the longest Mixtral-8x7B HumanEval sequence (top-2 gate
weights only, renormalised: ranks beyond 2 unknown, see :mod:`paging.routing`), and SYNTHETIC
full-logit traces
(:func:`paging.generators.router`, fitted to Mixtral) with K = 2, 4, 8.

Cache-size panels (cf. Fig. 9): per-layer caches of c experts (``-dist`` policies,
k = c·ℓ), LRU, Belady (OPT-DIST) and Cache-Prior + LRU at the largest λ of the grid whose
retained mass stays >= 0.99, 0.95 and 0.90 (the paper's 1/5/10 % perplexity thresholds have no
counterpart without a model; retained mass stands in, named as such).

Run: ``python -m experiments.fig_routing [--out DIR] [--quick] [--trace PATH ...]``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from experiments import common

NAME = "fig_routing"
REAL_TRACES = True
DEFAULT_SOURCES = ("mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl",)
SYNTH = {2: "router:n=8,layers=16,tokens={t},k=2,seed=0",
         4: "router:n=16,layers=8,tokens={t},k=4,seed=0",
         8: "router:n=32,layers=8,tokens={t},k=8,seed=0"}
TOKENS = {2: 250, 4: 150, 8: 80}
POLICIES = ("lru", "llru", "least-stale")
LAMBDAS = (0.1, 0.3, 0.6, 1.0)
TAUS = (0.7, 0.9, 0.95, 0.99)
#: tokens of the Mixtral sequence used (its first ones; the budget of `make figs`)
REAL_TOKENS = 128
THRESHOLDS = (0.99, 0.95, 0.90)
QUICK = {"tokens": {2: 20, 4: 12, 8: 8}, "rounds": 20, "cache": (1, 2, 4)}
COLUMNS = ("panel", "kind", "source", "trace", "K", "n", "k", "policy", "method", "param",
           "slots", "misses", "miss_rate", "retained_mass", "top1_changed", "kl")
#: the routing flexibility of the flex-OPT line: the hooks' top-1 guarantee, any other expert
FLEX = "j=1"
METHODS = ("standard", "pruning", "max-rank", "cumsum", "cache-prior")
STYLE = {"pruning": ("tab:grey", "s"), "max-rank": ("tab:blue", "^"),
         "cumsum": ("tab:green", "D"), "cache-prior": ("tab:purple", "o"),
         "standard": ("black", "*")}


def _specs(K: int, n: int, logits: bool) -> list[tuple[str, str, str]]:
    """(method, parameter label, routing spec) of one panel's sweep."""
    out = [("standard", "", "standard")]
    out += [("pruning", f"j={j}", f"pruning:j={j}") for j in sorted({1, max(1, K // 2)})
            if j < K]
    if logits:
        ms = sorted({min(n, K + d) for d in (1, max(1, (n - K) // 3), max(1, 2 * (n - K) // 3),
                                             n - K)})
        out += [("max-rank", f"m={m}", f"max-rank:j=1,m={m}") for m in ms]
    else:  # top-K only: m beyond K unknown; J = 1 and J = 0
        out += [("max-rank", f"j={j}", f"max-rank:j={j}") for j in (1, 0)]
    out += [("cumsum", f"tau={t:g}", f"cumsum:tau={t:g},j=1") for t in TAUS]
    out += [("cache-prior", f"lambda={lam:g}", f"cache-prior:lambda={lam:g},j=1")
            for lam in LAMBDAS]
    return out


def _panels(traces, quick: bool, log):
    from paging.io import load

    out = []
    for source in common.sources_or_skip(traces, DEFAULT_SOURCES, log) or []:
        seqs = common.load_sequences(source, expand="groups")
        if seqs:
            tr = max(seqs, key=lambda t: t.n_requests)
            keep = QUICK["rounds"] if quick else REAL_TOKENS
            tr = tr.head(keep * tr.layout.n_layers * common.top_k(tr))
            out.append(("real", source, tr))
    toks = QUICK["tokens"] if quick else TOKENS
    for K, spec in SYNTH.items():
        s = spec.format(t=toks[K])
        out.append(("synthetic", s, load(s, expand="groups")[0]))
    return out


def _row(base, policy, method, param, k, res):
    ex = res.extra or {}
    slots = ex.get("slots", res.requests)
    return dict(base, k=k, policy=policy, method=method, param=param, slots=slots,
                misses=res.misses, miss_rate=res.misses / slots,
                retained_mass=ex.get("retained_mass", 1.0),
                top1_changed=ex.get("top1_changed", 0.0), kl=ex.get("kl", 0.0))


def compute(out_dir, *, traces: Sequence[str] | None = None, quick: bool = False,
            progress=None) -> Path:
    """Compute ``out_dir/fig_routing.csv`` (kind ``pareto``: one row per panel, policy and
    routing setting; kind ``size``: one row per panel, cache size and line) and its JSON."""
    from paging import simulate
    from paging.offline.routing_flex import opt_routing_flex

    log = progress or common.Progress("routing")
    rows, panels = [], []
    for panel, (kind, source, tr) in enumerate(_panels(traces, quick, log)):
        lay = tr.layout
        K, n = common.top_k(tr), lay.n_experts
        base = {"panel": panel, "source": source, "trace": tr.name, "K": K, "n": n}
        k = lay.n_pages // 2
        specs = _specs(K, n, tr.logits is not None)
        b = simulate(tr, "belady", k)
        rows.append(dict(_row(base, "belady", "standard", "", k, b), kind="pareto"))
        if tr.score is None and tr.logits is None:  # (a user's trace of expert ids only)
            log(f"panel {panel} ({tr.name}): no router scores, so no routing-flexible OPT "
                "line (it needs a ranking to deviate from)")
        else:
            flex = opt_routing_flex(tr, k, FLEX, method="upper", lp_bound=False)
            rows.append(dict(base, kind="pareto", k=k, policy="opt-flex", method="upper",
                             param=FLEX, slots=flex.requests, misses=flex.misses,
                             miss_rate=flex.misses / flex.requests, retained_mass="",
                             top1_changed="", kl=""))
        for policy in POLICIES:
            for method, param, spec in specs:
                res = simulate(tr, policy, k, routing=spec)
                rows.append(dict(_row(base, policy, method, param, k, res), kind="pareto"))
        log(f"panel {panel} ({tr.name}): Pareto sweep done, k={k}")
        panels.append({"panel": panel, "kind": kind, "source": common.source_record(source)
                       if kind == "real" else source, "trace": tr.name,
                       "requests": tr.n_requests, "K": K, "logits": tr.logits is not None})
        if K != 2:  # Fig. 9 panels: Mixtral and the synthetic K = 2 trace
            continue
        sizes = QUICK["cache"] if quick else (1, 2, 3, 4, 6, 8)
        for c in sizes:
            kk = c * lay.n_layers
            for pol, method in (("lru-dist", "standard"), ("belady-dist", "standard")):
                rows.append(dict(_row(base, pol, method, "", kk, simulate(tr, pol, kk)),
                                 kind="size"))
            for lam in LAMBDAS:
                res = simulate(tr, "lru-dist", kk, routing=f"cache-prior:lambda={lam:g},j=1")
                rows.append(dict(_row(base, "lru-dist", "cache-prior", f"lambda={lam:g}", kk,
                                      res), kind="size"))
        log(f"panel {panel}: cache-size sweep done")
    out = Path(out_dir)
    csv_path = common.write_csv(out / f"{NAME}.csv", COLUMNS, rows,
                                sort_by=("kind", "panel", "policy", "method", "param", "k"))
    common.write_json(common.params_path(csv_path), {
        "figure": NAME,
        "what": "miss rate (misses / K slots) against retained router mass (a proxy), and "
                "against the per-layer cache size",
        "policies": list(POLICIES), "lambdas": list(LAMBDAS), "taus": list(TAUS),
        "thresholds": list(THRESHOLDS), "k_pareto": "half of the pages", "expand": "groups",
        "quick": quick, "panels": panels,
        "flex_opt": f"routing-flexible OPT with {FLEX} (top-1 kept, any expert of the layer in "
                    "the other slots): the fast upper bound (a feasible routing scored by "
                    "Belady), so the true optimum is at or below the line",
    })
    log(f"wrote {csv_path}")
    return csv_path


def best_under(rows, threshold: float) -> dict[int, float]:
    """Cache-size panel rows -> {k: lowest Cache-Prior miss rate with retained mass >=
    threshold} (λ = 0 is standard routing, always admissible)."""
    out: dict[int, float] = {}
    for r in rows:
        k = int(r["k"])
        if r["method"] == "cache-prior" and float(r["retained_mass"]) >= threshold:
            out[k] = min(out.get(k, 1.0), float(r["miss_rate"]))
        elif r["method"] == "standard" and r["policy"] == "lru-dist":
            out[k] = min(out.get(k, 1.0), float(r["miss_rate"]))
    return out


def plot(csv_path, out_dir) -> list[Path]:
    """Draw fig_routing.png/.pdf from the CSV alone: a row of Pareto panels per cache policy,
    then the cache-size panels."""
    plt = common.pyplot()
    rows = common.read_csv(csv_path)
    par = [r for r in rows if r["kind"] == "pareto"]
    size = [r for r in rows if r["kind"] == "size"]
    panels = sorted({int(r["panel"]) for r in par})
    spanels = sorted({int(r["panel"]) for r in size})
    ncol = max(len(panels), len(spanels), 1)
    fig, axes = plt.subplots(len(POLICIES) + 1, ncol, figsize=(3.6 * ncol, 3.0 * 4),
                             squeeze=False, layout="constrained")
    for i, policy in enumerate(POLICIES):
        for j, panel in enumerate(panels):
            ax = axes[i][j]
            pr = [r for r in par if int(r["panel"]) == panel]
            for method in METHODS:
                pts = sorted((float(r["retained_mass"]), float(r["miss_rate"])) for r in pr
                             if r["policy"] == policy and r["method"] in (method, "standard"))
                if method == "standard":
                    pts = [(float(r["retained_mass"]), float(r["miss_rate"])) for r in pr
                           if r["policy"] == policy and r["method"] == "standard"]
                color, marker = STYLE[method]
                ax.plot(*zip(*pts, strict=True), "-" if method != "standard" else "", color=color,
                        marker=marker, ms=4, lw=1, label=method)
            opt = next(float(r["miss_rate"]) for r in pr if r["policy"] == "belady")
            ax.axhline(opt, color="red", ls="--", lw=1, label="Belady (original requests)")
            flex = [float(r["miss_rate"]) for r in pr if r["policy"] == "opt-flex"]
            if flex:  # (none for a trace without router scores)
                ax.axhline(flex[0], color="black", ls=":", lw=1,
                           label=f"routing-flex OPT ≤ ({FLEX}, upper bound)")
            r0 = pr[0]
            ax.set_title(f"{policy}, k={r0['k']}: {r0['trace'][:40]}\nK={r0['K']}",
                         fontsize=7)
            ax.set_xlabel("retained router mass (proxy)", fontsize=7)
            ax.set_ylabel("miss rate", fontsize=7)
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=6)
    for j in range(ncol):
        ax = axes[len(POLICIES)][j]
        if j >= len(spanels):
            ax.axis("off")
            continue
        sr = [r for r in size if int(r["panel"]) == spanels[j]]
        for pol, color, label in (("lru-dist", "black", "LRU"),
                                  ("belady-dist", "red", "Belady (OPT-DIST)")):
            pts = sorted((int(r["k"]), float(r["miss_rate"])) for r in sr
                         if r["policy"] == pol and r["method"] == "standard")
            ax.plot(*zip(*pts, strict=True), "-o", color=color, ms=3, label=label)
        for th, shade in zip(THRESHOLDS, ("#c9a0dc", "#9b59b6", "#5b2c6f"), strict=True):
            best = best_under(sr, th)
            ks = sorted(best)
            ax.plot(ks, [best[k] for k in ks], "-s", color=shade, ms=3,
                    label=f"Cache-Prior+LRU, mass >= {th:g}")
        ax.set_title(f"cache size: {sr[0]['trace'][:40]}", fontsize=7)
        ax.set_xlabel("k = experts per layer × ℓ", fontsize=7)
        ax.set_ylabel("miss rate", fontsize=7)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    fig.suptitle("Cache-aware routing (miss rate vs retained mass; vs cache size)", fontsize=10)
    paths = common.save_figure(fig, out_dir, NAME)
    plt.close(fig)
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main(sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
