"""The serving run: arrivals, a batching scheduler, one warm expert cache, the step timeline.

Each engine step is one forward pass over the tokens the scheduler picked. On layer z the step
requests the *union* of the experts of all its tokens on z, in order of first use: one pinned
group of the one simulator (:meth:`paging.simulate.Simulation.serve_group`), so the policies,
capacities (pages or bytes), costs and the verification are those of every other run. The
cache and the policy state live for the whole run (warm across requests and steps). The step's
time is the latency timeline's kernel (:func:`paging.cost.timeline.step_time`) over its ℓ
groups: on each layer the non-expert work for the step's tokens
(:func:`~paging.cost.arith.non_expert_ms`) plus the attention's KV-cache reads for the
requests' context lengths (:func:`~paging.cost.arith.attention_ms`), each expert's compute for
the tokens routed to it (:func:`~paging.cost.arith.expert_compute_ms`), and the missing
experts' transfers on the copy stream, a miss stalling its layer until it lands; plus
``step_overhead_ms`` per step (an input, no paper gives it). With a prefetcher
(:mod:`paging.serve.prefetch`) each group is followed by the prefetches of the next group,
and the copy stream carries from step to step (:class:`~paging.cost.timeline.StreamCarry`).

Schedulers (first-come first-served; vLLM's continuous batching with chunked prefill as the
model, Yu et al., OSDI 2022 "Orca" and Kwon et al., SOSP 2023 "vLLM"):

* ``continuous``: every step takes at most ``max_tokens`` tokens. Requests already running go
  first, in admission order: a decoding request takes 1 token, one still in its prefill its
  next chunk (what is left of its prompt, cut to the tokens left in the step). Then waiting
  requests that have arrived are admitted, oldest first, while fewer than ``max_batch`` run and
  tokens are left, each starting its prefill with a chunk. A request leaves the batch when its
  last token is processed.
* ``static``: when nothing runs, the oldest ``max_batch`` waiting requests are admitted and run
  (with the same token budget per step: the prefills a step's tokens do not reach start in the
  next steps, in admission order) until all of them finish; nobody joins meanwhile.

A request's first token is out when the step that processes its last prompt token ends (TTFT
from its arrival); each later step that processes one of its decode tokens emits one more
token; TPOT = (end − first token) / decode tokens; end to end = end − arrival.
"""

from __future__ import annotations

import contextlib
import heapq
import math
import sys
from dataclasses import dataclass, field

import numpy as np

from paging.errors import PagingError, check_time
from paging.observers import DROP, Observer
from paging.progress import showing
from paging.serve.workload import MAX_ARRIVALS, Arrivals, Sequence, pool, windows

__all__ = ["ServeSpec", "ServeResult", "serve"]

#: refuse up front a run whose request buffer would pass this many requests (int64 each)
MAX_ROOM = 200_000_000

#: a stream of this many expert requests or more announces the bound's compiled run, which no
#: bar can follow, with its expected time at :data:`BOUND_RATE` requests/s (a day of traffic at
#: 1 request/s: 138 M requests, the bound 56 s; benchmarks/README.md, "A day of serving
#: traffic")
BOUND_NOTE, BOUND_RATE = 50_000_000, 2.5e6


@dataclass(frozen=True)
class ServeSpec:
    """The workload and the scheduler of a serving run (the cache is a :class:`RunSpec`).

    ``max_requests`` caps the requests made (default: every arrival of an open workload;
    ``32 * clients`` for a closed loop, whose count is not known ahead: the result says when
    the cap stopped the clients). ``slo_ttft_ms`` / ``slo_tpot_ms``: the goodput's SLOs.
    ``bound``: also replay the produced stream of groups under Belady (the offline bound).
    ``batch_reading``: the rank and score a page of a step's union gets from the step's tokens,
    for a miss handler or a policy that reads them (:func:`step_routing_info`): ``best`` (the
    smallest rank and the largest score any token gave its expert) or ``worst`` (the largest
    rank and the smallest score).
    """

    arrivals: Arrivals
    max_batch: int = 16
    max_tokens: int = 512
    scheduler: str = "continuous"
    prompt_tokens: int = 32
    lengths: tuple | None = None
    step_overhead_ms: float = 0.0
    slo_ttft_ms: float | None = None
    slo_tpot_ms: float | None = None
    max_requests: int | None = None
    seed: int = 0
    bound: bool = True
    batch_reading: str = "best"

    def __post_init__(self):
        if self.batch_reading not in READINGS:
            raise PagingError(f"--batch-reading must be best or worst, got "
                              f"{self.batch_reading!r}")
        if self.scheduler not in ("continuous", "static"):
            raise PagingError(f"--scheduler must be continuous or static, got "
                              f"{self.scheduler!r}")
        if self.max_batch < 1:
            raise PagingError(f"--max-batch must be >= 1, got {self.max_batch}")
        if self.max_tokens < 1:
            raise PagingError(f"--max-tokens must be >= 1, got {self.max_tokens}")
        if not (np.isfinite(self.step_overhead_ms) and self.step_overhead_ms >= 0):
            raise PagingError(f"--step-overhead-ms must be >= 0, got {self.step_overhead_ms}")
        check_time("--step-overhead-ms", self.step_overhead_ms)
        for name, v in (("--slo-ttft-ms", self.slo_ttft_ms), ("--slo-tpot-ms",
                                                               self.slo_tpot_ms)):
            if v is not None and not (np.isfinite(v) and v > 0):
                raise PagingError(f"{name} must be > 0, got {v}")
            if v is not None:
                check_time(name, v)
        if self.max_requests is not None and self.max_requests < 1:
            raise PagingError(f"--max-requests must be >= 1, got {self.max_requests}")
        arr = self.arrivals
        if arr.closed and (self.max_requests or 32 * arr.clients) > MAX_ARRIVALS:
            # (a closed loop's sequences are drawn before the run, up to the cap: a cap of
            # 2**63-1 was a numpy traceback, of 1e9 an allocation of 7.5 GB)
            raise PagingError(f"a closed loop draws its --max-requests (default 32 per client) "
                              f"before the run: {self.max_requests or 32 * arr.clients:,} is "
                              f"more than {MAX_ARRIVALS:,}; expected a smaller --max-requests "
                              "or fewer --clients")


@dataclass
class ServeResult:
    """A serving run: ``requests`` (one dict per request, DataFrame-ready: ``pandas.DataFrame(
    result.requests)``), ``steps`` (column arrays, one entry per engine step), ``summary`` (the
    run's row) and the stream of groups it served (``pages``, ``clock``: a groups-mode trace's
    pages and steps; ``hits``; when the miss handler or the policy reads ranks or scores,
    each request's ``ranks``, and its ``scores`` when they read those:
    :func:`step_routing_info`)."""

    summary: dict
    requests: list
    steps: dict
    pages: np.ndarray = field(repr=False)
    clock: np.ndarray = field(repr=False)
    hits: np.ndarray = field(repr=False)
    ranks: np.ndarray | None = field(default=None, repr=False)
    scores: np.ndarray | None = field(default=None, repr=False)


class _Req:
    __slots__ = ("id", "seq", "arrival", "pos", "admitted", "first", "end", "client",
                 "first_step", "end_step")

    def __init__(self, rid, seq, arrival, client=-1):
        self.id, self.seq, self.arrival, self.client = rid, seq, arrival, client
        self.pos = 0
        self.admitted = self.first = self.end = self.first_step = self.end_step = None


def _check(run_spec) -> None:
    """What a serving run supports of a RunSpec (one line each, before any work)."""
    from paging.policies import make_policy

    if run_spec.model is None:
        raise PagingError("paging serve times every step: give --model (and --precision, "
                          "--hardware)")
    if run_spec.routed:
        from paging.routing import make_router

        router = make_router(run_spec.routing)
        if getattr(router, "delta", "run") == "sequence":
            raise PagingError(f"--routing {router.spec()}: a serving step routes the tokens of "
                              "many requests together, so Δavg runs over the whole run; give "
                              "delta=run (the default)")
    if run_spec.warm or run_spec.prefill != "tokens" or dict(run_spec.timeline):
        raise PagingError("paging serve is always warm and batched; --warm, --prefill and the "
                          "timeline options of paging simulate do not apply")
    pol = make_policy(run_spec.policy)
    if pol.clairvoyant:
        raise PagingError(f"--policy {run_spec.policy} is clairvoyant; a server does not know "
                          "the requests ahead (the offline bound is reported beside every run)")


