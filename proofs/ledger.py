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
  (``holds`` is False), the corrected statement that was checked instead and whether it held.
  A theorem *stands* when it holds as printed or, failing that, as corrected.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from fractions import Fraction

from adversaries.base import jsonable


@dataclass
class Erratum:
    where: str          # e.g. "proof of Theorem 5, line 'E(T) >= log(C/log 2) / (2(1+N/(N-1)))'"
    printed: str        # the step as printed
    problem: str        # why it is wrong (with a counterexample when there is one)
    corrected: str      # the corrected step
    verified: bool      # the corrected step was verified (sympy / exact arithmetic)


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
    def stands(self) -> bool:
        """Holds as printed, or else as corrected (see ``errata``)."""
        return bool(self.holds) or bool(self.holds_corrected)

    def to_dict(self) -> dict:
        """JSON-ready: exact Fractions as ``"p/q"`` strings (the margin, witnesses), numpy
        scalars unwrapped, non-finite floats as strings (:func:`adversaries.base.jsonable`)."""
        return jsonable(asdict(self), exact=True)
