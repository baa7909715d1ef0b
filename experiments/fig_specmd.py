"""SpecMD's figures on our traces (Hoang et al., SpecMD / Least-Stale, Sec. 5-6 and App. B).

Four panels, all from the one simulator (:func:`paging.simulate.simulate`) and, for the timed
ones, the cost model's timeline (:func:`paging.cost.timeline.timeline_run`):

(a) ``collisions`` / ``collisions-layer`` (SpecMD Figs. 4/8 and 5/9): misses and collision
    misses (a miss on a page evicted earlier in the same forward pass) of FLD (plain and cyclic
    distance), score-based (SB), LRU and Least-Stale (the paper's left rule, App. A.3's
    upcoming-layers reading and the two-queue reading) with a cache of 1 %, 5 % and
    25 % of the model's 16-bit bytes in int4 experts (9, 47, 235 for Mixtral; at least K), no
    prefetching, on every sequence of the Mixtral decode log and the granite trace (groups mode:
    the K experts of a token and layer are requested together and a pass is a token).
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
    prefetching, int8 (the paper's Mixtral setting for Fig. 7) at 5 % of the model.
(d) ``table2`` (Table 2): TTFT of LRU-based configurations and the same with Least-Stale
    dropped in (both readings): Eliseev & Mazur (a per-layer LRU with speculative prefetch,
    here ``transition`` top-k 1.0), MixtureCache without its routing change (no prefetch, LRU;
    routed runs are not timed by the cost model) and a perfect-oracle prefetcher, on
    ``mixtral-8x7b`` int4, ``link-5gbps``, at 1 %, 5 % and 25 % of the model's 16-bit bytes,
    cold (an empty cache) and warm (the dump served right after the decode log's problem 1).
(e) ``prompt``: TTFT against the prompt's length (the dump's first 8, 16, 32 and all prompt
    tokens, then its decode), LRU and Least-Stale without prefetch, per-layer LRU and
    Least-Stale with transition prefetch, cold and warm, 5 %.

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
    "granite-3.0-1b-a400m-instruct/moe_expert_trace.json",
)
COLLISION_PRECISION = "int4"  # the experts held in the cache (SpecMD Table 1's "4bit")
MODEL = "mixtral-8x7b"
MIXTRAL_LAYOUT = (32, 8)
HARDWARE = "link-5gbps"
CAPACITIES = (1, 5, 25)  # % of the model's 16-bit bytes (experts of its layout otherwise)
#: both readings of FLD and Least-Stale (paging.policies.layered), the paper's first
COLLISION_POLICIES = ("fld", "fld-cyclic", "score-based", "lru", "least-stale",
                      "least-stale-upcoming", "least-stale-layer")
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
MISS_SETTING = {"policy": "lru", "precision": "int8", "capacity_pct": 5}
TABLE2_CONFIGS = (  # (name, its own eviction, prefetch predictor or None, strategy)
    # Eliseev & Mazur 2023 evict within a layer's group of cached experts: a per-layer LRU
    ("Eliseev '23 (per-layer LRU, transition prefetch)", "lru-dist", "transition",
     "topk:overfetch=1"),
    ("MixtureCache '25 without routing change (LRU, no prefetch)", "lru", None, None),
    ("perfect oracle prefetch (LRU)", "lru", "oracle:precision=1,recall=1,seed=0",
     "topk:overfetch=1"),
)
#: Least-Stale dropped in (Table 2): the paper's reading and App. A.3's
TABLE2_LS = ("least-stale", "least-stale-upcoming")
PROMPT_TOKENS = (8, 16, 32, None)  # the prompt-length sweep of TTFT; None: the whole prompt
#: per-token overheads tried in panel (f) (no paper gives one: assumptions to see their effect)
SENSITIVITY_OVERHEADS_MS = (5.0, 20.0)
PROMPT_CONFIGS = (("lru", None), ("least-stale", None), ("lru-dist", "transition"),
                  ("least-stale", "transition"))
TABLE2_PRECISION = "int4"
QUICK_TOKENS = 8
COLUMNS = ("panel", "source", "trace", "precision", "hardware", "capacity_pct", "capacity",
           "budget_gb", "config", "policy", "prefetch", "strategy", "miss", "warm", "variant",
           "prompt_tokens", "layer", "requests",
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
    """k for SpecMD's ``pct`` % capacity: the int4 experts that fit in ``pct`` % of the 16-bit
    bytes of the trace's model (:func:`paging.cost.share_budget`) when its layout is a
    preset's, else ``pct`` % of the n·ℓ experts; at least K (a group must fit)."""
    from paging.cost import capacity_pages, get_model, share_budget

    name = common.preset_for(trace.layout)  # (SpecMD Sec. 5.1's shares of "full model size")
    if name is None:
        k = round(pct / 100 * trace.layout.n_pages)
    else:
        m = get_model(name)
        k = capacity_pages(share_budget(m, pct), m, COLLISION_PRECISION)
    return min(trace.layout.n_pages, max(common.top_k(trace), k))


