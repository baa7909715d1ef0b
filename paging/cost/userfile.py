"""User models from a small TOML or JSON file (same fields as a preset).

Example ``my-moe.toml``::

    name = "my-moe"                  # optional (default: the file name without extension)
    source = "my notes, 2025-01-01"  # optional: where the numbers come from
    n_layers = 24
    n_experts = 32
    top_k = 8
    d_model = 1024
    d_ff = 512
    n_matrices = 3
    non_expert_params = 126668800

Every numeric field is required and must be an integer >= 1; an unknown key, a missing key or a
bad value is a :class:`~paging.errors.PagingError` that names the file and the key.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from paging.cost.presets import MODEL_FIELDS, Model
from paging.errors import PagingError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

OPTIONAL = ("name", "source")


def _read(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise PagingError(f"cannot read the model file: {e.strerror or e}", file=str(path)) \
            from None
    suffix = path.suffix.lower()
    try:
        if suffix == ".toml":
            data = tomllib.loads(text)
        elif suffix == ".json":
            data = json.loads(text)
        else:
            raise PagingError("a model file must end in .toml or .json", file=str(path))
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as e:
        line = getattr(e, "lineno", None)
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise PagingError(f"not valid {suffix[1:].upper()}: {msg}", file=str(path),
                          line=line) from None
    if not isinstance(data, dict):
        raise PagingError("a model file must hold one table/object of keys", file=str(path))
    return data


def load_model_file(path) -> Model:
    """The :class:`~paging.cost.presets.Model` described by the TOML/JSON file ``path``.

    Every number's origin is the file itself (or its optional ``source`` text).
    """
    p = Path(path)
    data = _read(p)
    where = str(p)
    allowed = (*OPTIONAL, *MODEL_FIELDS)
    for key in data:
        if key not in allowed:
            raise PagingError(f"unknown key {key!r}; expected {', '.join(allowed)}", file=where)
    for key in MODEL_FIELDS:
        if key not in data:
            raise PagingError(f"missing key {key!r}; a model needs {', '.join(MODEL_FIELDS)}",
                              file=where)
        v = data[key]
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise PagingError(f"key {key!r} must be a positive integer, got {v!r}", file=where)
    for key in OPTIONAL:
        if key in data and (not isinstance(data[key], str) or not data[key].strip()):
            raise PagingError(f"key {key!r} must be a non-empty string, got {data[key]!r}",
                              file=where)
    origin = f"user model file {where}" + (f" ({data['source']})" if "source" in data else "")
    return Model(name=data.get("name", p.stem), **{k: int(data[k]) for k in MODEL_FIELDS},
                 sources=dict.fromkeys(MODEL_FIELDS, origin))
