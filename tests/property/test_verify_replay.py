"""The verifier's compiled replay (``paging.verify._replay_compiled``) against the replay it
stands for (``paging.verify._Replay.piece``, the specification): the same verdict, at the same
request, on true logs of random runs (plain, or with prefetches, drops, substitutions and
precision levels) and on logs altered in one place."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from paging import simulate
from paging.fast import CarriedRun, plan
from paging.policies import make_policy
from paging.predict.prefetch import Prefetcher, PrefetchOracle
from paging.trace import Trace
from paging.verify import StreamVerifier, VerificationError, _by_time, _Replay
from tests.strategies import round_traces, topk_traces

POLICIES = ["lru", "fifo", "fwf", "lfu", "lru-dist", "fifo-dist", "gdsf", "marking", "arc"]


class _Fault(Exception):
    pass


def _raise(msg):
    raise _Fault(msg)


def _verdicts(layout, cap, dist, budget, sizes, pages, steps, mask, ev, byp, **events):
    """(the replay's, the compiled replay's) first rejected request, -1 for none, from an
    empty cache."""
    rep = _Replay(layout, cap, dist, budget, sizes, _raise)
    try:
        rep.piece(pages, steps, mask, _by_time(ev), set(byp.tolist()), **events)
        python = -1
    except _Fault as e:
        python = int(str(e).split("request ")[1].split()[0].rstrip(":"))
    fast = _Replay(layout, cap, dist, budget, sizes, _raise)
    return python, fast.compiled(pages, steps, mask, ev, np.sort(byp), **_arrays(**events))


def _rows(by_time) -> np.ndarray:
    return np.array([(t, v) for t in sorted(by_time or {}) for v in by_time[t]],
                    dtype=np.int64).reshape(-1, 2)


def _arrays(dropped=(), subst=None, pf_ins=None, pf_out=None, lvl=None, lv_sizes=None):
    """The events as the replay takes them (a set, dicts) -> as the compiled replay does."""
    return {"drop": np.array(sorted(dropped), dtype=np.int64), "sub": _rows(
        {t: [q] for t, q in (subst or {}).items()}), "pf_in": _rows(pf_ins),
        "pf_out": _rows(pf_out), "lvl": lvl, "lv_sizes": lv_sizes}


def _alter(data, pages, steps, mask, ev, byp, P):
    """One alteration: a flipped hit, an eviction dropped, moved (to any page, or to a page of
    the request's own group: a pinned one) or added, a bypass added."""
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
    return mask, ev, byp


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
    assert _verdicts(*args, mask, ev, byp) == (-1, -1)  # a true log passes both
    if not pages.size:
        return
    python, fast = _verdicts(*args, *_alter(data, pages, steps, mask, ev, byp, P))
    assert fast == python


def _scored(tr: Trace) -> Trace:
    """Gate scores 0.7 for rank 0 and 0.3 for the others (what drop:rank and substitute read)."""
    s = np.where(tr.rank == 0, 0.7, 0.3)
    return Trace(tr.layout, tr.pages, tr.steps, tr.name, tr.token, tr.rank, s, tr.expand,
                 tr.meta)


@given(topk_traces(max_tokens=6, expand="groups"), st.data())
def test_the_compiled_replay_gives_the_replays_verdict_with_events(tr, data):
    """Runs with an oracle prefetcher and a miss handler (drop, substitute), their event logs
    as ``verify`` reads them; then one alteration of the hit mask, the evictions, the bypasses,
    the dropped or substituted requests or the prefetches."""
    tr = _scored(tr)
    lay = tr.layout
    P = lay.n_pages
    if not tr.n_requests:
        return
    pol = data.draw(st.sampled_from(["lru", "fifo", "lfu", "lru-dist", "gdsf"]))
    k = data.draw(st.integers(1, P))
    miss = data.draw(st.sampled_from(["fetch", "drop:rank=1", "substitute"]))
    pf = data.draw(st.booleans())
    res = simulate(tr, pol, k, record=True, miss=miss,
                   prefetch=Prefetcher(PrefetchOracle(0.8, 0.8, seed=1)) if pf else None)
    evs = res.events or {}
    events = {"dropped": set(np.asarray(evs.get("dropped", []), np.int64).tolist()),
              "subst": {int(t): int(q) for t, q in np.asarray(
                  evs.get("substituted", np.zeros((0, 2))), np.int64).reshape(-1, 2)},
              "pf_ins": _by_time(evs.get("prefetched")),
              "pf_out": _by_time(evs.get("prefetch_evictions"))}
    mask = np.asarray(res.hit_mask, bool)
    ev = np.asarray(res.evictions, np.int64).reshape(-1, 2)
    byp = np.asarray(res.bypassed, np.int64)
    args = (lay, k, res.dist, None, None, tr.pages, tr.steps)
    assert _verdicts(*args, mask, ev, byp, **events) == (-1, -1)
    what = data.draw(st.sampled_from(["log", "dropped", "subst", "pf_in", "pf_out"]))
    i = data.draw(st.integers(0, tr.n_requests - 1))
    v = data.draw(st.integers(0, P - 1))
    if what == "log":
        mask, ev, byp = _alter(data, tr.pages, tr.steps, mask, ev, byp, P)
    elif what == "dropped":
        events["dropped"] = events["dropped"] ^ {i}
    elif what == "subst":
        events["subst"] = {**events["subst"], i: v}
    elif what == "pf_in":
        events["pf_ins"] = {**events["pf_ins"], i: [*events["pf_ins"].get(i, []), v]}
    else:
        events["pf_out"] = {**events["pf_out"], i: [v, *events["pf_out"].get(i, [])]}
    python, fast = _verdicts(*args, mask, ev, byp, **events)
    assert fast == python


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
