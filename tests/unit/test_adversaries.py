"""The lower-bound constructions on small instances, with counts derived by hand.

Pages are ``layer * n + expert`` (0-based); rounds list one page per layer.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from functools import cache

import numpy as np
import pytest

from adversaries import ADVERSARIES, classic, theorem1, theorem2, theorem3, theorem4
from paging.cli import main
from paging.coupon import harmonic
from paging.errors import PagingError
from paging.layout import Layout
from paging.offline.ilp import opt_ilp
from paging.simulate import simulate

# -- Theorem 3 -------------------------------------------------------------------------------


def test_theorem3_l2_k5_twelve_rounds():
    """n = 3, ℓ = 2, k = 5: the 6 pages cycle 0,3,1,4,2,5. LRU misses all 24 requests. Belady:
    compulsory misses at requests 0..4; at request 5 (page 5) it evicts page 2, the cached page
    requested furthest ahead (request 10), and so on: misses at 5, 10, 15, 20 -> OPT = 9."""
    r = theorem3.build("lru", n=3, layers=2, rounds=12)
    assert r.k == 5
    assert r.trace.pages.tolist()[:8] == [0, 3, 1, 4, 2, 5, 0, 3]
    assert (r.online_misses, r.opt_misses) == (24, 9)
    assert r.ratio == Fraction(24, 9)
    assert r.params["opt_formula"] == 9  # 5 + ceil((24 - 5) / 5)
    hits = simulate(r.trace, "belady", 5, record=True).hit_mask
    assert np.flatnonzero(~hits).tolist() == [0, 1, 2, 3, 4, 5, 10, 15, 20]


def test_theorem3_opt_formula_small_cases():
    # N <= k: every request is a first request
    assert [theorem3.opt_formula(N, 5) for N in range(6)] == [0, 1, 2, 3, 4, 5]
    # then one miss every k requests, at requests k, 2k, ...
    assert [theorem3.opt_formula(N, 5) for N in (6, 10, 11, 15, 16)] == [6, 6, 7, 7, 8]


def test_theorem3_rejects_a_k_that_is_not_nl_minus_1():
    with pytest.raises(PagingError, match="needs k = 5"):
        theorem3.build("lru", n=3, layers=2, k=4)


# -- Theorem 1 -------------------------------------------------------------------------------


def test_theorem1_n2_l2_k3_lru_dist():
    """n = 2, ℓ = 2, k = 3 = n + ℓ − 1 (the only k in the window). DIST shares are [2, 1], so
    layer 1 is attacked: pages 0,2,0,3,0,2,... . LRU-DIST: page 0 misses once, layer 1's single
    slot alternates between pages 2 and 3 and misses all 6 times: 7. OPT holds all 3 pages: 3.
    Lower bound: ℓ − 1 + n + (n − s)(⌊R/n⌋ − 1) = 1 + 2 + 1·2 = 5."""
    r = theorem1.build("lru-dist", n=2, layers=2, k=3, rounds=6)
    assert r.trace.pages.tolist() == [0, 2, 0, 3, 0, 2, 0, 3, 0, 2, 0, 3]
    assert (r.params["z"], r.params["share_z"], r.params["shares"]) == (1, 1, [2, 1])
    assert (r.online_misses, r.opt_misses) == (7, 3)
    assert r.params["online_lower_bound"] == 5
    assert r.bound == Fraction(5, 3)


def test_theorem1_opt_is_constant_from_k_equal_n_plus_l_minus_1():
    lay = Layout(3, 3)
    short, long = theorem1.sequence(lay, 6, 2), theorem1.sequence(lay, 60, 2)
    # k = n + ℓ − 1 = 5 (below the paper's "k > n + ℓ"): only the 5 compulsory misses
    assert simulate(short, "belady", 5).misses == simulate(long, "belady", 5).misses == 5
    # one slot less and OPT must keep missing
    assert simulate(long, "belady", 4).misses > simulate(short, "belady", 4).misses


def test_theorem1_misses_grow_linearly_for_a_dist_policy():
    a = [theorem1.build("llru-dist", n=3, layers=2, rounds=R).online_misses for R in (30, 60)]
    o = [theorem1.build("llru-dist", n=3, layers=2, rounds=R).opt_misses for R in (30, 60)]
    assert o[0] == o[1] == 4          # n + ℓ − 1 distinct pages
    assert a[1] - a[0] >= (3 - 2) * 30 // 3  # n − s_z misses per n rounds


@pytest.mark.parametrize("kw, message", [
    (dict(n=3, layers=2, k=3), "4 <= k <= 5"),
    (dict(n=3, layers=2, k=6), "4 <= k <= 5"),
    (dict(n=1, layers=3), "n >= 2 and layers >= 2"),
    (dict(n=0, layers=3), "n \\(experts per layer\\) must be an integer >= 1, got 0"),
])
def test_theorem1_rejects_k_outside_the_window(kw, message):
    with pytest.raises(PagingError, match=message):
        theorem1.build("lru-dist", **kw)


def test_theorem1_needs_a_partitioned_policy():
    with pytest.raises(PagingError, match="try lru-dist"):
        theorem1.build("lru", n=3, layers=2)


# -- Theorem 2 -------------------------------------------------------------------------------


def test_theorem2_lru_n2_l2_by_hand():
    """k = 3, pages {0,1} (layer 0) and {2,3} (layer 1). Rounds: [0,2]; missing {1,3} -> 1:
    [1,2]; missing 3: [1,3] (LRU evicts 0); missing 0: [0,3] (evicts 2); missing 2: [0,2]
    (evicts 1); then the period repeats. LRU: 2 + 1 per round = 9 misses in 8 rounds.
    Belady: 3 compulsory, then misses at requests 5 (evicts 1), 10 (evicts 0), 14: OPT = 6."""
    r = theorem2.build("lru", n=2, layers=2, rounds=8)
    assert r.trace.pages.tolist() == [0, 2, 1, 2, 1, 3, 0, 3, 0, 2, 1, 2, 1, 3, 0, 3]
    assert (r.online_misses, r.opt_misses) == (9, 6)
    assert r.bound == 2                             # k − ℓ + 1
    assert r.params["additive_constant"] == 4       # (k + 1)(k − ℓ)
    assert r.params["measured_additive"] == 3       # 2·6 − 9
    assert r.params["min_misses_per_round"] == 1


def test_theorem2_records_opt_on_request():
    """The hand example above: Belady evicts at requests 5 (page 1), 10 (page 0) and 14."""
    r = theorem2.build("lru", n=2, layers=2, rounds=8, record=True)
    assert r.opt_run.misses == r.opt_misses == 6
    assert r.opt_run.evictions[:, 0].tolist() == [5, 10, 14]
    assert r.opt_run.evictions[:2, 1].tolist() == [1, 0]
    assert theorem2.build("lru", n=2, layers=2, rounds=8).opt_run is None


def test_theorem2_first_round_equals_opt():
    """One round: all ℓ requests are compulsory for both, so A = OPT = ℓ < (k − ℓ + 1)·OPT:
    the printed inequality without an additive constant fails."""
    r = theorem2.build("fifo", n=3, layers=2, rounds=1)
    assert (r.online_misses, r.opt_misses) == (2, 2)
    assert r.online_misses < int(r.bound) * r.opt_misses
    assert r.online_misses >= int(r.bound) * r.opt_misses - r.params["additive_constant"]


@pytest.mark.parametrize("policy, message", [
    ("marking", "randomized"), ("marking-dist", "randomized"),
    ("belady", "clairvoyant"), ("belady-dist", "clairvoyant"),
])
def test_theorem2_rejects_randomized_and_clairvoyant_policies(policy, message):
    with pytest.raises(PagingError, match=message):
        theorem2.build(policy, n=2, layers=2)


def test_theorem2_rejects_other_k():
    with pytest.raises(PagingError, match="needs k = 5"):
        theorem2.build("lru", n=3, layers=2, k=4)


# -- classic constructions -------------------------------------------------------------------


def test_sleator_tarjan_one_layer_is_the_cycle():
    """n = 3, k = 2, one layer: LRU always lacks the page it evicted last, so the adversary
    requests 0,1,2,0,1,2,...; LRU misses all 9; OPT = 2 + ⌈7/2⌉ = 6; the bound
    A >= k·OPT − (k² − 1) = 12 − 3 holds with equality."""
    r = classic.sleator_tarjan("lru", n=3, layers=1, rounds=9)
    assert r.trace.pages.tolist() == [0, 1, 2] * 3
    assert (r.online_misses, r.opt_misses) == (9, 6)
    assert r.online_misses == r.k * r.opt_misses - r.params["additive_constant"]


def test_sleator_tarjan_uses_k_plus_one_pages_spread_over_layers():
    lay = Layout(3, 2)
    assert classic.page_set(lay, 3) == [[0, 1], [3, 4]]
    r = classic.sleator_tarjan("fld", n=3, layers=2, k=3, rounds=20)
    assert set(r.trace.pages.tolist()) == {0, 1, 3, 4}


@pytest.mark.parametrize("policy", ["lru", "fifo-dist"])
def test_membership_agrees_with_the_resident_set(policy):
    """``page in sim`` (O(1), used by the adaptive adversaries) against the resident set."""
    from paging.policies import make_policy
    from paging.simulate import Simulation

    lay = Layout(3, 2)
    pages = np.random.default_rng(1).integers(0, 3, size=(40, 2)) + np.array([0, 3])
    sim = Simulation(lay, make_policy(policy), 3, steps=np.arange(80))
    for p in pages.reshape(-1).tolist():
        sim.serve(p)
        assert {q for q in range(lay.n_pages) if q in sim} == sim.resident


def test_random_hk_is_uniform_over_k_plus_one_pages_and_seeded():
    a = classic.random_hk("lru", n=6, k=3, rounds=500, seed=5, sequences=2)
    b = classic.random_hk("lru", n=6, k=3, rounds=500, seed=5, sequences=2)
    assert a.bound == Fraction(11, 6)  # H_3
    assert set(np.unique(np.concatenate([t.pages for t in a.traces])).tolist()) == {0, 1, 2, 3}
    assert (a.online_misses, a.opt_misses) == (b.online_misses, b.opt_misses)
    with pytest.raises(PagingError, match="use theorem4"):
        classic.random_hk("lru", n=3, layers=2)


# -- Theorem 4 -------------------------------------------------------------------------------


def block_mean_by_chain(n: int, L: int) -> Fraction:
    """Independent checker for E[L]: the expected number of requests after an OPT miss on page
    (layer 0, expert 0) until every other page has been requested, by first-step analysis on
    the states (next layer, pages still needed). For a fixed set of needed pages the layers
    cycle, so E[z] = a_z + b_z·E[z+1] is solved around the cycle exactly."""
    @cache
    def expect(start: int, need: frozenset) -> Fraction:
        if not need:
            return Fraction(0)
        a, b = [], []
        for z in range(L):
            here = [(z, e) for e in range(n) if (z, e) in need]
            nxt = (z + 1) % L
            # 1 step; a needed page moves to a smaller set, any other page stays in the cycle
            a.append(1 + sum((expect(nxt, need - {p}) for p in here), Fraction(0)) / n)
            b.append(Fraction(n - len(here), n))
        # E[start] = A + B·E[start] by substitution around the cycle
        A, B = Fraction(0), Fraction(1)
        for i in range(L):
            z = (start + i) % L
            A, B = A + B * a[z], B * b[z]
        return A / (1 - B)

    pages = frozenset((z, e) for z in range(L) for e in range(n)) - {(0, 0)}
    return expect(1 % L, pages)


@pytest.mark.parametrize("n, L", [(2, 1), (3, 1), (2, 2), (3, 2), (2, 3)])
def test_theorem4_block_mean_matches_the_chain(n, L):
    assert theorem4.opt_block_mean(n, L) == block_mean_by_chain(n, L)


@pytest.mark.parametrize("n, L", [(2, 2), (2, 3), (3, 2), (2, 4), (3, 3), (4, 2), (2, 5),
                                  (5, 2), (6, 2), (4, 3)])
def test_theorem4_stated_bound_beyond_one_layer_by_the_chain(n, L):
    """ℓ >= 2: ρ(n, ℓ) = E[L]/(ℓn) >= H_n, the stated bound (H_n >= log(ℓ)/(6n) here), with E[L]
    from the first-step chain (independent of the inclusion-exclusion series); equality only at
    n = ℓ = 2."""
    rho = block_mean_by_chain(n, L) / (n * L)
    assert theorem4.yao_value(n, L) == rho
    assert rho > harmonic(n) or (n, L) == (2, 2) and rho == harmonic(2)
    assert theorem4.stated_bound(n, L) == harmonic(n)


def test_theorem4_stated_bound_terms():
    # exact H_n while it is the larger term; log(ℓ)/(6n) only for astronomically many layers:
    # n = 2 needs log(ℓ)/12 > 3/2, i.e. ℓ > e^18 ≈ 6.6e7
    assert theorem4.stated_bound(3, 5) == Fraction(11, 6)
    assert theorem4.stated_bound(2, 10**7) == Fraction(3, 2)
    big = theorem4.stated_bound(2, 10**8)
    assert isinstance(big, float) and big == pytest.approx(8 * math.log(10) / 12)


def test_theorem4_yao_values_by_hand():
    # ℓ = 1: the block collects k = n − 1 given coupons of n: E[L] = n·H_{n−1}, ρ = H_{n−1}
    assert theorem4.yao_value(2, 1) == 1
    assert theorem4.yao_value(3, 1) == Fraction(3, 2)
    # n = ℓ = 2: E[L] = 2 (q = 0 terms) + sum_q>=1 (5x − 3x²), x = 2^-q, = 2 + 5 − 1 = 6
    assert theorem4.opt_block_mean(2, 2) == 6
    assert theorem4.yao_value(2, 2) == Fraction(3, 2)
    # geometric(1/2) block for n = 2, ℓ = 1: mean 2, variance 2
    mean, var = theorem4.opt_block_moments(2, 1)
    assert (round(mean, 9), round(var, 9)) == (2, 2)


@pytest.mark.parametrize("n, L", [(2, 2), (3, 3), (4, 2), (5, 4)])
def test_theorem4_yao_value_is_below_the_papers_cover_time_ratio(n, L):
    rho = theorem4.yao_value(n, L)
    assert rho < theorem4.cover_time_ratio(n, L)
    assert float(rho) == pytest.approx(theorem4.yao_value(n, L, exact=False), rel=1e-12)


def test_theorem4_build_is_seeded_and_layered():
    a = theorem4.build("llru", n=2, layers=3, rounds=300, seed=3, sequences=2)
    b = theorem4.build("llru", n=2, layers=3, rounds=300, seed=3, sequences=2)
    assert a.k == 5 and len(a.traces) == 2
    assert all(np.array_equal(x.pages, y.pages) for x, y in zip(a.traces, b.traces, strict=True))
    assert (a.online_misses, a.opt_misses) == (b.online_misses, b.opt_misses)
    # OPT certified independently: the interval integer program (CBC), not Belady's rule
    assert [o for _, o in a.params["per_sequence"]] == [opt_ilp(t, 5) for t in a.traces]
    assert a.bound == Fraction(3, 2)  # H_2 > log(3)/12


def test_theorem4_build_many_is_build_per_policy():
    kw = dict(n=2, layers=2, rounds=200, seed=4, sequences=2)
    many = theorem4.build_many(["lru", "marking", "fld"], **kw)
    for name, r in zip(["lru", "marking", "fld"], many, strict=True):
        one = theorem4.build(name, **kw)
        assert r.policy == name and r.to_dict() == one.to_dict()
        assert all(np.array_equal(x.pages, y.pages) for x, y in zip(r.traces, one.traces,
                                                                     strict=True))


def test_random_sequences_honour_seed_none():
    # seed=None draws fresh entropy (two runs differ); an int seed repeats
    pages = [np.concatenate([t.pages for t in theorem4.build("lru", n=4, layers=2, rounds=300,
                                                             seed=None).traces])
             for _ in range(2)]
    assert not np.array_equal(*pages)
    a, b = (classic.random_hk("lru", n=5, rounds=300, seed=None) for _ in range(2))
    assert not np.array_equal(a.trace.pages, b.trace.pages)
    assert a.params["seed"] is None


@pytest.mark.parametrize("name", sorted(ADVERSARIES))
def test_every_adversary_rejects_a_negative_seed(name):
    layers = 1 if name == "random-hk" else 2
    with pytest.raises(PagingError, match="seed must be an integer >= 0, got -1"):
        ADVERSARIES[name]("lru-dist" if name == "theorem1" else "lru", n=3, layers=layers,
                          rounds=5, seed=-1)


@pytest.mark.parametrize("kw, message", [
    (dict(n=1, layers=3), "n >= 2"), (dict(n=2, layers=2, k=2), "needs k = 3"),
])
def test_theorem4_rejects_bad_parameters(kw, message):
    with pytest.raises(PagingError, match=message):
        theorem4.build("lru", **kw)


# -- the command -----------------------------------------------------------------------------


def test_cli_json_prints_the_certificate(capsys):
    assert main(["adversary", "theorem3", "--n", "3", "--layers", "2", "--rounds", "12",
                 "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["online_misses"], d["opt_misses"], d["ratio_exact"], d["bound"]) == (24, 9, "8/3",
                                                                                   5.0)
    assert d["params"]["rounds"] == 12


def test_cli_every_adversary_runs(capsys):
    for name in ADVERSARIES:
        layers = "1" if name == "random-hk" else "2"
        assert main(["adversary", name, "--n", "3", "--layers", layers, "--rounds", "30",
                     "--json"]) == 0
        d = json.loads(capsys.readouterr().out)
        assert d["adversary"] == name and d["opt_misses"] <= d["online_misses"]


@pytest.mark.parametrize("argv, message", [
    (["theorem2", "--policy", "marking", "--n", "3", "--layers", "2"], "randomized"),
    (["theorem2", "--n", "0", "--layers", "2"], "n (experts per layer) must be an integer >= 1"),
    (["theorem2", "--n", "3", "--layers", "2", "--rounds", "x"],
     "argument --rounds: expected an integer, got 'x'"),
    (["theorem4", "--n", "3", "--layers", "2", "--seed", "-2"], "seed must be an integer >= 0"),
    (["theorem1", "--n", "3", "--layers", "2", "--k", "9"], "n + l - 1 <= k < n*l"),
    (["theorem3", "--n", "3", "--layers", "2", "--sequences", "2"], "--sequences applies"),
    (["nope", "--n", "3", "--layers", "2"], "invalid choice"),
])
def test_cli_errors_are_one_line(capsys, argv, message):
    assert main(["adversary", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_sequences_beyond_the_cap_are_refused_up_front_and_the_rest_show_a_bar(capsys):
    """--sequences 10^12 hung without a word (or ran out of memory spawning seeds); it is refused
    with the cap, in the constructions and in the command. Below the cap a bar counts the
    sequences when asked (``show``), the command's --json run keeps stderr quiet, and the bar
    changes no number."""
    from adversaries import theorem4
    from adversaries.base import MAX_SEQUENCES
    from adversaries.classic import random_hk
    from paging.cli import main

    too_many = MAX_SEQUENCES + 1
    for build in (lambda: theorem4.build("lru", n=2, layers=2, sequences=too_many),
                  lambda: random_hk("lru", n=3, sequences=too_many)):
        with pytest.raises(PagingError, match=f"sequences={too_many:,}; expected at most "
                                              f"{MAX_SEQUENCES:,}"):
            build()
    assert main(["adversary", "theorem4", "--n", "2", "--layers", "2", "--sequences",
                 str(10**12)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "sequences=1,000,000,000,000; expected at most" in err
    shown = theorem4.build("lru", n=2, layers=2, rounds=6, sequences=3, seed=1, show=True)
    err = capsys.readouterr().err
    assert "sequences:" in err and "0/3 " in err  # (tqdm redraws at most every 0.1 s)
    quiet = theorem4.build("lru", n=2, layers=2, rounds=6, sequences=3, seed=1, show=False)
    assert capsys.readouterr().err == "" and quiet.to_dict() == shown.to_dict()
    assert main(["adversary", "theorem4", "--n", "2", "--layers", "2", "--sequences", "3",
                 "--json"]) == 0
    assert capsys.readouterr().err == ""


def test_random_constructions_beyond_memory_are_refused_up_front(monkeypatch):
    # random-hk --n 100000 (default rounds 400(k+1)H_k, 4 sequences: 1.9e9 requests, all kept)
    # held 13 GB after a minute and kept growing; now refused before the first draw
    import paging.memory

    monkeypatch.setattr(paging.memory, "available", lambda: 100_000)

    def drawn(*a, **kw):
        raise AssertionError("a sequence was drawn")

    monkeypatch.setattr(classic, "from_pages", drawn)
    monkeypatch.setattr(theorem4, "uniform", drawn)
    with pytest.raises(PagingError, match=r"4 sequences of 10,000 requests .*--rounds"):
        classic.random_hk("lru", n=5, rounds=10_000, sequences=4)
    with pytest.raises(PagingError, match=r"2 sequences of 20,000 requests .*--sequences"):
        theorem4.build("lru", n=2, layers=2, rounds=10_000, sequences=2)


@pytest.mark.parametrize("build, name", [(theorem2.build, "theorem2"),
                                         (classic.sleator_tarjan, "sleator-tarjan")])
def test_adaptive_constructions_show_their_rounds(build, name, capsys):
    # each round scans the nl pages (theorem2 --n 100000 --layers 2: 25 s, sleator-tarjan about
    # a minute): a bar over the rounds with its estimate, as the random constructions have
    quiet = build("lru", n=3, layers=2, rounds=40, show=False)
    assert capsys.readouterr().err == ""
    res = build("lru", n=3, layers=2, rounds=40, show=True)
    err = capsys.readouterr().err
    assert f"{name}:" in err and "/40 [" in err
    assert res.to_dict() == quiet.to_dict()


@pytest.mark.parametrize("build, name", [(theorem1.build, "theorem1"),
                                         (theorem2.build, "theorem2"),
                                         (theorem3.build, "theorem3"),
                                         (classic.sleator_tarjan, "sleator-tarjan")])
def test_rounds_beyond_memory_are_refused_up_front(build, name, monkeypatch):
    # theorem1 --n 30000 --layers 2 --rounds 10^9 was killed by the system (out of memory)
    import paging.memory

    monkeypatch.setattr(paging.memory, "available", lambda: 100_000)
    policy = "lru-dist" if name == "theorem1" else "lru"
    with pytest.raises(PagingError, match=rf"20,000 requests .*--rounds\) for {name}"):
        build(policy, n=3, layers=2, rounds=10_000)
    # at its peak bytes per request, not the 16 of the pages and steps alone: theorem1 took
    # 43 per request (5*10^8 rounds on two layers "fit" in 23 GB at 16, and need about 43 GB)
    monkeypatch.setattr(paging.memory, "available", lambda: 20_000 * 20)
    with pytest.raises(PagingError, match=rf"20,000 requests .*--rounds\) for {name}"):
        build(policy, n=3, layers=2, rounds=10_000)


def test_theorem4_refuses_values_it_cannot_compute_up_front(monkeypatch):
    # --n 20000 drew and ran its sequences for 21 s, then failed in the cover-time series with a
    # message about "N" and a Monte Carlo option theorem4 does not have; beyond it the value
    # series (quadratic in n, no progress shown) ran for hours
    def drawn(*a, **kw):
        raise AssertionError("a sequence was drawn")

    monkeypatch.setattr(theorem4, "uniform", drawn)
    with pytest.raises(PagingError, match=r"expected n <= 15,000, got n=15,001"):
        theorem4.build("lru", n=15_001, layers=2, rounds=10)
    import paging.memory

    monkeypatch.setattr(paging.memory, "available", lambda: 20 * 10**6)
    with pytest.raises(PagingError, match=r"n=50, layers=1,000 needs about .* fewer experts"):
        theorem4.build("lru", n=50, layers=1000, rounds=1)


@pytest.mark.parametrize("name", ["theorem1", "theorem2", "theorem3", "sleator-tarjan"])
def test_layouts_beyond_memory_are_refused_up_front(name, monkeypatch):
    # theorem1 --n 4*10^8 --layers 2 --rounds 3: the simulation's per-page arrays (8*10^8
    # pages) failed in their first allocation, or the system killed the run
    import paging.memory

    monkeypatch.setattr(paging.memory, "available", lambda: 100_000)
    policy = "lru-dist" if name == "theorem1" else "lru"
    with pytest.raises(PagingError, match=r"n\*layers = 2,000 pages need about .*--n\)"):
        ADVERSARIES[name](policy, n=1_000, layers=2, rounds=1)
