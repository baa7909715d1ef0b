"""The offline optimum with routing flexibility: the fewest misses over every routing choice and
every eviction schedule.

Cache-aware routing (Cache-Conditional Experts, Sec. 3, Alg. 1 "Max Rank": keep the top-J experts
of the router's ranking, fill the other K - J slots with cached experts of rank < M) changes the
request sequence itself, so Belady's count on the original sequence is no longer a lower bound:
the paper's Fig. 8 reports Cache-Prior *below* Belady. The matching offline quantity is

    OPT_flex(σ, k) = min over routings ρ allowed by σ of OPT(ρ, k),

and this module computes it (exactly on small instances), bounds it from below (LP relaxation)
and from above (a fast feasible routing, scored by Belady's exact count for that routing).

The allowed routings
--------------------
For every (token, layer) *group* g of the trace, with the router's original top-K list
``original_g`` in rank order (rank 0 = highest gate score):

* ``must_g``: the experts of rank < J, always served;
* ``allowed_g``: the candidates for the other ``free_g = K_g - |must_g|`` slots: the original
  experts of rank >= J, plus every expert of the layer whose router rank is < M. The router rank
  beyond K is known only from full logits (``trace.logits[token, layer]``, shape (T, ℓ, n)); a
  trace with only its top-K lists (the Mixtral logs) has no ranks beyond K, so there ``m`` may not
  exceed K and, when ``m`` is omitted, *any* expert of the layer is allowed (the reading of the
  routing hooks on top-K-only traces). With logits, ``m`` defaults to n (every expert).

The original routing is always allowed, hence ``OPT_flex <= Belady(σ)``; every online routing
policy that keeps the top J and picks the rest among ranks < M (Max-Rank, Cumsum with its dynamic
M <= n, Cache-Prior with a top-J guarantee) serves an allowed routing, hence
``OPT_flex <= misses(policy)`` for any eviction policy. The routed sequences are simulated in
groups mode (the K experts of a group pinned together, :mod:`paging.trace`), so a trace is
regrouped by (token, layer) whatever its expansion; k must hold a whole group (k >= K).

The integer program (exact)
---------------------------
A page p has *potential uses* at the groups where it is in ``must_g`` or ``allowed_g``, say
t_1 < t_2 < ... (all in p's layer). Binary variables per use i: ``c_i`` (p is in the cache during
group t_i), ``h_i`` (p is kept in the cache over the gap t_i < g < t_{i+1}; none after the last
use), and for an allowed use ``u_i`` (p is chosen for a free slot of t_i). Then

    minimise    sum_i (c_i - h_{i-1})            (a load whenever p is in the cache at t_i
                                                   without having been kept over the gap; h_0 = 0)
    subject to  h_{i-1} <= c_i,  h_i <= c_i,      u_i <= c_i,   c_i = 1 for a must use,
                sum_{allowed p of g} u = free_g                                for every group g,
                sum_{uses at g} c + sum_{gaps spanning g} h <= k               for every group g.

Every demand-paging run of an allowed routing gives a feasible point with the run's miss count
(c = resident during the use, h = resident through the gap); conversely a feasible point is a
schedule with that many loads, and making it lazy (loading only when serving) does not add loads,
so the optimum is OPT_flex. As in :mod:`paging.offline.ilp` the span sums are chained through one
occupancy variable per group, so the model has O(potential uses) non-zeros. Unlike the plain
interval program its matrix is not totally unimodular (the choice rows), so CBC branches; the LP
relaxation is the lower bound ``method="lp"``. Sizes: potential uses = sum_g (|must_g| +
|allowed_g|); with any expert allowed that is G·n (8 per group on Mixtral), so the exact program is
for instances of a few hundred groups.

The upper bound (fast)
----------------------
A forward greedy routing: at group g take the allowed experts already cached first, then those
whose next use is soonest (next *must* use in the first pass; next use in the previous pass's
routing in the following passes), evicting by the same next-use key; each pass's routing is then
scored by Belady's exact count for that routing (:func:`paging.simulate.simulate`, groups mode,
which is optimal for a fixed sequence), and the best of the passes and of the original routing
is the bound. Cost: O(G·K log k) per pass plus one Belady run.

:func:`flex_exhaustive` enumerates every routing and runs Belady on each: the independent check
of the program on tiny instances (the tests).
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass, field
from math import comb

import numpy as np

from paging.errors import PagingError, check_k
from paging.layout import Layout
from paging.offline.ilp import solve_cbc, variable_factory
from paging.options import no_more, parse_spec, take_int
from paging.trace import Trace

METHODS = ("auto", "ilp", "lp", "upper")


@dataclass(frozen=True)
class FlexSpec:
    """``j=J[,m=M]``: keep the top ``j`` experts; the other slots may take any expert of rank
    < ``m`` (None: every expert of the layer) or an original one."""

    j: int
    m: int | None = None

    def __str__(self) -> str:
        return f"j={self.j}" + ("" if self.m is None else f",m={self.m}")


def parse_flex(text: str) -> FlexSpec:
    """Parse ``--routing-flex j=J[,m=M]`` (J >= 0, M >= 1; checked against the trace later)."""
    what = f"--routing-flex {text!r}"
    _, opts = parse_spec(f"flex:{text}", what)
    if "j" not in opts:
        raise PagingError(f"{what}: needs j=J (the number of top-ranked experts always kept)")
    j = take_int(opts, "j", None, what, lo=0)
    m = take_int(opts, "m", None, what, lo=1)
    no_more(opts, what, "j=J[,m=M]")
    return FlexSpec(j, m)


@dataclass(frozen=True, eq=False)
class FlexInstance:
    """The allowed routings of a trace: per group g (in (token, layer) order) its layer, the pages
    that must be served, the candidate pages for its ``free[g]`` other slots (disjoint from
    ``must[g]``, in preference order: original rank, then router rank, then expert id) and the
    original top-K pages in rank order."""

    layout: Layout
    name: str
    layer: np.ndarray
    token: np.ndarray
    must: list[tuple[int, ...]]
    allowed: list[tuple[int, ...]]
    free: np.ndarray
    original: list[tuple[int, ...]]
    spec: FlexSpec

    @property
    def n_groups(self) -> int:
        return len(self.must)

    @property
    def group_size(self) -> int:
        """The largest group (K)."""
        return max((len(o) for o in self.original), default=0)

    @property
    def n_routings(self) -> int:
        """How many routings are allowed (the product of the per-group choices)."""
        out = 1
        for a, f in zip(self.allowed, self.free.tolist(), strict=True):
            out *= comb(len(a), f)
        return out

    def original_choice(self) -> list[tuple[int, ...]]:
        """The free-slot choice of the original routing (the original experts of rank >= J)."""
        return [tuple(p for p in o if p not in set(m)) for o, m in
                zip(self.original, self.must, strict=True)]

    def check_choice(self, choice: list[tuple[int, ...]]) -> None:
        """Raise if ``choice`` is not an allowed routing."""
        if len(choice) != self.n_groups:
            raise PagingError(f"a routing needs {self.n_groups} groups, got {len(choice)}")
        for g, (c, a, f) in enumerate(zip(choice, self.allowed, self.free.tolist(),
                                          strict=True)):
            if len(set(c)) != f or len(c) != f or not set(c) <= set(a):
                raise PagingError(f"group {g}: {c} is not {f} distinct pages of {a}")

    def routed(self, choice: list[tuple[int, ...]], name: str | None = None) -> Trace:
        """The groups-mode trace served under ``choice`` (group g requests ``must[g]`` then
        ``choice[g]``)."""
        self.check_choice(choice)
        pages, steps, token = [], [], []
        for g, (m, c) in enumerate(zip(self.must, choice, strict=True)):
            grp = list(m) + list(c)
            pages += grp
            steps += [g] * len(grp)
            token += [int(self.token[g])] * len(grp)
        return Trace(self.layout, np.array(pages, dtype=np.int64),
                     np.array(steps, dtype=np.int64), name or self.name,
                     token=np.array(token, dtype=np.int64), expand="groups",
                     meta={"top_k": self.group_size})


def flex_instance(trace: Trace, spec: FlexSpec | str) -> FlexInstance:
    """The allowed routings of ``trace`` under ``spec`` (see the module docstring).

    Needs router scores: gate scores or logits, with the token and the rank of every request
    (routing logs and the ``router:`` generator have them); a trace of bare page ids, or a
    synthetic top-K without scores, has no ranking to deviate from.
    """
    if isinstance(spec, str):
        spec = parse_flex(spec)
    if trace.token is None or trace.rank is None or (
            trace.score is None and getattr(trace, "logits", None) is None):
        raise PagingError(f"trace {trace.name}: --routing-flex needs router scores (gate scores "
                          "or logits with the token and rank of every request, as routing logs "
                          "and the router: generator give); this trace has none")
    lay = trace.layout
    n = lay.n_experts
    logits = getattr(trace, "logits", None)
    layers = trace.layers
    order = np.lexsort((trace.rank, layers, trace.token))
    tok, lyr = trace.token[order], layers[order]
    pages = trace.pages[order]
    cut = np.flatnonzero((np.diff(tok) != 0) | (np.diff(lyr) != 0)) + 1
    starts = np.concatenate(([0], cut)).astype(np.int64)
    ends = np.concatenate((cut, [len(order)])).astype(np.int64)
    K = int((ends - starts).max()) if len(starts) and len(order) else 0
    if spec.j > K:
        raise PagingError(f"--routing-flex {spec}: j must be <= K = {K} (the experts per token "
                          f"and layer in {trace.name})")
    if spec.m is not None and spec.m > n:
        raise PagingError(f"--routing-flex {spec}: m must be <= {n} (the experts per layer)")
    if logits is None and spec.m is not None and spec.m > K:
        raise PagingError(f"--routing-flex {spec}: {trace.name} carries only its top-{K} "
                          f"ranking (no router logits), so ranks >= {K} are unknown; give m <= "
                          f"{K}, or omit m to allow any expert of the layer")
    must, allowed, original, free = [], [], [], []
    g_layer, g_token = [], []
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        z, t = int(lyr[s]), int(tok[s])
        orig = tuple(int(p) for p in pages[s:e])
        mst = orig[:spec.j]
        rest = list(orig[spec.j:])
        if logits is not None:
            m = n if spec.m is None else spec.m
            ranked = np.argsort(-np.asarray(logits[t, z], dtype=np.float64), kind="stable")
            extra = [z * n + int(x) for x in ranked[:m]]
        elif spec.m is None:
            extra = [z * n + x for x in range(n)]
        else:
            extra = []  # ranks < m <= K: already the original experts
        seen = set(mst)
        cand = []
        for p in rest + extra:
            if p not in seen:
                seen.add(p)
                cand.append(p)
        must.append(mst)
        allowed.append(tuple(cand))
        original.append(orig)
        free.append(len(orig) - len(mst))
        g_layer.append(z)
        g_token.append(t)
    return FlexInstance(lay, trace.name, np.array(g_layer, dtype=np.int64),
                        np.array(g_token, dtype=np.int64), must, allowed,
                        np.array(free, dtype=np.int64), original, spec)


def belady_misses(inst: FlexInstance, choice: list[tuple[int, ...]], k: int) -> int:
    """Belady's count (optimal for a fixed sequence) of the routing ``choice``."""
    from paging.simulate import simulate

    return simulate(inst.routed(choice), "belady", k).misses


