"""The one run recipe: a :class:`RunSpec` describes a run once; :func:`run` executes it.

A run is a policy at one capacity on the sequences of a trace, with everything the loop can add
around it — the cost model's sizes and fetch times, a batched prefill, prefetching, miss
handling, cache-aware routing, a warm cache across the sequences, the latency timeline and its
options — and its result is the rows of ``paging simulate --json``. ``paging simulate``,
``paging sweep``, the SpecMD figure and the timing-sensitivity study build RunSpecs; nothing
else puts a run together (DESIGN.md, "One run recipe").

What the spec cannot know alone (whether the sequences carry gate scores or ranks for the miss
handler or the policy, whether a learned predictor has sequences to learn from) is checked by
:meth:`RunSpec.check` against the sequences, once, before anything runs.

Cold runs simulate every sequence from an empty cache; a learned prefetch predictor
(``transition``) trains on the other sequences (or on ``train``), never on the simulated one;
Cache-Prior's Δavg runs over the sequences in order (each sequence's hook is primed with the
earlier ones). A warm run (:mod:`paging.warm`) is one run over the sequences joined, in order or
shuffled by ``warm_seed``: a row per sequence (``warm: true``, ``position``) and the run's own
row last (``warm_total: true``).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from paging.errors import PagingError

__all__ = ["RunSpec", "Outcome", "run", "execute"]


@dataclass
class Outcome:
    """One simulated run as :func:`execute` leaves it: the trace as simulated (batched prefill,
    or the warm run's joined sequences), its :class:`~paging.result.Result`, the weights and
    batch the timeline read, the :class:`~paging.cost.timeline.Timing` (None without a model)
    and the rows it gave. A caller that replays the timeline under other options (the
    timing-sensitivity study) starts from here instead of simulating again."""

    trace: object
    result: object
    costs: object
    sizes: object
    batch: object
    timing: object
    rows: list


@dataclass(frozen=True)
class RunSpec:
    """One run, described once.

    Parameters
    ----------
    policy : str
        A registered policy name (:func:`paging.policies.make_policy`).
    k, budget : int
        The capacity: ``k`` pages, or ``budget`` bytes (exactly one).
    model, precision, hardware, host_gb
        The cost model (:class:`paging.cost.setup.CostSetup`): page sizes and fetch times, and
        the latency timeline. ``costs`` and ``sizes`` (arrays per page id) given directly take
        the place of the model's (a tier placement of one's own, or weights without a model);
        without either, a cache trace's own object sizes are used with a budget.
    prefill : {"tokens", "batched"}
        Replay the prefill token by token, or as one batched pass
        (:func:`paging.cost.timeline.batch_prefill`; needs ``model``).
    prefetch, prefetch_strategy, miss, routing : str
        The specs of ``paging simulate --prefetch/--prefetch-strategy/--miss/--routing``.
    warm, warm_seed
        Run the sequences back to back through one cache (shuffled by ``warm_seed``).
    timeline : mapping
        Options of :func:`paging.cost.timeline.timeline_run` (``token_overhead_ms``,
        ``prefetch_streams``, ``prefetch_link``); only those given appear in the rows.
    engine, seed
        As :func:`paging.simulate.simulate`.
    verify : bool
        Run inside :func:`paging.simulate.verifying`: every run recorded in full and checked
        with :func:`paging.verify.verify` (capacity, every request served, misses matching the
        eviction log). A serving run checks its own interactive run instead
        (:func:`paging.serve.engine.serve`).
    lifetimes : bool
        Add each run's cache lifetimes in tokens (:mod:`paging.lifetimes`; a warm run's
        total row only; not with a prefetcher).
    progress : bool, optional
        The reference loop's progress bar on a long run (:func:`paging.simulate.simulate`):
        None when stderr is a terminal, False never.
    """

    policy: str
    k: int | None = None
    budget: int | None = None
    model: str | None = None
    precision: str | None = None
    hardware: str | None = None
    host_gb: float | None = None
    costs: np.ndarray | None = field(default=None, compare=False, repr=False)
    sizes: np.ndarray | None = field(default=None, compare=False, repr=False)
    prefill: str = "tokens"
    prefetch: str | None = None
    prefetch_strategy: str | None = None
    miss: str | None = None
    routing: str | None = None
    warm: bool = False
    warm_seed: int | None = None
    timeline: Mapping = field(default_factory=dict)
    engine: str = "auto"
    seed: int = 0
    verify: bool = False
    lifetimes: bool = False
    progress: bool | None = field(default=None, compare=False, repr=False)

    # -- validation -----------------------------------------------------------------------
    def __post_init__(self) -> None:
        """Every check of the options against each other, once, before any run (messages name
        the ``paging simulate`` flag of each field)."""
        from paging.policies import make_policy

        policy = make_policy(self.policy)  # a bad name fails here, before any work
        object.__setattr__(self, "_parsed", policy)  # what check() reads (never run)
        if (self.k is None) == (self.budget is None):
            raise PagingError("give exactly one capacity: k (pages) or a byte budget")
        if self.prefill not in ("tokens", "batched"):
            raise PagingError(f"prefill must be tokens or batched, got {self.prefill!r}")
        if self.prefill == "batched" and self.model is None:
            raise PagingError("--prefill batched is a timing option: it needs --model")
        if self.warm_seed is not None and not self.warm:
            raise PagingError("--warm-seed orders the sequences of a warm run: it needs --warm")
        if self.prefetch_strategy is not None and self.prefetch is None:
            raise PagingError("--prefetch-strategy needs --prefetch")
        if self.lifetimes and self.prefetch is not None:
            raise PagingError("--lifetimes counts residencies from fetched misses, and a "
                              "prefetched page enters without one: not with --prefetch")
        self._check_timeline()
        if self.prefetch is not None and not policy.prefetches:
            raise PagingError(f"--policy {self.policy} does not support prefetching (its "
                              "virtual caches follow requests only): drop --prefetch")
        if self.prefetch is not None:  # parse the specs now
            from paging.predict.prefetch import make_prefetch_predictor, make_strategy

            make_strategy(self.prefetch_strategy)
            make_prefetch_predictor(self.prefetch)
        self._check_miss()
        from paging.routing import make_router

        make_router(self.routing)  # parse now
        if self.routed:
            if policy.clairvoyant:
                raise PagingError(f"--policy {self.policy} is clairvoyant; with --routing the "
                                  "served requests depend on the cache, so they are not known "
                                  "ahead")
            if self.prefill == "batched":
                raise PagingError("--routing decides per (token, layer) group and --prefill "
                                  "batched serves a layer's experts once for all prompt "
                                  "tokens: give one of them")

    def _check_timeline(self) -> None:
        from paging.cost.timeline import timeline_options

        tl = dict(self.timeline)
        if tl and self.model is None:
            raise PagingError("--token-overhead-ms, --prefetch-streams and --prefetch-link are "
                              "timing options: they need --model")
        if tl.get("prefetch_streams") == 2 and self.prefetch is None:
            raise PagingError("--prefetch-streams 2 puts prefetches on a stream of their own: "
                              "it needs --prefetch")
        if "prefetch_link" in tl and tl.get("prefetch_streams") != 2:
            raise PagingError("--prefetch-link says how two copy streams share the link: it "
                              "needs --prefetch-streams 2")
        timeline_options(**tl)

    def _check_miss(self) -> None:
        """A precision cascade needs the model's precisions and a byte budget."""
        handler = self._miss()
        if handler is None or not handler.uses_levels:
            return
        cm = self.cost_setup()
        if cm is None:
            raise PagingError(f"--miss {handler.name} needs the sizes of its precisions: "
                              "give --model (and --precision for level 0)")
        if handler.levels[0] != cm.precision.name:
            raise PagingError(f"--miss {handler.name}: the first level ({handler.levels[0]}) "
                              f"must be --precision ({cm.precision.name})")
        if self.k is not None:
            raise PagingError(f"--miss {handler.name} mixes precisions: give the cache as "
                              "--budget-gb, not --k")

    @property
    def routed(self) -> bool:
        return self.routing is not None and self.routing.strip().lower() != "standard"

    @property
    def extended(self) -> bool:
        """A prefetcher or a miss handler other than fetch: the reference loop's phases."""
        return self.prefetch is not None or self._miss() is not None

    def cost_setup(self):
        """The :class:`~paging.cost.setup.CostSetup` of ``model`` (None without one; made
        once per spec)."""
        return self._cost_setup

    @functools.cached_property
    def _cost_setup(self):
        if self.model is None:
            return None
        from paging.cost.setup import CostSetup

        return CostSetup.from_names(self.model, self.precision, self.hardware, self.host_gb)

    def _miss(self):
        from paging.miss import make_miss

        cm = self.cost_setup()
        return make_miss(self.miss, cm.precision.name if cm is not None else None)

    def miss_handler(self, trace):
        """The run's miss handler (None for ``fetch``), a precision cascade bound to the cost
        model's per-level sizes and fetch times (the tiers placed by ``trace``'s counts)."""
        handler = self._miss()
        if handler is not None and handler.uses_levels:
            from paging.miss import cascade_weights

            cm = self.cost_setup()
            handler = cascade_weights(handler, cm.model, cm.hardware, cm.tiers(trace))
        return handler

    def stream_refusal(self) -> str | None:
        """The ``paging simulate`` flag of this run that a streamed run (:mod:`paging.stream`:
        a list-family policy at k pages or a byte budget, from an empty cache) cannot honour,
        or None (a budget's sizes are the command's: ``--sizes``). The
        options that need another one (``--precision`` needs ``--model``, ...) are refused
        when the spec is made, so the ones below cover them."""
        for flag, on in (("--model", self.model is not None),
                         ("--prefetch", self.prefetch is not None),
                         ("--miss", self._miss() is not None),
                         ("--routing", self.routed),
                         ("--warm", self.warm),
                         ("--engine reference", self.engine == "reference"),
                         ("--lifetimes", self.lifetimes)):
            if on:
                return flag
        return None

    def check(self, traces: Sequence, train=None) -> None:
        """Refuse, before any run, what ``traces`` cannot support: a policy or miss handler
        that reads gate scores or ranks the sequences lack, a learned predictor with nothing to
        learn from, a routing hook the sequences cannot feed."""
        from paging.predict.prefetch import _learns, check_training, training_file

        pol = self._parsed  # the policy parsed when the spec was made (flags only)
        handler = self._miss()
        for t in traces:
            if pol.needs_scores and t.score is None:
                raise PagingError(f"{self.policy} reads gate scores and {t.name} has none")
            if handler is not None and handler.needs_scores and t.score is None:
                raise PagingError(f"--miss {handler.spec()} reads gate scores and {t.name} "
                                  "has none")
            if handler is not None and handler.needs_ranks and t.rank is None:
                raise PagingError(f"--miss {handler.spec()} reads expert ranks and {t.name} "
                                  "has none")
        if train is None:
            check_training(self.prefetch, len(traces))
            if self.warm and _learns(self.prefetch) and training_file(self.prefetch) is None:
                raise PagingError("--warm simulates every sequence of the traces: prefetch "
                                  "transition needs transition:train=FILE (sequences not "
                                  "simulated)")
        if self.routed:
            from paging.routing import make_router

            hook = make_router(self.routing)
            for t in traces:  # J > K and what the trace does not know
                hook.reset(t)


