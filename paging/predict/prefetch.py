"""Next-layer expert predictors and prefetch strategies (SpecMD, Sec. 3.1.4 and Algorithm 1).

The one loop (:func:`paging.simulate.simulate`) calls a :class:`Prefetcher` after every group
it serves (SpecMD Algorithm 1: gate -> serve -> submit prefetch): the *target* is the
(token, layer) of the next request in the trace, i.e. the next layer of the same token, or
layer 0 of the next token after the last layer ("we resort to prefetching only the very next
layer experts", Sec. 3.1.4). The predictor scores the n experts of the target layer (a score
<= 0 means "not proposed"), the strategy turns the scores into a set, and the simulator
inserts the pages that are not resident (:meth:`paging.simulate.Simulation.prefetch_group`).

No built-in predictor reads the cache, so the whole run's proposals are computed before the run
(:meth:`Prefetcher.reset` makes the *plan*: every batch's pages, in insertion order), by one
array computation per predictor (:meth:`PrefetchPredictor.score_matrix`) instead of a Python
call per batch; the loop then only inserts them. :meth:`PrefetchPredictor.observe` and
:meth:`PrefetchPredictor.scores` stay the per-batch definition (the base class's
``score_matrix`` calls them batch by batch, so a user predictor needs only those two), and a
test checks every built-in ``score_matrix`` against them.

Prediction quality is set-based and micro-averaged over the batches: with S the predicted set
and A the experts the trace actually requests at the target (token, layer),
``precision = Σ|S ∩ A| / Σ|S|`` and ``recall = Σ|S ∩ A| / Σ|A|``.

Predictors (``--prefetch NAME[:opts]``)
---------------------------------------
``oracle:precision=P,recall=R,seed=S[,rounding=stochastic|nearest]``
    Reads the future (it is the oracle). Noise model, per batch, with A the true set (a
    experts) and one draw u ~ U[0, 1): keep m = sround(R·a, u) experts of A and propose
    s = sround(R·a/P, u) experts in all, i.e. add f = min(n − a, s − m) experts outside A,
    each set drawn uniformly without replacement, where sround(x, u) = ⌊x⌋ + [u < x − ⌊x⌋] is
    stochastic rounding (``rounding=stochastic``, the default). So E[m] = R·a and
    E[m + f] = R·a/P exactly: summed over many batches the measured recall Σm/Σa and
    precision Σm/Σ(m + f) equal R and P up to sampling error (the counts are unbiased; their
    variance per batch is at most 1/4, below a binomial's). Rounding m and s with the same u
    keeps s >= m (R·a/P >= R·a) and s within one expert of R·a/P: with P = R, s = a, so the
    strategy ``topk:overfetch=1`` (K = a) never cuts the proposal. The cap n − a (too few
    other experts for a low P) is the only bias: the measured precision is then above P.
    ``rounding=nearest`` is the first model, kept under its name: m = round(R·a),
    f = min(n − a, round(m·(1 − P)/P)) (f = 0 when m = 0), rounded per batch; on top-2
    traces it is biased (P = R = 0.8: m = round(1.6) = 2 always and f = round(0.4999…) = 0,
    so it measures precision 1 and recall near 1). The proposed experts get scores 1 + v with
    v ~ U[0, 1) (a random order for strategies that cut the list), the others 0. P = R = 1
    proposes exactly A under both. Draws come from ``numpy.random.default_rng(S)`` in batch
    order.
``previous-token``
    The experts the target layer used for the previous token (score 1 each).
``transition``
    Layer-to-layer co-activation counts learned on *training* sequences: C[z][e][e'] counts
    tokens with expert e at layer z and e' at layer z+1 (for z = ℓ−1: e' at layer 0 of the next
    token); the target's scores are Σ_{e in the group just served} C[z][e][:]. Fitting on the
    sequence being simulated is refused (the CLI fits on the file's other sequences, or on
    ``train=FILE``).
``frequency``
    Per-layer popularity so far: how often each expert of the target layer was requested
    earlier in this run.

Strategies (``--prefetch-strategy``)
------------------------------------
``topk:overfetch=F`` (F >= 1; default 1)
    The round(K·F) best-scored proposed experts (K = the trace's top-K, or K x the prompt's
    tokens, at most n, for a layer of a batched prefill pass; SpecMD uses F = 1,
    1.5, 2: "with overfetch factor 1.5, OLMoE prefetches 12 experts instead of 8"); ties to the
    lower expert id.
``percentile:p=P`` (0 < P < 100; default 80)
    Every proposed expert whose score is above the P-th percentile of the layer's n scores
    (``numpy.percentile``, linear interpolation), after Zhu et al. 2025 as SpecMD describes
    it ("prefetch all experts above a configurable percentile threshold (the default is 80th
    percentile)").
"""