@dataclass
class FlexResult:
    """``misses`` is the optimum when ``exact``, else the best known feasible count (``upper``);
    ``lower`` is a proven lower bound (the LP relaxation, or the optimum itself); ``belady`` is
    the original routing's optimum, ``choice`` the routing that reaches ``misses`` (None for
    ``method="lp"``)."""

    misses: int | None
    method: str
    exact: bool
    lower: float | None
    upper: int | None
    belady: int
    groups: int
    requests: int
    choice: list[tuple[int, ...]] | None = field(default=None, repr=False)


# --- the integer program --------------------------------------------------------------------

def _uses(inst: FlexInstance) -> dict[int, list[tuple[int, bool]]]:
    """Potential uses per page: sorted (group, is_must) pairs."""
    uses: dict[int, list[tuple[int, bool]]] = {}
    for g, (m, a) in enumerate(zip(inst.must, inst.allowed, strict=True)):
        for p in m:
            uses.setdefault(p, []).append((g, True))
        for p in a:
            uses.setdefault(p, []).append((g, False))
    return uses


def flex_program(inst: FlexInstance, k: int, *, relax: bool = False,
                 time_limit: float = 60, progress: bool | None = False
                 ) -> tuple[float, list[tuple[int, ...]] | None]:
    """Solve the program of the module docstring: (optimum, routing) for ``relax=False``, (LP
    bound, None) for ``relax=True``. ``progress``: :func:`solve_cbc`'s elapsed-time bar."""
    import pulp

    k = _check_k(inst, k)
    cat = pulp.LpContinuous if relax else pulp.LpBinary
    prob = pulp.LpProblem("routing_flex_opt", pulp.LpMinimize)
    new_var = variable_factory(pulp, prob)
    G = inst.n_groups
    at_group: list[list] = [[] for _ in range(G)]      # c variables (or 1) of the uses at g
    choose: list[list] = [[] for _ in range(G)]        # (page, u) of the allowed uses at g
    entering: list[list] = [[] for _ in range(G + 1)]  # gap variables entering at g
    leaving: list[list] = [[] for _ in range(G + 1)]
    objective = []
    fixed_loads = 0
    for p, uses in sorted(_uses(inst).items()):
        prev_h = None
        for i, (g, is_must) in enumerate(uses):
            if is_must:
                c = 1
            else:
                c = new_var(f"c_{p}_{g}", lowBound=0, upBound=1, cat=cat)
                u = new_var(f"u_{p}_{g}", lowBound=0, upBound=1, cat=cat)
                prob += (u <= c, f"serve_{p}_{g}")
                choose[g].append((p, u))
            at_group[g].append(c)
            # loads: c_i - h_{i-1}
            if prev_h is None:
                if is_must:
                    fixed_loads += 1
                else:
                    objective.append(c)
            else:
                prob += (prev_h <= c, f"kept_{p}_{g}")
                objective.append((1 if is_must else c) - prev_h)
            if i + 1 < len(uses):
                nxt = uses[i + 1][0]
                h = new_var(f"h_{p}_{g}", lowBound=0, upBound=1, cat=cat)
                if not is_must:
                    prob += (h <= c, f"hold_{p}_{g}")
                if nxt > g + 1:
                    entering[g + 1].append(h)
                    leaving[nxt].append(h)
                prev_h = h
    for g in range(G):
        if len(choose[g]) < inst.free[g]:
            raise PagingError(f"group {g} has {len(choose[g])} candidates for {inst.free[g]} "
                              "slots")  # cannot happen: the original experts are candidates
        if inst.free[g]:
            prob += (pulp.lpSum(u for _, u in choose[g]) == int(inst.free[g]), f"choose_{g}")
    occ = None
    for g in range(G):
        if entering[g] or leaving[g]:
            new = new_var(f"occ_{g}", lowBound=0)
            expr = pulp.lpSum(entering[g]) - pulp.lpSum(leaving[g])
            prob += (new == (expr if occ is None else expr + occ), f"flow_{g}")
            occ = new
        fixed = sum(1 for c in at_group[g] if isinstance(c, int))
        var = [c for c in at_group[g] if not isinstance(c, int)]
        if occ is not None or var:
            prob += (pulp.lpSum(var) + (occ if occ is not None else 0) <= k - fixed,
                     f"cap_{g}")
    prob += pulp.lpSum(objective) + fixed_loads
    if not objective:
        return float(fixed_loads), (None if relax else inst.original_choice())
    solve_cbc(pulp, prob, mip=not relax, time_limit=time_limit,
              hint="raise --time-limit, or use --method lp or upper on large traces",
              progress=progress)
    value = float(pulp.value(prob.objective))
    if relax:
        return value, None
    choice = []
    for g in range(G):
        picked = [p for p, u in choose[g] if (u.varValue or 0.0) > 0.5]
        choice.append(tuple(picked))
    return value, choice


