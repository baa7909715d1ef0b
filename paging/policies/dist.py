"""The per-layer (DIST) wrapper: a fixed share of the cache for each layer.

``PerLayer(factory)`` runs one instance of a policy per layer, each on its own share of the
cache: k // ℓ slots per layer, plus one for each of the first k mod ℓ layers (a layer with no
slot always misses). This is the "-DIST" variant of Angelopoulos et al., Sec. 5.1, and, with
Belady inside, OPT-DIST (the optimum among fixed per-layer partitions). Theorem 1 shows that
any such policy has unbounded competitive ratio.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from paging.policies.base import Policy


class PerLayer(Policy):
    per_layer = True

    def __init__(self, factory: Callable[[], Policy]):
        self.factory = factory
        proto = factory()
        base, colon, spec = proto.name.partition(":")  # name:predictor -> name-dist:predictor
        self.name = f"{base}-dist{colon}{spec}"
        self.clairvoyant = proto.clairvoyant
        self.randomized = proto.randomized
        self.needs_scores = proto.needs_scores
        self.prefetches = proto.prefetches

    def shares(self, layout, k) -> np.ndarray:
        """Each layer's slots of a cache of ``k``: the DIST shares (module docstring); a
        subclass may fix others (Theorem 1's any fixed partition, :mod:`proofs.theorem1`)."""
        return layout.dist_shares(k)

    def partitions(self, layout, k):
        return layout.layer_of(np.arange(layout.n_pages)), self.shares(layout, k)

    def reset(self, ctx):
        super().reset(ctx)
        shares = self.shares(ctx.layout, ctx.capacity)
        self.subs = []
        for share in shares:
            sub = self.factory()
            sub.reset(ctx.with_capacity(share))
            self.subs.append(sub)

    def _sub(self, page: int) -> Policy:
        return self.subs[page // self.ctx.layout.n_experts]

    def on_hit(self, t, page):
        self._sub(page).on_hit(t, page)

    def on_insert(self, t, page):
        self._sub(page).on_insert(t, page)

    def on_evict(self, t, page):
        self._sub(page).on_evict(t, page)

    def on_prefetch(self, t, page):
        self._sub(page).on_prefetch(t, page)

    def victims(self, t, page, cache):
        return self._sub(page).victims(t, page, cache)