def _requests(spec: ServeSpec, seqs: list[Sequence], rng) -> tuple[tuple, int, bool]:
    """The open workload's requests (arrival-ordered), or the closed loop's pre-drawn
    sequences; the request cap, and whether it cut an open workload's arrivals. An open
    workload in which nothing arrives is refused."""
    arr = spec.arrivals
    cut = False
    if arr.closed:
        cap = spec.max_requests or 32 * arr.clients
        times = None
    else:
        times, arrived = arr.open_times(rng, spec.max_requests)
        cap = times.size
        cut = arrived > cap
        if arrived == 0:
            what = (f"--rate {arr.rate:g} drew none in --duration {arr.duration:g} s"
                    if arr.rate is not None else "no arrival time of the file is before "
                    f"--duration {arr.duration:g} s")
            raise PagingError(f"no request arrives: {what}; expected at least one")
    if spec.lengths is not None:
        drawn = windows(seqs, spec.lengths, cap, rng)
    else:
        drawn = [seqs[i] for i in rng.integers(0, len(seqs), size=cap).tolist()]
    return (drawn, times), cap, cut


class _StepEvents(Observer):
    """What a miss handler did to the requests of the current step: dropped or substituted
    (and by which page), or fetched at a lower precision level; and the prefetches issued
    (the timeline's inputs)."""

    def __init__(self):
        self.replaced: dict[int, tuple[int, int]] = {}
        self.levels: dict[int, int] = {}
        self.prefetched: list[tuple[int, int]] = []
        self.dropped = self.substituted = self.low_fetches = 0

    def on_replace(self, t, page, act, substitute):
        self.replaced[t] = (act, substitute)
        if act == DROP:
            self.dropped += 1
        else:
            self.substituted += 1

    def on_fetch(self, t, page, level):
        if level:
            self.levels[t] = level
            self.low_fetches += 1

    def on_prefetch(self, t, page):
        self.prefetched.append((t + 1, page))  # issued after request t: the timeline's pf_at


def _step_routing(batch, n: int) -> tuple:
    """The step's tokens as a routing hook sees them: ``(X, S, Z)``, their experts
    ``X[token, layer, j]`` (-1 padded), gate scores ``S`` (NaN where a request's trace has
    none) and full logits ``Z[token, layer, e]`` (None when no request has any; NaN rows for
    those that have none), in the batch's order (:class:`paging.serve.workload.Sequence`)."""
    X = np.concatenate([r.seq.experts[lo:hi] for r, lo, hi in batch])
    S = _step_scores(batch)
    Z = None
    if any(r.seq.logits is not None for r, _, _ in batch):
        L = X.shape[1]
        Z = np.concatenate([np.full((hi - lo, L, n), np.nan) if r.seq.logits is None
                            else r.seq.logits[lo:hi] for r, lo, hi in batch])
    return X, S, Z


def _step_scores(batch) -> np.ndarray:
    """The gate scores ``S[token, layer, j]`` of the step's tokens (NaN where a request's
    trace has none), in the batch's order."""
    return np.concatenate([np.full(r.seq.experts[lo:hi].shape, np.nan) if r.seq.scores is None
                           else r.seq.scores[lo:hi] for r, lo, hi in batch])


#: the readings of a batch's ranks and scores (:class:`ServeSpec`'s ``batch_reading``)
READINGS = ("best", "worst")


def step_routing_info(X, S, pages, n: int, reading: str = "best") -> tuple:
    """The rank and gate score of each page of a step's union (``pages``, the layer-major
    union of the step's tokens' experts ``X[token, layer, j]``, scores ``S``), as a miss
    handler or a policy that reads them sees a batch step. ``best``: the best the step's
    tokens gave it on its layer, its smallest rank and its largest score (an expert is as
    important as the token that leans on it most: ``drop:rank=1`` drops it only when no token
    of the step has it first, ``fetch-priority`` fetches it at the precision its highest score
    asks). ``worst``: the largest rank and the smallest score (as important as the token that
    leans on it least: ``drop:rank=1`` drops it when any token of the step does not have it
    first). SpecMD and HOBBIT decide per token at batch size 1, where the two coincide.
    Returns ``(ranks, scores)``, aligned with ``pages`` (``scores`` None without ``S``)."""
    L = X.shape[1]
    flat = np.transpose(X, (1, 0, 2)).reshape(L, -1)
    keep = flat >= 0
    pid = (flat + np.arange(L)[:, None] * n)[keep]
    rank = np.broadcast_to(np.arange(X.shape[2]), X.shape).transpose(1, 0, 2).reshape(L, -1)
    score = None if S is None else np.transpose(S, (1, 0, 2)).reshape(L, -1)[keep]
    return union_reading(pages, pid, rank[keep], score, reading)


def union_reading(pages, pid, rank, score, reading: str = "best") -> tuple:
    """The batch reading (:func:`step_routing_info`) of the requests ``pid`` (pages of the
    union ``pages``, each named by one or more), of ranks ``rank`` and scores ``score`` (None:
    none read): per page of ``pages``, the smallest rank and the largest score of the requests
    that name it (``best``), or the largest and the smallest (``worst``)."""
    pages = np.asarray(pages, dtype=np.int64)
    order = np.argsort(pages)  # (pages is the union of pid: each pid's place in it)
    where = order[np.searchsorted(pages[order], np.asarray(pid, dtype=np.int64))]
    best = reading == "best"
    ranks = np.full(pages.size, np.iinfo(np.int64).max if best else -1, np.int64)
    (np.minimum if best else np.maximum).at(ranks, where, np.asarray(rank, dtype=np.int64))
    if score is None:
        return ranks, None
    scores = np.full(pages.size, -np.inf if best else np.inf)
    (np.maximum if best else np.minimum).at(scores, where, np.asarray(score, dtype=np.float64))
    return ranks, scores


def reads_routing(policy, handler) -> tuple[bool, bool]:
    """Whether the run's miss handler or policy reads the requests' gate scores, and ranks."""
    h = handler
    return (bool(policy.needs_scores or h is not None and h.needs_scores),
            bool(h is not None and h.needs_ranks))


def _compiled(run_spec, policy, handler, hook=None) -> str | None:
    """Which compiled kernel carries the serving run's cache from step to step, or None for
    the reference loop. ``"plain"`` without a miss handler and a prefetcher
    (:func:`paging.fast.carries`: LRU, FIFO, FWF, LLRU, FLD, the Least-Stale readings, LFU, the
    credit policies (with the run's costs and sizes), ARC, LeCaR, Marking, token-hazard,
    token-decay, token-match, the combiner over them, the prediction policies with the
    ``frequency`` predictor and their -dist forms, the draws of LeCaR, Marking and the
    markers from ``--seed``; Score-Based and score-based-dist, given each step's union's
    scores, :func:`step_routing_info`; FlashMoE); ``"phases"`` with them
    (:func:`paging.fast.carried_phases.carry`: the same policies but FlashMoE, the combiner
    without a prefetcher; ``drop`` and ``fetch-priority``, which read the requests' ranks or
    scores, given each step's drop flags and levels). With a routing hook ``"plain"``
    too when ``hook`` (:func:`paging.fast.step_routing.serving_hook`: ``pruning``, ``max-rank``,
    ``cumsum``, ``cache-prior``; not when the traces carry full logits) routes the step's
    tokens compiled, and ``"phases"`` with it and a prefetcher or a handler (SpecMD's
    Algorithm 1: :meth:`_Server._serve_routed_phased`). Never with ``--verify`` (which records
    the run in the reference loop; :func:`serve` then runs the compiled engine beside it and
    compares the two). ``engine="fast"`` insists."""
    from paging import fast
    from paging.fast.carried_phases import admits

    plan = fast.plan(policy)
    mode = None
    if not run_spec.verify and run_spec.engine != "reference" and (
            hook is not None or not run_spec.routed):
        if handler is None and run_spec.prefetch is None:
            mode = "plain" if fast.carries(plan) else None
        elif admits(policy, plan, run_spec.prefetch is not None) and (
                handler is None or not handler.uses_levels
                or handler.level_sizes is not None and run_spec.budget is not None):
            mode = "phases"  # (routed: each layer's union a piece, _serve_routed_phased)
    if run_spec.engine == "fast" and mode is None:
        raise PagingError(f"--engine fast: paging serve compiles the list family (lru, fifo, "
                          f"fwf, llru, fld, least-stale and their -dist forms), lfu, the credit "
                          f"policies (greedy-dual, landlord, gdsf, layered-landlord), arc, lecar, "
                          f"marking, token-hazard, token-decay, token-match, "
                          f"robust-token-match, blind-oracle, predictive-marker, lmarker, "
                          f"robust-blind-oracle (frequency predictor) and score-based (and "
                          f"their -dist forms) and flashmoe "
                          f"also with --miss or --prefetch (not flashmoe; "
                          f"robust-token-match without --prefetch) or with --routing pruning, "
                          f"max-rank, cumsum or cache-prior (traces without full logits; with "
                          f"--miss or --prefetch as above); "
                          f"{policy.name} with these options "
                          "runs in the reference loop (--engine auto)")
    return mode


