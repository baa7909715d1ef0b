"""``paging opt TRACE (--k K | --budget-gb G) [--method belady|ilp|flow|lp|foo|upper]
[--costs FILE] [--sizes FILE] [--dist] [--routing-flex j=J[,m=M]] [--json]``: the offline
optimum, unit-cost or weighted, or with routing flexibility."""

from __future__ import annotations

from paging.commands.common import add_trace_args, format_table, load_from_args
from paging.options import int64

METHODS = ("belady", "ilp", "flow", "lp", "foo", "upper")


def add_parser(sub) -> None:
    p = sub.add_parser("opt", help="offline optimum (Belady, ILP, min-cost flow, LP/FOO bounds), "
                       "shared or per layer",
                       description="Minimum number of misses (unit costs) or total fetch cost "
                       "(--costs) of each sequence of TRACE with a cache of K pages or a byte "
                       "budget: Belady's rule (default), an integer program (CBC), a min-cost "
                       "flow (uniform sizes), or lower/upper bounds (LP relaxation, FOO) for "
                       "variable sizes. --dist gives the optimum with the per-layer partition.")
    add_trace_args(p)
    p.add_argument("--k", action="append", type=int64, metavar="K",
                   help="cache size in pages (repeatable)")
    p.add_argument("--budget-gb", type=float, default=None, metavar="G",
                   help="cache size in GB (1 GB = 1e9 bytes, rounded down to whole bytes), "
                        "with page sizes from --sizes")
    p.add_argument("--costs", metavar="FILE", default=None,
                   help="fetch cost per page id: a JSON list or a .npy array")
    p.add_argument("--sizes", metavar="FILE", default=None,
                   help="size in bytes per page id: a JSON list or a .npy array")
    p.add_argument("--method", choices=METHODS, default=None,
                   help="belady (default for unit costs), ilp, flow, lp or foo (bounds); with "
                        "--costs or --sizes the default is flow for uniform sizes, else ilp up "
                        "to 5,000 requests and foo's bounds above")
    p.add_argument("--dist", action="store_true", help="per-layer partition (OPT-DIST)")
    p.add_argument("--routing-flex", metavar="j=J[,m=M]", default=None,
                   help="the fewest misses when the router may deviate: keep each (token, layer)'s "
                        "top J experts, fill the other slots with any expert of rank < M (or an "
                        "original one; without M any expert of the layer); needs router scores. "
                        "--method ilp (exact), lp (lower bound), upper (fast feasible routing); "
                        "default: exact on small instances, else the upper bound and LP bound")
    p.add_argument("--time-limit", type=float, default=300.0,
                   help="seconds allowed to the ILP solver per instance (default 300)")
    p.add_argument("--verify", action="store_true",
                   help="check Belady's run independently (capacity, every request served, "
                        "misses = the eviction log); with --method ilp, the ILP's optimum "
                        "must equal that verified run's misses (unit costs)")
    p.add_argument("--json", action="store_true", help="print one JSON list of results")
    p.set_defaults(func=run)


