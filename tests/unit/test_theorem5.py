"""Theorem 5's ledger row (proofs/theorem5.py) and the ledger runner (proofs/__init__.py,
``python -m proofs``, ``paging proofs``)."""

from __future__ import annotations

import json
import math
import sys
import types
from fractions import Fraction

import pytest

import proofs
from paging.cli import main
from paging.coupon import expected_cover_time_exact, harmonic
from proofs import theorem5
from proofs.ledger import LedgerRow, PowerCheck


@pytest.fixture(scope="module")
def row() -> LedgerRow:
    return theorem5.check()


def test_row_holds_with_exact_zero_margin_at_one_collector(row):
    assert row.theorem == "Theorem 5" and row.holds is True
    # E[T(N,1)] = N·H_N: the first part is tight, so the smallest margin is exactly 0
    assert row.smallest_margin == Fraction(0) and isinstance(row.smallest_margin, Fraction)
    assert row.witness["C"] == 1 and row.witness["N"] == 2
    assert row.witness["expected_exact"] == "3"
    assert row.to_dict()["smallest_margin"] == "0"
    json.dumps(proofs.ledger_json([proofs.Entry("proofs.theorem5", "ok", row)]),
               allow_nan=False)


def test_only_the_product_index_is_an_erratum(row):
    assert len(row.errata) == 1
    er = row.errata[0]
    assert "ℓ" in er.printed and "C" in er.corrected and er.verified
    assert er.grade == "typo" and "enumeration" in er.witness


def test_power_checks_fail(row):
    # the log term with constant 2 fails at N = 2 for large C (E[T(2, C)] ≈ log2 C); the
    # strict N·H_N fails at C = 1 for every N of the grid
    names = [pc.name for pc in row.power_checks]
    assert names == ["log term 2·log C", "strict N·H_N at C = 1"]
    assert all(pc.fails for pc in row.power_checks) and row.stands


@pytest.fixture(scope="module")
def small_grid() -> dict:
    return theorem5.grid_check(ns=(2, 3), cs=(1, 2, 5, 2**30))


def test_proof_steps_verdicts(small_grid):
    steps, errata = theorem5.proof_steps(small_grid)
    verdict = {}
    for st in steps:
        verdict.setdefault(st.name, []).append(st.valid)
    # the only step flagged as wrong as printed is the product's index (an erratum, not a
    # failed check)
    assert [st.name for st in steps if st.erratum] == ["independence"]
    assert verdict.pop("independence") == [False]
    # every other printed step checks out, including the loose log(N/(N-1)) <= 1 + N/(N-1)
    assert all(all(v) for v in verdict.values()), verdict
    assert set(verdict) >= {"part 1", "first coupon", "exponential", "choice of t", "Markov",
                            "denominator", "algebra", "1/6", "last"}
    assert len(verdict["choice of t"]) == 7
    assert [e.verified for e in errata] == [True]


def test_markov_verdict_comes_from_the_grid(small_grid):
    def markov(grid):
        (st,) = [st for st in theorem5.proof_steps(grid)[0] if st.name == "Markov"]
        return st

    assert markov(small_grid).valid
    # a grid where E < t*/2 somewhere, or P(T >= t*) < 1/2, fails the step
    for key, value in (("min_markov", 0.9), ("min_prob", 0.4)):
        bad = dict(small_grid, **{key: (value, {"N": 2, "C": 3})})
        st = markov(bad)
        assert not st.valid and not st.erratum and str(value) in st.how


def test_probabilistic_step_checkers():
    assert theorem5._enumerate_product_rule(2, 2, 4)
    assert theorem5._first_coupon_bound(3, 7)
    # P(T(3,1) < 7) = P(6 draws cover 3 types) = 3!·S(6,3)/3^6 = 6·90/729 (Stirling numbers)
    p_less = 1 - sum(Fraction((-1) ** (j + 1) * math.comb(3, j)) * Fraction(3 - j, 3) ** 6
                     for j in (1, 2, 3))
    assert p_less == Fraction(6 * 90, 729) <= 1 - Fraction(2, 3) ** 7


def test_grid_check_on_a_small_grid(small_grid):
    c_big = 2**30  # log(C)/6 = 3.47 > 2·H_2 = 3: the second term is the active one at N = 2
    g = small_grid
    assert g["points"] == 8 and not g["violations"]
    # 30·log(2)/6 = 3.47 < 3·H_3 = 5.5: at N = 3 the log term is not the larger one
    assert g["log_from"] == {2: c_big}
    assert g["best"][0] == 0 and g["best"][1]["C"] == 1
    margin, wit = g["best_c2"]
    assert (wit["N"], wit["C"]) == (2, 2)
    assert margin == pytest.approx(float(expected_cover_time_exact(2, 2) - 3), rel=1e-13)
    # N = 2: P(T(2,1) > t) = 2^(1-t), so E[T(2,C)] = 2 + sum_{s>=1} 1 - (1 - 2^-s)^C
    e_big = 2 + math.fsum(-math.expm1(c_big * math.log1p(-(2.0**-s))) for s in range(1, 200))
    margin_log, wit_log = g["best_log"]
    assert (wit_log["N"], wit_log["C"]) == (2, c_big)
    assert margin_log == pytest.approx(e_big - math.log(c_big) / 6, rel=1e-13)
    assert g["min_prob"][0] >= 0.5 and g["min_markov"][0] >= 2.0