class _Server:
    """One serving run's state: the warm cache (a :class:`~paging.simulate.Simulation` set up
    with room for every request the workload can make), the requests and the step records."""

    def __init__(self, run_spec, spec: ServeSpec, traces):
        from paging.core import Simulation
        from paging.policies import make_policy

        _check(run_spec)
        self.spec, self.run_spec = spec, run_spec
        self.cm = cm = run_spec.cost_setup()
        traces = list(traces)
        if not traces:
            raise PagingError("paging serve needs at least one trace")
        for t in traces:
            cm.model.check_layout(t)
        self.layout = lay = traces[0].layout
        seqs = pool(traces, prompt_tokens=spec.prompt_tokens, split=spec.lengths is None)
        rng = np.random.default_rng(spec.seed)
        (self.drawn, times), self.cap, cut = _requests(spec, seqs, rng)
        from paging.warm import concat

        joined = concat(traces)[0]
        from paging.run import run_weights

        self.costs, self.sizes = run_weights(run_spec, cm, joined)  # tiers: the pool's counts
        handler = run_spec.miss_handler(joined)
        self.pf = self.carry = self.pf_stats = self.events = None
        if run_spec.prefetch is not None:
            from paging.cost.timeline import StreamCarry
            from paging.serve.prefetch import StepPrefetch

            self.pf = StepPrefetch(run_spec, lay, max(t.top_k for t in traces),
                                   [t.name for t in traces],
                                   [t.meta.get("sequence") for t in traces])
            self.carry = StreamCarry.idle(lay.n_pages)
        self.router = None
        if run_spec.routed:
            from paging.routing import make_router

            self.router = make_router(run_spec.routing)
            for t in traces:  # J against each trace's K, and what the traces know
                self.router.reset(t)
            self.quality = [0.0, 0, 0.0, 0]  # retained mass, top-1 changed, KL, groups
        self.sim = self.kernel = self.phased = None
        self.handler = handler
        policy = make_policy(run_spec.policy)
        self.dist = bool(getattr(policy, "per_layer", False))  # (its capacity: _summary)
        self.reads = reads_routing(policy, handler)  # (scores, ranks)
        self.policy_scores = bool(policy.needs_scores)
        if self.reads[0]:
            who = (f"--miss {handler.spec()}" if handler is not None and handler.needs_scores
                   else f"--policy {run_spec.policy}")
            for s in seqs:
                if s.scores is None:
                    raise PagingError(f"{who} reads gate scores, and {s.name} has none")
        room = lay.n_layers * sum(min(lay.n_experts, s.experts.shape[2]) * s.n_tokens
                                  for s in self.drawn)  # a step's union <= its experts
        hook = None
        if self.router is not None and not any(s.logits is not None for s in self.drawn):
            # (with full logits the ranking and the weights are the logits': the reference)
            from paging.fast.step_routing import serving_hook

            hook = serving_hook(self.router, lay.n_experts)
        self.hook = hook
        self.route_state = None  # compiled routing's running sums (_serve_routed_compiled)
        mode = _compiled(run_spec, policy, handler, hook)
        for t in traces if hasattr(policy, "check_trace") else ():  # (its training prompts)
            policy.check_trace(t, "a sequence the run serves")
        if mode is not None:
            from paging import fast
            from paging.core import check_capacity

            k, budget = check_capacity(run_spec.k, run_spec.budget, self.sizes, lay.n_pages)
            slots = None if k is not None else self.sizes
        if mode == "plain":
            self.kernel = fast.CarriedRun(lay, fast.plan(policy), k or budget, slots,
                                          seed=run_spec.seed, costs=self.costs,
                                          sizes=self.sizes)
        elif mode == "phases":
            from paging.fast.carried_phases import carry
            from paging.miss import Drop, Substitute

            levels = handler is not None and handler.uses_levels  # (per request: miss_actions)
            self.phased = carry(
                lay, policy, k or budget, min(room, 1 << 20), slots=slots, costs=self.costs,
                sizes=self.sizes, seed=run_spec.seed, substitute=type(handler) is Substitute,
                level_slots=handler.level_sizes if levels else None,
                prefetch=self.pf is not None, batch_room=(lay.n_layers + 1) * lay.n_experts,
                drops=type(handler) is Drop, levels=levels)
            self.across = None  # the prefetch after the step before's last group
            self.counts = [0, 0, 0]  # dropped, substituted, fetched at a lower precision
        else:
            # the prefetch counters and the handler's and the prefetcher's events (the
            # timeline's inputs), which the compiled runs return, observed in the loop
            observers = []
            if self.pf is not None:
                from paging.observers import PrefetchStats

                self.pf_stats = PrefetchStats()
                observers.append(self.pf_stats)
            if handler is not None or self.pf is not None:
                self.events = _StepEvents()
                observers.append(self.events)
            if handler is not None and run_spec.verify:  # the handler's logs, which the
                # verifier reads (drops and substitutes are not misses; each fetch's level)
                from paging.observers import MissStats

                observers.append(MissStats(handler))
            if room > MAX_ROOM:
                raise PagingError(f"this workload needs room for {room:,} requests (> "
                                  f"{MAX_ROOM:,}): shorten --duration, lower --rate or set "
                                  "--max-requests")
            buf = max(room, 1)
            self.sim = Simulation(lay, policy, run_spec.k, budget=run_spec.budget,
                                  costs=self.costs, sizes=self.sizes, seed=run_spec.seed,
                                  record=bool(run_spec.verify),
                                  steps=np.zeros(buf, dtype=np.int64), miss=handler,
                                  observers=observers,
                                  score=np.zeros(buf) if self.reads[0] else None,
                                  rank=np.zeros(buf, np.int64) if self.reads[1] else None)
        self._comp = np.zeros(0)  # expert compute by token count (comp)
        arr = spec.arrivals
        self.reqs: list[_Req] = []
        self.pending: list = []  # (arrival, id) heap of the requests not yet arrived
        if arr.closed:
            for c in range(min(arr.clients, self.cap)):
                self._add(self.drawn[c], 0.0, client=c)
        else:
            for a, s in zip(times.tolist(), self.drawn, strict=True):
                self._add(s, a)
        # (a closed loop's clients find the cap as they run, or at the start: clients beyond
        # it never send a request, which the row said was not a cut)
        self.capped = cut or (arr.closed and arr.clients > self.cap)
        self.cols = {k: [] for k in STEP_COLUMNS}
        # each step's pages, hits and tokens per expert (int32), and its non-expert time per
        # layer: the bound's replay recomputes the expert compute and the layer times from
        # them, and result() the clock (the step's number times ℓ plus each page's layer)
        self.parts = {k: [] for k in ("pages", "hits", "cnt", "ranks", "scores")}
        self.step_lay: list[float] = []
        self.release: list[float] = []
        self.res = None

    def _add(self, seq, arrival: float, client: int = -1) -> None:
        rid = len(self.reqs)
        self.reqs.append(_Req(rid, seq, arrival, client))
        heapq.heappush(self.pending, (arrival, rid))

    def comp(self, cnt: np.ndarray) -> np.ndarray:
        """Each expert's compute for the tokens routed to it (``cnt``), from a table by token
        count grown as larger batches come (one roofline call per count)."""
        top = int(cnt.max()) if cnt.size else 0
        if top >= self._comp.size:
            from paging.cost.arith import expert_compute_ms

            cm = self.cm
            more = [expert_compute_ms(cm.model, cm.precision, cm.hardware, t)
                    for t in range(self._comp.size, top + 1)]
            self._comp = np.concatenate([self._comp, np.array(more, dtype=np.float64)])
        return self._comp[cnt]

    def groups(self, batch) -> tuple:
        """The step's requests: per layer the union of its tokens' experts in order of first
        use (``pages``), the layer of each (``gof``), the tokens routed to each (``cnt``); the
        step's token count and its per-layer non-expert and attention time; the ranks and
        scores of the union's pages when the miss handler or the policy reads them
        (:func:`step_routing_info`), else None. With a routing hook the first three are None
        (:meth:`step` routes the tokens layer by layer)."""
        from paging.cost.arith import attention_ms, non_expert_ms

        model, hw = self.cm.model, self.cm.hardware
        n_tok = sum(hi - lo for _, lo, hi in batch)
        kv = sum(hi for _, _, hi in batch)  # the context each request's attention reads
        lay_ms = non_expert_ms(model, hw, n_tok) + attention_ms(model, hw, kv)
        if self.router is not None and self.pf is None:  # (each layer's union is chosen as
            return None, None, None, n_tok, lay_ms, None  # it is served: step)
        L, n = self.layout.n_layers, self.layout.n_experts
        X = np.concatenate([r.seq.experts[lo:hi] for r, lo, hi in batch])
        # every layer's requests in one array, layer-major (token, then rank, inside a layer):
        # one unique over page ids, ordered by first use, is each layer's union in order
        flat = np.transpose(X, (1, 0, 2)).reshape(L, -1)
        pid = (flat + np.arange(L)[:, None] * n)[flat >= 0]
        # (by counting over the P page ids: numpy 2.4's unique hashes, 2.3 ms on a prefill
        # step's 32k requests; the same union, in the same order, 40x faster)
        count = np.bincount(pid, minlength=L * n)
        first = np.full(L * n, pid.size, np.int64)
        np.minimum.at(first, pid, np.arange(pid.size))  # (each page's first request)
        present = np.flatnonzero(count)
        pages = present[np.argsort(first[present], kind="stable")]
        cnt = count[pages]
        info = None  # the ranks and scores of the union's pages, when the run reads them
        if any(self.reads) and self.router is None:
            info = step_routing_info(X, _step_scores(batch) if self.reads[0] else None, pages,
                                     n, self.spec.batch_reading)
        return pages, pages // n, cnt, n_tok, lay_ms, info

    def step(self, batch, groups, step_no: int, now: float, running, waiting) -> float:
        """Serve and time one engine step (``groups``: :meth:`groups` of ``batch``); its
        end."""
        from paging.cost.timeline import step_time

        pages, gof, cnt, n_tok, lay_ms, info = groups
        handled = {}
        t0 = self.sim.t if self.sim is not None else None
        if self.router is not None:  # what each token requests depends on the cache: each
            # layer is routed and served in turn
            if self.phased is not None:
                pages, cnt, hits, info, handled = self._serve_routed_phased(batch, step_no,
                                                                           groups, now)
            else:
                pages, cnt, hits, info = (
                    self._serve_routed_compiled(batch, step_no) if self.kernel is not None
                    else self._serve_routed(batch, step_no, groups))
            gof = pages // self.layout.n_experts
        cuts = np.flatnonzero(np.diff(gof)) + 1
        if self.router is None:
            clock = step_no * self.layout.n_layers + gof
            if self.kernel is not None:  # (scores: Score-Based's, the union's largest)
                hits = self.kernel.feed(pages, clock, hits=True,
                                        scores=info[1] if self.policy_scores else None)
            elif self.phased is not None:
                hits, handled = self._serve_phased(pages, clock, cuts, n_tok, now, info)
            else:
                self.sim.write_clock(t0, clock.tolist())
                if info is not None:
                    self.sim.write_routing(t0, info[0] if self.reads[1] else None,
                                           info[1] if self.reads[0] else None)
                hits = np.concatenate(self._serve(pages, cuts, n_tok)).astype(bool)
        compv = self.comp(cnt)
        layv = _layer_times(cuts, pages.size, lay_ms)
        if self.sim is not None:
            handled = self._handled(t0, pages, hits)
        if self.pf is not None and self.phased is None:
            # this step's prefetches, and what earlier ones left in flight
            log = np.array(self.events.prefetched, dtype=np.int64).reshape(-1, 2)
            self.events.prefetched.clear()
            self.carry.now = now
            handled.update(pf_at=log[:, 0] - t0, pf_page=log[:, 1].copy(), carry=self.carry)
        dur, stall, _, nbytes = step_time(gof, hits, pages, self.costs, self.sizes, compv, layv,
                                          **handled)
        dur += self.spec.step_overhead_ms
        fetched = int((handled["kind"] == 1).sum()) if "kind" in handled else int((~hits).sum())
        for k, v in zip(STEP_COLUMNS, (now, dur, n_tok, len(running), len(waiting),
                                       int(pages.size), fetched, nbytes, stall),
                        strict=True):
            self.cols[k].append(v)
        for k, v in zip(("pages", "hits", "cnt"), (pages, hits, cnt.astype(np.int32)),
                        strict=True):
            self.parts[k].append(v)
        if info is not None:
            self.parts["ranks"].append(info[0])
            if info[1] is not None:
                self.parts["scores"].append(info[1])
        self.step_lay.append(lay_ms)
        self.release.append(max(r.arrival for r, _, _ in batch))
        return now + dur

    def _serve(self, pages, cuts, n_tok: int) -> list:
        """The step's groups through the simulator, each followed by the prefetcher's batch
        for the next group of the step (:meth:`_proposals`); their hits."""
        sim = self.sim
        groups = np.split(pages, cuts)
        if self.pf is None:
            return [sim.serve_group(g.tolist()) for g in groups]
        sizes, flat = self._proposals(pages, cuts, n_tok)
        ends = np.cumsum(sizes).tolist()
        out = []
        for i, g in enumerate(groups):
            keep = g.tolist()
            out.append(sim.serve_group(keep))
            if i < len(ends) and sizes[i]:
                sim.prefetch_group(flat[ends[i] - sizes[i]:ends[i]].tolist(), keep=keep)
        return out

    def _proposals(self, pages, cuts, n_tok: int) -> tuple:
        """The prefetcher's batches after each group of the step but the last
        (:meth:`StepPrefetch.propose_step`: they read the stream, not the cache, so both
        engines ask them before the step is served), as ``(sizes, pages)``; the last group is
        kept for the batch after it (:meth:`prefetch_across`)."""
        n = self.layout.n_experts
        last = pages[cuts[-1]:] if cuts.size else pages
        self.last_group = (int(last[0]) // n, last % n, last.tolist())
        return self.pf.propose_step(pages, cuts, n_tok)

    def _serve_phased(self, pages, clock, cuts, n_tok: int, now: float, info=None) -> tuple:
        """The step in the compiled phase kernel (:func:`~paging.fast.carried_phases.carry`):
        the prefetcher's batches asked as :meth:`_serve` asks them (they read
        the stream, not the cache), the batch after the step before's last group inserted
        first, the handler's drop flags and fetch levels from the union's ranks and scores
        (``info``: :func:`step_routing_info`); its hits and the timeline's inputs
        (:meth:`_handled`'s, and the prefetches)."""
        from paging.fast.phases import miss_actions

        pf, run = self.pf, self.phased
        t0 = run.t
        batches = self._proposals(pages, cuts, n_tok) if pf is not None else ()
        # the handler's drop flags and fetch levels, from the union's ranks and scores
        act, lvl = miss_actions(self.handler, pages.size, *(info or (None, None)))
        sc = {"scores": info[1]} if self.policy_scores else {}  # (Score-Based's)
        hits, outcome, subst, rows = run.feed(pages, clock, batches, self.across, act, lvl,
                                              **sc)
        self.across = None
        return hits, self._phased_inputs(pages, hits, outcome, subst, lvl, rows, t0, now)

    def _phased_inputs(self, pages, hits, outcome, subst, lvl, rows, t0: int, now: float):
        """The timeline's inputs of a step served by the carried phase kernel (its requests'
        outcomes, substitutes and fetch levels, the prefetch rows ``(t + 1, page)`` of the
        step, which started at request ``t0``: those at ``t0``, the batch after the step
        before's last group, join the copy stream for that step), and the handler's counts."""
        from paging.fast.common import DROPPED, FETCHED, SUBSTITUTED

        drop, swap = outcome == DROPPED, outcome == SUBSTITUTED
        levels = np.where(outcome == FETCHED, lvl, 0) if lvl.size else np.zeros(pages.size,
                                                                                np.int64)
        self.counts[0] += int(drop.sum())
        self.counts[1] += int(swap.sum())
        self.counts[2] += int((levels > 0).sum())
        handled = self._timeline_inputs(pages, hits, np.where(drop, 2, np.where(swap, 3, 0)),
                                        np.where(swap, subst, pages), levels)
        if self.pf is not None:
            across = rows[:, 0] == t0  # the batch after the step before's last group
            self._queue_across(rows[across, 1].tolist())
            own = rows[~across]
            self.carry.now = now
            handled.update(pf_at=own[:, 0] - t0, pf_page=own[:, 1].copy(), carry=self.carry)
        return handled

    def _serve_routed(self, batch, step_no: int, groups=None) -> tuple:
        """The step with a routing hook (:mod:`paging.routing`): on each layer, every token of
        the step is routed seeing the layer's cached experts (as the batch's router runs before
        the layer's experts are loaded), with its gate scores and logits when its trace has
        them, and the union of what they chose, in order of first use, is served as the
        layer's group. Returns the pages, the tokens routed to each, the hits and, when the
        policy reads gate scores (Score-Based), each page's rank and score: the best (or with
        ``batch_reading="worst"`` the worst) its tokens gave it, as :func:`step_routing_info`
        reads an unrouted step, a token's being those
        ``paging simulate`` gives a routed request (its rank among the token's experts, K when
        the hook served it from outside them, and its router weight, 0 there), else None.

        With a miss handler (SpecMD's Algorithm 1, phase 2) each served page that misses is
        handled with that rank and score; with a prefetcher (phase 3) the batch after each
        layer's group is the one :meth:`_proposals` asks of the router's own union (``groups``:
        :meth:`groups` of the step; the predictors guess the router's choice), inserted with
        the served group pinned, and the step's last group is kept for the next step's."""
        from paging.routing import Group, quality

        sim, router, L, n = self.sim, self.router, self.layout.n_layers, self.layout.n_experts
        X, S, Z = _step_routing(batch, n)
        free = self._served_as_ranked(batch).tolist()
        q = self.quality
        pages, cnt, hits = [], [], []
        scored = any(self.reads)  # (the policy's or the handler's ranks and scores)
        ranks, scores = [], []
        after = self._batches_after(groups)
        for z in range(L):
            cached = set(sim.state.cached_in_layer(z))
            count: dict[int, int] = {}
            named: list[tuple] = []  # each served request's (page, rank, score)
            for t, row in enumerate(X[:, z, :].tolist()):
                experts = [e for e in row if e >= 0]
                if not experts:  # a token with no expert on this layer (padding)
                    continue
                sc = S[t, z, :len(experts)]
                logits = Z[t, z] if Z is not None and not np.isnan(Z[t, z, 0]) else None
                g = Group(z, q[3], experts, None if np.isnan(sc[0]) else sc.tolist(), logits,
                          n)
                chosen = list(experts) if free and free[t] else router.route(g, cached)
                r_m, c_m, k_m = quality(g, chosen)
                q[0] += r_m
                q[1] += c_m
                q[2] += k_m
                q[3] += 1
                for e in chosen:
                    count[e] = count.get(e, 0) + 1  # dicts keep the order of first use
                if scored:  # (the request's rank and score, as simulate's routing gives)
                    order, w = g.order(), g.probs()
                    named += [(z * n + e, order.index(e) if (g.logits is not None
                                                             or e in experts) else g.K,
                               w.get(e, 0.0)) for e in chosen]
            group = [z * n + e for e in count]
            if not group:
                continue
            sim.write_clock(sim.t, [step_no * L + z] * len(group))
            if scored:
                pid, rq, wq = zip(*named, strict=True)
                rk, sc = union_reading(group, pid, rq, wq, self.spec.batch_reading)
                sim.write_routing(sim.t, rk if self.reads[1] else None,
                                  sc if self.reads[0] else None)
                ranks.append(rk)
                scores.append(sc)
            hits.extend(sim.serve_group(group))
            if z in after:
                sim.prefetch_group(after[z], keep=group)
            last = group
            pages.extend(group)
            cnt.extend(count.values())
        if self.pf is not None and pages:  # the next step's first batch keeps the served
            self.last_group = (*self.last_group[:2], last)  # last group pinned
        info = None
        if scored:
            info = ((np.concatenate(ranks), np.concatenate(scores) if self.reads[0] else None)
                    if ranks else (np.zeros(0, np.int64),
                                   np.zeros(0) if self.reads[0] else None))
        return (np.array(pages, dtype=np.int64), np.array(cnt, dtype=np.int64),
                np.array(hits, dtype=bool), info)

    def _served_as_ranked(self, batch) -> np.ndarray:
        """Per token of the step, whether the hook leaves it alone: the prompt tokens when it
        routes the decode phase only (``phase=decode``, :mod:`paging.routing`); empty when
        it routes every token."""
        if self.router.phase == "both":
            return np.zeros(0, dtype=bool)
        return np.concatenate([np.arange(lo, hi) < r.seq.prompt for r, lo, hi in batch])

    def _serve_routed_compiled(self, batch, step_no: int) -> tuple:
        """:meth:`_serve_routed` with the cache in its compiled kernel: each layer's tokens
        routed by :func:`paging.fast.step_routing.route_tokens` against the kernel's
        residency as the layer before left it, the union then fed as the layer's group (all
        but the token and prediction policies: the whole step in one call,
        :meth:`paging.fast.CarriedRun.routed_step`);
        the quality proxies summed token by token, in the reference's order."""
        from paging.fast.step_routing import route_tokens

        kernel, L, n = self.kernel, self.layout.n_layers, self.layout.n_experts
        hook, j, m, tau, lam = self.hook
        XL, WL, KL, free = self._route_inputs(batch)
        rsum, rn, q, nolog = self.route_state
        whole = kernel.routed_step(XL, WL, KL, step_no, self.hook, (rsum, rn, q, nolog, free))
        if whole is not None:  # (routed and served in one call)
            self.quality[:] = [float(q[0]), int(q[1]), float(q[2]), int(q[3])]
            return (*whole, None)
        pages, cnt, hits, scores, ranks = [], [], [], [], []
        scored = self.policy_scores  # (Score-Based: each page's best router weight and rank)
        for z in range(L):
            pz, cz, sz, rz = route_tokens(XL[z], WL[z], KL[z], z, n, kernel.resident(), hook,
                                          j, m, tau, lam, rsum, rn, q, nolog, free,
                                          self.spec.batch_reading == "worst")
            if pz.size == 0:
                continue
            hits.append(kernel.feed(pz, np.full(pz.size, step_no * L + z, np.int64),
                                    hits=True, scores=sz if scored else None))
            pages.append(pz)
            cnt.append(cz)
            scores.append(sz)
            ranks.append(rz)
        self.quality[:] = [float(q[0]), int(q[1]), float(q[2]), int(q[3])]
        if not pages:
            return (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool),
                    (np.zeros(0, np.int64), np.zeros(0)) if scored else None)
        cat = np.concatenate
        return (cat(pages), cat(cnt), cat(hits),
                (cat(ranks), cat(scores)) if scored else None)

    def _route_inputs(self, batch) -> tuple:
        """The compiled routing's inputs for the step's tokens, layer-major: their experts,
        router weights (gate scores, else 1/K: ``Group.probs``) and the weights' logarithms,
        and which tokens are served as ranked (:meth:`_served_as_ranked`); the running sums
        (Cache-Prior's, and the quality proxies) in ``self.route_state``."""
        from paging.fast.lists import no_logits

        L, n = self.layout.n_layers, self.layout.n_experts
        if self.route_state is None:  # Cache-Prior's running sums (the hook's, as reset)
            r = self.router
            rsum = np.array(getattr(r, "_range_sum", None) or [0.0] * L, dtype=np.float64)
            rn = np.array(getattr(r, "_range_n", None) or [0] * L, dtype=np.int64)
            self.route_state = (rsum, rn, np.array(self.quality, dtype=np.float64),
                                no_logits())
        X, S, _ = _step_routing(batch, n)
        valid = X >= 0
        k_row = valid.sum(axis=2, keepdims=True)
        W = np.where(np.isnan(S[:, :, :1]), 1.0 / np.maximum(k_row, 1), S)
        W = np.where(valid, W, 0.0)
        KN = np.log(np.maximum(W, 1e-300))
        XL, WL, KL = (np.ascontiguousarray(a.transpose(1, 0, 2)) for a in (X, W, KN))
        return XL, WL, KL, self._served_as_ranked(batch)

    def _serve_routed_phased(self, batch, step_no: int, groups, now: float) -> tuple:
        """:meth:`_serve_routed` (SpecMD's Algorithm 1) with the cache in the carried phase
        kernel (:func:`paging.fast.carried_phases.carry`; the token policies' own): on each
        layer the tokens are routed by :func:`paging.fast.step_routing.route_tokens` against
        the kernel's residency, the union is fed as one piece with the handler's drop flags
        and fetch levels from its routed ranks and scores (the batch reading), and the
        prefetcher's batch after the layer's group (asked of the router's own union, as the
        reference asks it) comes with that piece, which closes: the kernel inserts it, the
        group pinned, before it returns and the next layer is routed (one kernel call a
        layer). Returns :meth:`_serve_routed`'s four, then the timeline's inputs."""
        from paging.fast.phases import handler_rule, miss_actions
        from paging.fast.step_routing import route_tokens

        run, L, n = self.phased, self.layout.n_layers, self.layout.n_experts
        rule = handler_rule(self.handler)  # (once a step, not once a layer)
        hook, j, m, tau, lam = self.hook
        XL, WL, KL, free = self._route_inputs(batch)
        rsum, rn, q, nolog = self.route_state
        after = self._batches_after(groups)
        t0 = run.t
        out = {k: [] for k in ("pages", "cnt", "hits", "outcome", "subst", "lvl", "rows",
                               "ranks", "scores")}
        worst = self.spec.batch_reading == "worst"
        sc = {}
        for z in range(L):
            pz, cz, sz, rz = route_tokens(XL[z], WL[z], KL[z], z, n, run.resident(), hook, j,
                                          m, tau, lam, rsum, rn, q, nolog, free, worst)
            if pz.size == 0:
                continue
            act, lvl = miss_actions(self.handler, pz.size, rz, sz, rule)
            if self.policy_scores:
                sc = {"scores": sz}
            # (the batch after the layer's group, inserted with the group pinned, in the call)
            h, oc, sb, rows = run.feed(pz, np.full(pz.size, step_no * L + z, np.int64), (),
                                       None, act, lvl, close=after.get(z), **sc)
            for k, v in zip(out, (pz, cz, h, oc, sb, lvl, rows, rz, sz), strict=True):
                out[k].append(v)
        self.quality[:] = [float(q[0]), int(q[1]), float(q[2]), int(q[3])]
        cat = {k: np.concatenate(v) if v else np.zeros(0, np.int64) for k, v in out.items()}
        pages, hits = cat["pages"], cat["hits"].astype(bool)
        if self.pf is not None and pages.size:  # the next step's first batch keeps the
            last = out["pages"][-1]  # served last group pinned
            self.last_group = (*self.last_group[:2], last.tolist())
        rows = cat["rows"].reshape(-1, 2)
        handled = self._phased_inputs(pages, hits, cat["outcome"].astype(np.int8),
                                      cat["subst"], cat["lvl"] if self.handler is not None
                                      and self.handler.uses_levels else np.zeros(0, np.int64),
                                      rows, t0, now)
        info = None
        if any(self.reads):  # (as the reference loop reports a routed step's)
            info = (cat["ranks"].astype(np.int64),
                    cat["scores"].astype(np.float64) if self.reads[0] else None)
        return pages, cat["cnt"], hits, info, handled

    def _batches_after(self, groups) -> dict:
        """A routed step's prefetch batches (:meth:`_proposals`, asked of the router's own
        union, ``groups``: :meth:`groups` of the step): layer -> the batch after its group
        (lists of pages; none without a prefetcher, none after the last group)."""
        if self.pf is None:
            return {}
        upages, ugof, _, n_tok, _, _ = groups
        ucuts = np.flatnonzero(np.diff(ugof)) + 1
        sizes, flat = self._proposals(upages, ucuts, n_tok)
        ends = np.cumsum(sizes).tolist()
        zs = ugof[np.r_[0, ucuts]].tolist() if upages.size else []
        return {zs[i]: flat[ends[i] - sizes[i]:ends[i]].tolist() for i in range(len(ends))
                if sizes[i]}

    def _insert_batch(self, batch) -> np.ndarray:
        """Insert a prefetch batch into the carried phase kernel's cache now, with the group
        served last pinned (a piece without pages); its prefetch rows ``(t + 1, page)``."""
        empty = np.zeros(0, np.int64)
        scores = {"scores": np.zeros(0)} if self.policy_scores else {}
        return self.phased.feed(empty, empty, (), batch, np.zeros(0, np.int8), empty,
                                **scores)[3]

    def prefetch_across(self, groups) -> None:
        """After a step's last group: the prefetcher's batch for layer 0 of the next step
        (``groups``: :meth:`groups` of its batch), queued on the copy stream behind that
        group's demand transfers; its bytes go to the step that issued it."""
        pages, gof, _, n_tok, _, _ = groups
        n = self.layout.n_experts
        z, ex, keep = self.last_group
        target = pages[gof == gof[0]]
        proposal = self.pf.propose(z, ex, int(gof[0]), target % n, n_tok)
        if self.phased is not None:
            if self.router is None:  # inserted by the next step's feed, before its groups
                self.across = proposal
            elif proposal:  # now: the next step's routing reads the cache, as the
                # reference loop's does after this insertion
                self._queue_across(self._insert_batch(proposal)[:, 1].tolist())
            return
        if proposal:
            self.sim.prefetch_group(proposal, keep=keep)
        self._queue_across([p for _, p in self.events.prefetched])
        self.events.prefetched.clear()

    def _queue_across(self, issued) -> None:
        """The prefetches issued after a step's last group join the copy stream; their bytes
        go to that step."""
        moved = self.carry.queue(issued, self.costs, self.sizes)
        if moved:
            self.cols["bytes"][-1] += moved

    def _handled(self, t0: int, pages, hits) -> dict:
        """:meth:`_timeline_inputs` of the step that started at request ``t0``, from what the
        reference loop's miss handler did (``self.events``)."""
        ev = self.events
        if ev is None or not (ev.replaced or ev.levels):
            return {}
        replaced = np.zeros(pages.size, np.int8)
        used = pages.copy()
        for t, (act, q) in ev.replaced.items():
            replaced[t - t0] = 2 if act == DROP else 3
            used[t - t0] = q
        levels = np.zeros(pages.size, np.int64)
        for t, level in ev.levels.items():
            levels[t - t0] = level
        ev.replaced.clear()
        ev.levels.clear()
        return self._timeline_inputs(pages, hits, replaced, used, levels)

    def _timeline_inputs(self, pages, hits, replaced, used, levels) -> dict:
        """The timeline's per-request kinds, serving pages and fetch sizes when a miss handler
        dropped a request (``replaced`` 2), substituted it (3; ``used``: the page serving
        each request) or fetched it at a lower precision (``levels`` > 0); empty otherwise:
        the hit mask says it all."""
        if not (replaced.any() or levels.any()):
            return {}
        kind = np.where(hits, 0, 1).astype(np.int8)
        kind[replaced > 0] = replaced[replaced > 0]
        req_ms, req_bytes = self.costs[pages], self.sizes[pages]
        for level in np.unique(levels[levels > 0]).tolist():
            low = levels == level
            req_ms[low] = np.asarray(self.handler.level_costs[level])[pages[low]]
            req_bytes[low] = np.asarray(self.handler.level_sizes[level])[pages[low]]
        return {"kind": kind, "used": used, "req_ms": req_ms, "req_bytes": req_bytes}

    def advance(self, batch, step_no: int, end: float, running) -> None:
        """The step's tokens are processed: first tokens, finished requests, and a closed
        loop's next requests."""
        arr = self.spec.arrivals
        for r, _, hi in batch:
            r.pos = hi
            if r.first is None and hi >= r.seq.prompt:
                r.first, r.first_step = end, step_no
            if hi < r.seq.n_tokens:
                continue
            r.end, r.end_step = end, step_no
            running.remove(r)
            if arr.closed:
                nxt = end + arr.think * 1e3
                if nxt < arr.duration * 1e3:
                    if len(self.reqs) < self.cap:
                        self._add(self.drawn[len(self.reqs)], nxt, client=r.client)
                    else:
                        self.capped = True

    def run(self, show) -> None:
        self.show = show  # (the bound's note, in result())
        from paging.progress import bar

        waiting: list[_Req] = []
        running: list[_Req] = []
        now, step_no, pending = 0.0, 0, self.pending
        idled = False
        # the tokens of the requests made, or for a closed loop (whose requests are drawn up
        # to its cap, and made as the clients come back) the simulated ms of its duration: its
        # bar over the drawn tokens ended at a few percent (6 requests of 128 drawn in 60 s)
        closed = self.spec.arrivals.closed
        horizon = self.spec.arrivals.duration * 1e3 if closed else None
        with bar(horizon if closed else sum(s.n_tokens for s in self.drawn), "serve",
                 unit="ms" if closed else "tok", show=show) as progress:
            while True:
                while pending and pending[0][0] <= now:
                    waiting.append(self.reqs[heapq.heappop(pending)[1]])
                batch = _compose(self.spec, running, waiting, now)
                if not batch:
                    if not pending:
                        if closed:  # (the duration is over, or the cap ended the loop early)
                            progress.update(horizon - min(now, horizon))
                        return
                    nxt = max(now, pending[0][0])  # idle until the next arrival
                    if closed:  # (a think time passes on the bar too)
                        progress.update(min(nxt, horizon) - min(now, horizon))
                    now = nxt
                    idled = True
                    continue
                groups = self.groups(batch)
                # the batch the scheduler composes when a step ends is the one prefetched for;
                # after an idle gap it was empty (the next one is composed when a request
                # arrives, so a prefetch for it could not have been issued at the step's end:
                # it was, and fetched a future request's experts before it arrived)
                if self.pf is not None and step_no > 0 and not idled:
                    self.prefetch_across(groups)
                idled = False
                end = self.step(batch, groups, step_no, now, running, waiting)
                self.advance(batch, step_no, end, running)
                progress.update(min(end, horizon) - min(now, horizon) if closed
                                else sum(hi - lo for _, lo, hi in batch))
                now = end
                step_no += 1

    def result(self) -> ServeResult:
        """The run's result (made once: the step parts and the compiled cache go into it)."""
        if self.res is not None:
            return self.res
        # the compiled cache's counts, then its buffers go before the stream is put together
        # (a carried token or prediction run keeps the stream it served to redo a failed bound)
        done = self.phased.finish() if self.phased is not None else None
        bypasses = (self.kernel.bypasses if self.kernel is not None
                    else done["bypasses"] if done is not None else len(self.sim.bypassed))
        engine = "compiled" if self.kernel is not None or done is not None else "reference"
        self.kernel = self.phased = None
        p = self.parts
        # the stream whole, each step's part of it then dropped (only its length is kept, and
        # its tokens per expert, for the bound's replay)
        self.step_sizes = sizes = np.array([part.size for part in p["pages"]], np.int64)
        pages, p["pages"] = _cat(p["pages"]), []
        hits, p["hits"] = (np.concatenate(p["hits"]) if p["hits"] else np.zeros(0, bool)), []
        lay = self.layout
        clock = np.repeat(np.arange(sizes.size, dtype=np.int64) * lay.n_layers, sizes)
        clock += pages // lay.n_experts
        info = [np.concatenate(p[k]) if p[k] else None for k in ("ranks", "scores")]
        p["ranks"] = p["scores"] = []
        res = ServeResult(summary={}, requests=[_row(r) for r in self.reqs], steps=self.cols,
                          pages=pages, clock=clock, hits=hits, ranks=info[0], scores=info[1])
        if self.run_spec.verify:
            from paging.trace import Trace
            from paging.verify import verify

            verify(Trace(self.layout, res.pages, res.clock, "serve", expand="groups"),
                   self.sim.result("serve"), costs=self.costs, sizes=self.sizes,
                   k=self.run_spec.k, budget=self.run_spec.budget)  # (the capacity asked for)
        res.summary = _summary(self.run_spec, self.spec, self.cm, res, self.capped, self.dist)
        res.summary["bypasses"] = bypasses
        res.summary["engine"] = engine
        if any(self.reads):  # (how the step's tokens' ranks and scores were read)
            res.summary["batch_reading"] = self.spec.batch_reading
        if self.handler is not None:  # (the compiled run's counts, else the loop's events)
            ev = self.events
            dropped, substituted, low = (self.counts if done is not None else
                                         (ev.dropped, ev.substituted, ev.low_fetches))
            res.summary.update(miss=self.handler.spec(), dropped=dropped,
                               substituted=substituted, low_precision_fetches=low)
        if self.router is not None:
            r_sum, c_sum, k_sum, G = self.quality
            res.summary.update(routing=self.router.spec(), routing_note=self.router.note,
                               retained_mass=r_sum / G if G else 1.0,
                               top1_changed=c_sum / G if G else 0.0, kl=k_sum / G if G else 0.0)
        if self.pf is not None:  # (the compiled run's counts, else the loop's observer)
            st = self.pf_stats
            made, useful, wasted = ((done["prefetches"], done["useful"], done["wasted"])
                                    if done is not None else
                                    (st.prefetches, st.useful, st.wasted + len(st._pending)))
            res.summary.update(self.pf.counts_row(), prefetches=made, prefetch_useful=useful,
                               prefetch_wasted=wasted, prefetch_late=self.carry.late)
        if self.spec.bound:
            res.summary.update(self.bound(res))
        self.res = res
        return res

    def bound(self, res: ServeResult) -> dict:
        """Belady on the stream of groups the run produced, and the latency of the same
        schedule with Belady's hits (module docstring)."""
        from paging.fast.common import frozen
        from paging.simulate import simulate, verifying
        from paging.trace import Trace

        if res.pages.size == 0:
            return {"opt_misses": 0}
        trace = Trace(self.layout, frozen(res.pages), frozen(res.clock), "serve",
                      expand="groups")  # (read-only views: the trace adopts them, no copy)
        rs = self.run_spec
        k = self.cm.capacity(rs.k, rs.budget)  # (a shared cache: a bound for every policy)
        if res.pages.size >= BOUND_NOTE and showing(getattr(self, "show", None)):
            # (one compiled call, which no bar can follow: a day of traffic at 1 request/s is
            # 138 M requests and about a minute, with nothing on the terminal after the bar)
            sys.stderr.write(f"serve: Belady's bound, one compiled run over "
                             f"{res.pages.size:,} expert requests with no progress bar (about "
                             f"{res.pages.size / BOUND_RATE:,.0f} s at {BOUND_RATE / 1e6:g} M "
                             "requests/s)\n")
        with verifying() if rs.verify else contextlib.nullcontext():  # (the bound's run too)
            opt = simulate(trace, "belady", k=k, record="hits")
        out = {"opt_misses": int(opt.misses), "opt_miss_ratio": opt.misses / res.pages.size}
        out.update({f"opt_{key}": v for key, v in self.replay(res, opt.hit_mask).items()})
        return out

    def replay(self, res: ServeResult, hit_mask) -> dict:
        """The run's schedule (the same tokens in the same steps) timed with other hits: each
        step starts when the previous one ends or when the last of its requests arrived,
        whichever is later; the latency fields of that replay."""
        from paging.cost.timeline import step_time

        hits = np.asarray(hit_mask, dtype=bool)
        L = self.layout.n_layers
        ends, prev, lo = [], 0.0, 0
        for s, (size, cnt, lay_ms) in enumerate(zip(self.step_sizes, self.parts["cnt"],
                                                    self.step_lay, strict=True)):
            hi = lo + size
            gof = res.clock[lo:hi] % L
            layv = _layer_times(np.flatnonzero(np.diff(gof)) + 1, size, lay_ms)
            dur = step_time(gof, hits[lo:hi], res.pages[lo:hi], self.costs, self.sizes,
                            self.comp(cnt), layv)[0] + self.spec.step_overhead_ms
            prev = max(prev, self.release[s]) + dur
            ends.append(prev)
            lo = hi
        rows = []
        for r in self.reqs:
            row = _row(r)
            if r.end is not None:
                first, end = ends[r.first_step], ends[r.end_step]
                row.update(ttft_ms=first - r.arrival, tpot_ms=(end - first) / r.seq.output,
                           e2e_ms=end - r.arrival)
            rows.append(row)
        makespan = ends[-1] if ends else 0.0
        out = latency_fields(rows, makespan, self.spec.slo_ttft_ms, self.spec.slo_tpot_ms)
        out["makespan_ms"] = makespan
        return out


