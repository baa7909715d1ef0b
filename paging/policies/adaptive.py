"""Adaptive policies with ghost lists: ARC and LeCaR.

Both keep *ghost* (history) lists of recently evicted pages: these are the policy's own
bookkeeping (page ids only), never part of the cache, which the simulator owns.

References: N. Megiddo and D. S. Modha, "ARC: A self-tuning, low overhead replacement cache",
USENIX FAST 2003, pp. 115-130 (ARC); G. Vietri, L. V. Rodriguez, W. A. Martinez, S. Lyons,
J. Liu, R. Rangaswami, M. Zhao and G. Narasimhan, "Driving cache replacement with ML-based
LeCaR", USENIX HotStorage 2018 (LeCaR). Both were checked line by line against libCacheSim's
``ARC.c`` and ``LeCaR.c`` (github.com/1a1a11a/libCacheSim); the readings below say where we
follow it and where we cannot.

Neither has a competitive guarantee better than the trivial one: ARC is not k-competitive in
general (its T1 behaves as LRU, its T2 as LRU, and p moves between them; no bound is claimed in
the paper), and LeCaR inherits LFU's unbounded ratio with probability bounded away from zero.
"""

from __future__ import annotations

import math

from paging.policies.base import CacheView, Policy


def _oldest_unpinned(order: dict, cache: CacheView) -> int | None:
    """The first page of ``order`` (oldest first) that is a victim candidate, or None."""
    pinned = cache.pinned
    for q in order:
        if not pinned or q not in pinned:
            return q
    return None


