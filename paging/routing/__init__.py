"""Cache-aware routing: hooks that change which experts a (token, layer) group requests.

Source: "Mixture of Cache-Conditional Experts for Efficient Mobile Device Inference"
(../shared/papers/cache-conditional-experts_cache-aware-routing.txt), Sec. 3. The router
ranks the n experts of a layer by their logits z (Eq. 2, r = argsort of w = softmax(z)); a
routing hook returns the K experts actually served, seeing which experts of the layer are
cached. The mixing weights stay the router's original w (Sec. 3.3: "we still use the
unmodified router logits to compute the expert weights").

Hooks (spec ``NAME[:key=value,...]``, :func:`make_router`):

``standard``
    the router's top-K, unchanged (the default; runs take the compiled kernels).
``pruning:j=J``
    keep the top J (1 <= J <= K), drop the rest (Sec. 4.2's Pruning baseline). Fewer requests
    are served; :attr:`paging.result.Result` ``extra["slots"]`` keeps the original K per group so
    miss rates can be normalised by K as the paper does ("normalized using k").
``max-rank:j=J[,m=M]``
    Alg. 1 / Eq. 7: ``r' = promote(r[J]; promote(r[M] ∩ C; r))``, serve ``r'[:K]``: the top J
    always, then cached experts of rank < M (best rank first), then the remaining top-K experts.
    Default J = 1 (the paper keeps J fixed across methods, Sec. 4.7), M = n (any cached expert).
``cumsum:tau=T[,j=J]``
    Alg. 2 / Eq. 8: M = the smallest i whose cumulative softmax probability of the top i
    reaches T (0 < T <= 1), then max-rank with that M. NOTE: the issue paraphrases this as
    "keep experts until the cumulative probability reaches T, fill the rest from the cache";
    we follow the paper's algorithm, where a larger T allows deeper promotion.
``cache-prior:lambda=L[,j=J][,delta=run|sequence][,avg=range|logit]``
    Eq. 9-10: ``z' = z + L·Δavg·m̃`` with m̃ the cached experts plus the top J, Δavg the running
    average of max(z) − min(z) in this layer; serve the top-K of z' (ties by original rank).
    L >= 0 (the paper sweeps [0, 1]). The paper: Δavg is "the range in logits for this layer
    that we estimate using a running average over sequences and tokens" (Sec. 3.3, Eq. 10).
    ``delta=run`` (the default, the paper's reading): the average runs over every (token,
    layer) group routed so far in the run, this one included, across the sequences of the run
    in order; ``delta=sequence`` (this package's first reading, kept under its name): the
    average restarts at every sequence. The two differ only on a run of several sequences.
    ``avg=logit`` averages the logits instead of their range: SpecMD's paraphrase read
    literally ("the historical average logit value", Sec. 3.1.1), :class:`CachePrior`.
    One :class:`CachePrior` instance is one run: it keeps Δavg across the ``simulate`` calls it
    is given; :func:`router_for_run` gives a fresh hook primed with the sequences run before
    (Δavg depends only on the trace's logits, never on the cache, so priming is exact; the CLI
    and the sweep use it).

``phase=decode`` (any hook but ``standard``; default ``phase=both``): the hook routes only
the groups of the decode phase, and every group of a prefill is served as the router ranked
it (no hook call, so Cache-Prior's Δavg does not see it). The on-device deployment of the
paper reads so: "our method was applied only during autoregressive generation, allowing the
model to benefit from optimizations designed for prompt processing" (Sec. 4.5); its
language-modelling evaluation routes every token (``phase=both``). A trace without a prefill
phase (a decode log) is routed whole either way; a warm run's sequences each have their own
prefill (:func:`paging.trace.prefill_mask`). The quality proxies average over every group of
the run, a prefill group counting as served as ranked (retained mass 1).

What is known. With full logits (``Trace.logits``) every hook is the paper's. With only the
top-K gate scores (the Mixtral logs, renormalised over the top 2) the ranks beyond K and the
tail probabilities are unknown, and the hooks say so in :attr:`Router.note`:

* max-rank: ``m`` must be <= K or absent; the experts beyond the top K are all "rank K", so any
  cached expert of the layer may fill a free slot (lowest expert id first);
* cumsum: the cumulative sum runs over the known scores; renormalised top-K scores reach any
  T <= 1 within K experts, so M <= K and cumsum routes exactly as standard;
* cache-prior: an unknown expert's logit is taken as its upper bound, the K-th known logit
  (z = log score), and Δavg is the known logits' range. On a top-2 trace (the Mixtral logs)
  with J = 1 this makes λ irrelevant: the top-1 and every cached expert get the same bonus
  λ·Δavg > 0, a cached expert's boosted logit (the 2nd logit + λ·Δavg) beats an uncached
  2nd expert's (the 2nd logit) whatever λ > 0, so the hook serves the top-1 and then the best
  ranked cached expert, exactly ``max-rank:j=1`` (tested); λ = 0 is standard routing. Only
  J = 0 leaves λ a role there (a cached expert then has to beat the top-1's logit gap);
* quality: an expert outside the original top K has unknown weight, counted as 0 (the lost mass
  is the replaced expert's probability).

Traces without any scores (granite: ids only) weigh the top-K experts equally (1/K).

Where it runs. :func:`paging.simulate.simulate` runs every hook above with the list policies
(LRU, FIFO, FWF, LLRU, FLD, Least-Stale and their ``-dist`` variants) in a compiled kernel
(:mod:`paging.fast.routing`) equal to the reference loop decision for decision, quality proxies
included; every other policy, and hooks of other classes, run in the reference loop
(:class:`RoutedRun`).

Quality proxies (named as such, no perplexity claims), averaged over the routed groups:
``retained_mass`` = Σ w over the served experts / Σ w over the original top K; ``top1_changed``
= share of groups whose rank-0 expert is not served; ``kl`` = KL(ŵ_ε ‖ ŵ'_ε) of the original and
served weights, each renormalised and mixed with ε = 0.01 of the uniform distribution over the
layer's n experts, so that dropping an expert costs a finite amount (0 when nothing changes).
"""

