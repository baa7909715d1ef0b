"""Streaming: simulate traces larger than memory, a chunk at a time (issue 22).

:func:`stream_run` reads each sequence of a trace in bounded chunks (:mod:`paging.io.chunks`,
or any iterable of ``(pages, steps)`` chunks) and feeds every chunk to compiled kernels that
carry their state from one chunk to the next:

* the list-family policies (LRU, FIFO, FWF, LLRU, FLD, Least-Stale and their readings, and the
  -dist variants: :mod:`paging.fast.lists`), LFU, the credit policies (GreedyDual, Landlord,
  GDSF, Layered Landlord; unit costs and sizes), ARC, LeCaR and Marking (and their -dist
  variants; LeCaR and Marking draw from the run's ``seed`` as in memory), the prediction
  policies with the ``frequency`` predictor (BlindOracle, PredictiveMarker, LMarker, the
  robust combiner of BlindOracle and LRU, and their -dist variants:
  :class:`paging.fast.predictive.Carried`, which serves each chunk alone from the count of
  requests so far, its keys t + (t + 1)/c of the absolute index t), at any number of cache
  sizes k in one pass (:class:`paging.fast.CarriedRun`), and Score-Based (and -dist) with the
  gate scores a ``.npz`` or CSV stores (:func:`paging.io.chunks.open_chunks` with
  ``scores=True``; a sequence without them is refused, as in memory), and FlashMoE
  (:class:`paging.fast.learned.Carried`; its training-sequence watch as the policy's: the
  pages of the first 512 requests it hears, hashed once the sequence's length is known, and
  the policy's error for a sequence its model was trained on, at the end of the sequence when
  the source does not give its length up front);
* the token policies (token-hazard, token-decay, token-match, the combiners robust-token-match
  and ``robust:A,B`` of two of them or LRU, and their -dist forms: :class:`_TokenRun`,
  :class:`paging.fast.tokens.Streamed`), with the token ids and the top-K a ``.npz`` or CSV
  stores (read as the whole readers read them). Their log-losses are summed within a bound
  once a margin decides the weights, as in memory; a bound that fails makes the stream read
  the sequence again for that run at the next margin (a file or a spec; a chunk iterable,
  which cannot be read twice, gets exact sums from the start, which is slower);
* the miss curves of all those policies (:class:`_Curve`, by the route :func:`curve_policy`
  names): one pass for LRU (stack distances, :func:`paging.fast.stack.lru_stack_update`) and
  LLRU, LFU, FLD and Least-Stale (Mattson's priority update,
  :func:`paging.fast.stack.priority_stack_update`), per layer for their -dist variants, in
  rounds mode; each layer once per share for the -dist variants of FIFO, FWF, the credit
  policies and ARC; one carried run per size k = 1..nℓ for the rest (the token policies
  included) and in groups mode.

The runs of a chunk are independent and the kernels release the GIL: they share the
machine's cores on a thread pool.

The results equal the in-memory ones exactly (misses, per-layer misses, collision misses,
bypasses; ``tests/unit/test_stream.py`` checks it on random traces and random chunk sizes). A
groups-mode chunk that ends inside a group is cut at the group's start and the group carried
into the next chunk, so the kernels always see whole groups. Memory: the kernels' state
(O(nℓ) per run, O(nℓ) for a one-pass curve, O((nℓ)²) for a curve of one run per size,
refused above :data:`CURVE_STATE_BYTES`) plus one chunk of the reader — independent of the trace's
length.

The runs take the pages' fetch costs and sizes, at k pages or under a byte budget
(``budgets``, with ``sizes``), as :func:`paging.simulate.simulate` does.

Belady and Belady-DIST stream from oracleGeneral files, whose records hold each request's next
use (:func:`paging.io.chunks.open_chunks` with ``next_use=True`` reads and checks them): their
runs and one-pass curves take the chunks' next uses (a page never requested again: the trace's
length, as in memory).

Not streamed (refused with one line by ``paging simulate --stream``): the other policies
(the ``oracle`` predictor and the rest read the whole trace), the cost model
(``--model``: its host tier is placed by the whole trace's counts) and the latency timeline,
prefetching, miss handling, routing, warm runs, recording (hit masks, evictions). A run is
verified chunk by chunk (``verify=True``, ``--verify``: :class:`paging.verify.StreamVerifier`).

>>> import numpy as np
>>> from paging import Layout, from_pages, simulate
>>> chunks = [(np.array([0, 2, 1]), None), (np.array([3, 0, 2]), None)]
>>> [r.misses for r in simulate_stream(chunks, "lru", 3, layout=Layout(2, 2))]
[6]
>>> simulate(from_pages([0, 2, 1, 3, 0, 2], Layout(2, 2)), "lru", 3).misses
6
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from paging.errors import PagingError
from paging.io.chunks import DEFAULT_CHUNK, ChunkedTrace, checked_chunks, open_chunks
from paging.layout import Layout

__all__ = ["stream_run", "simulate_stream", "miss_curve_stream", "stream_policy", "spec_stream",
           "curve_policy", "StreamOutcome", "DEFAULT_CHUNK", "STREAM_BYTES"]

#: ``paging simulate`` and ``paging mrc`` stream a trace file larger than this many bytes by
#: themselves when everything asked can be streamed (``$PAGING_STREAM_BYTES`` overrides it)
STREAM_BYTES = 2 * 10**9


def stream_threshold() -> int:
    v = os.environ.get("PAGING_STREAM_BYTES")
    try:
        return int(float(v)) if v else STREAM_BYTES
    except ValueError:
        raise PagingError(f"PAGING_STREAM_BYTES must be a number of bytes, got {v!r}") from None


def stream_policy(name: str, next_use: bool = True):
    """``(policy, (family, kind, dist))`` of a policy with a streaming kernel, or a one-line
    :class:`PagingError` saying which policies stream. Belady and Belady-DIST stream from
    traces that bring their next uses (oracleGeneral files): refused when ``next_use`` is
    False."""
    from paging import fast
    from paging.policies import make_policy

    pol = make_policy(name)
    spec = fast.plan(pol)
    if not fast.streams(spec, next_use=next_use):
        raise PagingError(f"--policy {pol.name} has no streaming kernel; streaming runs "
                          f"{_STREAMED}, and belady and belady-dist from oracleGeneral files "
                          "(their next-access times)")
    return pol, spec


#: the policies a stream runs, as its refusals name them
_STREAMED = ("the list family (lru, fifo, fwf, llru, fld, least-stale and their variants), lfu, "
             "greedy-dual, landlord, gdsf, layered-landlord, arc, lecar, marking, the token "
             "policies (token-hazard, token-decay, token-match, robust-token-match), the "
             "prediction policies with the frequency predictor (blind-oracle, "
             "predictive-marker, lmarker, robust-blind-oracle), score-based (from a .npz or "
             "CSV that stores gate scores), and their -dist forms, and flashmoe")


def _plan(name: str):
    """The kernel plan of a policy (:func:`paging.fast.plan`)."""
    from paging import fast
    from paging.policies import make_policy

    return fast.plan(make_policy(name))


def _needs_next_use(name: str) -> bool:
    from paging import fast

    return fast.needs_next_use(_plan(name))


def _is_token(name: str) -> bool:
    from paging import fast

    return fast.is_token(_plan(name))


def _reads_scores(name: str) -> bool:
    from paging import fast

    return fast.reads_scores(_plan(name))


def curve_policy(name: str, expand: str = "rounds"):
    """``(policy, spec, how)`` of a policy whose miss curve streams in ``expand`` mode, else a
    one-line :class:`PagingError`. ``how`` is how :class:`_Curve` computes it, the route
    :func:`paging.mrc.miss_curve` takes in memory wherever a stream can take it:

    * ``"stack"``: one pass, carried from chunk to chunk (rounds mode): LRU's stack distances
      (:func:`paging.fast.stack.lru_stack_update`) or Mattson's priority update for LLRU, LFU,
      FLD and Least-Stale (:func:`paging.fast.stack.priority_stack_update`); per layer for
      their ``-dist`` forms;
    * ``"shares"``: a ``-dist`` form of FIFO, FWF, the credit policies or ARC: each layer's
      sub-sequence once per share 0..n (rounds mode);
    * ``"per-k"``: one carried run per k = 1..nℓ (:class:`paging.fast.CarriedRun`,
      :class:`_TokenRun`): the policies that are not stack algorithms (FIFO, FWF, Marking, the
      credit policies, ARC, LeCaR, the token and prediction policies, and the -dist forms
      that draw from one generator), and every policy in groups mode.

    Belady's curve is one pass too (Mattson's update with next uses), from a stream that brings
    them (an oracleGeneral file)."""
    from paging.mrc import _stack_kinds, curve_route
    from paging.policies import make_policy

    try:
        pol, spec = stream_policy(name)
    except PagingError:
        raise PagingError(f"--policy {make_policy(name).name} has no streamed miss curve (the "
                          f"curves that stream: {_STREAMED}, and belady's from oracleGeneral "
                          "files)") from None
    how = curve_route(spec, expand != "rounds")
    if how == "per-layer":  # (one pass per layer, or each layer once per share)
        how = "stack" if tuple(spec[:2]) in _stack_kinds() else "shares"
    return pol, spec, how


#: the most bytes the carried runs of one streamed per-k curve may hold (refused above it)
CURVE_STATE_BYTES = 4 * 10**9


def _nbytes(state) -> int:
    """The bytes of the arrays in a carried kernel's state (nested tuples and lists)."""
    if isinstance(state, np.ndarray):
        return state.nbytes
    if isinstance(state, (tuple, list)):
        return sum(_nbytes(x) for x in state)
    if hasattr(state, "S"):  # (the carried state of a prediction policy or of FlashMoE)
        return _nbytes(state.S)
    return 0