#: the per-step series of a run (:attr:`ServeResult.steps`)
STEP_COLUMNS = ("start_ms", "time_ms", "tokens", "batch", "queue", "requests", "misses",
                "bytes", "stall_ms")


def serve(run_spec, spec: ServeSpec, traces, *, show: bool | None = None) -> ServeResult:
    """Serve the workload of ``spec`` (requests drawn from ``traces``, groups mode) with the
    cache of ``run_spec`` (policy, capacity, cost model); see the module docstring.

    With ``run_spec.verify`` the reference loop records the run and :func:`paging.verify.
    verify` checks it (and Belady's bound run). The compiled engine records nothing, so when
    it is the one a run without ``verify`` would use, it runs too and must equal the verified
    run request for request (the stream served, its hits and the latency summary): the numbers
    reported are then the compiled run's, checked (before, ``--verify`` switched to the
    reference loop and left the compiled kernels unchecked). Inside
    :func:`paging.simulate.verifying` (``paging figs --verify``) every run is verified so."""
    from dataclasses import replace

    from paging.simulate import verifying_now

    if verifying_now() and not run_spec.verify:
        run_spec = replace(run_spec, verify=True)
    if run_spec.verify and run_spec.engine != "reference":
        fast_spec = replace(run_spec, verify=False)
        server = _Server(fast_spec, spec, traces)
        if server.phased is not None or server.kernel is not None:
            server.run(show)
            res = server.result()
            ref = _Server(replace(run_spec, engine="reference"), spec, traces)
            ref.run(False)
            _same_run(res, ref.result())
            res.summary["verified"] = True
            return res
    server = _Server(run_spec, spec, traces)
    server.run(show)
    res = server.result()
    if run_spec.verify:
        res.summary["verified"] = True
    return res


