"""``paging adversary NAME --policy P --n N --layers L [--rounds R] [--k K] [--seed S] [--json]``.

Runs a lower-bound construction of :mod:`adversaries` against a policy and prints its
certificate: the policy's misses, OPT's misses (Belady) on the same sequence, their ratio and
the bound the theorem claims.

``paging adversary search --policy P --n N --layers L --k K [--length T] [--budget S]
[--restarts R] [--seeds M] [--seed S] [--weighted [--max-cost C]] [--json] [--out FILE]``
searches for the worst sequence instead (:mod:`adversaries.search`) and prints the best ratio
found, its certificate and, with ``--out``, writes the witness as a trace file.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from paging.options import int64, seed

#: NAME -> one line of help (the constructions live in adversaries/).
NAMES = {
    "theorem1": "fixed per-layer partition (a -dist policy) on n + l - 1 pages; needs "
                "n + l - 1 <= k < n*l (default k = n + l - 1): ratio grows with --rounds",
    "theorem2": "adaptive: each round requests the page missing from the policy's cache; "
                "deterministic online policies, k = n*l - 1: ratio >= k - l + 1",
    "theorem3": "cyclic sequence over all n*l = k + 1 pages: LRU misses every request, "
                "ratio -> k",
    "theorem4": "Yao: uniform expert per layer, k = n*l - 1, n >= 2 (--sequences): "
                "E[A]/E[OPT] vs max(H_n, log(l)/(6n))",
    "sleator-tarjan": "request a page missing from the cache among k + 1 pages (default "
                      "k = n*l - 1); deterministic online policies: ratio >= k - l + 1 (k on "
                      "one layer)",
    "random-hk": "uniform requests over k + 1 pages, one layer (--layers 1, default "
                 "k = n - 1): E[A]/E[OPT] -> H_k",
    "search": "search layered sequences for the largest ratio against any online policy "
              "(simulated annealing with restarts; needs --policy and --k): a lower bound "
              "found, with a verified certificate",
}


def add_parser(sub) -> None:
    lines = "\n".join(f"  {name:15s} {text}" for name, text in NAMES.items())
    p = sub.add_parser(
        "adversary", help="run a lower-bound construction against a policy",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Build a lower-bound sequence (Angelopoulos et al. 2025, Sec. 3, and the "
                    "classical ones) against POLICY and print online misses, OPT's misses "
                    "(Belady on the same sequence), their ratio and the theorem's bound.\n\n"
                    "constructions:\n" + lines)
    p.add_argument("name", metavar="NAME", choices=tuple(NAMES),
                   help="one of: " + ", ".join(NAMES))
    p.add_argument("--policy", default=None, metavar="P",
                   help="policy name (default lru-dist for theorem1, lru otherwise)")
    p.add_argument("--n", type=int64, required=True, help="experts per layer")
    p.add_argument("--layers", type=int64, required=True, help="layers (l)")
    p.add_argument("--rounds", type=int64, default=None,
                   help="rounds of l requests (default: per construction, see adversaries/)")
    p.add_argument("--k", type=int64, default=None,
                   help="cache size (default: what the theorem requires)")
    p.add_argument("--seed", type=seed, default=0,
                   help="seed of random sequences and randomized policies (default 0)")
    p.add_argument("--sequences", type=int64, default=None,
                   help="independent sequences for theorem4 and random-hk (default 4)")
    p.add_argument("--length", type=int64, default=None,
                   help="search: rounds of the sequence (default 64*k)")
    p.add_argument("--budget", type=int64, default=None,
                   help="search: candidate evaluations (default 4000)")
    p.add_argument("--restarts", type=int64, default=None,
                   help="search: annealing runs from random starts (default 6)")
    p.add_argument("--seeds", type=int64, default=None,
                   help="search: runs per candidate of a randomized policy (default 8)")
    p.add_argument("--out", default=None, metavar="FILE",
                   help="search: write the witness sequence as a trace file (.npz, .csv, ...); "
                        "with --weighted also its page costs to FILE.costs.json")
    p.add_argument("--weighted", action="store_true",
                   help="search: also choose every page's fetch cost in 1..--max-cost; OPT is "
                        "the exact min-cost-flow optimum")
    p.add_argument("--max-cost", type=int64, default=None, metavar="C",
                   help="search --weighted: the largest page cost (default 8)")
    p.add_argument("--verify", action="store_true",
                   help="record and check independently every run of the construction (the "
                        "online policy's and OPT's, through paging.simulate.verifying; an "
                        "adaptive construction's misses against a verified replay of the "
                        "sequence it built); search verifies its witness anyway")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


SEARCH_ONLY = ("length", "budget", "restarts", "seeds", "out", "max_cost")


def run_search(args) -> int:
    """``paging adversary search``: the search, its certificate and the witness file."""
    from adversaries.search import search
    from paging import io
    from paging.cli import print_json
    from paging.errors import PagingError
    from paging.io.atomic import atomic_path, check_target

    for opt in ("rounds", "sequences"):
        if getattr(args, opt) is not None:
            raise PagingError(f"--{opt} does not apply to search (use --length for its rounds)")
    if args.policy is None:
        raise PagingError("adversary search needs --policy P")
    if args.k is None:
        raise PagingError("adversary search needs --k K")
    if args.max_cost is not None and not args.weighted:
        raise PagingError("--max-cost applies with --weighted")
    max_cost = (8 if args.max_cost is None else args.max_cost) if args.weighted else 0
    if args.weighted and max_cost < 2:
        raise PagingError(f"--max-cost must be an integer >= 2, got {max_cost}")
    if args.out is not None:  # a bad file name fails before the search
        try:
            io.format_for(args.out, option=None)
        except PagingError as e:  # (it names no option: this command's is --out)
            raise PagingError(f"--out: {e.message}", e.file) from None
        check_target(args.out)
        if args.weighted:
            check_target(f"{args.out}.costs.json")
    res = search(args.policy, n=args.n, layers=args.layers, k=args.k, length=args.length,
                 budget=args.budget, restarts=args.restarts, seed=args.seed, seeds=args.seeds,
                 show=None if not args.json else False, max_cost=max_cost)
    if args.out is not None:
        if res.costs is not None:  # the costs file is put in place only once the trace is
            import json

            with atomic_path(f"{args.out}.costs.json") as tmp:
                Path(tmp).write_text(json.dumps([float(x) for x in res.costs]) + "\n")
                io.write(res.trace, args.out)
        else:
            io.write(res.trace, args.out)
    d = res.to_dict(sequence=args.json)
    if args.out is not None:
        d["out"] = str(args.out)
    if args.json:
        print_json(d)
        return 0
    for key in ("policy", "n", "layers", "k", "length", "requests", "evaluations",
                "online_misses", "opt_misses"):
        label = key.replace("misses", "cost") if d["weighted"] else key
        print(f"{label:14s} {d[key]}")
    if d["weighted"]:
        print(f"{'costs':14s} {d['costs']}  (OPT: min-cost flow, exact)")
    exact = f"  ({d['ratio_exact']})" if d["ratio_exact"] else ""
    print(f"{'ratio':14s} {d['ratio']:.6f}{exact}")
    if d["ci95"] is not None:
        print(f"{'ci95':14s} [{d['ci95'][0]:.6f}, {d['ci95'][1]:.6f}] over "
              f"{len(d['certificate']['seeds'])} fresh seeds (search's own estimate "
              f"{d['search_ratio']:.6f})")
    opt = "min-cost flow; Belady's schedule" if d["weighted"] else "belady"
    print(f"{'certificate':14s} ALG and OPT ({opt}) re-simulated and verified")
    print(f"{'witness':14s} " + " + ".join(f"{len(b['motif'])}-round motif x{b['reps']}"
                                           for b in d["blocks"]) + " (last one repeated)")
    if args.out is not None:
        print(f"{'out':14s} {args.out}")
    return 0


def run(args) -> int:
    from adversaries import ADVERSARIES, RANDOMIZED
    from paging.cli import print_json
    from paging.errors import PagingError

    if args.name == "search":
        return run_search(args)
    for opt in SEARCH_ONLY:
        if getattr(args, opt) is not None:
            raise PagingError(f"--{opt.replace('_', '-')} applies to search only, not "
                              f"{args.name}")
    if args.weighted:
        raise PagingError(f"--weighted applies to search only, not {args.name}")
    policy = args.policy or ("lru-dist" if args.name == "theorem1" else "lru")
    kw = dict(n=args.n, layers=args.layers, rounds=args.rounds, k=args.k, seed=args.seed)
    if args.sequences is not None:
        if args.name not in RANDOMIZED:
            raise PagingError(f"--sequences applies to {' and '.join(RANDOMIZED)}, not "
                              f"{args.name}")
        kw["sequences"] = args.sequences
    if args.name in RANDOMIZED + ("theorem2", "sleator-tarjan"):
        # (their bar over the sequences or the adaptive rounds; a --json run stays quiet)
        kw["show"] = False if args.json else None
    import contextlib

    from paging.simulate import verifying

    with verifying() if args.verify else contextlib.nullcontext():
        res = ADVERSARIES[args.name](policy, **kw)
    d = res.to_dict()
    if args.json:
        print_json(d)
        return 0
    w = max(len(key) for key in d["params"]) + 1
    for key in ("adversary", "policy", "k", "requests", "online_misses", "opt_misses"):
        print(f"{key:{w}s} {d[key]}")
    print(f"{'ratio':{w}s} {d['ratio']:.6f}  ({d['ratio_exact']})")
    print(f"{'bound':{w}s} {d['bound']:.6f}  ({d['bound_name']})")
    for key, value in d["params"].items():
        if key != "per_sequence":
            print(f"{key:{w}s} {value:.6f}" if isinstance(value, float)
                  else f"{key:{w}s} {value}")
    return 0
