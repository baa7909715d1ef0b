"""The float work the reference policies share with their compiled kernels, done the same way
on every machine: elementwise ``log``, ``log1p`` and ``exp`` through the C library's scalar
functions, and the weighted sums of rows (:func:`mix`, :func:`dot`) as plain products and sums
in index order. Token-decay's and token-match's log-losses, posterior weights and mixtures
(:mod:`paging.policies.decay`, :mod:`paging.policies.match`) must equal
:mod:`paging.fast.tokens`'s to the last bit.

Why not numpy's own: on machines with AVX-512, numpy 2.x dispatches vectorised float64
``log``, ``log1p`` and ``exp`` that differ from the C library in the last bit for some inputs,
and its ``@`` goes to a BLAS whose kernels fuse multiply and add (one rounding instead of two);
a numba kernel calls the C library and rounds every product and sum (no fused operations
without ``fastmath``). ``tests/property/test_token_kernels.py`` checks these against the
kernel's scalar operations. The scalar loops are slower than numpy's vectors, which the token
policies' reference loop does not notice (a few hundred values per token).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["log", "log1p", "exp", "mix", "dot"]


@njit(cache=True, nogil=True)
def _apply(x, which):
    out = np.empty_like(x)
    for i in range(x.size):
        v = x[i]
        if which == 0:
            out[i] = np.log(v)
        elif which == 1:
            out[i] = np.log1p(v)
        else:
            out[i] = np.exp(v)
    return out


def _call(x, which: int) -> np.ndarray:
    a = np.ascontiguousarray(x, dtype=np.float64)
    return _apply(a.reshape(-1), which).reshape(a.shape)


def log(x) -> np.ndarray:
    """The C library's ``log`` of every element of ``x`` (float64, same shape)."""
    return _call(x, 0)


def log1p(x) -> np.ndarray:
    """The C library's ``log1p`` of every element of ``x``."""
    return _call(x, 1)


def exp(x) -> np.ndarray:
    """The C library's ``exp`` of every element of ``x``."""
    return _call(x, 2)


def mix(w, rows) -> np.ndarray:
    """Σ_j w[j]·rows[j] (rows: J x n), each product and sum rounded, j in order: what a
    kernel's ``w[0]*x[0] + w[1]*x[1] + ...`` computes (numpy's elementwise ufuncs never fuse)."""
    rows = np.asarray(rows, dtype=np.float64)
    out = w[0] * rows[0]
    for j in range(1, len(w)):
        out = out + w[j] * rows[j]
    return out


def dot(w, b) -> float:
    """0 + w[0]·b[0] + w[1]·b[1] + ..., in order, each product and sum rounded."""
    acc = 0.0
    for x, y in zip(w, b, strict=True):
        acc += float(x) * float(y)
    return acc
