"""Miss handlers: what the one loop does with a request whose expert is not cached (SpecMD,
Sec. 3.1.2 and App. A.2; DESIGN.md "Extensions on the one simulator", phase 3).

A handler is asked once per missing request, after the routing decision and before any
eviction, and answers one of

* ``(FETCH, level)``: fetch the page at precision level ``level`` (0 = the run's precision,
  1, 2, ... the lower ones of the handler's ``levels``); the page then occupies that level's
  size in the cache (mixed-precision residents) and the fetch costs that level's time;
* ``(DROP, 0)``: skip the expert: not fetched, not computed (Skliar et al. 2025, as SpecMD
  Sec. 3.1.2 uses it);
* ``(SUBSTITUTE, q)``: serve the request with the cached page ``q`` of the same layer instead
  (Zhu et al. 2025): a use of ``q`` (the policy sees ``on_hit(t, q)``), nothing fetched.

How a run counts them (:class:`paging.result.Result`): ``requests = hits + misses + dropped +
substituted``; ``misses`` are the fetched requests (a bypass is still a fetched miss), so with
the default handler (``fetch``) every count is today's. The quality *proxies* (never accuracy)
are ``dropped``, ``dropped_mass`` (the gate mass of the dropped experts, Σ score),
``substituted``, the rank of every replaced (dropped or substituted) expert, and the share of
(token, layer) groups whose top-1 expert (rank 0) was replaced.

Handlers
--------
``fetch``
    Fetch at the run's precision (today's behaviour, exactly).
``fetch-lowest-bit[:levels=Q/Q']``
    Fetch every miss at the lowest precision of ``levels`` (SpecMD's "int8:4").
``fetch-priority[:levels=Q/Q'/Q'',cuts=c1/c2]``
    HOBBIT's precision cascade (Tang et al. 2024; SpecMD's "int8:4:2"): a miss with gate score
    >= c1 is fetched at level 0, >= c2 at level 1, below at level 2 (one cut fewer than levels;
    default cuts 0.5/0.25: on Mixtral's renormalised top-2 weights the top-1 expert always has
    score >= 0.5). Needs gate scores. A resident page is a hit whatever its level (it is not
    upgraded).
``drop:rank=R`` / ``drop:score=S``
    Drop a missing expert of rank >= R (needs ranks), or of gate score < S (needs scores);
    the others are fetched.
``substitute``
    Serve a missing expert with the resident expert of the same layer (not in the current
    group) that was requested most often so far in this run, ties to the lower page id; fetch
    when there is none. Zhu et al. pick a cached expert whose *score* is within a tolerance of
    the missing one's; our traces keep only the selected experts' scores (no full router
    logits), so the router's most frequent past choice in this layer is the closest signal we
    have. This choice is ours, not the paper's.
"""

from __future__ import annotations

import numpy as np

from paging.errors import PagingError
from paging.observers import DROP, FETCH, SUBSTITUTE, Observer
from paging.options import spec_number, take_float, take_int
from paging.registry import Registry

#: the precision chain of a cascade: each level half the bits of the one before
CHAIN = ("bf16", "int8", "int4", "int2")


class MissHandler(Observer):
    """Base class: fetch every miss at level 0. Subclasses override :meth:`decide`.

    ``levels`` names the precisions (level 0 first); :meth:`bind` gives their per-page sizes
    and fetch costs (level 0 is the run's own ``sizes``/``costs``). A handler is an
    :class:`~paging.observers.Observer` of the run it serves: it reads the cache through the
    run's read-only :class:`~paging.simulate.CacheState` and may count what it needs (the
    substitute counts requests)."""

    name = "fetch"
    needs_scores = False
    needs_ranks = False
    uses_levels = False

    def __init__(self, levels: tuple[str, ...] = ()):
        self.levels = tuple(levels)
        self.level_sizes: list[list[int]] | None = None
        self.level_costs: list[np.ndarray] | None = None

    def bind(self, level_sizes, level_costs) -> MissHandler:
        """Per-level page sizes (bytes) and fetch costs, one array per level (level 0 = the
        run's precision); returns self."""
        if len(level_sizes) != len(level_costs) or len(level_sizes) < 1:
            raise PagingError("give one sizes array and one costs array per precision level")
        self.level_sizes = [np.asarray(s, dtype=np.int64).tolist() for s in level_sizes]
        self.level_costs = [np.asarray(c, dtype=np.float64) for c in level_costs]
        return self

    def spec(self) -> str:
        return self.name

    def decide(self, state, t: int, page: int) -> tuple[int, int]:
        """``(action, argument)`` for the miss of request ``t`` on ``page``: ``(FETCH,
        level)``, ``(DROP, 0)`` or ``(SUBSTITUTE, page)``; ``state`` is the run's read-only
        :class:`~paging.simulate.CacheState`."""
        return FETCH, 0


