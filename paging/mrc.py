"""Miss curves: the misses of a policy for every cache size k = 1..nℓ.

For a *stack algorithm* every cache size comes out of one pass over the trace (Mattson,
Gecsei, Slutz & Traiger, "Evaluation techniques for storage hierarchies", IBM Systems Journal
9(2):78-117, 1970, doi:10.1147/sj.92.0078). A policy that evicts the lowest page of a
priority order is one when that order, at each time t, is a total order that does not depend
on k: then the cache of size k always holds the top k pages of one stack (inclusion), and a
request hits exactly the caches at least as deep as its page.

* LRU: stack distances with a Fenwick tree, O(N log nℓ) (:func:`paging.fast.stack.lru_stack_hist`).
* LLRU, LFU, FLD, Least-Stale, Belady: Mattson's priority-stack update, O(depth) ≤ O(nℓ) per
  request (:func:`paging.fast.stack.priority_stack_hist`). LLRU's order changes over time —
  R and D are measured from the current step, so two pages can swap places between requests —
  but inclusion only needs, at each time t, one k-independent total order to choose every
  cache's victim, and the update at time t uses the order of time t alone. The same holds for
  FLD (distance from the current layer) and Least-Stale (staleness changes with the forward
  pass). The keys depend only on the request history (last request, count, next use), which
  is the same for every k in rounds mode where each request is served (hit or inserted).
* DIST variants: per-layer curves for shares 0..n of the layer's sub-sequence, summed through
  ``layout.dist_shares(k)``. LLRU-, FLD- and Least-Stale-DIST evict as LRU inside a layer
  (:mod:`paging.fast.lists`), so they use LRU's curve per layer; FIFO-, FWF- and the credit
  policies' DIST variants simulate each layer once per share (n runs of N/ℓ requests per
  layer instead of nℓ runs of N).
* FIFO (Belady's anomaly) and FWF are not stack algorithms, nor is randomized Marking (nor
  Marking-DIST, whose layers draw from one shared generator), nor the credit policies
  (GreedyDual, Landlord, GDSF, Layered Landlord: their inflation L depends on the cache
  size), nor the robust combiner (its virtual caches have size k), nor ARC and LeCaR (ARC's
  directory and LeCaR's histories are sized by c, and LeCaR is randomized: ARC-DIST runs each
  layer once per share, LeCaR-DIST, whose layers draw from one shared generator, once per k);
  the token policies have no one-pass curve here either (their ``-dist`` variants read the
  layer clock and the tokens, so they are not run on a layer's sub-sequence), nor Score-Based
  and the prediction policies (their ``-dist`` variants read scores and predictions indexed by
  the whole trace's requests, the oracle's normalised by OPT at each layer's share; the markers
  draw from one generator): one compiled run per k, in parallel over k on a thread pool (the
  kernels release the GIL), or as tasks on the workers of a Dask scheduler (``scheduler=``,
  ``paging mrc --scheduler``), with a tqdm progress bar. Curves are for unit costs and sizes.

Groups mode falls back to one run per k for every policy: a pinned group can force a bypass
in a small cache and not in a larger one, which breaks inclusion. Policies without a kernel
(:func:`paging.fast.plan`, e.g. user subclasses) run the reference loop per k.

The one-pass curves are checked against per-k simulation in ``tests/unit/test_mrc.py``.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import sys
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np

from paging import fast
from paging.fast import stack
from paging.fast.common import is_grouped
from paging.fast.stack import lru_stack_hist, priority_stack_hist
from paging.trace import Trace, next_use
from paging.weights import unit_sizes

__all__ = ["miss_curve", "miss_curves", "curve_method"]



@functools.cache
def _stack_kinds() -> dict[tuple[str, int], str]:
    """``(family, kind)`` of a kernel -> the one-pass curve of the policies that declare one
    (``Policy.stack``: ``"LRU"`` for the Fenwick-tree stack distances, else a kind of
    :mod:`paging.fast.stack`), from the registered policy classes."""
    from paging.policies import BASE_POLICIES

    out = {}
    for cls in BASE_POLICIES.values():
        own = vars(cls)
        if own.get("kernel") and own.get("stack"):
            out[fast.plan_of(own["kernel"])] = own["stack"]
    return out

# a reference-loop curve of at least this many simulated requests runs its sizes in processes
_PROCESS_WORK = 200_000
# a sweep of at least this many simulated requests shows a progress bar on a terminal
_PROGRESS_WORK = 20_000_000


def curve_method(trace: Trace, policy_name: str) -> str:
    """How :func:`miss_curve` computes ``policy_name``'s curve on ``trace``: ``"stack"`` (one
    pass), ``"per-layer"`` (DIST: one pass, or one run per share, per layer) or ``"per-k"``."""
    from paging.policies import make_policy

    spec = fast.plan(make_policy(policy_name))
    return _method(trace, spec)


def _is_stack(family: str, kind: int) -> bool:
    return (family, kind) in _stack_kinds()


def _method(trace: Trace, spec) -> str:
    return curve_route(spec, is_grouped(trace.steps))


def curve_route(spec, grouped: bool) -> str:
    """How the miss curve of the kernel plan ``spec`` (:func:`paging.fast.plan`) is computed on
    a trace in groups mode (``grouped``) or rounds mode: ``"stack"``, ``"per-layer"`` or
    ``"per-k"`` (:func:`curve_method`); a streamed curve takes the same route
    (:func:`paging.stream.curve_policy`)."""
    if spec is None or grouped:
        return "per-k"
    family, kind, dist = spec
    if dist:
        # Marking, LeCaR and the markers draw in run order across layers; the token family
        # reads the layer clock and the tokens; the prediction family's predictions and scores
        # are indexed by the trace's requests
        return "per-k" if family in ("token", "predictive") or fast.needs_draws(spec) \
            else "per-layer"
    return "stack" if _is_stack(family, kind) else "per-k"


def _hist_to_misses(hist: np.ndarray, n_requests: int, kmax: int) -> np.ndarray:
    """misses(k) for k = 0..kmax from a stack-depth histogram (depth ∞ in hist[0])."""
    hits = np.zeros(kmax + 1, dtype=np.int64)
    d = hist[1:kmax + 1]
    hits[1:d.size + 1] = np.cumsum(d)
    hits[d.size + 1:] = hits[d.size]
    return n_requests - hits


def _readonly(a: np.ndarray) -> np.ndarray:
    """``a`` as a contiguous int64 array, read-only as the kernels take it
    (:func:`paging.fast.common.frozen`; a view, the caller's array left writable)."""
    from paging.fast.common import frozen

    return frozen(np.ascontiguousarray(a, dtype=np.int64))


def _stack_hist(pages, nu, layout, spec) -> np.ndarray:
    family, kind, _ = spec
    name = _stack_kinds()[(family, kind)]
    if name == "LRU":
        return lru_stack_hist(pages, layout.n_pages)
    return priority_stack_hist(pages, nu, layout.n_experts, layout.n_layers,
                               getattr(stack, name))


def _layer_curves(trace: Trace, spec) -> np.ndarray:
    """``m[z, c]``: misses of layer z's sub-sequence with c = 0..n slots (DIST, rounds mode)."""
    lay = trace.layout
    n, L = lay.n_experts, lay.n_layers
    family, kind, _ = spec
    out = np.zeros((L, n + 1), dtype=np.int64)
    for z in range(L):
        sub = _readonly(trace.pages[z::L])  # rounds mode: layer z is requested at t ≡ z (mod ℓ)
        if not _is_stack(family, kind):
            # FIFO, FWF, the credit policies: one compiled run of the layer per share
            one = unit_sizes(lay.n_pages)
            steps = _readonly(np.arange(sub.size))
            w = np.ones(lay.n_pages)
            out[z, 0] = sub.size
            for c in range(1, n + 1):
                out[z, c] = fast._execute(sub, steps, np.zeros(0, np.int64), one, w, one, lay,
                                          c, (family, kind, False), None, 0)[0]
            continue
        nu = _readonly(next_use(sub) if fast.needs_next_use(spec) else np.zeros(0))
        out[z] = _hist_to_misses(_stack_hist(sub, nu, lay, spec), sub.size, n)
    return out


def _progress_bar(progress, total: int, work: int, desc: str):
    from paging import progress as pbar

    if progress is None:  # small traces finish before a bar is worth drawing
        progress = None if work >= _PROGRESS_WORK else False
    return pbar.bar(total, desc, unit="k", show=progress)


_WORKER: dict = {}


def _init_worker(trace, policy_name, seed) -> None:
    _WORKER.update(trace=trace, policy=policy_name, seed=seed)


def _reference_misses(k: int) -> int:
    """One size of a per-k curve in a worker process (:func:`one_size` on the worker's
    trace)."""
    w = _WORKER
    return one_size(w["trace"], w["policy"], w["seed"], k)


def one_size(trace: Trace, policy_name: str, seed, k: int) -> int:
    """Misses of ``policy_name`` at one size ``k``: the kernel when it has one, else the
    reference loop (a Dask task of :func:`miss_curve` with a scheduler)."""
    from paging.policies import make_policy

    spec = fast.plan(make_policy(policy_name))
    if spec is None:
        from paging.simulate import simulate

        return int(simulate(trace, make_policy(policy_name), k, seed=seed).misses)
    draws = fast.marking_draws(seed, trace.n_requests) if fast.needs_draws(spec) else None
    nu = trace.next_use if fast.needs_next_use(spec) else None
    return int(fast.run_misses(trace, spec, k, draws=draws, next_use=nu))


def _on_dask(trace: Trace, policy_name: str, spec, ks, seed, scheduler, bar,
             progress) -> np.ndarray:
    """The sizes ``ks`` as Dask tasks on the workers of ``scheduler`` (the trace sent once)."""
    from paging.cluster import dask_client

    out = np.zeros(len(ks), dtype=np.int64)
    with dask_client(scheduler, what="paging mrc --scheduler",
                     local="drop --scheduler to run on this machine") as client:
        from dask.distributed import as_completed

        if progress is not False:
            _fallback_note(policy_name, trace, spec, len(ks), f"the Dask workers at {scheduler}")
        shared = client.scatter(trace, broadcast=True)
        futures = {client.submit(one_size, shared, policy_name, seed, k, pure=False): i
                   for i, k in enumerate(ks)}
        for fut in as_completed(futures):
            out[futures[fut]] = fut.result()
            bar.update()
    return out


def _fallback_note(policy_name: str, trace: Trace, spec, runs: int, where: str) -> None:
    """The line a per-k curve writes when it falls back from one pass (issue 22: "says when it
    falls back"): how many runs, of the kernel or the reference loop, and where."""
    how = "the compiled kernel" if spec is not None else "the reference loop"
    sys.stderr.write(f"mrc {policy_name} on {trace.name}: no one-pass curve, {runs} runs of "
                     f"{how} on {where}\n")


def _per_k(trace: Trace, policy_name: str, spec, ks, seed, progress,
           scheduler=None) -> np.ndarray:
    out = np.zeros(len(ks), dtype=np.int64)
    bar = _progress_bar(progress, len(ks), trace.n_requests * len(ks), f"mrc {policy_name}")
    with bar:
        if scheduler is not None:
            return _on_dask(trace, policy_name, spec, ks, seed, scheduler, bar, progress)
        if spec is None:  # no kernel: the reference loop, one run per k
            workers = min(os.cpu_count() or 1, len(ks))
            if workers > 1 and trace.n_requests * len(ks) >= _PROCESS_WORK:
                # the Python loop holds the GIL: the sizes run in processes, each given the
                # trace once (fork: a policy registered in this process is known there too)
                if progress is not False:
                    _fallback_note(policy_name, trace, spec, len(ks), f"{workers} processes")
                ctx = multiprocessing.get_context("fork")
                with ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                                         initializer=_init_worker,
                                         initargs=(trace, policy_name, seed)) as pool:
                    for i, m in enumerate(pool.map(_reference_misses, ks)):
                        out[i] = m
                        bar.update()
                return out
            for i, k in enumerate(ks):
                out[i] = one_size(trace, policy_name, seed, k)
                bar.update()
            return out
        draws = fast.marking_draws(seed, trace.n_requests) if fast.needs_draws(spec) else None
        nu = trace.next_use if fast.needs_next_use(spec) else None

        def one(k):
            return fast.run_misses(trace, spec, k, draws=draws, next_use=nu)

        workers = min(os.cpu_count() or 1, len(ks))
        if workers > 1 and trace.n_requests * len(ks) >= 200_000:
            if progress is not False:
                _fallback_note(policy_name, trace, spec, len(ks), f"{workers} threads")
            with ThreadPoolExecutor(max_workers=workers) as pool:
                for i, m in enumerate(pool.map(one, ks)):
                    out[i] = m
                    bar.update()
        else:
            for i, k in enumerate(ks):
                out[i] = one(k)
                bar.update()
    return out


