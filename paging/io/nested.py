"""Nested prefill/decode JSON (e.g. granite-3.0-1b-a400m-instruct ``moe_expert_trace.json``).

Format (one JSON document)::

    {"model": "...", "num_layers": 24, "num_experts": 32, "top_k": 8,
     "prompts": {"code": {"prompt_len": 44, "prefill": [[[e, ...] x ℓ] x P],
                          "decode": [[[e, ...] x ℓ] x D]}, ...}}

``prefill[i][z]`` lists the top-K experts of prompt position i at layer z; ``decode[s][z]`` those of
generated token s. Each prompt is one sequence. With ``phase="both"`` (default) the prefill
positions come first, then the decode tokens, in execution order, as ONE sequence: the expert cache
carries over from prefill to decode, as it does in a real server. A real prefill processes the
prompt batch layer by layer; the paging model (Angelopoulos et al., Sec. 2.1-2.2) serves one token
at a time, so each prompt position becomes a token that walks the ℓ layers, positions ascending.

A token whose list has fewer than ℓ layer entries, or an empty/null entry, is incomplete: dropped
and counted, or an error with ``strict=True``. Errors give the line of the offending value (found by
re-scanning the text only when there is an error).
"""

from __future__ import annotations

import json
import os
import re

import numpy as np

from paging.errors import PagingError
from paging.io._common import (
    check_experts,
    check_int,
    check_phase,
    describe,
    layout_for,
    read_text,
    seq_name,
)
from paging.io.formats import TraceFormat
from paging.options import parse_json
from paging.trace import Trace, from_routing

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def locate(text: str, path: tuple) -> int | None:
    """1-based line of the JSON value at ``path`` (object keys and list indices) in ``text``, or
    None when it cannot be found. Siblings are skipped with the C decoder, so this costs one pass
    over the text; it is only called to report an error."""
    try:
        pos = _WS.match(text, 0).end()
        for key in path:
            if text[pos] == "{":
                pos = _WS.match(text, pos + 1).end()
                while True:
                    if text[pos] == "}":
                        return None
                    k, end = _DECODER.raw_decode(text, pos)
                    pos = _WS.match(text, end).end() + 1  # past ':'
                    pos = _WS.match(text, pos).end()
                    if k == key:
                        break
                    _, end = _DECODER.raw_decode(text, pos)
                    pos = _WS.match(text, end).end()
                    if text[pos] == ",":
                        pos = _WS.match(text, pos + 1).end()
            elif text[pos] == "[":
                pos = _WS.match(text, pos + 1).end()
                for _ in range(int(key)):
                    if text[pos] == "]":
                        return None
                    _, end = _DECODER.raw_decode(text, pos)
                    pos = _WS.match(text, end).end()
                    if text[pos] == ",":
                        pos = _WS.match(text, pos + 1).end()
                if text[pos] == "]":
                    return None
            else:
                return None
        return text.count("\n", 0, pos) + 1
    except (ValueError, IndexError, TypeError):
        return None


