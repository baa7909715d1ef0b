"""Edges where the compiled kernels left the reference loop (a review's differential run):
a byte budget near 2^63 wrapped the kernels' room test (they kept three pages of 2^62 bytes in a
budget of 2^63 - 1), ``bytes_fetched`` wrapped in int64, and Score-Based with a miss handler or
a prefetcher on a trace without gate scores was a numba TypingError instead of the reference's
error."""

from __future__ import annotations

import numpy as np
import pytest

from paging import simulate
from paging.errors import INT64_MAX, PagingError
from paging.layout import Layout
from paging.trace import from_routing

TR = from_routing(np.array([[[0, 1]], [[2, 0]], [[1, 2]], [[0, 2]], [[1, 0]]]), Layout(3, 1),
                  expand="groups")


def test_a_budget_whose_bytes_plus_one_page_pass_int64_is_refused():
    with pytest.raises(PagingError, match=r"a budget of 9223372036854775807 bytes with pages of "
                                          r"up to 2305843009213693952 bytes: the bytes cached "
                                          r"plus one page must fit in int64"):
        simulate(TR, "lru", budget=INT64_MAX, sizes=np.full(3, 2 ** 61))


@pytest.mark.parametrize("policy", ["lru", "landlord", "token-decay", "arc", "marking"])
def test_at_the_largest_budget_allowed_the_engines_agree_and_bytes_are_exact(policy):
    """Budget 2^63 - 1 - 2^61 holds two pages of 2^61 bytes: by hand, groups {0,1} {2,0}
    {1,2} {0,2} {1,0} with two slots miss 0, 1, 2 (evicting 1: LRU), hit 0, ...; every
    engine makes the same decisions, and 6 misses fetch 6·2^61 bytes, beyond int64."""
    runs = [simulate(TR, policy, budget=INT64_MAX - 2 ** 61, sizes=np.full(3, 2 ** 61),
                     record=True, engine=e) for e in ("reference", "fast")]
    ref, fast = runs
    assert np.array_equal(ref.hit_mask, fast.hit_mask)
    assert np.array_equal(ref.evictions, fast.evictions)
    for r in runs:
        assert r.bytes_fetched == r.misses * 2 ** 61 > INT64_MAX
    if policy == "lru":
        assert ref.hit_mask.astype(int).tolist() == [0, 0, 0, 1, 0, 1, 0, 1, 0, 1]
        assert ref.evictions.tolist() == [[2, 1], [4, 0], [6, 1], [8, 2]]


@pytest.mark.parametrize("policy", ["score-based", "score-based-dist"])
@pytest.mark.parametrize("extra", [{"miss": "substitute"}, {"miss": "drop:rank=1"},
                                   {"prefetch": "oracle"}])
def test_score_based_without_scores_is_the_references_error_on_every_engine(policy, extra):
    if "prefetch" in extra:
        from paging.predict.prefetch import Prefetcher, make_prefetch_predictor, make_strategy

        extra = {"prefetch": Prefetcher(make_prefetch_predictor("oracle", None),
                                        make_strategy(None))}
    for engine in ("reference", "auto"):
        with pytest.raises(PagingError, match=f"^{policy} reads gate scores and the trace has "
                                              "none$"):
            simulate(TR, policy, 2, engine=engine, **extra)
