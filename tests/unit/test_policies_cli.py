"""``paging policies [--json]``: one record per registered name, properties read from the
policies themselves."""

from __future__ import annotations

import json

from paging.cli import main
from paging.fast import has_kernel
from paging.policies import MODEL_POLICIES, POLICY_NAMES, make_policy

KEYS = {"name", "online", "clairvoyant", "randomized", "needs_scores", "needs_model",
        "needs_predictor", "has_kernel", "weighted", "dist", "description", "reference"}


def _records(capsys):
    assert main(["policies", "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    return json.loads(out)


def test_json_lists_every_registered_policy_with_its_properties(capsys):
    recs = _records(capsys)
    assert [r["name"] for r in recs] == list(POLICY_NAMES) + list(MODEL_POLICIES)
    by = {r["name"]: r for r in recs}
    for r in recs:
        assert set(r) == KEYS
        pol = make_policy(r["name"])
        assert r["clairvoyant"] == pol.clairvoyant and r["online"] == (not pol.clairvoyant)
        assert r["randomized"] == pol.randomized and r["has_kernel"] == has_kernel(pol)
        assert r["dist"] == r["name"].endswith("-dist")
        assert r["needs_scores"] == bool(pol.needs_scores)
        assert r["needs_model"] == (r["name"] == "flashmoe")
        assert r["description"] and r["reference"]
    assert (by["belady"]["clairvoyant"], by["belady-dist"]["clairvoyant"]) == (True, True)
    assert by["marking"]["randomized"] and by["lecar"]["randomized"]
    assert not by["arc"]["randomized"] and by["arc"]["has_kernel"]
    assert by["lecar"]["has_kernel"] and by["blind-oracle"]["has_kernel"]
    assert by["lru"]["has_kernel"] and by["lru-dist"]["has_kernel"]
    # Score-Based reads gate scores (SpecMD App. B); only flashmoe needs a model
    assert [n for n, r in by.items() if r["needs_scores"]] == ["score-based", "score-based-dist"]
    assert [n for n, r in by.items() if r["weighted"] and not r["dist"]] == \
        ["greedy-dual", "landlord", "gdsf", "layered-landlord"]
    assert [n for n, r in by.items() if r["needs_predictor"] and not r["dist"]] == \
        ["blind-oracle", "predictive-marker", "lmarker", "robust-blind-oracle"]
    # the default predictor (frequency) is online: the registered names are online policies
    assert all(by[n]["online"] for n in ("blind-oracle", "lmarker-dist"))
    assert by["marking"]["description"] == "Randomized Marking (Fiat et al. 1991)."
    assert by["lru-dist"]["description"].startswith("per-layer (DIST) variant: Least Recently")


def test_needs_flags_are_read_from_class_attributes(capsys):
    from paging.commands.policies import describe
    from paging.policies import LRU, register

    class ScoreLRU(LRU):
        """Score-aware LRU for this test."""

        name = "test-score-lru"
        needs_scores = True
        needs_model = True

    register("test-score-lru", ScoreLRU)
    try:
        rec = describe("test-score-lru")
        assert rec["needs_scores"] and rec["needs_model"] and not rec["has_kernel"]
        assert describe("test-score-lru-dist")["needs_model"]
    finally:
        import paging.policies as P

        del P.REGISTRY["test-score-lru"], P.REGISTRY["test-score-lru-dist"]
        P.POLICY_NAMES = tuple(P.REGISTRY)


def test_table(capsys):
    assert main(["policies"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("policy")
    assert len(lines) == len(POLICY_NAMES) + len(MODEL_POLICIES) + 1
    arc = next(line for line in lines if line.startswith("arc "))
    assert "[Megiddo & Modha, FAST 2003]" in arc


def test_a_period_inside_parentheses_does_not_end_the_description():
    """Score-Based's docstring quotes SpecMD with "...": the description stopped there, with
    its parenthesis and quotation left open."""
    from paging.commands.policies import _first_sentence, describe

    assert _first_sentence('A (see "x ... y"). B.') == 'A (see "x ... y").'
    d = describe("score-based")["description"]
    assert d.endswith('accumulated activation scores").') and d.count("(") == d.count(")")
