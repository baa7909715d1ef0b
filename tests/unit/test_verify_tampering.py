"""The verifier (:func:`paging.verify.verify`) against runs tampered in one place, each worked
out by hand: every tampering that breaks a claimed check must be refused with a
:class:`~paging.verify.VerificationError` that says what is wrong (never accepted, never another
exception)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from paging import Layout, Trace, simulate
from paging.policies import make_policy
from paging.policies.dist import PerLayer
from paging.verify import VerificationError, verify


class _FixedShares(PerLayer):
    """LRU per layer on fixed shares (as :mod:`proofs.theorem1`'s, which checks nothing)."""

    def __init__(self, shares):
        super().__init__(lambda: make_policy("lru"))
        self.s = np.asarray(shares, dtype=np.int64)

    def shares(self, layout, k):
        return self.s


# two layers of two experts: pages 0, 1 (layer 0) and 2, 3 (layer 1), each requested once
TWO_BY_TWO = Trace(Layout(2, 2), [0, 2, 1, 3], [0, 1, 2, 3], "t")


def test_per_layer_shares_above_k_are_refused():
    """Shares of 2 and 2 in a cache of k = 2: every page stays cached (4 misses, no eviction),
    4 pages in a cache of 2. The run's own shares were the verifier's capacity, so it passed."""
    res = simulate(TWO_BY_TWO, _FixedShares([2, 2]), 2, record=True, engine="reference")
    assert res.misses == 4 and res.evictions.size == 0
    assert res.shares.tolist() == [2, 2]
    with pytest.raises(VerificationError, match=r"shares \[2, 2\].*at most C=2"):
        verify(TWO_BY_TWO, res)
    # shares that split k (2 + 0) pass: layer 1's pages are bypassed
    ok = simulate(TWO_BY_TWO, _FixedShares([2, 0]), 2, record=True, engine="reference")
    assert ok.bypassed.tolist() == [1, 3]
    verify(TWO_BY_TWO, ok)
    # a share per layer, none negative
    for bad in ([2], [3, -1]):
        with pytest.raises(VerificationError, match="shares"):
            verify(TWO_BY_TWO, dataclasses.replace(ok, shares=np.array(bad)))
