"""``paging cost presets [--json]``: the cost model's presets with their numbers and sources.

Lists the models (with the bytes of one expert at every precision), the precisions and the
hardware of :mod:`paging.cost`, each number next to its origin (``docs/COST_MODEL.md`` holds the
same table).
"""

from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    p = sub.add_parser("cost", help="MoE cost model: presets of models, precisions, hardware",
                       description="The MoE cost model (paging.cost).")
    actions = p.add_subparsers(dest="cost_command", metavar="ACTION")
    actions.required = True
    pre = actions.add_parser("presets", help="models, precisions and hardware with their "
                                             "numbers and sources")
    pre.add_argument("--json", action="store_true", help="print one JSON document")
    pre.set_defaults(func=_presets)


def _fields(obj, units: dict) -> dict:
    """``field -> {value, unit, source}`` for every field of ``units`` that ``obj`` sets (an
    optional model field such as ``kv_width`` only when the model has it)."""
    from paging.cost.presets import OPTIONAL_MODEL_UNITS

    return {f: {"value": getattr(obj, f), "unit": units[f], "source": obj.sources[f]}
            for f in units if f not in OPTIONAL_MODEL_UNITS or getattr(obj, f)}


def presets_record() -> dict:
    """The JSON document of ``paging cost presets --json``:
    ``{"models": [...], "precisions": [...], "hardware": [...]}``; every entry has ``name`` and
    ``fields`` (field -> ``{"value", "unit", "source"}``, a model's ``kv_width`` when it has
    one, as in the table of docs/COST_MODEL.md); models add ``expert_params``,
    ``expert_bytes`` (precision -> bytes) and ``n_pages``."""
    from paging.cost import HARDWARE, MODELS, PRECISIONS
    from paging.cost.presets import (
        HARDWARE_UNITS,
        MODEL_UNITS,
        OPTIONAL_MODEL_UNITS,
        PRECISION_UNITS,
    )

    return {
        "models": [{"name": m.name, "fields": _fields(m, MODEL_UNITS | OPTIONAL_MODEL_UNITS),
                    "expert_params": m.expert_params, "n_pages": m.layout.n_pages,
                    "expert_bytes": {q: m.expert_bytes(q) for q in PRECISIONS}}
                   for m in MODELS.values()],
        "precisions": [{"name": q.name, "fields": _fields(q, PRECISION_UNITS)}
                       for q in PRECISIONS.values()],
        "hardware": [{"name": h.name, "fields": _fields(h, HARDWARE_UNITS)}
                     for h in HARDWARE.values()],
    }


def _presets(args: argparse.Namespace) -> int:
    from paging.cli import print_json
    from paging.commands.common import format_table

    rec = presets_record()
    if args.json:
        print_json(rec)
        return 0
    out = []
    for m in rec["models"]:
        f = m["fields"]
        sizes = ", ".join(f"{q} {b:,}" for q, b in m["expert_bytes"].items())
        out.append(f"model {m['name']}: {f['n_layers']['value']} layers x "
                   f"{f['n_experts']['value']} experts, top-{f['top_k']['value']}, "
                   f"d_model {f['d_model']['value']}, d_ff {f['d_ff']['value']}, "
                   f"{f['n_matrices']['value']} matrices; expert {m['expert_params']:,} params; "
                   f"expert bytes: {sizes}; non-expert {f['non_expert_params']['value']:,} "
                   f"params")
    out.append("")
    for kind in ("precisions", "hardware"):
        for e in rec[kind]:
            out.append(f"{kind[:-1] if kind == 'precisions' else kind} {e['name']}: " + ", ".join(
                f"{k} {v['value']:g} {v['unit']}" for k, v in e["fields"].items()))
    out += ["", "sources:"]
    rows = []
    for kind in ("models", "precisions", "hardware"):
        for e in rec[kind]:
            rows += [{"quantity": f"{e['name']}.{k}", "value": v["value"], "origin": v["source"]}
                     for k, v in e["fields"].items()]
    out.append(format_table(rows, ["quantity", "value", "origin"]))
    print("\n".join(out))
    return 0
