"""The one theorem ledger: every theorem the package checks, from any paper, one module each.

Rows, in order: Theorems 1-5 of Angelopoulos et al. (``proofs.theoremN``), with Theorem 2's
proof extended to every ℓ <= k < nℓ (``proofs.theorem2_general``) and Theorem 4's corrected
bound beyond the exact grid and in its log term's regime (``proofs.theorem4_regimes``); LLRU's
tested bound
and Definition 2's two readings (``proofs.llru``); weighted paging —
GreedyDual/Landlord/Layered Landlord <= k·OPT_w (``proofs.greedy_dual``, Young 1994/2002),
Landlord with sizes against the exact OPT_h of a smaller cache (``proofs.landlord_sizes``) and
the offline bounds LP <= ILP <= online, FOO-L <= ILP <= FOO-U (``proofs.offline_bounds``);
ZipMoE's Theorems 3.1 and 3.2 (``proofs.zipmoe_theorem31``, ``proofs.zipmoe_theorem32``).
Each module has ``check() -> LedgerRow`` (:mod:`proofs.ledger`). :func:`run_ledger` runs them
in order; a ``check()`` that raises is reported as an *error* (counted as not holding), except
an interrupt (Ctrl-C, also when numba wraps it in a SystemError), which stops the ledger.
``python -m proofs [--json]`` and ``paging proofs [--json]`` print the ledger; the exit
status is 0 when every theorem *stands* (every power check of its row fails, and it holds as
printed or, where the ledger records that the printed statement fails, as corrected) and 1
otherwise.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from proofs.ledger import Erratum, LedgerRow, PowerCheck

__all__ = ["MODULES", "Entry", "Erratum", "LedgerRow", "PowerCheck", "run_ledger", "format_ledger",
           "ledger_json", "exit_status", "main"]

MODULES = ("proofs.theorem1", "proofs.theorem2", "proofs.theorem2_general", "proofs.theorem3",
           "proofs.theorem4", "proofs.theorem4_regimes", "proofs.theorem5", "proofs.llru",
           "proofs.greedy_dual",
           "proofs.landlord_sizes", "proofs.offline_bounds", "proofs.zipmoe_theorem31",
           "proofs.zipmoe_theorem32",
           "proofs.predictions_blind_oracle", "proofs.predictions_marker",
           "proofs.predictions_robust", "proofs.adversary_search", "proofs.robust_combiner",
           "proofs.adversary_empirical")


@dataclass
class Entry:
    """One line of the ledger: a theorem module and what its ``check()`` returned."""

    module: str
    status: str                 # "ok" (checked) or "error" (check raised)
    row: LedgerRow | None = None
    error: str = ""

    @property
    def theorem(self) -> str:
        if self.row is not None:
            return self.row.theorem
        # check() returned no row: "proofs.theorem4" is Theorem 4; any other module is named
        # in full (proofs.zipmoe_theorem31 is not a "Theorem 31", nor theorem4_regimes a
        # "Theorem 4_regimes")
        head, _, number = self.module.rpartition(".theorem")
        return f"Theorem {number}" if head == "proofs" and number.isdigit() else \
            f"Theorem {self.module}"

    @property
    def holds(self) -> bool:
        return self.status == "ok" and bool(self.row.holds)

    @property
    def stands(self) -> bool:
        return self.status == "ok" and self.row.stands


def run_ledger(modules=None, show: bool | None = False) -> list[Entry]:
    """Import each module (default :data:`MODULES`) and run its ``check()``; see the module
    docstring. ``show``: a progress bar over the rows on stderr (:func:`paging.progress.bar`;
    None: when stderr is a terminal), with the row being checked and an estimate of the time
    left (the whole ledger takes minutes)."""
    from paging import progress
    from paging.cli import _is_interrupt

    names = list(MODULES if modules is None else modules)
    entries = []
    with progress.bar(len(names), "proofs", unit="row", show=show) as bar:
        for name in names:
            bar.set_postfix_str(name, refresh=True)
            mod = importlib.import_module(name)
            try:
                row = mod.check()
            except Exception as e:  # report it in the ledger; the exit status says it failed
                if _is_interrupt(e):  # Ctrl-C inside a compiled kernel: stop, as for any Ctrl-C
                    raise
                entries.append(Entry(name, "error", error=f"{type(e).__name__}: {e}"))
            else:
                entries.append(Entry(name, "ok", row))
            bar.update(1)
    return entries


def ledger_json(entries: list[Entry]) -> list[dict]:
    """The ``--json`` document: one row dict (:meth:`LedgerRow.to_dict`, JSON-ready) per theorem,
    plus ``module`` and ``status``; a theorem whose check raised has ``holds: false``, the error
    in ``notes`` and empty fields."""
    out = []
    for e in entries:
        if e.row is not None:
            d = e.row.to_dict()
        else:
            d = {"theorem": e.theorem, "statement": "", "grid": "", "smallest_margin": None,
                 "holds": False, "witness": {}, "errata": [], "notes": e.error,
                 "corrected_statement": "", "holds_corrected": None, "power_checks": [],
                 "powered": False, "stands": False}
        d.update(module=e.module, status=e.status)
        out.append(d)
    return out


def _indent(text: str, pad: str) -> str:
    return "\n".join(pad + line for line in str(text).splitlines())


def _margin(m) -> str:
    return f"{m:.6g}" if isinstance(m, float) else str(m)  # Fractions exactly, as "p/q"


def format_ledger(entries: list[Entry]) -> str:
    """The human-readable ledger."""
    blocks = []
    for e in entries:
        if e.status == "error":
            blocks.append(f"{e.theorem}: ERROR in {e.module}.check(): {e.error}")
            continue
        r = e.row
        verdict = ("holds" if r.holds else "DOES NOT HOLD as printed; holds as corrected"
                   if r.holds_corrected else "DOES NOT HOLD")
        if not r.powered:
            verdict += ("; NOT EVIDENCE: no power check" if not r.power_checks else
                        "; NOT EVIDENCE: a power check did not fail")
        if r.unverified:
            verdict += f"; NOT EVIDENCE: {len(r.unverified)} erratum check(s) failed"
        lines = [f"{r.theorem}: {verdict}",
                 f"  statement:       {r.statement}",
                 f"  grid:            {r.grid}",
                 f"  smallest margin: {_margin(r.smallest_margin)}",
                 f"  holds:           {r.holds}"]
        if r.corrected_statement:
            lines += [f"  corrected:       {r.corrected_statement}",
                      f"  holds corrected: {r.holds_corrected}"]
        lines += [
                  "  witness:         " + ", ".join(f"{k}={v}" for k, v in r.witness.items())]
        if r.errata:
            lines.append(f"  errata ({len(r.errata)}):")
            for i, er in enumerate(r.errata, 1):
                lines.append(f"    {i}. [{er.grade}] where: {er.where}")
                lines.append(f"       printed:   {er.printed}")
                lines.append(f"       problem:   {er.problem}")
                lines.append(f"       corrected: {er.corrected}")
                if er.witness:
                    lines.append(f"       witness:   {er.witness}")
                lines.append("       verified:  " + ("n/a (a reading of the text: nothing "
                                                         "to compute)" if er.verified is None
                                                         else str(er.verified)))
        else:
            lines.append("  errata:          none")
        if r.power_checks:
            lines.append(f"  power checks ({len(r.power_checks)}; each must fail):")
            for i, pc in enumerate(r.power_checks, 1):
                said = "fails (as it must)" if pc.fails else "DOES NOT FAIL"
                lines.append(f"    {i}. {pc.name}: {said}")
                lines.append(_indent(pc.description, "       "))
                if pc.detail:
                    lines.append(_indent(pc.detail, "       "))
        else:
            lines.append("  power checks:    none")
        if r.notes:
            lines.append("  notes:")
            lines.append(_indent(r.notes, "    "))
        blocks.append("\n".join(lines))
    held = sum(1 for e in entries if e.holds)
    stood = sum(1 for e in entries if e.stands)
    powered = sum(1 for e in entries if e.status == "ok" and e.row.powered)
    blocks.append(f"{held} of {len(entries)} checked theorems hold as printed; {stood} of "
                  f"{len(entries)} hold with the corrections recorded in the errata (and every "
                  f"power check failing); {powered} of {len(entries)} rows' power checks all "
                  "fail")
    return "\n\n".join(blocks)


def exit_status(entries: list[Entry]) -> int:
    """0 when every theorem stands, else 1."""
    return 0 if all(e.stands for e in entries) else 1


def main(argv=None) -> int:
    """``python -m proofs [--json]``: the same as ``paging proofs [--json]``."""
    import sys

    from paging.cli import main as cli_main

    return cli_main(["proofs", *(sys.argv[1:] if argv is None else argv)])
