"""``paging simulate TRACE --policy NAME [--policy ...] --k K [--k ...] [--json]``."""

from __future__ import annotations

from paging.commands.common import add_trace_args, format_table, load_from_args


def add_parser(sub) -> None:
    p = sub.add_parser("simulate", help="miss counts of policies at cache sizes",
                       description="Simulate each sequence of TRACE from an empty cache for every "
                       "policy and cache size given.")
    add_trace_args(p)
    p.add_argument("--policy", action="append", required=True, metavar="NAME",
                   help="policy name (repeatable): lru, fifo, lfu, fwf, marking, llru, "
                        "least-stale, fld, belady, and NAME-dist for the per-layer variants")
    p.add_argument("--k", action="append", required=True, type=int, metavar="K",
                   help="cache size in pages (repeatable)")
    p.add_argument("--seed", type=int, default=0, help="seed of randomized policies (default 0)")
    p.add_argument("--engine", choices=("auto", "reference", "fast"), default="auto",
                   help="compiled kernel when available (auto), or the reference loop")
    p.add_argument("--json", action="store_true", help="print one JSON list of results")
    p.set_defaults(func=run)


def run(args) -> int:
    from paging.cli import print_json
    from paging.errors import check_k
    from paging.policies import make_policy
    from paging.simulate import simulate

    for name in args.policy:  # fail before any work on a bad name
        make_policy(name)
    traces = load_from_args(args)
    for k in args.k:
        check_k(k, traces[0].layout.n_pages if traces else None)
    rows = []
    for trace in traces:
        for name in args.policy:
            for k in args.k:
                res = simulate(trace, name.lower(), k, seed=args.seed, engine=args.engine)
                rows.append(res.to_dict())
    if args.json:
        print_json(rows)
    else:
        print(format_table(rows, ["trace", "policy", "k", "requests", "misses", "hits",
                                  "miss_ratio"]))
    return 0
