"""Compiled cache-aware routing (:mod:`paging.routing`) for the list family
(:mod:`paging.fast.lists`), every policy of the phase kernel (:mod:`paging.fast.phases`: LFU,
LHU, the credit policies, Marking, ARC, LeCaR, Score-Based and the prediction policies with the
``frequency`` predictor, and their ``-dist`` forms), the token policies
(:mod:`paging.fast.tokens`) and FlashMoE (:mod:`paging.fast.learned`): every built-in online
policy.

A hook that reads the cache (``max-rank``, ``cumsum``, ``cache-prior``) runs inside the kernel
(:func:`paging.fast.lists.list_kernel`, :func:`paging.fast.phases.phase_kernel`,
:func:`paging.fast.tokens.token_kernel`, :func:`paging.fast.learned.flashmoe_kernel`): when a
group starts, the kernel reads the layer's residency from its own state, chooses the served
experts exactly as the hook does (:func:`paging.fast.common.route_group`), writes them over the
group's slots of the served sequence and serves them, one pass over the trace, so the counts,
the hit mask, the eviction log and the bypasses are the reference loop's, decision for decision.
Such hooks serve K experts per group, so the served sequence has the trace's group bounds.
``pruning`` does not read the cache: every group is routed first (:func:`route_static`), then
the served sequence is run once.

Score-Based reads the served requests' gate scores, which :class:`paging.routing.RoutedRun`
writes as each group is routed: the expert's router weight (:meth:`paging.routing.Group.probs`:
the softmax of the group's logits, else its gate score, 0 for an expert outside the group).
They are one row per group, made before the run (they do not depend on the cache); the phase
kernel writes the served expert's entry over the request's score as it routes the group.

Hooks compiled (exact types only; anything else returns None from :func:`plan_routed` and runs
in the reference loop):

* ``pruning:j=J`` — the top J (does not read the cache);
* ``max-rank:j=J[,m=M]`` — Alg. 1: the top J, then cached experts of rank < M in rank order,
  then the rest of the ranking, cut at K;
* ``cumsum:tau=T[,j=J]`` — max-rank with M per group from the cumulative router weights
  (computed before the run: it does not depend on the cache; from the gate scores in a
  sequential loop, or per group by the reference's own :meth:`Cumsum.m_of` with full logits);
* ``cache-prior:lambda=L[,j=J][,delta=...]`` — Eq. 9: the top K of ``z + λ·Δavg·m̃``, ties by
  rank. λ·Δavg per group is computed before the run (:func:`_prior_bonus`: Δavg depends only
  on the logits, never on the cache; the same running sums, in the same order, as
  :meth:`paging.routing.CachePrior.route`, which the hook's sums are left holding afterwards);
  without logits the known log-scores are numpy's ``log`` over the whole score column at once.
  The choice (the sums, one addition per boosted expert and the comparisons of
  ``numpy.lexsort``) is exact arithmetic, so it is the reference's bit for bit.

The token policies (token-hazard, token-decay, token-match, robust-token-match and their
``-dist`` forms) read the served requests' tokens, which are the group's (``pruning``'s served
sequence is given its groups' tokens). FlashMoE's training-sequence watch hashes the served
pages, as the reference's policy sees them, and is told the routed trace's length.

With a prefetcher or a miss handler (SpecMD's Algorithm 1: "Phase 1: Routing modification",
"Phase 2: Cache management", "Phase 3: Prefetch submission") a routed run takes the phase
kernel (:func:`paging.fast.phases.phase_kernel`, the list family included) or the token
kernel, with the same routing (:func:`_run_phased`). The handler reads a served request's
routed rank and router weight (:meth:`paging.routing.RoutedRun.choose`: its place in the
group's ranking, K for an expert outside a group without logits; the softmax of the logits,
else the trace's gate score, 0 outside the group), known only once the group is routed: the
kernel computes them as it routes the group and decides ``drop`` and ``fetch-priority`` from
them there (:func:`paging.fast.common.clock_group`); ``pruning``'s are computed before the run
(:func:`paging.fast.common.clock_static`). The prefetch plan is the trace's, batch g after
group g with the served group pinned, as in the reference.

Not compiled: user subclasses of a hook or of a policy, and FlashMoE with a prefetcher or a
miss handler (:func:`paging.fast.phases.unsupported` says why). Clairvoyant policies (Belady)
are refused with routing by both engines.

Quality proxies: without logits, a compiled loop sums them group by group in the reference's
order (:func:`_quality_sums`; the KL term over the experts in ascending id order, as
:func:`paging.routing.quality` iterates them). With logits (the weights a softmax), a group
served exactly as ranked (the same experts in the same order) adds ``(1.0, False, 0.0)`` (what
:func:`paging.routing.quality` returns then), every other group calls that function itself,
and the sums run sequentially in group order (``numpy.cumsum``), as the reference's ``+=``.

A serving step is routed by :mod:`paging.fast.step_routing` (every built-in hook, with the
tokens' gate scores, against the carried cache's residency).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from paging.fast.common import frozen, no_rule, route_group
from paging.fast.lists import list_kernel, list_state, no_logits, no_prior, no_route
from paging.fast.step_routing import _kl
from paging.trace import group_starts

__all__ = ["plan_routed", "run_routed", "route_static"]


@njit(cache=True, nogil=True)
def route_static(pages, bounds, order, j, cap, n, L, steps, applied):
    """The served sequence of a hook that does not read the cache (every M is 0: ``pruning``):
    each group routed by :func:`paging.fast.common.route_group`, K or ``cap`` served (K for a
    group the hook does not route, ``applied[g]`` False, when ``applied`` is not empty).
    Returns ``(served_pages, served_steps, n_served)``."""
    G = bounds.size - 1
    N = pages.size
    out_pages = np.empty(N, np.int64)
    out_steps = np.empty(N, np.int64)
    resident = np.zeros(n * L, np.bool_)
    rank = np.empty(n, np.int64)
    pos = np.empty(n, np.int64)
    taken = np.zeros(n, np.bool_)
    zz = np.empty(n)
    cp = (np.zeros((0, 0, 0)), np.zeros(0, np.int64), np.zeros(0), np.zeros(0))
    t0 = 0
    for g in range(G):
        lo = bounds[g]
        K = bounds[g + 1] - lo
        s = steps[lo]
        kout = K if cap <= 0 or (applied.size > 0 and not applied[g]) else min(cap, K)
        c = route_group(pages, lo, K, (s % L) * n, n, g, order, 0, j, kout, resident, rank,
                        taken, out_pages, t0, cp, zz, pos)
        for i in range(c):
            out_steps[t0 + i] = s
        t0 += c
    return out_pages, out_steps, t0


@njit(cache=True, nogil=True)
def _prior_bonus(bounds, steps, L, logits, token, known, rsum, rn, lam, applied, mean):
    """λ·Δavg of every group for ``cache-prior`` (:meth:`paging.routing.CachePrior.route`):
    the layer's running sums of the logit ranges (``rsum``, ``rn``, the hook's, updated in
    place), this group's range included, in group order. The range is max − min of the row
    ``logits[token[g], layer]``, or of the group's ``known`` log-scores without logits. A
    group the hook does not route (``applied[g]`` False, ``applied`` not empty) gets 0 and
    leaves the sums alone: it is served as ranked. With ``mean`` (``avg=logit``) the
    statistic is the mean of the same logits, summed in order, not their range."""
    G = bounds.size - 1
    out = np.empty(G)
    for g in range(G):
        if applied.size > 0 and not applied[g]:
            out[g] = 0.0
            continue
        lo = bounds[g]
        hi = bounds[g + 1]
        z = steps[lo] % L
        if logits.shape[0] > 0:
            row = logits[token[g], z]
        else:
            row = known[lo:hi]
        mx = row[0]
        mn = row[0]
        acc = row[0]
        for e in range(1, row.size):
            mx = max(mx, row[e])
            mn = min(mn, row[e])
            acc += row[e]
        rsum[z] += acc / row.size if mean else mx - mn
        rn[z] += 1
        out[g] = lam * (rsum[z] / rn[z])
    return out


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
def _quality_sums(pages, bounds, served, served_lo, w, n, L, steps):
    """The reference's running sums of :func:`paging.routing.quality` over every group, for a
    trace without logits (weights ``w`` per request: the gate scores, or 1/K):
    ``(Σ retained, Σ top1 changed, Σ KL)`` in group order (the KL sum over the experts in
    ascending id order, as the reference runs it: :func:`_kl`)."""
    G = bounds.size - 1
    wa = np.zeros(n)
    ina = np.zeros(n, np.bool_)
    inb = np.zeros(n, np.bool_)
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
        kls += _kl(wa, ina, inb, orig, kept, n)
    return ret, ch, kls


def plan_routed(trace, policy, router, budget=None, prefetch=None, miss=None):
    """The policy's ``(family, kind, dist)`` (:func:`paging.fast.plan`) when this routed run
    compiles (:func:`unrouted_why` says nothing against it), else None."""
    from paging.fast import plan

    if unrouted_why(trace, policy, router, budget, prefetch, miss) is not None:
        return None
    return plan(policy)


def unrouted_why(trace, policy, router, budget=None, prefetch=None, miss=None) -> str | None:
    """Why this routed run has no compiled kernel (one line), or None when it has one: a
    built-in hook with a policy of the list kernel, of the phase kernel
    (:mod:`paging.fast.phases`), of the token kernel or FlashMoE's; with a prefetcher or a
    miss handler, a configuration :func:`paging.fast.phases.unsupported` accepts (the served
    requests' ranks come from the routing: a trace without ranks is no obstacle)."""
    from paging.fast import _LEARNED, _TOKEN, phases, plan
    from paging.routing import CachePrior, Cumsum, MaxRank, Pruning

    if type(router) not in (Pruning, MaxRank, Cumsum, CachePrior):
        return (f"{type(router).__name__} is not a built-in hook (compiled routing covers "
                "pruning, max-rank, cumsum and cache-prior, not user subclasses)")
    spec = plan(policy)
    if prefetch is not None or miss is not None:
        return phases.unsupported(trace, policy, budget, prefetch, miss, routed=True)
    if spec is not None and spec[0] in (_TOKEN, _LEARNED):
        return None
    if spec is None or phases.unsupported(trace, policy, budget, None, None,
                                          routed=True) is not None:
        return (f"policy {policy.name} has no compiled kernel (the built-in online policies "
                "have, not user subclasses)")
    return None


def _bounds(steps) -> np.ndarray:
    """Every group's first request, then the trace's length."""
    return np.r_[group_starts(steps), steps.size].astype(np.int64)


def run_routed(trace, policy, router, spec, k, budget, costs, sizes, seed, level, prefetch=None,
               miss=None):
    """The routed run of ``simulate(trace, policy, k, routing=router, prefetch=...,
    miss=...)`` on the policy's kernel (``spec`` from :func:`plan_routed`); every field of the
    reference's Result, ``extra`` and, when recorded, ``events``, included. With a prefetcher
    or a miss handler (SpecMD's Algorithm 1: routing, miss handling, prefetching) it is
    :func:`_run_phased`."""
    from paging.errors import PagingError
    from paging.fast import _caps
    from paging.routing import CachePrior, Cumsum, Group, Pruning, RoutedRun, quality
    from paging.weights import unit_sizes

    RoutedRun.check(trace, router, policy)  # the reference's checks, and router.reset
    if policy.needs_scores and trace.score is None:  # and its Simulation's
        raise PagingError(f"{policy.name} reads gate scores and the trace has none")
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
        order = np.zeros((0, n), np.int64)  # no rows: each group's experts, then the rest

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
            w = _request_weights(trace, bounds)
            mcol = _cumsum_m(pages, bounds, w, float(router.tau), n, L, steps)
    elif type(router) is CachePrior:
        j, cap, mcol = router.j, 0, np.zeros(G, np.int64)
    else:
        j, cap = router.j, 0
        mcol = np.full(G, n if router.m is None else router.m, dtype=np.int64)
    skip = router.skips(trace)  # phase=decode: a prefill's groups are served as ranked
    applied = np.zeros(0, np.bool_) if skip is None else ~skip[starts]
    if applied.size:
        mcol[~applied] = 0  # (no cached expert promoted: the ranking's top K)
    cp = no_prior()
    if type(router) is CachePrior:
        cp = _prior(router, trace, bounds, steps, tok_of, G, L, applied)
    caps = _caps(lay, int(k if budget is None else budget), spec[2])
    slots = unit_sizes(P) if budget is None else sizes
    static = cap > 0 or not (mcol.any() or cp[3].size)
    if static:  # no choice reads the cache: route every group, then serve the sequence once
        sp, ss, N = route_static(pages, bounds, order, int(j), int(cap), n, L, steps, applied)
        sp, ss = sp[:N], ss[:N]
    else:  # each group routed in the kernel, against the cache as it stands, over sp
        sp, ss, N = pages.copy(), steps, pages.size
    served_lo = np.concatenate(([0], np.cumsum(_served_sizes(bounds, cap, applied))))
    served_lo = served_lo.astype(np.int64)
    route = (order, mcol, int(j), cp)
    if prefetch is not None or miss is not None:
        res = _run_phased(trace, policy, spec, k, budget, costs, sizes, seed, level, prefetch,
                          miss, sp, ss, static, route, bounds, served_lo, tok_of, z_of, caps,
                          slots)
    else:
        res = _run_served(trace, policy, spec, k, budget, costs, sizes, seed, level, sp, ss,
                          static, route, bounds, cap, applied, caps, slots, tok_of, z_of)
    changed = _changed(pages, bounds, sp, served_lo)
    if not has_order:
        w = _request_weights(trace, bounds)
        ret, ch, kls = _quality_sums(pages, bounds, sp, served_lo, w, n, L, steps)
        _finish(res, _extra(router, trace, G, float(ret), int(ch), float(kls)), sp, ss, N,
                level)
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
    _finish(res, _extra(router, trace, G, float(np.cumsum(retained)[-1]) if G else 0.0,
                        n_changed, float(np.cumsum(kl)[-1]) if G else 0.0), sp, ss, N, level)
    return res


def _run_served(trace, policy, spec, k, budget, costs, sizes, seed, level, sp, ss, static,
                route, bounds, cap, applied, caps, slots, tok_of, z_of):
    """A routed run without a prefetcher or a miss handler on the policy's kernel (the list
    kernel, the token kernel, FlashMoE's or the phase kernel), over the served sequence
    ``sp`` (routed in the kernel unless ``static``): the Result without the routing's
    fields."""
    from paging.fast import _LEARNED, _LIST, _TOKEN
    from paging.result import build_result
    from paging.trace import Trace

    lay = trace.layout
    n, L, P = lay.n_experts, lay.n_layers, lay.n_pages
    N = sp.size
    order, mcol, j, cp = route
    if spec[0] == _LIST:
        state = list_state(P, L, caps.size)
        # read-only but for the pages a routing kernel writes (common.frozen)
        misses, coll, _, hit_mask, ev, n_ev, byp, n_byp = list_kernel(
            frozen(sp) if static else sp, frozen(ss), frozen(slots), n, L, caps, spec[2],
            spec[1], level, state,
            no_route() if static else (order, mcol, j, sp, cp))
        page_miss = state[10]
    elif spec[0] in (_TOKEN, _LEARNED):
        capacity = int(k if budget is None else budget)
        if spec[0] == _TOKEN:
            from paging.fast.tokens import execute
        else:  # FlashMoE is told the routed trace's length, as the reference's policy is
            from paging.fast.learned import execute as run_learned

            def execute(tr, *args, **kw):
                return run_learned(tr, *args, n_requests=trace.n_requests, **kw)
        if static:  # the served sequence as a trace: its tokens, one visit per token
            served = Trace(lay, sp, ss, trace.name, expand="groups",
                           token=np.repeat(tok_of, _served_sizes(bounds, cap, applied)))
            out = execute(served, spec, slots, capacity, level, policy)
        else:  # (the token kernel's route has a handler's rule: none here)
            out = execute(trace, spec, slots, capacity, level, policy,
                          route=route + ((no_rule(),) if spec[0] == _TOKEN else ()), served=sp)
        _, coll, page_miss, hit_mask, ev, n_ev, byp, n_byp = out
    else:
        (_, coll, page_miss, hit_mask, ev, n_ev, byp, n_byp, *_) = _phase_routed(
            trace, policy, spec, sp, ss, static, route, bounds,
            _served_sizes(bounds, cap, applied), caps, slots, budget, costs, sizes, seed, level,
            tok_of, z_of)
    return build_result(
        policy=policy.name, k=k, budget=budget, trace=trace.name, requests=int(N),
        page_misses=page_miss, n_layers=L, collisions=int(coll), bypasses=int(n_byp),
        seed=seed, dist=spec[2], costs=costs, sizes=sizes,
        hit_mask=hit_mask[:N].copy() if level else None,
        evictions=ev[:n_ev].copy() if level > 1 else None,
        bypassed=byp[:n_byp].copy() if level > 1 else None)


def _finish(res, extra, sp, ss, N, level) -> None:
    """Add the routing fields to ``res.extra`` and, when recorded, the served sequence to
    ``res.events``, after the handler's and the prefetcher's, as
    :meth:`paging.routing.RoutedRun.finish` does."""
    res.extra = dict(res.extra or {}, **extra)
    if level > 0:
        res.events = dict(res.events or {}, served_pages=sp[:N].copy(),
                          served_steps=ss[:N].copy())


def _run_phased(trace, policy, spec, k, budget, costs, sizes, seed, level, prefetch, miss, sp,
                ss, static, route, bounds, served_lo, tok_of, z_of, caps, slots):
    """A routed run with a prefetcher and/or a miss handler (SpecMD's Algorithm 1, as
    :func:`paging.simulate._run` runs it: each group routed, its misses handled, then the
    batch of the prefetch plan inserted with the served group pinned), in the policy's phase
    kernel (:func:`paging.fast.phases.phase_kernel`, or the token kernel), over the served
    sequence ``sp`` (routed in the kernel unless ``static``). Returns the Result with the
    handler's and the prefetcher's counters (not yet the routing's fields).

    The prefetch plan is the trace's (:meth:`Prefetcher.plan`, made before the run as the
    reference's ``reset`` makes it; batch g follows group g, whatever was served). The
    handler reads the served request's routed rank and router weight
    (:func:`paging.fast.common.clock_group`: a routed group's ranks and weights are known only
    once it is routed, so the kernel decides ``drop`` and ``fetch-priority`` from them as it
    routes the group; before the run for ``pruning``, whose served sequence does not depend on
    the cache); its counters read the same ranks and weights after the run."""
    from types import SimpleNamespace

    from paging.fast import _TOKEN, phases
    from paging.fast.common import clock_static
    from paging.trace import Trace

    lay = trace.layout
    n, L = lay.n_experts, lay.n_layers
    N = sp.size
    pf_start, pf_pages, pf_size = phases.prefetch_arrays(trace, prefetch, seed, sizes)
    substitute, level_slots = phases.handler_room(trace, miss)
    # sized for the served requests; their values are the rule's (clock_group)
    act, lvl = phases.miss_actions(miss, N, None, None)
    code, rcut, scut, cuts = phases.handler_rule(miss)
    has_score = trace.score is not None
    order = route[0]
    prob = (_served_probs(trace, bounds, tok_of, z_of) if has_score and order.shape[0] > 0
            else np.zeros((0, 0)))
    tscore = np.asarray(trace.score, dtype=np.float64) if has_score else np.zeros(0)
    srank = np.zeros(N, np.int64)
    sscore = np.zeros(N if has_score else 0)
    rule = (code, rcut, scut, cuts, tscore, prob, srank, sscore)
    pages = np.asarray(trace.pages, dtype=np.int64)
    steps = np.asarray(trace.steps, dtype=np.int64)
    if static:  # the ranks, weights and decisions of the whole served sequence, first
        clock_static(pages, bounds, order, sp, served_lo, n, L, steps, rule, act, lvl)
    token_phases = (pf_start, pf_pages, np.array(pf_size, dtype=np.int64), act, lvl,
                    level_slots, substitute)
    capacity = int(k if budget is None else budget)
    if spec[0] == _TOKEN:
        from paging.fast.tokens import execute

        if static:  # the served sequence as a trace: its tokens, one visit per token
            served = Trace(lay, sp, ss, trace.name, expand="groups",
                           token=np.repeat(tok_of, np.diff(served_lo)))
            out = execute(served, spec, slots, capacity, level, policy, phases=token_phases)
        else:
            out = execute(trace, spec, slots, capacity, level, policy, route=(*route, rule),
                          served=sp, phases=token_phases)
    else:
        out = _phase_routed(trace, policy, spec, sp, ss, static, route, bounds,
                            np.diff(served_lo), caps, slots, budget, costs, sizes, seed, level,
                            tok_of, z_of, (prefetch is not None, pf_start, pf_pages, pf_size,
                                           act, lvl, substitute, level_slots, rule,
                                           prob if prob.shape[0] else None))
    served = SimpleNamespace(layout=lay, pages=sp, steps=ss, rank=srank,
                             score=sscore if has_score else None, n_requests=N)
    return phases.phase_result(out, served, trace.name, policy, k, budget, costs, sizes, seed,
                               spec[2], level, prefetch, miss, lvl)


def _phase_routed(trace, policy, spec, sp, ss, static, route, bounds, served_sizes, caps,
                  slots, budget, costs, sizes, seed, level, tok_of, z_of, phased=None):
    """A routed run of a policy of the phase kernel (:func:`paging.fast.phases.phase_kernel`)
    over the served sequence ``sp`` (``served_sizes`` requests per group): routed in the
    kernel (``route``) unless ``static``. ``phased``: ``(prefetching, pf_start, pf_pages,
    pf_size, act, lvl, substitute, level_slots, rule, prob)`` of a run with a prefetcher or a
    miss handler (:func:`_run_phased`; ``prob``: the groups' router weights when made
    already), None for neither. Returns the kernel's tuple."""
    from paging.fast import phases
    from paging.weights import unit_costs, unit_sizes

    lay = trace.layout
    n, L, P = lay.n_experts, lay.n_layers, lay.n_pages
    if phased is None:
        none = np.zeros(0, np.int64)
        phased = (False, none, none, unit_sizes(P), np.zeros(0, np.int8), none, False,
                  np.zeros((1, P), np.int64), no_rule(), None)
    prefetching, pf_start, pf_pages, pf_size, act, lvl, substitute, level_slots, rule, prob = (
        phased)
    kind, scan = phases.run_kind(policy, spec, prefetching)
    inputs = list(phases.policy_inputs(trace, policy, spec, kind, caps, slots, budget, seed,
                                       sp.size + pf_pages.size))
    gprob = _score_inputs(kind, inputs, trace, bounds, served_sizes, sp, tok_of, z_of, static,
                          prob)
    out = phases.phase_kernel(
        # the pages writable (routed over), the rest read-only as run_phases passes them
        sp, frozen(ss), frozen(slots), level_slots, n, L, caps, spec[2], kind, level,
        pf_start, pf_pages, pf_size, act, lvl, substitute, scan,
        unit_costs(P) if costs is None else costs, unit_sizes(P) if sizes is None else sizes,
        *inputs, phases.no_route() if static else (*route, gprob, rule))
    phases.leave_state(policy, kind, spec[2], inputs[-2])
    return out


def _score_inputs(kind, inputs, trace, bounds, sizes, sp, tok_of, z_of, static, prob=None):
    """Score-Based's gate scores in a routed run of the phase kernel, as
    :class:`paging.routing.RoutedRun` writes them for the served requests: every group's row
    of router weights (:func:`_served_probs`), which the kernel writes over ``gscore`` as it
    routes each group, returned; with a ``static`` served sequence (``sizes`` requests per
    group) the served requests' weights written into ``inputs[4]`` (the kernel's ``gscore``)
    now, and no rows returned. Any other kind: no rows. ``prob``: those rows when the caller
    has them already."""
    from paging.fast import phases

    if kind != phases.SCORE_SCAN:
        return np.zeros((0, 0))
    if prob is None:
        prob = _served_probs(trace, bounds, tok_of, z_of)
    if not static:
        return prob
    n = trace.layout.n_experts
    g_of = np.repeat(np.arange(bounds.size - 1), sizes)
    inputs[4] = prob[g_of, sp - z_of[g_of] * n] if sp.size else np.zeros(0)
    return np.zeros((0, 0))


def _served_probs(trace, bounds, tok_of, z_of):
    """Row g: the router weight of every expert of group g's layer (:meth:`Group.probs`, 0 for
    an unknown one): the softmax of the group's logits, else its gate scores."""
    n = trace.layout.n_experts
    G = bounds.size - 1
    if trace.logits is not None:
        rows = trace.logits[tok_of, z_of]
        w = np.exp(rows - rows.max(axis=1, keepdims=True))
        w /= w.sum(axis=1, keepdims=True)
        return w.astype(np.float64)
    prob = np.zeros((G, n))
    g_of = np.repeat(np.arange(G), np.diff(bounds))
    prob[g_of, np.asarray(trace.pages, dtype=np.int64) - z_of[g_of] * n] = trace.score
    return prob


def _request_weights(trace, bounds):
    """Each request's router weight without full logits (:meth:`paging.routing.Group.probs`):
    its gate score, else 1/K of its group (the same double as Python's ``1.0 / K``)."""
    if trace.score is not None:
        return np.asarray(trace.score, dtype=np.float64)
    K = np.diff(bounds)
    return np.repeat(1.0 / K, K) if K.size else np.zeros(0)


def _prior(router, trace, bounds, steps, tok_of, G, L, applied):
    """``cache-prior``'s ``cp`` argument of :func:`paging.fast.common.route_group`, its λ·Δavg
    per group from the hook's running sums, which are left as the reference leaves them."""
    if trace.logits is not None:
        logits, known = trace.logits, np.zeros(0)
    else:
        logits = no_logits()  # read-only, as a trace's logits: one compiled signature
        # CachePrior.logits_of, every group at once
        known = np.log(np.maximum(_request_weights(trace, bounds), 1e-300))
    rsum = np.array(router._range_sum, dtype=np.float64)
    rn = np.array(router._range_n, dtype=np.int64)
    bonus = _prior_bonus(bounds, steps, L, logits, tok_of, known, rsum, rn,
                         float(router.lam), applied, router.avg == "logit")
    router._range_sum = rsum.tolist()
    router._range_n = rn.tolist()
    return (logits, tok_of, known, bonus if G else np.zeros(0))


def _extra(router, trace, G, retained, changed, kl):
    return {
        "routing": router.spec(),
        "routing_note": router.note,
        "retained_mass": retained / G if G else 1.0,
        "top1_changed": changed / G if G else 0.0,
        "kl": kl / G if G else 0.0,
        "slots": trace.n_requests,
    }


def _changed(pages, bounds, served, served_lo):
    """Per group: not served exactly as ranked (other experts, another order, or fewer)."""
    G = bounds.size - 1
    if G == 0:
        return np.zeros(0, bool)
    K = np.diff(bounds)
    c = np.diff(served_lo)
    out = c != K
    full = np.flatnonzero(~out)
    if full.size:
        # the groups served whole: same slots in both sequences, shifted by served_lo - bounds
        idx = np.repeat(full, K[full])
        pos = np.arange(idx.size) - np.repeat(np.cumsum(K[full]) - K[full], K[full])
        diff = pages[bounds[idx] + pos] != served[served_lo[idx] + pos]
        out[full] = np.logical_or.reduceat(diff, np.cumsum(K[full]) - K[full])
    return out


def _served_sizes(bounds, cap, applied):
    """Requests served per group: K, or at most ``cap`` where the hook routes the group."""
    K = np.diff(bounds)
    if cap <= 0:
        return K
    return np.minimum(K, cap) if applied.size == 0 else np.where(applied, np.minimum(K, cap), K)
