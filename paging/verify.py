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

Runs with a prefetcher or a miss handler (``result.events``, :mod:`paging.miss`) are checked
too: a dropped request's page is not resident and nothing is evicted for it; a substituted
one is served by a resident page of its layer; a prefetch (applied before the request it
precedes) inserts a non-resident page after evicting resident pages of its partition, only when
the page did not fit, and the capacity holds afterwards; a page fetched at a lower precision
occupies that level's size; misses = non-hits − dropped − substituted, and the cost and bytes
are recomputed level by level.

Routed runs (cache-aware routing, :mod:`paging.routing`) serve other requests than the trace's:
their ``events`` hold the served pages and steps. The verifier first checks that the served
sequence is a routing of the trace (every served request belongs to a (token, layer) group of
the trace, in order, with a page of the group's layer, distinct pages within a group, at most
the group's size and at least one request per group), then replays the run on the served
sequence exactly as above.
"""

from __future__ import annotations

import math

import numpy as np

from paging.result import Result
from paging.trace import Trace


class VerificationError(AssertionError):
    """A recorded run is not a feasible schedule (the message says where)."""


def _served_trace(trace: Trace, result: Result) -> Trace:
    """The sequence a routed run served, after checking it is a routing of ``trace``."""
    sp = np.asarray(result.events["served_pages"], dtype=np.int64)
    ss = np.asarray(result.events["served_steps"], dtype=np.int64)

    def fail(msg):
        raise VerificationError(f"{result.policy} k={result.k} on {trace.name} (routed): {msg}")

    if sp.shape != ss.shape:
        fail(f"{sp.size} served pages for {ss.size} served steps")
    g_steps, g_size = np.unique(trace.steps, return_counts=True)
    s_steps, s_first, s_size = np.unique(ss, return_index=True, return_counts=True)
    if ss.size and np.any(np.diff(ss) < 0):
        fail("the served steps go backwards")
    if not np.array_equal(s_steps, g_steps):
        fail("the served requests do not cover every (token, layer) group of the trace once")
    if np.any(s_size > g_size):
        fail("a group served more experts than the trace's group has")
    lay = trace.layout
    if np.any((sp < 0) | (sp >= lay.n_pages)) or np.any(sp // lay.n_experts != ss % lay.n_layers):
        fail("a served page is not a page of its group's layer")
    order = np.lexsort((sp, ss))
    if np.any((ss[order][1:] == ss[order][:-1]) & (sp[order][1:] == sp[order][:-1])):
        fail("a group served the same expert twice")
    return Trace(lay, sp, ss, trace.name, expand="groups" if np.any(s_size > 1) else "rounds")


def verify(trace: Trace, result: Result, *, costs=None, sizes=None) -> None:
    """Raise :class:`VerificationError` unless ``result`` is a feasible run on ``trace``.

    The result must have been produced with ``record=True``; ``costs`` and ``sizes`` are the
    weights the run was given (None: unit). O(N + E) expected time.
    """
    if result.hit_mask is None or result.evictions is None or result.bypassed is None:
        raise VerificationError("the result was not recorded (simulate(..., record=True))")
    if result.events is not None and "served_pages" in result.events:
        trace = _served_trace(trace, result)
    lay = trace.layout
    N, n = trace.n_requests, lay.n_experts
    pages, steps = trace.pages, trace.steps
    mask = np.asarray(result.hit_mask, dtype=bool)

    def fail(msg):
        raise VerificationError(f"{result.policy} k={result.k} on {trace.name}: {msg}")

    evs = result.events or {}
    dropped = set(np.asarray(evs.get("dropped", []), dtype=np.int64).tolist())
    subst = {int(t): int(q) for t, q in
             np.asarray(evs.get("substituted", np.zeros((0, 2))), dtype=np.int64).reshape(-1, 2)}
    if len(dropped) != result.dropped or len(subst) != result.substituted:
        fail(f"dropped/substituted {result.dropped}/{result.substituted} but the logs hold "
             f"{len(dropped)}/{len(subst)}")
    if result.requests != N or mask.size != N:
        fail(f"{result.requests} requests / mask of {mask.size} for a trace of {N}")
    fetched = ~mask
    for t in (*dropped, *subst):
        if mask[t]:
            fail(f"request {t} is a hit and also dropped or substituted")
        fetched[t] = False
    if result.misses != int(fetched.sum()) or result.hits != int(mask.sum()):
        fail(f"misses {result.misses} but the hit mask has {int(fetched.sum())} fetched misses")
    levels = evs.get("fetch_levels")
    lvl = np.zeros(N, dtype=np.int64)
    if levels is not None:
        if levels.size != int(fetched.sum()):
            fail("the fetch-level log does not have one entry per fetched miss")
        lvl[fetched] = levels
    per_layer = np.bincount(pages[fetched] // n, minlength=lay.n_layers)
    if not np.array_equal(per_layer, np.asarray(result.per_layer_misses)):
        fail(f"per-layer misses {list(result.per_layer_misses)} != {per_layer.tolist()}")

    if result.page_misses is not None and not np.array_equal(
            np.bincount(pages[fetched], minlength=lay.n_pages), result.page_misses):
        fail("per-page misses do not match the hit mask")
    missed = pages[fetched]
    lv_costs = evs.get("level_costs")
    lv_sizes = evs.get("level_sizes")
    if levels is not None and (lv_costs is None or lv_sizes is None):
        fail("a run with precision levels must log their costs and sizes")
    w_costs = None if costs is None else np.asarray(costs, dtype=np.float64)
    w_sizes = None if sizes is None else np.asarray(sizes, dtype=np.int64)
    if levels is None:
        want_cost = (float(missed.size) if costs is None
                     else math.fsum(w_costs[missed].tolist()))
        want_bytes = None if sizes is None else int(w_sizes[missed].sum())
    else:
        per_c = [np.ones(lay.n_pages) if w_costs is None else w_costs, *lv_costs[1:]]
        per_s = [w_sizes, *lv_sizes[1:]]
        lv_m = lvl[fetched]
        want_cost = math.fsum(float(per_c[a][b]) for a, b in zip(lv_m.tolist(), missed.tolist(),
                                                                 strict=True))
        want_bytes = int(sum(int(per_s[a][b]) for a, b in zip(lv_m.tolist(), missed.tolist(),
                                                              strict=True)))
    if result.cost != want_cost:
        fail(f"cost {result.cost!r} != Σ w over the misses {want_cost!r}")
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

    pf_ins: dict[int, list[int]] = {}
    for t, v in np.asarray(evs.get("prefetched", np.zeros((0, 2))),
                           dtype=np.int64).reshape(-1, 2).tolist():
        pf_ins.setdefault(t, []).append(v)
    pf_out: dict[int, list[int]] = {}
    for t, v in np.asarray(evs.get("prefetch_evictions", np.zeros((0, 2))),
                           dtype=np.int64).reshape(-1, 2).tolist():
        pf_out.setdefault(t, []).append(v)
    if result.extra is not None and "prefetches" in result.extra and \
            result.extra["prefetches"] != sum(map(len, pf_ins.values())):
        fail("the prefetch count does not match the prefetch log")

    resident: dict[int, int] = {}  # page -> the room it occupies
    group_start = 0
    inserted = 0
    for t in range(N):
        p = int(pages[t])
        for v in pf_out.get(t, []):  # the prefetches issued before request t
            if v not in resident:
                fail(f"a prefetch before request {t} evicted page {v}, which is not cached")
            size[part(v)] -= resident.pop(v)
        for v in pf_ins.get(t, []):
            if v in resident:
                fail(f"a prefetch before request {t} inserted page {v}, already cached")
            resident[v] = room[v]
            size[part(v)] += room[v]
        for q in {part(v) for v in pf_ins.get(t, [])}:
            if size[q] > cap[q]:
                fail(f"the prefetches before request {t} overfill partition {q}")
        if t == 0 or steps[t] != steps[t - 1]:
            group_start = t
        if t in dropped or t in subst:
            if p in resident:
                fail(f"request {t} (page {p}) was dropped or substituted but is cached")
            if t in ev_by_t or t in bypassed:
                fail(f"request {t} was dropped or substituted yet has evictions or a bypass")
            q_ = subst.get(t)
            if q_ is not None and (q_ not in resident or q_ // n != steps[t] % lay.n_layers):
                fail(f"request {t} substituted by page {q_}, not a cached page of its layer")
            continue
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
        need = room[p] if lvl[t] == 0 else int(lv_sizes[lvl[t]][p])
        if victims and size[q] + need <= cap[q]:
            fail(f"request {t}: evicted {victims} although the page fitted")
        for v in victims:
            if v not in resident or part(v) != q or v == p or v in pinned:
                fail(f"request {t}: evicted page {v}, which is not a resident, unpinned page "
                     f"of the requested page's partition")
            size[q] -= resident.pop(v)
        if t in bypassed:
            if victims:
                fail(f"request {t}: bypassed after evicting")
            held = sum(resident[r] for r in resident if part(r) == q and r in pinned)
            if size[q] + need <= cap[q] or need <= cap[q] - held:
                fail(f"request {t}: bypassed although eviction could have made room")
            continue
        resident[p] = need
        size[q] += need
        inserted += 1
        if size[q] > cap[q]:
            fail(f"request {t}: the partition holds {size[q]} (pages or bytes), above its "
                 f"capacity {cap[q]} (C={result.capacity})")
    if inserted + len(bypassed) != result.misses:
        fail(f"misses {result.misses} != insertions {inserted} + bypasses {len(bypassed)}")
