"""The arithmetic the latency timeline calls: transfer, compute, tiers, budgets.

Pure functions of a :class:`~paging.cost.presets.Model`, a
:class:`~paging.cost.presets.Precision` and a :class:`~paging.cost.presets.Hardware`. Times are in
milliseconds (float), sizes in bytes (int), 1 GB = 1e9 bytes, bandwidths in GB/s, latencies in
microseconds. The modelling choices (stated in docs/COST_MODEL.md too):

* a host transfer costs ``latency + bytes / link bandwidth`` (one cudaMemcpy from pinned memory);
* an SSD fetch is staged through host memory and NOT overlapped: the whole expert is read from
  the SSD into a pinned host buffer, then copied to the GPU (``ssd latency + bytes / ssd
  bandwidth`` then a host transfer). Without chunking, the copy of one buffer cannot start
  before its read ends; chunked pipelining would approach ``latency + bytes / min(bandwidths)``,
  so this is the conservative end. Overlap between *different* experts is the timeline's job;
* compute is a roofline: ``max(bytes / HBM bandwidth, FLOPs / peak)``, with quantised weights
  read at their stored size and multiplied at the BF16 peak (dequantise, then a BF16 matmul);
* non-expert weights are 16-bit and spread evenly over the layers (embeddings and LM head
  included as if they were matmul weights); KV-cache traffic and attention-score FLOPs, which
  grow with the context, are ignored.
"""

from __future__ import annotations

import numbers
from decimal import Decimal

import numpy as np

from paging.cost.presets import (
    KV_BYTES,
    NON_EXPERT_BYTES,
    Hardware,
    Model,
    Precision,
    get_precision,
)
from paging.errors import PagingError

TIER_HOST = 0
TIER_SSD = 1
TIERS = {"host": TIER_HOST, "ssd": TIER_SSD}


def _precision(q: Precision | str) -> Precision:
    return get_precision(q) if isinstance(q, str) else q


def _nonneg(name: str, value, integer: bool = False):
    ok = isinstance(value, numbers.Integral if integer else numbers.Real)
    if isinstance(value, bool) or not ok or not value >= 0:
        kind = "an integer" if integer else "a number"
        raise PagingError(f"{name} must be {kind} >= 0, got {value!r}")
    return value


def transfer_ms(nbytes: int, hardware: Hardware, tier: str = "host") -> float:
    """Time in ms to bring ``nbytes`` to the GPU from ``tier`` (``"host"`` or ``"ssd"``).

    host: ``link_latency + nbytes / link_bandwidth``;
    ssd:  ``ssd_latency + nbytes / ssd_bandwidth`` + the host transfer (staged, not overlapped;
    see the module docstring).

    >>> from paging.cost import get_hardware
    >>> round(transfer_ms(5_000_000, get_hardware("link-5gbps")), 9)  # 10 us + 1 ms
    1.01
    """
    _nonneg("nbytes", nbytes, integer=True)
    host = hardware.link_latency_us / 1e3 + nbytes / (hardware.link_gbps * 1e9) * 1e3
    if tier == "host":
        return host
    if tier == "ssd":
        return hardware.ssd_latency_us / 1e3 + nbytes / (hardware.ssd_gbps * 1e9) * 1e3 + host
    raise PagingError(f"unknown tier {tier!r}; valid: host, ssd")


def _roofline_ms(nbytes: int, flops: float, hardware: Hardware) -> float:
    return max(nbytes / (hardware.hbm_gbps * 1e9), flops / (hardware.peak_tflops * 1e12)) * 1e3


def expert_compute_ms(model: Model, precision: Precision | str, hardware: Hardware,
                      tokens: int) -> float:
    """Time in ms for one expert to process ``tokens`` tokens on the GPU (roofline).

    ``max(expert_bytes / HBM bandwidth, 2 * expert_params * tokens / peak BF16 FLOP/s)``.
    Decode (tokens = 1) is memory-bound; large prefill batches are compute-bound. The crossover
    for bf16 on the A100 preset is 312e12 / 1.935e12 = 161 tokens.
    """
    tokens = _nonneg("tokens", tokens, integer=True)
    return _roofline_ms(model.expert_bytes(_precision(precision)),
                        2.0 * model.expert_params * tokens, hardware)


def non_expert_ms(model: Model, hardware: Hardware, tokens: int) -> float:
    """Time in ms for the non-expert part of ONE layer to process ``tokens`` tokens (roofline).

    The ``non_expert_params`` are assumed 16-bit (:data:`~paging.cost.presets.NON_EXPERT_BYTES`
    = 2 bytes each) and spread evenly over the ``n_layers``: ``max(2 * P / ℓ bytes / HBM
    bandwidth, 2 * P / ℓ * tokens / peak)``. KV-cache reads and attention-score FLOPs are
    ignored (they depend on the context length).
    """
    tokens = _nonneg("tokens", tokens, integer=True)
    per_layer = model.non_expert_params / model.n_layers
    return _roofline_ms(NON_EXPERT_BYTES * per_layer, 2.0 * per_layer * tokens, hardware)


def attention_ms(model: Model, hardware: Hardware, kv_tokens: int) -> float:
    """Time in ms for ONE layer's attention to read the KV cache of ``kv_tokens`` cached tokens
    (summed over the requests of a forward pass; the serving model, :mod:`paging.serve`).

    Memory-bound: ``kv_tokens * 2 (K and V) * kv_width * 2 bytes (16-bit,
    :data:`~paging.cost.presets.KV_BYTES`) / HBM bandwidth``;
    the attention's FLOPs are left out (assumption: at serving batch sizes decode attention is
    bound by the KV reads), and so is the whole term when the model's ``kv_width`` is 0 (not
    known).
    """
    kv_tokens = _nonneg("kv_tokens", kv_tokens, integer=True)
    return kv_tokens * 2 * KV_BYTES * model.kv_width / (hardware.hbm_gbps * 1e9) * 1e3


