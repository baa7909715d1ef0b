"""``paging figs [--only NAME] [--out DIR] [--quick] [--trace PATH ...]``: the paper's figures.

Runs the scripts of ``experiments/`` (:mod:`experiments.run_all`): each computes a CSV (and a
JSON of its parameters and seeds) and draws PNG + PDF from it, into ``paper_figs/`` by default.
The real-trace figures (fig4, fig5) read the shipped traces under $PAGING_TRACES, or the files
given with --trace; without either they are skipped with a one-line message.
"""

from __future__ import annotations

FIGURES = ("fig4", "fig5", "fig6a", "fig6b", "coupon")


def add_arguments(p) -> None:
    """The options of ``paging figs`` (shared with ``python -m experiments.run_all``)."""
    p.add_argument("--only", action="append", metavar="NAME", default=None,
                   help=f"make only this figure (repeatable): {', '.join(FIGURES)}")
    p.add_argument("--out", default="paper_figs", metavar="DIR",
                   help="output folder (default paper_figs)")
    p.add_argument("--quick", action="store_true",
                   help="reduced sizes and seeds (seconds; for checks, not for the paper)")
    p.add_argument("--trace", action="append", metavar="PATH", default=None,
                   help="routing file for fig4/fig5 instead of the shipped traces (repeatable; "
                        "any format `paging trace info` reads)")


def add_parser(sub) -> None:
    p = sub.add_parser("figs", help="compute and draw the paper's figures (CSV, PNG, PDF)",
                       description="Compute every figure of Sec. 5 of Angelopoulos et al. "
                       "into CSV + JSON and draw PNG + PDF from the CSV. Progress goes to "
                       "stderr, one line per step.")
    add_arguments(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from experiments.run_all import run_figures

    run_figures(only=args.only, out_dir=args.out, quick=args.quick, traces=args.trace)
    return 0
