"""Classic paging policies, unaware of layers.

References: Sleator & Tarjan, "Amortized efficiency of list update and paging rules", CACM 28(2),
1985, doi:10.1145/2786.2793 (LRU, FIFO and FWF are k-competitive: A(σ) ≤ k·OPT(σ) + k, the
additive term because they start from an empty cache); Fiat, Karp, Luby, McGeoch, Sleator &
Young, "Competitive paging algorithms", J. Algorithms 12(4), 1991, doi:10.1016/0196-6774(91)90041-V
(randomized Marking is 2H_k-competitive).
"""

from __future__ import annotations

from paging.policies.base import CacheView, Policy, PriorityPolicy, pick_uniform


class LRU(PriorityPolicy):
    """Least Recently Used: evict the candidate whose last request is oldest.

    Recency is the request index t (0-based position in the trace), so in groups mode the K
    pages of one group are ordered by their position inside the group. No ties are possible.
    """

    name = "lru"
    order = 10  # place in the registry (paging policies)
    kernel = "list:LRU"
    stack = "LRU"
    reference = "Sleator & Tarjan, CACM 1985"

    def evict_key(self, t, page):
        return -self.last[page]


class FIFO(PriorityPolicy):
    """First In First Out: evict the candidate inserted earliest (hits do not refresh)."""

    name = "fifo"
    order = 20  # place in the registry (paging policies)
    kernel = "list:FIFO"
    reference = "Sleator & Tarjan, CACM 1985"

    def evict_key(self, t, page):
        return -self.inserted[page]


class LFU(PriorityPolicy):
    """Least Frequently Used: evict the candidate with the fewest requests so far.

    Counts are over the whole history ("the lowest access count over the entire inference
    history", SpecMD App. B): a page's count survives its eviction (perfect LFU), which also makes
    LFU a stack algorithm (one-pass miss curves, :mod:`paging.mrc`). Tie-break: among equal
    counts, the least recently used (oldest last request index) is evicted.
    """

    name = "lfu"
    order = 30  # place in the registry (paging policies)
    kernel = "heap:LFU"
    stack = "LFU"
    reference = "SpecMD App. B (perfect LFU)"

    def evict_key(self, t, page):
        return (-self.count[page], -self.last[page])


class FWF(Policy):
    """Flush When Full: on a miss with a full cache, evict every (unpinned) cached page.

    A phase ends at each flush; FWF faults at most k times per phase, hence k-competitive.
    For DIST, each layer's share is flushed on its own.
    """

    name = "fwf"
    order = 40  # place in the registry (paging policies)
    kernel = "list:FWF"
    reference = "Sleator & Tarjan, CACM 1985"

    def victims(self, t, page, cache: CacheView):
        return cache.candidates


class Marking(Policy):
    """Randomized Marking (Fiat et al. 1991).

    Every requested page is marked. On a miss with a full cache: if every candidate is marked,
    a new phase begins and all marks are erased; then a uniformly random unmarked candidate is
    evicted (one ``rng.random()`` draw per eviction, :func:`pick_uniform`). Evicted pages lose
    their mark. E[Marking(σ)] ≤ 2H_k·OPT(σ) + O(k).
    """

    name = "marking"
    order = 50  # place in the registry (paging policies)
    kernel = "marking:MARKING"
    reference = "Fiat et al., J. Algorithms 1991"
    randomized = True

    def reset(self, ctx):
        super().reset(ctx)
        self.marked: set[int] = set()

    def on_hit(self, t, page):
        self.marked.add(page)

    def on_insert(self, t, page):
        self.marked.add(page)

    def on_evict(self, t, page):
        self.marked.discard(page)

    def victim(self, t, page, cache):
        cands = cache.candidates
        unmarked = [q for q in cands if q not in self.marked]
        if not unmarked:  # all marked: the phase ends
            self.marked.clear()
            unmarked = cands
        return pick_uniform(self.ctx.rng, unmarked)
