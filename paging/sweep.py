"""Parameter sweeps: a TOML grid of simulations run on Dask into one tidy table.

A spec names lists of values; their product is the grid of *cells*, one cell being one trace
sequence x policy x cache size x seed x options, and one row of the output table::

    traces    = ["mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl",
                 "zipf:n=8,layers=32,tokens=200,seed=0"]
    policies  = ["lru", "llru", "marking"]
    k         = [16, 32, 64]          # or budget_gb = [0.5, 1.0] (needs model, or a trace's sizes)
    seeds     = [0, 1]                # default [0]
    expand    = ["rounds"]            # default ["rounds"]
    model     = ["mixtral-8x7b"]      # optional, with precision = [...] and hardware = [...]
    routing   = ["standard", "cache-prior:lambda=0.5"]   # default ["standard"]; needs groups
                                      # (Δavg runs over the file's sequences, as in simulate;
                                      # with a model, the served requests are timed)
    prefetch  = ["none", "oracle:precision=0.8,recall=0.8", "transition"]   # optional
    prefetch_strategy = ["topk:overfetch=1", "percentile:p=80"]            # optional
    miss      = ["fetch", "drop:rank=1"]                                   # optional
    warm      = [false, true]         # default [false]; true: a file's sequences back to back
    timeline  = ["default", "token_overhead_ms=5", "prefetch_streams=2,prefetch_link=shared"]

``prefetch``, ``prefetch_strategy`` and ``miss`` are ``paging simulate``'s ``--prefetch``,
``--prefetch-strategy`` and ``--miss`` (``"none"`` = no prefetcher; ``transition`` learns on the
file's other sequences, as in ``simulate``). The precision cascades (``fetch-lowest-bit``,
``fetch-priority``) fetch at several precisions, so they need ``model = [...]`` and the cache as
``budget_gb`` (not ``k``); each (model, precision) is checked against the handler's levels
before anything runs, and the column ``low_precision_fetches`` counts the fetches below the
first level (a warm run's per-sequence rows too, with their ``dropped`` and ``substituted``:
:func:`paging.warm.split`).

``warm = [true]`` (or ``paging sweep --warm`` when the spec has no ``warm`` key) runs the
sequences of each file back to back through one cache and one policy state
(:mod:`paging.warm`): one run per file, one row per sequence (``position``, ``prefill_misses``
and, with a model, that request's own TTFT and decode rate). A warm ``transition`` prefetcher
needs ``transition:train=FILE`` (every sequence of the file is simulated).

``timeline`` (needs ``model``) sweeps the latency timeline's sensitivity options
(:mod:`paging.cost.timeline`; ``paging simulate``'s ``--token-overhead-ms``,
``--prefetch-streams``, ``--prefetch-link``): each value is ``"default"`` or
``KEY=VALUE[,KEY=VALUE...]`` over ``token_overhead_ms``, ``prefetch_streams`` (1 or 2) and
``prefetch_link`` (shared or separate); the column ``timeline`` holds the options in a fixed
order (null for the default timeline, so earlier tables' cells keep their keys).

``lifetimes = true`` (one value for the whole spec, not an axis; default false) adds each
cell's cache lifetimes in tokens (:mod:`paging.lifetimes`, ``paging simulate --lifetimes``:
``lifetime_tokens``, ``lifetime_tokens_all``, ``residencies``; every cell is simulated, none read
off a miss curve; null on warm rows, whose lifetimes run over the joined file; not with
``prefetch``). It is not a key: a table resumed with it keeps the rows it has.

A ``.npz`` trace file larger than ``$PAGING_STREAM_BYTES`` (default 2·10⁹ bytes,
:mod:`paging.stream`) is not read whole: each policy x seed runs every k in one pass over the
file, a chunk at a time (``method`` "stream"; the fields of ``paging simulate --stream
--json``). Such a trace sweeps ``policies`` (those that stream), ``k``, ``seeds`` and the mode
the file stores; any other axis is refused before anything runs. Other files too large for
memory are refused before they are read (:func:`paging.memory.check_requests`).

A trace path is tried as given, under ``$PAGING_TRACES``, then next to the spec file. Every file
holds one or more sequences; each sequence is a cell of its own (column ``trace``, as in
``paging simulate --json``), ``source`` keeps the spec's entry.

Columns: the cell's inputs (:data:`KEY_COLUMNS`) then every field of ``paging simulate --json``
(:data:`COLUMNS`); a field that does not apply is null. ``method`` says how the row was
computed: ``simulate`` (one run) or ``mrc`` (read off the one-pass miss curve,
:func:`paging.mrc.miss_curve`, for a stack policy at two or more k with no cost model; such rows
have null ``collision_misses`` and ``per_layer_misses``, which the curve does not give, and
equal misses to the run's, as ``tests/unit/test_sweep.py`` checks).

Determinism and resumption: rows are sorted by the key columns, every run is seeded, so the same
spec gives the same table with any number of workers. The table is rewritten atomically after
every batch of finished cells (:func:`paging.io.atomic.atomic_path`); a re-run reads it back and
skips the cells it already holds, so an interrupted sweep resumes where it stopped.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import itertools
import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

from paging.errors import INT64_MAX, PagingError, check_int64
from paging.options import distinct
from paging.run import RunSpec, run

#: The keys a sweep spec may hold.
SPEC_KEYS = ("traces", "policies", "k", "budget_gb", "seeds", "expand", "model", "precision",
             "hardware", "routing", "prefetch", "prefetch_strategy", "miss", "timeline",
             "warm", "lifetimes")
#: Identify a cell (sorted in this order).
KEY_COLUMNS = ("source", "trace", "policy", "expand", "model", "precision", "hardware",
               "prefetch", "prefetch_strategy", "miss", "seed", "routing", "timeline", "warm",
               "k",
               "budget_gb")
_TIMING = (("time_ms", "float"), ("stall_ms", "float"), ("stall_fraction", "float"),
           ("ttft_ms", "float"), ("tpot_ms", "float"), ("tokens_per_s", "float"),
           ("decode_tokens", "int"), ("bytes_moved", "int"), ("copy_busy_ms", "float"))
#: Every column of the table and its type.
COLUMNS = (("source", "str"), ("trace", "str"), ("policy", "str"), ("expand", "str"),
           ("model", "str"), ("precision", "str"), ("hardware", "str"), ("prefetch", "str"),
           ("prefetch_strategy", "str"), ("miss", "str"), ("seed", "int"), ("timeline", "str"),
           ("k", "int"), ("budget_gb", "float"), ("method", "str"), ("requests", "int"),
           ("misses", "int"), ("hits", "int"), ("miss_ratio", "float"),
           ("collision_misses", "int"), ("bypasses", "int"), ("per_layer_misses", "list"),
           ("cost", "float"), ("bytes_fetched", "int"), ("budget_bytes", "int"),
           ("capacity", "int"), ("routing", "str"), ("retained_mass", "float"),
           ("top1_changed", "float"), ("kl", "float"), ("warm", "bool"), ("position", "int"),
           ("prefill_misses", "int")) + _TIMING + (
    # prefetching and miss handling (null on default runs)
    ("prefetches", "int"), ("prefetch_useful", "int"), ("prefetch_wasted", "int"),
    ("prefetch_precision", "float"), ("prefetch_recall", "float"), ("prefetch_late", "int"),
    ("dropped", "int"), ("dropped_mass", "float"), ("substituted", "int"),
    ("low_precision_fetches", "int"),
    # lifetimes = true (paging simulate --lifetimes)
    ("lifetime_tokens", "float"), ("lifetime_tokens_all", "float"), ("residencies", "int"))
COLUMN_NAMES = tuple(dict.fromkeys(c for c, _ in COLUMNS))


@dataclass(frozen=True)
class Schema:
    """A sweep table's columns (name, type) and the key columns that identify a cell;
    ``later``: columns added since tables were first written, which a table being resumed
    may lack (read as null)."""

    columns: tuple
    keys: tuple
    later: tuple = ()

    @property
    def names(self) -> tuple:
        return tuple(dict.fromkeys(c for c, _ in self.columns))


#: the table of a simulation sweep (a serving sweep's is :data:`paging.serve.sweep.SCHEMA`)
SIMULATE = Schema(COLUMNS, KEY_COLUMNS, later=("low_precision_fetches", "lifetime_tokens",
                                               "lifetime_tokens_all", "residencies"))
#: Rewrite the output at least this often (seconds) and after this many cells.
BATCH_SECONDS = 2.0
BATCH_CELLS = 200
# a cell group of a stack policy at this many k values or more is read off the miss curve
_CURVE_MIN_K = 2


@dataclass(frozen=True)
class Spec:
    """A validated sweep spec (lists of values; see the module docstring)."""

    traces: tuple[str, ...]
    policies: tuple[str, ...]
    k: tuple[int, ...]
    budget_gb: tuple[float, ...]
    seeds: tuple[int, ...]
    expand: tuple[str, ...]
    model: tuple[str | None, ...]
    precision: tuple[str | None, ...]
    hardware: tuple[str | None, ...]
    prefetch: tuple[str | None, ...]
    prefetch_strategy: tuple[str | None, ...]
    miss: tuple[str | None, ...]
    base: str  # the spec file's folder, for relative trace paths
    routing: tuple[str, ...] = ("standard",)
    timeline: tuple[str | None, ...] = (None,)
    warm: tuple[bool, ...] = (False,)
    lifetimes: bool = False
    file: str | None = None  # the spec file, for the line of a key a sequence is refused by


@dataclass(frozen=True)
class Task:
    """One unit of work: one sequence x policy x seed x options at one or more capacities.

    ``caps`` holds ``(k, budget_gb)`` pairs; ``curve`` reads all of them (k only) off one
    miss curve."""

    source: str
    path: str
    seq: int
    expand: str
    policy: str
    seed: int
    model: str | None
    precision: str | None
    hardware: str | None
    prefetch: str | None
    prefetch_strategy: str | None
    miss: str | None
    caps: tuple[tuple[int | None, float | None], ...]
    curve: bool = False
    routing: str = "standard"
    base: str = "."  # the spec file's folder, for a transition:train=FILE path
    timeline: str | None = None  # the timeline's options (None: the default timeline)
    warm: bool = False  # seq is -1: every sequence of the file, back to back
    lifetimes: bool = False  # the cache lifetimes (paging.lifetimes) of each cell
    stream: bool = False  # seq is -1: every sequence of a file too large to read, streamed
    verify: bool = False  # every cell's run checked by paging.verify (sweep --verify)


def task_names(task: Task) -> list[str]:
    """The sequences whose rows ``task`` makes: its own, or every one of a warm or streamed
    task's file."""
    if task.stream:
        return list(_stream_names(task.path, task.expand))
    seqs = _traces(task.path, task.expand)
    return [t.name for t in seqs] if task.warm else [seqs[task.seq].name]


