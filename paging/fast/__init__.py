"""Compiled simulation kernels for the built-in policies (numba, ``nogil``).

:func:`run` replays a trace under a built-in policy and returns the same
:class:`~paging.simulate.Result` as the reference loop :func:`paging.simulate.simulate` with
``engine="reference"`` — misses, per-layer misses, collision misses, bypasses and, with
``record=True``, the hit mask, the eviction log (same rows, same order) and the bypassed
requests, in rounds and groups mode. ``tests/property/test_kernels.py`` checks this equality on
random traces for every policy below.

Built in (exact types only: a subclass may change any hook, so it runs in the reference loop):
LRU, FIFO, FWF, LLRU, FLD, Least-Stale (:mod:`paging.fast.lists`), LFU, Belady
(:mod:`paging.fast.heaps`), Marking (:mod:`paging.fast.marking`), GreedyDual, Landlord, GDSF,
Layered Landlord (:mod:`paging.fast.credit`), the token-aware token-hazard, token-decay,
token-match and the robust combiner over them and LRU (:mod:`paging.fast.tokens`), ARC and
LeCaR (:mod:`paging.fast.adaptive`), Score-Based and the prediction policies BlindOracle,
PredictiveMarker, LMarker and robust-blind-oracle with the ``frequency`` or ``oracle``
predictor (:mod:`paging.fast.predictive`; another predictor, or one predictor object shared by a
``-dist`` policy's layers, runs in the reference loop), FlashMoE's learned eviction
(:mod:`paging.fast.learned`: shared cache only) and :class:`PerLayer` around any of these
classes but FlashMoE (the ``-dist`` variants): every registered online policy. Every kernel
takes page sizes and a capacity in the same unit (pages, or bytes for a byte budget) and evicts
until the requested page fits. The randomized ones (Marking, LeCaR, PredictiveMarker, LMarker)
consume ``rng.random(N)`` drawn before the run (:func:`marking_draws`, :func:`needs_draws`), the
reference's draws in its order.

Costs per request (N requests, cache k, ℓ layers, groups of K): LRU, FIFO O(1) (O(K) with
pinning); LLRU, FLD, Least-Stale O(1) per hit and O(ℓ) per eviction; FWF O(1) amortized; LFU,
Belady, GreedyDual, Landlord, GDSF O(log k) per eviction; Layered Landlord O(k) per eviction;
Marking O(log nℓ) plus O(nℓ log nℓ) per phase; ARC and LeCaR O(1) (O(K) per eviction with
pinning: pinned pages are skipped from a list's head; the reference's LeCaR scans O(k) per
eviction); the token family O(1) per hit, O(k) per eviction and O(nℓ) per token
(:mod:`paging.fast.tokens`); the prediction family O(1) per hit, O(k) per eviction (a pass over
the partition's keys; the markers' over its unmarked pages), O(k) per eviction of the robust
combiner's virtual BlindOracle, plus, before the run, O(N) for the oracle's predictions (and
Belady's run for its OPT when η > 0) (:mod:`paging.fast.predictive`); FlashMoE O(1) per hit,
O(k) per eviction plus one O(h²) network evaluation per candidate that its cells' bounds leave
in the running (h the hidden width) and, at a near tie, the reference's numpy forward pass over
the k candidates (:mod:`paging.fast.learned`).
"""

from __future__ import annotations

import numpy as np

from paging.fast.adaptive import adaptive_kernel
from paging.fast.common import frozen
from paging.fast.credit import credit_kernel
from paging.fast.heaps import BELADY, heap_kernel, heap_state
from paging.fast.lists import list_kernel, list_state, no_route
from paging.fast.marking import marking_kernel
from paging.weights import unit_costs, unit_sizes

__all__ = ["run", "CarriedRun", "carries", "plan", "plan_of", "has_kernel", "run_misses",
           "marking_draws", "carry_draws", "needs_draws", "needs_next_use", "record_level",
           "streams", "is_token", "reads_scores"]

_LIST, _HEAP, _MARK, _CREDIT, _TOKEN, _ADAPT, _PRED, _LEARNED = (
    "list", "heap", "marking", "credit", "token", "adaptive", "predictive", "learned")


