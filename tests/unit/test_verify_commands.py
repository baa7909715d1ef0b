"""--verify beyond `paging simulate`: the miss curve (`paging mrc --verify`), the offline
optimum (`paging opt --verify`), every cell of a sweep (`paging sweep --verify`) and the
adversary constructions (`paging adversary --verify`), each held to independently verified
runs; a failure is one error line with exit status 3 (a simulator
bug, not bad input). A review broke LRU's kernel and Belady's miss count: `mrc`, `opt` and
`sweep` reported the wrong numbers with exit status 0 and had no way to check them."""

from __future__ import annotations

import json

import numpy as np
import pytest

import paging
import paging.mrc
from paging.cli import main
from paging.io import load
from paging.mrc import miss_curve, verify_curve
from paging.verify import VerificationError

SPEC = "zipf:n=4,layers=3,tokens=60,seed=1"


def _off_by_one(real):
    """A miss curve that is wrong at k = 3 (one miss too many)."""
    def curve(trace, policy, **kw):
        m = np.array(real(trace, policy, **kw))
        m[2] += 1
        return m
    return curve


@pytest.mark.parametrize("policy", ["lru", "fifo", "marking", "lfu-dist", "belady"])
def test_a_true_curve_passes_and_a_wrong_one_names_its_k(policy):
    (tr,) = load(SPEC)
    curve = miss_curve(tr, policy, seed=3, progress=False)
    verify_curve(tr, policy, curve, seed=3, show=False)
    wrong = np.array(curve)
    wrong[4] -= 1
    with pytest.raises(VerificationError, match=f"the {policy} curve has {wrong[4]} misses at "
                                                f"k = 5, a verified run {curve[4]}"):
        verify_curve(tr, policy, wrong, seed=3, show=False)


def test_a_k_outside_the_curve_is_refused():
    # a k past the curve's end was an IndexError traceback; k <= 0 reached the simulator,
    # which refused it in its own words; both now name the curve's sizes
    from paging.errors import PagingError

    (tr,) = load(SPEC)
    curve = miss_curve(tr, "lru", progress=False)
    for k in (0, -1, len(curve) + 1):
        with pytest.raises(PagingError, match=f"k = {k} is outside the lru curve"):
            verify_curve(tr, "lru", curve, ks=[1, k], show=False)