class FetchLowestBit(MissHandler):
    name = "fetch-lowest-bit"
    uses_levels = True

    def decide(self, state, t, page):
        return FETCH, len(self.levels) - 1

    def spec(self):
        return f"{self.name}:levels={'/'.join(self.levels)}"


class FetchPriority(MissHandler):
    name = "fetch-priority"
    needs_scores = True
    uses_levels = True

    def __init__(self, levels, cuts):
        super().__init__(levels)
        self.cuts = tuple(float(c) for c in cuts)
        if len(self.cuts) != len(self.levels) - 1:
            raise PagingError(f"fetch-priority: {len(self.levels)} levels need "
                              f"{len(self.levels) - 1} cuts, got {len(self.cuts)}")
        if not np.isfinite(self.cuts).all():
            raise PagingError(f"fetch-priority: cuts must be finite numbers c1 > c2 > ..., got "
                              f"{'/'.join(f'{c:g}' for c in self.cuts)}")
        if any(a <= b for a, b in zip(self.cuts, self.cuts[1:], strict=False)):
            raise PagingError("fetch-priority: cuts must decrease (c1 > c2 > ...)")

    def decide(self, state, t, page):
        s = state.score_at(t)
        level = 0
        for c in self.cuts:  # level = number of cuts above the score
            if s < c:
                level += 1
        return FETCH, level

    def spec(self):
        return (f"{self.name}:levels={'/'.join(self.levels)},"
                f"cuts={'/'.join(spec_number(c) for c in self.cuts)}")


class Drop(MissHandler):
    name = "drop"

    def __init__(self, rank: int | None = None, score: float | None = None):
        super().__init__()
        if (rank is None) == (score is None):
            raise PagingError("drop needs exactly one of rank=R or score=S")
        self.rank, self.score = rank, score
        self.needs_ranks = rank is not None
        self.needs_scores = score is not None

    def decide(self, state, t, page):
        if self.rank is not None:
            return (DROP, 0) if state.rank_at(t) >= self.rank else (FETCH, 0)
        return (DROP, 0) if state.score_at(t) < self.score else (FETCH, 0)

    def spec(self):
        if self.rank is not None:
            return f"drop:rank={self.rank}"
        return f"drop:score={spec_number(self.score)}"


class Substitute(MissHandler):
    name = "substitute"

    def start(self, state, record):
        super().start(state, record)
        self.requested = [0] * state.layout.n_pages  # requests of each page so far

    def on_request(self, t, page):
        self.requested[page] += 1

    def decide(self, state, t, page):
        n = state.layout.n_experts
        layer = page // n
        req = self.requested
        best, best_n = -1, -1
        for q in range(layer * n, layer * n + n):  # ascending ids: ties to the lower id
            if state.evictable(q) and req[q] > best_n:
                best, best_n = q, req[q]
        return (SUBSTITUTE, best) if best >= 0 else (FETCH, 0)


