"""Every ledger row's verdict depends on its checks, and every row carries power checks that fail.

Two kinds of test:

* *breaking*: for every module of :data:`proofs.MODULES`, break the row's underlying check (the
  bound, the exact optimum, the simulated cost, the independent solution the row compares
  with) by monkeypatching, on a smaller grid, and assert that the verdict turns: a row whose
  ``holds`` were a constant, or computed from checks other than the one broken, fails here;
* *power*: the rows not covered by the row-specific test files (``test_theorems.py``,
  ``test_theorem5.py``, ``test_ledger_predictions.py``, ``test_zipmoe_*.py``) have power checks
  that all fail, and a row stands only when they do.
"""

from __future__ import annotations

import importlib
import types
from fractions import Fraction

import numpy as np
import pytest

import proofs
from proofs.ledger import Erratum, LedgerRow, PowerCheck


def _shrink(monkeypatch, mod, **attrs):
    for name, value in attrs.items():
        monkeypatch.setattr(mod, name, value)


def _theorem1(monkeypatch, mod):
    _shrink(monkeypatch, mod, NS=(2,), LAYERS=(2, 3))
    monkeypatch.setattr(mod.adv, "online_lower_bound", lambda *a: 10**9)


def _theorem2(monkeypatch, mod):
    _shrink(monkeypatch, mod, GRID=[(2, 2), (3, 2)])
    monkeypatch.setattr(mod.adv, "additive_constant", lambda k, L: -10**6)


def _theorem2_general(monkeypatch, mod):
    _shrink(monkeypatch, mod, GRID=[(3, 1), (3, 2)], POLICIES=("lru", "fifo"))
    monkeypatch.setattr(mod, "additive_constant", lambda k, L: -10**6)


def _theorem3(monkeypatch, mod):
    _shrink(monkeypatch, mod, GRID=[(2, 1), (2, 2)])
    monkeypatch.setattr(mod.adv, "opt_formula", lambda N, k: -1)


def _theorem4(monkeypatch, mod):
    _shrink(monkeypatch, mod, NS=(2, 3), LAYERS=(1, 2), SIM_GRID=((2, 2),), SIM_REQUESTS=2000)
    # the simulation's tolerance: every online policy now "falls below" ρ, so sim_ok is False
    monkeypatch.setattr(mod, "Z", -1e9)


def _theorem5(monkeypatch, mod):
    import paging.coupon

    _shrink(monkeypatch, mod, NS=(2, 3), CS=(1, 2, 2**40))
    real = paging.coupon.expected_cover_times
    # the grid's cover times halved (other callers of the function keep the real one)
    monkeypatch.setattr(paging.coupon, "expected_cover_times",
                        lambda n, cs, **kw: np.asarray(real(n, cs, **kw)) / 2)


def _inflate(monkeypatch, mod, attr: str, field: str, by):
    real = mod.simulate

    class Inflated:
        def __init__(self, r):
            self._r = r
            setattr(self, field, by(getattr(r, field)))

        def __getattr__(self, name):
            return getattr(self._r, name)

    def fake(*a, **kw):
        return Inflated(real(*a, **kw))

    monkeypatch.setattr(mod, attr, fake)


def _theorem4_regimes(monkeypatch, mod):
    _shrink(monkeypatch, mod, EXACT_GRID=[(2, 2)], LARGE_NS=(2, 3), LARGE_LS=(2, 3, 32),
            LOG_NS=(2,), LOG_LS=(10, 10**9))
    # ρ of the package's series halved: the closed form disagrees and ρ >= H_n fails
    real = mod.adv.yao_value
    monkeypatch.setattr(mod.adv, "yao_value", lambda n, L, exact=None: real(n, L, exact) / 2)


def _llru(monkeypatch, mod):
    _shrink(monkeypatch, mod, NS=(2,), LAYERS=(2, 3))
    real = mod.simulate
    # OPT (Belady) unchanged, every other policy charged 2·misses + 1000k: k·OPT + k fails
    monkeypatch.setattr(mod, "simulate", lambda tr, p, k, **kw: (
        real(tr, p, k, **kw) if p == "belady" or kw.get("record")
        else types.SimpleNamespace(misses=2 * real(tr, p, k, **kw).misses + k * 10**3)))


