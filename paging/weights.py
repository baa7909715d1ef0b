"""Per-page fetch costs and sizes (weighted paging), validated once for every consumer.

Weighted paging (Young, "The k-server dual and loose competitiveness for paging",
Algorithmica 11(6), 1994; file caching with sizes: Cao & Irani, USITS 1997; Young,
"On-line file caching", Algorithmica 33(3), 2002): page p costs w(p) >= 0 to fetch and occupies
s(p) >= 1 bytes. Both are arrays indexed by page id (``layer·n + expert``).

:func:`as_costs` and :func:`as_sizes` turn user input (lists, arrays) into read-only float64 /
int64 arrays of ``n_pages`` entries or raise a one-line :class:`~paging.errors.PagingError`
naming ``where`` (a file or an option) and what was expected. The simulator, the offline
solvers, the CLI readers and the cost model all go through them.
"""

from __future__ import annotations

import numpy as np

from paging.errors import INT64_MAX, PagingError, brief

#: the largest fetch cost accepted: a run's cost is a sum over at most 2^63 requests, and
#: 2^63 · 1e288 ≈ 9.2e306 stays below the largest double (1.8e308) with room for the exact
#: summation's intermediate terms, so no total is ever inf or nan (a cost of 1e308 summed to inf
#: and its compensated sum to nan)
COST_MAX = 1e288
_COST_EXPECTED = f"expected a finite number from 0 to {COST_MAX:.0e}"


def _big_int(values) -> int | None:
    """The index of the first Python int beyond int64 in a list (numpy makes a float or an
    object of it, which would be named as such: it is named as given instead), else None."""
    return next((i for i, v in enumerate(values) if isinstance(v, int)
                 and not isinstance(v, bool) and abs(v) > INT64_MAX), None)


def _entries(values, n_pages: int, where: str, what: str) -> np.ndarray:
    if isinstance(values, (list, tuple)) and (big := _big_int(values)) is not None:
        v = values[big]
        if what == "sizes":
            raise PagingError(f"{where}: entry {big} is {brief(v)}; expected an "
                              "integer number of bytes from 1 to 2^63 - 1")
        if not 0 <= v <= COST_MAX:
            raise PagingError(f"{where}: entry {big} is {brief(v)}; {_COST_EXPECTED}")
        values = [float(v) if isinstance(v, int) and not isinstance(v, bool) else v
                  for v in values]  # (every int here is at most 1e288: exact enough as floats)
    try:
        a = np.asarray(values)
    except (TypeError, ValueError):
        raise PagingError(f"{where}: expected {n_pages} {what} (one per page id)") from None
    if a.ndim != 1 or a.size != n_pages:
        got = f"shape {a.shape}" if a.ndim != 1 else f"{a.size}"
        raise PagingError(f"{where}: expected {n_pages} {what} (one per page id), got {got}")
    if a.dtype.kind not in "biuf":
        raise PagingError(f"{where}: expected {n_pages} {what} (one per page id), got values "
                          f"of type {a.dtype}")
    return a


def as_costs(costs, n_pages: int, where: str = "costs") -> np.ndarray:
    """Fetch costs w(p) as a read-only float64 array of ``n_pages`` finite numbers from 0 to
    :data:`COST_MAX` (so that no run's total cost overflows)."""
    a = _entries(costs, n_pages, where, "costs")
    if a.dtype.kind == "b":  # (as sizes: [true, false] was read as costs 1 and 0)
        raise PagingError(f"{where}: expected numeric costs, got booleans")
    a = np.array(a, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(a) | (a < 0))
    if bad.size:
        i = int(bad[0])
        raise PagingError(f"{where}: entry {i} is {a[i].item()!r}; expected a finite number "
                          ">= 0")
    if a.size and a.max() > COST_MAX:
        i = int(np.argmax(a))  # (the largest entry: every entry above the bound is refused)
        raise PagingError(f"{where}: entry {i} is {a[i].item()!r}; {_COST_EXPECTED} (a run's "
                          "total cost over up to 2^63 requests must stay finite)")
    a.setflags(write=False)
    return a


def as_sizes(sizes, n_pages: int, where: str = "sizes") -> np.ndarray:
    """Page sizes s(p) in bytes as a read-only int64 array of ``n_pages`` integers >= 1."""
    a = _entries(sizes, n_pages, where, "sizes")
    if a.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(a) | (a != np.floor(a)))
        if bad.size:
            i = int(bad[0])
            raise PagingError(f"{where}: entry {i} is {a[i].item()!r}; expected an integer "
                              "number of bytes >= 1")
    if a.dtype.kind == "b":
        raise PagingError(f"{where}: expected integer sizes, got booleans")
    if a.dtype.kind in "fu":  # (beyond int64 the cast wrapped: 1e30 was named as -2^63)
        bad = np.flatnonzero(a >= 2.0**63 if a.dtype.kind == "f" else a > INT64_MAX)
        if bad.size:
            i = int(bad[0])
            v = a[i].item()
            shown = brief(v) if isinstance(v, int) else repr(v)
            raise PagingError(f"{where}: entry {i} is {shown}; expected an integer number of "
                              "bytes from 1 to 2^63 - 1")
    out = np.array(a, dtype=np.int64)
    bad = np.flatnonzero(out < 1)
    if bad.size:
        i = int(bad[0])
        raise PagingError(f"{where}: entry {i} is {out[i]}; expected an integer number of "
                          "bytes >= 1")
    out.setflags(write=False)
    return out


def unit_costs(n_pages: int) -> np.ndarray:
    a = np.ones(n_pages, dtype=np.float64)
    a.setflags(write=False)
    return a


def unit_sizes(n_pages: int) -> np.ndarray:
    a = np.ones(n_pages, dtype=np.int64)
    a.setflags(write=False)
    return a
