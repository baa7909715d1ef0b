"""The layered page space of Angelopoulos et al. (Sec. 2.2).

There are ``n_layers`` (ℓ) layers of ``n_experts`` (n) experts each; the page of expert ``e`` in
layer ``z`` is ``p = z * n + e``, so pages ``0 .. nℓ-1`` and layer ``L_z = {z·n, ..., z·n + n-1}``.
Layers and experts are 0-based here (the paper counts from 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from paging.errors import INT64_MAX, PagingError, brief


@dataclass(frozen=True)
class Layout:
    """ℓ layers of n experts; page = layer * n_experts + expert.

    >>> lay = Layout(n_experts=8, n_layers=32)
    >>> lay.n_pages, lay.page(2, 5), lay.layer_of(21), lay.expert_of(21)
    (256, 21, 2, 5)
    """

    n_experts: int
    n_layers: int

    def __post_init__(self) -> None:
        for name in ("n_experts", "n_layers"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise PagingError(f"{name} must be an integer >= 1, got {v!r}")
            object.__setattr__(self, name, int(v))
        if self.n_experts * self.n_layers > INT64_MAX:  # (page ids are int64)
            raise PagingError(f"a layout of {brief(self.n_experts)} experts x "
                              f"{brief(self.n_layers)} layers "
                              "has more pages than int64 ids can name; expected at most "
                              "2^63 - 1 pages")

    @property
    def n_pages(self) -> int:
        return self.n_experts * self.n_layers

    def page(self, layer, expert):
        """Page id of ``expert`` in ``layer`` (works elementwise on arrays)."""
        return layer * self.n_experts + expert

    def layer_of(self, page):
        return page // self.n_experts

    def expert_of(self, page):
        return page % self.n_experts

    def dist_shares(self, k: int) -> np.ndarray:
        """Per-layer cache shares of the DIST variants: k // ℓ each, and one more slot for each of
        the first k mod ℓ layers (Sec. 5.1: "a specific cache of size k/ℓ per layer")."""
        base, extra = divmod(int(k), self.n_layers)
        shares = np.full(self.n_layers, base, dtype=np.int64)
        shares[:extra] += 1
        return shares