class _Run:
    """A policy at one k (or a byte ``budget`` with page ``sizes``) in a stream, its cache
    carried from chunk to chunk by a subclass's ``run`` (``costs`` and ``sizes``: the pages'
    weights, as :func:`paging.fast.run` takes them). ``verify``: the sequence's name, to check
    every chunk and the result independently (:class:`paging.verify.StreamVerifier`). A
    subclass gives ``page_misses``, ``collisions`` and ``bypasses``: the run's counts so far."""

    def __init__(self, name: str, k: int | None, layout: Layout, budget: int | None = None,
                 costs=None, sizes=None, verify: str | None = None):
        from paging.core import check_capacity

        self.policy, self.spec = stream_policy(name)
        self.k, self.budget = check_capacity(k, budget, sizes, layout.n_pages)
        self.capacity = self.k if budget is None else self.budget
        self.costs, self.sizes, self.layout, self.verify = costs, sizes, layout, verify
        self.dist = bool(self.spec[2])

    def _checker(self):
        """A fresh :class:`paging.verify.StreamVerifier` of the run, or None."""
        if self.verify is None:
            return None
        from paging.verify import StreamVerifier

        return StreamVerifier(self.layout, self.verify, self.policy.name, self.capacity,
                              self.dist, budget=self.budget, costs=self.costs, sizes=self.sizes)

    def finish(self) -> None:
        """The sequence ended (a run with a last check makes it: :meth:`_ListRun.finish`)."""

    def result(self, trace: str, requests: int, seed: int | None = 0):
        from paging.result import build_result

        self.finish()
        res = build_result(policy=self.policy.name, k=self.k, budget=self.budget,
                           trace=trace, requests=requests, page_misses=self.page_misses.copy(),
                           n_layers=self.layout.n_layers, collisions=self.collisions,
                           bypasses=self.bypasses, seed=seed, dist=self.dist,
                           costs=self.costs, sizes=self.sizes)
        if self.checker is not None:
            self.checker.finish(res)
        return res


