"""The adversary search (adversaries/search.py, ``paging adversary search``): it rediscovers the
known lower bounds from random starts, its certificate is re-simulated and verified, and bad
input is a one-line error. Small instances, so each test takes seconds."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from adversaries.search import certify, decode, mutate, random_genome, search
from paging import io
from paging.errors import PagingError
from paging.layout import Layout
from paging.policies import LRU, Policy, make_policy
from paging.simulate import simulate
from paging.trace import from_pages

ROOT = Path(__file__).resolve().parents[2]


def harmonic(k: int) -> float:
    return float(sum(Fraction(1, i) for i in range(1, k + 1)))


def cyclic_ratio(k: int, requests: int) -> Fraction:
    """LRU on the cyclic sequence over k + 1 pages: every request misses; OPT (Belady) misses
    k + ceil((N - k)/k) (Theorem 3's corrected count)."""
    return Fraction(requests, k + -(-(requests - k) // k))


def test_decode_is_layered_and_repeats_the_last_motif():
    blocks = [(np.array([[0, 1]]), 2), (np.array([[1, 0], [0, 0]]), 1)]
    pages = decode(blocks, 5, 2, 2)
    # rounds: (0,1) (0,1) (1,0) (0,0) then the last motif again: (1,0); page = layer*n + e
    assert pages.tolist() == [0, 3, 0, 3, 1, 2, 0, 2, 1, 2]
    from_pages(pages, Layout(2, 2))  # the layered order is valid


def test_mutations_keep_every_genome_valid():
    rng = np.random.default_rng(3)
    g = random_genome(rng, 3, 2, 20, 6)
    for _ in range(500):
        g = mutate(g, rng, 3, 2, 20, 6)
        assert 1 <= len(g) <= 6
        for motif, reps in g:
            assert motif.ndim == 2 and motif.shape[1] == 2 and 1 <= motif.shape[0] <= 6
            assert motif.min() >= 0 and motif.max() < 3 and reps >= 1
        assert decode(g, 20, 2, 3).size == 40


def test_done_when_lru_reaches_6_5_on_n4_l2_k7():
    # the done-when, from random starts within the default budget, several seeds
    for seed in (0, 1, 2):
        res = search("lru", n=4, layers=2, k=7, seed=seed)
        assert res.ratio >= Fraction(13, 2)
        # the best possible at this length: the cyclic sequence (LRU misses everything)
        assert res.ratio == cyclic_ratio(7, 2 * 64 * 7)
        assert res.certificate["verified"]


@pytest.mark.parametrize("policy", ["lru", "fifo", "fwf"])
def test_lru_fifo_fwf_reach_k_minus_eps_on_k_plus_1_pages(policy):
    # n = 2, l = 2, k = 3: k + 1 = 4 pages; length 64k = 192 rounds (384 requests)
    res = search(policy, n=2, layers=2, k=3, budget=1500, seed=0)
    assert res.ratio >= Fraction(3) - Fraction(15, 100)
    assert res.ratio <= 3 + Fraction(3, res.opt_misses)  # k-competitive: A <= k·OPT + k


@pytest.mark.parametrize("n,layers", [(2, 2), (3, 2), (2, 3)])
def test_llru_reaches_theorem2_bound(n, layers):
    k = n * layers - 1
    res = search("llru", n=n, layers=layers, k=k, budget=2000, seed=0)
    assert res.ratio >= k - layers + 1  # Theorem 2: every deterministic policy, k - l + 1


def test_marking_mean_stays_below_2hk_and_near_hk():
    k = 3
    res = search("marking", n=2, layers=2, k=k, budget=800, seed=0, seeds=4)
    lo, hi = res.ci
    assert hi <= 2 * harmonic(k)          # Fiat et al. 1991: 2H_k-competitive
    assert res.ratio >= 0.85 * harmonic(k)  # the search gets close to H_k (1.833)
    assert len(res.certificate["online_misses"]) == 32 and lo <= res.ratio <= hi


def test_lfu_ratio_grows_with_length():
    ratios = [search("lfu", n=2, layers=2, k=3, length=T, seed=0).ratio
              for T in (24, 48, 96)]
    assert ratios[0] < ratios[1] < ratios[2]
    assert ratios[2] >= 2 * ratios[0]  # linear growth: LFU is not competitive


def test_budget_zero_evaluates_random_starts_only_and_stays_far_below_k():
    res = search("lru", n=4, layers=2, k=7, budget=0, seed=0)
    assert res.evaluations == 6 and res.ratio < Fraction(13, 2)


def test_same_seed_same_result():
    a = search("arc", n=2, layers=2, k=3, length=40, budget=200, seed=5)
    b = search("arc", n=2, layers=2, k=3, length=40, budget=200, seed=5)
    assert a.ratio == b.ratio and a.trace.pages.tolist() == b.trace.pages.tolist()


def test_a_policy_object_from_a_notebook():
    class MRU(Policy):
        """Evict the most recently used page (not competitive)."""

        name = "mru-test"

        def reset(self, ctx):
            super().reset(ctx)
            self.last = {}

        def on_hit(self, t, page):
            self.last[page] = t

        on_insert = on_hit

        def victim(self, t, page, cache):
            return max(cache.candidates, key=self.last.__getitem__)

    res = search(MRU(), n=2, layers=2, k=3, length=48, budget=600, seed=0)
    assert res.policy == "mru-test" and res.ratio > 5


def test_certificate_matches_an_independent_simulation():
    res = search("lru", n=2, layers=2, k=3, length=30, budget=100, seed=1)
    assert simulate(res.trace, "lru", 3).misses == res.online_misses
    assert simulate(res.trace, "belady", 3).misses == res.opt_misses
    assert certify(res.trace, LRU(), 3, [0])["online_misses"] == [res.online_misses]


@pytest.mark.parametrize("kw,msg", [
    (dict(n=2, layers=2, k=4), "1 <= k < n\\*layers"),
    (dict(n=0, layers=2, k=1), "n \\(experts per layer\\)"),
    (dict(n=2, layers=2, k=3, length=0), "length"),
    (dict(n=2, layers=2, k=3, budget=-1), "budget"),
    (dict(n=2, layers=2, k=3, seeds=0), "seeds"),
    # (it was dropped without a word: LRU runs once per candidate)
    (dict(n=2, layers=2, k=3, seeds=5), "seeds=5 applies to a randomized policy; lru is "
                                         "deterministic"),
    (dict(n=2, layers=2, k=3, restarts=0), "restarts"),
])
def test_bad_input_is_a_paging_error(kw, msg):
    with pytest.raises(PagingError, match=msg):
        search("lru", **kw)


def test_k_below_the_layers_is_searched_for_a_shared_cache_only():
    """A cache smaller than the layer count is a valid instance for a shared cache (it was
    refused for every policy); a -dist policy would leave a layer without a slot."""
    res = search("lru", n=2, layers=3, k=2, length=12, budget=60, seed=0)
    assert simulate(res.trace, "lru", 2).misses == res.online_misses
    assert simulate(res.trace, "belady", 2).misses == res.opt_misses
    assert res.ratio >= 1
    with pytest.raises(PagingError, match="layers <= k < n\\*layers .* a -dist policy has a "
                                          "layer without a slot"):
        search("lru-dist", n=2, layers=3, k=2)


def test_clairvoyant_and_score_policies_are_refused():
    with pytest.raises(PagingError, match="clairvoyant"):
        search("belady", n=2, layers=2, k=3)
    with pytest.raises(PagingError, match="gate scores"):
        search("score-based", n=2, layers=2, k=3)


def _cli(*args, cwd=None):
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "paging", "adversary", *args],
                          capture_output=True, text=True, env=env, cwd=cwd)


def test_cli_json_and_witness_file(tmp_path):
    out = tmp_path / "w.csv"
    p = _cli("search", "--policy", "fifo", "--n", "2", "--layers", "2", "--k", "3",
             "--length", "40", "--budget", "300", "--json", "--out", str(out))
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["adversary"] == "search" and d["certificate"]["verified"]
    trace = io.load(out)
    trace = trace[0] if isinstance(trace, list) else trace
    assert trace.pages.tolist() == d["sequence"]
    assert simulate(trace, "fifo", 3).misses == d["online_misses"]
    assert Fraction(d["ratio_exact"]) == Fraction(d["online_misses"], d["opt_misses"])


@pytest.mark.parametrize("args,msg", [
    (["search", "--n", "2", "--layers", "2", "--k", "3"], "needs --policy"),
    (["search", "--policy", "lru", "--n", "2", "--layers", "2"], "needs --k"),
    (["search", "--policy", "lru", "--n", "2", "--layers", "2", "--k", "3", "--rounds", "3"],
     "--rounds does not apply"),
    (["theorem2", "--n", "2", "--layers", "2", "--budget", "3"], "applies to search only"),
    (["theorem2", "--n", "2", "--layers", "2", "--weighted"], "applies to search only"),
    (["search", "--policy", "lru", "--n", "2", "--layers", "2", "--k", "3", "--max-cost", "3"],
     "--max-cost applies with --weighted"),
    (["search", "--policy", "lru", "--n", "2", "--layers", "2", "--k", "3", "--weighted",
      "--max-cost", "1"], "--max-cost must be an integer >= 2"),
    (["search", "--policy", "nope", "--n", "2", "--layers", "2", "--k", "3"], "unknown policy"),
])
def test_cli_bad_input_one_line_exit_2(args, msg):
    p = _cli(*args)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and msg in p.stderr, p.stderr


def test_cli_bad_out_name_leaves_no_file(tmp_path):
    p = _cli("search", "--policy", "lru", "--n", "2", "--layers", "2", "--k", "3",
             "--out", str(tmp_path / "w.unknown"))
    assert p.returncode == 2 and "error: --out: cannot tell the output format" in p.stderr
    assert p.stderr.count("\n") == 1
    assert not list(tmp_path.iterdir())


def test_weighted_lru_is_not_k_competitive_and_greedy_dual_is():
    # costs in 1..8 chosen by the search; OPT is the exact min-cost flow
    lru = search("lru", n=2, layers=2, k=3, length=48, budget=1500, seed=0, max_cost=8)
    gd = search("greedy-dual", n=2, layers=2, k=3, length=48, budget=1500, seed=0, max_cost=8)
    assert lru.ratio > 3          # cost-blind: past k (it evicts the expensive pages)
    assert 1 <= gd.ratio <= 3     # Young 1994: GreedyDual <= k·OPT_w from an empty cache
    from paging.offline.weighted import opt_weighted

    for r, name in ((lru, "lru"), (gd, "greedy-dual")):
        assert r.costs is not None and set(r.costs) <= set(range(1, 9))
        assert simulate(r.trace, name, 3, costs=r.costs).cost == r.online_misses
        assert opt_weighted(r.trace, k=3, costs=r.costs).cost == r.opt_misses


def test_cli_weighted_writes_the_costs(tmp_path):
    out = tmp_path / "w.npz"
    p = _cli("search", "--policy", "lru", "--n", "2", "--layers", "2", "--k", "3",
             "--length", "24", "--budget", "200", "--weighted", "--max-cost", "4", "--json",
             "--out", str(out))
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["weighted"] and json.loads((tmp_path / "w.npz.costs.json").read_text()) == \
        d["costs"]
    trace = io.load(out)[0]
    assert simulate(trace, "lru", 3, costs=d["costs"]).cost == d["online_misses"]


def test_runs_for_every_registered_online_policy():
    from paging.policies import policy_names

    names = policy_names(clairvoyant=False, needs_scores=False)
    assert "robust-token-match" in names and "token-match-dist" in names
    for name in names:
        seeds = 2 if make_policy(name).randomized else None  # (a deterministic one: refused)
        res = search(name, n=3, layers=2, k=4, length=6, budget=4, restarts=2, seeds=seeds,
                     show=False)
        assert res.certificate["verified"] and res.ratio >= 1, name


def test_a_failed_trace_write_leaves_no_costs_file(tmp_path, monkeypatch, capsys):
    """--weighted --out writes FILE and FILE.costs.json; when the trace cannot be written the
    costs file is not left behind (it was written first, on its own)."""
    import paging.io
    from paging.cli import main
    from paging.errors import PagingError

    def fail(traces, path, to=None):
        raise PagingError("cannot write the file: No space left on device", str(path))

    monkeypatch.setattr(paging.io, "write", fail)
    out = tmp_path / "w.npz"
    assert main(["adversary", "search", "--policy", "lru", "--n", "3", "--layers", "2",
                 "--k", "5", "--weighted", "--budget", "20", "--restarts", "1",
                 "--out", str(out)]) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_memo_keys_do_not_hold_the_sequences():
    # the memo is keyed by a digest: a key per distinct candidate of N requests used to be the
    # 8·N bytes of its pages (4000 candidates of 2·10^6 requests: 64 GB)
    from adversaries.search import Objective
    from paging.policies import make_policy

    obj = Objective(make_policy("lru"), Layout(3, 2), 3, [0])
    rng = np.random.default_rng(0)
    pages = [decode([(rng.integers(0, 3, size=(5, 2)), 1)], 5_000, 2, 3) for _ in range(3)]
    for p in pages + pages:
        obj(p)
    assert len(obj.memo) == 3 and obj.calls == 6
    assert all(len(key) <= 64 for key in obj.memo)
    from adversaries.search import sequence_key

    w = np.ones(6)
    assert sequence_key(pages[0], w) != sequence_key(pages[0])
    trace = from_pages(pages[0], Layout(3, 2))
    assert obj(pages[0])[1:] == (simulate(trace, "lru", 3).misses,
                                 simulate(trace, "belady", 3).misses)


def test_an_instance_beyond_memory_is_refused_up_front(monkeypatch):
    # n = 10^9 experts on 2 layers was killed by the system (out of memory) in its first
    # evaluation; now the pages and requests are priced before anything is allocated
    import paging.memory

    monkeypatch.setattr(paging.memory, "available", lambda: 500_000)

    def started(*a, **kw):
        raise AssertionError("the search started")

    monkeypatch.setattr("adversaries.search.anneal", started)
    with pytest.raises(PagingError, match=r"6,000 pages .* fewer experts \(--n\)"):
        search("lru", n=3_000, layers=2, k=4, length=10, budget=1, show=False)
    with pytest.raises(PagingError, match=r"20,000 requests .* rounds \(--length\)"):
        search("lru", n=3, layers=2, k=4, length=10_000, budget=1, show=False)


def test_the_witness_names_only_the_blocks_its_rounds_come_from():
    # a genome carries blocks past `length` rounds; the witness listed them (greedy-dual,
    # n=3, layers=2, k=3, length=15, --weighted: "... + 5-round motif x1 + 12-round motif x4"
    # while the 12-round motif never occurs in the 15 rounds)
    res = search("greedy-dual", n=3, layers=2, k=3, length=15, budget=200, max_cost=8,
                 show=False)
    assert sum(m.shape[0] * r for m, r in res.blocks[:-1]) < 15
    assert np.array_equal(decode(res.blocks, 15, 2, 3), res.trace.pages)
    from adversaries.search import used_blocks

    rng = np.random.default_rng(7)
    for _ in range(300):
        g = random_genome(rng, 3, 2, 25, 6)
        for _ in range(int(rng.integers(0, 20))):
            g = mutate(g, rng, 3, 2, 25, 6)
        length = int(rng.integers(1, 40))
        u = used_blocks(g, length)
        assert np.array_equal(decode(u, length, 2, 3), decode(g, length, 2, 3))
        before = sum(m.shape[0] * r for m, r in u[:-1])
        assert before < length  # every block contributes a round
        assert u[-1][1] == 1 or before + u[-1][0].shape[0] * (u[-1][1] - 1) < length
