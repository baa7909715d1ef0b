"""``NAME[:key=value,key=value]`` specs of the command line (predictors, strategies, miss
handlers): one parser, one-line errors.

>>> parse_spec("oracle:precision=0.9,recall=1,seed=3")
('oracle', {'precision': '0.9', 'recall': '1', 'seed': '3'})
>>> parse_spec("lru")
('lru', {})
"""

from __future__ import annotations

from paging.errors import PagingError, check_int64, positive_int


def parse_spec(spec: str, what: str = "spec") -> tuple[str, dict[str, str]]:
    """Split ``NAME:k=v,k=v`` into the lower-case name and its options (values as text)."""
    text = str(spec).strip()
    name, _, rest = text.partition(":")
    name = name.strip().lower()
    if not name:
        raise PagingError(f"{what} {spec!r} has no name; expected NAME[:key=value,...]")
    opts: dict[str, str] = {}
    if rest.strip():
        for item in rest.split(","):
            if not item.strip():  # a trailing comma
                continue
            key, eq, val = item.partition("=")
            key, val = key.strip().lower(), val.strip()
            if not eq or not key or not val:
                raise PagingError(f"{what} {spec!r}: option {item.strip()!r} is not key=value")
            if key in opts:
                raise PagingError(f"{what} {spec!r}: option {key!r} given twice")
            opts[key] = val
    return name, opts


def spec_number(x: float) -> str:
    """A number as a canonical spec prints it: ``{x:g}`` (``0.5``, ``1``, ``1e+06``) when that
    reads back as ``x``, else an integer's digits or the shortest text that does (``repr``:
    ``0.1234567``). ``{x:g}`` alone keeps 6 digits, so a printed spec (a JSON ``policy`` or
    ``routing`` field, a sweep's ``timeline`` key) parsed back gave another number than the
    one that ran.

    >>> spec_number(0.5), spec_number(1.0), spec_number(0.1234567), spec_number(1234567.0)
    ('0.5', '1', '0.1234567', '1234567')
    """
    x = float(x)
    short = f"{x:g}"
    if float(short) == x:
        return short
    return str(int(x)) if x.is_integer() and abs(x) < 2**53 else repr(x)


def take_float(opts: dict, key: str, default, what: str, lo=None, hi=None,
               lo_open=False, hi_open=False) -> float:
    """Pop ``key`` from ``opts`` as a float in the given range (default when absent)."""
    if key not in opts:
        return default
    raw = opts.pop(key)
    try:
        v = float(raw)
    except (TypeError, ValueError):
        raise PagingError(f"{what}: {key}={raw!r} is not a number") from None
    bad = (v != v or (lo is not None and (v <= lo if lo_open else v < lo))
           or (hi is not None and (v >= hi if hi_open else v > hi)))
    if bad:
        rng = (f"{'(' if lo_open else '['}{lo if lo is not None else '-inf'}, "
               f"{hi if hi is not None else 'inf'}{')' if hi_open else ']'}")
        raise PagingError(f"{what}: {key} must be in {rng}, got {raw}")
    return v


def take_int(opts: dict, key: str, default, what: str, lo: int | None = None) -> int:
    """Pop ``key`` from ``opts`` as an int >= ``lo`` (default when absent)."""
    if key not in opts:
        return default
    raw = opts.pop(key)
    try:
        v = int(raw)
    except (TypeError, ValueError):
        raise PagingError(f"{what}: {key}={raw!r} is not an integer") from None
    if lo is not None and v < lo:
        raise PagingError(f"{what}: {key} must be an integer >= {lo}, got {raw}")
    return v


def no_more(opts: dict, what: str, allowed: str) -> None:
    """Refuse options left over after parsing."""
    if opts:
        raise PagingError(f"{what}: unknown option {', '.join(sorted(opts))}; expected {allowed}")


def int64(text: str) -> int:
    """An argparse type: an integer the kernels' int64 arrays can hold (a larger one was a
    numpy ``Maximum allowed dimension exceeded`` or overflow traceback). Ranges narrower than
    that are each option's own check."""
    import argparse

    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    try:
        return check_int64("", v)  # (argparse names the option itself)
    except PagingError as e:
        raise argparse.ArgumentTypeError(e.message) from None