class ARC(Policy):
    """Adaptive Replacement Cache (Megiddo & Modha, FAST 2003, Fig. 4 "ARC(c)").

    Four LRU lists: T1 (pages seen once recently) and T2 (seen at least twice), both resident,
    and the ghosts B1, B2 (recently evicted from T1, T2). The target size p of T1 adapts: a miss
    on a ghost of B1 raises it by max(|B2|/|B1|, 1) (capped at c), a miss on a ghost of B2
    lowers it by max(|B1|/|B2|, 1) (floored at 0); p is a float, as in libCacheSim (the paper
    leaves int/float open). REPLACE evicts the LRU page of T1 (to B1) when T1 is non-empty and
    (|T1| > p, or |T1| = p and the request hit B2), or when T2 is empty (libCacheSim's guard:
    the paper's rule would pick the empty T2 when p = c); otherwise the LRU page of T2 (to B2).
    Case IV (a miss in no list) first trims the directory: if |T1| + |B1| >= c, drop B1's LRU
    ghost and REPLACE, or, with B1 empty, evict T1's LRU page *without* a ghost; otherwise, if
    |T1| + |T2| + |B1| + |B2| >= 2c, drop B2's LRU ghost, then REPLACE. A hit moves the page to
    the MRU end of T2; a missed page enters T2 after a ghost hit, T1 otherwise.

    Readings: c is the partition's capacity (``ctx.capacity``), counted in pages: list sizes
    are page counts (libCacheSim counts bytes, equal for unit sizes). The ghost adaptation runs
    on every miss on a ghost, also when the page fits without an eviction (only possible with a
    byte budget); directory trimming runs only when an eviction is needed, as in libCacheSim
    (with unit sizes the cache is full whenever a ghost exists, so this is the paper's order).
    With a byte budget the simulator may ask for several victims for one request: each is
    chosen by the full rule above. Pinned pages (groups mode) are skipped: the victim is the
    least recent unpinned page of the list the rule picks, else of the other list.

    Prefetching (SpecMD's phase 3; the ARC paper has none): a prefetch is an insertion
    (``on_prefetch`` = ``on_insert``), and an insertion into ARC is the arrival of a page that
    is not resident, so the prefetched page x takes the miss path as if it were requested:
    cases II/III when x is a ghost (p moves, x leaves its ghost list and enters T2), case IV
    otherwise (trimming when room must be made, then T1). An arrival is processed once per
    (request index, page): the victims and the insertion of one page share it, and a prefetch
    after request t, which the simulator reports at that t, is another page's arrival. (Keyed
    on t alone, as it was, a prefetched ghost stayed in its ghost list while it entered T1 or
    T2 under the flag of the request before it: a page in two lists at once.) The other
    reading, a prefetch that adapts nothing, is not built: a prefetched ghost's return is the
    evidence ARC's adaptation reads, whoever fetched it.
    Deterministic. Cost per request: O(1) dictionary work (O(pinned) to skip pinned pages);
    the compiled kernel (:mod:`paging.fast.adaptive`) makes the same decisions in O(1).
    """

    name = "arc"
    kernel = "adaptive:ARC"  # paging.fast.adaptive (also per layer)
    order = 190  # place in the registry (paging policies)
    reference = "Megiddo & Modha, FAST 2003"

    def reset(self, ctx) -> None:
        super().reset(ctx)
        self.c = int(ctx.capacity)
        self.T1: dict[int, None] = {}  # insertion-ordered: LRU first
        self.T2: dict[int, None] = {}
        self.B1: dict[int, None] = {}
        self.B2: dict[int, None] = {}
        self.p = 0.0
        self._arrived = (-1, -1)  # (t, page) of the arrival processed last
        self._ghost = 0        # 1 or 2: that arrival hit ghost list B1 or B2
        self._to_ghost: dict[int, bool] = {}  # victim -> whether it becomes a ghost

    def _arrive(self, t: int, page: int) -> None:
        """Cases II and III (once per arrival: a missed request, or a prefetch after request
        t): adapt p, take the page off its ghost list."""
        if self._arrived == (t, page):
            return
        self._arrived, self._ghost = (t, page), 0
        if page in self.B1:
            self.p = min(self.p + max(len(self.B2) / len(self.B1), 1.0), float(self.c))
            del self.B1[page]
            self._ghost = 1
        elif page in self.B2:
            self.p = max(self.p - max(len(self.B1) / len(self.B2), 1.0), 0.0)
            del self.B2[page]
            self._ghost = 2

    def on_hit(self, t, page):
        # case I: to the MRU end of T2
        self.T1.pop(page, None)
        self.T2.pop(page, None)
        self.T2[page] = None

    def on_insert(self, t, page):
        self._arrive(t, page)
        (self.T2 if self._ghost else self.T1)[page] = None

    def on_evict(self, t, page):
        ghost = self._to_ghost.pop(page, True)
        if page in self.T1:
            del self.T1[page]
            if ghost:
                self.B1[page] = None
        else:
            del self.T2[page]
            if ghost:
                self.B2[page] = None

    def _replace(self, cache: CacheView) -> int:
        n1 = len(self.T1)
        first = ((n1 > 0 and (n1 > self.p or (n1 == self.p and self._ghost == 2)))
                 or not self.T2)
        lists = (self.T1, self.T2) if first else (self.T2, self.T1)
        for lst in lists:
            v = _oldest_unpinned(lst, cache)
            if v is not None:
                return v
        raise RuntimeError("arc: no unpinned resident page")  # the simulator prevents this

    def victim(self, t, page, cache: CacheView) -> int:
        self._arrive(t, page)
        if self._ghost:
            return self._replace(cache)
        c = self.c
        if len(self.T1) + len(self.B1) >= c:          # case IV.A: L1 holds c pages
            if self.B1:
                del self.B1[next(iter(self.B1))]
                return self._replace(cache)
            v = _oldest_unpinned(self.T1, cache)       # T1 holds c pages: no ghost
            if v is not None:
                self._to_ghost[v] = False
                return v
            return self._replace(cache)
        if len(self.T1) + len(self.T2) + len(self.B1) + len(self.B2) >= 2 * c and self.B2:
            del self.B2[next(iter(self.B2))]          # case IV.B
        return self._replace(cache)


