"""The ``paging`` command (DESIGN.md, "The paging command").

Each sub-command lives in :mod:`paging.commands` as a module with ``add_parser(subparsers)``;
heavy imports happen inside the command, so ``paging --help`` stays fast. Any
:class:`~paging.errors.PagingError` (and any argument error) becomes one line on stderr,
``error: FILE:LINE: ...``, and exit status 2 — never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys

from paging.errors import PagingError, VerificationError

COMMANDS = ("simulate", "mrc", "opt", "trace", "coupon", "adversary", "proofs", "figs", "cost",
            "plan", "sweep", "serve", "train", "policies", "record")


class _Parser(argparse.ArgumentParser):
    """One-line errors, and no abbreviated options: argparse would take ``--out`` for
    ``paging serve --output-len`` (its one option starting so) and answer about that option."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message):  # one line, exit 2 (argparse would print the usage too)
        raise PagingError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="paging", description="Layered paging laboratory for MoE expert "
                     "caching.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(f"paging.commands.{name}").add_parser(sub)
    return parser


def print_json(obj) -> None:
    """The single JSON document of ``--json`` (stdout)."""
    sys.stdout.write(json.dumps(obj, allow_nan=False) + "\n")


def _is_interrupt(e: BaseException) -> bool:
    """Whether ``e`` is a KeyboardInterrupt, or a SystemError raised while handling one (Ctrl-C
    inside a numba-compiled function surfaces as ``SystemError: CPUDispatcher(...) returned a
    result with an exception set``), through any chain of such SystemErrors (numba's
    ``_numba_unpickle`` wraps one in several: a Ctrl-C in a serving sweep's bound was a
    traceback)."""
    seen = set()
    while isinstance(e, SystemError) and id(e) not in seen:
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return isinstance(e, KeyboardInterrupt)


def guarded(fn, *args) -> int:
    """Run ``fn(*args)`` as a command: its return value (None = 0) is the exit status; a
    :class:`PagingError` is one line on stderr and status 2, as is running out of memory (a
    size too large for the machine), an interrupt 130 (SIGTERM while an output is written:
    :func:`paging.io.atomic.atomic_path`, 143). The one error
    wrapper of every entry point (``paging``, ``python -m experiments.*``)."""
    try:
        return int(fn(*args) or 0)
    except PagingError as e:
        sys.stderr.write(f"error: {e.format()}\n")
        return 2
    except VerificationError as e:  # (not the user's input: a simulator bug, status 3)
        sys.stderr.write(f"error: a run failed its independent verification: "
                         f"{str(e).splitlines()[0] if str(e) else type(e).__name__} (a bug in "
                         "the simulator, not in the input: please report it with the "
                         "command)\n")
        return 3
    except MemoryError as e:  # (numpy's allocation error says how much the run asked for)
        what = str(e).splitlines()[0] if str(e) else "an allocation failed"
        sys.stderr.write(f"error: out of memory: {what}; expected a run this machine can hold "
                         "(make it smaller)\n")
        return 2
    except (KeyboardInterrupt, SystemError) as e:
        if not _is_interrupt(e):  # (a SystemError of its own: a bug, with its traceback)
            raise
        sys.stderr.write("error: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0


def main(argv: list[str] | None = None) -> int:
    def go():
        args = build_parser().parse_args(argv)
        watch = None
        if not getattr(args, "json", False):  # (a --json run's stderr stays quiet)
            from paging.progress import compile_notice

            watch = compile_notice()
        try:
            return args.func(args)
        finally:
            if watch is not None:
                watch.stop.set()

    return guarded(go)


if __name__ == "__main__":
    sys.exit(main())
