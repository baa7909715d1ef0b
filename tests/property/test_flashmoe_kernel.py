"""FlashMoE's kernel (paging.fast.learned) against the reference loop: misses, per-layer
misses, the hit mask, the eviction log and the bypasses, on random traces (rounds and groups
mode, pages and byte budgets), with the shipped model on Mixtral's layout and with small random
networks (random depths and widths, and weights drawn from a few values so that exact ties, and
so the kernel's call of the reference's forward pass, are frequent); the training-sequence
refusal in a compiled run; what stays in the reference loop; decisions checked by hand."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import round_traces, topk_traces
from test_carried import _pieces
from test_kernels import assert_same

from paging import fast
from paging.errors import PagingError
from paging.fast import learned
from paging.layout import Layout
from paging.learned.mlp import MLP
from paging.learned.model import PREFIX, FlashMoEModel, fingerprint, load_model, shipped_model_path
from paging.policies import PerLayer
from paging.policies.learned import FlashMoE
from paging.simulate import simulate
from paging.trace import from_pages, from_routing

MIXTRAL = Layout(8, 32)


def check(trace, make, caps, **kw) -> None:
    for cap in caps:
        ref = simulate(trace, make(), **cap, record=True, engine="reference", **kw)
        got = simulate(trace, make(), **cap, record=True, engine="fast", **kw)
        assert_same(ref, got)
        plain = simulate(trace, make(), **cap, engine="fast", **kw)
        assert plain.misses == ref.misses


@st.composite
def mixtral_traces(draw):
    """Top-K routing on Mixtral's layout (8 experts, 32 layers), K = 1..3, a few tokens, rounds
    or groups mode: the shipped model applies."""
    K = draw(st.integers(1, 3))
    T = draw(st.integers(1, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    skew = draw(st.sampled_from([0.0, 1.0, 2.0]))  # Zipf-like: hot experts repeat
    w = 1.0 / np.arange(1, 9) ** skew
    table = np.stack([[rng.choice(8, size=K, replace=False, p=w / w.sum()) for _ in range(32)]
                      for _ in range(T)])
    mode = draw(st.sampled_from(["rounds", "groups"]))
    return from_routing(table, MIXTRAL, expand=mode, name=f"mixtral-{mode}")


@given(trace=mixtral_traces(), ks=st.lists(st.integers(1, 257), min_size=1, max_size=3))
def test_shipped_model(trace, ks):
    check(trace, FlashMoE, [dict(k=k) for k in ks])


@st.composite
def nets(draw, layout):
    """A random network: 1 to 3 linear layers of width 1..6, weights either continuous
    (torch-style initialisation from a seed) or drawn from {-1, -0.5, 0, 0.5, 1} (exact ties
    between candidates of equal features, and between different features)."""
    depth = draw(st.integers(1, 3))
    sizes = (2, *[draw(st.integers(1, 6)) for _ in range(depth - 1)], 1)
    if draw(st.booleans()):
        net = MLP.init(sizes, draw(st.integers(0, 2**32 - 1)))
    else:
        vals = st.sampled_from([-1.0, -0.5, 0.0, 0.5, 1.0])
        W = [np.array(draw(st.lists(vals, min_size=a * b, max_size=a * b))).reshape(a, b)
             for a, b in zip(sizes[:-1], sizes[1:], strict=True)]
        b = [np.array(draw(st.lists(vals, min_size=c, max_size=c))) for c in sizes[1:]]
        net = MLP(W, b)
    return FlashMoEModel(net, layout, {"trained_on": []})


@st.composite
def small_runs(draw):
    trace = draw(st.one_of(round_traces(), topk_traces(max_experts=5, max_layers=3,
                                                       max_tokens=7)))
    return trace, draw(nets(trace.layout))


@given(run=small_runs())
def test_random_networks(run):
    trace, model = run
    P = trace.layout.n_pages
    check(trace, lambda: FlashMoE(model), [dict(k=k) for k in range(1, P + 2)])


@given(run=small_runs(), data=st.data())
def test_byte_budgets(run, data):
    """Several victims per miss (the features recomputed between them), pages larger than the
    budget and pinned groups filling it (bypasses: the policy does not see those requests)."""
    trace, model = run
    P = trace.layout.n_pages
    sizes = np.array(data.draw(st.lists(st.integers(1, 4), min_size=P, max_size=P)), np.int64)
    budget = data.draw(st.integers(int(sizes.min()), int(sizes.sum()) + 1))
    caps = [dict(budget=budget), dict(budget=max(int(sizes.min()), budget // 2))]
    check(trace, lambda: FlashMoE(model), caps, sizes=sizes)
    check(trace, lambda: FlashMoE(model), [dict(k=max(1, budget // 2))], sizes=sizes)


def test_the_benchmark_trace_prefix_and_its_counters():
    """300 tokens of the benchmark trace (zipf n=8, ℓ=32, seed 0) at k = 64: the same run;
    the kernel evaluates the network at a minority of the evictions (the cells' bounds decide
    the rest)."""
    from paging import generators

    tr = generators.zipf(n=8, layers=32, tokens=300, seed=0)
    ref = simulate(tr, FlashMoE(), 64, record=True, engine="reference")
    got = simulate(tr, FlashMoE(), 64, record=True, engine="fast")
    assert_same(ref, got)
    stats = np.zeros(3, np.int64)
    pol = FlashMoE()
    learned.execute(tr, fast.plan(pol), np.ones(256, np.int64), 64, 0, pol, stats)
    assert stats[0] == len(ref.evictions)
    assert stats[1] < stats[0]


def test_near_ties_call_the_reference():
    """A constant network: every eviction is a tie, decided by the reference's forward pass
    (its first maximum: the earliest inserted candidate, FIFO); a network of 1/r alone ties
    the candidates requested in the same group."""
    lay = Layout(8, 1)
    flat = FlashMoEModel(MLP([np.zeros((2, 1))], [np.array([0.5])]), lay, {"trained_on": []})
    tr = from_pages([0, 1, 2, 3, 0, 4, 5, 1, 6, 7, 2, 0], lay)
    stats = np.zeros(3, np.int64)
    pol = FlashMoE(flat)
    out = learned.execute(tr, fast.plan(pol), np.ones(8, np.int64), 3, 2, pol, stats)
    assert stats[2] == stats[0] > 0
    ref = simulate(tr, FlashMoE(flat), 3, record=True, engine="reference")
    assert out[4][:out[5]].tolist() == ref.evictions.tolist()
    fifo = simulate(tr, "fifo", 3, record=True)
    assert ref.evictions.tolist() == fifo.evictions.tolist()
    table = np.array([[[0, 1], [0, 1]], [[2, 3], [2, 3]], [[1, 2], [0, 3]]])
    lay = Layout(4, 2)
    recency = FlashMoEModel(MLP([np.array([[-1.0], [0.0]])], [np.array([0.0])]), lay,
                            {"trained_on": []})
    groups = from_routing(table, lay, expand="groups")
    check(groups, lambda: FlashMoE(recency), [dict(k=k) for k in range(1, 10)])


def test_decisions_by_hand():
    """pages 0,0,1,2 (n=3, one layer), k=2; at t=3 the candidates are 0 (r=3, f=2) and 1
    (r=2, f=1), max f = 2 (test_learned's case, here in the kernel)."""
    lay = Layout(3, 1)
    tr = from_pages([0, 0, 1, 2], lay)

    def lin(a, b):
        net = MLP([np.array([[a], [b]])], [np.array([0.0])])
        return FlashMoE(FlashMoEModel(net, lay, {"trained_on": []}))

    assert simulate(tr, lin(-1.0, 0.0), 2, record=True, engine="fast").evictions.tolist() == \
        [[3, 0]]
    assert simulate(tr, lin(0.0, -1.0), 2, record=True, engine="fast").evictions.tolist() == \
        [[3, 1]]


@pytest.mark.parametrize("n_tokens", [3, 40])  # fewer and more requests than PREFIX (512)
def test_training_sequence_refused_in_the_kernel(n_tokens, tmp_path):
    """A model trained on the sequence refuses it in a compiled run as in the reference loop
    (same error); a sequence of the same length with another prefix runs, the same run."""
    from paging import generators

    tr = generators.zipf(n=8, layers=32, tokens=n_tokens, seed=3)
    assert (tr.n_requests > PREFIX) == (n_tokens == 40)
    base = load_model(shipped_model_path(MIXTRAL))
    model = FlashMoEModel(base.net, MIXTRAL, {"trained_on": [fingerprint(tr)]})
    path = model.save(tmp_path / "m.npz")
    for src in (model, str(path)):
        msgs = []
        for engine in ("reference", "fast"):
            with pytest.raises(PagingError, match="was trained on sequence") as e:
                simulate(tr, FlashMoE(src), 40, engine=engine)
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1]
    pages = tr.pages.copy()
    pages[0] = (pages[0] + 1) % 8  # another first request: another prefix hash
    other = from_pages(pages, MIXTRAL)
    check(other, lambda: FlashMoE(model), [dict(k=40), dict(k=5)])


