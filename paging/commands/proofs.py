"""``paging proofs [--json]``: check every theorem of the ledger and print it.

Runs ``check()`` of every module of :data:`proofs.MODULES` (layered paging's Theorems 1-5,
GreedyDual and the weighted offline bounds, ZipMoE's Theorems 3.1 and 3.2); a ``check()`` that
raises is reported as an error. Exit status 0 when every present theorem stands (holds as
printed or, where the ledger records that the printed statement fails, as corrected), else 1.
The ``proofs`` package sits above ``paging`` in the import order, so it is imported only here,
inside the command.
"""

from __future__ import annotations


def add_parser(sub) -> None:
    p = sub.add_parser("proofs", help="check every theorem numerically and print the ledger",
                       description="Run the checks of the ledger's modules (layered paging "
                       "Theorems 1-5, GreedyDual and the weighted offline bounds, ZipMoE "
                       "Theorems 3.1 and 3.2: numerical grids, symbolic proof steps) and print "
                       "one ledger row per theorem: statement, "
                       "grid, smallest margin, holds, witness, errata. Exit status 1 when a "
                       "theorem holds neither as printed nor as corrected. Takes a minute or "
                       "more: a progress bar over the rows (with the time left) on stderr when "
                       "it is a terminal and --json is not given.")
    p.add_argument("--json", action="store_true",
                   help="print a JSON list of ledger rows (LedgerRow.to_dict())")
    p.add_argument("--verify", action="store_true",
                   help="record and check independently every run the checks make through "
                        "paging.simulate (paging.simulate.verifying), an adaptive adversary's "
                        "count against a verified replay; a run that fails makes its row an "
                        "error (exit status 1)")
    p.set_defaults(func=run)


def run(args) -> int:
    import contextlib

    import proofs
    from paging.cli import print_json
    from paging.simulate import verifying

    with verifying() if args.verify else contextlib.nullcontext():
        # a bar over the rows (a few minutes in all), on a terminal and without --json
        entries = proofs.run_ledger(show=False if args.json else None)
    if args.json:
        print_json(proofs.ledger_json(entries))
    else:
        print(proofs.format_ledger(entries))
    return proofs.exit_status(entries)
