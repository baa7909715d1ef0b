"""The one registry type (paging.registry) behind every spec-built kind: one grammar, the same
messages, the names every CLI help and error lists."""

from __future__ import annotations

import pytest

from paging.errors import PagingError
from paging.miss import MISS_HANDLERS, Drop, make_miss
from paging.predict import PREDICTOR_REGISTRY, make_predictor
from paging.predict.prefetch import PREFETCH_PREDICTORS, STRATEGY_REGISTRY, TopK, make_strategy
from paging.registry import Registry
from paging.routing import ROUTING, MaxRank, make_router


def test_registry_builds_refuses_and_lists():
    reg = Registry("widget")
    reg.add("plain", lambda opts, what: ("plain",))
    reg.add("sized", lambda opts, what, scale=1: ("sized", int(opts.pop("n")) * scale), "n=N")
    assert reg.make("plain") == ("plain",) and reg.make("Sized:n=3", scale=2) == ("sized", 6)
    assert reg.names == ("plain", "sized") and reg.usage() == "plain, sized:n=N"
    with pytest.raises(PagingError, match=r"^unknown widget 'nope'; expected one of plain, sized$"):
        reg.make("nope")
    with pytest.raises(PagingError, match=r"widget 'plain:x=1': unknown option x; expected no "
                                          "options"):
        reg.make("plain:x=1")
    with pytest.raises(PagingError, match="is not key=value"):
        reg.make("sized:n")
    with pytest.raises(PagingError, match="already registered"):
        reg.add("plain", lambda opts, what: None)


def test_every_spec_kind_is_one_registry():
    assert PREFETCH_PREDICTORS.names == ("oracle", "previous-token", "transition", "frequency")
    assert STRATEGY_REGISTRY.names == ("topk", "percentile")
    assert MISS_HANDLERS.names == ("fetch", "fetch-lowest-bit", "fetch-priority", "drop",
                                   "substitute")
    assert ROUTING.names == ("standard", "pruning", "max-rank", "cumsum", "cache-prior")
    assert PREDICTOR_REGISTRY.names[:2] == ("oracle", "frequency")
    # the same grammar and the same leftover rule everywhere
    assert isinstance(make_strategy("topk:overfetch=2"), TopK)
    assert isinstance(make_miss("drop:rank=1"), Drop) and make_miss("fetch") is None
    assert isinstance(make_router("max-rank:j=1,m=3"), MaxRank) and make_router("standard") is None
    assert make_predictor("oracle:eta=0.5,seed=2").name == "oracle"
    for make, spec in ((make_strategy, "topk:q=1"), (make_miss, "substitute:q=1"),
                       (make_router, "max-rank:q=1")):
        with pytest.raises(PagingError, match="unknown option q"):
            make(spec)


# -- canonical specs read back (a printed spec is what ran) ------------------------------------
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _unit(lo_open=True):
    return st.floats(0.0, 1.0, exclude_min=lo_open, allow_nan=False)


@given(tau=_unit(), lam=st.floats(0.0, 1e12), prec=_unit(), rec=_unit(lo_open=False),
       over=st.floats(1.0, 1e12), p=st.floats(0.0, 100.0, exclude_min=True, exclude_max=True),
       score=st.floats(0.0, 1e12), eta=st.floats(0.0, 1e12),
       cuts=st.lists(st.floats(0.0, 1.0), min_size=2, max_size=2, unique=True))
def test_a_canonical_spec_parses_back_to_the_same_numbers(tau, lam, prec, rec, over, p, score,
                                                           eta, cuts):
    """Every kind's printed spec (the JSON ``routing``, ``miss`` and ``prefetch`` fields, a
    predictor policy's ``policy`` name) read back gives the object that ran: ``{x:g}`` kept 6
    digits, so ``cumsum:tau=0.1234567`` printed ``tau=0.123457``."""
    from paging.policies import make_policy
    from paging.predict.prefetch import make_prefetch_predictor

    c1, c2 = sorted(cuts, reverse=True)
    for make, spec, attr, want in (
            (make_router, f"cumsum:tau={tau!r}", "tau", tau),
            (make_router, f"cache-prior:lambda={lam!r}", "lam", lam),
            (make_prefetch_predictor, f"oracle:precision={prec!r},recall={rec!r}", "precision",
             prec),
            (make_prefetch_predictor, f"oracle:precision={prec!r},recall={rec!r}", "recall", rec),
            (make_strategy, f"topk:overfetch={over!r}", "overfetch", over),
            (make_strategy, f"percentile:p={p!r}", "p", p),
            (make_miss, f"drop:score={score!r}", "score", score),
            (make_miss, f"fetch-priority:levels=bf16/int8/int4,cuts={c1!r}/{c2!r}", "cuts",
             (c1, c2)),
            (make_predictor, f"oracle:eta={eta!r},seed=3", "eta", eta)):
        obj = make(spec)
        text = obj.spec() if callable(obj.spec) else obj.spec
        again = make(text)
        assert getattr(again, attr) == getattr(obj, attr) == want, (spec, text)
        assert (again.spec() if callable(again.spec) else again.spec) == text
    pol = make_policy(f"blind-oracle:oracle:eta={eta!r},seed=3")
    assert make_policy(pol.name).name == pol.name
    assert make_policy(pol.name).predictor.eta == eta


def test_canonical_numbers_keep_their_short_form():
    """The spec printer changes no number that ``{x:g}`` printed exactly (the golden outputs)."""
    assert make_miss("drop:score=0.25").spec() == "drop:score=0.25"
    assert make_router("cumsum:tau=1").spec() == "cumsum:tau=1,j=1"
    assert make_strategy("topk:overfetch=1e6").spec() == "topk:overfetch=1e+06"
    assert make_router("cumsum:tau=0.1234567").spec() == "cumsum:tau=0.1234567,j=1"
    assert make_predictor("oracle:eta=1234567").spec == "oracle:eta=1234567,seed=0"


def test_every_policy_name_reads_back():
    """A run's JSON ``policy`` (the policy's name) and ``paging policies --json``'s ``name``
    give the same policy back, for every registered name and spelled specs."""
    from paging.policies import MODEL_POLICIES, POLICY_NAMES, make_policy

    for spec in (*POLICY_NAMES, *MODEL_POLICIES, " LRU-Dist ", "Blind-Oracle:Frequency",
                 "robust:LFU , lru,margin=K", "lmarker-dist:oracle:eta=2.5",
                 "robust:lru,predictive-marker:oracle:eta=0.1234567,seed=4,margin=3"):
        name = make_policy(spec).name
        assert make_policy(name).name == name, spec


def test_a_robust_component_model_file_keeps_its_case(tmp_path):
    # robust:A,B lower-cased its whole spec, so flashmoe:model=Dir/FM.npz inside it named a
    # file that does not exist (dir/fm.npz); spec_key keeps the path's case inside it too
    import shutil
    from pathlib import Path

    import paging.learned
    from paging.policies import make_policy, spec_key

    model = tmp_path / "Models" / "FM.npz"
    model.parent.mkdir()
    shutil.copy(Path(paging.learned.__file__).parent / "flashmoe_32x8.npz", model)
    pol = make_policy(f"robust:flashmoe:model={model},lru")
    assert pol.name == f"robust:flashmoe:model={model},lru"
    assert spec_key(f"ROBUST:FlashMoE:model={model},LRU,margin=K") == \
        f"robust:flashmoe:model={model},lru,margin=k"