ROUTING_HOOKS = ["pruning:j=1", "max-rank:j=1", "max-rank:j=0", "cumsum:tau=0.5",
                 "cache-prior:lambda=0.5"]


@given(trace=mixtral_traces(), k=st.integers(1, 257), hook=st.sampled_from(ROUTING_HOOKS))
def test_routed_runs(trace, k, hook):
    """Cache-aware routing inside the kernel (each group routed against the kernel's residency
    as it starts) equals the reference loop, every Result field and the served sequence."""
    from strategies import assert_same_fields

    if trace.expand != "groups" and int(trace.rank.max()) > 0:
        for engine in ("reference", "fast"):  # rounds mode spreads a group over K rounds
            with pytest.raises(PagingError, match="routing decides per"):
                simulate(trace, FlashMoE(), k, routing=hook, engine=engine)
        return
    ref = simulate(trace, FlashMoE(), k, routing=hook, record=True, engine="reference")
    got = simulate(trace, FlashMoE(), k, routing=hook, record=True, engine="fast")
    assert_same_fields(got, ref)


def test_routed_training_sequence_refused_on_the_served_pages(tmp_path):
    """With routing the policy sees the served pages: a model trained on a routed run's served
    sequence refuses that routed run in both engines (same error), and not the unrouted one."""
    from paging.generators import router

    tr = router(8, 32, 10, k=2, seed=5, expand="groups")  # 640 requests > PREFIX
    hook = "max-rank:j=0"  # cached experts first: the served pages are not the trace's
    plain = FlashMoE(FlashMoEModel(load_model(shipped_model_path(MIXTRAL)).net, MIXTRAL,
                                   {"trained_on": []}))
    served = simulate(tr, plain, 40, routing=hook, record=True,
                      engine="reference").events["served_pages"]
    assert served.size == tr.n_requests and not np.array_equal(served[:PREFIX],
                                                                tr.pages[:PREFIX])
    model = FlashMoEModel(plain.model.net, MIXTRAL,
                          {"trained_on": [fingerprint(SimpleNamespace(pages=served,
                                                                      name="served"))]})
    msgs = []
    for engine in ("reference", "fast"):
        with pytest.raises(PagingError, match="was trained on sequence") as e:
            simulate(tr, FlashMoE(model), 40, routing=hook, engine=engine)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]
    check(tr, lambda: FlashMoE(model), [dict(k=40)])


