"""Competitive bounds and structural facts of paging, checked on random layered traces.

Traces are in rounds mode (the paper's model; in groups mode the pages of a group are pinned,
which is a different problem with its own optimum). OPT is Belady's rule (optimal for unit
costs, Belady 1966). The example counts follow the hypothesis profile loaded in
tests/conftest.py ("ci": 150 examples per test, "dev": 50), except the Marking test (40
examples of 1000 seeded runs each).
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import long_round_traces, round_traces, scored_for, topk_traces

from adversaries import classic, theorem2
from paging.coupon import harmonic
from paging.layout import Layout
from paging.policies import POLICY_NAMES, Policy, policy_names
from paging.simulate import simulate
from paging.trace import Trace, from_pages

# rounds-mode traces: one expert per layer per round, or K experts expanded into K rounds
traces = st.one_of(round_traces(), topk_traces(expand="rounds"))


def _k(trace: Trace, frac: float) -> int:
    return max(1, round(frac * trace.layout.n_pages))


def k_phases(pages, k: int) -> list[tuple[int, int]]:
    """Split ``pages`` into k-phases: maximal blocks with at most k distinct pages, from the
    start (the (k+1)-th distinct page opens the next phase). Returns [start, end) pairs.
    Written independently of the policies (no simulator)."""
    out, start, seen = [], 0, set()
    for i, p in enumerate(pages):
        if p not in seen and len(seen) == k:
            out.append((start, i))
            start, seen = i, set()
        seen.add(p)
    if len(pages):
        out.append((start, len(pages)))
    return out


@given(trace=st.one_of(traces, long_round_traces()), data=st.data())
def test_conservative_policies_are_k_competitive(trace, data):
    """LRU, FIFO, FWF: A(σ) <= k·OPT(σ) + k  [Sleator & Tarjan 1985]; LLRU has no published
    proof (the paper only claims it keeps LRU's guarantee), so this is an empirical check.
    Long traces on few pages with small k (cyclic ones make LRU ≈ k·OPT) keep the bound tight
    enough to be violated by a policy that is not k-competitive."""
    k = data.draw(st.integers(1, max(1, min(4, trace.layout.n_pages - 1))))
    opt = simulate(trace, "belady", k).misses
    for name in ("lru", "fifo", "fwf", "llru"):
        assert simulate(trace, name, k).misses <= k * opt + k, name


def test_k_competitive_check_has_power():
    """The bound above is violated by a policy that is not competitive: on the frequency trap
    0^30 (1 2)^30 with k = 2, LFU keeps the hot page 0 and misses all 61 requests, while
    OPT = 3 (pages 0, 1, 2 once each) and k·OPT + k = 8; LRU makes 3."""
    trace = from_pages([0] * 30 + [1, 2] * 30, Layout(3, 1))
    opt = simulate(trace, "belady", 2).misses
    assert opt == 3 and simulate(trace, "lru", 2).misses == 3
    assert simulate(trace, "lfu", 2).misses == 61 > 2 * opt + 2


@given(trace=traces, frac=st.floats(0, 1.2), seed=st.integers(0, 2**16))
def test_belady_is_below_every_registered_policy(trace, frac, seed):
    """Belady is OPT for demand paging. A DIST variant with k < ℓ has layers with no slot, and
    the simulator serves those requests without caching them (a bypass), which demand paging
    does not allow: on pages 0,1,0,1 (n=1, ℓ=2, k=1) lru-dist keeps page 0 and makes 3 misses,
    Belady must cache page 1 and makes 4. So DIST variants are compared only when k >= ℓ."""
    k = _k(trace, frac)
    opt = simulate(trace, "belady", k).misses
    for name in POLICY_NAMES:
        if name.endswith("-dist") and k < trace.layout.n_layers:
            continue
        assert opt <= simulate(scored_for(name, trace), name, k, seed=seed).misses, name


@given(trace=traces)
def test_stack_policies_never_miss_more_with_a_larger_cache(trace):
    """Inclusion property (Mattson et al. 1970): the eviction priority does not depend on k."""
    for name in ("lru", "llru", "belady"):
        misses = [simulate(trace, name, k).misses for k in range(1, trace.layout.n_pages + 2)]
        assert all(a >= b for a, b in zip(misses, misses[1:], strict=False)), (name, misses)


@given(trace=traces, frac=st.floats(0, 1.2), seed=st.integers(0, 2**16))
def test_fwf_and_marking_fault_at_most_k_times_per_phase(trace, frac, seed):
    k = _k(trace, frac)
    phases = k_phases(trace.pages.tolist(), k)
    assert sum(e - s for s, e in phases) == len(trace)
    for name in ("fwf", "marking"):
        hits = simulate(trace, name, k, seed=seed, record=True).hit_mask
        for s, e in phases:
            assert int((~hits[s:e]).sum()) <= k, (name, s, e)


def marking_mean_within_bound(trace: Trace, k: int, counts: list[int]) -> bool:
    """Whether the runs ``counts`` (one per independent seed) are consistent with
    E[A(σ)] <= 2H_k·OPT(σ) + k  [Fiat et al. 1991].

    Every count lies in [OPT, k·P] (P k-phases; a marking algorithm faults at most k times per
    phase, tested above), a range of width W. The empirical Bernstein bound (Maurer & Pontil,
    COLT 2009, Thm. 4) gives, with probability >= 1 − δ,
    E >= mean − sqrt(2·V·ln(2/δ)/S) − 7·W·ln(2/δ)/(3(S − 1)), V the sample variance; we reject
    only when even that lower confidence bound exceeds 2H_k·OPT + k. δ = 1e-6 per example makes a
    false alarm negligible over a whole run; unlike Hoeffding's W-wide tolerance, the width
    shrinks with the observed spread, so a biased policy is caught (see the power check below).
    """
    opt = simulate(trace, "belady", k).misses
    S = len(counts)
    W = k * len(k_phases(trace.pages.tolist(), k)) - opt
    mean = float(np.mean(counts))
    var = float(np.var(counts, ddof=1))
    log_term = math.log(2 / 1e-6)
    tol = math.sqrt(2 * var * log_term / S) + 7 * W * log_term / (3 * (S - 1))
    return mean - tol <= float(2 * harmonic(k) * opt + k)


MARKING_SEEDS = 1000


@settings(max_examples=40)
@given(trace=long_round_traces(max_rounds=600, min_pages=6, max_pages=12), data=st.data())
def test_randomized_marking_mean_is_within_2hk_opt_plus_k(trace, data):
    """k >= 5 on 6..12 pages, half of the time k = nℓ − 1: below k = 5, 2H_k >= k and even a
    marking algorithm with the worst choice rule cannot exceed the bound; with k = nℓ − 1 the
    cyclic traces are the worst case, where a wrong choice rule does exceed it."""
    k = data.draw(st.one_of(st.just(trace.layout.n_pages - 1),
                           st.integers(5, trace.layout.n_pages - 1)))
    counts = [simulate(trace, "marking", k, seed=s).misses for s in range(MARKING_SEEDS)]
    assert marking_mean_within_bound(trace, k, counts)


class SoonestMarking(Policy):
    """A deliberately bad marking algorithm: it evicts the unmarked page requested *soonest*."""

    name = "soonest-marking"
    clairvoyant = True

    def reset(self, ctx):
        super().reset(ctx)
        self.marked, self.last = set(), {}

    def on_hit(self, t, page):
        self.marked.add(page)
        self.last[page] = t

    on_insert = on_hit

    def on_evict(self, t, page):
        self.marked.discard(page)

    def victim(self, t, page, cache):
        unmarked = [q for q in cache.candidates if q not in self.marked]
        if not unmarked:
            self.marked.clear()
            unmarked = cache.candidates
        return min(unmarked, key=lambda q: self.ctx.next_use[self.last[q]])


def test_marking_check_has_power():
    """The check above rejects a marking algorithm with the wrong choice rule: on Theorem 3's
    cyclic sequence over k+1 = 7 pages, SoonestMarking misses every request (N = 700) while
    2H_6·OPT + k = 2·(49/20)·(6 + ⌈694/6⌉) + 6 = 603.8; real Marking (mean 289 over
    1000 seeds) passes on the same trace."""
    k, N = 6, 700
    trace = from_pages([i % (k + 1) for i in range(N)], Layout(k + 1, 1))
    bad = simulate(trace, SoonestMarking(), k).misses
    assert bad == N
    assert not marking_mean_within_bound(trace, k, [bad] * MARKING_SEEDS)
    counts = [simulate(trace, "marking", k, seed=s).misses for s in range(MARKING_SEEDS)]
    assert marking_mean_within_bound(trace, k, counts)


# the adaptive adversary chooses pages, not gate scores: policies that read scores are left out
DETERMINISTIC = policy_names(randomized=False, clairvoyant=False, needs_scores=False)


@given(n=st.integers(2, 4), layers=st.integers(1, 3), policy=st.sampled_from(DETERMINISTIC),
       data=st.data())
def test_theorem2_adversary_forces_k_minus_l_plus_1(n, layers, policy, data):
    """A(σ) >= (k − ℓ + 1)·OPT(σ) − c with c = (k + 1)(k − ℓ), k = nℓ − 1 (Theorem 2 of
    Angelopoulos et al., with the additive constant derived in adversaries/theorem2.py). Up to
    3k(k − ℓ + 1) rounds, so that OPT's evicting misses (>= k − ℓ + 1 rounds apart) dominate."""
    k = n * layers - 1
    rounds = data.draw(st.integers(1, 3 * k * (k - layers + 1)))
    r = theorem2.build(policy, n=n, layers=layers, rounds=rounds)
    assert r.k == k
    assert r.online_misses >= (k - layers + 1) * r.opt_misses - (k + 1) * (k - layers)
    assert r.online_misses >= rounds + layers - 1  # one forced miss per round + round 0


@given(n=st.integers(2, 4), layers=st.integers(1, 3), rounds=st.integers(1, 30),
       policy=st.sampled_from(DETERMINISTIC), data=st.data())
def test_sleator_tarjan_adversary_bound(n, layers, rounds, policy, data):
    k = data.draw(st.integers(layers, n * layers - 1))
    r = classic.sleator_tarjan(policy, n=n, layers=layers, rounds=rounds, k=k)
    g = k - layers + 1
    assert r.online_misses >= g * r.opt_misses - (k + 1) * (k - layers)
    if layers == 1:  # classic: every request is a miss
        assert r.online_misses == rounds
    assert set(np.unique(r.trace.pages).tolist()) <= {
        p for layer in classic.page_set(r.trace.layout, k) for p in layer}