#: the summary fields a compiled serving run must share with the verified reference loop
_SAME = ("requests", "completed", "steps", "expert_requests", "misses", "bytes_moved",
         "makespan_ms", "p50_ttft_ms", "p99_ttft_ms", "p50_tpot_ms", "p99_tpot_ms",
         "opt_misses", "bypasses", "prefetches", "prefetch_useful", "prefetch_wasted",
         "prefetch_late", "prefetch_precision", "prefetch_recall", "dropped", "substituted",
         "low_precision_fetches", "retained_mass", "top1_changed", "kl")


def _same_run(fast: ServeResult, ref: ServeResult) -> None:
    """Raise :class:`~paging.verify.VerificationError` unless the compiled run ``fast`` served
    the stream of the verified reference run ``ref`` with the same hits and summary."""
    from paging.verify import VerificationError

    if fast.pages.size != ref.pages.size or not np.array_equal(fast.pages, ref.pages):
        raise VerificationError("the compiled serving run served another stream than the "
                                "verified reference loop")
    diff = np.flatnonzero(np.asarray(fast.hits) != np.asarray(ref.hits))
    if diff.size:
        t = int(diff[0])
        raise VerificationError(f"the compiled serving run differs from the verified reference "
                                f"loop at request {t} (page {int(fast.pages[t])}: "
                                f"{'hit' if fast.hits[t] else 'miss'} against "
                                f"{'hit' if ref.hits[t] else 'miss'})")
    for key in _SAME:
        a, b = fast.summary.get(key), ref.summary.get(key)
        if a != b and not (isinstance(a, float) and isinstance(b, float)
                           and math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)):
            raise VerificationError(f"the compiled serving run's {key} is {a!r}, the verified "
                                    f"reference loop's {b!r}")


