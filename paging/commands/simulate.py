"""``paging simulate TRACE --policy NAME [--policy ...] (--k K | --budget-gb G) [...] [--json]``.

Weighted runs (DESIGN.md, "Added options"): ``--costs FILE`` and ``--sizes FILE`` (a JSON list,
one number per page id, or a ``.npy``) give the pages' fetch costs and sizes; ``--budget-gb G``
counts the cache in bytes instead of pages. ``--model M --precision Q --hardware H`` take sizes
and fetch times from the cost model (:mod:`paging.cost`) and add the latency timeline
(:mod:`paging.cost.timeline`): ``capacity``, ``stall_ms``, ``time_ms``, ``tokens_per_s`` and the
other timing fields in the JSON. Timing sensitivity (:mod:`paging.cost.timeline`):
``--token-overhead-ms MS`` (a fixed time per token on the compute stream) and
``--prefetch-streams 2`` (prefetches on a concurrent copy stream; ``--prefetch-link
shared|separate``: the link's bandwidth split between the streams, or not); the JSON then
carries the options given. Their defaults leave every number as before.

SpecMD's phases of the loop (:mod:`paging.predict.prefetch`, :mod:`paging.miss`):
``--prefetch PREDICTOR[:opts]`` (oracle, previous-token, transition, frequency),
``--prefetch-strategy topk:overfetch=F|percentile:p=P`` and ``--miss fetch|fetch-lowest-bit|
fetch-priority|drop:rank=R|drop:score=S|substitute``; the JSON then adds ``prefetches``,
``prefetch_useful``, ``prefetch_wasted``, ``prefetch_late`` (with --model), ``prefetch_precision``,
``prefetch_recall``, ``dropped``, ``dropped_mass``, ``substituted`` and the other counters of
:class:`paging.result.Result`. Without these options the output is exactly as before.

Cache-aware routing (:mod:`paging.routing`): ``--routing standard|pruning:j=J|max-rank:j=J[,m=M]|
cumsum:tau=T[,j=J]|cache-prior:lambda=L[,j=J]`` changes which experts each (token, layer) group
requests, seeing the cache; the JSON adds ``routing``, ``routing_note``, ``retained_mass``,
``top1_changed``, ``kl`` and ``slots`` (the trace's requests; ``requests`` counts the served
ones). A routed run reads the trace in groups mode (``--expand rounds`` with K > 1 is refused).
``--routing standard`` (the default) is today's run. Cache-Prior's Δavg runs over the
sequences of the file in order (``delta=run``, the paper's "over sequences and tokens"; each
sequence still starts from an empty cache); ``cache-prior:...,delta=sequence`` restarts it at
every sequence.

Warm caches (:mod:`paging.warm`): ``--warm`` runs the sequences of every TRACE given, in order
(or shuffled by ``--warm-seed S``), back to back through one cache and one policy state; each
sequence gets its own row (``position``, ``misses``, ``prefill_misses``, and with ``--model`` its
``ttft_ms``, ``tokens_per_s``) and a last row (``warm_total: true``) sums the run. Without
``--warm`` every sequence starts from an empty cache, as before.

Traces larger than memory (:mod:`paging.stream`): ``--stream [--chunk N]`` reads the trace a chunk
at a time (the list family, LFU, the credit policies, ARC, LeCaR, Marking, the token policies, the
prediction policies with the frequency predictor, Score-Based with a file's gate scores and FlashMoE
at ``--k`` sizes, or at ``--budget-gb`` budgets with ``--sizes``, ``--costs`` too; LeCaR's and
Marking's draws from ``--seed``; ``--verify`` chunk by chunk; the other options above are refused
with one line), automatically for files above ``$PAGING_STREAM_BYTES`` when the options allow it
(``--no-stream`` to read them whole). Same rows as the run on the trace read whole.
"""

from __future__ import annotations

import dataclasses

from paging.commands.common import add_trace_args, format_table, load_from_args, policy_help
from paging.commands.streaming import add_stream_args
from paging.options import int64, seed


