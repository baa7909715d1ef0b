"""Serving: many requests sharing one warm expert cache under continuous batching.

``serve(run_spec, serve_spec, traces)`` runs a workload (:mod:`paging.serve.workload`: requests
drawn from routing traces, arriving by a Poisson process, a closed loop of clients or a file)
through a batching scheduler (:mod:`paging.serve.engine`) whose every step is a group per layer
of the one simulator, timed by the latency timeline's kernel, and returns the per-request table
(TTFT, TPOT, end to end), the per-step series (tokens, batch, queue, misses, bytes) and the
run's summary (percentiles, throughput, goodput, miss ratio, and the offline bound: Belady on
the same stream of groups). ``paging serve`` is its command.
"""

from paging.serve.engine import ServeResult, ServeSpec, latency_fields, serve
from paging.serve.sizing import smallest_budget, unmet_above
from paging.serve.workload import Arrivals, Sequence, pool, read_arrivals

__all__ = ["serve", "ServeSpec", "ServeResult", "Arrivals", "Sequence", "pool", "read_arrivals",
           "latency_fields", "smallest_budget", "unmet_above"]
