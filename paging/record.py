"""Record the routing of a Hugging Face ``transformers`` MoE model into the routing-log JSONL.

The recorder runs a causal MoE language model (Mixtral, OLMoE, Qwen2-MoE, GraniteMoE) on a list
of prompts with greedy decoding and a forward hook on every router module, and writes one record
per (sequence, token, layer) in the *raw prefill+decode* layout that
:func:`paging.io.jsonl.read_routing_jsonl` reads (its module docstring): the file order is the
execution order, the prefill layer-major (all prompt positions at MoE layer 0, then at layer 1,
...), then one decode step after the other, each walking the MoE layers. Each record::

    {"dataset": "prompts", "problem_id": 0, "phase": "prefill", "layer": 0, "token_pos": 3,
     "experts": [2, 0], "gating_probs": [0.54, 0.46], "logits": [0.1, -0.3, 0.7, 0.2]}

* ``dataset`` / ``problem_id``: the sequence (the prompts file's stem, the prompt's index);
* ``phase``: ``prefill`` or ``decode`` (the reader rebuilds the phases from the file order, the
  field states them for other tools); ``token_pos``: the position in the sequence (decode steps
  continue after the prompt);
* ``layer``: the MoE layer, numbered densely 0..ℓ-1 (Qwen2-MoE may leave some decoder layers
  dense: those have no router and are not layers of the paging model, Sec. 2 of Angelopoulos
  et al.);
* ``experts``, ``gating_probs``: the model's own top-K decision, exactly as its router returned
  it to the expert computation (highest weight first; Mixtral renormalises the top-K softmax,
  OLMoE and Qwen2-MoE do so when ``norm_topk_prob``, GraniteMoE takes the softmax of the top-K
  logits), so the recorded experts are the ones the model ran;
* ``logits``: the full router logits of the token at that layer (n floats, float32 values
  written in their shortest round-trip form).

Decoding: ``max_new_tokens`` = N new tokens; the prefill pass yields the first, N−1 decode passes
yield the rest (the last new token is never fed back, as in ``generate()``), stopping early at
the model's end-of-sequence token. Greedy (argmax), so a run is deterministic; ``seed`` seeds
the random weights of a tiny model.

The hook reads the router's output ``(router_logits, top_k_weights, top_k_index)``, the
interface of transformers 5 (every supported family has a ``*TopKRouter`` module); older
versions, whose gate is a plain linear layer, are refused rather than re-derived.

No download ever happens: models load with ``local_files_only=True`` (and ``HF_HUB_OFFLINE``);
``tiny_model`` builds a small randomly initialised model of a family from its config class.
Needs the optional ``record`` extra (torch, transformers).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from paging.errors import PagingError
from paging.options import no_more, parse_json, parse_spec, take_int

#: transformers ``model_type`` -> the router module's path inside a decoder layer.
ROUTERS = {"mixtral": "mlp.gate", "olmoe": "mlp.gate", "qwen2_moe": "mlp.gate",
           "granitemoe": "block_sparse_moe.router"}
#: ``--tiny`` family names -> transformers ``model_type``.
TINY = {"mixtral": "mixtral", "olmoe": "olmoe", "qwen2-moe": "qwen2_moe",
        "granitemoe": "granitemoe"}
_INSTALL = ("paging record needs the optional `record` extra (torch and transformers >= 5): "
            "pip install torch==2.13.0 && pip install -e '.[record]' (make test-record does it)")


def _import_torch():
    try:
        import torch
        import transformers
    except ImportError:
        raise PagingError(_INSTALL) from None
    major = int(transformers.__version__.split(".")[0])
    if major < 5:
        raise PagingError(f"transformers {transformers.__version__} is too old: the recorder "
                          "reads the router modules of transformers >= 5; " + _INSTALL)
    return torch, transformers


# -- models --------------------------------------------------------------------------------------
def tiny_model(spec: str, seed: int = 0):
    """A small randomly initialised causal MoE model: ``FAMILY[:layers=L,experts=N,topk=K,
    hidden=H]`` with FAMILY one of :data:`TINY` (defaults: 2 layers, 4 experts, top-2, hidden
    size 32, a byte vocabulary of 256 ids, no end-of-sequence token). ``seed`` seeds
    ``torch.manual_seed`` before the weights are drawn. The options are checked before torch
    is imported (a bad option is named even where the record extra is not installed)."""
    name, opts = parse_spec(spec, "--tiny")
    if name not in TINY:
        raise PagingError(f"--tiny: unknown family {name!r}; expected one of {', '.join(TINY)}")
    what = f"--tiny {spec}"
    layers = take_int(opts, "layers", 2, what, lo=1)
    experts = take_int(opts, "experts", 4, what, lo=2)
    topk = take_int(opts, "topk", 2, what, lo=1)
    hidden = take_int(opts, "hidden", 32, what, lo=4)
    no_more(opts, what, "layers, experts, topk, hidden")
    if topk > experts:
        raise PagingError(f"{what}: topk must be at most experts ({experts}), got {topk}")
    if hidden % 4:
        raise PagingError(f"{what}: hidden must be a multiple of 4 (4 attention heads), "
                          f"got {hidden}")
    torch, transformers = _import_torch()
    common = dict(hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                  num_attention_heads=4, num_key_value_heads=2, vocab_size=256,
                  max_position_embeddings=4096, bos_token_id=None, eos_token_id=None,
                  pad_token_id=0, num_experts_per_tok=topk)
    kind = TINY[name]
    if kind == "mixtral":
        config = transformers.MixtralConfig(num_local_experts=experts, **common)
    elif kind == "olmoe":
        config = transformers.OlmoeConfig(num_experts=experts, **common)
    elif kind == "qwen2_moe":
        config = transformers.Qwen2MoeConfig(num_experts=experts, moe_intermediate_size=hidden,
                                             shared_expert_intermediate_size=2 * hidden,
                                             **common)
    else:
        config = transformers.GraniteMoeConfig(num_local_experts=experts, **common)
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config)
    return model.eval()


def load_model(name_or_dir: str):
    """``(model, tokenizer or None)`` from a local directory or a model already in the local
    Hugging Face cache (``local_files_only=True``: nothing is downloaded). The architecture is
    checked from the config before any weight is read."""
    torch, transformers = _import_torch()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    local = Path(name_or_dir)
    looks_like_path = local.is_absolute() or name_or_dir.startswith(".") or local.exists()
    if looks_like_path and not local.is_dir():
        raise PagingError("no such model directory; expected a folder with config.json and the "
                          "weights (or a model name in the local Hugging Face cache)",
                          name_or_dir)
    try:
        config = transformers.AutoConfig.from_pretrained(name_or_dir, local_files_only=True)
    except Exception as e:  # (a user's file: OSError, ValueError, a field's TypeError, ...)
        raise PagingError(f"cannot load the model config offline ({_first_line(e)}); expected a "
                          "local directory or a model in the local Hugging Face cache (nothing "
                          "is downloaded)", name_or_dir) from None
    check_architecture(config.model_type, name_or_dir)
    try:
        model = transformers.AutoModelForCausalLM.from_pretrained(
            name_or_dir, local_files_only=True, dtype="auto")
    except Exception as e:  # (a damaged weights file raises safetensors' own error)
        raise PagingError(f"cannot load the model weights offline ({_first_line(e)})",
                          name_or_dir) from None
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(name_or_dir,
                                                               local_files_only=True)
    except (OSError, ValueError, TypeError):
        tokenizer = None
    return model.eval(), tokenizer


def _first_line(e: Exception) -> str:
    """An error's message on one line: its first, and the next when the first ends in a colon
    (huggingface_hub's "Validation error for field 'x':" puts the reason below)."""
    lines = [x.strip() for x in str(e).splitlines() if x.strip()]
    if not lines:
        return type(e).__name__
    return " ".join(lines[:2]) if lines[0].endswith(":") else lines[0]


def check_architecture(model_type: str, where: str | None = None) -> None:
    """Refuse a model type the recorder has no router path for."""
    if model_type not in ROUTERS:
        raise PagingError(f"unsupported architecture {model_type!r}; the recorder knows the MoE "
                          f"routers of {', '.join(ROUTERS)}", where)


def routers(model) -> list:
    """The router modules of ``model``, in layer order (dense decoder layers skipped)."""
    check_architecture(model.config.model_type)
    path = ROUTERS[model.config.model_type]
    out = []
    for layer in model.model.layers:
        mod = layer
        for part in path.split("."):
            mod = getattr(mod, part, None)
            if mod is None:
                break
        if mod is not None and type(mod).__name__.endswith("TopKRouter"):
            out.append(mod)
    if not out:
        raise PagingError(f"the {model.config.model_type} model has no router module at "
                          f"layers.*.{path}; expected a transformers >= 5 MoE model")
    return out


# -- prompts -------------------------------------------------------------------------------------
def read_prompts(path: str | os.PathLike) -> list[str | list[int]]:
    """The prompts of a file: ``.jsonl`` — one JSON string, or object with ``prompt`` or
    ``text`` (a string) or ``input_ids`` (token ids), per line; any other file — one prompt per
    non-blank line. Errors name the file and line."""
    from paging.io._common import read_text

    file = str(path)
    if not Path(path).is_file():
        raise PagingError("no such prompts file; expected a text file (one prompt per line) or "
                          "a JSONL file", file)
    text = read_text(path, "a prompts file (one prompt per line, or JSONL)")
    prompts: list[str | list[int]] = []
    jsonl = file.lower().endswith(".jsonl")
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        if not jsonl:
            prompts.append(raw)
            continue
        rec = parse_json(raw, file, "a string or an object with prompt, text or input_ids per "
                         "line", lineno)
        if isinstance(rec, dict):
            rec = next((rec[k] for k in ("input_ids", "prompt", "text") if k in rec), None)
        if isinstance(rec, str) and rec:
            prompts.append(rec)
        elif (isinstance(rec, list) and rec
              and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in rec)):
            prompts.append(list(rec))
        else:
            raise PagingError("expected a non-empty prompt: a string, or an object with a "
                              "prompt/text string or an input_ids list of token ids", file,
                              lineno)
    if not prompts:
        raise PagingError("the prompts file holds no prompt; expected one per line", file)
    return prompts


