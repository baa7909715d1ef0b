"""ARC's and LeCaR's kernels (paging.fast.adaptive) against the reference loop, beyond the
generic cases of test_kernels.py (which runs every registered name with a kernel on short
traces): longer skewed traces whose pages come back after they were evicted (ARC's ghost hits
and LeCaR's regrets happen), every cache size, several seeds, both modes, per layer, byte
budgets; and decisions checked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_kernels import assert_same

from paging import fast
from paging.layout import Layout
from paging.mrc import curve_method, miss_curve
from paging.policies import make_policy
from paging.policies.adaptive import ARC, LeCaR
from paging.simulate import simulate
from paging.trace import from_pages, from_routing

NAMES = ["arc", "lecar", "arc-dist", "lecar-dist"]


@st.composite
def skewed_traces(draw):
    """A top-K routing table over few experts with a skewed (Zipf-like) choice, up to 80
    tokens, expanded in rounds or groups mode: pages are evicted and requested again, often
    while still in ARC's ghost lists or LeCaR's histories."""
    n = draw(st.integers(2, 6))
    L = draw(st.integers(1, 3))
    K = draw(st.integers(1, min(n, 3)))
    T = draw(st.integers(1, 80))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    a = draw(st.sampled_from([0.0, 0.8, 1.5]))
    w = 1.0 / np.arange(1, n + 1) ** a
    table = np.zeros((T, L, K), dtype=np.int64)
    for z in range(L):
        perm = rng.permutation(n)  # each layer its own popular experts
        for t in range(T):
            table[t, z] = perm[rng.choice(n, K, replace=False, p=w / w.sum())]
    mode = draw(st.sampled_from(["rounds", "groups"]))
    return from_routing(table, Layout(n, L), expand=mode, name=f"skew-{mode}")


def _check(trace, name, k=None, seeds=(0,), **kw):
    for seed in seeds:
        ref = simulate(trace, name, k, seed=seed, record=True, engine="reference", **kw)
        got = simulate(trace, name, k, seed=seed, record=True, engine="fast", **kw)
        assert_same(ref, got)


@pytest.mark.parametrize("name", NAMES)
@given(trace=skewed_traces(), seed=st.integers(0, 2**32 - 1))
@settings(max_examples=40)
def test_kernel_equals_reference_on_skewed_traces(name, trace, seed):
    seeds = (seed, seed + 1) if "lecar" in name else (seed,)
    for k in range(1, trace.layout.n_pages + 2):
        _check(trace, name, k, seeds)


@pytest.mark.parametrize("name", NAMES)
@given(trace=skewed_traces(), seed=st.integers(0, 99), data=st.data())
@settings(max_examples=40)
def test_kernel_equals_reference_with_byte_budgets(name, trace, seed, data):
    """Several victims per miss (ARC's case IV trimming once per victim, one LeCaR draw per
    victim whose candidates differ), pages larger than a layer's share (bypasses), c counted in
    bytes."""
    P = trace.layout.n_pages
    sizes = np.array(data.draw(st.lists(st.integers(1, 4), min_size=P, max_size=P)),
                     dtype=np.int64)
    budget = data.draw(st.integers(int(sizes.min()), int(sizes.sum()) + 1))
    for cap in (budget, max(int(sizes.min()), budget // 2)):
        _check(trace, name, None, (seed,), budget=cap, sizes=sizes)
    _check(trace, name, max(1, budget // 3), (seed,), sizes=sizes)  # pages: sizes ignored


def test_longer_zipf_trace_agrees():
    """The benchmark's distribution (layered Zipf, a = 1), 400 tokens, a few sizes and seeds."""
    from paging.generators import zipf

    tr = zipf(n=8, layers=4, tokens=400, a=1.0, h=0.0, seed=1)
    for name in NAMES:
        for k in (1, 5, 8, 13, 24, 31):
            _check(tr, name, k, (0, 7) if "lecar" in name else (0,))