# -- the spec ------------------------------------------------------------------------------------
def _line_of(text: str, key: str) -> int | None:
    from paging.options import toml_line

    return toml_line(text, key)


def policies_k_seeds(doc: dict, file: str, text: str) -> tuple[tuple, tuple, tuple]:
    """The ``policies``, ``k`` and ``seeds`` axes of a spec (a simulation or a serving sweep),
    checked at their lines: every policy built (and no two alike), k >= 1, seeds in
    0..2^63-1 (numpy refused a negative one for the randomized policies only)."""
    from paging.policies import make_policy, spec_key

    policies = _as_list(doc, "policies", "str", file, text)
    distinct("policies", policies, [spec_key(p) for p in policies], file, text)
    names = []
    for p in policies:
        try:
            names.append(make_policy(p).name)
        except PagingError as e:
            raise PagingError(e.message, file, _line_of(text, "policies")) from None
    # (two spellings of one policy, blind-oracle:oracle:eta=0.5 and ...,seed=0: one cell)
    distinct("policies", policies, names, file, text)
    ks = _as_list(doc, "k", "int", file, text)
    for k in ks:
        if k < 1:
            raise PagingError(f"k must be integers >= 1, got {k}", file, _line_of(text, "k"))
    seeds = _as_list(doc, "seeds", "int", file, text, default=[0])
    for s in seeds:
        if not 0 <= s <= INT64_MAX:
            raise PagingError(f"seeds must be integers 0..2^63-1, got {s}", file,
                              _line_of(text, "seeds"))
    return policies, ks, seeds


def _as_list(doc: dict, key: str, kind: str, file: str, text: str, default=None) -> tuple:
    """``doc[key]`` as a tuple of ``kind`` values (a scalar is a list of one); an error names
    the key's line (found only then: :func:`paging.options.toml_line` parses what precedes)."""
    if key not in doc:
        return tuple(default) if default is not None else ()
    v = doc[key]
    vals = v if isinstance(v, list) else [v]
    if not vals:
        raise PagingError(f"empty grid: {key!r} is an empty list; expected at least one value",
                          file, _line_of(text, key))
    for x in vals:
        ok = {"str": isinstance(x, str) and x != "",
              "int": isinstance(x, int) and not isinstance(x, bool),
              "num": (isinstance(x, (int, float)) and not isinstance(x, bool)
                      and math.isfinite(x) and x > 0)}[kind]
        if not ok:
            want = {"str": "non-empty strings", "int": "integers",
                    "num": "positive numbers"}[kind]
            raise PagingError(f"{key} must be {want} (or a list of them), got {x!r}", file,
                              _line_of(text, key))
        if kind == "int":
            try:
                check_int64(key, x, file)
            except PagingError as e:  # (the key's line, looked up only now)
                raise PagingError(e.message, file, _line_of(text, key)) from None
    if len(set(vals)) != len(vals):
        raise PagingError(f"{key} lists a value twice ({vals}); expected distinct values",
                          file, _line_of(text, key))
    return tuple(float(x) if kind == "num" else x for x in vals)


