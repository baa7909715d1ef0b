"""Weighted paging policies: GreedyDual, Landlord (GreedyDual-Size), GDSF and Layered Landlord.

Every page p has a fetch cost w(p) >= 0 and a size s(p) >= 1 (``ctx.costs``, ``ctx.sizes``;
all ones for unweighted runs). All four keep a *credit* H(p) for each cached page in the
"inflation" form of GreedyDual (Young 1994; Cao & Irani 1997): a value L per partition (0 at
the start) and, at every request of p (insertion or hit), ``H(p) = L + c(p)`` where c(p) is the
policy's credit rate; on a miss the page with the smallest H is evicted and L becomes its H.
Subtracting L from every credit gives the textbook form: credits are decreased uniformly
until one reaches 0, and a page with zero credit is evicted. The simulator asks for victims
until the requested page fits (byte budgets may need several), and L follows each eviction.

Ties (equal credits, exactly equal floats): the least recently used page is evicted (oldest
last request index), as in libCacheSim's GDSF (ties ordered by last request time). Layered
Landlord breaks them by LLRU's order instead (below).

Guarantees (cache of k pages, both caches starting empty):

* GreedyDual with uniform sizes: GD(σ) <= k·OPT_w(σ) for every σ [Young 1994, Thm. 1; the
  potential argument gives no additive term from an empty start]; the ledger row
  ``proofs.greedy_dual`` checks it against the exact min-cost-flow OPT.
* Landlord with sizes and costs: cost <= k/(k − h + 1)·OPT_h(σ) against any offline cache of
  size h <= k [Young 2002, Thm. 1], whatever zero-credit page it evicts and whatever credit in
  [current, c(p)·s(p)] it gives a hit page; sizes in units of the smallest page.
* GDSF has no competitive guarantee (its frequency factor can keep a once-hot page forever,
  like LFU).

References: N. E. Young, "The k-server dual and loose competitiveness for paging",
Algorithmica 11(6):525-541, 1994, doi:10.1007/BF01189992 (GreedyDual); P. Cao and S. Irani,
"Cost-aware WWW proxy caching algorithms", USENIX USITS 1997 (GreedyDual-Size); N. E. Young,
"On-line file caching", Algorithmica 33(3):371-383, 2002, doi:10.1007/s00453-001-0124-5
(Landlord); L. Cherkasova, "Improving WWW proxies performance with Greedy-Dual-Size-Frequency
caching policy", HP Labs Tech. Report HPL-98-69R1, 1998 (GDSF).
"""

from __future__ import annotations

from paging.policies.base import CacheView, Policy


class GreedyDual(Policy):
    """GreedyDual (Young 1994): credit rate c(p) = w(p), sizes ignored (uniform-size weighted
    paging).

    On every request of p, ``H(p) = L + w(p)``; on a miss that needs room, evict the page with
    the smallest H (ties: least recently used) and set L to its H. With unit costs H grows with
    the time of the last request, so GreedyDual is exactly LRU (a test checks it).
    Guarantee: k-competitive for weighted paging, GD(σ) <= k·OPT_w(σ) from an empty cache.
    Cost per request: O(1) hook work; victim O(k) here, O(log k) in the kernel.
    """

    name = "greedy-dual"
    order = 130  # place in the registry (paging policies)
    kernel = "credit:GREEDY_DUAL"
    reference = "Young, Algorithmica 1994"

    def reset(self, ctx) -> None:
        super().reset(ctx)
        self.H: dict[int, float] = {}
        self.last: dict[int, int] = {}
        self.L = 0.0

    def rate(self, page: int) -> float:
        """c(p): the credit a request gives above L."""
        return float(self.ctx.costs[page])

    def _touch(self, t: int, page: int) -> None:
        self.last[page] = t
        self.H[page] = self.L + self.rate(page)

    def on_hit(self, t, page):
        self._touch(t, page)

    def on_insert(self, t, page):
        self._touch(t, page)

    def on_evict(self, t, page):
        self.L = self.H.pop(page)  # the evicted page has the smallest credit

    def evict_key(self, t: int, page: int) -> tuple:
        """Smallest first: the credit, then the last request (older first)."""
        return (self.H[page], self.last[page])

    def victim(self, t, page, cache: CacheView) -> int:
        return min(cache.candidates, key=lambda q: self.evict_key(t, q))


