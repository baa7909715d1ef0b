"""``paging simulate TRACE --policy NAME [--policy ...] (--k K | --budget-gb G) [...] [--json]``.

Weighted runs (DESIGN.md, "Added options"): ``--costs FILE`` and ``--sizes FILE`` (a JSON list,
one number per page id, or a ``.npy``) give the pages' fetch costs and sizes; ``--budget-gb G``
counts the cache in bytes instead of pages. ``--model M --precision Q --hardware H`` take sizes
and fetch times from the cost model (:mod:`paging.cost`) and add the latency timeline
(:mod:`paging.cost.timeline`): ``capacity``, ``stall_ms``, ``time_ms``, ``tokens_per_s`` and the
other timing fields in the JSON.
"""

from __future__ import annotations

from paging.commands.common import add_trace_args, format_table, load_from_args

TIMING_FIELDS = ("time_ms", "stall_ms", "stall_fraction", "ttft_ms", "tpot_ms", "tokens_per_s",
                 "decode_tokens", "bytes_moved", "copy_busy_ms")


def add_parser(sub) -> None:
    p = sub.add_parser("simulate", help="miss counts (and costs, time) of policies at cache sizes",
                       description="Simulate each sequence of TRACE from an empty cache for every "
                       "policy and cache size given. With --model, sizes and fetch times come "
                       "from the cost model and the latency timeline is reported too.")
    add_trace_args(p)
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
    p.add_argument("--seed", type=int, default=0, help="seed of randomized policies (default 0)")
    p.add_argument("--engine", choices=("auto", "reference", "fast"), default="auto",
                   help="compiled kernel when available (auto), or the reference loop")
    p.add_argument("--json", action="store_true", help="print one JSON list of results")
    p.set_defaults(func=run)


class _CostModel:
    """The cost model chosen on the command line, applied to one trace's layout."""

    def __init__(self, args):
        from paging.cost import get_hardware, get_model, get_precision

        self.model = get_model(args.model)
        self.precision = get_precision(args.precision or "bf16")
        self.hardware = get_hardware(args.hardware or "link-5gbps")
        self.host_gb = args.host_gb
        self.expert_bytes = self.model.expert_bytes(self.precision)

    def weights(self, trace):
        """``(fetch_ms, sizes)`` per page id for ``trace`` (tiers placed by its frequencies)."""
        import numpy as np

        from paging.cost import budget_bytes, page_costs, page_sizes, place_by_frequency

        self.model.check_layout(trace.layout, trace.name)
        P = trace.layout.n_pages
        if self.host_gb is None:
            tiers = np.zeros(P, dtype=np.int8)
        else:
            freq = np.bincount(trace.pages, minlength=P)
            tiers = place_by_frequency(freq, budget_bytes(self.host_gb) // self.expert_bytes)
        return (page_costs(self.model, self.precision, self.hardware, tiers),
                page_sizes(self.model, self.precision))

    def describe(self) -> dict:
        return {"model": self.model.name, "precision": self.precision.name,
                "hardware": self.hardware.name}


def _read(path, n_pages: int, kind: str):
    from paging.io.weights import read_weights

    return read_weights(path, n_pages, kind)


def run(args) -> int:
    from paging.cli import print_json
    from paging.cost import budget_bytes
    from paging.errors import PagingError, check_k
    from paging.policies import make_policy
    from paging.simulate import simulate

    for name in args.policy:  # fail before any work on a bad name
        make_policy(name)
    if bool(args.k) == bool(args.budget_gb):
        raise PagingError("give the cache size as --k K (pages) or --budget-gb G (bytes), "
                          "not both and not neither")
    if args.model and (args.costs or args.sizes):
        raise PagingError("--model gives the sizes and fetch costs; drop --costs/--sizes (or "
                          "--model)")
    if not args.model and (args.precision or args.hardware or args.host_gb is not None):
        raise PagingError("--precision, --hardware and --host-gb need --model")
    if args.prefill == "batched" and not args.model:
        raise PagingError("--prefill batched is a timing option: it needs --model")
    budgets = [budget_bytes(g) for g in args.budget_gb or []]
    cm = _CostModel(args) if args.model else None
    traces = load_from_args(args)
    for k in args.k or []:
        check_k(k, traces[0].layout.n_pages if traces else None)
    rows = []
    for trace in traces:
        P = trace.layout.n_pages
        batch = None
        if cm is not None:
            costs, sizes = cm.weights(trace)
            if args.prefill == "batched":
                from paging.cost.timeline import batch_prefill

                trace, batch = batch_prefill(trace)
        else:
            costs = None if args.costs is None else _read(args.costs, P, "costs")
            sizes = None if args.sizes is None else _read(args.sizes, P, "sizes")
            if sizes is None and args.budget_gb:  # a cache trace's own object sizes
                from paging.io import trace_sizes

                sizes = trace_sizes(trace)
        caps = [dict(k=k) for k in args.k or []] + [dict(budget=b) for b in budgets]
        for name in args.policy:
            for cap in caps:
                res = simulate(trace, name.lower(), costs=costs, sizes=sizes, seed=args.seed,
                               engine=args.engine, record="hits" if cm else False, **cap)
                row = res.to_dict()
                if cm is not None:
                    from paging.cost.timeline import timeline

                    tm = timeline(trace, res.hit_mask, model=cm.model, precision=cm.precision,
                                  hardware=cm.hardware, fetch_ms=costs, sizes=sizes, batch=batch)
                    row.update(cm.describe())
                    row["capacity"] = (res.k if res.k is not None
                                       else res.budget // cm.expert_bytes)
                    row.update({f: getattr(tm, f) for f in TIMING_FIELDS})
                rows.append(row)
    if args.json:
        print_json(rows)
        return 0
    cols = ["trace", "policy", "k" if args.k else "budget_bytes", "requests", "misses", "hits",
            "miss_ratio"]
    if costs is not None or cm is not None:
        cols.append("cost")
    if cm is not None:
        cols += ["capacity", "time_ms", "stall_fraction", "tokens_per_s"]
        if any(r["ttft_ms"] is not None for r in rows):
            cols.append("ttft_ms")
    print(format_table([{c: ("" if r.get(c) is None else r.get(c)) for c in cols}
                        for r in rows], cols))
    return 0
