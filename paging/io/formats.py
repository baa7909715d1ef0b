"""The trace-format record every reader module declares (``TRACE_FORMATS``), gathered by
:mod:`paging.io` into its one registry: adding a format is adding a module to :mod:`paging.io`
that defines its reader (and writer) and a ``TRACE_FORMATS`` tuple; ``--format``, ``--to``,
detection by extension and the error messages read the registry."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["TraceFormat"]


@dataclass(frozen=True)
class TraceFormat:
    """One trace format.

    ``read(path, *, expand, strict, phase, n_experts, n_layers)`` returns ``list[Trace]``;
    ``write(traces, path)`` (optional) writes them atomically. ``extensions`` (lower case, with
    the dot, possibly compound like ``.libcachesim.csv``) name files of this format;
    ``sniff(head: bytes) -> bool`` (optional) recognizes a file by its first 64 KiB when the
    extension does not. ``order`` places the format in listings (lower first).
    """

    name: str
    read: Callable
    write: Callable | None = None
    extensions: tuple[str, ...] = ()
    sniff: Callable[[bytes], bool] | None = None
    description: str = ""
    order: float = float("inf")
