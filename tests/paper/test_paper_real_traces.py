"""Figures 4 and 5 on the shipped Mixtral and granite traces (needs $PAGING_TRACES).

Golden numbers were computed once; a few are re-derived here with the reference simulator
loop (engine="reference"), which shares no code with paging.mrc or the compiled kernels.
"""

from __future__ import annotations

import json
import os

import pytest
from conftest import needs_traces
from test_real_traces import GOLDEN  # noqa: E402

from experiments import common, fig4, fig5
from paging.io import load
from paging.simulate import simulate

pytestmark = needs_traces

MIXTRAL = "mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl"
GRANITE = "granite-3.0-1b-a400m-instruct/moe_expert_trace.json"


def _quiet(_msg):
    pass


# trace -> requests, rounds expansion, both phases
REQUESTS = {
    "humaneval_2_routing.jsonl#problem_id=0": 5184,
    "humaneval_2_routing.jsonl#problem_id=1": 16128,
    "humaneval_p0_prefill_decode_raw.jsonl#problem_id=0": 6016,
    "moe_expert_trace.json#prompt=english_prose": 19776,
    "moe_expert_trace.json#prompt=code": 20736,
    "moe_expert_trace.json#prompt=math": 17856,
}
# trace -> (OPT, LRU, LRU-DIST, LLRU) at k = 200: tests/golden's numbers where it has the
# sequence, computed once here for the two it does not cover
AT_K200 = {name: (g["belady"], g["lru"], g["lru-dist"], g["llru"])
           for (name, k), g in GOLDEN.items() if k == fig5.K}
AT_K200.update({
    "humaneval_p0_prefill_decode_raw.jsonl#problem_id=0": (484, 1018, 1018, 1008),
    "moe_expert_trace.json#prompt=english_prose": (6968, 12949, 12341, 12454),
})


@pytest.fixture(scope="module")
def fig5_csv(tmp_path_factory):
    return fig5.compute(tmp_path_factory.mktemp("fig5"), seeds=(0, 1), progress=_quiet)


def test_fig5_golden_on_every_shipped_sequence(fig5_csv):
    rows = common.read_csv(fig5_csv)
    got = {}
    for r in rows:
        got.setdefault(r["trace"], {})[r["policy"]] = r
    assert set(got) == set(REQUESTS) == set(AT_K200)
    for trace, (opt, lru, lru_dist, llru) in AT_K200.items():
        g, n = got[trace], REQUESTS[trace]
        assert {p: int(g[p]["requests"]) for p in g} == dict.fromkeys(fig5.POLICIES, n)
        assert int(g["lru"]["opt_misses"]) == opt
        assert (g["lru"]["misses"], g["lru-dist"]["misses"], g["llru"]["misses"]) == \
            (str(lru), str(lru_dist), str(llru)), trace
        assert g["llru"]["ratio"] == f"{llru / opt:.6f}"
    models = {r["model"] for r in rows}
    assert len(models) == 2  # Mixtral's two files form one model, granite the other


def test_fig5_shortest_sequence_against_the_reference_loop(fig5_csv):
    (trace,) = [t for t in load(MIXTRAL) if t.name.endswith("problem_id=0")]
    rows = {r["policy"]: r for r in common.read_csv(fig5_csv) if r["trace"] == trace.name}
    assert int(rows["lru"]["opt_misses"]) == simulate(trace, "belady", 200,
                                                      engine="reference").misses
    for policy in ("lru", "lru-dist", "llru"):
        assert int(rows[policy]["misses"]) == simulate(trace, policy, 200,
                                                       engine="reference").misses
    marking = [simulate(trace, "marking", 200, seed=s, engine="reference").misses
               for s in (0, 1)]
    assert rows["marking"]["misses"] == f"{sum(marking) / 2:.6f}"


def test_fig5_records_the_inputs(fig5_csv):
    params = json.loads(common.params_path(fig5_csv).read_text())
    assert [s["source"] for s in params["sources"]] == list(fig5.DEFAULT_SOURCES)
    root = os.environ["PAGING_TRACES"]
    for s in params["sources"]:
        assert s["sha256"] == common.sha256(common.Path(root) / s["source"])
    assert params["k"] == 200 and params["marking_seeds"] == [0, 1]
    dropped = {s["trace"]: s["dropped_tokens"] for s in params["sequences"]}
    assert dropped["humaneval_2_routing.jsonl#problem_id=1"] == 3  # lossy log (PROVENANCE.md)


# (panel, policy, k) -> misses on the first 40 rounds (--quick)
FIG4_QUICK_GOLDEN = {
    (0, "lru", 32): "1171", (0, "lru", 33): "1171", (0, "llru", 64): "919",
    (0, "belady", 100): "448", (0, "lru-dist", 128): "633", (1, "lru", 200): "802",
    (1, "llru", 200): "784", (1, "belady", 200): "546", (1, "marking", 200): "786.500000",
}


