"""Hypothesis strategies shared by the test suite: random layered traces."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import strategies as st

from paging.layout import Layout
from paging.trace import Trace, from_pages, from_routing


@st.composite
def layouts(draw, max_experts: int = 5, max_layers: int = 4) -> Layout:
    return Layout(draw(st.integers(1, max_experts)), draw(st.integers(1, max_layers)))


@st.composite
def round_traces(draw, max_experts: int = 5, max_layers: int = 4, max_rounds: int = 12) -> Trace:
    """A rounds-mode trace: request i is an expert of layer i mod ℓ."""
    lay = draw(layouts(max_experts, max_layers))
    rounds = draw(st.integers(0, max_rounds))
    experts = draw(st.lists(st.integers(0, lay.n_experts - 1),
                            min_size=rounds * lay.n_layers, max_size=rounds * lay.n_layers))
    layer = np.arange(len(experts)) % lay.n_layers
    pages = layer * lay.n_experts + np.asarray(experts, dtype=np.int64)
    return from_pages(pages, lay, name="hyp")


@st.composite
def topk_traces(draw, max_experts: int = 5, max_layers: int = 3, max_tokens: int = 6,
                expand: str | None = None) -> Trace:
    """A top-K routing table (K distinct experts per token and layer), expanded in rounds or
    groups mode."""
    lay = draw(layouts(max_experts, max_layers))
    K = draw(st.integers(1, lay.n_experts))
    T = draw(st.integers(0, max_tokens))
    table = np.zeros((T, lay.n_layers, K), dtype=np.int64)
    for t in range(T):
        for z in range(lay.n_layers):
            table[t, z] = draw(st.permutations(range(lay.n_experts)))[:K]
    mode = expand or draw(st.sampled_from(["rounds", "groups"]))
    return from_routing(table, lay, expand=mode, name=f"hyp-{mode}")


@st.composite
def long_round_traces(draw, max_rounds: int = 200, min_pages: int = 1,
                      max_pages: int = 9) -> Trace:
    """Long rounds-mode traces on few pages (n·ℓ in min_pages..max_pages, at most 3 layers),
    where competitive bounds can be tight:
    uniform requests, the cyclic sequence of Theorem 3 (LRU misses every request), the cyclic
    sequence with some requests replaced at random, or a frequency trap (one hot expert per
    layer, then a cycle over the others). Pages come from a seeded numpy Generator."""
    L = draw(st.integers(1, 3))
    n = draw(st.integers(max(1, -(-min_pages // L)), max(1, max_pages // L)))
    lay = Layout(n, L)
    rounds = draw(st.integers(10, max_rounds))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n, L = lay.n_experts, lay.n_layers
    cyclic = np.repeat(np.arange(rounds) % n, L)
    kind = draw(st.sampled_from(["uniform", "cyclic", "noisy-cyclic", "trap"]))
    if kind == "uniform":
        experts = rng.integers(0, n, rounds * L)
    elif kind == "cyclic" or (kind == "trap" and n == 1):
        experts = cyclic
    elif kind == "trap":
        # the frequency trap: expert 0 of every layer for the first third, then a cycle over the
        # other experts (LFU keeps the early hot pages and is not competitive here)
        hot = rounds // 3
        experts = np.r_[np.zeros(hot * L, np.int64),
                        1 + np.repeat(np.arange(rounds - hot) % (n - 1), L)]
    else:
        noise = rng.random(rounds * L) < draw(st.floats(0.02, 0.3))
        experts = np.where(noise, rng.integers(0, n, rounds * L), cyclic)
    pages = (np.arange(rounds * L) % L) * n + experts
    return from_pages(pages, lay, name=f"long-{kind}")


@st.composite
def page_weights(draw, n_pages: int, max_size: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Per-page ``(costs, sizes)``: costs from two tiers or small dyadic fractions (exact in
    min-cost flow), sizes integers 1..max_size."""
    costs = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0, 10.0]),
                          min_size=n_pages, max_size=n_pages))
    sizes = draw(st.lists(st.integers(1, max_size), min_size=n_pages, max_size=n_pages))
    return np.asarray(costs, dtype=np.float64), np.asarray(sizes, dtype=np.int64)


