"""``paging figs [--only NAME] [--out DIR] [--quick] [--trace PATH ...]``: the paper's figures.

Runs the scripts of ``experiments/`` (:mod:`experiments.run_all`): each computes a CSV (and a
JSON of its parameters and seeds) and draws PNG + PDF from it, into ``paper_figs/`` by default.
The figures drawn from real traces (those whose module sets ``REAL_TRACES = True``: fig4, fig5,
cost, zipmoe, predictions, routing, learned, specmd) read the shipped traces under
$PAGING_TRACES, or the files given with --trace; without either they are skipped with a one-line
message.
"""

from __future__ import annotations

#: The one registry of figures: name (for ``--only``) -> the module that makes it. Each module
#: offers ``compute(out_dir, *, quick, ...)``, ``plot(csv_path, out_dir)``, ``main(argv)``,
#: ``NAME`` (the stem of its files) and ``REAL_TRACES`` (whether it takes ``traces=``).
#: Module paths only: nothing in :mod:`paging` imports :mod:`experiments` until a figure is made.
FIGURES = {
    "fig4": "experiments.fig4",
    "fig5": "experiments.fig5",
    "fig6a": "experiments.fig6a",
    "fig6b": "experiments.fig6b",
    "coupon": "experiments.fig_coupon",
    "cost": "experiments.fig_cost",
    "zipmoe": "experiments.fig_zipmoe",
    "predictions": "experiments.fig_predictions",
    "routing": "experiments.fig_routing",
    "learned": "experiments.fig_learned",
    "specmd": "experiments.fig_specmd",
}
DEFAULT_OUT = "paper_figs"


def add_arguments(p, *, only: bool = True, trace: bool = True) -> None:
    """The options of ``paging figs`` (shared with ``python -m experiments.run_all``); a single
    figure's script (``python -m experiments.fig4``) takes them without ``--only``, and without
    ``--trace`` when it is not drawn from real traces."""
    if only:
        p.add_argument("--only", action="append", metavar="NAME", default=None,
                       help=f"make only this figure (repeatable): {', '.join(FIGURES)}")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                   help=f"output folder (default {DEFAULT_OUT})")
    p.add_argument("--quick", action="store_true",
                   help="reduced sizes and seeds (seconds; for checks, not for the paper)")
    if trace:
        p.add_argument("--trace", action="append", metavar="PATH", default=None,
                       help="routing file for the figures drawn from real traces, instead of "
                            "the shipped ones under $PAGING_TRACES (repeatable; any format "
                            "`paging trace info` reads)")


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
