"""``--stream``, ``--chunk N``, ``--no-stream`` of ``paging simulate`` and ``paging mrc``
(:mod:`paging.stream`): when to stream, what streaming refuses, and the streamed runs."""

from __future__ import annotations

import argparse
import sys

from paging.errors import PagingError
from paging.options import int64


def add_stream_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("streaming (traces larger than memory)")
    g.add_argument("--stream", action="store_true",
                   help="read the trace a chunk at a time instead of whole (oracleGeneral with "
                        "--n-experts/--layers, .npz, CSV, or a zipf spec with topk=1); list "
                        "policies, the token and prediction policies, score-based (with a "
                        "file's gate scores) and flashmoe at --k sizes or --budget-gb budgets "
                        "(with --sizes; --costs too), belady from oracleGeneral files, and "
                        "their miss curves (one pass for LRU, LLRU, LFU, FLD, Least-Stale and "
                        "Belady, one run per layer and share for the -dist forms of FIFO, FWF, "
                        "ARC and the credit policies, else one run per size). Automatic for "
                        "files above $PAGING_STREAM_BYTES (default 2e9 bytes) when the options "
                        "allow it")
    g.add_argument("--chunk", type=int64, default=None, metavar="N",
                   help="requests per chunk when streaming (default 4194304); refused with "
                        "--no-stream, a note when the trace is read whole")
    g.add_argument("--no-stream", action="store_true",
                   help="never stream by itself: read the trace whole whatever its size")


def refusal(args, command: str, specs=()) -> str | None:
    """Why ``args`` cannot be streamed (one line), or None; for ``simulate``, ``specs`` are its
    runs (:meth:`paging.run.RunSpec.stream_refusal` names what a run asks that a stream
    cannot give)."""
    from paging.stream import curve_policy, stream_policy

    if command == "simulate":
        flags = (["--phase"] if args.phase != "both" else []) + [
            f for f in (s.stream_refusal() for s in specs) if f]
        if flags:
            return (f"--stream does not support {flags[0]}: streaming runs the list family, LFU, "
                    "the credit policies, ARC, LeCaR, Marking, the token and prediction "
                    "policies, Score-Based and FlashMoE at --k sizes or --budget-gb "
                    "budgets from an empty cache, with --costs and --sizes (no cost model, "
                    "timeline, prefetching, miss handling, routing or warm runs); drop "
                    f"{flags[0]} or --stream")
        if args.budget_gb and args.sizes is None:
            return ("--stream with --budget-gb needs --sizes FILE (a streamed trace's own "
                    "object sizes are not read); give --sizes or drop --stream")
        try:
            for name in args.policy:
                stream_policy(name)
        except PagingError as e:
            return e.message + " (drop --stream)"
        names = args.policy
    else:
        if args.phase != "both":
            return "--stream does not support --phase; drop one of them"
        if args.verify:
            return ("--stream does not support mrc --verify (it runs every k of the curve "
                    "again, verified, on the trace read whole; simulate --stream --verify "
                    "checks a streamed run); drop --verify or --stream")
        try:
            curve_policy(args.policy)
        except PagingError as e:
            return e.message + " (drop --stream)"
        names = [args.policy]
    return _next_use_refusal(args, names)


def _next_use_refusal(args, names) -> str | None:
    """Belady reads next uses: a stream has them only from oracleGeneral files."""
    from paging.generators import is_spec
    from paging.io import detect_format, resolve_path
    from paging.stream import _needs_next_use

    belady = [n for n in names if _needs_next_use(n)]
    if not belady:
        return None
    sources = args.trace if isinstance(args.trace, list) else [args.trace]
    for src in sources:
        fmt = None
        if not is_spec(src):
            try:
                fmt = args.format or detect_format(resolve_path(src))
            except PagingError:
                return None  # (the reader names what is wrong with the file)
        if fmt != "oracle-general":
            return (f"--policy {belady[0]} reads next uses, which a stream has only from an "
                    f"oracleGeneral file (next_access_vtime), not from {src}; drop --stream")
    return None


def use_stream(args, command: str, specs=()) -> bool:
    """Whether to stream: ``--stream`` (refused with one line when the options cannot be
    streamed), or a trace file larger than the threshold with options that can (a note on
    stderr says so; otherwise the trace is read whole, after a note saying why). ``--chunk``
    with ``--no-stream`` is refused; with a trace read whole, a note says it is unused."""
    if args.chunk is not None and args.chunk < 1:
        raise PagingError(f"--chunk must be an integer >= 1, got {args.chunk}")
    if args.stream and args.no_stream:
        raise PagingError("--stream and --no-stream contradict each other; give one")
    if args.chunk is not None and args.no_stream:
        raise PagingError("--chunk sizes the chunks of a streamed read and --no-stream reads "
                          "the trace whole; give one")
    streamed = _decide(args, command, specs)
    if args.chunk is not None and not streamed:
        sys.stderr.write(f"note: --chunk {args.chunk} is unused: the trace is read whole "
                         "(--stream reads it a chunk at a time)\n")
    return streamed


