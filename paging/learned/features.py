"""FlashMoE's per-expert features: recency r_t and frequency f_t, normalised to [1/r, f/max f].

Kim et al., "FlashMoE: Reducing SSD I/O Bottlenecks via ML-Based Cache Replacement for
Mixture-of-Experts Inference on Edge Devices" (2025), Sec. 3.2 and Algorithm 1. At time step t,
for every expert:

* accessed at t:      r_t = 1,            f_t = f_{t−1} + 1;
* not accessed at t:  r_t = r_{t−1} + 1,  f_t = f_{t−1};
* never accessed:     r = ∞, f = 0  ("unrouted experts remain at infinity", Fig. 4);
* input to the network: [1/r_t, f_t / max f] (1/∞ = 0; max over every expert "observed so far").

Readings (the paper leaves these open):

* time step: the paper's step is a decoding step of one layer's cache; here it is the layer
  clock ``steps[t]`` of the trace (:mod:`paging.trace`): one request in rounds mode, one
  (token, layer) group in groups mode. One network scores every page of the shared cache (the
  paper trains "per-layer" networks for per-layer caches; with k shared across layers we use
  one network, which also keeps the model small and the training data pooled);
* the features are taken after step t's update, when the victim for step t's miss is chosen:
  a candidate (not requested at t) has r = t − τ + 1 ≥ 2 with τ its last step, and max f
  includes the requested page's new count;
* no layer distance or other feature: the paper's input is exactly [1/r ∥ f/max f].
"""

from __future__ import annotations

import numpy as np


def recency_frequency(routed: list[list[int]], n: int) -> tuple[np.ndarray, np.ndarray]:
    """The paper's update rules, step by step: ``routed[t]`` lists the experts (0..n−1) routed
    at step t. Returns ``(r, f)`` of shape (T, n), the scores after each step's update
    (``r = inf`` for never-routed experts). Cost O(T·n); for checks and figures, the policies
    keep the same state incrementally in O(1) per request."""
    T = len(routed)
    r = np.full((T, n), np.inf)
    f = np.zeros((T, n))
    cur_r = np.full(n, np.inf)
    cur_f = np.zeros(n)
    for t, experts in enumerate(routed):
        cur_r = cur_r + 1.0  # not accessed: r_{t-1} + 1 (inf stays inf)
        for e in experts:
            cur_r[e] = 1.0
            cur_f[e] += 1.0
        r[t], f[t] = cur_r, cur_f
    return r, f


def normalise(r: np.ndarray, f: np.ndarray, f_max: float | None = None) -> np.ndarray:
    """The network input [1/r, f/max f] as an array of shape (..., 2); ``f_max`` defaults to
    the largest f given (0/0 is taken as 0: nothing routed yet)."""
    r = np.asarray(r, dtype=np.float64)
    f = np.asarray(f, dtype=np.float64)
    m = float(np.max(f)) if f_max is None else float(f_max)
    inv_r = np.where(np.isinf(r), 0.0, 1.0 / np.where(np.isinf(r), 1.0, r))
    fn = f / m if m > 0 else np.zeros_like(f)
    return np.stack([inv_r, fn], axis=-1)
