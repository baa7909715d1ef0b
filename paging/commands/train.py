"""``paging train flashmoe TRACE... --out FILE [--k K] [--seed S] [--epochs E] [--exclude NAME]``.

Trains FlashMoE's eviction network on Belady's evictions (:mod:`paging.learned.train`) and
writes the model file the ``flashmoe`` policy loads. The same inputs and seed give the same
weights.
"""

from __future__ import annotations


def add_parser(sub) -> None:
    p = sub.add_parser("train", help="train a learned eviction policy (flashmoe)",
                       description="Train FlashMoE's eviction network (Kim et al. 2025) on "
                       "Belady's evictions over every sequence of the given traces.")
    kinds = p.add_subparsers(dest="kind", metavar="POLICY", parser_class=type(p))
    kinds.required = True
    from paging.learned.train import add_arguments

    q = kinds.add_parser("flashmoe", help="FlashMoE's 3-layer SiLU network")
    add_arguments(q)
    q.set_defaults(func=run)


def run(args) -> int:
    from paging.learned.train import run as train

    return train(args)
