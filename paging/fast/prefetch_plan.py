"""The prefetch plan in compiled loops (:meth:`paging.predict.prefetch.Prefetcher.plan`):
group bounds, the targets' true experts, the transition predictor's sums, the frequency and
previous-token scores, and the top-K and percentile selections, each giving the arrays the
numpy definitions give (tests/property/test_phases.py). Both engines replay the same plan.
Kept apart from the phase kernel (:mod:`paging.fast.phases`), which imports the prefetcher:
the plan is the prefetcher's, the kernel only replays it."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def batch_bounds(steps):
    """``(lo, hi)`` of every group (a run of equal steps) that has a next request: the batches
    of a prefetching run, in order."""
    n = steps.size
    lo = np.zeros(n, np.int64)
    hi = np.zeros(n, np.int64)
    g = 0
    t = 0
    while t < n:
        j = t + 1
        while j < n and steps[j] == steps[t]:
            j += 1
        if j < n:
            lo[g] = t
            hi[g] = j
            g += 1
        t = j
    return lo[:g], hi[:g]


@njit(cache=True, nogil=True)
def target_truth(key, experts, hi, kmin, span, n):
    """``actual[g, e]``: expert e is requested at the (token, layer) ``key[hi[g]]`` of batch g's
    target (``key`` = token·ℓ + layer, all in ``kmin .. kmin + span - 1``)."""
    mark = np.zeros((span, n), np.bool_)
    for t in range(key.size):
        mark[key[t] - kmin, experts[t]] = True
    out = np.zeros((hi.size, n), np.bool_)
    for g in range(hi.size):
        r = key[hi[g]] - kmin
        for e in range(n):
            out[g, e] = mark[r, e]
    return out


@njit(cache=True, nogil=True, inline="always")
def _take(row, g, mg, cut, order, actual, rows, ex, c):
    """Select the ``mg`` best entries of ``row`` (batch g) that are > 0 and > ``cut`` into
    ``rows``/``ex`` from position ``c``, best first, ties to the lower index (the first ``mg``
    of a stable descending sort, as ``TopK.select_all``; ``order`` is scratch room of n
    entries). Returns ``(c, right)``: the next position, and how many selected are true
    experts (``actual[g]``)."""
    n = row.size
    for i in range(n):
        order[i] = 0  # 1: taken
    right = 0
    for _ in range(min(max(mg, 0), n)):
        # the best entry not taken yet, the lower index on ties (a stable descending sort)
        e = -1
        for i in range(n):
            if order[i] == 0 and (e < 0 or row[i] > row[e]):
                e = i
        if not (row[e] > 0 and row[e] > cut):  # the rest are not proposed either
            break
        order[e] = 1
        rows[c] = g
        ex[c] = e
        c += 1
        if actual[g, e]:
            right += 1
    return c, right


@njit(cache=True, nogil=True)
def topk_rows(scores, m, actual):
    """``TopK.select_all(scores, K)`` with ``m[g]`` = round(K·F) of row g: ``(rows, experts,
    start, right)``, the selected (row, expert) pairs in row order, each row's first position
    (``start[g]:start[g+1]``) and how many are true experts."""
    G, n = scores.shape
    total = 0
    for g in range(G):
        total += min(max(m[g], 0), n)
    rows = np.zeros(total, np.int64)
    ex = np.zeros(total, np.int64)
    start = np.zeros(G + 1, np.int64)
    order = np.zeros(n, np.int64)
    c = 0
    right = 0
    for g in range(G):
        c, r = _take(scores[g], g, m[g], -np.inf, order, actual, rows, ex, c)
        right += r
        start[g + 1] = c
    return rows[:c], ex[:c], start, right


@njit(cache=True, nogil=True)
def transition_topk(C, layers, experts, lo, hi, m, actual):
    """:func:`topk_rows` of the transition predictor's scores: row g is the sum over the
    requests lo[g]..hi[g]-1 of ``C[layer, expert, :]`` (whole numbers, so the order of the sum
    does not matter), made one row at a time."""
    n = C.shape[2]
    G = lo.size
    total = 0
    for g in range(G):
        total += min(max(m[g], 0), n)
    rows = np.zeros(total, np.int64)
    ex = np.zeros(total, np.int64)
    start = np.zeros(G + 1, np.int64)
    order = np.zeros(n, np.int64)
    row = np.zeros(n)
    c = 0
    right = 0
    for g in range(G):
        row[:] = 0.0
        for t in range(lo[g], hi[g]):
            z = layers[t]
            e = experts[t]
            for f in range(n):
                row[f] += C[z, e, f]
        c, r = _take(row, g, m[g], -np.inf, order, actual, rows, ex, c)
        right += r
        start[g + 1] = c
    return rows[:c], ex[:c], start, right


@njit(cache=True, nogil=True)
def percentile_rows(scores, p, actual):
    """``Percentile(p).select_all(scores)``: per row the entries above the row's p-th
    percentile (``numpy.percentile``'s linear method, computed with numpy's operations: index
    (n − 1)·p/100, the two sorted neighbours, and its two-sided interpolation) and above 0,
    best first, ties to the lower index; the outputs of :func:`topk_rows`."""
    G, n = scores.shape
    q = p / 100.0
    virt = (n - 1) * q
    if virt >= n - 1:
        lo_i = n - 1
        hi_i = n - 1
    elif virt < 0:
        lo_i = 0
        hi_i = 0
    else:
        lo_i = int(np.floor(virt))
        hi_i = lo_i + 1
    gamma = virt - np.floor(virt)
    rows = np.zeros(G * n, np.int64)
    ex = np.zeros(G * n, np.int64)
    start = np.zeros(G + 1, np.int64)
    order = np.zeros(n, np.int64)
    srt = np.zeros(n)
    c = 0
    right = 0
    for g in range(G):
        if n <= 32:  # insertion sort: a library sort call costs more on a few values
            for i in range(n):
                v = scores[g, i]
                j = i
                while j > 0 and srt[j - 1] > v:
                    srt[j] = srt[j - 1]
                    j -= 1
                srt[j] = v
        else:
            for i in range(n):
                srt[i] = scores[g, i]
            srt.sort()
        a = srt[lo_i]
        b = srt[hi_i]
        diff = b - a
        if gamma >= 0.5:
            cut = b - diff * (1 - gamma)
        else:
            cut = a + diff * gamma
        c, r = _take(scores[g], g, n, cut, order, actual, rows, ex, c)
        right += r
        start[g + 1] = c
    return rows[:c], ex[:c], start, right


@njit(cache=True, nogil=True)
def frequency_rows(pages, n, L, hi, layer):
    """``Frequency.score_matrix``: row g counts the requests of each expert of layer
    ``layer[g]`` among requests 0..hi[g]-1 (``hi`` ascending)."""
    counts = np.zeros(n * L, np.int64)
    out = np.zeros((hi.size, n))
    t = 0
    for g in range(hi.size):
        while t < hi[g]:
            counts[pages[t]] += 1
            t += 1
        base = layer[g] * n
        for e in range(n):
            out[g, e] = counts[base + e]
    return out


@njit(cache=True, nogil=True)
def previous_token_rows(layers, tok, experts, hi, token, layer, n, L):
    """``PreviousToken.score_matrix`` as its per-batch definition reads (``observe`` of the
    requests before each target, then ``scores``): per layer, the experts of the last token seen
    (``cur``) and of the token before it (``prev``); batch g's row is 1 on ``cur`` of the
    target's layer when that token is below the target's, else on ``prev``."""
    cur_tok = np.full(L, -1, np.int64)
    cur = np.zeros((L, n), np.bool_)
    prev = np.zeros((L, n), np.bool_)
    out = np.zeros((hi.size, n))
    t = 0
    for g in range(hi.size):
        while t < hi[g]:
            z = layers[t]
            if tok[t] != cur_tok[z]:
                for e in range(n):
                    prev[z, e] = cur[z, e]
                    cur[z, e] = False
                cur_tok[z] = tok[t]
            cur[z, experts[t]] = True
            t += 1
        z = layer[g]
        for e in range(n):
            if cur[z, e] if cur_tok[z] < token[g] else prev[z, e]:
                out[g, e] = 1.0
    return out