def test_fig4_quick_on_the_shipped_traces(tmp_path):
    csv_path = fig4.compute(tmp_path, quick=True, progress=_quiet)
    rows = common.read_csv(csv_path)
    panels = {int(r["panel"]): r for r in rows}
    # the longest sequence of each file: Mixtral problem 1, granite's "code" prompt
    assert panels[0]["trace"] == "humaneval_2_routing.jsonl#problem_id=1"
    assert panels[1]["trace"] == "moe_expert_trace.json#prompt=code"
    assert (panels[0]["requests"], panels[1]["requests"]) == (str(40 * 32), str(40 * 24))
    for panel, n_pages in ((0, 256), (1, 768)):
        ks = [int(r["k"]) for r in rows if int(r["panel"]) == panel and r["policy"] == "llru"]
        assert ks == list(range(1, n_pages + 1))
    got = {(int(r["panel"]), r["policy"], int(r["k"])): r["misses"] for r in rows}
    for key, want in FIG4_QUICK_GOLDEN.items():
        assert got[key] == want, key
    (trace,) = [t for t in load(MIXTRAL) if t.name.endswith("problem_id=1")]
    head = trace.head(40 * 32)
    for policy, k in (("belady", 100), ("llru", 64), ("lru", 33)):
        assert int(got[(0, policy, k)]) == simulate(head, policy, k, engine="reference").misses
    files = fig4.plot(csv_path, tmp_path)
    assert all(f.stat().st_size > 1000 for f in files)


# (panel, policy) -> (n_k_fewer_than_llru, min_k_fewer_than_llru, max_k_fewer_than_llru,
# n_k_llru_at_most, n_k) of fig4_summary.csv on the full sequences, computed once
FIG4_VS_LLRU = {
    (0, "lru"): ("5", "243", "252", "251", "256"),
    (0, "lru-dist"): ("151", "1", "228", "105", "256"),
    (1, "lru"): ("42", "544", "716", "726", "768"),
    (1, "lru-dist"): ("203", "1", "311", "565", "768"),
}


def test_fig4_against_llru_on_the_full_sequences(tmp_path):
    # one Marking seed: Marking enters none of the columns checked here
    csv_path = fig4.compute(tmp_path, seeds=(0,), progress=_quiet)
    summary = {(int(s["panel"]), s["policy"]): s
               for s in common.read_csv(tmp_path / "fig4_summary.csv")}
    columns = ("n_k_fewer_than_llru", "min_k_fewer_than_llru", "max_k_fewer_than_llru",
               "n_k_llru_at_most", "n_k")
    for key, want in FIG4_VS_LLRU.items():
        assert tuple(summary[key][c] for c in columns) == want, key
    # LFU (issue "Learned and learning-augmented eviction", item 5) at k = 200 on the plotted
    # (longest) sequences: granite LFU 10,553 vs LRU-DIST 15,240 (30.8% fewer); Mixtral
    # LFU-DIST 2,530 vs LLRU 2,752 (8.1% fewer)
    at200 = {(int(r["panel"]), r["policy"]): int(r["misses"])
             for r in common.read_csv(csv_path) if r["k"] == "200" and r["policy"] != "marking"}
    assert (at200[(1, "lfu")], at200[(1, "lru-dist")]) == (10553, 15240)
    assert (at200[(0, "lfu-dist")], at200[(0, "llru")]) == (2530, 2752)
    # the ends of each range with the reference loop: the policy has fewer misses than LLRU at
    # the smallest and largest such k, and not just outside them
    params = json.loads(common.params_path(csv_path).read_text())
    traces = {}
    for panel in params["panels"]:
        source, name = panel["source"]["source"], panel["selected"]["trace"]
        (traces[panel["panel"]],) = [t for t in load(source) if t.name == name]
    for (panel, policy), (_, lo, hi, _, n_k) in FIG4_VS_LLRU.items():
        trace = traces[panel]
        for k, fewer in ((int(lo) - 1, False), (int(lo), True), (int(hi), True),
                         (int(hi) + 1, False)):
            if 1 <= k <= int(n_k):
                m, llru = (simulate(trace, p, k, engine="reference").misses
                           for p in (policy, "llru"))
                assert (m < llru) == fewer, (panel, policy, k, m, llru)


def test_lfu_at_k200_over_every_sequence_of_the_files():
    """The issue's figures (LFU about 18% fewer misses than LRU-DIST on granite, LFU-DIST about
    4% fewer than LLRU on Mixtral, k = 200) are totals over every sequence of each file, each
    from an empty cache: granite 32,076 vs 39,057 (17.9% fewer), Mixtral 3,495 vs 3,651 (4.3%
    fewer). On the single sequence Fig. 4 plots the gaps are larger (30.8%, 8.1%; above)."""
    def total(path, policy):
        return sum(simulate(t, policy, 200).misses for t in load(path))

    assert (total(GRANITE, "lfu"), total(GRANITE, "lru-dist")) == (32076, 39057)
    assert (total(MIXTRAL, "lfu-dist"), total(MIXTRAL, "llru")) == (3495, 3651)
