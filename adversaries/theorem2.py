"""Theorem 2 of Angelopoulos et al. 2025: the adaptive adversary against deterministic policies.

    For every ℓ, every deterministic layered paging algorithm has competitive ratio at least
    k − ℓ + 1   (with k = nℓ − 1).

Construction (proof of Theorem 2): with k = nℓ − 1 the cache misses at least one of the nℓ
pages. Round i repeats round i − 1 except in one layer: the page missing from A's cache at the
start of round i is requested in its own layer. Round 0 requests expert 0 of every layer.

Conventions where the proof is silent (deviations, all deterministic):

* "the page missing": once the cache is full exactly one page is missing, but before it fills —
  and after FWF flushes — several are; we take the smallest page id among them;
* the missing page may be the previous round's page of its layer (evicted during that round),
  so consecutive rounds differ in *at most* one request, not "exactly one"; the counting only
  needs "at most".

Certificate. A misses the requested missing page (demand paging cannot load it earlier), so
A(σ) >= R + ℓ − 1 (all ℓ requests of round 0 are compulsory). For OPT (Belady): between two
consecutive evicting misses at t < t' all k + 1 pages are requested, and rounds r..r+g hold at
most ℓ + g distinct pages, so r(t') − r(t) >= k − ℓ + 1; the first evicting miss comes after
the k compulsory ones. Counting A's compulsory misses up to OPT's first eviction (>= k + 1) and
one miss per round after it gives, for every R >= 1,

    A(σ) >= (k − ℓ + 1)·OPT(σ) − (k + 1)(k − ℓ).

The printed proof concludes A(σ) >= (k − ℓ + 1)·OPT(σ) with no constant: false for short
sequences (R = 1: A = OPT = ℓ), true only up to the additive constant above, which the
competitive ratio (Definition 1) allows.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from adversaries.base import (
    AdversaryResult,
    check_rounds,
    checked_online,
    exact_ratio,
    layout_of,
    opt_run,
    policy_of,
    require_deterministic_online,
    require_k,
    seed_of,
)
from paging.errors import PagingError, positive_int
from paging.policies.base import Policy
from paging.simulate import Simulation
from paging.trace import from_pages

NAME = "theorem2"


def additive_constant(k: int, layers: int) -> int:
    """c in A(σ) >= (k − ℓ + 1)·OPT(σ) − c (derived in the module docstring): (k + 1)(k − ℓ)."""
    return (k + 1) * (k - layers)


def default_rounds(k: int, layers: int) -> int:
    """Enough rounds for OPT's misses to outnumber its k compulsory ones, capped at ~50k
    requests: 8·k·(k − ℓ + 1) rounds (also the default of the Sleator-Tarjan adversary)."""
    return max(2, min(8 * k * max(k - layers + 1, 1), 50_000 // layers))


def build(policy: str | Policy = "lru", *, n: int, layers: int, rounds: int | None = None,
          k: int | None = None, seed: int | None = 0, record: bool = False,
          show: bool | None = None) -> AdversaryResult:
    """Drive a deterministic online policy with Theorem 2's adaptive adversary.

    Parameters
    ----------
    policy : str or Policy
        Deterministic and online (not randomized, not clairvoyant); ``-dist`` variants allowed.
    n, layers : int
        Experts per layer and layers; k = nℓ − 1 must be >= 1.
    rounds : int, optional
        Default :func:`default_rounds`.
    k : int, optional
        Must be nℓ − 1 (the theorem's cache size) if given.
    record : bool
        Keep OPT's recorded run (hit mask, eviction log) in ``result.opt_run``.
    show : bool, optional
        A progress bar over the rounds (default: on a terminal); each round scans the nℓ
        pages, so n = 10^5 on two layers takes about 25 s.

    Returns
    -------
    AdversaryResult
        ``bound`` = k − ℓ + 1; ``params["additive_constant"]`` = (k + 1)(k − ℓ) (the proven c),
        ``params["measured_additive"]`` = (k − ℓ + 1)·OPT − A (at most c), and the per-round
        facts the proof relies on.

    Cost: R·ℓ simulator steps plus one O(nℓ) scan of the cache per round, and one Belady run.
    """
    lay = layout_of(n, layers)
    n, L = lay.n_experts, lay.n_layers
    k = require_k(k, n * L - 1, NAME, "k = n*l - 1, so exactly one page is missing")
    if k < 1:
        raise PagingError(f"{NAME} needs k = n*l - 1 >= 1, got n={n}, layers={L}")
    R = default_rounds(k, L) if rounds is None else positive_int("rounds", rounds)
    check_rounds(R, L, NAME, 100)
    seed = seed_of(seed)
    pol = policy_of(policy)
    require_deterministic_online(pol, NAME)

    sim = Simulation(lay, pol, k, steps=np.arange(R * L), seed=seed)
    cur = [lay.page(z, 0) for z in range(L)]  # round 0: "arbitrary valid requests"
    pages: list[int] = []
    rounds_missed = []          # A's misses in each round
    unchanged = 0               # rounds identical to the previous one
    not_full = 0                # rounds starting with more than one missing page
    from paging.progress import bar

    with bar(R, NAME, unit="round", show=show) as pb:
        for i in range(R):
            pb.update()
            if i > 0:
                resident = sim.resident  # once per round: the request depends on the round's start
                not_full += lay.n_pages - len(resident) > 1
                # Thm 2 proof: request the page missing from A's cache (the smallest; one exists
                # since k < nℓ)
                p = next(q for q in range(lay.n_pages) if q not in resident)
                z = int(lay.layer_of(p))
                unchanged += cur[z] == p
                cur[z] = p      # the other layers repeat the previous round
            before = sim.misses
            for q in cur:
                sim.serve(q)
            pages.extend(cur)
            rounds_missed.append(sim.misses - before)
    trace = from_pages(pages, lay, name=f"theorem2:{pol.name},n={n},layers={L},rounds={R}")
    online = checked_online(trace, pol, k, sim.misses, seed)
    opt_result = opt_run(trace, k, record=record)
    opt = opt_result.misses
    g = k - L + 1
    return AdversaryResult(
        name=NAME, policy=pol.name, k=k, trace=trace, online_misses=online, opt_misses=opt,
        ratio=exact_ratio(online, opt), bound=Fraction(g), bound_name="k - l + 1",
        params={"n": n, "layers": L, "rounds": R, "seed": seed,
                "additive_constant": additive_constant(k, L),
                "measured_additive": g * opt - online,
                "min_misses_per_round": min(rounds_missed),
                "max_misses_per_round": max(rounds_missed),
                "rounds_unchanged": unchanged, "rounds_not_full": not_full},
        opt_run=opt_result if record else None,
    )
