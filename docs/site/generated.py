"""Write the pages that come from the code's registries, at every build (``make docs``):

* ``policies.md``: the table of ``paging policies --json``
  (:func:`paging.commands.policies.policy_records`, read from the policy objects);
* ``theory.md``: one section per module of the theorem ledger, :data:`proofs.MODULES`, with the
  module's docstring (the theorem, its source, what is checked; running the ledger is
  ``paging proofs``);
* ``figures.md``: one section per entry of the figure registry,
  :data:`experiments.registry.FIGURES`, with the script's docstring.

Nothing is copied by hand: a new policy, ledger row or figure shows up at the next build.
"""

from __future__ import annotations

from pathlib import Path

GENERATED = ("policies.md", "theory.md", "figures.md")


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def policies_page() -> str:
    from paging.commands.policies import policy_records

    flags = ("clairvoyant", "randomized", "needs_scores", "needs_predictor", "has_kernel",
             "weighted")
    rows = policy_records()
    out = ["# Policies\n",
           "Generated from the policy registry (`paging policies --json`, "
           "`paging.commands.policies.policy_records`): every registered name with the "
           "properties read from its policy object. A `-dist` name is the per-layer (DIST) "
           "variant: `k // ℓ` slots per layer, the remainder to the first `k mod ℓ` layers.\n",
           "| policy | " + " | ".join(f.replace("_", " ") for f in flags)
           + " | description | reference |",
           "|" + "---|" * (len(flags) + 3)]
    for r in rows:
        out.append(f"| `{r['name']}` | " + " | ".join("yes" if r[f] else "" for f in flags)
                   + f" | {_cell(r['description'])} | {_cell(r['reference'])} |")
    out += ["\n## Writing a policy\n",
            "```{eval-rst}\n.. autofunction:: paging.policies.register\n\n"
            ".. autofunction:: paging.policies.make_policy\n```\n"]
    return "\n".join(out) + "\n"


def _module_sections(title: str, intro: str, entries: list[tuple[str, str]]) -> str:
    out = [f"# {title}\n", intro + "\n"]
    for heading, module in entries:
        out.append(f"## {heading}\n\n```{{eval-rst}}\n.. automodule:: {module}\n   "
                   ":no-index:\n```\n")
    return "\n".join(out)


def theory_page() -> str:
    from proofs import MODULES

    return _module_sections(
        "Theory ledger",
        "Generated from `proofs.MODULES`: each module checks one theorem numerically "
        "(`paging proofs` runs them all and prints the ledger with its errata).",
        [(m.removeprefix("proofs."), m) for m in MODULES])


def figures_page() -> str:
    from experiments.registry import FIGURES

    return _module_sections(
        "Figures",
        "Generated from the figure registry `experiments.registry.FIGURES`: "
        "`paging figs --only NAME` (or `make figs` for all) writes each figure's PNG, PDF and "
        "the CSV it is drawn from into `paper_figs/`.",
        [(f"`{name}`", module) for name, module in FIGURES.items()])


def write_pages(app) -> None:
    src = Path(app.srcdir)
    for name, make in zip(GENERATED, (policies_page, theory_page, figures_page), strict=True):
        text = make()
        target = src / name
        if not target.exists() or target.read_text() != text:  # keep mtimes of unchanged pages
            target.write_text(text)


def setup(app):
    app.connect("builder-inited", write_pages)
    return {"parallel_read_safe": True}
