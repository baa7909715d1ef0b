"""Model, precision and hardware presets of the cost model, each number with its origin.

Models: SpecMD's four (App. E, Table 3) and IBM Granite-3.0-1B-A400M (its Hugging Face
configuration). Precisions: ``bf16``, ``int8``, ``int4``, ``int2`` with their quantisation scale
overhead. Hardware: SpecMD's 5 GB/s link and effective PCIe 3/4/5 x16 links, each with an NVMe SSD
tier and SpecMD's GPU (one A100 80GB). Units: bytes are integers, 1 GB = 1e9 bytes, bandwidths in
GB/s, latencies in microseconds, compute in TFLOP/s (1e12 FLOP/s). ``docs/COST_MODEL.md`` shows the
arithmetic behind every number; :data:`paging.cost.SOURCES` lists them all.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field, fields
from pathlib import Path

from paging.cost.sources import (
    A100_DATASHEET,
    HOST_LATENCY,
    PCISIG,
    SPECMD_51,
    SPECMD_T3,
    SSD_LATENCY,
    Source,
)
from paging.errors import INT64_MAX, PagingError, brief
from paging.layout import Layout
from paging.options import parse_json, read_toml, toml_line

# ---------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------

MODEL_UNITS = {"n_layers": "layers", "n_experts": "experts per layer",
               "top_k": "experts per token and layer", "d_model": "hidden size",
               "d_ff": "expert FFN width", "n_matrices": "weight matrices per expert",
               "non_expert_params": "parameters"}
MODEL_FIELDS = tuple(MODEL_UNITS)
#: fields a model may leave out (0: unknown); the serving model (:mod:`paging.serve`) charges the
#: attention's KV-cache reads by ``kv_width`` and leaves them out when it is 0
OPTIONAL_MODEL_UNITS = {"kv_width": "KV-cache values per token, layer and K or V "
                                    "(key-value heads x head dimension)"}


@dataclass(frozen=True)
class Model:
    """A MoE model as the cost model sees it: ℓ layers of n experts of equal size.

    Every expert is ``n_matrices`` weight matrices of ``d_model x d_ff`` (3 for SwiGLU: gate and
    up project d_model -> d_ff, down projects d_ff -> d_model), without biases. Non-expert
    parameters (embeddings, attention, norms, routers, shared experts) are one number.

    Parameters
    ----------
    name, n_layers, n_experts, top_k, d_model, d_ff, n_matrices, non_expert_params:
        See :data:`MODEL_UNITS`; all integers >= 1.
    kv_width:
        See :data:`OPTIONAL_MODEL_UNITS`: key-value heads x head dimension (0: not known; the
        serving model then leaves the attention's KV-cache reads out).
    sources:
        The origin of each numeric field (field name -> citation or ``"assumption: ..."``).
    """

    name: str
    n_layers: int
    n_experts: int
    top_k: int
    d_model: int
    d_ff: int
    n_matrices: int
    non_expert_params: int
    sources: dict = field(default_factory=dict, compare=False, repr=False)
    kv_width: int = 0

    @property
    def layout(self) -> Layout:
        """The page space: page = layer * n_experts + expert."""
        return Layout(n_experts=self.n_experts, n_layers=self.n_layers)

    @property
    def expert_params(self) -> int:
        """Parameters of one expert: ``n_matrices * d_model * d_ff``."""
        return self.n_matrices * self.d_model * self.d_ff

    @property
    def expert_rows(self) -> int:
        """Output rows of one expert's matrices (row-wise scales count these):
        ``(n_matrices - 1) * d_ff + d_model`` (the up-type matrices output d_ff rows, the one
        down projection outputs d_model rows)."""
        return (self.n_matrices - 1) * self.d_ff + self.d_model

    def expert_bytes(self, precision: Precision | str) -> int:
        """Bytes of one expert stored at ``precision`` (weights plus quantisation scales).

        Per matrix of ``P = d_model * d_ff`` parameters: ``ceil(P * bits / 8)`` bytes of weights,
        plus ``row_scale_bytes`` per output row, plus ``group_scale_bytes`` per group of
        ``group_size`` consecutive parameters (``ceil(P / group_size)`` groups), summed over the
        ``n_matrices`` matrices.

        >>> get_model("mixtral-8x7b").expert_bytes("bf16")  # 3 * 4096 * 14336 * 2
        352321536
        """
        q = get_precision(precision) if isinstance(precision, str) else precision
        per_matrix = self.d_model * self.d_ff
        weights = self.n_matrices * -(-per_matrix * q.bits // 8)  # (exact: ceil of P·bits/8)
        rows = self.expert_rows * q.row_scale_bytes
        groups = (self.n_matrices * math.ceil(per_matrix / q.group_size) * q.group_scale_bytes
                  if q.group_size else 0)
        return weights + rows + groups

    def check_layout(self, trace, advise: bool = True) -> None:
        """Raise :class:`PagingError` unless ``trace`` (a :class:`~paging.trace.Trace`, or
        anything with ``layout``, ``name`` and ``meta``) has this model's ℓ and n: "model
        mixtral-8x7b has 32 layers x 8 experts, the trace T has 24 x 32" (layers x experts).
        A routing log sized by its largest ids (:func:`sized_by_ids`) that falls short of the
        model is told how to read it with the model's layout, unless ``advise`` is False (a
        sweep spec, which cannot give --n-experts and --layers).
        """
        layout = trace.layout
        if (layout.n_layers, layout.n_experts) != (self.n_layers, self.n_experts):
            short = layout.n_layers <= self.n_layers and layout.n_experts <= self.n_experts
            hint = (f" (a trace whose ids stop short of the model's reads with --n-experts "
                    f"{self.n_experts} --layers {self.n_layers})"
                    if short and advise and sized_by_ids(trace) else "")
            raise PagingError(f"model {self.name} has {self.n_layers} layers x {self.n_experts} "
                              f"experts, the trace {trace.name} has {layout.n_layers} x "
                              f"{layout.n_experts}{hint}")


def sized_by_ids(trace) -> bool:
    """Whether the layout of ``trace`` may be its largest ids + 1 (a routing log read without
    --n-experts and --layers), so that reading it with a model's layout can be advised; not a
    stored trace (.npz, the package's CSV) or a generator spec, which keep their own."""
    meta = getattr(trace, "meta", None) or {}
    return (meta.get("format") in ("routing-jsonl", "routing-jsonl-raw", "nested-json")
            and "converted_from" not in meta)


def _hf(repo: str, key: str) -> str:
    return f"Hugging Face {repo} config.json, '{key}'"


def _t3_non_expert(gib: str) -> str:
    return (f"{SPECMD_T3}, 'Non-Expert' {gib} GiB at 16 bit: round({gib} * 2**30 / 2) "
            f"(rounded to 0.01 GiB there)")


def _specmd_model(name, repo, n_layers, n_experts, top_k, d_model, d_model_key, d_ff, d_ff_key,
                  non_expert_gib) -> Model:
    from fractions import Fraction

    non_expert = round(Fraction(non_expert_gib) * 2**30 / 2)
    return Model(name=name, n_layers=n_layers, n_experts=n_experts, top_k=top_k, d_model=d_model,
                 d_ff=d_ff, n_matrices=3, non_expert_params=non_expert, sources={
                     "n_layers": f"{SPECMD_T3}, 'Layers'",
                     "n_experts": f"{SPECMD_T3}, 'Experts per Layer'",
                     "top_k": f"{SPECMD_T3}, 'Top-k'",
                     "d_model": _hf(repo, d_model_key),
                     "d_ff": _hf(repo, d_ff_key) + f"; 3*d_model*d_ff*2 B matches {SPECMD_T3} "
                                                   "'Expert Size'",
                     "n_matrices": "SwiGLU expert (gate, up, down projections), "
                                   f"{_hf(repo, 'hidden_act')} = silu",
                     "non_expert_params": _t3_non_expert(non_expert_gib)})


def _with_kv(model: Model, kv_width: int, source: str) -> Model:
    from dataclasses import replace

    return replace(model, kv_width=kv_width, sources={**model.sources, "kv_width": source})


GRANITE_REPO = "ibm-granite/granite-3.0-1b-a400m-base"
# Granite-3.0-1B-A400M, counted from its config (hidden 1024, 24 layers, 16 query / 8 KV heads
# of width 64, vocab 49155, tied embeddings, RMSNorm, bias-free linear layers, router 1024 -> 32):
#   embeddings (tied with the LM head)  49155 * 1024                       =  50,334,720
#   per layer: q, o 1024*1024 each; k, v 1024*512 each                   =   3,145,728
#              router 1024*32 = 32,768; two RMSNorms 2*1024 = 2,048       =      34,816
#   24 layers * 3,180,544                                                  =  76,333,056
#   final RMSNorm                                                          =       1,024
#   total                                                                  = 126,668,800
GRANITE_NON_EXPERT = 49155 * 1024 + 24 * (2 * 1024 * 1024 + 2 * 1024 * 512 + 1024 * 32
                                          + 2 * 1024) + 1024

MODELS: dict[str, Model] = {m.name: m for m in (
    _specmd_model("olmoe-1b-7b", "allenai/OLMoE-1B-7B-0924", 16, 64, 8, 2048, "hidden_size",
                  1024, "intermediate_size", "0.89"),
    _with_kv(_specmd_model("mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1", 32, 8, 2, 4096,
                           "hidden_size", 14336, "intermediate_size", "2.99"), 8 * 128,
             _hf("mistralai/Mixtral-8x7B-v0.1", "num_key_value_heads") + " = 8 x head "
             "dimension 128 (" + _hf("mistralai/Mixtral-8x7B-v0.1", "hidden_size") + " 4096 / "
             "'num_attention_heads' 32)"),
    _specmd_model("qwen1.5-moe-a2.7b", "Qwen/Qwen1.5-MoE-A2.7B", 24, 60, 4, 2048, "hidden_size",
                  1408, "moe_intermediate_size", "3.46"),
    _specmd_model("phi-3.5-moe", "microsoft/Phi-3.5-MoE-instruct", 32, 16, 2, 4096,
                  "hidden_size", 6400, "intermediate_size", "2.99"),
    Model(name="granite-3.0-1b-a400m", n_layers=24, n_experts=32, top_k=8, d_model=1024, d_ff=512,
          n_matrices=3, non_expert_params=GRANITE_NON_EXPERT, kv_width=8 * 64, sources={
              "kv_width": _hf(GRANITE_REPO, "num_key_value_heads") + " = 8 x head dimension 64 "
                          "(hidden_size 1024 / num_attention_heads 16)",
              "n_layers": _hf(GRANITE_REPO, "num_hidden_layers"),
              "n_experts": _hf(GRANITE_REPO, "num_local_experts"),
              "top_k": _hf(GRANITE_REPO, "num_experts_per_tok"),
              "d_model": _hf(GRANITE_REPO, "hidden_size"),
              "d_ff": _hf(GRANITE_REPO, "intermediate_size") + " (input_linear holds gate and "
                      "up fused as [32, 2*512, 1024], output_linear [32, 1024, 512])",
              "n_matrices": "SwiGLU expert: gate and up (fused in input_linear) and down "
                            f"(output_linear), {_hf(GRANITE_REPO, 'hidden_act')} = silu",
              "non_expert_params": "computed from " + _hf(GRANITE_REPO, "vocab_size, "
                                   "num_attention_heads, num_key_value_heads, "
                                   "tie_word_embeddings") + ": 49155*1024 + 24*(2*1024*1024 + "
                                   "2*1024*512 + 1024*32 + 2*1024) + 1024 (docs/COST_MODEL.md)"}),
)}

# ---------------------------------------------------------------------------------------------
# Precisions
# ---------------------------------------------------------------------------------------------

PRECISION_UNITS = {"bits": "bits per weight", "group_size": "weights per scale group",
                   "group_scale_bytes": "bytes per group", "row_scale_bytes": "bytes per row"}


@dataclass(frozen=True)
class Precision:
    """How expert weights are stored: ``bits`` per weight plus scales.

    ``group_scale_bytes`` per group of ``group_size`` consecutive weights (0/0: none) and
    ``row_scale_bytes`` per output row of each matrix (0: none).
    """

    name: str
    bits: int
    group_size: int
    group_scale_bytes: int
    row_scale_bytes: int
    sources: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def bits_per_param_overhead(self) -> float:
        """Group-scale overhead in bits per weight (row scales depend on the shape)."""
        return 8 * self.group_scale_bytes / self.group_size if self.group_size else 0.0


_SPECMD_Q = "SpecMD Sec. 5.1 quantises experts to int8/int4 with bitsandbytes, int2 with HQQ"
_NO_SCALE = "bf16 weights are stored as they are: no scales"
PRECISIONS: dict[str, Precision] = {q.name: q for q in (
    Precision("bf16", 16, 0, 0, 0, sources={
        "bits": "bfloat16, the checkpoints' dtype ('torch_dtype': 'bfloat16' in the configs)",
        "group_size": _NO_SCALE, "group_scale_bytes": _NO_SCALE, "row_scale_bytes": _NO_SCALE}),
    Precision("int8", 8, 0, 0, 4, sources={
        "bits": f"{_SPECMD_Q}; LLM.int8() (Dettmers et al., NeurIPS 2022, arXiv:2208.07339)",
        "group_size": "LLM.int8() vector-wise quantisation: one scale per row, no groups",
        "group_scale_bytes": "LLM.int8(): no group scales",
        "row_scale_bytes": "bitsandbytes Linear8bitLt keeps one fp32 absmax per output row "
                           "(Int8Params.SCB, float32[out_features]); outlier columns are "
                           "recovered at run time, not stored twice"}),
    Precision("int4", 4, 64, 4, 0, sources={
        "bits": f"{_SPECMD_Q}; 4-bit NF4/FP4 (Dettmers et al., QLoRA, NeurIPS 2023, "
                "arXiv:2305.14314)",
        "group_size": "bitsandbytes 4-bit default blocksize 64 (QLoRA Sec. 3)",
        "group_scale_bytes": "one fp32 absmax per block of 64: 32/64 = 0.5 bit per weight "
                             "(QLoRA Sec. 3, 'Double Quantization'); assumption: double "
                             "quantisation off (transformers BitsAndBytesConfig default "
                             "bnb_4bit_use_double_quant=False; it would give 0.127 bit)",
        "row_scale_bytes": "bitsandbytes 4-bit: block scales only"}),
    Precision("int2", 2, 64, 4, 0, sources={
        "bits": f"{_SPECMD_Q}; HQQ (Badri & Shaji 2023, 'Half-Quadratic Quantization of Large "
                "Machine Learning Models', mobiusml blog)",
        "group_size": "assumption: HQQ group_size 64 (a common HQQ setting; SpecMD does not "
                      "give its HQQ configuration)",
        "group_scale_bytes": "assumption: one fp16 scale and one fp16 zero point per group "
                             "(2 * 2 bytes; HQQ without meta-quantisation of scale/zero): "
                             "32/64 = 0.5 bit per weight",
        "row_scale_bytes": "HQQ: group scales only"}),
)}

# ---------------------------------------------------------------------------------------------
# Hardware
# ---------------------------------------------------------------------------------------------

HARDWARE_UNITS = {"link_gbps": "GB/s", "link_latency_us": "us", "ssd_gbps": "GB/s",
                  "ssd_latency_us": "us", "hbm_gbps": "GB/s", "peak_tflops": "TFLOP/s"}


@dataclass(frozen=True)
class Hardware:
    """One GPU with a host link and an SSD behind host memory.

    ``link_gbps``: effective host-to-GPU bandwidth (pinned memory, one direction);
    ``link_latency_us``: fixed cost per transfer; ``ssd_gbps``/``ssd_latency_us``: NVMe
    sequential read bandwidth and first-byte latency; ``hbm_gbps``: GPU memory bandwidth;
    ``peak_tflops``: dense BF16 tensor-core peak. GB = 1e9 bytes.
    """

    name: str
    link_gbps: float
    link_latency_us: float
    ssd_gbps: float
    ssd_latency_us: float
    hbm_gbps: float
    peak_tflops: float
    sources: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        # (every time of the cost model divides by a rate and adds a latency: a rate of 0
        # divided by zero, a negative or NaN one gave negative or NaN times without a word)
        for f in fields(self):
            if f.name in ("name", "sources"):
                continue
            v = getattr(self, f.name)
            rate = not f.name.endswith("_latency_us")
            ok = (not isinstance(v, bool) and isinstance(v, (int, float))
                  and math.isfinite(v) and (v > 0 if rate else v >= 0))
            if not ok:
                raise PagingError(f"hardware {self.name}: {f.name} must be a finite number "
                                  f"{'> 0' if rate else '>= 0'} ({HARDWARE_UNITS[f.name]}), "
                                  f"got {v!r}")


def _raw_x16(gt_per_s: int) -> float:
    """Raw x16 one-direction rate in GB/s: GT/s * 16 lanes * 128/130 / 8 bits."""
    return gt_per_s * 16 * 128 / 130 / 8


RAW_X16 = {"pcie3": _raw_x16(8), "pcie4": _raw_x16(16), "pcie5": _raw_x16(32)}
GEN4_EFFICIENCY = 25.0 / RAW_X16["pcie4"]  # measured 25 GB/s over raw 31.508 GB/s = 0.793

_GPU = {
    "hbm_gbps": f"{A100_DATASHEET}: GPU memory bandwidth 1,935 GB/s (HBM2e); assumption: the "
                "PCIe card (SpecMD says only 'A100 GPU with 80GB VRAM'; the SXM4 part has "
                "2,039 GB/s)",
    "peak_tflops": f"{A100_DATASHEET}: BF16 Tensor Core 312 TFLOPS dense (624 with sparsity)",
}
_SSD_GEN4 = ("Samsung 990 PRO (PCIe 4.0 x4 NVMe) specification: sequential read up to 7,450 "
             "MB/s")
_PCIE4_MEASURED = ("measured: 'peak x16 PCIe Gen4' host-to-GPU 25 GB/s on an A100 (Qureshi et "
                   "al., 'GPU-Initiated On-Demand High-Throughput Storage Access in the BaM "
                   "System Architecture', ASPLOS 2023; github.com/ZaidQureshi/bam issue #54: "
                   "'it is measured peak'); raw x16 rate 31.508 GB/s")


def _hardware(name, link, link_src, ssd, ssd_src) -> Hardware:
    return Hardware(name, link, 10.0, ssd, 100.0, 1935.0, 312.0, sources={
        "link_gbps": link_src, "link_latency_us": HOST_LATENCY, "ssd_gbps": ssd_src,
        "ssd_latency_us": SSD_LATENCY, **_GPU})


HARDWARE: dict[str, Hardware] = {h.name: h for h in (
    _hardware("link-5gbps", 5.0, SPECMD_51, 7.45,
              "assumption: SpecMD has no SSD tier; its A100 host is PCIe 4.0, so the pcie4 "
              f"preset's NVMe drive is used ({_SSD_GEN4})"),
    _hardware("pcie3", 12.0,
              "measured: about 12 GB/s host-to-device over PCIe 3.0 x16 with pinned memory "
              "(CUDA bandwidthTest on a P100: 12,150.7 MB/s, github.com/mpicbg-scicomp/gearshifft "
              "PR #82; 'V100 ingress bandwidth is 12GBps', github.com/ZaidQureshi/bam issue #54); "
              "raw x16 rate 15.754 GB/s",
              3.5, "Samsung 970 EVO Plus (PCIe 3.0 x4 NVMe) specification: sequential read up "
                   "to 3,500 MB/s (Samsung press release, Jan. 2019)"),
    _hardware("pcie4", 25.0, _PCIE4_MEASURED, 7.45, _SSD_GEN4),
    _hardware("pcie5", 50.0,
              "assumption: raw x16 rate 63.015 GB/s times the measured Gen4 efficiency 25/31.508 "
              "= 0.793 gives 50.0 GB/s; an A100 is a PCIe 4.0 device, so this is a what-if link "
              "with the same GPU",
              14.7, "Samsung 9100 PRO (PCIe 5.0 x4 NVMe) specification: sequential read up to "
                    "14,700 MB/s (1 TB model; 14,800 MB/s from 2 TB)"),
)}

# ---------------------------------------------------------------------------------------------
# Storage of what is not an expert: the non-expert weights and the KV cache
# ---------------------------------------------------------------------------------------------

#: bytes of one non-expert parameter (embeddings, attention, norms, routers), whatever the
#: experts' precision: :func:`paging.cost.arith.model_bytes` and ``non_expert_ms``
NON_EXPERT_BYTES = 2
#: bytes of one KV-cache value (a K or a V entry): :func:`paging.cost.arith.attention_ms`
KV_BYTES = 2
STORAGE_SOURCES: tuple[Source, ...] = (
    Source("storage:non_expert.bytes_per_param", NON_EXPERT_BYTES, "bytes per parameter",
           "assumption: the non-expert weights stay 16-bit (bfloat16, the checkpoints' dtype, "
           "'torch_dtype': 'bfloat16' in the configs) at every expert precision: SpecMD Sec. "
           "5.1 quantises the experts only ('We quantize experts into int8 and int4'), and "
           f"the presets' non_expert_params read {SPECMD_T3} 'Non-Expert' at 16 bit"),
    Source("storage:kv_cache.bytes_per_value", KV_BYTES, "bytes per value",
           "assumption: a 16-bit KV cache (bfloat16, the checkpoints' dtype; no KV-cache "
           "quantisation); one token and layer stores 2 (K and V) x kv_width values"),
)

# ---------------------------------------------------------------------------------------------
# Look-ups and the table of every number
# ---------------------------------------------------------------------------------------------


def _unknown(kind: str, name: str, valid, extra: str = "") -> PagingError:
    return PagingError(f"unknown {kind} {name!r}; valid: {', '.join(valid)}{extra}")


def get_model(name_or_path: str) -> Model:
    """A preset by name, or a user model read from a ``.toml``/``.json`` file
    (:func:`load_model_file`)."""
    if name_or_path in MODELS:
        return MODELS[name_or_path]
    if str(name_or_path).lower().endswith((".toml", ".json")):
        return load_model_file(name_or_path)
    raise _unknown("model", name_or_path, MODELS, " (or a .toml/.json model file)")


def get_precision(name: str) -> Precision:
    """The precision preset ``name`` (bf16, int8, int4, int2)."""
    if name in PRECISIONS:
        return PRECISIONS[name]
    raise _unknown("precision", name, PRECISIONS)


def get_hardware(name: str) -> Hardware:
    """The hardware preset ``name`` (link-5gbps, pcie3, pcie4, pcie5)."""
    if name in HARDWARE:
        return HARDWARE[name]
    raise _unknown("hardware", name, HARDWARE)


def _numeric_fields(obj) -> list[str]:
    return [f.name for f in fields(obj) if f.name not in ("name", "sources")
            and not (f.name in OPTIONAL_MODEL_UNITS and not getattr(obj, f.name))]


def preset_sources(kind: str, preset, units: dict) -> list[Source]:
    """One :class:`Source` per numeric field of ``preset`` (a KeyError if one has no origin)."""
    return [Source(f"{kind}:{preset.name}.{f}", getattr(preset, f), units[f], preset.sources[f])
            for f in _numeric_fields(preset)]


def _pcie_raw_sources() -> list[Source]:
    rev = {"pcie3": ("3.0", 8), "pcie4": ("4.0", 16), "pcie5": ("5.0", 32)}
    return [Source(f"pcie:{k}.raw_x16_gbps", round(v, 3), "GB/s",
                   PCISIG.format(rev=rev[k][0], gt=rev[k][1])
                   + f"; {rev[k][1]} * 16 * 128/130 / 8") for k, v in RAW_X16.items()]


def all_sources() -> list[Source]:
    """Every input number of every preset, with its origin (with ZipMoE's pool parameters:
    :data:`paging.cost.catalog.SOURCES`, the table of docs/COST_MODEL.md)."""
    out: list[Source] = []
    for m in MODELS.values():
        out += preset_sources("model", m, MODEL_UNITS | OPTIONAL_MODEL_UNITS)
    for q in PRECISIONS.values():
        out += preset_sources("precision", q, PRECISION_UNITS)
    for h in HARDWARE.values():
        out += preset_sources("hardware", h, HARDWARE_UNITS)
    return out + _pcie_raw_sources() + list(STORAGE_SOURCES)


# -- user models from a file ----------------------------------------------------------------------
# User models from a small TOML or JSON file (same fields as a preset).
#
# Example ``my-moe.toml``::
#
#     name = "my-moe"                  # optional (default: the file name without extension)
#     source = "my notes, 2025-01-01"  # optional: where the numbers come from
#     n_layers = 24
#     n_experts = 32
#     top_k = 8
#     d_model = 1024
#     d_ff = 512
#     n_matrices = 3
#     non_expert_params = 126668800
#     kv_width = 512                   # optional: key-value heads x head dimension (serving)
#
# Every numeric field but ``kv_width`` is required and must be an integer from 1 to 2^63 - 1,
# ``top_k`` at most ``n_experts``, and the weights' bytes at every precision at most 2^63 - 1;
# an unknown key, a missing key or a bad value is a :class:`~paging.errors.PagingError` that
# names the file and the key.

OPTIONAL = ("name", "source", *OPTIONAL_MODEL_UNITS)


def _read(path: Path) -> dict:
    suffix = path.suffix.lower()
    if suffix == ".toml":
        data, _ = read_toml(path, "a model file of TOML keys", noun="model file")
    elif suffix == ".json":
        try:
            text = path.read_text(encoding="utf-8-sig")
        except OSError as e:
            raise PagingError(f"cannot read the model file: {e.strerror or e}",
                              file=str(path)) from None
        except UnicodeDecodeError:
            raise PagingError("the model file is not UTF-8 text; expected JSON",
                              file=str(path)) from None
        data = parse_json(text, str(path), "a model file of JSON keys")
    else:
        raise PagingError("a model file must end in .toml or .json", file=str(path))
    if not isinstance(data, dict):
        raise PagingError("a model file must hold one table/object of keys", file=str(path))
    return data


def _key_line(path: Path, key: str) -> int | None:
    """The line of the model file ``path`` that sets ``key`` (TOML: :func:`paging.options.
    toml_line`; JSON: the last ``"key":``, whose value the reader keeps), or None."""
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix.lower() == ".json":
        hits = [i for i, line in enumerate(text.splitlines(), start=1)
                if re.search(rf'"{re.escape(key)}"\s*:', line)]
        return hits[-1] if hits else None
    return toml_line(text, key)


def load_model_file(path) -> Model:
    """The :class:`~paging.cost.presets.Model` described by the TOML/JSON file ``path``.

    Every number's origin is the file itself (or its optional ``source`` text).
    """
    p = Path(path)
    data = _read(p)
    where = str(p)
    line = functools.partial(_key_line, p)  # (the line of a key, for the errors below)
    allowed = (*OPTIONAL, *MODEL_FIELDS)
    for key in data:
        if key not in allowed:
            raise PagingError(f"unknown key {key!r}; expected {', '.join(allowed)}", where,
                              line(key))
    for key in MODEL_FIELDS:
        if key not in data:
            raise PagingError(f"missing key {key!r}; a model needs {', '.join(MODEL_FIELDS)}",
                              file=where)
        v = data[key]
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise PagingError(f"key {key!r} must be a positive integer, got {v!r}", where,
                              line(key))
    for key in OPTIONAL_MODEL_UNITS:
        v = data.get(key)
        if key in data and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise PagingError(f"key {key!r} must be a positive integer, got {v!r}", where,
                              line(key))
    for key in (*MODEL_FIELDS, *OPTIONAL_MODEL_UNITS):  # (the kernels' int64 arrays)
        if key in data and data[key] > INT64_MAX:
            raise PagingError(f"key {key!r} must be a positive integer of at most 2^63 - 1, "
                              f"got {brief(data[key])}", where, line(key))
    if data["top_k"] > data["n_experts"]:
        raise PagingError(f"key 'top_k' is {data['top_k']}, more than the {data['n_experts']} "
                          "experts of a layer (n_experts); expected at most n_experts",
                          where, line("top_k"))
    for key in ("name", "source"):
        if key in data and (not isinstance(data[key], str) or not data[key].strip()):
            raise PagingError(f"key {key!r} must be a non-empty string, got {data[key]!r}",
                              where, line(key))
    origin = f"user model file {where}" + (f" ({data['source']})" if "source" in data else "")
    extra = {k: int(data[k]) for k in OPTIONAL_MODEL_UNITS if k in data}
    model = Model(name=data.get("name", p.stem), **{k: int(data[k]) for k in MODEL_FIELDS},
                  **extra, sources=dict.fromkeys([*MODEL_FIELDS, *extra], origin))
    try:
        model.layout  # noqa: B018 (n_layers x n_experts page ids must fit int64)
    except PagingError as e:
        raise PagingError(e.message, file=where) from None
    for q in PRECISIONS.values():  # the byte sizes every command derives (paging.cost.arith)
        total = (model.n_layers * model.n_experts * model.expert_bytes(q)
                 + NON_EXPERT_BYTES * model.non_expert_params)
        if total > INT64_MAX:
            raise PagingError(
                f"the model's weights at {q.name} would take {brief(total)} bytes (n_layers x "
                "n_experts x the bytes of an expert of n_matrices x d_model x d_ff weights, "
                "plus 2 x non_expert_params); expected at most 2^63 - 1: check those keys",
                file=where)
    return model