class LeCaR(Policy):
    """LeCaR (Vietri et al., HotStorage 2018): regret minimisation over two experts, LRU and LFU.

    Each resident page has a recency (last request) and an in-cache frequency (1 on insertion,
    +1 per hit, forgotten on eviction). On an eviction the LRU expert proposes the least
    recently used page, the LFU expert the page with the fewest requests (ties: the one that
    reached that count earliest, i.e. the least recently used among them, as libCacheSim's
    frequency lists order them). If both propose the same page it is evicted and recorded in
    no history. Otherwise one ``ctx.rng.random()`` draw u picks LRU's page when u < w_LRU, else
    LFU's, and the page joins that expert's history H_LRU or H_LFU (each a FIFO of at most
    floor(c/2) page ids, libCacheSim's ``cache_size / 2``) with its eviction time. A miss on a
    page in H_e is a regret for expert e: with d = t − (its eviction time), w_e ←
    w_e·exp(−λ·δ^d) + 1e-10, then both weights are normalised (libCacheSim's update, including
    its 1e-10 guards); the page leaves the history. Parameters as libCacheSim's defaults:
    λ = 0.45, δ = 0.005^(1/c), w_LRU = w_LFU = 0.5 at the start.

    Readings and differences: libCacheSim draws ``(next_rand() % 100) / 100`` from its own
    generator (so u takes 100 values); we draw a float from the run's generator, so individual
    runs differ from libCacheSim's and only distributions can be compared. A page re-entering
    the cache starts at frequency 1 (libCacheSim; the HotStorage text does not restore it from
    the history). Times are request indices t. Pinned pages are skipped by both experts. With a
    byte budget each victim is chosen (and one draw made) separately. A prefetch is an
    insertion (frequency 1 at t, the request it follows) and, as in :class:`ARC`, the arrival
    of its page: a prefetched page found in a history is that expert's regret, once per
    (request index, page).
    Randomized. No competitive guarantee. Cost per request: O(1) hook work; O(k) per eviction
    in this reference (a scan for the LFU candidate); O(1) in the compiled kernel
    (:mod:`paging.fast.adaptive`: frequency lists, the draws made before the run).
    """

    name = "lecar"
    kernel = "adaptive:LECAR"  # paging.fast.adaptive (also per layer)
    order = 200  # place in the registry (paging policies)
    reference = "Vietri et al., HotStorage 2018"
    randomized = True
    LEARNING_RATE = 0.45
    DISCOUNT_BASE = 0.005

    def reset(self, ctx) -> None:
        super().reset(ctx)
        c = max(int(ctx.capacity), 1)
        self.hist_cap = int(ctx.capacity) // 2
        self.lr = self.LEARNING_RATE
        self.dr = self.DISCOUNT_BASE ** (1.0 / c)
        self.w_lru = self.w_lfu = 0.5
        self.recency: dict[int, None] = {}   # LRU first
        self.freq: dict[int, int] = {}
        self.freq_t: dict[int, int] = {}     # when the page reached its current frequency
        self.h_lru: dict[int, int] = {}      # page -> eviction time, oldest first
        self.h_lfu: dict[int, int] = {}
        self._regretted = (-1, -1)  # (t, page) of the arrival whose regret was processed
        self._expert: dict[int, int] = {}    # victim -> 0 both, 1 LRU, 2 LFU

    def _regret(self, t: int, page: int) -> None:
        """A miss on a page in a history: penalise the expert that evicted it (once per
        arrival: a missed request, or a prefetch after request t, as ARC's)."""
        if self._regretted == (t, page):
            return
        self._regretted = (t, page)
        for hist, which in ((self.h_lru, 1), (self.h_lfu, 2)):
            if page in hist:
                r = self.dr ** (t - hist.pop(page))
                if which == 1:
                    self.w_lru = self.w_lru * math.exp(-self.lr * r) + 1e-10
                    s = self.w_lru + self.w_lfu + 2e-10
                    self.w_lru, self.w_lfu = self.w_lru / s, (self.w_lfu + 1e-10) / s
                else:
                    self.w_lfu = self.w_lfu * math.exp(-self.lr * r) + 1e-10
                    s = self.w_lfu + self.w_lru + 2e-10
                    self.w_lfu, self.w_lru = self.w_lfu / s, (self.w_lru + 1e-10) / s
                return

    def on_hit(self, t, page):
        del self.recency[page]
        self.recency[page] = None
        self.freq[page] += 1
        self.freq_t[page] = t

    def on_insert(self, t, page):
        self._regret(t, page)
        self.recency[page] = None
        self.freq[page] = 1
        self.freq_t[page] = t

    def on_evict(self, t, page):
        del self.recency[page]
        del self.freq[page]
        del self.freq_t[page]
        which = self._expert.pop(page, 0)
        if which:
            hist = self.h_lru if which == 1 else self.h_lfu
            hist[page] = t
            while len(hist) > self.hist_cap:
                del hist[next(iter(hist))]

    def victim(self, t, page, cache: CacheView) -> int:
        self._regret(t, page)
        lru = _oldest_unpinned(self.recency, cache)
        pinned = cache.pinned
        lfu = min((q for q in self.recency if not pinned or q not in pinned),
                  key=lambda q: (self.freq[q], self.freq_t[q]))
        if lru == lfu:
            self._expert[lru] = 0
            return lru
        if self.ctx.rng.random() < self.w_lru:
            self._expert[lru] = 1
            return lru
        self._expert[lfu] = 2
        return lfu