def load_spec(path: str | os.PathLike, warm: bool = False) -> Spec:
    """Read and validate a sweep spec (TOML). Every problem is one :class:`PagingError` naming
    the file and, where it can, the line. ``warm``: the default of the ``warm`` key
    (``paging sweep --warm``; a spec whose ``warm`` key has no ``true`` is then refused)."""
    from paging.options import read_toml

    file = str(path)
    doc, text = read_toml(path, "a sweep spec such as traces = [...], policies = [...], "
                                "k = [...]", noun="sweep spec")
    for key in doc:
        if key == "serve":
            raise PagingError("a [serve] table makes a serving sweep: paging sweep runs it "
                              "(in Python: paging.serve.sweep.run_serve_sweep)", file,
                              _line_of(text, "[serve]") or _line_of(text, key))
        if key not in SPEC_KEYS:
            raise PagingError(f"unknown key {key!r}; expected one of {', '.join(SPEC_KEYS)}",
                              file, _line_of(text, key))
    for key in ("traces", "policies"):
        if key not in doc:
            raise PagingError(f"missing key {key!r}; a sweep needs traces, policies and k (or "
                              "budget_gb)", file)
    if ("k" in doc) == ("budget_gb" in doc):
        raise PagingError("give the cache sizes as k = [...] (pages) or budget_gb = [...] "
                          "(GB), not both and not neither", file)
    traces = _as_list(doc, "traces", "str", file, text)
    from paging.policies import spec_key

    policies, ks, seeds = policies_k_seeds(doc, file, text)
    expand = _as_list(doc, "expand", "str", file, text, default=["rounds"])
    for e in expand:
        if e not in ("rounds", "groups"):
            raise PagingError(f"expand must be rounds or groups, got {e!r}", file,
                              _line_of(text, "expand"))
    model = _as_list(doc, "model", "str", file, text, default=[None])
    precision = _as_list(doc, "precision", "str", file, text, default=[None])
    hardware = _as_list(doc, "hardware", "str", file, text, default=[None])
    if model == (None,) and (precision != (None,) or hardware != (None,)):
        raise PagingError("precision and hardware need model = [...]", file,
                          _line_of(text, "precision") or _line_of(text, "hardware"))
    if model != (None,):
        from paging.cost import get_hardware, get_model, get_precision

        try:
            for m in model:
                get_model(m)
            named_precision = [get_precision(q or "bf16").name for q in precision]
            named_hardware = [get_hardware(h or "link-5gbps").name for h in hardware]
        except PagingError as e:
            raise PagingError(e.message, file) from None
        precision = distinct("precision", precision, named_precision, file, text)
        hardware = distinct("hardware", hardware, named_hardware, file, text)
    prefetch, strategy, miss = _specmd_keys(doc, file, text)
    _check_cascades(policies, ks, model, precision, miss, file, text)
    routing = _as_list(doc, "routing", "str", file, text, default=["standard"])
    from paging.routing import make_router

    hooks = []
    for r in routing:
        try:
            hook = make_router(r)
        except PagingError as e:
            raise PagingError(e.message, file, _line_of(text, "routing")) from None
        hooks.append("standard" if hook is None else hook.spec())
    distinct("routing", routing, [r.strip().lower() for r in routing], file, text)
    distinct("routing", routing, hooks, file, text)  # (max-rank:m=2 is max-rank:j=1,m=2)
    warm_vals = doc.get("warm", [warm])
    warm_vals = warm_vals if isinstance(warm_vals, list) else [warm_vals]
    if not warm_vals or not all(isinstance(w, bool) for w in warm_vals) \
            or len(set(warm_vals)) != len(warm_vals):
        raise PagingError(f"warm must be true, false or a list of distinct booleans, got "
                          f"{doc.get('warm')!r}", file, _line_of(text, "warm"))
    if warm and True not in warm_vals:  # (--warm was dropped without a word: cold rows)
        raise PagingError("paging sweep --warm asks for warm runs, but the spec sets warm = "
                          f"{json.dumps(doc['warm'])}; expected warm = true or [false, true] "
                          "in the spec, or no --warm", file, _line_of(text, "warm"))
    timeline = _timeline_key(doc, file, text, model, prefetch)
    lifetimes = doc.get("lifetimes", False)
    if not isinstance(lifetimes, bool):
        raise PagingError(f"lifetimes must be true or false, got {lifetimes!r}", file,
                          _line_of(text, "lifetimes"))
    if lifetimes and prefetch != (None,):
        raise PagingError("lifetimes = true counts residencies from fetched misses: not with "
                          "prefetch = [...]", file, _line_of(text, "lifetimes"))
    return Spec(traces, tuple(spec_key(p) for p in policies), ks,
                _as_list(doc, "budget_gb", "num", file, text), seeds, expand, model, precision,
                hardware, prefetch, strategy, miss, str(Path(path).resolve().parent),
                tuple(r.strip().lower() for r in routing), timeline, tuple(warm_vals),
                lifetimes, file)


_TIMELINE_KEYS = ("token_overhead_ms", "prefetch_streams", "prefetch_link")


def timeline_kwargs(value: str | None) -> dict:
    """The keyword arguments of :func:`paging.cost.timeline.timeline_run` in a ``timeline``
    value (``None`` or ``"default"``: none), checked; a bad value is a PagingError."""
    from paging.cost.timeline import timeline_options
    from paging.options import parse_spec

    if value is None or value.strip().lower() == "default":
        return {}
    bad = (f"timeline {value!r}: expected default or KEY=VALUE[,...] with KEY one of "
           f"{', '.join(_TIMELINE_KEYS)}")
    try:  # the package's one spec grammar, the name being "timeline"
        _, opts = parse_spec(f"timeline:{value}", "timeline")
    except PagingError as e:
        raise PagingError(f"{bad} ({e.message})") from None
    out: dict = {}
    for key, val in opts.items():
        if key not in _TIMELINE_KEYS:
            raise PagingError(bad)
        try:
            out[key] = (float(val) if key == "token_overhead_ms" else
                        int(val) if key == "prefetch_streams" else val.lower())
        except ValueError:
            raise PagingError(f"timeline {value!r}: {key} must be a number, got {val!r}") \
                from None
    if "prefetch_link" in out and out.get("prefetch_streams") != 2:
        raise PagingError(f"timeline {value!r}: prefetch_link needs prefetch_streams=2")
    timeline_options(**out)
    return out


