"""Golden miss counts on the real traces in ../shared/traces (via $PAGING_TRACES).

The numbers were computed once with this package and cross-checked three ways: against the
naive list-based implementations in tests/golden/naive.py (run again below on a subset), against
libCacheSim 0.3.5 (LRU, FIFO, Belady; tests/golden/test_libcachesim.py, run when the optional
``bench`` extra is installed), and reference loop against compiled kernel (engine="reference"
vs the default). Rounds expansion; Mixtral: 32 layers x 8 experts, top-2, problems 0 and 1 of
humaneval_2_routing.jsonl; granite: 24 x 32, top-8, prefill then decode.
"""

from __future__ import annotations

import os

import naive  # noqa: I001
import pytest
from conftest import needs_traces

from paging import simulate
from paging.io import load

MIXTRAL = "mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl"
GRANITE = "granite-3.0-1b-a400m-instruct/moe_expert_trace.json"

GOLDEN = {
    ("humaneval_2_routing.jsonl#problem_id=0", 16): {
        "lru": 5184,
        "fifo": 5184,
        "llru": 4984,
        "belady": 4019,
        "lru-dist": 4978,
    },
    ("humaneval_2_routing.jsonl#problem_id=0", 64): {
        "lru": 3738,
        "fifo": 4007,
        "llru": 3684,
        "belady": 2107,
        "lru-dist": 3628,
    },
    ("humaneval_2_routing.jsonl#problem_id=0", 128): {
        "lru": 2366,
        "fifo": 2547,
        "llru": 2260,
        "belady": 1030,
        "lru-dist": 2213,
    },
    ("humaneval_2_routing.jsonl#problem_id=0", 200): {
        "lru": 920,
        "fifo": 1151,
        "llru": 899,
        "belady": 433,
        "lru-dist": 904,
    },
    ("humaneval_2_routing.jsonl#problem_id=1", 16): {
        "lru": 16128,
        "fifo": 16128,
        "llru": 15399,
        "belady": 12451,
        "lru-dist": 15401,
    },
    ("humaneval_2_routing.jsonl#problem_id=1", 64): {
        "lru": 10934,
        "fifo": 11914,
        "llru": 10614,
        "belady": 6100,
        "lru-dist": 10414,
    },
    ("humaneval_2_routing.jsonl#problem_id=1", 128): {
        "lru": 6648,
        "fifo": 7147,
        "llru": 6375,
        "belady": 2943,
        "lru-dist": 6323,
    },
    ("humaneval_2_routing.jsonl#problem_id=1", 200): {
        "lru": 2879,
        "fifo": 3288,
        "llru": 2752,
        "belady": 961,
        "lru-dist": 2752,
    },
    ("moe_expert_trace.json#prompt=code", 64): {
        "lru": 20483,
        "fifo": 20483,
        "llru": 20327,
        "belady": 14762,
        "lru-dist": 20344,
    },
    ("moe_expert_trace.json#prompt=code", 200): {
        "lru": 15751,
        "fifo": 15951,
        "llru": 15325,
        "belady": 7492,
        "lru-dist": 15240,
    },
    ("moe_expert_trace.json#prompt=code", 400): {
        "lru": 4747,
        "fifo": 6677,
        "llru": 4669,
        "belady": 2070,
        "lru-dist": 4841,
    },
    ("moe_expert_trace.json#prompt=math", 64): {
        "lru": 17645,
        "fifo": 17645,
        "llru": 17482,
        "belady": 12721,
        "lru-dist": 17478,
    },
    ("moe_expert_trace.json#prompt=math", 200): {
        "lru": 12008,
        "fifo": 12225,
        "llru": 11555,
        "belady": 6492,
        "lru-dist": 11476,
    },
    ("moe_expert_trace.json#prompt=math", 400): {
        "lru": 6367,
        "fifo": 6932,
        "llru": 6284,
        "belady": 2714,
        "lru-dist": 6195,
    },
}

POLICIES = ("lru", "fifo", "llru", "belady", "lru-dist")


@pytest.fixture(scope="module")
def real_traces():
    root = os.environ["PAGING_TRACES"]
    ts = load(os.path.join(root, MIXTRAL)) + load(os.path.join(root, GRANITE))
    return {t.name: t for t in ts}