def run(spec: RunSpec, traces: Sequence, *, train=None, only: Sequence[int] | None = None,
        check: bool = True) -> list[dict]:
    """Execute ``spec`` on the sequences ``traces``; the rows of ``paging simulate --json``.

    ``train``: the training sequences of a learned prefetch predictor (default: its
    ``train=FILE``, else the other sequences of ``traces``). ``only``: the indices of the
    sequences to simulate cold (default all; the others still train predictors and prime the
    routing hook). ``check``: run :meth:`RunSpec.check` first.
    """
    return [row for out in execute(spec, traces, train=train, only=only, check=check)
            for row in out.rows]


def execute(spec: RunSpec, traces: Sequence, *, train=None, only: Sequence[int] | None = None,
            check: bool = True) -> list[Outcome]:
    """:func:`run`, keeping each simulated run's :class:`Outcome` (one per sequence cold, one
    for a warm run)."""
    traces = list(traces)
    if check:
        spec.check(traces, train)
    if spec.warm:
        return [_run_warm(spec, traces, train)]
    return [_run_sequence(spec, traces[i], traces, train, earlier=traces[:i])
            for i in (range(len(traces)) if only is None else only)]


def _training(spec: RunSpec, trace, traces, train):
    from paging.predict.prefetch import _learns, training_file, training_set

    if not _learns(spec.prefetch):
        return None
    if train is not None:
        return list(train)
    file = training_file(spec.prefetch)
    loaded = None
    if file is not None:
        loaded = _load_train(file, trace.expand)
    return training_set(spec.prefetch, trace, traces, loaded)


