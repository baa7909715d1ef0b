"""A small multilayer perceptron in numpy: forward pass, backpropagation of the MSE loss, AdamW.

FlashMoE's eviction network (Kim et al., FlashMoE, Table 1: 3 layers, hidden size 128, SiLU,
MSELoss, AdamW, learning rate 1e-3, "learning rate decay" 1e-2) is tiny: with two input
features per page it has 2·128 + 128·128 + 128·1 weights (+ biases) = 17,025 parameters. We
write it in numpy rather than pull in a framework:

* clarity: the whole model, its gradient and the optimizer are ~100 lines that a reader can
  check against the formulas below, and the gradient is tested against finite differences
  (tests/unit/test_learned.py);
* speed: a training step on a batch of 256 rows is three matrix products forward and five
  backward (~0.2 ms); a training run on the shipped traces takes seconds. Inference scores the
  k eviction candidates in one batched forward pass (k·17k multiply-adds, ~20-60 µs);
* no dependency: torch (a heavy CPU wheel) stays out of the package; scikit-learn's
  MLPRegressor has neither SiLU nor AdamW.

Formulas (row-vector convention, batch X of shape (B, d0)):

    a_0 = X,  z_i = a_{i-1} W_i + b_i,  a_i = silu(z_i) for hidden layers, ŷ = z_L (linear output)
    silu(z) = z·σ(z),  silu'(z) = σ(z)·(1 + z·(1 − σ(z)))
    loss = mean over the batch of (ŷ − y)²   (torch's MSELoss, reduction="mean")

AdamW (Loshchilov & Hutter, "Decoupled Weight Decay Regularization", ICLR 2019), torch's
defaults β1 = 0.9, β2 = 0.999, ε = 1e-8, with decoupled decay λ on weights and biases alike
(as torch.optim.AdamW does):

    θ ← θ − lr·λ·θ;  m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²;
    θ ← θ − lr·(m / (1−β1^s)) / (sqrt(v / (1−β2^s)) + ε)

Reading of Table 1: "Learning Rate Decay 1e-2" is read as AdamW's weight decay λ = 1e-2 (it
is listed next to the optimizer, and 1e-2 is torch's AdamW default); no learning-rate schedule
is applied. "# Layer 3" is read as three linear layers (two hidden layers of 128).
Initialisation: torch's nn.Linear default, U(−1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and
biases, drawn from a numpy Generator built from the seed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def silu(z: np.ndarray) -> np.ndarray:
    return z / (1.0 + np.exp(-z))


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


@dataclass
class MLP:
    """Weights ``W[i]`` (shape (d_{i}, d_{i+1})) and biases ``b[i]`` of a SiLU network with a
    linear scalar output. Float64 throughout (training and inference give the same numbers on
    every machine with IEEE doubles and the same BLAS order)."""

    W: list[np.ndarray]
    b: list[np.ndarray]

    @classmethod
    def init(cls, sizes: tuple[int, ...], seed: int) -> MLP:
        """torch-style uniform initialisation from ``numpy.random.default_rng(seed)``."""
        rng = np.random.default_rng(seed)
        W, b = [], []
        for d_in, d_out in zip(sizes[:-1], sizes[1:], strict=True):
            bound = 1.0 / np.sqrt(d_in)
            W.append(rng.uniform(-bound, bound, size=(d_in, d_out)))
            b.append(rng.uniform(-bound, bound, size=d_out))
        return cls(W, b)

    @property
    def sizes(self) -> tuple[int, ...]:
        return (self.W[0].shape[0],) + tuple(w.shape[1] for w in self.W)

    @property
    def n_params(self) -> int:
        return sum(w.size + c.size for w, c in zip(self.W, self.b, strict=True))

    def forward(self, X: np.ndarray) -> np.ndarray:
        """ŷ for every row of X, shape (B,). Cost O(B · n_params)."""
        a = X
        last = len(self.W) - 1
        for i, (w, c) in enumerate(zip(self.W, self.b, strict=True)):
            z = a @ w + c
            a = z if i == last else silu(z)
        return a[:, 0]

    def loss_and_grad(self, X: np.ndarray, y: np.ndarray):
        """MSE loss mean((ŷ − y)²) and its gradient with respect to every W and b."""
        zs, acts = [], [X]
        a = X
        last = len(self.W) - 1
        for i, (w, c) in enumerate(zip(self.W, self.b, strict=True)):
            z = a @ w + c
            zs.append(z)
            a = z if i == last else silu(z)
            acts.append(a)
        yhat = a[:, 0]
        B = X.shape[0]
        diff = yhat - y
        loss = float(np.mean(diff * diff))
        delta = (2.0 / B) * diff[:, None]  # dL/dz_L
        gW: list[np.ndarray] = [None] * len(self.W)  # type: ignore[list-item]
        gb: list[np.ndarray] = [None] * len(self.W)  # type: ignore[list-item]
        for i in range(last, -1, -1):
            gW[i] = acts[i].T @ delta
            gb[i] = delta.sum(axis=0)
            if i > 0:
                z = zs[i - 1]
                s = _sigmoid(z)
                delta = (delta @ self.W[i].T) * (s * (1.0 + z * (1.0 - s)))
        return loss, gW, gb


@dataclass
class AdamW:
    """AdamW state for an :class:`MLP` (formulas in the module docstring)."""

    lr: float = 1e-3
    weight_decay: float = 1e-2
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    step_count: int = 0
    m: list = field(default_factory=list)
    v: list = field(default_factory=list)

    def step(self, net: MLP, gW, gb) -> None:
        params = net.W + net.b
        grads = list(gW) + list(gb)
        if not self.m:
            self.m = [np.zeros_like(p) for p in params]
            self.v = [np.zeros_like(p) for p in params]
        self.step_count += 1
        s = self.step_count
        c1 = 1.0 - self.beta1 ** s
        c2 = 1.0 - self.beta2 ** s
        for p, g, m, v in zip(params, grads, self.m, self.v, strict=True):
            p *= 1.0 - self.lr * self.weight_decay  # decoupled decay (in place: W, b are views)
            m *= self.beta1
            m += (1.0 - self.beta1) * g
            v *= self.beta2
            v += (1.0 - self.beta2) * (g * g)
            p -= self.lr * (m / c1) / (np.sqrt(v / c2) + self.eps)


def fit(net: MLP, X: np.ndarray, y: np.ndarray, *, epochs: int, batch: int, seed: int,
        lr: float = 1e-3, weight_decay: float = 1e-2, on_epoch=None) -> list[float]:
    """Minibatch AdamW on the MSE loss; the row order of every epoch is a permutation drawn from
    ``default_rng(seed)``. Returns the mean training loss of each epoch; ``on_epoch(loss)`` is
    called after each (for a progress bar). Deterministic: the same data, sizes and seed give
    bit-identical weights, whatever the number of BLAS threads: the products run on one
    (OpenBLAS splits a product such as (m, 128) @ (128, 128) differently on two threads when
    m >= 33 and m mod 4 is 1 or 2, a last partial batch's shape, and the model's bytes then
    depended on ``OPENBLAS_NUM_THREADS``)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        return _fit(net, X, y, epochs=epochs, batch=batch, seed=seed, lr=lr,
                    weight_decay=weight_decay, on_epoch=on_epoch)


def _fit(net, X, y, *, epochs, batch, seed, lr, weight_decay, on_epoch) -> list[float]:
    rng = np.random.default_rng(seed)
    opt = AdamW(lr=lr, weight_decay=weight_decay)
    history = []
    n = X.shape[0]
    for _ in range(epochs):
        order = rng.permutation(n)
        total = 0.0
        for start in range(0, n, batch):
            idx = order[start:start + batch]
            loss, gW, gb = net.loss_and_grad(X[idx], y[idx])
            opt.step(net, gW, gb)
            total += loss * idx.size
        history.append(total / max(n, 1))
        if on_epoch is not None:
            on_epoch(history[-1])
    return history