def add_parser(sub) -> None:
    p = sub.add_parser("simulate", help="miss counts (and costs, time) of policies at cache sizes",
                       description="Simulate each sequence of TRACE from an empty cache for every "
                       "policy and cache size given. With --model, sizes and fetch times come "
                       "from the cost model and the latency timeline is reported too.")
    add_trace_args(p, many=True)
    p.add_argument("--policy", action="append", required=True, metavar="NAME",
                   help="policy name (repeatable): " + policy_help())
    cap = p.add_argument_group("cache size (one kind, repeatable)")
    cap.add_argument("--k", action="append", type=int64, metavar="K",
                     help="cache size in pages (repeatable)")
    cap.add_argument("--budget-gb", action="append", type=float, metavar="G",
                     help="cache size in GB (1 GB = 1e9 bytes; needs --sizes or --model; "
                          "repeatable)")
    cap.add_argument("--budget-pct", action="append", type=float, metavar="P",
                     help="cache size as P %% of the model's 16-bit bytes, SpecMD's capacity "
                          "(needs --model; repeatable; 5 %% of mixtral-8x7b = 4.67e9 bytes)")
    w = p.add_argument_group("weighted paging")
    w.add_argument("--costs", metavar="FILE", help="fetch cost of every page id: a JSON list or "
                   "a .npy (weighted policies read them; the result's cost sums them)")
    w.add_argument("--sizes", metavar="FILE", help="size in bytes of every page id: a JSON list "
                   "or a .npy")
    m = p.add_argument_group("cost model (sizes, fetch times, latency timeline)")
    m.add_argument("--model", metavar="M", help="model preset (olmoe-1b-7b, mixtral-8x7b, "
                   "qwen1.5-moe-a2.7b, phi-3.5-moe, granite-3.0-1b-a400m) or a .toml/.json "
                   "model file; `paging cost presets` lists them")
    m.add_argument("--precision", default=None, metavar="Q",
                   help="expert precision: bf16 (default), int8, int4, int2")
    m.add_argument("--hardware", default=None, metavar="H",
                   help="hardware preset: link-5gbps (default), pcie3, pcie4, pcie5")
    m.add_argument("--host-gb", type=float, default=None, metavar="G",
                   help="host DRAM for experts in GB: the most frequently requested experts of "
                        "the trace are placed there, the rest on the SSD tier (default: all "
                        "experts in host DRAM)")
    m.add_argument("--prefill", choices=("tokens", "batched"), default="tokens",
                   help="prefill order: token by token as read (default, the paging model's), "
                        "or batched as a real prefill runs it (one pass over the layers, each "
                        "distinct expert once per layer; groups mode)")
    m.add_argument("--token-overhead-ms", type=float, default=None, metavar="MS",
                   help="fixed time per token (forward pass) on the compute stream, for "
                        "sensitivity (default 0; a batched prefill is one pass)")
    m.add_argument("--prefetch-streams", type=int64, choices=(1, 2), default=None,
                   help="copy streams: 1 (default; prefetches queue behind demand transfers) "
                        "or 2 (prefetches on a concurrent stream of their own; needs "
                        "--prefetch)")
    m.add_argument("--prefetch-link", choices=("shared", "separate"), default=None,
                   help="with --prefetch-streams 2: the two streams split the link's bandwidth "
                        "while both transfer (shared, default) or each has full bandwidth "
                        "(separate, an upper bound)")
    sp = p.add_argument_group("SpecMD: prefetching and miss handling (compiled for list policies)")
    sp.add_argument("--prefetch", metavar="PREDICTOR[:opts]", default=None,
                    help="prefetch the next layer's experts after each group: "
                         "oracle[:precision=P,recall=R,seed=S,rounding=stochastic|nearest], "
                         "previous-token, frequency, "
                         "transition[:train=FILE] (default training set: the file's other "
                         "sequences)")
    sp.add_argument("--prefetch-strategy", metavar="S", default=None,
                    help="topk[:overfetch=F] (F >= 1, default 1) or percentile[:p=P] "
                         "(0 < P < 100, default 80); needs --prefetch")
    sp.add_argument("--miss", metavar="M", default=None,
                    help="miss handling: fetch (default), fetch-lowest-bit, fetch-priority "
                         "(cascade; needs --model and gate scores), drop:rank=R, drop:score=S, "
                         "substitute")
    p.add_argument("--routing", metavar="R[:opts]", default=None,
                   help="cache-aware routing: standard (default), pruning:j=J, "
                        "max-rank:j=J[,m=M], cumsum:tau=T[,j=J], "
                        "cache-prior:lambda=L[,j=J][,delta=run|sequence][,avg=range|logit]; "
                        "each hook takes phase=decode (route the decode phase only, the prefill as "
                        "ranked); reads the trace in groups mode")
    p.set_defaults(expand=None)  # rounds, or groups for a routed run
    wm = p.add_argument_group("warm caches")
    wm.add_argument("--warm", action="store_true",
                    help="run the sequences of every TRACE back to back through one cache and "
                         "one policy state (default: each from an empty cache)")
    wm.add_argument("--warm-seed", type=seed, default=None, metavar="S",
                    help="with --warm: the sequences in an order drawn from seed S (default: "
                         "file order)")
    p.add_argument("--seed", type=seed, default=0, help="seed of randomized policies (default 0)")
    p.add_argument("--engine", choices=("auto", "reference", "fast"), default="auto",
                   help="compiled kernel when available (auto), or the reference loop")
    p.add_argument("--verify", action="store_true",
                   help="record every run in full and check it independently (capacity never "
                        "exceeded, every request served, misses = the eviction log); a failed "
                        "check is an error")
    p.add_argument("--lifetimes", action="store_true",
                   help="add each run's cache lifetimes in tokens (Skliar et al. Table 2): "
                        "lifetime_tokens over the residencies an eviction ended, "
                        "lifetime_tokens_all over every one, the open ones counted to the "
                        "end; not with --prefetch")
    p.add_argument("--json", action="store_true", help="print one JSON list of results")
    add_stream_args(p)
    p.set_defaults(func=run)


