"""Token-Match (paging/policies/match.py): the successor match and its mixing weight by hand,
the stationary case (it is token-decay there) and the window (registration, bad parameters and
golden numbers: test_designed_policies.py)."""

from __future__ import annotations

import numpy as np
import pytest

from paging import Layout, from_routing, simulate
from paging.generators import parse_spec
from paging.policies.decay import TokenDecay
from paging.policies.match import BETAS, TokenMatch
from paging.verify import verify


class Spy(TokenMatch):
    """Token-Match that keeps, at every eviction, (token, pages used so far, the match for the
    current token, the match for the next one)."""

    def reset(self, ctx):
        super().reset(ctx)
        self.seen = []

    def p_unused(self, t, cands):
        out = super().p_unused(t, cands)
        m_next = self.match()
        self.seen.append((self.n_tok, np.flatnonzero(self.used).tolist(),
                          None if self.m_cur is None else self.m_cur.tolist(),
                          None if m_next is None else m_next.tolist()))
        return out


def _run(trace, k, pol):
    res = simulate(trace, pol, k, record=True, engine="reference")
    verify(trace, res)
    return res


# 2 layers x 3 experts, top-1: tokens (layer-0 expert, layer-1 expert)
# T0 = (0, 0) -> pages {0, 3}, T1 = (1, 1) -> {1, 4}, T2 = (0, 2) -> {0, 5}, T3 = (1, 1) -> {1, 4},
# T4 = (0, 2) -> {0, 5}
ROUTING = np.array([[[0], [0]], [[1], [1]], [[0], [2]], [[1], [1]], [[0], [2]]])


@pytest.mark.parametrize("neighbours, m_next", [
    # in T4 after page 0: overlaps with the tokens that have a successor (T0, T1, T2) are 1, 0, 1
    (1, [0, 1, 0, 0, 1, 0]),                     # T2 (the most recent of the two) -> T3 = {1, 4}
    (3, [1 / 3, 2 / 3, 0, 0, 2 / 3, 1 / 3]),     # T0, T1, T2 -> mean of T1, T2, T3
])
def test_match_by_hand(neighbours, m_next):
    trace = from_routing(ROUTING, Layout(3, 2))
    pol = Spy(neighbours=neighbours)
    _run(trace, 1, pol)  # k = 1: every request but none here is a miss with an eviction
    tok, used, m_cur, nxt = pol.seen[-1]  # T4's second request (page 5): T4 has used page 0
    assert (tok, used) == (4, [0])
    assert nxt == pytest.approx(m_next, abs=1e-15)
    # the match for T4, made at the end of T3 = {1, 4} (T3 stored, so T2's successor is known):
    # overlaps T0: 0, T1: 2, T2: 0 -> T1's successor T2 = {0, 5} with one neighbour; with three,
    # all of T0, T1, T2 -> mean of T1, T2, T3
    expect = [1, 0, 0, 0, 0, 1] if neighbours == 1 else [1 / 3, 2 / 3, 0, 0, 2 / 3, 1 / 3]
    assert m_cur == pytest.approx(expect, abs=1e-15)


def test_no_match_without_overlap_or_history():
    trace = from_routing(ROUTING, Layout(3, 2))
    pol = Spy()
    _run(trace, 1, pol)
    by_token = {}
    for tok, _, m_cur, _ in pol.seen:
        by_token.setdefault(tok, m_cur)
    # T0-T2: fewer than two ended tokens, or (T2) the match made from T1 = {1, 4} against T0 =
    # {0, 3}, which do not overlap
    assert [by_token.get(t) for t in (0, 1, 2)] == [None, None, None]
    # made from T2 = {0, 5}: T0 overlaps it; the two candidates T0, T1 -> mean of T1, T2
    assert by_token[3] == pytest.approx([0.5, 0.5, 0, 0, 0.5, 0.5], abs=1e-15)


def test_mixing_weight_by_hand():
    # The first loss is paid when T3 ends (the third token on, with a match): the match for T3,
    # made from T2 = {0, 5} (overlap with T0 only, neighbours = 1), is T1 = {1, 4}: exactly T3.
    # So a larger β pays less, every β's loss is that of β·π_M + (1 − β)·π on T3, and β is the
    # posterior mean.
    trace = from_routing(ROUTING[:4], Layout(3, 2))
    pol = TokenMatch(neighbours=1)
    simulate(trace, pol, 6, engine="reference")  # five pages: no eviction
    # the run ends inside T3 (no later request ends it): end it by hand
    before = pol.beta_loss.copy()
    assert before.tolist() == [0.0] * len(BETAS)
    dec = pol.weights() @ pol.probs(pol.decayed, pol.n_decayed, pol.total)
    u = pol.used.copy()
    assert np.flatnonzero(u).tolist() == [1, 4]
    assert pol.m_cur.tolist() == [0, 1, 0, 0, 1, 0]  # T1, the successor of T0
    pol._end_token()
    expect = []
    for b in BETAS:
        m = np.array([0, 1, 0, 0, 1, 0], dtype=float)
        x = np.clip(b * (m + dec) / 2 + (1 - b) * dec, 1e-4, 1 - 1e-4)
        expect.append(-(np.log(x[u]).sum() + np.log1p(-x[~u]).sum()))
    assert pol.beta_loss == pytest.approx(expect, abs=1e-12)
    assert np.all(np.diff(pol.beta_loss) < 0)
    w = np.exp(-(pol.beta_loss - pol.beta_loss.min()))
    assert pol.beta() == pytest.approx(float(w @ BETAS / w.sum()), abs=1e-15)
    assert pol.beta() > 0.5


def test_stationary_routing_is_token_decay():
    # layered Zipf (independent tokens): the match never predicts better, its weight β goes to
    # 0 and every decision is token-decay's
    trace = parse_spec("zipf:n=8,layers=32,tokens=300,seed=3")[0]
    pol = TokenMatch()
    a, b = _run(trace, 64, TokenDecay()), _run(trace, 64, pol)
    assert np.array_equal(a.hit_mask, b.hit_mask) and a.misses == b.misses == 4612
    assert pol.beta() < 1e-100


@pytest.mark.parametrize("k", [8, 12, 16])
def test_repeated_routing_is_matched(k):
    # five random tokens (4 layers x 8 experts, top-2) repeated 12 times: the match predicts
    # every token after the first period, β goes to 1 and it beats token-decay
    rng = np.random.default_rng(0)
    period = np.stack([np.stack([rng.choice(8, 2, replace=False) for _ in range(4)])
                       for _ in range(5)])
    trace = from_routing(np.concatenate([period] * 12), Layout(8, 4), expand="rounds")
    pol = TokenMatch()
    assert _run(trace, k, pol).misses < _run(trace, k, TokenDecay()).misses
    assert pol.beta() > 0.999


def test_window_bounds_the_history():
    # a window of 2 tokens keeps the last two ended ones: in T4, T2 and T3, and T2 is the only
    # token with a stored successor (with the whole history, T0, T1, T2 would be the three
    # neighbours: test_match_by_hand)
    trace = from_routing(ROUTING, Layout(3, 2))
    pol = Spy(window=2)
    _run(trace, 1, pol)
    tok, used, m_cur, nxt = pol.seen[-1]
    assert (tok, used) == (4, [0])
    assert nxt == [0, 1, 0, 0, 1, 0]  # T2 -> T3 = {1, 4}
    assert m_cur is None              # made at the end of T3: T2 = {0, 5} does not overlap it
    assert pol.hist.shape == (6, 2)
