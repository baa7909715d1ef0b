"""The ``serve`` table of ``paging sweep``: rates x policies x budgets (x links, precisions,
batch sizes, seeds) of serving runs, on Dask, into one tidy table.

A sweep spec with a ``[serve]`` table is a serving sweep::

    traces    = ["mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl",
                 "mixtral-8x7b-instruct-vllm/humaneval_p0_prefill_decode_raw.jsonl"]
    policies  = ["lru", "llru", "token-match"]
    budget_gb = [8, 16]               # or k = [...] (experts)
    model     = "mixtral-8x7b"        # one model
    precision = ["int4"]              # default bf16
    hardware  = ["pcie4", "link-5gbps"]
    seeds     = [0, 1]                # default [0]: the arrivals, the draws, the policy
    prefetch  = ["none", "frequency"] # optional, as paging serve --prefetch (and
    prefetch_strategy = ["topk:overfetch=1"]  # --prefetch-strategy, --miss: fetch,
    miss      = ["fetch"]             # substitute, drop:..., fetch-lowest-bit, fetch-priority;
                                      # the last two with budget_gb)
    routing   = ["standard", "max-rank:j=1"]  # optional, as paging serve --routing

    [serve]
    rates     = [0.5, 1, 2]           # Poisson; or clients = [4, 16] with think = S
    duration  = 30                    # seconds of arrivals (required)
    max_batch = [16]                  # default [16]
    max_tokens = 512                  # default 512
    scheduler = "continuous"          # or "static"
    prompt_tokens = 32                # a decode log's stand-in prompt
    slo_ttft_ms = 2000                # optional: goodput_rps and slo_attained
    slo_tpot_ms = 300
    batch_reading = "best"            # or "worst": paging serve --batch-reading
    max_requests = 1000               # optional: paging serve --max-requests
    step_overhead_ms = 0.5            # optional: paging serve --step-overhead-ms (default 0)

The traces of a serving sweep are one pool (every cell draws its requests from all their
sequences, groups mode). Each cell is one :func:`paging.serve.serve` run, a row of
:data:`SCHEMA` (the summary of ``paging serve``); the table is resumable and rewritten
atomically like a simulation sweep's (:mod:`paging.sweep`); a table written before its
``low_precision_fetches`` column or its ``routing`` axis existed is resumed with those columns
null in its old rows (``routing`` null is standard routing, as in every row without a hook;
``retained_mass``, ``top1_changed`` and ``kl`` are the routed rows' quality proxies). The
one-value settings (:data:`SETTING`: the pool, duration, think, max_tokens, scheduler,
prompt_tokens, the SLOs, max_requests, step_overhead_ms) are columns too, and a table is
resumed only by a spec with the same ones (:func:`check_resumable`).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from pathlib import Path

from paging.errors import PagingError, check_int64
from paging.options import distinct
from paging.sweep import (
    Schema,
    _as_list,
    _line_of,
    _resolve,
    _specmd_keys,
    _traces,
    check_models,
    drive,
    option_line,
    policies_k_seeds,
)

TOP_KEYS = ("traces", "policies", "k", "budget_gb", "model", "precision", "hardware", "seeds",
            "prefetch", "prefetch_strategy", "miss", "routing", "serve")
SERVE_KEYS = ("rates", "clients", "think", "duration", "max_batch", "max_tokens", "scheduler",
              "prompt_tokens", "slo_ttft_ms", "slo_tpot_ms", "batch_reading", "max_requests",
              "step_overhead_ms")
KEYS = (("policy", "str"), ("model", "str"), ("precision", "str"), ("hardware", "str"),
        ("prefetch", "str"), ("prefetch_strategy", "str"), ("miss", "str"), ("routing", "str"),
        ("k", "int"), ("budget_gb", "float"), ("rate", "float"), ("clients", "int"),
        ("max_batch", "int"), ("seed", "int"))
_LAT = tuple((f"p{q}_{m}", "float") for m in ("ttft_ms", "tpot_ms", "e2e_ms")
             for q in (50, 90, 99))
#: the sweep's one-value settings, the same in every row: a table is resumed only by a spec
#: with the same ones (they are not cell keys, and a changed duration reused the old rows);
#: ``pool`` is the traces as the spec names them (a JSON list), ``think_s`` null in rate rows
SETTING = (("pool", "str"), ("duration_s", "float"), ("think_s", "float"), ("max_tokens", "int"),
           ("scheduler", "str"), ("prompt_tokens", "int"), ("slo_ttft_ms", "float"),
           ("slo_tpot_ms", "float"), ("max_requests", "int"), ("step_overhead_ms", "float"))
#: the serving table: the cell's inputs, then the run's summary (``paging serve``)
SCHEMA = Schema(KEYS + (
    ("capacity", "int"), ("requests", "int"), ("completed", "int"), ("steps", "int"),
    ("makespan_ms", "float"), ("expert_requests", "int"), ("misses", "int"),
    ("miss_ratio", "float"), ("bytes_moved", "int"), ("stall_ms", "float"),
    ("mean_batch", "float"), ("mean_queue", "float"), ("max_queue", "int")) + _LAT + (
    ("requests_per_s", "float"), ("tokens_per_s", "float"), ("goodput_rps", "float"),
    ("slo_attained", "float"), ("bypasses", "int"), ("request_cap_reached", "bool"),
    ("opt_misses", "int"), ("opt_miss_ratio", "float"), ("opt_p99_ttft_ms", "float"),
    ("opt_p99_tpot_ms", "float"), ("opt_tokens_per_s", "float"), ("opt_makespan_ms", "float"),
    # prefetching and miss handling (null without them)
    ("prefetches", "int"), ("prefetch_useful", "int"), ("prefetch_wasted", "int"),
    ("prefetch_late", "int"), ("prefetch_precision", "float"), ("prefetch_recall", "float"),
    ("dropped", "int"), ("substituted", "int"), ("low_precision_fetches", "int"),
    # routing (null without a hook)
    ("retained_mass", "float"), ("top1_changed", "float"), ("kl", "float"),
    # how a step's tokens' ranks and scores were read (null when nothing reads them)
    ("batch_reading", "str")) + SETTING,
    tuple(c for c, _ in KEYS), later=("low_precision_fetches", "routing", "retained_mass",
                                      "top1_changed", "kl", "batch_reading",
                                      *(c for c, _ in SETTING)))


@dataclass(frozen=True)
class Cell:
    """One serving run of the sweep."""

    paths: tuple
    policy: str
    model: str
    precision: str
    hardware: str
    prefetch: str | None
    prefetch_strategy: str | None
    miss: str | None
    routing: str | None  # (None: standard routing)
    k: int | None
    budget_gb: float | None
    rate: float | None
    clients: int | None
    think: float
    duration: float
    max_batch: int
    max_tokens: int
    scheduler: str
    prompt_tokens: int
    slo_ttft_ms: float | None
    slo_tpot_ms: float | None
    seed: int
    batch_reading: str = "best"  # (one for the sweep, as the scheduler)
    max_requests: int | None = None  # (paging serve's --max-requests; None: its default)
    step_overhead_ms: float | None = None  # (--step-overhead-ms; None: 0)
    sources: tuple = ()  # (the traces as the spec names them: the table's ``pool``)
    verify: bool = False  # (sweep --verify: each run checked; not a key, it changes no number)
    spec: str = ""  # (the spec file, which a run's refusal names; not a key)


def setting_of(cell: Cell) -> dict:
    """The :data:`SETTING` values of a cell (the same for every cell of a spec)."""
    import json

    return {"pool": json.dumps(list(cell.sources)), "duration_s": cell.duration,
            "think_s": cell.think if cell.clients is not None else None,
            "max_tokens": cell.max_tokens, "scheduler": cell.scheduler,
            "prompt_tokens": cell.prompt_tokens, "slo_ttft_ms": cell.slo_ttft_ms,
            "slo_tpot_ms": cell.slo_tpot_ms, "max_requests": cell.max_requests,
            "step_overhead_ms": cell.step_overhead_ms}


def check_resumable(rows: list, cells: list, out) -> None:
    """Refuse to resume the table ``out`` (its ``rows``) when it was made with another setting
    than the spec's (:data:`SETTING`; the batch reading where a row read it): its rows would be
    reused as if this spec had made them. A table written before these columns were kept
    (null) is refused too, since its setting is unknown."""
    if not cells:
        return
    want = setting_of(cells[0]) | {"think_s": cells[0].think}  # (the spec's, in closed rows)
    closed = any(c.clients is not None for c in cells)
    reading = cells[0].batch_reading
    for row in rows:
        for c, _ in SETTING:
            if c == "think_s" and (row["clients"] is None or not closed):
                continue  # (a rate row has no think time; a spec of rates reuses no closed row)
            if row[c] != want[c]:
                # (null in a table of its time is a setting not given, an SLO say: "not
                # recorded (an older table)" only when the row has no setting at all)
                was = (("not recorded (an older table)" if row["pool"] is None else "not set")
                       if row[c] is None else f"{row[c]!r}")
                now = "not set" if want[c] is None else f"{want[c]!r}"
                raise PagingError(f"the table's {c} is {was}, this spec's is {now}; its "
                                  "rows were made with another setting: remove it or choose "
                                  "another --out", str(out))
        if row["batch_reading"] is not None and row["batch_reading"] != reading:
            raise PagingError(f"the table's batch_reading is {row['batch_reading']!r}, this "
                              f"spec's is {reading!r}; its rows were made with another "
                              "setting: remove it or choose another --out", str(out))


def cell_key(cell: Cell) -> tuple:
    return (cell.policy, cell.model, cell.precision, cell.hardware, cell.prefetch,
            cell.prefetch_strategy, cell.miss, cell.routing, cell.k, cell.budget_gb, cell.rate,
            cell.clients, cell.max_batch, cell.seed)


def _read(path) -> tuple[dict, str, str]:
    from paging.options import read_toml

    doc, text = read_toml(path, "a serving sweep spec with a [serve] table", noun="sweep spec")
    return doc, text, str(path)


def _scalar(doc: dict, key: str, kind, file, text, default=None, lo=None):
    """``[serve]``'s one-value key: an int (``kind=int``) or a number (``kind=(int, float)``)."""
    if key not in doc:
        return default
    v = doc[key]
    if isinstance(v, bool) or not isinstance(v, kind) or (lo is not None and v < lo):
        want = "an integer" if kind is int else "a number"
        raise PagingError(f"serve.{key} must be {want}{'' if lo is None else f' >= {lo}'}, "
                          f"got {v!r}", file, _line_of(text, key))
    if isinstance(v, int):  # (as paging serve's integer options: int64; the line on failure)
        try:
            check_int64(f"serve.{key}", v, file)
        except PagingError as e:
            raise PagingError(e.message, file, _line_of(text, key)) from None
    return v