from __future__ import annotations

import math

import numpy as np

from paging.errors import PagingError
from paging.options import spec_number, take_float, take_int
from paging.registry import Registry
from paging.trace import group_starts, prefill_mask

__all__ = ["Router", "Standard", "Pruning", "MaxRank", "Cumsum", "CachePrior", "Group",
           "make_router", "router_for_run", "groups_of", "ROUTERS", "quality", "KL_EPS",
           "RoutedRun", "DELTA_SCOPES", "PHASES", "AVERAGES"]

#: smoothing of the KL proxy (share of the uniform distribution mixed into both weightings)
KL_EPS = 0.01
#: the groups a hook routes: every one (``both``, the default) or the decode phase's only
PHASES = ("both", "decode")
#: what Cache-Prior's running average Δavg runs over: the whole run (the paper's "over sequences
#: and tokens", the default) or each sequence alone (the first reading)
DELTA_SCOPES = ("run", "sequence")
#: what Cache-Prior's Δavg averages: the logit range (Skliar et al., the default) or the logit
#: itself (SpecMD's "historical average logit value" read literally)
AVERAGES = ("range", "logit")


class Group:
    """What a hook sees of one (token, layer) group.

    ``experts``: the original top-K in rank order; ``scores``: their gate scores (None when the
    trace has none); ``logits``: the layer's full logit row (None when unknown); ``n``: experts
    per layer."""

    __slots__ = ("layer", "token", "experts", "scores", "logits", "n", "_order", "_probs")

    def __init__(self, layer: int, token: int, experts: list[int], scores, logits, n: int):
        self.layer, self.token, self.experts, self.n = layer, token, experts, n
        self.scores, self.logits = scores, logits
        self._order = self._probs = None

    @property
    def K(self) -> int:
        return len(self.experts)

    def order(self) -> list[int]:
        """The full ranking r (Eq. 2): by logit when known (ties by expert id), else the top K
        then every other expert by id (their ranks are unknown)."""
        if self._order is None:
            if self.logits is not None:
                self._order = np.argsort(-self.logits, kind="stable").tolist()
            else:
                top = set(self.experts)
                self._order = list(self.experts) + [e for e in range(self.n) if e not in top]
        return self._order

    def probs(self) -> dict[int, float]:
        """Router weight w of every expert whose weight is known: the softmax of the logits
        (all n), else the top-K gate scores, else 1/K each for the top K."""
        if self._probs is None:
            if self.logits is not None:
                z = self.logits - self.logits.max()
                w = np.exp(z)
                w /= w.sum()
                self._probs = dict(enumerate(w.tolist()))
            elif self.scores is not None:
                self._probs = dict(zip(self.experts, self.scores, strict=True))
            else:
                self._probs = {e: 1.0 / self.K for e in self.experts}
        return self._probs