class Plan(tuple):
    """``(family, kind, dist)`` of a kernel; ``proto`` is the policy object whose parameters
    the kernel reads (the policy, or its ``-dist`` factory's product), for the families that
    take any (:mod:`paging.fast.tokens`)."""

    proto = None


def plan_of(spec: str) -> tuple[str, int]:
    """``"family:KIND"`` (a policy class's ``kernel``) as ``(family, kind)``."""
    from paging.fast import adaptive, credit, heaps, learned, lists, marking, predictive, tokens

    family, _, kind = spec.partition(":")
    module = {_LIST: lists, _HEAP: heaps, _CREDIT: credit, _MARK: marking,
              _TOKEN: tokens, _ADAPT: adaptive, _PRED: predictive,
              _LEARNED: learned}.get(family)
    if module is None or not hasattr(module, kind):
        raise ValueError(f"unknown kernel {spec!r}: expected family:KIND of paging.fast")
    return family, int(getattr(module, kind))


def plan(policy) -> tuple[str, int, bool] | None:
    """``(family, kind, dist)`` of the kernel that reproduces ``policy``, or None.

    The policy class declares it (:attr:`paging.policies.base.Policy.kernel`, and
    ``dist_kernel`` for its per-layer variant), read from the class's own namespace: a
    subclass of a built-in policy may override any hook, so it has a kernel only when it
    declares one itself. ``PerLayer`` qualifies when its factory builds a class with a kernel.
    The token family also checks the instance (:func:`paging.fast.tokens.supports`: the
    combiner's components), and so does the prediction family
    (:func:`paging.fast.predictive.supports`: the predictor). The result is a :class:`Plan`.
    """
    from paging.policies.dist import PerLayer

    dist = type(policy) is PerLayer
    proto = policy.factory() if dist else policy
    own = vars(type(proto))
    spec = (own.get("dist_kernel") or own.get("kernel")) if dist else own.get("kernel")
    if spec is None:
        return None
    family, kind = plan_of(spec)
    if family == _TOKEN:
        from paging.fast.tokens import supports

        if not supports(proto, kind):
            return None
    if family == _PRED:
        from paging.fast.predictive import supports as pred_supports

        if not pred_supports(policy, proto, kind, dist):
            return None
    if family == _LEARNED and dist:
        return None  # FlashMoE per layer (no -dist name is registered): the reference loop
    out = Plan((family, kind, dist))
    out.proto = proto
    return out


def has_kernel(policy) -> bool:
    """Whether :func:`run` reproduces ``policy`` (see :func:`plan`)."""
    return plan(policy) is not None


def marking_draws(seed, n: int) -> np.ndarray:
    """The uniform draws of a Marking run: ``default_rng(seed).random(n)``, the same doubles the
    reference draws one eviction at a time."""
    return np.random.default_rng(seed).random(max(int(n), 1))


def carry_draws(rng, draws: np.ndarray, used: int, need: int) -> np.ndarray:
    """A carried run's draws after a piece that consumed ``used`` of ``draws``: the unused
    ones, then ``rng``'s next ones when fewer than ``need`` are left (at least ``need`` more:
    the generator yields the same doubles in pieces as one draw at a time)."""
    left = draws[used:]
    if left.size < need:
        left = np.concatenate([left, rng.random(need)])
    return left


def needs_draws(spec) -> bool:
    """Whether the kernel of ``spec`` consumes the run's uniform draws (:func:`marking_draws`):
    Marking, LeCaR, PredictiveMarker and LMarker, and their ``-dist`` variants (whose layers
    share the run's generator, so their draws come in run order across layers)."""
    from paging.fast import adaptive, predictive

    return spec[0] == _MARK or (spec[0] == _ADAPT and spec[1] == adaptive.LECAR) or (
        spec[0] == _PRED and spec[1] in (predictive.PMARKER, predictive.LMARKER))


def _caps(layout, capacity: int, dist: bool) -> np.ndarray:
    if dist:
        return layout.dist_shares(capacity)
    return np.array([capacity], dtype=np.int64)


#: the key stride of a carried LFU run, (count + 1) · stride + t: above every request index t of
#: the run, and small enough that no count overflows int64 (a count is at most the run's
#: length, below 2^31: :meth:`CarriedRun.feed` refuses a longer run; 2^40 overflowed once a page
#: had 2^23 requests)
_CARRIED_STRIDE = 1 << 31


