"""An independent checker of simulated runs.

:func:`verify` replays a recorded :class:`~paging.simulate.Result` (hit mask, eviction log,
bypassed requests) against its trace without using the simulator or any policy, and checks that
the run was a feasible demand-paging schedule:

1. every request is served: it is a hit on a resident page, or a miss after which the page is
   resident (or it was bypassed because nothing could be evicted);
2. a hit is recorded exactly when the page was resident;
3. the cache never holds more than k pages (or, for a byte-budget run, more bytes than the
   budget), nor more than a layer's share for DIST runs (C // ℓ, one more for the first
   C mod ℓ layers, C = k or the budget);
4. evictions happen only on a miss whose page does not fit, and never evict the requested page,
   a non-resident page or (groups mode) a page of the current group;
5. a bypass happens only when no eviction could make room (capacity 0, a page larger than its
   partition, or only pinned pages);
6. the counts agree with the log: misses = number of non-hits, per-layer and per-page misses
   add up, misses = insertions + bypasses, and the run's cost and bytes fetched equal Σ w(p)
   and Σ s(p) over the misses (recomputed here).
"""

from __future__ import annotations

import math

import numpy as np

from paging.result import Result
from paging.trace import Trace


class VerificationError(AssertionError):
    """A recorded run is not a feasible schedule (the message says where)."""


def verify(trace: Trace, result: Result, *, costs=None, sizes=None) -> None:
    """Raise :class:`VerificationError` unless ``result`` is a feasible run on ``trace``.

    The result must have been produced with ``record=True``; ``costs`` and ``sizes`` are the
    weights the run was given (None: unit). O(N + E) expected time.
    """
    if result.hit_mask is None or result.evictions is None or result.bypassed is None:
        raise VerificationError("the result was not recorded (simulate(..., record=True))")
    lay = trace.layout
    N, n = trace.n_requests, lay.n_experts
    pages, steps = trace.pages, trace.steps
    mask = np.asarray(result.hit_mask, dtype=bool)

    def fail(msg):
        raise VerificationError(f"{result.policy} k={result.k} on {trace.name}: {msg}")

    if result.requests != N or mask.size != N:
        fail(f"{result.requests} requests / mask of {mask.size} for a trace of {N}")
    if result.misses != int((~mask).sum()) or result.hits != int(mask.sum()):
        fail(f"misses {result.misses} but the hit mask has {int((~mask).sum())} misses")
    per_layer = np.bincount(pages[~mask] // n, minlength=lay.n_layers)
    if not np.array_equal(per_layer, np.asarray(result.per_layer_misses)):
        fail(f"per-layer misses {list(result.per_layer_misses)} != {per_layer.tolist()}")

    if result.page_misses is not None and not np.array_equal(
            np.bincount(pages[~mask], minlength=lay.n_pages), result.page_misses):
        fail("per-page misses do not match the hit mask")
    missed = pages[~mask]
    want_cost = (float(missed.size) if costs is None
                 else math.fsum(np.asarray(costs, dtype=np.float64)[missed].tolist()))
    if result.cost != want_cost:
        fail(f"cost {result.cost!r} != Σ w over the misses {want_cost!r}")
    want_bytes = None if sizes is None else int(np.asarray(sizes, dtype=np.int64)[missed].sum())
    if result.bytes_fetched != want_bytes:
        fail(f"bytes fetched {result.bytes_fetched} != Σ s over the misses {want_bytes}")

    if result.budget is not None and sizes is None:
        fail("a byte-budget run needs its page sizes to be verified")
    room = [1] * lay.n_pages if result.budget is None else [int(x) for x in sizes]
    if result.dist:
        cap = lay.dist_shares(result.capacity)
        part = lambda p: p // n  # noqa: E731
    else:
        cap = np.array([result.capacity])
        part = lambda p: 0  # noqa: E731
    size = np.zeros(cap.size, dtype=np.int64)

    ev = np.asarray(result.evictions, dtype=np.int64).reshape(-1, 2)
    if ev.size and np.any(np.diff(ev[:, 0]) < 0):
        fail("the eviction log is not in time order")
    ev_by_t: dict[int, list[int]] = {}
    for t, v in ev.tolist():
        ev_by_t.setdefault(t, []).append(v)
    bypassed = set(np.asarray(result.bypassed).tolist())
    if len(bypassed) != result.bypasses:
        fail("bypass count does not match the bypass log")

    resident: set[int] = set()
    group_start = 0
    inserted = 0
    for t in range(N):
        p = int(pages[t])
        if t == 0 or steps[t] != steps[t - 1]:
            group_start = t
        if mask[t]:
            if p not in resident:
                fail(f"request {t} (page {p}) recorded as a hit but the page is not cached")
            if t in ev_by_t or t in bypassed:
                fail(f"request {t} is a hit yet has evictions or a bypass")
            continue
        if p in resident:
            fail(f"request {t} (page {p}) recorded as a miss but the page is cached")
        q = part(p)
        if trace.is_grouped:
            g_end = group_start
            while g_end < N and steps[g_end] == steps[group_start]:
                g_end += 1
            pinned = set(pages[group_start:g_end].tolist())
        else:
            pinned = set()
        victims = ev_by_t.get(t, [])
        need = room[p]
        if victims and size[q] + need <= cap[q]:
            fail(f"request {t}: evicted {victims} although the page fitted")
        for v in victims:
            if v not in resident or part(v) != q or v == p or v in pinned:
                fail(f"request {t}: evicted page {v}, which is not a resident, unpinned page "
                     f"of the requested page's partition")
            resident.remove(v)
            size[q] -= room[v]
        if t in bypassed:
            if victims:
                fail(f"request {t}: bypassed after evicting")
            held = sum(room[r] for r in resident if part(r) == q and r in pinned)
            if size[q] + need <= cap[q] or need <= cap[q] - held:
                fail(f"request {t}: bypassed although eviction could have made room")
            continue
        resident.add(p)
        size[q] += need
        inserted += 1
        if size[q] > cap[q]:
            fail(f"request {t}: the partition holds {size[q]} (pages or bytes), above its "
                 f"capacity {cap[q]} (C={result.capacity})")
    if inserted + len(bypassed) != result.misses:
        fail(f"misses {result.misses} != insertions {inserted} + bypasses {len(bypassed)}")