def promote(subset: list[int], ranking: list[int]) -> list[int]:
    """Eq. 5: ``subset ⊕ (ranking \\ subset)`` (the subtraction keeps ranking's order)."""
    s = set(subset)
    return list(subset) + [e for e in ranking if e not in s]


class Router:
    """A routing hook. :meth:`reset` once per run, :meth:`route` once per (token, layer) group,
    before its requests are served. ``cached`` holds the experts of the group's layer that are
    in the cache now."""

    name = "router"
    needs_logits = False
    #: the groups routed (:data:`PHASES`): ``decode`` serves a prefill's groups as ranked
    phase = "both"

    def spec(self) -> str:
        return self.name

    def _phase(self) -> str:
        """The spec's suffix for :attr:`phase` (none for the default)."""
        return "" if self.phase == "both" else f",phase={self.phase}"

    def skips(self, trace) -> np.ndarray | None:
        """Per request of ``trace``, whether its group is served as ranked, without the hook
        (a prefill's groups with ``phase=decode``); None when the hook routes every group."""
        if self.phase == "both":
            return None
        m = prefill_mask(trace)
        return m if m.any() else None

    def reset(self, trace) -> None:
        """Check the hook against the trace (K, what is known) and clear running state."""
        self.known = trace.logits is not None
        self.note = "" if self.known else (
            "top-K scores only: ranks beyond K and tail weights unknown"
            if trace.score is not None else "expert ids only: top-K weighted 1/K")

    def route(self, g: Group, cached: set[int]) -> list[int]:
        raise NotImplementedError

    def prime(self, traces) -> None:
        """Carry into this hook the running state that routing ``traces`` (sequences run
        before, in order, in the same run) would leave; only Cache-Prior's Δavg has any."""


class Standard(Router):
    """The router's own top-K (Eq. 1-2)."""

    name = "standard"

    def route(self, g, cached):
        return list(g.experts)


class Pruning(Router):
    """Keep the top J, drop the rest (Sec. 2.3, Fig. 2 left; the Pruning baseline of Sec. 4)."""

    name = "pruning"

    def __init__(self, j: int):
        self.j = j

    def spec(self):
        return f"pruning:j={self.j}" + self._phase()

    def reset(self, trace):
        super().reset(trace)
        _check_j(self, trace, lo=1)

    def route(self, g, cached):
        return list(g.experts[:self.j])


class MaxRank(Router):
    """Alg. 1 (Eq. 7): the top J, then cached experts of rank < M, then the rest of the top K."""

    name = "max-rank"

    def __init__(self, j: int = 1, m: int | None = None):
        self.j, self.m = j, m

    def spec(self):
        return f"max-rank:j={self.j}" + ("" if self.m is None else f",m={self.m}") + \
            self._phase()

    def reset(self, trace):
        super().reset(trace)
        K = _check_j(self, trace, lo=0)
        n = trace.layout.n_experts
        if self.m is not None and self.m > n:
            raise PagingError(f"routing {self.spec()}: m must be <= n_experts = {n}")
        if self.m is not None and self.m > K and trace.logits is None:
            raise PagingError(f"routing {self.spec()}: trace {trace.name} has no logits, so "
                              f"ranks beyond the top {K} are unknown; give m <= {K} or no m "
                              "(any cached expert)")

    def _route_m(self, g, cached, m):
        r = g.order()
        promoted = [e for e in r[:m] if e in cached]
        return promote(r[:self.j], promote(promoted, r))[:g.K]

    def route(self, g, cached):
        return self._route_m(g, cached, g.n if self.m is None else self.m)

    def allowed(self, g) -> tuple[set[int], set[int]]:
        """``(must, allowed)``: the top J must be served; every served expert is in ``allowed``
        (the top K plus the experts of rank < M), whatever the cache holds."""
        r = g.order()
        m = g.n if self.m is None else self.m
        return set(r[:self.j]), set(r[:max(m, g.K)])