def test_what_stays_in_the_reference_loop():
    class Sub(FlashMoE):
        pass

    assert fast.has_kernel(FlashMoE())
    assert not fast.has_kernel(Sub())
    assert not fast.has_kernel(PerLayer(FlashMoE))
    with pytest.raises(PagingError, match="no compiled kernel"):
        simulate(from_pages([0, 1, 2], Layout(3, 1)), PerLayer(FlashMoE), 2, engine="fast")


def test_missing_model_same_error():
    lay = Layout(3, 1)
    for engine in ("reference", "fast"):
        with pytest.raises(PagingError, match="no shipped model for 1 layers x 3 experts"):
            simulate(from_pages([0, 1, 2], lay), FlashMoE(), 2, engine=engine)


def test_error_bound_covers_reordered_sums():
    """The threshold ``tau`` exceeds the difference between numpy's batched forward pass and
    the kernel's loop on many inputs, and the cells' bounds contain the scores."""
    net = load_model(shipped_model_path(MIXTRAL)).net
    pr = learned.prepare(net)
    rng = np.random.default_rng(0)
    r = rng.integers(1, 5000, size=400)
    f_max = rng.integers(1, 10**6, size=400)
    f = (rng.random(400) * f_max).astype(np.int64)
    X = np.stack([1.0 / r.astype(np.float64), f / f_max], axis=1)
    ref = net.forward(X)
    a = np.zeros(128)
    z = np.zeros(128)
    for i in range(400):
        got = learned._score(X[i, 0], X[i, 1], pr.wf, pr.bf, pr.dims, pr.woff, pr.boff, a, z)
        assert abs(got - ref[i]) <= pr.tau / 2
        row = learned._row(int(r[i]), pr.r_lo, pr.rmap)
        col = min(int(f[i] * (learned.V / f_max[i])), learned.V - 1)
        pr.fill(row)
        assert pr.lo[row, col] <= ref[i] <= pr.hi[row, col]


