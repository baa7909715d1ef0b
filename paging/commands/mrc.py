"""``paging mrc TRACE --policy NAME [--expand rounds|groups] [--seed S] [--json]``.

Misses for every cache size k = 1..nℓ (:func:`paging.mrc.miss_curve`). Each sequence of TRACE
is simulated from an empty cache; with several sequences the top-level ``requests`` and
``misses`` are sums over them and ``traces`` lists each one.

``--scheduler ADDRESS`` runs the sizes of a curve that has no one-pass algorithm (FIFO, FWF,
Marking, the credit and token policies, groups mode, policies without a kernel) as tasks on
the workers of a running Dask scheduler (the ``sweep`` extra); without it they run on this
machine's cores (threads for kernels, processes for the reference loop). One-pass curves, and
the per-layer curves of the -dist forms of FIFO, FWF, ARC and the credit policies (each layer
run once per share), are computed here either way (a line on stderr says which).

``--stream [--chunk N]`` (:mod:`paging.stream`) computes the curve reading the trace a chunk at
a time, for every policy that streams (:func:`paging.stream.curve_policy`): in one pass for
LRU, LLRU, LFU, FLD and Least-Stale (per layer for their -dist forms), else one carried run per
size (per layer and share for the -dist forms of FIFO, FWF, the credit policies and ARC) on
this machine's cores; automatic for files above ``$PAGING_STREAM_BYTES``.
"""

from __future__ import annotations

import contextlib

from paging.commands.common import add_trace_args, format_table, load_from_args, policy_help
from paging.commands.streaming import add_stream_args
from paging.options import seed


def add_parser(sub) -> None:
    p = sub.add_parser("mrc", help="misses for every cache size k = 1..nℓ (miss curve)",
                       description="Miss curve of one policy: misses for every cache size "
                       "k = 1..nℓ, in one pass for stack policies (LRU, LLRU, LFU, FLD, "
                       "Least-Stale, Belady and their -dist variants, rounds mode).")
    add_trace_args(p)
    p.add_argument("--policy", required=True, metavar="NAME",
                   help="policy name: " + policy_help())
    p.add_argument("--seed", type=seed, default=0, help="seed of randomized policies (default 0)")
    p.add_argument("--json", action="store_true",
                   help='print one JSON object {"policy", "requests", "k", "misses", ...}')
    p.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="address of a running Dask scheduler (tcp://host:8786): a curve with "
                        "no one-pass algorithm runs its sizes on its workers (default: this "
                        "machine's cores)")
    p.add_argument("--verify", action="store_true",
                   help="check the curve against a verified run at every k (each run checked "
                        "independently: capacity, every request served, misses = the eviction "
                        "log); a trace read whole")
    add_stream_args(p)
    p.set_defaults(func=run)


def curve_report(traces, policy: str, *, seed: int | None = 0,
                 progress: bool | None = None, scheduler: str | None = None) -> dict:
    """The ``--json`` document for ``traces`` (a list of Trace): ``policy``, ``requests``,
    ``k`` = 1..nℓ, ``misses`` (summed over sequences), and ``trace`` (one sequence) or
    ``traces`` (several: each with its own ``trace``, ``requests`` and ``misses``)."""
    from paging.mrc import miss_curve

    return _report(policy, [(tr.name, tr.n_requests, tr.layout.n_pages,
                             lambda tr=tr: miss_curve(tr, policy, seed=seed, progress=progress,
                                                      scheduler=scheduler))
                            for tr in traces])


def _report(policy: str, seqs: list) -> dict:
    """:func:`curve_report`'s document from ``(name, requests, n_pages, curve)`` per sequence
    (``curve`` a callable giving the misses for k = 1..n_pages)."""
    import numpy as np

    from paging.errors import PagingError

    if not seqs:
        raise PagingError("the trace holds no sequence; nothing to simulate")
    kmax = max(s[2] for s in seqs)
    total = np.zeros(kmax, dtype=np.int64)
    per = []
    for name, requests, _, curve in seqs:
        m = curve()
        # a smaller layout never evicts beyond its own page count
        full = np.concatenate([m, np.full(kmax - m.size, m[-1] if m.size else 0, np.int64)])
        total += full
        per.append({"trace": name, "requests": requests, "misses": [int(x) for x in full]})
    doc = {"policy": policy, "requests": sum(s[1] for s in seqs),
           "k": list(range(1, kmax + 1)), "misses": [int(x) for x in total]}
    if len(seqs) == 1:
        doc["trace"] = seqs[0][0]
    else:
        doc["traces"] = per
    return doc


def run(args) -> int:
    from paging.cli import print_json
    from paging.commands.streaming import stream_outcomes, use_stream
    from paging.mrc import curve_method
    from paging.policies import make_policy

    name = make_policy(args.policy).name  # fail on a bad name before loading anything
    streamed = use_stream(args, "mrc")  # (not with --verify: streaming.refusal)
    if streamed:  # a chunk at a time
        if args.scheduler is not None:
            import sys

            sys.stderr.write(f"mrc {name}: a streamed curve is computed here; --scheduler not "
                             "used\n")
        outs = stream_outcomes(args, curves=[name])
        doc = _report(name, [(o.trace, o.requests, o.curves[name].size,
                              lambda o=o: o.curves[name]) for o in outs])
        n_seqs = len(outs)
    else:
        traces = load_from_args(args)
        from paging.run import RunSpec

        RunSpec(name, k=1).check(traces)  # (the run recipe's refusals: scores the traces lack)
        if traces and all(curve_method(tr, name) != "per-k" for tr in traces):
            _one_pass_note(args, name)
        from paging.simulate import verifying

        with verifying() if args.verify else contextlib.nullcontext():  # (every k checked)
            doc = curve_report(traces, name, seed=args.seed,
                               progress=False if args.json else None, scheduler=args.scheduler)
        n_seqs = len(traces)
        if args.verify:
            doc["verified"] = True
    if args.json:
        print_json(doc)
        return 0
    n = doc["requests"]
    where = doc.get("trace", f"{n_seqs} sequences")
    print(f"{name} on {where}: {n} requests")
    rows = [{"k": k, "misses": m, "hits": n - m, "miss_ratio": m / n if n else 0.0}
            for k, m in zip(doc["k"], doc["misses"], strict=True)]
    print(format_table(rows, ["k", "misses", "hits", "miss_ratio"]))
    if doc.get("verified"):
        print("verified: the run at every k checked independently and equal to the curve")
    return 0


def _one_pass_note(args, name: str) -> None:
    """The line saying ``--scheduler`` is unused: a one-pass curve, or the per-layer curve of a
    -dist form without one (FIFO's, FWF's, ARC's, the credit policies': each layer run once
    per share), both computed here."""
    if args.scheduler is not None:
        import sys

        from paging import fast
        from paging.mrc import _is_stack
        from paging.policies import make_policy

        family, kind, _ = fast.plan(make_policy(name))
        how = ("one-pass curve" if _is_stack(family, kind)
               else "per-layer curve (each layer run once per share)")
        sys.stderr.write(f"mrc {name}: {how}, computed here; --scheduler not used\n")