def _prompt_prefix(trace, tokens: int):
    """The sequence with only its first ``tokens`` prompt tokens (then its whole decode):
    what a shorter prompt would have routed, as far as this recording says."""
    from paging.trace import Trace

    tok = np.asarray(trace.token if trace.token is not None else trace.passes)
    bounds = trace.meta.get("phase_bounds") or {}
    pre = int(bounds.get("prefill", [0, 0])[1])
    n_prompt = int(np.unique(tok[:pre]).size) if pre else 0
    if not pre or tokens >= n_prompt:
        return trace
    first = np.unique(tok[:pre])[tokens]
    keep = (tok < first) | (np.arange(tok.size) >= pre)
    new_tok = np.unique(tok[keep], return_inverse=True)[1].astype(np.int64)
    L = trace.layout.n_layers
    layers = np.asarray(trace.layers)[keep]
    steps = new_tok * L + layers if trace.expand == "groups" else np.arange(int(keep.sum()))
    cut = int(np.count_nonzero(keep[:pre]))
    meta = {k: v for k, v in trace.meta.items() if k not in ("rows", "phases")}
    meta["phase_bounds"] = {"prefill": [0, cut], "decode": [cut, int(keep.sum())]}
    meta["prompt_tokens"] = tokens

    def sel(a):
        return None if a is None else np.asarray(a)[keep]

    return Trace(trace.layout, trace.pages[keep], steps, f"{trace.name} (prompt {tokens})",
                 new_tok, sel(trace.rank), sel(trace.score), trace.expand, meta)


