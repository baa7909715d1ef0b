"""An independent checker of simulated runs.

:func:`verify` replays a recorded :class:`~paging.simulate.Result` (hit mask, eviction log,
bypassed requests) against its trace without using the simulator or any policy, and checks that
the run was a feasible demand-paging schedule:

1. every request is served: it is a hit on a resident page, or a miss after which the page is
   resident (or it was bypassed because nothing could be evicted);
2. a hit is recorded exactly when the page was resident;
3. the cache never holds more than k pages, nor more than a layer's share for DIST runs
   (k // ℓ, one more for the first k mod ℓ layers);
4. evictions happen only on a miss whose partition is full, and never evict the requested page,
   a non-resident page or (groups mode) a page of the current group;
5. a bypass happens only when the partition has capacity 0 or only pinned pages;
6. the counts agree with the log: misses = number of non-hits, per-layer misses add up, and
   misses = insertions + bypasses.
"""

from __future__ import annotations

import numpy as np

from paging.simulate import Result
from paging.trace import Trace


class VerificationError(AssertionError):
    """A recorded run is not a feasible schedule (the message says where)."""


def verify(trace: Trace, result: Result) -> None:
    """Raise :class:`VerificationError` unless ``result`` is a feasible run on ``trace``.

    The result must have been produced with ``record=True``. O(N + E) expected time.
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

    if result.dist:
        cap = lay.dist_shares(result.k)
        part = lambda p: p // n  # noqa: E731
    else:
        cap = np.array([result.k])
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
        if victims and size[q] < cap[q]:
            fail(f"request {t}: evicted {victims} although the partition had room")
        for v in victims:
            if v not in resident or part(v) != q or v == p or v in pinned:
                fail(f"request {t}: evicted page {v}, which is not a resident, unpinned page "
                     f"of the requested page's partition")
            resident.remove(v)
            size[q] -= 1
        if t in bypassed:
            if victims:
                fail(f"request {t}: bypassed after evicting")
            in_part = [r for r in resident if part(r) == q]
            if cap[q] > 0 and (size[q] < cap[q] or any(r not in pinned for r in in_part)):
                fail(f"request {t}: bypassed although a page could have been evicted")
            continue
        resident.add(p)
        size[q] += 1
        inserted += 1
        if size[q] > cap[q] or len(resident) > result.k:
            fail(f"request {t}: the cache holds {len(resident)} pages ({size[q]} in the "
                 f"partition of capacity {cap[q]}), above k={result.k}")
    if inserted + len(bypassed) != result.misses:
        fail(f"misses {result.misses} != insertions {inserted} + bypasses {len(bypassed)}")
