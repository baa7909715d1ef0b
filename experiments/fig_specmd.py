"""SpecMD's figures on our traces (Hoang et al., SpecMD / Least-Stale, Sec. 5-6 and App. B).

Four panels, all from the one simulator (:func:`paging.simulate.simulate`) and, for the timed
ones, the cost model's timeline (:func:`paging.cost.timeline.timeline_run`):

(a) ``collisions`` / ``collisions-layer`` (SpecMD Figs. 4/8 and 5/9): misses and collision
    misses (a miss on a page evicted earlier in the same forward pass) of FLD, score-based (SB),
    LRU and Least-Stale with a cache of 1 %, 5 % and 25 % of the n·ℓ experts (k pages, at least
    K), no prefetching, on every sequence of the Mixtral decode log (groups mode: the K experts
    of a token and layer are requested together and a forward pass is a token, as in SpecMD).
    The per-layer collision counts are recounted here from the run's eviction log and hit mask
    (:func:`collisions_by_layer`), not read from the simulator.
(b) ``prefetch`` (Fig. 6): prefetch precision, recall, hit rate and the synchronous overhead
    (stall time of the timeline: time spent waiting on transfers) for the predictors
    ``oracle`` at three precision = recall levels, ``previous-token``, ``frequency`` and
    ``transition`` (fitted on the *other* sequences of the sources, never the simulated one),
    top-k 1.0; transition also with top-k 1.5 and the 80th-percentile strategy. LRU eviction,
    5 % capacity (13 experts), int4, ``link-5gbps``, on the prefill+decode dump (batched
    prefill).
(c) ``miss`` (Fig. 7): the miss handlers ``fetch``, ``fetch-lowest-bit`` (int8/int4),
    ``fetch-priority`` (int8 -> int4 -> int2, default score cuts), ``drop:rank=1`` and
    ``substitute``: quality proxies (dropped gate mass, substituted requests, share of groups
    whose top-1 changed, share of fetches below int8) against TTFT and tokens/s. LRU, no
    prefetching, int8 (the paper's Mixtral setting for Fig. 7) at SpecMD's 4.35 GB budget.
(d) ``table2`` (Table 2): TTFT of LRU-based configurations and the same with Least-Stale
    dropped in: Eliseev & Mazur (speculative prefetch, here ``transition`` top-k 1.0, LRU,
    fetch), MixtureCache without its routing change (no prefetch, LRU, fetch; routed runs are
    not timed by the cost model) and a perfect-oracle prefetcher, on ``mixtral-8x7b`` int4,
    ``link-5gbps``, at SpecMD's 4.35 GB (43 experts at int4) and at 5 % and 25 % of the experts.

No sampling of tokens: every request of every sequence is simulated (the whole figure takes
about 15 s, most of it compiling kernels). Everything is deterministic (the oracle's seed is 0).

Run: ``python -m experiments.fig_specmd [--out DIR] [--quick] [--trace PATH ...]``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from experiments import common

NAME = "fig_specmd"
REAL_TRACES = True
DEFAULT_SOURCES = (
    "mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl",
    "mixtral-8x7b-instruct-vllm/humaneval_p0_prefill_decode_raw.jsonl",
)
MODEL = "mixtral-8x7b"
MIXTRAL_LAYOUT = (32, 8)
HARDWARE = "link-5gbps"
CAPACITIES = (1, 5, 25)  # % of the n·ℓ experts
COLLISION_POLICIES = ("fld", "score-based", "lru", "least-stale")
PREFETCHERS = (  # (predictor, strategy)
    ("oracle:precision=1,recall=1,seed=0", "topk:overfetch=1"),
    ("oracle:precision=0.8,recall=0.8,seed=0", "topk:overfetch=1"),
    ("oracle:precision=0.5,recall=0.5,seed=0", "topk:overfetch=1"),
    ("previous-token", "topk:overfetch=1"),
    ("frequency", "topk:overfetch=1"),
    ("transition", "topk:overfetch=1"),
    ("transition", "topk:overfetch=1.5"),
    ("transition", "percentile:p=80"),
)
PREFETCH_SETTING = {"policy": "lru", "capacity_pct": 5, "precision": "int4"}
MISS_HANDLERS = ("fetch", "fetch-lowest-bit", "fetch-priority", "drop:rank=1", "substitute")
MISS_SETTING = {"policy": "lru", "precision": "int8", "budget_gb": 4.35}
SPECMD_BUDGET_GB = 4.35
TABLE2_CONFIGS = (  # (name, prefetch predictor or None, strategy)
    ("Eliseev '23 (transition prefetch)", "transition", "topk:overfetch=1"),
    ("MixtureCache '25 without routing change (no prefetch)", None, None),
    ("perfect oracle prefetch", "oracle:precision=1,recall=1,seed=0", "topk:overfetch=1"),
)
TABLE2_PRECISION = "int4"
QUICK_TOKENS = 8
COLUMNS = ("panel", "source", "trace", "precision", "hardware", "capacity_pct", "capacity",
           "budget_gb", "config", "policy", "prefetch", "strategy", "miss", "layer", "requests",
           "misses", "hits", "hit_rate", "collision_misses", "collision_rate", "prefetches",
           "prefetch_useful", "prefetch_late", "prefetch_precision", "prefetch_recall",
           "dropped", "dropped_mass", "dropped_mass_share", "substituted", "top1_changed_share",
           "low_precision_fetches", "stall_ms", "ttft_ms", "tokens_per_s", "decode_tokens")


def collisions_by_layer(trace, result) -> tuple[np.ndarray, np.ndarray]:
    """Misses and collision misses per layer, recounted from a recorded default run
    (``simulate(..., record=True)``): request t misses when ``hit_mask[t]`` is False; it is a
    collision when its page's last eviction (``result.evictions`` rows (t', page), t' < t)
    fell in t's forward pass (``steps // ℓ``, as the simulator counts passes)."""
    L, n = trace.layout.n_layers, trace.layout.n_experts
    passes = np.asarray(trace.steps, dtype=np.int64) // L
    pages = np.asarray(trace.pages, dtype=np.int64)
    hit = np.asarray(result.hit_mask, dtype=bool)
    ev = np.asarray(result.evictions, dtype=np.int64).reshape(-1, 2)
    order = np.argsort(ev[:, 0], kind="stable")
    ev_t, ev_p = ev[order, 0].tolist(), ev[order, 1].tolist()
    last = np.full(trace.layout.n_pages, -1, dtype=np.int64)
    misses, coll = np.zeros(L, np.int64), np.zeros(L, np.int64)
    j = 0
    for t in range(trace.n_requests):
        while j < len(ev_t) and ev_t[j] < t:
            last[ev_p[j]] = passes[ev_t[j]]
            j += 1
        if not hit[t]:
            p = pages[t]
            misses[p // n] += 1
            if last[p] == passes[t]:
                coll[p // n] += 1
    return misses, coll


def _quick_cut(trace, tokens: int):
    """The prefill (if any) and the first ``tokens`` decode tokens of a sequence."""
    tok = trace.token if trace.token is not None else trace.passes
    bounds = trace.meta.get("phase_bounds") or {}
    pre = int(bounds.get("prefill", [0, 0])[1])
    if pre >= trace.n_requests:
        return trace
    cut = int(np.searchsorted(tok, tok[pre] + tokens))
    out = trace.head(cut)
    if bounds:
        out.meta["phase_bounds"] = {"prefill": [0, pre], "decode": [pre, cut]}
    return out


def _capacity(pct: float, trace) -> int:
    """k for ``pct`` % of the n·ℓ experts, at least K (a group must fit)."""
    return max(common.top_k(trace), round(pct / 100 * trace.layout.n_pages))


def _prefetcher(spec, strategy, train):
    from paging.predict.prefetch import Prefetcher, make_predictor, make_strategy

    if spec is None:
        return None
    return Prefetcher(make_predictor(spec, train if spec == "transition" else None),
                      make_strategy(strategy))


def _timed(trace, batch, policy, *, precision, budget, prefetch=None, miss=None):
    """One run on the cost model: counters and timeline fields."""
    from paging.cost import get_hardware, get_model, get_precision, page_costs, page_sizes
    from paging.cost.timeline import timeline_run
    from paging.miss import cascade_weights, make_miss
    from paging.simulate import simulate

    model, hw, prec = get_model(MODEL), get_hardware(HARDWARE), get_precision(precision)
    tiers = np.zeros(trace.layout.n_pages, np.int8)
    sizes, fetch = page_sizes(model, prec), page_costs(model, prec, hw, tiers)
    handler = make_miss(miss, precision) if miss not in (None, "fetch") else None
    if handler is not None and handler.uses_levels:
        handler = cascade_weights(handler, model, hw, tiers)
    r = simulate(trace, policy, budget=budget, costs=fetch, sizes=sizes, record=True,
                 prefetch=prefetch, miss=handler)
    tm = timeline_run(trace, r, model=model, precision=prec, hardware=hw, fetch_ms=fetch,
                      sizes=sizes, batch=batch)
    x = r.extra or {}
    levels = x.get("fetch_levels") or {}
    low = sum(int(v) for v in list(levels.values())[1:])  # keys in level order, level 0 first
    mass = float(np.sum(trace.score)) if trace.score is not None else 0.0
    dm = x.get("dropped_mass") or 0.0
    return {"capacity": budget // int(sizes[0]), "budget_gb": budget / 1e9,
            "requests": r.requests, "misses": r.misses, "hits": r.hits,
            "hit_rate": r.hits / r.requests if r.requests else 0.0,
            "collision_misses": r.collision_misses,
            "collision_rate": r.collision_misses / r.requests if r.requests else 0.0,
            "prefetches": x.get("prefetches", 0), "prefetch_useful": x.get("prefetch_useful", 0),
            "prefetch_late": getattr(tm, "prefetch_late", 0),
            "prefetch_precision": x.get("prefetch_precision", ""),
            "prefetch_recall": x.get("prefetch_recall", ""),
            "dropped": r.dropped, "dropped_mass": dm,
            "dropped_mass_share": dm / mass if mass else 0.0,
            "substituted": r.substituted, "top1_changed_share": x.get("top1_changed_share", 0.0),
            "low_precision_fetches": low, "stall_ms": tm.stall_ms, "ttft_ms": tm.ttft_ms,
            "tokens_per_s": tm.tokens_per_s, "decode_tokens": tm.decode_tokens}


def compute(out_dir, *, traces: Sequence[str] | None = None, quick: bool = False,
            progress=None) -> Path | None:
    """Compute ``out_dir/fig_specmd.csv`` (+ JSON); None when no real trace is available."""
    from paging.cost import budget_bytes, get_model, get_precision, page_sizes
    from paging.cost.timeline import batch_prefill
    from paging.io import load
    from paging.simulate import simulate

    log = progress or common.Progress(NAME)
    sources = common.sources_or_skip(traces, DEFAULT_SOURCES, log)
    if sources is None:
        return None
    seqs = []  # (source, trace): groups mode, SpecMD's view (a pass = a token)
    for source in sources:
        for tr in load(source, expand="groups"):
            if quick:
                tr = _quick_cut(tr, QUICK_TOKENS)
            if tr.n_requests:
                seqs.append((source, tr))
    rows, runs = [], []
    # (a) collision misses, no prefetching, k pages
    for source, tr in seqs:
        runs.append(dict(common.sequence_record(tr), source=source))
        if "phase_bounds" in tr.meta and tr.meta["phase_bounds"].get("prefill", [0, 0])[1]:
            continue  # the decode log only: a prefill pass is timed in (b)-(d)
        base = {"source": source, "trace": tr.name}
        for pct in CAPACITIES:
            k = _capacity(pct, tr)
            for pol in COLLISION_POLICIES:
                if pol == "score-based" and tr.score is None:
                    continue
                r = simulate(tr, pol, k, record=True)
                m, c = collisions_by_layer(tr, r)
                rows.append(dict(base, panel="collisions", capacity_pct=pct, capacity=k,
                                 policy=pol, requests=r.requests, misses=r.misses, hits=r.hits,
                                 hit_rate=r.hits / r.requests,
                                 collision_misses=r.collision_misses,
                                 collision_rate=r.collision_misses / r.requests))
                for layer in range(tr.layout.n_layers):
                    rows.append(dict(base, panel="collisions-layer", capacity_pct=pct,
                                     capacity=k, policy=pol, layer=layer, misses=int(m[layer]),
                                     collision_misses=int(c[layer])))
        log(f"  collisions: {tr.name} ({tr.n_requests} requests)")
    # (b)-(d): the Mixtral sequences, batched prefill, on the cost model
    mix = [(s, t) for s, t in seqs if (t.layout.n_layers, t.layout.n_experts) == MIXTRAL_LAYOUT]
    model = get_model(MODEL)
    for source, tr in mix:
        if not (tr.meta.get("phase_bounds") or {}).get("prefill", [0, 0])[1]:
            continue  # TTFT needs a prefill: the prefill+decode dump
        train = [t for _, t in mix if t is not tr]
        trace, batch = batch_prefill(tr)
        base = {"source": source, "trace": tr.name, "hardware": HARDWARE}

        def bud(pct, q, tr=tr):
            return int(round(pct / 100 * tr.layout.n_pages)) * int(
                page_sizes(model, get_precision(q))[0])

        q = PREFETCH_SETTING["precision"]
        for spec, strat in PREFETCHERS:
            if spec == "transition" and not train:
                log("  prefetch: transition skipped (no other sequence to fit it on)")
                continue
            out = _timed(trace, batch, PREFETCH_SETTING["policy"], precision=q,
                         budget=bud(PREFETCH_SETTING["capacity_pct"], q),
                         prefetch=_prefetcher(spec, strat, train))
            rows.append(dict(base, **out, panel="prefetch", precision=q,
                             capacity_pct=PREFETCH_SETTING["capacity_pct"],
                             policy=PREFETCH_SETTING["policy"], prefetch=spec, strategy=strat,
                             miss="fetch"))
        q = MISS_SETTING["precision"]
        for miss in MISS_HANDLERS:
            out = _timed(trace, batch, MISS_SETTING["policy"], precision=q,
                         budget=budget_bytes(MISS_SETTING["budget_gb"]), miss=miss)
            rows.append(dict(base, **out, panel="miss", precision=q, config="SpecMD budget",
                             policy=MISS_SETTING["policy"], miss=miss))
        q = TABLE2_PRECISION
        budgets = [("SpecMD 4.35 GB", budget_bytes(SPECMD_BUDGET_GB))] + [
            (f"{p}% of experts", bud(p, q)) for p in (5, 25)]
        for label, budget in budgets:
            for cname, spec, strat in TABLE2_CONFIGS:
                if spec == "transition" and not train:
                    continue
                for pol in ("lru", "least-stale"):
                    out = _timed(trace, batch, pol, precision=q, budget=budget,
                                 prefetch=_prefetcher(spec, strat, train))
                    pct = {"SpecMD 4.35 GB": ""}.get(label, label.split("%")[0])
                    rows.append(dict(base, **out, panel="table2", precision=q,
                                     capacity_pct=pct, config=f"{cname} @ {label}", policy=pol,
                                     prefetch=spec or "", strategy=strat or "", miss="fetch"))
            log(f"  table2 at {label}: done")
    if not rows:
        log("skipped: no sequence to plot")
        return None
    out = Path(out_dir)
    # every column in every row ("" when it does not apply); rows stay in the order made
    # (deterministic: panel, sequence, capacity or budget, policy, layer)
    table = [dict({c: "" for c in COLUMNS}, **r, _i=i) for i, r in enumerate(rows)]
    csv_path = common.write_csv(out / f"{NAME}.csv", COLUMNS, table, sort_by=("_i",))
    common.write_json(common.params_path(csv_path), {
        "figure": NAME,
        "paper": "SpecMD (Least-Stale), Figs. 4-9 and Table 2 (../shared/papers/"
                 "specmd_least-stale.txt)",
        "model": MODEL, "hardware": HARDWARE, "capacities_pct": list(CAPACITIES),
        "collision_policies": list(COLLISION_POLICIES),
        "prefetchers": [list(p) for p in PREFETCHERS], "prefetch_setting": PREFETCH_SETTING,
        "miss_handlers": list(MISS_HANDLERS), "miss_setting": MISS_SETTING,
        "table2": {"configs": [c[0] for c in TABLE2_CONFIGS], "precision": TABLE2_PRECISION,
                   "budgets": ["4.35 GB", "5% of experts", "25% of experts"]},
        "order": "collisions: groups mode, no prefetch; timed panels: batched prefill "
                 "(paging.cost.timeline.batch_prefill)",
        "sampling": f"none (quick: prefill + {QUICK_TOKENS} decode tokens)" if quick else
                    "none: every request of every sequence",
        "sources": [common.source_record(s) for s in sources], "sequences": runs,
        "quick": quick, "seeds": "oracle seed 0; everything else deterministic",
    })
    summarize(rows, log)
    log(f"wrote {csv_path}")
    return csv_path


def summarize(rows, log) -> None:
    """The README's numbers: collision rates, prefetch points, miss handlers, Table 2."""
    col = [r for r in rows if r["panel"] == "collisions"]
    for pct in CAPACITIES:
        parts = []
        for pol in COLLISION_POLICIES:
            sel = [r for r in col if r["capacity_pct"] == pct and r["policy"] == pol]
            if sel:
                req = sum(r["requests"] for r in sel)
                parts.append(f"{pol} {sum(r['collision_misses'] for r in sel) / req:.2%} "
                             f"(miss {sum(r['misses'] for r in sel) / req:.1%})")
        log(f"collision rate at {pct}%: " + ", ".join(parts))
    for r in rows:
        if r["panel"] == "prefetch":
            log(f"prefetch {r['prefetch']} {r['strategy']}: P {r['prefetch_precision']:.3f} "
                f"R {r['prefetch_recall']:.3f} hit {r['hit_rate']:.3f} stall "
                f"{r['stall_ms']:.0f} ms TTFT {r['ttft_ms']:.0f} ms")
        elif r["panel"] == "miss":
            log(f"miss {r['miss']}: TTFT {r['ttft_ms']:.0f} ms, {r['tokens_per_s']:.3f} tok/s, "
                f"dropped mass share {r['dropped_mass_share']:.4f}, "
                f"substituted {r['substituted']}, "
                f"low-precision fetches {r['low_precision_fetches']}/{r['misses']}")
        elif r["panel"] == "table2":
            log(f"table2 {r['config']} {r['policy']}: TTFT {r['ttft_ms']:.0f} ms, "
                f"{r['tokens_per_s']:.3f} tok/s, misses {r['misses']}")


def plot(csv_path, out_dir) -> list[Path]:
    """fig_specmd.png/.pdf from the CSV alone: (a) collision and total miss rates per policy and
    capacity, (a') per-layer collision rates, (b) prefetch hit rate vs stall, (c) miss handlers'
    proxy vs TTFT, (d) Table 2 TTFT bars."""
    plt = common.pyplot()
    rows = common.read_csv(csv_path)
    fig, axes = plt.subplots(2, 3, figsize=(16, 8.5), layout="constrained")
    labels = {"fld": "FLD", "score-based": "SB", "lru": "LRU", "least-stale": "LS"}
    colors = {"fld": "tab:green", "score-based": "tab:purple", "lru": "tab:blue",
              "least-stale": "tab:red"}

    def f(r, c):
        return float(r[c]) if r[c] != "" else np.nan

    col = [r for r in rows if r["panel"] == "collisions"]
    ax = axes[0, 0]
    caps = sorted({int(r["capacity_pct"]) for r in col})
    pols = [p for p in COLLISION_POLICIES if any(r["policy"] == p for r in col)]
    w = 0.8 / max(1, len(pols))
    for i, pol in enumerate(pols):
        tot, cm = [], []
        for c in caps:
            sel = [r for r in col if r["policy"] == pol and int(r["capacity_pct"]) == c]
            req = sum(f(r, "requests") for r in sel) or np.nan
            tot.append(sum(f(r, "misses") for r in sel) / req)
            cm.append(sum(f(r, "collision_misses") for r in sel) / req)
        x = np.arange(len(caps)) + (i - (len(pols) - 1) / 2) * w
        ax.bar(x, tot, w, color="lightgrey", edgecolor=colors[pol])
        ax.bar(x, cm, w, color=colors[pol], label=labels[pol])
    ax.set_xticks(np.arange(len(caps)), [f"{c}%" for c in caps])
    ax.set_xlabel("capacity (% of the n·ℓ experts)")
    ax.set_ylabel("rate per request (grey: all misses)")
    ax.set_title("(a) collision misses (SpecMD Figs. 4/8)", fontsize=9)
    ax.legend(fontsize=7)
    lay = [r for r in rows if r["panel"] == "collisions-layer"]
    ax = axes[0, 1]
    reqs = {}
    for r in col:
        key = (r["policy"], r["capacity_pct"])
        reqs[key] = reqs.get(key, 0) + f(r, "requests")
    for c, ls in zip(caps, ("-", "--", ":"), strict=False):
        for pol in pols:
            sel = [r for r in lay if r["policy"] == pol and int(r["capacity_pct"]) == c]
            if not sel:
                continue
            L = max(int(r["layer"]) for r in sel) + 1
            y = np.zeros(L)
            for r in sel:
                y[int(r["layer"])] += f(r, "collision_misses")
            y /= reqs[(pol, str(c))] / L  # per layer: collisions / requests of the layer
            ax.plot(range(L), y, ls=ls, color=colors[pol],
                    label=f"{labels[pol]} {c}%" if c == caps[0] or pol == pols[0] else None)
    ax.set_xlabel("layer")
    ax.set_ylabel("collision rate (per request of the layer)")
    ax.set_title("(a') per-layer collisions (Figs. 5/9); - 1%, -- 5%, : 25%", fontsize=9)
    ax.legend(fontsize=6, ncol=2)
    pre = [r for r in rows if r["panel"] == "prefetch"]
    ax = axes[0, 2]
    for r in pre:
        ax.plot(f(r, "prefetch_recall"), f(r, "prefetch_precision"), "o")
        ax.annotate(f"{r['prefetch'].split(',seed')[0]} {r['strategy']}", (f(r, "prefetch_recall"),
                    f(r, "prefetch_precision")), fontsize=5)
    ax.set_xlabel("prefetch recall")
    ax.set_ylabel("prefetch precision")
    ax.set_title("(b) prefetch precision vs recall (Fig. 6 left), LRU 5%, int4", fontsize=9)
    ax = axes[1, 0]
    for r in pre:
        ax.plot(f(r, "stall_ms") / 1e3, f(r, "hit_rate"), "s")
        ax.annotate(f"{r['prefetch'].split(',seed')[0]} {r['strategy']}",
                    (f(r, "stall_ms") / 1e3, f(r, "hit_rate")), fontsize=5)
    ax.set_xlabel("synchronous overhead: stall time (s)")
    ax.set_ylabel("hit rate")
    ax.set_title("(b) hit rate vs synchronous overhead (Fig. 6 right)", fontsize=9)
    ms = [r for r in rows if r["panel"] == "miss"]
    ax = axes[1, 1]
    for r in ms:
        req = f(r, "requests")
        proxy = (f(r, "dropped") + f(r, "substituted") + f(r, "low_precision_fetches")) / req
        ax.plot(f(r, "ttft_ms") / 1e3, proxy, "D")
        ax.annotate(r["miss"], (f(r, "ttft_ms") / 1e3, proxy), fontsize=6)
    ax.set_xlabel("TTFT (s)")
    ax.set_ylabel("degraded requests / requests (dropped, substituted, < int8)")
    ax.set_title("(c) miss handlers: quality proxy vs speed (Fig. 7), LRU int8 4.35 GB",
                 fontsize=9)
    t2 = [r for r in rows if r["panel"] == "table2"]
    ax = axes[1, 2]
    cfgs = list(dict.fromkeys(r["config"] for r in t2))
    for i, pol in enumerate(("lru", "least-stale")):
        y = [np.mean([f(r, "ttft_ms") for r in t2 if r["config"] == c and r["policy"] == pol])
             for c in cfgs]
        ax.barh(np.arange(len(cfgs)) + (i - 0.5) * 0.4, np.asarray(y) / 1e3, 0.4,
                color=colors[pol], label=labels[pol])
    ax.set_yticks(np.arange(len(cfgs)), [c.replace(" @ ", "\n@ ") for c in cfgs], fontsize=5)
    ax.set_xlabel("TTFT (s)")
    ax.set_title("(d) Table 2: Least-Stale in LRU configs (int4, 5 GB/s)", fontsize=9)
    ax.legend(fontsize=7)
    for a in axes.flat:
        a.grid(alpha=0.3)
    fig.suptitle("SpecMD on the Mixtral traces (cost model + timeline; quality proxies only)",
                 fontsize=10)
    paths = common.save_figure(fig, out_dir, NAME)
    plt.close(fig)
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main(sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
