"""Shared pieces of the paging-with-predictions ledger rows (proofs/predictions_*.py): the
seeded instance grid, OPT, and an adversarial (reversed) predictor for the power checks."""

from __future__ import annotations

from paging import Layout, from_pages, simulate
from paging.generators import cyclic, zipf
from paging.predict import Predictor

ETAS = (0.0, 0.5, 2.0, 10.0, 50.0)
KS = (2, 4, 8)
SEEDS = (0, 1)          # noise seeds and run seeds


def instances():
    """(label, trace) pairs: layered Zipf (a = 1, seeds 0-1, 100 tokens) on three layouts, a
    strongly skewed Zipf (a = 3, where LRU is good and reversed predictions are bad), and
    Theorem 3's cyclic sequence (every page in turn: LRU's worst case)."""
    out = []
    for n, layers in ((4, 2), (8, 2), (4, 4)):
        for s in SEEDS:
            out.append((f"zipf:n={n},layers={layers},tokens=100,a=1,seed={s}",
                        zipf(n=n, layers=layers, tokens=100, a=1.0, seed=s)))
    out.append(("zipf:n=8,layers=2,tokens=300,a=3,seed=0",
                zipf(n=8, layers=2, tokens=300, a=3.0, seed=0)))
    out.append(("cyclic:n=3,layers=3,rounds=40", cyclic(n=3, layers=3, rounds=40)))
    return out


def grid():
    """(label, trace, k) for every instance and every k in KS below its page count (a cache
    holding every page never evicts: nothing to check)."""
    return [(label, tr, k) for label, tr in instances() for k in KS
            if k < tr.layout.n_pages]


def opt(trace, k: int) -> int:
    return simulate(trace, "belady", k).misses


class ReversedPredictor(Predictor):
    """Adversarial and clairvoyant: predicts −next_use[t], so BlindOracle evicts the page
    needed soonest. Used only to show that the checks can fail and that the combiner
    switches."""

    name = "reversed"
    clairvoyant = True

    def reset(self, ctx) -> None:
        super().reset(ctx)
        self.nu = [-float(x) for x in ctx.next_use]

    def predict(self, t, page):
        return self.nu[t]


def lfu_adversary(k: int = 2, reps: int = 10, alternations: int = 30):
    """k pages requested ``reps`` times each, then two new pages alternating: LFU keeps the
    frequent pages and misses every alternating request; OPT misses about k + 2 times. Used
    as a power check of the marking bound ALG ≤ k·OPT + k (LFU is not a marking algorithm)."""
    pages = [p for p in range(k) for _ in range(reps)]
    pages += [k + (i % 2) for i in range(alternations)]
    return from_pages(pages, Layout(k + 2, 1))
