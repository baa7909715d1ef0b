"""ZipMoE's cache-affinity scheduler (Yang et al., Sec. 3.3, App. A Algorithm 1, App. B Theorem
B.7 = Theorem 3.1, App. C Algorithm 3), simulated exactly, and an exact optimum for small cases.

The machine model, as this module reads Sec. 3.3 and App. B:

* one sparse layer selects some experts; expert n has a *state* (Def. B.2): ``"M"`` (missed:
  neither chunk cached), ``"C"`` (compressed: E- and SM-chunks cached), ``"S"`` (SM-chunks
  cached, E-chunks not) or ``"E"`` (E-chunks cached, SM-chunks not), and a GPU time ``p_n``.
  Full-tensor (F-pool) hits need no reconstruction and are left out;
* an expert has ``tensors`` tensors; each is one *task* j (Sec. 3.2) with K E-chunk
  decompressions of time ``c`` each; an uncached E-chunk is read first (time ``ρu/K``), an
  uncached SM-chunk is read in one piece (time ``u``);
* resources: one I/O thread (all reads, one at a time), ``L`` decompression threads, one GPU
  stream that runs expert n for ``p_n`` once all its tasks' decompressions and SM reads are done.
  Tensor recovery is taken to cost 0 (the paper folds it into the GPU stream and Lemma B.3 has
  no term for it);
* the makespan is the end of the last GPU execution (Sec. 3.3: "the completion time of the last
  expert execution").

Execution of a block list (App. A: "the compute workers and the I/O thread fetch the first
available operations in a work-conserving manner, following the priority order of the
constructed blocks"): the priority order is the concatenation of the blocks; the I/O thread
reads, block by block, the E-chunks of the block's tasks in order, then their SM-chunks
(Sec. 3.3: "within each block, E-chunks are loaded before SM-chunks"); a free decompression
thread starts the highest-priority decompression whose E-chunk is available (ties in time: the
lowest thread index); the GPU does the same with experts ready to run. All times are exact
(ints / Fractions).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from fractions import Fraction

from paging.errors import PagingError, positive_int
from paging.offline.ilp import solve_cbc, variable_factory

__all__ = ["STATES", "Instance", "Schedule", "execute", "cache_affinity_blocks", "run_alg",
           "reverse_order_makespan", "serial_makespan", "lower_bound", "lower_bound_printed",
           "optimal_makespan", "estimate_makespan", "random_instance"]

STATES = ("M", "C", "S", "E")


def _nonneg(name: str, x) -> Fraction:
    if isinstance(x, bool) or not isinstance(x, numbers.Rational) or x < 0:
        raise PagingError(f"{name} must be a non-negative int or Fraction, got {x!r}")
    return Fraction(x)


@dataclass(frozen=True)
class Instance:
    """One sparse layer to schedule (Sec. 3.3). Durations are exact (int or Fraction).

    Parameters
    ----------
    states: per expert, one of ``"M" "C" "S" "E"`` (Def. B.2).
    p: per expert, the GPU execution time ``p_n``.
    u: SM-chunk read time; rho: compression ratio ρ (E-chunk read time is ``ρu/K``).
    c: decompression time of one E-chunk; K: E-chunks (shards) per tensor;
    L: decompression threads (``L >= 1``); tensors: tensors per expert (tasks per expert).
    """

    states: tuple
    p: tuple
    u: Fraction
    rho: Fraction
    c: Fraction
    K: int
    L: int
    tensors: int = 1

    def __post_init__(self):
        if len(self.states) != len(self.p):
            raise PagingError(f"states and p must have the same length, got {len(self.states)} "
                              f"and {len(self.p)}")
        for s in self.states:
            if s not in STATES:
                raise PagingError(f"expert state must be one of {', '.join(STATES)}, got {s!r}")
        object.__setattr__(self, "states", tuple(self.states))
        object.__setattr__(self, "p", tuple(_nonneg("p", x) for x in self.p))
        for name in ("u", "rho", "c"):
            object.__setattr__(self, name, _nonneg(name, getattr(self, name)))
        object.__setattr__(self, "K", positive_int("K (E-chunks per tensor)", self.K))
        object.__setattr__(self, "L", positive_int("L (decompression threads)", self.L))
        object.__setattr__(self, "tensors", positive_int("tensors per expert", self.tensors))

    @property
    def e(self) -> Fraction:
        """Read time of one E-chunk, ``ρu/K`` (Sec. 3.3)."""
        return self.rho * self.u / self.K

    @property
    def tasks(self) -> list[tuple[int, int]]:
        """Tasks ``(expert, tensor)`` in expert order."""
        return [(n, t) for n in range(len(self.states)) for t in range(self.tensors)]

    def needs_e(self, task) -> bool:
        return self.states[task[0]] in ("M", "S")

    def needs_sm(self, task) -> bool:
        return self.states[task[0]] in ("M", "E")

    def type_one(self, task) -> bool:
        """Type-I: the task must load its SM-chunk (Sec. 3.3 "Task Partition")."""
        return self.needs_sm(task)


@dataclass
class Schedule:
    makespan: Fraction
    io_end: Fraction
    thread_finish: list
    idle: Fraction                 # total idle on decompression threads before their last op
    starts: dict = field(default_factory=dict)


def execute(inst: Instance, blocks, io: str = "e-first", gpu: bool = True) -> Schedule:
    """Simulate the work-conserving execution of a block list (see the module docstring).

    ``io="sm-first"`` reads each block's SM-chunks before its E-chunks (only for the deliberately
    bad scheduler). ``gpu=False`` stops at the end of the reads and decompressions (used to
    evaluate a block alone, App. A Def. A.1). O(m²) for m operations.
    """
    prio = [t for B in blocks for t in B]
    if sorted(prio) != sorted(set(prio)):
        raise PagingError("a task appears twice in the block list")
    K, L = inst.K, inst.L
    arrive, starts = {}, {}
    clock = Fraction(0)
    for B in blocks:
        reads_e = [(("E", t, v), inst.e) for t in B if inst.needs_e(t) for v in range(K)]
        reads_sm = [(("SM", t), inst.u) for t in B if inst.needs_sm(t)]
        for op, d in (reads_e + reads_sm if io == "e-first" else reads_sm + reads_e):
            starts[op] = clock
            clock += d
            arrive[op] = clock
    io_end = clock
    pending = [(t, v) for t in prio for v in range(K)]
    release = {o: arrive.get(("E", *o), Fraction(0)) for o in pending}
    free = [Fraction(0)] * L
    busy = [Fraction(0)] * L
    done = {}
    while pending:
        lt = min(range(L), key=lambda i: (free[i], i))
        t0 = max(free[lt], min(release[o] for o in pending))
        op = next(o for o in pending if release[o] <= t0)
        pending.remove(op)
        starts[("D", *op)] = t0
        free[lt] = t0 + inst.c
        busy[lt] += inst.c
        done[op] = free[lt]
    idle = sum((f - b for f, b in zip(free, busy, strict=True)), Fraction(0))
    if not gpu:
        return Schedule(max([io_end, *free]), io_end, free, idle, starts)
    order = []
    for t in prio:
        if t[0] not in order:
            order.append(t[0])
    ready = {}
    for n in order:
        ts = [t for t in prio if t[0] == n]
        r = [done[(t, v)] for t in ts for v in range(K)]
        r += [arrive[("SM", t)] for t in ts if inst.needs_sm(t)]
        ready[n] = max(r, default=Fraction(0))
    g = Fraction(0)
    waiting = list(order)
    while waiting:
        t0 = max(g, min(ready[n] for n in waiting))
        n = next(x for x in waiting if ready[x] <= t0)
        waiting.remove(n)
        starts[("G", n)] = t0
        g = t0 + inst.p[n]
    return Schedule(max(g, io_end, *free), io_end, free, idle, starts)


def _sigma(inst: Instance, tasks) -> list:
    # Algorithm 1 lines 4-5: non-increasing p_{n(j)}, tasks of one expert consecutive
    # (ties: lower expert id, then tensor index -- our deterministic tie-break)
    return sorted(tasks, key=lambda t: (-inst.p[t[0]], t[0], t[1]))


def _compute_dominant(inst: Instance, B) -> bool:
    """App. A Def. A.1, read as in Sec. 3.3: with B executed alone, the l-th earliest finishing
    decompression thread ends at least ``l·ρu/K`` after the I/O thread, l = 1..min(L, K).
    (Eq. 1 prints ``k·(ρ/K)·u, 0 <= k <= min{L, K}`` with k unbound, and Sec. 3.3 prints
    ``(l-p)/K·u``: both garbles of l·ρu/K.)"""
    s = execute(inst, [B], gpu=False)
    fin = sorted(s.thread_finish)
    return all(fin[l - 1] - s.io_end >= l * inst.e for l in range(1, min(inst.L, inst.K) + 1))


def _fallback_position(inst: Instance, B, j) -> int:
    # Algorithm 1 lines 15-18 / Sec. 3.3: after the Type-II tasks of B with p >= p_j (after the
    # Type-I ones if B has no Type-II task); before the first such task when none has p >= p_j
    kind = (lambda t: not inst.type_one(t)) if any(not inst.type_one(t) for t in B) \
        else inst.type_one
    idx = [i for i, t in enumerate(B) if kind(t)]
    heavier = [i for i in idx if inst.p[B[i][0]] >= inst.p[j[0]]]
    return heavier[-1] + 1 if heavier else idx[0]


def cache_affinity_blocks(inst: Instance) -> list[list]:
    """Algorithm 1 (App. A): the ordered blocks of the cache-affinity scheduler.

    Readings (the pseudocode leaves them open): a block is evaluated alone (empty machine at
    time 0) for both the "no additional idle period" test (line 13: total decompression-thread
    idle time before each thread's last operation does not increase; every position 0..|B| is
    tried, earliest first) and compute dominance (:func:`_compute_dominant`); U = (σ_II, σ_I)
    is rebuilt from the unscheduled tasks at every step, so Type-I tasks join the current block
    once σ_II is exhausted (line 8); with no Type-I task at all Algorithm 1 would schedule
    nothing (its outer loop runs while σ_I is non-empty), so all tasks then form one block in
    σ_II order. Likewise when σ_I runs out while σ_II does not (the last block became compute
    dominant first), the printed loop ends and drops the remaining Type-II tasks; Sec. 3.3 says
    blocks are built "until all tasks are assigned", so they form one last block in σ_II order.
    O(m³) block simulations for m tasks.
    """
    order = _sigma(inst, inst.tasks)
    s1 = [t for t in order if inst.type_one(t)]
    s2 = [t for t in order if not inst.type_one(t)]
    if not s1:
        return [s2] if s2 else []
    blocks = []
    while s1:
        B = [s1.pop(0)]                                   # line 10: the base
        while not _compute_dominant(inst, B):             # line 11
            U = s2 + s1                                   # line 8, current
            if not U:                                     # line 22
                break
            j = U[0]                                      # line 12
            base = execute(inst, [B], gpu=False).idle
            pos = next((i for i in range(len(B) + 1)
                        if execute(inst, [B[:i] + [j] + B[i:]], gpu=False).idle <= base), None)
            if pos is None:                               # lines 14-19
                pos = _fallback_position(inst, B, j)
            B.insert(pos, j)
            (s2 if j in s2 else s1).remove(j)             # line 21
        blocks.append(B)
    if s2:  # σ_I ran out while σ_II did not (the printed loop would drop these tasks)
        blocks.append(s2)
    return blocks


def run_alg(inst: Instance) -> Schedule:
    """ZipMoE's scheduler: Algorithm 1's blocks, executed (App. A)."""
    blocks = cache_affinity_blocks(inst)
    if sorted(t for B in blocks for t in B) != inst.tasks:  # every task exactly once
        raise AssertionError(f"Algorithm 1 lost or repeated a task: {blocks}")
    return execute(inst, blocks)


def reverse_order_makespan(inst: Instance) -> Fraction:
    """A deliberately bad scheduler that ignores the ordering rules Algorithm 1 relies on: one
    block, tasks by *non-decreasing* p, SM-chunks read before E-chunks. Still work-conserving."""
    order = sorted(inst.tasks, key=lambda t: (inst.p[t[0]], t[0], t[1]))
    return execute(inst, [order], io="sm-first").makespan


def serial_makespan(inst: Instance) -> Fraction:
    """A deliberately bad scheduler with no overlap across experts: experts one after another
    (σ order), each reconstructed and executed alone. Feasible, far from optimal."""
    total = Fraction(0)
    seen = []
    for t in _sigma(inst, inst.tasks):
        if t[0] in seen:
            continue
        seen.append(t[0])
        one = Instance((inst.states[t[0]],), (inst.p[t[0]],), inst.u, inst.rho, inst.c, inst.K,
                       inst.L, inst.tensors)
        total += execute(one, [one.tasks]).makespan
    return total


def _io_work(inst: Instance, state: str) -> Fraction:
    # Lemma B.3's v_j: (1 + ρ)u for M, u for E, ρu for S, 0 for C
    return {"M": (1 + inst.rho) * inst.u, "E": inst.u, "S": inst.rho * inst.u, "C": 0}[state]


def lower_bound_printed(inst: Instance) -> dict:
    """Lemma B.3 as printed: ``OPT >= max{I, C/L, P, Z}`` with ``z_j = ρu·1[M,S] +
    max{Kc/min{K, L}, u·1[M,E]} + p_j`` (Eq. 3). ``Z`` is *not* a valid lower bound when
    K > L (see :func:`lower_bound`). Returns the four terms and their max."""
    m = len(inst.tasks)
    terms = {
        "I": sum((_io_work(inst, inst.states[n]) for n, _ in inst.tasks), Fraction(0)),
        "C/L": Fraction(m * inst.K) * inst.c / inst.L,
        "P": sum(inst.p, Fraction(0)),
        "Z": max((inst.rho * inst.u * (inst.states[n] in "MS")
                  + max(inst.K * inst.c / min(inst.K, inst.L), inst.u * (inst.states[n] in "ME"))
                  + inst.p[n]) for n, _ in inst.tasks),
    }
    terms["max"] = max(terms.values())
    return terms


def lower_bound(inst: Instance) -> Fraction:
    """A valid form of Lemma B.3: ``max{I, C/L, P, Z'}`` with the corrected critical path
    ``z'_j = max{ρu·1[M,S] + c, (ρu/K)·1[M,S] + ⌈K/min{K,L}⌉·c, v_j} + p_j``: the last E-chunk
    arrives at ρu at the earliest and still needs one decompression; the first arrives at ρu/K
    and the K decompressions need ⌈K/min{K,L}⌉ rounds; all reads v_j of the task precede its
    execution. (The printed ``ρu + Kc/min{K,L}`` counts the E-chunk reads *and* the
    decompressions in sequence, but they overlap chunk by chunk.) O(m)."""
    t = lower_bound_printed(inst)
    zs = []
    for n, _ in inst.tasks:
        st, e = inst.states[n], inst.states[n] in "MS"
        zs.append(max(inst.rho * inst.u * e + inst.c,
                      inst.e * e + math.ceil(inst.K / min(inst.K, inst.L)) * inst.c,
                      _io_work(inst, st)) + inst.p[n])
    return max(t["I"], t["C/L"], t["P"], max(zs))


def optimal_makespan(inst: Instance, horizon: Fraction | None = None,
                     time_limit: float = 60.0) -> Fraction:
    """The exact optimal makespan, by a time-indexed ILP (pulp + CBC).

    All durations are scaled to integers (by the lcm of their denominators), so some optimal
    schedule starts every operation at an integer time (shift every operation left as far as
    possible: starts become sums of durations). Binary ``x[a, t]`` = operation a starts at t,
    for t <= horizon − d_a (horizon = ALG's makespan, an upper bound on OPT); capacity per time
    unit: I/O <= 1, decompression <= L, GPU <= 1; precedence E-read -> its decompression ->
    GPU run of the expert, SM-read -> GPU run; minimise C_max >= GPU end. Symmetry: the K
    (E-read, decompression) pairs of a task are interchangeable, so their E-reads are ordered.
    Exact for the model above (no preemption, any order on every resource). Exponential in the
    worst case; small instances (a few experts, K <= 2) solve in about a second. When the
    horizon equals :func:`lower_bound`, it is optimal and no ILP is solved; otherwise
    ``C_max >= lower_bound`` is added as a cut.
    """
    import pulp

    if horizon is None:
        horizon = run_alg(inst).makespan
    lb = lower_bound(inst)
    if lb >= horizon:              # the upper bound meets the (valid) lower bound: no ILP needed
        return Fraction(horizon)
    durs = [inst.e, inst.u, inst.c, *inst.p, Fraction(horizon)]
    scale = 1
    for d in durs:
        scale = scale * d.denominator // math.gcd(scale, d.denominator)
    iv = {name: int(x * scale) for name, x in (("e", inst.e), ("u", inst.u), ("c", inst.c))}
    T = int(Fraction(horizon) * scale)
    ops = {}                                  # op -> (resource, duration)
    prec = []
    for task in inst.tasks:
        n = task[0]
        for v in range(inst.K):
            ops[("D", task, v)] = ("cpu", iv["c"])
            prec.append((("D", task, v), ("G", n)))
            if inst.needs_e(task):
                ops[("E", task, v)] = ("io", iv["e"])
                prec.append((("E", task, v), ("D", task, v)))
        if inst.needs_sm(task):
            ops[("SM", task)] = ("io", iv["u"])
            prec.append((("SM", task), ("G", n)))
    for n in range(len(inst.states)):
        ops[("G", n)] = ("gpu", int(inst.p[n] * scale))
    prob = pulp.LpProblem("zipmoe_opt", pulp.LpMinimize)
    new_var = variable_factory(pulp, prob)
    x = {a: {t: new_var(f"x{i}_{t}", cat="Binary") for t in range(T - d + 1)}
         for i, (a, (_, d)) in enumerate(ops.items())}
    cmax = new_var("cmax", lowBound=math.ceil(lb * scale))  # valid cut: OPT >= lb
    prob += cmax
    S = {a: pulp.lpSum(t * var for t, var in x[a].items()) for a in ops}
    for a in ops:
        prob += pulp.lpSum(x[a].values()) == 1
    cap = {"io": 1, "cpu": inst.L, "gpu": 1}
    for res, limit in cap.items():
        mine = [a for a, (r, d) in ops.items() if r == res and d > 0]
        for t in range(T):
            prob += pulp.lpSum(x[a][s] for a in mine for s in range(max(0, t - ops[a][1] + 1),
                                                                       t + 1) if s in x[a]) <= limit
    for a, b in prec:
        prob += S[b] >= S[a] + ops[a][1]
    for task in inst.tasks:
        if inst.needs_e(task):
            for v in range(inst.K - 1):
                prob += S[("E", task, v + 1)] >= S[("E", task, v)] + iv["e"]
    for n in range(len(inst.states)):
        prob += cmax >= S[("G", n)] + ops[("G", n)][1]
    solve_cbc(pulp, prob, mip=True, time_limit=time_limit, hint="raise the time limit")
    return Fraction(round(pulp.value(cmax)), scale)


def estimate_makespan(k: int, h: tuple, c, v, u, L: int, K: int, n: int) -> Fraction:
    """Algorithm 3 (App. C): ``max{T_IO, T_decomp}`` for hit pattern ``h = (h_F, h_C, h_S,
    h_E)`` of k selected experts with n tensors each: ``n_SM = n(k − h_F − h_C − h_S)``,
    ``n_E = nK(k − h_F − h_C − h_E)``, ``T_IO = n_SM·u + n_E·v``, ``n_D = nK(k − h_F)``,
    ``T_decomp = (n_E·v + n_D·c)/L``. Excludes GPU time, as the paper says. O(1)."""
    k = positive_int("k (experts selected)", k)
    L = positive_int("L (decompression threads)", L)
    if len(h) != 4 or any(isinstance(x, bool) or not isinstance(x, numbers.Integral) or x < 0
                          for x in h) or sum(h) > k:
        raise PagingError(f"h must be four integers >= 0 with sum <= k = {k}, got {h!r}")
    hF, hC, hS, hE = h
    c, v, u = (_nonneg(nm, x) for nm, x in (("c", c), ("v", v), ("u", u)))
    n_sm = n * (k - hF - hC - hS)
    n_e = n * K * (k - hF - hC - hE)
    t_io = n_sm * u + n_e * v
    n_d = n * K * (k - hF)
    return max(t_io, (n_e * v + n_d * c) / L)


def random_instance(rng, experts=(1, 3), K=(1, 2), L=(1, 3), tensors=1) -> Instance:
    """A random small instance with integer durations (ρu/K integral), from a
    ``numpy.random.Generator``: states uniform over M, C, S, E; p in 0..6; c in 1..4;
    (ρ, u) with ρu/K in 1..2."""
    m = int(rng.integers(experts[0], experts[1] + 1))
    k = int(rng.integers(K[0], K[1] + 1))
    lthreads = int(rng.integers(L[0], L[1] + 1))
    rho = Fraction(int(rng.choice([1, 2])), 2)          # 1/2 or 1
    e = int(rng.integers(1, 3))
    u = e * k / rho
    states = tuple(STATES[int(i)] for i in rng.integers(0, 4, size=m))
    p = tuple(int(x) for x in rng.integers(0, 7, size=m))
    return Instance(states, p, Fraction(u), rho, int(rng.integers(1, 5)), k, lthreads, tensors)
