"""paging.fast.common's borrowed views: the same memory as the array, read and written in
place, through non-inlined calls and inlined helpers; and an array the kernel itself allocated,
read only through its view, alive until ``hold``."""

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
def _own(n, rounds):
    """Sums, through a view, an array the function owns and reads no more itself (only
    ``hold`` uses it after the view's last read), while arrays of the same size are allocated
    and filled with -7 in between: were the owned array freed after ``borrow`` (its last use
    without ``hold``), those would take its memory and the view would read -7s."""
    own = np.arange(n)
    v = borrow(own)
    tot = 0
    for _ in range(rounds):
        junk = np.full(n, -7)
        tot += junk[0] + 7
        for i in range(v.size):
            tot += v[i]
    hold(own)
    return tot


def test_borrowed_view_writes_the_array():
    a = np.arange(5)
    assert _through_view(a) == (0 + 11) + (4 + 11)
    assert a.tolist() == [11, 12, 13, 14, 15]


def test_borrowed_view_of_an_own_array_stays_valid_until_hold():
    n, rounds = 4096, 50
    assert _own(n, rounds) == rounds * (n * (n - 1) // 2)