def plan_serve(spec_path) -> list[Cell]:
    """The cells of a serving sweep spec (module docstring), every input checked first."""
    from paging.policies import spec_key
    from paging.serve import Arrivals, ServeSpec

    doc, text, file = _read(spec_path)
    for key in doc:
        if key not in TOP_KEYS:
            raise PagingError(f"unknown key {key!r} in a serving sweep; expected one of "
                              f"{', '.join(TOP_KEYS)}", file, _line_of(text, key))
    sv = doc["serve"]
    if not isinstance(sv, dict):
        raise PagingError("serve must be a table: [serve] with rates (or clients) and duration",
                          file, _line_of(text, "serve"))
    for key in sv:
        if key not in SERVE_KEYS:
            raise PagingError(f"unknown key {key!r} in [serve]; expected one of "
                              f"{', '.join(SERVE_KEYS)}", file, _line_of(text, key))
    for key in ("traces", "policies", "model"):
        if key not in doc:
            raise PagingError(f"missing key {key!r}; a serving sweep needs traces, policies, "
                              "model and budget_gb (or k)", file)
    if ("k" in doc) == ("budget_gb" in doc):
        raise PagingError("give the cache sizes as budget_gb = [...] or k = [...], not both "
                          "and not neither", file)
    if not isinstance(doc["model"], str):
        raise PagingError("a serving sweep serves one model: model = \"NAME\" (or a model "
                          "file)", file, _line_of(text, "model"))
    base = str(Path(spec_path).resolve().parent)
    traces = _as_list(doc, "traces", "str", file, text)
    try:  # (a missing trace named itself, not the spec's line that names it)
        paths = tuple(_resolve(t, base) for t in traces)
    except PagingError as e:
        raise PagingError(e.format(), file, _line_of(text, "traces")) from None
    policies, ks, seeds = policies_k_seeds(doc, file, text)  # (as a simulation sweep's)
    precision = _as_list(doc, "precision", "str", file, text, default=["bf16"])
    hardware = _as_list(doc, "hardware", "str", file, text, default=["link-5gbps"])
    prefetch, strategy, miss = _specmd_keys(doc, file, text)
    routing = _routing_key(doc, file, text, prefetch, miss, paths)
    gbs = _as_list(doc, "budget_gb", "num", file, text)
    if ("rates" in sv) == ("clients" in sv):
        raise PagingError("[serve] needs rates = [...] (Poisson) or clients = [...] (a closed "
                          "loop), not both and not neither", file, _line_of(text, "serve"))
    rates = _as_list(sv, "rates", "num", file, text)
    clients = _as_list(sv, "clients", "int", file, text)
    batches = _as_list(sv, "max_batch", "int", file, text, default=[16])
    if "duration" not in sv:
        raise PagingError("[serve] needs duration = S (seconds of arrivals)", file,
                          _line_of(text, "serve"))
    duration = float(_scalar(sv, "duration", (int, float), file, text))
    think = float(_scalar(sv, "think", (int, float), file, text, default=0.0, lo=0))
    if sv.get("think", 0) and not clients:  # (a rate cell has no think time: it was ignored)
        raise PagingError("think applies to clients = [...] (a closed loop), and this [serve] "
                          "has rates only", file, _line_of(text, "think"))
    max_tokens = _scalar(sv, "max_tokens", int, file, text, default=512, lo=1)
    prompt = _scalar(sv, "prompt_tokens", int, file, text, default=32, lo=1)
    scheduler = sv.get("scheduler", "continuous")
    reading = sv.get("batch_reading", "best")
    # (floats, as the table's columns: an integer SLO was written "300" by a run and "300.0"
    # by the run that resumed its table, which read it back as a float)
    slo_ttft, slo_tpot, overhead = (None if v is None else float(v) for v in (
        _scalar(sv, "slo_ttft_ms", (int, float), file, text),
        _scalar(sv, "slo_tpot_ms", (int, float), file, text),
        _scalar(sv, "step_overhead_ms", (int, float), file, text, lo=0)))
    max_requests = _scalar(sv, "max_requests", int, file, text, lo=1)
    caps = [(k, None) for k in ks] + [(None, g) for g in gbs]
    loads = [(r, None) for r in rates] + [(None, c) for c in clients]
    cells, seen = [], set()
    from paging.cost import budget_bytes

    for pol, q, hw, pf, st, ms, rt, (k, g), (rate, cl), b, seed in itertools.product(
            policies, precision, hardware, prefetch, strategy, miss, routing, caps, loads,
            batches, seeds):
        st = st if pf is not None else None  # "none" is one cell whatever the strategies
        cell = Cell(paths, spec_key(pol), doc["model"], q, hw, pf, st, ms, rt, k, g, rate, cl,
                    think, duration, b, max_tokens, scheduler, prompt, slo_ttft, slo_tpot, seed,
                    reading, max_requests, overhead, tuple(traces), spec=file)
        try:  # every option checked now, with the spec's name in the message (the policy
            # built by policies_k_seeds, and again by _run_spec's check)
            _run_spec(cell, budget_bytes)
            _serve_spec(cell, Arrivals, ServeSpec)
        except PagingError as e:  # (the file it names, a model file say, kept in the message)
            raise PagingError(e.format(), file, option_line(e.message, text)) from None
        if cell_key(cell) not in seen:
            seen.add(cell_key(cell))
            cells.append(cell)
    return cells