class Cumsum(MaxRank):
    """Alg. 2 (Eq. 8): M = min i with Σ_{j<=i} w[r_j] >= tau, then max-rank with that M."""

    name = "cumsum"

    def __init__(self, tau: float, j: int = 1):
        super().__init__(j, None)
        self.tau = tau

    def spec(self):
        return f"cumsum:tau={spec_number(self.tau)},j={self.j}" + self._phase()

    def reset(self, trace):
        Router.reset(self, trace)
        _check_j(self, trace, lo=0)

    def m_of(self, g) -> int:
        w = g.probs()
        acc, m = 0.0, 0
        for e in g.order():
            if e not in w:  # unknown weights (top-K only): every other expert is allowed
                return g.n
            m += 1
            acc += w[e]
            if acc >= self.tau:
                return m
        return m

    def route(self, g, cached):
        return self._route_m(g, cached, self.m_of(g))

    def allowed(self, g):
        r = g.order()
        return set(r[:self.j]), set(r[:max(self.m_of(g), g.K)])


class CachePrior(Router):
    """Eq. 9-10: re-rank by ``z + λ·Δavg·m̃``; the weights stay the original ones.

    ``delta``: ``"run"`` (default) keeps Δavg's running sums across every sequence this
    instance routes, as the paper's "running average over sequences and tokens" (Sec. 3.3);
    ``"sequence"`` restarts them at each sequence (:meth:`reset`), the first reading.

    ``avg``: what Δavg averages. ``"range"`` (default): the layer's logit range, max(z) −
    min(z), Skliar et al.'s "the range in logits for this layer that we estimate using a
    running average" (Eq. 10). ``"logit"``: the layer's mean logit, SpecMD's paraphrase of
    the same rule read literally, "Δavg is the historical average logit value" (Sec. 3.1.1,
    Eq. 1, with ``j=0``: "1_C indicates cached experts"). On log-probability logits a mean
    logit is negative, so that reading demotes the cached experts."""

    name = "cache-prior"

    def __init__(self, lam: float, j: int = 1, delta: str = "run", avg: str = "range"):
        if delta not in DELTA_SCOPES:
            raise PagingError(f"cache-prior: delta must be one of {', '.join(DELTA_SCOPES)}, "
                              f"got {delta!r}")
        if avg not in AVERAGES:
            raise PagingError(f"cache-prior: avg must be one of {', '.join(AVERAGES)}, "
                              f"got {avg!r}")
        self.lam, self.j, self.delta, self.avg = lam, j, delta, avg
        self._range_sum: list[float] | None = None
        self._range_n: list[int] = []

    def spec(self):
        return f"cache-prior:lambda={spec_number(self.lam)},j={self.j}" + (
            "" if self.delta == "run" else f",delta={self.delta}") + (
            "" if self.avg == "range" else f",avg={self.avg}") + self._phase()

    def reset(self, trace):
        super().reset(trace)
        _check_j(self, trace, lo=0)
        L = trace.layout.n_layers
        if self._range_sum is not None and self.delta == "run" and len(self._range_sum) != L:
            raise PagingError(f"routing {self.spec()}: Δavg runs over the sequences of a run, "
                              f"and {trace.name} has {L} layers where the earlier ones had "
                              f"{len(self._range_sum)}; route it in a run of its own")
        if self._range_sum is None or self.delta == "sequence":
            self._range_sum = [0.0] * L
            self._range_n = [0] * L

    def _range(self, g) -> float:
        """max(z) − min(z) of the group's layer row (the known logits without full logits), or
        with ``avg="logit"`` their mean (summed in order, as the compiled loops sum it)."""
        z = self.logits_of(g)
        zl = z if g.logits is not None else z[g.experts]
        if self.avg == "logit":
            return sum(zl.tolist()) / zl.size
        return float(zl.max() - zl.min())

    def prime(self, traces):
        """Add the logit ranges of every group of ``traces`` (in order) to Δavg's running sums,
        exactly as routing them would (the range does not depend on the cache)."""
        for tr in traces:
            self.reset(tr)
            skip = self.skips(tr)
            starts = group_starts(tr.steps) if skip is not None else None
            for i, g in enumerate(groups_of(tr)):
                if skip is not None and skip[starts[i]]:
                    continue  # (a prefill group with phase=decode: the hook never sees it)
                self._range_sum[g.layer] += self._range(g)
                self._range_n[g.layer] += 1

    def logits_of(self, g) -> np.ndarray:
        """The layer's logits; without them, log of the known scores and, for every other
        expert, the K-th known logit (its upper bound)."""
        if g.logits is not None:
            return g.logits
        w = g.probs()
        known = np.log(np.maximum(np.array([w[e] for e in g.experts]), 1e-300))
        z = np.full(g.n, known.min())
        z[g.experts] = known
        return z

    def route(self, g, cached):
        z = self.logits_of(g)
        L = g.layer
        self._range_sum[L] += self._range(g)
        self._range_n[L] += 1
        delta = self._range_sum[L] / self._range_n[L]  # Eq. 10, running average
        order = np.asarray(g.order())
        zz = np.array(z, dtype=np.float64)
        boost = list(set(cached) | set(order[:self.j].tolist()))
        if boost:
            zz[boost] += self.lam * delta
        rank = np.empty(g.n, dtype=np.int64)
        rank[order] = np.arange(g.n)
        return np.lexsort((rank, -zz))[:g.K].tolist()  # by z' then by original rank


