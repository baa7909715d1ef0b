"""Progress bars for the long commands (``sweep``, ``figs``, ``mrc``, ``train``, ``record``,
``proofs``), and the notice of a long first compilation (:func:`compile_notice`, every command).

One rule for all of them: a tqdm bar on stderr, shown only when stderr is a terminal (never in
a pipe, a log file or a test), and never when the command was asked for ``--json``. Callers
pass ``show=None`` for that default, or ``True``/``False`` to force it. Log lines written while a
bar is up go through :func:`write`, so they do not tear the bar.
"""

from __future__ import annotations

import contextlib
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


#: seconds a :func:`ticking` bar waits before it shows (a solve done by then shows nothing)
TICK_DELAY = 1.0


@contextlib.contextmanager
def ticking(limit_s: float | None, desc: str, show: bool | None = None):
    """An elapsed-time bar for work that reports no progress of its own but is bounded by a
    time limit (an ILP solver): it fills with the seconds elapsed out of ``limit_s``, so its
    estimate is the most the work can take; updated twice a second from a thread, shown after
    :data:`TICK_DELAY` seconds, and only when :func:`showing`. ``limit_s=None`` (work with no
    limit, a min-cost flow): the seconds elapsed only."""
    if not showing(show):
        yield
        return
    import threading
    import time

    from tqdm import tqdm

    stop = threading.Event()
    start = time.monotonic()
    fmt = ("{desc}: {bar}| {n:.0f}/{total:.0f} s [{elapsed}, at most {remaining} left]"
           if limit_s is not None else "{desc}: {elapsed} elapsed")
    pb = tqdm(total=None if limit_s is None else float(limit_s), desc=desc, unit="s",
              leave=False, file=sys.stderr, dynamic_ncols=True, delay=TICK_DELAY,
              bar_format=fmt)

    def tick():
        while not stop.wait(0.5):
            pb.n = time.monotonic() - start
            if limit_s is not None:
                pb.n = min(pb.n, float(limit_s))
            pb.refresh()

    thread = threading.Thread(target=tick, name="paging-ticking", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        pb.close()


def write(line: str, stream=None) -> None:
    """Write one log line (without its newline) above any bar that is up."""
    from tqdm import tqdm

    tqdm.write(line, file=stream or sys.stderr)


class _Compiling:
    """numba's compile events (``numba:compile``, one per function compiled for a signature
    that is not in its cache): whether one is under way, since when, and for which function."""

    def __init__(self):
        self.depth = 0
        self.since = 0.0
        self.name = ""

    def listener(self):
        from numba.core import event

        outer = self

        class _L(event.Listener):
            def on_start(self, ev):
                import time

                if outer.depth == 0:
                    outer.since = time.monotonic()
                    disp = (ev.data or {}).get("dispatcher")
                    outer.name = getattr(getattr(disp, "py_func", None), "__qualname__", "")
                outer.depth += 1

            def on_end(self, ev):
                outer.depth = max(outer.depth - 1, 0)

        return _L()


def compile_notice(delay: float = 3.0, show: bool | None = None, stream=None,
                   poll: float = 0.2):
    """Watch, from a daemon thread, for numba compiling a kernel for longer than ``delay``
    seconds (a kernel's first run on a machine, or after its source changed: numba then caches
    it), and say so once on stderr, so a first run that compiles for a minute is not silent.
    Only when :func:`showing` (a terminal); it listens once numba has been imported by the
    command (a command that never imports it pays nothing). Returns the thread (its ``stop``
    event ends the watch), or None."""
    if not showing(show):
        return None
    import threading
    import time

    state = _Compiling()
    stop = threading.Event()
    stream = stream or sys.stderr  # (the command's, even if it is replaced later)

    def watch():
        while "numba.core.event" not in sys.modules:
            if stop.wait(poll):
                return
        from numba.core import event

        listener = state.listener()
        event.register("numba:compile", listener)
        try:
            while not stop.wait(poll):
                if state.depth > 0 and time.monotonic() - state.since > delay:
                    what = f" ({state.name})" if state.name else ""
                    write(f"paging: numba is compiling a kernel{what} for this machine; once, "
                          "then it is cached (a first run can take a minute or two)", stream)
                    return
        finally:
            event.unregister("numba:compile", listener)

    thread = threading.Thread(target=watch, name="paging-compile-notice", daemon=True)
    thread.stop = stop
    thread.start()
    return thread
