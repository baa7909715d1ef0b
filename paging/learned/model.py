"""The FlashMoE model file: weights, the layout it was trained for, and its training sequences.

A model file is a numpy ``.npz`` (no pickle) holding the arrays ``W0, b0, W1, b1, W2, b2`` and
one string ``meta`` (JSON): the format tag, the layout (``n_layers``, ``n_experts``), the cache
size and seed of the training run, and for every training sequence its name, length, sha256 of
its page array (int64, little-endian) and sha256 of its first ``PREFIX`` pages, each also for
the sequence in the other top-K expansion (``*_other``, when it has one). The policy
refuses a model trained for another layout, and refuses to run on a sequence the model was
trained on (:func:`check_held_out`, and online from the prefix hash: see
:class:`paging.policies.learned.FlashMoE`).

The shipped models live next to this module as ``flashmoe_<n_layers>x<n_experts>.npz``.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from paging.errors import PagingError, positive_int
from paging.layout import Layout
from paging.learned.mlp import MLP

FORMAT = "paging.flashmoe/1"
PREFIX = 512  # requests hashed for the online held-out check
MODEL_DIR = Path(__file__).resolve().parent


def page_hash(pages: np.ndarray) -> str:
    """sha256 of a page array as little-endian int64 (the identity of a training sequence)."""
    return hashlib.sha256(np.ascontiguousarray(pages, dtype="<i8").tobytes()).hexdigest()


def _other_expansion(trace) -> np.ndarray | None:
    """The pages of ``trace`` in the other top-K expansion (rounds: by token, rank, layer;
    groups: by token, layer, rank), as :func:`paging.io.load` gives them with the other
    ``expand``; None without token ids and ranks (then there is one order)."""
    from paging.io._pages import reexpand

    if getattr(trace, "token", None) is None or getattr(trace, "rank", None) is None:
        return None  # (a served stream's pages carry neither)
    try:
        return np.asarray(reexpand(trace, "groups" if trace.expand == "rounds"
                                   else "rounds").pages)
    except PagingError:  # (no complete routing table to expand again: one order)
        return None


def fingerprint(trace) -> dict:
    """What a model file records about one training sequence: its pages' hashes, and those of
    the same requests in the other top-K expansion (``*_other``: a model trained on a sequence
    read in rounds refused it in rounds only, and ran on it read with ``--expand groups``)."""
    pages = np.asarray(trace.pages)
    rec = {"name": str(trace.name), "n_requests": int(pages.size),
           "sha256": page_hash(pages), "prefix_sha256": page_hash(pages[:PREFIX])}
    if getattr(trace, "meta", None) and trace.meta.get("sequence"):
        rec["prompt"] = dict(trace.meta["sequence"])  # (another recording of it: check_prompt)
    other = _other_expansion(trace)
    if other is not None and not np.array_equal(other, pages):
        rec["sha256_other"] = page_hash(other)
        rec["prefix_sha256_other"] = page_hash(other[:PREFIX])
    return rec


@dataclass
class FlashMoEModel:
    """A trained FlashMoE network bound to one layout."""

    net: MLP
    layout: Layout
    meta: dict = field(default_factory=dict)

    @property
    def trained_on(self) -> list[dict]:
        return list(self.meta.get("trained_on", []))

    def transfer(self, layout: Layout) -> FlashMoEModel:
        """The same weights bound to another layout, on purpose (the features [1/r, f/max f] do
        not depend on the layout; cross-model evaluation). The source layout is recorded."""
        meta = dict(self.meta)
        meta["transferred_from"] = [self.layout.n_layers, self.layout.n_experts]
        meta["n_layers"], meta["n_experts"] = layout.n_layers, layout.n_experts
        return replace(self, layout=layout, meta=meta)

    def check_layout(self, layout: Layout, source: str = "the FlashMoE model") -> None:
        if (layout.n_layers, layout.n_experts) != (self.layout.n_layers, self.layout.n_experts):
            raise PagingError(
                f"{source} was trained for {self.layout.n_layers} layers x "
                f"{self.layout.n_experts} experts, not {layout.n_layers} x {layout.n_experts}: "
                "train one for this layout (`paging train flashmoe TRACE --out FILE`)")

    def save(self, path: str | Path) -> Path:
        from paging.io.atomic import atomic_path

        path = Path(path)
        arrays = {}
        for i, (w, c) in enumerate(zip(self.net.W, self.net.b, strict=True)):
            arrays[f"W{i}"] = w.astype(np.float64)
            arrays[f"b{i}"] = c.astype(np.float64)
        meta = dict(self.meta, format=FORMAT, n_layers=self.layout.n_layers,
                    n_experts=self.layout.n_experts)
        arrays["meta"] = np.array(json.dumps(meta, sort_keys=True))
        with atomic_path(path) as tmp:
            with open(tmp, "wb") as f:
                np.savez(f, **arrays)
        return path


class _NotNpz(Exception):
    """A model file that is no ``.npz`` archive (np.load returned an array), or whose weights
    are no real numbers; the message says which."""


#: the largest activation a model may reach on its features (each in [0, 1]): below it every
#: product, sum and score of the network, in any summation order, is a finite double with a
#: margin for rounding (weights scaled by 1e200 made every score nan, and evictions compared
#: nan)
ACTIVATION_MAX = 1e300


def activation_bound(net: MLP) -> float:
    """A bound on |activation| over every layer of ``net`` for inputs in [0, 1]²: from
    ``A_0 = 1`` per input, ``A_i = A_{i-1} · |W_i| + |b_i|`` (|silu(z)| <= |z|), the largest
    entry over the layers; inf when it overflows. Cost O(n_params)."""
    a = np.ones(net.W[0].shape[0])
    top = 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        for w, c in zip(net.W, net.b, strict=True):
            a = a @ np.abs(w) + np.abs(c)
            top = max(top, float(a.max()) if a.size else 0.0)
    return top if np.isfinite(top) else float("inf")


def check_activations(net: MLP, file: str | None = None) -> None:
    """A :class:`PagingError` when ``net``'s activations could overflow
    (:func:`activation_bound` above :data:`ACTIVATION_MAX`): its scores would be inf or nan."""
    top = activation_bound(net)
    if not top <= ACTIVATION_MAX:
        shown = f"{top:.3g}" if np.isfinite(top) else "beyond the largest double"
        raise PagingError("the FlashMoE model's weights are too large: its activations on "
                          f"features in [0, 1] could reach {shown} (from the weights' "
                          f"magnitudes); expected at most {ACTIVATION_MAX:.0e}, so that every "
                          "score is finite", file=file)


def load_model(path: str | Path) -> FlashMoEModel:
    """Read a model file; a missing, unreadable or malformed file is a one-line PagingError."""
    path = Path(path)
    if not path.is_file():
        raise PagingError(f"no FlashMoE model file {path}: train one with "
                          "`paging train flashmoe TRACE --out FILE`", file=str(path))
    try:
        z = np.load(path, allow_pickle=False)
        if not isinstance(z, np.lib.npyio.NpzFile):  # (a .npy: `with` was a TypeError)
            raise _NotNpz(f"not an .npz archive: a single .npy array of shape {z.shape}")
        with z:
            meta = json.loads(str(z["meta"][()]))
            n_lin = sum(1 for key in z.files if key.startswith("W"))
            raw = [z[f"{key}{i}"] for key in "Wb" for i in range(n_lin)]
            if any(a.dtype.kind not in "fiu" for a in raw):  # (complex: imaginary parts dropped)
                kinds = sorted({str(a.dtype) for a in raw if a.dtype.kind not in "fiu"})
                raise _NotNpz(f"weights of dtype {', '.join(kinds)}; expected real numbers")
            W = [np.array(a, dtype=np.float64) for a in raw[:n_lin]]
            b = [np.array(a, dtype=np.float64) for a in raw[n_lin:]]
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile,
            json.JSONDecodeError, RecursionError, _NotNpz) as e:
        why = str(e) if isinstance(e, _NotNpz) else type(e).__name__
        raise PagingError(f"the file is not a FlashMoE model file ({why})",
                          file=str(path)) from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise PagingError("the file is not a FlashMoE model file (format "
                          f"{meta.get('format') if isinstance(meta, dict) else None!r}, "
                          f"expected {FORMAT!r})", file=str(path))
    shapes_ok = n_lin >= 1 and all(  # (the ranks first: a 1-D matrix has no shape[1])
        w.ndim == 2 and c.ndim == 1 for w, c in zip(W, b, strict=True)) and all(
        c.shape == (w.shape[1],) for w, c in zip(W, b, strict=True)) and (
        W[0].shape[0] == 2 and W[-1].shape[1] == 1) and all(
        W[i].shape[1] == W[i + 1].shape[0] for i in range(n_lin - 1))
    if not shapes_ok or not all(np.all(np.isfinite(a)) for a in W + b):
        raise PagingError("the file is not a FlashMoE model file (bad or non-finite weights)",
                          file=str(path))
    net = MLP(W, b)
    check_activations(net, str(path))
    if "n_experts" not in meta or "n_layers" not in meta:
        raise PagingError("the file is not a FlashMoE model file (no layout)", file=str(path))
    try:  # (int() took 8.7 experts for 8)
        layout = Layout(positive_int("meta n_experts", meta["n_experts"]),
                        positive_int("meta n_layers", meta["n_layers"]))
    except PagingError as e:
        raise PagingError(f"the file is not a FlashMoE model file ({e.message})",
                          file=str(path)) from None
    trained = meta.get("trained_on", [])
    if not isinstance(trained, list) or not all(isinstance(r, dict) for r in trained):
        raise PagingError("the file is not a FlashMoE model file (trained_on must be a list "
                          "of sequence records)", file=str(path))
    return FlashMoEModel(net, layout, meta)


def shipped_model_path(layout: Layout) -> Path:
    return MODEL_DIR / f"flashmoe_{layout.n_layers}x{layout.n_experts}.npz"


def check_held_out(model: FlashMoEModel, trace) -> None:
    """PagingError when ``trace`` is one of the model's training sequences (same pages)."""
    h = page_hash(np.asarray(trace.pages))
    for rec in model.trained_on:
        if h in (rec.get("sha256"), rec.get("sha256_other")):
            raise PagingError(_trained_on_message(rec, trace.name))


