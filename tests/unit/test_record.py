"""``paging record``: routing recorded from tiny randomly initialised transformers MoE models.

The recorded file is checked against the model itself by an independent route (a forward pass
over the whole generated sequence *without* the KV cache and without hooks, asking the model
for ``output_router_logits``), against the family's top-K rule recomputed in numpy from the
recorded logits, and by loading and simulating it (verified). Bad input: exit 2, one line.

The torch tests need the optional ``record`` extra; ``make test-record`` (a CI step of its own)
installs it and runs this file, the bad-input tests without torch run everywhere.
"""

from __future__ import annotations

import importlib.util
import json
import sys

import numpy as np
import pytest

from paging.cli import main

HAS_EXTRA = all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers"))
needs_extra = pytest.mark.skipif(not HAS_EXTRA, reason="the record extra (torch, "
                                 "transformers) is not installed; `make test-record` runs these")
FAMILIES = ("mixtral", "olmoe", "qwen2-moe", "granitemoe")
PROMPTS = ["abcd", "hello world"]  # 4 and 11 byte tokens


def prompts_file(tmp_path, lines=PROMPTS, name="prompts.txt"):
    f = tmp_path / name
    f.write_text("\n".join(lines) + "\n")
    return f


def records(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def full_pass_router_logits(model, ids: list[int], new_tokens: int):
    """Greedy decoding re-done without the KV cache or hooks: the router logits of every
    position of prompt + generated tokens, per MoE layer, from ``output_router_logits``."""
    import torch

    seq = list(ids)
    for _ in range(new_tokens - 1):
        with torch.no_grad():
            out = model(input_ids=torch.tensor([seq]), use_cache=False)
        seq.append(int(out.logits[0, -1].argmax()))
    with torch.no_grad():
        out = model(input_ids=torch.tensor([seq]), use_cache=False, output_router_logits=True)
    return [x.float().numpy() for x in out.router_logits]


def topk_rule(family: str, logits: np.ndarray, k: int, norm: bool):
    """The family's routing rule, in numpy: (experts, weights) per row."""
    lg = logits.astype(np.float64)
    if family == "granitemoe":  # top-K of the logits, softmax over those K
        idx = np.argsort(-lg, axis=1, kind="stable")[:, :k]
        top = np.take_along_axis(lg, idx, 1)
        w = np.exp(top - top.max(1, keepdims=True))
        return idx, w / w.sum(1, keepdims=True)
    p = np.exp(lg - lg.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    idx = np.argsort(-p, axis=1, kind="stable")[:, :k]
    w = np.take_along_axis(p, idx, 1)
    return idx, (w / w.sum(1, keepdims=True) if norm else w)


@needs_extra
@pytest.mark.parametrize("family", FAMILIES)
def test_recording_matches_the_model(tmp_path, family):
    from paging.io import load
    from paging.record import tiny_model
    from paging.simulate import simulate
    from paging.verify import verify

    out = tmp_path / "r.jsonl"
    assert main(["record", "--tiny", f"{family}:layers=2,experts=4,topk=2", "--prompts",
                 str(prompts_file(tmp_path)), "--max-new-tokens", "3", "--seed", "7",
                 "--out", str(out), "--json"]) == 0
    recs = records(out)
    # per prompt: P prefill positions + 2 decode passes (3 new tokens), each x 2 MoE layers
    assert len(recs) == (4 + 2 + 11 + 2) * 2
    assert [r["phase"] for r in recs[:10]] == ["prefill"] * 8 + ["decode"] * 2
    # file order = execution order: prefill layer-major, then decode steps walking the layers
    assert [(r["layer"], r["token_pos"]) for r in recs[:12]] == (
        [(0, p) for p in range(4)] + [(1, p) for p in range(4)] + [(0, 4), (1, 4), (0, 5), (1, 5)])
    model = tiny_model(f"{family}:layers=2,experts=4,topk=2", seed=7)
    norm = family == "mixtral" or bool(getattr(model.config, "norm_topk_prob", False))
    for seq, text in enumerate(PROMPTS):
        full = full_pass_router_logits(model, list(text.encode()), 3)
        mine = [r for r in recs if r["problem_id"] == seq]
        for z in range(2):
            rows = sorted((r for r in mine if r["layer"] == z), key=lambda r: r["token_pos"])
            got = np.array([r["logits"] for r in rows])
            # the cached, hooked run and the uncached full pass see the same router logits
            np.testing.assert_allclose(got, full[z], rtol=0, atol=1e-5)
            idx, w = topk_rule(family, got, 2, norm)
            assert [r["experts"] for r in rows] == idx.tolist()
            np.testing.assert_allclose([r["gating_probs"] for r in rows], w, atol=1e-6)
    # the recorded file loads (raw prefill+decode layout) and simulates, verified
    traces = load(out)
    assert [(t.meta["phases"]["prefill"]["tokens"], t.meta["phases"]["decode"]["tokens"])
            for t in traces] == [(4, 2), (11, 2)]
    assert [t.n_requests for t in traces] == [6 * 2 * 2, 13 * 2 * 2]  # tokens x layers x K
    for t in traces:
        r = simulate(t, "lru", 3, record=True)
        verify(t, r)
        # k = 8 holds every page: misses = distinct pages requested
        pages = {z * 4 + e for rec in recs if rec["problem_id"] == int(t.name[-1])
                 for z, e in ((rec["layer"], x) for x in rec["experts"])}
        assert simulate(t, "lru", 8).misses == len(pages)


@needs_extra
def test_same_seed_same_file_and_cli_round_trip(tmp_path, capsys):
    p = prompts_file(tmp_path)
    args = ["record", "--tiny", "olmoe", "--prompts", str(p), "--max-new-tokens", "4"]
    for name, seed in (("a", "1"), ("b", "1"), ("c", "2")):
        assert main(args + ["--seed", seed, "--out", str(tmp_path / f"{name}.jsonl")]) == 0
    a, b, c = ((tmp_path / f"{n}.jsonl").read_bytes() for n in "abc")
    assert a == b and a != c
    capsys.readouterr()
    assert main(["simulate", str(tmp_path / "a.jsonl"), "--policy", "lru", "--policy",
                 "llru", "--k", "4", "--json", "--n-experts", "4", "--layers", "2"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["trace"] for r in rows] == ["a.jsonl#problem_id=0"] * 2 + ["a.jsonl#problem_id=1"] * 2
    assert [r["requests"] for r in rows] == [(4 + 3) * 4] * 2 + [(11 + 3) * 4] * 2
    assert main(["trace", "info", str(tmp_path / "a.jsonl"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)


@needs_extra
def test_dense_layers_are_skipped_and_local_directory_loads(tmp_path):
    import torch
    import transformers

    from paging.record import record_routing, routers

    cfg = transformers.Qwen2MoeConfig(
        hidden_size=16, intermediate_size=32, moe_intermediate_size=16,
        shared_expert_intermediate_size=16, num_hidden_layers=3, num_attention_heads=4,
        num_key_value_heads=2, vocab_size=256, num_experts=3, num_experts_per_tok=1,
        mlp_only_layers=[1], eos_token_id=None, bos_token_id=None, pad_token_id=0)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
    assert len(routers(model)) == 2  # decoder layer 1 is dense
    recs = list(record_routing(model, [[5, 6, 7]], 2, "d"))
    assert [(r["layer"], r["token_pos"], r["phase"]) for r in recs] == [
        (0, 0, "prefill"), (0, 1, "prefill"), (0, 2, "prefill"), (1, 0, "prefill"),
        (1, 1, "prefill"), (1, 2, "prefill"), (0, 3, "decode"), (1, 3, "decode")]
    assert all(len(r["logits"]) == 3 and len(r["experts"]) == 1 for r in recs)
    # the same model saved to a directory and recorded through MODEL (no tokenizer: byte ids)
    model.save_pretrained(tmp_path / "m")
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"input_ids": [5, 6, 7]}\n')
    out = tmp_path / "r.jsonl"
    assert main(["record", str(tmp_path / "m"), "--prompts", str(prompts),
                 "--max-new-tokens", "2", "--out", str(out)]) == 0
    got = records(out)
    assert [(r["layer"], r["token_pos"], r["experts"]) for r in got] == [
        (r["layer"], r["token_pos"], r["experts"]) for r in recs]
    np.testing.assert_allclose([r["logits"] for r in got], [r["logits"] for r in recs],
                               atol=1e-6)


def one_error(capsys, argv, *needles):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for n in needles:
        assert n in err, err
    return err


@needs_extra
def test_bad_input_needs_the_extra(tmp_path, capsys):
    p = prompts_file(tmp_path)
    out = tmp_path / "o.jsonl"
    base = ["--prompts", str(p), "--out", str(out)]
    one_error(capsys, ["record", str(tmp_path / "nope")] + base, "no such model directory",
              str(tmp_path / "nope"))
    (tmp_path / "llama").mkdir()
    (tmp_path / "llama" / "config.json").write_text(json.dumps({"model_type": "llama"}))
    one_error(capsys, ["record", str(tmp_path / "llama")] + base,
              "unsupported architecture 'llama'", "mixtral, olmoe, qwen2_moe, granitemoe")
    # a config field of the wrong type, and damaged weights: tracebacks of huggingface_hub's
    # and safetensors' own errors (neither an OSError nor a ValueError)
    (tmp_path / "badfield").mkdir()
    (tmp_path / "badfield" / "config.json").write_text(json.dumps(
        {"model_type": "mixtral", "num_local_experts": "x"}))
    one_error(capsys, ["record", str(tmp_path / "badfield")] + base,
              "cannot load the model config offline", "num_local_experts", "expected int")
    import transformers

    (tmp_path / "damaged").mkdir()
    transformers.MixtralConfig(hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                               num_attention_heads=2, num_key_value_heads=1, vocab_size=256,
                               num_local_experts=2, num_experts_per_tok=1).to_json_file(
        tmp_path / "damaged" / "config.json")
    (tmp_path / "damaged" / "model.safetensors").write_bytes(b"not a safetensors file\n")
    one_error(capsys, ["record", str(tmp_path / "damaged")] + base,
              "cannot load the model weights offline", str(tmp_path / "damaged"))
    one_error(capsys, ["record", "--tiny", "llama"] + base, "unknown family 'llama'")
    one_error(capsys, ["record", "--tiny", "mixtral:experts=2,topk=3"] + base,
              "topk must be at most experts")
    one_error(capsys, ["record", "--tiny", "mixtral:depth=3"] + base, "unknown option depth")
    ids = tmp_path / "ids.jsonl"
    ids.write_text('{"input_ids": [1, 300]}\n')
    one_error(capsys, ["record", "--tiny", "mixtral", "--prompts", str(ids), "--out", str(out)],
              "token id 300 is out of range", "0..255")
    assert not out.exists()
    assert [x.name for x in tmp_path.iterdir() if x.name.startswith(".o.jsonl")] == []


def test_bad_input_without_torch(tmp_path, capsys, monkeypatch):
    p = prompts_file(tmp_path)
    out = tmp_path / "o.jsonl"
    base = ["--prompts", str(p), "--out", str(out)]
    one_error(capsys, ["record"] + base, "exactly one of them")
    one_error(capsys, ["record", "m", "--tiny", "mixtral"] + base, "exactly one of them")
    one_error(capsys, ["record", "--tiny", "mixtral", "--max-new-tokens", "0"] + base,
              "--max-new-tokens must be an integer >= 1, got 0")
    one_error(capsys, ["record", "--tiny", "mixtral", "--prompts", str(p), "--out",
                       str(tmp_path / "o.csv")], "--out must name a .jsonl file")
    one_error(capsys, ["record", "--tiny", "mixtral", "--prompts", str(tmp_path / "none.txt"),
                       "--out", str(out)], "no such prompts file")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('"fine"\n{"prompt": 3}\n')
    one_error(capsys, ["record", "--tiny", "mixtral", "--prompts", str(bad), "--out", str(out)],
              f"{bad}:2:", "expected a non-empty prompt")
    # not UTF-8: named as a prompts file (it was "expected a JSON or CSV trace")
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"ok\ncaf\xe9\n")
    err = one_error(capsys, ["record", "--tiny", "mixtral", "--prompts", str(latin), "--out",
                             str(out)], f"{latin}:2:", "expected a prompts file")
    assert "trace" not in err
    # transformers missing: one line naming the extra
    monkeypatch.setitem(sys.modules, "transformers", None)
    one_error(capsys, ["record", "--tiny", "mixtral"] + base, "optional `record` extra")
    assert not out.exists()