class _ListRun(_Run):
    """One list-family, LFU, credit, ARC, LeCaR or Marking policy (or Belady, with next uses),
    in a :class:`paging.fast.CarriedRun` (the draws of LeCaR and Marking from ``seed``)."""

    def __init__(self, name: str, k: int | None, layout: Layout, seed: int | None = 0,
                 budget: int | None = None, costs=None, sizes=None, verify: str | None = None,
                 n_requests: int | None = None):
        from paging import fast

        super().__init__(name, k, layout, budget, costs, sizes, verify)
        self.needs_next_use = fast.needs_next_use(self.spec)
        # (a cache counted in pages gives every page one slot, whatever its size: fast.run)
        self.run = fast.CarriedRun(layout, self.spec, self.capacity,
                                   slots=None if budget is None else sizes, seed=seed,
                                   costs=costs, sizes=sizes, next_use=self.needs_next_use)
        # (FlashMoE refuses a sequence its model was trained on, as the policy does; its
        # length ``n_requests`` when known up front)
        self.learned = hasattr(self.run.state, "watch")
        if self.learned:
            self.run.state.watch(n_requests)
        self.checker = self._checker()

    def finish(self) -> None:
        """The sequence ended: FlashMoE's training-sequence watch makes its last check."""
        if self.learned:
            self.run.state.finish()

    def feed(self, pages: np.ndarray, steps: np.ndarray, nxt=None, token=None,
             score=None) -> None:
        """The next chunk (``nxt``: its next uses, Belady's; ``token``: its token ids, which
        these policies do not read; ``score``: its gate scores, Score-Based's)."""
        nxt = nxt if self.needs_next_use else None
        if self.checker is None:
            self.run.feed(pages, steps, next_use=nxt, scores=score)
        else:  # the piece's logs, checked against the cache replayed so far
            self.checker.feed(pages, steps, *self.run.feed(pages, steps, log=True,
                                                           next_use=nxt, scores=score))

    @property
    def page_misses(self) -> np.ndarray:
        return self.run.page_misses

    @property
    def collisions(self) -> int:
        return self.run.collisions

    @property
    def bypasses(self) -> int:
        return self.run.bypasses