def _routing_key(doc: dict, file: str, text: str, prefetch: tuple, miss: tuple,
                 paths: tuple) -> tuple:
    """The ``routing`` key: each hook's canonical spec (None for standard routing), parsed and
    checked against every sequence of the pool (J against its K, what it knows) before
    anything runs; with a prefetcher and a miss handler too (as ``paging serve``)."""
    from paging.routing import make_router

    values = _as_list(doc, "routing", "str", file, text, default=["standard"])
    line = _line_of(text, "routing")
    out = []
    try:
        for v in values:
            hook = make_router(v)
            out.append(None if hook is None else hook.spec())
    except PagingError as e:
        raise PagingError(e.message, file, line) from None
    for v in out:
        if v is not None:
            hook = make_router(v)
            for t in _pool(paths):
                try:
                    hook.reset(t)
                except PagingError as e:
                    raise PagingError(e.message, file, line) from None
    return distinct("routing", values, out, file, text)  # (standard and none: one cell)


def _run_spec(cell: Cell, budget_bytes):
    from paging.run import RunSpec

    cap = {"k": cell.k} if cell.k is not None else {"budget": budget_bytes(cell.budget_gb)}
    spec = RunSpec(cell.policy, **cap, model=cell.model, precision=cell.precision,
                   hardware=cell.hardware, prefetch=cell.prefetch,
                   prefetch_strategy=cell.prefetch_strategy, miss=cell.miss,
                   routing=cell.routing, seed=cell.seed, verify=cell.verify)
    from paging.serve.engine import _check

    _check(spec)
    return spec