@given(trace=topk_traces(max_experts=5, max_layers=3, max_tokens=7, expand="groups"),
       data=st.data())
def test_a_carried_run_fed_in_pieces_equals_the_reference(trace, data):
    """A serving run's FlashMoE (paging.fast.CarriedRun over learned.Carried: the kernel
    called again from the state the last piece left), fed in pieces cut at group boundaries,
    with random networks (exact ties: the reference's forward pass at near ties, candidates
    in insertion order across pieces) and pages or byte budgets: the reference loop's hits,
    per-page misses, collisions and bypasses, and its cache after every piece."""
    model = data.draw(nets(trace.layout))
    P = trace.layout.n_pages
    sizes = None
    cap = data.draw(st.integers(1, P + 1))
    if data.draw(st.booleans()):
        sizes = np.array(data.draw(st.lists(st.integers(1, 3), min_size=P, max_size=P)),
                         np.int64)
        cap = 2 * cap + 1  # (at least the largest page)
    ref = simulate(trace, FlashMoE(model), **({"k": cap} if sizes is None else {"budget": cap}),
                   sizes=sizes, record=True, engine="reference")
    spec = fast.plan(FlashMoE(model))
    assert fast.carries(spec) and fast.carries(spec, bounded_memory=True)
    run = fast.CarriedRun(trace.layout, spec, cap, sizes)
    evicted = {}
    for t, v in np.asarray(ref.evictions).reshape(-1, 2).tolist():
        evicted.setdefault(t, []).append(v)
    bypassed = set(np.asarray(ref.bypassed).tolist())
    cache = np.zeros(P, bool)
    hits = []
    for lo, hi in _pieces(trace, data):
        hits.append(run.feed(trace.pages[lo:hi], trace.steps[lo:hi], hits=True))
        for t in range(lo, hi):
            cache[evicted.get(t, [])] = False
            if not ref.hit_mask[t] and t not in bypassed:
                cache[trace.pages[t]] = True
        np.testing.assert_array_equal(run.resident(), cache)
    mask = np.concatenate(hits) if hits else np.zeros(0, bool)
    np.testing.assert_array_equal(mask, ref.hit_mask)
    np.testing.assert_array_equal(run.page_misses, ref.page_misses)
    assert run.collisions == ref.collision_misses and run.bypasses == ref.bypasses


def test_a_carried_run_keeps_the_insertion_order_across_pieces():
    """A constant network ties every eviction, which the reference's forward pass gives to
    the earliest inserted candidate (FIFO): fed one group at a time, the carried run's
    insertion stamps run on from piece to piece, so it evicts as FIFO does."""
    lay = Layout(8, 1)
    flat = FlashMoEModel(MLP([np.zeros((2, 1))], [np.array([0.5])]), lay, {"trained_on": []})
    tr = from_pages([0, 1, 2, 3, 0, 4, 5, 1, 6, 7, 2, 0], lay)
    run = fast.CarriedRun(lay, fast.plan(FlashMoE(flat)), 3)
    hits = np.concatenate([run.feed(tr.pages[t:t + 1], tr.steps[t:t + 1], hits=True)
                           for t in range(tr.n_requests)])
    fifo = simulate(tr, "fifo", 3, record=True)
    np.testing.assert_array_equal(hits, fifo.hit_mask)
    assert run.state.stats[2] == run.state.stats[0] > 0  # every eviction a near tie
