"""Training data from Belady's evictions, and the training run of FlashMoE's network.

Dataset (FlashMoE, Kim et al. 2025, Sec. 3.2 and Fig. 4: "Assuming Belady's optimal cache
replacement algorithm, masked target data indicating which experts should be evicted at each
time step were generated"). Reading: Belady's rule (:class:`paging.offline.belady.Belady`) is
run through the package's one simulator on each training sequence with the cache size k of
the deployment; at each of its evictions every candidate gives one row, input
``[1/r, f/max f]`` computed exactly as :class:`paging.policies.learned.FlashMoE` computes it,
target 1 for the page Belady evicts and 0 for the others (the "masked label" is the victim
mask; the paper's "routing distance" output is read as the score whose maximum is evicted).
Deviations: to keep training to seconds, each eviction keeps the victim and ``negatives``
(default 8) other candidates drawn without replacement from ``default_rng(seed)``; a fixed
number of epochs (default 10) instead of the paper's 200 with early stopping; batch 256 (not
stated in the paper).

``python -m paging.learned.train TRACE... --out FILE --seed S`` (also ``paging train flashmoe``)
trains on every sequence of the given files; the same inputs and seed give the same bytes.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from paging.errors import PagingError
from paging.learned.mlp import MLP, fit
from paging.learned.model import FlashMoEModel, fingerprint
from paging.offline.belady import Belady
from paging.options import int64, seed
from paging.policies.learned import _History

HIDDEN = 128
EPOCHS = 10
BATCH = 256
NEGATIVES = 8


class _LabelledBelady(Belady):
    """Belady's rule that records FlashMoE's features of the candidates at each eviction."""

    def __init__(self, negatives: int, rng: np.random.Generator):
        self.negatives, self.rng = negatives, rng
        self.X: list[np.ndarray] = []
        self.y: list[np.ndarray] = []
        self._feat = _History()  # the history and feature code FlashMoE itself uses

    def reset(self, ctx):
        super().reset(ctx)
        self._feat.reset(ctx)

    def on_hit(self, t, page):
        super().on_hit(t, page)
        self._feat._touch(t, page)

    def on_insert(self, t, page):
        super().on_insert(t, page)
        self._feat._touch(t, page)

    def victim(self, t, page, cache):
        v = super().victim(t, page, cache)
        cands = np.fromiter(cache.candidates, dtype=np.int64)
        others = cands[cands != v]
        if self.negatives < others.size:
            others = self.rng.choice(others, size=self.negatives, replace=False)
        rows = np.r_[v, others]
        self.X.append(self._feat.features(t, page, rows))
        self.y.append(np.r_[1.0, np.zeros(others.size)])
        return v


def belady_dataset(traces, k: int, *, seed: int = 0, negatives: int = NEGATIVES,
                   progress: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Rows (X, y) from Belady's evictions at cache size k on every trace (see the module
    docstring). Deterministic under ``seed``. ``progress``: a bar over the sequences
    (:mod:`paging.progress`; None = when stderr is a terminal)."""
    from paging import progress as pbar
    from paging.simulate import simulate

    rng = np.random.default_rng(seed)
    X, y = [], []
    with pbar.bar(len(traces), "label (Belady)", unit="seq", show=progress) as bar:
        for tr in traces:
            pol = _LabelledBelady(negatives, rng)
            simulate(tr, pol, k, engine="reference")
            X += pol.X
            y += pol.y
            bar.update()
    if not X:
        raise PagingError(f"no evictions at k={k} in the training sequences: nothing to learn "
                          "(choose a smaller k or longer sequences)")
    return np.concatenate(X), np.concatenate(y)


def train_flashmoe(traces, k: int = 200, *, seed: int = 0, epochs: int = EPOCHS,
                   hidden: int = HIDDEN, batch: int = BATCH,
                   negatives: int = NEGATIVES, progress: bool | None = None) -> FlashMoEModel:
    """Train FlashMoE's network (3 linear layers, SiLU, MSE, AdamW lr 1e-3, decay 1e-2) on
    Belady's evictions at cache size ``k`` over ``traces`` (all of one layout). Deterministic:
    the same traces and arguments give bit-identical weights. ``progress``: bars over the
    labelled sequences and the epochs (None = when stderr is a terminal)."""
    from paging import progress as pbar

    traces = list(traces)
    if not traces:
        raise PagingError("train flashmoe: give at least one training sequence")
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise PagingError(f"train flashmoe: epochs must be an integer >= 1, got {epochs!r} "
                          "(0 would write an untrained model)")
    lay = traces[0].layout
    for tr in traces:
        if tr.layout != lay:
            raise PagingError(f"train flashmoe: all sequences must share one layout; "
                              f"{tr.name} has {tr.layout.n_layers} x {tr.layout.n_experts}, "
                              f"{traces[0].name} {lay.n_layers} x {lay.n_experts}")
    X, y = belady_dataset(traces, k, seed=seed, negatives=negatives, progress=progress)
    net = MLP.init((2, hidden, hidden, 1), seed=seed)
    with pbar.bar(epochs, "train", unit="epoch", show=progress) as bar:
        def tick(loss: float) -> None:
            bar.set_postfix(loss=f"{loss:.4g}", refresh=False)
            bar.update()

        history = fit(net, X, y, epochs=epochs, batch=batch, seed=seed, on_epoch=tick)
    meta = {"k": int(k), "seed": int(seed), "epochs": int(epochs), "hidden": int(hidden),
            "batch": int(batch), "negatives": int(negatives), "rows": int(X.shape[0]),
            "final_loss": round(float(history[-1]), 8) if history else None,
            "features": ["1/r", "f/max f"], "trained_on": [fingerprint(t) for t in traces]}
    return FlashMoEModel(net, lay, meta)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("trace", nargs="+", metavar="TRACE",
                   help="training routing files or generator specs (every sequence is used)")
    p.add_argument("--out", required=True, metavar="FILE", help="model file to write (.npz)")
    p.add_argument("--k", type=int64, default=200, help="cache size of Belady's labels (200)")
    p.add_argument("--seed", type=seed, default=0)
    p.add_argument("--epochs", type=int64, default=EPOCHS)
    p.add_argument("--exclude", action="append", default=[], metavar="NAME",
                   help="leave out the sequence with this name (repeatable), e.g. "
                        "'humaneval_2_routing.jsonl#problem_id=1'")


def run(args) -> int:
    from paging.io import load
    from paging.io.atomic import check_target

    check_target(args.out)  # before the training
    if not str(args.out).lower().endswith(".npz"):  # (a model.json was written as a zip)
        raise PagingError(f"--out {args.out!r}: a model file is a .npz archive; expected a "
                          "name ending in .npz")
    traces = [t for src in args.trace for t in load(src, expand="rounds")]
    kept = [t for t in traces if t.name not in set(args.exclude)]
    unknown = set(args.exclude) - {t.name for t in traces}
    if unknown:
        raise PagingError(f"--exclude: no sequence named {sorted(unknown)[0]!r}")
    model = train_flashmoe(kept, args.k, seed=args.seed, epochs=args.epochs)
    model.save(args.out)
    sys.stderr.write(f"wrote {args.out}: {len(kept)} sequences, {model.meta['rows']} rows, "
                     f"final loss {model.meta['final_loss']}\n")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m paging.learned.train",
                                description="Train FlashMoE's eviction network on Belady's "
                                "evictions.")
    add_arguments(p)
    args = p.parse_args(argv)
    try:
        return run(args)
    except PagingError as e:
        sys.stderr.write(f"error: {e.format()}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