def _read(path, n_pages: int, kind: str):
    from paging.io.weights import read_weights

    return read_weights(path, n_pages, kind)


def distinct_runs(args, caps) -> None:
    """Refuse a repeated ``--policy`` (once normalised: ``LRU`` and ``lru``), ``--k`` or cache
    budget (``--budget-gb``/``--budget-pct`` in bytes): its rows were printed twice, as a sweep
    spec's repeated value would make a cell twice (:func:`paging.options.distinct`). ``caps``:
    the ``k=``/``budget=`` of each run, budgets in the order given (``paging serve`` too)."""
    from paging.options import distinct
    from paging.policies import spec_key

    distinct("--policy", args.policy, [spec_key(p) for p in args.policy])
    distinct("--k", args.k or [], args.k or [])
    given = [f"{g:g} GB" for g in args.budget_gb or []] + \
        [f"{p:g} %" for p in getattr(args, "budget_pct", None) or []]
    distinct("--budget-gb" + ("/--budget-pct" if hasattr(args, "budget_pct") else ""), given,
             [c["budget"] for c in caps if "budget" in c])


def run(args) -> int:
    from paging.cost import budget_bytes
    from paging.errors import PagingError, check_k
    from paging.run import RunSpec
    from paging.run import run as execute

    if bool(args.k) == bool(args.budget_gb or args.budget_pct):
        raise PagingError("give the cache size as --k K (pages) or --budget-gb G / "
                          "--budget-pct P (bytes), not both and not neither")
    if args.budget_pct and not args.model:
        raise PagingError("--budget-pct is a share of the model's bytes: it needs --model")
    if args.model and (args.costs or args.sizes):
        raise PagingError("--model gives the sizes and fetch costs; drop --costs/--sizes (or "
                          "--model)")
    if not args.model and (args.precision or args.hardware or args.host_gb is not None):
        raise PagingError("--precision, --hardware and --host-gb need --model")
    timing = {k: v for k, v in (("token_overhead_ms", args.token_overhead_ms),
                                ("prefetch_streams", args.prefetch_streams),
                                ("prefetch_link", args.prefetch_link)) if v is not None}
    budgets = [budget_bytes(g, "--budget-gb") for g in args.budget_gb or []]
    base = dict(model=args.model, precision=args.precision, hardware=args.hardware,
                host_gb=args.host_gb, prefill=args.prefill, prefetch=args.prefetch,
                prefetch_strategy=args.prefetch_strategy, miss=args.miss,
                routing=args.routing, warm=args.warm, warm_seed=args.warm_seed,
                lifetimes=args.lifetimes, progress=False if args.json else None,
                timeline=timing, engine=args.engine, seed=args.seed, verify=args.verify)
    if args.budget_pct:  # a share of the model's bytes: the --model option gives them
        from paging.cost import get_model, share_budget

        budgets += [share_budget(get_model(args.model), pct) for pct in args.budget_pct]
    caps = [dict(k=k) for k in args.k or []] + [dict(budget=b) for b in budgets]
    # every RunSpec checks its options when made: all of them fail before anything is read
    specs = [RunSpec(name, **cap, **base) for name in args.policy for cap in caps]
    distinct_runs(args, caps)
    routed = specs[0].routed
    if routed and args.expand == "rounds":
        raise PagingError(f"--routing {args.routing} decides per (token, layer) group: use "
                          "--expand groups (the default with --routing)")
    if args.expand is None:
        args.expand = "groups" if routed else "rounds"
    from paging.commands.streaming import stream_outcomes, use_stream

    if use_stream(args, "simulate", specs):  # a chunk at a time: list policies at k pages
        runs = [(spec.policy, spec.k) for spec in specs if spec.budget is None]  # or bytes
        budgets = [(spec.policy, spec.budget) for spec in specs if spec.budget is not None]
        rows = [r.to_dict() for o in stream_outcomes(args, runs, budgets=budgets)
                for r in o.results]
        return _print(args, rows, None, False)
    traces = load_from_args(args)
    for k in args.k or []:
        check_k(k, traces[0].layout.n_pages if traces else None)
    if args.costs or args.sizes:
        P = traces[0].layout.n_pages if traces else 0
        weights = {"costs": None if args.costs is None else _read(args.costs, P, "costs"),
                   "sizes": None if args.sizes is None else _read(args.sizes, P, "sizes")}
        specs = [dataclasses.replace(spec, **weights) for spec in specs]
    cm = specs[0].cost_setup()
    for spec in specs:  # every check against the sequences before any run
        spec.check(traces)
    rows = []
    if args.warm:
        for spec in specs:
            rows += execute(spec, traces, check=False)
    else:  # sequence by sequence, as before
        for i in range(len(traces)):
            for spec in specs:
                rows += execute(spec, traces, only=[i], check=False)
    return _print(args, rows, cm, routed)


def _print(args, rows: list[dict], cm, routed: bool) -> int:
    from paging.cli import print_json

    if args.json:
        print_json(rows)
        return 0
    cols = ["trace", "policy", "k" if args.k else "budget_bytes", "requests", "misses", "hits",
            "miss_ratio"]
    if args.costs is not None or cm is not None:
        cols.append("cost")
    if args.warm:
        cols[1:1] = ["position"]
        if any("prefill_misses" in r for r in rows):
            cols.append("prefill_misses")
    if routed:
        cols += ["retained_mass", "top1_changed", "kl"]
    if cm is not None:
        cols += ["capacity", "time_ms", "stall_fraction", "tokens_per_s"]
        if any(r.get("ttft_ms") is not None for r in rows):
            cols.append("ttft_ms")
    if args.lifetimes:
        cols += ["lifetime_tokens", "lifetime_tokens_all"]
    print(format_table([{c: ("" if r.get(c) is None else r.get(c)) for c in cols}
                        for r in rows], cols))
    return 0