@needs_traces
def test_sequences_and_lengths(real_traces):
    lengths = {name: t.n_requests for name, t in real_traces.items()}
    assert lengths == {
        "humaneval_2_routing.jsonl#problem_id=0": 5184,
        "humaneval_2_routing.jsonl#problem_id=1": 16128,
        "moe_expert_trace.json#prompt=english_prose": 19776,
        "moe_expert_trace.json#prompt=code": 20736,
        "moe_expert_trace.json#prompt=math": 17856,
    }


@needs_traces
@pytest.mark.parametrize("name,k", sorted(GOLDEN))
def test_golden_numbers(real_traces, name, k):
    trace = real_traces[name]
    got = {p: simulate(trace, p, k).misses for p in POLICIES}
    assert got == GOLDEN[(name, k)]


@needs_traces
@pytest.mark.parametrize(
    "name,k",
    [
        ("humaneval_2_routing.jsonl#problem_id=0", 64),
        ("humaneval_2_routing.jsonl#problem_id=0", 200),
        ("moe_expert_trace.json#prompt=math", 200),
    ],
)
def test_golden_numbers_match_naive_implementations(real_traces, name, k):
    trace = real_traces[name]
    pages, L, n = trace.pages.tolist(), trace.layout.n_layers, trace.layout.n_experts
    naive_counts = {
        "lru": naive.lru(pages, k),
        "fifo": naive.fifo(pages, k),
        "llru": naive.llru(pages, k, L),
        "belady": naive.belady(pages, k),
        "lru-dist": naive.lru_dist(pages, k, L, n),
    }
    assert naive_counts == GOLDEN[(name, k)]


@needs_traces
def test_readers_match_a_naive_parser(real_traces):
    root = os.environ["PAGING_TRACES"]
    mixtral = naive.mixtral_rounds(os.path.join(root, MIXTRAL))
    granite = naive.granite_rounds(os.path.join(root, GRANITE))
    # the same sequences, every one compared (an empty naive parse compared nothing)
    assert sorted([f"humaneval_2_routing.jsonl#problem_id={pid}" for pid in mixtral]
                  + [f"moe_expert_trace.json#prompt={prompt}" for prompt in granite]) \
        == sorted(real_traces)
    for pid, (pages, dropped) in mixtral.items():
        t = real_traces[f"humaneval_2_routing.jsonl#problem_id={pid}"]
        assert t.pages.tolist() == pages and t.meta["dropped_tokens"] == dropped
    for prompt, pages in granite.items():
        assert real_traces[f"moe_expert_trace.json#prompt={prompt}"].pages.tolist() == pages


#: k = 200: llru (Definition 2 to the letter) and llru-latest (the current layer's pages first)
#: on the five sequences above (the README's theory section quotes them, with the prefill+decode
#: sequence: 1,008 / 1,007); every run verified.
LLRU_READINGS_K200 = {
    "humaneval_2_routing.jsonl#problem_id=0": (899, 897),
    "humaneval_2_routing.jsonl#problem_id=1": (2752, 2748),
    "moe_expert_trace.json#prompt=english_prose": (12454, 12461),
    "moe_expert_trace.json#prompt=code": (15325, 15325),
    "moe_expert_trace.json#prompt=math": (11555, 11581),
}


@needs_traces
@pytest.mark.parametrize("name", sorted(LLRU_READINGS_K200))
def test_llru_readings_golden(real_traces, name):
    from paging.verify import verify

    trace = real_traces[name]
    got = []
    for p in ("llru", "llru-latest"):
        r = simulate(trace, p, 200, record=True)
        verify(trace, r)
        got.append(r.misses)
    assert tuple(got) == LLRU_READINGS_K200[name]


#: Mixtral HumanEval problem 0 in groups mode (top-2, gate scores), k = 64: misses of routed
#: runs of policies the phase kernel runs (paging.fast.phases), max-rank:j=1 routed in the
#: kernel against the cache, pruning:j=1 routed first; today's reference-loop numbers, and the
#: compiled runs equal the reference field for field. Without routing: lfu 3641, arc 3918,
#: lecar 3350, marking 4028, score-based 3611.
ROUTED_K64 = {
    "max-rank:j=1": {"lfu": 1873, "arc": 1966, "lecar": 1648, "marking": 2346,
                     "score-based": 1838},
    "pruning:j=1": {"lfu": 1688, "arc": 1726, "lecar": 1688, "marking": 1765,
                    "score-based": 1675},
}


