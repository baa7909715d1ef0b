"""Predictors of next arrivals, for paging with predictions (Lykouris & Vassilvitskii 2018), in
this module; the prefetch predictors of SpecMD live in :mod:`paging.predict.prefetch`.

A predictor gives, for request t of page p, a predicted time of p's next request after t (a
float; ``len(trace)`` or more means "not again"). The interface is deliberately minimal:

* ``reset(ctx)`` with the run's :class:`~paging.policies.base.Context` (an online predictor
  reads only ``ctx.steps``/``ctx.n_requests``/``ctx.capacity``; a clairvoyant one may read
  ``ctx.next_use``, which the simulator hands only to policies flagged ``clairvoyant``);
* ``predict(t, page) -> float``, called once per request the policy sees, in increasing t; an
  online predictor may update its state from (t, page) but never looks past t.

A learned predictor (another branch) subclasses :class:`Predictor` and is added with
:func:`register_predictor`. Predictors are named by a spec string ``NAME[:k=v,...]``, e.g.
``oracle:eta=0.5,seed=1`` or ``frequency`` (:func:`make_predictor`); bad specs raise a
one-line :class:`~paging.errors.PagingError`.

References: T. Lykouris and S. Vassilvitskii, "Competitive caching with machine learned
advice", ICML 2018 / J. ACM 68(4), 2021, doi:10.1145/3447579 (the model and the ℓ1 error η).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from paging.errors import PagingError
from paging.fast.common import frozen
from paging.fast.heaps import BELADY, chain_labels, heap_kernel, heap_state
from paging.options import spec_number
from paging.registry import Registry

__all__ = ["Predictor", "OraclePredictor", "FrequencyPredictor", "PREDICTORS", "make_predictor",
           "register_predictor", "opt_from_next_use"]


class Predictor:
    """Base class: ``reset(ctx)``, ``predict(t, page) -> float``; ``clairvoyant`` predictors
    read ``ctx.next_use`` (the policy using them is then clairvoyant too)."""

    name = "predictor"
    clairvoyant = False

    def reset(self, ctx) -> None:
        self.ctx = ctx

    def predict(self, t: int, page: int) -> float:
        raise NotImplementedError

    @property
    def spec(self) -> str:
        return self.name


def opt_from_next_use(next_use: np.ndarray, k: int) -> int:
    """Belady's (OPT's) miss count with a cache of ``k`` pages, from the next-use array alone.

    Request t and ``next_use[t]`` belong to the same page, so the chains of ``next_use`` are
    the pages; relabelling them 0..m-1 gives a single-layer trace that the Belady kernel runs
    (:func:`paging.fast.heaps.heap_kernel`, the one behind ``simulate(trace, "belady", k)``).
    Cost: O(N) (a compiled pass to label the chains) plus the kernel.
    """
    nu = np.ascontiguousarray(next_use, dtype=np.int64)
    N = nu.size
    if N == 0:
        return 0
    label = np.full(N, -1, dtype=np.int64)
    has_prev = np.zeros(N, dtype=bool)
    has_prev[nu[nu < N]] = True
    firsts = np.flatnonzero(~has_prev)
    label[firsts] = np.arange(firsts.size)
    m = int(firsts.size)
    if k >= m:
        return m
    pages = chain_labels(nu, label)
    caps = np.array([int(k)], np.int64)
    # read-only inputs, as every run's (paging.fast.common.frozen: one compiled signature)
    return int(heap_kernel(frozen(pages), frozen(np.arange(N, dtype=np.int64)), frozen(nu),
                           frozen(np.ones(m, np.int64)), m, 1,
                           caps, False, BELADY, 0, heap_state(m, 1, caps, False, N + 1))[0])


def marker_k(capacity: int, sizes, n_pages: int) -> int:
    """The k of the markers' H_k: the partition's capacity in pages, at most the pages there
    are (a larger cache never evicts, so H_k is never read then). Under a byte budget
    (``sizes`` given) the capacity counts bytes, not pages: k is how many of the smallest pages
    fit. (A byte budget was read as a page count before, so an 8 GB budget summed 8e9 terms.)"""
    k = int(capacity)
    if sizes is not None and len(sizes):
        k //= max(int(np.min(sizes)), 1)
    return max(min(k, int(n_pages)), 1)


class OraclePredictor(Predictor):
    """The true next arrival plus seeded additive noise with total ℓ1 error η·OPT.

    Noise model: z_t ~ N(0, 1) i.i.d. from ``numpy.random.default_rng(seed)`` (one draw per
    request, drawn at reset), scaled so that Σ_t |pred_t − next_t| = η·OPT exactly, where
    ``next_t = ctx.next_use[t]`` (N when the page is not requested again) and OPT is Belady's
    miss count at the policy's capacity in pages (:func:`opt_from_next_use`; under a byte
    budget, the pages it holds, :func:`marker_k`: exact when the
    pages weigh the same): η is Lykouris &
    Vassilvitskii's error η_ℓ1 divided by OPT. η = 0 gives the true next arrivals. Reading for
    DIST variants: each layer's sub-policy normalises by OPT of the whole trace at its layer's
    share. Clairvoyant (reads ``ctx.next_use``; asked about a page at another page's request, a
    substitute serving it (:mod:`paging.miss`), it predicts that page's own next request after t,
    from ``ctx.pages``, with request t's error). Cost: O(N) at reset, O(1) per request.
    """

    name = "oracle"
    clairvoyant = True

    def __init__(self, eta: float = 0.0, seed: int = 0):
        self.eta = float(eta)
        self.seed = int(seed)
        if not (self.eta >= 0.0) or self.eta == float("inf"):
            raise PagingError(f"predictor oracle: eta must be a finite number >= 0, got {eta!r}")
        if self.seed < 0:  # (numpy's default_rng refused it at the run's reset: a traceback)
            raise PagingError(f"predictor oracle: seed must be an integer >= 0, got {seed!r}")

    @property
    def spec(self) -> str:
        return f"oracle:eta={spec_number(self.eta)},seed={self.seed}"

    def reset(self, ctx) -> None:
        super().reset(ctx)
        #: every request's prediction (float64; what the compiled kernels read,
        #: :mod:`paging.fast.predictive`)
        self.values = self.predictions(ctx)
        self._pred = None
        self._where: dict[int, np.ndarray] = {}  # a page's requests (for substitutes)

    @property
    def pred(self) -> list[float]:
        """Every request's prediction as a list (what :meth:`predict` reads), made on first
        use: a compiled run reads :attr:`values` and never pays for the list."""
        if self._pred is None:
            self._pred = self.values.tolist()
        return self._pred

    def predictions(self, ctx) -> np.ndarray:
        """Every request's prediction (float64, one per request) for the context ``ctx``;
        sets ``opt`` (OPT at ``ctx.capacity``, 0 when η = 0)."""
        nu = np.asarray(ctx.next_use, dtype=np.float64)
        self.opt = 0
        if self.eta > 0 and nu.size:
            # a byte budget counts the pages it holds (Belady at the budget read as a page
            # count never evicted: OPT was the number of distinct pages, and η shrank with it)
            k = marker_k(ctx.capacity, ctx.sizes if ctx.in_bytes else None, ctx.layout.n_pages)
            self.opt = opt_from_next_use(ctx.next_use, k)
            z = np.random.default_rng(self.seed).standard_normal(nu.size)
            nu = nu + z * (self.eta * self.opt / np.abs(z).sum())
        return nu

    def predict(self, t: int, page: int) -> float:
        pred = self._pred
        pred = self.pred if pred is None else pred
        pages = self.ctx.pages
        if pages is not None and int(pages[t]) != page:
            # asked at another page's request (a substitute serving it, paging.miss): the
            # page's own next request after t, with request t's error
            return self._next_after(t, page) + (pred[t] - float(self.ctx.next_use[t]))
        return pred[t]

    def _next_after(self, t: int, page: int) -> float:
        where = self._where.get(page)
        if where is None:
            where = self._where[page] = np.flatnonzero(np.asarray(self.ctx.pages) == page)
        i = int(np.searchsorted(where, t, side="right"))
        return float(where[i]) if i < where.size else float(self.ctx.n_requests)


class FrequencyPredictor(Predictor):
    """Online: page p's empirical rate so far, r = count_p(t) / (t + 1) (this request counted),
    predicts its next arrival at t + 1/r. The stationary i.i.d. reading of a request stream
    (an independent reference model); it never looks past t. Cost: O(1) per request."""

    name = "frequency"

    def reset(self, ctx) -> None:
        super().reset(ctx)
        self.count: dict[int, int] = {}

    def predict(self, t: int, page: int) -> float:
        c = self.count.get(page, 0) + 1
        self.count[page] = c
        return t + (t + 1) / c


def _typed(key: str, factory: Callable[..., Predictor], kinds: dict[str, Callable]):
    """A :class:`~paging.registry.Registry` builder of predictor ``key``: each option converted
    by its type."""
    def build(opts, what):
        kwargs = {}
        for k in list(opts):
            if k not in kinds:
                allowed = ", ".join(kinds) or "none"
                raise PagingError(f"predictor {key}: unknown option {k!r} (allowed: {allowed})")
            v = opts.pop(k)
            try:
                kwargs[k] = kinds[k](v)
            except ValueError:
                raise PagingError(f"predictor {key}: option {k}={v!r} is not a valid "
                                  f"{kinds[k].__name__}") from None
        return factory(**kwargs)
    return build


#: the next-arrival predictors (``NAME:PREDICTOR`` policy specs; a
#: :class:`paging.registry.Registry`)
PREDICTOR_REGISTRY = Registry("predictor")
PREDICTOR_REGISTRY.add("oracle", _typed("oracle", OraclePredictor, {"eta": float, "seed": int}),
                       "eta=E, seed=S")
PREDICTOR_REGISTRY.add("frequency", _typed("frequency", FrequencyPredictor, {}))
#: name -> factory (every registered predictor)
PREDICTORS: dict[str, Callable[..., Predictor]] = {"oracle": OraclePredictor,
                                                   "frequency": FrequencyPredictor}


def register_predictor(name: str, factory: Callable[..., Predictor],
                       options: dict[str, Callable] | None = None) -> None:
    """Add a predictor (e.g. a learned one) under a new lower-case ``name``; ``options`` maps
    each accepted option to its type."""
    kinds = dict(options or {})
    PREDICTOR_REGISTRY.add(name, _typed(name.lower(), factory, kinds),
                           ", ".join(kinds) or "no options")
    PREDICTORS[name.lower()] = factory


def make_predictor(spec: str | Predictor | None) -> Predictor:
    """A fresh predictor from ``NAME[:key=value,...]`` (or an instance, returned as is).

    ``oracle[:eta=E,seed=S]`` (E >= 0, default 0; S default 0) and ``frequency``.
    """
    if isinstance(spec, Predictor):
        return spec
    return PREDICTOR_REGISTRY.make("frequency" if spec is None else str(spec).strip())
