"""Token-Decay (paging/policies/decay.py): probabilities and decisions by hand, the clairvoyant
lookahead diagnostic and its bad input (registration, bad parameters and golden numbers:
test_designed_policies.py)."""

from __future__ import annotations

import numpy as np
import pytest

from paging import Layout, from_pages, from_routing, simulate
from paging.errors import PagingError
from paging.policies import POLICY_NAMES
from paging.policies.decay import TokenDecay, TokenDecayLookahead
from paging.verify import verify


class Spy(TokenDecay):
    """Token-Decay that keeps (candidates, P(unused)) of every eviction."""

    def reset(self, ctx):
        super().reset(ctx)
        self.seen = []

    def p_unused(self, t, cands):
        out = super().p_unused(t, cands)
        self.seen.append((cands.tolist(), out.copy()))
        return out


def _run(trace, k, pol):
    res = simulate(trace, pol, k, record=True, engine="reference")
    verify(trace, res)
    return res


@pytest.mark.parametrize("lam, victim", [(0.5, 0), (0.9, 1)])
def test_decay_trades_recency_for_frequency(lam, victim):
    # one layer, 3 experts, one request per token; k = 2: the 5th request (page 2) evicts 0 or 1.
    # Page 0 was used in tokens 0-2, page 1 in token 3. After token 3: D0 = λ³ + λ² + λ, D1 = 1,
    # N = 1 + λ + λ² + λ³; in token 4 nothing is used yet (p = λ·D / (λ·N + 1)), and with one
    # visit per token, the layer's being served now, no visit is left (a0 = 0).
    trace = from_pages([0, 0, 0, 1, 2], Layout(3, 1))
    pol = Spy(lam=lam, horizon=1, long=None, prior=0)  # one memory, raw frequencies
    res = _run(trace, 2, pol)
    D0 = lam ** 3 + lam ** 2 + lam   # used in tokens 0, 1, 2; decayed 3, 2, 1 times
    D1 = 1.0                          # used in token 3
    N = 1 + lam + lam ** 2 + lam ** 3
    cands, p_unused = pol.seen[0]
    assert cands == [0, 1]
    expect = [1 - lam * D / (lam * N + 1) for D in (D0, D1)]
    assert p_unused == pytest.approx(expect, abs=1e-15)
    # λ = 0.5: D0 = 0.875 < D1 = 1 (recency wins, LRU's choice); λ = 0.9: D0 = 2.439 > 1 (LFU's)
    assert res.evictions.tolist() == [[4, victim]]


def test_within_token_chance_by_hand():
    # one layer of 4 experts, top-2 (rounds: 2 visits of the layer per token); k = 3.
    # Tokens {0,1}, {0,2}, then page 3 in round 0 of token 2 evicts one of 0, 1, 2.
    trace = from_routing(np.array([[[0, 1]], [[0, 2]], [[3, 0]]]), Layout(4, 1), expand="rounds")
    assert trace.pages.tolist() == [0, 1, 0, 2, 3, 0]
    pol = Spy(long=None, prior=0)  # λ = 0.95, horizon 2, one memory, raw frequencies
    res = _run(trace, 3, pol)
    lam = 0.95
    N = 1 + lam                                # two tokens ended
    D = {0: 1 + lam, 1: lam, 2: 1.0}
    cands, p_unused = pol.seen[0]
    assert cands == [0, 1, 2]
    expect = []
    for q in cands:
        h = D[q] / N                           # use probability per token before token 2
        a0 = min(h * 0.5 / (1 - h * 0.5), 1.0)  # one of the 2 visits left, one done
        p = lam * D[q] / (lam * N + 1)         # after token 2 (none used in it yet)
        expect.append((1 - a0) * (1 - p) ** 2)
    assert expect[0] == 0.0  # page 0 was used in every token: h = 1, certain to come in round 1
    assert p_unused == pytest.approx(expect, abs=1e-15)
    assert res.evictions.tolist() == [[4, 1]]  # 0.317 (page 1) > 0.291 (page 2) > 0 (page 0)
    assert res.misses == 4


