"""The policy registry: lower-case names -> policy factories.

Every base policy ``name`` also exists as ``name-dist`` (:class:`PerLayer`): lru, fifo, lfu, fwf,
marking, llru, llru-latest (Definition 2's D read so that the current layer goes first),
least-stale, least-stale-upcoming, least-stale-layer, fld, fld-cyclic, belady, the weighted
greedy-dual, landlord, gdsf and layered-landlord, score-based and lhu (SpecMD App. B), the
adaptive arc and lecar, the prediction-based blind-oracle, predictive-marker, lmarker and
robust-blind-oracle, the designed token-hazard, token-decay and token-match (issue 11),
robust-token-match (issue 24; and the generic ``robust:A,B``), and lru-dist, ...,
belady-dist (= OPT-DIST), ..., robust-blind-oracle-dist.
"""

from __future__ import annotations

from collections.abc import Callable

from paging.errors import PagingError
from paging.offline.belady import Belady
from paging.options import parse_spec
from paging.policies import robust as robust_module
from paging.policies.adaptive import ARC, LeCaR
from paging.policies.base import CacheView, Context, Policy, PriorityPolicy
from paging.policies.classic import FIFO, FWF, LFU, LRU, Marking
from paging.policies.decay import TokenDecay
from paging.policies.dist import PerLayer
from paging.policies.hazard import TokenHazard
from paging.policies.layered import (
    FLD,
    LLRU,
    FLDCyclic,
    LeastStale,
    LeastStaleLayer,
    LeastStaleUpcoming,
    LLRULatest,
)
from paging.policies.learned import FlashMoE
from paging.policies.match import TokenMatch
from paging.policies.predictive import (
    BlindOracle,
    LMarker,
    PredictiveMarker,
    RobustBlindOracle,
)
from paging.policies.robust import Robust, RobustTokenMatch, parse_robust
from paging.policies.scored import LHU, ScoreBased
from paging.policies.weighted import GDSF, GreedyDual, Landlord, LayeredLandlord


def _discover() -> list[type]:
    """The policy classes of the package's modules (and Belady's, in :mod:`paging.offline`):
    every :class:`Policy` subclass that declares its own ``name`` and is ``registered``, in
    ``order``, then module and definition order. Adding a policy is adding its class to a
    module of :mod:`paging.policies`; nothing here lists it."""
    import importlib
    import pkgutil

    names = sorted(m.name for m in pkgutil.iter_modules(__path__))
    modules = [importlib.import_module(f"{__name__}.{m}") for m in names]
    modules.append(importlib.import_module("paging.offline.belady"))
    found = []
    for mod in modules:
        for obj in vars(mod).values():
            if (isinstance(obj, type) and issubclass(obj, Policy) and obj is not Policy
                    and obj.__module__ == mod.__name__ and "name" in vars(obj)
                    and obj.registered):
                found.append(obj)
    return sorted(found, key=lambda cls: cls.order)


_CLASSES = _discover()

BASE_POLICIES: dict[str, Callable[[], Policy]] = {
    cls.name: cls for cls in _CLASSES if not getattr(cls, "needs_model", False)}

REGISTRY: dict[str, Callable[[], Policy]] = dict(BASE_POLICIES)
for _name, _cls in BASE_POLICIES.items():
    REGISTRY[f"{_name}-dist"] = (lambda c=_cls: PerLayer(c))

POLICY_NAMES: tuple[str, ...] = tuple(REGISTRY)

#: policies that need a trained model for the trace's layout (``flashmoe``: the shipped model
#: for the layout, or ``flashmoe:model=FILE``). Accepted by :func:`make_policy` and listed by
#: ``paging policies``, but kept out of ``POLICY_NAMES``: the generic contract tests and the
#: ledger draw arbitrary layouts, for which no model exists (a model for another layout is
#: refused); tests/unit/test_learned.py runs the contract checks on Mixtral's layout.
MODEL_POLICIES: dict[str, Callable[..., Policy]] = {
    cls.name: cls for cls in _CLASSES if getattr(cls, "needs_model", False)}


def _make_model_policy(key: str, spec: str, name: str) -> Policy:
    """``flashmoe`` or ``flashmoe:model=FILE`` (the model file is read at the run's reset)."""
    if not spec:
        return MODEL_POLICIES[key]()
    try:  # the package's one spec grammar
        _, opts = parse_spec(f"{key}:{spec}", "policy")
    except PagingError:
        opts = {}
    if set(opts) != {"model"}:
        raise PagingError(f"policy {name!r}: expected {key}:model=FILE, got option {spec!r}")
    return MODEL_POLICIES[key](model=opts["model"])


def spec_key(name: str) -> str:
    """``name`` in lower case, but for a model policy's ``model=FILE``: a path keeps its case
    (lower-casing the whole spec turned ``flashmoe:model=Models/FM.npz`` into a file that does
    not exist). What the sweeps store and compare; :func:`make_policy` itself ignores case."""
    text = str(name).strip()
    key, colon, rest = text.partition(":")
    if key.strip().lower() in MODEL_POLICIES:
        return key.strip().lower() + colon + rest
    if colon and key.strip().lower() in ("robust", "robust-dist"):  # (its components alike)
        return key.strip().lower() + ":" + ",".join(spec_key(part) for part in rest.split(","))
    return text.lower()


