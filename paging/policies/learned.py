"""Learned and frequency-estimating eviction: FlashMoE's network and Expected-Next-Use.

* :class:`FlashMoE` — Kim et al., "FlashMoE: Reducing SSD I/O Bottlenecks via ML-Based Cache
  Replacement for Mixture-of-Experts Inference on Edge Devices" (arXiv 2025), Sec. 3.2, Alg. 1:
  a feed-forward network scores every eviction candidate from its normalised recency and
  frequency; the candidate with the highest score ("MaxDist") is evicted.
* :class:`ExpectedNextUse` — a designed (not learned) layer-aware frequency policy: evict the
  page whose estimated next request is furthest away, the estimate combining the layer clock
  (LLRU's layer distance, Angelopoulos et al. 2025) with a per-layer frequency estimate.

Status (issue 11; issue 22 item 2 for the kernel, :mod:`paging.fast.learned`): ``flashmoe`` is
accepted by name (``flashmoe``, ``flashmoe:model=FILE``;
:data:`paging.policies.MODEL_POLICIES`); a model is shipped for Mixtral's layout only, trained
on all three shipped Mixtral sequences (so it refuses to run on them). ExpectedNextUse is not
registered (superseded by ``token-hazard``, :mod:`paging.policies.hazard`); neither makes the
issue's 5% fewer misses than the best existing online policy (README).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from paging.errors import PagingError
from paging.policies.base import CacheView, Context, Policy


class _History(Policy):
    """Per-page last step and request count in numpy arrays (O(1) per request), for policies
    that score all candidates at once at an eviction."""

    def reset(self, ctx: Context) -> None:
        super().reset(ctx)
        P = ctx.layout.n_pages
        self.last_step = np.full(P, -1, dtype=np.int64)
        self.count = np.zeros(P, dtype=np.int64)
        self.f_max = 0
        self._steps = ctx.steps

    def _touch(self, t: int, page: int) -> None:
        self.last_step[page] = self._steps[t]
        c = self.count[page] + 1
        self.count[page] = c
        if c > self.f_max:
            self.f_max = int(c)

    def on_hit(self, t, page):
        self._touch(t, page)

    def on_insert(self, t, page):
        self._touch(t, page)

    def features(self, t: int, page: int, cands: np.ndarray) -> np.ndarray:
        """FlashMoE's network input [1/r, f/max f] of the candidates at the eviction for
        request t (of ``page``), shape (len(cands), 2); see :class:`FlashMoE`."""
        r = (self._steps[t] - self.last_step[cands] + 1).astype(np.float64)
        f_max = max(self.f_max, int(self.count[page]) + 1)
        return np.stack([1.0 / r, self.count[cands] / f_max], axis=1)


class FlashMoE(_History):
    """FlashMoE's learned eviction (Kim et al. 2025, Alg. 1), scored at evictions only.

    On a miss with a full cache, every candidate q gets the network input
    ``[1/r, f/max f]`` with r = s_t − s_τ(q) + 1 (s = the layer clock, τ(q) = q's last
    request; the requested page's update is counted first, so candidates have r ≥ 2) and
    f = q's request count over the whole history; max f includes the requested page's new
    count (readings in :mod:`paging.learned.features`). The network (:mod:`paging.learned.mlp`)
    scores the k candidates in one batched forward pass; the highest score is evicted, ties to
    the earliest inserted candidate.

    Model: ``model=None`` loads the shipped ``paging/learned/flashmoe_<ℓ>x<n>.npz`` for the
    trace's layout; a path loads that file; a :class:`~paging.learned.model.FlashMoEModel` is
    used as is; a function of the layout returning one is called at each reset (for example
    ``lambda lay: m.transfer(lay)``, a deliberate cross-layout transfer).
    A missing or corrupt file, or a model trained for another layout, is a
    :class:`PagingError` at reset. Running on a sequence the model was trained on is refused:
    the policy hashes the first ``PREFIX`` (512) requests it serves and raises a PagingError
    when they and the run's length match a training sequence (a bypassed request is not seen
    by a policy, so a run with bypasses is not recognised: the check is for evaluation
    hygiene, not security).

    Cost: O(1) per hit or insert; per eviction one forward pass, O(k·h²) with h = 128, in this
    reference loop. The compiled kernel (``kernel``, :mod:`paging.fast.learned`; the shared
    cache only, not a ``PerLayer`` wrapper) makes the same evictions at O(k) per eviction plus
    O(h²) per candidate whose precomputed score bounds do not rule it out (about 0.08 per
    eviction on the benchmark trace), and calls this forward pass at near ties: 5.5k → 410k
    requests/s on the 2M-request trace at k = 64 (benchmarks/README.md, ``bench_learned.py``).
    Labels and training: :mod:`paging.learned.train`.
    """

    name = "flashmoe"
    reference = "Kim et al., FlashMoE, arXiv 2025, Sec. 3.2, Alg. 1"
    needs_model = True
    kernel = "learned:FLASHMOE"

    def __init__(self, model=None):
        self.model_source = model
        self._loaded = None  # (key, model): reuse a loaded file across resets
        # (its spec: a run's JSON and table name it, and paging mrc rebuilds the policy from
        # its name: "flashmoe" alone ran the shipped model)
        if isinstance(model, (str, os.PathLike)):
            self.name = f"flashmoe:model={os.fspath(model)}"

    def _model_for(self, layout):
        from paging.learned.model import FlashMoEModel, load_model, shipped_model_path

        src = self.model_source
        if callable(src):
            src = src(layout)  # a function of the layout, e.g. lambda lay: m.transfer(lay)
        if isinstance(src, FlashMoEModel):
            src.check_layout(layout)
            return src
        path = Path(src) if src is not None else shipped_model_path(layout)
        if src is None and not path.is_file():
            raise PagingError(f"flashmoe: no shipped model for {layout.n_layers} layers x "
                              f"{layout.n_experts} experts ({path.name}); train one with "
                              "`paging train flashmoe TRACE --out FILE` and pass it as "
                              "--policy flashmoe:model=FILE (FlashMoE(model=FILE) in Python)")
        key = str(path)
        if self._loaded is None or self._loaded[0] != key:
            self._loaded = (key, load_model(path))
        model = self._loaded[1]
        model.check_layout(layout, source=str(path))
        return model

    def check_trace(self, trace, role: str = "the sequence being simulated") -> None:
        """Before a run on ``trace`` (:func:`paging.simulate.simulate`; ``paging serve``: each
        sequence of its pool): refuse a sequence of a prompt the model was trained on
        (:func:`paging.learned.model.check_prompt`), which the run's own check, by the pages
        it hears, cannot see."""
        from paging.learned.model import check_prompt

        check_prompt(self._model_for(trace.layout), trace, role)

    def reset(self, ctx: Context) -> None:
        super().reset(ctx)
        from paging.learned.model import PREFIX

        self.model = self._model_for(ctx.layout)
        n = ctx.n_requests
        m = min(PREFIX, n)
        self._watch = [rec for rec in self.model.trained_on
                       if rec.get("n_requests") == n]  # only same-length sequences can match
        self._prefix_len = m
        self._prefix: list[int] = []

    def _touch(self, t, page):
        super()._touch(t, page)
        if self._watch and t < self._prefix_len:
            self._prefix.append(page)
            if t == self._prefix_len - 1:
                self._check_prefix()

    def _check_prefix(self) -> None:
        from paging.learned.model import check_prefix

        check_prefix(self._watch, self._prefix)
        self._watch = []

    def victim(self, t: int, page: int, cache: CacheView) -> int:
        cands = np.fromiter(cache.candidates, dtype=np.int64)
        score = self.model.net.forward(self.features(t, page, cands))
        return int(cands[int(np.argmax(score))])


class ExpectedNextUse(_History):
    """Evict the candidate whose next request is expected furthest in the future.

    A frequency-based stand-in for Belady's rule (Belady 1966) on the layer clock. For a
    candidate q of layer z at a request of layer c (layer clock s, ℓ layers, n experts):

    * layer distance  d(q) = ((z − c − 1) mod ℓ) + 1 ∈ 1..ℓ: the steps until the clock next
      reaches layer z (LLRU's D read forwards: Angelopoulos et al., "Cache Management for
      Mixture-of-Experts LLMs", 2025, Def. 2);
    * per-layer frequency  p̂(q) = (c_γ(q) + a) / (v_γ(z) + a·n): c_γ(q) counts q's requests
      and v_γ(z) the requests of layer z, each request weighted γ^j where j is the number of
      later requests of layer z (exponential forgetting per layer visit; γ = 1: whole
      history, "perfect" frequency as in the package's LFU); a = 0.5 is a Krichevsky-Trofimov
      prior (a page never requested gets p̂ > 0);
    * if each visit of layer z requested q independently with probability p̂(q), its next
      request would come after E = d(q) + ℓ·(1/p̂(q) − 1) steps (geometric number of visits);
      the candidate with the largest E is evicted, ties to the largest page id.

    With γ = 1 and equal layer distances this is LFU within a layer; d adds LLRU's "the layer
    just served goes first". ``gamma`` is the one tuned parameter; the README's comparison
    uses ``gamma=1.0`` (chosen on granite; on Mixtral it is worse than LLRU). Not registered:
    kept, with its tests, as the earlier designed attempt that ``token-hazard`` replaced.

    Cost: O(1) per hit or insert; O(k) numpy work per eviction.
    """

    name = "enu"
    registered = False  # a diagnostic (README, learned eviction), not a registered policy

    def __init__(self, gamma: float = 1.0, prior: float = 0.5):
        if not (0.0 < float(gamma) <= 1.0):
            raise PagingError(f"enu: gamma must be in (0, 1], got {gamma!r}")
        if not float(prior) > 0.0:
            raise PagingError(f"enu: prior must be > 0, got {prior!r}")
        self.gamma, self.prior = float(gamma), float(prior)

    def reset(self, ctx: Context) -> None:
        super().reset(ctx)
        L = ctx.layout.n_layers
        self.c = np.zeros(ctx.layout.n_pages)        # decayed count, as of visit seen[q]
        self.seen = np.zeros(ctx.layout.n_pages)     # layer-visit index of q's last update
        self.visits = np.zeros(L)                    # decayed visits of each layer
        self.n_visits = np.zeros(L)                  # raw visits of each layer

    def _touch(self, t, page):
        super()._touch(t, page)
        z = page // self.ctx.layout.n_experts
        g = self.gamma
        nv = self.n_visits[z]
        self.c[page] = self.c[page] * g ** (nv - self.seen[page]) + 1.0
        self.seen[page] = nv + 1
        self.visits[z] = self.visits[z] * g + 1.0
        self.n_visits[z] = nv + 1

    def expected_next(self, t: int, cands: np.ndarray) -> np.ndarray:
        """E for every candidate (formula above)."""
        lay = self.ctx.layout
        L, n = lay.n_layers, lay.n_experts
        z = cands // n
        c_now = int(self._steps[t]) % L
        cnt = self.c[cands] * self.gamma ** (self.n_visits[z] - self.seen[cands])
        p_hat = (cnt + self.prior) / (self.visits[z] + self.prior * n)
        d = (z - c_now - 1) % L + 1
        return d + L * (1.0 / p_hat - 1.0)

    def victim(self, t: int, page: int, cache: CacheView) -> int:
        cands = np.fromiter(cache.candidates, dtype=np.int64)
        e = self.expected_next(t, cands)
        best = np.flatnonzero(e == e.max())
        return int(cands[best].max())
