"""``paging trace info TRACE`` and ``paging trace convert TRACE OUT`` (DESIGN.md).

TRACE is a trace file or a generator spec (``zipf:n=8,layers=32,tokens=1000``). ``info`` prints
the statistics of :func:`paging.stats.trace_info` (a table, or one JSON document with ``--json``);
``convert`` writes the loaded sequences as ``.npz``, CSV, libCacheSim CSV or libCacheSim
oracleGeneral (format from ``--to`` or OUT's extension), atomically.
"""

from __future__ import annotations

import argparse


def _load_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--expand", choices=("rounds", "groups"), default="rounds",
                   help="top-K expansion: K rounds per token (paper, Sec. 5.1) or one group per "
                        "(token, layer) (default: rounds)")
    p.add_argument("--strict", action="store_true",
                   help="an incomplete token (a layer missing) is an error, not dropped")
    p.add_argument("--phase", choices=("both", "prefill", "decode"), default="both",
                   help="for traces with prefill and decode: which phase (default: both, "
                        "prefill then decode as one sequence)")
    p.add_argument("--n-experts", type=int, default=None, metavar="N",
                   help="experts per layer (default: from the file, else max id + 1)")
    p.add_argument("--layers", type=int, default=None, metavar="L",
                   help="layers (default: from the file, else max layer + 1)")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("trace", help="describe or convert a trace",
                              description="Describe or convert a trace file or generator spec.")
    sub = p.add_subparsers(dest="trace_command", metavar="ACTION")
    sub.required = True

    info = sub.add_parser("info", help="sequences, tokens, entropy and reuse of a trace")
    info.add_argument("trace", metavar="TRACE", help="trace file or generator spec")
    _load_options(info)
    info.add_argument("--json", action="store_true", help="print one JSON document")
    info.set_defaults(func=_info)

    conv = sub.add_parser("convert", help="write a trace as npz, csv, libCacheSim csv or "
                                          "oracleGeneral")
    conv.add_argument("trace", metavar="TRACE", help="trace file or generator spec")
    conv.add_argument("out", metavar="OUT", help="output file")
    conv.add_argument("--to", choices=("npz", "csv", "libcachesim-csv", "oracle-general"),
                      default=None, help="output format (default: from OUT's extension: .npz, "
                                         ".csv, .libcachesim.csv, .oracleGeneral or .bin)")
    _load_options(conv)
    conv.set_defaults(func=_convert)


def _load(args):
    from paging.io import load

    return load(args.trace, expand=args.expand, strict=args.strict, phase=args.phase,
                n_experts=args.n_experts, n_layers=args.layers)


def _info(args) -> int:
    from paging.cli import print_json
    from paging.stats import format_info, trace_info

    info = trace_info(_load(args))
    if args.json:
        print_json(info)
    else:
        print(format_info(info))
    return 0


def _convert(args) -> int:
    from paging.io import format_for, write

    fmt = format_for(args.out, args.to)  # fail on a bad name before reading the input
    traces = _load(args)
    write(traces, args.out, fmt)
    n = sum(t.n_requests for t in traces)
    print(f"wrote {args.out} ({fmt}): {len(traces)} sequence(s), {n} requests")
    return 0