def _greedy_dual(monkeypatch, mod):
    _shrink(monkeypatch, mod, LAYOUTS=[(2, 2)])
    _inflate(monkeypatch, mod, "simulate", "cost", lambda c: 100 * c + 1)


def _landlord_sizes(monkeypatch, mod):
    _shrink(monkeypatch, mod, LAYOUTS=[(2, 2)], TRIALS=2)
    _inflate(monkeypatch, mod, "simulate", "cost", lambda c: 100 * c + 1)


def _offline_bounds(monkeypatch, mod):
    _shrink(monkeypatch, mod, LAYOUTS=[(2, 2)], TRIALS=2)
    _inflate(monkeypatch, mod, "simulate", "cost", lambda c: -1.0)


def _zipmoe31(monkeypatch, mod):
    _shrink(monkeypatch, mod, EXACT_N=2, BOUND_N=5)
    monkeypatch.setattr(mod.zs, "lower_bound", lambda inst: Fraction(1, 10**6))


def _zipmoe32(monkeypatch, mod):
    def uniform_law(f, k):
        from itertools import combinations

        subsets = list(combinations(range(len(f)), k))
        return {S: 1 / len(subsets) for S in subsets}

    monkeypatch.setattr(mod.hm, "max_entropy_subsets", uniform_law)


def _small_grid(monkeypatch, mod, attr="grid"):
    from proofs.predictions_common import grid

    monkeypatch.setattr(mod, attr, lambda: grid()[:3])


def _blind_oracle(monkeypatch, mod):
    _small_grid(monkeypatch, mod)
    real = mod.opt
    monkeypatch.setattr(mod, "opt", lambda tr, k: real(tr, k) - 1)


def _marker(monkeypatch, mod):
    _small_grid(monkeypatch, mod, "_grid")
    monkeypatch.setattr(mod, "opt", lambda tr, k: 1)


def _robust(monkeypatch, mod):
    _small_grid(monkeypatch, mod)
    _inflate(monkeypatch, mod, "simulate", "misses", lambda m: m + 10**6)


def _adversary_search(monkeypatch, mod):
    real = mod.search

    class Weak:  # every search reports a hundredth of the ratio it found
        def __init__(self, r):
            self._r, self.ratio = r, r.ratio / 100

        def __getattr__(self, name):
            return getattr(self._r, name)

    monkeypatch.setattr(mod, "search", lambda *a, **kw: Weak(real(*a, **kw)))


def _robust_combiner(monkeypatch, mod):
    real_rs, real_sim = mod.random_sequences, mod.simulate
    monkeypatch.setattr(mod, "random_sequences", lambda rng: real_rs(rng)[:1])
    monkeypatch.setattr(mod, "searched_sequences", lambda: [])
    monkeypatch.setattr(mod, "verify", lambda *a, **kw: None)

    def fake(trace, policy, *a, **kw):  # the combiner pays a million misses more
        r = real_sim(trace, policy, *a, **kw)
        if isinstance(policy, mod.Robust) and not isinstance(policy, mod.NeverSwitch):
            r.misses += 10**6
        return r

    monkeypatch.setattr(mod, "simulate", fake)


def _adversary_empirical(monkeypatch, mod):
    monkeypatch.setattr(mod, "POLICIES", tuple(mod.POLICIES)[:2])
    real = mod.resimulate
    monkeypatch.setattr(mod, "resimulate", lambda res, name: real(res, name) + 1)


BREAKERS = {
    "proofs.theorem1": _theorem1, "proofs.theorem2": _theorem2,
    "proofs.theorem2_general": _theorem2_general, "proofs.theorem3": _theorem3,
    "proofs.theorem4": _theorem4, "proofs.theorem5": _theorem5,
    "proofs.theorem4_regimes": _theorem4_regimes, "proofs.llru": _llru,
    "proofs.greedy_dual": _greedy_dual, "proofs.landlord_sizes": _landlord_sizes,
    "proofs.offline_bounds": _offline_bounds,
    "proofs.zipmoe_theorem31": _zipmoe31, "proofs.zipmoe_theorem32": _zipmoe32,
    "proofs.predictions_blind_oracle": _blind_oracle, "proofs.predictions_marker": _marker,
    "proofs.predictions_robust": _robust,
    "proofs.adversary_search": _adversary_search, "proofs.robust_combiner": _robust_combiner,
    "proofs.adversary_empirical": _adversary_empirical,
}


