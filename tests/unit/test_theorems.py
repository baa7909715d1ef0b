"""The ledger rows of Theorems 1-4 (proofs/theorem1.py .. theorem4.py).

Each ``check()`` runs its grid; here we assert what each row must say: Theorems 1-3 hold with a
non-negative exact margin and verified errata; Theorem 4 fails as printed at ℓ = 1 only.
"""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

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
    # the derived constant c = (k+1)(k−ℓ) is attained (margin 0) somewhere on the grid; ties
    # go to the largest k: n = ℓ = 4, k = 15, R = k − ℓ + 2 = 13 rounds. Round 0 brings 4 pages,
    # each later round one new page (the smallest missing), so the 16th page arrives in the last
    # round: no eviction before it, every policy misses exactly the 16 first requests, and OPT
    # (16 distinct pages) too. c = 16·11 = 176 and (k − ℓ + 1)·OPT − c = 12·16 − 176 = 16 = A.
    assert row.smallest_margin == 0
    w = row.witness
    assert (w["n"], w["layers"], w["k"], w["rounds"]) == (4, 4, 15, 13)
    assert (w["online"], w["opt"], w["c"]) == (16, 16, 176)
    # the constant-free last sentence is a remark (Definition 1 allows the constant), not an
    # erratum; the missing hypothesis on k is: at k = nℓ every page fits and LRU = OPT
    assert "Remark (not an erratum)" in row.notes and "A(σ) >= (k − ℓ + 1)·OPT(σ)" in row.notes
    assert [e.grade for e in row.errata] == ["gap", "error"]
    assert row.errata[1].where == "Theorem 2 statement" and row.errata[1].verified
    assert "n=2, ℓ=2, k=4: LRU 4 = OPT 4, claimed ratio 3" in row.errata[1].witness


def test_theorem2_runs_every_deterministic_online_policy(rows):
    # the registry's deterministic online policies: all but marking(-dist), lecar,
    # predictive-marker and lmarker (randomized), belady(-dist) (clairvoyant) and
    # score-based(-dist) (reads gate scores, which the adversary's sequences do not have);
    # the weighted ones run with unit costs
    listed = rows[2].notes.split("policies: ", 1)[1].split(". ", 1)[0].split(", ")
    base = ["lru", "fifo", "lfu", "fwf", "llru", "llru-latest", "least-stale",
            "least-stale-upcoming", "least-stale-layer", "fld", "fld-cyclic", "greedy-dual",
            "landlord", "gdsf", "layered-landlord", "lhu", "arc", "blind-oracle",
            "robust-blind-oracle", "token-hazard", "token-decay", "token-match",
            "robust-token-match"]
    # blind-oracle and robust-blind-oracle run with their default (online) predictor;
    # token-hazard, token-decay and token-match with their registered defaults (no scores
    # needed)
    assert listed == base + [f"{name}-dist" for name in base]


@pytest.mark.parametrize("i", [1, 2, 3, 4])
def test_power_checks_fail_and_rows_stand(rows, i):
    row = rows[i]
    assert row.power_checks and all(pc.fails for pc in row.power_checks), row.power_checks
    assert row.powered and row.stands
    assert all(e.grade in ("error", "gap", "typo") for e in row.errata)


def test_theorem3_erratum_is_the_index_typo(rows):
    (e,) = rows[3].errata
    assert e.grade == "typo" and "0 mismatches" in e.witness
    assert [pc.name for pc in rows[3].power_checks] == [
        "ratio k + 1", "OPT = ⌈N/k⌉", "Belady passed off as LRU"]


def test_theorem4_records_the_missing_k(rows):
    e = rows[4].errata[2]
    assert e.grade == "error" and e.verified
    # k = 1 at ℓ = 2: every request misses for LRU and OPT alike (300 rounds, 600 requests)
    assert "n=2, ℓ=2, k=1: LRU 600 = OPT 600" in e.witness


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
    # ℓ = 1: ρ(n, 1) − H_n = H_(n−1) − H_n = −1/n, smallest at n = 2 (k = 1): ρ(2, 1) = H_1 = 1
    # against the stated H_2 = 3/2; E[T(2, 1)]/2 = 2·H_2/2 = 3/2 as well
    assert row.smallest_margin == Fraction(-1, 2)
    assert row.witness == {"n": 2, "layers": 1, "k": 1, "yao_value": "1", "bound": "3/2",
                           "bound_term": "H_n", "cover_time_ratio": "3/2"}
    assert all(e.verified for e in row.errata)
    # ℓ >= 2: the tightest point is n = ℓ = 2, where E[L] = 6 (derived by hand in
    # test_adversaries.py::test_theorem4_yao_values_by_hand), so ρ = 6/4 = 3/2 = H_2, margin 0;
    # ρ(n, ℓ) >= H_n itself is checked against the independent chain in
    # test_adversaries.py::test_theorem4_stated_bound_beyond_one_layer_by_the_chain
    assert "smallest margin 0 at n=2, ℓ=2" in row.errata[1].corrected
