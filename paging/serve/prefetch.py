"""Prefetching in a serving run: SpecMD's phase 3 after every batched group.

``paging simulate --prefetch`` computes the whole run's proposals before the run
(:meth:`paging.predict.prefetch.Prefetcher.plan`), because a trace is known ahead. A serving
run's stream is made as it goes (which requests share a step depends on the timeline), so
:class:`StepPrefetch` asks the same predictor for one batch at a time, the per-batch definition
of :mod:`paging.predict.prefetch` ("after each group it serves ... the *target* is the
(token, layer) of the next request"): after the group of layer z of a step, the target is
layer z + 1 of the same step; after the step's last layer, layer 0 of the next step. A batch
step is a token of the serving stream:

* ``previous-token``: the experts the target layer requested in the previous step (its last
  group of that layer; score 1 each);
* ``frequency``: how often each expert of the target layer was requested so far in the run
  (each expert of a group is one request);
* ``transition[:train=FILE]``: Σ over the experts of the group just served of the
  co-activation counts C[z][e][:], fitted on the sequences of FILE only — the served requests
  are resampled from every sequence given, so none of them may train it;
* ``oracle:precision=P,recall=R,seed=S``: the true experts of the target (the union the step
  will request), kept and padded with others by the oracle's noise model, its draws in batch
  order.

The strategy (``--prefetch-strategy``) then picks the experts to prefetch, with K = the
step's tokens × the trace's top-K, at most n: the size of a union of that many tokens' experts
when they do not overlap (as for a batched prefill pass, :meth:`Prefetcher.target_k`).

After a step's last layer the target is the next step's layer 0: the batch of the next step
as the scheduler composes it when this step ends. The prefetch is issued (timeline) after the
last group's demand transfers, as in ``paging simulate``; a server that knows its running
requests knows most of that batch then, and the requests that arrive during the last layer
are the look-ahead this allows. When that batch is empty (the server idles until the next
arrival) nothing is prefetched across: the next batch is composed when a request arrives, so
no prefetch for it can be issued at the step's end. With one request at a time the serving
run then equals
``paging simulate --warm --prefill batched --prefetch ...`` request for request (tested).

Counts (:meth:`counts`): ``prefetch_precision`` and ``prefetch_recall`` are set-based and
micro-averaged over the batches, as in ``paging simulate``.
"""

from __future__ import annotations

import numpy as np

from paging.errors import PagingError

__all__ = ["StepPrefetch"]


