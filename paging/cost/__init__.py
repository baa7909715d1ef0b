"""The MoE cost model: presets (models, precisions, hardware), page sizes and fetch costs.

Data and arithmetic only; the latency timeline is built on top of these functions. Every number
comes with its origin in :data:`SOURCES` (rendered into docs/COST_MODEL.md).
"""

from paging.cost.arith import (
    TIER_HOST,
    TIER_SSD,
    budget_bytes,
    capacity_pages,
    expert_compute_ms,
    model_bytes,
    non_expert_ms,
    page_costs,
    page_sizes,
    place_by_frequency,
    share_budget,
    transfer_ms,
)
from paging.cost.catalog import SOURCES
from paging.cost.presets import (
    HARDWARE,
    MODELS,
    PRECISIONS,
    Hardware,
    Model,
    Precision,
    get_hardware,
    get_model,
    get_precision,
)
from paging.cost.sources import Source

__all__ = [
    "HARDWARE", "MODELS", "PRECISIONS", "SOURCES", "TIER_HOST", "TIER_SSD", "Hardware", "Model",
    "Precision", "Source", "budget_bytes", "capacity_pages", "model_bytes", "share_budget",
    "expert_compute_ms", "get_hardware",
    "get_model", "get_precision", "non_expert_ms", "page_costs", "page_sizes",
    "place_by_frequency", "transfer_ms",
]
