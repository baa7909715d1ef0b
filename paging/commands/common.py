"""Options shared by the commands that read a TRACE (file path or generator spec)."""

from __future__ import annotations

import argparse

from paging.options import int64


def add_trace_args(p: argparse.ArgumentParser, *, expand: bool = True,
                   many: bool = False) -> None:
    from paging.io import READ_FORMATS  # the format registry (loads the readers)

    p.add_argument("trace", metavar="TRACE", nargs="+" if many else None,
                   help="a trace file (.jsonl, .json, .npz, .csv, libCacheSim .oracleGeneral "
                        "or .libcachesim.csv, .txt with one id per line; relative paths are also "
                        "tried under $PAGING_TRACES) or a generator spec such as "
                        "zipf:n=8,layers=32,tokens=1000,a=1.0,h=0,seed=0")
    p.add_argument("--format", default=None, metavar="FMT",
                   choices=READ_FORMATS,
                   help=f"trace format, instead of detecting it: {', '.join(READ_FORMATS)} "
                        "(oracle-general, libcachesim-csv and text are cache traces: one layer "
                        "of objects, or page ids with --n-experts and --layers)")
    if expand:
        p.add_argument("--expand", choices=("rounds", "groups"), default="rounds",
                       help="top-K expansion: the paper's rounds (default) or pinned groups")
    p.add_argument("--strict", action="store_true",
                   help="an incomplete token (missing some layer) is an error, not dropped")
    p.add_argument("--phase", choices=("both", "prefill", "decode"), default="both",
                   help="for prefill/decode traces: which phase(s) to read (default both)")
    p.add_argument("--n-experts", type=int64, default=None, help="experts per layer "
                   "(default: from the file)")
    p.add_argument("--layers", type=int64, default=None, help="layers (default: from the file)")


def policy_help() -> str:
    """The registered policy names for a ``--policy`` help text (from the registry; `paging
    policies` describes each)."""
    from paging.policies import BASE_POLICIES, MODEL_POLICIES

    return (", ".join([*BASE_POLICIES, *MODEL_POLICIES]) + ", and NAME-dist for the per-layer "
            "variants (paging policies describes each)")


def load_from_args(args: argparse.Namespace):
    """The traces named by ``args.trace`` (a list of :class:`~paging.trace.Trace`; the
    sequences of every file in order when ``args.trace`` is a list)."""
    from paging.io import load

    sources = args.trace if isinstance(args.trace, list) else [args.trace]
    return [t for src in sources
            for t in load(src, expand=getattr(args, "expand", "rounds"), strict=args.strict,
                          phase=args.phase, n_experts=args.n_experts, n_layers=args.layers,
                          format=getattr(args, "format", None))]


def format_table(rows: list[dict], cols: list[str]) -> str:
    """A plain left-aligned text table."""
    def cell(v):
        return f"{v:.6f}" if isinstance(v, float) else str(v)

    widths = {c: max(len(c), *(len(cell(r[c])) for r in rows)) if rows else len(c) for c in cols}
    lines = ["  ".join(c.ljust(widths[c]) for c in cols)]
    lines += ["  ".join(cell(r[c]).ljust(widths[c]) for c in cols) for r in rows]
    return "\n".join(lines)
