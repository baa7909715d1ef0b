"""The token family's kernels (paging.fast.tokens) against the reference loop, beyond the
generic cases of test_kernels.py (which runs every registered name with a kernel): traces whose
routing repeats (so token-match's match is used: its mixing weight β > 0), non-default
parameters, the generic ``robust:A,B`` over every pair of components it compiles and every
margin, per layer; and decisions checked by hand."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import round_traces, topk_traces
from test_kernels import assert_same

from paging import fast
from paging.fast import tokens
from paging.fast.tokens import pairwise, pairwise_runs, supports
from paging.layout import Layout
from paging.policies import PerLayer, make_policy
from paging.policies.decay import TokenDecay, TokenDecayLookahead
from paging.policies.hazard import TokenHazard
from paging.policies.match import TokenMatch
from paging.policies.robust import NeverSwitch, Robust
from paging.simulate import simulate
from paging.trace import from_pages, from_routing
from paging.weights import unit_sizes

COMPONENTS = ("token-hazard", "token-decay", "token-match", "lru")


@st.composite
def repeating_traces(draw):
    """A top-K routing table made of a few token patterns repeated with noise (generated text
    repeats; token-match's match then carries weight), expanded in rounds or groups mode."""
    n = draw(st.integers(2, 5))
    L = draw(st.integers(1, 3))
    K = draw(st.integers(1, min(n, 3)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    patterns = np.argsort(rng.random((draw(st.integers(1, 3)), L, n)), axis=2)[:, :, :K]
    T = draw(st.integers(2, 40))
    table = patterns[np.arange(T) % len(patterns)].copy()
    noise = rng.random(T) < draw(st.sampled_from([0.0, 0.1, 0.3]))
    table[noise] = np.argsort(rng.random((int(noise.sum()), L, n)), axis=2)[:, :, :K]
    mode = draw(st.sampled_from(["rounds", "groups"]))
    return from_routing(table, Layout(n, L), expand=mode, name=f"rep-{mode}")


def check(trace, policy_factory, ks, **kw) -> None:
    for k in ks:
        ref = simulate(trace, policy_factory(), k, record=True, engine="reference", **kw)
        got = simulate(trace, policy_factory(), k, record=True, engine="fast", **kw)
        assert_same(ref, got)


def _ks(trace):
    P = trace.layout.n_pages
    return sorted({1, 2, max(1, P // 3), max(1, P // 2), P - 1 if P > 1 else 1, P + 1})


@pytest.mark.parametrize("name", ["token-hazard", "token-decay", "token-match",
                                  "robust-token-match", "token-hazard-dist", "token-decay-dist",
                                  "token-match-dist", "robust-token-match-dist"])
@given(trace=repeating_traces())
def test_repeating_routing(name, trace):
    check(trace, lambda: make_policy(name), _ks(trace))


#: non-default parameters: one memory with raw frequencies, longer horizons (libm pow), a
#: small window (the match's ring of tokens wraps), fewer ages, a tiny shrink
VARIANTS = {
    "decay-one-memory": lambda: TokenDecay(lam=0.8, horizon=3, long=None, prior=0.0),
    "decay-two": lambda: TokenDecay(lam=0.5, horizon=1, long=0.9, prior=0.5),
    "hazard": lambda: TokenHazard(horizon=4, alpha=2.0, max_age=2),
    "match-window": lambda: TokenMatch(neighbours=2, shrink=0.25, window=3, lam=0.9),
    "match-one": lambda: TokenMatch(neighbours=1, shrink=4.0, window=5, horizon=1, long=None),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@given(trace=st.one_of(repeating_traces(), round_traces(), topk_traces(max_tokens=8)))
def test_parameters(variant, trace):
    make = VARIANTS[variant]
    check(trace, make, _ks(trace))
    check(trace, lambda: PerLayer(make), _ks(trace))


@given(trace=st.one_of(repeating_traces(), topk_traces(max_tokens=8)),
       a=st.sampled_from(COMPONENTS), b=st.sampled_from(COMPONENTS),
       margin=st.sampled_from([0, 1, 3, "k"]), dist=st.booleans())
@settings(max_examples=60)
def test_robust_pairs(trace, a, b, margin, dist):
    def make():
        return Robust(a, b, margin=margin)

    assert fast.has_kernel(make())
    check(trace, (lambda: PerLayer(make)) if dist else make, _ks(trace))
    if not dist:  # a compiled run leaves the run's leader and switch count, as the reference
        for k in _ks(trace):
            ref, got = make(), make()
            simulate(trace, ref, k, engine="reference")
            simulate(trace, got, k, engine="fast")
            assert (got.leader, got.switches) == (ref.leader, ref.switches)


@st.composite
def budget_runs(draw):
    trace = draw(st.one_of(repeating_traces(), topk_traces(max_experts=4, max_tokens=6)))
    P = trace.layout.n_pages
    sizes = np.array(draw(st.lists(st.integers(1, 4), min_size=P, max_size=P)), dtype=np.int64)
    budget = draw(st.integers(int(sizes.min()), int(sizes.sum()) + 1))
    return trace, sizes, budget


@pytest.mark.parametrize("name", ["token-hazard", "token-decay", "token-match",
                                  "robust-token-match", "token-decay-dist",
                                  "robust:token-hazard,token-match,margin=1",
                                  "robust-dist:lru,token-decay"])
@given(run=budget_runs())
def test_byte_budgets(name, run):
    """Several victims per miss, pages larger than a layer's share (bypasses), and the
    combiner's virtual caches holding ``budget`` pages (its capacity read as a page count)."""
    trace, sizes, budget = run
    for cap in (budget, max(int(sizes.min()), budget // 2)):
        ref = simulate(trace, name, budget=cap, sizes=sizes, record=True, engine="reference")
        got = simulate(trace, name, budget=cap, sizes=sizes, record=True, engine="fast")
        assert_same(ref, got)


@settings(deadline=None)
@given(data=st.data())
def test_one_page_tokens_match_as_the_reference(data):
    """A token of one page (every token of a ``-dist`` instance in rounds mode with top-1
    routing, or of a one-layer layout) is matched from the page's ring of uses, not by a scan
    of the history: the neighbours chosen are the reference's, as its β losses show, which
    every match feeds (compared bit for bit at the end of a run with exact sums; windows of
    2..6 tokens and 1..4 neighbours, so the window's edge and too few uses both occur)."""
    n = data.draw(st.integers(2, 6))
    L = data.draw(st.integers(1, 3))
    T = data.draw(st.integers(2, 60))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    # few repeating patterns, so that uses recur (and β moves)
    pats = rng.integers(0, n, (data.draw(st.integers(1, 3)), L, 1))
    table = pats[rng.integers(0, len(pats), T)]
    table[rng.random(T) < 0.2] = rng.integers(0, n, (1, L, 1))
    trace = from_routing(table, Layout(n, L), expand="rounds")
    W, nb = data.draw(st.integers(2, 6)), data.draw(st.integers(1, 4))
    dist = L > 1 or data.draw(st.booleans())
    spec = f"token-match{'-dist' if dist else ''}:window={W},neighbours={nb}"
    factory = (lambda: PerLayer(lambda: TokenMatch(window=W, neighbours=nb))) if dist else (
        lambda: TokenMatch(window=W, neighbours=nb))
    k = data.draw(st.integers(1, n * L))
    ref = factory()
    simulate(trace, ref, k, engine="reference")
    info: dict = {}
    tokens.execute(trace, fast.plan(factory()), unit_sizes(trace.layout.n_pages), k, 0,
                   bounded=False, info=info)
    subs = ref.subs if dist else [ref]
    assert len(subs) == len(info["beta_losses"]), spec
    for q, sub in enumerate(subs):
        assert np.array_equal(info["beta_losses"][q], sub.beta_loss), (q, spec)


def test_pairwise_is_numpys_sum():
    rng = np.random.default_rng(3)
    for n in [*range(300), 1000, 1031, 4097, 9000]:
        a = rng.random(n) * rng.choice([1.0, 1e-3, 1e6])
        assert pairwise(a, 0, n) == a.sum()


@given(n=st.integers(0, 1200), data=st.data(),
       c=st.sampled_from([0.0, -0.0, 1e-4, -2.5e-3, 0.3, 1e6, -7.25]))
def test_pairwise_runs_is_numpys_sum_of_the_whole_row(n, data, c):
    """A ``-dist`` instance's rows are c outside its run of explicit values: summed without
    writing the c's out, they equal numpy's sum of the written-out row, bit for bit (lengths
    across one, two, three levels of halving and the stack beyond)."""
    rm = data.draw(st.integers(0, n))
    ra = data.draw(st.integers(0, n - rm))
    run = np.random.default_rng(n + 7 * rm + ra).random(rm) - 0.5
    zeros = data.draw(st.sampled_from([None, 0.0, -0.0]))  # signed zeros in the run too
    if zeros is not None and rm:
        run[data.draw(st.integers(0, rm - 1))] = zeros
        if data.draw(st.booleans()):
            run = np.abs(run)  # a run of non-negative values (the totals' case)
    row = np.full(n, c)
    row[ra:ra + rm] = run
    buf = np.concatenate([run, np.zeros(3)])  # the scratch row is longer than the run
    got = pairwise_runs(buf, ra, rm, c, n)
    want = pairwise(row, 0, n)  # the written-out row's sum, -0.0 included
    assert got == want == row.sum() and np.signbit(got) == np.signbit(want)


@pytest.mark.parametrize("n", [8, 13, 64, 200, 256, 1031])
def test_pairwise_runs_of_a_short_aligned_run(n):
    """The shortcut for a run of at most 8 values starting at a lane boundary (a ``-dist``
    instance's counts, 8 experts a layer) among +0.0: numpy's sum of the written-out row, for
    every such start and length, the row's tail included."""
    rng = np.random.default_rng(n)
    for ra in range(0, n, 8):
        for rm in range(0, min(8, n - ra) + 1):
            run = rng.random(rm) * rng.choice([1.0, 1e-3, 1e6])
            row = np.zeros(n)
            row[ra:ra + rm] = run
            got = pairwise_runs(np.concatenate([run, np.ones(2)]), ra, rm, 0.0, n)
            assert got == row.sum() and not np.signbit(got), (n, ra, rm)


@pytest.mark.parametrize("n,ra,rm", [(8, 0, 8), (16, 8, 8), (200, 64, 8), (5, 0, 5)])
def test_pairwise_runs_of_negative_zeros(n, ra, rm):
    """A run of −0.0 among +0.0: numpy's pairwise routine gives −0.0 where the run fills a
    leaf's eight lanes (its sum then adds that to the reduction's +0.0), and the shortcut for
    c = +0.0 must not turn it into +0.0."""
    row = np.zeros(n)
    row[ra:ra + rm] = -0.0
    got = pairwise_runs(np.full(rm, -0.0), ra, rm, 0.0, n)
    want = pairwise(row, 0, n)
    assert got == want == row.sum() and np.signbit(got) == np.signbit(want)
    assert np.signbit(want) == (n == 8)


def test_the_references_float_work_is_the_kernels():
    """The bit-for-bit agreement rests on the reference's log, log1p, exp, row mixtures and
    dots being the kernel's scalar operations (:mod:`paging.floatops`: numpy's own log and
    BLAS's matmul differ in the last bit on AVX-512 machines)."""
    from numba import njit

    from paging import floatops

    @njit
    def scalar(x):
        out = np.empty((3, x.size))
        for i in range(x.size):
            out[0, i], out[1, i], out[2, i] = np.log(x[i]), np.log1p(-x[i]), np.exp(-50 * x[i])
        return out

    rng = np.random.default_rng(5)
    x = rng.random(20000) * 0.9998 + 1e-4
    got = scalar(x)
    assert np.array_equal(got[0], floatops.log(x)) and np.array_equal(got[1], floatops.log1p(-x))
    assert np.array_equal(got[2], floatops.exp(-50 * x))
    two = x[:600].reshape(2, 300)  # any shape, the same values
    assert np.array_equal(floatops.log(two), got[0, :600].reshape(2, 300))
    @njit
    def rows(w, X):  # the kernel's w[0]*X[0] + w[1]*X[1], and its 5-term dot
        out = np.empty(X.shape[1])
        for q in range(X.shape[1]):
            out[q] = w[0] * X[0, q] + w[1] * X[1, q]
        return out

    @njit
    def dot5(v, b):
        d = 0.0
        for j in range(5):
            d += v[j] * b[j]
        return d

    w, X = rng.random(2), rng.random((2, 500))
    assert np.array_equal(floatops.mix(w, X), rows(w, X))
    b = np.linspace(0.0, 1.0, 5)
    for v in rng.random((200, 5)):
        assert floatops.dot(v, b) == dot5(v, b)


def test_what_stays_in_the_reference_loop():
    for spec in ("robust:lru,fifo", "robust:token-match,lfu", "robust:lru-dist,token-match",
                 "robust-dist:arc,lru"):
        assert not fast.has_kernel(make_policy(spec)), spec
    assert not fast.has_kernel(NeverSwitch("token-match", "lru"))
    assert not fast.has_kernel(TokenDecayLookahead())

    class MyDecay(TokenDecay):
        pass

    assert not fast.has_kernel(MyDecay()) and not fast.has_kernel(PerLayer(MyDecay))
    assert supports(make_policy("robust:token-hazard,lru"), fast.plan_of("token:ROBUST")[1])


def test_token_decay_by_hand():
    """One layer of 3 experts, no token column: each request is a token. Page 0 is used in three
    tokens, page 1 in one; at request 4 (page 2, k = 2) token-decay keeps the frequent page 0
    and evicts 1, where LRU evicts 0."""
    tr = from_pages([0, 0, 0, 1, 2], Layout(3, 1))
    for engine in ("reference", "fast"):
        for name in ("token-decay", "token-match", "token-hazard"):
            assert simulate(tr, name, 2, record=True, engine=engine).evictions.tolist() == \
                [[4, 1]], (name, engine)
        assert simulate(tr, "lru", 2, record=True, engine=engine).evictions.tolist() == [[4, 0]]


def test_robust_by_hand():
    """robust:lru,token-decay (margin 0), one layer of 3 experts, k = 2, each request a token.

    2 2 0 1 2 0 1: LRU's virtual cache misses at t = 0, 2, 3 (evicts 2), 4 (evicts 0),
    5 (evicts 1), 6 (evicts 2); token-decay's at t = 0, 2, 3 (evicts 0: page 2 was used in two
    tokens), 5 (evicts 1), 6 (evicts 0). At t = 3 they are tied (3 misses each) and LRU, the
    first component, leads: the combiner evicts 2, the page outside LRU's cache {0, 1}. At
    t = 4 LRU misses again (4 against 3) and token-decay leads: the combiner evicts 0 (outside
    {2, 1}), then 1 at t = 5 (outside {2, 0}) and 0 at t = 6 (outside {2, 1})."""
    tr = from_pages([2, 2, 0, 1, 2, 0, 1], Layout(3, 1))
    for engine in ("reference", "fast"):
        pol = make_policy("robust:lru,token-decay")
        res = simulate(tr, pol, 2, record=True, engine=engine)
        assert res.evictions.tolist() == [[3, 2], [4, 0], [5, 1], [6, 0]], engine
        assert (pol.leader, pol.switches) == (1, 1)
        assert simulate(tr, "lru", 2, engine=engine).misses == 6
        dec = simulate(tr, "token-decay", 2, record=True, engine=engine)
        assert dec.evictions.tolist() == [[3, 0], [5, 1], [6, 0]]


def test_groups_pin_and_bypass_by_hand():
    """Groups of three on a cache of two: every group's third page bypasses (the group's two
    cached pages are pinned), and the token policies never see a bypassed request."""
    tr = from_routing(np.array([[[0, 1, 2]], [[3, 4, 0]], [[1, 2, 3]]]), Layout(5, 1),
                      expand="groups")
    for name in ("token-hazard", "token-decay", "token-match", "robust-token-match"):
        ref = simulate(tr, name, 2, record=True, engine="reference")
        got = simulate(tr, name, 2, record=True, engine="fast")
        assert_same(ref, got)
        assert got.bypasses >= 3