def _timed(seq, policy, *, precision, budget, prefetch=None, strategy=None, train=None,
           miss=None, before=()):
    """One run of ``seq`` (batched prefill) on the cost model, as a
    :class:`~paging.run.RunSpec`: counters and timeline fields. ``before``: sequences served
    first through the same cache (a warm run, :mod:`paging.warm`); the fields then describe
    ``seq`` alone (its misses, TTFT and decode rate; prefetch counters are left out)."""
    from paging.cost.timeline import batch_prefill
    from paging.run import RunSpec, run

    spec = RunSpec(policy, budget=budget, model=MODEL, precision=precision, hardware=HARDWARE,
                   prefill="batched", prefetch=prefetch, prefetch_strategy=strategy, miss=miss,
                   warm=bool(before))
    rows = run(spec, [*before, seq], train=train if prefetch == "transition" else None)
    base = {"capacity": rows[-1]["capacity"], "budget_gb": budget / 1e9}
    if before:
        r = next(r for r in rows if r.get("position") == len(before))
        return dict(base, warm="yes", requests=r["requests"], misses=r["misses"],
                    hits=r["hits"], hit_rate=r["hits"] / r["requests"], ttft_ms=r["ttft_ms"],
                    tokens_per_s=r["tokens_per_s"], decode_tokens=r["decode_tokens"])
    (r,) = rows
    levels = r.get("fetch_levels") or {}
    low = sum(int(v) for v in list(levels.values())[1:])  # keys in level order, level 0 first
    score = batch_prefill(seq)[0].score  # the gate mass of the requests as served
    mass = float(np.sum(score)) if score is not None else 0.0
    dm = r.get("dropped_mass") or 0.0
    req = r["requests"]
    return dict(base, **{
            "warm": "no", "requests": req, "misses": r["misses"], "hits": r["hits"],
            "hit_rate": r["hits"] / req if req else 0.0,
            "collision_misses": r["collision_misses"],
            "collision_rate": r["collision_misses"] / req if req else 0.0,
            "prefetches": r.get("prefetches", 0), "prefetch_useful": r.get("prefetch_useful", 0),
            "prefetch_late": r.get("prefetch_late"),
            "prefetch_precision": r.get("prefetch_precision", ""),
            "prefetch_recall": r.get("prefetch_recall", ""),
            "dropped": r.get("dropped", 0), "dropped_mass": dm,
            "dropped_mass_share": dm / mass if mass else 0.0,
            "substituted": r.get("substituted", 0),
            "top1_changed_share": r.get("top1_changed_share", 0.0),
            "low_precision_fetches": low, "stall_ms": r["stall_ms"], "ttft_ms": r["ttft_ms"],
            "tokens_per_s": r["tokens_per_s"], "decode_tokens": r["decode_tokens"]})


