"""notebooks/new_policy.ipynb: stored without outputs, executes in the venv's kernel, and its
numbers agree with the library run here in the test process."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

from paging import simulate
from paging.generators import zipf

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "new_policy.ipynb"


def _run(path: Path = NOTEBOOK) -> dict:
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


def test_notebook_is_stored_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.outputs == [] and c.execution_count is None for c in code)


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


ROUTING = ROOT / "notebooks" / "routing.ipynb"


def test_routing_notebook_runs_and_its_numbers_hold():
    nb = nbformat.read(ROUTING, as_version=4)
    assert all(c.outputs == [] for c in nb.cells if c.cell_type == "code")
    s = _run(ROUTING)
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
