"""Make every figure: ``python -m experiments.run_all`` (= ``paging figs``).

For each figure of the registry :data:`experiments.registry.FIGURES`: compute its CSV (+ JSON of
parameters and seeds), then draw PNG + PDF from the CSV, into ``paper_figs/`` by default. The
figures drawn from real traces (modules with ``REAL_TRACES = True``: fig4, fig5) need
$PAGING_TRACES or ``--trace``; without them they are skipped with a one-line message and the
other figures are still made.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from experiments import common
from experiments.registry import DEFAULT_OUT, FIGURES, add_arguments
from paging.cli import guarded
from paging.errors import PagingError


def modules(names: Sequence[str] = tuple(FIGURES)) -> dict:
    """Figure name -> its module (imported)."""
    return {name: importlib.import_module(FIGURES[name]) for name in names}


def _select(only: Sequence[str] | None) -> list[str]:
    if not only:
        return list(FIGURES)
    names = []
    for raw in only:
        name = str(raw).strip().lower()
        if name not in FIGURES:
            raise PagingError(f"unknown figure {raw!r}; expected one of {', '.join(FIGURES)}")
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


def run_figures(only: Sequence[str] | None = None, out_dir: str = DEFAULT_OUT,
                quick: bool = False, traces: Sequence[str] | None = None,
                progress: bool | None = None, verify: bool = False) -> dict[str, list]:
    """Compute and plot the selected figures; return name -> written files ([] if skipped).
    Besides the one-line log of each step, a bar over the figures when stderr is a terminal
    (``progress``: force it on or off). ``verify``: every run made through
    :func:`paging.simulate.simulate` is recorded and verified, every miss curve held to a
    verified run at each k and every serving run to the verified reference loop
    (:func:`paging.simulate.verifying`)."""
    import contextlib

    from paging import progress as pbar
    from paging.simulate import verifying

    mods = modules(_select(only))
    log = common.Progress("figs")
    if traces:
        _check_sources(traces)
        if not any(mod.REAL_TRACES for mod in mods.values()):
            real = [name for name, mod in modules().items() if mod.REAL_TRACES]
            log(f"note: --trace is used only by {', '.join(real)}")
    if not str(out_dir).strip():
        raise PagingError("--out is empty; expected an output folder (default "
                          f"{DEFAULT_OUT})")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise PagingError("--out names a file; expected an output folder", str(out))
    log(f"making {', '.join(mods)} into {out}/" + (" (quick)" if quick else ""))
    t_all = time.perf_counter()
    written: dict[str, list] = {}
    # the --trace sources are read (and so checked) before the first figure writes a file
    uses_traces = any(mod.REAL_TRACES for mod in mods.values())
    with common.preloaded(traces if (traces and uses_traces) else ()), \
            verifying() if verify else contextlib.nullcontext(), \
            pbar.bar(len(mods), "figs", unit="fig", show=progress) as bar:
        for name, mod in mods.items():
            bar.set_postfix_str(name)
            t0 = time.perf_counter()
            kw = {"traces": traces} if mod.REAL_TRACES else {}
            csv_path = mod.compute(out, quick=quick, **kw)
            bar.update()
            if csv_path is None:
                written[name] = []
                continue
            files = [Path(csv_path), *mod.plot(csv_path, out)]
            written[name] = files
            log(f"{name}: {', '.join(f.name for f in files)} in "
                f"{time.perf_counter() - t0:.1f}s")
    skipped = [n for n, f in written.items() if not f]
    log(f"done in {time.perf_counter() - t_all:.1f}s"
        + (f"; skipped {', '.join(skipped)} (see above)" if skipped else ""))
    return written


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.run_all",
                                description="Compute and draw every figure (= paging figs).")
    add_arguments(p)
    args = p.parse_args(argv)
    def go() -> int:
        run_figures(only=args.only, out_dir=args.out, quick=args.quick, traces=args.trace,
                    verify=args.verify)
        return 0

    return guarded(go)


if __name__ == "__main__":
    sys.exit(main())