class _TokenRun(_Run):
    """A token policy (token-hazard, token-decay, token-match, robust-token-match, their -dist
    forms), its cache carried from chunk to chunk by :class:`paging.fast.tokens.Streamed`,
    which keeps no request of the chunks before.

    Its log-losses are summed within a bound once they decide the weights by a margin
    (:data:`paging.fast.tokens.ENTER`), as in memory. A bound that fails stops the run
    (:attr:`failed`); :meth:`restart` begins it again at the next margin, then with exact sums,
    and :func:`stream_run` reads the sequence again for it (the decisions are the reference's
    at every margin). ``exact``: exact sums from the start, for a source that cannot be read
    twice. ``visits``: the layer walks per token of the chunks' token ids, which :meth:`feed`
    takes when the chunks bring them (else one token per walk), as
    :func:`paging.fast.tokens.execute` reads a whole trace."""

    def __init__(self, name: str, k: int | None, layout: Layout, seed: int | None = 0,
                 budget: int | None = None, costs=None, sizes=None, verify: str | None = None,
                 visits: int = 1, exact: bool = False):
        from paging import fast
        from paging.fast import tokens
        from paging.weights import unit_sizes

        super().__init__(name, k, layout, budget, costs, sizes, verify)
        self.visits = int(visits)
        self.caps = fast._caps(layout, self.capacity, self.dist)
        # (a cache counted in pages gives every page one slot, whatever its size: fast.run)
        self.slots = (unit_sizes(layout.n_pages) if budget is None
                      else fast.frozen(np.asarray(sizes, dtype=np.int64)))
        self.tries = [None] if exact else [*tokens.ENTER, None]
        self.restart()

    def restart(self) -> None:
        """Begin the run again (an empty cache) at the next margin."""
        from paging.fast import tokens

        self.enter = self.tries.pop(0)
        self.run = tokens.Streamed(self.layout, self.spec, self.caps, self.slots, self.enter,
                                   self.visits)
        self.checker = self._checker()

    @property
    def failed(self) -> bool:
        return self.run.failed

    def feed(self, pages: np.ndarray, steps: np.ndarray, nxt=None, token=None,
             score=None) -> None:
        """The next chunk (``token``: its token ids, or None for one token per walk)."""
        out = self.run.feed(pages, steps, token, 2 if self.checker is not None else 0)
        if out is not None and self.checker is not None:
            self.checker.feed(pages, steps, np.asarray(out[3], dtype=bool), out[4], out[6])

    @property
    def page_misses(self) -> np.ndarray:
        return self.run.C[9]

    @property
    def collisions(self) -> int:
        return int(self.run.totals[1])

    @property
    def bypasses(self) -> int:
        return int(self.run.totals[2])


def _run(name: str, k, layout: Layout, seed=0, *, visits: int = 1, exact: bool = False,
         n_requests: int | None = None, **kw):
    """The carried run of ``name`` at ``k`` (or ``budget=``) in a stream: a :class:`_TokenRun`
    for a token policy, else a :class:`_ListRun` (``n_requests``: the sequence's length when
    known, which FlashMoE's training-sequence watch reads)."""
    if _is_token(name):
        return _TokenRun(name, k, layout, seed, visits=visits, exact=exact, **kw)
    return _ListRun(name, k, layout, seed, n_requests=n_requests, **kw)


