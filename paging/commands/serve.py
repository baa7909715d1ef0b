"""``paging serve TRACE... --model M --budget-gb G --policy P (--rate R | --clients N | --arrivals
FILE) --duration S --max-batch B --max-tokens T [--json]``: many requests sharing one warm
expert cache under continuous batching (:mod:`paging.serve`).

One run per policy x budget x rate; each prints its summary row (p50/p90/p99 of TTFT, TPOT and
end to end, throughput, goodput under ``--slo-ttft-ms`` / ``--slo-tpot-ms``, miss ratio, bytes
moved, and the offline bound: Belady's misses on the same stream of batched groups and the
latency of the same schedule with its hits). ``--json`` prints one JSON list of runs, each
with its ``summary``, its per-request table (``requests``) and its per-step series
(``steps``: start, time, tokens, batch, queue, expert requests, misses, bytes, stall).
"""

from __future__ import annotations

from paging.commands.common import add_trace_args, format_table, load_from_args, policy_help
from paging.options import int64, seed


def _range(text: str) -> tuple[int, int]:
    from paging.errors import PagingError

    lo, sep, hi = text.partition("-")
    try:
        a = int(lo)
        b = int(hi) if sep else a
    except ValueError:
        raise PagingError(f"expected a length N or a range LO-HI, got {text!r}") from None
    return a, b


