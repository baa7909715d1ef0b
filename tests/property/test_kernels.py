"""The compiled kernels (paging.fast) reproduce the reference loop exactly.

Differential tests in the style of hypothesis's own cache tests: every built-in policy is run
by ``simulate(..., engine="reference")`` and ``engine="fast"`` on random rounds- and
groups-mode traces, for every cache size from 1 to nℓ+1, and every field of the two Results
must agree: misses, per-layer misses, collision misses, bypasses, the hit mask, the eviction
log (rows and order) and the bypassed requests.

The number of random traces per policy and mode is the hypothesis profile's (tests/conftest.py:
50 "dev", 150 "ci"); each example checks every k, so that makes thousands of comparisons.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from strategies import round_traces, scored_for, topk_traces

from paging import fast
from paging.errors import PagingError
from paging.layout import Layout
from paging.policies import LRU, POLICY_NAMES, Belady, PerLayer, make_policy
from paging.simulate import simulate
from paging.trace import from_pages, from_routing

KERNEL_POLICIES = [name for name in POLICY_NAMES if fast.has_kernel(make_policy(name))]

def assert_same(ref, got) -> None:
    for f in ("policy", "k", "trace", "requests", "misses", "collision_misses", "bypasses",
              "seed", "dist", "budget", "cost", "bytes_fetched"):
        assert getattr(got, f) == getattr(ref, f), f
    np.testing.assert_array_equal(got.per_layer_misses, ref.per_layer_misses)
    np.testing.assert_array_equal(got.page_misses, ref.page_misses)
    for f in ("hit_mask", "evictions", "bypassed"):
        a, b = getattr(ref, f), getattr(got, f)
        assert a is not None and b is not None, f
        assert a.dtype == b.dtype and a.shape == b.shape, (f, a.shape, b.shape)
        np.testing.assert_array_equal(b, a, err_msg=f)


def check_all_k(trace, name: str, seed: int) -> None:
    trace = scored_for(name, trace)
    for k in range(1, trace.layout.n_pages + 2):
        ref = simulate(trace, name, k, seed=seed, record=True, engine="reference")
        got = simulate(trace, name, k, seed=seed, record=True, engine="fast")
        assert_same(ref, got)
        plain = simulate(trace, name, k, seed=seed, engine="fast")
        assert plain.misses == ref.misses and plain.hit_mask is None
        hits = simulate(trace, name, k, seed=seed, record="hits", engine="fast")
        assert np.array_equal(hits.hit_mask, ref.hit_mask) and hits.evictions is None
        assert hits.bypassed is None


#: policies that run in the reference loop only: none. The token policies and
#: robust-token-match have kernels (paging.fast.tokens; tests/property/test_token_kernels.py
#: adds their own cases), as ARC and LeCaR do (paging.fast.adaptive;
#: tests/property/test_adaptive_kernels.py), and Score-Based and the prediction policies with
#: their default predictor (paging.fast.predictive; tests/property/test_predictive_kernels.py)
REFERENCE_ONLY: set[str] = set()


def test_every_builtin_policy_has_a_kernel():
    assert sorted(KERNEL_POLICIES) == sorted(set(POLICY_NAMES) - REFERENCE_ONLY)
    assert REFERENCE_ONLY <= set(POLICY_NAMES)


@pytest.mark.parametrize("name", KERNEL_POLICIES)
@given(trace=round_traces(), seed=st.integers(0, 2**32 - 1))
def test_kernel_equals_reference_rounds(name, trace, seed):
    check_all_k(trace, name, seed)


@pytest.mark.parametrize("name", KERNEL_POLICIES)
@given(trace=topk_traces(max_experts=6, max_layers=3, max_tokens=7), seed=st.integers(0, 99))
@example(trace=from_routing(np.array([[[0, 1, 2]], [[3, 4, 0]], [[1, 2, 3]], [[0, 4, 1]]]),
                            Layout(5, 1), expand="groups"), seed=0)
def test_kernel_equals_reference_topk(name, trace, seed):
    # groups mode: pinned groups and bypasses; rounds mode: top-K rounds
    check_all_k(trace, name, seed)


@st.composite
def weighted_runs(draw):
    """A trace with random per-page costs and sizes (ties likely: few distinct values, zeros
    included) and a byte budget from the smallest page to past the total."""
    trace = draw(st.one_of(round_traces(), topk_traces(max_experts=5, max_layers=3,
                                                       max_tokens=6)))
    P = trace.layout.n_pages
    costs = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5, 10.0, 1 / 3]),
                                   min_size=P, max_size=P)))
    sizes = np.array(draw(st.lists(st.integers(1, 4), min_size=P, max_size=P)), dtype=np.int64)
    budget = draw(st.integers(int(sizes.min()), int(sizes.sum()) + 1))
    return trace, costs, sizes, budget


@pytest.mark.parametrize("name", KERNEL_POLICIES)
@given(run=weighted_runs(), seed=st.integers(0, 99))
def test_kernel_equals_reference_weighted(name, run, seed):
    """Costs, sizes and byte budgets: several evictions per miss, pages larger than a layer's
    share (bypass), pinned groups, ties among equal credits."""
    trace, costs, sizes, budget = run
    trace = scored_for(name, trace)
    kw = dict(costs=costs, sizes=sizes, seed=seed, record=True)
    for cap in (dict(budget=budget), dict(k=max(1, budget // 2))):
        ref = simulate(trace, name, engine="reference", **cap, **kw)
        got = simulate(trace, name, engine="fast", **cap, **kw)
        assert_same(ref, got)


def test_groups_mode_examples_do_pin_and_bypass():
    """The groups-mode example above really exercises pinning: with k=2 every group of three
    must bypass at least once, under every policy."""
    tr = from_routing(np.array([[[0, 1, 2]], [[3, 4, 0]], [[1, 2, 3]], [[0, 4, 1]]]),
                      Layout(5, 1), expand="groups")
    for name in KERNEL_POLICIES:
        trn = scored_for(name, tr)
        got = simulate(trn, name, 2, record=True, engine="fast")
        assert got.bypasses >= 4, name
        assert_same(simulate(trn, name, 2, record=True, engine="reference"), got)


def test_marking_predraw_equals_sequential_draws():
    """The kernel pre-draws rng.random(n); a Generator yields the same doubles one by one."""
    a = fast.marking_draws(12345, 1000)
    rng = np.random.default_rng(12345)
    b = np.array([rng.random() for _ in range(1000)])
    np.testing.assert_array_equal(a, b)


def test_longer_traces_agree():
    """Longer traces than hypothesis draws (phases, many evictions), every policy."""
    rng = np.random.default_rng(7)
    lay = Layout(6, 4)
    pages = (np.arange(2000) % 4) * 6 + rng.integers(0, 6, 2000)
    tr = from_pages(pages, lay)
    table = np.argsort(rng.random((150, 4, 6)), axis=2)[:, :, :3]
    grp = from_routing(table, lay, expand="groups")
    for name in KERNEL_POLICIES:
        for trace in (scored_for(name, tr), scored_for(name, grp)):
            for k in (1, 3, 7, 12, 24, 10**6):  # k above nℓ never evicts
                assert_same(simulate(trace, name, k, seed=3, record=True, engine="reference"),
                            simulate(trace, name, k, seed=3, record=True, engine="fast"))


class MyLRU(LRU):
    """A user subclass: it may change any hook, so it must run in the reference loop."""

    def evict_key(self, t, page):
        return self.last[page]  # evicts the most recent page instead


def test_exact_type_checks():
    lay = Layout(3, 2)
    tr = from_pages([0, 3, 1, 4, 2, 5, 0, 3], lay)
    assert fast.run(tr, MyLRU(), 2) is None
    assert fast.run(tr, PerLayer(MyLRU), 2) is None
    assert fast.run(tr, PerLayer(Belady), 2) is not None
    assert fast.run(tr, LRU(), 2) is not None
    # the subclass really differs, and simulate() falls back to the reference for it
    mine = simulate(tr, MyLRU(), 2)
    assert mine.misses == simulate(tr, MyLRU(), 2, engine="reference").misses
    with pytest.raises(PagingError, match="no compiled kernel"):
        simulate(tr, MyLRU(), 2, engine="fast")


@pytest.mark.parametrize("name", ["greedy-dual", "landlord", "gdsf"])
def test_a_hit_can_lower_a_credit(name):
    """Found by hypothesis: in groups mode a pinned page of smallest credit forces a victim of
    larger credit (L jumps), the pinned page goes later at a smaller L (L falls), and a hit then
    gets a credit below its old one. The kernel's heap must move the page up, not only down:
    at request 10 the reference evicts page 2, which a sift-down-only heap got wrong (page 0)."""
    from paging.trace import Trace

    tr = Trace(Layout(4, 2), np.array([0, 1, 4, 5, 1, 2, 4, 5, 0, 2, 4, 5]),
               np.repeat(np.arange(6), 2), "hit-lowers-credit",
               token=np.repeat(np.arange(3), 4), rank=np.tile([0, 1], 6), expand="groups",
               meta={"top_k": 2, "n_tokens": 3})
    costs = np.array([0.5, 0, 0, 0, 0, 1.0, 0, 0])
    sizes = np.array([2, 3, 1, 1, 1, 1, 1, 1])
    kw = dict(costs=costs, sizes=sizes, budget=4, record=True)
    ref = simulate(tr, name, engine="reference", **kw)
    assert_same(ref, simulate(tr, name, engine="fast", **kw))
    if name == "landlord":
        assert ref.evictions.tolist() == [[4, 4], [4, 0], [5, 5], [6, 1], [8, 4], [10, 2]]
