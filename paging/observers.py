"""Observers of the one loop: each watches a run and owns the result fields it reports.

The simulator (:class:`paging.simulate.Simulation`) owns residency, capacity, pinning and the
core counts (misses, collisions, bypasses and, recorded, the hit mask and the eviction log).
Everything an extension adds to a run's result is counted here, from the events the loop
announces (DESIGN.md, "observers over a read-only cache state"):

* :class:`PrefetchStats` — SpecMD's prefetching (Algorithm 1, phase 3): prefetches inserted,
  useful (requested before being evicted), wasted, skipped, their bytes, the plan's set-based
  precision and recall, and (recorded) the prefetch and prefetch-eviction logs the timeline and
  the verifier replay;
* :class:`MissStats` — miss handling (:mod:`paging.miss`): dropped and substituted requests,
  the gate mass dropped, the ranks replaced, top-1 changes, fetches per precision level and the
  mixed-precision cost and bytes.

Events, in the order the loop announces them for request ``t`` of page ``p``: ``on_request``;
then ``on_hit``, or ``on_replace`` (dropped / substituted), or ``on_fetch`` followed by
``on_evict`` for each victim; a prefetch after request ``t`` announces ``on_evict`` (with
``prefetching=True``) for its victims, then ``on_prefetch`` or ``on_prefetch_skipped``.
:meth:`Observer.finish` adds the observer's fields to the :class:`~paging.result.Result`.
"""

from __future__ import annotations

import numpy as np

from paging.weights import unit_costs

__all__ = ["Observer", "PrefetchStats", "MissStats"]

#: miss-handling actions (also :mod:`paging.miss`'s)
FETCH, DROP, SUBSTITUTE = 0, 1, 2


class Observer:
    """Base class: every event is a no-op. ``start`` is called once, when the observer is
    attached to a run (``state``: the run's read-only :class:`~paging.simulate.CacheState`;
    ``record``: whether the run keeps its logs)."""

    def start(self, state, record: bool) -> None:
        self.state, self.record = state, record

    def on_request(self, t: int, page: int) -> None:
        pass

    def on_hit(self, t: int, page: int) -> None:
        pass

    def on_fetch(self, t: int, page: int, level: int) -> None:
        pass

    def on_evict(self, t: int, page: int, prefetching: bool) -> None:
        pass

    def on_replace(self, t: int, page: int, act: int, substitute: int) -> None:
        pass

    def on_prefetch(self, t: int, page: int) -> None:
        pass

    def on_prefetch_skipped(self, t: int, page: int) -> None:
        pass

    def finish(self, result) -> None:
        pass


class PrefetchStats(Observer):
    """Counts of a run with a prefetcher (zeros without one). ``predicted``, ``predicted_right``
    and ``actual`` are the plan's (:class:`paging.predict.prefetch.Prefetcher`): proposals, the
    right ones and the true experts of the targets, for the set-based precision and recall."""

    def __init__(self, predicted: int = 0, predicted_right: int = 0, actual: int = 0):
        self.predicted, self.predicted_right, self.actual = predicted, predicted_right, actual
        self.prefetches = self.useful = self.wasted = self.skipped = self.bytes = 0
        self._pending: dict[int, None] = {}  # prefetched pages not yet requested
        self.log: list[tuple[int, int]] = []  # (next request index, page)
        self.evictions: list[tuple[int, int]] = []  # (next request index, victim)

    def on_hit(self, t, page):
        if self._pending and page in self._pending:  # first request of a prefetched page
            del self._pending[page]
            self.useful += 1

    def on_evict(self, t, page, prefetching):
        if page in self._pending:  # a prefetched page evicted before any request
            del self._pending[page]
            self.wasted += 1
        if prefetching and self.record:
            self.evictions.append((t + 1, page))

    def on_prefetch(self, t, page):
        self.prefetches += 1
        sizes = self.state.sizes
        self.bytes += int(sizes[page]) if sizes is not None else 1
        self._pending[page] = None
        if self.record:
            self.log.append((t + 1, page))

    def on_prefetch_skipped(self, t, page):
        self.skipped += 1

    def finish(self, result) -> None:
        self.wasted += len(self._pending)  # prefetched pages never requested
        self._pending.clear()
        result.extra = dict(result.extra or {}, **{
            "prefetches": self.prefetches,
            "prefetch_useful": self.useful,
            "prefetch_wasted": self.wasted,
            "prefetch_skipped": self.skipped,
            "prefetch_bytes": self.bytes,
            "prefetch_precision": (self.predicted_right / self.predicted
                                   if self.predicted else None),
            "prefetch_recall": self.predicted_right / self.actual if self.actual else None,
        })
        if self.record:
            result.events = dict(result.events or {}, **{
                "prefetched": np.array(self.log, dtype=np.int64).reshape(-1, 2),
                "prefetch_evictions": np.array(self.evictions, dtype=np.int64).reshape(-1, 2),
            })


