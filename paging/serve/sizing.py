"""The question a serving study asks: which policy, and how many GB, keep a latency percentile
under a target at a given load?"""

from __future__ import annotations

__all__ = ["smallest_budget"]


#: the summary fields that set a run up, besides the policy, the load and the cache size: rows
#: that differ in one of them answer different questions (:func:`smallest_budget`)
SETTING = ("arrivals", "duration_s", "think_s", "model", "precision", "hardware", "host_gb",
           "scheduler",
           "max_batch", "max_tokens", "seed", "step_overhead_ms", "batch_reading", "prefetch",
           "miss", "routing")


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
    if slo_tpot_ms is None and slo_ttft_ms is None:
        raise ValueError("give slo_tpot_ms or slo_ttft_ms")
    out: dict = {}
    for row in summaries:
        setting = tuple((f, row[f]) for f in SETTING if f in row)
        key = (row["policy"], row.get("rate"), row.get("clients"), setting)
        out.setdefault(key, None)
        done = row.get("completed") == row.get("requests")
        if not done or not _meets(row, slo_tpot_ms, slo_ttft_ms, q):
            continue
        size = row["budget_bytes"] if row.get("budget_bytes") is not None else row["k"]
        best = out[key]
        if best is None or size < (best["budget_bytes"] if best.get("budget_bytes") is not None
                                   else best["k"]):
            out[key] = row
    return out