def compute(out_dir, *, traces: Sequence[str] | None = None, quick: bool = False,
            progress=None) -> Path | None:
    """Compute ``out_dir/fig_specmd.csv`` (+ JSON); None when no real trace is available."""
    from paging.cost import get_model, share_budget
    from paging.cost.timeline import batch_prefill
    from paging.predict.prefetch import training_set
    from paging.simulate import simulate

    log = progress or common.Progress(NAME)
    sources = common.sources_or_skip(traces, DEFAULT_SOURCES, log)
    if sources is None:
        return None
    seqs = []  # (source, trace): groups mode, SpecMD's view (a pass = a token)
    for source in sources:
        for tr in common.load_sequences(source, expand="groups"):
            if quick:
                tr = _quick_cut(tr, QUICK_TOKENS)
            if tr.n_requests:
                seqs.append((source, tr))
    rows, runs = [], []
    # (a) collision misses, no prefetching, k pages
    for source, tr in seqs:
        runs.append(dict(common.sequence_record(tr), source=source))
        if (tr.layout.n_layers, tr.layout.n_experts) == MIXTRAL_LAYOUT and \
                (tr.meta.get("phase_bounds") or {}).get("prefill", [0, 0])[1]:
            continue  # Mixtral: the decode log only; the dump's prefill is timed in (b)-(e)
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
    decode_only = [t for _, t in mix
                   if not (t.meta.get("phase_bounds") or {}).get("prefill", [0, 0])[1]]
    for source, tr in mix:
        if not (tr.meta.get("phase_bounds") or {}).get("prefill", [0, 0])[1]:
            continue  # TTFT needs a prefill: the prefill+decode dump
        # a learned predictor trains on the sequences of other prompts: the decode log's
        # problem 0 is the dump's prompt again (most of its decode routings are the same), and
        # training on it reported training-set accuracy (paging.predict.prefetch.training_set)
        train = training_set("transition", tr, [t for _, t in mix])
        # warm: the previous request is the decode log's last sequence (another problem); the
        # predictor then trains on the sequences of other prompts it does not serve (none is
        # left here: no warm transition rows)
        before = decode_only[-1:]
        train_warm = [t for t in train if not any(t is b for b in before)]
        base = {"source": source, "trace": tr.name, "hardware": HARDWARE}

        def bud(pct):
            return share_budget(model, pct)

        q = PREFETCH_SETTING["precision"]
        for spec, strat in PREFETCHERS:
            if spec == "transition" and not train:
                log("  prefetch: transition skipped (no other sequence to fit it on)")
                continue
            out = _timed(tr, PREFETCH_SETTING["policy"], precision=q,
                         budget=bud(PREFETCH_SETTING["capacity_pct"]), prefetch=spec,
                         strategy=strat, train=train)
            rows.append(dict(base, **out, panel="prefetch", precision=q,
                             capacity_pct=PREFETCH_SETTING["capacity_pct"],
                             policy=PREFETCH_SETTING["policy"], prefetch=spec, strategy=strat,
                             miss="fetch"))
        q = MISS_SETTING["precision"]
        for miss in MISS_HANDLERS:
            out = _timed(tr, MISS_SETTING["policy"], precision=q,
                         budget=bud(MISS_SETTING["capacity_pct"]), miss=miss)
            rows.append(dict(base, **out, panel="miss", precision=q,
                             capacity_pct=MISS_SETTING["capacity_pct"],
                             config=f"{MISS_SETTING['capacity_pct']}% of the model",
                             policy=MISS_SETTING["policy"], miss=miss))
        q = TABLE2_PRECISION
        for pct in CAPACITIES:
            for cname, own, spec, strat in TABLE2_CONFIGS:
                for warm in (False, True):
                    tr_set = train_warm if warm else train
                    if spec == "transition" and not tr_set:
                        log(f"  table2: {cname} skipped {'warm' if warm else 'cold'} (no "
                            "sequence of another prompt to fit transition on)")
                        continue
                    for pol in (own, *TABLE2_LS):
                        out = _timed(tr, pol, precision=q, budget=bud(pct), prefetch=spec,
                                     strategy=strat, train=tr_set,
                                     before=tuple(before) if warm else ())
                        rows.append(dict(base, **out, panel="table2", precision=q,
                                         capacity_pct=pct, config=f"{cname} @ {pct}%",
                                         policy=pol, prefetch=spec or "", strategy=strat or "",
                                         miss="fetch"))
            log(f"  table2 at {pct}%: done")
        # TTFT against the prompt's length (the first 8, 16, 32, all prompt tokens), 5 %
        for m in PROMPT_TOKENS:
            sub = tr if m is None else _prompt_prefix(tr, m)
            n_prompt = int(sub.meta.get("prompt_tokens")
                           or batch_prefill(sub)[0].meta.get("prefill_tokens") or 0)
            for pol, spec in PROMPT_CONFIGS:
                for warm in (False, True):
                    tr_set = train_warm if warm else train
                    if spec == "transition" and not tr_set:
                        continue
                    out = _timed(sub, pol, precision=q, budget=bud(5), prefetch=spec,
                                 strategy="topk:overfetch=1" if spec else None, train=tr_set,
                                 before=tuple(before) if warm else ())
                    rows.append(dict(base, **out, panel="prompt", precision=q, capacity_pct=5,
                                     policy=pol, prefetch=spec or "", miss="fetch",
                                     prompt_tokens=n_prompt))
        log("  prompt-length sweep: done")
        # (f) the timeline's own assumptions: a per-token overhead, a second prefetch stream
        from paging.cost.sensitivity import timing_sensitivity

        for r in timing_sensitivity(tr, budget=bud(5), train=train,
                                    token_overhead_ms=SENSITIVITY_OVERHEADS_MS):
            rows.append(dict(base, panel="sensitivity", precision="int4", capacity_pct=5,
                             config=r["config"], policy=r["policy"], prefetch=r["prefetch"],
                             strategy=r["strategy"], variant=r["variant"], warm="no",
                             misses=r["misses"], ttft_ms=r["ttft_ms"],
                             tokens_per_s=r["tokens_per_s"], stall_ms=r["stall_ms"]))
        log("  timeline sensitivity: done")
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
                   "least_stale": list(TABLE2_LS),
                   "budgets_pct_of_16bit_model": list(CAPACITIES)},
        "capacity": "pct % of the model's 16-bit bytes (paging.cost.share_budget; Table 3's "
                    "GB read as GiB), int4 experts; other layouts: pct % of the n*l experts",
        "warm": "the dump's request served after the decode log's last sequence (problem 1) "
                "through the same cache; transition trains on other prompts only (problem 1 "
                "cold; no warm transition rows: problem 0 is the dump's prompt, problem 1 "
                "warms the cache)",
        "prompt_tokens": [m or "all" for m in PROMPT_TOKENS],
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
    for src, pct in dict.fromkeys((r["source"], r["capacity_pct"]) for r in col):
        k = next(r["capacity"] for r in col if (r["source"], r["capacity_pct"]) == (src, pct))
        parts = [f"{src.split('/')[0]} k={k}"]
        for pol in COLLISION_POLICIES:
            sel = [r for r in col if r["capacity_pct"] == pct and r["policy"] == pol
                   and r["source"] == src]
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
        elif r["panel"] in ("table2", "prompt"):
            log(f"{r['panel']} {r.get('config') or r.get('prompt_tokens')} {r['policy']} "
                f"{r.get('prefetch') or ''} warm={r['warm']}: TTFT {r['ttft_ms']:.0f} ms, "
                f"{r['tokens_per_s']:.3f} tok/s, misses {r['misses']}")