def carries(spec, *, bounded_memory: bool = False, next_use: bool = False) -> bool:
    """Whether :class:`CarriedRun` runs the kernel of ``spec``: the list family, LFU (the
    heap family without Belady, which reads next uses), the credit policies (GreedyDual,
    Landlord, GDSF, Layered Landlord), ARC, LeCaR and Marking (LeCaR's eviction times and the
    credit policies' tie-breaking request indices count requests from the run's start, and
    LeCaR and Marking consume the run's draws from a count kept in the state); the prediction
    policies with the ``frequency`` predictor (:class:`paging.fast.predictive.Carried`, each
    piece served alone, its requests' absolute indices from the count served so far; the
    markers' chains renumbered, so its state stays O(P)), and Score-Based with each piece's
    gate scores (:func:`reads_scores`; a stream's chunks bring them from a ``.npz`` or CSV
    that stores them); the token policies
    (:class:`paging.fast.tokens.Carried`), which keep the run's requests so far (they redo
    them when a bound fails), so not where memory must stay bounded by one piece
    (``bounded_memory``: a streamed trace; it runs them in
    :class:`paging.fast.tokens.Streamed`); and FlashMoE (:class:`paging.fast.learned.Carried`,
    each piece served alone; a stream's run watches for a training sequence as the policy
    does, :meth:`~paging.fast.learned.Carried.watch`). Belady and Belady-DIST when the pieces
    bring their next uses (``next_use``: an oracleGeneral file's next-access
    times, :func:`paging.io.chunks.open_chunks`). The other kernels (the ``oracle``
    predictor's policies) read the whole trace."""
    from paging.fast import heaps

    if spec is None:
        return False
    if next_use and spec[0] == _HEAP and spec[1] == heaps.BELADY:
        return True
    if spec[0] in (_LIST, _ADAPT, _MARK, _CREDIT) or (spec[0] == _HEAP
                                                      and spec[1] == heaps.LFU):
        return True
    if spec[0] == _PRED:
        from paging.fast.predictive import FREQUENCY, predictor_kind

        return reads_scores(spec) or predictor_kind(spec.proto.predictor) == FREQUENCY
    if spec[0] == _LEARNED:  # (FlashMoE: its shared cache, no -dist form)
        return True
    return spec[0] == _TOKEN and not bounded_memory


def streams(spec, *, next_use: bool = False) -> bool:
    """Whether a stream (:mod:`paging.stream`, memory bounded by its state and one chunk) runs
    the kernel of ``spec``: what :func:`carries` takes with ``bounded_memory``, and the token
    policies (:class:`paging.fast.tokens.Streamed`, which keeps no request of the chunks
    before; :func:`is_token`)."""
    return carries(spec, bounded_memory=True, next_use=next_use) or is_token(spec)


def reads_scores(spec) -> bool:
    """Whether ``spec`` is Score-Based's (or its -dist form's), whose pieces must bring each
    request's gate score."""
    from paging.fast.predictive import SCORE

    return spec is not None and spec[0] == _PRED and spec[1] == SCORE


def is_token(spec) -> bool:
    """Whether ``spec`` is a token policy's (token-hazard, token-decay, token-match and the
    combiner robust-token-match, and their -dist forms: :mod:`paging.fast.tokens`)."""
    return spec is not None and spec[0] == _TOKEN