def _canonical_timeline(value: str) -> str | None:
    """A ``timeline`` value in a fixed order of keys (None for the default timeline): what the
    cell runs (:func:`timeline_kwargs` reads it back), so its numbers are exact."""
    from paging.options import spec_number

    kw = timeline_kwargs(value)
    if not kw:
        return None
    return ",".join(f"{k}={spec_number(kw[k])}" if k == "token_overhead_ms" else f"{k}={kw[k]}"
                    for k in _TIMELINE_KEYS if k in kw)


def _timeline_key(doc: dict, file: str, text: str, model: tuple, prefetch: tuple) -> tuple:
    """The ``timeline`` key: canonical values (None = default), needing ``model`` (and
    ``prefetch`` for a second prefetch stream)."""
    vals = _as_list(doc, "timeline", "str", file, text, default=["default"])
    try:
        out = tuple(_canonical_timeline(v) for v in vals)
    except PagingError as e:
        raise PagingError(e.message, file, _line_of(text, "timeline")) from None
    if len(set(out)) != len(out):
        raise PagingError(f"timeline lists the same options twice ({list(vals)})", file,
                          _line_of(text, "timeline"))
    if any(v is not None for v in out) and model == (None,):
        raise PagingError("timeline options need model = [...] (the latency timeline)", file,
                          _line_of(text, "timeline"))
    if any(v is not None and "prefetch_streams=2" in v for v in out) and prefetch == (None,):
        raise PagingError("timeline prefetch_streams=2 puts prefetches on a stream of their "
                          "own: it needs prefetch = [...]", file, _line_of(text, "timeline"))
    return out


def _specmd_keys(doc: dict, file: str, text: str) -> tuple[tuple, tuple, tuple]:
    """``prefetch``, ``prefetch_strategy`` and ``miss`` (SpecMD's axes; ``paging simulate``'s
    options of the same names), parsed so that a bad value fails before anything runs. A
    precision cascade's model, precision and budget are checked by the caller, with the grid
    (:func:`_check_cascades`; a serving sweep's with each cell)."""
    from paging.predict.prefetch import make_prefetch_predictor, make_strategy

    given = _as_list(doc, "prefetch", "str", file, text, default=["none"])
    prefetch = distinct("prefetch", given, [None if p.strip().lower() == "none" else p
                                            for p in given], file, text)  # (none, None: one)
    strategy = _as_list(doc, "prefetch_strategy", "str", file, text, default=[None])
    given_miss = _as_list(doc, "miss", "str", file, text, default=["fetch"])
    miss = distinct("miss", given_miss, [None if m.strip().lower() == "fetch" else m
                                         for m in given_miss], file, text)
    try:
        canon_prefetch = [None if p is None else make_prefetch_predictor(p).spec()
                          for p in prefetch]
        canon_strategy = [None if st is None else make_strategy(st).spec() for st in strategy]
        canon_miss = [_miss_meaning(m) for m in miss]
    except PagingError as e:
        key = "prefetch_strategy" if "strateg" in e.message else (
            "miss" if "miss" in e.message else "prefetch")
        raise PagingError(e.message, file, _line_of(text, key)) from None
    # two spellings of one option (Frequency and frequency, topk and topk:overfetch=1,
    # DROP:rank=1 and drop:rank=1) would be the same cells run and counted twice
    distinct("prefetch", given, canon_prefetch, file, text)
    distinct("prefetch_strategy", strategy, canon_strategy, file, text)
    distinct("miss", given_miss, canon_miss, file, text)
    if strategy != (None,) and prefetch == (None,):
        raise PagingError("prefetch_strategy needs prefetch = [...]", file,
                          _line_of(text, "prefetch_strategy"))
    return prefetch, strategy, miss


def _miss_meaning(spec: str | None) -> tuple:
    """What miss handler ``spec`` runs as, at every run precision (a cascade's default levels
    start at the run's): two specs are one handler when these are equal."""
    from paging.miss import CHAIN, make_miss

    if spec is None:
        return (None,)
    make_miss(spec, "bf16")  # (a bad spec: its one-line error)
    out = []
    for q in CHAIN:
        try:
            h = make_miss(spec, q)
            out.append(None if h is None else h.spec())
        except PagingError as e:  # (levels the chain cannot give below q)
            out.append(e.message)
    return tuple(out)


def _check_cascades(policies, ks, model, precision, miss, file, text) -> None:
    """A precision cascade of ``miss`` needs a model, a byte budget and, in every (model,
    precision) of the grid, levels that start at that precision (:meth:`RunSpec._check_miss`,
    the check of ``paging simulate --miss``)."""
    from paging.miss import make_miss
    from paging.policies import spec_key

    line = _line_of(text, "miss")
    for ms in miss:
        if ms is None or not make_miss(ms, "bf16").uses_levels:
            continue
        if model == (None,):
            raise PagingError(f"miss handler {ms!r} fetches at several precisions: it needs "
                              "model = [...] (the sizes of its precisions)", file, line)
        if ks:
            raise PagingError(f"miss handler {ms!r} mixes precisions: give the cache sizes as "
                              "budget_gb = [...], not k", file, line)
        for m, q in itertools.product(model, precision):
            try:
                RunSpec(spec_key(policies[0]), budget=1, model=m, precision=q, miss=ms)
            except PagingError as e:
                raise PagingError(f"{e.message} (model {m}, precision {q})", file,
                                  line) from None


def _resolve(source: str, base: str) -> str:
    """A generator spec as it is; a path tried as given, under $PAGING_TRACES, next to the spec."""
    from paging.generators import is_spec
    from paging.io import resolve_path

    if is_spec(source):
        return source
    try:
        return str(resolve_path(source).resolve())
    except PagingError:
        p = Path(base) / source
        if p.exists():
            return str(p.resolve())
        raise


@functools.lru_cache(maxsize=8)
def _traces(path: str, expand: str) -> tuple:
    """The sequences of ``path`` (cached per process: a worker loads each file once)."""
    from paging.io import load

    return tuple(load(path, expand=expand))


def _streamed(path: str) -> int | None:
    """The size in bytes of a ``.npz`` trace file larger than ``$PAGING_STREAM_BYTES``
    (:func:`paging.stream.stream_threshold`), which the sweep streams; else None."""
    from paging.generators import is_spec
    from paging.io import detect_format
    from paging.stream import stream_threshold

    if is_spec(path):
        return None
    try:
        size = Path(path).stat().st_size
        fmt = detect_format(Path(path))
    except (OSError, PagingError):
        return None
    return size if size > stream_threshold() and fmt == "npz" else None


