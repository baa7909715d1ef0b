"""Eviction by gate scores and by precision: Score-Based (Zhu et al. 2025) and LHU (Tang et
al. 2024), as SpecMD App. B describes them."""

from __future__ import annotations

from paging.policies.base import PriorityPolicy


class ScoreBased(PriorityPolicy):
    """Score-Based eviction (Zhu, Li, Dai et al., "Enabling MoE on the Edge via
    Importance-Driven Expert Scheduling", arXiv:2508.18983, 2025; SpecMD App. B: "evicts
    experts with the lowest historical gate scores ... maintains a running history of gate
    scores for each expert"; Sec. 2: "the lowest accumulated activation scores").

    History update rule (our reading of "accumulated"): every request of page p adds its gate
    score, H(p) += score(t); a prefetch adds nothing; the history survives eviction (as LFU's
    counts). Evict the candidate with the lowest H, ties to the least recently used. Needs gate
    scores (``needs_scores``): a trace without them is refused. Stack algorithm (the priority
    does not depend on k).
    """

    name = "score-based"
    order = 170  # place in the registry (paging policies)
    kernel = "predictive:SCORE"
    reference = "Zhu et al., arXiv:2508.18983, 2025; SpecMD App. B"
    needs_scores = True

    def reset(self, ctx):
        super().reset(ctx)
        self.hist: dict[int, float] = {}
        self._score = ctx.score

    def _touch(self, t, page):
        super()._touch(t, page)
        self.hist[page] = self.hist.get(page, 0.0) + float(self._score[t])

    def evict_key(self, t, page):
        return (-self.hist.get(page, 0.0), -self.last[page])


class LHU(PriorityPolicy):
    """Least High-precision Used (HOBBIT: Tang, Liu, Hou et al., "HOBBIT: A Mixed Precision
    Expert Offloading System for Fast MoE Inference", arXiv:2411.01433, 2024; SpecMD App. B).

    Counts, for every page, its uses *at the highest precision*: a request that hits the page
    resident at level 0, or a miss that fetches it at level 0 (:mod:`paging.miss`); uses at a
    lower level (``ctx.levels``) do not count; counts survive eviction. Evict the candidate
    with the fewest high-precision uses, ties to the least recently used. Without a cascade
    every use is at level 0 and LHU is LFU with LRU tie-breaks. (The simulator records a
    fetched page's level before ``on_insert``, so the insert's use is classified right.)
    """

    name = "lhu"
    order = 180  # place in the registry (paging policies)
    kernel = "heap:LFU"
    stack = "LFU"
    reference = "Tang et al. (HOBBIT), arXiv:2411.01433, 2024; SpecMD App. B"

    def reset(self, ctx):
        super().reset(ctx)
        self.hp: dict[int, int] = {}
        self._levels = ctx.levels if ctx.levels is not None else {}

    def _touch(self, t, page):
        super()._touch(t, page)
        if self._levels.get(page, 0) == 0:
            self.hp[page] = self.hp.get(page, 0) + 1

    def evict_key(self, t, page):
        return (-self.hp.get(page, 0), -self.last[page])
