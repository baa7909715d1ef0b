"""The notebooks (notebooks/*.ipynb): stored without outputs, each executes in the venv's kernel,
and its numbers agree with the library run here in the test process."""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from pathlib import Path

import nbformat
import numpy as np
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

from paging import simulate
from paging.generators import zipf

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "new_policy.ipynb"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _run(path: Path = NOTEBOOK) -> dict:
    """Execute the notebook; the JSON summary its last cell prints."""
    nb = nbformat.read(path, as_version=4)
    # the kernelspec "python3" must start *this* interpreter: jupyter_client replaces a bare
    # "python" argv[0] by sys.executable, and the spec is found under sys.prefix
    spec = KernelSpecManager().get_kernel_spec("python3")
    assert spec.argv[0] in ("python", "python3", sys.executable), spec.argv
    NotebookClient(nb, kernel_name="python3", timeout=120,
                   resources={"metadata": {"path": str(ROOT)}}).execute()
    last = nb.cells[-1]
    text = "".join(o.get("text", "") for o in last.outputs if o.output_type == "stream")
    return json.loads(text)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.outputs == [] and c.execution_count is None for c in code)


def test_every_notebook_is_tested_and_in_the_docs():
    names = {p.stem for p in NOTEBOOKS}
    assert {"new_policy", "cost_model", "specmd", "predictions", "routing"} <= names
    tested = {n for n in names if f"_run(ROOT / \"notebooks\" / \"{n}.ipynb\")" in
              Path(__file__).read_text()} | {"new_policy"}
    assert tested == names
    toc = (ROOT / "docs" / "site" / "notebooks.md").read_text()
    for n in names:
        assert f"nb/{n}" in toc.split(), n
        assert (ROOT / "docs" / "site" / "nb" / f"{n}.ipynb").resolve() == (
            ROOT / "notebooks" / f"{n}.ipynb").resolve()


def test_notebook_runs_and_its_numbers_hold():
    s = _run()
    assert Path(s["python"]).resolve() == Path(sys.executable).resolve()
    # OPT (Belady) is below the new policy and the others at every cache size
    trace = zipf(n=8, layers=8, tokens=600, a=1.0, seed=0)
    for k, row in s["synthetic"].items():
        assert row["belady"] <= min(row["lru"], row["llru"], row["layer-lfu"])
        # recomputed here, in another process: same numbers
        assert row["belady"] == simulate(trace, "belady", int(k)).misses
        assert row["lru"] == simulate(trace, "lru", int(k)).misses
    if s["real"] is not None:  # PAGING_TRACES was set
        m = s["real"]["misses"]
        assert m["belady"] <= min(m["lru"], m["llru"], m["layer-lfu"])
    rows = {r["adversary"]: r for r in s["adversary"]}
    assert set(rows) == {"theorem1", "theorem2", "theorem3", "theorem4"}
    for r in rows.values():
        assert r["opt"] <= r["online"]
    t1, t2 = rows["theorem1"], rows["theorem2"]
    assert t1["opt"] == 5  # n + ℓ − 1 distinct pages, OPT constant
    assert t1["ratio"] >= t1["bound"]
    g = t2["k"] - 3 + 1  # k − ℓ + 1 with ℓ = 3
    assert t2["online"] >= g * t2["opt"] - t2["additive_constant"]