def tokenize(prompts: list, tokenizer, vocab_size: int, file: str) -> list[list[int]]:
    """Token ids per prompt: ``input_ids`` as given, text through ``tokenizer``, or as UTF-8
    bytes when there is none (the tiny models' byte vocabulary)."""
    out = []
    for i, p in enumerate(prompts):
        if isinstance(p, list):
            ids = p
        elif tokenizer is not None:
            ids = list(tokenizer(p)["input_ids"])
        elif vocab_size >= 256:
            ids = list(p.encode("utf-8"))
        else:
            raise PagingError(f"prompt {i} is text but the model has no tokenizer and a "
                              f"vocabulary of {vocab_size} < 256 byte ids; give input_ids in a "
                              "JSONL prompts file", file)
        if not ids:
            raise PagingError(f"prompt {i} has no tokens; expected a non-empty prompt", file)
        bad = [t for t in ids if t >= vocab_size]
        if bad:
            raise PagingError(f"prompt {i}: token id {bad[0]} is out of range; the model's "
                              f"vocabulary has ids 0..{vocab_size - 1}", file)
        out.append(ids)
    return out


# -- recording -----------------------------------------------------------------------------------
@dataclass
class RecordStats:
    """What a recording holds (``paging record`` prints it)."""

    sequences: int = 0
    prefill_tokens: int = 0
    decode_tokens: int = 0
    n_layers: int = 0
    n_experts: int = 0
    top_k: int = 0
    records: int = 0
    experts_seen: set = field(default_factory=set)


