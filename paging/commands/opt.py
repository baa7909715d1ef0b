"""``paging opt TRACE --k K [--method belady|ilp] [--dist] [--json]``: the offline optimum."""

from __future__ import annotations

from paging.commands.common import add_trace_args, format_table, load_from_args


def add_parser(sub) -> None:
    p = sub.add_parser("opt", help="offline optimum (Belady or ILP), shared or per layer",
                       description="Minimum number of misses of each sequence of TRACE with a "
                       "cache of K pages: Belady's rule (default) or an integer program (CBC). "
                       "--dist gives OPT-DIST, the optimum with the per-layer partition.")
    add_trace_args(p)
    p.add_argument("--k", action="append", required=True, type=int, metavar="K")
    p.add_argument("--method", choices=("belady", "ilp"), default="belady")
    p.add_argument("--dist", action="store_true", help="per-layer partition (OPT-DIST)")
    p.add_argument("--time-limit", type=float, default=300.0,
                   help="seconds allowed to the ILP solver per instance (default 300)")
    p.add_argument("--json", action="store_true", help="print one JSON list of results")
    p.set_defaults(func=run)


def run(args) -> int:
    from paging.cli import print_json
    from paging.errors import check_k
    from paging.simulate import simulate

    traces = load_from_args(args)
    for k in args.k:
        check_k(k, traces[0].layout.n_pages if traces else None)
    name = "belady-dist" if args.dist else "belady"
    rows = []
    for trace in traces:
        for k in args.k:
            if args.method == "belady":
                misses = simulate(trace, name, k).misses
            else:
                from paging.offline.ilp import opt_ilp

                misses = opt_ilp(trace, k, dist=args.dist, time_limit=args.time_limit)
            n = trace.n_requests
            rows.append({"trace": trace.name, "policy": name, "method": args.method, "k": k,
                         "dist": args.dist, "requests": n, "misses": int(misses),
                         "hits": n - int(misses), "miss_ratio": misses / n if n else 0.0})
    if args.json:
        print_json(rows)
    else:
        print(format_table(rows, ["trace", "policy", "method", "k", "requests", "misses",
                                  "miss_ratio"]))
    return 0