def check_prompt(model: FlashMoEModel, trace, role: str = "the sequence being simulated"
                 ) -> None:
    """PagingError when a sequence of ``trace`` (each of a warm run's) records a prompt (a
    routing log's dataset and problem) that a training sequence recorded too: another
    recording of it (a decode log's problem 0 and the prefill+decode dump of problem 0) routes
    mostly alike, and its pages' hashes differ (models trained before 2026-11-29 recorded no
    prompts: nothing to check)."""
    from paging.trace import prompt_key, prompt_label, sequence_bounds

    for seq in sequence_bounds(trace):
        prompt = seq.get("sequence")
        for rec in model.trained_on if prompt else ():
            if rec.get("prompt") and prompt_key(rec["prompt"]) == prompt_key(prompt):
                raise PagingError(
                    f"the FlashMoE model was trained on sequence {rec.get('name')!r}, the same "
                    f"prompt ({prompt_label(prompt)}) as {seq['name']!r}, {role}: its routing "
                    "is mostly the same, so the run would report training-set performance; "
                    "evaluate on another prompt or retrain without it")


def check_prefix(records, prefix) -> None:
    """The policy's online held-out check: the pages of the first ``PREFIX`` requests it heard
    (``prefix``) against the training ``records`` of the run's length; the PagingError of
    :func:`_trained_on_message` when one matches (the reference policy, its kernel and a
    stream's carried run all check here)."""
    h = page_hash(np.asarray(prefix, dtype=np.int64))
    for rec in records:
        if h in (rec.get("prefix_sha256"), rec.get("prefix_sha256_other")):
            raise PagingError(_trained_on_message(rec, "the sequence being simulated"))


def _trained_on_message(rec: dict, name) -> str:
    return (f"the FlashMoE model was trained on sequence {rec.get('name')!r}; evaluating it on "
            f"{str(name)!r} (the same requests) would report training-set performance: "
            "evaluate on a held-out sequence or retrain without it")
