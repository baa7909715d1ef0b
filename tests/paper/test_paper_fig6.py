"""Figures 6a and 6b (OPT-DIST / OPT on layered Zipf traces) on reduced sizes.

Golden numbers were computed once with these arguments. Every CSV row is also recomputed here
without the package: the Zipf pages are drawn from the seed by the documented recipe (written
out below, not paging.generators), OPT is the naive list-based Belady of tests/golden/naive.py,
and OPT-DIST is that Belady run on each layer's sub-sequence with the layer's share of the
cache (k // ℓ slots, one more for the first k mod ℓ layers; a layer with no slot misses every
request).
"""

from __future__ import annotations

import json

import naive  # noqa: E402
import numpy as np
import pytest

from experiments import common, fig6a, fig6b
from paging.generators import zipf

FIG6A_ARGS = {"n_values": (2, 3, 5), "l_values": (2, 4, 9), "tokens": 300, "seeds": (0, 1)}
FIG6B_ARGS = {"a_values": (0.0, 2.0, 6.0), "tokens": 200, "seeds": (0, 1)}

# (n, layers, seed) -> (opt, opt_dist); a=2, k=16, tokens=300
FIG6A_GOLDEN = {
    (2, 2, 0): (4, 4), (3, 4, 1): (12, 12), (5, 4, 0): (36, 43), (2, 9, 0): (77, 224),
    (5, 9, 1): (386, 680),
}
# (a, seed) -> (opt, opt_dist); n=8, layers=32, k=64, tokens=200
FIG6B_GOLDEN = {(0.0, 0): (2816, 3766), (2.0, 1): (1021, 1617), (6.0, 0): (76, 80)}


def _quiet(_msg):
    pass


@pytest.fixture(scope="module")
def fig6a_csv(tmp_path_factory):
    out = tmp_path_factory.mktemp("fig6a")
    return fig6a.compute(out, progress=_quiet, **FIG6A_ARGS)


@pytest.fixture(scope="module")
def fig6b_csv(tmp_path_factory):
    out = tmp_path_factory.mktemp("fig6b")
    return fig6b.compute(out, progress=_quiet, **FIG6B_ARGS)


def _zipf_pages(n, layers, tokens, a, seed):
    """The pages of ``zipf(n, layers, tokens, a=a, h=0, seed=seed, perm="random")`` from the
    recipe its docstring documents: from ``numpy.random.default_rng(seed)``, first one random
    permutation per layer (rank j is expert perm_z[j]), then one float64 uniform u per
    (token, layer), token-major; the expert is the first one whose cumulative weight
    (1/(rank+1)^a, summed in expert order) exceeds u times the total."""
    rng = np.random.default_rng(seed)
    perm = rng.permuted(np.tile(np.arange(n), (layers, 1)), axis=1)
    u = rng.random((tokens, layers))
    pages = []
    for t in range(tokens):
        for z in range(layers):
            weight = [0.0] * n
            for rank, expert in enumerate(perm[z].tolist()):
                weight[expert] = (rank + 1.0) ** -a
            total, cum, expert = sum(weight), 0.0, n - 1
            for e in range(n):
                cum += weight[e]
                if u[t, z] * total < cum:
                    expert = e
                    break
            pages.append(z * n + expert)
    return pages