class StepPrefetch:
    """The prefetcher of a serving run (module docstring). ``names``: the sequences the
    requests are drawn from (a transition predictor must not have been fitted on them);
    ``prompts``: the prompts they record (``meta["sequence"]``, None where none), which it must
    not have been fitted on either (another recording of a served prompt)."""

    def __init__(self, run_spec, layout, top_k: int, names, prompts=()):
        from paging.predict.prefetch import (
            Frequency,
            PrefetchOracle,
            PreviousToken,
            Transition,
            _learns,
            make_prefetch_predictor,
            make_strategy,
            training_file,
        )

        spec = run_spec.prefetch
        train = None
        if _learns(spec):
            file = training_file(spec)
            if file is None:
                raise PagingError("--prefetch transition in paging serve needs "
                                  "transition:train=FILE: the served requests are resampled "
                                  "from every sequence given, so none of them may train it")
            from paging.io import load

            train = load(file, expand="groups")
        self.predictor = pred = make_prefetch_predictor(spec, train)
        kinds = {PrefetchOracle: "oracle", PreviousToken: "previous-token",
                 Frequency: "frequency", Transition: "transition"}
        self.kind = kinds.get(type(pred))
        if self.kind is None:
            raise PagingError(f"--prefetch {spec}: paging serve asks the built-in predictors "
                              "(oracle, previous-token, frequency, transition) batch by batch")
        if self.kind == "transition":
            if pred.C.shape != (layout.n_layers, layout.n_experts, layout.n_experts):
                raise PagingError("transition: the training sequences have another layout")
            seen = sorted(set(names) & pred.trained_on)
            if seen:
                raise PagingError(f"transition was fitted on {seen[0]}, a sequence the run "
                                  "serves; fit it on other sequences (train=FILE)")
            for name, prompt in zip(names, prompts, strict=False):
                pred.check_prompt(name, prompt, "a sequence the run serves")
        self.strategy = make_strategy(run_spec.prefetch_strategy)
        self.n, self.L, self.top_k = layout.n_experts, layout.n_layers, top_k
        self.counts = np.zeros((self.L, self.n))
        self.last = [np.zeros(0, np.int64) for _ in range(self.L)]
        if self.kind == "oracle":
            pred.n, pred.L = self.n, self.L
            pred.rng = np.random.default_rng(pred.seed)  # its own seed, as in a trace run
        self.predicted = self.right = self.actual = 0

    def spec(self) -> str:
        return f"{self.predictor.spec()} {self.strategy.spec()}"

    def propose(self, layer: int, experts: np.ndarray, target: int, actual: np.ndarray,
                tokens: int) -> list[int]:
        """The pages to prefetch after the group of ``layer`` (``experts``) for the group of
        layer ``target`` whose experts are ``actual`` (read by the oracle only and by the
        counts), in a step of ``tokens`` tokens."""
        experts = np.asarray(experts, np.int64)
        actual = np.asarray(actual, np.int64)
        scores = self._scores(np.full(experts.size, layer), experts, np.array([0]),
                              np.array([target]), [actual])
        return self._choose(scores, np.array([target]), [actual], tokens)[1].tolist()

    def propose_step(self, pages: np.ndarray, cuts: np.ndarray, tokens: int) -> tuple:
        """Each group of a step seen, then :meth:`propose` asked for the next (``pages`` cut at
        ``cuts`` into its groups, one per layer, layers rising), the batch after each group but
        the last, in one pass: a group's target is a later layer of the step, observed only
        after the proposal for it, so every score reads the state before the step. Returns
        ``(sizes, pages)``: each batch's size and their pages one after another; the state is
        left as the group-by-group calls leave it."""
        n = self.n
        if pages.size == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        bounds = np.r_[0, cuts, pages.size]
        z = pages[bounds[:-1]] // n
        ex = pages % n
        G = z.size - 1
        actual = [ex[bounds[i + 1]:bounds[i + 2]] for i in range(G)]
        scores = self._scores(pages // n, ex, bounds[:-1], z[1:], actual)
        if self.kind == "previous-token":
            for i in range(G + 1):
                self.last[int(z[i])] = ex[bounds[i]:bounds[i + 1]]
        elif self.kind == "frequency":
            self.counts[pages // n, ex] += 1  # (each (layer, expert) once in a step)
        return self._choose(scores, z[1:], actual, tokens)

    def _scores(self, layers, experts, starts, targets, actual) -> np.ndarray:
        """The predictor's scores (one row per target layer ``targets[i]``) after the groups
        whose experts are ``experts[starts[i]:starts[i + 1]]`` (of ``layers``), the state as
        it stands; ``actual[i]``: the target's true experts (the oracle's only input, its
        draws row by row)."""
        n, G = self.n, len(targets)
        if self.kind == "oracle":
            return np.array([self.predictor.scores(-1, -1, -1, int(targets[i]),
                                                   np.unique(actual[i])) for i in range(G)]
                            ).reshape(G, n)
        if self.kind == "previous-token":
            scores = np.zeros((G, n))
            for i in range(G):
                scores[i, self.last[int(targets[i])]] = 1.0
            return scores
        if self.kind == "frequency":
            return self.counts[np.asarray(targets, np.int64)].copy()
        if G == 0:  # transition: Σ of C's rows of each group's experts (counts: exact sums)
            return np.zeros((0, n))
        return np.add.reduceat(self.predictor.C[layers, experts, :], starts, axis=0)[:G]

    def _choose(self, scores, targets, actual, tokens: int) -> tuple:
        """The strategy's pick in each row of ``scores`` (K = the step's tokens × top-K, at
        most n), counted against ``actual``; ``(sizes, pages)`` as :meth:`propose_step`'s."""
        n, G = self.n, len(targets)
        K = min(n, self.top_k * tokens)
        r, chosen = self.strategy.select_all(scores, K)
        truth = np.zeros((G, n), bool)
        for i in range(G):
            truth[i, actual[i]] = True
        self.predicted += int(chosen.size)
        self.right += int(truth[r, chosen].sum())
        self.actual += int(truth.sum())
        return np.bincount(r, minlength=G).astype(np.int64), np.asarray(targets)[r] * n + chosen

    def counts_row(self) -> dict:
        return {"prefetch": self.spec(),
                "prefetch_precision": self.right / self.predicted if self.predicted else None,
                "prefetch_recall": self.right / self.actual if self.actual else None}
