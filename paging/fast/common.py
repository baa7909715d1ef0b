"""Pieces shared by the compiled kernels: output buffers and group pinning.

Every kernel replays a trace exactly as :class:`paging.simulate.Simulation` does (same
residency, bypass and collision rules) and returns the same tuple::

    (misses, collisions, per_layer_misses, hit_mask, evictions, n_evictions, bypassed, n_bypassed)

``record`` is 0 (nothing), 1 (the hit mask only, what the latency timeline reads) or 2
(everything). ``hit_mask``, ``evictions`` (rows ``(t, page)``) and ``bypassed`` then have room
for every request (a run evicts at most once per insertion) and are empty otherwise; the caller
trims them to ``n_evictions`` / ``n_bypassed`` rows.

Pinning (groups mode): when a group (a run of equal steps) starts, the kernels stamp its pages
(``pin[p] = step``, or a flag in the Marking kernel), so that they are skipped as victims while
the group is served (:meth:`paging.simulate.Simulation.pin_group`). A rounds-mode trace has
singleton groups whose only page is the one requested, which is never resident when a victim is
chosen, so kernels skip pinning altogether when no two consecutive requests share a step
(:func:`is_grouped`).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def is_grouped(steps) -> bool:
    """True when two consecutive requests share a step (a groups-mode trace with K >= 2)."""
    for i in range(1, steps.size):
        if steps[i] == steps[i - 1]:
            return True
    return False


@njit(cache=True, nogil=True)
def buffers(n, record):
    """Hit mask (``record`` >= 1), eviction log and bypass log (``record`` == 2), sized for
    ``n`` requests; empty otherwise."""
    m = n if record >= 1 else 0
    e = n if record >= 2 else 0
    return (np.zeros(m, np.bool_), np.zeros((e, 2), np.int64), np.zeros(e, np.int64))