class CarriedRun:
    """A run of a list-family, LFU, credit, ARC, LeCaR, Marking, token-, prediction-policy or
    FlashMoE kernel (``spec`` = ``(family, kind, dist)`` of :func:`plan`; :func:`carries`)
    whose cache is carried from call to call (:func:`paging.fast.lists.list_state`,
    :func:`paging.fast.heaps.heap_state`, :func:`paging.fast.credit.credit_state`,
    :func:`paging.fast.adaptive.arc_state`, :func:`paging.fast.adaptive.lecar_state`,
    :func:`paging.fast.marking.marking_state`, :class:`paging.fast.tokens.Carried`,
    :class:`paging.fast.predictive.Carried`, :class:`paging.fast.learned.Carried`):
    consecutive :meth:`feed` calls on consecutive pieces of one trace, each cut between two
    groups, are one run. ``capacity`` counts ``slots`` (default one per page; page sizes for a
    byte budget); ``costs`` and ``sizes`` are the pages' weights the credit policies' rates read
    (unit ones when None), as :func:`run`'s. LeCaR and Marking draw from
    ``numpy.random.default_rng(seed)`` in eviction order, as the reference's one-at-a-time
    draws (the generator yields the same doubles in pieces: the draws are made a piece ahead,
    at most one per request of the piece and one per page it starts with). The token policies
    read one token per walk over the layers (``steps // ℓ``), as a run without the trace's
    tokens does; PredictiveMarker and LMarker draw from ``seed`` as Marking. A streamed trace
    feeds it chunk by chunk (:mod:`paging.stream`; not the token policies, whose pieces are
    kept: a stream runs the token policies in
    :class:`paging.fast.tokens.Streamed`), a serving run step by step (:mod:`paging.serve`)."""

    def __init__(self, layout, spec, capacity: int, slots=None, seed: int | None = 0,
                 costs=None, sizes=None, next_use: bool = False):
        from paging.fast import adaptive
        from paging.fast.credit import credit_state
        from paging.fast.lists import list_state
        from paging.fast.marking import marking_state

        if not carries(spec, next_use=next_use):
            raise ValueError(f"no carried kernel for {spec!r}")
        self.family, self.kind, self.dist = spec
        self.layout = layout
        self.caps = _caps(layout, int(capacity), self.dist)
        # read-only, as a whole run's: one compiled signature per kernel (common.frozen)
        self.slots = unit_sizes(layout.n_pages) if slots is None else frozen(slots)
        P, parts = layout.n_pages, self.caps.size
        self.costs = unit_costs(P) if costs is None else frozen(costs)
        self.sizes = unit_sizes(P) if sizes is None else frozen(sizes)
        self.rng = np.random.default_rng(seed) if needs_draws(spec) else None
        self.draws = np.zeros(0)
        if self.family == _LIST:
            self.state = list_state(P, layout.n_layers, parts)
            self.no_route = no_route()  # (made once: a serving run feeds it per layer)
        elif self.family == _MARK:
            self.state = marking_state(P, parts)
        elif self.family == _CREDIT:
            self.state = credit_state(layout.n_experts, layout.n_layers, self.caps, self.dist,
                                      self.kind)
        elif self.family == _ADAPT and self.kind == adaptive.ARC:
            self.state = adaptive.arc_state(P, parts)
        elif self.family == _ADAPT:
            self.state = adaptive.lecar_state(P, parts)
            self.lecar = adaptive.lecar_params(self.caps)
        elif self.family == _TOKEN:
            from paging.fast.tokens import Carried

            self.state = Carried(layout, spec, self.caps, self.slots)
        elif self.family == _PRED:
            from paging.fast.predictive import Carried as CarriedPred

            self.state = CarriedPred(layout, spec, self.caps, self.slots)
        elif self.family == _LEARNED:
            from paging.fast.learned import Carried as CarriedFlash

            self.state = CarriedFlash(layout, spec, int(self.caps[0]), self.slots)
        else:
            self.state = heap_state(layout.n_experts, layout.n_layers, self.caps, self.dist,
                                    _CARRIED_STRIDE)
        self.collisions = 0
        self.bypasses = 0
        #: per-page misses so far: the running totals every carried kernel returns (its
        #: state's own array)
        self.page_misses = np.zeros(P, np.int64)

    def _draws(self, n: int) -> np.ndarray:
        """The run's draws from the state's count on, at least ``n`` + P of them (a piece of
        ``n`` requests evicts at most its own insertions and the P pages the state may hold):
        the unused ones are kept and the generator continues behind them."""
        # the count of draws consumed: lecar_state's second, the prediction state's second
        cnt = self.state.S[-1] if self.family == _PRED else self.state[-1]
        at = 1 if self.family in (_ADAPT, _PRED) else 0
        self.draws = carry_draws(self.rng, self.draws, int(cnt[at]), n + self.layout.n_pages)
        cnt[at] = 0
        return self.draws

    def resident(self) -> np.ndarray:
        """Each page's residency now (bool, one per page), read from the state the last piece
        left (a routing hook reads it between two pieces: :mod:`paging.serve.engine`), by the
        rule the one-call routed steps read it with (:mod:`paging.fast.step_routing`'s
        ``in_*``); the token and prediction policies' residency arrays."""
        from paging.fast import adaptive, step_routing

        f, st = self.family, self.state
        if f == _TOKEN:
            return st.C[0]
        if f == _PRED:
            return st.S[0]
        if f == _LEARNED:
            return st.resident
        rule = {_LIST: step_routing.in_list, _MARK: step_routing.in_marking,
                _CREDIT: step_routing.in_credit, _HEAP: step_routing.in_heap}.get(f)
        if rule is None:
            rule = step_routing.in_arc if self.kind == adaptive.ARC else step_routing.in_lecar
        return rule(st)

    def routed_step(self, XL, WL, KL, step: int, hook: tuple, sums: tuple):
        """A serving step with a routing hook, routed and served in one compiled call
        (:mod:`paging.fast.step_routing`: the list and heap families, ARC, the credit
        policies, Marking and LeCaR; ``hook`` from
        :func:`~paging.fast.step_routing.serving_hook`, ``sums`` its running sums and the
        quality proxies' and an empty logits array): its ``(pages, cnt, hits)``, or None for
        another family, whose caller routes layer by layer against :meth:`resident` and
        :meth:`feed`."""
        from paging.fast import adaptive, step_routing

        f, lay = self.family, self.layout
        head = (XL, WL, KL, step, lay.n_experts, lay.n_layers, *hook, *sums)
        tail = (self.slots, self.caps, self.dist)
        if f == _LIST:
            out = step_routing.routed_list_step(*head, *tail, self.kind, self.state,
                                                self.no_route)
        elif f == _HEAP:
            out = step_routing.routed_heap_step(*head, *tail, self.kind, self.state,
                                                _NO_NEXT_USE)
        elif f == _ADAPT and self.kind == adaptive.ARC:
            out = step_routing.routed_arc_step(*head, *tail, self.state)
        elif f == _CREDIT:
            out = step_routing.routed_credit_step(*head, self.costs, self.sizes, *tail,
                                                  self.kind, self.state)
        elif f == _MARK:  # (the draws for the whole step: at most n a layer are inserted)
            out = step_routing.routed_marking_step(*head, *tail, self.state,
                                                   self._draws(lay.n_layers * lay.n_experts))
        elif f == _ADAPT:  # LeCaR
            out = step_routing.routed_lecar_step(*head, *tail, self.state,
                                                 self._draws(lay.n_layers * lay.n_experts),
                                                 *self.lecar)
        else:
            return None
        pages, cnt, hits, coll, byp, misses = out
        self.collisions += int(coll)
        self.bypasses += int(byp)
        if misses.size:
            self.page_misses = misses
        return pages, cnt, hits

    def feed(self, pages: np.ndarray, steps: np.ndarray, hits: bool = False, scores=None,
             log: bool = False, next_use=None):
        """Serve the next piece; its hit mask when ``hits``. ``scores``: the requests' gate
        scores, which Score-Based reads (and nothing else). ``log`` (the families a stream
        runs, not the token and FlashMoE ones): ``(hit mask, evictions,
        bypassed)`` of the piece, rows ``(t, page)`` and indices ``t`` of requests in the piece
        (what :class:`paging.verify.StreamVerifier` checks). ``next_use``: the piece's next
        uses, indices of requests from the run's start (Belady's run, and only it)."""
        from paging.fast import adaptive
        from paging.fast.lists import list_kernel
        from paging.fast.marking import marking_kernel

        lay = self.layout
        if log and self.family == _TOKEN:
            raise ValueError(f"no eviction log for a carried {self.family} run")
        rec = 2 if log else 1 if hits else 0
        pages, steps = frozen(pages), frozen(steps)
        args = (pages, steps, self.slots, lay.n_experts, lay.n_layers, self.caps, self.dist)
        if self.family == _LIST:
            out = list_kernel(*args, self.kind, rec, self.state, self.no_route)
        elif self.family == _MARK:
            out = marking_kernel(*args, self._draws(pages.size), rec, self.state)
        elif self.family == _CREDIT:
            out = credit_kernel(pages, steps, self.costs, self.sizes, self.slots, lay.n_experts,
                                lay.n_layers, self.caps, self.dist, self.kind, rec, self.state)
        elif self.family == _ADAPT and self.kind == adaptive.ARC:
            out = adaptive.arc_kernel(*args, rec, self.state)
        elif self.family == _ADAPT:
            out = adaptive.lecar_kernel(*args, self._draws(pages.size), *self.lecar, rec,
                                        self.state)
        elif self.family == _TOKEN:
            out = self.state.feed(pages, steps, hits)
        elif self.family == _PRED:
            out = self.state.feed(pages, steps, hits, self._draws(pages.size) if self.rng
                                  is not None else np.zeros(0), scores, log)
        elif self.family == _LEARNED:
            out = self.state.feed(pages, steps, hits, log)
        else:
            fed, stride = (int(x) for x in self.state[-1])  # (heap_state's clock)
            if self.kind != BELADY and fed + pages.size >= stride:
                from paging.errors import PagingError

                raise PagingError(f"a carried LFU run counts at most {stride - 1:,} requests "
                                  "(its keys' stride); read the trace whole")
            nu = _NO_NEXT_USE if next_use is None else frozen(next_use)
            if self.kind == BELADY and nu.size != pages.size:
                raise ValueError("a carried Belady run needs each request's next use")
            out = heap_kernel(pages, steps, nu, self.slots, lay.n_experts, lay.n_layers,
                              self.caps, self.dist, self.kind, rec, self.state)
        self.collisions += int(out[1])
        self.bypasses += int(out[7])
        self.page_misses = out[2]
        if log:
            return out[3].astype(bool), out[4][:out[5]].copy(), out[6][:out[7]].copy()
        return np.asarray(out[3], dtype=bool) if hits else None


