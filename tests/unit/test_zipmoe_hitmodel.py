"""ZipMoE hit model (paging.zipmoe.hitmodel): exact small cases, DP == enumeration, Theorem 3.2."""

from fractions import Fraction as F

import numpy as np
import pytest
from conftest import needs_traces
from hypothesis import given
from hypothesis import strategies as st

from paging.errors import PagingError
from paging.zipmoe import hitmodel as hm


def test_poisson_binomial_by_hand():
    # P(0) = 1/2·2/3, P(1) = 1/2·2/3 + 1/2·1/3, P(2) = 1/2·1/3
    assert hm.poisson_binomial([F(1, 2), F(1, 3)]) == [F(1, 3), F(1, 2), F(1, 6)]


def test_hit_pattern_by_hand():
    # three equal experts, k = 1: the one selected is in pool 0 (rank 0) with probability 1/3
    d = hm.hit_pattern_distribution([F(1, 2)] * 3, (1,), 1)
    assert d == {(1, 0): F(1, 3), (0, 1): F(2, 3)}


probs = st.fractions(min_value=0, max_value=1, max_denominator=7)


@given(st.lists(probs, min_size=1, max_size=7), st.data())
def test_dp_equals_enumeration(q, data):
    n = len(q)
    k = data.draw(st.integers(1, n))
    sizes = data.draw(st.lists(st.integers(0, 3), max_size=3).filter(lambda s: sum(s) <= n))
    try:
        brute = hm.hit_pattern_bruteforce(q, sizes, k)
    except PagingError:                      # no k-subset possible: the DP must say so too
        with pytest.raises(PagingError):
            hm.hit_pattern_distribution(q, sizes, k)
        return
    assert hm.hit_pattern_distribution(q, sizes, k) == brute
    assert sum(brute.values()) == 1


def test_selection_probabilities_fit_the_marginals():
    f = [0.9, 0.6, 0.3, 0.2]
    q = hm.selection_probabilities(f, 2)
    assert q[0] == pytest.approx(0.5)        # scaled so that max w = 1
    assert np.allclose(hm.conditional_marginals(list(q), 2), f, atol=1e-10)


def test_theorem32_max_entropy_agreement_and_power():
    f = [0.9, 0.6, 0.3, 0.2]
    dp = hm.subset_distribution(list(hm.selection_probabilities(f, 2)), 2)
    me = hm.max_entropy_subsets(f, 2)
    assert max(abs(float(dp[S]) - me[S]) for S in dp) < 1e-10   # both iterate to 1e-11
    other = hm.same_marginals_perturbation(dp, 4, 2)
    A = [sum(other[S] for S in other if i in S) for i in range(4)]
    assert np.allclose(A, f, atol=1e-12)                 # same marginals ...
    assert hm.entropy(other) < hm.entropy(dp) - 1e-4     # ... strictly lower entropy


@pytest.mark.parametrize("call, msg", [
    (lambda: hm.poisson_binomial([0.5, 1.2]), "q[1] must be a probability"),
    (lambda: hm.selection_probabilities([0.5, 0.4], 1), "must sum to k = 1"),
    (lambda: hm.hit_pattern_distribution([0.5, 0.5], (1,), 3), "at most the number of experts"),
    (lambda: hm.selection_probabilities([0.5, -0.5], 1), "f[1] must be a probability"),
])
def test_bad_input(call, msg):
    with pytest.raises(PagingError, match=msg.replace("[", r"\[").replace("]", r"\]")) as e:
        call()
    assert "\n" not in str(e.value)


def test_ledger_row_theorem32_holds():
    from proofs.zipmoe_theorem32 import check

    row = check()
    assert row.holds and row.smallest_margin > 0 and row.stands
    assert any("f_i / f_i^(t)" in e.corrected and e.verified for e in row.errata)
    # App. C's "normalized counterpart" is not an erratum (q comes from IPF in the same
    # sentence); q = f survives only as a power check
    assert not any("App. C" in e.where for e in row.errata)
    assert [pc.fails for pc in row.power_checks] == [True, True]


@needs_traces
def test_real_trace_fit_runs():
    rows = hm.trace_fit()
    assert [r["k"] for r in rows] == [2, 2, 8, 8, 8]
    for r in rows:
        assert r["skipped_groups"] == 0
        assert np.allclose(r["mean_hits_observed"], r["mean_hits_predicted"], atol=1e-8)
    assert rows[0]["groups"] == 2592 and rows[2]["groups"] == 2472
