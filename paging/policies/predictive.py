"""Paging with predictions: BlindOracle, PredictiveMarker, LMarker and a robust combiner.

Every request comes with a predicted time of its page's next request (a predictor from
:mod:`paging.predict`; default ``frequency``, online). The policies remember, for each page,
the prediction made at its most recent request. A policy built with the clairvoyant
``oracle`` predictor is itself flagged ``clairvoyant`` (the simulator then hands it
``next_use``); with an online predictor it is online.

Names and options: ``blind-oracle``, ``predictive-marker``, ``lmarker``,
``robust-blind-oracle``, each also ``-dist``; a predictor is chosen by appending its spec,
``predictive-marker:oracle:eta=0.5,seed=1`` (:func:`paging.policies.make_policy`), or in Python
``PredictiveMarker(predictor="oracle:eta=0.5")``.

η below is Lykouris & Vassilvitskii's ℓ1 error Σ_t |pred_t − next_t|. The papers' bounds (as we
read them; the papers are not in ../shared/papers, so the statements were taken from the
abstracts and our reading of the theorems, and the ledger in :mod:`proofs` checks only what is
stated with explicit constants, see proofs/predictions_*.py):

* BlindOracle: ALG ≤ OPT + 2η, i.e. ratio 1 + 2η/OPT (A. Wei, "Better and simpler
  learning-augmented online caching", APPROX 2020, arXiv:2005.13716); no robustness.
* PredictiveMarker: ratio 2 + O(min(sqrt(η/OPT), log k)) (Lykouris & Vassilvitskii, ICML 2018,
  J. ACM 2021); with perfect predictions it is 2-competitive.
* LMarker: ratio O(1 + min(log k, log(1 + η/(k·OPT)))) -type bound (D. Rohatgi, "Near-optimal
  bounds for online caching with machine learned advice", SODA 2020); no explicit constants
  used here.
* The robust combiner: ALG ≤ 3·min(BO, LRU) (proved in :class:`RobustBlindOracle`'s
  docstring), the deterministic "follow the better" idea of
  Fiat et al. 1991 as used by Wei 2020 (Wei's RobustFtP combines with Marker; we use LRU so the
  combiner stays deterministic given the predictor).
"""

from __future__ import annotations

from paging.policies.base import CacheView, Policy, pick_uniform
from paging.predict import Predictor, make_predictor, marker_k


def harmonic(k: int) -> float:
    """H_k = Σ_{i=1}^{k} 1/i, summed in this order (the kernel reads the same double)."""
    return sum(1.0 / i for i in range(1, max(int(k), 1) + 1))


class PredictivePolicy(Policy):
    """Base: owns a predictor and ``pred[p]``, ``last[p]`` (prediction and index of p's latest
    request). ``predictor``: a spec string (``"oracle:eta=0.5,seed=1"``), a
    :class:`~paging.predict.Predictor`, or None for ``default_predictor``."""

    needs_predictor = True
    default_predictor = "frequency"

    def __init__(self, predictor: str | Predictor | None = None):
        self.predictor = make_predictor(self.default_predictor if predictor is None
                                        else predictor)
        self.clairvoyant = self.predictor.clairvoyant
        if predictor is not None:
            self.name = f"{type(self).name}:{self.predictor.spec}"

    def reset(self, ctx) -> None:
        super().reset(ctx)
        self.predictor.reset(ctx)
        self.pred: dict[int, float] = {}
        self.last: dict[int, int] = {}
        self._t = -1

    def _see(self, t: int, page: int) -> bool:
        """Ask for request t's prediction (once); True the first time t is seen."""
        if self._t == t:
            return False
        self._t = t
        self.pred[page] = self.predictor.predict(t, page)
        self.last[page] = t
        return True

    def on_hit(self, t, page):
        self._see(t, page)

    def on_insert(self, t, page):
        self._see(t, page)

    def on_prefetch(self, t, page):
        """A prefetched page (inserted after request ``t`` without a request of its own, for
        the next layer: :mod:`paging.predict.prefetch`) has no prediction to ask for; it is
        taken as predicted for the next request, t + 1, and as last requested at t. It is not
        marked (the marking policies mark requested pages only)."""
        self.pred[page] = float(t + 1)
        self.last[page] = t

    def furthest(self, pages) -> int:
        """The page predicted to come back last (ties: the least recently requested)."""
        return max(pages, key=lambda q: (self.pred[q], -self.last[q]))


