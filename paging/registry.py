"""One registry type for every pluggable kind built from a ``NAME[:key=value,...]`` spec.

Prefetch predictors, prefetch strategies, miss handlers, routing hooks, the next-arrival
predictors of paging with predictions and the trace generators are each a :class:`Registry`:
name -> entry, every spec parsed by the one grammar (:func:`paging.options.parse_spec`), its
options popped by the entry's builder and the leftovers refused with the entry's option list.
The CLI's help, the error messages and the documentation list a kind's names from its registry.
(Policies and trace formats are registered by their classes and modules:
:mod:`paging.policies`, :mod:`paging.io`.)

An entry's builder is ``build(opts, what, **context) -> object``: ``opts`` the spec's options
(lower-case keys, values as text), ``what`` the spec quoted for messages, ``context`` what the
caller passes along (a predictor's training sequences, a run's precision); it pops every option
it reads (:func:`~paging.options.take_float`, :func:`~paging.options.take_int`, ``dict.pop``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from paging.errors import PagingError
from paging.options import no_more, parse_spec

__all__ = ["Registry", "Entry"]


@dataclass(frozen=True)
class Entry:
    name: str
    build: Callable
    options: str = "no options"  # the accepted options, for messages and help
    summary: str = ""


class Registry:
    """Name -> :class:`Entry` for one kind (``kind`` names it in messages)."""

    def __init__(self, kind: str):
        self.kind = kind
        self.entries: dict[str, Entry] = {}

    def add(self, name: str, build: Callable, options: str = "no options",
            summary: str = "") -> None:
        """Register ``name`` (lower case, new)."""
        key = name.strip().lower()
        if key in self.entries:
            raise PagingError(f"{self.kind} {name!r} is already registered")
        self.entries[key] = Entry(key, build, options, summary)

    def register(self, options: str = "no options", summary: str = ""):
        """Class decorator: register ``cls.name`` with ``cls.from_options`` as its builder."""
        def deco(cls):
            self.add(cls.name, cls.from_options, options, summary)
            return cls
        return deco

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.entries)

    def usage(self) -> str:
        """``name[:options]`` of every entry, for help texts."""
        return ", ".join(e.name if e.options == "no options" else f"{e.name}:{e.options}"
                         for e in self.entries.values())

    def make(self, spec: str, **context):
        """The object of ``spec`` (a one-line :class:`PagingError` for a bad name or option)."""
        name, opts = parse_spec(spec, self.kind)
        entry = self.entries.get(name)
        if entry is None:
            raise PagingError(f"unknown {self.kind} {name!r}; expected one of "
                              f"{', '.join(self.entries)}")
        what = f"{self.kind} {spec!r}"
        obj = entry.build(opts, what, **context)
        no_more(opts, what, entry.options)
        return obj