@functools.lru_cache(maxsize=8)
def _stream_names(path: str, expand: str) -> tuple[str, ...]:
    """The sequence names of a streamed ``.npz`` (its header; no request is read)."""
    from paging.io.chunks import open_chunks

    return tuple(s.name for s in open_chunks(path, expand=expand))


def _stream_tasks(spec: Spec, source: str, path: str, size: int) -> list[Task]:
    """The tasks of a trace file too large to read whole (:func:`_streamed`): one per expand x
    policy x seed, every k of it in one pass over the file (:func:`paging.stream.stream_run`).
    A stream sweeps policies, k and seeds in the mode the file stores; any other axis is
    refused here, before anything runs."""
    from paging.errors import check_k
    from paging.io.chunks import open_chunks
    from paging.stream import stream_policy

    gb = f"{source} is {size / 1e9:.1f} GB, above $PAGING_STREAM_BYTES: the sweep streams it"
    for axis, on in (("budget_gb", bool(spec.budget_gb)), ("model", spec.model != (None,)),
                     ("prefetch", spec.prefetch != (None,)), ("miss", spec.miss != (None,)),
                     ("routing", spec.routing != ("standard",)),
                     ("warm", spec.warm != (False,)), ("timeline", spec.timeline != (None,)),
                     ("lifetimes", spec.lifetimes)):
        if on:
            raise PagingError(f"{gb}, and a streamed sweep takes traces, policies, k, seeds and "
                              f"the file's own expand only; drop {axis} (or raise "
                              "$PAGING_STREAM_BYTES to read the file whole)", source)
    for p in spec.policies:
        try:
            stream_policy(p, next_use=False)
        except PagingError as e:
            raise PagingError(f"{gb}: {e.message}", source) from None
    tasks = []
    for expand in spec.expand:
        try:
            seqs = list(open_chunks(path, expand=expand))
        except PagingError as e:
            raise PagingError(f"{gb}: {e.message}", source) from None
        if not seqs:
            raise PagingError("the trace holds no sequence; nothing to simulate", source)
        for k in spec.k:
            check_k(k, seqs[0].layout.n_pages)
        caps = tuple((k, None) for k in spec.k)
        tasks += [Task(source, path, -1, expand, policy, seed, None, None, None, None, None,
                       None, caps, base=spec.base, stream=True)
                  for policy in spec.policies for seed in spec.seeds]
    return tasks


def plan(spec: Spec) -> list[Task]:
    """The tasks of ``spec``, in key order. Loads every trace once (to list its sequences and
    check capacities and sizes), so every input error shows before anything runs; a ``.npz``
    file too large to read whole is streamed instead (:func:`_stream_tasks`)."""
    from paging.errors import check_k
    from paging.io import trace_sizes
    from paging.mrc import curve_method
    from paging.predict.prefetch import _learns, check_training, training_file

    tasks = []
    for source in spec.traces:
        path = _resolve(source, spec.base)
        size = _streamed(path)
        if size is not None:
            tasks += _stream_tasks(spec, source, path, size)
            continue
        for expand in spec.expand:
            seqs = _traces(path, expand)
            if not seqs:
                raise PagingError("the trace holds no sequence; nothing to simulate", source)
            for k in spec.k:
                check_k(k, seqs[0].layout.n_pages)
            for p in spec.prefetch:
                try:
                    check_training(p, len(seqs))
                except PagingError as e:
                    raise PagingError(e.message, source) from None
                if True in spec.warm and _learns(p) and training_file(p) is None:
                    raise PagingError("warm simulates every sequence of the file: prefetch "
                                      "transition needs transition:train=FILE", source)
            _reads(spec, seqs, source)  # (a policy or handler's scores, before anything runs)
            _check_sequences(spec, seqs)
            if True in spec.warm:
                if any(r != "standard" for r in spec.routing):
                    _routable(seqs, spec.routing, source)
                tasks += _warm_tasks(spec, source, path, expand)
            if False not in spec.warm:
                continue
            for i, tr in enumerate(seqs):
                if spec.budget_gb and spec.model == (None,) and trace_sizes(tr) is None:
                    raise PagingError(f"budget_gb needs page sizes: give model = [...], or a "
                                      f"cache trace with object sizes; sequence {tr.name} has "
                                      "none", source)
                for policy, routing in itertools.product(spec.policies, spec.routing):
                    routed = routing != "standard"
                    if routed:
                        _routable([tr], [routing], source)
                    curve = (len(spec.k) >= _CURVE_MIN_K and spec.model == (None,)
                             and not routed and not spec.lifetimes
                             and curve_method(tr, policy) == "stack")
                    extras = [(p, st if p is not None else None, m) for p in spec.prefetch
                              for st in spec.prefetch_strategy for m in spec.miss]
                    extras = list(dict.fromkeys(extras))  # no strategy without a prefetcher
                    for seed in spec.seeds:
                        for m in spec.model:
                            for q in spec.precision:
                                for h in spec.hardware:
                                    caps = ([(k, None) for k in spec.k]
                                            + [(None, g) for g in spec.budget_gb])
                                    for (p, st, mh), tl in itertools.product(
                                            extras, spec.timeline if m is not None
                                            else (None,)):
                                        cv = curve and p is None and mh is None
                                        groups = [tuple(caps)] if cv else [(c,) for c in caps]
                                        tasks += [Task(source, path, i, expand, policy, seed, m,
                                                       q, h, p, st, mh, g, cv, routing,
                                                       spec.base, tl,
                                                       lifetimes=spec.lifetimes)
                                                  for g in groups]
    return tasks


def _reads(spec: Spec, seqs, source: str) -> None:
    """Refuse, naming the file, a policy or miss handler that reads gate scores or ranks the
    sequences lack (:meth:`paging.run.RunSpec.check`): the cells run unchecked, and the first
    such cell ended the sweep after others had been written (a review: 448 rows left)."""
    from paging.cost import budget_bytes
    from paging.run import RunSpec

    caps = ([{"budget": budget_bytes(g)} for g in spec.budget_gb[:1]]
            + [{"k": k} for k in spec.k[:1]])
    for policy, miss, model, precision, cap in itertools.product(
            spec.policies, dict.fromkeys(spec.miss), spec.model, spec.precision, caps):
        try:
            RunSpec(policy, **cap, miss=miss, model=model, precision=precision).check(
                seqs, train=())
        except PagingError as e:
            raise PagingError(e.message, source) from None