class BlindOracle(PredictivePolicy):
    """BlindOracle (Wei 2020, after Lykouris & Vassilvitskii): evict the candidate whose
    predicted next arrival is furthest (ties: least recently requested). With exact
    predictions (``oracle:eta=0``) it is Belady's rule, so it makes OPT's miss count. Bound:
    ALG ≤ OPT + 2η [Wei 2020]. Deterministic. Cost per request O(1), per eviction O(k)."""

    name = "blind-oracle"
    order = 210  # place in the registry (paging policies)
    kernel = "predictive:BLIND"
    reference = "Wei, APPROX 2020"

    def victim(self, t, page, cache: CacheView) -> int:
        self._see(t, page)
        return self.furthest(cache.candidates)


class _MarkingBase(PredictivePolicy):
    """Marking phases (Fiat et al. 1991) shared by PredictiveMarker and LMarker: requested
    pages are marked; when a miss needs an eviction and every candidate is marked, a new phase
    begins (marks and the phase's eviction record erased). ``evicted[p]``: the chain of the
    eviction that removed p in the current phase."""

    randomized = True

    def reset(self, ctx) -> None:
        super().reset(ctx)
        self.marked: set[int] = set()
        self.evicted: dict[int, int] = {}
        self.chain_len: list[int] = []
        self._chain = -1
        self._vt = -1
        self.H_k = harmonic(marker_k(ctx.capacity, ctx.sizes if ctx.in_bytes else None,
                                     ctx.layout.n_pages))

    def on_hit(self, t, page):
        super().on_hit(t, page)
        self.marked.add(page)

    def on_insert(self, t, page):
        super().on_insert(t, page)
        self.marked.add(page)

    def on_evict(self, t, page):
        self.marked.discard(page)
        self.evicted[page] = self._chain

    def _unmarked(self, t, page, cache: CacheView) -> tuple[list[int], bool]:
        """(unmarked candidates, whether request t is stale, i.e. its page was evicted in this
        phase); starts a new phase when every candidate is marked, and updates the chains once
        per request."""
        self._see(t, page)
        cands = cache.candidates
        unmarked = [q for q in cands if q not in self.marked]
        if not unmarked:
            self.marked.clear()
            self.evicted.clear()
            self.chain_len.clear()
            unmarked = cands
            self._vt = -1  # (byte budgets: a later victim of the same request) a fresh chain
        if self._vt != t:
            self._vt = t
            self._stale = stale = page in self.evicted
            if stale:   # the eviction that removed it continues its chain
                self._chain = self.evicted.pop(page)
                self.chain_len[self._chain] += 1
            else:       # a clean page starts a new chain
                self._chain = len(self.chain_len)
                self.chain_len.append(1)
        return unmarked, self._stale


class PredictiveMarker(_MarkingBase):
    """PredictiveMarker (Lykouris & Vassilvitskii, ICML 2018, Alg. "PredictiveMarker").

    Marking phases; each clean miss starts a *chain*, a miss on a page evicted earlier in the
    phase extends the chain of the eviction that removed it. While the chain has at most H_k
    (k-th harmonic number, k = the partition's capacity in pages, :func:`marker_k`) members,
    evict the unmarked page predicted to come back last (ties: least recently requested); beyond
    H_k, a uniformly random unmarked page (one ``rng.random()`` draw, :func:`pick_uniform`).
    Readings: the chain length counts the misses in the chain (the clean one included); a new
    phase erases the chains. Bound: 2 + O(min(sqrt(η/OPT), log k)) times OPT; 2·OPT with exact
    predictions [LV18]. Randomized. Cost per eviction O(k).
    """

    name = "predictive-marker"
    order = 220  # place in the registry (paging policies)
    kernel = "predictive:PMARKER"
    reference = "Lykouris & Vassilvitskii, ICML 2018"

    def victim(self, t, page, cache):
        unmarked, _ = self._unmarked(t, page, cache)
        if self.chain_len[self._chain] <= self.H_k:
            return self.furthest(unmarked)
        return pick_uniform(self.ctx.rng, unmarked)


class LMarker(_MarkingBase):
    """LMarker (Rohatgi, SODA 2020, as we read it): marking phases; a clean miss evicts the
    unmarked page predicted to come back last (ties: least recently requested), a miss on a
    page evicted earlier in the phase (stale) evicts a uniformly random unmarked page
    (one ``rng.random()`` draw). Every marking algorithm is k-competitive (ALG ≤ k·OPT + k from
    an empty cache). Randomized. Cost per eviction O(k)."""

    name = "lmarker"
    order = 230  # place in the registry (paging policies)
    kernel = "predictive:LMARKER"
    reference = "Rohatgi, SODA 2020"

    def victim(self, t, page, cache):
        unmarked, stale = self._unmarked(t, page, cache)
        if not stale:
            return self.furthest(unmarked)
        return pick_uniform(self.ctx.rng, unmarked)


