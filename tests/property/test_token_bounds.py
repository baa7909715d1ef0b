"""token-decay's and token-match's kernels in BOUNDED mode (:mod:`paging.fast.tokens`): once
the exact log-losses decide the posterior weights (w one-hot, token-match's β one value) by a
margin, the kernel sums each token's losses within a known error instead of exactly, and redoes
the run with exact sums if a bound stops deciding them. Checked here: each bounded row against
the exact one, the certification against the reference's own weight and β functions under
every perturbation within the radius, and whole runs that turn BOUNDED (and runs that are
redone) against the reference loop."""

from __future__ import annotations

import types

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_kernels import assert_same

from paging import fast, generators
from paging.fast import tokens as T
from paging.policies import make_policy
from paging.policies.decay import TokenDecay
from paging.policies.match import TokenMatch
from paging.simulate import simulate
from paging.weights import unit_sizes


def _rho(P):
    return T.rho(P)  # setup's F_RHO


@given(P=st.integers(1, 2000), data=st.data())
def test_a_bounded_row_is_within_rho_of_the_exact_row(P, data):
    """The products-of-factors sum against :func:`_loss_rows` (numpy's pairwise order, one log
    per page), a whole-layout row and a ``-dist`` one (npg pages and one constant outside),
    probabilities at the clip's ends included."""
    npg = data.draw(st.sampled_from(sorted({P, max(1, P // 8), 1})))
    base = data.draw(st.integers(0, P - npg))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = np.clip(rng.choice([rng.random(npg), rng.random(npg) ** 8, 1 - rng.random(npg) ** 8]),
                1e-4, 1 - 1e-4)
    used = (rng.random(npg) < data.draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]))).astype(float)
    cx = float(np.clip(rng.random() ** 4, 1e-4, 1 - 1e-4))
    buf = np.zeros(max(P, 16))
    exact = T._loss_rows(x, cx, used, base, npg, P, buf)
    got = T._loss_rows_bounded(x, cx, used, npg, P)
    assert abs(got - exact) <= _rho(P)
    assert abs(got - exact) <= 1e-9 * max(1.0, abs(exact))  # and far inside it
    # BOUNDED computes the memories' probabilities as (D + prior·b)·(1/den), the reference
    # as (D + prior·b)/den: the bounded row of the former within rho of the exact row of
    # the latter
    D = rng.random(npg) * rng.choice([1.0, 50.0, 1e4])
    pb, den = rng.random() * 2, 1.0 + rng.random() * rng.choice([1.0, 1e4])
    want = T._loss_rows(np.clip((D + pb) / den, 1e-4, 1 - 1e-4), cx, used, base, npg, P, buf)
    have = T._loss_rows_bounded(np.clip((D + pb) * (1.0 / den), 1e-4, 1 - 1e-4), cx, used,
                                npg, P)
    assert abs(have - want) <= _rho(P)


@given(P=st.integers(1, 600), data=st.data())
def test_the_bounded_beta_rows_are_within_rho_of_the_exact_ones(P, data):
    npg = data.draw(st.sampled_from(sorted({P, max(1, P // 8)})))
    base = data.draw(st.integers(0, P - npg))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    dec = rng.random(npg) ** data.draw(st.sampled_from([1, 6]))
    mval = rng.integers(0, 4, npg) / 3.0
    used = (rng.random(npg) < 0.3).astype(float)
    dc, nb, shrink = float(rng.random() ** 3), 3.0, data.draw(st.sampled_from([0.25, 1.0, 4.0]))
    fst = np.zeros((1, T.N_F))
    T.owing(fst, 0, npg, P)
    T._beta_rows_bounded(fst, 0, dec, mval, dc, used, npg, P, nb, shrink)
    ist = np.zeros((1, T.N_I), np.int64)
    ist[0, T.I_KIND] = T.MATCH
    T._pay(ist, fst, 0, P - npg)  # rows of at most DEFER pages were kept as products
    buf = np.zeros(max(P, 16))
    for b, beta in enumerate(T._BETAS):
        # the kernel's _mixed, elementwise
        x = dec if beta == 0.0 else beta * (nb * mval + shrink * dec) / (nb + shrink) + (
            1.0 - beta) * dec
        cx = dc if beta == 0.0 else beta * (nb * 0.0 + shrink * dc) / (nb + shrink) + (
            1.0 - beta) * dc
        exact = -T._loss_rows(np.clip(x, 1e-4, 1 - 1e-4), min(max(cx, 1e-4), 1 - 1e-4), used,
                              base, npg, P, buf)
        assert abs(fst[0, T.F_BLOSS + b] - exact) <= _rho(P), b


@given(npg=st.integers(1, T.DEFER), out=st.sampled_from([0, 1, 7, 248, 5000]),
       tokens=st.integers(1, 300), data=st.data())
def test_rows_kept_as_products_are_the_bounded_rows(npg, out, tokens, data):
    """An instance of at most DEFER pages keeps its bounded rows as products (``_owe``) and
    pays their logarithms only when a product falls below its threshold: after any number of
    tokens its loss plus what it still owes is within tokens·rho of the sum of the exact rows,
    and what it owes never exceeds 2·OWE (the allowance of its certification). Probabilities
    down to the clip's 1e-4 make the products fall fast, so both products are paid often."""
    P = npg + out
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    fst = np.zeros((1, T.N_F))
    T.owing(fst, 0, npg, P)
    ist = np.zeros((1, T.N_I), np.int64)
    ist[0, T.I_KIND], ist[0, T.I_M] = T.DECAY, 1
    buf = np.zeros(max(P, 16))
    exact = 0.0
    power = data.draw(st.sampled_from([1, 8]))
    for _ in range(tokens):
        x = np.clip(rng.random(npg) ** power, 1e-4, 1 - 1e-4)
        used = (rng.random(npg) < 0.3).astype(float)
        cx = float(np.clip(rng.random() ** rng.choice([1, 12]), 1e-4, 1 - 1e-4))
        exact += T._loss_rows(x, cx, used, 0, npg, P, buf)
        a0, a1, a2, a3 = T._lanes(x, used, 0, npg)
        T._owe(fst, 0, 0, T.F_LOSS, (a0 * a1) * (a2 * a3), 1.0 - cx, out)
        owed = -np.log(fst[0, T.F_PIN]) - out * np.log(fst[0, T.F_POUT])
        assert 0.0 <= owed <= 2 * T.OWE + 1e-9
    T._pay(ist, fst, 0, out)
    assert fst[0, T.F_PIN] == fst[0, T.F_POUT] == 1.0
    assert abs(-fst[0, T.F_LOSS] - exact) <= tokens * T.rho(P)


gaps = st.one_of(st.floats(0.0, 2000.0),
                 st.sampled_from([40.0, 746.0]).flatmap(
                     lambda g: st.floats(g - 1.0, g + 1.0)))


@given(M=st.integers(1, 2), match=st.booleans(), lo=st.floats(0.0, 1e7),
       mem=st.lists(gaps, min_size=2, max_size=2), beta=st.lists(gaps, min_size=5, max_size=5),
       bwin=st.integers(0, 4), rad=st.sampled_from([0.0, 1e-9, 0.5, 30.0]), data=st.data())
def test_a_certificate_is_the_references_weights_within_the_radius(M, match, lo, mem, beta,
                                                                   bwin, rad, data):
    """Whenever the kernel certifies losses known within ``rad`` (margin 2·rad), every loss
    vector within ``rad`` of them gives, in the reference's own functions
    (``TokenDecay.weights``, ``TokenMatch.beta``), exactly the certified weights and β; and
    gaps clear of the thresholds by more than 2·rad are always certified."""
    if data.draw(st.booleans()):  # clear of every threshold
        mem = [g + 746.0 + 2 * rad + 1.0 for g in mem]
        beta = [g + (40.0 if bwin == 0 else 746.0) + 2 * rad + 1.0 for g in beta]
        clear = True
    else:
        clear = False
    ist = np.zeros((1, T.N_I), np.int64)
    fst = np.zeros((1, T.N_F))
    ist[0, T.I_M] = M
    ist[0, T.I_KIND] = T.MATCH if match else T.DECAY
    L = lo + np.array(mem[:M])
    L[data.draw(st.integers(0, M - 1))] = lo
    B = lo + np.array(beta)
    B[bwin] = lo
    fst[0, T.F_LOSS:T.F_LOSS + M] = L
    fst[0, T.F_BLOSS:T.F_BLOSS + 5] = B
    ok = T._certify(ist, fst, 0, 2 * rad)
    assert ok or not clear
    if not ok:
        return
    w = fst[0, T.F_CW:T.F_CW + M]
    assert sorted(w) == [0.0] * (M - 1) + [1.0]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    for _ in range(20):
        d = rng.choice([-rad, rad, 0.0], size=M + 5) * rng.choice([1.0, rng.random()])
        ref = types.SimpleNamespace(loss=L + d[:M], beta_loss=B + d[M:])
        assert np.array_equal(TokenDecay.weights(ref), w)
        if match:
            assert TokenMatch.beta(ref) == fst[0, T.F_CB]


def test_certification_thresholds_by_hand():
    ist = np.zeros((1, T.N_I), np.int64)
    fst = np.zeros((1, T.N_F))
    ist[0, T.I_M], ist[0, T.I_KIND] = 2, T.MATCH
    fst[0, T.F_LOSS:T.F_LOSS + 2] = [1000.0, 1000.0 + 746.5]
    fst[0, T.F_BLOSS:T.F_BLOSS + 5] = [5.0, 45.5, 60.0, 800.0, 900.0]
    assert T._certify(ist, fst, 0, 0.0)
    assert list(fst[0, T.F_CW:T.F_CW + 2]) == [1.0, 0.0] and fst[0, T.F_CB] == 0.0
    assert not T._certify(ist, fst, 0, 1.0)  # memories: 746.5 is not above 746 + 1
    fst[0, T.F_LOSS + 1] = 3000.0
    assert not T._certify(ist, fst, 0, 1.0)  # β = 0 leads β = 0.25 by 40.5, not 41
    fst[0, T.F_BLOSS:T.F_BLOSS + 5] = [800.0, 900.0, 5.0, 700.0, 760.0]
    assert not T._certify(ist, fst, 0, 0.0)  # β = 0.5 leads, by 695 only: not one-hot
    fst[0, T.F_BLOSS + 3] = 752.0
    assert T._certify(ist, fst, 0, 0.0) and fst[0, T.F_CB] == 0.5


def _bounded_runs(monkeypatch):
    """Every kernel run turns BOUNDED as soon as certified (margin 0, the least safe, and no
    second margin: a failed bound redoes the run exactly); each run's info is kept."""
    monkeypatch.setattr(T, "ENTER", (0.0,))
    infos = []
    execute = T.execute

    def run(*a, **kw):
        infos.append({})
        return execute(*a, info=infos[-1], **kw)

    monkeypatch.setattr(T, "execute", run)
    return infos


# (policy, layout n x ℓ, tokens, seed, k, what happens with ENTER = 0, top-K and mode): runs
# that turn BOUNDED and stay so (one visit per token: the victim choice's ordered scan; top-2 in
# groups mode: pinned groups; top-2 in rounds mode, K = 2: the full scan), and runs whose
# bound fails after they turned (redone exactly)
RUNS = [("token-match", 8, 16, 2000, 1, 42, "bounded", 1, "rounds"),
        ("token-decay", 8, 16, 2000, 1, 42, "bounded", 1, "rounds"),
        ("robust-token-match", 8, 16, 1000, 0, 42, "bounded", 1, "rounds"),
        ("token-match", 8, 8, 2000, 0, 21, "bounded", 2, "groups"),
        ("token-decay", 8, 8, 2000, 1, 21, "bounded", 2, "rounds"),
        ("token-match", 8, 8, 2000, 1, 21, "redone", 1, "rounds"),
        ("token-match-dist", 32, 4, 2000, 0, 42, "bounded", 1, "rounds"),
        ("token-decay-dist", 32, 4, 2000, 1, 42, "redone", 1, "rounds")]


@pytest.mark.parametrize("name,n,L,tokens,seed,k,what,topk,mode", RUNS)
def test_bounded_runs_are_the_references(monkeypatch, name, n, L, tokens, seed, k, what, topk,
                                         mode):
    trace = generators.zipf(n=n, layers=L, tokens=tokens, seed=seed, topk=topk, expand=mode)
    ref = simulate(trace, make_policy(name), k, record=True, engine="reference")
    infos = _bounded_runs(monkeypatch)
    got = simulate(trace, make_policy(name), k, record=True, engine="fast")
    assert_same(ref, got)
    (info,) = infos
    if what == "bounded":
        assert info["bounded"] > tokens // 4 and not info["redone"] and info["enter"] == 0.0
        # token-match's β losses decide β before its memories' decide the weights: BETA mode
        # (β rows bounded, the memories' exact) in between, at BETA_ENTER's margin
        assert (info["beta_bounded"] > 0) == ("match" in name)
    else:
        assert info["redone"] and info["bounded"] == 0 and info["enter"] is None


def test_a_bound_failing_in_beta_mode_redoes_the_run(monkeypatch):
    """With no margin to enter BETA mode either, token-match-dist's β bound fails on a case
    of RUNS that stays BOUNDED with BETA_ENTER's margin: the run is redone exactly, with the
    reference's decisions."""
    trace = generators.zipf(n=32, layers=4, tokens=2000, seed=0)
    ref = simulate(trace, make_policy("token-match-dist"), 42, record=True, engine="reference")
    infos = _bounded_runs(monkeypatch)
    monkeypatch.setattr(T, "BETA_ENTER", 0.0)
    got = simulate(trace, make_policy("token-match-dist"), 42, record=True, engine="fast")
    assert_same(ref, got)
    (info,) = infos
    assert info["redone"] and info["enter"] is None


def test_a_failed_bound_is_redone_with_the_next_margin(monkeypatch):
    """A run whose bound fails at margin 0 (a case of RUNS) is redone with the next margin of
    the ladder, where it stays BOUNDED to the end: the same decisions as the reference."""
    trace = generators.zipf(n=8, layers=8, tokens=2000, seed=1)
    ref = simulate(trace, make_policy("token-match"), 21, record=True, engine="reference")
    infos = _bounded_runs(monkeypatch)
    monkeypatch.setattr(T, "ENTER", (0.0, 50.0))
    got = simulate(trace, make_policy("token-match"), 21, record=True, engine="fast")
    assert_same(ref, got)
    (info,) = infos
    assert info["redone"] and info["enter"] == 50.0 and info["bounded"] > 0


def test_exact_sums_when_asked(monkeypatch):
    """``bounded=False`` keeps every sum exact (no token end scored within a bound); the
    decisions are the same."""
    trace = generators.zipf(n=8, layers=16, tokens=2000, seed=1)
    infos = _bounded_runs(monkeypatch)
    plan, one = fast.plan(make_policy("token-match")), unit_sizes(trace.layout.n_pages)
    a = T.execute(trace, plan, one, 42, 2)
    b = T.execute(trace, plan, one, 42, 2, bounded=False)
    assert infos[0]["bounded"] > 0
    assert {k: infos[1][k] for k in ("bounded", "beta_bounded", "redone", "enter")} == {
        "bounded": 0, "beta_bounded": 0, "redone": False, "enter": None}
    assert a[0] == b[0] and np.array_equal(a[3], b[3])
    assert np.array_equal(a[4][:a[5]], b[4][:b[5]])


#: (policy, layout n x ℓ, tokens, seed, k, top-K, mode, prefetch predictor, miss handler,
#: what happens with ENTER = 0): runs with SpecMD's phases in the token kernel that turn
#: BOUNDED and stay so, or whose bound fails (redone exactly)
ORACLE = "oracle:precision=0.6,recall=0.8,seed=2"
PHASED = [("token-match", 8, 16, 2000, 1, 42, 1, "rounds", ORACLE, "substitute", "bounded"),
          ("token-match", 8, 8, 2000, 0, 21, 2, "groups", ORACLE, "drop:rank=1", "bounded"),
          ("token-match", 8, 16, 2000, 1, 42, 1, "rounds", "previous-token", "substitute",
           "redone"),
          ("token-match-dist", 32, 4, 2000, 0, 42, 1, "rounds", "previous-token", "substitute",
           "bounded"),
          ("token-decay-dist", 32, 4, 2000, 0, 42, 1, "rounds", "previous-token", "substitute",
           "redone")]


@pytest.mark.parametrize("name,n,L,tokens,seed,k,topk,mode,pred,miss,what", PHASED)
def test_bounded_runs_with_phases_are_the_references(monkeypatch, name, n, L, tokens, seed, k,
                                                     topk, mode, pred, miss, what):
    """A prefetch is heard as an insertion (the page used in the current token), a substitute
    as a hit and a dropped request not at all: the runs that turn BOUNDED or are redone with
    these phases make the reference's decisions, counters and logs."""
    from paging.predict.prefetch import Prefetcher, make_prefetch_predictor

    trace = generators.zipf(n=n, layers=L, tokens=tokens, seed=seed, topk=topk, expand=mode)
    ref = simulate(trace, make_policy(name), k, record=True, engine="reference",
                   prefetch=Prefetcher(make_prefetch_predictor(pred)), miss=miss)
    infos = _bounded_runs(monkeypatch)
    got = simulate(trace, make_policy(name), k, record=True, engine="fast",
                   prefetch=Prefetcher(make_prefetch_predictor(pred)), miss=miss)
    assert_same(ref, got)
    assert ref.extra == got.extra and ref.extra["prefetches"] > 0
    for key, a in ref.events.items():
        assert np.array_equal(np.asarray(a), np.asarray(got.events[key])), key
    (info,) = infos
    if what == "bounded":
        assert info["bounded"] > 0 and not info["redone"]
    else:
        assert info["redone"] and info["enter"] is None