def _decide(args, command: str, specs=()) -> bool:
    """:func:`use_stream`'s decision, its refusals and notes."""
    from paging.io import resolve_path
    from paging.stream import stream_threshold

    why = refusal(args, command, specs)
    if args.stream:
        if why is not None:
            raise PagingError(why)
        return True
    if args.no_stream:
        return False
    from paging.generators import is_spec

    sources = args.trace if isinstance(args.trace, list) else [args.trace]
    big = []
    for src in sources:
        if is_spec(src):
            continue
        try:
            path = resolve_path(src)
            size = path.stat().st_size
        except (PagingError, OSError):
            continue
        if size > stream_threshold():
            big.append((src, path, size))
    if not big:
        return False
    src, path, size = big[0]
    for other in sources:  # (the stream reads every TRACE given, not only the big one)
        if why is not None:
            break
        why = _source_refusal(args, other)
        if why is not None and other != src and not is_spec(other):  # (a spec's names it)
            why = f"{other}: {why}"
    if why is not None:
        sys.stderr.write(f"note: {src} is {size / 1e9:.1f} GB; reading it whole "
                         f"({_without_advice(why)})\n")
        return False
    sys.stderr.write(f"note: {src} is {size / 1e9:.1f} GB: streaming it (--no-stream reads it "
                     "whole)\n")
    return True


def _source_refusal(args, src) -> str | None:
    """Why the TRACE ``src`` (a file or a generator spec) cannot be streamed as asked, or
    None."""
    from paging.generators import is_spec
    from paging.io import detect_format, resolve_path

    if is_spec(src):
        from paging.stream import spec_stream

        try:
            spec_stream(src, expand=getattr(args, "expand", None) or "rounds")
        except PagingError as e:
            return e.message
        return None
    try:
        path = resolve_path(src)
    except PagingError:
        return None  # (the reader names what is wrong with it)
    fmt = args.format or detect_format(path)  # (a format that does not stream: open_chunks')
    if fmt == "oracle-general" and (args.n_experts is None or args.layers is None):
        return "an oracleGeneral trace streams as layered page ids (--n-experts, --layers)"
    return _stored_mode_refusal(args, path, fmt)


def _stored_mode_refusal(args, path, fmt) -> str | None:
    """Why the file cannot be streamed as asked though its format streams: a stream reads a
    sequence in the mode the file stores (its header, or a CSV's first rows), and the whole
    reader re-expands it. None when it can."""
    from paging.io.chunks import open_chunks

    try:
        for _ in open_chunks(path, expand=getattr(args, "expand", None) or "rounds",
                             n_experts=args.n_experts, n_layers=args.layers, format=fmt):
            break
    except PagingError as e:
        return e.message
    return None


def _without_advice(why: str) -> str:
    """A refusal's reason without its advice to drop ``--stream`` (a note on a file streamed
    by itself, where the user gave no ``--stream``)."""
    import re

    why = why.removesuffix(" (drop --stream)")
    return re.sub(r"; (drop|give|use|load|convert) [^;]*$", "", why)


def stream_outcomes(args, runs=(), curves=(), budgets=()):
    """The :class:`~paging.stream.StreamOutcome` of every sequence of every TRACE given
    (``runs``: (policy, k) pairs; ``budgets``: (policy, bytes) pairs; ``--costs`` and
    ``--sizes`` from ``args``)."""
    from paging.stream import DEFAULT_CHUNK, stream_run

    sources = args.trace if isinstance(args.trace, list) else [args.trace]
    out = []
    for src in sources:
        out += stream_run(src, runs, curves, chunk=args.chunk or DEFAULT_CHUNK,
                          expand=getattr(args, "expand", None) or "rounds",
                          n_experts=args.n_experts, n_layers=args.layers, format=args.format,
                          seed=getattr(args, "seed", 0),
                          progress=False if getattr(args, "json", False) else None,
                          budgets=budgets, costs=getattr(args, "costs", None),
                          sizes=getattr(args, "sizes", None),
                          verify=getattr(args, "verify", False))
    return out