def plot(csv_path, out_dir) -> list[Path]:
    """fig_specmd.png/.pdf from the CSV alone: (a) collision and total miss rates per policy and
    capacity, per trace family, (a') per-layer collision rates at 5 %, (b) prefetch precision vs
    recall and hit rate vs stall, (c) miss handlers' proxy vs TTFT, (d) Table 2 TTFT at 5 %,
    cold and warm, (e) TTFT against the prompt's length."""
    plt = common.pyplot()
    rows = common.read_csv(csv_path)
    fig, grid = plt.subplots(3, 3, figsize=(17, 14), layout="constrained")
    # panel order: (a) Mixtral, (a) granite, (a'), (b) P/R, (b) hit/stall, (c), (d), (e), (f)
    axes = np.array([[grid[0, 0], grid[0, 1], grid[0, 2], grid[1, 0]],
                     [grid[1, 1], grid[1, 2], grid[2, 0], grid[2, 1]]])
    labels = {"fld": "FLD", "fld-cyclic": "FLD (cyclic)", "score-based": "SB", "lru": "LRU",
              "least-stale": "LS (left)", "least-stale-upcoming": "LS (upcoming)",
              "least-stale-layer": "LS (layer only)", "lru-dist": "per-layer LRU"}
    colors = {"fld": "tab:green", "fld-cyclic": "tab:olive", "score-based": "tab:purple",
              "lru": "tab:blue", "least-stale": "tab:red", "least-stale-upcoming": "tab:orange",
              "least-stale-layer": "tab:brown", "lru-dist": "tab:cyan"}

    def f(r, c):
        return float(r[c]) if r[c] != "" else np.nan

    col = [r for r in rows if r["panel"] == "collisions"]
    families = list(dict.fromkeys(r["source"].split("/")[0] for r in col))
    for ax, fam in zip((axes[0, 0], axes[0, 1]), families[:2] or [None], strict=False):
        sel_f = [r for r in col if r["source"].split("/")[0] == fam]
        caps = sorted({int(r["capacity_pct"]) for r in sel_f})
        pols = [p for p in COLLISION_POLICIES if any(r["policy"] == p for r in sel_f)]
        w = 0.8 / max(1, len(pols))
        for i, pol in enumerate(pols):
            tot, cm = [], []
            for c in caps:
                sel = [r for r in sel_f if r["policy"] == pol and int(r["capacity_pct"]) == c]
                req = sum(f(r, "requests") for r in sel) or np.nan
                tot.append(sum(f(r, "misses") for r in sel) / req)
                cm.append(sum(f(r, "collision_misses") for r in sel) / req)
            x = np.arange(len(caps)) + (i - (len(pols) - 1) / 2) * w
            ax.bar(x, tot, w, color="lightgrey", edgecolor=colors[pol])
            ax.bar(x, cm, w, color=colors[pol], label=labels[pol])
        ks = {c: next(r["capacity"] for r in sel_f if int(r["capacity_pct"]) == c) for c in caps}
        ax.set_xticks(np.arange(len(caps)), [f"{c}%\n(k={ks[c]})" for c in caps])
        ax.set_xlabel("capacity (% of the 16-bit model, in int4 experts)")
        ax.set_ylabel("rate per request (grey: all misses)")
        ax.set_title(f"(a) collision misses (Figs. 4/8): {fam}", fontsize=9)
        ax.legend(fontsize=6, ncol=2)
    lay = [r for r in rows if r["panel"] == "collisions-layer"
           and r["source"].split("/")[0] == (families[0] if families else None)
           and int(r["capacity_pct"]) == 5]
    ax = axes[0, 2]
    reqs = {}
    for r in col:
        key = (r["policy"], r["capacity_pct"], r["source"].split("/")[0])
        reqs[key] = reqs.get(key, 0) + f(r, "requests")
    for pol in COLLISION_POLICIES:
        sel = [r for r in lay if r["policy"] == pol]
        if not sel:
            continue
        L = max(int(r["layer"]) for r in sel) + 1
        y = np.zeros(L)
        for r in sel:
            y[int(r["layer"])] += f(r, "collision_misses")
        y /= reqs[(pol, "5", families[0])] / L  # per layer: collisions / requests of the layer
        ax.plot(range(L), y, color=colors[pol], label=labels[pol])
    ax.set_xlabel("layer")
    ax.set_ylabel("collision rate (per request of the layer)")
    ax.set_title(f"(a') per-layer collisions at 5% (Figs. 5/9): {families[0] if families else ''}",
                 fontsize=9)
    ax.legend(fontsize=6, ncol=2)
    pre = [r for r in rows if r["panel"] == "prefetch"]
    markers = "ovs^Dp*hX<>"
    for ax, (xc, yc, xs) in ((axes[0, 3], ("prefetch_recall", "prefetch_precision", 1.0)),
                            (axes[1, 0], ("stall_ms", "hit_rate", 1e3))):
        for i, r in enumerate(pre):
            ax.plot(f(r, xc) / xs, f(r, yc), markers[i % len(markers)], ls="none",
                    label=f"{r['prefetch'].split(',seed')[0]} {r['strategy']}")
        ax.legend(fontsize=5)
    axes[0, 3].set_xlabel("prefetch recall")
    axes[0, 3].set_ylabel("prefetch precision")
    axes[0, 3].set_title("(b) prefetch precision vs recall (Fig. 6 left), LRU 5%, int4",
                         fontsize=9)
    axes[1, 0].set_xlabel("synchronous overhead: stall time (s)")
    axes[1, 0].set_ylabel("hit rate")
    axes[1, 0].set_title("(b) hit rate vs synchronous overhead (Fig. 6 right)", fontsize=9)
    ms = [r for r in rows if r["panel"] == "miss"]
    ax = axes[1, 1]
    for i, r in enumerate(ms):
        req = f(r, "requests")
        proxy = (f(r, "dropped") + f(r, "substituted") + f(r, "low_precision_fetches")) / req
        ax.plot(f(r, "ttft_ms") / 1e3, proxy, markers[i % len(markers)], ls="none",
                label=r["miss"])
    ax.legend(fontsize=6)
    ax.set_xlabel("TTFT (s)")
    ax.set_ylabel("degraded requests / requests (dropped, substituted, < int8)")
    ax.set_title("(c) miss handlers: quality proxy vs speed (Fig. 7), LRU int8 5%", fontsize=9)
    t2 = [r for r in rows if r["panel"] == "table2" and r["capacity_pct"] == "5"]
    ax = axes[1, 2]
    cfgs = list(dict.fromkeys(r["config"] for r in t2))
    bars = [(c, w) for c in cfgs for w in ("no", "yes")]
    pols = list(dict.fromkeys(r["policy"] for r in t2))
    h = 0.8 / max(1, len(pols))
    for i, pol in enumerate(pols):
        y = [next((f(r, "ttft_ms") for r in t2 if (r["config"], r["warm"]) == b
                   and r["policy"] == pol), np.nan) for b in bars]
        ax.barh(np.arange(len(bars)) + (i - (len(pols) - 1) / 2) * h, np.asarray(y) / 1e3, h,
                color=colors.get(pol, "grey"), label=labels.get(pol, pol))
    ax.set_yticks(np.arange(len(bars)), [f"{c.split(' (')[0]}, {'warm' if w == 'yes' else 'cold'}"
                                         for c, w in bars], fontsize=6)
    ax.set_xlabel("TTFT (s)")
    ax.set_title("(d) Table 2 at 5%: own eviction vs Least-Stale (int4, 5 GB/s)", fontsize=9)
    if t2:
        ax.set_xlim(0, 1.45 * max(f(r, "ttft_ms") for r in t2) / 1e3)
        ax.legend(fontsize=6, loc="center right")
    pr = [r for r in rows if r["panel"] == "prompt"]
    ax = axes[1, 3]
    for pol, spec in dict.fromkeys((r["policy"], r["prefetch"]) for r in pr):
        for warm, ls in (("no", "--"), ("yes", "-")):
            sel = sorted((int(r["prompt_tokens"]), f(r, "ttft_ms")) for r in pr
                         if (r["policy"], r["prefetch"], r["warm"]) == (pol, spec, warm))
            if sel:
                ax.plot(*zip(*[(x, y / 1e3) for x, y in sel], strict=True), ls=ls,
                        marker="s" if spec else "o",
                        color=colors.get(pol, "grey") if not spec else
                        {"least-stale": "darkred", "lru-dist": "tab:cyan"}.get(pol, "black"),
                        label=f"{labels.get(pol, pol)}{' + ' + spec if spec else ''}, "
                              f"{'warm' if warm == 'yes' else 'cold'}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("prompt tokens")
    ax.set_ylabel("TTFT (s)")
    ax.set_title("(e) TTFT vs prompt length, 5%, int4 (dashed: cold)", fontsize=9)
    ax.legend(fontsize=5)
    sens = [r for r in rows if r["panel"] == "sensitivity"]
    ax = grid[2, 2]
    variants = list(dict.fromkeys(r["variant"] for r in sens))
    cfgs = list(dict.fromkeys(r["config"] for r in sens))
    h = 0.8 / max(1, len(cfgs))
    for i, cfg in enumerate(cfgs):
        y = [next((f(r, "tokens_per_s") for r in sens if (r["config"], r["variant"]) ==
                   (cfg, v)), np.nan) for v in variants]
        ax.barh(np.arange(len(variants)) + (i - (len(cfgs) - 1) / 2) * h, y, h,
                color=("tab:cyan", "tab:red")[i % 2],
                label=f"{cfg} ({next(r['policy'] for r in sens if r['config'] == cfg)})")
    ax.set_yticks(np.arange(len(variants)), variants, fontsize=7)
    ax.set_xlabel("decode tokens/s")
    ax.set_title("(f) timeline assumptions: Config#1 and #5 at 5%, cold", fontsize=9)
    if sens:
        ax.legend(fontsize=6)
    for a in grid.flat:
        a.grid(alpha=0.3)
    fig.suptitle("SpecMD on the Mixtral and granite traces (cost model + timeline; quality "
                 "proxies only)", fontsize=10)
    paths = common.save_figure(fig, out_dir, NAME)
    plt.close(fig)
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main(sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
