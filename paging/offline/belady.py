"""Belady's rule: on a miss, evict the cached page whose next request is furthest in the future.

Optimal for unit-cost demand paging: L. A. Belady, "A study of replacement algorithms for a
virtual-storage computer", IBM Systems Journal 5(2), 1966, doi:10.1147/sj.52.0078 (the paper's
OPT, Sec. 2.2). Pages never requested again count as next use = len(trace); among them (and
only there can ties occur) the largest page id is evicted. With pinned groups (groups mode) the
rule is applied among unpinned pages; :mod:`paging.offline.ilp` gives the exact optimum to
compare on small instances.
"""

from __future__ import annotations

import numpy as np

from paging.policies.base import PriorityPolicy


class Belady(PriorityPolicy):
    name = "belady"
    order = 120  # place in the registry (paging policies)
    kernel = "heap:BELADY"
    stack = "BELADY"
    reference = "Belady, IBM Sys. J. 1966"
    clairvoyant = True

    def reset(self, ctx):
        super().reset(ctx)
        self._off: dict[int, int] = {}  # touched at a request of another page: its next use
        self._where: dict[int, np.ndarray] = {}

    def _touched(self, t: int, page: int) -> None:
        """``last[page]`` = t names the next use of the page requested at t. A page touched
        at another page's request — prefetched after it, or a substitute serving it
        (:mod:`paging.miss`) — is next used at its own first request after t."""
        pages = self.ctx.pages
        if pages is None or int(pages[t]) == page:
            self._off.pop(page, None)
            return
        where = self._where.get(page)
        if where is None:
            where = self._where[page] = np.flatnonzero(np.asarray(pages) == page)
        i = int(np.searchsorted(where, t, side="right"))
        self._off[page] = int(where[i]) if i < where.size else self.ctx.n_requests

    def on_hit(self, t, page):
        super().on_hit(t, page)
        self._touched(t, page)

    def on_insert(self, t, page):
        super().on_insert(t, page)
        self._touched(t, page)

    def on_prefetch(self, t, page):
        super().on_prefetch(t, page)
        self._touched(t, page)

    def evict_key(self, t, page):
        nu = self._off.get(page)
        if nu is None:
            nu = int(self.ctx.next_use[self.last[page]])
        return (nu, page)
