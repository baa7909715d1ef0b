"""Trace construction, expansion and validation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import paging.trace as trace_mod
from paging import Layout, PagingError, Trace, from_pages, from_routing


def test_rounds_and_groups_expansion_by_hand():
    # 2 tokens, l = 2 layers of n = 3, top-2. Page = layer*3 + expert.
    e = np.array([[[0, 1], [2, 0]], [[1, 2], [0, 1]]])
    r = from_routing(e, Layout(3, 2), "rounds")
    # token 0: round 0 = (L0 e0, L1 e2) = 0, 5; round 1 = (L0 e1, L1 e0) = 1, 3; token 1: ...
    assert r.pages.tolist() == [0, 5, 1, 3, 1, 3, 2, 4]
    assert r.steps.tolist() == list(range(8))
    assert r.rank.tolist() == [0, 0, 1, 1, 0, 0, 1, 1]
    g = from_routing(e, Layout(3, 2), "groups")
    assert g.pages.tolist() == [0, 1, 5, 3, 1, 2, 3, 4]
    assert g.steps.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert g.passes.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert g.next_use.tolist() == [8, 4, 8, 6, 8, 8, 8, 8]


def test_arrays_are_read_only():
    t = from_pages([0, 1, 0], Layout(2, 1))
    with pytest.raises(ValueError):
        t.pages[0] = 1


@pytest.mark.parametrize("pages,msg", [
    ([0, 0], "wrong layer order: request 1 is page 0 \\(layer 0\\), expected a page of layer 1"),
    ([0, 9], "request 1 is page 9, expected a page id in 0..3"),
    ([-1, 2], "request 0 is page -1"),
])
def test_validation_messages(pages, msg):
    with pytest.raises(PagingError, match=msg):
        from_pages(pages, Layout(2, 2))


def test_chunked_validation_finds_errors_across_block_edges(monkeypatch):
    monkeypatch.setattr(trace_mod, "_CHUNK", 4)
    lay = Layout(2, 3)
    good = [z * 2 for _ in range(5) for z in range(3)]  # 15 requests, 4 blocks
    from_pages(good, lay)
    for i in (3, 4, 8, 14):  # errors at and after block edges
        bad = list(good)
        bad[i] = (bad[i] + 2) % 6  # a page of the next layer
        with pytest.raises(PagingError, match=f"request {i} is page"):
            from_pages(bad, lay)
    steps = np.arange(15)
    steps[8:] += 1  # a jump of 2 at request 8
    with pytest.raises(PagingError, match="request 8 has step 9 after 7"):
        Trace(lay, np.array(good), steps)


def test_groups_must_not_repeat_a_page():
    with pytest.raises(PagingError, match="requests page 1 twice"):
        Trace(Layout(3, 1), [1, 1], [0, 0], expand="groups")


def test_head_keeps_only_what_still_holds():
    # 3 tokens, l = 2, top-2 in rounds mode: 4 requests per token
    e = np.array([[[0, 1], [0, 1]], [[1, 2], [2, 0]], [[2, 0], [1, 2]]])
    t = from_routing(e, Layout(3, 2), "rounds", meta={"rows": 6, "phases": {"x": 1}})
    h = t.head(6)  # token 0 and half of token 1
    assert h.pages.tolist() == t.pages.tolist()[:6]
    assert h.meta["n_tokens"] == 2 and h.meta["head_of"] == 12 and h.meta["top_k"] == 2
    assert "rows" not in h.meta and "phases" not in h.meta
    assert t.meta["n_tokens"] == 3  # the original is untouched


@given(st.lists(st.integers(0, 20), max_size=60), st.sampled_from([0, -5, 1 << 40]))
def test_next_use_equals_its_definition(ids, shift):
    """The compiled pass (dense ids) and the sort (negative or sparse ids) both give, for each
    i, the smallest j > i with the same id, else len(pages); read-only."""
    pages = np.array(ids, dtype=np.int64) + shift
    want = [next((j for j in range(i + 1, len(ids)) if ids[j] == ids[i]), len(ids))
            for i in range(len(ids))]
    got = trace_mod.next_use(pages)
    assert got.tolist() == want
    assert not got.flags.writeable


def test_top_k_reads_the_recorded_value_then_the_ranks_then_the_groups():
    """Trace.top_k and the chunked readers' top_k_of, by hand: a recorded top_k (an integer
    >= 1; a bool or a string is not one) wins, else the largest rank + 1, else the largest
    group (3 here: steps 0, 0, 0, 1), 1 for an empty trace."""
    from paging.trace import top_k_of

    lay = Layout(4, 2)
    pages, steps = np.array([0, 1, 2, 4]), np.array([0, 0, 0, 1])
    t = Trace(lay, pages, steps, expand="groups")
    assert t.top_k == 3
    assert Trace(lay, pages, steps, expand="groups", meta={"top_k": 2}).top_k == 2
    assert Trace(lay, pages, steps, expand="groups", meta={"top_k": True}).top_k == 3
    assert Trace(lay, pages, steps, expand="groups", rank=np.array([0, 1, 4, 0])).top_k == 5
    assert Trace(lay, np.zeros(0, np.int64), np.zeros(0, np.int64)).top_k == 1
    assert top_k_of({"top_k": "2"}, None) == 1 and top_k_of({}, 3) == 4
    assert top_k_of({"top_k": 6}, 3) == 6
