"""paging.fast.common's borrowed views: the same memory as the array, read and written in
place, through non-inlined calls and inlined helpers; and an array the kernel itself allocated,
read only through its view, alive until ``hold``. And ``frozen``: the read-only views every
caller passes a kernel, so that pieces and whole runs share one compiled signature."""

import numpy as np
import pytest
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


def test_frozen_is_a_read_only_view_without_a_copy():
    from paging.fast.common import frozen

    a = np.arange(5)
    v = frozen(a)
    assert not v.flags.writeable and a.flags.writeable and np.shares_memory(a, v)
    assert frozen(v) is v  # already read-only: itself
    assert frozen([1, 2]).tolist() == [1, 2]


@pytest.mark.parametrize("name,kernel", [
    ("lru", "paging.fast.lists:list_kernel"),
    ("token-match", "paging.fast.tokens:token_kernel"),
    ("blind-oracle", "paging.fast.predictive:predictive_kernel")])
def test_a_carried_run_compiles_no_signature_of_its_own(name, kernel):
    """Runs fed in writable pieces (a serving run's, a stream's), with a writable byte
    budget's sizes, reuse the kernel compiled for whole runs and read-only pieces: numba
    compiles a kernel per argument types, and a writable array is a type apart from a
    read-only one (:func:`paging.fast.common.frozen`). The token kernel took 70-110 s to
    compile cold. (The prediction kernel has a signature of its own for carried runs, its
    state passed in: the warm-up makes it too.)"""
    import importlib

    from paging import fast, generators
    from paging.policies import make_policy
    from paging.simulate import simulate

    mod, fn = kernel.split(":")
    disp = getattr(importlib.import_module(mod), fn)
    tr = generators.zipf(n=8, layers=4, tokens=30, seed=3)
    sizes = np.arange(1, tr.layout.n_pages + 1, dtype=np.int64)  # writable
    simulate(tr, name, 5, engine="fast", record="hits")
    simulate(tr, name, budget=40, sizes=sizes, engine="fast", record="hits")

    def carried(slots, cap, piece):
        run = fast.CarriedRun(tr.layout, fast.plan(make_policy(name)), cap, slots, sizes=slots)
        for lo in range(0, tr.n_requests, 8):
            run.feed(piece(tr.pages[lo:lo + 8]), piece(tr.steps[lo:lo + 8]), hits=True)

    carried(None, 5, lambda a: a)  # the trace's read-only pieces
    before = len(disp.signatures)
    for slots, cap in ((None, 5), (sizes, 40)):
        carried(slots, cap, np.array)  # writable pieces
    assert len(disp.signatures) == before
