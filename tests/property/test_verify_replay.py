"""The streamed verifier's compiled replay (``paging.verify._replay_plain``) against the replay
it stands for (``paging.verify._Replay``, the specification): the same verdict, at the same
request, on true logs of random runs and on logs altered in one place."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from paging.fast import CarriedRun, plan
from paging.policies import make_policy
from paging.verify import StreamVerifier, VerificationError, _by_time, _Replay, _replay_plain
from tests.strategies import round_traces, topk_traces

POLICIES = ["lru", "fifo", "fwf", "lfu", "lru-dist", "fifo-dist", "gdsf", "marking", "arc"]


class _Fault(Exception):
    pass


def _raise(msg):
    raise _Fault(msg)


def _python_verdict(layout, cap, dist, budget, sizes, pages, steps, mask, ev, byp):
    """The first request the replay rejects (-1: none), from an empty cache."""
    rep = _Replay(layout, cap, dist, budget, sizes, _raise)
    seen = []

    def note(msg):
        seen.append(msg)
        raise _Fault(msg)

    rep.fail = note
    try:
        rep.piece(pages, steps, mask, _by_time(ev), set(byp.tolist()))
    except _Fault:
        return int(seen[0].split("request ")[1].split()[0].rstrip(":"))
    return -1


def _compiled_verdict(layout, cap, dist, budget, sizes, pages, steps, mask, ev, byp):
    rep = _Replay(layout, cap, dist, budget, sizes, _raise)
    held = np.zeros(layout.n_pages, np.int64)
    return int(_replay_plain(pages, steps, mask, ev, np.sort(byp),
                             np.asarray(rep.room, np.int64), rep.cap, dist, layout.n_experts,
                             held, rep.size, np.zeros(1, np.int64)))


@given(st.one_of(round_traces(max_rounds=12), topk_traces(max_tokens=6)), st.data())
def test_the_compiled_replay_gives_the_replays_verdict(tr, data):
    lay = tr.layout
    P = lay.n_pages
    pol = data.draw(st.sampled_from(POLICIES))
    by_bytes = data.draw(st.booleans())
    sizes = np.array(data.draw(st.lists(st.integers(1, 3), min_size=P, max_size=P)))
    if by_bytes:
        cap = data.draw(st.integers(int(sizes.min()), int(sizes.sum()) + 1))
        run = CarriedRun(lay, plan(make_policy(pol)), cap, slots=sizes, sizes=sizes)
    else:
        cap = data.draw(st.integers(1, P + 1))
        run = CarriedRun(lay, plan(make_policy(pol)), cap)
    dist = run.dist
    budget = cap if by_bytes else None
    pages, steps = tr.pages, tr.steps
    mask, ev, byp = run.feed(pages, steps, log=True)
    args = (lay, cap, dist, budget, sizes if by_bytes else None, pages, steps)
    assert _python_verdict(*args, mask, ev, byp) == -1  # a true log passes both
    assert _compiled_verdict(*args, mask, ev, byp) == -1
    if not pages.size:
        return
    # one alteration: a flipped hit, an eviction dropped, moved (to any page, or to a page of
    # the request's own group: a pinned one) or added, a bypass added
    how = data.draw(st.sampled_from(["flip", "drop", "move", "pinned", "add", "bypass"]))
    mask, ev, byp = mask.copy(), ev.copy(), byp.copy()
    i = data.draw(st.integers(0, pages.size - 1))
    if how == "flip":
        mask[i] = not mask[i]
    elif how in ("drop", "move") and ev.shape[0]:
        j = data.draw(st.integers(0, ev.shape[0] - 1))
        if how == "drop":
            ev = np.delete(ev, j, axis=0)
        else:
            ev[j, 1] = data.draw(st.integers(0, P - 1))
    elif how == "pinned" and ev.shape[0]:
        j = data.draw(st.integers(0, ev.shape[0] - 1))
        group = pages[steps == steps[ev[j, 0]]]
        ev[j, 1] = data.draw(st.sampled_from(group.tolist()))
    elif how == "add":
        row = np.array([[i, data.draw(st.integers(0, P - 1))]])
        ev = np.concatenate([ev, row])
        ev = ev[np.argsort(ev[:, 0], kind="stable")]
    elif how == "bypass" and i not in set(byp.tolist()):
        byp = np.sort(np.append(byp, i))
    want = _python_verdict(*args, mask, ev, byp)
    assert _compiled_verdict(*args, mask, ev, byp) == want


def test_a_fault_is_named_by_the_replay():
    """The verifier's message for a false hit is the replay's, with the request's index in the
    whole run (the second piece starts at request 3)."""
    from paging import Layout

    lay = Layout(4, 1)
    v = StreamVerifier(lay, "x", "lru", 2, False)
    v.feed(np.array([0, 1, 2]), np.array([0, 1, 2]), np.zeros(3, bool),
           np.array([[2, 0]]), np.zeros(0, np.int64))
    with pytest.raises(VerificationError, match=r"request 4 \(page 3\) recorded as a hit but"):
        v.feed(np.array([1, 3]), np.array([3, 4]), np.array([True, True]),
               np.zeros((0, 2), np.int64), np.zeros(0, np.int64))