def add_parser(sub) -> None:
    p = sub.add_parser("serve", help="a serving workload on one warm expert cache: latency "
                       "percentiles under continuous batching",
                       description="Serve requests drawn from the sequences of TRACE (read in "
                       "groups mode), arriving by a Poisson process, a closed loop of clients "
                       "or a file, through a batching scheduler; every engine step requests, "
                       "per layer, the union of its tokens' experts from one cache that lives "
                       "for the whole run.")
    add_trace_args(p, many=True, expand=False)
    p.set_defaults(expand="groups")
    p.add_argument("--policy", action="append", required=True, metavar="NAME",
                   help="policy name (repeatable): " + policy_help())
    cap = p.add_argument_group("cache size (one kind, repeatable)")
    cap.add_argument("--budget-gb", action="append", type=float, metavar="G",
                     help="GPU memory for experts in GB (1 GB = 1e9 bytes; repeatable)")
    cap.add_argument("--k", action="append", type=int64, metavar="K",
                     help="cache size in experts (repeatable)")
    m = p.add_argument_group("cost model")
    m.add_argument("--model", required=True, metavar="M",
                   help="model preset or a .toml/.json model file (`paging cost presets`)")
    m.add_argument("--precision", default=None, metavar="Q",
                   help="expert precision: bf16 (default), int8, int4, int2")
    m.add_argument("--hardware", default=None, metavar="H",
                   help="hardware preset: link-5gbps (default), pcie3, pcie4, pcie5")
    m.add_argument("--host-gb", type=float, default=None, metavar="G",
                   help="host DRAM for experts in GB (default: all experts in host DRAM)")
    a = p.add_argument_group("arrivals (one kind)")
    a.add_argument("--rate", action="append", type=float, metavar="R",
                   help="Poisson arrivals at R requests/s (repeatable: one run per rate)")
    a.add_argument("--clients", type=int64, default=None, metavar="N",
                   help="a closed loop of N clients")
    a.add_argument("--think", type=float, default=0.0, metavar="S",
                   help="with --clients: seconds between a request's end and the client's "
                        "next request (default 0)")
    a.add_argument("--arrivals", metavar="FILE", default=None,
                   help="arrival times in seconds, one per line")
    a.add_argument("--duration", type=float, default=None, metavar="S",
                   help="requests arrive during the first S seconds (the run then drains)")
    w = p.add_argument_group("workload and scheduler")
    w.add_argument("--max-batch", type=int64, default=16, metavar="B",
                   help="most requests running at once (default 16)")
    w.add_argument("--max-tokens", type=int64, default=512, metavar="T",
                   help="most tokens per engine step; longer prompts are prefilled in chunks "
                        "(default 512)")
    w.add_argument("--scheduler", choices=("continuous", "static"), default="continuous",
                   help="continuous batching (default) or static batches")
    w.add_argument("--batch-reading", choices=("best", "worst"), default="best",
                   help="the rank and gate score an expert of a step's union gets from the "
                        "step's tokens, for --miss drop/fetch-priority and --policy "
                        "score-based: best (smallest rank, largest score; default) or worst")
    w.add_argument("--prompt-tokens", type=int64, default=32, metavar="P",
                   help="a decode log (no prefill phase) has its first P tokens (at most half "
                        "the sequence) served as the prompt (default 32)")
    w.add_argument("--prompt-len", default=None, metavar="LO-HI",
                   help="draw each request's prompt length uniformly from LO-HI and cut its "
                        "tokens from the traces' joined token stream (with --output-len)")
    w.add_argument("--output-len", default=None, metavar="LO-HI",
                   help="draw each request's decode length uniformly from LO-HI (with "
                        "--prompt-len)")
    w.add_argument("--max-requests", type=int64, default=None, metavar="N",
                   help="cap on the requests made (default: every arrival; 32 per client "
                        "for --clients)")
    w.add_argument("--step-overhead-ms", type=float, default=0.0, metavar="MS",
                   help="fixed time per engine step (default 0)")
    s = p.add_argument_group("service-level objectives (goodput)")
    s.add_argument("--slo-ttft-ms", type=float, default=None, metavar="MS")
    s.add_argument("--slo-tpot-ms", type=float, default=None, metavar="MS")
    ext = p.add_argument_group("the loop's phases")
    ext.add_argument("--miss", default=None, metavar="M",
                     help="fetch (default), substitute, drop:rank=R, drop:score=S, "
                          "fetch-lowest-bit or fetch-priority (these two with --budget-gb); a "
                          "page of a step's union has one rank and one gate score from its "
                          "tokens, as --batch-reading says")
    ext.add_argument("--prefetch", default=None, metavar="P",
                     help="prefetch the next group's experts after each group, the predictor "
                          "asked batch by batch: oracle[:precision=P,recall=R,seed=S], "
                          "previous-token (the previous step), frequency, "
                          "transition:train=FILE (sequences not served)")
    ext.add_argument("--prefetch-strategy", default=None, metavar="S",
                     help="topk[:overfetch=F] (K = the step's tokens x top-K, at most n) or "
                          "percentile[:p=P]; needs --prefetch")
    ext.add_argument("--routing", default=None, metavar="R",
                     help="cache-aware routing, each token of a step routed seeing the layer's "
                          "cached experts: pruning:j=J, max-rank:j=J[,m=M], cumsum:tau=T[,j=J], "
                          "cache-prior:lambda=L[,j=J], each with [,phase=decode] to leave "
                          "the prompt tokens as ranked; with --miss and --prefetch too "
                          "(SpecMD's Algorithm 1, layer by layer)")
    p.add_argument("--no-bound", action="store_true",
                   help="skip the offline bound (Belady on the produced stream)")
    p.add_argument("--seed", type=seed, default=0,
                   help="seed of the arrivals, the request draws and randomized policies")
    p.add_argument("--engine", choices=("auto", "reference", "fast"), default="auto",
                   help="the cache in a compiled kernel when the policy has one that serves "
                        "step by step (the list family: lru, fifo, fwf, llru, fld, "
                        "least-stale; lfu, lhu; greedy-dual, landlord, gdsf, layered-landlord; "
                        "arc, lecar, marking; token-hazard, token-decay, token-match, "
                        "robust-token-match; blind-oracle, predictive-marker, lmarker, "
                        "robust-blind-oracle; score-based; flashmoe; -dist; also with --miss "
                        "or --prefetch (not flashmoe), and/or --routing pruning, max-rank, "
                        "cumsum, cache-prior on traces without full logits), else the "
                        "reference loop (auto); same numbers")
    p.add_argument("--verify", action="store_true",
                   help="check the cache's run independently (capacity, every request served, "
                        "misses = the eviction log) in the reference loop, and Belady's bound "
                        "run; a compiled run must then equal it request for request")
    p.add_argument("--json", action="store_true",
                   help="one JSON list of runs: summary, per-request table, per-step series")
    p.set_defaults(func=run)


