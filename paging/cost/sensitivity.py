"""How much the timeline's own assumptions move a SpecMD configuration's TTFT and decode rate.

The latency timeline (:mod:`paging.cost.timeline`) has two knobs whose defaults are today's
model and which no paper pins down: a fixed time per token outside the modelled layers
(``token_overhead_ms``) and a second, concurrent copy stream for prefetches (SpecMD, App. A.3:
the watchdog issues "non-blocking CUDA transfers"; ``prefetch_streams=2``, the link's bandwidth
split between the streams or not). :func:`timing_sensitivity` simulates a configuration ONCE
(the cache run does not depend on the timeline) and replays the timeline under each variant,
so every row of a configuration has the same misses and prefetches and differs only in time.

SpecMD's Table 1 configurations, as this package stands in for them (:data:`SPECMD_CONFIGS`):

* ``Config#1`` "Spec, LRU, Fetch, Stnd" (Eliseev & Mazur's speculative prefetch with an LRU
  cache): the ``transition`` predictor, ``topk:overfetch=1``, policy ``lru-dist`` (their
  offloading code evicts within a layer's group of cached experts: a per-layer LRU);
* ``Config#5`` "Score, LS, Fetch, Stnd" (score-based prefetch, Least-Stale eviction): the
  ``transition`` predictor's scores cut at the 80th percentile (``percentile:p=80``, "prefetch
  all experts above a configurable percentile threshold (the default is 80th percentile)",
  Sec. 3.1.4), policy ``least-stale``.

Our predictors read no hidden states, so ``transition`` (layer-to-layer co-activation counts
fitted on other sequences) stands in for the paper's next-layer gate; the policies are the
registry's names, so a caller who reads Config#1's "LRU" as the global LRU passes
``{"Config#1": {..., "policy": "lru"}}``.

Use (the figure script)::

    from paging.cost.sensitivity import timing_sensitivity
    rows = timing_sensitivity(trace, train=other_sequences, budget=share_budget(model, 5),
                              token_overhead_ms=(5.0, 20.0))

Each row: ``config, policy, prefetch, strategy, variant, token_overhead_ms, prefetch_streams,
prefetch_link, misses, prefetches, ttft_ms, tokens_per_s, tpot_ms, decode_tokens, stall_ms,
time_ms``; the variant ``"today"`` is the default timeline (every earlier number).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from paging.errors import PagingError

__all__ = ["SPECMD_CONFIGS", "timing_variants", "timing_sensitivity"]

#: SpecMD Table 1's Config#1 and Config#5 in this package's terms (module docstring)
SPECMD_CONFIGS: dict[str, dict[str, str]] = {
    "Config#1": {"policy": "lru-dist", "prefetch": "transition",
                 "strategy": "topk:overfetch=1"},
    "Config#5": {"policy": "least-stale", "prefetch": "transition",
                 "strategy": "percentile:p=80"},
}


def timing_variants(token_overhead_ms: Iterable[float] = ()) -> list[tuple[str, dict]]:
    """``(name, timeline options)``: today's timeline, one variant per per-token overhead
    (alone), and prefetches on a second stream with the link shared and with separate links
    (no overhead), so each option's effect is seen on its own."""
    out = [("today", {})]
    for ov in token_overhead_ms:
        out.append((f"+{float(ov):g} ms/token", {"token_overhead_ms": float(ov)}))
    out.append(("2 streams, shared link", {"prefetch_streams": 2, "prefetch_link": "shared"}))
    out.append(("2 streams, separate links",
                {"prefetch_streams": 2, "prefetch_link": "separate"}))
    return out


def timing_sensitivity(trace, *, budget: int, train=None,
                       configs: Mapping[str, Mapping[str, str]] | None = None,
                       token_overhead_ms: Iterable[float] = (), model: str = "mixtral-8x7b",
                       precision: str = "int4", hardware: str = "link-5gbps",
                       batched: bool = True) -> list[dict]:
    """TTFT and decode tokens/s of each configuration under each timeline variant.

    Parameters
    ----------
    trace : Trace
        One sequence with a prefill phase (the prefill+decode dump), read in groups mode.
    budget : int
        Cache size in bytes (e.g. ``paging.cost.budget_bytes(4.35)``).
    train : list of Trace
        Training sequences of the ``transition`` predictor (never ``trace`` itself).
    configs : mapping, optional
        ``name -> {"policy", "prefetch" (None: no prefetching), "strategy"}``; default
        :data:`SPECMD_CONFIGS`.
    token_overhead_ms : iterable of float
        The per-token overheads to try (no paper gives one; each is its own variant).
    model, precision, hardware : str
        Cost-model presets.
    batched : bool
        Replay the prefill as one batched pass (:func:`paging.cost.timeline.batch_prefill`),
        as fig_specmd does.

    Every simulated run is checked by :func:`paging.verify.verify`.
    """
    from paging.cost.timeline import timeline_run
    from paging.run import RunSpec, execute

    configs = SPECMD_CONFIGS if configs is None else configs
    variants = timing_variants(token_overhead_ms)
    rows = []
    for name, cfg in configs.items():
        unknown = set(cfg) - {"policy", "prefetch", "strategy"}
        if unknown or "policy" not in cfg:
            raise PagingError(f"configuration {name}: give policy, prefetch and strategy, "
                              f"got {sorted(cfg)}")
        spec = cfg.get("prefetch")
        run_spec = RunSpec(cfg["policy"], budget=budget, model=model, precision=precision,
                           hardware=hardware, prefill="batched" if batched else "tokens",
                           prefetch=spec, prefetch_strategy=cfg.get("strategy") if spec
                           else None, verify=True)
        run_spec.cost_setup().model.check_layout(trace)
        (out,) = execute(run_spec, [trace], train=train if spec else None, check=False)
        res, cm = out.result, run_spec.cost_setup()  # verified by the run (verify=True)
        x = res.extra or {}
        for variant, opts in variants:  # the same run, its timeline replayed per option
            tm = timeline_run(out.trace, res, model=cm.model, precision=cm.precision,
                              hardware=cm.hardware, fetch_ms=out.costs, sizes=out.sizes,
                              batch=out.batch, **opts)
            rows.append({
                "config": name, "policy": cfg["policy"], "prefetch": spec or "",
                "strategy": cfg.get("strategy") or "", "variant": variant,
                "token_overhead_ms": opts.get("token_overhead_ms", 0.0),
                "prefetch_streams": opts.get("prefetch_streams", 1),
                "prefetch_link": opts.get("prefetch_link", ""),
                "misses": res.misses, "prefetches": x.get("prefetches", 0),
                "ttft_ms": tm.ttft_ms, "tokens_per_s": tm.tokens_per_s, "tpot_ms": tm.tpot_ms,
                "decode_tokens": tm.decode_tokens, "stall_ms": tm.stall_ms,
                "time_ms": tm.time_ms})
    return rows