# --- the fast upper bound -------------------------------------------------------------------

def _next_after(times: list[int], g: int, end: int) -> int:
    i = bisect.bisect_right(times, g)
    return times[i] if i < len(times) else end


def _greedy(inst: FlexInstance, k: int, future: dict[int, list[int]]) -> list[tuple[int, ...]]:
    """One forward pass: the free slots take cached candidates first, then the candidates whose
    next use (per ``future``: page -> sorted groups where it will be served) is soonest; a miss
    evicts the unpinned page whose next use is furthest."""
    G = inst.n_groups
    cache: set[int] = set()
    choice = []
    for g in range(G):
        f = int(inst.free[g])
        cand = inst.allowed[g]
        pref = {p: i for i, p in enumerate(cand)}
        picked = sorted(cand, key=lambda p: (p not in cache,
                                             _next_after(future.get(p, []), g, G), pref[p]))[:f]
        choice.append(tuple(picked))
        group = list(inst.must[g]) + picked
        pinned = set(group)
        for p in group:
            if p in cache:
                continue
            if len(cache) >= k:
                victim = max((q for q in cache if q not in pinned),
                             key=lambda q: (_next_after(future.get(q, []), g, G), q))
                cache.discard(victim)
            cache.add(p)
    return choice


def _served_groups(inst: FlexInstance, choice) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for g, (m, c) in enumerate(zip(inst.must, choice, strict=True)):
        for p in list(m) + list(c):
            out.setdefault(p, []).append(g)
    return out