def _serve_spec(cell: Cell, Arrivals, ServeSpec):
    arr = (Arrivals(rate=cell.rate, duration=cell.duration) if cell.rate is not None
           else Arrivals(clients=cell.clients, think=cell.think, duration=cell.duration))
    return ServeSpec(arr, max_batch=cell.max_batch, max_tokens=cell.max_tokens,
                     scheduler=cell.scheduler, prompt_tokens=cell.prompt_tokens,
                     slo_ttft_ms=cell.slo_ttft_ms, slo_tpot_ms=cell.slo_tpot_ms,
                     seed=cell.seed, batch_reading=cell.batch_reading,
                     max_requests=cell.max_requests,
                     step_overhead_ms=cell.step_overhead_ms or 0.0)


@functools.lru_cache(maxsize=4)
def _pool(paths: tuple) -> tuple:
    return tuple(t for p in paths for t in _traces(p, "groups"))


def _check_layouts(cells: list[Cell], file: str) -> None:
    """Every trace of the pool against its cell's model, before any run, naming the spec file
    and the ``model`` line (the first cell failed with the model and the trace named, but
    not the spec)."""
    for paths, model in dict.fromkeys((c.paths, c.model) for c in cells):
        check_models(_pool(paths), [model], file)


def run_cell(cell: Cell) -> list[dict]:
    """The row of one serving run (on a Dask worker, or in-process)."""
    from paging.cost import budget_bytes
    from paging.serve import Arrivals, ServeSpec, serve

    try:
        res = serve(_run_spec(cell, budget_bytes), _serve_spec(cell, Arrivals, ServeSpec),
                    _pool(cell.paths), show=False)
    except PagingError as e:  # (the spec named, on a worker too; run_serve_sweep adds the line)
        if e.file is not None or not cell.spec:
            raise
        raise PagingError(e.message, cell.spec) from None
    row = dict.fromkeys(SCHEMA.names)
    row.update({c: res.summary[c] for c in SCHEMA.names if c in res.summary})
    row.update(setting_of(cell))
    row.update(zip(SCHEMA.keys, cell_key(cell), strict=True))
    return [row]