def groups_of(trace):
    """The trace's (token, layer) groups as :class:`Group` objects, in order (what the routing
    phase builds before asking a hook; groups are runs of equal steps)."""
    n, L = trace.layout.n_experts, trace.layout.n_layers
    steps = trace.steps.tolist()
    pages = trace.pages.tolist()
    token = trace.token.tolist() if trace.token is not None else None
    score = None if trace.score is None else trace.score.tolist()
    lo, N = 0, len(steps)
    while lo < N:
        hi = lo + 1
        while hi < N and steps[hi] == steps[lo]:
            hi += 1
        z = steps[lo] % L
        tok = token[lo] if token is not None else steps[lo] // L
        logits = None if trace.logits is None else trace.logits[tok, z]
        yield Group(z, tok, [p - z * n for p in pages[lo:hi]],
                    None if score is None else score[lo:hi], logits, n)
        lo = hi


def router_for_run(spec, earlier=()) -> Router | None:
    """A fresh routing hook (:func:`make_router`) for one sequence of a run, primed with the
    sequences run before it in the same run (``earlier``, in order): Cache-Prior's Δavg then
    runs over the whole run (``delta=run``, the paper's reading) even though each sequence is
    simulated from its own cache. None for standard routing."""
    r = make_router(spec)
    if r is not None and earlier:
        r.prime(list(earlier))
    return r


def _check_j(router, trace, lo: int) -> int:
    """K of the trace (its largest rank + 1) after checking lo <= J <= K."""
    K = 1 if trace.rank is None or trace.n_requests == 0 else int(trace.rank.max()) + 1
    if router.j < lo or router.j > K:
        raise PagingError(f"routing {router.spec()}: j must be in {lo}..{K} (K = {K} experts "
                          f"per token in {trace.name}), got {router.j}")
    return K


def _pruning(opts, what) -> Pruning:
    if "j" not in opts:
        raise PagingError(f"{what}: give j=J (the number of top experts kept)")
    return Pruning(take_int(opts, "j", None, what, lo=1))


def _cumsum(opts, what) -> Cumsum:
    if "tau" not in opts:
        raise PagingError(f"{what}: give tau=T in (0, 1]")
    tau = take_float(opts, "tau", None, what, lo=0.0, hi=1.0, lo_open=True)
    return Cumsum(tau, take_int(opts, "j", 1, what, lo=0))


