"""``paging record (MODEL | --tiny FAMILY[:opts]) --prompts FILE --out FILE.jsonl``.

Runs a Hugging Face MoE model on the prompts with greedy decoding and writes its routing (top-K
experts, their weights and the full router logits per sequence, token, layer and phase) as the
routing-log JSONL that every trace command reads (:mod:`paging.record`). Needs the optional
``record`` extra; nothing is downloaded.
"""

from __future__ import annotations

from paging.options import int64, seed


def add_parser(sub) -> None:
    p = sub.add_parser("record", help="record the routing of a Hugging Face MoE model "
                                      "(optional extra: torch, transformers)",
                       description="Run a Mixtral, OLMoE, Qwen2-MoE or GraniteMoE model (a local "
                       "directory, a model in the local Hugging Face cache, or a random tiny "
                       "model) on prompts and write its routing as routing-log JSONL with full "
                       "router logits. Nothing is downloaded.")
    p.add_argument("model", metavar="MODEL", nargs="?", default=None,
                   help="a local model directory or a model name in the local Hugging Face "
                        "cache (loaded with local_files_only)")
    p.add_argument("--tiny", metavar="FAMILY[:opts]", default=None,
                   help="instead of MODEL, a randomly initialised tiny model: mixtral, olmoe, "
                        "qwen2-moe or granitemoe, options layers=L,experts=N,topk=K,hidden=H "
                        "(default 2 layers, 4 experts, top-2, hidden 32; byte vocabulary)")
    p.add_argument("--prompts", required=True, metavar="FILE",
                   help="prompts: a text file (one per line) or JSONL (a string, or an object "
                        "with prompt, text or input_ids, per line)")
    p.add_argument("--max-new-tokens", type=int64, default=16, metavar="N",
                   help="new tokens per prompt (the prefill yields the first, N-1 decode "
                        "passes follow; default 16)")
    p.add_argument("--seed", type=seed, default=0,
                   help="seed of the tiny model's random weights (decoding is greedy)")
    p.add_argument("--out", required=True, metavar="FILE.jsonl",
                   help="output routing log (written atomically)")
    p.add_argument("--json", action="store_true", help="print one JSON summary; no progress "
                                                       "bar")
    p.set_defaults(func=run)


def run(args) -> int:
    import sys

    from paging.errors import PagingError, positive_int
    from paging.io.atomic import check_target
    from paging.record import (
        RecordStats,
        dataset_name,
        load_model,
        read_prompts,
        record_routing,
        tiny_model,
        tokenize,
        write_recording,
    )

    if (args.model is None) == (args.tiny is None):
        raise PagingError("name a MODEL (directory or cached model name) or --tiny FAMILY, "
                          "exactly one of them")
    positive_int("--max-new-tokens", args.max_new_tokens)
    if not str(args.out).lower().endswith(".jsonl"):
        raise PagingError(f"--out must name a .jsonl file, got {args.out!r}")
    check_target(args.out)
    prompts = read_prompts(args.prompts)  # a bad prompts file fails before a model loads
    if args.tiny is not None:
        model, tokenizer, label = tiny_model(args.tiny, seed=args.seed), None, f"tiny {args.tiny}"
    else:
        (model, tokenizer), label = load_model(args.model), args.model
    ids = tokenize(prompts, tokenizer, model.config.vocab_size, args.prompts)

    from paging import progress as pbar

    stats = RecordStats()
    with pbar.bar(len(ids), "record", unit="prompt", show=False if args.json else None) as bar:
        write_recording(record_routing(model, ids, args.max_new_tokens,
                                       dataset_name(args.prompts), stats, bar), args.out)
    summary = {"out": str(args.out), "model": label, "model_type": model.config.model_type,
               "sequences": stats.sequences, "prefill_tokens": stats.prefill_tokens,
               "decode_tokens": stats.decode_tokens, "n_layers": stats.n_layers,
               "n_experts": stats.n_experts, "top_k": stats.top_k, "records": stats.records}
    if stats.n_experts - 1 not in stats.experts_seen:
        # the reader infers n from the largest expert id in the file
        sys.stderr.write(f"note: expert {stats.n_experts - 1} was never chosen; read the file "
                         f"with --n-experts {stats.n_experts} --layers {stats.n_layers}\n")
    if args.json:
        from paging.cli import print_json

        print_json(summary)
    else:
        print(f"wrote {args.out}: {stats.sequences} sequence(s), {stats.prefill_tokens} prefill "
              f"+ {stats.decode_tokens} decode tokens, {stats.n_layers} MoE layers x "
              f"{stats.n_experts} experts, top-{stats.top_k} ({stats.records} records)")
    return 0
