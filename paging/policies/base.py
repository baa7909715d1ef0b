"""The one small policy interface (DESIGN.md, "One simulator, small policy interface").

The simulator (:func:`paging.simulate.simulate`) owns residency, capacity, counting and pinning.
A policy keeps only its own bookkeeping and names victims. Call order for request ``t`` (the
0-based index into the trace) of page ``p``:

* hit:  ``on_hit(t, p)``
* miss with room:  ``on_insert(t, p)``
* miss that does not fit:  ``victims(t, p, cache)`` -> ``on_evict(t, v)`` for each victim,
  repeated until ``p`` fits (once for page-counted caches; possibly several times with a byte
  budget and sizes) -> ``on_insert(t, p)``.
* prefetch of page ``p`` after request ``t`` (SpecMD Algorithm 1, phase 3; the run was given a
  prefetcher): the same ``victims`` / ``on_evict`` rounds, then ``on_prefetch(t, p)``. ``t`` is
  the index of the last request served, so ``ctx.steps[t]`` is the current layer clock.
* a miss handled without fetching (dropped or substituted, :mod:`paging.miss`): no hook for
  the requested page; a substitute that serves it gets ``on_hit(t, substitute)``.

``cache.candidates`` lists the resident, unpinned pages of ``p``'s partition in insertion order
(the whole cache, or ``p``'s layer for the DIST variants); a victim must be one of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from paging.layout import Layout


@dataclass(frozen=True)
class Context:
    """What a policy may know when it is reset.

    ``capacity`` is the size of the policy's partition (k, or a layer's share for DIST);
    ``steps`` is the layer clock of the trace (see :mod:`paging.trace`): non-clairvoyant policies
    read ``steps[t]`` only for the current request t. ``next_use`` is given to clairvoyant
    policies only. ``rng`` is the run's only source of randomness. ``costs`` (float64) and
    ``sizes`` (int64) give every page id's fetch cost w(p) and size s(p) (all ones unless the
    run is weighted); ``capacity`` is in bytes for a byte-budget run, in pages otherwise.
    ``levels`` (read-only for policies) maps each resident page to the precision level it was
    fetched at (0 = the run's own precision, 1, 2, ... lower ones; :mod:`paging.miss`); pages
    absent from it are at level 0. LHU (Tang et al. 2024) reads it.
    ``in_bytes`` says which unit ``capacity`` counts. ``token`` (int64, or None when the trace
    does not say) is the token (forward pass) of each
    request and ``visits`` how often the layer clock walks every layer per token: K in the
    rounds expansion of a top-K trace, 1 in groups mode; like ``steps``, online policies read
    ``token[t]`` only for the current request t (a serving system knows which token it is
    computing). Without ``token`` a token is one walk over the layers (``steps // ℓ``).
    """

    layout: Layout
    capacity: int
    rng: np.random.Generator
    steps: np.ndarray
    n_requests: int
    next_use: np.ndarray | None = None
    score: np.ndarray | None = None
    costs: np.ndarray | None = None
    sizes: np.ndarray | None = None
    levels: dict | None = None
    token: np.ndarray | None = None
    visits: int = 1
    #: whether ``capacity`` counts bytes (a byte-budget run, pages weighing their ``sizes``)
    #: rather than pages (every page one slot, whatever ``sizes`` says)
    in_bytes: bool = False
    #: the requested pages (clairvoyant policies only, like ``next_use``): Belady reads them
    #: for the next use of a page prefetched before it is requested
    pages: np.ndarray | None = None

    def with_capacity(self, capacity: int) -> Context:
        return replace(self, capacity=int(capacity))


class CacheView:
    """Read-only view of one partition handed to :meth:`Policy.victims`."""

    __slots__ = ("_resident", "_pinned")

    def __init__(self, resident: dict, pinned: frozenset | set):
        self._resident = resident
        self._pinned = pinned

    @property
    def candidates(self) -> list[int]:
        """Resident, unpinned pages of the partition, in insertion order."""
        pinned = self._pinned
        if not pinned:
            return list(self._resident)
        return [q for q in self._resident if q not in pinned]

    @property
    def pinned(self) -> frozenset | set:
        """The pinned pages (the current group's, groups mode): never candidates."""
        return self._pinned

    def __contains__(self, page: int) -> bool:
        return page in self._resident

    def __len__(self) -> int:
        return len(self._resident)


class Policy:
    """Base class of every eviction policy.

    Subclasses set ``name`` and override ``victim`` (or ``victims`` to evict several pages at
    once, as FWF does) and whichever hooks they need. ``clairvoyant`` policies receive
    ``ctx.next_use``; ``randomized`` ones draw from ``ctx.rng`` only.
    """

    name: str = "policy"
    clairvoyant: bool = False
    randomized: bool = False
    #: True for policies that read the requests' gate scores (``ctx.score``): the simulator
    #: refuses a trace without scores (Score-Based eviction, Zhu et al. 2025)
    needs_scores: bool = False
    #: False for policies that refuse prefetched pages (the combiners over two policies,
    #: whose virtual caches follow requests only): a run with a prefetcher is refused before
    #: it starts (:class:`paging.run.RunSpec`), not at its first prefetch
    prefetches: bool = True
    #: the compiled kernel that reproduces this class, ``"family:KIND"`` of :mod:`paging.fast`
    #: (family ``list``, ``heap``, ``credit``, ``marking``, ``token``, ``adaptive`` or
    #: ``predictive``; KIND a constant of that module), or None (the reference loop only). Read
    #: from the class's own namespace: a subclass that does not declare it again has no kernel
    #: (it may change any hook).
    kernel: str | None = None
    #: the kernel of the per-layer (``-dist``) variant when it differs from :attr:`kernel`
    #: (inside one layer LLRU, FLD and Least-Stale evict as LRU)
    dist_kernel: str | None = None
    #: the kind of :mod:`paging.fast.stack`'s one-pass miss curve (Mattson's inclusion
    #: property holds), or None (curves run per k)
    stack: str | None = None
    #: a short citation of the policy's source (the docstring has the full one)
    reference: str = ""
    #: the class is registered under its ``name`` (with a ``-dist`` variant) when its module
    #: is a module of :mod:`paging.policies` and it declares ``name`` itself; False keeps a
    #: diagnostic out of the registry
    registered: bool = True
    #: place in the registry's order (``paging policies``); classes without one follow, in
    #: the order their modules and definitions come
    order: float = float("inf")

    def partitions(self, layout: Layout, k: int) -> tuple[np.ndarray | None, np.ndarray]:
        """Partition of the page space and each part's capacity: ``(part_of_page, capacities)``.
        ``part_of_page=None`` means one shared cache of size k."""
        return None, np.array([k], dtype=np.int64)

    def reset(self, ctx: Context) -> None:
        self.ctx = ctx

    def on_hit(self, t: int, page: int) -> None:
        pass

    def on_insert(self, t: int, page: int) -> None:
        pass

    def on_evict(self, t: int, page: int) -> None:
        pass

    def on_prefetch(self, t: int, page: int) -> None:
        """Page ``page`` was prefetched (inserted without a request) after request ``t``.
        Default: the policy sees an insertion (:meth:`on_insert`)."""
        self.on_insert(t, page)

    def victim(self, t: int, page: int, cache: CacheView) -> int:
        raise NotImplementedError

    def victims(self, t: int, page: int, cache: CacheView) -> Sequence[int]:
        """Pages to evict so that ``page`` fits; default: the single :meth:`victim`."""
        return (self.victim(t, page, cache),)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class PriorityPolicy(Policy):
    """A policy that evicts the candidate with the largest :meth:`evict_key`.

    Keeps, for every page ever requested, the index ``last[p]`` and step ``last_step[p]`` of its
    most recent request, its insertion index ``inserted[p]`` and its request count ``count[p]``
    (over the whole history, also while not cached). Cost per miss: O(k) key evaluations; the
    reference loop favours readability, the compiled kernels in :mod:`paging.fast` speed.
    """

    def reset(self, ctx: Context) -> None:
        super().reset(ctx)
        self.last: dict[int, int] = {}
        self.last_step: dict[int, int] = {}
        self.inserted: dict[int, int] = {}
        self.count: dict[int, int] = {}

    def _touch(self, t: int, page: int) -> None:
        self.last[page] = t
        self.last_step[page] = int(self.ctx.steps[t])
        self.count[page] = self.count.get(page, 0) + 1

    def on_hit(self, t: int, page: int) -> None:
        self._touch(t, page)

    def on_insert(self, t: int, page: int) -> None:
        self._touch(t, page)
        self.inserted[page] = t

    def on_prefetch(self, t: int, page: int) -> None:
        """A prefetch is an insertion at the current time but not a request: ``last``,
        ``last_step`` and ``inserted`` move to ``t`` (so Least-Stale sees the page as *current*,
        SpecMD Sec. 4.2: "used in the current pass or selected by prefetching"), ``count``
        (LFU's frequency) does not change."""
        self.last[page] = t
        self.last_step[page] = int(self.ctx.steps[t])
        self.inserted[page] = t
        self.count.setdefault(page, 0)

    def evict_key(self, t: int, page: int) -> tuple:
        raise NotImplementedError

    def victim(self, t: int, page: int, cache: CacheView) -> int:
        return max(cache.candidates, key=lambda q: self.evict_key(t, q))


def pick_uniform(rng: np.random.Generator, pages: Iterable[int]) -> int:
    """A uniformly random element of ``pages``: one ``rng.random()`` draw u, and the element at
    index floor(u·m) of the pages sorted by id (the compiled kernel draws the same way)."""
    cands = sorted(pages)
    return cands[int(rng.random() * len(cands))]
