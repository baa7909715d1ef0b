"""Plumbing shared by the figure scripts.

* deterministic output: CSV rows sorted and every float written with one fixed format, so the
  same seeds give byte-identical files; the parameters and seeds go to a JSON file next to the
  CSV (sorted keys, no timestamps);
* progress: one line per step on stderr, ``[fig4   12.3s] ...``;
* real traces: the default files under ``$PAGING_TRACES`` (skipped with a one-line message when
  absent) or the user's ``--trace`` sources, read by :func:`paging.io.load`;
* figures: PNG + PDF written atomically, matplotlib's Agg backend.

Nothing here computes a miss count: that is :mod:`paging`'s job.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import hashlib
import io
import json
import os
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from experiments.registry import add_arguments
from paging.cli import guarded
from paging.io.atomic import atomic_path

TRACES_ENV = "PAGING_TRACES"

# The online policies of Figures 4 and 5 and the offline references, in plotting order.
POLICY_LABELS = {
    "lru": "LRU",
    "lru-dist": "LRU-DIST",
    "llru": "LLRU",
    "marking": "Marking",
    "lfu": "LFU",
    "lfu-dist": "LFU-DIST",
    "belady": "OPT",
    "belady-dist": "OPT-DIST",
}
POLICY_STYLE = {  # colour, line style, marker
    "lru": ("tab:blue", "-", "o"),
    "lru-dist": ("tab:orange", "--", "s"),
    "llru": ("tab:green", "-", "^"),
    "marking": ("tab:purple", ":", "D"),
    "lfu": ("tab:brown", "-.", "P"),
    "lfu-dist": ("tab:olive", "-.", "X"),
    "belady": ("black", "-", "x"),
    "belady-dist": ("tab:red", "--", "v"),
}

FLOAT_DIGITS = 6


# -- deterministic output ------------------------------------------------------------------------
def fmt(value) -> str:
    """One CSV cell: integers as integers, floats with FLOAT_DIGITS decimals, None as ''."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int) or (hasattr(value, "dtype") and value.dtype.kind in "iu"):
        return str(int(value))
    if isinstance(value, float) or (hasattr(value, "dtype") and value.dtype.kind == "f"):
        v = float(value)
        if v != v or v in (float("inf"), float("-inf")):
            raise ValueError(f"refusing to write a non-finite number {v!r} to a CSV")
        s = f"{v:.{FLOAT_DIGITS}f}"
        return "0." + "0" * FLOAT_DIGITS if s == "-0." + "0" * FLOAT_DIGITS else s
    return str(value)


def write_csv(path: str | os.PathLike, columns: Sequence[str], rows: Iterable[dict],
              sort_by: Sequence[str]) -> Path:
    """Write ``rows`` (dicts) sorted by the raw values of ``sort_by``; fixed float format."""
    rows = sorted(rows, key=lambda r: tuple(r[c] for c in sort_by))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([fmt(r[c]) for c in columns])
    path = Path(path)
    with atomic_path(path) as tmp:
        tmp.write_text(buf.getvalue(), encoding="utf-8")
    return path


def read_csv(path: str | os.PathLike) -> list[dict[str, str]]:
    """The rows of a CSV written by :func:`write_csv` (all cells as strings)."""
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def write_json(path: str | os.PathLike, obj) -> Path:
    """A JSON document with sorted keys (no timestamps: reruns give the same bytes)."""
    path = Path(path)
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, sort_keys=True, indent=2, allow_nan=False) + "\n",
                       encoding="utf-8")
    return path


def params_path(csv_path: str | os.PathLike) -> Path:
    """The JSON of parameters and seeds that sits next to a figure's CSV."""
    return Path(csv_path).with_suffix(".json")


# -- progress ------------------------------------------------------------------------------------
class Progress:
    """One line per step on stderr: ``[fig4     3.2s] message``."""

    def __init__(self, tag: str, stream=None):
        self.tag = tag
        self.stream = stream
        self.t0 = time.perf_counter()

    def __call__(self, message: str) -> None:
        from paging.progress import write

        stream = self.stream or sys.stderr
        write(f"[{self.tag:<6} {time.perf_counter() - self.t0:7.1f}s] {message}", stream)
        stream.flush()


# -- traces --------------------------------------------------------------------------------------
def traces_root() -> Path | None:
    """``$PAGING_TRACES`` as a directory, or None when unset or not a directory."""
    root = os.environ.get(TRACES_ENV)
    return Path(root) if root and Path(root).is_dir() else None


def default_sources(relpaths: Sequence[str]) -> tuple[list[str], str | None]:
    """The default real-trace files that exist under ``$PAGING_TRACES`` (as paths relative to
    it) and, when some are missing, a one-line reason."""
    root = traces_root()
    if root is None:
        why = (f"{TRACES_ENV} is not set" if not os.environ.get(TRACES_ENV)
               else f"{TRACES_ENV}={os.environ[TRACES_ENV]} is not a directory")
        return [], why
    found = [r for r in relpaths if (root / r).is_file()]
    missing = [r for r in relpaths if r not in found]
    why = None
    if missing:
        why = f"not found under {TRACES_ENV}={root}: {', '.join(missing)}"
    return found, why


def sources_or_skip(traces, defaults: Sequence[str], log) -> list[str] | None:
    """The user's ``--trace`` sources, else the default real traces that exist; None (after
    logging a one-line "skipped" message) when there are none, so the caller skips its figure."""
    if traces:
        return list(traces)
    sources, why = default_sources(defaults)
    if not sources:
        log(f"skipped: no real traces ({why}; pass --trace PATH to use your own)")
        return None
    if why:
        log(f"note: {why}; using the others")
    return sources


