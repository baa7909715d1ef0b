"""Finite but huge inputs (costs, times, model fields, sweep integers): each is refused up
front with one line on stderr and exit status 2, never run to inf or nan, never a traceback."""

from __future__ import annotations

import json

import numpy as np
import pytest

from paging.cli import main

ZIPF = "zipf:n=4,layers=2,tokens=6,a=1.0,seed=0,topk=2"  # 8 pages
ROUTER = "router:n=8,layers=32,tokens=40,k=2,seed=0"


@pytest.fixture
def one_line(capsys):
    def run(argv, *fragments):
        rc = main([str(a) for a in argv])
        out, err = capsys.readouterr()
        assert rc == 2 and out == "" and err.count("\n") == 1, (rc, out, err)
        assert err.startswith("error: ") and "Traceback" not in err
        for f in fragments:
            assert f in err, (f, err)
        return err
    return run


def test_costs_whose_total_could_overflow_are_refused(tmp_path, one_line):
    """1e308 per page summed to inf (nan with the compensated sum, a traceback with --json,
    an fsum OverflowError in opt): costs above 1e288 are refused, naming the largest entry."""
    big = tmp_path / "c_big.json"
    big.write_text(json.dumps([1.0, 2.0, 1e307, 3.0, 1e308, 1.0, 1.0, 1.0]))
    for argv in (["simulate", ZIPF, "--policy", "lru", "--k", "2", "--costs", big],
                 ["simulate", ZIPF, "--policy", "lru", "--k", "2", "--costs", big, "--json"],
                 ["opt", ZIPF, "--k", "2", "--costs", big]):
        one_line(argv, f"{big}: entry 4 is 1e+308; expected a finite number from 0 to 1e+288")


