"""Deliberately naive, independent re-implementations used to cross-check golden numbers.

Nothing here imports the package: a plain reader for the Mixtral routing log and the granite
JSON, and list-based policies written straight from their definitions (O(k) per request).
"""

from __future__ import annotations

import json
from collections import defaultdict


def mixtral_rounds(path: str) -> dict[int, tuple[list[int], int]]:
    """problem_id -> (rounds-expanded pages, dropped tokens) for humaneval_2_routing.jsonl."""
    rows = defaultdict(dict)  # (pid, tok) -> {layer: experts}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            rows[(r["problem_id"], r["token_idx"])][r["layer"]] = r["experts"]
    out: dict[int, tuple[list[int], int]] = {}
    for pid in sorted({p for p, _ in rows}):
        pages, dropped = [], 0
        for tok in sorted(t for p, t in rows if p == pid):
            layers = rows[(pid, tok)]
            if len(layers) != 32:
                dropped += 1
                continue
            for r in range(2):
                pages += [z * 8 + layers[z][r] for z in range(32)]
        out[pid] = (pages, dropped)
    return out


def granite_rounds(path: str) -> dict[str, list[int]]:
    """prompt -> rounds-expanded pages (prefill then decode) for granite's moe_expert_trace.json."""
    d = json.load(open(path))
    L, n, K = d["num_layers"], d["num_experts"], d["top_k"]
    out = {}
    for name, pr in d["prompts"].items():
        pages = []
        for tok in pr["prefill"] + pr["decode"]:
            for r in range(K):
                pages += [z * n + tok[z][r] for z in range(L)]
        out[name] = pages
    return out


def lru(pages, k, ell=None):
    cache, misses = [], 0
    for p in pages:
        if p in cache:
            cache.remove(p)
        else:
            misses += 1
            if len(cache) == k:
                cache.pop(0)
        cache.append(p)
    return misses


def fifo(pages, k, ell=None):
    cache, misses = [], 0
    for p in pages:
        if p not in cache:
            misses += 1
            if len(cache) == k:
                cache.pop(0)
            cache.append(p)
    return misses


def belady(pages, k, ell=None):
    nxt, seen = [0] * len(pages), {}
    for i in range(len(pages) - 1, -1, -1):  # next request of the same page, by a reverse scan
        nxt[i] = seen.get(pages[i], len(pages))
        seen[pages[i]] = i
    cache, misses = {}, 0  # page -> index of its next request
    for t, p in enumerate(pages):
        if p not in cache:
            misses += 1
            if len(cache) == k:
                del cache[max(cache, key=cache.get)]
        cache[p] = nxt[t]
    return misses


def llru(pages, k, ell):
    """Def. 2 of Angelopoulos et al.: evict max R = (t - tau) // l, then max D = (tau - t) mod l."""
    last, misses = {}, 0
    for t, p in enumerate(pages):
        if p not in last:
            misses += 1
            if len(last) == k:
                v = max(last, key=lambda q: ((t - last[q]) // ell, (last[q] - t) % ell))
                del last[v]
        last[p] = t
    return misses


def lru_dist(pages, k, ell, n):
    shares = [k // ell + (1 if z < k % ell else 0) for z in range(ell)]
    caches = [[] for _ in range(ell)]
    misses = 0
    for p in pages:
        c, cap = caches[p // n], shares[p // n]
        if p in c:
            c.remove(p)
            c.append(p)
            continue
        misses += 1
        if cap == 0:
            continue
        if len(c) == cap:
            c.pop(0)
        c.append(p)
    return misses
