"""Token-Hazard (paging/policies/hazard.py): hazards and decisions by hand (registration, bad
parameters and golden numbers: test_designed_policies.py)."""

from __future__ import annotations

import numpy as np
import pytest

from paging import Layout, from_pages, from_routing, simulate
from paging.policies.hazard import TokenHazard
from paging.verify import verify


def _run(trace, k, **kw):
    pol = TokenHazard(**kw)
    res = simulate(trace, pol, k, record=True, engine="reference")
    verify(trace, res)
    return pol, res


def test_hazards_by_hand():
    # one layer, 3 experts, one request per token (no top-K: a token is one walk over the layer)
    # tokens: 0, 0, 0, 1.  Page 0 at age 0 after tokens 0 and 1: 2 trials, 2 events.
    trace = from_pages([0, 0, 0, 1], Layout(3, 1))
    pol, res = _run(trace, 3)
    assert res.misses == 2
    h = pol.hazards(np.array([0, 1]))
    # global H(0) = (2+1)/(2+2) = 3/4; layer H_0(0) = (2 + 2*3/4)/(2+2) = 7/8;
    # h_0(0) = (2 + 0.5*7/8)/(2 + 0.5) = 39/40; page 1 has no trials: h_1(0) = 7/8
    assert h[0, 0] == pytest.approx(39 / 40, abs=1e-15)
    assert h[1, 0] == pytest.approx(7 / 8, abs=1e-15)
    # ages without any trial: Laplace 1/2 everywhere
    assert np.allclose(h[:, 1:], 0.5)


def test_ties_go_to_the_layer_visited_last():
    # 2 layers x 3 experts, top-2, rounds: token 0 = round 0 (L0 e0, L1 e0), round 1 (L0 e1, L1 e1)
    # k = 3: the 4th request (page 4 = L1 e1, step 3) evicts one of pages 0, 3, 1.
    # In the first token every hazard is 1/2 and every candidate was used in this token (a0 = 0):
    # equal probabilities, so layer distance decides: the current layer (1) is visited next
    # in l = 2 steps, layer 0 in 1 step: page 3 (layer 1) goes.
    trace = from_routing(np.array([[[0, 1], [0, 1]]]), Layout(3, 2), expand="rounds")
    assert trace.pages.tolist() == [0, 3, 1, 4]
    _, res = _run(trace, 3)
    assert res.evictions.tolist() == [[3, 3]]


def test_within_token_chance_counts():
    # K = 2, one layer of 3 experts. Tokens: {0,1}, {0,1}, {0,2}, then {0,1}; k = 2.
    # Token 2's second request (page 2) evicts 1 (0 is the current token's, 1 is not: page 1
    # is at age 1 while page 0 has hazard 1 at age 0 so far). Token 3's second request (page 1)
    # sees candidates 0 (used in this token: a0 = 0) and 2 (not used, but no visit of the layer
    # is left in token 3: a0 = 0 too); page 0 (used in all 4 tokens) is far more likely to be
    # requested in tokens 4-5 than page 2 (used once): 2 goes.
    ex = np.array([[[0, 1]], [[0, 1]], [[0, 2]], [[0, 1]]])
    trace = from_routing(ex, Layout(3, 1), expand="rounds")
    pol, res = _run(trace, 2)
    assert res.evictions[:, 1].tolist() == [1, 2]  # token 2 evicts 1 for 2; token 3 evicts 2


def test_lru_like_on_persistent_and_frequency_like_on_popular_pages():
    # a page requested in every token is kept over one requested once, whatever the recency
    lay = Layout(4, 1)
    pages = [0, 1, 0, 2, 0, 3, 0, 1, 0, 2, 0, 3] * 3
    trace = from_pages(pages, lay)
    _, res = _run(trace, 2)
    # page 0 is never evicted after its first request
    assert 0 not in res.evictions[:, 1].tolist()
    assert res.misses == 1 + (len(pages) // 2)
