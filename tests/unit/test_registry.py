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
