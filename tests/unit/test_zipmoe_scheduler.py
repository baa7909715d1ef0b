"""ZipMoE scheduler (paging.zipmoe.scheduler): hand-simulated Algorithm 1, ILP, Theorem 3.1."""

from fractions import Fraction as F

import numpy as np
import pytest

from paging.errors import PagingError
from paging.zipmoe import scheduler as zs


def test_single_s_expert_by_hand():
    # e = ρu/K = 1: chunks arrive at 1, 2, 3, 4; one thread decompresses 1-11, 11-21, 21-31, 31-41
    inst = zs.Instance(("S",), (0,), 4, 1, 10, 4, 1)
    s = zs.run_alg(inst)
    assert s.makespan == 41 and s.io_end == 4
    assert [s.starts[("D", (0, 0), v)] for v in range(4)] == [1, 11, 21, 31]
    assert zs.optimal_makespan(inst) == 41
    assert zs.lower_bound_printed(inst)["Z"] == 44      # Lemma B.3's Z exceeds OPT (erratum)
    assert zs.lower_bound(inst) == 41


def test_algorithm1_by_hand():
    # M expert (p 3) is the base; alone it idles 2 on the thread (decompresses 2-3 after its
    # E-chunk read 0-2), so it is not compute-dominant (3 - 4 < 2). Inserting the C expert at
    # position 0 lowers the idle to 1: block [C, M]. GPU: C 1-2, M at max(3, SM 4) = 4, ends 7.
    inst = zs.Instance(("M", "C"), (3, 1), 2, 1, 1, 1, 1)
    assert zs.cache_affinity_blocks(inst) == [[(1, 0), (0, 0)]]
    s = zs.run_alg(inst)
    assert (s.starts[("G", 1)], s.starts[("G", 0)], s.makespan) == (1, 4, 7)
    assert zs.optimal_makespan(inst) == 7                # I/O 4 + p 3 is a lower bound


def test_leftover_type_two_tasks_are_scheduled():
    inst = zs.Instance(("C", "S", "M"), (6, 3, 6), 8, F(1, 2), 4, 2, 1)
    assert sorted(t for B in zs.cache_affinity_blocks(inst) for t in B) == inst.tasks


def test_estimate_makespan_by_hand():
    # k = 2 experts, one C hit: n_SM = 1, n_E = K = 2, T_IO = 4 + 2 = 6, n_D = 4,
    # T_decomp = (2 + 4·3)/2 = 7
    assert zs.estimate_makespan(2, (0, 1, 0, 0), c=3, v=1, u=4, L=2, K=2, n=1) == 7


def test_theorem31_seeded_grid():
    rng = np.random.default_rng(7)
    for _ in range(6):
        inst = zs.random_instance(rng, experts=(1, 2))
        alg = zs.run_alg(inst).makespan
        opt = zs.optimal_makespan(inst, horizon=alg)
        assert zs.lower_bound(inst) <= opt <= alg <= (3 - F(1, inst.L)) * opt


def test_power_serial_scheduler_exceeds_bound():
    inst = zs.Instance(("S",) * 8, (2,) * 8, 2, 1, 2, 1, 1)
    assert zs.serial_makespan(inst) == 48 and zs.run_alg(inst).makespan == 20


def test_ledger_row_theorem31_holds():
    from proofs.zipmoe_theorem31 import check

    row = check()
    assert row.holds and row.smallest_margin >= 0 and row.stands
    assert any("Lemma B.3" in e.where and e.verified for e in row.errata)
    # the serial scheduler exceeds the bound on the constructed instance of the bound grid
    pc, printed = row.power_checks
    assert pc.fails and "serial 48 vs ALG 20" in pc.detail
    # the corrected lower bound is checked against the exact OPT; the printed one is rejected
    assert "above OPT on 0" in row.notes
    assert printed.fails and "above the exact OPT on 2 of 15" in printed.detail
    # nothing printed as a ratio when nothing exceeded; no lower bound called an ILP
    assert "0.000" not in row.notes and "(ILP" not in row.errata[0].problem


@pytest.mark.parametrize("kw, msg", [
    ({"L": 0}, "L .decompression threads. must be an integer >= 1"),
    ({"states": ("X",)}, "expert state must be one of"),
    ({"c": -1}, "c must be a non-negative"),
])
def test_bad_input(kw, msg):
    args = {"states": ("M",), "p": (1,), "u": 2, "rho": 1, "c": 1, "K": 1, "L": 1, **kw}
    with pytest.raises(PagingError, match=msg):
        zs.Instance(**args)