from __future__ import annotations

import math

import numpy as np

from paging.errors import PagingError
from paging.options import parse_spec, spec_number, take_float, take_int
from paging.registry import Registry
from paging.trace import Trace, prompt_key, prompt_label
from paging.warm import prefill_ranges


def _tokens(trace: Trace) -> np.ndarray:
    return np.asarray(trace.token if trace.token is not None else trace.passes, dtype=np.int64)


class PrefetchPredictor:
    """Scores the experts of a target (token, layer). Subclasses override :meth:`scores`."""

    name = "predictor"

    def reset(self, trace: Trace, rng: np.random.Generator) -> None:
        self.trace, self.rng = trace, rng
        self.n = trace.layout.n_experts
        self.L = trace.layout.n_layers

    def observe(self, lo: int, hi: int) -> None:
        """Requests ``lo..hi-1`` (one group) were served."""

    def scores(self, lo: int, hi: int, token: int, layer: int, actual: np.ndarray) -> np.ndarray:
        """Scores of the n experts of (``token``, ``layer``) after the group ``lo..hi-1``.
        ``actual`` holds the true experts; only the oracle may read it."""
        raise NotImplementedError

    def score_matrix(self, lo: np.ndarray, hi: np.ndarray, token: np.ndarray,
                     layer: np.ndarray, actual: np.ndarray) -> np.ndarray:
        """Scores of every batch at once, shape (G, n): row g is :meth:`scores` after
        ``observe`` of the groups 0..g (``lo``, ``hi``: each batch's group; ``token``, ``layer``:
        its target; ``actual``: (G, n) booleans, the true experts of each target). This default
        is the per-batch loop; the built-in predictors override it with array code."""
        out = np.zeros((lo.size, self.n))
        for g, (a, b, tk, z) in enumerate(zip(lo.tolist(), hi.tolist(), token.tolist(),
                                              layer.tolist(), strict=True)):
            self.observe(a, b)
            out[g] = self.scores(a, b, tk, z, np.flatnonzero(actual[g]))
        return out

    def spec(self) -> str:
        return self.name


#: how the oracle turns R·a and R·a/P into whole numbers of experts (module docstring)
ORACLE_ROUNDINGS = ("stochastic", "nearest")


def _sround(x: float, u: float) -> int:
    """Stochastic rounding of ``x`` >= 0 with the uniform draw ``u``: ⌊x⌋ + [u < x − ⌊x⌋]."""
    f = math.floor(x)
    return int(f) + (1 if u < x - f else 0)


class PrefetchOracle(PrefetchPredictor):
    name = "oracle"

    def __init__(self, precision: float = 1.0, recall: float = 1.0, seed: int = 0,
                 rounding: str = "stochastic"):
        if rounding not in ORACLE_ROUNDINGS:
            raise PagingError(f"oracle: rounding must be stochastic or nearest, got {rounding!r}")
        self.precision, self.recall, self.seed = float(precision), float(recall), int(seed)
        self.rounding = rounding

    def reset(self, trace, rng):
        super().reset(trace, rng)
        self.rng = np.random.default_rng(self.seed)  # the oracle's noise has its own seed

    def _counts(self, a: int, n_other: int) -> tuple[int, int]:
        """``(m, f)``: true experts kept and others added for a target of ``a`` true experts
        (draws u first under stochastic rounding)."""
        R, P = self.recall, self.precision
        if self.rounding == "nearest":
            m = int(math.floor(R * a + 0.5))
            f = 0 if m == 0 else min(n_other, int(math.floor(m * (1 - P) / P + 0.5)))
            return m, f
        u = float(self.rng.random())
        m = _sround(R * a, u)
        return m, min(n_other, max(0, _sround(R * a / P, u) - m))

    def _propose(self, out, act, others) -> None:
        """Write one batch's scores into ``out`` (a row), from the true and the other experts."""
        rng = self.rng
        m, f = self._counts(act.size, others.size)
        keep = rng.choice(act, size=m, replace=False) if m else act[:0]
        extra = rng.choice(others, size=f, replace=False) if f else others[:0]
        chosen = np.concatenate([keep, extra]).astype(np.int64)
        out[chosen] = 1.0 + rng.random(chosen.size)

    def scores(self, lo, hi, token, layer, actual):
        out = np.zeros(self.n)
        self._propose(out, np.asarray(actual), np.setdiff1d(np.arange(self.n), actual))
        return out

    def score_matrix(self, lo, hi, token, layer, actual):
        """:meth:`scores` batch by batch (the same draws in the same order), with the true and
        the other experts read off ``actual`` instead of set operations."""
        out = np.zeros((lo.size, self.n))
        for g in range(lo.size):
            row = actual[g]
            self._propose(out[g], np.flatnonzero(row), np.flatnonzero(~row))
        return out

    def spec(self):
        return (f"oracle:precision={spec_number(self.precision)},"
                f"recall={spec_number(self.recall)},seed={self.seed}"
                + ("" if self.rounding == "stochastic" else f",rounding={self.rounding}"))


