"""The ledger rows of Theorems 1-4 (proofs/theorem1.py .. theorem4.py).

Each ``check()`` runs its grid; here we assert what each row must say: Theorems 1-3 hold with a
non-negative exact margin and verified errata; Theorem 4 fails as printed at ℓ = 1 only.
"""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from paging.coupon import harmonic
from proofs import theorem1, theorem2, theorem3, theorem4
from proofs.ledger import LedgerRow


@pytest.fixture(scope="module")
def rows() -> dict[int, LedgerRow]:
    return {i: mod.check() for i, mod in enumerate((theorem1, theorem2, theorem3, theorem4), 1)}


@pytest.mark.parametrize("i", [1, 2, 3])
def test_deterministic_theorems_hold(rows, i):
    row = rows[i]
    assert row.theorem == f"Theorem {i}"
    assert row.holds
    assert isinstance(row.smallest_margin, (int, Fraction)) and row.smallest_margin >= 0
    assert row.errata and all(e.verified for e in row.errata)
    json.dumps(row.to_dict(), default=str)  # the ledger printer can serialise it


def test_theorem1_erratum_is_the_condition_on_k(rows):
    (e,) = rows[1].errata
    assert e.printed == "k > n + ℓ" and "n + ℓ − 1" in e.corrected


def test_theorem2_margin_is_tight_and_constant_is_needed(rows):
    row = rows[2]
    # the derived constant c = (k+1)(k−ℓ) is attained (margin 0) somewhere on the grid
    assert row.smallest_margin == 0
    w = row.witness
    assert w["online"] == (w["k"] - w["layers"] + 1) * w["opt"] - w["c"]
    assert "A(σ) >= (k − ℓ + 1)·OPT(σ)" == row.errata[0].printed


def test_theorem3_witness_satisfies_the_opt_formula(rows):
    w = rows[3].witness
    k, N = w["k"], w["requests"]
    assert w["lru"] == N
    assert w["opt"] == (N if N <= k else k + -(-(N - k) // k))


def test_theorem4_fails_at_one_layer_and_holds_beyond(rows):
    row = rows[4]
    assert not row.holds
    # the corrected statement (H_k at one layer; the printed bound for ℓ >= 2) holds
    assert row.holds_corrected is True and row.stands
    w = row.witness
    assert w["layers"] == 1
    # ρ(n, 1) = H_(n−1) = H_k < H_n, the stated bound
    assert Fraction(w["yao_value"]) == harmonic(w["n"] - 1) < Fraction(w["bound"])
    assert row.smallest_margin == Fraction(w["yao_value"]) - Fraction(w["bound"])
    assert all(e.verified for e in row.errata)
    # ℓ >= 2: the stated bound survives on the whole exact grid
    for n in theorem4.NS:
        for L in theorem4.LAYERS[1:]:
            bound, _ = theorem4._bound(n, L)
            assert theorem4.adv.yao_value(n, L) >= bound, (n, L)
