"""Seeded synthetic request sequences for layered paging (Angelopoulos et al.).

Three families, all vectorised (10^8 requests in seconds, memory ~2 int64 arrays of the trace):

``zipf``
    Sec. 5.1: "the j-th page of a layer will have a probability of being sampled
    p_j ~ 1/(j+h)^a". Within every layer the popularity rank j = 1..n has weight ``1/(j+h)^a``.
    Which expert holds rank j is a per-layer random permutation drawn from the seed
    (``perm="random"``, the default: layers do not share their favourite expert), or rank j is
    expert j-1 in every layer (``perm="identity"``). The paper does not say which; the default
    avoids an artificial alignment of the popular experts across layers.
``uniform``
    The random sequence of Theorem 4's proof (Yao's principle): every request is uniform over the
    n experts of its layer.
``cyclic``
    Theorem 3's sequence: round i requests expert ``i mod n`` of every layer, so ``rounds=R`` gives
    R·ℓ requests.
``router``
    Synthetic router *logits* (SYNTHETIC, never real data) for cache-aware routing: per layer a
    Zipf popularity bias plus a persistent AR(1) term per expert, whose three constants were
    fitted to the Mixtral-8x7B HumanEval decode trace (:func:`router`,
    :mod:`paging.routing.fit`). The trace carries the full logits and requests the top-K.

``tokens=T`` gives one expert per layer per token (T·ℓ requests). ``topk=K`` draws K distinct
experts per (token, layer) — for Zipf without replacement with probability proportional to the
weights (successive sampling: the K smallest of ``E_e / w_e`` with ``E_e ~ Exp(1)``, which is the
Gumbel-top-k trick), listed in draw order (rank 0 = first drawn, the analogue of the highest gate
score) — and expands the table like a real trace with :func:`paging.trace.from_routing`.

Every random choice comes from ``numpy.random.default_rng(seed)``: first the per-layer
permutations (Zipf), then the draws token block by token block. For K=1 the Zipf and uniform
draws are exact inverse-CDF / bounded-integer draws in float64 / int64 arithmetic.

Spec strings (the ``TRACE`` argument of the ``paging`` command, DESIGN.md)::

    zipf:n=8,layers=32,tokens=1000,a=1.0,h=0,seed=0[,topk=K][,perm=random|identity]
    uniform:n=4,layers=8,tokens=500,seed=1[,topk=K]
    cyclic:n=4,layers=8,rounds=100
    router:n=8,layers=32,tokens=500,k=2,seed=0[,a=A,rho=R,sigma=S]

Defaults: a=1.0, h=0, seed=0, topk=1, perm=random; router: k=2 and the fitted a, rho, sigma.
"""

from __future__ import annotations

import math

import numpy as np

from paging.errors import PagingError
from paging.layout import Layout
from paging.trace import EXPANSIONS, Trace, from_routing

KINDS = ("zipf", "uniform", "cyclic", "router")
PERMS = ("random", "identity")
#: draws are made this many (token, layer) cells at a time (keeps temporaries small)
_BLOCK_CELLS = 1 << 21