class _Curve:
    """A policy's miss curve (misses for k = 1..nℓ) carried across chunks, by the route
    :func:`curve_policy` names. :meth:`jobs` gives the work of one chunk as independent calls
    (the kernels release the GIL: :func:`stream_run` runs them on a thread pool)."""

    def __init__(self, name: str, layout: Layout, expand: str = "rounds", seed: int | None = 0,
                 visits: int = 1, exact: bool = False, n_requests: int | None = None):
        from paging import fast
        from paging.fast import stack
        from paging.mrc import _stack_kinds

        self.policy, spec, self.how = curve_policy(name, expand)
        family, kind, self.dist = spec
        self.layout = lay = layout
        self.n_requests = n_requests  # (Belady's "no next use", when the chunks bring them)
        n, L, P = lay.n_experts, lay.n_layers, lay.n_pages
        self.parts = L if self.dist else 1
        self.counts = np.zeros(self.parts, np.int64)  # requests of each part so far
        if self.how == "stack":
            self.kind = _stack_kinds()[(family, kind)]
            if self.kind == "LRU":
                self.states = [stack.lru_stack_state(P) for _ in range(self.parts)]
            else:
                self.kind = getattr(stack, self.kind)
                self.states = [stack.priority_stack_state(P) for _ in range(self.parts)]
        elif self.how == "shares":  # layer z at share c: runs[z][c - 1], the policy without -dist
            first = fast.CarriedRun(lay, (family, kind, False), 1)
            self._refuse_above(_nbytes(first.state) * L * n, f"{L * n:,} runs (a layer and a "
                               "share each)")
            self.runs = [[first if z == 0 and c == 1 else
                          fast.CarriedRun(lay, (family, kind, False), c)
                          for c in range(1, n + 1)] for z in range(L)]
        else:
            kw = {"visits": visits, "exact": exact, "n_requests": n_requests}
            first = _run(name, 1, lay, seed, **kw)
            state = first.run.state if isinstance(first, _ListRun) else (first.run.S,
                                                                          first.run.C)
            self._refuse_above(_nbytes(state) * P, f"{P:,} runs (one per size)")
            self.runs = [first] + [_run(name, k, lay, seed, **kw) for k in range(2, P + 1)]

    def _refuse_above(self, need: int, runs: str) -> None:
        """Refuse a curve whose carried runs would hold more than :data:`CURVE_STATE_BYTES`."""
        if need > CURVE_STATE_BYTES:
            raise PagingError(f"--policy {self.policy.name}: a streamed curve of {runs} carries "
                              f"{need / 1e9:.1f} GB of cache state (at most "
                              f"{CURVE_STATE_BYTES / 1e9:.0f} GB); read the trace whole (no "
                              "--stream)")

    @property
    def n_runs(self) -> int:
        """The carried runs of the curve (1 a part for a one-pass curve)."""
        if self.how == "stack":
            return self.parts
        return len(self.runs) * (len(self.runs[0]) if self.how == "shares" else 1)

    def _parts(self, pages: np.ndarray, steps: np.ndarray) -> list[np.ndarray]:
        """The chunk's requests of each part: all of them, or (-dist, rounds mode: request i of
        the chunk is of layer (first + i) mod ℓ) each layer's."""
        if not self.dist:
            return [pages]
        L = self.layout.n_layers
        first = int(steps[0]) % L if steps.size else 0
        return [np.ascontiguousarray(pages[(z - first) % L::L]) for z in range(L)]

    def jobs(self, pages: np.ndarray, steps: np.ndarray, nxt=None, token=None,
             score=None) -> list:
        """The calls that feed the chunk to the curve's stacks or runs (each touching its own
        state: they may run in any order, at once); ``nxt``: the chunk's next uses (Belady's
        curve: a layer's sub-sequence then counts its own requests, t // ℓ in rounds mode);
        ``token``: its token ids (the token policies' runs); ``score``: its gate scores
        (Score-Based's runs)."""
        from paging.fast import stack

        if self.how == "per-k":
            return [partial(r.feed, pages, steps, nxt, token, score) for r in self.runs]
        subs = self._parts(pages, steps)
        if nxt is not None and self.how == "stack" and self.kind == stack.BELADY:
            L, N = self.layout.n_layers, self.n_requests
            # (a page requested no more: its layer's length, as paging.trace.next_use has it
            # for the layer's sub-sequence; N // ℓ is a request of the layers z < N mod ℓ)
            nus = [nxt] if not self.dist else [
                np.ascontiguousarray(np.where(u == N, (N - z + L - 1) // L, u // L))
                for z, u in enumerate(self._parts(nxt, steps))]
        else:
            nus = [_NO_NEXT_USE] * len(subs)
        out = []
        for z, sub in enumerate(subs):
            if not sub.size:
                continue
            if self.how == "stack" and self.kind == "LRU":
                out.append(partial(stack.lru_stack_update, sub, *self.states[z]))
            elif self.how == "stack":
                if self.counts[z] + sub.size >= stack.STREAM_STRIDE - 1:
                    raise PagingError(f"--policy {self.policy.name}: a streamed priority curve "
                                      f"counts at most {stack.STREAM_STRIDE - 2:,} requests a "
                                      "part; read the trace whole (no --stream)")
                out.append(partial(stack.priority_stack_update, sub, nus[z],
                                   self.layout.n_experts, self.layout.n_layers, self.kind,
                                   stack.STREAM_STRIDE, *self.states[z]))
            else:  # shares: each run of layer z counts the layer's requests as its steps
                at = np.arange(self.counts[z], self.counts[z] + sub.size, dtype=np.int64)
                out += [partial(r.feed, sub, at) for r in self.runs[z]]
            self.counts[z] += sub.size
        return out

    def curve(self, requests: int) -> np.ndarray:
        from paging.mrc import _hist_to_misses

        lay = self.layout
        P = lay.n_pages
        if requests == 0:
            return np.zeros(P, dtype=np.int64)
        if self.how == "per-k":
            for r in self.runs:
                r.finish()
            return np.array([int(r.page_misses.sum()) for r in self.runs], np.int64)
        if not self.dist:
            return _hist_to_misses(self.states[0][-2], requests, P)[1:]
        n, L = lay.n_experts, lay.n_layers
        m = np.zeros((L, n + 1), dtype=np.int64)
        for z in range(L):
            if self.how == "stack":
                hist = self.states[z][-2]
                m[z] = _hist_to_misses(hist, int(hist.sum()), n)
            else:
                m[z, 0] = self.counts[z]
                m[z, 1:] = [int(r.page_misses.sum()) for r in self.runs[z]]
        shares = np.stack([lay.dist_shares(k) for k in range(1, P + 1)])
        return m[np.arange(L)[None, :], shares].sum(axis=1)


_NO_NEXT_USE = np.zeros(0, np.int64)


@dataclass
class StreamOutcome:
    """One sequence streamed: its name and length, a :class:`~paging.result.Result` per
    ``(policy, k)`` run then per ``(policy, bytes)`` budget (in the order asked) and a miss
    curve per curve policy (misses for
    k = 1..nℓ), the wall time, the chunks read and the passes over the sequence."""

    trace: str
    requests: int
    results: list = field(default_factory=list)
    curves: dict = field(default_factory=dict)
    seconds: float = 0.0
    chunks: int = 0
    #: the passes over the sequence: 1, and one more each time token runs whose bound failed
    #: read it again at their next margin
    passes: int = 1


def _whole_groups(chunks: Iterable) -> Iterable:
    """The chunks (tuples of arrays of one length: pages, steps, and token ids or next uses)
    re-cut so that none ends inside a group: a chunk's last group (a run of its last step) is
    held back and put in front of the next chunk. Memory: one chunk plus one group."""
    carry = None
    for item in chunks:
        if carry is not None:
            item = tuple(np.concatenate([c, a]) for c, a in zip(carry, item, strict=True))
            carry = None
        s = item[1]
        if s.size == 0:
            continue
        cut = int(np.searchsorted(s, s[-1], side="left"))
        carry = tuple(a[cut:] for a in item)
        if cut:
            yield tuple(a[:cut] for a in item)
    if carry is not None:
        yield carry


def spec_stream(spec: str, expand: str = "rounds") -> ChunkedTrace:
    """A ``zipf:...`` generator spec with K = 1 as a stream (:func:`paging.generators.zipf_chunks`):
    the same requests as the spec loaded whole, generated a chunk at a time."""
    from paging.generators import spec_args, zipf_chunks

    kind, args = spec_args(spec)
    if kind != "zipf" or args.get("topk", 1) != 1 or expand != "rounds":
        raise PagingError(f"spec {spec.strip()!r}: streaming generates zipf specs with topk=1 "
                          "in rounds mode; load other specs whole (without --stream)")
    args.pop("topk", None)
    try:
        gen = zipf_chunks(**args)
    except PagingError as e:
        raise PagingError(f"spec {spec.strip()!r}: {e.message}") from None
    lay = Layout(args["n"], args["layers"])

    def chunks():
        start = 0
        for pages in gen:
            yield pages, np.arange(start, start + pages.size, dtype=np.int64)
            start += pages.size

    return ChunkedTrace(spec.strip(), lay, "rounds", chunks(), args["tokens"] * args["layers"])


def _sequences(source, *, chunk, expand, layout, name, n_experts, n_layers,
               format, next_use=False, tokens=False,
               scores=False) -> Iterable[ChunkedTrace]:
    """The sequences of ``source`` to stream; those of a file or a spec can be read again
    (:attr:`ChunkedTrace.reopen`)."""
    if isinstance(source, ChunkedTrace):
        return [source]
    from paging.generators import is_spec

    if isinstance(source, str) and is_spec(source):
        seq = spec_stream(source, expand=expand)
        seq.reopen = lambda: spec_stream(source, expand=expand).chunks
        return [seq]
    if isinstance(source, (str, os.PathLike)):
        if layout is not None:
            raise PagingError("layout= describes a chunk iterable; a file gives its own (or "
                              "n_experts= and n_layers=)")
        kw = {"chunk": chunk, "expand": expand, "n_experts": n_experts, "n_layers": n_layers,
              "format": format, "next_use": next_use, "tokens": tokens, "scores": scores}
        return _reopenable(source, kw)
    from paging.io.chunks import _Sequences

    if isinstance(source, _Sequences):  # (a CSV's sequences, found as it is read)
        return source
    if isinstance(source, Sequence) and source and all(isinstance(t, ChunkedTrace)
                                                       for t in source):
        return list(source)
    if layout is None:
        raise PagingError("streaming chunks of (pages, steps) needs their layout: pass "
                          "layout=Layout(n_experts, n_layers)")
    return [ChunkedTrace(name, layout, expand, checked_chunks(source, layout, expand, name))]


def _reopenable(source, kw: dict) -> Iterable[ChunkedTrace]:
    """The sequences of a file (:func:`open_chunks`), each able to read its chunks again."""
    for i, seq in enumerate(open_chunks(source, **kw)):
        seq.reopen = partial(_reread, source, kw, i)
        yield seq


def _reread(source, kw: dict, i: int) -> Iterable:
    """Sequence ``i`` of a file read again: its chunks, after the sequences before it (read
    through: the readers read the file in order)."""
    for j, seq in enumerate(open_chunks(source, **kw)):
        if j == i:
            return seq.chunks
        for _ in seq.chunks:
            pass
    raise PagingError(f"{source}: sequence {i} is gone (the file changed while streamed)")


def _weights(w, kind: str, n_pages: int):
    """Per-page costs or sizes given as an array or a file (:func:`paging.io.weights.
    read_weights`), validated for ``n_pages``; None stays None (unit weights)."""
    if w is None:
        return None
    if isinstance(w, (str, os.PathLike)):
        from paging.io.weights import read_weights

        return read_weights(w, n_pages, kind)
    from paging.weights import as_costs, as_sizes

    return as_costs(w, n_pages) if kind == "costs" else as_sizes(w, n_pages)


def stream_run(source, runs: Iterable[tuple[str, int]] = (), curves: Iterable[str] = (), *,
               chunk: int = DEFAULT_CHUNK, expand: str = "rounds", layout: Layout | None = None,
               name: str = "stream", n_experts: int | None = None,
               n_layers: int | None = None, format: str | None = None, seed: int | None = 0,
               progress: bool | None = False, budgets: Iterable[tuple[str, int]] = (),
               costs=None, sizes=None, verify: bool = False) -> list[StreamOutcome]:
    """Stream every sequence of ``source`` once through all the ``runs`` and ``curves``.

    Parameters
    ----------
    source
        A trace file (oracleGeneral with ``n_experts``/``n_layers``, ``.npz``, CSV; see
        :func:`paging.io.chunks.open_chunks`), a :class:`~paging.io.chunks.ChunkedTrace` (or a
        list of them), or an iterable of ``(pages, steps)`` chunks of one sequence with
        ``layout`` (``steps`` None: rounds mode, counting on from the previous chunk). Chunks
        are validated as the readers validate a whole trace.
    runs : iterable of (str, int)
        ``(policy, k)`` pairs: policies with a carried kernel (:func:`stream_policy`), k in
        pages.
    budgets : iterable of (str, int)
        ``(policy, bytes)`` pairs: the same policies under a byte budget (needs ``sizes``);
        their results follow the ``runs``' ones.
    costs, sizes
        The pages' fetch costs and sizes in bytes (arrays, or files as ``--costs`` and
        ``--sizes`` read them), for every run, as :func:`paging.simulate.simulate` takes them.
    verify : bool
        Check every run independently as it goes (:class:`paging.verify.StreamVerifier`: the
        cache never exceeds its capacity, every request is served, the misses match the
        eviction log), a chunk at a time; a failed check raises
        :class:`paging.verify.VerificationError`. The check replays every request (in a
        compiled loop: LRU at 10⁹ requests took 41 s checked against 19 s unchecked).
    curves : iterable of str
        Policies whose miss curve to compute (:func:`curve_policy`: one pass, per layer and
        share, or one run per k; ``seed`` for the randomized ones, as in memory).
    chunk : int
        Requests per chunk read from a file.
    expand : str
        The mode of the sequences (a file must store this mode).
    progress : bool or None
        A progress bar over the requests (None: on a terminal).

    Returns
    -------
    list of StreamOutcome
        One per sequence, each from an empty cache: ``results[i]`` equals
        ``simulate(trace, *runs[i], costs=costs, sizes=sizes)`` (then ``budget=`` those of
        ``budgets``) and ``curves[name]`` equals ``miss_curve(trace, name, seed=seed)`` on
        the sequence read whole.
    """
    from paging import progress as pbar

    runs, curves, budgets = list(runs), list(curves), list(budgets)
    if not runs and not curves and not budgets:
        raise PagingError("nothing to stream: give at least one (policy, k) run or one curve")
    if budgets and sizes is None:
        raise PagingError("a byte budget needs page sizes (sizes=..., --sizes FILE)")
    for pol, _ in runs + budgets:  # fail on a name before reading anything
        stream_policy(pol)
    for pol in curves:
        curve_policy(pol)
    nu = any(_needs_next_use(pol) for pol, _ in runs + budgets) or any(
        _needs_next_use(pol) for pol in curves)
    tk = any(_is_token(pol) for pol, _ in runs + budgets) or any(_is_token(p) for p in curves)
    sc = [pol for pol in [p for p, _ in runs + budgets] + curves if _reads_scores(pol)]
    out = []
    for seq in _sequences(source, chunk=chunk, expand=expand, layout=layout, name=name,
                          n_experts=n_experts, n_layers=n_layers, format=format,
                          next_use=nu, tokens=tk, scores=bool(sc)):
        if sc and not seq.scores:  # (the in-memory run's error, with the sequence's name)
            raise PagingError(f"{stream_policy(sc[0])[0].name} reads gate scores and {seq.name} "
                              "has none (a stream reads them from the score column of a .npz "
                              "or CSV)")
        if tk and seq.tokens_unread:
            raise PagingError(f"trace {seq.name}: the token policies read the token ids the "
                              "file stores, and these chunks were opened without them; open "
                              "it with open_chunks(..., tokens=True) (or pass the file)")
        if nu and not seq.next_use:
            raise PagingError(f"trace {seq.name}: belady reads next uses, which a streamed "
                              "trace brings only from an oracleGeneral file (its next-access "
                              "times); read this one whole (without --stream)")
        t0 = time.perf_counter()
        lay = seq.layout
        w = {"costs": _weights(costs, "costs", lay.n_pages),
             "sizes": _weights(sizes, "sizes", lay.n_pages)}
        check = seq.name if verify else None
        # (a token run whose bound fails is run again over the sequence read again; a source
        # that cannot be read again gets exact sums from the start)
        tkw = {"visits": seq.visits if seq.tokens else 1, "exact": seq.reopen is None,
               "n_requests": seq.n_requests}
        sims = ([_run(pol, k, lay, seed, verify=check, **tkw, **w) for pol, k in runs]
                + [_run(pol, None, lay, seed, budget=b, verify=check, **tkw, **w)
                   for pol, b in budgets])
        mrcs = [_Curve(pol, lay, seq.expand, seed, **tkw) for pol in curves]
        one_pass = [c for c in mrcs if c.how != "per-k"]  # (rounds mode: checked below)
        chunks = seq.chunks if seq.expand == "rounds" else _whole_groups(seq.chunks)
        n = 0
        n_chunks = 0
        prev = None
        jobs = len(sims) + sum(c.n_runs for c in mrcs)
        workers = min(os.cpu_count() or 1, jobs)
        if progress is not False and any(c.how != "stack" for c in mrcs):
            import sys

            for c in mrcs:
                if c.how != "stack":
                    sys.stderr.write(f"stream {seq.name}: {c.policy.name}'s curve is "
                                     f"{c.n_runs:,} carried runs ({c.how}), on {workers} "
                                     "threads\n")
        with ThreadPoolExecutor(max_workers=workers) as pool:
            with pbar.bar(seq.n_requests, f"stream {seq.name}", unit="req",
                          show=progress) as bar:
                for item in chunks:
                    pages, steps, nxt, tok, score = seq.columns(item)
                    if one_pass and steps.size:
                        first = steps[0] == prev if prev is not None else False
                        if first or (steps.size > 1 and (np.diff(steps) == 0).any()):
                            i = n + (0 if first
                                     else int(np.flatnonzero(np.diff(steps) == 0)[0]) + 1)
                            raise PagingError(f"trace {seq.name}: request {i} shares its step "
                                              "with the one before (a group); a streamed "
                                              "one-pass miss curve needs a rounds-mode trace")
                        prev = steps[-1]
                    work = [partial(r.feed, pages, steps, nxt, tok, score) for r in sims]
                    for c in mrcs:
                        work += c.jobs(pages, steps, nxt, tok, score)
                    _work(pool, workers, work)
                    n += pages.size
                    n_chunks += 1
                    bar.update(pages.size)
            again = [r for r in sims + [r for c in mrcs if c.how == "per-k" for r in c.runs]
                     if isinstance(r, _TokenRun) and r.failed]
            passes = 1
            while again:  # the token runs whose bound failed, at their next margin
                passes += 1
                for r in again:
                    r.restart()
                if progress is not False:
                    import sys

                    at = sorted({"exact sums" if r.enter is None else f"margin {r.enter:g}"
                                 for r in again})
                    sys.stderr.write(f"stream {seq.name}: a bound failed in {len(again)} token "
                                     "run(s); reading the sequence again for them "
                                     f"({', '.join(at)})\n")
                with pbar.bar(n, f"stream {seq.name} again", unit="req", show=progress) as bar:
                    for item in (seq.reopen() if seq.expand == "rounds"
                                 else _whole_groups(seq.reopen())):
                        pages, steps, nxt, tok, score = seq.columns(item)
                        _work(pool, workers, [partial(r.feed, pages, steps, nxt, tok, score)
                                              for r in again])
                        bar.update(item[0].size)
                again = [r for r in again if r.failed]
        out.append(StreamOutcome(seq.name, n, [r.result(seq.name, n, seed) for r in sims],
                                 {c.policy.name: c.curve(n) for c in mrcs},
                                 time.perf_counter() - t0, n_chunks, passes))
    return out


def _call(f):
    return f()


def _work(pool, workers: int, work: list) -> None:
    """Run a chunk's calls, on the pool's threads when there are several (the kernels
    release the GIL)."""
    if workers > 1 and len(work) > 1:
        for _ in pool.map(_call, work):
            pass
    else:
        for f in work:
            f()


def simulate_stream(source, policy: str, k: int, **kw) -> list:
    """:func:`paging.simulate.simulate` of ``policy`` at ``k`` on every sequence of
    ``source``, streamed (see :func:`stream_run` for ``source`` and the keywords): one
    :class:`~paging.result.Result` per sequence, equal to the in-memory run's."""
    return [o.results[0] for o in stream_run(source, [(policy, k)], **kw)]


def miss_curve_stream(source, policy: str = "lru", **kw) -> list[np.ndarray]:
    """:func:`paging.mrc.miss_curve` of ``policy`` (any policy :func:`curve_policy` takes) on
    every sequence of ``source``, streamed: misses for k = 1..nℓ, one array per sequence."""
    from paging.policies import make_policy

    name = make_policy(policy).name
    return [o.curves[name] for o in stream_run(source, curves=[policy], **kw)]