class PreviousToken(PrefetchPredictor):
    name = "previous-token"

    def reset(self, trace, rng):
        super().reset(trace, rng)
        self.tok = _tokens(trace)
        self.layers = trace.layers
        self.pages = trace.pages
        self.cur_tok = [-1] * self.L
        self.cur: list[set] = [set() for _ in range(self.L)]
        self.prev: list[set] = [set() for _ in range(self.L)]

    def observe(self, lo, hi):
        for i in range(lo, hi):
            z, tk = int(self.layers[i]), int(self.tok[i])
            if tk != self.cur_tok[z]:
                self.prev[z], self.cur[z], self.cur_tok[z] = self.cur[z], set(), tk
            self.cur[z].add(int(self.pages[i]) % self.n)

    def scores(self, lo, hi, token, layer, actual):
        src = self.cur[layer] if self.cur_tok[layer] < token else self.prev[layer]
        out = np.zeros(self.n)
        out[list(src)] = 1.0
        return out

    def score_matrix(self, lo, hi, token, layer, actual):
        """Per layer z, the requests of z split into runs of one token (``cur`` of
        :meth:`observe` is the run of the last one seen, ``prev`` the run before). The target
        is request ``hi`` itself, the next request of its layer: with r the run of the request
        of z just before it, the source is run r when its token is below the target's (then
        run r is complete) and run r − 1 otherwise (none before the first run)."""
        n, tok, lay, ex = self.n, self.tok, self.layers, self.pages % self.n
        src_of = np.full(tok.size, -1, dtype=np.int64)  # request -> row of its source run
        rows = []
        base = 0
        for z in range(self.L):
            idx = np.flatnonzero(lay == z)
            if idx.size == 0:
                continue
            tz = tok[idx]
            new = np.r_[True, tz[1:] != tz[:-1]]
            run = np.cumsum(new) - 1  # run of each request of layer z
            m = np.zeros((int(run[-1]) + 1, n), dtype=bool)
            m[run, ex[idx]] = True
            rows.append(m)
            # position q > 0: r = run[q-1]; use r if tok(r) < tok[q], else r-1
            r = run[:-1]
            use = np.where(tz[:-1] < tz[1:], r, r - 1)
            src_of[idx[1:]] = np.where(use >= 0, use + base, -1)
            base += m.shape[0]
        runs = np.concatenate(rows + [np.zeros((1, n), dtype=bool)])  # row -1: no source
        return runs[src_of[hi]].astype(np.float64)