def run(args) -> int:
    from paging.cli import print_json
    from paging.commands.simulate import distinct_runs
    from paging.cost import budget_bytes
    from paging.errors import PagingError
    from paging.options import distinct
    from paging.run import RunSpec
    from paging.serve import Arrivals, ServeSpec, read_arrivals, serve

    if bool(args.k) == bool(args.budget_gb):
        raise PagingError("give the cache size as --budget-gb G or --k K, not both and not "
                          "neither")
    kinds = sum(x is not None for x in (args.rate, args.clients, args.arrivals))
    if kinds != 1:
        raise PagingError("give the arrivals as one of --rate R, --clients N or --arrivals FILE")
    if (args.prompt_len is None) != (args.output_len is None):
        raise PagingError("--prompt-len and --output-len go together")
    caps = [dict(k=k) for k in args.k or []] + \
        [dict(budget=budget_bytes(g, "--budget-gb")) for g in args.budget_gb or []]
    base = dict(model=args.model, precision=args.precision, hardware=args.hardware,
                host_gb=args.host_gb, prefetch=args.prefetch,
                prefetch_strategy=args.prefetch_strategy, miss=args.miss,
                routing=args.routing, seed=args.seed, verify=args.verify, engine=args.engine)
    specs = [RunSpec(name, **cap, **base) for name in args.policy for cap in caps]
    distinct_runs(args, caps)
    # (a repeated rate ran and printed its rows twice, which a sweep's rates key refuses)
    distinct("--rate", [f"{r:g}" for r in args.rate or []], args.rate or [])
    times = None if args.arrivals is None else read_arrivals(args.arrivals)
    arrivals = ([Arrivals(rate=r, think=args.think, duration=args.duration) for r in args.rate]
                if args.rate
                else [Arrivals(clients=args.clients, think=args.think, duration=args.duration,
                               times=times)])
    lengths = None if args.prompt_len is None else (_range(args.prompt_len),
                                                    _range(args.output_len))
    sspecs = [ServeSpec(arr, max_batch=args.max_batch, max_tokens=args.max_tokens,
                        scheduler=args.scheduler, prompt_tokens=args.prompt_tokens,
                        lengths=lengths, step_overhead_ms=args.step_overhead_ms,
                        slo_ttft_ms=args.slo_ttft_ms, slo_tpot_ms=args.slo_tpot_ms,
                        max_requests=args.max_requests, seed=args.seed,
                        bound=not args.no_bound, batch_reading=args.batch_reading)
              for arr in arrivals]
    from paging.serve.engine import _check

    for spec in specs:  # every refusal before the traces are read
        _check(spec)
    traces = load_from_args(args)
    out = []
    for ss in sspecs:
        for spec in specs:
            res = serve(spec, ss, traces, show=False if args.json else None)
            out.append(res if args.json else res.summary)
    if args.json:
        print_json([{"summary": r.summary, "requests": r.requests, "steps": r.steps}
                    for r in out])
        return 0
    cols = ["policy", "capacity", "rate" if args.rate else "arrivals", "completed",
            "miss_ratio", "p50_ttft_ms", "p99_ttft_ms", "p50_tpot_ms", "p99_tpot_ms",
            "tokens_per_s", "opt_miss_ratio", "opt_p99_tpot_ms"]
    if args.slo_ttft_ms is not None or args.slo_tpot_ms is not None:
        cols.append("goodput_rps")
    if args.prefetch is not None:
        cols[5:5] = ["prefetches", "prefetch_useful", "prefetch_late"]
    if args.routing is not None and args.routing.strip().lower() != "standard":
        cols[5:5] = ["retained_mass", "top1_changed"]
    if args.no_bound:
        cols = [c for c in cols if not c.startswith("opt_")]
    print(format_table([{c: ("" if r.get(c) is None else r.get(c)) for c in cols} for r in out],
                       cols))
    if args.slo_ttft_ms is not None or args.slo_tpot_ms is not None:
        print(_answer(out, args))
    return 0


def _answer(rows: list[dict], args) -> str:
    """Per policy and load: the smallest budget given whose p99 meets the SLOs, and the larger
    sizes given that do not (latency is not monotone in the cache size)."""
    from paging.serve.sizing import smallest_budget, unmet_above

    target = " and ".join(t for t in (
        None if args.slo_tpot_ms is None else f"p99 TPOT <= {args.slo_tpot_ms:g} ms",
        None if args.slo_ttft_ms is None else f"p99 TTFT <= {args.slo_ttft_ms:g} ms") if t)
    lines = [f"smallest cache meeting {target}:"]
    slos = dict(slo_tpot_ms=args.slo_tpot_ms, slo_ttft_ms=args.slo_ttft_ms)
    answer = smallest_budget(rows, **slos)
    unmet = unmet_above(rows, answer, **slos)
    for key, row in answer.items():
        policy, rate, clients, _ = key
        load = f"{rate:g} req/s" if rate is not None else f"{clients} clients" \
            if clients is not None else "the arrivals file"
        if row is None:
            lines.append(f"  {policy} at {load}: none of the sizes given")
        else:
            line = (f"  {policy} at {load}: {_size(row)} ({row['capacity']} experts; p99 TPOT "
                    f"{_ms(row['p99_tpot_ms'])} ms, p99 TTFT {_ms(row['p99_ttft_ms'])} ms)")
            if key in unmet:  # (a larger size that fails: the answer is not "this or more")
                line += (f"; not met at {', '.join(_size(r) for r in unmet[key])}, larger "
                         "(latency is not monotone in the cache size)")
            lines.append(line)
    return "\n".join(lines)


def _size(row: dict) -> str:
    return (f"{row['budget_bytes'] / 1e9:g} GB" if row.get("budget_bytes") is not None
            else f"k = {row['k']}")


def _ms(x: float) -> str:
    """A latency for the answer line: 0.1 ms resolution from 1 ms, three significant digits
    below (a small model's 0.015 ms was shown as "0.0 ms")."""
    return f"{x:.1f}" if abs(x) >= 1 else f"{x:.3g}"