def _layer_times(cuts: np.ndarray, size: int, lay_ms: float) -> np.ndarray:
    """A step's non-expert time per request: ``lay_ms`` at each group's first request (the
    step's groups start at 0 and at ``cuts``), 0 elsewhere."""
    layv = np.zeros(size)
    if size:
        layv[np.r_[0, cuts]] = lay_ms
    return layv


def _cat(parts) -> np.ndarray:
    return np.concatenate(parts, dtype=np.int64) if parts else np.zeros(0, np.int64)


def _compose(spec: ServeSpec, running: list, waiting: list, now: float) -> list:
    """The step's ``(request, lo, hi)`` token ranges (module docstring); admits requests."""
    budget = spec.max_tokens
    batch = []
    for r in running:
        if budget == 0:
            break
        take = 1 if r.pos >= r.seq.prompt else min(r.seq.prompt - r.pos, budget)
        batch.append((r, r.pos, r.pos + take))
        budget -= take
    static = spec.scheduler == "static"
    if static and running:
        return batch
    # continuous: admit while tokens are left; static: a new batch of the oldest max_batch at
    # once, whose prefills the step's tokens do not reach start in the next steps (the running
    # requests above), so the batch is not cut by one step's token budget
    while waiting and len(running) < spec.max_batch and (static or budget > 0):
        r = waiting.pop(0)
        r.admitted = now
        running.append(r)
        take = min(r.seq.prompt, budget)
        if take:
            batch.append((r, 0, take))
            budget -= take
    return batch


