"""Hypothesis strategies shared by the test suite: random layered traces."""

from __future__ import annotations

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


def any_traces(**kw):
    return st.one_of(round_traces(), topk_traces())


def cache_sizes(trace: Trace):
    return st.integers(1, trace.layout.n_pages + 1)
