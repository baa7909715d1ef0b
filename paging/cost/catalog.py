"""Every input number of the cost model with its origin: the presets' (models, precisions,
hardware, PCIe raw rates) and ZipMoE's pool parameters, in the order of docs/COST_MODEL.md's
table. Above both :mod:`paging.cost.presets` and :mod:`paging.cost.pools`, which it joins."""

from __future__ import annotations

from paging.cost.pools import ZIPMOE_SOURCES
from paging.cost.presets import all_sources
from paging.cost.sources import Source

__all__ = ["SOURCES"]

SOURCES: tuple[Source, ...] = (*all_sources(), *ZIPMOE_SOURCES)