@functools.lru_cache(maxsize=8)
def _load_train(file: str, expand: str) -> tuple:
    """The sequences of a ``transition:train=FILE`` (read once per process: every policy and
    capacity of a command shares them; traces are read-only)."""
    from paging.io import load

    return tuple(load(file, expand=expand))


def run_weights(spec: RunSpec, cm, trace):
    """``(costs, sizes)`` of the run's pages: the cost model's (tiers placed by ``trace``'s
    counts) unless the spec gives its own, else a cache trace's own sizes under a budget."""
    if cm is not None:
        costs, sizes = cm.weights(trace)
        return (costs if spec.costs is None else spec.costs,
                sizes if spec.sizes is None else spec.sizes)
    sizes = spec.sizes
    if sizes is None and spec.budget is not None:  # a cache trace's own object sizes
        from paging.io import trace_sizes

        sizes = trace_sizes(trace)
    return spec.costs, sizes


def _simulate(spec: RunSpec, cm, trace, costs, sizes, *, warm: bool, prefetcher, routing,
              read=None):
    from paging.simulate import simulate, verifying

    # (a cascade's tiers, like ``costs``, are placed by the requests as read: ``read``, the
    # trace before its prefill was batched)
    handler = spec.miss_handler(trace if read is None else read)
    extended = prefetcher is not None or handler is not None
    # (a warm run with a miss handler records its events: its per-sequence counts read them;
    # a verified run is recorded in full by verifying())
    record = True if (spec.lifetimes or ((cm is not None or warm) and extended)) else (
        "hits" if (cm is not None or warm) else False)
    cap = {"k": spec.k} if spec.k is not None else {"budget": spec.budget}
    with verifying() if spec.verify else contextlib.nullcontext():
        return simulate(trace, spec.policy, costs=costs, sizes=sizes, seed=spec.seed,
                        engine=spec.engine, record=record, prefetch=prefetcher, miss=handler,
                        routing=routing, progress=spec.progress, **cap)


