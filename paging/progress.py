"""Progress bars for the long commands (``sweep``, ``figs``, ``mrc``, ``train``, ``record``).

One rule for all of them: a tqdm bar on stderr, shown only when stderr is a terminal (never in
a pipe, a log file or a test), and never when the command was asked for ``--json``. Callers
pass ``show=None`` for that default, or ``True``/``False`` to force it. Log lines written while a
bar is up go through :func:`write`, so they do not tear the bar.
"""

from __future__ import annotations

import sys


def showing(show: bool | None = None) -> bool:
    """Whether a bar is drawn: ``show`` when given, else whether stderr is a terminal."""
    if show is not None:
        return bool(show)
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def bar(total: int | None, desc: str, unit: str = "it", show: bool | None = None):
    """A tqdm bar (a context manager with ``update``); a silent one when not :func:`showing`."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, disable=not showing(show), leave=False,
                file=sys.stderr, dynamic_ncols=True)


def write(line: str, stream=None) -> None:
    """Write one log line (without its newline) above any bar that is up."""
    from tqdm import tqdm

    tqdm.write(line, file=stream or sys.stderr)