def test_every_ledger_module_is_broken_here():
    assert set(BREAKERS) == set(proofs.MODULES)


@pytest.mark.parametrize("name", list(BREAKERS))
def test_breaking_the_check_turns_the_verdict(monkeypatch, name):
    mod = importlib.import_module(name)
    BREAKERS[name](monkeypatch, mod)
    row = mod.check()
    assert not row.holds, (name, row.witness)
    assert not row.stands, name


@pytest.mark.parametrize("name", ["proofs.theorem2_general", "proofs.theorem4_regimes",
                                  "proofs.llru",
                                  "proofs.greedy_dual", "proofs.landlord_sizes",
                                  "proofs.offline_bounds"])
def test_power_checks_fail_and_row_stands(name):
    row = importlib.import_module(name).check()
    assert row.holds and row.power_checks
    assert all(pc.fails for pc in row.power_checks), row.power_checks
    assert row.stands
    assert row.to_dict()["power_checks"][0]["fails"] is True


def _row(power, holds=True, holds_corrected=None) -> LedgerRow:
    return LedgerRow(theorem="T", statement="s", grid="g", smallest_margin=0, holds=holds,
                     witness={}, holds_corrected=holds_corrected, power_checks=power)


def test_stands_needs_every_power_check_to_fail():
    ok, weak = PowerCheck("a", "d", True), PowerCheck("b", "d", False)
    assert _row([ok]).stands and _row([ok], False, True).stands
    assert not _row([]).stands                       # no power check: not evidence
    assert not _row([ok, weak]).stands               # one did not fail: not evidence
    assert not _row([ok], False, False).stands
    d = _row([ok, weak]).to_dict()
    assert (d["powered"], d["stands"]) == (False, False)
    assert [p["fails"] for p in d["power_checks"]] == [True, False]


def test_erratum_grades():
    e = Erratum("w", "p", "q", "c", True, grade="typo", witness="x")
    assert e.grade == "typo"
    assert Erratum("w", "p", "q", "c", True).grade == "gap"
    with pytest.raises(ValueError, match="grade must be one of"):
        Erratum("w", "p", "q", "c", True, grade="nit")


def test_zipmoe31_fails_when_its_lower_bound_exceeds_opt(monkeypatch):
    """The bound grid compares ALG with (3 − 1/L)·LB: an LB above OPT would make it vacuous,
    so the row checks LB <= OPT where OPT is exact, and a doubled LB fails the row (it stood
    before that check)."""
    mod = importlib.import_module("proofs.zipmoe_theorem31")
    _shrink(monkeypatch, mod, EXACT_N=2, BOUND_N=5)
    assert mod.check().holds
    real = mod.zs.lower_bound
    monkeypatch.setattr(mod.zs, "lower_bound", lambda inst: 2 * real(inst))
    row = mod.check()
    assert not row.holds and not row.stands
    assert "above OPT on 3" in row.notes      # 2 exact-grid instances and the erratum's


def test_greedy_dual_fails_when_opt_w_is_too_large(monkeypatch):
    """A(σ) <= k·OPT_w is vacuous with an OPT_w too large: the row checks OPT_w against the
    one-page closed form (k = 1) and the ILP (k = 2), so OPT_w × 6/5 fails it (it stood before:
    LRU still broke k·OPT_w, the only other check)."""
    mod = importlib.import_module("proofs.greedy_dual")
    _shrink(monkeypatch, mod, LAYOUTS=[(2, 2)])
    assert mod.check().holds
    real = mod.opt_weighted

    def inflated(trace, **kw):
        r = real(trace, **kw)
        if kw.get("method") == "flow":
            r.cost = r.cost * 6 / 5
        return r

    monkeypatch.setattr(mod, "opt_weighted", inflated)
    row = mod.check()
    assert not row.holds and not row.stands
    assert "disagreements, e.g." in row.notes
    assert mod.one_page_cost(mod.from_pages([0, 0, 1, 0], mod.Layout(2, 1)),
                             [3.0, 5.0]) == 11.0