def test_cost_model_notebook():
    from paging.cost.setup import CostSetup
    from paging.cost.timeline import timeline
    from paging.trace import from_routing

    s = _run(ROOT / "notebooks" / "cost_model.ipynb")
    w = s["weighted"]
    assert s["requests"] == (24 + 8) * 32 * 2 and s["budget"] == 4_350_000_000
    # 43 int4 experts < 64 requests of a forward pass: LRU misses everything, Belady least
    assert w["lru"]["misses"] == s["requests"]
    assert w["belady"]["misses"] < w["llru"]["misses"] < w["lru"]["misses"]
    for row in w.values():
        assert row["ttft_ms"] > 0 and row["tpot_ms"] > 0
    # recomputed here: the same trace, Belady's run and its timeline
    cm = CostSetup.from_names("mixtral-8x7b", "int4", "link-5gbps")
    rng = np.random.default_rng(0)
    pop = rng.dirichlet(np.ones(8) * 0.5, size=32)
    ex = np.stack([np.stack([rng.choice(8, 2, replace=False, p=pop[z]) for z in range(32)])
                   for _ in range(32)])
    tr = from_routing(ex, cm.model.layout, "groups", None, "t",
                      {"phase_bounds": {"prefill": [0, 24 * 64], "decode": [24 * 64, 32 * 64]}})
    costs, sizes = cm.weights(tr)
    r = simulate(tr, "belady", budget=s["budget"], costs=costs, sizes=sizes, record="hits")
    tm = timeline(tr, r.hit_mask, model=cm.model, precision=cm.precision, hardware=cm.hardware,
                  fetch_ms=costs, sizes=sizes)
    assert (r.misses, r.cost, tm.ttft_ms, tm.tpot_ms) == (
        w["belady"]["misses"], w["belady"]["cost_ms"], w["belady"]["ttft_ms"],
        w["belady"]["tpot_ms"])


def test_specmd_notebook():
    s = _run(ROOT / "notebooks" / "specmd.ipynb")
    pf, miss, ev = s["prefetch"], s["miss"], s["eviction"]
    n = s["requests"]
    assert n == 150 * 8 * 2
    # a perfect oracle leaves only the cold misses of the first group (K = 2)
    assert pf["oracle:precision=1,recall=1"]["misses"] == 2
    assert pf["oracle:precision=1,recall=1"]["prefetch_precision"] == 1.0
    assert pf["oracle:precision=0.5,recall=0.5,seed=3"]["prefetch_precision"] == 0.5
    # the prose's count is the run's (it said previous-token inserted nothing: it inserts 254)
    src = nbformat.read(ROOT / "notebooks" / "specmd.ipynb", as_version=4)
    prose = next(c.source for c in src.cells if "`previous-token` guesses" in c.source)
    assert f"{pf['previous-token']['prefetches']} prefetches here" in " ".join(prose.split())
    assert pf["transition, topk:overfetch=2"]["prefetch_recall"] > pf[
        "transition (trained on another sequence)"]["prefetch_recall"]
    for row in miss.values():  # requests = hits + misses + dropped + substituted
        assert row["hits"] + row["misses"] + (row["dropped"] or 0) + (
            row["substituted"] or 0) == n
    assert ev["lhu"] == ev["lfu"]  # no precision cascade: LHU counts like LFU
    assert ev["belady"] == min(ev.values())
    assert pf["none"]["misses"] == ev["least-stale"]
    assert miss["fetch"]["misses"] == ev["lru"]


def test_predictions_notebook():
    from paging.generators import zipf

    s = _run(ROOT / "notebooks" / "predictions.ipynb")
    trace = zipf(n=8, layers=8, tokens=400, a=1.0, seed=2)
    assert s["opt"] == simulate(trace, "belady", s["k"]).misses
    bo, pm = s["ratios"]["blind-oracle"], s["ratios"]["predictive-marker"]
    assert s["etas"][0] == 0 and bo[0] == 1.0  # perfect predictions: BlindOracle = OPT
    assert pm[0] <= 2.0  # PredictiveMarker ≤ 2·OPT at η = 0 (the ledger's row)
    assert bo[-1] > s["online"]["lru"]  # large η: worse than LRU
    eta = s["etas"][3]
    m = simulate(trace, f"predictive-marker:oracle:eta={eta},seed=1", s["k"], seed=1).misses
    assert m / s["opt"] == pm[3]


def test_routing_notebook_runs_and_its_numbers_hold():
    s = _run(ROOT / "notebooks" / "routing.ipynb")
    from paging.generators import router

    trace = router(8, 8, 200, k=2, seed=0, expand="groups")
    k = s["k"]
    assert k == trace.layout.n_pages // 2
    rows = s["rows"]
    assert rows["standard"]["misses"] == simulate(trace, "lru", k).misses
    assert rows["standard"]["retained_mass"] == 1.0
    assert s["cache_prior"]["0"] == rows["standard"]["misses"]  # λ = 0 is standard
    assert s["cache_prior"]["0.3"] == rows["cache-prior:lambda=0.3"]["misses"]
    for spec, row in rows.items():  # recomputed here, in another process
        assert row["misses"] == simulate(trace, "lru", k, routing=spec).misses
        if spec != "standard":
            assert row["misses"] < rows["standard"]["misses"] and row["retained_mass"] < 1
    assert s["belady"] == simulate(trace, "belady", k).misses


