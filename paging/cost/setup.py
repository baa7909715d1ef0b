"""A cost-model setting (model, precision, hardware, host tier) applied to a trace: the weights
the one simulator takes and the fields a timed run reports. Shared by ``paging simulate`` and
``paging sweep`` so that both time a run the same way."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from paging.cost.arith import (
    budget_bytes,
    capacity_pages,
    page_costs,
    page_sizes,
    place_by_frequency,
)
from paging.cost.presets import Hardware, Model, Precision, get_hardware, get_model, get_precision

#: the timeline's fields a timed run adds to its JSON row (``prefetch_late`` with prefetching)
TIMING_FIELDS = ("time_ms", "stall_ms", "stall_fraction", "ttft_ms", "tpot_ms", "tokens_per_s",
                 "decode_tokens", "bytes_moved", "copy_busy_ms")
PREFETCH_TIMING_FIELDS = ("prefetch_late",)


@dataclass(frozen=True)
class CostSetup:
    """``model`` at ``precision`` on ``hardware``; with ``host_gb`` the experts a trace requests
    most often sit in that much host DRAM and the rest on the SSD tier."""

    model: Model
    precision: Precision
    hardware: Hardware
    host_gb: float | None = None

    @classmethod
    def from_names(cls, model: str, precision: str | None = None, hardware: str | None = None,
                   host_gb: float | None = None) -> CostSetup:
        """Presets by name (or a model file); defaults bf16 and ``link-5gbps``."""
        if host_gb is not None:  # (it said "the budget must ...", naming no option)
            budget_bytes(host_gb, "--host-gb")
        return cls(get_model(model), get_precision(precision or "bf16"),
                   get_hardware(hardware or "link-5gbps"), host_gb)

    @property
    def expert_bytes(self) -> int:
        return self.model.expert_bytes(self.precision)

    def tiers(self, trace) -> np.ndarray:
        """Tier of every page id (all host DRAM, or placed by the trace's frequencies)."""
        P = trace.layout.n_pages
        if self.host_gb is None:
            return np.zeros(P, dtype=np.int8)
        freq = np.bincount(trace.pages, minlength=P)
        return place_by_frequency(freq, budget_bytes(self.host_gb) // self.expert_bytes)

    def weights(self, trace) -> tuple[np.ndarray, np.ndarray]:
        """``(fetch_ms, sizes)`` per page id for ``trace`` (its layout must be the model's)."""
        self.model.check_layout(trace)
        return (page_costs(self.model, self.precision, self.hardware, self.tiers(trace)),
                page_sizes(self.model, self.precision))

    def describe(self) -> dict:
        """The setting's fields of a row: model, precision, hardware, and ``host_gb`` when a
        host tier is set (it changes every miss's time, so two rows must tell it apart)."""
        out = {"model": self.model.name, "precision": self.precision.name,
               "hardware": self.hardware.name}
        if self.host_gb is not None:
            out["host_gb"] = self.host_gb
        return out

    def capacity(self, k: int | None, budget: int | None, dist: bool = False,
                 shares=None) -> int:
        """The experts a cache can hold: ``k``, or under a byte ``budget`` each of its
        partitions' shares in whole experts, summed. A per-layer (``dist``) cache splits the
        bytes evenly over the layers (``shares``: others it fixed, :attr:`paging.result.Result.
        shares`), so 5 % of Mixtral-8x7B at int4 (4.67e9 bytes) holds 47 experts shared and 32
        per layer, one in each layer's 146 MB (the column said 47 for both)."""
        if k is not None:
            return k
        caps = ([budget] if not dist else shares if shares is not None
                else self.model.layout.dist_shares(budget))
        return sum(capacity_pages(int(c), self.model, self.precision) for c in caps)

    def timed_fields(self, result, timing) -> dict:
        """The row fields of a timed run: the setting, ``capacity`` (the experts the policy's
        cache can hold, :meth:`capacity`) and the timeline's fields."""
        out = self.describe()
        out["capacity"] = self.capacity(result.k, result.budget, result.dist, result.shares)
        out.update({f: getattr(timing, f) for f in TIMING_FIELDS})
        return out
