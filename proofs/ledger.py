"""The theorem ledger: one row per theorem, produced by each ``proofs/theoremN.py``'s ``check()``.

A row records what was checked numerically and whether it held:

* ``theorem``: "Theorem 2"; ``statement``: the claim as a formula;
* ``grid``: the parameter grid that was run, as a short human-readable string;
* ``smallest_margin``: min over the grid of (measured − bound) for a lower bound (or
  bound − measured for an upper bound), exact (``fractions.Fraction``/sympy) where possible;
* ``holds``: every grid point satisfied the claim; ``witness``: the grid point at the
  smallest margin (or the first violation);
* ``errata``: steps of the printed proof that are wrong as printed, each with the corrected step;
* ``corrected_statement`` / ``holds_corrected``: when the statement as printed fails somewhere
  (``holds`` is False), the corrected statement that was checked instead and whether it held;
* ``power_checks``: deliberately wrong variants of the claim, each run through the row's own
  checks on the row's own grid; every one must be rejected (``fails``), or the row's checks
  could not tell a false claim from a true one there.

A theorem *stands* when every power check fails (there is at least one) and the claim holds as
printed or, failing that, as corrected. A row whose power check does not fail is reported as
"NOT EVIDENCE" and does not stand, whatever ``holds`` says. ``holds`` is always computed from
every check the row prints (no constant verdicts; ``tests/unit/test_ledger_power.py``).

Errata carry a ``grade``: ``"error"`` (the statement as printed is false, or changes), ``"gap"``
(the statement may be true but the printed proof does not show it), ``"typo"`` (a slip with
an obvious intended reading; neither statement nor proof changes), each with its ``witness``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from fractions import Fraction

from adversaries.base import jsonable

#: Erratum grades: the statement changes / the proof does not show it / a slip of notation.
GRADES = ("error", "gap", "typo")


@dataclass
class Erratum:
    where: str          # e.g. "proof of Theorem 5, line 'E(T) >= log(C/log 2) / (2(1+N/(N-1)))'"
    printed: str        # the step as printed
    problem: str        # why it is wrong (with a counterexample when there is one)
    corrected: str      # the corrected step
    # the corrected step was verified (sympy / exact arithmetic, a replayed witness): True;
    # its check failed: False (the row then does not stand: the ledger's own reading of the
    # paper did not verify); None: nothing to compute (a garbled symbol read from its context)
    verified: bool | None
    grade: str = "gap"  # "error" (statement changes), "gap" (proof does not show it), "typo"
    witness: str = ""   # the instance / computation that shows the problem

    def __post_init__(self):
        if self.grade not in GRADES:
            raise ValueError(f"erratum grade must be one of {GRADES}, got {self.grade!r}")


@dataclass
class PowerCheck:
    """A deliberately wrong variant of a row's claim that the row's own checks must reject.

    ``fails`` is True when the wrong variant was rejected (as it must be): a row whose power
    check does not fail cannot tell a true claim from a false one on its grid, so its verdict
    is not evidence. ``detail`` says where it failed (the witness) or why it did not.
    """

    name: str           # e.g. "bound with k-2 in place of k-l+1"
    description: str    # what was changed and why it must fail
    fails: bool         # the wrong variant was rejected on the row's grid
    detail: str = ""


@dataclass
class LedgerRow:
    theorem: str
    statement: str
    grid: str
    smallest_margin: float | Fraction | str
    holds: bool
    witness: dict
    errata: list[Erratum] = field(default_factory=list)
    notes: str = ""
    corrected_statement: str = ""
    holds_corrected: bool | None = None
    power_checks: list[PowerCheck] = field(default_factory=list)

    @property
    def powered(self) -> bool:
        """At least one power check, and every one failed (the checks can tell)."""
        return bool(self.power_checks) and all(bool(pc.fails) for pc in self.power_checks)

    @property
    def unverified(self) -> list[Erratum]:
        """The errata whose check failed (``verified`` False)."""
        return [e for e in self.errata if e.verified is False]

    @property
    def stands(self) -> bool:
        """Every power check failed, the claim holds as printed or else as corrected (see
        ``errata``), and no erratum's check failed (a correction or a witness the ledger
        records but cannot verify is a reading, not a verdict)."""
        return (self.powered and (bool(self.holds) or bool(self.holds_corrected))
                and not self.unverified)

    def to_dict(self) -> dict:
        """JSON-ready: exact Fractions as ``"p/q"`` strings (the margin, witnesses), numpy
        scalars unwrapped, non-finite floats as strings (:func:`adversaries.base.jsonable`)."""
        d = jsonable(asdict(self), exact=True)
        d["powered"] = self.powered
        d["stands"] = self.stands
        return d