def _opt_dist(pages, k, n, layers):
    """OPT-DIST: Belady per layer on its share of k (Angelopoulos et al., Sec. 5.3)."""
    misses = 0
    for z in range(layers):
        sub = [p for p in pages if p // n == z]
        share = k // layers + (1 if z < k % layers else 0)
        misses += naive.belady(sub, share) if share > 0 else len(sub)
    return misses


def _independent(n, layers, k, a, tokens, seed):
    pages = _zipf_pages(n, layers, tokens, a, seed)
    return naive.belady(pages, k), _opt_dist(pages, k, n, layers)


def test_zipf_pages_follow_the_documented_recipe():
    for n, layers, a, seed in ((2, 9, 2.0, 0), (5, 4, 2.0, 1), (8, 32, 0.0, 0), (8, 32, 6.0, 1)):
        trace = zipf(n=n, layers=layers, tokens=200, a=a, h=0.0, seed=seed, perm=fig6a.PERM)
        assert trace.pages.tolist() == _zipf_pages(n, layers, 200, a, seed)


def test_opt_dist_with_a_layer_without_a_slot():
    # k=3 over 4 layers: layers 0-2 get 1 slot, layer 3 none (every request of it misses)
    pages = [0, 2, 4, 6, 1, 2, 4, 7, 0, 3, 4, 6]  # n=2: layer z holds pages 2z, 2z+1
    assert _opt_dist(pages, 3, 2, 4) == 3 + 2 + 1 + 3


def test_fig6a_rows_match_an_independent_run(fig6a_csv):
    rows = common.read_csv(fig6a_csv)
    assert len(rows) == 3 * 3 * 2
    for r in rows:
        n, L, s = int(r["n"]), int(r["layers"]), int(r["seed"])
        opt, opt_dist = _independent(n, L, 16, 2.0, 300, s)
        assert (int(r["opt"]), int(r["opt_dist"])) == (opt, opt_dist), r
        assert int(r["requests"]) == 300 * L
        assert float(r["ratio"]) == pytest.approx(opt_dist / opt, abs=1e-6)
        assert r["ratio"] == f"{opt_dist / opt:.6f}"  # the fixed format


def test_fig6a_golden(fig6a_csv):
    rows = {(int(r["n"]), int(r["layers"]), int(r["seed"])): (int(r["opt"]), int(r["opt_dist"]))
            for r in common.read_csv(fig6a_csv)}
    for key, want in FIG6A_GOLDEN.items():
        assert rows[key] == want, key


def test_fig6a_everything_fits_gives_ratio_one(fig6a_csv):
    # Sec. 5.3: "for the values for which everything fits in the cache, the ratio is 1";
    # then both optima miss exactly once per distinct page requested.
    for r in common.read_csv(fig6a_csv):
        n, L = int(r["n"]), int(r["layers"])
        if n * L <= 16:
            assert r["opt"] == r["opt_dist"] and r["ratio"] == "1.000000"
        else:
            assert int(r["opt_dist"]) >= int(r["opt"])


def test_fig6b_rows_match_an_independent_run(fig6b_csv):
    rows = common.read_csv(fig6b_csv)
    assert len(rows) == 3 * 2
    for r in rows:
        opt, opt_dist = _independent(8, 32, 64, float(r["a"]), 200, int(r["seed"]))
        assert (int(r["opt"]), int(r["opt_dist"])) == (opt, opt_dist), r
        assert opt_dist >= opt


def test_fig6b_golden(fig6b_csv):
    rows = {(float(r["a"]), int(r["seed"])): (int(r["opt"]), int(r["opt_dist"]))
            for r in common.read_csv(fig6b_csv)}
    for key, want in FIG6B_GOLDEN.items():
        assert rows[key] == want, key


@pytest.mark.parametrize("mod, args", [(fig6a, FIG6A_ARGS), (fig6b, FIG6B_ARGS)])
def test_same_seed_gives_byte_identical_files(tmp_path, mod, args):
    a = mod.compute(tmp_path / "a", progress=_quiet, **args)
    b = mod.compute(tmp_path / "b", progress=_quiet, **args)
    assert a.read_bytes() == b.read_bytes()
    assert common.params_path(a).read_bytes() == common.params_path(b).read_bytes()


def test_parameters_and_seeds_are_recorded(fig6a_csv, fig6b_csv):
    pa = json.loads(common.params_path(fig6a_csv).read_text())
    assert (pa["a"], pa["k"], pa["tokens"], pa["seeds"]) == (2.0, 16, 300, [0, 1])
    assert pa["n_values"] == [2, 3, 5] and pa["l_values"] == [2, 4, 9]
    pb = json.loads(common.params_path(fig6b_csv).read_text())
    assert (pb["n"], pb["layers"], pb["k"], pb["seeds"]) == (8, 32, 64, [0, 1])


@pytest.mark.parametrize("mod", [fig6a, fig6b])
def test_quick_run_end_to_end(tmp_path, mod, capsys):
    csv_path = mod.compute(tmp_path, quick=True)
    assert "wrote" in capsys.readouterr().err  # progress on stderr
    files = mod.plot(csv_path, tmp_path)
    assert [f.suffix for f in files] == [".png", ".pdf"]
    assert all(f.stat().st_size > 1000 for f in files)
    assert files[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert files[1].read_bytes()[:5] == b"%PDF-"


def test_module_main(tmp_path):
    assert fig6b.main(["--quick", "--out", str(tmp_path)]) == 0
    assert {p.name for p in tmp_path.iterdir()} >= {"fig6b.csv", "fig6b.json", "fig6b.png",
                                                    "fig6b.pdf"}