def test_mrc_verify_reports_and_fails_with_status_3(capsys, monkeypatch):
    assert main(["mrc", SPEC, "--policy", "lru", "--verify", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["verified"] is True and len(doc["misses"]) == 12
    assert main(["mrc", SPEC, "--policy", "lru", "--verify"]) == 0
    assert "verified: the run at every k checked" in capsys.readouterr().out
    real = paging.mrc._hist_to_misses  # (the one-pass route's last step, broken at k = 3)
    monkeypatch.setattr(paging.mrc, "_hist_to_misses",
                        lambda *a: real(*a) + (np.arange(13) == 3))
    assert main(["mrc", SPEC, "--policy", "lru", "--json"]) == 0  # (unchecked: not caught)
    capsys.readouterr()
    assert main(["mrc", SPEC, "--policy", "lru", "--verify", "--json"]) == 3
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("error: a run failed its independent verification: ")
    assert "at k = 3" in err and "not in the input" in err
    assert main(["mrc", SPEC, "--policy", "lru", "--verify", "--stream"]) == 2
    assert "drop --verify or --stream" in capsys.readouterr().err


def test_opt_verify_holds_belady_and_the_ilp_to_a_verified_run(capsys, monkeypatch):
    import paging.offline.ilp

    for method in ("belady", "ilp"):
        assert main(["opt", SPEC, "--k", "4", "--method", method, "--verify", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)[0]["misses"] > 0
    real = paging.offline.ilp.opt_ilp
    monkeypatch.setattr(paging.offline.ilp, "opt_ilp", lambda *a, **kw: real(*a, **kw) + 1)
    assert main(["opt", SPEC, "--k", "4", "--method", "ilp", "--json"]) == 0  # (unchecked)
    capsys.readouterr()
    assert main(["opt", SPEC, "--k", "4", "--method", "ilp", "--verify"]) == 3
    assert "ilp gives" in capsys.readouterr().err
    assert main(["opt", SPEC, "--k", "4", "--method", "lp", "--verify"]) == 2
    assert "--verify checks the unit-cost optimum" in capsys.readouterr().err


def test_sweep_verify_changes_no_number_and_catches_a_wrong_curve(tmp_path, monkeypatch):
    from paging.sweep import run_sweep

    spec = tmp_path / "s.toml"
    spec.write_text(f'traces = ["{SPEC}"]\npolicies = ["lru", "marking", "fifo"]\n'
                    "k = [2, 3, 5]\nseeds = [0, 1]\n", encoding="utf-8")
    run_sweep(spec, tmp_path / "plain.csv", workers=0, progress=False)
    run_sweep(spec, tmp_path / "checked.csv", workers=0, progress=False, verify=True)
    assert (tmp_path / "plain.csv").read_bytes() == (tmp_path / "checked.csv").read_bytes()
    monkeypatch.setattr(paging.mrc, "miss_curve", _off_by_one(miss_curve))
    with pytest.raises(VerificationError, match="the lru curve has .* at k = 3"):
        run_sweep(spec, tmp_path / "wrong.csv", workers=0, progress=False, verify=True)
    assert not (tmp_path / "wrong.csv").exists()


def test_serving_sweep_verify_changes_no_number_and_catches_a_wrong_run(tmp_path,
                                                                        break_compiled_serving):
    """``serve-sweep --verify``: the same table, and every cell's run checked (a compiled run
    that decides one request otherwise, its first miss a hit, stops the verified sweep before
    it writes; the plain sweep reports it unchecked)."""
    from paging.serve.sweep import run_serve_sweep

    spec = tmp_path / "s.toml"
    spec.write_text('traces = ["zipf:n=8,layers=32,tokens=30,topk=2,seed=0"]\n'
                    'policies = ["lru", "marking"]\nk = [16]\nmodel = "mixtral-8x7b"\n'
                    "[serve]\nrates = [5]\nduration = 1\nmax_tokens = 16\n", encoding="utf-8")
    run_serve_sweep(spec, tmp_path / "plain.csv", workers=0, progress=False)
    run_serve_sweep(spec, tmp_path / "checked.csv", workers=0, progress=False, verify=True)
    assert (tmp_path / "plain.csv").read_bytes() == (tmp_path / "checked.csv").read_bytes()
    break_compiled_serving()
    run_serve_sweep(spec, tmp_path / "unchecked.csv", workers=0, progress=False)
    with pytest.raises(VerificationError, match="differs from the verified reference loop"):
        run_serve_sweep(spec, tmp_path / "wrong.csv", workers=0, progress=False, verify=True)
    assert not (tmp_path / "wrong.csv").exists()


@pytest.mark.parametrize("name, extra", [("theorem1", []), ("theorem2", []), ("theorem3", []),
                                         ("theorem4", ["--sequences", "2", "--rounds", "50"]),
                                         ("sleator-tarjan", [])])
def test_adversary_verify_changes_no_number_and_catches_a_miscounted_run(name, extra, capsys,
                                                                         monkeypatch):
    """`paging adversary --verify`: every run of the construction recorded and verified, the
    adaptive ones' misses against a verified replay of their sequence. A review broke LRU's
    kernel and theorem3 reported an online policy beating OPT 15-fold with exit status 0.
    Here a run whose miss count is one short (a hit recorded for a miss) is caught."""
    import sys

    argv = ["adversary", name, "--n", "3", "--layers", "2", *extra, "--json"]
    assert main(argv) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main(argv + ["--verify"]) == 0
    assert json.loads(capsys.readouterr().out) == plain
    sim = sys.modules["paging.simulate"]  # (the module: paging.simulate is the function)
    real = sim._simulate

    def miscounted(trace, policy, k, **kw):  # (the run inside simulate(), before its check)
        res = real(trace, policy, k, **kw)
        if getattr(policy, "name", policy) != "belady" and res.hit_mask is not None:
            t = int(np.flatnonzero(~res.hit_mask)[-1])
            res.hit_mask[t] = True
            res.misses -= 1
        return res

    monkeypatch.setattr(sim, "_simulate", miscounted)
    assert main(argv + ["--verify"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("error: a run failed its independent verification") and \
        err.count("\n") == 1


def test_an_adaptive_count_is_held_to_a_verified_replay():
    """checked_online: outside verifying() the interactive simulation's count is taken as is;
    inside, a count that differs from the verified replay of the built sequence fails."""
    from adversaries.base import checked_online
    from paging.simulate import verifying

    (tr,) = load(SPEC)
    true = paging.simulate(tr, "lru", 4).misses
    assert checked_online(tr, "lru", 4, true + 1) == true + 1
    with verifying():
        assert checked_online(tr, "lru", 4, true) == true
        with pytest.raises(VerificationError, match=f"the adaptive run counted {true + 1} "
                                                    f"misses, a verified replay of its "
                                                    f"sequence {true}"):
            checked_online(tr, "lru", 4, true + 1)


def test_a_verification_failure_on_dask_workers_is_one_line(tmp_path):
    """On Dask workers a failed verification came back as the worker's "Compute Failed"
    traceback (8 lines on stderr) before the error line; it is returned like an input error
    and raised once: one line, exit status 3. A subprocess (the workers' log goes to its
    stderr) whose miss curve is broken by a sitecustomize module."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(
        "import numpy as np\nimport paging.mrc as m\nreal = m.miss_curve\n"
        "def broken(*a, **kw):\n    c = np.array(real(*a, **kw))\n    c[2] += 1\n"
        "    return c\nm.miss_curve = broken\n", encoding="utf-8")
    spec = tmp_path / "s.toml"
    spec.write_text(f'traces = ["{SPEC}"]\npolicies = ["lru"]\nk = [2, 3, 5]\n',
                    encoding="utf-8")
    repo = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(inject), repo]))
    out = subprocess.run([sys.executable, "-m", "paging", "sweep", str(spec), "--out",
                          str(tmp_path / "o.csv"), "--verify", "--workers", "2"],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 3, out.stderr
    assert "Traceback" not in out.stderr and "Compute Failed" not in out.stderr, out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith(
        "error: a run failed its independent verification: ")
    assert not (tmp_path / "o.csv").exists()


def test_inside_verifying_every_simulate_call_is_recorded_and_checked(monkeypatch):
    """paging.simulate.verifying(): every simulate() inside the block records its run and
    verifies it before returning it (so proofs, figures and adversaries are checked without
    each caller asking); outside, a run is returned as asked (unrecorded)."""
    import sys

    from paging.simulate import simulate, verifying, verifying_now

    assert paging.verifying is verifying  # (the README's `with paging.verifying(): ...`)
    (tr,) = load(SPEC)
    plain = simulate(tr, "fifo", 4)
    assert plain.hit_mask is None and not verifying_now()
    with verifying():
        assert verifying_now()
        checked = simulate(tr, "fifo", 4)
        assert checked.hit_mask is not None and checked.misses == plain.misses
        with pytest.raises(ValueError, match="record must be"):  # (refused inside too)
            simulate(tr, "fifo", 4, record="yes")
    assert not verifying_now()
    sim = sys.modules["paging.simulate"]
    real = sim._simulate

    def overfull(*a, **kw):  # (an eviction dropped from the log: the cache exceeds k)
        res = real(*a, **kw)
        if res.evictions is not None:
            res.evictions = res.evictions[1:]
        return res

    monkeypatch.setattr(sim, "_simulate", overfull)
    assert simulate(tr, "fifo", 4).misses == plain.misses  # (unchecked: not caught)
    with verifying(), pytest.raises(VerificationError):
        simulate(tr, "fifo", 4)


@pytest.mark.parametrize("policy, route, k", [("lru", "_hist_to_misses", 7),
                                              ("fifo", "_per_k", 8)])
def test_inside_verifying_every_miss_curve_is_held_to_verified_runs(policy, route, k,
                                                                     monkeypatch):
    """A miss curve made inside verifying() (the figures' curves under `figs --verify`) is
    checked at every k before it is returned, on the one-pass and the per-k route alike."""
    from paging.simulate import verifying

    (tr,) = load(SPEC)
    right = miss_curve(tr, policy)
    with verifying():
        assert list(miss_curve(tr, policy)) == list(right)
    real = getattr(paging.mrc, route)

    def broken(*a):  # (one miss too many at index 7 of what the route returns)
        m = np.array(real(*a))
        m[7] += 1
        return m

    monkeypatch.setattr(paging.mrc, route, broken)
    assert miss_curve(tr, policy)[k - 1] == right[k - 1] + 1  # (unchecked: not caught)
    with verifying(), pytest.raises(VerificationError, match=f"the {policy} curve has "
                                    f"{right[k - 1] + 1} misses at k = {k}, a verified run "
                                    f"{right[k - 1]}"):
        miss_curve(tr, policy)


def test_figs_verify_makes_the_same_files(tmp_path, monkeypatch, capsys):
    """`paging figs --verify`: the same CSV bytes as without (the runs are only checked), and
    the runs are checked: one whose count is a miss short (a hit recorded for it) fails."""
    import sys

    for sub, extra in (("plain", []), ("checked", ["--verify"])):
        assert main(["figs", "--quick", "--only", "fig6a", "--only", "fig6b", "--out",
                     str(tmp_path / sub), *extra]) == 0
    for name in ("fig6a.csv", "fig6b.csv"):
        assert (tmp_path / "plain" / name).read_bytes() == \
            (tmp_path / "checked" / name).read_bytes()
    capsys.readouterr()
    sim = sys.modules["paging.simulate"]  # (the module: paging.simulate is the function)
    real = sim._simulate

    def miscounted(trace, policy, k, **kw):  # (the run inside simulate(), before its check)
        res = real(trace, policy, k, **kw)
        if res.hit_mask is not None and not res.hit_mask.all():
            res.hit_mask[int(np.flatnonzero(~res.hit_mask)[-1])] = True
            res.misses -= 1
        return res

    monkeypatch.setattr(sim, "_simulate", miscounted)
    assert main(["figs", "--quick", "--only", "fig6a", "--out", str(tmp_path / "wrong"),
                 "--verify"]) == 3
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith("error: a run failed its independent verification"), err