def miss_curve(trace: Trace, policy_name: str, *, seed: int | None = 0,
               progress: bool | None = None, scheduler: str | None = None) -> np.ndarray:
    """Misses of ``policy_name`` on ``trace`` for every cache size k = 1..nℓ.

    Parameters
    ----------
    trace : Trace
        One sequence, replayed from an empty cache for each k.
    policy_name : str
        A registered policy name (``lru``, ``llru``, ``belady-dist``, ...).
    seed : int
        Seed of the randomized policies (the same run as ``simulate(..., seed=seed)``).
    progress : bool or None
        Progress bar for per-k sweeps: None shows it for long sweeps on a terminal.
    scheduler : str, optional
        Address of a running Dask scheduler (``tcp://host:8786``): a per-k curve runs its sizes
        as tasks on its workers (which must import ``paging``, and know a policy registered at
        run time). One-pass curves ignore it (they are one pass here).

    Returns
    -------
    numpy.ndarray
        ``misses[k-1] == simulate(trace, policy_name, k, seed=seed).misses`` for k = 1..nℓ.

    Notes
    -----
    Guarantee: ``misses[k-1]`` equals the reference simulation at k for every k (checked by
    ``tests/unit/test_mrc.py``). Inside :func:`paging.simulate.verifying` (``paging mrc
    --verify``, ``paging figs --verify``) the curve is also held to a verified run at every k
    (:func:`verify_curve`) before it is returned.

    Rounds mode, stack policies (LRU, LLRU, LFU, FLD, Least-Stale, Belady): one pass by the
    inclusion property of Mattson et al. (IBM Systems Journal 9(2), 1970); their DIST variants:
    per-layer curves summed through ``layout.dist_shares(k)``. FIFO, FWF, Marking and every
    groups-mode trace (pinning and bypasses break inclusion): one compiled run per k, on a
    thread pool (or Dask tasks with ``scheduler``). The module docstring says why each route is
    exact.

    Cost: O(N log nℓ) for LRU; O(N·d̄) for the priority policies, d̄ ≤ nℓ the mean stack depth;
    O(n·N) for FIFO-DIST and FWF-DIST; otherwise nℓ compiled runs (O(N) to O(N log k) each).

    >>> from paging import Layout, from_pages
    >>> tr = from_pages([0, 1, 2, 3, 0, 1, 4, 0, 1, 2, 3, 4], Layout(6, 1))
    >>> miss_curve(tr, "lru").tolist()
    [12, 12, 10, 8, 5, 5]
    """
    from paging.policies import make_policy

    spec = fast.plan(make_policy(policy_name))
    P = trace.layout.n_pages
    N = trace.n_requests
    if N == 0:
        return np.zeros(P, dtype=np.int64)
    method = _method(trace, spec)
    if method == "stack":
        nu = _readonly(trace.next_use if fast.needs_next_use(spec) else np.zeros(0))
        curve = _hist_to_misses(_stack_hist(trace.pages, nu, trace.layout, spec), N, P)[1:]
    elif method == "per-layer":
        m = _layer_curves(trace, spec)
        ks = np.arange(1, P + 1)
        shares = np.stack([trace.layout.dist_shares(k) for k in ks])  # (P, ℓ)
        curve = m[np.arange(trace.layout.n_layers)[None, :], shares].sum(axis=1)
    else:
        curve = _per_k(trace, policy_name, spec, list(range(1, P + 1)), seed, progress,
                       scheduler)
    from paging.simulate import verifying_now

    if verifying_now():
        verify_curve(trace, policy_name, curve, seed=seed, show=progress)
    return curve


