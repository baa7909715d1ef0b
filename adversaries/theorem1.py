"""Theorem 1 of Angelopoulos et al. 2025: fixed cache partitions are not competitive.

    Any deterministic algorithm that gives each layer a fixed share of the cache has unbounded
    competitive ratio when n >= 2 and ℓ >= 2.

Construction (proof of Theorem 1): pick a layer z whose share s_z is below n (one exists iff
k < nℓ: the shares add up to k). Round i requests expert ``i mod n`` of layer z and expert 0 of
every other layer (the paper's ``p^{(z)}_{i mod n + 1}`` and ``p^{(j)}_1``, 1-based). Only
``n + ℓ − 1`` distinct pages are ever requested, so

* OPT(σ_R) = n + ℓ − 1 for every R >= n (compulsory misses only) **iff** k >= n + ℓ − 1;
* layer z cycles through n pages in s_z < n slots: every n consecutive rounds hold all n pages
  of layer z, so any policy confined to s_z slots misses at least n − s_z of them, and
  A(σ_R) >= (ℓ − 1) + n + (n − s_z)(⌊R/n⌋ − 1) for R >= n.

Hence A(σ_R)/OPT(σ_R) grows linearly in R. The theorem's window is therefore
``n + ℓ − 1 <= k < nℓ`` exactly (non-empty iff n >= 2 and ℓ >= 2). The proof's later sentence
"if k > n + ℓ, OPT can store all requested pages" asks for more than needed: k = n + ℓ − 1 and
k = n + ℓ already suffice (checked in :mod:`proofs.theorem1`).

The bound holds for randomized and offline fixed partitions too (belady-dist = OPT-DIST): the
counting argument uses only the share.
"""

from __future__ import annotations

import numpy as np

from adversaries.base import (
    AdversaryResult,
    check_rounds,
    exact_ratio,
    layout_of,
    opt_misses,
    policy_of,
    seed_of,
)
from paging.errors import PagingError, positive_int
from paging.layout import Layout
from paging.policies.base import Policy
from paging.simulate import simulate
from paging.trace import Trace, from_pages

NAME = "theorem1"


def layer_shares(pol: Policy, layout: Layout, k: int) -> np.ndarray | None:
    """Cache slots reserved for each layer by a fixed partition, or None for a shared cache.

    Partitioned policies (:class:`~paging.policies.PerLayer`, the ``-dist`` variants) partition
    by layer, so part z of :meth:`Policy.partitions` is layer z and its capacity is the share.
    """
    part_of, caps = pol.partitions(layout, k)
    return None if part_of is None else np.asarray(caps, dtype=np.int64)


def sequence(layout: Layout, rounds: int, z: int) -> Trace:
    """The proof's sequence: round i requests expert i mod n of layer z, expert 0 elsewhere."""
    n, L = layout.n_experts, layout.n_layers
    experts = np.zeros((rounds, L), dtype=np.int64)
    experts[:, z] = np.arange(rounds) % n  # paper: p^{(z)}_{i mod n + 1} (1-based)
    pages = layout.page(np.arange(L)[None, :], experts).reshape(-1)
    return from_pages(pages, layout, name=f"theorem1:n={n},layers={L},rounds={rounds},z={z}")


def distinct_pages(n: int, layers: int, rounds: int) -> int:
    """Pages requested by :func:`sequence` in ``rounds`` rounds: min(R, n) + ℓ − 1."""
    return min(rounds, n) + layers - 1 if rounds else 0


def online_lower_bound(n: int, layers: int, rounds: int, share: int) -> int:
    """Misses every policy with ``share`` < n slots for layer z must make on R rounds.

    Compulsory misses: the ℓ − 1 fixed pages and the first min(R, n) pages of layer z; then each
    later block of n consecutive rounds holds all n pages of layer z, at most ``share`` of which
    are cached when the block starts, so n − share more misses per complete block.
    """
    if rounds == 0:
        return 0
    return layers - 1 + min(rounds, n) + (n - share) * max(rounds // n - 1, 0)


def default_rounds(n: int) -> int:
    """50·n rounds: 49 complete blocks of n rounds after the first."""
    return 50 * n


def build(policy: str | Policy = "lru-dist", *, n: int, layers: int, rounds: int | None = None,
          k: int | None = None, seed: int | None = 0) -> AdversaryResult:
    """Run Theorem 1's sequence against a fixed-partition (``-dist``) policy.

    Parameters
    ----------
    policy : str or Policy
        A policy with per-layer shares (lru-dist, llru-dist, marking-dist, belady-dist, ...).
    n, layers : int
        Experts per layer (n >= 2) and layers (ℓ >= 2).
    rounds : int, optional
        Default 50·n.
    k : int, optional
        Cache size with n + ℓ − 1 <= k < nℓ; default n + ℓ − 1 (the smallest k at which OPT's
        cost stays constant).
    seed : int
        For randomized policies (marking-dist).

    Returns
    -------
    AdversaryResult
        ``bound`` is :func:`online_lower_bound` / OPT: the ratio every fixed partition with the
        same share is forced to, growing linearly in ``rounds``.

    Raises
    ------
    PagingError
        n < 2 or ℓ < 2, k outside [n + ℓ − 1, nℓ − 1], or a policy without per-layer shares.
    """
    lay = layout_of(n, layers)
    n, L = lay.n_experts, lay.n_layers
    lo, hi = n + L - 1, n * L - 1
    if lo > hi:
        raise PagingError(f"theorem1 needs n >= 2 and layers >= 2 (then n + l - 1 <= k < nl is "
                          f"possible), got n={n}, layers={L}")
    if k is None:
        k = lo
    k = positive_int("k", k)
    if not lo <= k <= hi:
        raise PagingError(f"theorem1 needs n + l - 1 <= k < n*l, i.e. {lo} <= k <= {hi} for "
                          f"n={n}, layers={L}, got k={k}")
    R = default_rounds(n) if rounds is None else positive_int("rounds", rounds)
    check_rounds(R, L, NAME, 48)
    seed = seed_of(seed)
    pol = policy_of(policy)
    shares = layer_shares(pol, lay, k)
    if shares is None:
        raise PagingError(f"theorem1 is about fixed per-layer partitions; {pol.name} shares one "
                          f"cache (try {pol.name}-dist)")
    # Proof: "there exists at least one layer L_z for which A's cache always holds fewer than
    # n pages, as k/ℓ < n" (pigeonhole); we take the first layer with the smallest share.
    z = int(np.argmin(shares))
    s = int(shares[z])
    trace = sequence(lay, R, z)
    online = simulate(trace, pol, k, seed=seed).misses
    opt = opt_misses(trace, k)
    lower = online_lower_bound(n, L, R, s)
    return AdversaryResult(
        name=NAME, policy=pol.name, k=k, trace=trace, online_misses=online, opt_misses=opt,
        ratio=exact_ratio(online, opt), bound=exact_ratio(lower, opt),
        bound_name="(l-1 + n + (n-s_z)(floor(R/n)-1)) / OPT, unbounded in R",
        params={"n": n, "layers": L, "rounds": R, "seed": seed, "z": z, "share_z": s,
                "shares": shares.tolist(), "distinct_pages": distinct_pages(n, L, R),
                "online_lower_bound": lower, "k_window": [lo, hi]},
    )
