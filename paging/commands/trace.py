"""``paging trace info TRACE`` and ``paging trace convert TRACE OUT`` (DESIGN.md).

TRACE is a trace file or a generator spec (``zipf:n=8,layers=32,tokens=1000``). ``info`` prints
the statistics of :func:`paging.stats.trace_info` (a table, or one JSON document with ``--json``);
``convert`` writes the loaded sequences (or, with ``--sequence S``, one of them: its index from
0 or its name) as ``.npz``, CSV, libCacheSim CSV or libCacheSim oracleGeneral (format from
``--to`` or OUT's extension), atomically.
"""

from __future__ import annotations

from paging.commands.common import add_trace_args, load_from_args
from paging.errors import PagingError


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("trace", help="describe or convert a trace",
                              description="Describe or convert a trace file or generator spec.")
    sub = p.add_subparsers(dest="trace_command", metavar="ACTION")
    sub.required = True

    from paging.io import WRITE_FORMATS  # the format registry

    info = sub.add_parser("info", help="sequences, tokens, entropy and reuse of a trace")
    add_trace_args(info)
    info.add_argument("--json", action="store_true", help="print one JSON document")
    info.set_defaults(func=_info)

    conv = sub.add_parser("convert", help="write a trace as npz, csv, libCacheSim csv or "
                                          "oracleGeneral")
    add_trace_args(conv)
    conv.add_argument("out", metavar="OUT", help="output file")
    conv.add_argument("--to", choices=WRITE_FORMATS,
                      default=None, help="output format (default: from OUT's extension: .npz, "
                                         ".csv, .libcachesim.csv, .oracleGeneral or .bin)")
    conv.add_argument("--sequence", metavar="S", default=None,
                      help="write only this sequence of TRACE: its index from 0 or its name "
                           "(paging trace info lists them); a libCacheSim file of one sequence "
                           "keeps layered page ids")
    conv.set_defaults(func=_convert)


def _info(args) -> int:
    from paging.cli import print_json
    from paging.stats import format_info, trace_info

    info = trace_info(load_from_args(args))
    if args.json:
        print_json(info)
    else:
        print(format_info(info))
    return 0


def _convert(args) -> int:
    from paging.io import format_for, write
    from paging.io.atomic import check_target

    fmt = format_for(args.out, args.to)  # fail on a bad name before reading the input
    check_target(args.out)
    traces = load_from_args(args)
    if args.sequence is not None:
        traces = [_one_sequence(traces, args.sequence, args.trace)]
    try:
        write(traces, args.out, fmt)
    except PagingError as e:  # (about the traces read, e.g. "nothing to write": the source's)
        if e.file is not None:
            raise
        raise PagingError(e.message, str(args.trace)) from None
    n = sum(t.n_requests for t in traces)
    print(f"wrote {args.out} ({fmt}): {len(traces)} sequence(s), {n} requests")
    if fmt in ("oracle-general", "libcachesim-csv") and len(traces) > 1:
        import sys

        P = traces[0].layout.n_pages
        sys.stderr.write(f"note: libCacheSim formats hold one request stream: the {len(traces)} "
                         f"sequences are back to back, sequence s's object ids offset by s x "
                         f"{P} (only sequence 0's ids are layered page ids under --n-experts "
                         f"{traces[0].layout.n_experts} --layers {traces[0].layout.n_layers}); "
                         "to read them as such write one sequence per file "
                         "(--sequence S)\n")
    return 0


def _one_sequence(traces: list, which: str, source: str):
    """The sequence of ``traces`` named ``which``, else the one of index ``which``; a one-line
    error naming the sequences otherwise."""

    for t in traces:
        if t.name == which:
            return t
    w = which.strip()
    if w.isascii() and w.isdigit() and int(w) < len(traces):
        return traces[int(w)]
    names = ", ".join(repr(t.name) for t in traces[:5]) + (", ..." if len(traces) > 5 else "")
    raise PagingError(f"--sequence {which!r}: no such sequence; expected an index 0.."
                      f"{len(traces) - 1} or a name ({names})", source)
