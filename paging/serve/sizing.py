"""The question a serving study asks: which policy, and how many GB, keep a latency percentile
under a target at a given load?"""

from __future__ import annotations

__all__ = ["smallest_budget", "unmet_above"]

#: the percentiles a run's summary holds (:func:`paging.serve.engine.latency_fields`)
QUANTILES = (50, 90, 99)


#: the summary fields that set a run up, besides the policy, the load and the cache size: rows
#: that differ in one of them answer different questions (:func:`smallest_budget`)
SETTING = ("arrivals", "duration_s", "think_s", "model", "precision", "hardware", "host_gb",
           "scheduler",
           "max_batch", "max_tokens", "seed", "step_overhead_ms", "batch_reading", "prefetch",
           "miss", "routing")


def _key(row: dict) -> tuple:
    """A summary's question: ``(policy, rate, clients, setting)`` (:func:`smallest_budget`)."""
    setting = tuple((f, row[f]) for f in SETTING if f in row)
    return (row["policy"], row.get("rate"), row.get("clients"), setting)


def _size(row: dict):
    return row["budget_bytes"] if row.get("budget_bytes") is not None else row["k"]


def _passes(row: dict, slo_tpot_ms, slo_ttft_ms, q: int) -> bool:
    """Whether a run finished every request and its p``q`` latencies meet the targets."""
    return row.get("completed") == row.get("requests") and _meets(row, slo_tpot_ms,
                                                                   slo_ttft_ms, q)


def _check(slo_tpot_ms, slo_ttft_ms, q) -> None:
    if slo_tpot_ms is None and slo_ttft_ms is None:
        raise ValueError("give slo_tpot_ms or slo_ttft_ms")
    if q not in QUANTILES:  # (p95 is not in a summary: every run "failed" it, silently)
        raise ValueError(f"q must be one of {', '.join(map(str, QUANTILES))} (the "
                         f"percentiles of a run's summary), got {q!r}")


def _meets(row: dict, slo_tpot_ms, slo_ttft_ms, q: int) -> bool:
    for slo, key in ((slo_tpot_ms, f"p{q}_tpot_ms"), (slo_ttft_ms, f"p{q}_ttft_ms")):
        if slo is not None and (row.get(key) is None or row[key] > slo):
            return False
    return True


def smallest_budget(summaries, *, slo_tpot_ms: float | None = None,
                    slo_ttft_ms: float | None = None, q: int = 99) -> dict:
    """For each policy, load and setting among the run summaries of :func:`paging.serve.serve`
    (one per budget), the summary of the smallest budget whose p``q`` TPOT (and TTFT) meet the
    targets, or None when none does. A run that left requests unfinished never meets them.

    The keys are ``(policy, rate, clients, setting)``: ``setting`` holds the ``(field, value)``
    pairs of the summary's :data:`SETTING` fields (arrivals, model, precision, link, batch
    limits, seed, phases ...), so runs that differ in any of them are answered apart (before
    2026-11-28 the key was the arrival kind alone, and runs on two links, say, were merged into
    one answer). The summaries do not name the traces: give the runs of one workload.

    Budgets are compared in bytes (``budget_bytes``), or in pages (``k``). Latency is not
    monotone in the budget in general (a policy's misses need not fall as its cache grows), so
    every budget is run and the smallest passing one is returned, not a bisection's."""
    _check(slo_tpot_ms, slo_ttft_ms, q)
    out: dict = {}
    for row in summaries:
        key = _key(row)
        out.setdefault(key, None)
        if not _passes(row, slo_tpot_ms, slo_ttft_ms, q):
            continue
        best = out[key]
        if best is None or _size(row) < _size(best):
            out[key] = row
    return out


def unmet_above(summaries, answer: dict, *, slo_tpot_ms: float | None = None,
                slo_ttft_ms: float | None = None, q: int = 99) -> dict:
    """Per key of ``answer`` (:func:`smallest_budget` of the same ``summaries`` and targets)
    with a passing size, the runs of a *larger* size that do not meet the targets, smallest
    first: latency is not monotone in the budget, so the smallest passing size says nothing
    of the sizes above it (the serving chapter's example, LRU at 0.5 requests/s: p99 TPOT
    856.7 ms at 8 GB, 887.4 ms at 12 GB, 861.5 ms at 16 GB)."""
    _check(slo_tpot_ms, slo_ttft_ms, q)
    out: dict = {}
    for row in summaries:
        best = answer.get(_key(row))
        if best is not None and _size(row) > _size(best) and not _passes(
                row, slo_tpot_ms, slo_ttft_ms, q):
            out.setdefault(_key(row), []).append(row)
    return {k: sorted(v, key=_size) for k, v in out.items()}