def flex_upper(inst: FlexInstance, k: int, *, passes: int = 4) -> tuple[int, list]:
    """A feasible routing and its Belady count (see the module docstring): never above the
    original routing's Belady count."""
    k = _check_k(inst, k)
    best_choice = inst.original_choice()
    best = belady_misses(inst, best_choice, k)
    future = {p: [g for g, is_must in u if is_must] for p, u in _uses(inst).items()}
    for _ in range(passes):
        choice = _greedy(inst, k, future)
        misses = belady_misses(inst, choice, k)
        if misses < best:
            best, best_choice = misses, choice
        new_future = _served_groups(inst, choice)
        if new_future == future:
            break
        future = new_future
    return best, best_choice


def flex_exhaustive(inst: FlexInstance, k: int, *, limit: int = 100_000) -> int:
    """The optimum by enumerating every allowed routing (Belady on each): tiny instances only."""
    k = _check_k(inst, k)
    if inst.n_routings > limit:
        raise PagingError(f"{inst.n_routings} routings to enumerate, more than limit={limit}")
    per_group = [list(itertools.combinations(a, int(f)))
                 for a, f in zip(inst.allowed, inst.free, strict=True)]
    return min(belady_misses(inst, list(c), k) for c in itertools.product(*per_group))


def _check_k(inst: FlexInstance, k: int) -> int:
    k = check_k(k, inst.layout.n_pages)
    if k < inst.group_size:
        raise PagingError(f"k={k} cannot hold a group of {inst.group_size} experts; routing "
                          f"flexibility is defined for k >= K = {inst.group_size}")
    return k


