"""Compiled cache-aware routing (:mod:`paging.routing`) for the list family
(:mod:`paging.fast.lists`).

Per (token, layer) group, :func:`routed_list_kernel` reads the layer's residency from the list
kernel's own state (``resident``), chooses the served experts exactly as the hook does, writes
them into the served sequence and serves them with :func:`paging.fast.lists.list_kernel` on the
carried state (one call per group: the carried run is the one-call run, so the counts, the hit
mask, the eviction log and the bypasses are the reference loop's, decision for decision).

Hooks compiled (exact types only; anything else returns None from :func:`plan_routed` and runs
in the reference loop):

* ``pruning:j=J`` — the top J (does not read the cache);
* ``max-rank:j=J[,m=M]`` — Alg. 1: the top J, then cached experts of rank < M in rank order,
  then the rest of the ranking, cut at K;
* ``cumsum:tau=T[,j=J]`` — max-rank with M per group from the cumulative router weights
  (computed before the run: it does not depend on the cache; from the gate scores in a
  sequential loop, or per group by the reference's own :meth:`Cumsum.m_of` with full logits).

Not compiled: ``cache-prior`` (it re-ranks by ``z + λ·Δavg·m̃`` with a running float average
per layer and a lexsort on floats; reproducing numpy's softmax/log and the Δavg running sums
bit for bit was not done, so it stays in the reference loop), policies outside the list family,
and runs with a prefetcher or a miss handler (refused with routing anyway).

Quality proxies: a group served exactly as ranked (the same experts in the same order) adds
``(1.0, False, 0.0)`` (what :func:`paging.routing.quality` returns then); every other group
calls :func:`paging.routing.quality` itself; the sums run sequentially in group order
(``numpy.cumsum``), as the reference's ``+=``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from paging.fast.common import buffers
from paging.fast.lists import list_kernel, list_state

__all__ = ["plan_routed", "run_routed", "routed_list_kernel"]


@njit(cache=True, nogil=True)
def routed_list_kernel(pages, steps, bounds, order, has_order, mcol, j, cap, n, L, sizes,
                       caps, dist, kind, record, state):
    """Route and serve every group ``bounds[g]:bounds[g+1]`` of the trace (``pages``,
    ``steps``). ``order`` (G × n) is each group's ranking when ``has_order`` (full logits);
    otherwise the ranking is the group's experts then every other expert by id. ``mcol[g]``
    is M of group g (0: no promotion), ``j`` the top J always served, ``cap`` the number served
    (0: the group's size K). Returns ``(served_pages, served_steps, n_served, changed,
    misses, collisions, hit_mask, evictions, n_ev, bypassed, n_byp)``."""
    G = bounds.size - 1
    N = pages.size
    out_pages = np.empty(N, np.int64)
    out_steps = np.empty(N, np.int64)
    hit_all, ev_all, byp_all = buffers(N, record)
    resident = state[4]
    taken = np.zeros(n, np.bool_)
    rank = np.empty(n, np.int64)
    changed = np.zeros(G, np.bool_)
    static = True  # no group reads the cache (every M is 0): route first, then serve once
    for g in range(G):
        if mcol[g] > 0:
            static = False
            break
    t0 = 0
    misses = 0
    coll = 0
    n_ev = 0
    n_byp = 0
    for g in range(G):
        lo = bounds[g]
        hi = bounds[g + 1]
        K = hi - lo
        s = steps[lo]
        z = s % L
        base = z * n
        for e in range(n):
            taken[e] = False
        if has_order:
            for i in range(n):
                rank[i] = order[g, i]
        else:
            for i in range(K):
                e = pages[lo + i] - base
                rank[i] = e
                taken[e] = True
            c = K
            for e in range(n):
                if not taken[e]:
                    rank[c] = e
                    c += 1
            for e in range(n):
                taken[e] = False
        kout = K if cap <= 0 else min(cap, K)
        c = 0
        for i in range(min(j, n)):
            if c >= kout:
                break
            e = rank[i]
            out_pages[t0 + c] = base + e
            taken[e] = True
            c += 1
        m = min(mcol[g], n)
        for i in range(m):
            if c >= kout:
                break
            e = rank[i]
            if not taken[e] and resident[base + e]:
                out_pages[t0 + c] = base + e
                taken[e] = True
                c += 1
        for i in range(n):
            if c >= kout:
                break
            e = rank[i]
            if not taken[e]:
                out_pages[t0 + c] = base + e
                taken[e] = True
                c += 1
        same = c == K
        if same:
            for i in range(K):
                if out_pages[t0 + i] != pages[lo + i]:
                    same = False
                    break
        changed[g] = not same
        for i in range(c):
            out_steps[t0 + i] = s
        if static:
            t0 += c
            continue
        out = list_kernel(out_pages[t0:t0 + c], out_steps[t0:t0 + c], sizes, n, L, caps, dist,
                          kind, record, state)
        misses += out[0]
        coll += out[1]
        if record >= 1:
            hm = out[3]
            for i in range(c):
                hit_all[t0 + i] = hm[i]
        if record >= 2:
            ev = out[4]
            for i in range(out[5]):
                ev_all[n_ev, 0] = ev[i, 0] + t0
                ev_all[n_ev, 1] = ev[i, 1]
                n_ev += 1
            by = out[6]
            for i in range(out[7]):
                byp_all[n_byp] = by[i] + t0
                n_byp += 1
        else:
            n_byp += out[7]
        t0 += c
    if static and t0 > 0:
        # no choice read the cache (pruning): one run over the whole served sequence
        out = list_kernel(out_pages[:t0], out_steps[:t0], sizes, n, L, caps, dist, kind, record,
                          state)
        misses = out[0]
        coll = out[1]
        if record >= 1:
            hit_all[:t0] = out[3]
        n_ev = out[5]
        n_byp = out[7]
        if record >= 2:
            ev_all[:n_ev] = out[4][:n_ev]
            byp_all[:n_byp] = out[6][:n_byp]
    return (out_pages, out_steps, t0, changed, misses, coll, hit_all, ev_all, n_ev, byp_all,
            n_byp)


@njit(cache=True, nogil=True)
def _cumsum_m(pages, bounds, w, tau, n, L, steps):
    """M of every group for ``cumsum`` without full logits: the reference's
    :meth:`paging.routing.Cumsum.m_of` over the group's experts with weights ``w`` (one per
    request), then n as soon as an expert of unknown weight comes."""
    G = bounds.size - 1
    out = np.empty(G, np.int64)
    for g in range(G):
        lo = bounds[g]
        hi = bounds[g + 1]
        acc = 0.0
        m = 0
        res = -1
        for i in range(lo, hi):
            m += 1
            acc += w[i]
            if acc >= tau:
                res = m
                break
        if res < 0:
            res = n if hi - lo < n else m
        out[g] = res
    return out


@njit(cache=True, nogil=True)
def _quality_sums(pages, bounds, served, served_lo, w, n, L, steps, eps):
    """The reference's running sums of :func:`paging.routing.quality` over every group, for a
    trace without logits (weights ``w`` per request: the gate scores, or 1/K) and n <= 8
    experts per layer: ``(Σ retained, Σ top1 changed, Σ KL)`` in group order.

    The KL sum runs over the experts of ``set(a) | set(b)`` in CPython's iteration order, which
    for small non-negative ints below the set's table size (8 slots at least, so every id when
    n <= 8) is ascending id order; :func:`run_routed` takes this path only then."""
    G = bounds.size - 1
    wa = np.zeros(n)
    ina = np.zeros(n, np.bool_)
    inb = np.zeros(n, np.bool_)
    u = eps / n
    ret = 0.0
    kls = 0.0
    ch = 0
    for g in range(G):
        lo = bounds[g]
        hi = bounds[g + 1]
        base = (steps[lo] % L) * n
        for e in range(n):
            wa[e] = 0.0
            ina[e] = False
            inb[e] = False
        orig = 0.0
        for i in range(lo, hi):
            e = pages[i] - base
            wa[e] = w[i]
            ina[e] = True
            orig += w[i]
        kept = 0.0
        a0 = served_lo[g]
        b0 = served_lo[g + 1]
        top = pages[lo] - base
        top_served = False
        for i in range(a0, b0):
            e = served[i] - base
            inb[e] = True
            kept += wa[e]
            if e == top:
                top_served = True
        ret += kept / orig if orig > 0 else 1.0
        if not top_served:
            ch += 1
        kl = 0.0
        for e in range(n):
            ka = ina[e] and orig > 0
            kb = inb[e] and kept > 0
            if not (ka or kb):
                continue
            pa = wa[e] / orig if ka else 0.0
            pb = wa[e] / kept if kb else 0.0
            p = (1 - eps) * pa + u
            q = (1 - eps) * pb + u
            kl += p * np.log(p / q)
        if kl < 0.0:
            kl = 0.0
        kls += kl
    return ret, ch, kls


def plan_routed(trace, policy, router, budget=None):
    """The list kernel's ``(family, kind, dist)`` when this routed run compiles, else None."""
    from paging.fast import _LIST, plan
    from paging.routing import Cumsum, MaxRank, Pruning

    if type(router) not in (Pruning, MaxRank, Cumsum):
        return None
    spec = plan(policy)
    if spec is None or spec[0] != _LIST:
        return None
    return spec