def miss_curves(trace: Trace, names: Iterable[str], *, seed: int | None = 0,
                progress: bool | None = None,
                scheduler: str | None = None) -> dict[str, np.ndarray]:
    """:func:`miss_curve` for several policies: ``{name: misses for k = 1..nℓ}``."""
    return {name: miss_curve(trace, name, seed=seed, progress=progress, scheduler=scheduler)
            for name in names}


def verify_curve(trace: Trace, policy_name: str, misses, *, seed: int | None = 0,
                 ks: Iterable[int] | None = None, show: bool | None = None) -> None:
    """Check a miss curve against independently verified runs: at every k of ``ks`` (default
    1..len(misses)) the policy is simulated with its run recorded, the run is checked by
    :func:`paging.verify.verify` (capacity, every request served, the misses equal the
    eviction log), and its misses must equal ``misses[k - 1]``. A one-pass curve is thereby
    held to k separate runs; a :class:`~paging.verify.VerificationError` names the first k
    that differs. A progress bar counts the sizes (``show``: on a terminal)."""
    from paging import progress as pbar
    from paging.errors import PagingError
    from paging.simulate import simulate, verifying
    from paging.verify import VerificationError

    misses = np.asarray(misses)
    ks = list(range(1, misses.size + 1)) if ks is None else list(ks)
    outside = [k for k in ks if not 1 <= k <= misses.size]
    if outside:  # (misses[k - 1] past the curve's end was an IndexError)
        raise PagingError(f"{trace.name}: k = {outside[0]} is outside the {policy_name} curve's "
                          f"sizes; expected 1 <= k <= {misses.size}")
    with pbar.bar(len(ks), f"verify {policy_name}", unit="k", show=show) as bar, verifying():
        for k in ks:
            res = simulate(trace, policy_name, k, seed=seed)
            if res.misses != int(misses[k - 1]):
                raise VerificationError(f"{trace.name}: the {policy_name} curve has "
                                        f"{int(misses[k - 1])} misses at k = {k}, a verified "
                                        f"run {res.misses}")
            bar.update()
