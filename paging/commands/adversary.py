"""``paging adversary NAME --policy P --n N --layers L [--rounds R] [--k K] [--seed S] [--json]``.

Runs a lower-bound construction of :mod:`adversaries` against a policy and prints its
certificate: the policy's misses, OPT's misses (Belady) on the same sequence, their ratio and
the bound the theorem claims.
"""

from __future__ import annotations

import argparse

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
    p.add_argument("--n", type=int, required=True, help="experts per layer")
    p.add_argument("--layers", type=int, required=True, help="layers (l)")
    p.add_argument("--rounds", type=int, default=None,
                   help="rounds of l requests (default: per construction, see adversaries/)")
    p.add_argument("--k", type=int, default=None,
                   help="cache size (default: what the theorem requires)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of random sequences and randomized policies (default 0)")
    p.add_argument("--sequences", type=int, default=None,
                   help="independent sequences for theorem4 and random-hk (default 4)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args) -> int:
    from adversaries import ADVERSARIES, RANDOMIZED
    from paging.cli import print_json
    from paging.errors import PagingError

    policy = args.policy or ("lru-dist" if args.name == "theorem1" else "lru")
    kw = dict(n=args.n, layers=args.layers, rounds=args.rounds, k=args.k, seed=args.seed)
    if args.sequences is not None:
        if args.name not in RANDOMIZED:
            raise PagingError(f"--sequences applies to {' and '.join(RANDOMIZED)}, not "
                              f"{args.name}")
        kw["sequences"] = args.sequences
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
