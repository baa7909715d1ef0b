"""Theorem 3 of Angelopoulos et al. 2025: LRU is no better than k-competitive on layered inputs.

    For any ℓ and k such that ℓ divides k + 1:  Cr(LRU) >= k.

Construction (proof of Theorem 3): n = (k + 1)/ℓ and round i requests expert ``i mod n`` of
every layer, so the sequence cycles through all nℓ = k + 1 pages in the same order
(:func:`paging.generators.cyclic`).

Exact counts on N = Rℓ requests (verified in :mod:`proofs.theorem3`):

* LRU misses every request: LRU(σ_N) = N (the evicted page is always the next one requested);
* OPT(σ_N) = N for N <= k, and OPT(σ_N) = k + ⌈(N − k)/k⌉ for N >= k: k compulsory misses,
  then Belady's rule evicts the page requested furthest ahead, which is the page requested k
  steps later, so the misses fall at requests k, 2k, 3k, ... (0-based). The proof's "OPT suffers
  a cache miss every k requests" holds after the k compulsory misses.

Hence LRU(σ)/OPT(σ) = N/(k + ⌈(N − k)/k⌉) → k, always strictly below k for k >= 2, and
LRU(σ) >= k·OPT(σ) − (k² − 1).
"""

from __future__ import annotations

from fractions import Fraction

from adversaries.base import (
    AdversaryResult,
    check_rounds,
    exact_ratio,
    layout_of,
    opt_misses,
    policy_of,
    require_k,
    seed_of,
)
from paging.errors import PagingError, positive_int
from paging.generators import cyclic
from paging.policies.base import Policy
from paging.simulate import simulate

NAME = "theorem3"


def opt_formula(n_requests: int, k: int) -> int:
    """OPT's misses on the cyclic sequence over k + 1 pages: N if N <= k, else k + ⌈(N−k)/k⌉."""
    N = int(n_requests)
    if N <= k:
        return N
    return k + -(-(N - k) // k)


def additive_constant(k: int) -> int:
    """c with LRU(σ) >= k·OPT(σ) − c on every prefix of the cycle: k² − 1."""
    return k * k - 1


def default_rounds(n: int, layers: int) -> int:
    """About 20·k² requests (LRU/OPT within ~5% of k), capped at 50k requests."""
    k = n * layers - 1
    return max(n, min(-(-20 * k * k // layers), 50_000 // layers))


def build(policy: str | Policy = "lru", *, n: int, layers: int, rounds: int | None = None,
          k: int | None = None, seed: int | None = 0) -> AdversaryResult:
    """Run Theorem 3's cyclic sequence against ``policy`` (the theorem is about LRU).

    Parameters
    ----------
    policy : str or Policy
        Default LRU; any registered policy may be compared.
    n, layers : int
        k + 1 = nℓ pages; n >= 1, and k = nℓ − 1 >= 1.
    rounds : int, optional
        Default :func:`default_rounds`.
    k : int, optional
        Must be nℓ − 1 if given (ℓ divides k + 1 and n = (k + 1)/ℓ).

    Returns
    -------
    AdversaryResult
        ``bound`` = k; ``params["opt_formula"]`` = k + ⌈(N − k)/k⌉ (equal to ``opt_misses``).
    """
    lay = layout_of(n, layers)
    n, L = lay.n_experts, lay.n_layers
    k = require_k(k, n * L - 1, NAME, "l divides k + 1 and n = (k + 1)/l")
    if k < 1:
        raise PagingError(f"{NAME} needs k = n*l - 1 >= 1, got n={n}, layers={L}")
    R = default_rounds(n, L) if rounds is None else positive_int("rounds", rounds)
    check_rounds(R, L, NAME, 24)
    seed = seed_of(seed)
    pol = policy_of(policy)
    # round i requests expert i mod n of every layer (paper: p_{i'} with i' = i mod n)
    trace = cyclic(n, L, R, name=f"theorem3:n={n},layers={L},rounds={R}")
    online = simulate(trace, pol, k, seed=seed).misses
    opt = opt_misses(trace, k)
    return AdversaryResult(
        name=NAME, policy=pol.name, k=k, trace=trace, online_misses=online, opt_misses=opt,
        ratio=exact_ratio(online, opt), bound=Fraction(k), bound_name="k (LRU, as N grows)",
        params={"n": n, "layers": L, "rounds": R, "seed": seed,
                "opt_formula": opt_formula(len(trace), k),
                "additive_constant": additive_constant(k),
                "measured_additive": k * opt - online},
    )
