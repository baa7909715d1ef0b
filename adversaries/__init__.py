"""Lower-bound constructions for layered paging, one module per construction.

Each ``build(policy, *, n, layers, rounds=None, k=None, seed=0, ...)`` returns an
:class:`~adversaries.base.AdversaryResult`: the sequence and its certificate (online misses,
OPT's misses by Belady's rule, the exact ratio, and the bound the theorem claims).

========================  ====================================================================
``theorem1``              fixed per-layer partitions: unbounded ratio (Theorem 1)
``theorem2``              adaptive, deterministic policies: ratio >= k − ℓ + 1 (Theorem 2)
``theorem3``              cyclic sequence: LRU's ratio -> k (Theorem 3)
``theorem4``              Yao's uniform layered distribution, randomized policies (Theorem 4)
``sleator-tarjan``        request the missing page: ratio >= k on one layer (Sleator & Tarjan)
``random-hk``             uniform over k + 1 pages: E[A]/E[OPT] -> H_k (Fiat et al. 1991)
========================  ====================================================================

Theorems are those of S. Angelopoulos, L. Marchal, A. Obrecht and B. Simon, "Cache Management
for Mixture-of-Experts LLMs" (extended version), 2025, Sec. 3 ("Angelopoulos et al. 2025").
"""

from __future__ import annotations

from collections.abc import Callable

from adversaries import classic, theorem1, theorem2, theorem3, theorem4
from adversaries.base import AdversaryResult

ADVERSARIES: dict[str, Callable[..., AdversaryResult]] = {
    "theorem1": theorem1.build,
    "theorem2": theorem2.build,
    "theorem3": theorem3.build,
    "theorem4": theorem4.build,
    "sleator-tarjan": classic.sleator_tarjan,
    "random-hk": classic.random_hk,
}

#: Constructions drawn at random (they take ``sequences=``).
RANDOMIZED = ("theorem4", "random-hk")

__all__ = ["ADVERSARIES", "RANDOMIZED", "AdversaryResult"]
