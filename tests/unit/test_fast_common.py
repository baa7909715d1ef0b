"""paging.fast.common's borrowed views: the same memory as the array, read and written in
place, through non-inlined calls and inlined helpers, including an array the kernel itself
allocated and holds to the end."""

import numpy as np
from numba import njit

from paging.fast.common import borrow, hold


@njit(cache=False)
def _bump(a, i):
    a[i] += 1
    return a[i]


@njit(cache=False, inline="always")
def _bump_inline(a, i):
    a[i] += 10


@njit(cache=False)
def _through_view(a):
    v = borrow(a)
    for i in range(v.size):
        _bump(v, i)
        _bump_inline(v, i)
    return v[0] + v[v.size - 1]


@njit(cache=False)
def _own(n):
    own = np.arange(n)
    v = borrow(own)
    tot = 0
    for i in range(v.size):
        tot += _bump(v, i)
    hold(own)
    return tot, own[n - 1]


def test_borrowed_view_writes_the_array():
    a = np.arange(5)
    assert _through_view(a) == (0 + 11) + (4 + 11)
    assert a.tolist() == [11, 12, 13, 14, 15]


def test_borrowed_view_of_an_own_array():
    tot, last = _own(4)
    assert tot == 1 + 2 + 3 + 4
    assert last == 4  # 3 + 1: the view wrote the array it was made from


def test_hold_counts_the_elements():
    assert hold(np.zeros((3, 4))) == 12