def test_arc_by_hand():
    """ARC with c = 2 on one layer of 5 experts (pages 0..4). State after each request
    (lists LRU first), checked against the reference's lists and the kernel's evictions:

    t  req  case                       evicts         T1     T2     B1     B2     p
    0  0    IV, room                   -              [0]    []     []     []     0
    1  1    IV, room                   -              [0,1]  []     []     []     0
    2  0    I hit                      -              [1]    [0]    []     []     0
    3  1    I hit                      -              []     [0,1]  []     []     0
    4  2    IV.B (total 2 < 4), REPLACE: T1 empty    0 -> B2   [2]  [1]  []  [0]   0
    5  3    IV.B (total 3), |T1| = 1 > p = 0          2 -> B1   [3]  [1]  [2] [0]   0
    6  2    II (B1): p += max(|B2|/|B1| = 1, 1); |T1| = p, not a B2 hit: T2's LRU
                                                    1 -> B2   [3]  [2]  []  [0,1] 1
    7  4    IV.B: total 4 >= 4, drop B2's 0; |T1| = p: T2's LRU
                                                    2 -> B2   [3,4] [] []  [1,2] 1
    8  3    I hit                      -              [4]    [3]    []     [1,2]  1
    9  0    IV.B: drop 1; |T1| = p: T2's LRU        3 -> B2   [4,0] [] []  [2,3] 1
    10 1    IV.A: |T1| + |B1| = 2, B1 empty: T1's LRU, no ghost
                                                    4         [0,1] [] []  [2,3] 1
    11 2    III (B2): p -= max(0/2, 1) -> 0; |T1| = 2 > 0
                                                    0 -> B1   [1]  [2]  [0] [3]   0
    12 3    III: p = max(0 - 1, 0) = 0; |T1| > 0     1 -> B1   []  [2,3] [0,1] []  0
    13 0    II: p += max(0/2, 1) -> 1; T1 empty: T2's LRU
                                                    2 -> B2   []  [3,0] [1] [2]   1
    14 1    II: p += max(1/1, 1) -> 2                3 -> B2   []  [0,1] []  [2,3] 2
    15 4    IV.B: drop 2; T1 empty: T2's LRU        0 -> B2   [4]  [1]  []  [3,0] 2
    16 3    III: p -= 1 -> 1; |T1| = p on a B2 hit: T1's LRU (the paper's tie rule)
                                                    4 -> B1   []  [1,3] [4] [0]   1
    """
    seq = [0, 1, 0, 1, 2, 3, 2, 4, 3, 0, 1, 2, 3, 0, 1, 4, 3]
    tr = from_pages(seq, Layout(5, 1))
    want = [[4, 0], [5, 2], [6, 1], [7, 2], [9, 3], [10, 4], [11, 0], [12, 1], [13, 2],
            [14, 3], [15, 0], [16, 4]]
    for engine in ("reference", "fast"):
        r = simulate(tr, "arc", 2, record=True, engine=engine)
        assert r.evictions.tolist() == want, engine
        assert np.flatnonzero(r.hit_mask).tolist() == [2, 3, 8]
        assert r.misses == 14
    pol = ARC()
    simulate(tr, pol, 2, engine="reference")
    assert (list(pol.T1), list(pol.T2), list(pol.B1), list(pol.B2), pol.p) == \
        ([], [1, 3], [4], [0], 1.0)
    # the tie rule decides request 16: without it T2's LRU page 1 would go
    assert simulate(tr.head(16), "arc", 2).misses == 13