def _prefetcher(spec: RunSpec, trace, traces, train):
    if spec.prefetch is None:
        return None
    from paging.predict.prefetch import Prefetcher, make_prefetch_predictor, make_strategy

    return Prefetcher(make_prefetch_predictor(spec.prefetch, _training(spec, trace, traces, train)),
                      make_strategy(spec.prefetch_strategy))


def _timed(spec: RunSpec, cm, trace, res, costs, sizes, batch, row: dict):
    """The timeline's fields added to ``row``; the :class:`~paging.cost.timeline.Timing`."""
    if cm is None:
        return None
    from paging.cost.setup import PREFETCH_TIMING_FIELDS
    from paging.cost.timeline import timeline_run

    if spec.routed:  # the timeline replays what the hook served
        from paging.routing.served import served_trace

        trace = served_trace(trace, res)
    tm = timeline_run(trace, res, model=cm.model, precision=cm.precision, hardware=cm.hardware,
                      fetch_ms=costs, sizes=sizes, batch=batch, **dict(spec.timeline))
    row.update(cm.timed_fields(res, tm))
    row.update(dict(spec.timeline))  # only the options given (default output unchanged)
    if spec.extended:  # (the phases' observers filled res.extra)
        row.update({f: getattr(tm, f) for f in PREFETCH_TIMING_FIELDS})
    return tm


