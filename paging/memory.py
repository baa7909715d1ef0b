"""What this machine can hold: the up-front refusal of a trace whose requests would not fit in
memory (a generated sequence, or a file read whole), before anything is allocated or read —
otherwise a MemoryError traceback, or a long read the system ends by killing the process."""

from __future__ import annotations

import os

from paging.errors import PagingError

__all__ = ["REQUEST_BYTES", "available", "check_memory", "check_requests"]

#: the least a request holds in memory: its page and its step (int64 each)
REQUEST_BYTES = 16


def available() -> int:
    """The memory a new allocation can have without swapping: ``MemAvailable`` of
    ``/proc/meminfo``; where that cannot be read, the physical memory (``sysconf``), else
    2^40 bytes."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX
        return 1 << 40


def human(nbytes: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB", "TB", "PB"):
        if nbytes < 1000 or unit == "PB":
            return f"{nbytes:,.0f} {unit}" if unit == "bytes" else f"{nbytes:,.1f} {unit}"
        nbytes /= 1000
    return f"{nbytes} PB"


def check_memory(need: int, what: str, detail: str, advice: str,
                 file: str | None = None) -> None:
    """Refuse, as one :class:`PagingError` line, an allocation of ``need`` bytes above
    :func:`available`: "``what`` need about N of memory``detail``; this machine has M
    available``advice``" (``detail``: what the bytes hold; ``advice``: what to ask for instead,
    each starting with its own separator)."""
    have = available()
    if need > have:
        raise PagingError(f"{what} need about {human(need)} of memory{detail}; this machine "
                          f"has {human(have)} available{advice}", file)


def check_requests(requests: int | None, hint: str, file: str | None = None) -> None:
    """Refuse ``requests`` whose pages and steps alone (:data:`REQUEST_BYTES` each, a lower
    bound of what holding them takes) exceed :func:`available`, with ``hint`` (what to do
    instead) and ``file``; None or 0 requests pass."""
    if not requests:
        return
    check_memory(requests * REQUEST_BYTES, f"{requests:,} requests",
                 f" (pages and steps, {REQUEST_BYTES} bytes per request)", f". {hint}", file)
