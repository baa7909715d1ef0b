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
"""

from __future__ import annotations

import copy

from paging.commands.common import add_trace_args, format_table, load_from_args


def add_parser(sub) -> None:
    p = sub.add_parser("simulate", help="miss counts (and costs, time) of policies at cache sizes",
                       description="Simulate each sequence of TRACE from an empty cache for every "
                       "policy and cache size given. With --model, sizes and fetch times come "
                       "from the cost model and the latency timeline is reported too.")
    add_trace_args(p, many=True)
    p.add_argument("--policy", action="append", required=True, metavar="NAME",
                   help="policy name (repeatable): lru, fifo, lfu, fwf, marking, llru, "
                        "least-stale, fld, belady, greedy-dual, landlord, gdsf, "
                        "layered-landlord, and NAME-dist for the per-layer variants")
    cap = p.add_argument_group("cache size (one kind, repeatable)")
    cap.add_argument("--k", action="append", type=int, metavar="K",
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
    m.add_argument("--prefetch-streams", type=int, choices=(1, 2), default=None,
                   help="copy streams: 1 (default; prefetches queue behind demand transfers) "
                        "or 2 (prefetches on a concurrent stream of their own; needs "
                        "--prefetch)")
    m.add_argument("--prefetch-link", choices=("shared", "separate"), default=None,
                   help="with --prefetch-streams 2: the two streams split the link's bandwidth "
                        "while both transfer (shared, default) or each has full bandwidth "
                        "(separate, an upper bound)")
    sp = p.add_argument_group("SpecMD: prefetching and miss handling (reference loop)")
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
                        "cache-prior:lambda=L[,j=J][,delta=run|sequence]; "
                        "reads the trace in groups mode")
    p.set_defaults(expand=None)  # rounds, or groups for a routed run
    wm = p.add_argument_group("warm caches")
    wm.add_argument("--warm", action="store_true",
                    help="run the sequences of every TRACE back to back through one cache and "
                         "one policy state (default: each from an empty cache)")
    wm.add_argument("--warm-seed", type=int, default=None, metavar="S",
                    help="with --warm: the sequences in an order drawn from seed S (default: "
                         "file order)")
    p.add_argument("--seed", type=int, default=0, help="seed of randomized policies (default 0)")
    p.add_argument("--engine", choices=("auto", "reference", "fast"), default="auto",
                   help="compiled kernel when available (auto), or the reference loop")
    p.add_argument("--json", action="store_true", help="print one JSON list of results")
    p.set_defaults(func=run)


class _SpecMD:
    """--prefetch, --prefetch-strategy and --miss, parsed before any work (bad input: exit 2)."""

    def __init__(self, args, cm):
        from paging.errors import PagingError
        from paging.miss import make_miss
        from paging.predict.prefetch import make_predictor, make_strategy

        self.args, self.cm = args, cm
        if args.prefetch_strategy is not None and args.prefetch is None:
            raise PagingError("--prefetch-strategy needs --prefetch")
        self.pred_spec = args.prefetch
        self.strategy = make_strategy(args.prefetch_strategy) if args.prefetch else None
        if args.prefetch:
            make_predictor(args.prefetch)  # parse now
        prec = cm.precision.name if cm is not None else None
        self.miss = make_miss(args.miss, prec)
        if self.miss is not None and self.miss.uses_levels:
            if cm is None:
                raise PagingError(f"--miss {self.miss.name} needs the sizes of its precisions: "
                                  "give --model (and --precision for level 0)")
            if self.miss.levels[0] != cm.precision.name:
                raise PagingError(f"--miss {self.miss.name}: the first level "
                                  f"({self.miss.levels[0]}) must be --precision "
                                  f"({cm.precision.name})")
            if args.k:
                raise PagingError(f"--miss {self.miss.name} mixes precisions: give the cache "
                                  "as --budget-gb, not --k")
        self.on = args.prefetch is not None or self.miss is not None
        self._train = None

    def check(self, traces) -> None:
        """Refuse what the traces cannot support (scores, ranks) before any work."""
        from paging.errors import PagingError
        from paging.policies import make_policy

        for t in traces:
            for name in self.args.policy:
                if make_policy(name).needs_scores and t.score is None:
                    raise PagingError(f"{name} reads gate scores and {t.name} has none")
            if self.miss is not None and self.miss.needs_scores and t.score is None:
                raise PagingError(f"--miss {self.miss.spec()} reads gate scores and {t.name} "
                                  "has none")
            if self.miss is not None and self.miss.needs_ranks and t.rank is None:
                raise PagingError(f"--miss {self.miss.spec()} reads expert ranks and {t.name} "
                                  "has none")
        from paging.predict.prefetch import check_training, training_file

        check_training(self.pred_spec, len(traces))
        file = training_file(self.pred_spec)
        if file is not None:
            from paging.io import load

            self._train = load(file, expand=self.args.expand)

    def prefetcher(self, trace, traces):
        if self.pred_spec is None:
            return None
        from paging.predict.prefetch import Prefetcher, make_predictor, training_set

        train = training_set(self.pred_spec, trace, traces, self._train)
        return Prefetcher(make_predictor(self.pred_spec, train), self.strategy)

    def handler(self, trace, costs):
        if self.miss is None or not self.miss.uses_levels:
            return self.miss

        from paging.miss import cascade_weights

        cm = self.cm
        return cascade_weights(self.miss, cm.model, cm.hardware, cm.tiers(trace))


def _timing_options(args) -> dict:
    """``--token-overhead-ms``, ``--prefetch-streams`` and ``--prefetch-link`` as keyword
    arguments of :func:`paging.cost.timeline.timeline_run` (only those given), checked before
    any work."""
    from paging.cost.timeline import timeline_options
    from paging.errors import PagingError

    given = {k: v for k, v in (("token_overhead_ms", args.token_overhead_ms),
                               ("prefetch_streams", args.prefetch_streams),
                               ("prefetch_link", args.prefetch_link)) if v is not None}
    if given and not args.model:
        raise PagingError("--token-overhead-ms, --prefetch-streams and --prefetch-link are "
                          "timing options: they need --model")
    if given.get("prefetch_streams") == 2 and args.prefetch is None:
        raise PagingError("--prefetch-streams 2 puts prefetches on a stream of their own: it "
                          "needs --prefetch")
    if "prefetch_link" in given and given.get("prefetch_streams") != 2:
        raise PagingError("--prefetch-link says how two copy streams share the link: it needs "
                          "--prefetch-streams 2")
    timeline_options(**given)
    return given


def _read(path, n_pages: int, kind: str):
    from paging.io.weights import read_weights

    return read_weights(path, n_pages, kind)


def run(args) -> int:
    from paging.cli import print_json
    from paging.cost import budget_bytes
    from paging.cost.setup import CostSetup
    from paging.errors import PagingError, check_k
    from paging.policies import make_policy

    for name in args.policy:  # fail before any work on a bad name
        make_policy(name)
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
    if args.prefill == "batched" and not args.model:
        raise PagingError("--prefill batched is a timing option: it needs --model")
    if args.warm_seed is not None and not args.warm:
        raise PagingError("--warm-seed orders the sequences of a warm run: it needs --warm")
    timing = _timing_options(args)
    budgets = [budget_bytes(g) for g in args.budget_gb or []]
    cm = (CostSetup.from_names(args.model, args.precision, args.hardware, args.host_gb)
          if args.model else None)
    if args.budget_pct:
        from paging.cost import share_budget

        budgets += [share_budget(cm.model, pct) for pct in args.budget_pct]
    spec = _SpecMD(args, cm)
    from paging.routing import make_router

    router = make_router(args.routing)
    if args.warm:
        from paging.predict.prefetch import training_file

        if args.prefetch and args.prefetch.strip().lower().startswith("transition") \
                and training_file(args.prefetch) is None:
            raise PagingError("--warm simulates every sequence of the traces: prefetch "
                              "transition needs transition:train=FILE (sequences not simulated)")
    if router is not None:
        if args.expand == "rounds":
            raise PagingError(f"--routing {args.routing} decides per (token, layer) group: use "
                              "--expand groups (the default with --routing)")
        if spec.on or cm is not None:
            raise PagingError("--routing cannot be combined with --prefetch, --miss or --model "
                              "in this version (routed timings are not modelled)")
        for name in args.policy:
            if make_policy(name).clairvoyant:
                raise PagingError(f"--policy {name} is clairvoyant; with --routing the served "
                                  "requests depend on the cache, so they are not known ahead")
    if args.expand is None:
        args.expand = "groups" if router is not None else "rounds"
    traces = load_from_args(args)
    spec.check(traces)
    if router is not None:
        check = make_router(args.routing)
        for t in traces:  # J > K and what the trace does not know: refused before any run
            check.reset(t)
    for k in args.k or []:
        check_k(k, traces[0].layout.n_pages if traces else None)
    rows = []
    runs = [(t, None) for t in traces]
    if args.warm:
        from paging.warm import concat, order

        seqs = order(traces, args.warm_seed)
        if cm is not None and args.prefill == "batched":
            from paging.cost.timeline import batch_prefill

            runs = [concat(*zip(*[batch_prefill(t) for t in seqs], strict=True))]
        else:
            runs = [(concat(seqs)[0], None)]
    # the routing state a run carries from one sequence to the next (Cache-Prior's Δavg runs
    # "over sequences and tokens"): each cold run on a sequence gets a copy primed with the
    # earlier sequences of the file (it does not depend on the cache, so every policy and size
    # shares it); a warm run is one run, whose hook carries it by itself
    carry = make_router(args.routing)
    for trace, batch in runs:
        rows += _run_one(args, trace, batch, traces, cm, spec, carry, budgets, timing)
        if carry is not None:
            carry.prime([trace])
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
    if router is not None:
        cols += ["retained_mass", "top1_changed", "kl"]
    if cm is not None:
        cols += ["capacity", "time_ms", "stall_fraction", "tokens_per_s"]
        if any(r.get("ttft_ms") is not None for r in rows):
            cols.append("ttft_ms")
    print(format_table([{c: ("" if r.get(c) is None else r.get(c)) for c in cols}
                        for r in rows], cols))
    return 0


def _run_one(args, trace, batch, traces, cm, spec, carry, budgets, timing) -> list[dict]:
    """Every policy and capacity on one sequence (or one warm run's joined trace)."""
    from paging.cost.setup import PREFETCH_TIMING_FIELDS
    from paging.simulate import simulate

    rows = []
    P = trace.layout.n_pages
    warm = bool(trace.meta.get("warm"))
    if cm is not None:
        costs, sizes = cm.weights(trace)
        if args.prefill == "batched" and not warm:
            from paging.cost.timeline import batch_prefill

            trace, batch = batch_prefill(trace)
    else:
        costs = None if args.costs is None else _read(args.costs, P, "costs")
        sizes = None if args.sizes is None else _read(args.sizes, P, "sizes")
        if sizes is None and args.budget_gb:  # a cache trace's own object sizes
            from paging.io import trace_sizes

            sizes = trace_sizes(trace)
    record = True if (cm and spec.on) else ("hits" if (cm or warm) else False)
    caps = [dict(k=k) for k in args.k or []] + [dict(budget=b) for b in budgets]
    for name in args.policy:
        for cap in caps:
            if spec.on:
                res = simulate(trace, name.lower(), costs=costs, sizes=sizes,
                               seed=args.seed, engine=args.engine, record=record,
                               prefetch=spec.prefetcher(trace, traces),
                               miss=spec.handler(trace, costs), **cap)
            else:
                res = simulate(trace, name.lower(), costs=costs, sizes=sizes,
                               seed=args.seed, engine=args.engine, record=record,
                               routing=None if carry is None else copy.deepcopy(carry), **cap)
            row = res.to_dict()
            tm = None
            if cm is not None:
                from paging.cost.timeline import timeline_run

                tm = timeline_run(trace, res, model=cm.model, precision=cm.precision,
                                  hardware=cm.hardware, fetch_ms=costs, sizes=sizes,
                                  batch=batch, **timing)
                row.update(cm.timed_fields(res, tm))
                row.update(timing)  # only the options given (default output unchanged)
                if spec.on:
                    row.update({f: getattr(tm, f) for f in PREFETCH_TIMING_FIELDS})
            if warm:
                rows += _warm_rows(trace, res, row, tm)
            else:
                rows.append(row)
    return rows


def _warm_rows(trace, res, row, tm) -> list[dict]:
    """One row per sequence of a warm run (its counts and, timed, its TTFT and decode rate),
    then the run's own row marked ``warm_total``."""
    from paging.warm import split

    per_time = tm.per_sequence if tm is not None else None
    out = []
    for i, seq in enumerate(split(trace, res)):
        r = {k: row[k] for k in ("policy", "k", "budget_bytes", "capacity") if k in row}
        r.update(seq, warm=True, warm_total=False, miss_ratio=seq["misses"] / seq["requests"]
                 if seq["requests"] else 0.0)
        if per_time is not None:
            r.update({f: per_time[i][f] for f in ("ttft_ms", "decode_ms", "decode_tokens",
                                                  "tpot_ms", "tokens_per_s", "start_ms",
                                                  "end_ms")})
        out.append(r)
    out.append(dict(row, warm=True, warm_total=True))
    return out
