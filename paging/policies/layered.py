"""Layer-aware policies: LLRU (Angelopoulos et al., Sec. 4), FLD and Least-Stale (SpecMD).

All three read the layer clock ``steps`` of the trace (:mod:`paging.trace`): in rounds mode
``steps[t] = t``, the paper's time; in groups mode all K requests of a (token, layer) group share
the step ``token·ℓ + layer``. The layer of step s is ``s mod ℓ`` and its forward pass ``s // ℓ``.
"""

from __future__ import annotations

from paging.policies.base import PriorityPolicy


class LLRU(PriorityPolicy):
    """Layered LRU (Angelopoulos, Marchal, Obrecht, Simon, "Cache Management for
    Mixture-of-Experts LLMs", extended version, Sec. 4, Def. 2).

    For a cached page p at time t with last request at τ(p,t):

    * last-round index  R(p,t) = ⌊(t − τ(p,t)) / ℓ⌋;
    * relative layer distance  D(p,t) = (τ(p,t) − t) mod ℓ  (mod taken in 0..ℓ−1);

    on a miss, evict the page with the largest R, ties broken by the largest D — to the letter
    of Definition 2. Time t is the layer clock: the 0-based request index in rounds mode (so
    t mod ℓ is the layer, as in Sec. 2.2), the group step token·ℓ + layer in groups mode.
    Pages with equal (R, D) can only occur in groups mode (same group); the one whose last
    request index is older is evicted. Since τ(p,t) ≡ layer(p) (mod ℓ), D counts the layers
    between the current one and p's: the page of the layer just served (D = ℓ−1) goes first.

    The priority depends only on the request history, not on k, so LLRU is a stack algorithm
    (all cache sizes in one pass, :mod:`paging.mrc`). The paper says LLRU retains LRU's
    worst-case guarantee (Sec. 6) but gives no proof; the property tests check
    LLRU(σ) ≤ k·OPT(σ) + k empirically.
    """

    name = "llru"

    def evict_key(self, t, page):
        now = int(self.ctx.steps[t])
        tau = self.last_step[page]
        L = self.ctx.layout.n_layers
        return ((now - tau) // L, (tau - now) % L, -self.last[page])


class LLRULatest(LLRU):
    """LLRU with the other reading of Definition 2's D: the current layer's pages go first.

    Definition 2 calls D(p, t) "the number of requests needed before reaching the layer in
    which p belongs" and LLRU evicts the largest, "pages ... whose layer will be requested the
    latest"; Sec. 4 motivates it with "if a page of layer i is currently served, ... a more
    reasonable choice is to evict a page of layer i-1 or even i". The printed formula
    D = (τ − t) mod ℓ gives a page of the current layer i the value 0, so :class:`LLRU` (to the
    letter) evicts it *last* in its round bucket, although its layer is the one requested
    latest (ℓ requests ahead). Counting the requests after t until p's layer comes again,
    ((τ − t − 1) mod ℓ) + 1 in 1..ℓ, and evicting the largest gives the order i, i − 1, ...,
    i + 1 within a bucket: the page whose next request is furthest ahead when every page of
    the bucket is requested once per round. Same R buckets, same ties (older request first).

    Witness (a possible erratum, recorded in the README's theory section): pages 0 2 4 1 3 5
    with n = 2, ℓ = 3, k = 5; at t = 5 pages 0, 2, 4 share R = 1 with printed D = 1, 2, 0:
    ``llru`` evicts page 2 (layer 1, next requested at t = 7 if the round repeats) and keeps
    page 4 (layer 2, next at t = 8); ``llru-latest`` evicts page 4. Also a stack algorithm (the
    priority does not depend on k).
    """

    name = "llru-latest"

    def evict_key(self, t, page):
        now = int(self.ctx.steps[t])
        tau = self.last_step[page]
        L = self.ctx.layout.n_layers
        return ((now - tau) // L, (tau - now - 1) % L, -self.last[page])


class FLD(PriorityPolicy):
    """Furthest Layer Distance (SpecMD App. B, after Tang et al. 2024).

    Evict the candidate whose layer is furthest ahead of the current layer c in the forward
    order: distance (layer(p) − c) mod ℓ, largest first; pages of the current layer have
    distance 0 and go last. Ties (same layer): least recently used (oldest request index).
    """

    name = "fld"

    def evict_key(self, t, page):
        L = self.ctx.layout.n_layers
        c = int(self.ctx.steps[t]) % L
        return ((page // self.ctx.layout.n_experts - c) % L, -self.last[page])


class LeastStale(PriorityPolicy):
    """Least-Stale without prefetching (SpecMD, Sec. 4.2).

    A cached expert is *stale* if its last request was in an earlier forward pass, *current*
    otherwise. Stale experts are evicted before current ones ("Experts in the current queue are
    evicted only to prevent out-of-memory errors"); within each queue "experts follow FIFO
    ordering based on layer position": the lowest layer goes first, and within a layer the
    least recently used (oldest request index).

    Forward pass: ``steps // ℓ``, i.e. one round (a walk over the ℓ layers) in rounds mode and
    one token in groups mode. Reading note: ordering the stale queue by insertion time instead
    of layer would make Least-Stale identical to LRU when there is no prefetching (each pass
    requests layers in order), so the layer-position reading is the one that defines a policy
    of its own here.
    """

    name = "least-stale"

    def evict_key(self, t, page):
        L = self.ctx.layout.n_layers
        now_pass = int(self.ctx.steps[t]) // L
        stale = self.last_step[page] // L < now_pass
        return (stale, -(page // self.ctx.layout.n_experts), -self.last[page])