def _execute(pages, steps, next_use, slots, costs, sizes, layout, capacity, spec, draws,
             record):
    """Run the kernel of ``spec``; ``slots[p]`` is the room page p takes in the capacity (1,
    or its size for a byte budget), ``costs``/``sizes`` the weights the credit policies read."""
    family, kind, dist = spec
    caps = _caps(layout, capacity, dist)
    n, L = layout.n_experts, layout.n_layers
    pages, steps, next_use, slots = frozen(pages), frozen(steps), frozen(next_use), frozen(slots)
    costs, sizes = frozen(costs), frozen(sizes)
    if family == _LIST:
        return list_kernel(pages, steps, slots, n, L, caps, dist, kind, record,
                           list_state(n * L, L, caps.size), no_route())
    if family == _HEAP:
        return heap_kernel(pages, steps, next_use, slots, n, L, caps, dist, kind, record,
                           heap_state(n, L, caps, dist, pages.size + 1))
    if family == _CREDIT:
        return credit_kernel(pages, steps, costs, sizes, slots, n, L, caps, dist, kind, record)
    if family == _ADAPT:
        return adaptive_kernel(pages, steps, slots, n, L, caps, dist, kind, draws, record)
    return marking_kernel(pages, steps, slots, n, L, caps, dist, draws, record)