def resolve_source(source: str) -> Path | None:
    """The file a source names (see :func:`paging.io.resolve_path`), or None for a generator
    spec. Used for the provenance recorded in the JSON and the model label."""
    from paging.generators import is_spec
    from paging.io import resolve_path

    return None if is_spec(source) else resolve_path(source)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def source_record(source: str) -> dict:
    """Provenance of one source for the parameter JSON: the name as given and, for a file, its
    size and sha256 (not its absolute path, which differs between machines)."""
    f = resolve_source(source)
    if f is None:
        return {"source": source, "kind": "generator"}
    return {"source": source, "kind": "file", "bytes": f.stat().st_size, "sha256": sha256(f)}


_PRELOADED: dict[tuple[str, str], list] | None = None


@contextlib.contextmanager
def preloaded(sources: Sequence[str]):
    """Read every source once, before any figure is made, and keep what :func:`load_sequences`
    reads inside the block: a malformed file is reported before the first figure writes anything
    (a figure made before the error would otherwise be left behind), and a file that several
    figures use is parsed once for each expansion. The readings are dropped when the block
    ends."""
    global _PRELOADED
    _PRELOADED = {}
    try:
        for source in sources:
            load_sequences(source)
        yield
    finally:
        _PRELOADED = None


def load_sequences(source: str, expand: str = "rounds"):
    """Every sequence of a source (a list of :class:`paging.trace.Trace`), expanded into rounds as
    in the paper (Sec. 5.1), both phases, or kept as groups (``expand="groups"``); read by
    :func:`paging.io.load`, or taken from the reading kept by :func:`preloaded`."""
    from paging.io import load

    if _PRELOADED is None:
        return load(source, expand=expand)
    key = (source, expand)
    if key not in _PRELOADED:
        _PRELOADED[key] = load(source, expand=expand)
    return list(_PRELOADED[key])


def top_k(trace) -> int:
    """K of a top-K trace (:attr:`paging.trace.Trace.top_k`)."""
    return trace.top_k


def model_of(trace, source: str) -> str:
    """A model label for a sequence: the ``model`` the file names, else the folder (or, for a
    file in the current directory or a generator spec, the file stem or generator name)."""
    m = trace.meta.get("model")
    if m:
        return str(m)
    f = resolve_source(source)
    if f is None:
        return source.split(":", 1)[0]
    parent = f.resolve().parent.name
    return parent if parent and f.parent != Path(".") else f.stem


def preset_for(layout) -> str | None:
    """The name of the cost-model preset with ``layout`` (ℓ layers x n experts), or None: the
    presets' layouts are distinct (mixtral-8x7b 32 x 8, granite-3.0-1b-a400m 24 x 32, ...)."""
    from paging.cost import MODELS

    return next((name for name, m in MODELS.items()
                 if (m.n_layers, m.n_experts) == (layout.n_layers, layout.n_experts)), None)


def sequence_record(trace) -> dict:
    """What the parameter JSON records about one sequence: its name, size, layout and what the
    reader dropped (tokens missing some layer are dropped, ``paging trace info`` counts them).
    Machine-dependent metadata (the absolute source path) is left out."""
    lay, meta = trace.layout, trace.meta
    rec = {"trace": trace.name, "requests": trace.n_requests, "n_experts": lay.n_experts,
           "n_layers": lay.n_layers, "top_k": top_k(trace)}
    for key in ("format", "n_tokens", "dropped_tokens", "phase"):
        v = meta.get(key)
        if isinstance(v, (str, int, float, bool)):
            rec[key] = v
    return rec


def layout_label(trace) -> str:
    lay = trace.layout
    return f"{lay.n_layers} layers x {lay.n_experts} experts, top-{top_k(trace)}"


# -- figures -------------------------------------------------------------------------------------
def pyplot():
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, out_dir: str | os.PathLike, stem: str) -> list[Path]:
    """Write ``stem.png`` and ``stem.pdf`` into ``out_dir`` (no creation date in the PDF)."""
    out = []
    for ext, meta in (("png", {"Software": None}), ("pdf", {"CreationDate": None})):
        path = Path(out_dir) / f"{stem}.{ext}"
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=ext, dpi=150, bbox_inches="tight", metadata=meta)
        out.append(path)
    return out


# -- command line of the figure scripts ----------------------------------------------------------
def figure_parser(module) -> argparse.ArgumentParser:
    """``python -m experiments.figX``: the options of ``paging figs`` without ``--only`` (and
    without ``--trace`` unless the figure is drawn from real traces)."""
    first_paragraph = " ".join((module.__doc__ or "").strip().split("\n\n")[0].split())
    p = argparse.ArgumentParser(prog=f"python -m experiments.{module.NAME}",
                                description=first_paragraph)
    add_arguments(p, only=False, trace=module.REAL_TRACES)
    return p


def run_main(module, argv: Sequence[str] | None) -> int:
    """``python -m experiments.figX``: compute the CSV, then plot it (errors as ``paging``'s:
    :func:`paging.cli.guarded`)."""
    args = figure_parser(module).parse_args(argv)
    kw = {"traces": args.trace} if module.REAL_TRACES else {}

    def go():
        csv_path = module.compute(args.out, quick=args.quick, **kw)
        if csv_path is not None:
            module.plot(csv_path, args.out)

    return guarded(go)