class RobustBlindOracle(PredictivePolicy):
    """Follow the better of BlindOracle and LRU (deterministic combination, after Fiat et al.
    1991 and Wei 2020).

    The policy simulates BlindOracle and LRU on virtual caches of c = ``ctx.capacity`` pages
    (its own bookkeeping) and counts their misses A, B. It follows a *leader* (BlindOracle
    first) and switches when the leader's count exceeds twice the other's (checked after each
    request). On an eviction it evicts a candidate not in the leader's virtual cache (the least
    recently requested such one), else the least recently requested candidate ("lazy"
    following).

    Bound (proved here): with m = min(A, B) at the end, ALG ≤ 3·m on every run from an empty
    cache (rounds mode, a shared cache of unit pages; the switches cost nothing extra). Proof,
    with C, C_A, C_B our cache and the virtual ones: (i) Ψ = |C \\ C_A| + |C \\ C_B| (0 at the
    start) satisfies cost + ΔΨ ≤ ΔA + ΔB on every request, whoever leads: a hit of ours never
    raises Ψ (a component that misses adds p, which we hold, and evicts at most one page we
    hold); a miss of ours adds p (held by both after serving it) and evicts q outside the
    leader L's cache after p, so |C \\ C_L| drops by one unless L missed (then it does not
    grow), and the other term grows by at most one, only when the other missed; with room we never
    evicted, so p is new to both. (ii) Φ = |C \\ C_L| ≤ Ψ satisfies cost + ΔΦ ≤ ΔL while L
    leads, by the same cases. No switch: BlindOracle leads throughout, ALG ≤ A ≤ 2·B, so
    ALG ≤ 2·m. Otherwise, s the last switch, O the outgoing and L the last leader: (i) up to
    s − 1 and (ii) from s give ALG ≤ A(s−1) + B(s−1) − L(s−1) + L(T) = O(s−1) + L(T), with
    O(s−1) ≤ 2·L(s−1) (O led) and L(T) ≤ 2·O(T) (L leads): if m = L(T) that is ≤ 2m + m,
    else m = O(T) ≥ O(s−1) and L(T) ≤ 2m, so ALG ≤ 3·m either way. (This replaces
    6·m + 2 + k·(S + 1), which held but was so loose that plain LRU met it on the whole ledger
    grid.) With unit sizes only (virtual caches count pages; under a byte budget they hold the
    pages the budget holds, :func:`marker_k`: the same cache when the pages weigh the same).
    Deterministic given the predictor. Cost per request O(1), O(k) per BlindOracle virtual eviction.
    """

    name = "robust-blind-oracle"
    order = 240  # place in the registry (paging policies)
    kernel = "predictive:ROBUST"
    reference = "Wei, APPROX 2020; Fiat et al. 1991"

    def reset(self, ctx) -> None:
        super().reset(ctx)
        # the virtual caches hold the pages the cache holds: under a byte budget, as many of
        # the smallest pages as fit (marker_k; the budget read as a page count never evicted,
        # so both counts were the distinct pages, no switch, and the victims LRU's)
        self.c = marker_k(ctx.capacity, ctx.sizes if ctx.in_bytes else None,
                          ctx.layout.n_pages)
        # the virtual BlindOracle's pages in insertion order: of two pages of equal
        # (prediction, latest request), which prefetches create (a batch gets t + 1 and t), the
        # one inserted first is evicted (a set broke that tie in its hash order)
        self.bo: dict[int, None] = {}
        self.lru: dict[int, None] = {}
        self.cost = [0, 0]          # BlindOracle, LRU
        self.leader = 0
        self.switches = 0

    def _see(self, t, page):
        if not super()._see(t, page):
            return False
        if page not in self.bo:
            self.cost[0] += 1
            if len(self.bo) >= self.c:
                del self.bo[self.furthest(self.bo)]
            self.bo[page] = None
        if page in self.lru:
            del self.lru[page]
        else:
            self.cost[1] += 1
            if len(self.lru) >= self.c:
                del self.lru[next(iter(self.lru))]
        self.lru[page] = None
        other = 1 - self.leader
        if self.cost[self.leader] > 2 * self.cost[other]:
            self.leader = other
            self.switches += 1
        return True

    def victim(self, t, page, cache):
        self._see(t, page)
        cands = cache.candidates
        lead = self.bo if self.leader == 0 else self.lru
        outside = [q for q in cands if q not in lead]
        return min(outside or cands, key=lambda q: self.last[q])


__all__ = ["PredictivePolicy", "BlindOracle", "PredictiveMarker", "LMarker", "RobustBlindOracle"]
