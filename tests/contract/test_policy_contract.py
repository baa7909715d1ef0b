"""The contract every registered policy must honour (STYLE.md: one shared contract suite).

For each policy in the registry and each engine: the run is feasible (independent verifier),
the same seed gives the same run, a reset policy reused on a new trace equals a fresh one, and
a non-clairvoyant policy is online (its decisions up to t do not depend on requests after t).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import round_traces, scored_for, topk_traces

from paging import Layout, from_pages, simulate
from paging.policies import POLICY_NAMES, make_policy, policy_names
from paging.trace import Trace
from paging.verify import verify

ENGINES = ["reference", "auto"]


def _same(a, b):
    return (a.misses == b.misses and a.collision_misses == b.collision_misses
            and a.bypasses == b.bypasses
            and np.array_equal(a.per_layer_misses, b.per_layer_misses)
            and np.array_equal(a.hit_mask, b.hit_mask)
            and np.array_equal(a.evictions, b.evictions))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", POLICY_NAMES)
@given(trace=st.one_of(round_traces(), topk_traces()), kfrac=st.floats(0, 1.2),
       seed=st.integers(0, 2**32 - 1))
def test_feasible_and_deterministic(name, engine, trace, kfrac, seed):
    trace = scored_for(name, trace)
    k = max(1, int(kfrac * trace.layout.n_pages))
    a = simulate(trace, name, k, seed=seed, record=True, engine=engine)
    verify(trace, a)
    b = simulate(trace, name, k, seed=seed, record=True, engine=engine)
    assert _same(a, b)
    assert a.misses >= len(np.unique(trace.pages))  # every first request is a miss


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", POLICY_NAMES)
@given(trace=st.one_of(round_traces(), topk_traces()), data=st.data(),
       seed=st.integers(0, 2**32 - 1))
def test_weighted_runs_are_feasible(name, engine, trace, data, seed):
    """With random costs, sizes and a byte budget (or k pages with sizes), the verifier accepts
    the run, recomputes its cost and bytes, and the same seed gives the same run."""
    trace = scored_for(name, trace)
    P = trace.layout.n_pages
    costs = np.array(data.draw(st.lists(st.floats(0, 100), min_size=P, max_size=P)))
    sizes = np.array(data.draw(st.lists(st.integers(1, 5), min_size=P, max_size=P)))
    by_budget = data.draw(st.booleans())
    cap = (dict(budget=data.draw(st.integers(int(sizes.min()), int(sizes.sum()))))
           if by_budget else dict(k=data.draw(st.integers(1, P + 1))))
    a = simulate(trace, name, costs=costs, sizes=sizes, seed=seed, record=True, engine=engine,
                 **cap)
    verify(trace, a, costs=costs, sizes=sizes)
    b = simulate(trace, name, costs=costs, sizes=sizes, seed=seed, record=True, engine=engine,
                 **cap)
    assert _same(a, b) and a.cost == b.cost and a.bytes_fetched == b.bytes_fetched


@pytest.mark.parametrize("name", POLICY_NAMES)
@given(t1=round_traces(), t2=st.one_of(round_traces(), topk_traces()), k=st.integers(1, 8))
def test_reset_and_reuse_equals_fresh(name, t1, t2, k):
    t1, t2 = scored_for(name, t1), scored_for(name, t2)
    pol = make_policy(name)
    simulate(t1, pol, k, seed=3, engine="reference")
    reused = simulate(t2, pol, k, seed=5, record=True, engine="reference")
    fresh = simulate(t2, make_policy(name), k, seed=5, record=True, engine="reference")
    assert _same(reused, fresh)


ONLINE = policy_names(clairvoyant=False)


def same_decisions_before(name: str, a: Trace, b: Trace, cut: int, k: int,
                          engine: str = "auto") -> bool:
    """Whether ``name`` makes the same decisions (hits and evictions) on requests 0..cut-1 of
    two traces that agree up to ``cut``."""
    ra = simulate(scored_for(name, a), name, k, seed=1, record=True, engine=engine)
    rb = simulate(scored_for(name, b), name, k, seed=1, record=True, engine=engine)
    return (np.array_equal(ra.hit_mask[:cut], rb.hit_mask[:cut])
            and ra.evictions[ra.evictions[:, 0] < cut].tolist()
            == rb.evictions[rb.evictions[:, 0] < cut].tolist())


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ONLINE)
@given(trace=st.one_of(round_traces(max_rounds=10), topk_traces(expand="rounds")),
       cut=st.floats(0, 1), k=st.integers(1, 10), data=st.data())
def test_online(name, engine, trace, cut, k, data):
    """Changing the requests after t leaves every decision up to t unchanged."""
    N = trace.n_requests
    c = int(cut * N)
    n = trace.layout.n_experts
    tail = np.array([data.draw(st.integers(0, n - 1)) for _ in range(N - c)], dtype=np.int64)
    pages = trace.pages.copy()
    pages[c:] = (trace.steps[c:] % trace.layout.n_layers) * n + tail
    # same layer clock and token structure (the designed token-* policies read ctx.token),
    # other experts
    other = Trace(trace.layout, pages, trace.steps, "alt", token=trace.token, rank=trace.rank,
                  expand="rounds", meta=trace.meta)
    assert same_decisions_before(name, trace, other, c, k, engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_online_check_rejects_belady(engine):
    """The check above can fail: Belady's eviction at t=2 (pages 0, 1, then 2 with k=2) depends
    on whether page 0 or page 1 comes back at t=3, so its decisions before t=3 differ; LRU's
    do not."""
    lay = Layout(3, 1)
    a, b = from_pages([0, 1, 2, 0], lay), from_pages([0, 1, 2, 1], lay)
    assert not same_decisions_before("belady", a, b, 3, 2, engine)
    assert same_decisions_before("lru", a, b, 3, 2, engine)
