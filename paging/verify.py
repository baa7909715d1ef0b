"""An independent checker of simulated runs.

:func:`verify` replays a recorded :class:`~paging.simulate.Result` (hit mask, eviction log,
bypassed requests) against its trace without using the simulator or any policy, and checks that
the run was a feasible demand-paging schedule:

1. every request is served: it is a hit on a resident page, or a miss after which the page is
   resident (or it was bypassed because nothing could be evicted);
2. a hit is recorded exactly when the page was resident;
3. the cache never holds more than k pages (or, for a byte-budget run, more bytes than the
   budget), nor more than a layer's share for DIST runs (C // ℓ, one more for the first
   C mod ℓ layers, C = k or the budget; or the shares a per-layer policy fixed,
   ``Result.shares``, one per layer, which must add up to at most C);
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

The replay is :class:`_Replay` (Python: the specification). Every run is replayed in a
compiled loop first (:func:`_replay_compiled`, the same checks on the same state: 60-75x
faster on 10⁷ requests of LRU and FIFO-DIST, 15x with a prefetcher and a drop handler on
6.4·10⁶, ``benchmarks/bench_verify.py``); when it finds a fault the Python replay runs the
piece again from the same state and names it (``tests/property/test_verify_replay.py`` holds
the two to the same verdict, at the same request, on true and altered logs, with prefetches,
drops and substitutions too).
Nothing here calls the simulator or a policy. A streamed run (:mod:`paging.stream`) is
verified chunk by chunk (:class:`StreamVerifier`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from paging.errors import VerificationError  # (defined with the other errors: paging.cli)
from paging.result import Result
from paging.trace import Trace, group_starts


def _served_trace(trace: Trace, result: Result) -> Trace:
    """The sequence a routed run served, after checking it is a routing of ``trace``."""
    sp = np.asarray(result.events["served_pages"], dtype=np.int64)
    ss = np.asarray(result.events["served_steps"], dtype=np.int64)

    def fail(msg):
        raise VerificationError(f"{result.policy} k={result.k} on {trace.name} (routed): {msg}")

    if sp.shape != ss.shape:
        fail(f"{sp.size} served pages for {ss.size} served steps")
    if ss.size and np.any(np.diff(ss) < 0):
        fail("the served steps go backwards")
    # (the groups as runs of equal steps, both non-decreasing: numpy 2.4's unique hashes
    # every value, 0.27 s on 2M steps)
    steps = np.asarray(trace.steps, dtype=np.int64)
    g_first = group_starts(steps)
    g_steps, g_size = steps[g_first], np.diff(np.r_[g_first, steps.size])
    s_first = group_starts(ss)
    s_steps, s_size = ss[s_first], np.diff(np.r_[s_first, ss.size])
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


def verify(trace: Trace, result: Result, *, costs=None, sizes=None, k=None,
           budget=None) -> None:
    """Raise :class:`VerificationError` unless ``result`` is a feasible run on ``trace``.

    The result must have been produced with ``record=True``; ``costs`` and ``sizes`` are the
    weights the run was given (None: unit); ``k`` or ``budget``, the capacity it was asked for,
    which the result's must be (both None: the result's own is taken on trust). O(N + E)
    expected time.
    """
    if result.hit_mask is None or result.evictions is None or result.bypassed is None:
        raise VerificationError("the result was not recorded (simulate(..., record=True))")
    if result.events is not None and "served_pages" in result.events:
        trace = _served_trace(trace, result)
    lay = trace.layout
    N = trace.n_requests
    pages, steps = trace.pages, trace.steps
    mask = np.asarray(result.hit_mask, dtype=bool)

    def fail(msg):
        raise VerificationError(f"{result.policy} k={result.k} on {trace.name}: {msg}")

    if (k is not None or budget is not None) and (result.k, result.budget) != (k, budget):
        fail(f"the run was asked for {_capacity_text(k, budget)}, the result has "
             f"{_capacity_text(result.k, result.budget)}")
    if result.budget is not None and sizes is None:
        fail("a byte-budget run needs its page sizes to be verified")
    evs = result.events or {}
    # (the logs as arrays: the dropped requests ascending, the substitutions by request, the
    # last one logged for a request counting, as a dict of them would)
    dropped = np.unique(np.asarray(evs.get("dropped", []), dtype=np.int64))
    subst = _last_by_time(evs.get("substituted"))
    if dropped.size != result.dropped or subst.shape[0] != result.substituted:
        fail(f"dropped/substituted {result.dropped}/{result.substituted} but the logs hold "
             f"{dropped.size}/{subst.shape[0]}")
    if result.requests != N or mask.size != N:
        fail(f"{result.requests} requests / mask of {mask.size} for a trace of {N}")
    fetched = ~mask
    for ts in (dropped, subst[:, 0]):
        out = ts[(ts < 0) | (ts >= N)]
        if out.size:
            fail(f"request {int(out[0])} dropped or substituted, outside the run's 0..{N - 1}")
        if mask[ts].any():
            fail(f"request {int(ts[mask[ts]][0])} is a hit and also dropped or substituted")
        fetched[ts] = False
    if result.misses != int(fetched.sum()) or result.hits != int(mask.sum()):
        fail(f"misses {result.misses} but the hit mask has {int(fetched.sum())} fetched misses")
    levels = evs.get("fetch_levels")
    lvl = np.zeros(N, dtype=np.int64)
    lv_costs = evs.get("level_costs")
    lv_sizes = evs.get("level_sizes")
    if levels is not None:
        levels = np.asarray(levels, dtype=np.int64)
        if levels.size != int(fetched.sum()):
            fail("the fetch-level log does not have one entry per fetched miss")
        if lv_costs is None or lv_sizes is None or len(lv_costs) != len(lv_sizes):
            fail("a run with precision levels must log their costs and sizes, one per level")
        bad = np.flatnonzero((levels < 0) | (levels >= len(lv_sizes)))
        if bad.size:
            fail(f"request {int(np.flatnonzero(fetched)[bad[0]])} fetched at precision level "
                 f"{int(levels[bad[0]])}; the run has levels 0..{len(lv_sizes) - 1}")
        lvl[fetched] = levels
    missed = pages[fetched]
    want = {}  # (a run with levels: its cost and bytes level by level; else from the counts)
    if levels is not None:
        w_costs = None if costs is None else np.asarray(costs, dtype=np.float64)
        w_sizes = None if sizes is None else np.asarray(sizes, dtype=np.int64)
        per_c = [np.ones(lay.n_pages) if w_costs is None else w_costs, *lv_costs[1:]]
        per_s = [w_sizes, *lv_sizes[1:]]
        lv_m = lvl[fetched]
        want["cost"] = math.fsum(float(per_c[a][b]) for a, b in zip(lv_m.tolist(),
                                                                    missed.tolist(), strict=True))
        want["nbytes"] = int(sum(int(per_s[a][b]) for a, b in zip(lv_m.tolist(),
                                                                  missed.tolist(), strict=True)))
    _check_totals(fail, result, np.bincount(missed, minlength=lay.n_pages), lay.n_layers, costs,
                  sizes, "the hit mask", **want)

    ev = _eviction_rows(result.evictions, fail, N)
    bypassed = set(np.asarray(result.bypassed).tolist())
    if len(bypassed) != result.bypasses:
        fail("bypass count does not match the bypass log")

    pf_in = _in_time_order(evs.get("prefetched"))
    pf_out = _in_time_order(evs.get("prefetch_evictions"))
    for rows, what in ((pf_in, "prefetch"), (pf_out, "prefetch-eviction")):
        # (a row names the request it precedes; the replay would skip one outside the run)
        out = rows[(rows[:, 0] < 0) | (rows[:, 0] >= N), 0]
        if out.size:
            fail(f"the {what} log names request {int(out[0])}, outside the run's 0..{N - 1}")
    if result.extra is not None and "prefetches" in result.extra and \
            result.extra["prefetches"] != pf_in.shape[0]:
        fail("the prefetch count does not match the prefetch log")

    cache = _Replay(lay, result.capacity, result.dist, result.budget, sizes, fail,
                    result.shares)
    # (the compiled replay; the Python replay names a fault it finds)
    cache.fast_piece(np.asarray(pages, dtype=np.int64), np.asarray(steps, dtype=np.int64),
                     mask, ev, sorted(bypassed), drop=dropped, sub=subst,
                     lvl=lvl if levels is not None else None, lv_sizes=lv_sizes,
                     pf_in=pf_in, pf_out=pf_out)
    if cache.inserted + len(bypassed) != result.misses:
        fail(f"misses {result.misses} != insertions {cache.inserted} + bypasses "
             f"{len(bypassed)}")
    coll = Collisions(lay.n_pages, lay.n_layers)
    coll.piece(np.asarray(pages, dtype=np.int64), steps, fetched, ev, pf_out)
    if coll.count != result.collision_misses:
        fail(f"collision misses {result.collision_misses} != {coll.count}, the fetched misses "
             "on a page evicted earlier in the same forward pass (from the logs)")


class Collisions:
    """SpecMD's collision misses counted from a run's logs alone: a fetched miss (dropped and
    substituted requests are not fetched; a bypass is) on a page whose last eviction was in the
    same forward pass (``steps // ℓ``), the definition :class:`paging.core.Simulation` counts.
    A demand eviction while serving request t is in t's pass; a prefetch's eviction logged
    before request i came after request i − 1 was served, in that request's pass. Pieces of a
    streamed run are fed in order; each page's last eviction carries from one to the next
    (memory: one pass number per page)."""

    def __init__(self, n_pages: int, n_layers: int):
        self.last = np.full(n_pages, -1, dtype=np.int64)  # pass of each page's last eviction
        self.L = n_layers
        self.prev_pass = -1  # the pass of the previous piece's last request
        self.count = 0

    def piece(self, pages, steps, fetched, ev, pf_out=None) -> None:
        """``fetched``: the piece's fetched misses (a mask); ``ev`` and ``pf_out``: the demand
        and prefetch evictions as rows ``(request index in the piece, page)``."""
        N = pages.size
        if N == 0:
            return
        passes = np.asarray(steps, dtype=np.int64) // self.L
        pf = np.zeros((0, 2), np.int64) if pf_out is None else np.asarray(
            pf_out, dtype=np.int64).reshape(-1, 2)
        # every event on one clock: a prefetch eviction before request i at 4i - 1, the miss
        # of request t at 4t (its check precedes its own evictions, which never take its page),
        # a demand eviction at t at 4t + 1; the earlier pieces' last evictions at -2
        ev = np.asarray(ev, dtype=np.int64).reshape(-1, 2)
        carried = np.flatnonzero(self.last >= 0)
        e_page = np.concatenate([carried, ev[:, 1], pf[:, 1]])
        e_key = np.concatenate([np.full(carried.size, -2, np.int64), 4 * ev[:, 0] + 1,
                                4 * pf[:, 0] - 1])
        pf_pass = np.where(pf[:, 0] > 0, passes[np.maximum(pf[:, 0] - 1, 0)], self.prev_pass)
        e_pass = np.concatenate([self.last[carried], passes[ev[:, 0]], pf_pass])
        t = np.flatnonzero(np.asarray(fetched, dtype=bool))
        if t.size and e_page.size:
            order = np.lexsort((e_key, e_page))
            e_page, e_key, e_pass = e_page[order], e_key[order], e_pass[order]
            m_page = pages[t]
            # the last event of the miss's page before it: the events of that page are
            # e_page == p, ordered by key; search its key range
            lo = np.searchsorted(e_page, m_page, side="left")
            hi = np.searchsorted(e_page, m_page, side="right")
            span = 4 * N + 4  # (keys run from -2 to 4N: a page's events in one interval)
            if (int(self.last.size) + 1) * span >= 2**63:
                raise VerificationError(f"{self.last.size:,} pages x {N:,} requests are beyond "
                                        "the collision count's int64 keys; verify in pieces")
            comp = e_page * span + (e_key + 2)
            j = np.searchsorted(comp, m_page * span + (4 * t + 2), side="left") - 1
            has = (j >= lo) & (j < hi)
            self.count += int(np.count_nonzero(has & (e_pass[np.where(has, j, 0)]
                                                      == passes[t])))
        # each page's last eviction in this piece carries to the next
        if e_page.size:
            last_of = np.lexsort((e_key, e_page))
            pg, ps = e_page[last_of], e_pass[last_of]
            end = np.r_[pg[1:] != pg[:-1], True]
            self.last[pg[end]] = ps[end]
        self.prev_pass = int(passes[-1])


def _capacity_text(k, budget) -> str:
    return f"k={k}" if budget is None else f"a budget of {budget} bytes"


def _check_totals(fail, result, pm, n_layers: int, costs, sizes, what: str, *, cost=None,
                  nbytes=None) -> None:
    """The run's per-layer and per-page misses against ``pm`` (the misses per page the logs
    give, ``what``), and its cost and bytes against ``cost`` and ``nbytes`` (a run with
    precision levels) or, without them, Σ w and Σ s over those misses: the cost summed exactly
    and rounded once (what ``math.fsum`` gives over the missed pages' costs)."""
    from fractions import Fraction

    per_layer = pm.reshape(n_layers, -1).sum(axis=1)
    if not np.array_equal(per_layer, np.asarray(result.per_layer_misses)):
        fail(f"per-layer misses {list(result.per_layer_misses)} != {per_layer.tolist()}")
    if result.page_misses is not None and not np.array_equal(pm, result.page_misses):
        fail(f"per-page misses do not match {what}")
    nz = np.flatnonzero(pm).tolist()
    if cost is None:
        w = None if costs is None else np.asarray(costs, dtype=np.float64)
        cost = (float(pm.sum()) if w is None
                else float(sum(Fraction(float(w[p])) * int(pm[p]) for p in nz)))
        nbytes = None if sizes is None else sum(int(sizes[p]) * int(pm[p]) for p in nz)
    if result.cost != cost:
        fail(f"cost {result.cost!r} != Σ w over the misses {cost!r}")
    if result.bytes_fetched != nbytes:
        fail(f"bytes fetched {result.bytes_fetched} != Σ s over the misses {nbytes}")


def _in_time_order(log) -> np.ndarray:
    """Rows ``(t, page)`` of a log, stably sorted by t (None: no rows)."""
    rows = np.asarray(log if log is not None else np.zeros((0, 2)), dtype=np.int64).reshape(-1, 2)
    if rows.shape[0] and np.any(np.diff(rows[:, 0]) < 0):
        rows = rows[np.argsort(rows[:, 0], kind="stable")]
    return rows


def _last_by_time(log) -> np.ndarray:
    """Rows ``(t, page)`` of a log, one per t (the last logged, as ``dict(rows)`` keeps it),
    by t."""
    rows = np.asarray(log if log is not None else np.zeros((0, 2)), dtype=np.int64).reshape(-1, 2)
    if not rows.shape[0]:
        return rows
    _, last = np.unique(rows[::-1, 0], return_index=True)
    return rows[::-1][last]


def _by_time(log) -> dict[int, list[int]]:
    """Rows ``(t, page)`` of a log as ``{t: [page, ...]}`` (None: an empty log)."""
    out: dict[int, list[int]] = {}
    if log is None:
        return out
    for t, v in np.asarray(log, dtype=np.int64).reshape(-1, 2).tolist():
        out.setdefault(t, []).append(v)
    return out


def _eviction_rows(evictions, fail, n: int, t0: int = 0) -> np.ndarray:
    """The eviction log's rows ``(t, page)``, after checking they are in time order and name
    requests 0..n-1 (of a piece whose first request is ``t0``)."""
    ev = np.asarray(evictions, dtype=np.int64).reshape(-1, 2)
    if ev.size and np.any(np.diff(ev[:, 0]) < 0):
        fail("the eviction log is not in time order")
    if ev.size and (ev[0, 0] < 0 or ev[-1, 0] >= n):
        fail(f"the eviction log names request {t0 + int(ev[0 if ev[0, 0] < 0 else -1, 0])}, "
             f"outside the run's {t0}..{t0 + n - 1}")
    return ev


class _Replay:
    """The cache a recorded run claims, replayed request by request from its logs with no
    policy (checks 1-5 of the module docstring); its contents carry from one :meth:`piece` of
    the trace to the next (a streamed run's chunks, each of whole groups). ``fail(message)``
    raises."""

    def __init__(self, layout, capacity: int, dist: bool, budget, sizes, fail, shares=None):
        self.layout, self.capacity, self.dist, self.fail = layout, capacity, dist, fail
        self.room = ([1] * layout.n_pages if budget is None
                     else [int(x) for x in np.asarray(sizes)])
        if shares is not None:  # (a per-layer policy's own shares: they split C, no more)
            sh = np.asarray(shares, dtype=np.int64).reshape(-1)
            if not dist or sh.size != layout.n_layers or sh.min() < 0 \
                    or int(sh.sum()) > capacity:
                fail(f"per-layer shares {sh.tolist()}: expected one share per layer of the "
                     f"{layout.n_layers}, none negative, summing to at most C={capacity}")
        self.cap = (np.asarray(shares, dtype=np.int64) if shares is not None
                    else layout.dist_shares(capacity) if dist
                    else np.array([capacity], dtype=np.int64))
        self.size = np.zeros(self.cap.size, dtype=np.int64)
        self.resident: dict[int, int] = {}  # page -> the room it occupies
        self.inserted = 0
        # the same cache in arrays, for the compiled replay (fast_piece): the room each page
        # holds (0: not cached)
        self.held = np.zeros(layout.n_pages, dtype=np.int64)

    def fast_piece(self, pages, steps, mask, ev, byp, *, t0: int = 0, drop=None, sub=None,
                   lvl=None, lv_sizes=None, pf_in=None, pf_out=None) -> None:
        """:meth:`piece` in the compiled loop :func:`_replay_compiled` (``ev``: the eviction
        rows in time order, ``byp``: the bypassed requests, distinct; the events as arrays,
        :meth:`compiled`). A fault is then replayed here by :meth:`piece` from the state
        before the piece, which names it. Pieces replayed by this method only (the state lives
        in ``held``)."""
        held, size = self.held.copy(), self.size.copy()  # (the state before the piece)
        byp = np.sort(np.asarray(byp, dtype=np.int64))
        bad = self.compiled(pages, steps, mask, ev, byp, drop=drop, sub=sub, lvl=lvl,
                            lv_sizes=lv_sizes, pf_in=pf_in, pf_out=pf_out)
        if bad >= 0:  # the replay, from the same state, says what failed
            self.resident = {int(p): int(held[p]) for p in np.flatnonzero(held)}
            self.size[:] = size
            self.piece(pages, steps, mask, _by_time(ev), set(byp.tolist()), t0=t0,
                       dropped=set(() if drop is None else np.asarray(drop).tolist()),
                       subst={} if sub is None else {int(t): int(q) for t, q in sub},
                       lvl=lvl, lv_sizes=lv_sizes, pf_ins=_by_time(pf_in),
                       pf_out=_by_time(pf_out))
            self.fail(f"request {t0 + bad}: the compiled replay finds a fault the replay does "
                      "not (a bug of the verifier)")

    def compiled(self, pages, steps, mask, ev, byp, *, drop=None, sub=None, lvl=None,
                 lv_sizes=None, pf_in=None, pf_out=None) -> int:
        """:func:`_replay_compiled` on the piece, from the state in ``held``: the index of the
        first request that fails a check, or -1. ``byp`` and ``drop`` ascending, ``sub``
        (:func:`_last_by_time`), ``pf_in`` and ``pf_out`` (:func:`_in_time_order`) rows in time
        order; ``lvl`` each request's fetch level, ``lv_sizes`` the levels' sizes."""
        counts = np.array([self.inserted], dtype=np.int64)
        room = np.asarray(self.room, dtype=np.int64)
        if lvl is None:
            levels, lv_room = _NO_LEVELS, room.reshape(1, -1)
        else:
            levels = np.asarray(lvl, dtype=np.int64)
            lv_room = np.array([room, *(np.asarray(x, dtype=np.int64) for x in lv_sizes[1:])],
                               dtype=np.int64).reshape(-1, room.size)
        bad = _replay_compiled(pages, steps, mask, ev, np.asarray(byp, dtype=np.int64), room,
                               self.cap, self.dist, self.layout.n_experts,
                               self.layout.n_layers, self.held, self.size, counts,
                               _in_time_order(pf_in), _in_time_order(pf_out),
                               _NO_LEVELS if drop is None else np.asarray(drop, np.int64),
                               _last_by_time(sub), levels, lv_room)
        self.inserted = int(counts[0])
        return int(bad)

    def piece(self, pages, steps, mask, ev_by_t, bypassed, *, t0: int = 0, dropped=(),
              subst=None, lvl=None, lv_sizes=None, pf_ins=None, pf_out=None) -> None:
        """Replay the requests ``pages`` (their ``steps``, whole groups) with the hit mask, the
        evictions and bypasses (by request index in the piece), the dropped and substituted
        requests, the fetch levels (``lvl``, and each level's sizes) and the prefetches
        inserted and evicted before each request. Messages name request ``t0`` + its index."""
        fail, room, cap, size, resident = self.fail, self.room, self.cap, self.size, \
            self.resident
        n = self.layout.n_experts
        N = pages.size
        subst = subst or {}
        pf_ins = pf_ins or {}
        pf_out = pf_out or {}
        if self.dist:
            part = lambda p: p // n  # noqa: E731
        else:
            part = lambda p: 0  # noqa: E731
        grouped = N > 0 and bool(np.any(np.diff(steps) == 0))
        group_start = 0
        inserted = 0
        for i in range(N):
            t = t0 + i
            p = int(pages[i])
            freed: dict[int, int] = {}  # partition -> the room the prefetches' evictions freed
            for v in pf_out.get(i, []):  # the prefetches issued before request t
                if v not in resident:
                    fail(f"a prefetch before request {t} evicted page {v}, which is not cached")
                freed[part(v)] = freed.get(part(v), 0) + resident[v]
                size[part(v)] -= resident.pop(v)
            for v in pf_ins.get(i, []):
                if v in resident:
                    fail(f"a prefetch before request {t} inserted page {v}, already cached")
                if not 0 <= v < len(room):
                    fail(f"a prefetch before request {t} inserted page {v}, not a page id")
                resident[v] = room[v]
                size[part(v)] += room[v]
            for q in {part(v) for v in pf_ins.get(i, [])}:
                if size[q] > cap[q]:
                    fail(f"the prefetches before request {t} overfill partition {q}")
            for q, f in freed.items():  # (evicted only if the prefetched pages did not fit)
                if size[q] + f <= cap[q]:
                    fail(f"the prefetches before request {t} evicted from partition {q} "
                         "although the pages they inserted there (if any) fitted")
            if i == 0 or steps[i] != steps[i - 1]:
                group_start = i
            if i in dropped or i in subst:
                if p in resident:
                    fail(f"request {t} (page {p}) was dropped or substituted but is cached")
                if i in ev_by_t or i in bypassed:
                    fail(f"request {t} was dropped or substituted yet has evictions or a bypass")
                q_ = subst.get(i)
                if q_ is not None and (q_ not in resident
                                       or q_ // n != steps[i] % self.layout.n_layers):
                    fail(f"request {t} substituted by page {q_}, not a cached page of its layer")
                continue
            if mask[i]:
                if p not in resident:
                    fail(f"request {t} (page {p}) recorded as a hit but the page is not cached")
                if i in ev_by_t or i in bypassed:
                    fail(f"request {t} is a hit yet has evictions or a bypass")
                continue
            if p in resident:
                fail(f"request {t} (page {p}) recorded as a miss but the page is cached")
            q = part(p)
            if grouped:
                g_end = group_start
                while g_end < N and steps[g_end] == steps[group_start]:
                    g_end += 1
                pinned = set(pages[group_start:g_end].tolist())
            else:
                pinned = set()
            victims = ev_by_t.get(i, [])
            need = room[p] if lvl is None or lvl[i] == 0 else int(lv_sizes[lvl[i]][p])
            if victims and size[q] + need <= cap[q]:
                fail(f"request {t}: evicted {victims} although the page fitted")
            for v in victims:
                if v not in resident or part(v) != q or v == p or v in pinned:
                    fail(f"request {t}: evicted page {v}, which is not a resident, unpinned page "
                         f"of the requested page's partition")
                size[q] -= resident.pop(v)
            if i in bypassed:
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
                     f"capacity {cap[q]} (C={self.capacity})")
        self.inserted += inserted


_NO_LEVELS = np.zeros(0, np.int64)


@njit(cache=True, nogil=True)
def _replay_compiled(pages, steps, mask, ev, byp, room, cap, dist, n, L, held, size, counts,
                     pf_in, pf_out, drop, sub, lvl, lv_room):
    """:meth:`_Replay.piece` in a compiled loop: the same checks on the same state (``held[p]``:
    the room page p occupies, 0 when it is not cached; ``size``: each partition's;
    ``counts[0]``: the insertions). The logs are rows in time order: ``ev`` the evictions,
    ``pf_in`` and ``pf_out`` the prefetches inserted and evicted before each request, ``sub``
    the substitutions ``(t, page)``; ``byp`` and ``drop`` the bypassed and dropped requests
    ascending; ``lvl`` each request's fetch level (empty: all 0) and ``lv_room[level, p]`` the
    room a page takes at each level (row 0: ``room``). Returns the index of the first request
    that fails a check (the state then stops there), or -1. The replay stays the
    specification: :class:`_Replay` names a fault this finds, and the tests hold the two to the
    same verdicts."""
    N = pages.size
    freed = np.zeros(cap.size, dtype=np.int64)  # (each partition's room a prefetch freed)
    e = 0
    b = 0
    a_in = 0
    a_out = 0
    d = 0
    u = 0
    g_start = 0
    g_end = 0
    for i in range(N):
        p = pages[i]
        # the prefetches issued before request i: evictions, then insertions
        while a_out < pf_out.shape[0] and pf_out[a_out, 0] < i:
            a_out += 1
        first_out = a_out
        while a_out < pf_out.shape[0] and pf_out[a_out, 0] == i:
            v = pf_out[a_out, 1]
            if v < 0 or v >= held.size or held[v] == 0:
                return i
            freed[v // n if dist else 0] += held[v]
            size[v // n if dist else 0] -= held[v]
            held[v] = 0
            a_out += 1
        while a_in < pf_in.shape[0] and pf_in[a_in, 0] < i:
            a_in += 1
        first_in = a_in
        while a_in < pf_in.shape[0] and pf_in[a_in, 0] == i:
            v = pf_in[a_in, 1]
            if v < 0 or v >= held.size or held[v] != 0:
                return i
            held[v] = room[v]
            size[v // n if dist else 0] += room[v]
            a_in += 1
        for j in range(first_in, a_in):
            v = pf_in[j, 1]
            if size[v // n if dist else 0] > cap[v // n if dist else 0]:
                return i
        for j in range(first_out, a_out):  # (evicted only if the prefetched pages did not fit)
            q = pf_out[j, 1] // n if dist else 0
            if freed[q] > 0 and size[q] + freed[q] <= cap[q]:
                return i
        for j in range(first_out, a_out):
            freed[pf_out[j, 1] // n if dist else 0] = 0
        if i == 0 or steps[i] != steps[i - 1]:
            g_start = i
            g_end = i + 1
            while g_end < N and steps[g_end] == steps[i]:
                g_end += 1
        bypassed = False
        while b < byp.size and byp[b] < i:
            b += 1
        if b < byp.size and byp[b] == i:
            bypassed = True
        nv = 0
        while e + nv < ev.shape[0] and ev[e + nv, 0] == i:
            nv += 1
        while d < drop.size and drop[d] < i:
            d += 1
        while u < sub.shape[0] and sub[u, 0] < i:
            u += 1
        dropped = d < drop.size and drop[d] == i
        substituted = u < sub.shape[0] and sub[u, 0] == i
        if dropped or substituted:
            if held[p] != 0 or nv > 0 or bypassed:
                return i
            if substituted:
                q_ = sub[u, 1]
                if q_ < 0 or q_ >= held.size or held[q_] == 0 or q_ // n != steps[i] % L:
                    return i
            continue
        if mask[i]:
            if held[p] == 0 or nv > 0 or bypassed:
                return i
            continue
        if held[p] != 0:
            return i
        q = p // n if dist else 0
        need = room[p] if lvl.size == 0 or lvl[i] == 0 else lv_room[lvl[i], p]
        if nv > 0 and size[q] + need <= cap[q]:
            return i
        for j in range(e, e + nv):
            v = ev[j, 1]
            if v < 0 or v >= held.size or held[v] == 0 or (v // n if dist else 0) != q \
                    or v == p:
                return i
            for x in range(g_start, g_end):  # (a pinned page: one of the group's)
                if pages[x] == v:
                    return i
            size[q] -= held[v]
            held[v] = 0
        e += nv
        if bypassed:
            if nv > 0:
                return i
            pinned = 0
            for x in range(g_start, g_end):
                y = pages[x]
                dup = False
                for w in range(g_start, x):
                    if pages[w] == y:
                        dup = True
                if not dup and held[y] != 0 and (y // n if dist else 0) == q:
                    pinned += held[y]
            if size[q] + need <= cap[q] or need <= cap[q] - pinned:
                return i
            continue
        held[p] = need
        size[q] += need
        counts[0] += 1
        if size[q] > cap[q]:
            return i
    return -1


class StreamVerifier:
    """:func:`verify` of a run fed a piece at a time (a streamed run:
    :func:`paging.stream.stream_run` with ``verify=True``, ``paging simulate --stream
    --verify``). Each piece's hit mask, evictions and bypasses (rows and indices of requests in
    the piece) are checked against the cache replayed so far (:class:`_Replay`, the same checks
    as a whole run's); :meth:`finish` checks the run's totals against the pieces' counts: the
    misses, per layer and per page, insertions + bypasses, the cost (the exact sum of the missed
    pages' costs, rounded once) and the bytes. Memory: the replayed cache and a count per page,
    whatever the trace's length."""

    def __init__(self, layout, name: str, policy: str, capacity: int, dist: bool, *,
                 budget=None, costs=None, sizes=None):
        self.layout = layout
        self.label = f"{policy} k={None if budget is not None else capacity} on {name}"
        if budget is not None and sizes is None:
            self._fail("a byte-budget run needs its page sizes to be verified")
        self.costs, self.sizes, self.budget = costs, sizes, budget
        self.cache = _Replay(layout, capacity, dist, budget, sizes, self._fail)
        self.t = 0  # requests checked so far
        self.hits = 0
        self.bypasses = 0
        self.page_misses = np.zeros(layout.n_pages, dtype=np.int64)
        self.collisions = Collisions(layout.n_pages, layout.n_layers)

    def _fail(self, msg: str):
        raise VerificationError(f"{self.label}: {msg}")

    def feed(self, pages, steps, hit_mask, evictions, bypassed) -> None:
        """Check the next piece (whole groups) with its logs."""
        pages = np.asarray(pages, dtype=np.int64)
        mask = np.asarray(hit_mask, dtype=bool)
        if mask.size != pages.size:
            self._fail(f"a hit mask of {mask.size} for a piece of {pages.size} requests "
                       f"(from request {self.t})")
        byp = np.asarray(bypassed, dtype=np.int64)
        bset = set(byp.tolist())
        if len(bset) != byp.size:
            self._fail(f"a request logged twice as bypassed (from request {self.t})")
        steps = np.asarray(steps, dtype=np.int64)
        self.page_misses += np.bincount(pages[~mask], minlength=self.layout.n_pages)
        ev = _eviction_rows(evictions, self._fail, pages.size, self.t)
        self.cache.fast_piece(pages, steps, mask, ev, byp, t0=self.t)
        self.collisions.piece(pages, steps, ~mask, ev)
        self.t += pages.size
        self.hits += int(mask.sum())
        self.bypasses += len(bset)

    def finish(self, result: Result) -> None:
        """Check the run's totals against every piece's."""
        fail = self._fail
        misses = self.t - self.hits
        if result.requests != self.t:
            fail(f"{result.requests} requests, {self.t} checked")
        if result.misses != misses or result.hits != self.hits:
            fail(f"misses {result.misses} but the hit masks have {misses}")
        _check_totals(fail, result, self.page_misses, self.layout.n_layers, self.costs,
                      self.sizes, "the hit masks")
        if result.bypasses != self.bypasses:
            fail("bypass count does not match the bypass logs")
        if self.cache.inserted + self.bypasses != result.misses:
            fail(f"misses {result.misses} != insertions {self.cache.inserted} + bypasses "
                 f"{self.bypasses}")
        if self.collisions.count != result.collision_misses:
            fail(f"collision misses {result.collision_misses} != {self.collisions.count}, the "
                 "misses on a page evicted earlier in the same forward pass (from the logs)")
        k = None if self.budget is not None else self.cache.capacity
        if (result.k, result.budget) != (k, self.budget):
            fail(f"the run checked had {_capacity_text(k, self.budget)}, the result has "
                 f"{_capacity_text(result.k, result.budget)}")