def _row(r: _Req) -> dict:
    s = r.seq
    done = r.end is not None
    return {"id": r.id, "sequence": s.name, "client": r.client if r.client >= 0 else None,
            "arrival_ms": r.arrival, "prompt_tokens": s.prompt, "output_tokens": s.output,
            "admitted_ms": r.admitted, "queue_ms": None if r.admitted is None
            else r.admitted - r.arrival,
            "ttft_ms": None if r.first is None else r.first - r.arrival,
            "tpot_ms": (r.end - r.first) / s.output if done else None,
            "e2e_ms": r.end - r.arrival if done else None,
            "end_ms": r.end}


def _pct(values, qs=(50, 90, 99)) -> dict:
    v = np.asarray([x for x in values if x is not None], dtype=np.float64)
    return {q: (float(np.percentile(v, q)) if v.size else None) for q in qs}


def latency_fields(rows: list, makespan_ms: float, slo_ttft, slo_tpot) -> dict:
    """p50/p90/p99 of TTFT, TPOT and end to end (numpy's linear percentile), throughput and
    goodput (requests/s meeting every SLO given) of per-request rows."""
    done = [r for r in rows if r["e2e_ms"] is not None]
    out = {}
    for key in ("ttft_ms", "tpot_ms", "e2e_ms"):
        for q, v in _pct([r[key] for r in done]).items():
            out[f"p{q}_{key}"] = v
    secs = makespan_ms / 1e3
    out["completed"] = len(done)
    out["requests_per_s"] = len(done) / secs if secs > 0 else None
    out["tokens_per_s"] = (sum(r["output_tokens"] + 1 for r in done) / secs) if secs > 0 \
        else None
    if slo_ttft is not None or slo_tpot is not None:
        good = sum(1 for r in done
                   if (slo_ttft is None or r["ttft_ms"] <= slo_ttft)
                   and (slo_tpot is None or r["tpot_ms"] <= slo_tpot))
        out["goodput_rps"] = good / secs if secs > 0 else None
        out["slo_attained"] = good / len(done) if done else None
    return out


