"""User-facing errors.

Every problem a user can fix (a malformed trace, an out-of-range id, k < 1, an unknown policy)
is raised as :class:`PagingError`. The command line turns it into exactly one line on stderr,
``error: FILE:LINE: message`` (``error: message`` when there is no file), and exit status 2.
"""

from __future__ import annotations

import numbers


class PagingError(ValueError):
    """An error in the user's input, with an optional file and line to point at.

    Parameters
    ----------
    message:
        What is wrong and what was expected, e.g. ``"k must be an integer >= 1, got 0"``.
    file, line:
        Where the problem is, when it comes from a file (``line`` is 1-based).
    """

    def __init__(self, message: str, file: str | None = None, line: int | None = None):
        self.message = message
        self.file = file
        self.line = line
        super().__init__(self.format())

    def format(self) -> str:
        where = ""
        if self.file is not None:
            where = f"{self.file}:{self.line}: " if self.line is not None else f"{self.file}: "
        return f"{where}{self.message}"


class VerificationError(AssertionError):
    """A recorded run is not a feasible schedule, or a run differs from its verified replay
    (the message says where): a bug in the simulator, not in the user's input. The command
    line prints it as one line with exit status 3 (:func:`paging.cli.guarded`)."""


#: the largest integer the kernels' int64 arrays hold: ids, capacities, counts and seeds
#: beyond it are refused where they are read (they were numpy overflow tracebacks)
INT64_MAX = 2**63 - 1


def check_int64(name: str, value: int, file: str | None = None,
                line: int | None = None) -> int:
    """``value`` if int64 holds it, else a :class:`PagingError` ("``name``: 1.000e30 is out of
    range; expected an integer of 64 bits"): the one range check of the command line's integer
    options (:func:`paging.options.int64`) and of the sweep specs' integers."""
    if not -INT64_MAX - 1 <= value <= INT64_MAX:
        raise PagingError(f"{name + ': ' if name else ''}{brief(value)} is out of range; "
                          "expected an integer of 64 bits", file, line)
    return value


#: the longest time a time option or input may give, in seconds (about 31.7 years): the
#: simulators keep times in ms as doubles, and below 1e12 ms every time still resolves
#: 0.2 µs, so sums and differences of such times stay finite and meaningful (an arrival at
#: 1e308 s made nan latencies, a per-token overhead of 1e308 ms an infinite run time)
TIME_MAX_S = 1e9


def check_time(name: str, value: float, unit: str = "ms") -> float:
    """``value`` (in ``unit``, ``"ms"`` or ``"s"``) if it is at most :data:`TIME_MAX_S`, else a
    :class:`PagingError` naming ``name`` (finiteness and the lower bound are each caller's)."""
    limit = TIME_MAX_S * (1e3 if unit == "ms" else 1.0)
    if value > limit:
        raise PagingError(f"{name} must be at most {limit:.0e} {unit} (about 32 years), got "
                          f"{value:g}")
    return value


def positive_int(name: str, value: object, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum``, else a :class:`PagingError` that says what was given
    (``"the number of coupons N must be an integer >= 2, got 1"``). Booleans are refused."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < minimum:
        raise PagingError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def brief(n: int) -> str:
    """An integer for a one-line message: as written up to 24 digits, else its leading digits
    and exponent (``--budget-gb 1e300`` is 301 digits of bytes)."""
    s = str(int(n))
    digits = s.lstrip("-")
    if len(digits) <= 24:
        return s
    return f"{s[:len(s) - len(digits)]}{digits[0]}.{digits[1:4]}e{len(digits) - 1}"


def check_k(k: object, n_pages: int | None = None) -> int:
    """Validate a cache size and return it as an int (k >= 1; a k above the page count is allowed
    and simply never evicts)."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or int(k) < 1:
        hint = f" (the layout has {n_pages} pages)" if n_pages else ""
        raise PagingError(f"k must be an integer >= 1{hint}, got {k!r}")
    if int(k) > INT64_MAX:
        raise PagingError(f"k must be at most 2^63 - 1, got {brief(k)}")
    return int(k)