def make_policy(name: str) -> Policy:
    """A fresh policy instance for a registered name (case-insensitive).

    Policies that take a predictor (``needs_predictor``: blind-oracle, predictive-marker,
    lmarker, robust-blind-oracle and their -dist variants) accept one after a colon:
    ``NAME:PREDICTOR[:key=value,...]``, e.g. ``predictive-marker:oracle:eta=0.5,seed=1`` or
    ``lmarker-dist:frequency`` (:func:`paging.predict.make_predictor`). Without one they use
    their default (``frequency``, online). Every other name takes no options.
    """
    key = str(name).strip().lower()
    key, colon, spec = key.partition(":")
    if key in MODEL_POLICIES:
        return _make_model_policy(key, str(name).strip().partition(":")[2], name)
    if key in ("robust", "robust-dist"):  # robust:A,B (paging.policies.robust)
        if not colon:
            raise PagingError(f"policy {name!r}: expected robust:A,B, e.g. robust:token-match,lru")
        spec = str(name).strip().partition(":")[2]  # (a component's model=FILE keeps its case)
        if key == "robust-dist":
            parse_robust(spec, name)
            return PerLayer(lambda: parse_robust(spec, name))
        return parse_robust(spec, name)
    if colon:
        dist = key.endswith("-dist")
        base = key[:-len("-dist")] if dist else key
        cls = BASE_POLICIES.get(base)
        if cls is None or not getattr(cls, "needs_predictor", False):
            takers = ", ".join(n for n, c in BASE_POLICIES.items()
                               if getattr(c, "needs_predictor", False))
            raise PagingError(f"policy {key!r} takes no predictor option ({name!r}); only "
                              f"{takers} (and their -dist variants) do")
        cls(predictor=spec)  # validates the spec: one-line PagingError
        def factory():
            return cls(predictor=spec)

        return PerLayer(factory) if dist else factory()
    if key not in REGISTRY:
        raise PagingError(f"unknown policy {name!r}; expected one of "
                          f"{', '.join(POLICY_NAMES + tuple(MODEL_POLICIES))}")
    return REGISTRY[key]()


robust_module.REGISTRY_MAKE = make_policy  # robust:A,B names its components (see there)


def policy_names(*, randomized: bool | None = None, clairvoyant: bool | None = None,
                 needs_scores: bool | None = None) -> tuple[str, ...]:
    """Registered names, in registry order, filtered by the policies' flags (``None``: either).

    ``policy_names(randomized=False, clairvoyant=False)`` are the deterministic online policies
    (Theorem 2, Sleator-Tarjan); ``policy_names(clairvoyant=False)`` the online ones (Yao's
    principle, Theorem 4; the online-ness contract); ``policy_names(randomized=True)`` those that
    draw from the run's generator; ``needs_scores=False`` leaves out those that read gate scores
    (Score-Based), which the synthetic sequences of the theorems do not carry. Instantiates each
    policy once to read its flags.
    """
    out = []
    for name in POLICY_NAMES:
        pol = make_policy(name)
        if randomized is not None and pol.randomized != randomized:
            continue
        if clairvoyant is not None and pol.clairvoyant != clairvoyant:
            continue
        if needs_scores is not None and bool(pol.needs_scores) != needs_scores:
            continue
        out.append(name)
    return tuple(out)


def register(name: str, factory: Callable[[], Policy], *, dist: bool = True) -> None:
    """Add a policy (and, by default, its ``-dist`` variant) to the registry, e.g. from a
    notebook. Names must be new."""
    key = name.lower()
    if key in REGISTRY:
        raise PagingError(f"policy {name!r} is already registered")
    REGISTRY[key] = factory
    if dist:
        REGISTRY[f"{key}-dist"] = lambda: PerLayer(factory)
    global POLICY_NAMES
    POLICY_NAMES = tuple(REGISTRY)


__all__ = ["BASE_POLICIES", "REGISTRY", "POLICY_NAMES", "MODEL_POLICIES", "make_policy",
           "policy_names", "register", "spec_key",
           "Policy", "PriorityPolicy", "CacheView", "Context", "PerLayer", "LRU", "FIFO", "LFU",
           "FWF", "Marking", "LLRU", "LLRULatest", "LeastStale", "LeastStaleUpcoming",
           "LeastStaleLayer", "FLD",
           "FLDCyclic", "Belady", "GreedyDual", "Landlord",
           "GDSF", "LayeredLandlord", "ScoreBased", "LHU", "ARC", "LeCaR", "BlindOracle",
           "PredictiveMarker", "LMarker", "RobustBlindOracle", "TokenHazard", "TokenDecay",
           "TokenMatch", "FlashMoE", "Robust", "RobustTokenMatch"]
