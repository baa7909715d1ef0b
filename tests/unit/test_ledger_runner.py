"""The ledger runner (:func:`proofs.run_ledger`, ``paging proofs``): interrupts and progress."""

from __future__ import annotations

import sys
import types
from fractions import Fraction

import pytest

import proofs
from paging.cli import main
from proofs.ledger import LedgerRow, PowerCheck


def _module(monkeypatch, name: str, check) -> str:
    full = f"proofs.fake_runner_{name}"
    mod = types.ModuleType(full)
    mod.check = check
    monkeypatch.setitem(sys.modules, full, mod)
    return full


def _row() -> LedgerRow:
    return LedgerRow(theorem="T", statement="s", grid="g", smallest_margin=Fraction(0),
                     holds=True, witness={}, power_checks=[PowerCheck("w", "d", True)])


def _numba_interrupt():
    """What a Ctrl-C inside a numba-compiled kernel raises: a SystemError chained from the
    KeyboardInterrupt (see paging.cli._is_interrupt)."""
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as e:
        raise SystemError("CPUDispatcher(<function kernel>) returned a result with an "
                          "exception set") from e


def test_an_interrupt_inside_a_kernel_stops_the_ledger(monkeypatch, capsys):
    ran = []
    first = _module(monkeypatch, "first", _numba_interrupt)
    second = _module(monkeypatch, "second", lambda: ran.append(1) or _row())
    with pytest.raises(SystemError):
        proofs.run_ledger([first, second])
    assert ran == []            # the rows after the interrupt are not run
    monkeypatch.setattr(proofs, "MODULES", (first, second))
    assert main(["proofs"]) == 130
    captured = capsys.readouterr()
    assert captured.err == "error: interrupted\n" and captured.out == "" and ran == []


def test_a_systemerror_of_its_own_is_still_a_row_error(monkeypatch):
    def bug():
        raise SystemError("a bug")

    entries = proofs.run_ledger([_module(monkeypatch, "bug", bug)])
    assert entries[0].status == "error" and entries[0].error == "SystemError: a bug"


def test_progress_bar_over_the_rows(monkeypatch, capsys):
    mods = [_module(monkeypatch, f"r{i}", _row) for i in range(3)]
    entries = proofs.run_ledger(mods, show=True)
    assert [e.status for e in entries] == ["ok"] * 3
    err = capsys.readouterr().err
    assert "proofs:" in err and "/3 [" in err and "row/s" in err
    assert "proofs.fake_runner_r0" in err      # the row being checked
    proofs.run_ledger(mods)     # the default: no bar
    assert capsys.readouterr().err == ""


def test_the_command_shows_the_bar_on_a_terminal_only_without_json(monkeypatch, capsys):
    mods = tuple(_module(monkeypatch, f"c{i}", _row) for i in range(2))
    monkeypatch.setattr(proofs, "MODULES", mods)
    seen = []
    real = proofs.run_ledger

    def spy(modules=None, show=False):
        seen.append(show)
        return real(modules, show=show)

    monkeypatch.setattr(proofs, "run_ledger", spy)
    assert main(["proofs"]) == 0
    assert main(["proofs", "--json"]) == 0
    assert seen == [None, False]   # None: drawn when stderr is a terminal
    capsys.readouterr()


def test_a_row_whose_check_raised_is_named_after_its_module():
    def name(module):
        return proofs.Entry(module, "error", error="E").theorem

    assert name("proofs.theorem4") == "Theorem 4"
    assert name("proofs.zipmoe_theorem31") == "Theorem proofs.zipmoe_theorem31"  # not "31"
    assert name("proofs.theorem4_regimes") == "Theorem proofs.theorem4_regimes"
    assert name("proofs.llru") == "Theorem proofs.llru"