def record_level(record) -> int:
    """0 (record nothing), 1 (the hit mask: ``record="hits"``) or 2 (hit mask, evictions and
    bypasses: ``record=True``)."""
    if record is True or record is False:
        return 2 if record else 0
    if record == "hits":
        return 1
    raise ValueError(f"record must be True, False or 'hits', got {record!r}")


def needs_next_use(spec) -> bool:
    """Whether the kernel of ``spec`` reads next-use times (Belady and Belady-DIST)."""
    from paging.fast import heaps

    return spec[0] == _HEAP and spec[1] == heaps.BELADY


def _no_next_use() -> np.ndarray:
    a = np.zeros(0, dtype=np.int64)
    a.setflags(write=False)
    return a


_NO_NEXT_USE = _no_next_use()  # (read-only: shared by every carried heap run)


def run(trace, policy, k: int | None = None, *, budget: int | None = None, costs=None,
        sizes=None, seed: int | None = 0, record: bool | str = False):
    """Replay ``trace`` under ``policy`` with a cache of ``k`` pages (or ``budget`` bytes) in a
    compiled kernel.

    Parameters
    ----------
    trace : Trace
        Rounds or groups mode; groups are pinned while served, as in the reference loop.
    policy : Policy
        A built-in policy instance (:func:`plan`); anything else returns None.
    k, budget : int
        Cache size in pages, or in bytes with ``sizes``; already validated
        (:func:`paging.simulate.check_capacity`), exactly one of them given.
    costs, sizes : numpy.ndarray or None
        Validated per-page fetch costs (float64) and sizes (int64), or None for unit ones.
    seed : int or None
        Seeds ``numpy.random.default_rng``; Marking, LeCaR, PredictiveMarker and LMarker
        pre-draw ``rng.random(N)`` and consume the draws in eviction order, the same doubles as
        the reference's one-at-a-time draws.
    record : bool or "hits"
        Also return the hit mask, the eviction log and the bypassed requests (True), or the
        hit mask alone (``"hits"``, what the latency timeline reads).

    Returns
    -------
    Result or None
        Exactly what ``simulate(trace, policy, k, budget=..., costs=..., sizes=..., seed=seed,
        record=record, engine="reference")`` returns (every field), or None when ``policy``
        has no kernel.

    Cost: see the module docstring (O(1) per request for LRU and FIFO in rounds mode, O(log k)
    for Belady, LFU, GreedyDual, Landlord and GDSF), plus O(N) for ``trace.next_use`` on a
    first Belady or ``oracle`` run.
    """
    from paging.result import build_result

    spec = plan(policy)
    if spec is None:
        return None
    P = trace.layout.n_pages
    nu = trace.next_use if needs_next_use(spec) else _no_next_use()
    draws = marking_draws(seed, trace.n_requests) if needs_draws(spec) else None
    capacity = k if budget is None else budget
    # a cache counted in pages gives every page one slot, whatever its size in bytes
    s = unit_sizes(P) if sizes is None else sizes
    slots = unit_sizes(P) if budget is None else s
    w = unit_costs(P) if costs is None else costs
    level = record_level(record)
    if spec[0] == _TOKEN:
        from paging.fast.tokens import execute

        out = execute(trace, spec, slots, int(capacity), level, policy)
    elif spec[0] == _PRED:
        from paging.fast.predictive import execute

        out = execute(trace, spec, slots, int(capacity), level, draws, policy)
    elif spec[0] == _LEARNED:
        from paging.fast.learned import execute

        out = execute(trace, spec, slots, int(capacity), level, policy)
    else:
        out = _execute(trace.pages, trace.steps, nu, slots, w, s, trace.layout, int(capacity),
                       spec, draws, level)
    misses, coll, page_miss, hit_mask, ev, n_ev, byp, n_byp = out
    return build_result(
        policy=policy.name, k=k, budget=budget, trace=trace.name, requests=trace.n_requests,
        page_misses=page_miss, n_layers=trace.layout.n_layers, collisions=coll,
        bypasses=n_byp, seed=seed, dist=spec[2], costs=costs, sizes=sizes,
        hit_mask=hit_mask if level else None,
        evictions=ev[:n_ev].copy() if level > 1 else None,
        bypassed=byp[:n_byp].copy() if level > 1 else None,
    )


def run_misses(trace, spec, k: int, *, draws=None, next_use=None) -> int:
    """Total misses of one run for a kernel ``spec`` (:func:`plan`), no Result built: the inner
    step of per-k miss-curve sweeps (:mod:`paging.mrc`). Releases the GIL while it runs.
    ``draws``: the run's uniform draws for the kernels that take them (:func:`needs_draws`;
    the prediction family's default: seed 0's)."""
    if next_use is None:
        next_use = trace.next_use if needs_next_use(spec) else _no_next_use()
    P = trace.layout.n_pages
    one = unit_sizes(P)
    if spec[0] == _TOKEN:
        from paging.fast.tokens import execute

        return int(execute(trace, spec, one, int(k), 0)[0])
    if spec[0] == _PRED:
        from paging.fast.predictive import execute

        if draws is None and needs_draws(spec):
            draws = marking_draws(0, trace.n_requests)
        return int(execute(trace, spec, one, int(k), 0, draws)[0])
    if spec[0] == _LEARNED:
        from paging.fast.learned import execute

        return int(execute(trace, spec, one, int(k), 0)[0])
    return int(_execute(trace.pages, trace.steps, next_use, one, unit_costs(P), one,
                        trace.layout, int(k), spec, draws, 0)[0])
