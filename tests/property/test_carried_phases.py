"""The phase kernel fed piece by piece (paging.fast.carried_phases: a serving run's compiled
cache with a prefetcher or a miss handler; the token policies' kernel, paging.fast.tokens.
CarriedPhases, for them) equals the reference loop on the same stream.

A random groups-mode trace is run by ``simulate(..., engine="reference")`` with a prefetcher
and/or a miss handler, and fed to :class:`CarriedPhases` in random pieces of whole groups, the
reference's prefetch plan given piece by piece (the batch after a piece's last group with the
next piece, as a serving run gives it): the hit mask, the misses, the bypasses, the
substitutes and drops, the prefetch log (rows and order) and the prefetch counters must agree.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import topk_traces

from paging import fast
from paging.fast.carried_phases import CarriedPhases, admits, carry, source
from paging.fast.common import DROPPED, SUBSTITUTED
from paging.miss import make_miss
from paging.policies import POLICY_NAMES, make_policy
from paging.predict.prefetch import Prefetcher, make_prefetch_predictor, make_strategy
from paging.simulate import simulate

#: every registered online policy run with phases fed in pieces (carry)
CARRIED = [n for n in POLICY_NAMES if admits(make_policy(n), fast.plan(make_policy(n)))]
PREDICTORS = [None, "frequency", "previous-token", "oracle:precision=0.6,recall=0.8,seed=2"]


def _prefetcher(spec):
    return None if spec is None else Prefetcher(make_prefetch_predictor(spec),
                                                make_strategy("topk"))


def _cat(parts, dtype):
    return np.concatenate(parts) if parts else np.zeros(0, dtype)


def test_the_policies_carried():
    assert {"lru", "llru", "lfu", "arc", "lecar", "marking", "gdsf", "layered-landlord",
            "blind-oracle", "robust-blind-oracle", "predictive-marker", "lmarker-dist",
            "lru-dist", "marking-dist"} <= set(CARRIED)
    assert {"token-match", "token-decay-dist", "robust-token-match"} <= set(CARRIED)
    assert {"score-based", "score-based-dist"} <= set(CARRIED)  # (given each piece's scores)
    assert not {"belady", "flashmoe"} & set(CARRIED)
    # the combiner's reference refuses a prefetcher
    policy = make_policy("robust-token-match")
    assert not admits(policy, fast.plan(policy), prefetch=True)


@pytest.mark.parametrize("name", CARRIED)
@settings(max_examples=25)
@given(trace=topk_traces(max_tokens=8, expand="groups"), data=st.data(),
       pred=st.sampled_from(PREDICTORS), sub=st.booleans(), seed=st.integers(0, 3))
def test_fed_in_pieces_equals_the_reference(name, trace, data, pred, sub, seed):
    policy = make_policy(name)
    score = None
    if policy.needs_scores:  # Score-Based: gate scores of few values (ties in the sums)
        from paging.trace import Trace

        score = np.random.default_rng(seed).choice([0.25, 0.5, 1.0], trace.n_requests)
        trace = Trace(trace.layout, trace.pages, trace.steps, trace.name, rank=trace.rank,
                      score=score, expand=trace.expand)
    if pred is not None and not admits(policy, fast.plan(policy), prefetch=True):
        pred = None
    if pred is None and not sub:
        sub = True  # (a plain run is CarriedRun's)
    k = data.draw(st.integers(1, trace.layout.n_pages + 1))
    miss = "substitute" if sub else None
    ref = simulate(trace, name, k, record=True, engine="reference", seed=seed,
                   prefetch=_prefetcher(pred), miss=make_miss(miss))
    N = trace.n_requests
    pages, steps = np.asarray(trace.pages), np.asarray(trace.steps)
    starts = np.flatnonzero(np.r_[True, np.diff(steps) != 0]) if N else np.zeros(0, int)
    G = starts.size
    batches = [[] for _ in range(G)]
    if pred is not None:
        pf_pages, pf_start, _ = _prefetcher(pred).plan(trace, seed)
        batches = [np.asarray(pf_pages[pf_start[g]:pf_start[g + 1]]).tolist()
                   for g in range(len(pf_start) - 1)] + [[]] * (G - len(pf_start) + 1)
    cuts = sorted(data.draw(st.sets(st.integers(1, max(G - 1, 1)), max_size=4))) if G > 1 \
        else []
    bounds = [0, *[c for c in cuts if c < G], G] if G else [0]
    ends = [starts[b] if b < G else N for b in bounds]
    widest = max([hi - lo for lo, hi in zip(ends[:-1], ends[1:], strict=False)], default=1)
    # buffers as small as the widest piece: a longer run outgrows them and moves (_grow)
    run = carry(trace.layout, policy, k, 1, seed=seed, substitute=sub,
                prefetch=pred is not None, batch_room=sum(map(len, batches)) + 1,
                piece_room=max(widest, 1))
    # pieces that close: each brings the batch after its last group (feed's close), and the
    # next piece no across
    closing = pred is not None and data.draw(st.booleans())
    hits, outcome, subst, rows = [], [], [], []
    for a, b in zip(bounds[:-1], bounds[1:], strict=False):
        lo, hi = starts[a], starts[b] if b < G else N
        across = batches[a - 1] if a > 0 and pred is not None and not closing else None
        h, o, s, r = run.feed(pages[lo:hi], steps[lo:hi], batches[a:b - 1], across,
                              close=batches[b - 1] if closing and b < G else None,
                              **({} if score is None else {"scores": score[lo:hi]}))
        hits.append(h), outcome.append(o), subst.append(s), rows.append(r)
    done = run.finish()
    np.testing.assert_array_equal(_cat(hits, bool), ref.hit_mask)
    assert done["misses"] == ref.misses and done["bypasses"] == ref.bypasses
    assert done["collisions"] == ref.collision_misses
    out = _cat(outcome, np.int8)
    assert int((out == SUBSTITUTED).sum()) == ref.extra.get("substituted", 0)
    assert int((out == DROPPED).sum()) == ref.extra.get("dropped", 0)
    if sub:
        swapped = np.flatnonzero(out == SUBSTITUTED)
        log = np.asarray(ref.events["substituted"]).reshape(-1, 2)
        np.testing.assert_array_equal(np.stack([swapped, _cat(subst, np.int64)[swapped]], 1),
                                      log)
    if pred is not None:
        x = ref.extra
        assert (done["prefetches"], done["useful"], done["wasted"], done["skipped"],
                done["bytes"]) == (x["prefetches"], x["prefetch_useful"],
                                   x["prefetch_wasted"], x["prefetch_skipped"],
                                   x["prefetch_bytes"])
        np.testing.assert_array_equal(np.concatenate([np.zeros((0, 2), np.int64), *rows]),
                                      ref.events["prefetched"])


@pytest.mark.parametrize("name", ["lru", "llru", "lfu", "arc", "gdsf", "lecar",
                                  "marking-dist", "predictive-marker", "token-hazard",
                                  "token-match-dist"])
@settings(max_examples=25)
@given(trace=topk_traces(max_tokens=8, expand="groups"), data=st.data(),
       seed=st.integers(0, 3))
def test_drops_given_piece_by_piece_equal_the_reference(name, trace, data, seed):
    """drop:rank=1 with its flags given with each piece (feed's ``act``, from
    paging.fast.phases.miss_actions over the piece's ranks), in buffers as small as the widest
    piece, so that the run moves to larger ones: the reference loop's drops and hits."""
    from paging.fast.phases import miss_actions

    policy = make_policy(name)
    k = data.draw(st.integers(1, trace.layout.n_pages + 1))
    handler = make_miss("drop:rank=1")
    ref = simulate(trace, name, k, record=True, engine="reference", seed=seed, miss=handler)
    N = trace.n_requests
    pages, steps = np.asarray(trace.pages), np.asarray(trace.steps)
    rank = np.asarray(trace.rank)
    starts = np.flatnonzero(np.r_[True, np.diff(steps) != 0]) if N else np.zeros(0, int)
    G = starts.size
    cuts = sorted(data.draw(st.sets(st.integers(1, max(G - 1, 1)), max_size=5))) if G > 1 \
        else []
    bounds = [0, *[c for c in cuts if c < G], G] if G else [0]
    ends = [starts[b] if b < G else N for b in bounds]
    widest = max([hi - lo for lo, hi in zip(ends[:-1], ends[1:], strict=False)], default=1)
    run = carry(trace.layout, policy, k, 1, seed=seed, piece_room=max(widest, 1), drops=True)
    hits, outcome = [], []
    for lo, hi in zip(ends[:-1], ends[1:], strict=False):
        act, lvl = miss_actions(handler, hi - lo, rank[lo:hi], None)
        h, o, _, _ = run.feed(pages[lo:hi], steps[lo:hi], act=act, lvl=lvl)
        hits.append(h), outcome.append(o)
    done = run.finish()
    np.testing.assert_array_equal(_cat(hits, bool), ref.hit_mask)
    assert done["misses"] == ref.misses and done["bypasses"] == ref.bypasses
    assert int((_cat(outcome, np.int8) == DROPPED).sum()) == ref.extra["dropped"]


@pytest.mark.parametrize("name", ["lru", "lecar", "marking-dist", "predictive-marker",
                                  "lmarker"])
def test_a_long_run_outgrows_its_buffers_and_keeps_every_decision(name):
    """A 6,000-request run fed group by group from buffers of 10 requests moves to larger
    ones ten times (each taken up when the kernel resumes) and ends as the reference loop."""
    from paging import generators

    trace = generators.zipf(n=4, layers=3, tokens=500, seed=1, topk=2, expand="groups")
    pf = "previous-token"
    ref = simulate(trace, name, 5, record=True, engine="reference", seed=2,
                   prefetch=_prefetcher(pf), miss=make_miss("substitute"))
    pf_pages, pf_start, _ = _prefetcher(pf).plan(trace, 2)
    steps = np.asarray(trace.steps)
    starts = np.flatnonzero(np.r_[True, np.diff(steps) != 0])
    run = CarriedPhases(trace.layout, make_policy(name), 5, 1, seed=2, substitute=True,
                        prefetch=True, batch_room=16, piece_room=8)
    assert run.pages.size == 10
    hits = []
    for g, lo in enumerate(starts):
        hi = starts[g + 1] if g + 1 < starts.size else trace.n_requests
        across = pf_pages[pf_start[g - 1]:pf_start[g]].tolist() if g else None
        hits.append(run.feed(trace.pages[lo:hi], steps[lo:hi], (), across)[0])
    done = run.finish()
    assert run.pages.size >= trace.n_requests
    np.testing.assert_array_equal(np.concatenate(hits), ref.hit_mask)
    assert done["misses"] == ref.misses and done["prefetches"] == ref.extra["prefetches"]
    assert done["wasted"] == ref.extra["prefetch_wasted"]


def _cyclic(k: int, tokens: int = 400):
    """One layer of 2k experts requested in turn, a third of them one or two ahead: misses in
    every phase on pages evicted earlier in it (the markers' long chains) while several pages
    are unmarked (a random pick is not the furthest page by force)."""
    from paging import Layout
    from paging.trace import from_routing

    rng = np.random.default_rng(k)
    step = 1 + (rng.random(tokens) < 0.3) + (rng.random(tokens) < 0.1)
    table = (np.cumsum(step) % (2 * k)).reshape(-1, 1, 1)
    return from_routing(table, Layout(n_experts=2 * k, n_layers=1), expand="groups",
                        name="cyclic")


@pytest.mark.parametrize("name", ["predictive-marker", "lmarker", "lecar", "arc"])
@pytest.mark.parametrize("k", [3, 6, 9])
@pytest.mark.parametrize("shape", ["zipf", "cyclic"])
def test_a_run_moved_to_new_buffers_at_every_piece_keeps_every_decision(name, k, shape):
    """The buffers replaced before every piece (as a growing run replaces them at its
    doublings): the markers' chains, whose lengths are read for the rest of a phase, and
    everything else carry over, and the run ends as the reference loop."""
    from paging import generators

    trace = _cyclic(k) if shape == "cyclic" else generators.zipf(
        n=6, layers=2, tokens=300, seed=k, a=0.6, topk=2, expand="groups")
    ref = simulate(trace, name, k, record=True, engine="reference", seed=1)
    steps = np.asarray(trace.steps)
    starts = np.flatnonzero(np.r_[True, np.diff(steps) != 0])
    # (no handler: a substitute would serve nearly every miss here, and nothing be evicted)
    run = CarriedPhases(trace.layout, make_policy(name), k, 1, seed=1, piece_room=8)
    hits = []
    for g, lo in enumerate(starts):
        hi = starts[g + 1] if g + 1 < starts.size else trace.n_requests
        if g:  # (the chains too: a few more than the kernel holds)
            run._grow(run.pages.size + 4, run.chain_room + 4)
        hits.append(run.feed(trace.pages[lo:hi], steps[lo:hi])[0])
    assert run.finish()["misses"] == ref.misses
    np.testing.assert_array_equal(np.concatenate(hits), ref.hit_mask)


def test_the_source_is_the_kernel_fed_in_pieces():
    """The generated kernel is phase_kernel's body with the piece protocol: a yield after a
    piece, the plan's batch after its last group taken when the next comes."""
    src = source()
    assert src.startswith("def carried_phase_kernel(")
    assert "adp, route, ctl, grown_i, grown_b, grown_o, grown_2, grown_f):" in src
    assert src.count("yield (misses, coll,") == 2 and "return (misses" not in src
    assert "for sub in range(1 if resume else 0, b_hi - b_lo + 1):" in src


def _feed_groups(run, trace, plan, cuts, close=False):
    """Feed ``trace`` to ``run`` in pieces of whole groups cut before the groups ``cuts``,
    the batches of the reference's prefetch ``plan`` (pages, start) with them (with ``close``
    the batch after a piece's last group comes with that piece, not with the next); the hit
    masks and the prefetch rows, and the run's counters."""
    steps = np.asarray(trace.steps)
    starts = np.flatnonzero(np.r_[True, np.diff(steps) != 0])
    G = starts.size
    bounds = [0, *cuts, G]
    hits, rows = [], [np.zeros((0, 2), np.int64)]
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        lo, hi = starts[a], starts[b] if b < G else trace.n_requests
        batches, across, last = (), None, None
        if plan is not None:
            pages, start = plan
            batches = [pages[start[g]:start[g + 1]].tolist() for g in range(a, b - 1)]
            across = pages[start[a - 1]:start[a]].tolist() if a and not close else None
            last = pages[start[b - 1]:start[b]].tolist() if close and b < G else None
        h, _, _, r = run.feed(trace.pages[lo:hi], steps[lo:hi], batches, across, close=last)
        hits.append(h)
        rows.append(r)
    return np.concatenate(hits), np.concatenate(rows), run.finish()


@pytest.mark.parametrize("name,pred", [("token-decay", "previous-token"),
                                       ("token-match", "frequency"),
                                       ("token-hazard-dist", "previous-token"),
                                       ("robust-token-match", None)])
def test_token_policies_fed_in_pieces_keep_every_decision(name, pred):
    """A token policy with a substitute (and a prefetcher) fed in 60 pieces of a 1,800-request
    run: the batch after a piece's last group is inserted when the next piece comes (and
    that group's requests not counted again for the substitute), as the reference does."""
    from paging import generators

    trace = generators.zipf(n=6, layers=3, tokens=300, seed=1, topk=2, expand="groups")
    ref = simulate(trace, name, 7, record=True, engine="reference", seed=2,
                   prefetch=_prefetcher(pred), miss=make_miss("substitute"))
    plan = _prefetcher(pred).plan(trace, 2)[:2] if pred else None
    cuts = np.sort(np.random.default_rng(0).choice(np.arange(1, 900), 59, replace=False))
    run = carry(trace.layout, make_policy(name), 7, substitute=True, prefetch=pred is not None)
    hits, rows, done = _feed_groups(run, trace, plan, cuts.tolist())
    np.testing.assert_array_equal(hits, ref.hit_mask)
    assert done["misses"] == ref.misses and done["collisions"] == ref.collision_misses
    if pred:
        np.testing.assert_array_equal(rows, ref.events["prefetched"])
        x = ref.extra
        assert (done["prefetches"], done["useful"], done["wasted"]) == (
            x["prefetches"], x["prefetch_useful"], x["prefetch_wasted"]) and x["prefetches"]


@pytest.mark.parametrize("close", [False, True])
def test_a_token_run_whose_bound_fails_in_a_piece_is_redone_with_its_phases(monkeypatch,
                                                                             close):
    """token-match with a prefetcher and a substitute entering BOUNDED mode at margin 0 (a
    case of test_token_bounds' PHASED whose bound fails): the run so far is redone exactly,
    with the plan and the pieces kept (and the batch after the last group of a piece that
    closes), and the run ends as the reference loop."""
    from paging import generators
    from paging.fast import tokens as T

    trace = generators.zipf(n=8, layers=16, tokens=2000, seed=1, topk=1, expand="rounds")
    ref = simulate(trace, "token-match", 42, record=True, engine="reference", seed=0,
                   prefetch=_prefetcher("previous-token"), miss=make_miss("substitute"))
    plan = _prefetcher("previous-token").plan(trace, 0)[:2]
    monkeypatch.setattr(T, "ENTER", (0.0,))
    run = carry(trace.layout, make_policy("token-match"), 42, substitute=True, prefetch=True)
    hits, rows, done = _feed_groups(run, trace, plan, list(range(1000, 32000, 1000)), close)
    assert run.enter is None  # redone with exact sums
    np.testing.assert_array_equal(hits, ref.hit_mask)
    np.testing.assert_array_equal(rows, ref.events["prefetched"])
    assert done["misses"] == ref.misses
    assert done["wasted"] == ref.extra["prefetch_wasted"]


def test_the_phase_kernel_refuses_a_token_policy():
    """The token policies are carried in their own kernel (carry picks it); the phase
    kernel's class refuses them rather than running them as another kind."""
    from paging import Layout

    lay = Layout(n_experts=4, n_layers=2)
    with pytest.raises(ValueError, match="no carried phase kernel for token-match"):
        CarriedPhases(lay, make_policy("token-match"), 4, substitute=True)
    run = carry(lay, make_policy("token-match"), 4, substitute=True)
    assert type(run).__module__ == "paging.fast.tokens"