def _cache_prior(opts, what) -> CachePrior:
    if "lambda" not in opts:
        raise PagingError(f"{what}: give lambda=L >= 0")
    lam = take_float(opts, "lambda", None, what, lo=0.0)
    if math.isinf(lam):
        raise PagingError(f"{what}: lambda must be finite")
    j = take_int(opts, "j", 1, what, lo=0)
    delta = opts.pop("delta", "run").lower()
    if delta not in DELTA_SCOPES:
        raise PagingError(f"{what}: delta must be run or sequence, got {delta!r}")
    avg = str(opts.pop("avg", "range")).lower()
    if avg not in AVERAGES:
        raise PagingError(f"{what}: avg must be range or logit, got {avg!r}")
    return CachePrior(lam, j, delta, avg)


def _phased(build):
    """``build`` taking the ``phase`` option every hook has (:data:`PHASES`)."""
    def make(opts, what):
        phase = str(opts.pop("phase", "both")).lower()
        if phase not in PHASES:
            raise PagingError(f"{what}: phase must be both or decode, got {phase!r}")
        r = build(opts, what)
        r.phase = phase
        return r
    return make


#: the routing hooks (``--routing``; :class:`paging.registry.Registry`); ``standard`` builds
#: None (no hook: today's run, on the compiled kernel)
ROUTING = Registry("routing")
ROUTING.add("standard", lambda opts, what: None)
ROUTING.add("pruning", _phased(_pruning), "j, phase")
ROUTING.add("max-rank", _phased(lambda opts, what: MaxRank(take_int(opts, "j", 1, what, lo=0),
                                                           take_int(opts, "m", None, what,
                                                                    lo=1))),
            "j, m, phase")
ROUTING.add("cumsum", _phased(_cumsum), "tau, j, phase")
ROUTING.add("cache-prior", _phased(_cache_prior), "lambda, j, delta, avg, phase")
#: name -> usage (help texts)
ROUTERS = {e.name: e.name if e.options == "no options" else f"{e.name}:{e.options}"
           for e in ROUTING.entries.values()}


def make_router(spec) -> Router | None:
    """A routing hook from its spec (``None`` or ``"standard"`` give None: no hook, so the run
    is today's, on the compiled kernel). Bad names and options are a one-line PagingError."""
    if spec is None or isinstance(spec, Router):
        return None if isinstance(spec, Standard) else spec
    return ROUTING.make(spec)


def quality(g: Group, served: list[int]) -> tuple[float, bool, float]:
    """``(retained mass, top-1 changed, KL)`` of one group (module docstring): proxies, not
    model quality."""
    w = g.probs()
    orig = sum(w.get(e, 0.0) for e in g.experts)
    kept = sum(w.get(e, 0.0) for e in served)
    retained = kept / orig if orig > 0 else 1.0
    changed = g.experts[0] not in served
    u = KL_EPS / g.n
    a = {e: w.get(e, 0.0) / orig for e in g.experts} if orig > 0 else {}
    b = {e: w.get(e, 0.0) / kept for e in served} if kept > 0 else {}
    kl = 0.0
    # experts in neither set contribute u·log(u/u) = 0; ascending ids, the compiled kernels'
    # order (paging.fast.routing._kl)
    for e in sorted(set(a) | set(b)):
        p = (1 - KL_EPS) * a.get(e, 0.0) + u
        q = (1 - KL_EPS) * b.get(e, 0.0) + u
        kl += p * math.log(p / q)
    return retained, changed, max(kl, 0.0)


