"""The token bookkeeping shared by the designed policies of issue 11 (``token-hazard``,
``token-decay``): which token a request belongs to, what the current token has used so far, the
within-token chance of a page still being drawn, and the eviction order.

Layered model of Angelopoulos et al., "Cache Management for Mixture-of-Experts LLMs" (2025),
Sec. 2, with top-K tokens expanded into K rounds (Sec. 5.1): layer z is visited K times per token
(``ctx.visits``), and an expert used at z in a token is not requested at z again before the next
token (its K experts are distinct). A serving system knows which token it is computing, so an
online policy may read ``ctx.token[t]`` for the current request; without it a token is one walk
over the layers (``steps // ℓ``, one visit per layer).
"""

from __future__ import annotations

import numpy as np

from paging.policies.base import CacheView, Context, Policy


class TokenPolicy(Policy):
    """Base of the token-aware policies: subclasses give :meth:`p_unused` (the probability that a
    candidate is not requested before some horizon; the largest is evicted) and may hook
    :meth:`_end_token` (token ``n_tok`` has just ended), :meth:`_start_token` and
    :meth:`_first_use` (a page's first request in the current token).

    State after :meth:`reset`: ``n_tok`` (the current token's index, −1 before the first
    request; also the number of tokens ended), ``used`` (pages used in the current token) and
    ``n_used`` (how many), ``t_start`` (the layer clock at its first request), ``visits`` (K)
    and ``_layer_of``.
    """

    def reset(self, ctx: Context) -> None:
        super().reset(ctx)
        P = ctx.layout.n_pages
        self._layer_of = np.arange(P) // ctx.layout.n_experts
        if ctx.token is not None:
            self._token, self.visits = ctx.token, max(int(ctx.visits), 1)
        else:
            self._token, self.visits = None, 1
        self.used = np.zeros(P, dtype=bool)  # used in the current token
        self.n_used = 0      # pages used in the current token
        self.tok_id = None   # the current token's id (ctx.token) or walk (steps // ℓ)
        self.n_tok = -1      # the current token's index
        self.t_start = 0     # layer clock at the current token's first request

    def _end_token(self) -> None:
        """Token ``n_tok`` has ended (``used`` still holds its pages)."""

    def _start_token(self) -> None:
        """Token ``n_tok`` starts (before ``used`` is cleared)."""

    def _first_use(self, page: int) -> None:
        """``page`` is requested for the first time in the current token (``used`` and
        ``n_used`` already count it)."""

    def _advance(self, t: int) -> None:
        """Start request t's token if it is a new one (also called before an eviction: the
        victim is chosen before the requested page is inserted)."""
        s = int(self.ctx.steps[t])
        tok = int(self._token[t]) if self._token is not None else s // self.ctx.layout.n_layers
        if tok != self.tok_id:
            if self.n_tok >= 0:
                self._end_token()
            self.n_tok += 1
            self.tok_id, self.t_start = tok, s
            self._start_token()
            self.used[:] = False
            self.n_used = 0

    def _touch(self, t: int, page: int) -> None:
        self._advance(t)
        if not self.used[page]:
            self.used[page] = True
            self.n_used += 1
            self._first_use(page)

    def on_hit(self, t, page):
        self._touch(t, page)

    def on_insert(self, t, page):
        self._touch(t, page)

    def within_token(self, t: int, cands: np.ndarray, h: np.ndarray) -> np.ndarray:
        """a0: the chance that each candidate is still requested in the current token, given
        its use probability h for the whole token. A page already used in the token cannot
        return in it (a0 = 0); otherwise, with r_rem visits of its layer z left (rounds after
        the current one, plus this one if z is ahead of the current layer c) and
        r_done = K − r_rem, a0 = h·(r_rem/K) / (1 − h·(r_done/K)): the token's use probability
        spread evenly over its K rounds, conditioned on "not drawn yet"."""
        L, K = self.ctx.layout.n_layers, self.visits
        s = int(self.ctx.steps[t])
        rnd, c = (s - self.t_start) // L, s % L
        rem = np.clip(K - rnd - 1 + (self._layer_of[cands] > c), 0, K)
        a0 = np.clip(h * rem / K / np.maximum(1.0 - h * (K - rem) / K, 1e-12), 0.0, 1.0)
        a0[self.used[cands]] = 0.0
        return a0

    def p_unused(self, t: int, cands: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def rank(self, t: int, cands: np.ndarray) -> np.ndarray:
        """Candidates' eviction order, the victim last: (P(unused) compared at a resolution of
        1e-9, layer distance (z − c − 1) mod ℓ — the layer just served goes first, LLRU's D,
        Angelopoulos et al. 2025, Def. 2 —, page id), ascending."""
        L = self.ctx.layout.n_layers
        c = int(self.ctx.steps[t]) % L
        key = np.rint(self.p_unused(t, cands) * 1e9)
        dist = (self._layer_of[cands] - c - 1) % L
        return np.lexsort((cands, dist, key))  # the last key is the primary one

    def victim(self, t: int, page: int, cache: CacheView) -> int:
        self._advance(t)
        cands = np.fromiter(cache.candidates, dtype=np.int64)
        return int(cands[self.rank(t, cands)[-1]])
