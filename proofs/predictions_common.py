"""Shared pieces of the paging-with-predictions ledger rows (proofs/predictions_*.py): the
seeded instance grid, OPT, and an adversarial (reversed) predictor for the power checks."""

from __future__ import annotations

import numpy as np

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


# -- predictors with a large, known η_ℓ1 (adversarial and measured) -------------------------------

class _ClairvoyantTable(Predictor):
    """Base of the clairvoyant test predictors below: ``table(next_use, N)`` gives every
    request's prediction at reset."""

    clairvoyant = True

    def reset(self, ctx) -> None:
        super().reset(ctx)
        nu = np.asarray(ctx.next_use, dtype=np.float64)
        self.pred = self.table(nu, nu.size).tolist()

    def predict(self, t, page):
        return self.pred[t]


class ShiftedPredictor(_ClairvoyantTable):
    """Adversarial, η known: the true next arrival, shifted ``shift`` requests later for every
    request of an odd page (even pages exact). η_ℓ1 = shift × (requests of odd pages); the order
    of two cached pages flips when their next arrivals are less than ``shift`` apart."""

    def __init__(self, shift: int, pages: np.ndarray):
        self.shift = int(shift)
        self.odd = (np.asarray(pages) % 2 == 1)
        self.name = f"shifted:{self.shift}"

    def table(self, nu, N):
        return nu + self.shift * self.odd


class JitterPredictor(_ClairvoyantTable):
    """Adversarial, η known: each request's prediction is the true next arrival moved by
    ±``width`` (seeded sign) with probability ``p``, exact otherwise; η_ℓ1 = width × (requests
    moved). Small η > 0 that still reorders nearby pages."""

    def __init__(self, p: float, width: int, seed: int = 0):
        self.p, self.width, self.seed = float(p), int(width), int(seed)
        self.name = f"jitter:p={self.p:g},w={self.width},seed={self.seed}"

    def table(self, nu, N):
        rng = np.random.default_rng(self.seed)
        move = rng.random(N) < self.p
        sign = np.where(rng.random(N) < 0.5, -1.0, 1.0)
        return nu + move * sign * self.width


class RandomPredictor(_ClairvoyantTable):
    """Uninformed: a uniformly random time in (t, N] (seeded); η measured."""

    def __init__(self, seed: int = 0):
        self.seed = int(seed)
        self.name = f"random:seed={self.seed}"

    def table(self, nu, N):
        t = np.arange(N)
        return t + 1 + np.floor(np.random.default_rng(self.seed).random(N) * (N - t))


class Recording(Predictor):
    """Wraps a predictor and records every prediction, so η_ℓ1 can be measured afterwards."""

    def __init__(self, inner: Predictor):
        self.inner = inner
        self.clairvoyant = inner.clairvoyant
        self.name = inner.name

    def reset(self, ctx) -> None:
        super().reset(ctx)
        self.inner.reset(ctx)
        self.seen: dict[int, float] = {}

    def predict(self, t, page):
        v = self.inner.predict(t, page)
        self.seen[t] = v
        return v


def next_use(trace) -> np.ndarray:
    """Next request of the same page after each request (``len(trace)`` when none): the
    convention of ``Context.next_use``, against which η_ℓ1 is measured."""
    pages = np.asarray(trace.pages)
    N = pages.size
    out = np.full(N, N, dtype=np.int64)
    last: dict[int, int] = {}
    for t in range(N - 1, -1, -1):
        p = int(pages[t])
        out[t] = last.get(p, N)
        last[p] = t
    return out


def eta_l1(rec: Recording, trace) -> float:
    """Σ_t |prediction_t − next arrival_t| over every request (Lykouris & Vassilvitskii's ℓ1
    error; a page never requested again has next arrival N = len(trace))."""
    nu = next_use(trace)
    if len(rec.seen) != nu.size:
        raise AssertionError(f"the policy asked for {len(rec.seen)} of {nu.size} predictions")
    return float(sum(abs(v - nu[t]) for t, v in rec.seen.items()))


def predictor_family(trace, seed: int = 0) -> list[tuple[str, Predictor]]:
    """The adversarial and measured predictors of the prediction rows, fresh instances (each
    wrapped in :class:`Recording` by the caller): exact, jitter at three rates, shifted by 2 and
    by 8, random, reversed, and the online frequency predictor."""
    from paging.predict import FrequencyPredictor, OraclePredictor

    return [("exact", OraclePredictor(0.0)),
            ("jitter p=0.02 w=1", JitterPredictor(0.02, 1, seed)),
            ("jitter p=0.1 w=2", JitterPredictor(0.1, 2, seed)),
            ("jitter p=0.5 w=4", JitterPredictor(0.5, 4, seed)),
            ("shifted 2", ShiftedPredictor(2, trace.pages)),
            ("shifted 8", ShiftedPredictor(8, trace.pages)),
            ("random", RandomPredictor(seed)),
            ("reversed", ReversedPredictor()),
            ("frequency (online)", FrequencyPredictor())]


class PerturbedPredictor(_ClairvoyantTable):
    """The true next arrivals plus a fixed perturbation vector (η_ℓ1 = Σ|delta|)."""

    def __init__(self, delta, name: str = "perturbed"):
        self.delta = np.asarray(delta, dtype=np.float64)
        self.name = name

    def table(self, nu, N):
        return nu + self.delta


#: An 8-request pattern over 4 pages (k = 2) where moving one prediction by 1 (request 0,
#: page 3: next arrival 5 predicted 6) costs BlindOracle one miss more than OPT, in every copy
#: when the pattern is repeated on fresh pages: found by a seeded search (4,000 patterns of 6-15
#: requests, 3 copies each, one ±1/±2 perturbation per copy), in which no perturbation cost
#: more than one miss per unit of error.
TIGHT_PATTERN = (3, 1, 1, 0, 2, 3, 0, 2)
TIGHT_K = 2
TIGHT_AT = 0


def tight_instance(copies: int = 10):
    """``(trace, predictor, η)``: :data:`TIGHT_PATTERN` repeated ``copies`` times on disjoint
    pages (the cache's old pages are never requested again, so every copy starts afresh for
    both BlindOracle and OPT), one +1 error per copy: η_ℓ1 = copies, and BlindOracle pays one
    miss per copy over OPT."""
    m = max(TIGHT_PATTERN) + 1
    L = len(TIGHT_PATTERN)
    pages = np.concatenate([np.asarray(TIGHT_PATTERN) + j * m for j in range(copies)])
    delta = np.zeros(pages.size)
    delta[TIGHT_AT + L * np.arange(copies)] = 1.0
    trace = from_pages(pages, Layout(m * copies, 1))
    return trace, PerturbedPredictor(delta, f"tight:+1 x{copies}"), float(copies)