def page_sizes(model: Model, precision: Precision | str) -> np.ndarray:
    """Bytes of every page (int64, one per page id 0..nℓ-1); all experts have the same size."""
    return np.full(model.layout.n_pages, model.expert_bytes(_precision(precision)),
                   dtype=np.int64)


def place_by_frequency(freq, host_capacity_pages: int) -> np.ndarray:
    """Tier of every page: the ``host_capacity_pages`` most frequent pages in host DRAM
    (:data:`TIER_HOST` = 0), the others on the SSD (:data:`TIER_SSD` = 1).

    Ties in frequency go to the smaller page id (a stable sort of ``-freq``). A capacity of 0
    puts everything on the SSD; one above the page count puts everything in DRAM.

    >>> place_by_frequency([3, 5, 3, 0], 2).tolist()
    [0, 0, 1, 1]
    """
    f = np.asarray(freq)
    if f.ndim != 1 or f.size == 0 or not np.issubdtype(f.dtype, np.number) or (f < 0).any():
        raise PagingError("freq must be a non-empty 1-D array of counts >= 0, one per page")
    cap = _nonneg("host_capacity_pages", host_capacity_pages, integer=True)
    order = np.argsort(-f, kind="stable")
    tiers = np.full(f.size, TIER_SSD, dtype=np.int8)
    tiers[order[:cap]] = TIER_HOST
    return tiers


def page_costs(model: Model, precision: Precision | str, hardware: Hardware,
               tiers) -> np.ndarray:
    """Fetch cost in ms of every page id from the tier that holds it (float64, length nℓ).

    ``tiers`` is :func:`place_by_frequency`'s array (0 host, 1 SSD). Every page of a tier costs
    the same, since all experts have one size: host pages ``transfer_ms(b, hw, "host")``, SSD
    pages ``transfer_ms(b, hw, "ssd")`` with ``b = model.expert_bytes(precision)``.
    """
    t = np.asarray(tiers)
    n = model.layout.n_pages
    if t.shape != (n,) or not np.isin(t, (TIER_HOST, TIER_SSD)).all():
        raise PagingError(f"tiers must hold {n} entries (one per page of {model.name}), each 0 "
                          f"(host) or 1 (ssd)")
    b = model.expert_bytes(_precision(precision))
    return np.where(t == TIER_HOST, transfer_ms(b, hardware, "host"),
                    transfer_ms(b, hardware, "ssd")).astype(np.float64)


def budget_bytes(gb: float, name: str = "the budget") -> int:
    """A budget of ``gb`` GB in bytes, with 1 GB = 1e9 bytes (SI, as SpecMD's "0.6GB"),
    rounded down to whole bytes; the decimal text of ``gb`` is used, so 0.1 GB is exactly
    100,000,000 bytes. ``name``: what the errors call it (the option, ``--budget-gb``).

    >>> budget_bytes(0.6)
    600000000
    """
    if isinstance(gb, bool) or not isinstance(gb, numbers.Real) or not gb > 0 \
            or gb == float("inf"):
        raise PagingError(f"{name} must be a number of GB > 0, got {gb!r}")
    b = int(Decimal(str(gb)) * 10**9)
    if b < 1:  # (the simulator's "byte budget must be >= 1, got 0" named no budget given)
        raise PagingError(f"{name + ': ' if name != 'the budget' else ''}a budget of {gb!r} GB "
                          "is less than one byte; expected at least 1e-9 GB")
    return b


def model_bytes(model: Model, precision: Precision | str = "bf16") -> int:
    """Bytes of the whole model with its experts at ``precision`` and the non-expert
    parameters at 16 bits (:data:`~paging.cost.presets.NON_EXPERT_BYTES`): ``ℓ·n·expert_bytes
    + 2·non_expert_params``. At bf16 this is
    SpecMD's "full model size" (Table 3: 86.99 GiB for Mixtral-8x7B, read as GiB like every
    Table 3 size in :mod:`paging.cost.presets`)."""
    q = _precision(precision)
    return (model.n_layers * model.n_experts * model.expert_bytes(q)
            + NON_EXPERT_BYTES * model.non_expert_params)


def share_budget(model: Model, pct: float) -> int:
    """SpecMD's capacity "1%, 5%, or 25% of full model size" (Sec. 5.1) in bytes: ``pct`` % of
    :func:`model_bytes` at 16 bits, rounded down. One unit throughout: bytes of the 16-bit
    model as the presets compute it (Table 3's GB are GiB), so 5 % of Mixtral is 4.67e9 bytes
    (the paper's "at most 21GB and as few as 0.8GB for Mixtral" are 25 % and 1 %).

    >>> from paging.cost.presets import get_model
    >>> share_budget(get_model("mixtral-8x7b"), 5)
    4670240063
    """
    if isinstance(pct, bool) or not isinstance(pct, numbers.Real) or not 0 < pct <= 100:
        raise PagingError(f"the capacity share must be a percentage in (0, 100], got {pct!r}")
    b = int(Decimal(str(pct)) * model_bytes(model, "bf16") // 100)
    if b < 1:  # (as budget_bytes)
        raise PagingError(f"a capacity share of {pct!r} % of {model.name} is less than one "
                          "byte; expected a share of about "
                          f"{100 / model_bytes(model, 'bf16'):.3g} % or more")
    return b


def capacity_pages(budget: int, model: Model, precision: Precision | str) -> int:
    """How many whole experts fit in ``budget`` bytes: ``budget // expert_bytes``."""
    _nonneg("budget", budget, integer=True)
    return int(budget) // model.expert_bytes(_precision(precision))