def is_serving(spec_path) -> bool:
    """Whether the spec holds a ``[serve]`` table (a serving sweep); an unreadable spec is not
    (:func:`paging.sweep.load_spec` then says why). A spec that is not valid TOML is serving
    when a line opens ``[serve]`` (its reader then names the TOML error); a valid one when it
    has the key ``serve`` (``[serve]  # ...`` and ``serve = {...}`` were read as simulation
    sweeps, which refused them as serving specs)."""
    import re

    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    try:
        text = Path(spec_path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return False
    try:
        return "serve" in tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):  # (its reader says why)
        return re.search(r"^\s*\[\s*serve\s*\]\s*(#.*)?$", text, flags=re.M) is not None


def run_serve_sweep(spec_path, out, *, scheduler=None, workers: int = 1,
                    processes: bool = False, progress=None, on_batch=None,
                    verify: bool = False) -> dict:
    """Run the serving sweep of ``spec_path`` into ``out`` (Parquet, or CSV by name): the same
    resumption, atomic rewrites and Dask options as :func:`paging.sweep.run_sweep`;
    ``verify``: every run checked as ``paging serve --verify`` checks it."""
    cells = plan_serve(spec_path)
    _check_layouts(cells, str(spec_path))
    if verify:
        from dataclasses import replace

        cells = [replace(c, verify=True) for c in cells]
    try:
        return drive(cells, lambda c: [cell_key(c)], run_cell, out, SCHEMA,
                     scheduler, workers, processes, progress, on_batch, unit="run",
                     check=lambda rows: check_resumable(rows, cells, out))
    except PagingError as e:  # (a cell's own refusal, "no request arrives: --rate 5 drew none
        if e.file != str(spec_path) or e.line is not None:  # ...", named no file or line)
            raise
        raise PagingError(e.message, e.file, option_line(e.message, Path(
            spec_path).read_text(encoding="utf-8-sig"))) from None


__all__ = ["SCHEMA", "Cell", "plan_serve", "run_cell", "cell_key", "is_serving",
           "run_serve_sweep"]