def test_costs_at_the_bound_run_finite_and_the_solvers_refuse_what_they_cannot_resolve(
        tmp_path, capsys, one_line):
    """The largest accepted cost gives a finite total (a simulation, the flow). The ILP and LP
    refuse costs above 1e15: their solvers' tolerances are absolute (an objective scaled by a
    power of two to bring 1e12 to [1, 2) lost the costs of 1 to 3 beside it, and the ILP
    returned a schedule 71 above the optimum, called exact)."""
    c = tmp_path / "c.json"
    c.write_text(json.dumps([1e288, 1, 1e288, 3, 1e288, 1e287, 1, 1e288]))
    assert main(["simulate", ZIPF, "--policy", "greedy-dual", "--k", "2", "--costs", str(c),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["cost"] < float("inf")
    assert main(["opt", ZIPF, "--k", "2", "--costs", str(c), "--method", "flow",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["cost"] < float("inf")
    for method in ("ilp", "lp"):
        one_line(["opt", ZIPF, "--k", "2", "--costs", c, "--method", method],
                 f"--method {method}: the costs span 1 to 1e+288, beyond what CBC and HiGHS "
                 "resolve", "expected the largest at most 1e+15 times the smallest positive")


def test_a_large_cost_among_small_ones_the_ilp_solves_exactly_the_flow_bounds(tmp_path,
                                                                              capsys):
    """One cost of 1e12 among costs of 1 to 3 (a review's instance, reduced): the ILP and LP
    give the optimum; the flow's quantised costs lose the small ones, so it reports its
    schedule's true cost as an upper bound with a lower bound, exact False."""
    from paging.layout import Layout
    from paging.offline.weighted import opt_weighted

    rng = np.random.default_rng(3)
    pages = [int(z * 6 + rng.integers(0, 6)) for _ in range(30) for z in range(2)]
    from paging.trace import from_pages

    tr = from_pages(pages, Layout(6, 2))
    w = rng.integers(1, 4, 12).astype(float)
    w[5] = 1e12
    ilp = opt_weighted(tr, k=3, costs=w, method="ilp")
    lp = opt_weighted(tr, k=3, costs=w, method="lp")
    flow = opt_weighted(tr, k=3, costs=w, method="flow")
    highs = opt_weighted(tr, k=3, costs=w, method="flow", solver="highs")  # (unquantised)
    assert ilp.exact and ilp.cost == lp.cost == highs.cost == 1e12 + 74
    assert not flow.exact and flow.cost == 1e12 + 96 and flow.lower == 1e12 + 21
    # costs of 1e-9 to 3e-9 (a review: unscaled, the ILP was 49e-9 above the flow's schedule,
    # called exact, and the LP's "lower bound" above it): scaled by a power of two to put the
    # smallest at 1, the ILP and LP are the flow's exact optimum, scaled back
    small = np.where(w == 1e12, 2.0, w) * 2.0 ** -30
    exact = opt_weighted(tr, k=3, costs=small, method="flow")
    assert exact.exact
    assert opt_weighted(tr, k=3, costs=small, method="ilp").cost == exact.cost
    assert opt_weighted(tr, k=3, costs=small, method="lp").lower == exact.cost
    f = tmp_path / "w.json"
    f.write_text(json.dumps(w.tolist()))
    path = tmp_path / "t.npz"
    from paging.io import write

    write([tr], path)
    assert main(["opt", str(path), "--k", "3", "--costs", str(f), "--method", "flow",
                 "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["cost"], row["lower"], row["exact"]) == (flow.cost, flow.lower, flow.exact)


def test_a_cost_beyond_any_float_is_named(tmp_path, one_line, capsys):
    """10**400 was "got values of type object"; it is named by entry and abbreviated value,
    and an integer cost beyond int64 but within the bound is taken as the number it is."""
    from paging.io import load
    from paging.simulate import simulate

    c = tmp_path / "c.json"
    c.write_text("[1, 2, 3, 4, 5, 6, " + str(10**400) + ", 1]")
    one_line(["simulate", ZIPF, "--policy", "lru", "--k", "2", "--costs", c],
             f"{c}: entry 6 is 1.000e400; expected a finite number from 0 to 1e+288")
    costs = [1, 2, 3, 4, 5, 6, 10**30, 1]
    c.write_text(json.dumps(costs))
    assert main(["simulate", ZIPF, "--policy", "lru", "--k", "2", "--costs", str(c),
                 "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    # the unweighted run's misses per page (LRU ignores costs), priced here in exact integers:
    # page 6 misses 4 times, 4·10^30 (+ 43 for the other pages, below a double's resolution)
    per_page = simulate(load(ZIPF)[0], "lru", 2).page_misses.tolist()
    assert per_page[6] == 4
    assert row["cost"] == float(sum(m * w for m, w in zip(per_page, costs, strict=True)))


def test_times_beyond_the_documented_limit_are_refused(tmp_path, one_line):
    """A per-token overhead of 1e308 ms gave time_ms inf, an arrival at 1e308 s nan latencies:
    times are bounded at 1e9 s (paging.errors.TIME_MAX_S)."""
    sim = ["simulate", ROUTER, "--policy", "lru", "--k", "16", "--model", "mixtral-8x7b"]
    one_line(sim + ["--token-overhead-ms", "1e308"],
             "the per-token overhead must be at most 1e+12 ms (about 32 years), got 1e+308")
    arr = tmp_path / "huge.txt"
    arr.write_text("0\n1e308\n")
    serve = ["serve", ROUTER, "--policy", "lru", "--k", "16", "--model", "mixtral-8x7b",
             "--no-bound"]
    one_line(serve + ["--arrivals", arr],
             f"{arr}:2: an arrival time must be at most 1e+09 s (about 32 years), got 1e308")
    for opt, want in (("--step-overhead-ms", "--step-overhead-ms must be at most 1e+12 ms"),
                      ("--think", "--think must be at most 1e+09 s")):
        one_line(serve + ["--clients", "1", "--duration", "1", opt, "1e300"], want)
    one_line(serve + ["--rate", "1", "--duration", "1e300"], "--duration must be at most")


def _edited_model(tmp_path, name, edit):
    """A copy of the shipped 32 x 8 FlashMoE model with ``edit(arrays, meta)`` applied."""
    import numpy as np

    from paging.learned.model import MODEL_DIR

    with np.load(MODEL_DIR / "flashmoe_32x8.npz", allow_pickle=False) as z:
        d = {key: z[key] for key in z.files}
    meta = json.loads(str(d["meta"][()]))
    edit(d, meta)
    d["meta"] = np.array(json.dumps(meta))
    path = tmp_path / name
    np.savez(path, **d)
    return path


FLASH_TRACE = "zipf:n=8,layers=32,tokens=20,seed=0,topk=2"


def test_a_flashmoe_model_whose_scores_could_overflow_is_refused(tmp_path, one_line):
    """Finite weights scaled by 1e200 ran on nan scores (exit 0, evictions comparing nan):
    the bound on the activations from the weights' magnitudes refuses the file at load."""
    def scale(by):
        def edit(d, meta):
            for key in d:
                if key[0] in "Wb":
                    d[key] = d[key] * by
        return edit

    for by, shown in ((1e200, "beyond the largest double"), (1e100, "3.49e+301")):
        path = _edited_model(tmp_path, f"x{by:g}.npz", scale(by))
        one_line(["simulate", FLASH_TRACE, "--policy", f"flashmoe:model={path}", "--k", "16"],
                 f"{path}: the FlashMoE model's weights are too large", shown,
                 "expected at most 1e+300")
    ok = _edited_model(tmp_path, "x1e3.npz", scale(1e3))  # large but finite scores: runs
    assert main(["simulate", FLASH_TRACE, "--policy", f"flashmoe:model={ok}", "--k", "16"]) == 0


def test_a_flashmoe_model_layout_must_be_integers(tmp_path, one_line):
    """meta n_experts 8.7 was read as 8."""
    path = _edited_model(tmp_path, "m.npz", lambda d, meta: meta.update(n_experts=8.7))
    one_line(["simulate", FLASH_TRACE, "--policy", f"flashmoe:model={path}", "--k", "16"],
             f"{path}: the file is not a FlashMoE model file (meta n_experts must be an "
             "integer >= 1, got 8.7)")


MODEL = dict(name="x", n_layers=32, n_experts=8, top_k=2, d_model=4096, d_ff=14336,
             n_matrices=3, non_expert_params=1000)


@pytest.mark.parametrize("change,want", [
    (dict(d_model=10**30), "key 'd_model' must be a positive integer of at most 2^63 - 1, got "
     "1.000e30"),
    (dict(d_ff=10**400), "key 'd_ff' must be a positive integer of at most 2^63 - 1, got "
     "1.000e400"),
    (dict(top_k=9), "key 'top_k' is 9, more than the 8 experts of a layer (n_experts)"),
    (dict(d_model=10**9, d_ff=10**9), "the model's weights at bf16 would take "
     "1536000000000000002000 bytes"),
    (dict(n_experts=2**62), "a layout of 4611686018427387904 experts x 32 layers has more "
     "pages than int64 ids can name"),
])
@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_a_model_file_beyond_int64_is_refused(tmp_path, one_line, change, want, suffix):
    """d_model = 10**30 was an OverflowError traceback, 10**400 "integer division result too
    large for a float"; top_k above n_experts was accepted."""
    m = tmp_path / f"m{suffix}"
    d = {**MODEL, **change}
    m.write_text(json.dumps(d) if suffix == ".json" else
                 "".join(f"{k} = {json.dumps(v)}\n" for k, v in d.items()))
    # (a key's error names its line: all of a JSON file's keys are on its line 1)
    key = want.split("'")[1] if want.startswith("key '") else None
    at = "" if key is None else f"{1 if suffix == '.json' else list(d).index(key) + 1}:"
    one_line(["simulate", ROUTER, "--policy", "lru", "--k", "16", "--model", m],
             f"error: {m}:{at} {want}")


SWEEP = f'traces = ["{ZIPF}"]\npolicies = ["lru"]\n'
SERVE_SWEEP = (f'traces = ["{ROUTER}"]\npolicies = ["lru"]\nmodel = "mixtral-8x7b"\n'
               "k = [16]\n[serve]\nrates = [1]\nduration = 1\n")
BIG = "99999999999999999999999"


@pytest.mark.parametrize("spec,want", [
    (SWEEP + f"k = [{BIG}]\n", f":3: k: {BIG} is out of range; expected an integer of 64 bits"),
    (SWEEP + f"k = [2]\nseeds = [-{BIG}]\n", f":4: seeds: -{BIG} is out of range"),
    (SERVE_SWEEP + f"max_batch = [{BIG}]\n", f":8: max_batch: {BIG} is out of range"),
    (SERVE_SWEEP + f"max_tokens = {BIG}\n", f":8: serve.max_tokens: {BIG} is out of range"),
    (SERVE_SWEEP.replace("rates = [1]", f"clients = [{BIG}]"), f":6: clients: {BIG} is out"),
])
def test_a_sweep_integer_beyond_int64_is_refused_up_front(tmp_path, one_line, spec, want):
    """max_batch = [99999999999999999999] ran every cell, then crashed writing the Parquet table
    (OverflowError) or stored the value in a CSV; k beyond int64 was refused without the spec's
    name. Every integer of a spec is held to int64 up front, as the command line's options."""
    path = tmp_path / "s.toml"
    path.write_text(spec)
    for out in ("o.parquet", "o.csv"):
        one_line(["sweep", path, "--out", tmp_path / out], f"error: {path}{want}")
        assert not (tmp_path / out).exists()


@pytest.mark.parametrize("spec,want", [
    (SWEEP.replace('["lru"]', '["lru", "LRU"]') + "k = [2]\n",
     ":2: policies lists 'lru' and 'LRU', the same value once normalised"),
    (SWEEP + 'k = [2]\nprefetch = ["none", "None"]\n',
     ":4: prefetch lists 'none' and 'None'"),
    (SWEEP + 'k = [2]\nmiss = ["fetch", "FETCH"]\n', ":4: miss lists 'fetch' and 'FETCH'"),
    (SWEEP + 'k = [2]\nexpand = ["groups"]\nrouting = ["standard", "Standard"]\n',
     ":5: routing lists 'standard' and 'Standard'"),
    (SERVE_SWEEP.replace('["lru"]', '["lru", "Lru"]'), ":2: policies lists 'lru' and 'Lru'"),
    (SERVE_SWEEP.replace("k = [16]", 'k = [16]\nrouting = ["standard", "Standard"]'),
     ":5: routing lists 'standard' and 'Standard'"),
])
def test_a_sweep_axis_naming_one_value_twice_is_refused(tmp_path, one_line, spec, want):
    """policies = ["lru", "LRU"] said "2 cells" and wrote 1 row: values equal once normalised
    are refused, naming the spec file, for every list axis that normalises."""
    path = tmp_path / "s.toml"
    path.write_text(spec)
    one_line(["sweep", path, "--out", tmp_path / "o.csv"], f"error: {path}{want}")
    assert not (tmp_path / "o.csv").exists()
