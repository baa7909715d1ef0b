"""ZipMoE's pools in the cost model (paging.cost.pools): hand-computed forms, capacities, times."""

from fractions import Fraction as F

import pytest

from paging.cost import SOURCES, get_hardware, get_model
from paging.cost.pools import (
    ZIPMOE_SOURCES,
    PoolTimes,
    ZipParams,
    form_bytes,
    pool_capacities,
    pool_times,
)
from paging.errors import PagingError


def test_mixtral_forms_by_hand():
    # s = 3 * 4096 * 14336 * 2 = 352,321,536; s/2 = 176,160,768; 0.36 * s/2 = 63,417,876.48
    assert form_bytes(get_model("mixtral-8x7b")) == {
        "F": 352_321_536, "C": 176_160_768 + 63_417_877, "S": 176_160_768, "E": 63_417_877}


def test_granite_forms_by_hand_and_other_rho():
    # s = 3 * 1024 * 512 * 2 = 3,145,728; s/2 = 1,572,864; 0.36 * s/2 = 566,231.04
    m = get_model("granite-3.0-1b-a400m")
    assert form_bytes(m) == {"F": 3_145_728, "C": 2_139_096, "S": 1_572_864, "E": 566_232}
    # rho = 1 (incompressible): C holds the whole expert, E the raw exponent half
    assert form_bytes(m, rho=1) == {"F": 3_145_728, "C": 3_145_728, "S": 1_572_864,
                                    "E": 1_572_864}


def test_capacities_by_hand():
    forms = form_bytes(get_model("mixtral-8x7b"))
    # 20 GB over 32 layers: C gets 0.4 * 20e9 / (32 * 239,578,645) = 1.04 -> 1,
    # S gets 0.6 * 20e9 / (32 * 176,160,768) = 2.13 -> 2
    assert pool_capacities(20 * 10**9, 32, 8, {"C": F(2, 5), "S": F(3, 5)}, forms) == \
        {"F": 0, "C": 1, "S": 2, "E": 0}
    # capped at n = 8 experts per layer in hierarchy order: F takes 8, E gets none
    assert pool_capacities(10**12, 32, 8, {"F": F(1, 2), "E": F(1, 2)}, forms) == \
        {"F": 8, "C": 0, "S": 0, "E": 0}


def test_times_by_hand():
    t = pool_times(get_model("mixtral-8x7b"), get_hardware("pcie3"))
    # SM-chunk of one tensor: 352,321,536 / 3 / 2 = 58,720,256 B at 3.5 GB/s = 16.777216 ms
    assert t.u == pytest.approx(16.777216, rel=1e-12)
    assert t.v == pytest.approx(0.36 * 16.777216 / 6, rel=1e-12)
    assert t.c == pytest.approx(3 * 16.777216 / 6, rel=1e-12)
    # p: decode is memory-bound, 352,321,536 B / 1935 GB/s
    assert t.p == pytest.approx(352_321_536 / 1.935e12 * 1e3, rel=1e-12)
    assert (t.tensors, t.K, t.L, t.raw_read_ms()) == (3, 6, 6, 2 * t.u)
    t2 = pool_times(get_model("mixtral-8x7b"), get_hardware("pcie3"),
                    ZipParams(rho=0.5, threads=2, shards=4, breakeven=2))
    assert (t2.v, t2.c, t2.L, t2.K) == (pytest.approx(0.5 * t.u / 4), pytest.approx(t.u / 2),
                                        2, 4)
    assert isinstance(t2, PoolTimes)


def test_sources_are_in_the_cost_model_table():
    names = {s.name for s in SOURCES}
    assert {s.name for s in ZIPMOE_SOURCES} <= names
    by = {s.name: s for s in ZIPMOE_SOURCES}
    assert by["zipmoe:rho"].value == 0.36 and not by["zipmoe:rho"].is_assumption
    assert by["zipmoe:threads_L"].is_assumption and by["zipmoe:shards_K"].is_assumption
    assert "Sec. 2.3" in by["zipmoe:decomp_breakeven_threads"].origin
    # p is the preset GPU's roofline (an A100), not the paper's Jetson AGX Orin: said so
    p_origin = by["zipmoe:gpu_tokens_per_expert"].origin
    assert "assumption" in p_origin and "Jetson AGX Orin" in p_origin and "A100" in p_origin


@pytest.mark.parametrize("kw, message", [
    ({"rho": 0}, "rho must be a number in (0, 1]"),
    ({"rho": 1.5}, "rho must be a number in (0, 1]"),
    ({"threads": 0}, "L (decompression threads) must be an integer >= 1"),
    ({"shards": 0}, "K (E-chunks per tensor) must be an integer >= 1"),
    ({"breakeven": 0}, "break-even thread count must be a number > 0"),
])
def test_bad_parameters(kw, message):
    with pytest.raises(PagingError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        ZipParams(**kw)


def test_only_bf16_has_the_split():
    with pytest.raises(PagingError, match="precision int4 has no such split"):
        form_bytes(get_model("mixtral-8x7b"), "int4")


def test_threads_and_shards_beyond_4096_are_refused_up_front():
    """A review: --threads 2^63-1 ran out of memory and --shards 10^7 took 3.6 GB, silently."""
    ZipParams(threads=4096, shards=4096)
    for kw in ({"threads": 4097}, {"shards": 10**7}):
        with pytest.raises(PagingError, match=r"must be at most 4,096, got (4097|10000000) "
                                              r"\(the planner's schedules grow with it"):
            ZipParams(**kw)
