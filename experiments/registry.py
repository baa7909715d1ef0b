"""The one registry of figures and the options every figure command shares.

``paging figs`` (:mod:`paging.commands.figs`), ``python -m experiments.run_all`` and each
figure's own script read it; it imports nothing of :mod:`paging`, so the command line can list
the figures without loading any of them.
"""

from __future__ import annotations

#: name (for ``--only``) -> the module that makes it. Each module offers
#: ``compute(out_dir, *, quick, ...)``, ``plot(csv_path, out_dir)``, ``main(argv)``, ``NAME``
#: (the stem of its files) and ``REAL_TRACES`` (whether it takes ``traces=``). Module paths
#: only: a figure's module is imported when it is made.
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
    "serving": "experiments.fig_serving",
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
    if only:
        p.add_argument("--verify", action="store_true",
                       help="record and check independently every run the figures make "
                            "through paging.simulate, every miss curve at each k, and every "
                            "serving run against the reference loop (the same numbers)")
    if trace:
        p.add_argument("--trace", action="append", metavar="PATH", default=None,
                       help="routing file for the figures drawn from real traces, instead of "
                            "the shipped ones under $PAGING_TRACES (repeatable; any format "
                            "`paging trace info` reads)")
