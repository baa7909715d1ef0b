"""The two classical paging lower bounds, on k + 1 pages, as layered constructions.

Sleator-Tarjan (deterministic): D. D. Sleator and R. E. Tarjan, "Amortized efficiency of list
update and paging rules", CACM 28(2), 1985, doi:10.1145/2786.2793 — every deterministic online
algorithm has ratio >= k: request the page missing from its cache, every time.

Random-H_k (randomized, Yao): A. Fiat, R. Karp, M. Luby, L. McGeoch, D. Sleator and N. Young,
"Competitive paging algorithms", J. Algorithms 12(4), 1991, doi:10.1016/0196-6774(91)90041-V —
uniform requests over k + 1 pages give E[A]/E[OPT] -> H_k for every algorithm, so no randomized
algorithm beats H_k (Motwani & Raghavan, *Randomized Algorithms*, 1995, Sec. 13.1).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from adversaries.base import (
    AdversaryResult,
    certify_random,
    check_rounds,
    checked_online,
    exact_ratio,
    layout_of,
    opt_misses,
    policy_of,
    require_deterministic_online,
    seed_of,
    steady_ratio,
)
from adversaries.theorem2 import additive_constant, default_rounds
from paging.coupon import harmonic
from paging.errors import PagingError, positive_int
from paging.layout import Layout
from paging.policies.base import Policy
from paging.simulate import Simulation
from paging.trace import from_pages


def page_set(layout: Layout, k: int) -> list[list[int]]:
    """The k + 1 pages the adversary uses, per layer: layer z gets experts 0..m_z − 1 with
    m_z = (k + 1) // ℓ, plus one for the first (k + 1) mod ℓ layers (every layer gets >= 1
    because k >= ℓ)."""
    shares = layout.dist_shares(k + 1)
    return [[layout.page(z, e) for e in range(int(m))] for z, m in enumerate(shares)]


def sleator_tarjan(policy: str | Policy = "lru", *, n: int, layers: int = 1,
                   rounds: int | None = None, k: int | None = None,
                   seed: int | None = 0, show: bool | None = None) -> AdversaryResult:
    """Sleator-Tarjan's adaptive adversary: always request a page missing from A's cache.

    On one layer (ℓ = 1, k < n) the adversary uses pages 0..k and requests the page A lacks, so
    A misses every request while OPT misses at most once per k requests:
    A(σ) >= k·OPT(σ) − (k² − 1)  [Sleator & Tarjan 1985].

    Layered (ℓ >= 2, ℓ <= k <= nℓ − 1): the k + 1 pages of :func:`page_set`; request t (layer z)
    is the smallest page of layer z missing from A's cache if there is one (a forced miss), else
    layer z's page of the previous round (a hit). The request sequence must visit the layers in
    order, so A cannot be made to miss at every step; Theorem 2's counting still applies: a
    request differs from its layer's previous one only at a forced miss, rounds r..r+g hold at
    most ℓ + (changed requests) distinct pages, and between two OPT evictions all k + 1 pages
    occur, so A(σ) >= (k − ℓ + 1)·OPT(σ) − (k + 1)(k − ℓ). This is Theorem 2's bound with a
    per-request (rather than per-round) adaptive adversary, and its constant
    (:func:`adversaries.theorem2.additive_constant`; k² − 1 on one layer, the constant of LRU on
    the cyclic sequence, Theorem 3).

    Parameters
    ----------
    policy : str or Policy
        Deterministic online policy.
    n, layers : int
        Layout; default one layer.
    rounds : int, optional
        Rounds (requests when ℓ = 1); default :func:`adversaries.theorem2.default_rounds`,
        8·k·(k − ℓ + 1) capped at 50k requests.
    k : int, optional
        Default nℓ − 1 (all pages); ℓ <= k <= nℓ − 1.
    show : bool, optional
        A progress bar over the rounds (default: on a terminal); a request scans its layer's
        pages, so n = 10^5 on two layers takes about a minute.

    Returns
    -------
    AdversaryResult
        ``bound`` = k − ℓ + 1 (= k on one layer); ``params["additive_constant"]``.
    """
    name = "sleator-tarjan"
    lay = layout_of(n, layers)
    n, L = lay.n_experts, lay.n_layers
    k = n * L - 1 if k is None else positive_int("k", k)
    if not L <= k <= n * L - 1:
        raise PagingError(f"{name} needs l <= k <= n*l - 1 (k + 1 pages, at least one per layer), "
                          f"i.e. {L} <= k <= {n * L - 1} for n={n}, layers={L}, got k={k}")
    g = k - L + 1
    R = default_rounds(k, L) if rounds is None else positive_int("rounds", rounds)
    check_rounds(R, L, name, 100)
    seed = seed_of(seed)
    pol = policy_of(policy)
    require_deterministic_online(pol, name)
    S = page_set(lay, k)
    sim = Simulation(lay, pol, k, steps=np.arange(R * L), seed=seed)
    prev = [layer_pages[0] for layer_pages in S]
    pages: list[int] = []
    from paging.progress import bar

    with bar(R, name, unit="round", show=show) as pb:
        for _ in range(R):
            pb.update()
            for z in range(L):
                # ST: request the smallest page of layer z that A does not hold, if any
                q = next((p for p in S[z] if p not in sim), prev[z])
                sim.serve(q)
                prev[z] = q
                pages.append(q)
    trace = from_pages(pages, lay, name=f"{name}:{pol.name},n={n},layers={L},k={k},rounds={R}")
    online = checked_online(trace, pol, k, sim.misses, seed)
    opt = opt_misses(trace, k)
    c = additive_constant(k, L)
    return AdversaryResult(
        name=name, policy=pol.name, k=k, trace=trace, online_misses=online, opt_misses=opt,
        ratio=exact_ratio(online, opt), bound=Fraction(g),
        bound_name="k" if L == 1 else "k - l + 1",
        params={"n": n, "layers": L, "rounds": R, "seed": seed, "additive_constant": c,
                "measured_additive": g * opt - online, "pages_used": k + 1},
    )


def random_hk(policy: str | Policy = "lru", *, n: int, layers: int = 1,
              rounds: int | None = None, k: int | None = None, seed: int | None = 0,
              sequences: int = 4, show: bool | None = None) -> AdversaryResult:
    """Uniform requests over k + 1 pages: E[A]/E[OPT] -> H_k for every online algorithm.

    Once A's cache is full one of the k + 1 pages is missing, so every request misses with
    probability 1/(k + 1): E[A(σ)] >= (N − k)/(k + 1). OPT's phases (from one OPT miss to the
    next) end when the k pages other than the one that opened the phase have all been
    requested: a coupon collector for k given coupons out of k + 1, mean (k + 1)·H_k requests.
    So E[A]/E[OPT] -> H_k [Fiat et al. 1991]. One layer only (``layers=1``); the layered
    analogue is ``theorem4``.

    Parameters
    ----------
    policy : str or Policy
        Any policy (randomized ones get a seed per sequence).
    n : int
        Pages available (k + 1 <= n are used).
    rounds : int, optional
        Requests per sequence; default 400·(k + 1)·H_k (about 400 OPT phases).
    k : int, optional
        1 <= k <= n − 1; default n − 1.
    sequences : int
        Independent sequences; the ratio is total A over total OPT (at most
        :data:`~adversaries.base.MAX_SEQUENCES`).
    show : bool, optional
        The progress bar over the sequences (default: on a terminal).

    Returns
    -------
    AdversaryResult
        ``bound`` = H_k (exact); ``params["steady_ratio"]`` = (A − k)/(OPT − k) summed over
        sequences (without the k compulsory misses both make).
    """
    name = "random-hk"
    lay = layout_of(n, layers)
    n, L = lay.n_experts, lay.n_layers
    if L != 1:
        raise PagingError(f"{name} is the classical one-layer construction (uniform over k + 1 "
                          f"pages); got layers={L}: use theorem4 for layered inputs")
    k = n - 1 if k is None else positive_int("k", k)
    if not 1 <= k <= n - 1:
        raise PagingError(f"{name} needs 1 <= k <= n - 1 (k + 1 pages, one more than the cache), "
                          f"got k={k} with n={n}")
    hk = harmonic(k)
    R = (int(400 * (k + 1) * hk) + 1 if rounds is None else positive_int("rounds", rounds))
    S = positive_int("sequences", sequences)
    seed = seed_of(seed)
    pol = policy_of(policy)

    def draw(rng: np.random.Generator, j: int):
        return from_pages(rng.integers(0, k + 1, size=R), lay,
                          name=f"{name}:n={n},k={k},requests={R},seed={seed}#{j}")

    traces, (per_seq,) = certify_random([pol], k, draw, sequences=S, seed=seed, show=show,
                                         requests=R)
    online = sum(a for a, _ in per_seq)
    opt = sum(o for _, o in per_seq)
    return AdversaryResult(
        name=name, policy=pol.name, k=k, trace=traces[0], online_misses=online, opt_misses=opt,
        ratio=exact_ratio(online, opt), bound=hk, bound_name="H_k",
        params={"n": n, "layers": L, "rounds": R, "seed": seed, "sequences": S,
                "steady_ratio": steady_ratio(online, opt, k, S), "phase_mean": (k + 1) * hk,
                "per_sequence": per_seq},
        traces=traces,
    )