def _lifetimes(spec: RunSpec, trace, res, row: dict) -> None:
    """With ``spec.lifetimes``, the run's cache lifetimes (:mod:`paging.lifetimes`) added to
    ``row``."""
    if spec.lifetimes:
        from paging.lifetimes import lifetimes

        row.update(lifetimes(trace, res))


def _run_sequence(spec: RunSpec, trace, traces, train, earlier) -> Outcome:
    """One sequence from an empty cache."""
    from paging.routing import router_for_run

    cm = spec.cost_setup()
    costs, sizes = run_weights(spec, cm, trace)
    batch = None
    sim_trace = trace
    if spec.prefill == "batched":
        from paging.cost.timeline import batch_prefill

        sim_trace, batch = batch_prefill(trace)
    routing = router_for_run(spec.routing, earlier) if spec.routed else None
    res = _simulate(spec, cm, sim_trace, costs, sizes, warm=False,
                    prefetcher=_prefetcher(spec, trace, traces, train), routing=routing,
                    read=trace)
    row = res.to_dict()
    tm = _timed(spec, cm, sim_trace, res, costs, sizes, batch, row)
    _lifetimes(spec, sim_trace, res, row)
    return Outcome(sim_trace, res, costs, sizes, batch, tm, [row])


def _run_warm(spec: RunSpec, traces, train) -> Outcome:
    """The sequences back to back through one cache: a row per sequence, then the run's."""
    from paging.routing import make_router
    from paging.warm import concat, order, split

    seqs = order(traces, spec.warm_seed)
    if spec.prefill == "batched":
        from paging.cost.timeline import batch_prefill

        joined, batch = concat(*zip(*[batch_prefill(t) for t in seqs], strict=True))
        read = concat(seqs)[0]  # the requests as read: the host tier's counts, as cold
    else:
        (joined, _), batch = concat(seqs), None
        read = joined
    cm = spec.cost_setup()
    costs, sizes = run_weights(spec, cm, read)
    res = _simulate(spec, cm, joined, costs, sizes, warm=True,
                    prefetcher=_prefetcher(spec, joined, traces, train),
                    routing=make_router(spec.routing) if spec.routed else None, read=read)
    row = res.to_dict()
    tm = _timed(spec, cm, joined, res, costs, sizes, batch, row)
    _lifetimes(spec, joined, res, row)  # (over the joined run: the total row only)
    per_time = tm.per_sequence if tm is not None else None
    out = []
    for i, seq in enumerate(split(joined, res)):
        r = {f: row[f] for f in ("policy", "k", "budget_bytes", "capacity") if f in row}
        r.update(seq, warm=True, warm_total=False, miss_ratio=seq["misses"] / seq["requests"]
                 if seq["requests"] else 0.0)
        if per_time is not None:
            r.update({f: per_time[i][f] for f in ("ttft_ms", "decode_ms", "decode_tokens",
                                                  "tpot_ms", "tokens_per_s", "start_ms",
                                                  "end_ms")})
        out.append(r)
    out.append(dict(row, warm=True, warm_total=True))
    return Outcome(joined, res, costs, sizes, batch, tm, out)