def _floats(row) -> list[float]:
    # float32 values in their shortest round-trip text (str of a numpy float32), as JSON numbers
    return [float(str(x)) for x in row]


def record_routing(model, token_ids: list[list[int]], max_new_tokens: int, dataset: str,
                   stats: RecordStats | None = None, progress=None) -> Iterator[dict]:
    """Yield the routing records (module docstring) of ``model`` on each prompt, in execution
    order. One prompt at a time (batch 1, no padding), greedy decoding with the KV cache."""
    torch, _ = _import_torch()
    import numpy as np

    from paging.errors import positive_int

    positive_int("--max-new-tokens", max_new_tokens)
    mods = routers(model)
    layer_of = {id(m): z for z, m in enumerate(mods)}
    calls: list[tuple[int, object, object, object]] = []

    def hook(mod, _inputs, output):
        if not (isinstance(output, tuple) and len(output) == 3):
            raise PagingError(f"router {type(mod).__name__} returned {type(output).__name__}; "
                              "expected (router_logits, top_k_weights, top_k_index) as in "
                              "transformers >= 5")
        logits, weights, index = output
        calls.append((layer_of[id(mod)], logits.detach().float().cpu().numpy(),
                      weights.detach().float().cpu().numpy(), index.detach().cpu().numpy()))

    eos = model.config.eos_token_id
    eos = set(eos if isinstance(eos, list) else [] if eos is None else [eos])
    st = stats if stats is not None else RecordStats()
    st.n_layers = len(mods)
    handles = [m.register_forward_hook(hook) for m in mods]
    try:
        for seq, ids in enumerate(token_ids):
            st.sequences += 1
            past = None
            inp = torch.tensor([ids], dtype=torch.long)
            pos = 0
            for step in range(max_new_tokens):
                calls.clear()
                with torch.no_grad():
                    out = model(input_ids=inp, past_key_values=past, use_cache=True)
                phase = "prefill" if step == 0 else "decode"
                n_tok = inp.shape[1]
                for z, logits, weights, index in calls:
                    st.n_experts, st.top_k = logits.shape[1], index.shape[1]
                    for r in range(n_tok):
                        experts = [int(e) for e in index[r]]
                        st.experts_seen.update(experts)
                        st.records += 1
                        yield {"dataset": dataset, "problem_id": seq, "phase": phase,
                               "layer": z, "token_pos": pos + r, "experts": experts,
                               "gating_probs": _floats(np.asarray(weights[r], np.float32)),
                               "logits": _floats(np.asarray(logits[r], np.float32))}
                if step == 0:
                    st.prefill_tokens += n_tok
                else:
                    st.decode_tokens += n_tok
                pos += n_tok
                nxt = int(out.logits[0, -1].argmax())
                if nxt in eos or step == max_new_tokens - 1:
                    break
                past = out.past_key_values
                inp = torch.tensor([[nxt]], dtype=torch.long)
            if progress is not None:
                progress.update(1)
    finally:
        for h in handles:
            h.remove()


def write_recording(records: Iterator[dict], out: str | os.PathLike) -> None:
    """Write the records as JSONL, atomically (nothing is left if the run fails)."""
    from paging.io.atomic import atomic_path

    with atomic_path(out) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        for rec in records:
            try:
                line = json.dumps(rec, allow_nan=False)
            except ValueError:
                raise PagingError(f"the model produced a non-finite router value (sequence "
                                  f"{rec['problem_id']}, layer {rec['layer']}, position "
                                  f"{rec['token_pos']}); expected finite logits") from None
            fh.write(line + "\n")


def dataset_name(prompts_path: str | os.PathLike) -> str:
    """The ``dataset`` field: the prompts file's stem (``prompts.jsonl`` -> ``prompts``)."""
    return re.sub(r"\.(jsonl|txt|json)$", "", Path(prompts_path).name, flags=re.I) or "prompts"