class Landlord(GreedyDual):
    """Landlord (Young 2002) in its GreedyDual-Size form (Cao & Irani 1997): credit rate
    c(p) = w(p)/s(p), so ``H(p) = L + w(p)/s(p)`` — credit per byte, rent charged per byte.

    Hits refresh the credit to the full w(p)/s(p) (Landlord allows any value between the
    current credit and that; the full refresh is GreedyDual-Size's choice). With unit sizes it
    is GreedyDual. Guarantee: cost <= k/(k−h+1)·OPT_h (Young 2002, Thm. 1).
    """

    name = "landlord"
    order = 140  # place in the registry (paging policies)
    kernel = "credit:LANDLORD"
    reference = "Young, Algorithmica 2002"

    def rate(self, page):
        return float(self.ctx.costs[page]) / float(self.ctx.sizes[page])


class GDSF(GreedyDual):
    """Greedy-Dual-Size-Frequency (Cherkasova 1998): ``H(p) = L + f(p)·w(p)/s(p)`` with f(p)
    the number of requests of p since it last entered the cache (1 at insertion, +1 per hit,
    forgotten at eviction), as in libCacheSim's GDSF (which fixes w = 10^6). No competitive
    guarantee.
    """

    name = "gdsf"
    order = 150  # place in the registry (paging policies)
    kernel = "credit:GDSF"
    reference = "Cherkasova, HP Labs HPL-98-69R1, 1998"

    def reset(self, ctx) -> None:
        super().reset(ctx)
        self.freq: dict[int, int] = {}

    def rate(self, page):
        return self.freq[page] * float(self.ctx.costs[page]) / float(self.ctx.sizes[page])

    def on_hit(self, t, page):
        self.freq[page] += 1
        self._touch(t, page)

    def on_insert(self, t, page):
        self.freq[page] = 1
        self._touch(t, page)

    def on_evict(self, t, page):
        del self.freq[page]
        super().on_evict(t, page)


class LayeredLandlord(Landlord):
    """Layered Landlord (this package's design): Landlord's credits, LLRU's order among the
    pages of least credit.

    Credits are Landlord's (``H(p) = L + w(p)/s(p)`` at every request, L the credit of the
    last victim). Landlord may evict *any* page whose credit has reached zero, i.e. any page of
    smallest H; this policy picks among them by LLRU's rule (Angelopoulos et al., Sec. 4,
    Def. 2): the largest last-round index R = ⌊(t − τ)/ℓ⌋, then the largest relative layer
    distance D = (τ − t) mod ℓ, then the older request; t and τ are steps of the layer clock.
    D to the letter of Def. 2 puts the layer just served first (D = ℓ − 1) and the current
    layer last (D = 0), although a page of the current layer is the one whose layer is next
    requested furthest ahead (ℓ steps); ``llru-latest``
    (:class:`~paging.policies.layered.LLRULatest`) is the other reading. Either way the victim
    has zero credit, so the guarantee below does not depend on the reading.

    With unit costs and sizes, pages touched while L has the same value share one credit, so
    the policy becomes a deterministic marking algorithm: a page is "marked" once requested
    after the last change of L, unmarked pages (smallest credit) are evicted in LLRU order, and
    when none is left a new phase begins.

    Guarantee (proved, not only checked): it is an instance of Landlord — same credits, a
    victim of zero credit, full refresh on hits — so Young's theorem applies unchanged:
    cost <= k/(k−h+1)·OPT_h, in particular <= k·OPT_w from an empty cache with uniform sizes.
    The ledger row ``proofs.greedy_dual`` checks this bound numerically too.
    Cost per eviction: O(k) here (a scan of the candidates); the kernel keeps the pages sorted
    by (credit, last request) and reads only the pages of least credit and largest R
    (:mod:`paging.fast.credit`).
    """

    name = "layered-landlord"
    order = 160  # place in the registry (paging policies)
    kernel = "credit:LAYERED"
    dist_kernel = "credit:LANDLORD"
    reference = "this package (Landlord with LLRU ties)"

    def reset(self, ctx) -> None:
        super().reset(ctx)
        self.last_step: dict[int, int] = {}

    def _touch(self, t, page):
        super()._touch(t, page)
        self.last_step[page] = int(self.ctx.steps[t])

    def evict_key(self, t, page):
        L = self.ctx.layout.n_layers
        now = int(self.ctx.steps[t])
        tau = self.last_step[page]
        # smallest credit first; among equal credits LLRU's largest (R, D), then older
        return (self.H[page], -((now - tau) // L), -((tau - now) % L), self.last[page])
