"""``paging figs`` and ``python -m experiments.run_all``: selection, output files, the skip
message without real traces, --trace with a user's file, and errors (exit 2, one line)."""

from __future__ import annotations

import inspect
import math

import pytest

from experiments import common, fig_coupon, run_all
from experiments.registry import FIGURES
from paging.cli import main


def test_unknown_figure_is_one_error_line(capsys):
    assert main(["figs", "--only", "fig7"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: unknown figure 'fig7'; expected one of " + ", ".join(FIGURES)]
    assert list(FIGURES)[:5] == ["fig4", "fig5", "fig6a", "fig6b", "coupon"]


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


def test_malformed_trace_is_refused_before_any_figure_is_written(tmp_path, capsys):
    """A malformed --trace line is reported before the first figure writes a file: coupon (which
    does not read traces) comes first here and would otherwise be left behind."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"token": 0, "layer": 0, "experts": [1, 2]}\n{"token": 1, "layer": 0,\n',
                   encoding="utf-8")
    out = tmp_path / "o"
    rc = main(["figs", "--quick", "--only", "coupon", "--only", "fig5", "--trace", str(bad),
               "--out", str(out)])
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"error: {bad}:2") and len(
        [line for line in err if line.startswith("error")]) == 1
    assert not out.exists() or list(out.iterdir()) == []


def test_a_user_trace_a_figure_cannot_use_is_skipped_there_not_fatal(tmp_path, capsys):
    """A --trace that some figure cannot use (no router scores for the routing-flexible OPT,
    no model preset of its layout, another top-K than the preset's, not Mixtral's layout for
    the serving figure) is skipped there with a line saying why; the run went on to fail
    after the earlier figures were written (a review: 8 figures, then "--routing-flex needs
    router scores", a flag the user never passed)."""
    out = tmp_path / "o"
    ids_only = "uniform:n=3,layers=2,tokens=20,seed=5,topk=2"  # (no scores, no preset)
    assert main(["figs", "--quick", "--only", "routing", "--only", "zipmoe", "--only",
                 "serving", "--trace", ids_only, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "no router scores, so no routing-flexible OPT line" in err
    assert f"{ids_only}: no model preset has 2 layers x 3 experts, panel skipped" in err
    assert "skipped 1 sequence(s) not of mixtral-8x7b's layout" in err
    assert "skipped zipmoe, serving" in err
    assert {p.name for p in out.iterdir()} >= {"fig_routing.csv", "fig_routing.png"}
    top1 = "router:n=8,layers=32,tokens=12,k=1,seed=0"  # (Mixtral's layout, top-1)
    assert main(["figs", "--quick", "--only", "zipmoe", "--trace", top1, "--out",
                 str(tmp_path / "z")]) == 0
    assert "top-1, mixtral-8x7b routes top-2; panel skipped" in capsys.readouterr().err


def test_a_source_read_for_several_figures_is_parsed_once(tmp_path, monkeypatch):
    """Inside :func:`common.preloaded` each (source, expansion) is read once, and the reading is
    dropped when the block ends."""
    import paging.io

    calls = []
    real_load = paging.io.load

    def counting(source, **kw):
        calls.append((source, kw.get("expand")))
        return real_load(source, **kw)

    monkeypatch.setattr(paging.io, "load", counting)
    spec = "uniform:n=3,layers=2,tokens=5,seed=1,topk=2"
    with common.preloaded([spec]):
        first = common.load_sequences(spec)
        second = common.load_sequences(spec)
        groups = common.load_sequences(spec, expand="groups")
        common.load_sequences(spec, expand="groups")
    assert calls == [(spec, "rounds"), (spec, "groups")]
    assert first == second and first is not second and len(groups) == 1
    common.load_sequences(spec)
    assert calls[-1] == (spec, "rounds") and len(calls) == 3


def test_run_all_main_matches_the_command(tmp_path, monkeypatch):
    monkeypatch.delenv("PAGING_TRACES", raising=False)
    assert run_all.main(["--quick", "--only", "fig6a", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "fig6a.png").stat().st_size > 1000
    assert run_all.main(["--only", "nothing"]) == 2


def test_the_registry_lists_every_figure_once():
    assert list(FIGURES) == ["fig4", "fig5", "fig6a", "fig6b", "coupon", "cost", "zipmoe",
                             "predictions", "routing", "learned", "specmd", "serving"]
    mods = run_all.modules()
    assert len({m.NAME for m in mods.values()}) == len(FIGURES)  # distinct file stems
    assert [name for name, m in mods.items() if m.REAL_TRACES] == ["fig4", "fig5", "cost",
                                                                    "zipmoe", "predictions",
                                                                    "routing", "learned", "specmd",
                                                                    "serving"]


@pytest.mark.parametrize("name", list(FIGURES))
def test_every_figure_is_registered(name):
    (mod,) = run_all.modules([name]).values()
    assert mod.__name__ == FIGURES[name]
    assert isinstance(mod.REAL_TRACES, bool)
    params = inspect.signature(mod.compute).parameters
    assert "quick" in params and ("traces" in params) == mod.REAL_TRACES
    assert callable(mod.plot) and callable(mod.main)


def test_coupon_figure_end_to_end(tmp_path, monkeypatch, capsys):
    """``paging figs --only coupon --quick``: the real module, its CSV checked against Theorem 5
    computed here (the closed form E[T(N,1)] = N·H_N and E[T] >= max(N·H_N, log(C)/6))."""
    monkeypatch.delenv("PAGING_TRACES", raising=False)
    out = tmp_path / "figs"
    assert main(["figs", "--only", "coupon", "--quick", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["fig_coupon.csv", "fig_coupon.json",
                                                     "fig_coupon.pdf", "fig_coupon.png"]
    assert (out / "fig_coupon.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "fig_coupon.pdf").read_bytes()[:5] == b"%PDF-"
    rows = common.read_csv(out / "fig_coupon.csv")
    quick = fig_coupon.QUICK
    assert [(int(r["n"]), int(r["log2_collectors"])) for r in rows] == \
        [(n, e) for n in quick["n_values"] for e in quick["log2_c"]]
    for r in rows:
        n, c = int(r["n"]), int(r["collectors"])
        n_h_n = n * sum(1 / i for i in range(1, n + 1))
        bound = max(n_h_n, math.log(c) / 6)
        assert float(r["bound"]) == pytest.approx(bound, abs=1e-6)
        assert float(r["expected"]) >= bound - 1e-6
        if c == 1:  # one collector: the classic coupon collector, N·H_N exactly
            assert float(r["expected"]) == pytest.approx(n_h_n, abs=1e-6)
    assert "[figs" in capsys.readouterr().err


def test_coupon_script_main(tmp_path):
    """``python -m experiments.fig_coupon --quick --out DIR``: the same files, no --trace."""
    assert fig_coupon.main(["--quick", "--out", str(tmp_path)]) == 0
    assert {p.name for p in tmp_path.iterdir()} == {"fig_coupon.csv", "fig_coupon.json",
                                                    "fig_coupon.png", "fig_coupon.pdf"}
    with pytest.raises(SystemExit):
        fig_coupon.main(["--trace", "x.jsonl"])
