"""The documentation pages generated from the registries (docs/site/generated.py) list every
registered policy, every ledger module and every figure."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _generated():
    spec = importlib.util.spec_from_file_location("generated", ROOT / "docs/site/generated.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_pages_come_from_the_registries():
    from experiments.registry import FIGURES
    from paging.policies import MODEL_POLICIES, POLICY_NAMES
    from proofs import MODULES

    g = _generated()
    policies = g.policies_page()
    rows = [line for line in policies.splitlines() if line.startswith("| `")]
    assert [r.split("`")[1] for r in rows] == list(POLICY_NAMES) + list(MODEL_POLICIES)
    lru = next(r for r in rows if r.startswith("| `lru` |"))
    assert lru.split(" | ")[1:7] == ["", "", "", "", "yes", ""]  # kernel only
    theory = g.theory_page()
    assert [line.split(":: ")[1] for line in theory.splitlines()
            if line.startswith(".. automodule::")] == list(MODULES)
    figures = g.figures_page()
    assert [line.split(":: ")[1] for line in figures.splitlines()
            if line.startswith(".. automodule::")] == list(FIGURES.values())
    index = (ROOT / "docs/site/index.md").read_text().split()
    for page in ("model", "policies", "offline", "theory", "cost_model", "figures", "cli",
                 "notebooks", "record"):
        assert page in index


def test_the_usage_page_lists_every_command():
    """docs/guide/usage.md's command block names every subcommand of `paging` (it had no line
    for `serve` and `train`)."""
    import argparse

    from paging.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    block = (ROOT / "docs/guide/usage.md").read_text().split("```")[1]
    listed = {line.split()[1] for line in block.splitlines() if line.startswith("paging ")}
    assert set(sub.choices) <= listed, set(sub.choices) - listed
