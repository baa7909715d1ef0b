"""The ``paging`` command's argument parsing (paging.cli): one-line errors, exit status 2."""

from __future__ import annotations

from paging.cli import main


def test_an_abbreviated_option_is_not_taken_for_another(capsys):
    """``--out`` is no option of ``paging serve``: argparse's prefix matching would take it
    for ``--output-len`` (its one option starting so) and answer about that option; every
    sub-command refuses it as unknown, and ``--pol`` is not ``--policy``."""
    rc = main(["serve", "zipf:n=4,layers=2,tokens=10", "--model", "mixtral-8x7b", "--k", "3",
               "--policy", "lru", "--rate", "1", "--duration", "1", "--out", "x.json"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert "unrecognized arguments: --out x.json" in err
    assert main(["simulate", "zipf:n=4,layers=2,tokens=10", "--pol", "lru", "--k", "3"]) == 2
    assert "required: --policy" in capsys.readouterr().err