def run(args) -> int:
    import contextlib

    from paging.cli import print_json
    from paging.errors import PagingError, check_k
    from paging.simulate import simulate, verifying

    if (args.k is None) == (args.budget_gb is None):
        raise PagingError("give exactly one of --k (pages) or --budget-gb (bytes)")
    from paging.offline.ilp import check_time_limit

    check_time_limit(args.time_limit, "--time-limit")  # (up front, whichever method: a bad
    # limit was seen only once CBC ran, as 'not solved within nan s (CBC: Infeasible)')
    from paging.options import distinct

    distinct("--k", args.k or [], args.k or [])  # (a row each: printed twice)
    weighted = args.costs is not None or args.sizes is not None or args.budget_gb is not None
    if args.verify and (weighted or args.routing_flex is not None
                        or args.method not in (None, "belady", "ilp")):
        raise PagingError("--verify checks the unit-cost optimum (--method belady or ilp): "
                          "not with --costs, --sizes, --budget-gb, --routing-flex or another "
                          "--method" + (f" ({args.method})" if args.method not in
                                        (None, "belady", "ilp") else ""))
    if args.routing_flex is not None:
        return _flex(args, weighted)
    if args.method == "upper":
        raise PagingError("--method upper is the routing-flexible upper bound; it needs "
                          "--routing-flex j=J[,m=M]")
    # (weighted: opt_weighted's auto, flow for uniform sizes, else the ILP up to 5,000
    # requests and FOO's bounds above; a default of flow refused sizes that vary)
    method = args.method or ("auto" if weighted else "belady")
    if method == "belady" and weighted:
        raise PagingError("--method belady is optimal for unit costs and sizes only; use "
                          "--method flow or ilp with --costs/--sizes/--budget-gb")
    if args.budget_gb is not None:
        if args.sizes is None:
            raise PagingError("--budget-gb needs --sizes FILE (bytes per page id)")
        from paging.cost import budget_bytes

        budget = budget_bytes(args.budget_gb, "--budget-gb")  # (simulate's and serve's too)
    traces = load_from_args(args)
    n_pages = traces[0].layout.n_pages if traces else None
    for k in args.k or ():
        check_k(k, n_pages)
    costs = sizes = None
    if traces:
        from paging.io.weights import read_weights

        if args.costs is not None:
            costs = read_weights(args.costs, n_pages, "costs")
        if args.sizes is not None:
            sizes = read_weights(args.sizes, n_pages, "sizes")
    name = "belady-dist" if args.dist else "belady"
    rows = []
    for trace in traces:
        for k in args.k or [None]:
            if weighted or method in ("flow", "lp", "foo"):
                rows.append(_weighted_row(trace, args, method, name, k, costs, sizes,
                                          None if k is not None else budget))
                continue
            if method == "belady":
                with verifying() if args.verify else contextlib.nullcontext():
                    misses = simulate(trace, name, k).misses
            else:
                from paging.offline.ilp import opt_ilp

                misses = opt_ilp(trace, k, dist=args.dist, time_limit=args.time_limit,
                                 progress=False if args.json else None)
                if args.verify:  # (the ILP must agree with a verified Belady run)
                    with verifying():
                        belady = simulate(trace, name, k).misses
                    if belady != misses:
                        from paging.verify import VerificationError

                        raise VerificationError(f"{trace.name}: ilp gives {int(misses)} misses "
                                                f"at k = {k}, the verified {name} run {belady}")
            n = trace.n_requests
            rows.append({"trace": trace.name, "policy": name, "method": method, "k": k,
                         "dist": args.dist, "requests": n, "misses": int(misses),
                         "hits": n - int(misses), "miss_ratio": misses / n if n else 0.0,
                         "cost": float(misses)})
    if args.json:
        print_json(rows)
    else:
        cols = ["trace", "policy", "method", "k", "requests", "misses", "miss_ratio", "cost"]
        if sizes is not None:
            cols += ["lower", "upper", "bytes_fetched"]
        elif any("exact" in r for r in rows):
            cols += ["lower", "exact"]
        print(format_table(rows, cols))
    return 0


def _weighted_row(trace, args, method, name, k, costs, sizes, budget) -> dict:
    from paging.offline.weighted import opt_weighted

    res = opt_weighted(trace, k=k, budget=budget, costs=costs, sizes=sizes, dist=args.dist,
                       method=method, time_limit=args.time_limit,
                       progress=False if args.json else None)  # (the ILP's bar, on a terminal)
    n = trace.n_requests
    row = {"trace": trace.name, "policy": name, "method": res.method, "k": k, "dist": args.dist,
           "requests": n, "misses": res.misses, "hits": n - res.misses,
           "miss_ratio": res.misses / n if n else 0.0, "cost": res.cost}
    if budget is not None:
        row["budget_bytes"] = budget
    if sizes is None and costs is not None:  # (a flow whose quantised costs lost precision
        # is an upper bound: said, with its lower bound, not passed off as the optimum)
        row.update(lower=res.lower, exact=res.exact)
    if sizes is not None:
        row.update(lower=res.lower, upper=res.upper, exact=res.exact,
                   bytes_fetched=res.bytes_fetched)
    return row


def _flex(args, weighted: bool) -> int:
    """``--routing-flex``: :func:`paging.offline.routing_flex.opt_routing_flex` per sequence."""
    from paging.cli import print_json
    from paging.errors import PagingError
    from paging.offline.routing_flex import opt_routing_flex, parse_flex

    spec = parse_flex(args.routing_flex)
    if weighted or args.dist or args.k is None:
        raise PagingError("--routing-flex takes --k (unit costs, one shared cache): not "
                          "--budget-gb, --costs, --sizes or --dist")
    method = args.method or "auto"
    if method not in ("ilp", "lp", "upper", "auto"):
        raise PagingError(f"--routing-flex computes with --method ilp, lp or upper, not {method}")
    rows = []
    for trace in load_from_args(args):
        for k in args.k:
            r = opt_routing_flex(trace, k, spec, method=method, time_limit=args.time_limit,
                                 progress=False if args.json else None)  # (CBC's bar)
            rows.append({"trace": trace.name, "policy": "opt-routing-flex",
                         "routing_flex": str(spec), "method": r.method, "k": k,
                         "exact": r.exact, "misses": r.misses,
                         "lower": r.lower, "upper": r.upper, "belady": r.belady,
                         "groups": r.groups, "requests": r.requests})
    if args.json:
        print_json(rows)
    else:
        print(format_table(rows, ["trace", "routing_flex", "k", "method", "misses", "lower",
                                  "upper", "belady", "exact"]))
    return 0