# -- argument checks ---------------------------------------------------------------------------
def _int(name: str, v: object, lo: int, hi: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise PagingError(f"{name} must be an integer, got {v!r}")
    if v < lo or (hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else f"in {lo}..{hi}"
        raise PagingError(f"{name} must be an integer {rng}, got {v}")
    return int(v)


def _float(name: str, v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise PagingError(f"{name} must be a number, got {v!r}")
    if not math.isfinite(v) or v < 0:
        raise PagingError(f"{name} must be a finite number >= 0, got {v}")
    return float(v)


def _check_memory(requests: int) -> None:
    """Refuse, before allocating anything, a sequence whose pages and steps alone would not fit
    in this machine's memory (:func:`paging.memory.check_requests`)."""
    from paging.memory import check_requests

    check_requests(requests, "Use fewer tokens or rounds")


#: what :func:`_expert_weights` holds per page (n x ℓ): the rank table, its permuted copy and
#: the weights, 8 bytes each
TABLE_BYTES = 24


def _check_tables(n: int, layers: int) -> None:
    """Refuse, before allocating them, per-layer popularity tables (:data:`TABLE_BYTES` per
    page) that would not fit in memory: a Zipf spec with n = 10^9 asked for 48 GB in its first
    allocations (a MemoryError, or the process killed by the system)."""
    from paging.memory import check_memory

    check_memory(TABLE_BYTES * n * layers, f"n*layers = {n * layers:,} pages",
                 f" for the per-layer Zipf tables ({TABLE_BYTES} bytes per page)",
                 ": expected fewer experts (n) or layers")


def _expand(expand: str) -> str:
    if expand not in EXPANSIONS:
        raise PagingError(f"expand must be one of {', '.join(EXPANSIONS)}, got {expand!r}")
    return expand


# -- building blocks ---------------------------------------------------------------------------
def zipf_weights(n: int, a: float = 1.0, h: float = 0.0) -> np.ndarray:
    """Normalised popularity of ranks j = 1..n: ``p_j = (j+h)^-a / sum_i (i+h)^-a``
    (Angelopoulos et al., Sec. 5.1).

    The weights are taken relative to rank 1, ``((j+h)/(1+h))^-a`` (the same law; bit for bit
    the same numbers when h = 0), so rank 1's is 1 and the sum never underflows: ``(j+h)^-a``
    itself is 0 in float64 for every j once ``a·ln(1+h) > 745`` (a = h = 10^6, whose law is
    close to the geometric ``e^-(j-1)``), and 0/0 made every weight NaN."""
    n, a, h = _int("n", n, 1), _float("a", a), _float("h", h)
    w = ((np.arange(1, n + 1, dtype=np.float64) + h) / (1.0 + h)) ** -a
    return w / w.sum()


def _assemble(layout: Layout, pages: np.ndarray, name: str, expand: str, meta: dict) -> Trace:
    """A K=1 trace (request i is a page of layer i mod ℓ by construction). The arrays are frozen
    first so that :class:`Trace` adopts them without a copy."""
    steps = np.arange(pages.size, dtype=np.int64)
    pages = np.ascontiguousarray(pages, dtype=np.int64)
    pages.setflags(write=False)
    steps.setflags(write=False)
    return Trace(layout, pages, steps, name, expand=expand, meta=meta)


def _blocks(tokens: int, cells_per_token: int):
    """Token blocks ``(t0, t1)`` of at most ``_BLOCK_CELLS`` cells."""
    step = max(1, _BLOCK_CELLS // max(1, cells_per_token))
    for t0 in range(0, tokens, step):
        yield t0, min(tokens, t0 + step)


def _expert_weights(rng: np.random.Generator, n: int, layers: int, w: np.ndarray,
                    perm: str, ranks: bool = False):
    """``q[z, e]``: weight of expert e in layer z; rank j (0-based) is expert ``perm_z[j]``
    (with ``ranks``: ``(q, perm)``, ``perm[z, j]`` the expert of rank j in layer z)."""
    order = np.tile(np.arange(n), (layers, 1))
    if perm == "random":
        order = rng.permuted(order, axis=1)
    q = np.empty((layers, n))
    q[np.arange(layers)[:, None], order] = w[None, :]
    return (q, order) if ranks else q


def _sample_one(rng: np.random.Generator, q: np.ndarray, tokens: int) -> np.ndarray:
    """Pages of T tokens x ℓ layers, one expert per cell, expert e of layer z with probability
    ``q[z, e] / sum(q[z])`` (inverse CDF on float64 uniforms)."""
    L = q.shape[0]
    pages = np.empty(tokens * L, dtype=np.int64)
    for t0, t1, block in _sample_blocks(rng, q, tokens):
        pages[t0 * L:t1 * L] = block
    return pages


def _sample_blocks(rng: np.random.Generator, q: np.ndarray, tokens: int):
    """:func:`_sample_one` a token block at a time: ``(t0, t1, pages of tokens t0..t1-1)``,
    the same draws in the same order (so the blocks joined are :func:`_sample_one`'s pages)."""
    L, n = q.shape
    cdf = np.cumsum(q, axis=1)
    th = cdf[:, :-1] / cdf[:, -1:]
    offs = np.arange(L, dtype=np.int64) * n
    for t0, t1 in _blocks(tokens, L):
        u = rng.random((t1 - t0, L))
        if n <= 33:
            e = np.zeros(u.shape, dtype=np.int16)
            for j in range(n - 1):
                e += u >= th[None, :, j]
        else:
            e = np.empty(u.shape, dtype=np.int64)
            for z in range(L):
                e[:, z] = np.searchsorted(th[z], u[:, z], side="right")
        block = np.empty((t1 - t0, L), dtype=np.int64)
        np.add(e, offs[None, :], out=block)
        yield t0, t1, block.reshape(-1)


def zipf_chunks(n: int, layers: int, tokens: int, *, a: float = 1.0, h: float = 0.0,
                seed: int | None = 0, perm: str = "random"):
    """:func:`zipf` (``topk=1``, rounds mode) as a stream of page chunks, for sequences larger
    than memory (:mod:`paging.stream`): yields int64 page arrays of about 2^21 requests whose
    concatenation is exactly ``zipf(n, layers, tokens, a=a, h=h, seed=seed, perm=perm).pages``
    (same seed, same draws, same order); memory one chunk.

    >>> import numpy as np
    >>> whole = zipf(8, 4, 1000, seed=5).pages
    >>> bool(np.array_equal(np.concatenate(list(zipf_chunks(8, 4, 1000, seed=5))), whole))
    True
    """
    n, layers, tokens = _int("n", n, 1), _int("layers", layers, 1), _int("tokens", tokens, 0)
    a, h = _float("a", a), _float("h", h)
    if perm not in PERMS:
        raise PagingError(f"perm must be one of {', '.join(PERMS)}, got {perm!r}")
    _check_tables(n, layers)
    rng = np.random.default_rng(seed)
    q = _expert_weights(rng, n, layers, zipf_weights(n, a, h), perm)
    return (block for _, _, block in _sample_blocks(rng, q, tokens))


def _sample_topk(rng: np.random.Generator, q: np.ndarray, tokens: int, k: int,
                 rank_order: np.ndarray | None = None) -> np.ndarray:
    """Routing table ``experts[T, ℓ, K]``: K distinct experts per cell, drawn without replacement
    proportionally to ``q[z]`` (the K smallest ``E/q`` with ``E ~ Exp(1)``), in draw order.

    A weight that underflows float64 (0, or a subnormal whose ``E/q`` overflows: a >= ~360 at
    n = 8) makes its key inf; the keys are sorted in each layer's rank order (``rank_order[z,
    j]``: the expert of rank j; default: by decreasing ``q``), so such experts follow one another
    by rank, as their true weights would have them (w.p. 1 - 10^-17 and more), not by expert
    id, and the division's warnings are not printed."""
    L, n = q.shape
    # (an Exp(1) draw is below 800, so a weight of 1e-300 or more keeps every key finite: then
    # the keys are sorted as they are, the same draws and order, without the extra gathers)
    tiny = bool((q < 1e-300).any())
    if tiny:
        if rank_order is None:
            rank_order = np.argsort(-q, axis=1, kind="stable")
        rank_order = np.asarray(rank_order, dtype=np.int64)[None, :, :]
    table = np.empty((tokens, L, k), dtype=np.int64)
    for t0, t1 in _blocks(tokens, L * n):
        with np.errstate(divide="ignore", over="ignore"):
            key = rng.standard_exponential((t1 - t0, L, n)) / q[None, :, :]
        if not tiny:
            table[t0:t1] = np.argsort(key, axis=2, kind="stable")[:, :, :k]
            continue
        key = np.take_along_axis(key, rank_order, axis=2)
        pick = np.argsort(key, axis=2, kind="stable")[:, :, :k]
        table[t0:t1] = np.take_along_axis(np.broadcast_to(rank_order, key.shape), pick, axis=2)
    return table


def _spec_name(kind: str, params: dict) -> str:
    return f"{kind}:" + ",".join(f"{k}={v}" for k, v in params.items())


# -- public generators -------------------------------------------------------------------------
def zipf(n: int, layers: int, tokens: int, *, a: float = 1.0, h: float = 0.0,
         seed: int | np.random.Generator | None = 0, topk: int = 1, perm: str = "random",
         expand: str = "rounds", name: str | None = None) -> Trace:
    """Layered Zipf sequence of Angelopoulos et al., Sec. 5.1.

    In every layer, popularity rank j = 1..n is requested with probability proportional to
    ``1/(j+h)^a``; rank j is expert ``perm_z[j-1]`` (a per-layer random permutation drawn first
    from the seed, or the identity with ``perm="identity"``). Each of the T tokens requests one
    expert per layer (``topk=1``: T·ℓ requests, request i in layer i mod ℓ) or K distinct experts
    per layer drawn without replacement proportionally to the weights, expanded by
    :func:`paging.trace.from_routing` in mode ``expand`` (T·ℓ·K requests).

    Cost: O(T·ℓ·n) time for K=1 (n-1 vectorised comparisons per cell; binary search above
    n = 33), O(T·ℓ·n log n) for K > 1; memory two int64 arrays of the trace plus small blocks.
    """
    n, layers, tokens = _int("n", n, 1), _int("layers", layers, 1), _int("tokens", tokens, 0)
    a, h = _float("a", a), _float("h", h)
    topk = _int("topk", topk, 1, n)
    if perm not in PERMS:
        raise PagingError(f"perm must be one of {', '.join(PERMS)}, got {perm!r}")
    _expand(expand)
    params = {"n": n, "layers": layers, "tokens": tokens, "a": a, "h": h,
              "seed": seed if isinstance(seed, (int, np.integer)) else None, "topk": topk,
              "perm": perm}
    name = name or _spec_name("zipf", params)
    _check_memory(tokens * layers * topk)
    _check_tables(n, layers)
    rng = np.random.default_rng(seed)
    layout = Layout(n, layers)
    q, ranks = _expert_weights(rng, n, layers, zipf_weights(n, a, h), perm, ranks=True)
    meta = {"source": name, "format": "generator", "generator": "zipf", "params": params,
            "n_tokens": tokens, "top_k": topk, "dropped_tokens": 0}
    if topk == 1:
        return _assemble(layout, _sample_one(rng, q, tokens), name, expand, meta)
    return from_routing(_sample_topk(rng, q, tokens, topk, ranks), layout, expand, None, name,
                        meta)


def uniform(n: int, layers: int, tokens: int, *, seed: int | np.random.Generator | None = 0,
            topk: int = 1, expand: str = "rounds", name: str | None = None) -> Trace:
    """Uniform layered sequence: the random input of Theorem 4's proof (Angelopoulos et al.,
    Sec. 3.2, Yao's principle), each request uniform over the n experts of its layer.

    ``topk=K`` draws K distinct experts per (token, layer) uniformly (a uniformly random ordered
    K-subset) and expands them with :func:`paging.trace.from_routing`. Cost O(T·ℓ) for K=1.
    """
    n, layers, tokens = _int("n", n, 1), _int("layers", layers, 1), _int("tokens", tokens, 0)
    topk = _int("topk", topk, 1, n)
    _expand(expand)
    params = {"n": n, "layers": layers, "tokens": tokens,
              "seed": seed if isinstance(seed, (int, np.integer)) else None, "topk": topk}
    name = name or _spec_name("uniform", params)
    _check_memory(tokens * layers * topk)
    rng = np.random.default_rng(seed)
    layout = Layout(n, layers)
    meta = {"source": name, "format": "generator", "generator": "uniform", "params": params,
            "n_tokens": tokens, "top_k": topk, "dropped_tokens": 0}
    if topk > 1:
        q = np.ones((layers, n))
        return from_routing(_sample_topk(rng, q, tokens, topk), layout, expand, None, name, meta)
    offs = np.arange(layers, dtype=np.int64) * n
    pages = np.empty(tokens * layers, dtype=np.int64)
    for t0, t1 in _blocks(tokens, layers):
        e = rng.integers(0, n, size=(t1 - t0, layers))
        np.add(e, offs[None, :], out=pages[t0 * layers:t1 * layers].reshape(t1 - t0, layers))
    return _assemble(layout, pages, name, expand, meta)


def cyclic(n: int, layers: int, rounds: int, *, expand: str = "rounds",
           name: str | None = None) -> Trace:
    """Theorem 3's sequence (Angelopoulos et al., Sec. 3.1): round i (0-based) requests expert
    ``i mod n`` of every layer, a period of n rounds (nℓ requests); ``rounds=R`` gives R·ℓ
    requests. Deterministic, O(R·ℓ)."""
    n, layers, rounds = _int("n", n, 1), _int("layers", layers, 1), _int("rounds", rounds, 0)
    _expand(expand)
    params = {"n": n, "layers": layers, "rounds": rounds}
    name = name or _spec_name("cyclic", params)
    _check_memory(rounds * layers)
    offs = np.arange(layers, dtype=np.int64) * n
    pages = ((np.arange(rounds, dtype=np.int64) % n)[:, None] + offs[None, :]).reshape(-1)
    meta = {"source": name, "format": "generator", "generator": "cyclic", "params": params,
            "n_tokens": rounds, "top_k": 1, "dropped_tokens": 0}
    return _assemble(Layout(n, layers), pages, name, expand, meta)


#: Constants of the synthetic router model (:func:`router`), fitted to the Mixtral-8x7B-Instruct
#: HumanEval decode trace (2 problems, 32 layers x 8 experts, top-2) by
#: ``python -m paging.routing.fit \
#: $PAGING_TRACES/mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl``
#: (grid search, printed with the real and the fitted statistics; see README "Cache-aware routing").
ROUTER_FIT = {"a": 0.5, "rho": 0.3, "sigma": 2.0}


def router_logits(rng: np.random.Generator, n: int, layers: int, tokens: int, a: float,
                  rho: float, sigma: float) -> np.ndarray:
    """Logits ``z[T, ℓ, n]`` of the synthetic router model (see :func:`router`)."""
    bias = np.log(_expert_weights(rng, n, layers, zipf_weights(n, a, 0.0), "random"))
    z = np.empty((tokens, layers, n))
    x = rng.standard_normal((layers, n)) * sigma
    keep, fresh = rho, math.sqrt(max(0.0, 1.0 - rho * rho)) * sigma
    for t in range(tokens):
        if t:
            x = keep * x + fresh * rng.standard_normal((layers, n))
        z[t] = bias + x
    return z


def router(n: int, layers: int, tokens: int, *, k: int = 2, seed: int | None = 0,
           a: float | None = None, rho: float | None = None, sigma: float | None = None,
           expand: str = "rounds", name: str | None = None) -> Trace:
    """A SYNTHETIC trace with full router logits (for cache-aware routing, :mod:`paging.routing`).

    Model (documented, fitted; not a real router): for token t, layer z, expert e,

        z[t, z, e] = log q_z(e) + x[t, z, e],
        x[t] = rho · x[t-1] + sqrt(1 - rho²) · sigma · ε[t],   x[0] = sigma · ε[0],  ε ~ N(0, 1),

    where ``q_z`` is the Zipf popularity of Angelopoulos et al. Sec. 5.1 (``p_j ~ 1/j^a``) over a
    per-layer random permutation of the experts, and the AR(1) term makes an expert's preference
    persist from token to token (stationary variance sigma²). The requests are the top-K of
    every (token, layer) by logit, rank 0 the largest, with their softmax probabilities (over all
    n experts) as gate scores; the trace carries ``logits``.

    Defaults ``a, rho, sigma`` = :data:`ROUTER_FIT`, fitted to the Mixtral-8x7B HumanEval decode
    trace (per-layer popularity of the top-2, the share of a token's top-2 experts reused by the
    next token, the median log ratio of the two gate weights); ``python -m paging.routing.fit``
    re-derives them. Cost O(T·ℓ·n log n).
    """
    n, layers, tokens = _int("n", n, 2), _int("layers", layers, 1), _int("tokens", tokens, 0)
    k = _int("k", k, 1, n)
    a = ROUTER_FIT["a"] if a is None else _float("a", a)
    rho = ROUTER_FIT["rho"] if rho is None else _float("rho", rho)
    sigma = ROUTER_FIT["sigma"] if sigma is None else _float("sigma", sigma)
    if rho > 1:
        raise PagingError(f"rho must be in [0, 1], got {rho}")
    _expand(expand)
    params = {"n": n, "layers": layers, "tokens": tokens, "k": k,
              "seed": seed if isinstance(seed, (int, np.integer)) else None, "a": a, "rho": rho,
              "sigma": sigma}
    name = name or _spec_name("router", params)
    _check_memory(tokens * layers * (k + n))
    if zipf_weights(n, a).min() == 0:  # (log 0 = -inf: a warning, then a logit error)
        raise PagingError(f"a={a:g} makes the Zipf weight 1/j^a of the rarest of {n} experts 0 "
                          "in float64 (a logit of -inf); expected a smaller a")
    rng = np.random.default_rng(seed)
    with np.errstate(over="ignore", invalid="ignore"):
        z = router_logits(rng, n, layers, tokens, a, rho, sigma)
        if not np.isfinite(z).all():
            raise PagingError(f"sigma={sigma:g} overflows the logits in float64; expected a "
                              "smaller sigma")
        p = np.exp(z - z.max(axis=2, keepdims=True))
    table = np.argsort(-z, axis=2, kind="stable")[:, :, :k]
    p /= p.sum(axis=2, keepdims=True)
    scores = np.take_along_axis(p, table, axis=2)
    meta = {"source": name, "format": "generator", "generator": "router", "params": params,
            "n_tokens": tokens, "top_k": k, "dropped_tokens": 0, "synthetic": True,
            "scores": True}
    return from_routing(table, Layout(n, layers), expand, scores, name, meta, z)


# -- spec strings ------------------------------------------------------------------------------
_SCHEMA = {
    # key: (kind of value, required)
    "zipf": {"n": ("int", True), "layers": ("int", True), "tokens": ("int", True),
             "a": ("float", False), "h": ("float", False), "seed": ("int", False),
             "topk": ("int", False), "perm": ("str", False)},
    "uniform": {"n": ("int", True), "layers": ("int", True), "tokens": ("int", True),
                "seed": ("int", False), "topk": ("int", False)},
    "cyclic": {"n": ("int", True), "layers": ("int", True), "rounds": ("int", True)},
    "router": {"n": ("int", True), "layers": ("int", True), "tokens": ("int", True),
               "k": ("int", False), "seed": ("int", False), "a": ("float", False),
               "rho": ("float", False), "sigma": ("float", False)},
}
_FUNCS = {"zipf": zipf, "uniform": uniform, "cyclic": cyclic, "router": router}


def is_spec(source: object) -> bool:
    """Whether ``source`` looks like a generator spec (``zipf:...``, ``uniform:...``,
    ``cyclic:...``) rather than a path."""
    return isinstance(source, str) and source.partition(":")[0].strip().lower() in KINDS \
        and ":" in source  # (names ignore case, as a policy's or a routing hook's do)


def parse_spec(spec: str, expand: str = "rounds") -> list[Trace]:
    """The trace of a generator spec string (see the module docstring), as a one-element list
    like the file readers return. Unknown or missing keys, non-numeric or negative values, a NaN,
    ``topk > n``, or ``tokens=0`` / ``rounds=0`` (no requests) are a
    :class:`~paging.errors.PagingError` naming the spec."""
    kind, args = spec_args(spec)
    try:
        return [_FUNCS[kind](**args, expand=expand, name=spec.strip())]
    except PagingError as e:
        if e.message.startswith("expand"):
            raise
        raise PagingError(f"spec {spec!r}: {e.message}") from None


def spec_args(spec: str) -> tuple[str, dict]:
    """``(kind, keyword arguments)`` of a generator spec, checked as :func:`parse_spec` checks
    them."""
    from paging.options import parse_spec as parse

    kind = spec.strip().partition(":")[0].strip().lower()
    if kind not in KINDS:
        raise PagingError(f"unknown generator {kind!r} in spec {spec!r}; expected one of "
                          f"{', '.join(KINDS)} (for example zipf:n=8,layers=32,tokens=1000)")
    schema = _SCHEMA[kind]
    expected = ", ".join(f"{k}{'' if req else ' (optional)'}" for k, (_, req) in schema.items())
    try:  # the package's one spec grammar, NAME:key=value,...
        _, opts = parse(spec, "spec")
    except PagingError as e:
        raise PagingError(f"{e.message}; expected {expected}") from None
    args: dict = {}
    for key, val in opts.items():
        if key not in schema:
            raise PagingError(f"spec {spec!r}: unknown key {key!r}; {kind} takes {expected}")
        typ = schema[key][0]
        if typ == "int":
            if not (val.isascii() and val.isdigit()):
                raise PagingError(f"spec {spec!r}: {key}={val} is not a non-negative integer")
            args[key] = int(val)
        elif typ == "float":
            try:
                args[key] = float(val)
            except ValueError:
                raise PagingError(f"spec {spec!r}: {key}={val} is not a number") from None
        else:
            args[key] = val
    missing = [k for k, (_, req) in schema.items() if req and k not in args]
    if missing:
        raise PagingError(f"spec {spec!r}: missing {', '.join(missing)}; {kind} takes {expected}")
    for key in ("tokens", "rounds"):  # (as a trace file without rows is refused by its reader)
        if args.get(key) == 0:
            raise PagingError(f"spec {spec!r}: {key}=0 gives no requests; expected {key} >= 1")
    return kind, args