def test_llru_fails_when_opt_is_too_large(monkeypatch):
    """ALG <= k·OPT + k is vacuous with an OPT too large: the row checks Belady's count against
    the min-cost-flow optimum, so OPT × 3/2 fails it (it stood before)."""
    mod = importlib.import_module("proofs.llru")
    _shrink(monkeypatch, mod, NS=(2,), LAYERS=(2, 3))
    assert mod.check().holds
    real = mod.simulate

    def inflated(tr, p, k, **kw):
        r = real(tr, p, k, **kw)
        return types.SimpleNamespace(misses=r.misses * 3 // 2) if p == "belady" and not \
            kw.get("record") else r

    monkeypatch.setattr(mod, "simulate", inflated)
    row = mod.check()
    assert not row.holds and not row.stands
    assert "disagreements, e.g." in row.notes


def test_landlord_sizes_fails_when_opt_h_is_too_large(monkeypatch):
    """The bound is measured against the ILP's OPT_h: the row checks it against FOO's bounds
    (an independent solver), so an ILP optimum 1.1 times too large fails it (it stood before:
    both power checks still failed)."""
    mod = importlib.import_module("proofs.landlord_sizes")
    _shrink(monkeypatch, mod, LAYOUTS=[(2, 2)], TRIALS=2)
    assert mod.check().holds
    real = mod.opt_weighted

    def inflated(trace, **kw):
        r = real(trace, **kw)
        if kw.get("method") == "ilp":
            r.cost = r.cost * 1.1
        return r

    monkeypatch.setattr(mod, "opt_weighted", inflated)
    row = mod.check()
    assert not row.holds and not row.stands
    assert "; outside, e.g." in row.notes


def test_marker_fails_when_opt_is_too_large(monkeypatch):
    """Both of the row's bounds are measured against OPT: the row checks it against the
    min-cost-flow optimum, so OPT × 11/10 fails it (it stood before)."""
    mod = importlib.import_module("proofs.predictions_marker")
    _small_grid(monkeypatch, mod, "_grid")
    assert mod.check().holds
    real = mod.opt
    monkeypatch.setattr(mod, "opt", lambda tr, k: real(tr, k) * 11 // 10)
    row = mod.check()
    assert not row.holds and not row.stands
    assert "disagreements, e.g." in row.notes


@pytest.mark.parametrize("lie", ["cost", "switches"])
def test_robust_row_does_not_trust_the_combiners_own_counts(monkeypatch, lie):
    """The row's bound (6·min(BO, LRU) + 2 + k·(S + 1) then, 3·min(BO, LRU) now) used the
    counts and switches the combiner keeps itself, so a combiner reporting them too large
    stood; BO, LRU and S now come from independent runs and must agree with its report."""
    mod = importlib.import_module("proofs.predictions_robust")
    _small_grid(monkeypatch, mod)
    assert mod.check().holds
    real = mod.simulate

    def lying(trace, pol, k, **kw):
        r = real(trace, pol, k, **kw)
        if isinstance(pol, mod.RobustBlindOracle):
            if lie == "cost":
                pol.cost = [3 * c for c in pol.cost]
            else:
                pol.switches += 20
        return r

    monkeypatch.setattr(mod, "simulate", lying)
    row = mod.check()
    assert not row.holds and not row.stands
    assert "disagreements, e.g." in row.notes


def test_replay_switches():
    from proofs.predictions_robust import replay_switches

    # BlindOracle misses 3 times in a row while LRU hits after its first miss: one switch
    assert replay_switches([False, False, False, True], [False, True, True, True]) == 1
    assert replay_switches([True, True], [False, False]) == 0


def test_a_failed_erratum_check_keeps_the_row_from_standing():
    """A correction or witness the ledger records but whose check fails is a reading, not a
    verdict: the row does not stand (it stood: only the power checks and holds counted); an
    erratum with nothing to compute (verified None, a garbled symbol) does not count."""
    ok = PowerCheck("a", "d", True)
    row = _row([ok])
    row.errata = [Erratum("w", "p", "q", "c", None, grade="typo")]
    assert row.stands and not row.unverified
    row.errata.append(Erratum("w2", "p", "q", "c", False))
    assert not row.stands and row.unverified == [row.errata[1]]
    assert "NOT EVIDENCE: 1 erratum check(s) failed" in proofs.format_ledger(
        [proofs.Entry("proofs.x", "ok", row)])
    assert "verified:  n/a (a reading of the text" in proofs.format_ledger(
        [proofs.Entry("proofs.x", "ok", row)])


def test_llru_row_falls_when_its_erratum_witness_does_not_replay(monkeypatch):
    """The LLRU row's Definition 2 erratum replays a witness on both readings; with the two
    readings swapped the witness does not replay, and the row no longer stands (it stood)."""
    mod = importlib.import_module("proofs.llru")
    _shrink(monkeypatch, mod, NS=(2,), LAYERS=(2, 3))
    assert mod.check().stands
    real = mod.witness_evictions

    def swapped():
        ev = real()
        return {**ev, "llru": ev["llru-latest"], "llru-latest": ev["llru"]}

    monkeypatch.setattr(mod, "witness_evictions", swapped)
    row = mod.check()
    assert row.unverified and not row.stands


def test_theorem1_checks_every_fixed_partition(monkeypatch):
    """Theorem 1 is about any fixed partition; the row checks every allocation of k over the
    layers (n, ℓ <= 3). Its policies hold their own shares (hand check: LRU with shares (0, 3)
    on n = ℓ = 2 misses every layer-0 request), and a FixedShares that ran the DIST shares
    instead fails the row (allocations such as (1, 3) at k = nℓ = 4 grow, DIST's (2, 2) not)."""
    from adversaries import theorem1 as adv
    from paging.layout import Layout
    from paging.policies import make_policy
    from paging.simulate import simulate

    mod = importlib.import_module("proofs.theorem1")
    assert sorted(mod.compositions(3, 2)) == [(0, 3), (1, 2), (2, 1), (3, 0)]
    lay = Layout(2, 2)
    tr = adv.sequence(lay, 8, 0)
    pol = mod.FixedShares(lambda: make_policy("lru"), (0, 3))
    assert pol.name == "lru-dist[0,3]"
    assert simulate(tr, pol, 3).misses == 8 + 1        # 8 layer-0 misses, page 0 of layer 1
    _shrink(monkeypatch, mod, FIXED_NS=(2,), FIXED_LAYERS=(2, 3))
    row = mod.check()
    assert row.stands and row.smallest_margin == 0
    monkeypatch.setattr(mod.FixedShares, "shares", lambda self, layout, k:
                        layout.dist_shares(k))
    row = mod.check()
    assert not row.holds and not row.stands
    assert "grows from 4n to 8n rounds iff the attacked share is below n (failures: 0)" \
        not in row.notes


def test_a_fixed_partition_run_is_verified_against_its_own_shares():
    """The verifier held every per-layer run to the DIST shares: a run on shares (0, 3) was
    'bypassed although eviction could have made room' under paging proofs --verify. The run's
    Result carries its shares, and the replay holds it to them."""
    from adversaries import theorem1 as adv
    from paging.errors import VerificationError
    from paging.layout import Layout
    from paging.policies import make_policy
    from paging.simulate import simulate
    from paging.verify import verify

    mod = importlib.import_module("proofs.theorem1")
    tr = adv.sequence(Layout(2, 2), 8, 0)
    res = simulate(tr, mod.FixedShares(lambda: make_policy("lru"), (0, 3)), 3, record=True)
    assert res.shares.tolist() == [0, 3]
    verify(tr, res)
    assert simulate(tr, "lru-dist", 3, record=True, engine="reference").shares is None
    res.shares = np.array([1, 2])
    with pytest.raises(VerificationError, match="bypassed although eviction"):
        verify(tr, res)
