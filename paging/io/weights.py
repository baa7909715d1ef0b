"""Per-page costs and sizes for ``--costs FILE`` / ``--sizes FILE``.

FILE is a JSON list with one number per page id (``[1.0, 10.0, ...]``) or a ``.npy`` array of
shape ``(n_pages,)``. Costs are finite floats >= 0; sizes are integers >= 1 (bytes). Every
problem is a :class:`~paging.errors.PagingError` naming the file (and, for JSON, the entry
index) and what was expected.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from paging.errors import PagingError
from paging.options import parse_json
from paging.weights import as_costs, as_sizes

KINDS = ("costs", "sizes")


def read_weights(path: str | Path, n_pages: int, kind: str) -> np.ndarray:
    """The ``n_pages`` costs (float64) or sizes (int64) stored in ``path``.

    Parameters
    ----------
    path : str or Path
        A ``.npy`` file, else JSON (a list of numbers).
    n_pages : int
        Expected length (``layout.n_pages``: one entry per page id).
    kind : {"costs", "sizes"}
    """
    if kind not in KINDS:
        raise PagingError(f"kind must be costs or sizes, got {kind!r}")
    file = str(path)
    what = ("finite numbers >= 0" if kind == "costs" else "integers >= 1 (bytes)")
    if not Path(path).is_file():  # (a directory or a device was "no such file" too)
        said = "not a regular file" if Path(path).exists() else f"no such {kind} file"
        raise PagingError(f"{said}; expected a JSON list or a .npy array of {n_pages} {what}",
                          file)
    if file.endswith(".npy"):
        try:
            a = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as e:
            raise PagingError(f"not a readable .npy array ({e})", file) from None
        if not isinstance(a, np.ndarray):  # (an .npz archive named .npy)
            a.close()
            raise PagingError(f"an .npz archive, not a .npy array; expected a .npy array of "
                              f"{n_pages} {what}", file)
        if a.ndim != 1 or a.size != n_pages:
            raise PagingError(f"expected {n_pages} {kind} (one per page id), got an array of "
                              f"shape {a.shape}", file)
        if a.dtype.kind not in "iuf" or a.dtype == np.bool_:
            raise PagingError(f"expected {what}, got an array of dtype {a.dtype}", file)
        values = a.tolist()
    else:
        try:
            text = Path(path).read_text(encoding="utf-8-sig")
        except UnicodeDecodeError:
            raise PagingError(f"the {kind} file is not UTF-8 text; expected a JSON list of "
                              f"{n_pages} {what}", file) from None
        values = parse_json(text, file, f"a list of {n_pages} {what}")
        if not isinstance(values, list):
            raise PagingError(f"expected a JSON list of {n_pages} {what}, got "
                              f"{type(values).__name__}", file)
        if len(values) != n_pages:
            raise PagingError(f"expected {n_pages} {kind} (one per page id), got "
                              f"{len(values)}", file)
    for i, v in enumerate(values):  # JSON may hold strings, lists, booleans, null
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise PagingError(f"entry {i} is {json.dumps(v)[:40]}; expected {what}", file)
    # the values themselves are checked where every weight array is (paging.weights)
    check = as_costs if kind == "costs" else as_sizes
    try:
        return np.array(check(values, n_pages, where=kind))
    except PagingError as e:  # point at the file
        raise PagingError(e.message.removeprefix(f"{kind}: "), file) from None
