"""Cache lifetimes of a recorded run, in tokens.

Source: "Mixture of Cache-Conditional Experts for Efficient Mobile Device Inference"
(../shared/papers/cache-conditional-experts_cache-aware-routing.txt), Sec. 4.6 and Table 2:
"average cache miss rates and cache lifetimes (the average number of time steps an expert
remains in memory)", Table 2's caption giving the unit, "average cache lifetimes (in number
of tokens)". A *residency* of a page starts when it enters the cache (a fetched miss) and ends
when it is evicted; its lifetime is the number of tokens between the two (the token of the
evicting request minus the token of the inserting one, so a page evicted within the token it
entered lives 0 tokens).

The sentence leaves open what to do with the residencies still open when the sequence ends.
Both readings are built and named:

* ``lifetime_tokens`` — the mean over the residencies that ended in an eviction (the ones
  whose time in memory is known);
* ``lifetime_tokens_all`` — the mean over every residency, an open one counted until the end
  of the sequence (its last token + 1), a lower bound on its lifetime.

Both reproduce Table 2's Mixtral row on the HumanEval logs (per-layer LRU at 4 of 8 experts:
about 5 tokens with the original routing, 10 with Cache-Prior at λ = 0.5; the guide's table).

What enters the cache: a fetched miss (at any precision), not a bypassed, dropped or
substituted request (:mod:`paging.miss`); a routed run's served requests
(:func:`paging.routing.served.served_trace`). Prefetched pages enter without a request and
their evictions are logged apart, so a run with a prefetcher is refused. A warm run's lifetimes
run over the joined sequences (a page may stay in memory from one request to the next).
"""

from __future__ import annotations

import numpy as np

from paging.errors import PagingError
from paging.trace import Trace

__all__ = ["lifetimes"]


def lifetimes(trace: Trace, result) -> dict:
    """``lifetime_tokens``, ``lifetime_tokens_all`` (module docstring; None without any
    residency of that kind) and ``residencies`` (how many there were) of ``result``, a run of
    ``simulate(trace, ..., record=True)``."""
    if result.hit_mask is None or result.evictions is None:
        raise PagingError("cache lifetimes need a fully recorded run (simulate(..., "
                          "record=True))")
    ev = result.events or {}
    if ev.get("prefetched") is not None and len(ev["prefetched"]):
        raise PagingError("cache lifetimes count residencies from fetched misses; a run with "
                          "prefetches is not supported")
    if ev.get("served_pages") is not None:
        from paging.routing.served import served_trace

        trace = served_trace(trace, result)
    N = trace.n_requests
    hit = np.asarray(result.hit_mask, dtype=bool)
    if hit.shape != (N,):
        raise PagingError(f"the hit mask has {hit.size} entries for {N} requests")
    tok = np.asarray(trace.token if trace.token is not None else trace.passes, dtype=np.int64)
    inserted = ~hit  # a fetched miss, not a bypassed, dropped or substituted request
    inserted[np.asarray(result.bypassed, dtype=np.int64)] = False
    inserted[np.asarray(ev.get("dropped", ()), dtype=np.int64)] = False
    inserted[np.asarray(ev.get("substituted", ()), dtype=np.int64).reshape(-1, 2)[:, 0]] = False
    ins_t = np.flatnonzero(inserted)
    evs = np.asarray(result.evictions, dtype=np.int64).reshape(-1, 2)
    # every residency event: (page, request, kind), an eviction at request t (0) before an
    # insertion at t (1); per page they alternate, insertion first
    page = np.concatenate([trace.pages[ins_t], evs[:, 1]])
    at = np.concatenate([ins_t, evs[:, 0]])
    kind = np.concatenate([np.ones(ins_t.size, np.int8), np.zeros(len(evs), np.int8)])
    order = np.lexsort((kind, at, page))
    page, at, kind = page[order], at[order], kind[order]
    ends = np.flatnonzero(kind == 0)
    if ends.size and ((ends == 0).any() or (kind[ends - 1] != 1).any()
                      or (page[ends - 1] != page[ends]).any()):
        raise PagingError("the eviction log does not pair with the run's insertions")
    closed = tok[at[ends]] - tok[at[ends - 1]]
    starts = np.flatnonzero(kind == 1)
    open_ = starts[(starts + 1 >= kind.size) | (np.r_[page[1:], -1][starts] != page[starts])]
    end = int(tok.max()) + 1 if N else 0
    everything = np.concatenate([closed, end - tok[at[open_]]])
    return {"lifetime_tokens": float(closed.mean()) if closed.size else None,
            "lifetime_tokens_all": float(everything.mean()) if everything.size else None,
            "residencies": int(everything.size)}