def seed(text: str) -> int:
    """An argparse type: a seed, a non-negative integer of 64 bits (numpy refuses a negative
    one with a traceback)."""
    import argparse

    try:
        return positive_int("seed", int64(text), minimum=0)
    except PagingError as e:
        raise argparse.ArgumentTypeError(e.message) from None


def read_toml(path, expected: str, noun: str = "file") -> tuple[dict, str]:
    """The document and the text of a TOML file. A file that cannot be read, is not UTF-8 or is
    not valid TOML is one :class:`PagingError` naming the file and, for a syntax error, its line
    (``spec.toml:3: not valid TOML (Expected '=' after a key ...); expected a sweep spec``);
    ``expected`` says what the file should hold, ``noun`` what it is ("the model file"). A
    leading byte-order mark is skipped, as every text reader skips it."""
    import re
    from pathlib import Path

    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise PagingError(f"the {noun} is not UTF-8 text; expected {expected}", file) from None
    except OSError as e:
        raise PagingError(f"cannot read the {noun}: {e.strerror or e}", file) from None
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as e:  # (its line is in the message until Python 3.14)
        m = re.search(r"\(at line (\d+), column \d+\)", str(e))
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(e))
        raise PagingError(f"not valid TOML ({msg}); expected {expected}", file,
                          int(m.group(1)) if m else None) from None
    except RecursionError:  # (arrays or inline tables nested past Python's recursion limit)
        raise PagingError(f"not valid TOML ({TOO_DEEP}); expected {expected}", file) from None


#: what a document nested past the parser's depth (Python's recursion limit) is told
TOO_DEEP = "nested too deeply to read"


def toml_line(text: str, key: str) -> int | None:
    """The first line of the TOML ``text`` that gives ``key``, for an error's line: ``key =``,
    ``key.sub =`` (a dotted key), ``[key]``, ``[[key]]`` or ``[key.sub]`` (a table), the key
    bare or quoted, and not a line inside a multi-line string; None when none does. (One
    finder for the sweep specs, the serving sweep's ``[serve]`` table and the model files.)"""
    import re

    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    k = re.escape(key)
    pat = re.compile(rf"""\s*(\[\[?\s*(["']?){k}\2\s*[\].]|(["']?){k}\3\s*[=.])""")
    lines = text.splitlines()
    for i, line in enumerate(lines, start=1):
        if pat.match(line):
            try:  # (the lines before it end where a key may start: not inside a string)
                tomllib.loads("\n".join(lines[:i - 1]))
            except tomllib.TOMLDecodeError:
                continue
            return i
    return None


def distinct(key: str, given, normalised, file: str | None = None,
             text: str | None = None) -> tuple:
    """``normalised`` (the values of ``given`` as they run) if no two are the same, else a
    PagingError naming the two: they would be one run, or one sweep cell, counted twice. ``key``:
    a spec's key (``text``: the spec, for its line) or a repeated command-line option
    (``--policy LRU --policy lru``, ``--k 3 --k 3``)."""
    seen: dict = {}
    for g, v in zip(given, normalised, strict=True):
        if v in seen:
            what = (f"{g!r} twice" if seen[v] == g else
                    f"{seen[v]!r} and {g!r}, the same value once normalised")
            raise PagingError(f"{key} lists {what}; expected distinct values", file,
                              None if text is None else toml_line(text, key))
        seen[v] = g
    return tuple(normalised)


def parse_json(text: str, file: str, expected: str, line: int | None = None):
    """The JSON value of ``text``: a whole file's text, or (``line`` given) the text of that
    line of a JSONL file. Malformed JSON is one :class:`PagingError` naming the file and line
    (``trace.jsonl:7: not valid JSON (Expecting ',' delimiter at column 12); expected ...``), as
    is JSON nested past the parser's depth (a ``RecursionError`` traceback otherwise: the line
    for a JSONL line, just the file for a whole document). ``expected`` says what the text
    should hold. The one JSON parser of the files a user passes (as :func:`read_toml` is the one
    TOML reader)."""
    import json

    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise PagingError(f"not valid JSON ({e.msg} at column {e.colno}); expected {expected}",
                          file, e.lineno if line is None else line) from None
    except RecursionError:
        raise PagingError(f"not valid JSON ({TOO_DEEP}); expected {expected}", file,
                          line) from None