def _routable(seqs, routings, source: str) -> None:
    """A routing hook decides per (token, layer) group: refuse a rounds-mode expansion of a
    top-K trace (K > 1), naming the spec's entry."""
    for routing in routings:
        for tr in seqs:
            if routing != "standard" and tr.expand == "rounds" and tr.rank is not None \
                    and tr.n_requests and int(tr.rank.max()) > 0:
                raise PagingError(f"routing {routing} decides per (token, layer) group: "
                                  "use expand = [\"groups\"]", source)


def _warm_tasks(spec: Spec, source: str, path: str, expand: str) -> list[Task]:
    """One task per policy x routing x seed x options x capacity running every sequence of
    ``path`` back to back (no miss curves: a warm run is one simulation)."""
    extras = list(dict.fromkeys((p, st if p is not None else None, m) for p in spec.prefetch
                                for st in spec.prefetch_strategy for m in spec.miss))
    caps = [(k, None) for k in spec.k] + [(None, g) for g in spec.budget_gb]
    return [Task(source, path, -1, expand, policy, seed, m, q, h, p, st, mh, (c,), False,
                 routing, spec.base, timeline=tl, warm=True, lifetimes=spec.lifetimes)
            for policy in spec.policies for routing in spec.routing for seed in spec.seeds
            for m in spec.model
            for q in spec.precision for h in spec.hardware for p, st, mh in extras
            for tl in (spec.timeline if m is not None else (None,)) for c in caps]


def cell_keys(task: Task, name: str) -> list[tuple]:
    """The key tuples (:data:`KEY_COLUMNS`) of the cells of ``task`` (sequence ``name``)."""
    return [(task.source, name, task.policy, task.expand, task.model, task.precision,
             task.hardware, task.prefetch, task.prefetch_strategy, task.miss, task.seed,
             task.routing, task.timeline, task.warm, k, g) for k, g in task.caps]


# -- one task ------------------------------------------------------------------------------------
def _row(task: Task, name: str, k, g, method: str, fields: dict) -> dict:
    row = dict.fromkeys(COLUMN_NAMES)
    row.update({c: fields[c] for c in fields if c in row})
    row.update(zip(KEY_COLUMNS, cell_keys(task, name)[0][:-2] + (k, g), strict=True))
    row["method"] = method
    return row


def run_task(task: Task) -> list[dict]:
    """The rows of ``task``'s cells (runs on a Dask worker, or in-process): each cell a
    :class:`~paging.run.RunSpec` run by :func:`paging.run.run`, or read off a miss curve."""
    from paging.io import trace_sizes

    if task.warm:
        return _run_warm(task)
    if task.stream:
        return _run_stream(task)
    trace = _traces(task.path, task.expand)[task.seq]
    if task.curve:
        from paging.mrc import miss_curve

        curve = miss_curve(trace, task.policy, seed=task.seed, progress=False)
        if task.verify:  # (each k read off the curve equals a verified run)
            from paging.mrc import verify_curve

            verify_curve(trace, task.policy, curve, seed=task.seed,
                         ks=[min(k, curve.size) for k, _ in task.caps], show=False)
        n = trace.n_requests
        rows = []
        for k, g in task.caps:
            m = int(curve[min(k, curve.size) - 1])
            rows.append(_row(task, trace.name, k, g, "mrc", {
                "requests": n, "misses": m, "hits": n - m, "miss_ratio": m / n if n else 0.0,
                "bypasses": 0, "cost": float(m)}))
        return rows
    seqs = _traces(task.path, task.expand)
    sizes = trace_sizes(trace) if task.model is None else None
    rows = []
    for k, g in task.caps:
        for fields in run(_run_spec(task, k, g, sizes), seqs, train=_train(task),
                          only=[task.seq], check=False):
            fields.setdefault("prefetch_late", None)
            _low_fetches(fields)
            rows.append(_row(task, trace.name, k, g, "simulate", fields))
    return rows


def _low_fetches(fields: dict) -> None:
    """``low_precision_fetches`` of a cascade's row: its fetches below the first level."""
    levels = fields.get("fetch_levels")
    if levels and len(levels) > 1:
        fields["low_precision_fetches"] = sum(list(levels.values())[1:])


def _run_spec(task: Task, k, g, sizes=None) -> RunSpec:
    """The :class:`~paging.run.RunSpec` of one cell of ``task``."""
    from paging.cost import budget_bytes

    return RunSpec(task.policy, k=k, budget=None if g is None else budget_bytes(g),
                   model=task.model, precision=task.precision, hardware=task.hardware,
                   prefetch=task.prefetch, prefetch_strategy=task.prefetch_strategy,
                   miss=task.miss, routing=task.routing, warm=task.warm,
                   timeline=timeline_kwargs(task.timeline), seed=task.seed, sizes=sizes,
                   lifetimes=task.lifetimes, verify=task.verify)


def _train(task: Task):
    """The training sequences of a ``transition:train=FILE`` predictor (FILE next to the spec),
    else None (the file's other sequences)."""
    from paging.predict.prefetch import training_file

    file = training_file(task.prefetch)
    return None if file is None else _traces(_resolve(file, task.base), task.expand)


def _run_stream(task: Task) -> list[dict]:
    """A streamed task: every k of one policy and seed in one pass over the file, one row per
    sequence and k (``method`` "stream"; the fields of ``paging simulate --stream --json``)."""
    from paging.stream import stream_run

    rows = []
    for out in stream_run(task.path, [(task.policy, k) for k, _ in task.caps],
                          expand=task.expand, seed=task.seed, verify=task.verify):
        for (k, g), res in zip(task.caps, out.results, strict=True):
            rows.append(_row(task, out.trace, k, g, "stream", res.to_dict()))
    return rows


def _run_warm(task: Task) -> list[dict]:
    """A warm task: the file's sequences back to back (:mod:`paging.warm`), one run per
    capacity, one row per sequence."""
    seqs = _traces(task.path, task.expand)
    rows = []
    for k, g in task.caps:
        for fields in run(_run_spec(task, k, g), seqs, train=_train(task), check=False):
            if not fields["warm_total"]:
                rows.append(_row(task, fields["trace"], k, g, "simulate", fields))
    return rows


def run_tasks(tasks: list, run_one=None) -> list[dict]:
    """The rows of several tasks (one Dask task: fewer, larger tasks cut the scheduler's
    per-task overhead); ``run_one`` runs one task (default :func:`run_task`)."""
    run_one = run_task if run_one is None else run_one
    return [row for t in tasks for row in run_one(t)]


@dataclass(frozen=True)
class _Failed:
    """A task's :class:`PagingError`, returned by a Dask worker instead of raised (a raised
    one is logged by the worker with its traceback before the one-line error)."""

    message: str
    file: str | None
    line: int | None
    verification: bool = False  # (a VerificationError of --verify, not an input error)


