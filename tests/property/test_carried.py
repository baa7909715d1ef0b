"""A run carried from piece to piece (:class:`paging.fast.CarriedRun`, what a serving run and a
streamed trace feed step by step) equals the one-call run of the same kernel: the hit mask,
the misses and the per-page misses, for the list family, LFU, the credit policies (with the
pages' costs and sizes), ARC, LeCaR and Marking (with the run's seed), pages and byte budgets,
shared and per layer, cut at any group boundaries."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from strategies import topk_traces

from paging import fast
from paging.policies import make_policy
from paging.simulate import simulate

CARRIED = ("lru", "fifo", "fwf", "llru", "least-stale", "fld", "lfu", "lru-dist", "lfu-dist",
           "llru-dist", "arc", "arc-dist", "lecar", "lecar-dist", "marking", "marking-dist",
           "greedy-dual", "landlord", "gdsf", "layered-landlord", "gdsf-dist",
           "layered-landlord-dist")


@given(tr=topk_traces(max_tokens=8), name=st.sampled_from(CARRIED), k=st.integers(1, 8),
       byte=st.booleans(), seed=st.integers(0, 3), data=st.data())
def test_a_carried_run_fed_in_pieces_equals_one_run(tr, name, k, byte, seed, data):
    policy = make_policy(name)
    spec = fast.plan(policy)
    assert fast.carries(spec)
    P = tr.layout.n_pages
    sizes = np.asarray(data.draw(st.lists(st.integers(1, 3), min_size=P, max_size=P)),
                       dtype=np.int64) if byte else None
    # the credit policies' rates read the costs (ties of equal credits included: costs 1, 2)
    costs = np.asarray(data.draw(st.lists(st.sampled_from([1.0, 2.0, 0.5]), min_size=P,
                                          max_size=P)))
    cap = {"budget": k * 3} if byte else {"k": k}  # every page fits a budget of 3 or more
    whole = simulate(tr, name, sizes=sizes, costs=costs, record="hits", engine="reference",
                     seed=seed, **cap)
    run = fast.CarriedRun(tr.layout, spec, k * 3 if byte else k, sizes, seed=seed, costs=costs,
                          sizes=sizes)
    bounds = np.flatnonzero(np.r_[True, tr.steps[1:] != tr.steps[:-1]]) if tr.n_requests \
        else np.zeros(0, np.int64)
    cuts = sorted(set(data.draw(st.lists(st.sampled_from(bounds.tolist()), max_size=4))
                      if bounds.size else []))
    hits = []
    for lo, hi in zip([0, *cuts], [*cuts, tr.n_requests], strict=True):
        if hi > lo:
            hits.append(run.feed(tr.pages[lo:hi], tr.steps[lo:hi], hits=True))
    mask = np.concatenate(hits) if hits else np.zeros(0, bool)
    assert np.array_equal(mask, whole.hit_mask)
    assert int(run.page_misses.sum()) == whole.misses
    assert run.collisions == whole.collision_misses and run.bypasses == whole.bypasses
