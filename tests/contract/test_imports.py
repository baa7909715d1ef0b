"""No import circle anywhere in the package (issue 21): every import counted, function-local
ones included, between the modules of paging, adversaries, proofs and experiments."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("paging", "adversaries", "proofs", "experiments")


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _graph() -> nx.DiGraph:
    files = {_module(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    g = nx.DiGraph()
    g.add_nodes_from(files)
    for mod, path in files.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: resolve against this module's package
                    base = mod.split(".")[: len(mod.split(".")) - node.level + (1 if is_pkg
                                                                                else 0)]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                # a name that is a submodule imports it; any other name, the module itself
                targets = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in files else stem
                           for a in node.names]
            else:
                continue
            for t in targets:
                while t and t not in files:  # the longest prefix that is a module of ours
                    t = t.rpartition(".")[0]
                if t and t != mod:
                    g.add_edge(mod, t)
    return g


def test_no_import_circle():
    g = _graph()
    assert g.number_of_nodes() > 100 and g.number_of_edges() > 300
    cycles = list(nx.simple_cycles(g, length_bound=6))
    assert not cycles, f"{len(cycles)} import circle(s), e.g. {' -> '.join(cycles[0])}"
