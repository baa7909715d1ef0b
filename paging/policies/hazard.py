"""Token-Hazard: a designed online policy that knows the token structure of MoE routing.

Issue 11's research target: a new online policy for the layered model (Angelopoulos et al.,
"Cache Management for Mixture-of-Experts LLMs", 2025, Sec. 2: ℓ layers x n experts, top-K
routing expanded into K rounds per token, Sec. 5.1) that beats the existing online policies
on real routing traces. The result on the shipped traces is in docs/guide/learned.md: it does
**not** make 5% fewer misses than the best existing policy on every sequence.
"""

from __future__ import annotations

import numpy as np

from paging.options import take_float, take_int
from paging.policies.base import Context
from paging.policies.tokens import TokenPolicy

_NEVER = -(1 << 40)  # token index of a page never requested: its age is the cap


class TokenHazard(TokenPolicy):
    """Evict the candidate least likely to be requested before the end of the next ``horizon``
    tokens, probabilities from per-page hazard rates learned online from the run itself.

    Two structural facts of the layered model that LRU, LFU and LLRU ignore:

    1. *A token is the unit of reuse.* Top-K routing picks a set of K distinct experts per
       (token, layer); in the rounds expansion (Angelopoulos et al. 2025, Sec. 5.1) round r of a
       token holds every layer's r-th expert, so layer z is visited K times per token
       (``ctx.visits``) and an expert used at layer z in this token **cannot be requested again
       at z before the next token** (lower bound on its next use: the next token's visit of z).
    2. *Reuse depends on the age in tokens.* Let the age a(q) of page q after token T be the
       number of tokens since q's last use (0: used in T). The hazard h_q(a) = P(q used in token
       T+1 | age a after T) is estimated online: after every token each page seen before adds a
       trial to its age bin and an event if it was used (ages capped at ``max_age``, the last
       bin pooling older ones). Per-page counts are shrunk towards the layer's pooled hazard,
       itself shrunk towards the global one:
       h_q(a) = (e_q(a) + α·H_z(a)) / (n_q(a) + α),  H_z(a) = (E_z(a) + 2·H(a)) / (N_z(a) + 2),
       H(a) = (E(a) + 1) / (N(a) + 2)  (Laplace), α = ``alpha``.
       Age 0 with a high hazard is Mixtral's token-to-token persistence (LRU's lever); a
       per-page hazard flat in a is a frequency (LFU's lever): the run decides which holds.

    At an eviction during token T, for a candidate q of layer z at position u of the token
    (u = s − s_T on the layer clock, current layer c = u mod ℓ, round u // ℓ):

    * if q was used in T it cannot return in T (fact 1): a0 = 0; otherwise, with r_rem visits
      of layer z left in T (rounds after the current one, plus this one if z > c) and
      r_done = K − r_rem, a0 = h·(r_rem/K) / (1 − h·(r_done/K)) with h = h_q(age before T):
      the chance that q is among the experts layer z still draws in T, spreading the token's
      use probability evenly over its K rounds and conditioning on "not drawn yet";
    * P(q not requested before the end of token T + H) = (1 − a0)·Π_{j<H} (1 − h_q(a_T + j)),
      a_T = q's age after T (0 if used in T);
    * evict the candidate with the largest such probability (compared at a resolution of
      1e-9), ties to the largest layer distance (z − c − 1) mod ℓ (the layer just served goes
      first: LLRU's D, Angelopoulos et al. 2025, Def. 2), then the largest page id.

    Without token information (``ctx.token`` None: synthetic sequences without top-K) a token
    is one walk over the layers (``steps // ℓ``, one visit per layer).

    Hyper-parameters ``horizon=2``, ``alpha=0.5``, ``max_age=8``: ``max_age`` was fixed
    before any run; (horizon, α) were chosen among (1,2), (2,0.5), (2,2), (2,8), (4,2) by
    leave-one-sequence-out on the six shipped real sequences; by leave-one-prompt-out
    (``python -m experiments.select_designed --policy token-hazard``) the choice is (2, 0.5) for
    five of the six held-out sequences and (4, 2) for granite's code prompt;
    docs/guide/learned.md reports the held-out numbers.

    Cost: O(1) per hit or insert; O(nℓ·max_age) numpy work once per token; O(k·horizon) numpy
    work per eviction.
    """

    name = "token-hazard"
    order = 250  # place in the registry (paging policies)
    kernel = "token:HAZARD"
    reference = "this package (issue 11); Angelopoulos et al., Sec. 2 and Def. 2"

    def __init__(self, horizon: int = 2, alpha: float = 0.5, max_age: int = 8):
        opts = {"horizon": horizon, "alpha": alpha, "max_age": max_age}
        self.horizon = take_int(opts, "horizon", None, self.name, lo=1)
        self.alpha = take_float(opts, "alpha", None, self.name, lo=0.0, lo_open=True,
                                hi=np.inf, hi_open=True)
        self.max_age = take_int(opts, "max_age", None, self.name, lo=1)

    def reset(self, ctx: Context) -> None:
        super().reset(ctx)
        P, A1, L = ctx.layout.n_pages, self.max_age + 1, ctx.layout.n_layers
        self.last_tok = np.full(P, _NEVER, dtype=np.int64)   # token count at q's last use
        self.before = self.last_tok.copy()                   # ... as of the current token's start
        self.ev = np.zeros((P, A1))                           # events per (page, age)
        self.tr = np.zeros((P, A1))                           # trials per (page, age)
        self.ev_layer = np.zeros((L, A1))
        self.tr_layer = np.zeros((L, A1))

    # -- bookkeeping -------------------------------------------------------------------------
    def _end_token(self) -> None:
        """Token n_tok has ended: one trial per page seen before it, at its age after the
        previous token, and an event if it was used in it (fact 2 above)."""
        seen = np.flatnonzero(self.before > _NEVER)
        if seen.size:
            age = np.minimum(self.n_tok - 1 - self.before[seen], self.max_age)
            hit = self.used[seen].astype(np.float64)
            self.tr[seen, age] += 1.0  # (page, age) pairs are distinct: plain fancy indexing
            self.ev[seen, age] += hit
            z = self._layer_of[seen]
            np.add.at(self.tr_layer, (z, age), 1.0)
            np.add.at(self.ev_layer, (z, age), hit)

    def _start_token(self) -> None:
        self.before[:] = self.last_tok

    def _touch(self, t: int, page: int) -> None:
        super()._touch(t, page)
        self.last_tok[page] = self.n_tok

    # -- the decision ------------------------------------------------------------------------
    def hazards(self, cands: np.ndarray) -> np.ndarray:
        """h_q(a) for every candidate and age 0..max_age, shape (len(cands), max_age + 1)."""
        glob = (self.ev_layer.sum(0) + 1.0) / (self.tr_layer.sum(0) + 2.0)
        layer = (self.ev_layer + 2.0 * glob) / (self.tr_layer + 2.0)
        prior = layer[self._layer_of[cands]]
        return (self.ev[cands] + self.alpha * prior) / (self.tr[cands] + self.alpha)

    def p_unused(self, t: int, cands: np.ndarray) -> np.ndarray:
        """P(candidate not requested before the end of token current + horizon)."""
        rows = np.arange(len(cands))
        h = self.hazards(cands)
        used = self.used[cands]
        age_before = np.minimum(self.n_tok - 1 - self.before[cands], self.max_age)
        age = np.where(used, 0, np.minimum(age_before + 1, self.max_age))
        not_later = np.ones(len(cands))
        for _ in range(self.horizon):
            not_later *= 1.0 - h[rows, age]
            age = np.minimum(age + 1, self.max_age)
        a0 = self.within_token(t, cands, h[rows, age_before])
        return (1.0 - a0) * not_later