def test_lecar_by_hand():
    """LeCaR, c = 2, one layer of 4 experts, requests 0 0 1 2 1 3. At t = 3 LRU proposes 0 (last
    used at t = 1), LFU proposes 1 (one request against two): one draw u0 decides, LRU's page
    when u0 < w_LRU = 0.5. Seed 0 draws u0 = 0.637 (LFU's page 1 goes, into H_LFU at time 3),
    so t = 4 (page 1) is a regret for LFU: w_LFU = 0.5·exp(-0.45·δ) + 1e-10 with δ =
    0.005^(1/2) for d = 1, normalised; then LRU proposes 0, LFU 2 (frequency 1) and u1 = 0.270
    < w_LRU ≈ 0.508 evicts 0. At t = 5 (page 3) the cache {2, 1} holds two pages of frequency 1:
    both experts propose 2 (least recent, and reached frequency 1 first), no draw. Seed 2 draws
    u0 = 0.262 < 0.5: 0 goes at t = 3 and t = 4 is a hit."""
    tr = from_pages([0, 0, 1, 2, 1, 3], Layout(4, 1))
    u = np.random.default_rng(0).random(3)
    assert u[0] >= 0.5 and u[1] < 0.5
    assert np.random.default_rng(2).random() < 0.5
    for engine in ("reference", "fast"):
        r0 = simulate(tr, "lecar", 2, seed=0, record=True, engine=engine)
        assert r0.evictions.tolist() == [[3, 1], [4, 0], [5, 2]], engine
        r2 = simulate(tr, "lecar", 2, seed=2, record=True, engine=engine)
        assert r2.evictions.tolist() == [[3, 0], [5, 2]], engine
        assert r2.hit_mask.tolist() == [False, True, False, False, True, False]
    pol = LeCaR()
    simulate(tr.head(5), pol, 2, seed=0, engine="reference")
    d = 0.005 ** 0.5
    lfu = 0.5 * math.exp(-0.45 * d) + 1e-10
    s = lfu + 0.5 + 2e-10
    assert (pol.w_lfu, pol.w_lru) == (lfu / s, (0.5 + 1e-10) / s)
    assert pol.w_lru > u[1]


def test_libm_pow_and_exp_are_pythons():
    """The kernel's regrets call libm pow and exp as Python's float ** and math.exp do, so the
    weights agree to the last bit (checked on the discounts of many capacities and ages)."""
    from numba import njit

    @njit
    def both(base, d, lr):
        r = math.pow(base, float(d))
        return r, math.exp(-lr * r)

    for c in (1, 2, 3, 7, 16, 64, 100, 1000):
        dr = 0.005 ** (1.0 / c)
        for d in (1, 2, 3, 17, 64, 999, 12345):
            r = dr ** d
            assert both(dr, d, 0.45) == (r, math.exp(-0.45 * r))


def test_miss_curves_use_the_kernel():
    """``paging mrc`` (miss_curve) runs ARC and LeCaR per k in the kernel, ARC-DIST per layer
    and per share, LeCaR-DIST (one generator for all layers) per k; every size equals the
    reference loop."""
    rng = np.random.default_rng(4)
    lay = Layout(5, 3)
    pages = (np.arange(600) % 3) * 5 + np.minimum(rng.geometric(0.4, 600) - 1, 4)
    tr = from_pages(pages, lay)
    assert [curve_method(tr, nm) for nm in NAMES] == ["per-k", "per-k", "per-layer", "per-k"]
    for name in NAMES:
        assert fast.has_kernel(make_policy(name))
        want = [simulate(tr, name, k, seed=3, engine="reference").misses
                for k in range(1, lay.n_pages + 1)]
        assert miss_curve(tr, name, seed=3).tolist() == want, name


def test_subclasses_stay_in_the_reference_loop():
    class MyARC(ARC):
        pass

    class MyLeCaR(LeCaR):
        LEARNING_RATE = 0.1

    from paging.policies import PerLayer

    for cls in (MyARC, MyLeCaR):
        assert not fast.has_kernel(cls()) and not fast.has_kernel(PerLayer(cls))
    assert fast.plan(make_policy("lecar-dist"))[:2] == fast.plan_of("adaptive:LECAR")
    assert fast.needs_draws(fast.plan(make_policy("lecar-dist")))
    assert not fast.needs_draws(fast.plan(make_policy("arc")))
