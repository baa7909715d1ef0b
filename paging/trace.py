"""Request sequences for layered paging.

A :class:`Trace` is one sequence (one prompt, problem or phase), simulated from an empty cache.
It holds read-only numpy arrays:

``pages``
    the requested page ids, ``page = layer * n_experts + expert`` (:mod:`paging.layout`);
``steps``
    the *layer clock*: ``steps[i] mod ℓ`` is the layer of request i and ``steps[i] // ℓ`` its
    forward pass. In ``rounds`` mode (the paper's, Sec. 5.1) every request is its own step, so
    ``steps = 0, 1, 2, ...`` and request i belongs to layer ``i mod ℓ`` exactly as in Sec. 2.2.
    In ``groups`` mode the K experts of one (token, layer) share one step and form a *group*:
    the simulator pins the group's pages while the group is served, so they cannot evict each
    other;
``token``, ``rank``, ``score`` (optional)
    the token index within the sequence, the expert's rank in its top-K list (0 = listed first,
    the highest gate score in gate-score traces) and its gate score.
``logits`` (optional)
    the router's full logits, a read-only float64 array of shape ``(T, ℓ, n)`` indexed by
    ``(token, layer, expert)`` (``token`` as in the ``token`` column, which it requires): what
    cache-aware routing (:mod:`paging.routing`) re-ranks. None when the file has only the top-K
    gate scores (the Mixtral logs) or no scores at all. Every value must be finite.

Two expansions of a top-K routing table ``experts[token, layer, r]`` (:func:`from_routing`):

* ``rounds``: token t becomes K rounds; round r requests ``experts[t, z, r]`` for z = 0..ℓ-1
  ("we create several rounds for the processing of a single token: one round for the first
  expert, a second round for the second expert", Angelopoulos et al., Sec. 5.1).
* ``groups``: token t becomes ℓ groups; group (t, z) requests ``experts[t, z, 0..K-1]`` one after
  another, all at step ``t·ℓ + z``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numba import njit

from paging.errors import PagingError
from paging.layout import Layout

EXPANSIONS = ("rounds", "groups")


class TraceError(PagingError):
    """A trace that breaks the layered model, found at request ``request`` (0-based index).

    Readers turn the index into the file and line of that request
    (:func:`paging.io._pages.build_trace`); raised directly it names the trace."""

    def __init__(self, trace: str, request: int, message: str):
        self.trace, self.request, self.detail = trace, int(request), message
        super().__init__(f"trace {trace}: {message}")


_CHUNK = 1 << 22  # validation works on blocks of this many requests (bounded temporaries)


def token_violation(steps: np.ndarray, token: np.ndarray | None, rank: np.ndarray | None,
                    n_layers: int, expand: str, prev: tuple | None = None, offset: int = 0):
    """The first request whose ``token`` or ``rank`` contradicts the layer clock, as
    ``(index, message)`` (index into ``steps``; the message numbers it ``offset + index``), or
    None. ``prev``: ``(step, token, rank)`` of the request before ``steps[0]`` (a chunk
    continuing a sequence; None at its start).

    The rules are those of :func:`from_routing`'s expansions, which every reader and writer
    keeps: a forward pass (``steps // ℓ``) belongs to one token (one id) and, in rounds mode,
    to one rank; the next pass either continues the token with the next rank (rounds mode:
    round r + 1 of the same token) or starts a later token (a larger id; rank 0 in rounds
    mode, and in groups mode every pass is a new token). Token ids that went down, ran one per
    request or stood still were read without complaint and changed every token boundary the
    token policies, the groups re-expansion and the serving model read. (A group's ranks are
    not held to be distinct: a serving step's group gives each expert the best rank any of its
    tokens gave it.)"""
    if token is None and rank is None:
        return None
    s = np.ascontiguousarray(steps, dtype=np.int64)
    if s.size == 0:
        return None
    t = np.ascontiguousarray(token if token is not None else np.zeros(0), dtype=np.int64)
    r = np.ascontiguousarray(rank if rank is not None else np.zeros(0), dtype=np.int64)
    p = prev if prev is not None else (0, 0, 0)
    rounds = expand == "rounds"
    i, rule = _token_scan(s, t, r, token is not None, rank is not None, int(n_layers), rounds,
                          int(p[0]), int(p[1]), int(p[2]), prev is not None)
    if i < 0:
        return None

    def before(a, k):  # the request before i: in the arrays, or the previous chunk's
        return int(a[i - 1]) if i > 0 else int(p[k])

    at = f"request {offset + i} (step {int(s[i])})"
    if rule == _TOKEN_IN_PASS:
        return i, (f"{at} has token id {int(t[i])} inside the forward pass of token "
                   f"{before(t, 1)}; expected one token id per forward pass (steps // "
                   f"{n_layers} layers)")
    if rule == _TOKEN_NOT_UP:
        return i, (f"{at} starts a forward pass with token id {int(t[i])} after token "
                   f"{before(t, 1)}; expected token ids to increase from token to token"
                   + ("" if rounds else " (groups mode: one forward pass per token; a "
                                        "trace in rounds order is read with --expand "
                                        "rounds)"))
    ri, rp = int(r[i]), before(r, 2)
    if rule == _RANK_IN_ROUND:
        return i, (f"{at} has rank {ri} inside a round of rank {rp}; expected one rank per "
                   "round in rounds mode")
    if rule == _RANK_NOT_ZERO:
        return i, (f"{at} starts token {int(t[i])} with rank {ri}; expected its first round to "
                   "have rank 0")
    return i, (f"{at} has rank {ri} after a round of rank {rp}; expected the rounds of a token "
               "to have ranks 0, 1, ..., K-1")


# the rule :func:`_token_scan` found broken (the message is made from it, once)
_TOKEN_IN_PASS, _TOKEN_NOT_UP, _RANK_IN_ROUND, _RANK_NOT_ZERO, _RANK_NOT_NEXT = range(1, 6)


@njit(cache=True, nogil=True)
def _token_scan(s, t, r, has_t, has_r, L, rounds, p_s, p_t, p_r, has_prev):  # pragma: no cover
    """:func:`token_violation`'s scan: ``(index, rule)`` of the first request that breaks the
    rules (``rule`` one of the ``_TOKEN_*``/``_RANK_*`` codes), or ``(-1, 0)`` (one pass, no
    temporaries: a streamed chunk of millions of requests)."""
    for i in range(s.size):
        if i == 0 and not has_prev:
            continue
        ps, ts, rs = (s[i - 1], 0, 0) if i > 0 else (p_s, p_t, p_r)
        if i > 0:
            if has_t:
                ts = t[i - 1]
            if has_r:
                rs = r[i - 1]
        same = s[i] // L == ps // L
        up = False
        if has_t:
            up = t[i] > ts
            if same and t[i] != ts:
                return i, _TOKEN_IN_PASS
            if not same and (t[i] < ts or (not rounds and not up)):
                return i, _TOKEN_NOT_UP
        if has_r and rounds:
            if same and r[i] != rs:
                return i, _RANK_IN_ROUND
            if not same:
                if has_t:
                    if up and r[i] != 0:
                        return i, _RANK_NOT_ZERO
                    if not up and r[i] != rs + 1:
                        return i, _RANK_NOT_NEXT
                elif r[i] != rs + 1 and r[i] != 0:
                    return i, _RANK_NOT_NEXT
    return -1, 0


def n_distinct(a) -> int:
    """Distinct values of ``a``: O(N) for the non-decreasing arrays of traces (steps, token
    ids), else :func:`numpy.unique`. (numpy 2.4's ``unique`` hashes every value first: 0.27 s
    on 2M sorted steps, most of a compiled run's time with a miss handler.)"""
    a = np.asarray(a)
    if a.size == 0:
        return 0
    d = np.diff(a)
    if (d >= 0).all():
        return int(np.count_nonzero(d)) + 1
    return int(np.unique(a).size)


def top1_groups(steps, rank) -> int:
    """(token, layer) groups served: the steps holding a request of rank 0 (a batched
    prefill's group holds several; the reference loop's and the kernels' observers count so)."""
    s, r = np.asarray(steps, dtype=np.int64), np.asarray(rank, dtype=np.int64)
    return n_distinct(s[r == 0])


def step_message(i: int, step: int, before: int, expand: str) -> str:
    """The error of request ``i``, whose step ``step`` does not follow ``before`` (whole traces
    and streamed chunks word it alike)."""
    hint = ("; a repeated step is a group: a trace in groups order reads with --expand groups"
            if expand == "rounds" and step == before else "")
    return (f"request {i} has step {step} after {before}; steps must advance by 1 per request "
            f"in rounds mode and by 0 or 1 in groups mode{hint}")


class ChunkCheck:
    """The checks of a layered sequence, chunk by chunk (a :class:`Trace` is validated by one).

    ``check(pages, steps)`` validates the next chunk of one sequence (its requests continue the
    previous chunks'; ``token`` and ``rank``, when the file has them, are held to the layer
    clock by :func:`token_violation`); a violation raises
    :class:`~paging.trace.TraceError` with the request's index in the whole sequence and the
    same message as the whole-trace check. ``where(i)``, when given, turns it into the reader's
    :class:`PagingError` (``(prefix, line)`` of request i, as
    :func:`paging.io._pages.build_trace`); ``lines`` passed to ``check`` give the lines of the
    chunk's requests for it.
    """

    def __init__(self, layout: Layout, expand: str, name: str, file: str | None = None,
                 where: Callable | None = None, id_message: Callable | None = None):
        if expand not in EXPANSIONS:
            raise PagingError(f"expand must be one of {', '.join(EXPANSIONS)}, got {expand!r}")
        self.layout, self.expand, self.name = layout, expand, name
        self.file, self.where, self.id_message = file, where, id_message
        self.offset = 0  # requests checked so far
        self.prev = None  # the last step checked
        self.prev_tr = (0, 0)  # the last request's token id and rank (when the file has them)
        self.group = (np.zeros(0, np.int64), np.zeros(0, np.int64))  # the last group's tail

    def _fail(self, i: int, detail: str, lines):
        if self.where is None:
            raise TraceError(self.name, i, detail)
        prefix, line = self.where(i, lines)
        raise PagingError(f"{prefix}{detail}", self.file, line)

    def check(self, pages: np.ndarray, steps: np.ndarray, lines=None, token=None,
              rank=None) -> None:
        lay, lo = self.layout, self.offset
        p, s = pages, steps
        if p.shape != s.shape:
            raise PagingError(f"trace {self.name}: {s.size} steps for {p.size} pages")
        if p.size == 0:
            return
        if self.prev is None and s[0] != 0:
            self._fail(lo, f"the first step must be 0, got {int(s[0])}", lines)
        bad = np.flatnonzero((p < 0) | (p >= lay.n_pages))
        if bad.size:
            j = int(bad[0])
            if self.id_message is not None:
                prefix, line = self.where(lo + j, lines)
                raise PagingError(f"{prefix}{self.id_message(int(p[j]))}", self.file, line)
            self._fail(lo + j, f"request {lo + j} is page {int(p[j])}, expected a page id in "
                       f"0..{lay.n_pages - 1} (n_experts={lay.n_experts}, "
                       f"n_layers={lay.n_layers})", lines)
        rounds = self.expand == "rounds"
        d0 = None if self.prev is None else int(s[0]) - self.prev  # (across the chunks' edge)
        d = np.diff(s)  # (request j + 1's step after request j's)
        bad = np.flatnonzero((d < 0) | (d > 1) | ((d == 0) & rounds))
        if d0 is not None and (d0 < 0 or d0 > 1 or (d0 == 0 and rounds)):
            bad = np.array([-1])
        if bad.size:
            j = int(bad[0]) + 1
            before = int(s[j - 1]) if j > 0 else int(self.prev)
            self._fail(lo + j, step_message(lo + j, int(s[j]), before, self.expand), lines)
        layer = p // lay.n_experts
        bad = np.flatnonzero(layer != s % lay.n_layers)
        if bad.size:
            j = int(bad[0])
            self._fail(lo + j, f"wrong layer order: request {lo + j} is page {int(p[j])} "
                       f"(layer {int(layer[j])}), expected a page of layer "
                       f"{int(s[j] % lay.n_layers)} (step {int(s[j])} mod {lay.n_layers} "
                       "layers)", lines)
        if self.expand == "groups":
            gp, gs = self.group
            pp, ss = np.concatenate([gp, p]), np.concatenate([gs, s])
            if (np.diff(ss) == 0).any():
                order = np.lexsort((pp, ss))
                dup = np.flatnonzero((ss[order][1:] == ss[order][:-1])
                                     & (pp[order][1:] == pp[order][:-1]))
                if dup.size:
                    j = int(order[dup[0] + 1]) - gp.size
                    self._fail(lo + j, f"request {lo + j}: step {int(s[j])} requests page "
                               f"{int(p[j])} twice; the K experts of a group must differ",
                               lines)
            last = s[-1]
            start = int(np.searchsorted(s, last, side="left"))  # s is sorted (checked above)
            tail_p, tail_s = p[start:], s[start:]
            if start == 0 and gs.size and gs[-1] == last:  # the group spans the whole chunk
                tail_p, tail_s = pp, ss
                keep = tail_s == last
                tail_p, tail_s = tail_p[keep], tail_s[keep]
            self.group = (tail_p.copy(), tail_s.copy())
        if token is not None or rank is not None:
            prev = None if self.prev is None else (self.prev, *self.prev_tr)
            tv = token_violation(s, token, rank, lay.n_layers, self.expand, prev, lo)
            if tv is not None:
                self._fail(lo + tv[0], tv[1], lines)
            self.prev_tr = (0 if token is None else int(token[-1]),
                            0 if rank is None else int(rank[-1]))
        self.prev = int(s[-1])
        self.offset += p.size


def _frozen(a, dtype) -> np.ndarray:
    """A read-only array of ``dtype``: an array that already is one is adopted as it is (no
    copy, so 10^8-request traces cost no extra memory); anything else is copied and frozen."""
    if (isinstance(a, np.ndarray) and a.dtype == dtype and not a.flags.writeable
            and a.flags.c_contiguous):
        return a
    a = np.array(a, dtype=dtype, copy=True)
    a.setflags(write=False)
    return a


def _flat(a: np.ndarray) -> np.ndarray:
    return a if a.ndim == 1 else a.reshape(-1)


@dataclass(frozen=True, eq=False)
class Trace:
    """One layered request sequence (read-only). See the module docstring for the fields."""

    layout: Layout
    pages: np.ndarray
    steps: np.ndarray
    name: str = "trace"
    token: np.ndarray | None = None
    rank: np.ndarray | None = None
    score: np.ndarray | None = None
    expand: str = "rounds"
    meta: dict = field(default_factory=dict)
    logits: np.ndarray | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "pages", _flat(_frozen(self.pages, np.int64)))
        set_(self, "steps", _flat(_frozen(self.steps, np.int64)))
        for opt, dt in (("token", np.int64), ("rank", np.int64), ("score", np.float64)):
            v = getattr(self, opt)
            if v is not None:
                v = _flat(_frozen(v, dt))
                if v.shape != self.pages.shape:
                    raise PagingError(f"trace {self.name}: {opt} has {v.size} entries, pages has "
                                      f"{self.pages.size}")
                set_(self, opt, v)
        if self.expand not in EXPANSIONS:
            raise PagingError(f"expand must be one of {', '.join(EXPANSIONS)}, got {self.expand!r}")
        set_(self, "meta", dict(self.meta))
        if self.logits is not None:
            set_(self, "logits", check_logits(self.logits, self.layout, self.token, self.name))
        self._validate()

    # -- validation ---------------------------------------------------------------------------
    def _validate(self) -> None:
        p, s = self.pages, self.steps
        if p.shape != s.shape:
            raise PagingError(f"trace {self.name}: {s.size} steps for {p.size} pages")
        chk = ChunkCheck(self.layout, self.expand, self.name)  # (as a streamed file's chunks)
        for lo in range(0, p.size, _CHUNK):  # chunks keep the temporaries small
            hi = min(p.size, lo + _CHUNK)
            chk.check(p[lo:hi], s[lo:hi], token=None if self.token is None else
                      self.token[lo:hi], rank=None if self.rank is None else self.rank[lo:hi])

    # -- derived views -------------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.pages.size)

    @property
    def n_requests(self) -> int:
        return int(self.pages.size)

    @cached_property
    def layers(self) -> np.ndarray:
        """Layer of every request (``steps mod ℓ``)."""
        a = self.steps % self.layout.n_layers
        a.setflags(write=False)
        return a

    @cached_property
    def passes(self) -> np.ndarray:
        """Forward pass of every request (``steps // ℓ``): the round in rounds mode, the token in
        groups mode."""
        a = self.steps // self.layout.n_layers
        a.setflags(write=False)
        return a

    @cached_property
    def next_use(self) -> np.ndarray:
        """``next_use[i]``: index of the next request of ``pages[i]`` after i, or ``len(self)``
        when there is none (the clairvoyant input of Belady's rule). O(N)."""
        return next_use(self.pages)

    @cached_property
    def top_k(self) -> int:
        """K of the trace, the one definition every part of the package reads: the model's
        top-K when the reader recorded it (``meta["top_k"]``; a batched prefill groups up to n
        experts of a layer, so its ranks and group sizes exceed K), else the largest rank + 1,
        else the largest group (1 in rounds mode without ranks, and for an empty trace)."""
        def largest_group() -> int:
            if self.n_requests == 0:
                return 1
            return int(np.max(np.diff(np.flatnonzero(np.r_[True, np.diff(self.steps) != 0,
                                                           True]))))

        rank_max = int(self.rank.max()) if self.rank is not None and self.rank.size else None
        return top_k_of(self.meta, rank_max, largest_group)

    @property
    def is_grouped(self) -> bool:
        return self.n_requests > 0 and bool(np.any(np.diff(self.steps) == 0))

    def head(self, n: int) -> Trace:
        """The first n requests. ``meta`` records ``head_of`` (the full length), ``n_tokens``
        counts the tokens that remain, and the entries that describe the full sequence's rows
        and phases are dropped."""
        def cut(a):
            return None if a is None else a[:n]

        meta = {k: v for k, v in self.meta.items() if k not in ("rows", "phases", "phase_bounds")}
        meta["head_of"] = self.meta.get("head_of", self.n_requests)
        if self.token is not None:
            meta["n_tokens"] = n_distinct(self.token[:n])
        return Trace(self.layout, self.pages[:n], self.steps[:n], self.name, cut(self.token),
                     cut(self.rank), cut(self.score), self.expand, meta, self.logits)

    def __repr__(self) -> str:
        return (f"Trace({self.name!r}, {self.n_requests} requests, n_experts="
                f"{self.layout.n_experts}, n_layers={self.layout.n_layers}, expand={self.expand})")


def group_starts(steps) -> np.ndarray:
    """The index of the first request of every group of a trace whose layer clock is
    ``steps`` (a group: a run of equal steps; one request each in rounds mode)."""
    steps = np.asarray(steps)
    if steps.size == 0:
        return np.zeros(0, np.int64)
    return np.flatnonzero(np.r_[True, steps[1:] != steps[:-1]])


def sequence_bounds(trace: Trace) -> list[dict]:
    """The bounds records of the sequences in ``trace``: ``meta["warm"]`` of a joined trace
    (:func:`paging.warm.concat`); for any other trace one record spanning it
    (:func:`sequence_record`)."""
    if trace.meta.get("warm"):
        return trace.meta["warm"]
    return [sequence_record(trace, 0)]


def prompt_key(sequence: dict) -> str:
    """The identity of the prompt a sequence record names (``meta["sequence"]``: a routing
    log's dataset and problem), whichever file or phase it was read from: a decode log's
    problem 0 and a prefill+decode dump of problem 0 have the same."""
    import json

    return json.dumps(sequence, sort_keys=True, default=str)


def prompt_label(sequence: dict) -> str:
    """``dataset humaneval, problem_id 0``: a prompt as the messages name it."""
    return ", ".join(f"{k} {v}" for k, v in sorted(sequence.items()))


def sequence_record(t: Trace, start: int) -> dict:
    """The bounds record of one sequence whose first request is request ``start`` of the run:
    ``name``, ``start``, ``end``, ``prefill_tokens`` (a batched prefill's prompt length, else
    0) and, when the sequence has them, its ``phase_bounds`` shifted by ``start`` and its
    ``sequence`` (the prompt a routing log names: dataset, problem id)."""
    rec = {"name": t.name, "start": start, "end": start + t.n_requests,
           "prefill_tokens": int(t.meta.get("prefill_tokens") or 0)
           if t.meta.get("batched_prefill") else 0}
    bounds = t.meta.get("phase_bounds")
    if bounds:
        rec["phase_bounds"] = {k: [int(a) + start, int(b) + start] for k, (a, b)
                               in bounds.items()}
    if t.meta.get("sequence"):  # (the prompt it records, a routing log's dataset and problem)
        rec["sequence"] = dict(t.meta["sequence"])
    return rec


def prefill_mask(trace: Trace) -> np.ndarray:
    """Per request of ``trace``, whether it belongs to a prefill phase (each sequence's
    ``phase_bounds``, :func:`sequence_bounds`)."""
    out = np.zeros(trace.n_requests, dtype=bool)
    for rec in sequence_bounds(trace):
        pre = (rec.get("phase_bounds") or {}).get("prefill")
        if pre:
            out[int(pre[0]):int(pre[1])] = True
    return out


def top_k_of(meta: dict, rank_max: int | None, largest_group=lambda: 1) -> int:
    """:attr:`Trace.top_k` from its parts: the top-K a reader recorded in ``meta`` (an integer
    >= 1), else the largest rank + 1 (``rank_max``: None without ranks), else
    ``largest_group()`` (1 in rounds mode: what a chunked reader, which has not seen the
    steps, passes by default)."""
    K = meta.get("top_k")
    if isinstance(K, (int, np.integer)) and not isinstance(K, bool) and K >= 1:
        return int(K)
    if rank_max is not None:
        return rank_max + 1
    return largest_group()


def token_visits(trace) -> int:
    """How often the layer clock walks every layer per token: the trace's top-K in the rounds
    expansion (round r holds every layer's r-th expert), 1 in groups mode or without a top-K."""
    if trace.expand != "rounds" or trace.token is None:
        return 1
    return trace.top_k


def check_logits(logits, layout: Layout, token, name: str = "trace") -> np.ndarray:
    """``logits`` as a read-only float64 array ``(T, ℓ, n)``, or a :class:`PagingError`: wrong
    shape (the last axis must be the number of experts), NaN or infinite values, or a token id
    of the trace beyond T."""
    a = _frozen(logits, np.float64)
    L, n = layout.n_layers, layout.n_experts
    if a.ndim != 3 or a.shape[1:] != (L, n):
        raise PagingError(f"trace {name}: logits must have shape (tokens, {L} layers, {n} "
                          f"experts), got {a.shape}")
    if not np.isfinite(a).all():
        t, z, e = (int(x[0]) for x in np.nonzero(~np.isfinite(a)))
        raise PagingError(f"trace {name}: the logit of token {t}, layer {z}, expert {e} is "
                          f"{a[t, z, e]}; expected finite numbers")
    if token is None:
        raise PagingError(f"trace {name}: logits are indexed by token; the trace has no token "
                          "column")
    if token.size and int(token.max()) >= a.shape[0]:
        raise PagingError(f"trace {name}: token {int(token.max())} has no logits (the array "
                          f"covers {a.shape[0]} tokens)")
    return a


@njit(cache=True, nogil=True)
def _next_use_dense(pages, n_ids):
    """One backward pass with the latest index of each id (ids in 0..n_ids-1): O(N + n_ids)."""
    n = pages.size
    out = np.empty(n, np.int64)
    seen = np.full(n_ids, n, np.int64)
    for i in range(n - 1, -1, -1):
        p = pages[i]
        out[i] = seen[p]
        seen[p] = i
    return out


def next_use(pages: np.ndarray) -> np.ndarray:
    """Index of the next occurrence of each element of ``pages`` (``len(pages)`` if none).

    Page ids are dense (0..nℓ-1), so one compiled backward pass does it in O(N); ids that
    are negative or sparse (larger than max(N, 2^20)) take a stable sort, O(N log N)."""
    pages = np.asarray(pages, dtype=np.int64)
    n = pages.size
    if n and pages.min() >= 0 and pages.max() < max(n, 1 << 20):
        out = _next_use_dense(pages, int(pages.max()) + 1)
    else:
        out = np.full(n, n, dtype=np.int64)
        if n:
            order = np.argsort(pages, kind="stable")
            same = pages[order[1:]] == pages[order[:-1]]
            out[order[:-1][same]] = order[1:][same]
    out.setflags(write=False)
    return out


def from_pages(pages, layout: Layout, name: str = "trace", **kw) -> Trace:
    """A rounds-mode trace from a flat page sequence (request i must be a page of layer i mod ℓ)."""
    pages = np.asarray(pages, dtype=np.int64).reshape(-1)
    return Trace(layout, pages, np.arange(pages.size, dtype=np.int64), name, **kw)


def from_routing(experts, layout: Layout, expand: str = "rounds", scores=None,
                 name: str = "trace", meta: dict | None = None, logits=None) -> Trace:
    """Expand a routing table ``experts[token, layer, r]`` (T x ℓ x K expert ids, r = rank) into a
    trace; ``scores`` (same shape, optional) travel with the requests and ``logits`` (T x ℓ x n,
    optional) with the trace. See the module docstring for the two expansions."""
    e = np.asarray(experts, dtype=np.int64)
    if e.ndim == 2:
        e = e[:, :, None]
    if e.ndim != 3 or e.shape[1] != layout.n_layers:
        raise PagingError(f"trace {name}: routing table must be tokens x {layout.n_layers} layers "
                          f"x K, got shape {e.shape}")
    if e.size and (e.min() < 0 or e.max() >= layout.n_experts):
        raise PagingError(f"trace {name}: expert ids must be in 0..{layout.n_experts - 1}, got "
                          f"{int(e.min())}..{int(e.max())}")
    s = None if scores is None else np.asarray(scores, dtype=np.float64).reshape(e.shape)
    T, L, K = e.shape
    tok = np.broadcast_to(np.arange(T)[:, None, None], e.shape)
    rank = np.broadcast_to(np.arange(K)[None, None, :], e.shape)
    lay = np.broadcast_to(np.arange(L)[None, :, None], e.shape)
    if expand == "rounds":
        # order (token, rank, layer): round r of token t walks every layer
        perm = (0, 2, 1)
        steps = np.arange(T * K * L, dtype=np.int64)
    elif expand == "groups":
        perm = (0, 1, 2)  # (token, layer, rank): a group per (token, layer)
        steps = np.repeat(np.arange(T * L, dtype=np.int64), K)
    else:
        raise PagingError(f"expand must be one of {', '.join(EXPANSIONS)}, got {expand!r}")

    def flat(a):
        return np.ascontiguousarray(np.transpose(a, perm)).reshape(-1)

    pages = flat(layout.page(lay, e))
    m = {"top_k": K, "n_tokens": T}
    m.update(meta or {})
    return Trace(layout, pages, steps, name, flat(tok), flat(rank),
                 None if s is None else flat(s), expand, m, logits)