def _bounds(steps) -> np.ndarray:
    N = steps.size
    if N == 0:
        return np.zeros(1, np.int64)
    cut = np.flatnonzero(steps[1:] != steps[:-1]) + 1
    return np.concatenate(([0], cut, [N])).astype(np.int64)


def run_routed(trace, policy, router, spec, k, budget, costs, sizes, seed, level):
    """The routed run of ``simulate(trace, policy, k, routing=router, ...)`` on the list kernel
    (``spec`` from :func:`plan_routed`); every field of the reference's Result, ``extra`` and,
    when recorded, ``events``, included."""
    from paging.fast import _caps
    from paging.result import build_result
    from paging.routing import KL_EPS, Cumsum, Group, Pruning, RoutedRun, quality
    from paging.weights import unit_sizes

    RoutedRun.check(trace, router, policy)  # the reference's checks, and router.reset
    lay = trace.layout
    n, L, P = lay.n_experts, lay.n_layers, lay.n_pages
    pages = np.ascontiguousarray(trace.pages, dtype=np.int64)
    steps = np.ascontiguousarray(trace.steps, dtype=np.int64)
    bounds = _bounds(steps)
    G = bounds.size - 1
    starts = bounds[:-1]
    z_of = steps[starts] % L if G else np.zeros(0, np.int64)
    tok_of = (np.asarray(trace.token, dtype=np.int64)[starts] if G else np.zeros(0, np.int64))
    has_order = trace.logits is not None
    if has_order and G:
        rows = trace.logits[tok_of, z_of]
        order = np.argsort(-rows, axis=1, kind="stable").astype(np.int64)
    else:
        order = np.zeros((1, 1), np.int64)

    def group(g):
        lo, hi = int(bounds[g]), int(bounds[g + 1])
        z, tok = int(z_of[g]), int(tok_of[g])
        return Group(z, tok, [int(p) - z * n for p in pages[lo:hi]],
                     None if trace.score is None else trace.score[lo:hi].tolist(),
                     None if trace.logits is None else trace.logits[tok, z], n)

    if type(router) is Pruning:
        j, cap, mcol = router.j, router.j, np.zeros(G, np.int64)
    elif type(router) is Cumsum:
        j, cap = router.j, 0
        if has_order:
            mcol = np.array([router.m_of(group(g)) for g in range(G)], dtype=np.int64)
        else:
            if trace.score is not None:
                w = np.asarray(trace.score, dtype=np.float64)
            else:
                K = np.diff(bounds)
                w = np.repeat(1.0 / K, K) if G else np.zeros(0)
                # 1/K per request, as Group.probs: the same double as Python's 1.0 / K
            mcol = _cumsum_m(pages, bounds, w, float(router.tau), n, L, steps)
    else:
        j, cap = router.j, 0
        mcol = np.full(G, n if router.m is None else router.m, dtype=np.int64)
    caps = _caps(lay, int(k if budget is None else budget), spec[2])
    slots = unit_sizes(P) if budget is None else sizes
    state = list_state(P, L, caps.size)
    (sp, ss, N, changed, misses, coll, hit_mask, ev, n_ev, byp, n_byp) = routed_list_kernel(
        pages, steps, bounds, order, has_order, mcol, int(j), int(cap), n, L, slots, caps,
        spec[2], spec[1], level, state)
    res = build_result(
        policy=policy.name, k=k, budget=budget, trace=trace.name, requests=int(N),
        page_misses=state[10], n_layers=L, collisions=int(coll), bypasses=int(n_byp),
        seed=seed, dist=spec[2], costs=costs, sizes=sizes,
        hit_mask=hit_mask[:N].copy() if level else None,
        evictions=ev[:n_ev].copy() if level > 1 else None,
        bypassed=byp[:n_byp].copy() if level > 1 else None)
    served_lo = np.concatenate(([0], np.cumsum(_served_sizes(bounds, cap)))).astype(np.int64)
    if not has_order and n <= 8:
        if trace.score is not None:
            w = np.asarray(trace.score, dtype=np.float64)
        else:
            K = np.diff(bounds)
            w = np.repeat(1.0 / K, K) if G else np.zeros(0)
        ret, ch, kls = _quality_sums(pages, bounds, sp, served_lo, w, n, L, steps, KL_EPS)
        res.extra = _extra(router, trace, G, float(ret), int(ch), float(kls))
        if level > 0:
            res.events = {"served_pages": sp[:N].copy(), "served_steps": ss[:N].copy()}
        return res
    # quality proxies, group by group in the reference's order
    retained = np.ones(G)
    kl = np.zeros(G)
    n_changed = 0
    for g in np.flatnonzero(changed).tolist():
        gg = group(g)
        a, b = int(served_lo[g]), int(served_lo[g + 1])
        chosen = (sp[a:b] - int(z_of[g]) * n).tolist()
        r_m, c_m, k_m = quality(gg, chosen)
        retained[g] = r_m
        kl[g] = k_m
        n_changed += bool(c_m)
    res.extra = _extra(router, trace, G, float(np.cumsum(retained)[-1]) if G else 0.0,
                       n_changed, float(np.cumsum(kl)[-1]) if G else 0.0)
    if level > 0:
        res.events = {"served_pages": sp[:N].copy(), "served_steps": ss[:N].copy()}
    return res


def _extra(router, trace, G, retained, changed, kl):
    return {
        "routing": router.spec(),
        "routing_note": router.note,
        "retained_mass": retained / G if G else 1.0,
        "top1_changed": changed / G if G else 0.0,
        "kl": kl / G if G else 0.0,
        "slots": trace.n_requests,
    }


def _served_sizes(bounds, cap):
    K = np.diff(bounds)
    return K if cap <= 0 else np.minimum(K, cap)