def _levels(opts, precision, n: int, what, *, need: int | None = None) -> tuple[str, ...]:
    """The cascade's levels: ``levels=Q/Q'/...`` if given, else ``n`` levels from the run's
    ``precision`` down the chain (:func:`default_levels`)."""
    raw = opts.pop("levels", None)
    default = default_levels(precision, n)
    levels = default if raw is None else tuple(x.strip().lower() for x in raw.split("/"))
    if levels is None and precision in CHAIN:
        raise PagingError(f"{what} needs {n} precision levels from --precision {precision}, and "
                          f"the chain {' > '.join(CHAIN)} has {len(CHAIN) - CHAIN.index(precision)}"
                          f": give levels=Q/Q' or a higher --precision")
    if levels is None:
        raise PagingError(f"{what} needs precisions: give --model (its --precision is level 0) "
                          f"or levels=Q/Q'")
    if len(levels) < 2 or (need is not None and len(levels) != need):
        raise PagingError(f"{what} needs {need or 'at least 2'} precision levels, got "
                          f"{'/'.join(levels)}")
    for q in levels:
        if q not in CHAIN:
            raise PagingError(f"{what}: unknown precision {q!r}; expected one of "
                              f"{', '.join(CHAIN)}")
    if any(CHAIN.index(a) >= CHAIN.index(b) for a, b in zip(levels, levels[1:], strict=False)):
        raise PagingError(f"{what}: levels must go down the chain {' > '.join(CHAIN)} (each "
                          f"below the one before), got {'/'.join(levels)}")
    return levels


def default_levels(precision: str | None, n: int) -> tuple[str, ...] | None:
    """``n`` levels of the cascade from ``precision`` down the chain bf16 -> int8 -> int4 ->
    int2 (None when there is no precision or the chain is too short)."""
    if precision is None or precision not in CHAIN:
        return None
    i = CHAIN.index(precision)
    out = CHAIN[i:i + n]
    return out if len(out) == n else None


def _fetch_priority(opts, what, precision=None) -> FetchPriority:
    levels = _levels(opts, precision, 3, what)
    raw = opts.pop("cuts", None)
    if raw is None:
        cuts = (0.5, 0.25, 0.125)[:len(levels) - 1]
    else:
        try:
            cuts = tuple(float(c) for c in raw.split("/"))
        except ValueError:
            raise PagingError(f"{what}: cuts={raw!r} are not numbers c1/c2/...") from None
    return FetchPriority(levels, cuts)


#: the miss handlers (``--miss``; :class:`paging.registry.Registry`); ``fetch`` builds None,
#: today's path
MISS_HANDLERS = Registry("miss handler")
MISS_HANDLERS.add("fetch", lambda opts, what, precision=None: None)
MISS_HANDLERS.add("fetch-lowest-bit", lambda opts, what, precision=None: FetchLowestBit(
    _levels(opts, precision, 2, what)), "levels=Q/Q'")
MISS_HANDLERS.add("fetch-priority", _fetch_priority, "levels=Q/Q'/Q'', cuts=c1/c2")
MISS_HANDLERS.add("drop", lambda opts, what, precision=None: Drop(
    rank=take_int(opts, "rank", None, what, lo=1),
    score=take_float(opts, "score", None, what, lo=0.0)), "rank=R or score=S")
MISS_HANDLERS.add("substitute", lambda opts, what, precision=None: Substitute())
MISS_NAMES = MISS_HANDLERS.names


def make_miss(spec: str | MissHandler | None, precision: str | None = None) -> MissHandler | None:
    """A handler from ``NAME[:opts]`` (None or ``fetch``: None, today's path). ``precision`` is
    the run's precision (level 0 of a cascade's default levels)."""
    if spec is None or isinstance(spec, MissHandler):
        return spec
    return MISS_HANDLERS.make(spec, precision=precision)


def cascade_weights(handler: MissHandler, model, hardware, tiers) -> MissHandler:
    """Bind ``handler``'s levels to the cost model: per-level page sizes and fetch times
    (:func:`paging.cost.page_sizes`, :func:`paging.cost.page_costs`). Returns the handler."""
    from paging.cost import get_precision, page_costs, page_sizes

    precs = [get_precision(q) for q in handler.levels]
    return handler.bind([page_sizes(model, p) for p in precs],
                        [page_costs(model, p, hardware, tiers) for p in precs])
