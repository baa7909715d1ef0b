"""ZipMoE's cache pools and compression forms in the cost model (Yang et al., "ZipMoE",
../shared/papers/zipmoe_compression-cache-affinity.txt, Sec. 2.2-2.3, 3.2-3.4, App. C).

Why here and not in :mod:`paging.zipmoe`: what a pool *costs* (bytes of one expert in each
form, read and decompression times) is cost-model arithmetic of a :class:`~paging.cost.Model`,
:class:`~paging.cost.Precision` and :class:`~paging.cost.Hardware`, and its parameters must be
:class:`~paging.cost.Source` records of :data:`paging.cost.SOURCES` (rendered into
docs/COST_MODEL.md). :mod:`paging.zipmoe` keeps the paper's theory (hit model, scheduler) and
the planner that composes them with these numbers.

The forms of one BF16 expert of ``s`` bytes, as this module reads Sec. 3.2 and 3.4 (the bit
split is Sec. 2.2: 1 sign + 8 exponent + 7 mantissa bits, so exponent bits are half the bytes):

========  =============================  ====================================================
pool      what it holds per expert       bytes (ρ = compressed/original exponent size)
========  =============================  ====================================================
``F``     the full BF16 tensors          ``s``
``C``     E-chunks and SM-chunks         ``ceil(s/2 + ρ·s/2)``
``S``     SM-chunks only                 ``s/2``
``E``     E-chunks only                  ``ceil(ρ·s/2)``
(miss)    nothing: read from the SSD     ``0``
========  =============================  ====================================================

Times per *tensor* (Sec. 3.3: one task per tensor; an expert has ``n_matrices`` tensors):
``u = (s / n_matrices / 2) / ssd_gbps`` (read one SM-chunk), ``v = ρu/K`` (read one of the K
E-chunks), ``c`` (decompress one E-chunk, from Sec. 2.3 (I): see :data:`DECOMP_BREAKEVEN`),
``p = expert_compute_ms(tokens=1)`` (GPU time of one expert for one token, on the hardware
preset's GPU: an A100, not the paper's Jetson AGX Orin; an assumption of the table).

Readings (the paper does not fix them; each is a :class:`Source` marked as an assumption):

* the SSD is read at the hardware preset's ``ssd_gbps`` with no per-read latency and no
  host-to-GPU copy: ZipMoE runs on a unified-memory SoC and reads SM-chunks zero-copy into
  pinned memory (Sec. 4), and Sec. 3.3's costs are linear in the bytes (``ρu/K``);
* ``c = DECOMP_BREAKEVEN · u / K``: Sec. 2.3 (I) says decompressing the exponent bits of a
  tensor with >= 3 threads takes less time than reading as many bytes as they decompress to
  (= the SM-chunk's size, so time ``u``); we take the break-even point, 3 threads ≈ ``u``, i.e.
  one thread needs ``3u`` for the K chunks;
* ``ρ`` from Sec. 2.2 / Fig. 3: ZSTD leaves 68% of the model, of which the incompressible
  sign-mantissa half is 50%, so ``ρ = (0.68 - 0.5) / 0.5 = 0.36``.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction

from paging.cost.arith import expert_compute_ms
from paging.cost.presets import get_precision
from paging.cost.sources import Source
from paging.errors import PagingError, brief, positive_int

#: The pools of Sec. 3.4 in the order of its cache hierarchy F ≺ C ≺ S ≺ E.
POOLS = ("F", "C", "S", "E")
POOL_NAMES = {"F": "full tensors", "C": "compressed (E- and SM-chunks)", "S": "SM-chunks only",
              "E": "E-chunks only"}

ZIPMOE = "ZipMoE (papers/zipmoe_compression-cache-affinity.txt)"
#: Compression ratio ρ of the exponent bits (compressed / original size).
RHO = 0.36
#: Decompression threads L.
THREADS = 6
#: E-chunks (exponent shards) per tensor K.
SHARDS = 6
#: Threads at which decompressing a tensor's exponent bits takes as long as reading the bytes
#: they decompress to (Sec. 2.3 (I)); gives ``c = DECOMP_BREAKEVEN · u / K``.
DECOMP_BREAKEVEN = 3
#: Bits of one BF16 weight and of its exponent field (Sec. 2.2).
BF16_BITS, BF16_EXPONENT_BITS = 16, 8

ZIPMOE_SOURCES: tuple[Source, ...] = (
    Source("zipmoe:bf16.exponent_bits", BF16_EXPONENT_BITS, "bits of 16",
           f"{ZIPMOE}, Sec. 2.2 'BF16 Parameters': 1 sign, 8 exponent, 7 mantissa bits; so the "
           "SM-chunks are half of a tensor's bytes and the uncompressed exponent bits the other "
           "half (Sec. 2.3 (III): 'approximately 50% of the full tensor size')"),
    Source("zipmoe:rho", RHO, "compressed / original exponent bytes",
           f"{ZIPMOE}, Sec. 2.2 and Fig. 3: ZSTD reduces the model to 68%; with the "
           "sign-mantissa half incompressible, 0.5 + 0.5 ρ = 0.68 gives ρ = 0.36 (LZ4HC's 74% "
           "would give 0.48; the entropy bound 66.0-66.5% gives 0.32-0.33)"),
    Source("zipmoe:threads_L", THREADS, "decompression threads",
           f"assumption: the paper does not give L for its runs; {ZIPMOE} Sec. 2.3 (III): "
           "'mainstream mobile devices typically feature 6-12 CPU cores' and decompression "
           "keeps up with I/O 'with as few as 3 worker threads'; the low end 6 is taken"),
    Source("zipmoe:shards_K", SHARDS, "E-chunks per tensor",
           f"assumption: {ZIPMOE} Sec. 3.1 splits the exponent bits into K shards but never "
           "gives K; K = L (one shard per decompression thread). Algorithm 3's estimate does "
           "not depend on K under the readings here (v = ρu/K, c = 3u/K); only the exact "
           "Algorithm 1 schedule does"),
    Source("zipmoe:decomp_breakeven_threads", DECOMP_BREAKEVEN, "threads",
           f"{ZIPMOE}, Sec. 2.3 (I) and Fig. 4: 'multi-threaded decompression incurs lower "
           "latency than SSD I/O once >= 3 worker threads are employed' when reading as many "
           "bytes as the decompressed exponent bits; reading: break-even at 3 threads, so one "
           "E-chunk takes c = 3u/K (u: time to read an SM-chunk, the same bytes); an upper "
           "end, faster decompressors make c smaller"),
    Source("zipmoe:ssd_read_model", 0, "us per read",
           f"assumption: SSD reads cost bytes / ssd_gbps, no per-read latency and no "
           f"host-to-GPU copy: {ZIPMOE} Sec. 3.3 prices an E-chunk at ρu/K (linear in bytes) "
           "and Sec. 4 reads SM-chunks zero-copy on a unified-memory SoC (Jetson AGX Orin); "
           "its SSD, a Samsung 970 EVO at 3.5 GB/s (Sec. 5), matches the pcie3 preset's"),
    Source("zipmoe:gpu_tokens_per_expert", 1, "tokens",
           f"{ZIPMOE}, Sec. 1 and 5: on-device decoding at batch size one; p = "
           "expert_compute_ms(model, precision, hardware, tokens=1) (the roofline of the cost "
           "model), the GPU time of one expert in Sec. 3.3; assumption: that roofline is the "
           "hardware preset's GPU (an A100 80GB in every preset), not the paper's Jetson AGX "
           "Orin (Sec. 5, a unified-memory SoC with far less memory bandwidth), so p is low; "
           "p enters only the makespans with GPU time (alg1_gpu_*), not Algorithm 3 or the "
           "plan"),
)


def _ratio(name: str, value, lo_open: bool = True) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (
            (0 < value <= 1) if lo_open else (0 <= value <= 1)):
        raise PagingError(f"{name} must be a number in (0, 1], got {value!r}")
    return Fraction(str(value)) if isinstance(value, float) else Fraction(value)


#: the most decompression threads L and E-chunks per tensor K a plan takes (:class:`ZipParams`)
PARAM_MAX = 4096


@dataclass(frozen=True)
class ZipParams:
    """ZipMoE's scheduling parameters (Sec. 3.3) with the defaults of :data:`ZIPMOE_SOURCES`.

    Parameters
    ----------
    rho: compression ratio ρ in (0, 1] (exponent bytes after / before compression).
    threads: L >= 1 decompression threads.
    shards: K >= 1 E-chunks per tensor.
    breakeven: c = breakeven · u / K (> 0; Sec. 2.3 (I) gives 3).
    """

    rho: float = RHO
    threads: int = THREADS
    shards: int = SHARDS
    breakeven: float = DECOMP_BREAKEVEN

    def __post_init__(self):
        _ratio("the compression ratio rho", self.rho)
        for name, v in (("L (decompression threads)", self.threads),
                        ("K (E-chunks per tensor)", self.shards)):
            if positive_int(name, v) > PARAM_MAX:
                raise PagingError(f"{name} must be at most {PARAM_MAX:,}, got {brief(v)} (the "
                                  "planner's schedules grow with it: 10^5 threads took 36 s, "
                                  "10^7 shards 3.6 GB; the defaults are 6 of each)")
        b = self.breakeven
        if isinstance(b, bool) or not isinstance(b, numbers.Real) or not 0 < b < math.inf:
            raise PagingError(f"the decompression break-even thread count must be a number "
                              f"> 0, got {b!r}")

    @property
    def rho_exact(self) -> Fraction:
        """ρ as an exact fraction of its decimal text (0.36 -> 9/25)."""
        return _ratio("rho", self.rho)


def _bf16(precision) -> None:
    q = get_precision(precision) if isinstance(precision, str) else precision
    if q.bits != BF16_BITS or q.group_size or q.row_scale_bytes:
        raise PagingError(f"ZipMoE's pools split BF16 weights into exponent and sign-mantissa "
                          f"bits (Sec. 2.2); precision {q.name} has no such split, use bf16")


def form_bytes(model, precision="bf16", rho: float = RHO) -> dict[str, int]:
    """Bytes of one expert in each pool's form (module table): ``{"F": s, "C": ceil(s/2 +
    ρs/2), "S": s/2, "E": ceil(ρs/2)}`` with ``s = model.expert_bytes(precision)``. Exact
    (ρ as the fraction of its decimal text). Raises PagingError for ρ outside (0, 1] or a
    precision other than BF16.

    >>> from paging.cost import get_model
    >>> form_bytes(get_model("mixtral-8x7b"))
    {'F': 352321536, 'C': 239578645, 'S': 176160768, 'E': 63417877}
    """
    r = _ratio("the compression ratio rho", rho)
    _bf16(precision)
    s = model.expert_bytes(precision)
    half = Fraction(s, 2)          # exponent bytes = sign-mantissa bytes = s/2 (8 of 16 bits)
    return {"F": s, "C": math.ceil(half + r * half), "S": math.ceil(half),
            "E": math.ceil(r * half)}


def pool_capacities(budget: int, layers: int, n: int, ratios: dict, sizes: dict) -> dict:
    """Experts per layer of each pool (Algorithm 4 line 6, "the maximum number of experts S_p"):
    ``S_p = floor(γ_p · budget / (ℓ · bytes_p))``, capped in hierarchy order F, C, S, E so
    that a layer's pools hold at most its n experts (extra capacity could hold nothing).

    Reading: the budget is split evenly over the ℓ layers and every layer gets the same
    partition (the paper plans one sparse layer). Exact: γ_p are Fractions or ints.
    """
    out, left = {}, n
    for p in POOLS:
        g = Fraction(ratios.get(p, 0))
        cnt = math.floor(g * budget / (layers * sizes[p])) if g else 0
        out[p] = min(cnt, left)
        left -= out[p]
    return out


@dataclass(frozen=True)
class PoolTimes:
    """Per-tensor times in ms of Sec. 3.3 for one model on one hardware preset.

    ``u``: read one SM-chunk; ``v = ρu/K``: read one E-chunk; ``c = breakeven·u/K``: decompress
    one E-chunk; ``p``: GPU time of one expert for one token; ``tensors``: tasks per expert
    (``model.n_matrices``); ``K``, ``L``, ``rho``: as in :class:`ZipParams`.
    """

    u: float
    v: float
    c: float
    p: float
    tensors: int
    K: int
    L: int
    rho: float

    def raw_read_ms(self) -> float:
        """Reading one uncompressed BF16 tensor: 2u (sign-mantissa + raw exponent bytes)."""
        return 2 * self.u


def pool_times(model, hardware, params: ZipParams | None = None,
               precision="bf16") -> PoolTimes:
    """The :class:`PoolTimes` of ``model`` on ``hardware`` (module docstring readings):
    ``u = s / (2 · n_matrices) / ssd_gbps``, ``v = ρu/K``, ``c = breakeven·u/K``,
    ``p = expert_compute_ms(model, precision, hardware, 1)``.

    >>> from paging.cost import get_hardware, get_model
    >>> t = pool_times(get_model("mixtral-8x7b"), get_hardware("pcie3"))
    >>> round(t.u, 6), round(t.v, 6), round(t.c, 6)  # 58720256 B / 3.5 GB/s
    (16.777216, 1.006633, 8.388608)
    """
    params = params or ZipParams()
    _bf16(precision)
    s = model.expert_bytes(precision)
    u = s / (2 * model.n_matrices) / (hardware.ssd_gbps * 1e9) * 1e3
    K = params.shards
    return PoolTimes(u=u, v=float(params.rho_exact) * u / K, c=params.breakeven * u / K,
                     p=expert_compute_ms(model, precision, hardware, 1),
                     tensors=model.n_matrices, K=K, L=params.threads, rho=params.rho)
