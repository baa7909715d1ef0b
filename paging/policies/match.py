"""Token-Match: token-decay's rule with the next token's routing predicted by matching the
current token's routing against the past tokens' (issue 11).

The third designed attempt at issue 11's research target (a registered online policy with 5%
fewer misses at k = 200 than every existing one on unseen real routing traces), after
:mod:`paging.policies.hazard` and :mod:`paging.policies.decay`. Token-decay's headroom
diagnostic showed that for rules of its kind the gap to OPT is the *next* token's routing; its
decayed frequencies predict it from each page's own history alone. Token-Match adds a predictor
from the sequence of tokens: the tokens whose routing best overlaps the current token's were
followed by some tokens; their routing is the prediction for the next one (a nearest-neighbour
successor predictor, like prediction by partial matching over routing sets). Generated text
repeats (code, lists, greedy decoding), and a repeated context repeats its routing. The related
systems idea is MoE-Infinity's (Xue et al., arXiv:2401.14361, 2024): expert activation matrices
of requests matched against a collection of recorded ones to predict later activations and
guide prefetching and eviction. That paper is not among ``../shared/papers``; the rule here is
this package's own (per token, successors, mixed into token-decay's probabilities).

docs/guide/learned.md has the held-out table.
"""

from __future__ import annotations

import numpy as np

from paging import floatops
from paging.options import take_float, take_int
from paging.policies.base import Context
from paging.policies.decay import TokenDecay

BETAS = np.linspace(0.0, 1.0, 5)  # the mixing weights the posterior chooses among
BETA_OFF = 1e-9  # a posterior mean β below this is taken as 0 (no match is made at evictions)