def test_where_the_log_term_is_larger(row):
    # log(C)/6 > N·H_N iff log2(C) > 6·N·H_N/log 2: 25.97 (N = 2), 47.6, 72.1, 98.8 (N = 5),
    # 127.2 (N = 6, beyond the grid's 2^100)
    assert ("where log(C)/6 is the larger term (N = 2 from C = 2^26, N = 3 from C = 2^48, "
            "N = 4 from C = 2^73, N = 5 from C = 2^99)") in row.notes


def test_exact_subgrid_agrees_with_the_series():
    ex = theorem5.exact_subgrid(ns=(2, 3, 4), cs=(1, 2, 3))
    assert ex["smallest"] == (0, 2, 1)
    assert ex["worst_rel_dev"] < 1e-14
    assert expected_cover_time_exact(4, 3) - 4 * harmonic(4) > 0


# -- the ledger runner ---------------------------------------------------------------------------

def _fake(monkeypatch, name: str, holds: bool | None, raises: bool = False,
          holds_corrected: bool | None = None, power_fails: bool = True) -> str:
    full = f"proofs.fake_{name}"
    mod = types.ModuleType(full)

    def check():
        if raises:
            raise ValueError("boom")
        return LedgerRow(theorem=f"Theorem {name}", statement="s", grid="g",
                         smallest_margin=Fraction(1, 3), holds=holds, witness={"n": 1},
                         corrected_statement="c" if holds_corrected is not None else "",
                         holds_corrected=holds_corrected,
                         power_checks=[PowerCheck("wrong", "a wrong variant", power_fails)])

    mod.check = check
    monkeypatch.setitem(sys.modules, full, mod)
    return full


def test_ledger_runner_statuses_and_exit_code(monkeypatch, capsys):
    ok = _fake(monkeypatch, "ok", True)
    bad = _fake(monkeypatch, "bad", False)
    err = _fake(monkeypatch, "err", True, raises=True)
    monkeypatch.setattr(proofs, "MODULES", (ok,))
    assert main(["proofs"]) == 0
    out = capsys.readouterr().out
    assert "Theorem ok: holds" in out
    assert "smallest margin: 1/3" in out and "1 of 1 checked theorems hold" in out

    monkeypatch.setattr(proofs, "MODULES", (ok, bad, err))
    assert main(["proofs", "--json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert [(r["module"], r["status"], r["holds"]) for r in rows] == [
        (ok, "ok", True), (bad, "ok", False), (err, "error", False)]
    assert rows[0]["smallest_margin"] == "1/3" and rows[2]["notes"] == "ValueError: boom"
    # named after the module (proofs.theoremN gives "Theorem N"): check() never returned a row
    assert rows[2]["theorem"] == "Theorem proofs.fake_err"
    assert proofs.main(["--json"]) == 1
    out = capsys.readouterr().out
    assert json.loads(out)[2]["status"] == "error"
    monkeypatch.setattr(proofs, "MODULES", (ok, err))
    assert main(["proofs"]) == 1
    assert "Theorem proofs.fake_err: ERROR in proofs.fake_err.check(): ValueError: boom" in \
        capsys.readouterr().out

    # a statement that fails as printed but holds as corrected stands (exit 0), and says so
    fixed = _fake(monkeypatch, "fixed", False, holds_corrected=True)
    monkeypatch.setattr(proofs, "MODULES", (ok, fixed))
    assert main(["proofs"]) == 0
    out = capsys.readouterr().out
    assert "Theorem fixed: DOES NOT HOLD as printed; holds as corrected" in out
    assert "1 of 2 checked theorems hold as printed; 2 of 2 hold with the corrections" in out
    unfixed = _fake(monkeypatch, "unfixed", False, holds_corrected=False)
    monkeypatch.setattr(proofs, "MODULES", (ok, unfixed))
    assert main(["proofs"]) == 1
    capsys.readouterr()

    # a row that holds but whose power check does not fail is not evidence: it does not stand
    weak = _fake(monkeypatch, "weak", True, power_fails=False)
    monkeypatch.setattr(proofs, "MODULES", (ok, weak))
    assert main(["proofs"]) == 1
    out = capsys.readouterr().out
    assert "Theorem weak: holds; NOT EVIDENCE: a power check did not fail" in out
    assert "1. wrong: DOES NOT FAIL" in out
    assert main(["proofs", "--json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert rows[1]["power_checks"] == [{"name": "wrong", "description": "a wrong variant",
                                        "fails": False, "detail": ""}]
    assert (rows[1]["holds"], rows[1]["powered"], rows[1]["stands"]) == (True, False, False)
    assert (rows[0]["powered"], rows[0]["stands"]) == (True, True)