def scored_for(name: str, trace: Trace) -> Trace:
    """``trace`` with gate scores when policy ``name`` reads them (``needs_scores``: Score-Based),
    a fixed function of the page id, (p mod 7 + 1) / 8, so its decisions depend on the trace
    only; any other policy gets ``trace`` unchanged."""
    from paging.policies import make_policy

    if not make_policy(name).needs_scores or trace.score is not None:
        return trace
    return Trace(trace.layout, trace.pages, trace.steps, trace.name, trace.token, trace.rank,
                 (trace.pages % 7 + 1) / 8, trace.expand, trace.meta)


def assert_same_fields(a, b) -> None:
    """Every field of two Results equal (arrays with their dtype, extra's values with their
    type: the floats bit for bit)."""
    for f in dataclasses.fields(b):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(y, np.ndarray):
            assert isinstance(x, np.ndarray) and x.dtype == y.dtype, f.name
            assert np.array_equal(x, y), f.name
        elif isinstance(y, dict):
            assert isinstance(x, dict) and x.keys() == y.keys(), f.name
            for key in y:
                if isinstance(y[key], np.ndarray):
                    assert x[key].dtype == y[key].dtype and np.array_equal(x[key], y[key]), key
                elif isinstance(y[key], list) and y[key] and isinstance(y[key][0], np.ndarray):
                    assert len(x[key]) == len(y[key]) and all(  # (per-level arrays)
                        np.array_equal(u, v) for u, v in zip(x[key], y[key], strict=True)), key
                else:
                    assert type(x[key]) is type(y[key]) and x[key] == y[key], (key, x[key], y[key])
        else:
            assert type(x) is type(y) and x == y, (f.name, x, y)


def cascade_handler(cascade, costs, sizes):
    """A handler whose cascade puts pages of several sizes in the cache (``lowest-bit``: half
    size, ``priority``: full, half or quarter by gate score), another built-in handler by its
    spec (``substitute``, ``drop:rank=1``, ...), or None (``none``)."""
    from paging.miss import FetchLowestBit, FetchPriority, make_miss

    lv = [sizes, np.maximum(1, sizes // 2), np.maximum(1, sizes // 4)]
    lc = [costs, costs / 2, costs / 4]
    if cascade == "lowest-bit":
        return FetchLowestBit(("int8", "int4")).bind(lv[:2], lc[:2])
    if cascade == "priority":
        return FetchPriority(("bf16", "int8", "int4"), (0.5, 0.25)).bind(lv, lc)
    return None if cascade == "none" else make_miss(cascade)


def group_exceeds_its_partition(trace: Trace, k: int, dist: bool, sizes=None) -> bool:
    """Whether some group (the requests of one step) needs more than its partition holds (the
    shared cache of ``k`` pages, or ``k`` bytes with ``sizes``; its layer's share with
    ``dist``), counting the pages that fit the partition at all (a larger one is bypassed):
    the case the offline optima refuse by design (groups mode with a share below a group).
    Counted here from the trace, not read from the solvers."""
    caps = np.asarray(trace.layout.dist_shares(k) if dist else [k], dtype=np.int64)
    size = (np.ones(trace.n_requests, dtype=np.int64) if sizes is None
            else np.asarray(sizes, dtype=np.int64)[trace.pages])
    cap = caps[trace.layers if dist else np.zeros(trace.n_requests, dtype=np.int64)]
    steps, at = np.unique(trace.steps, return_inverse=True)
    load = np.bincount(at, weights=np.where(size <= cap, size, 0), minlength=steps.size)
    room = np.zeros(steps.size, dtype=np.int64)
    room[at] = cap  # (a step's requests share one layer: one partition)
    return bool(np.any(load > room))