class RoutedRun:
    """The routing phase of the one reference loop (:func:`paging.simulate._run`): per (token,
    layer) group, build the :class:`Group`, ask the hook with the layer's cached experts, write
    the served requests' clock, rank and score, and accumulate the quality proxies.

    What is served is only known as the run goes, so the layer clock the policies read
    (``ctx.steps``) and the served ranks and scores are buffers written just before each group
    (a routing never serves more requests than the group had, so the trace's length bounds them;
    served request t carries its group's step). Clairvoyant policies are refused (the served
    requests depend on the cache), and so are rounds-mode traces with K > 1 (a routing decision
    is per (token, layer); rounds mode spreads it over K rounds)."""

    def __init__(self, trace, router: Router, policy):
        self.check(trace, router, policy)
        self.trace, self.router = trace, router
        self.n, self.L = trace.layout.n_experts, trace.layout.n_layers
        self.steps = np.array(trace.steps, dtype=np.int64)  # writable: the served clock
        self.rank = np.zeros(trace.n_requests, dtype=np.int64)
        self.token = None if trace.token is None else np.array(trace.token, dtype=np.int64)
        self.score = None if trace.score is None else np.zeros(trace.n_requests)
        self._pages = trace.pages.tolist()
        self._tsteps = trace.steps.tolist()
        self._token = trace.token.tolist() if trace.token is not None else []
        self._tscore = None if trace.score is None else trace.score.tolist()
        self.served: list[int] = []
        self.retained = self.kl = 0.0
        self.changed = self.groups = 0
        skip = router.skips(trace)
        self._skip = None if skip is None else skip.tolist()

    @staticmethod
    def check(trace, router: Router, policy) -> None:
        """Refuse what routing cannot run (one clear line), then reset the hook for ``trace``
        (the compiled path, :mod:`paging.fast.routing`, calls it too)."""
        if policy.clairvoyant:
            raise PagingError(f"{policy.name} is clairvoyant, and with routing the served "
                              "requests depend on the cache: they are not known in advance")
        if trace.n_requests and trace.token is None:
            raise PagingError(f"routing needs the (token, layer) groups of the trace; "
                              f"{trace.name} has no token column")
        if trace.expand != "groups" and trace.rank is not None and trace.n_requests \
                and int(trace.rank.max()) > 0:
            raise PagingError(f"routing decides per (token, layer) group: load {trace.name} "
                              "with expand='groups' (--expand groups)")
        router.reset(trace)

    def buffers(self) -> dict:
        """The ``steps``, ``score``, ``rank`` and ``token`` the Simulation is built with."""
        return {"steps": self.steps, "score": self.score, "rank": self.rank,
                "token": self.token}

    def choose(self, sim, lo: int, hi: int) -> list[int]:
        """The pages served for the trace's group ``lo:hi``."""
        n, step = self.n, self._tsteps[lo]
        z = step % self.L
        base = z * n
        experts = [p - base for p in self._pages[lo:hi]]
        tok = self._token[lo]
        g = Group(z, tok, experts, None if self._tscore is None else self._tscore[lo:hi],
                  None if self.trace.logits is None else self.trace.logits[tok, z], n)
        if self._skip is not None and self._skip[lo]:  # served as ranked (phase=decode)
            chosen = list(experts)
        else:
            cached = set(sim.state.cached_in_layer(z))  # O(n), not O(k)
            chosen = self.router.route(g, cached)
        if not 1 <= len(chosen) <= hi - lo or len(set(chosen)) != len(chosen) \
                or any(not 0 <= e < n for e in chosen):
            raise RuntimeError(f"routing {self.router.spec()} returned {chosen} for a group of "
                               f"{hi - lo} experts")
        r_m, c_m, k_m = quality(g, chosen)
        self.retained += r_m
        self.kl += k_m
        self.changed += c_m
        self.groups += 1
        order, w = g.order(), g.probs()
        t0 = sim.t
        for i, e in enumerate(chosen):
            t = t0 + i
            self.steps[t] = step
            self.token[t] = tok
            r = order.index(e) if (g.logits is not None or e in experts) else g.K
            self.rank[t] = r
            if self.score is not None:
                self.score[t] = w.get(e, 0.0)
            sim.set_clock(t, step, r, None if self.score is None else float(self.score[t]))
        group = [base + e for e in chosen]
        self.served.extend(group)
        return group

    def finish(self, sim, res, record: bool) -> None:
        """Add the routing fields to ``res.extra`` and, when recorded, the served sequence to
        ``res.events`` (what :func:`paging.verify.verify` replays)."""
        G = self.groups
        res.extra = dict(res.extra or {}, **{  # (beside a miss handler's and prefetcher's)
            "routing": self.router.spec(),
            "routing_note": self.router.note,
            "retained_mass": self.retained / G if G else 1.0,
            "top1_changed": self.changed / G if G else 0.0,
            "kl": self.kl / G if G else 0.0,
            "slots": self.trace.n_requests,
        })
        if record:
            res.events = dict(res.events or {},
                              served_pages=np.array(self.served, dtype=np.int64),
                              served_steps=self.steps[:sim.t].copy())
