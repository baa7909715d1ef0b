"""Competitive bounds and structural facts of paging, checked on random layered traces.

Traces are in rounds mode (the paper's model; in groups mode the pages of a group are pinned,
which is a different problem with its own optimum). OPT is Belady's rule (optimal for unit
costs, Belady 1966). The example counts follow the hypothesis profile loaded in
tests/conftest.py ("ci": 150 examples per test, "dev": 50); the whole file takes a few
seconds under "ci".
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from strategies import round_traces, topk_traces

from adversaries import classic, theorem2
from paging.policies import POLICY_NAMES, make_policy
from paging.simulate import simulate
from paging.trace import Trace

# rounds-mode traces: one expert per layer per round, or K experts expanded into K rounds
traces = st.one_of(round_traces(), topk_traces(expand="rounds"))


def _k(trace: Trace, frac: float) -> int:
    return max(1, round(frac * trace.layout.n_pages))


def _harmonic(k: int) -> Fraction:
    return sum((Fraction(1, i) for i in range(1, k + 1)), Fraction(0))


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


@given(trace=traces, frac=st.floats(0, 1.2))
def test_conservative_policies_are_k_competitive(trace, frac):
    """LRU, FIFO, FWF: A(σ) <= k·OPT(σ) + k  [Sleator & Tarjan 1985]; LLRU has no published
    proof (the paper only claims it keeps LRU's guarantee), so this is an empirical check."""
    k = _k(trace, frac)
    opt = simulate(trace, "belady", k).misses
    for name in ("lru", "fifo", "fwf", "llru"):
        assert simulate(trace, name, k).misses <= k * opt + k, name


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
        assert opt <= simulate(trace, name, k, seed=seed).misses, name


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


@given(trace=traces, frac=st.floats(0, 1.0))
def test_randomized_marking_mean_is_within_2hk_opt_plus_k(trace, frac):
    """E[Marking(σ)] <= 2H_k·OPT(σ) + k  [Fiat et al. 1991], on the mean of S seeds.

    Tolerance: the S runs are independent (one seed each) and, by the per-phase test above and
    OPT's optimality, each count lies in [OPT, k·P] (P phases). Hoeffding's inequality gives
    P(mean − E >= ε) <= exp(−2Sε²/W²) with W = k·P − OPT; ε = W·sqrt(ln(1/δ)/(2S)) with
    δ = 1e-9 makes a false alarm negligible over every example of every run.
    """
    k = _k(trace, frac)
    opt = simulate(trace, "belady", k).misses
    S = 40
    mean = Fraction(sum(simulate(trace, "marking", k, seed=s).misses for s in range(S)), S)
    width = k * len(k_phases(trace.pages.tolist(), k)) - opt
    eps = width * math.sqrt(math.log(1e9) / (2 * S))
    assert mean <= 2 * _harmonic(k) * opt + k + Fraction(eps)


DETERMINISTIC = [n for n in POLICY_NAMES
                 if not make_policy(n).randomized and not make_policy(n).clairvoyant]


@given(n=st.integers(2, 4), layers=st.integers(1, 3), rounds=st.integers(1, 40),
       policy=st.sampled_from(DETERMINISTIC))
def test_theorem2_adversary_forces_k_minus_l_plus_1(n, layers, rounds, policy):
    """A(σ) >= (k − ℓ + 1)·OPT(σ) − c with c = (k + 1)(k − ℓ), k = nℓ − 1 (Theorem 2 of
    Angelopoulos et al. 2025, with the additive constant derived in adversaries/theorem2.py)."""
    r = theorem2.build(policy, n=n, layers=layers, rounds=rounds)
    k, g = r.k, r.k - layers + 1
    c = (k + 1) * (k - layers)
    assert r.params["additive_constant"] == c
    assert r.online_misses >= g * r.opt_misses - c
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