def test_a_page_used_in_this_token_waits_for_the_next():
    # 2 layers x 3 experts, top-2, rounds: token 0 = round 0 (L0 e0, L1 e0), round 1 (L0 e1,
    # L1 e1); k = 3: request 4 (page 4 = L1 e1) evicts one of pages 0, 3, 1. In the first token
    # N = 0 (h = 0, a0 = 0) and every candidate is used: p = 1, P(unused) = 0 for all three;
    # layer distance decides: layer 1 (the current one) is visited again in ℓ = 2 steps,
    # layer 0 in 1: page 3 goes. With the defaults (two memories, prior 2) the three are equal
    # too (none below 1), and the same page goes.
    trace = from_routing(np.array([[[0, 1], [0, 1]]]), Layout(3, 2), expand="rounds")
    assert trace.pages.tolist() == [0, 3, 1, 4]
    pol = Spy(long=None, prior=0)
    res = _run(trace, 3, pol)
    assert pol.seen[0][1].tolist() == [0.0, 0.0, 0.0]
    assert res.evictions.tolist() == [[3, 3]]
    pol = Spy()
    assert _run(trace, 3, pol).evictions.tolist() == [[3, 3]]
    assert len(set(pol.seen[0][1].tolist())) == 1 and 0 < pol.seen[0][1][0] < 1


def test_memories_are_weighted_by_their_log_loss():
    # one layer of 2 experts, one request per token: 0, 0, 0, then 1 (k = 2: no eviction).
    # Tokens 0 and 1 end without a loss (the first two tokens train); when token 2 ends, with
    # D0 = 1 + λ, D1 = 0, N = 1 + λ and the mean page's rate B = D0 / (2N) = 1/2, each memory
    # predicts π(0) = (D0 + 2·B) / (N + 2), π(1) = (0 + 2·B) / (N + 2) = 1 − π(0); token 2 used
    # page 0 only: loss = −log π(0) − log(1 − π(1)) = −2·log π(0).
    trace = from_pages([0, 0, 0, 1], Layout(2, 1))
    pol = TokenDecay()
    _run(trace, 2, pol)
    short = (1.95 + 1.0) / (1.95 + 2.0)   # λ = 0.95: 2.95 / 3.95
    long_ = (2.0 + 1.0) / (2.0 + 2.0)     # λ = 1: 3/4
    assert pol.loss == pytest.approx([-2 * np.log(short), -2 * np.log(long_)], abs=1e-12)
    w = np.array([short ** 2, long_ ** 2])
    assert pol.weights() == pytest.approx(w / w.sum(), abs=1e-12)
    assert pol.n_tok == 3 and pol.n_used == 1  # token 3 holds page 1
    assert pol.n_decayed == pytest.approx([1 + 0.95 + 0.95 ** 2, 3.0], abs=1e-12)
    assert pol.total == pytest.approx(pol.n_decayed, abs=1e-12)  # one page used per token


def test_lookahead_sees_the_next_token():
    # one layer, one request per token: [0, 1, 2, 0], k = 2. At request 2, D0 = λ < D1 = 1:
    # Token-Decay evicts 0, which returns next; with the next token revealed the diagnostic
    # evicts 1. Lookahead 0 reveals only the current token (request 2 itself): same as
    # Token-Decay.
    trace = from_pages([0, 1, 2, 0], Layout(3, 1))
    assert _run(trace, 2, TokenDecay()).evictions.tolist() == [[2, 0], [3, 1]]
    ahead = _run(trace, 2, TokenDecayLookahead(1))
    assert ahead.evictions.tolist() == [[2, 1]] and ahead.misses == 3
    assert _run(trace, 2, TokenDecayLookahead(0)).misses == 4
    assert TokenDecayLookahead(1).clairvoyant and not TokenDecay().clairvoyant
    assert not any(n.startswith("token-decay-lookahead") for n in POLICY_NAMES)
    with pytest.raises(PagingError, match=r"^token-decay-lookahead: lookahead must be an "
                                          r"integer >= 0, got -1$"):
        TokenDecayLookahead(-1)