@needs_traces
@pytest.mark.parametrize("hook", sorted(ROUTED_K64))
def test_routed_phase_kernels_golden(hook):
    from strategies import assert_same_fields

    from paging.verify import verify

    root = os.environ["PAGING_TRACES"]
    (trace,) = [t for t in load(os.path.join(root, MIXTRAL), expand="groups")
                if t.name.endswith("problem_id=0")]
    got = {}
    for p in ROUTED_K64[hook]:
        fast = simulate(trace, p, 64, routing=hook, record=True, engine="fast")
        assert_same_fields(fast, simulate(trace, p, 64, routing=hook, record=True,
                                          engine="reference"))
        verify(trace, fast)
        got[p] = fast.misses
    assert got == ROUTED_K64[hook]


#: the token policies with SpecMD's phases on problem 0 of the Mixtral file (groups mode,
#: k = 128): (misses, prefetches or drops) with the previous-token prefetcher (top-K) or
#: drop:rank=1, the compiled token kernel equal to the reference loop field by field
TOKEN_PHASES_K128 = {
    ("token-hazard", "prefetch"): (1996, 371), ("token-decay", "prefetch"): (1751, 1112),
    ("token-match", "prefetch"): (1737, 912), ("token-hazard", "drop"): (1003, 1237),
    ("token-decay", "drop"): (991, 1238), ("token-match", "drop"): (952, 1234),
    ("token-match-dist", "drop"): (928, 1193), ("robust-token-match", "drop"): (951, 1226)}


@needs_traces
def test_token_phase_kernels_golden():
    from strategies import assert_same_fields

    from paging.predict.prefetch import Prefetcher, make_prefetch_predictor
    from paging.verify import verify

    root = os.environ["PAGING_TRACES"]
    (trace,) = [t for t in load(os.path.join(root, MIXTRAL), expand="groups")
                if t.name.endswith("problem_id=0")]
    got = {}
    def kw(phase):  # a fresh prefetcher per run
        return (dict(prefetch=Prefetcher(make_prefetch_predictor("previous-token")))
                if phase == "prefetch" else dict(miss="drop:rank=1"))

    for p, phase in TOKEN_PHASES_K128:
        fast = simulate(trace, p, 128, record=True, engine="fast", **kw(phase))
        assert_same_fields(fast, simulate(trace, p, 128, record=True, engine="reference",
                                          **kw(phase)))
        verify(trace, fast)
        got[(p, phase)] = (fast.misses, fast.extra["prefetches" if phase == "prefetch"
                                                    else "dropped"])
    assert got == TOKEN_PHASES_K128


#: SpecMD's Algorithm 1 on both sequences of the Mixtral file (groups mode): Least-Stale at 5 %
#: of Mixtral's bytes, int8, ``cache-prior:lambda=0.5,j=0`` (SpecMD's Eq. 1) with each miss
#: handler: (fetched misses, dropped, substituted) summed over the two sequences, the numbers of
#: docs/guide/specmd.md's table (9,125 dropped, 1,954 substituted, 18,326 fetched with
#: fetch-priority), and the compiled run's rows equal the reference loop's, timeline included
ALGORITHM_1 = {"drop:rank=1": (9433, 9125, 0), "substitute": (13368, 0, 1954),
               "fetch-lowest-bit": (16349, 0, 0), "fetch-priority": (18326, 0, 0)}


@needs_traces
@pytest.mark.parametrize("miss", sorted(ALGORITHM_1))
def test_routing_with_miss_handling_golden(miss):
    from paging.cost import get_model, share_budget
    from paging.run import RunSpec, run

    traces = load(os.path.join(os.environ["PAGING_TRACES"], MIXTRAL), expand="groups")
    rows = {}
    for engine in ("fast", "reference"):
        spec = RunSpec("least-stale", budget=share_budget(get_model("mixtral-8x7b"), 5),
                       model="mixtral-8x7b", precision="int8",
                       routing="cache-prior:lambda=0.5,j=0", miss=miss, engine=engine)
        rows[engine] = run(spec, traces)
    assert rows["fast"] == rows["reference"]
    got = tuple(sum(r[f] for r in rows["fast"]) for f in ("misses", "dropped", "substituted"))
    assert got == ALGORITHM_1[miss]
