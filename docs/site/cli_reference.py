"""Write ``cli.md``: the help of every ``paging`` sub-command, from :func:`paging.cli.build_parser`."""

from __future__ import annotations

import argparse
from pathlib import Path


def _parsers(parser: argparse.ArgumentParser, prefix: str):
    yield prefix, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{prefix} {name}")


def write_cli_reference(app) -> None:
    from paging.cli import build_parser

    parts = ["# Command-line reference\n", "Generated from `paging.cli.build_parser()`.\n"]
    for name, p in _parsers(build_parser(), "paging"):
        p.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=90)
        parts.append(f"## `{name}`\n\n```text\n{p.format_help()}```\n")
    Path(app.srcdir, "cli.md").write_text("\n".join(parts))


def setup(app):
    app.connect("builder-inited", write_cli_reference)
    return {"parallel_read_safe": True}
