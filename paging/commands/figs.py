"""``paging figs [--only NAME] [--out DIR] [--quick] [--trace PATH ...]``: the paper's figures.

Runs the scripts of ``experiments/`` (:mod:`experiments.run_all`): each computes a CSV (and a
JSON of its parameters and seeds) and draws PNG + PDF from it, into ``paper_figs/`` by default.
The figures drawn from real traces (those whose module sets ``REAL_TRACES = True``: fig4, fig5,
cost, zipmoe, predictions, routing, learned, specmd) read the shipped traces under
$PAGING_TRACES, or the files given with --trace; without either they are skipped with a one-line
message.
"""

from __future__ import annotations

from experiments.registry import FIGURES, add_arguments

__all__ = ["FIGURES", "add_parser", "run"]


def add_parser(sub) -> None:
    p = sub.add_parser("figs", help="compute and draw the paper's figures (CSV, PNG, PDF)",
                       description="Compute every figure of Sec. 5 of Angelopoulos et al. "
                       "into CSV + JSON and draw PNG + PDF from the CSV. Progress goes to "
                       "stderr, one line per step.")
    add_arguments(p)
    p.set_defaults(func=run)


def run(args) -> int:
    # imported when figures are made: it loads matplotlib and the figure modules' imports
    from experiments.run_all import run_figures

    run_figures(only=args.only, out_dir=args.out, quick=args.quick, traces=args.trace,
                verify=args.verify)
    return 0
