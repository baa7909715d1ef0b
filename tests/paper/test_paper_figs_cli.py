"""``paging figs`` and ``python -m experiments.run_all``: selection, output files, the skip
message without real traces, --trace with a user's file, and errors (exit 2, one line)."""

from __future__ import annotations

import pytest

from experiments import run_all
from paging.cli import main


def test_unknown_figure_is_one_error_line(capsys):
    assert main(["figs", "--only", "fig7"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: unknown figure 'fig7'; expected one of fig4, fig5, fig6a, fig6b, "
                   "coupon"]


def test_synthetic_figures_without_real_traces(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("PAGING_TRACES", raising=False)
    out = tmp_path / "figs"
    rc = main(["figs", "--quick", "--only", "fig4", "--only", "fig6b", "--out", str(out)])
    assert rc == 0
    assert sorted(p.name for p in out.iterdir()) == ["fig6b.csv", "fig6b.json", "fig6b.pdf",
                                                     "fig6b.png"]
    err = capsys.readouterr().err
    skip = [line for line in err.splitlines() if line.startswith("[fig4") and "skipped" in line]
    assert len(skip) == 1 and "PAGING_TRACES is not set" in skip[0]
    assert "a=10" in err  # one progress line per step


def test_user_trace_runs_the_real_trace_figures(tmp_path, monkeypatch):
    monkeypatch.delenv("PAGING_TRACES", raising=False)
    spec = "uniform:n=3,layers=2,tokens=20,seed=5,topk=2"
    assert main(["figs", "--quick", "--only", "fig4", "--only", "fig5", "--trace", spec,
                 "--out", str(tmp_path)]) == 0
    names = {p.name for p in tmp_path.iterdir()}
    for fig in ("fig4", "fig5"):
        assert {f"{fig}.csv", f"{fig}.json", f"{fig}.png", f"{fig}.pdf"} <= names


def test_missing_trace_file_is_an_error(tmp_path, capsys):
    missing = tmp_path / "nope.jsonl"
    rc = main(["figs", "--only", "fig5", "--trace", str(missing), "--out", str(tmp_path / "o")])
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {missing}") and "no such" in err[0]


def test_run_all_main_matches_the_command(tmp_path, monkeypatch):
    monkeypatch.delenv("PAGING_TRACES", raising=False)
    assert run_all.main(["--quick", "--only", "fig6a", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "fig6a.png").stat().st_size > 1000
    assert run_all.main(["--only", "nothing"]) == 2


@pytest.mark.parametrize("name", ["fig4", "fig5", "fig6a", "fig6b"])
def test_every_figure_is_registered(name):
    assert name in run_all.available()


def test_coupon_figure_is_run_through_its_own_interface(tmp_path, monkeypatch):
    """experiments/fig_coupon.py (another module) offers compute(out_dir) -> csv and
    plot(csv, out_dir); run_all calls exactly that, without --quick or --trace."""
    import sys
    import types

    calls = []
    fake = types.ModuleType("experiments.fig_coupon")

    def compute(out_dir):
        calls.append(("compute", str(out_dir)))
        path = tmp_path / "coupon.csv"
        path.write_text("n,value\n")
        return path

    def plot(csv_path, out_dir):
        calls.append(("plot", csv_path.name))
        return [tmp_path / "coupon.png"]

    fake.compute, fake.plot, fake.main = compute, plot, lambda out_dir: 0
    monkeypatch.setitem(sys.modules, "experiments.fig_coupon", fake)
    written = run_all.run_figures(only=["coupon"], out_dir=str(tmp_path), quick=True)
    assert calls == [("compute", str(tmp_path)), ("plot", "coupon.csv")]
    assert [p.name for p in written["coupon"]] == ["coupon.csv", "coupon.png"]