def test_adversary_notebook():
    from adversaries.search import search
    from paging.policies.robust import Robust

    s = _run(ROOT / "notebooks" / "adversary.ipynb")
    syn = s["synthetic"]
    assert syn["belady"] <= min(syn.values())
    # the combiner's guarantee on the synthetic trace: <= 2·min(policy, LRU) (margin 0)
    assert syn["robust"] <= 2 * min(syn["freq-ahead"], syn["lru"])
    if s["real"] is not None:  # PAGING_TRACES was set
        m = s["real"]["misses"]
        assert m["belady"] <= min(m.values())
        assert m["robust"] <= 2 * min(m["freq-ahead"], m["lru"])
    w, rw = s["worst"], s["robust_on_witness"]
    # frequency-first is not competitive: the search finds a ratio far above k = 3, where LRU
    # pays OPT; the combiner switches and stays within its bound
    assert Fraction(w["ratio"]) == Fraction(w["online"], w["opt"]) > 3 and w["lru"] == w["opt"]
    assert rw["misses"] <= rw["bound"] == 2 * min(w["online"], w["lru"])
    assert rw["switches"] >= 1
    assert Fraction(s["robust_worst"]) < Fraction(w["ratio"])
    # recomputed here: the notebook's policy and search (same seed) give the same witness
    from paging.policies import PriorityPolicy

    class FreqAhead(PriorityPolicy):
        name = "freq-ahead"

        def evict_key(self, t, page):
            L = self.ctx.layout.n_layers
            ahead = (self.ctx.layout.layer_of(page) - int(self.ctx.steps[t])) % L
            return (-self.count[page], ahead, -self.last[page])

    res = search(FreqAhead(), n=2, layers=2, k=3, length=96, budget=1500, seed=0, show=False)
    assert (str(res.ratio), res.online_misses, res.opt_misses) == (w["ratio"], w["online"],
                                                                   w["opt"])
    assert simulate(res.trace, Robust(FreqAhead, "lru"), 3).misses == rw["misses"]


def test_serving_notebook_answers_the_question():
    s = _run(ROOT / "notebooks" / "serving.ipynb")
    runs, target = s["runs"], s["target_tpot_ms"]
    # the answer is the smallest budget whose p99 TPOT meets the target, per policy
    for policy, budget in s["answer"].items():
        ok = sorted(float(key.split("@")[1]) for key, r in runs.items()
                    if key.startswith(policy + "@") and r["p99_tpot_ms"] <= target)
        assert (budget is None) == (not ok)
        if ok:
            assert budget == int(ok[0] * 1e9)
    for r in runs.values():
        assert r["opt_misses"] <= r["misses"] and r["completed"] > 0
    # recomputed here: one of its runs, same seed, same numbers
    import tempfile

    from paging.cost import budget_bytes
    from paging.io import load
    from paging.run import RunSpec
    from paging.serve import Arrivals, ServeSpec, serve

    src = nbformat.read(ROOT / "notebooks" / "serving.ipynb", as_version=4)
    text = next(c.source for c in src.cells if "MODEL.write_text" in c.source)
    body = text.split("'''")[1]
    model = Path(tempfile.mkdtemp()) / "my-moe.toml"
    model.write_text(body)
    traces = load("router:n=8,layers=16,tokens=4000,k=2,seed=0", expand="groups")
    res = serve(RunSpec("llru", budget=budget_bytes(1.0), model=str(model), precision="int4",
                        hardware="pcie4"),
                ServeSpec(Arrivals(rate=3.0, duration=15.0), max_batch=8, max_tokens=256,
                          lengths=((16, 64), (32, 96)), seed=0), traces)
    got = runs["llru@1.0"]
    assert (res.summary["misses"], res.summary["p99_tpot_ms"]) == (got["misses"],
                                                                   got["p99_tpot_ms"])
