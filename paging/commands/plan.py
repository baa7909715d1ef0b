"""``paging plan TRACE --model M --hardware H --budget-gb G [--precision Q] [--verify] [--json]``.

ZipMoE's hierarchical cache-pool planning (Yang et al., Sec. 3.4, App. C Algorithm 4;
:mod:`paging.zipmoe.planner`): the split of the budget over the pools F (full), C (compressed),
S (sign-mantissa chunks), E (exponent chunks) that minimises the expected makespan of a sparse
layer, its prediction against a replay of the trace through the pools (the one simulator), and
the baseline without compressed pools. Pool sizes and times come from the cost model
(:mod:`paging.cost.pools`).
"""

from __future__ import annotations

import contextlib

from paging.commands.common import add_trace_args, format_table, load_from_args
from paging.options import int64


def add_parser(sub) -> None:
    p = sub.add_parser("plan", help="ZipMoE cache-pool plan: partition, predicted and "
                       "simulated makespan",
                       description="Plan ZipMoE's compression-aware cache pools (Sec. 3.4, "
                       "Algorithm 4) for each sequence of TRACE (read in groups mode), and "
                       "replay the sequence through the chosen pools. Times in ms; per layer "
                       "and per decoded token (= ℓ layers).")
    add_trace_args(p, expand=False)
    p.add_argument("--model", required=True, metavar="M", help="model preset or .toml/.json "
                   "model file (`paging cost presets`)")
    p.add_argument("--hardware", default="pcie3", metavar="H",
                   help="hardware preset whose SSD bandwidth prices the reads (default pcie3: "
                        "a 3.5 GB/s NVMe drive, as ZipMoE's Samsung 970 EVO) and whose GPU (an "
                        "A100 in every preset, not ZipMoE's Jetson AGX Orin) prices the GPU "
                        "time p")
    p.add_argument("--budget-gb", required=True, type=float, metavar="G",
                   help="memory for the pools in GB (1 GB = 1e9 bytes), split evenly over the "
                        "layers")
    p.add_argument("--precision", default="bf16", metavar="Q",
                   help="expert precision (ZipMoE splits BF16 bit fields: bf16 only)")
    z = p.add_argument_group("ZipMoE parameters (defaults: docs/COST_MODEL.md, zipmoe:*)")
    z.add_argument("--pools", default="FCSE", metavar="SET",
                   help="active pools Λ, letters among F, C, S, E (default FCSE)")
    z.add_argument("--delta", type=float, default=0.05, metavar="D",
                   help="grid step of the memory ratios, 1/m (default 0.05)")
    z.add_argument("--rho", type=float, default=None, metavar="R",
                   help="compression ratio of the exponent bits, in (0, 1] (default 0.36)")
    z.add_argument("--threads", type=int64, default=None, metavar="L",
                   help="decompression threads L >= 1 (default 6)")
    z.add_argument("--shards", type=int64, default=None, metavar="K",
                   help="E-chunks per tensor K >= 1 (default 6)")
    p.add_argument("--no-exact", action="store_true",
                   help="skip the exact Algorithm 1 schedule of the replayed patterns (faster)")
    p.add_argument("--verify", action="store_true",
                   help="record and check independently every replay through the pools (each "
                        "pool level's run: capacity, every request served, misses = the "
                        "eviction log); the same numbers")
    p.add_argument("--json", action="store_true", help="print one JSON list, one object per "
                   "sequence")
    p.set_defaults(func=run)


def _params(args):
    from paging.cost.pools import RHO, SHARDS, THREADS, ZipParams

    return ZipParams(rho=RHO if args.rho is None else args.rho,
                     threads=THREADS if args.threads is None else args.threads,
                     shards=SHARDS if args.shards is None else args.shards)


def run(args) -> int:
    from paging.cli import print_json
    from paging.cost import budget_bytes, get_hardware, get_model, get_precision
    from paging.cost.pools import form_bytes
    from paging.simulate import verifying
    from paging.zipmoe.planner import check_grid, check_pools, plan_trace

    model = get_model(args.model)
    hardware = get_hardware(args.hardware)
    precision = get_precision(args.precision)
    params = _params(args)
    form_bytes(model, precision, params.rho)          # bf16 only: fail before reading
    check_pools(args.pools)
    check_grid(args.pools, args.delta)  # (refused up front beyond MAX_SPLITS)
    budget = budget_bytes(args.budget_gb, "--budget-gb")
    args.expand = "groups"
    memo: dict = {}
    traces = load_from_args(args)
    with verifying() if args.verify else contextlib.nullcontext():  # (every replay checked)
        rows = [plan_trace(tr, model, hardware, budget, params, args.pools, args.delta,
                           precision.name, exact=not args.no_exact, memo=memo)
                for tr in traces]
    if args.verify:
        for r in rows:
            r["verified"] = True
    if args.json:
        print_json(rows)
        return 0
    table = []
    for r in rows:
        for name in ("plan", "baseline"):
            x = r[name]
            sim = x["simulated"]
            table.append({
                "trace": r["trace"], "plan": name + " " + x["pools"],
                "sizes F/C/S/E": "/".join(str(x["sizes"][p]) for p in "FCSE"),
                "ratios": ",".join(x["ratios_exact"][p] for p in "FCSE"),
                "pred layer": x["predicted_layer_ms"],
                "sim alg3": sim["alg3_layer_ms"],
                "sim alg1": sim.get("alg1_layer_ms", ""),
                "static alg3": x["static"]["alg3_layer_ms"],
                "pred token": x["predicted_token_ms"]})
        base = r["baseline"]
        table.append({"trace": r["trace"], "plan": "uncompressed F", "sizes F/C/S/E":
                      "/".join(str(base["sizes"][p]) for p in "FCSE"), "ratios": "1,0,0,0",
                      "pred layer": base["uncompressed_predicted_layer_ms"],
                      "sim alg3": base["uncompressed_simulated_layer_ms"], "sim alg1": "",
                      "static alg3": "",
                      "pred token": base["uncompressed_predicted_layer_ms"] * r["layers"]})
    r0 = rows[0] if rows else None
    if r0:
        print(f"# {r0['model']} on {r0['hardware']}, {r0['precision']}, budget "
              f"{r0['budget_bytes']:,} B; k={r0['k']}, ℓ={r0['layers']}, n={r0['n']}; "
              f"ρ={r0['rho']}, L={r0['L']}, K={r0['K']}; per tensor u={r0['u_ms']:.4f} "
              f"v={r0['v_ms']:.4f} c={r0['c_ms']:.4f} ms, p={r0['p_ms']:.4f} ms per expert; "
              "times in ms per layer (pred token = per decoded token)")
    cols = ["trace", "plan", "sizes F/C/S/E", "ratios", "pred layer", "sim alg3", "sim alg1",
            "static alg3", "pred token"]
    print(format_table(table, cols))
    if args.verify:
        print("verified: every replay through the pools checked independently")
    return 0