def opt_routing_flex(trace: Trace, k: int, spec: FlexSpec | str, *, method: str = "auto",
                     time_limit: float = 60, auto_limit: int = 20_000,
                     lp_bound: bool | None = None, progress: bool | None = False) -> FlexResult:
    """The fewest misses of ``trace`` with a cache of ``k`` pages when the router may deviate as
    ``spec`` allows (see the module docstring).

    ``method``: ``"ilp"`` (exact, CBC), ``"lp"`` (the LP lower bound only), ``"upper"`` (the fast
    feasible routing only), ``"auto"`` (default: the exact program when the instance has at most
    ``auto_limit`` potential uses, else the upper bound). With ``"upper"`` (and ``"auto"`` falling
    back to it) the LP lower bound is added when ``lp_bound`` is True, or, by default, when the
    instance has at most 5·``auto_limit`` potential uses (it takes seconds there, the upper
    bound well under one); ``exact`` is then True when the two meet. ``progress``: CBC's
    elapsed-time bar (:func:`paging.offline.ilp.solve_cbc`; None: when stderr is a terminal).

    Examples
    --------
    Two layers of two experts, top-1 (K = 1) and j = 0: every token may take either expert. The
    original routing alternates, so Belady with k = 2 misses on each of its 4 pages, while
    routing every token to expert 0 needs only the 2 compulsory misses.

    >>> from paging.layout import Layout
    >>> from paging.trace import from_routing
    >>> t = from_routing([[[0], [0]], [[1], [1]], [[0], [1]]], Layout(2, 2), "groups",
    ...                  scores=[[[1.0], [1.0]]] * 3)
    >>> r = opt_routing_flex(t, 2, "j=0")
    >>> (r.belady, r.misses, r.method)
    (4, 2, 'ilp')
    """
    if method not in METHODS:
        raise PagingError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    inst = flex_instance(trace, spec)
    k = _check_k(inst, k)
    belady = belady_misses(inst, inst.original_choice(), k)
    G, N = inst.n_groups, int(sum(len(o) for o in inst.original))
    size = sum(len(m) + len(a) for m, a in zip(inst.must, inst.allowed, strict=True))
    if method == "auto":
        method = "ilp" if size <= auto_limit else "upper"
    if method == "ilp":
        value, choice = flex_program(inst, k, time_limit=time_limit, progress=progress)
        misses = int(round(value))
        return FlexResult(misses, "ilp", True, float(misses), misses, belady, G, N, choice)
    if method == "lp":
        value, _ = flex_program(inst, k, relax=True, time_limit=time_limit, progress=progress)
        return FlexResult(None, "lp", False, value, None, belady, G, N)
    upper, choice = flex_upper(inst, k)
    lower = None
    if lp_bound or (lp_bound is None and size <= 5 * auto_limit):
        lower, _ = flex_program(inst, k, relax=True, time_limit=time_limit,
                                progress=progress)
    exact = lower is not None and np.ceil(lower - 1e-6) >= upper
    return FlexResult(upper, "upper", bool(exact), lower, upper, belady, G, N, choice)