def _where(path: tuple) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def read_nested_json(path: str | os.PathLike, *, expand: str = "rounds", strict: bool = False,
                     phase: str = "both", n_experts: int | None = None,
                     n_layers: int | None = None) -> list[Trace]:
    """Read nested prefill/decode JSON into one Trace per prompt.

    Parameters
    ----------
    path:
        The ``.json`` file.
    expand:
        ``"rounds"`` (Angelopoulos et al., Sec. 5.1) or ``"groups"``, see :mod:`paging.trace`.
    strict:
        Make an incomplete token an error instead of dropping it.
    phase:
        ``"both"`` (prefill then decode, one sequence per prompt), ``"prefill"`` or ``"decode"``.
    n_experts, n_layers:
        Override the file's ``num_experts`` / ``num_layers`` (inferred as max id + 1 / the longest
        token when the file has neither). An expert id at or above the value is an error.

    Returns
    -------
    list[Trace]
        One trace per prompt in file order, named ``FILE#prompt=NAME`` (plus ``,phase=P`` when a
        single phase is selected); ``meta`` holds ``source, format, model, prompt, prompt_len,
        n_tokens, top_k, dropped_tokens, phase, phases, phase_bounds``.
    """
    file = str(path)
    check_phase(phase)
    text = read_text(path)
    if not text.strip():
        raise PagingError("the file is empty; expected a JSON object with a 'prompts' field",
                          file, 1)
    doc = parse_json(text, file, "one JSON document")

    def fail(msg: str, where: tuple) -> PagingError:
        return PagingError(msg, file, locate(text, where) or 1)

    if not isinstance(doc, dict) or not isinstance(doc.get("prompts"), dict):
        raise fail("expected a JSON object with a 'prompts' object (nested prefill/decode "
                   "trace) or one routing record per line (use a .jsonl name)", ())
    declared = {}
    for key in ("num_layers", "num_experts", "top_k"):
        if key in doc:
            try:
                declared[key] = check_int(doc[key], key, file, None)
            except PagingError as e:
                raise fail(e.message, (key,)) from None
            if declared[key] < 1:
                raise fail(f"{key} must be >= 1, got {declared[key]}", (key,))
    L_known = n_layers if n_layers is not None else declared.get("num_layers")
    E_known = n_experts if n_experts is not None else declared.get("num_experts")
    phases = ("prefill", "decode") if phase == "both" else (phase,)

    # pass 1: validate every value, find incomplete tokens and the layout
    prompts = []
    max_e = max_z = -1
    for pname, pobj in doc["prompts"].items():
        base = ("prompts", pname)
        if not isinstance(pobj, dict):
            raise fail(f"prompt {pname!r} must be an object with 'prefill' and 'decode' lists, "
                       f"got {describe(pobj)}", base)
        K = None
        kpath = None
        seqs = {}
        for ph in phases:
            if ph not in pobj:
                raise fail(f"prompt {pname!r} has no {ph!r} list; expected 'prefill' and "
                           "'decode'", base)
            toks = pobj[ph]
            if not isinstance(toks, list):
                raise fail(f"{_where(base + (ph,))} must be a list of tokens, got "
                           f"{describe(toks)}", base + (ph,))
            for i, tok in enumerate(toks):
                tpath = base + (ph, i)
                if not isinstance(tok, list):
                    raise fail(f"{_where(tpath)} must be a list of per-layer expert lists, got "
                               f"{describe(tok)}", tpath)
                if L_known is not None and len(tok) > L_known:
                    raise fail(f"{_where(tpath)} has {len(tok)} layers; expected at most "
                               f"{L_known} (n_layers)", tpath)
                for z, entry in enumerate(tok):
                    if entry is None or entry == []:
                        continue  # a missing layer: the token is incomplete
                    epath = tpath + (z,)
                    try:
                        check_experts(entry, _where(epath), file, None, E_known)
                    except PagingError as e:
                        raise fail(e.message, epath) from None
                    if K is None:
                        K, kpath = len(entry), epath
                    elif len(entry) != K:
                        raise fail(f"top-K changes within prompt {pname!r}: {len(entry)} experts "
                                   f"here, {K} at {_where(kpath)}; expected the same K for every "
                                   "token and layer", epath)
                    max_e = max(max_e, max(entry))
                max_z = max(max_z, len(tok) - 1)
            seqs[ph] = toks
        plen = pobj.get("prompt_len")
        if "prefill" in seqs and plen is not None and plen != len(seqs["prefill"]):
            # (what the file says of itself must hold: a count that disagrees means a cut or
            # misaligned prefill list)
            raise fail(f"prompt {pname!r} declares prompt_len={plen!r} but lists "
                       f"{len(seqs['prefill'])} prefill positions; expected them equal",
                       base + ("prompt_len",))
        if K is not None and "top_k" in declared and K != declared["top_k"]:
            raise fail(f"prompt {pname!r} lists {K} experts per layer but the file declares "
                       f"top_k={declared['top_k']}", kpath)
        prompts.append((pname, pobj, K, seqs))
    layout = layout_for(max_e, max_z, E_known, L_known, file)
    L = layout.n_layers

    # pass 2: tables of the complete tokens
    traces = []
    for pname, pobj, K, seqs in prompts:
        K = K or declared.get("top_k", 1)
        parts = [("prompt", pname)] + ([("phase", phase)] if phase != "both" else [])
        name = seq_name(file, parts)
        rows, info, bounds = [], {}, {}
        for ph in phases:
            kept = dropped = 0
            for i, tok in enumerate(seqs[ph]):
                if len(tok) == L and all(e not in (None, []) for e in tok):
                    rows.append(tok)
                    kept += 1
                else:
                    if strict:
                        have = sum(e not in (None, []) for e in tok)
                        raise fail(f"{_where(('prompts', pname, ph, i))} has {have} of {L} "
                                   "layers; strict mode expects every layer of every token",
                                   ("prompts", pname, ph, i))
                    dropped += 1
            start = sum(v["tokens"] for v in info.values()) * K * L
            info[ph] = {"positions" if ph == "prefill" else "steps": len(seqs[ph]),
                        "tokens": kept, "dropped": dropped}
            bounds[ph] = [start, start + kept * K * L]
        table = np.asarray(rows, dtype=np.int64).reshape(len(rows), L, K)
        meta = {"source": file, "format": "nested-json", "model": doc.get("model"),
                "prompt": pname, "prompt_len": pobj.get("prompt_len"),
                "dropped_tokens": sum(v["dropped"] for v in info.values()), "scores": False,
                "phase": phase, "phases": info, "phase_bounds": bounds}
        traces.append(from_routing(table, layout, expand, None, name, meta))
    if not traces:
        raise fail("'prompts' is empty; expected at least one prompt", ("prompts",))
    return traces


TRACE_FORMATS = (TraceFormat("nested", read_nested_json, extensions=(".json",),
                             description="nested prefill/decode JSON", order=20),)