class Frequency(PrefetchPredictor):
    name = "frequency"

    def reset(self, trace, rng):
        super().reset(trace, rng)
        self.counts = np.zeros((self.L, self.n))
        self.pages = trace.pages

    def observe(self, lo, hi):
        for p in self.pages[lo:hi].tolist():
            self.counts[p // self.n, p % self.n] += 1

    def scores(self, lo, hi, token, layer, actual):
        return self.counts[layer].copy()

    def score_matrix(self, lo, hi, token, layer, actual):
        """Row g: the requests of each expert of the target layer among requests 0..hi−1 (one
        binary search per expert and layer)."""
        out = np.zeros((lo.size, self.n))
        pages = np.asarray(self.pages)
        order = np.argsort(pages, kind="stable")
        starts = np.searchsorted(pages[order], np.arange(self.L * self.n + 1))
        for z in range(self.L):
            gz = np.flatnonzero(layer == z)
            if gz.size == 0:
                continue
            for e in range(self.n):
                p = z * self.n + e
                at = order[starts[p]:starts[p + 1]]  # request indices of p, ascending
                out[gz, e] = np.searchsorted(at, hi[gz])
        return out


class Transition(PrefetchPredictor):
    name = "transition"

    def __init__(self, train: list[Trace] | None = None, source: str | None = None):
        self.trained_on: set[str] = set()
        self.prompts: dict[str, str] = {}  # a training sequence's prompt (its key) -> its name
        self.C = None
        self.source = source
        if train:
            self.fit(train)

    def fit(self, traces: list[Trace]) -> Transition:
        """Count co-activations on ``traces`` (see the module docstring); returns self."""
        for tr in traces:
            n, L = tr.layout.n_experts, tr.layout.n_layers
            if self.C is None:
                self.C = np.zeros((L, n, n))
            elif self.C.shape != (L, n, n):
                raise PagingError(f"transition: training sequence {tr.name} has another layout")
            tok, lay, ex = _tokens(tr), tr.layers, tr.pages % n
            sets: dict[tuple[int, int], set] = {}
            for t_, z, e in zip(tok.tolist(), lay.tolist(), ex.tolist(), strict=True):
                sets.setdefault((t_, z), set()).add(e)
            for (t_, z), es in sets.items():
                nxt = sets.get((t_, z + 1)) if z + 1 < L else sets.get((t_ + 1, 0))
                if nxt:
                    for e in es:
                        self.C[z, e, list(nxt)] += 1
            self.trained_on.add(tr.name)
            if tr.meta.get("sequence"):
                self.prompts.setdefault(prompt_key(tr.meta["sequence"]), tr.name)
        return self

    def reset(self, trace, rng):
        if self.C is None:
            raise PagingError("transition needs training sequences: other sequences of the "
                              "file, or train=FILE")
        # (a warm run's joined trace predicts each of its sequences)
        seen = [x for x in trace.meta.get("warm_of") or [trace.name] if x in self.trained_on]
        if seen:
            raise PagingError(f"transition was fitted on {seen[0]}, the sequence it would "
                              "predict; fit it on other sequences (train=FILE)")
        from paging.trace import sequence_bounds

        for rec in sequence_bounds(trace):  # (the same prompt in another file or phase)
            self.check_prompt(rec["name"], rec.get("sequence"), "which it would predict")
        if self.C.shape != (trace.layout.n_layers, trace.layout.n_experts,
                            trace.layout.n_experts):
            raise PagingError("transition: the training sequences have another layout")
        super().reset(trace, rng)
        self.pages = trace.pages
        self.layers = trace.layers

    def check_prompt(self, name: str, sequence: dict | None, role: str) -> None:
        """PagingError when the sequence ``name`` records a prompt (``sequence``, a routing
        log's dataset and problem) that a training sequence recorded too: another recording of
        it (a decode log's problem 0 and a prefill+decode dump of problem 0) routes mostly
        alike, and the run would report training-set accuracy. ``role``: what the run does
        with ``name`` ("which it would predict", "a sequence the run serves")."""
        fitted = sequence and self.prompts.get(prompt_key(sequence))
        if fitted:
            raise PagingError(
                f"transition was fitted on {fitted}, the same prompt ("
                + prompt_label(sequence)
                + f") as {name}, {role}: its routing is mostly the same, so the run would "
                "report training-set accuracy; fit it on other prompts (train=FILE)")

    def scores(self, lo, hi, token, layer, actual):
        z = int(self.layers[lo])
        es = (self.pages[lo:hi] % self.n).tolist()
        return self.C[z, es, :].sum(axis=0)

    def score_matrix(self, lo, hi, token, layer, actual):
        """Row g: Σ of the count rows of the group lo..hi−1 (counts are whole numbers, so the
        order of the sum does not matter)."""
        rows = self.C[self.layers, self.pages % self.n, :]
        if lo.size == 0:
            return np.zeros((0, self.n))
        return np.add.reduceat(rows[:hi[-1]], lo, axis=0)  # the last group is no batch

    def spec(self):
        return "transition" + (f":train={self.source}" if self.source else "")


class TopK:
    """``topk:overfetch=F``: the round(K·F) best proposed experts."""

    def __init__(self, overfetch: float = 1.0):
        if not overfetch >= 1:
            raise PagingError(f"topk: overfetch must be >= 1, got {overfetch}")
        self.overfetch = float(overfetch)

    def count(self, K, n: int):
        """round(K·F), at most ``n`` (the layer's experts: F may be as large as inf, and
        K·F past int64 wrapped to a negative count, which prefetched nothing)."""
        return np.floor(np.minimum(np.asarray(K, dtype=np.float64) * self.overfetch + 0.5,
                                   n)).astype(np.int64)

    def select(self, scores: np.ndarray, K: int) -> list[int]:
        m = int(self.count(K, scores.size))
        order = np.lexsort((np.arange(scores.size), -scores))  # score desc, then id asc
        return [int(e) for e in order[:m] if scores[e] > 0]

    def select_all(self, scores: np.ndarray, K) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`select` of every row of ``scores`` (G, n): ``(rows, experts)`` in row order,
        each row's experts in selection order. ``K``: one int, or one per row."""
        m = self.count(K, scores.shape[1])
        order = np.argsort(-scores, axis=1, kind="stable")  # desc, ties to lower id
        first = np.arange(scores.shape[1])[None, :] < np.reshape(m, (-1, 1))  # the m best
        keep = first & (np.take_along_axis(scores, order, axis=1) > 0)
        return np.nonzero(keep)[0], order[keep]

    def spec(self):
        return f"topk:overfetch={spec_number(self.overfetch)}"


class Percentile:
    """``percentile:p=P``: proposed experts scored above the P-th percentile of the layer."""

    def __init__(self, p: float = 80.0):
        if not 0 < p < 100:
            raise PagingError(f"percentile: p must be in (0, 100), got {p}")
        self.p = float(p)

    def select(self, scores: np.ndarray, K: int) -> list[int]:
        cut = float(np.percentile(scores, self.p))
        order = np.lexsort((np.arange(scores.size), -scores))
        return [int(e) for e in order if scores[e] > cut and scores[e] > 0]

    def select_all(self, scores: np.ndarray, K) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`select` of every row (see :meth:`TopK.select_all`; K is not used)."""
        if scores.shape[0] == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        cut = np.percentile(scores, self.p, axis=1)[:, None]
        order = np.argsort(-scores, axis=1, kind="stable")
        s = np.take_along_axis(scores, order, axis=1)
        keep = (s > cut) & (s > 0)
        return np.nonzero(keep)[0], order[keep]

    def spec(self):
        return f"percentile:p={spec_number(self.p)}"


class Prefetcher:
    """A predictor and a strategy, called by the loop after each group (see module docs)."""

    def __init__(self, predictor: PrefetchPredictor, strategy=None):
        self.predictor = predictor
        self.strategy = strategy if strategy is not None else TopK(1.0)

    def spec(self) -> str:
        return f"{self.predictor.spec()} {self.strategy.spec()}"

    def reset(self, trace: Trace, seed: int | None) -> None:
        """Make the plan of the run on ``trace`` (:meth:`plan`) for the reference loop:
        ``self.start[g]:self.start[g+1]`` indexes batch g's pages in ``self.pages`` (lists),
        ``self.batch_of`` maps a group's first request to its batch."""
        pages, start, lo = self.plan(trace, seed)
        self.pages = pages.tolist()
        self.start = start.tolist()
        self.batch_of = dict(zip(lo.tolist(), range(lo.size), strict=True))
        self.requests = trace.pages.tolist()

    def plan(self, trace: Trace, seed: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The plan of the run on ``trace``: every batch's proposals, in insertion order.

        A batch follows each group that has a next request; its target is that request's
        (token, layer). Returns ``(pages, start, lo)``: batch g's pages are
        ``pages[start[g]:start[g+1]]``, its group starts at request ``lo[g]``; sets
        ``predicted``, ``predicted_right`` and ``actual``, the set-based counts behind precision
        and recall (module docstring). The group bounds, the targets' true experts, the
        transition predictor's sums and the top-K selection run in compiled loops
        (:mod:`paging.fast.prefetch_plan`), and so do the frequency and previous-token predictors'
        scores and the percentile strategy: the arrays the numpy definitions give (tested)."""
        from paging.fast import prefetch_plan as plan_loops

        pred = self.predictor
        pred.reset(trace, np.random.default_rng(seed))
        self.trace = trace
        self.K = trace.top_k
        L, n = trace.layout.n_layers, trace.layout.n_experts
        tok = _tokens(trace)
        lo, hi = plan_loops.batch_bounds(np.asarray(trace.steps, dtype=np.int64))
        layers = np.asarray(trace.layers, dtype=np.int64)
        experts = np.asarray(trace.pages % n, dtype=np.int64)
        token, layer = tok[hi], layers[hi]
        actual = self._truth(tok * L + layers, experts, hi, n)
        Ks = self.target_k(trace, hi)
        m = None
        if type(self.strategy) is TopK:
            m = self.strategy.count(Ks, n)
        own = "score_matrix" not in vars(pred)  # (one set on the instance is honoured)
        if m is not None and type(pred) is Transition and own:
            rows, experts, start, right = plan_loops.transition_topk(pred.C, layers, experts, lo,
                                                                 hi, m, actual)
        else:
            if type(pred) is Frequency and own:
                scores = plan_loops.frequency_rows(np.asarray(trace.pages, dtype=np.int64), n, L,
                                               hi, layer)
            elif type(pred) is PreviousToken and own:
                scores = plan_loops.previous_token_rows(layers, np.asarray(tok, dtype=np.int64),
                                                    experts, hi, token, layer, n, L)
            else:
                scores = np.asarray(pred.score_matrix(lo, hi, token, layer, actual),
                                    dtype=np.float64)
            scores = np.ascontiguousarray(scores)
            if m is not None:
                rows, experts, start, right = plan_loops.topk_rows(scores, m, actual)
            elif type(self.strategy) is Percentile and scores.shape[1] > 0:
                rows, experts, start, right = plan_loops.percentile_rows(
                    scores, self.strategy.p, actual)
            else:
                rows, experts = self.strategy.select_all(scores, Ks)
                start = np.searchsorted(rows, np.arange(lo.size + 1))
                right = actual[rows, experts].sum()
        self.predicted = int(rows.size)
        self.predicted_right = int(right)
        self.actual = int(actual.sum())
        return layer[rows] * n + experts, start, lo

    @staticmethod
    def _truth(key: np.ndarray, experts: np.ndarray, hi: np.ndarray, n: int) -> np.ndarray:
        """``actual[g]``: the true experts of batch g's target, the (token, layer) ``key[hi[g]]``
        (a dense table over the keys' range, or one row per distinct key when it is sparse)."""
        from paging.fast import prefetch_plan as plan_loops

        if key.size == 0:
            return np.zeros((0, n), dtype=bool)
        kmin, kmax = int(key.min()), int(key.max())
        if (kmax - kmin + 1) * n <= 8 * key.size * n + 1024:
            return plan_loops.target_truth(key, experts, hi, kmin, kmax - kmin + 1, n)
        ukey, inv = np.unique(key, return_inverse=True)
        truth = np.zeros((ukey.size, n), dtype=bool)
        truth[inv, experts] = True
        return truth[inv[hi]]

    def target_k(self, trace: Trace, hi: np.ndarray) -> np.ndarray:
        """K of each batch's target (the request at ``hi``): the trace's top-K, except for the
        targets inside a batched prefill pass (:func:`paging.cost.timeline.batch_prefill`),
        where a layer's group serves every prompt token: top-K x prompt tokens, at most n
        (the prompt length is known to the server before routing; the experts are not). A warm
        run (:mod:`paging.warm`) has one such pass per sequence."""
        Ks = np.full(hi.size, self.K, dtype=np.int64)
        for start, end, tokens in prefill_ranges(trace):  # one per sequence of a warm run
            Ks[(hi >= start) & (hi < end)] = min(trace.layout.n_experts, self.K * tokens)
        return Ks

    def after_group(self, sim, lo: int, hi: int, served=None) -> None:
        """Group ``lo..hi-1`` of the trace was served (``served``: the pages a routing hook
        served for it, else the trace's): prefetch the planned pages of its batch, the served
        group kept."""
        g = self.batch_of[lo]
        a, b = self.start[g], self.start[g + 1]
        if a < b:
            sim.prefetch_group(self.pages[a:b],
                               keep=self.requests[lo:hi] if served is None else served)


def _learns(spec: str | None) -> bool:
    """Whether predictor ``spec`` is ``transition`` (the one that trains on sequences)."""
    return spec is not None and spec.strip().lower().startswith("transition")


def training_file(spec: str | None) -> str | None:
    """The ``train=FILE`` of a ``transition`` predictor spec, else None."""
    if not _learns(spec):
        return None
    return parse_spec(spec, "prefetch predictor")[1].get("train")


def check_training(spec: str | None, n_sequences: int) -> None:
    """``transition`` without ``train=FILE`` learns on the file's other sequences: refuse a
    file of one sequence before any run."""
    if _learns(spec) and training_file(spec) is None and n_sequences < 2:
        raise PagingError("prefetch transition learns on training sequences other than the one "
                          "simulated: the file has one sequence, give transition:train=FILE")


def training_set(spec: str | None, trace: Trace, sequences, train_file=None):
    """The training sequences of predictor ``spec`` for a run on ``trace``: None unless it is
    ``transition``; the sequences of its ``train=FILE`` (``train_file``, already read), else the
    other sequences of ``sequences`` (the simulated one never trains its own predictor, nor
    does another sequence of the same prompt: a decode log's problem 0 beside the prefill and
    decode dump of problem 0)."""
    if not _learns(spec):
        return None
    if train_file is not None:
        return list(train_file)
    from paging.trace import sequence_bounds

    own = {prompt_key(r["sequence"]) for r in sequence_bounds(trace) if r.get("sequence")}
    return [t for t in sequences if t is not trace and not (
        t.meta.get("sequence") and prompt_key(t.meta["sequence"]) in own)]


def _oracle(opts, what, train=None) -> PrefetchOracle:
    p = take_float(opts, "precision", 1.0, what, lo=0.0, hi=1.0, lo_open=True)
    r = take_float(opts, "recall", 1.0, what, lo=0.0, hi=1.0)
    s = take_int(opts, "seed", 0, what, lo=0)
    rounding = opts.pop("rounding", "stochastic").lower()
    if rounding not in ORACLE_ROUNDINGS:
        raise PagingError(f"{what}: rounding must be stochastic or nearest, got {rounding!r}")
    return PrefetchOracle(p, r, s, rounding)


#: the prefetch predictors (``--prefetch``; :class:`paging.registry.Registry`)
PREFETCH_PREDICTORS = Registry("prefetch predictor")
PREFETCH_PREDICTORS.add("oracle", _oracle,
                        "precision=P, recall=R, seed=S, rounding=stochastic|nearest")
PREFETCH_PREDICTORS.add("previous-token", lambda opts, what, train=None: PreviousToken())
PREFETCH_PREDICTORS.add("transition", lambda opts, what, train=None:
                        Transition(train, source=opts.pop("train", None)), "train=FILE")
PREFETCH_PREDICTORS.add("frequency", lambda opts, what, train=None: Frequency())

#: the prefetch strategies (``--prefetch-strategy``)
STRATEGY_REGISTRY = Registry("prefetch strategy")
STRATEGY_REGISTRY.add("topk", lambda opts, what: TopK(
    take_float(opts, "overfetch", 1.0, what, lo=1.0)), "overfetch=F")
STRATEGY_REGISTRY.add("percentile", lambda opts, what: Percentile(
    take_float(opts, "p", 80.0, what, lo=0.0, hi=100.0, lo_open=True, hi_open=True)), "p=P")
PREDICTORS = PREFETCH_PREDICTORS.names
STRATEGIES = STRATEGY_REGISTRY.names


def make_prefetch_predictor(spec: str, train: list[Trace] | None = None) -> PrefetchPredictor:
    """A predictor from ``NAME[:opts]`` (the module docstring; :data:`PREFETCH_PREDICTORS`)."""
    return PREFETCH_PREDICTORS.make(spec, train=train)


def make_strategy(spec: str | None):
    """A strategy from ``topk[:overfetch=F]`` or ``percentile[:p=P]`` (None: topk, F = 1)."""
    return TopK(1.0) if spec is None else STRATEGY_REGISTRY.make(spec)
