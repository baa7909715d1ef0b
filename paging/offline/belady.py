"""Belady's rule: on a miss, evict the cached page whose next request is furthest in the future.

Optimal for unit-cost demand paging: L. A. Belady, "A study of replacement algorithms for a
virtual-storage computer", IBM Systems Journal 5(2), 1966, doi:10.1147/sj.52.0078 (the paper's
OPT, Sec. 2.2). Pages never requested again count as next use = len(trace); among them (and
only there can ties occur) the largest page id is evicted. With pinned groups (groups mode) the
rule is applied among unpinned pages; :mod:`paging.offline.ilp` gives the exact optimum to
compare on small instances.
"""

from __future__ import annotations

from paging.policies.base import PriorityPolicy


class Belady(PriorityPolicy):
    name = "belady"
    order = 120  # place in the registry (paging policies)
    kernel = "heap:BELADY"
    stack = "BELADY"
    reference = "Belady, IBM Sys. J. 1966"
    clairvoyant = True

    def evict_key(self, t, page):
        return (int(self.ctx.next_use[self.last[page]]), page)