class MissStats(Observer):
    """Counts of a run's miss handling (``handler``: a :class:`paging.miss.MissHandler`, or
    None for plain fetching)."""

    def __init__(self, handler=None):
        self.handler = handler
        self.dropped = self.substituted = self.top1_changed = 0
        self.dropped_mass = 0.0
        self.replaced_ranks: dict[int, int] = {}
        self.dropped_log: list[int] = []
        self.substituted_log: list[tuple[int, int]] = []
        self.fetch_log: list[int] = []
        self._top1_step = -1

    def start(self, state, record):
        super().start(state, record)
        self._top1_step = -1
        h = self.handler
        n_levels = len(h.level_sizes) if h is not None and h.uses_levels else 1
        P = state.layout.n_pages
        self.level_misses = [[0] * P for _ in range(n_levels)]
        self._log_levels = record and n_levels > 1

    def on_fetch(self, t, page, level):
        if level:
            self.level_misses[level][page] += 1
        if self._log_levels:
            self.fetch_log.append(level)

    def on_replace(self, t, page, act, substitute):
        r = self.state.rank_at(t)
        self.replaced_ranks[r] = self.replaced_ranks.get(r, 0) + 1
        if r == 0 and self.state.step_at(t) != self._top1_step:  # once per group
            self._top1_step = self.state.step_at(t)
            self.top1_changed += 1
        if act == DROP:
            self.dropped += 1
            if self.state.has_scores:
                self.dropped_mass += self.state.score_at(t)
            if self.record:
                self.dropped_log.append(t)
            return
        self.substituted += 1
        if self.record:
            self.substituted_log.append((t, substitute))

    def _level_counts(self, page_misses) -> list[int]:
        tot = int(np.sum(page_misses))
        rest = [sum(x) for x in self.level_misses[1:]]
        return [tot - sum(rest), *rest]

    def _level_totals(self, page_misses: np.ndarray) -> tuple[float, int]:
        """``(cost, bytes)`` of the fetches, each at its level's cost and size (exact sum)."""
        from paging.result import exact_dot

        st, h = self.state, self.handler
        lm = [np.array(x, dtype=np.int64) for x in self.level_misses[1:]]
        c0 = np.asarray(page_misses, dtype=np.int64) - sum(lm)
        counts = np.concatenate([c0, *lm])
        costs = [unit_costs(c0.size) if st.costs is None else st.costs, *h.level_costs[1:]]
        sizes = [st.sizes, *[np.asarray(x) for x in h.level_sizes[1:]]]
        cost = exact_dot(counts, np.concatenate(costs))
        nbytes = int(np.dot(counts, np.concatenate(sizes).astype(np.int64)))
        return cost, nbytes

    def finish(self, result) -> None:
        h = self.handler
        result.dropped, result.substituted = self.dropped, self.substituted
        if len(self.level_misses) > 1:  # mixed precisions: each fetch at its level's weights
            result.cost, result.bytes_fetched = self._level_totals(result.page_misses)
        groups = self.state.groups_served()
        result.extra = dict(result.extra or {}, **{
            "dropped": self.dropped,
            "dropped_mass": self.dropped_mass if self.state.has_scores else None,
            "substituted": self.substituted,
            "replaced_ranks": {str(r): c for r, c in sorted(self.replaced_ranks.items())},
            "top1_changed_share": self.top1_changed / groups if groups else 0.0,
            "fetch_levels": ({(h.levels[lv] if h and h.levels else str(lv)): c
                              for lv, c in enumerate(self._level_counts(result.page_misses))}),
            "miss": "fetch" if h is None else h.spec(),
        })
        if self.record:
            result.events = dict(result.events or {}, **{
                "dropped": np.array(self.dropped_log, dtype=np.int64),
                "substituted": np.array(self.substituted_log, dtype=np.int64).reshape(-1, 2),
                "fetch_levels": (np.array(self.fetch_log, dtype=np.int64)
                                 if self._log_levels else None),
                "level_sizes": None if h is None or h.level_sizes is None else
                [np.asarray(x, dtype=np.int64) for x in h.level_sizes],
                "level_costs": None if h is None or h.level_costs is None
                else list(h.level_costs),
            })