class TokenMatch(TokenDecay):
    """Token-decay's eviction rule, its usage probabilities mixed with a successor-matching
    predictor of the routing: the tokens that followed the past tokens whose routing overlaps
    the current token's most (a subclass of :class:`~paging.policies.decay.TokenDecay`).

    Layered model of Angelopoulos et al., "Cache Management for Mixture-of-Experts LLMs" (2025),
    Sec. 2 (ℓ layers x n experts, page = layer·n + expert), top-K tokens expanded into K rounds
    (Sec. 5.1); the token bookkeeping, the within-token rule and the eviction order (ties: LLRU's
    layer distance, Def. 2, then page id) are token-decay's.

    *Match.* The used-page sets U_0, U_1, ... of the last ``window`` ended tokens are kept. For a
    set u (the current token's pages so far, or a whole ended token), the similarity of a past
    token s is |U_s ∩ u|; among the tokens s whose successor s + 1 has ended too, the
    ``neighbours`` most similar ones (ties: the most recent) are chosen and
    M(u) = mean of their successors' sets U_{s+1} (a vector over pages). No match (fewer than
    two ended tokens, or no overlap at all) leaves token-decay's probabilities unchanged.

    *Mixture.* With π(q) token-decay's mixed probability (its short and long memories), the match
    is shrunk towards it with weight ``shrink`` (pseudo-neighbours):
    π_M(q) = (neighbours·M(q) + shrink·π(q)) / (neighbours + shrink), and the policy uses
    π_β = β·π_M + (1 − β)·π with β the posterior mean over β ∈ {0, 1/4, 1/2, 3/4, 1}, each β
    paying the log-loss of its prediction of every ended token from the third on (the prediction
    of token T made from the whole token T − 1, π clipped to [1e-4, 1 − 1e-4]), weights
    ∝ exp(−loss); a mean below 1e-9 (``BETA_OFF``) is taken as 0, and no match is then made at
    evictions. Where the routing does not repeat (a stationary Zipf trace) β = 0 wins and the
    policy is token-decay; on the shipped real sequences β ends at 1/2 or 3/4 at k = 200 (1/4 on
    the lossy prefill+decode recording).

    *Decision* (token-decay's, with π_β): at an eviction during token T, for a candidate q,
    h = π_β(q) for T (the match made from the whole of T − 1) feeds the within-token chance a0,
    p = π_β(q) for T + 1 (token-decay's memories counting T as ended now, the match made from T's
    pages so far), and the candidate with the largest (1 − a0)·(1 − p)^horizon is evicted.

    Defaults ``neighbours=3``, ``shrink=1``, ``window=1024`` (set before any tuning), and
    token-decay's (``lam=0.95``, ``horizon=2``, ``long=1``, ``prior=2``; its (lam, horizon)
    were chosen on the six shipped real sequences); leave-one-prompt-out over ``lam``,
    ``horizon``, ``neighbours`` ∈ {1, 3, 5} x ``shrink`` ∈ {1, 4} (``python -m
    experiments.select_designed``) is in docs/guide/learned.md. ``window`` bounds the cost, not
    the result on the shipped traces (at most 252 tokens).

    Cost: O(window) per page first used in a token (the similarities are updated as the token's
    pages arrive), O(window + nℓ·neighbours) per new match at an eviction, and token-decay's.
    """

    name = "token-match"
    order = 270  # place in the registry (paging policies)
    kernel = "token:MATCH"
    reference = "this package (issue 11); Angelopoulos et al., Sec. 2 and Def. 2"

    def __init__(self, neighbours: int = 3, shrink: float = 1.0, window: int = 1024,
                 **decay):
        super().__init__(**decay)
        opts, what = {"neighbours": neighbours, "window": window, "shrink": shrink}, self.name
        self.neighbours = take_int(opts, "neighbours", None, what, lo=1)
        self.window = take_int(opts, "window", None, what, lo=2)
        self.shrink = take_float(opts, "shrink", None, what, lo=0.0, hi=np.inf, hi_open=True)

    def reset(self, ctx: Context) -> None:
        super().reset(ctx)
        P, W = ctx.layout.n_pages, self.window
        self.hist = np.zeros((P, W), dtype=np.int32)  # hist[q, s % W] = [q in U_s]
        self.n_hist = 0                               # ended tokens stored
        self.sim = np.zeros(W, dtype=np.int64)        # |U_s ∩ current token so far|
        self.pending: list[int] = []                  # pages not yet added to sim
        self.beta_loss = np.zeros(len(BETAS))
        self.m_cur = None    # the match for the current token (made from the previous one)
        self._m_next = None  # the match for the next token, and the n_used it was made at
        self._m_next_at = -1

    def beta(self) -> float:
        """The mixing weight: the posterior mean of β over :data:`BETAS`, or 0 below
        :data:`BETA_OFF`."""
        w = floatops.exp(-(self.beta_loss - self.beta_loss.min()))
        b = floatops.dot(w, BETAS) / float(w.sum())
        return b if b >= BETA_OFF else 0.0

    def match(self) -> np.ndarray | None:
        """M(u) for u = the current token's pages so far (all of them at its end), or None."""
        if self.pending:
            self.sim += self.hist[self.pending].sum(0)
            self.pending.clear()
        n, W = self.n_hist, self.window
        if n < 2:
            return None
        s = np.arange(max(0, n - W), n - 1)  # tokens whose successor is stored
        sim = self.sim[s % W]
        if not sim.any():
            return None
        key = (sim << 32) | s  # distinct keys: similarity, then recency
        m = min(self.neighbours, len(s))
        top = s[np.argpartition(key, len(s) - m)[len(s) - m:]]
        return self.hist[:, (top + 1) % W].mean(1)

    def mixed(self, dec: np.ndarray, m: np.ndarray | None, beta: float) -> np.ndarray:
        """π_β from token-decay's π (``dec``) and a match ``m`` over the same pages."""
        if m is None or beta == 0.0:
            return dec
        k, c = self.neighbours, self.shrink
        return beta * (k * m + c * dec) / (k + c) + (1.0 - beta) * dec

    def _score(self, pi: np.ndarray) -> None:
        """Each β pays the log-loss of its mixed prediction of the token that has just ended
        (token-decay's, with the weights before its memories pay, and the match made from the
        token before), then token-decay's memories pay theirs."""
        if self.n_tok >= 2 and self.m_cur is not None:
            dec = floatops.mix(self.weights(), pi)
            u = self.used
            for i, b in enumerate(BETAS):
                x = np.clip(self.mixed(dec, self.m_cur, b), 1e-4, 1.0 - 1e-4)
                self.beta_loss[i] -= floatops.log(x[u]).sum() + floatops.log1p(-x[~u]).sum()
        super()._score(pi)

    def _end_token(self) -> None:
        super()._end_token()
        self.hist[:, self.n_hist % self.window] = self.used
        self.n_hist += 1
        self.m_cur = self.match()  # the whole token's match: the prediction for the next one

    def _start_token(self) -> None:
        self.sim[:] = 0
        self.pending.clear()
        self._m_next, self._m_next_at = None, -1

    def _first_use(self, page: int) -> None:
        self.pending.append(page)

    def use_probs(self, cands: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Token-decay's (h, p), each mixed with its match: h with the one made from the whole
        previous token, p with the one made from the current token's pages so far."""
        h, p = super().use_probs(cands)
        beta = self.beta()
        if beta > 0.0 and self._m_next_at != self.n_used:  # (beta = 0: mixed ignores it)
            self._m_next, self._m_next_at = self.match() if self.n_used else None, self.n_used
        return (self.mixed(h, None if self.m_cur is None else self.m_cur[cands], beta),
                self.mixed(p, None if self._m_next is None else self._m_next[cands], beta))