def _guarded_tasks(tasks: list, run_one=None):
    """:func:`run_tasks`, an input error (a streamed trace's bad request, found as it is read)
    or a failed verification (``--verify``) returned as :class:`_Failed`."""
    from paging.errors import VerificationError

    try:
        return run_tasks(tasks, run_one)
    except PagingError as e:
        return _Failed(e.message, e.file, e.line)
    except VerificationError as e:
        return _Failed(str(e), None, None, verification=True)


def _chunks(tasks: list[Task], n_workers: int) -> list[list[Task]]:
    """``tasks`` in chunks of consecutive tasks (same trace file mostly), about 8 chunks per
    worker and at most 32 tasks each, so that every worker stays busy to the end."""
    size = max(1, min(32, len(tasks) // max(1, 8 * n_workers)))
    return [tasks[i:i + size] for i in range(0, len(tasks), size)]


# -- the table -----------------------------------------------------------------------------------
def _sort_key(row: dict, keys=KEY_COLUMNS) -> tuple:
    return tuple((row[c] is not None, row[c] if row[c] is not None else 0) for c in keys)


def _key(row: dict, keys=KEY_COLUMNS) -> tuple:
    return tuple(row[c] for c in keys)


def _coerce(value, kind: str):
    if value is None or value == "":
        return None
    if kind == "int":
        return int(value)
    if kind == "float":
        return float(value)
    if kind == "list":
        return [int(x) for x in (json.loads(value) if isinstance(value, str) else value)]
    if kind == "bool":
        return value if isinstance(value, bool) else str(value).lower() == "true"
    return str(value)


def _is_csv(out: str | os.PathLike) -> bool:
    return str(out).lower().endswith(".csv")


def read_table(out: str | os.PathLike, schema: Schema = SIMULATE) -> list[dict]:
    """The rows of a sweep table written by :func:`write_table` (Parquet, or CSV by name)."""
    file = str(out)
    names = schema.names
    try:
        if _is_csv(out):
            with open(out, newline="", encoding="utf-8-sig") as fh:
                reader = csv.DictReader(fh)
                raw = list(reader)
                # (the header, even without rows: a one-line file of other columns, or any
                # one line of text, was taken for an empty table and overwritten)
                cols = names if reader.fieldnames is None else reader.fieldnames
        else:
            import pyarrow.parquet as pq

            table = pq.read_table(out)
            cols, raw = table.column_names, table.to_pylist()
    except Exception as e:  # noqa: BLE001 - any unreadable file is one user-facing error
        raise PagingError(f"cannot read the existing sweep table to resume ({e}); remove it or "
                          "choose another --out", file) from None
    missing = [c for c in names if c not in cols and c not in schema.later]
    if missing:
        raise PagingError(f"not a sweep table of this kind (no columns "
                          f"{', '.join(missing[:3])}); remove it or choose another --out", file)
    kinds = dict(schema.columns)
    rows = []
    for i, r in enumerate(raw):
        try:
            rows.append({c: _coerce(r.get(c), kinds[c]) for c in names})
        except (ValueError, TypeError, RecursionError) as e:  # (a cell edited by hand: int("xx"))
            raise PagingError(f"cannot read the existing sweep table to resume (row {i + 1}: "
                              f"{e}); remove it or choose another --out", file,
                              i + 2 if _is_csv(out) else None) from None
    return rows


def write_table(rows: list[dict], out: str | os.PathLike, schema: Schema = SIMULATE) -> None:
    """Write ``rows`` sorted by the key columns, atomically: Parquet (pyarrow), or CSV when
    ``out`` ends in ``.csv`` (lists as JSON text)."""
    from paging.io.atomic import atomic_path

    rows = sorted(rows, key=functools.partial(_sort_key, keys=schema.keys))
    with atomic_path(out) as tmp:
        if _is_csv(out):
            with open(tmp, "w", newline="", encoding="utf-8") as fh:
                w = csv.writer(fh, lineterminator="\n")
                w.writerow(schema.names)
                for r in rows:
                    w.writerow(["" if r[c] is None else json.dumps(r[c]) if k == "list"
                                else repr(r[c]) if k == "float" else r[c]
                                for c, k in schema.columns])
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            types = {"str": pa.string(), "int": pa.int64(), "float": pa.float64(),
                     "list": pa.list_(pa.int64()), "bool": pa.bool_()}
            pa_schema = pa.schema([(c, types[k]) for c, k in schema.columns])
            pq.write_table(pa.Table.from_pylist(rows, schema=pa_schema), tmp)


# -- running -------------------------------------------------------------------------------------
@contextlib.contextmanager
def _executor(scheduler: str | None, workers: int, processes: bool, run_one=None):
    """Yield ``submit(tasks) -> iterator of row lists``: in-process for ``workers == 0`` and no
    scheduler, else on Dask (:func:`dask_client`). ``run_one`` (a module-level function, for
    the workers) runs one task; default :func:`run_task`."""
    run_one = run_task if run_one is None else run_one
    if scheduler is None and workers == 0:
        yield lambda tasks: map(run_one, tasks)
        return
    from paging.cluster import dask_client

    with dask_client(scheduler, workers, processes) as client:
        from dask.distributed import as_completed

        def submit(tasks):
            n = max(1, len(client.scheduler_info().get("workers", {})))
            futures = client.map(functools.partial(_guarded_tasks, run_one=run_one),
                                 _chunks(tasks, n), pure=False)
            for _, rows in as_completed(futures, with_results=True):
                if isinstance(rows, _Failed):
                    for f in futures:
                        f.cancel()
                    if rows.verification:
                        from paging.errors import VerificationError

                        raise VerificationError(rows.message)
                    raise PagingError(rows.message, rows.file, rows.line)
                yield rows
        yield submit


def run_sweep(spec_path: str | os.PathLike, out: str | os.PathLike, *,
              scheduler: str | None = None, workers: int = 1, processes: bool = False,
              progress: bool | None = None, on_batch=None, warm: bool = False,
              verify: bool = False) -> dict:
    """Run the sweep of ``spec_path`` into ``out`` (see the module docstring).

    Parameters
    ----------
    spec_path : str or PathLike
        The TOML spec (:func:`load_spec`).
    out : str or PathLike
        The table: Parquet, or CSV when the name ends in ``.csv``. Cells it already holds are
        skipped (resumption).
    scheduler : str, optional
        Address of a running Dask scheduler (``tcp://host:8786``); its workers must be able to
        import :mod:`paging` and read the trace files.
    workers : int
        Local Dask workers when no scheduler is given; 0 runs in this process without Dask.
    processes : bool
        Local workers are processes, or threads of this process (default: the compiled
        kernels release the GIL, and threads share the loaded traces).
    progress : bool or None
        A progress bar on stderr; None shows it when stderr is a terminal.
    on_batch : callable, optional
        Called with the number of rows written after every batch (tests interrupt here).
    warm : bool
        The default of the spec's ``warm`` key (``paging sweep --warm``).
    verify : bool
        Check every cell's run independently (:func:`paging.verify.verify`; a cell read off
        a miss curve against a verified run at its k; a streamed one chunk by chunk): a
        failure ends the sweep with a :class:`~paging.verify.VerificationError`. Verification
        changes no number, so it is not a key: a resumed table's old rows are not re-run.

    Returns
    -------
    dict
        ``{"out", "cells", "ran", "skipped"}``.
    """
    spec = load_spec(spec_path, warm=warm)
    try:
        tasks = plan(spec)
    except PagingError as e:
        raise _named(e, spec_path) from None
    if verify:
        from dataclasses import replace

        tasks = [replace(t, verify=True) for t in tasks]

    def check(rows):  # lifetimes is not a key: the old rows would be reused without them
        if spec.lifetimes and any(r["residencies"] is None and not r["warm"] for r in rows):
            raise PagingError("the table was made without lifetimes and this spec asks for them "
                              "(lifetimes = true); its rows would be reused without them: "
                              "remove it or choose another --out", str(out))

    try:
        return drive(tasks, lambda t: [key for name in task_names(t)
                                             for key in cell_keys(t, name)],
                     run_task, out, SIMULATE, scheduler, workers, processes, progress,
                     on_batch, check=check)
    except PagingError as e:
        raise _named(e, spec_path) from None


#: the spec key of a word a run's refusal names it by, where the two differ (a serving
#: sweep's closed loop draws its requests per client: --max-requests is its clients' line)
_KEY_OF_WORD = {"policy": "policies", "rate": "rates", "budget": "budget_gb",
                "max_requests": "clients"}


def option_line(message: str, text: str) -> int | None:
    """The line of the spec ``text`` holding the key a run's refusal is about, as the commands
    word it: an option it names ("no request arrives: --rate 5 drew none", "--miss
    drop:score=0.5 reads gate scores"), else the word it starts with ("unknown precision
    'int3'", "routing pruning:j=3: j must be in 1..2", "model mixtral-8x7b has 32 layers",
    "k must be an integer >= 1"); None when the spec has no such key. The one mapping of both
    sweeps (a simulation sweep's and a serving sweep's)."""
    import re

    words = re.findall(r"--([a-z][a-z-]*)", message)
    m = re.match(r"(?:unknown )?([a-z]+(?: strategy)?)\b", message)
    if m is not None:
        words.append(m.group(1))
    for word in words:
        key = word.replace("-", "_").replace(" ", "_")
        line = _line_of(text, _KEY_OF_WORD.get(key, key))
        if line is not None:
            return line
    return None


def _named(e: PagingError, spec_path) -> PagingError:
    """A cell's refusal that names no file (it stopped the sweep with the run's message only)
    named at the spec file and the line of the key it is about (:func:`option_line`)."""
    if e.file is not None:
        return e
    try:
        text = Path(spec_path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        text = ""
    return PagingError(e.message, str(spec_path), option_line(e.message, text) if text
                       else None)


def check_models(seqs, models, file: str | None) -> None:
    """Each sequence of ``seqs`` against the layout of each model named in ``models``, before
    any run, naming the spec ``file`` and its ``model`` line (both sweeps: the first cell to
    meet a mismatch stopped the sweep with the run's message only)."""
    from paging.cost import get_model

    for name in dict.fromkeys(models):
        m = get_model(name)
        for seq in seqs:
            try:
                m.check_layout(seq, advise=False)  # (a spec gives no layout)
            except PagingError as e:
                line = None if file is None else _line_of(
                    Path(file).read_text(encoding="utf-8-sig"), "model")
                raise PagingError(e.message, file, line) from None


def _check_sequences(spec: Spec, seqs) -> None:
    """Before any cell runs, each sequence against each ``model``'s layout and each
    ``routing`` hook (J against its K, what it knows), naming the spec file and the key's
    line, as a serving sweep checks them: the first cell to meet one stopped the sweep with
    the run's message only, after the cells before it were written."""
    from paging.routing import make_router

    check_models(seqs, [m for m in spec.model if m is not None], spec.file)
    routings = [r for r in spec.routing if r != "standard"]
    for seq in seqs:
        try:
            for r in routings:
                if seq.expand == "groups" or seq.rank is None or not seq.n_requests \
                        or int(seq.rank.max()) == 0:  # (else refused by _routable)
                    make_router(r).reset(seq)
        except PagingError as e:
            line = None
            if spec.file is not None:
                line = _line_of(Path(spec.file).read_text(encoding="utf-8-sig"), "routing")
            raise PagingError(e.message, spec.file, line) from None


def drive(tasks, keys_of, run_one, out, schema: Schema, scheduler, workers, processes,
          progress, on_batch, unit: str = "cell", check=None) -> dict:
    """Run the tasks not yet in the table ``out`` and rewrite it as rows come (resumption,
    atomic batches); the summary of :func:`run_sweep`. ``check``: called with the rows of a
    table being resumed, before anything runs, to refuse one made with another setting."""
    from paging import progress as pbar

    suffix = Path(out).suffix.lower()
    if suffix not in ("", ".csv", ".parquet", ".pq"):  # (it wrote Parquet under any name)
        raise PagingError(f"--out {out}: a sweep table is Parquet (.parquet) or CSV (.csv), "
                          f"not {suffix}")
    rows = read_table(out, schema) if Path(out).exists() else []
    if check is not None and rows:
        check(rows)
    key = functools.partial(_key, keys=schema.keys)
    done = {key(r) for r in rows}
    todo = []
    n_cells = skipped = 0
    for t in tasks:
        keys = keys_of(t)
        n_cells += len(keys)
        left = sum(k not in done for k in keys)
        skipped += len(keys) - left
        if left:
            todo.append(t)
    new = 0
    with _executor(scheduler, workers, processes, run_one) as submit, \
            pbar.bar(n_cells - skipped, "sweep", unit=unit, show=progress) as bar:
        last, pending = time.monotonic(), 0
        for got in (submit(todo) if todo else ()):
            fresh = [r for r in got if key(r) not in done]
            rows += fresh
            done.update(key(r) for r in fresh)
            new += len(fresh)
            pending += len(fresh)
            bar.update(len(fresh))
            if pending >= BATCH_CELLS or time.monotonic() - last >= BATCH_SECONDS:
                write_table(rows, out, schema)
                last, pending = time.monotonic(), 0
                if on_batch is not None:
                    on_batch(len(rows))
        if pending or not Path(out).exists():
            write_table(rows, out, schema)
    return {"out": str(out), "cells": n_cells, "ran": new, "skipped": skipped}