def _summary(run_spec, spec: ServeSpec, cm, res: ServeResult, capped: bool,
             dist: bool = False) -> dict:
    st = res.steps
    makespan = (st["start_ms"][-1] + st["time_ms"][-1]) if st["start_ms"] else 0.0
    n_req = int(res.pages.size)
    misses = int(sum(st["misses"]))
    from paging.policies import spec_key

    # (as simulate's rows: a name in lower case, a model path as given; "LRU" was kept as typed)
    row = {"policy": spec_key(run_spec.policy), "k": run_spec.k, "budget_bytes": run_spec.budget,
           "capacity": cm.capacity(run_spec.k, run_spec.budget, dist),
           **cm.describe(), **spec.arrivals.describe(), "scheduler": spec.scheduler,
           "max_batch": spec.max_batch, "max_tokens": spec.max_tokens, "seed": spec.seed,
           "requests": len(res.requests), "request_cap_reached": capped,
           "steps": len(st["start_ms"]), "makespan_ms": makespan,
           "expert_requests": n_req, "misses": misses,
           "miss_ratio": misses / n_req if n_req else 0.0,
           "bytes_moved": int(sum(st["bytes"])),
           "stall_ms": float(sum(st["stall_ms"])),
           "mean_batch": float(np.mean(st["batch"])) if st["batch"] else 0.0,
           "mean_step_tokens": float(np.mean(st["tokens"])) if st["tokens"] else 0.0,
           "mean_queue": float(np.mean(st["queue"])) if st["queue"] else 0.0,
           "max_queue": int(max(st["queue"])) if st["queue"] else 0}
    if spec.step_overhead_ms:
        row["step_overhead_ms"] = spec.step_overhead_ms
    row.update(latency_fields(res.requests, makespan, spec.slo_ttft_ms, spec.slo_tpot_ms))
    return row
