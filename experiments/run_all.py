"""Make every figure: ``python -m experiments.run_all`` (= ``paging figs``).

For each figure: compute its CSV (+ JSON of parameters and seeds), then draw PNG + PDF from the
CSV, into ``paper_figs/`` by default. fig4 and fig5 need real traces ($PAGING_TRACES or
``--trace``); without them they are skipped with a one-line message and the synthetic figures
are still made. The coupon figure (experiments/fig_coupon.py) is included when present.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from experiments import common
from paging.commands.figs import FIGURES, add_arguments
from paging.errors import PagingError

REAL_TRACE_FIGURES = ("fig4", "fig5")
MODULES = {"fig4": "experiments.fig4", "fig5": "experiments.fig5",
           "fig6a": "experiments.fig6a", "fig6b": "experiments.fig6b",
           "coupon": "experiments.fig_coupon"}


def available() -> dict:
    """Figure name -> module, for the figures whose script exists."""
    out = {}
    for name in FIGURES:
        try:
            out[name] = importlib.import_module(MODULES[name])
        except ModuleNotFoundError as e:
            if e.name != MODULES[name]:
                raise
    return out


def _select(only: Sequence[str] | None, mods: dict) -> list[str]:
    if not only:
        return list(mods)
    names = []
    for raw in only:
        name = str(raw).strip().lower()
        if name not in FIGURES:
            raise PagingError(f"unknown figure {raw!r}; expected one of {', '.join(FIGURES)}")
        if name not in mods:
            raise PagingError(f"figure {name!r} has no script yet ({MODULES[name]})")
        if name not in names:
            names.append(name)
    return names


def _check_sources(traces: Sequence[str]) -> None:
    """Fail before any work when a --trace file does not exist (a generator spec is checked
    when it is generated)."""
    from paging.generators import is_spec
    from paging.io import resolve_path

    for source in traces:
        if not is_spec(source):
            resolve_path(source)


def run_figures(only: Sequence[str] | None = None, out_dir: str = common.DEFAULT_OUT,
                quick: bool = False, traces: Sequence[str] | None = None) -> dict[str, list]:
    """Compute and plot the selected figures; return name -> written files ([] if skipped)."""
    mods = available()
    names = _select(only, mods)
    log = common.Progress("figs")
    if traces:
        _check_sources(traces)
        if not any(n in REAL_TRACE_FIGURES for n in names):
            log(f"note: --trace is used only by {', '.join(REAL_TRACE_FIGURES)}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    log(f"making {', '.join(names)} into {out}/" + (" (quick)" if quick else ""))
    t_all = time.perf_counter()
    written: dict[str, list] = {}
    for name in names:
        mod = mods[name]
        t0 = time.perf_counter()
        kw = {}
        params = inspect.signature(mod.compute).parameters
        if "quick" in params:
            kw["quick"] = quick
        if name in REAL_TRACE_FIGURES:
            kw["traces"] = traces
        csv_path = mod.compute(out, **kw)
        if csv_path is None:
            written[name] = []
            continue
        files = [Path(csv_path), *(mod.plot(csv_path, out) or [])]
        written[name] = files
        log(f"{name}: {', '.join(f.name for f in files)} in {time.perf_counter() - t0:.1f}s")
    skipped = [n for n, f in written.items() if not f]
    log(f"done in {time.perf_counter() - t_all:.1f}s"
        + (f"; skipped {', '.join(skipped)} (see above)" if skipped else ""))
    return written


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.run_all",
                                description="Compute and draw every figure (= paging figs).")
    add_arguments(p)
    args = p.parse_args(argv)
    try:
        run_figures(only=args.only, out_dir=args.out, quick=args.quick, traces=args.trace)
    except PagingError as e:
        sys.stderr.write(f"error: {e.format()}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
