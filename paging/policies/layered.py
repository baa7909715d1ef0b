"""Layer-aware policies: LLRU (Angelopoulos et al., Sec. 4), FLD and Least-Stale (SpecMD), each
SpecMD policy in the paper's reading and in the package's earlier one (issue 19).

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
    order = 60  # place in the registry (paging policies)
    kernel = "list:LLRU"
    dist_kernel = "list:LRU"
    stack = "LLRU"
    reference = "Angelopoulos et al., Sec. 4"

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
    kernel = "list:LLRU_LATEST"
    dist_kernel = "list:LRU"
    stack = "LLRU_LATEST"
    order = 65  # after llru
    reference = "Angelopoulos et al., Sec. 4, Def. 2 (other reading of D)"

    def evict_key(self, t, page):
        now = int(self.ctx.steps[t])
        tau = self.last_step[page]
        L = self.ctx.layout.n_layers
        return ((now - tau) // L, (tau - now - 1) % L, -self.last[page])


class FLD(PriorityPolicy):
    """Furthest Layer Distance (SpecMD App. B, after Tang et al. 2024), the paper's reading.

    SpecMD: "This policy computes the distance between each cached expert's layer and the
    current inference layer, evicting experts from the farthest layers first." The distance is
    the plain |layer(p) − c| (c: the layer of the current request), largest first; pages of
    the current layer have distance 0 and go last. Ties between the two layers at the same
    distance (c − d behind, c + d ahead): the layer behind goes first, since the forward pass
    still needs the one ahead. Within a layer: least recently used (oldest request index).

    Reading note: the distance could also be counted forward around the layer cycle,
    (layer(p) − c) mod ℓ (the next pass needs layer 0 after layer ℓ − 1). That reading is
    :class:`FLDCyclic` (``fld-cyclic``, this package's ``fld`` before issue 19). On the Mixtral
    decode log (groups mode) the plain distance gives the paper's "performed only slightly
    better than LRU" (Sec. 5.2); the cyclic one collides far less than LRU (README, SpecMD).
    """

    name = "fld"
    order = 100  # place in the registry (paging policies)
    kernel = "list:FLD"
    dist_kernel = "list:LRU"
    stack = "FLD"
    reference = "SpecMD App. B (plain layer distance)"

    def evict_key(self, t, page):
        L = self.ctx.layout.n_layers
        c = int(self.ctx.steps[t]) % L
        z = page // self.ctx.layout.n_experts
        return (abs(z - c), z < c, -self.last[page])


class FLDCyclic(PriorityPolicy):
    """Furthest Layer Distance, cyclic reading (this package's ``fld`` before issue 19).

    Evict the candidate whose layer is furthest ahead of the current layer c in the forward
    order around the layer cycle: distance (layer(p) − c) mod ℓ, largest first; pages of the
    current layer have distance 0 and go last. Ties (same layer): least recently used (oldest
    request index). SpecMD's sentence ("the distance between each cached expert's layer and
    the current inference layer") reads more naturally as the plain distance (:class:`FLD`).
    """

    name = "fld-cyclic"
    order = 110  # place in the registry (paging policies)
    kernel = "list:FLD_CYCLIC"
    dist_kernel = "list:LRU"
    stack = "FLD_CYCLIC"
    reference = "SpecMD App. B, cyclic distance (this package before issue 19)"

    def evict_key(self, t, page):
        L = self.ctx.layout.n_layers
        c = int(self.ctx.steps[t]) % L
        return ((page // self.ctx.layout.n_experts - c) % L, -self.last[page])


class LeastStale(PriorityPolicy):
    """Least-Stale without prefetching (SpecMD, Sec. 4.2), the paper's reading with *left*.

    The sentences implemented (SpecMD Sec. 4.2, 5.2, App. A.3):

    * "An expert is considered *stale* if it was accessed in a previous forward cycle;
      otherwise, it is *current*, meaning it is used in the current pass or selected by
      prefetching." (a prefetch counts as a use: :meth:`PriorityPolicy.on_prefetch`)
    * "We describe an expert as *left* if it appears earlier than the current execution point
      in layer-expert order."
    * "Least-Stale maintains near-zero collisions across all layers by only evicting stale
      left-layer experts." / "our Least-Stale policy prioritizes removing experts from
      already-processed layers while protecting experts needed for upcoming layers."
    * "Eviction prioritizes stale experts [...] Experts in the current queue are evicted only
      to prevent out-of-memory errors. Within each queue, experts follow FIFO ordering based on
      layer position."

    The full order, first evicted first: (1) *left* experts (layer < c, the current layer)
    before the others, because the paper protects "experts needed for upcoming layers" and
    evicts from "already-processed layers"; (2) within left and within the rest, *stale* before
    *current* (the two queues); (3) the lowest layer first ("FIFO ordering based on layer
    position": in a pass the lower layer was entered first); (4) least recently used. So a
    stale left expert goes first, a current expert of a layer still ahead last. Forward pass:
    ``steps // ℓ`` (one round in rounds mode, one token in groups mode).

    Reading notes. *Left* is taken at layer granularity: the experts of the current layer are
    not left (they are at the execution point; in groups mode the running group is pinned). The
    finer "layer-expert order" reading (an expert of the current layer with a smaller id is
    also left) differs only for the current layer's unrequested experts; App. A.3's "protecting
    experts needed for upcoming layers" counts all of them as evictable
    (:class:`LeastStaleUpcoming`, ``least-stale-upcoming``).

    What this order gives up: Sec. 4.2's "Experts in the current queue are evicted only to
    prevent out-of-memory errors". Putting *left* first evicts a current expert of an
    already-processed layer while stale experts of the layers ahead are still cached. Sec.
    4.2's two queues taken literally (stale first, each queue by lowest layer) are
    :class:`LeastStaleLayer` (``least-stale-layer``, this package's ``least-stale`` before
    issue 19); its layer order already puts the left experts first inside each queue, and on
    traces whose passes walk every layer in order it equals LRU whenever the cache holds less
    than one pass. The two sentences cannot both hold; the numbers decide: on the Mixtral
    decode log in groups mode this order (left first) cuts LRU's collision misses 8.5x at 13
    experts (5 % of the 256) and 29x at 47 (5 % of the model's bytes, SpecMD's capacity;
    docs/guide/specmd.md, "Reproduction: SpecMD"; the paper: 2.6-8.6x), the queue reading not
    at all.
    """

    name = "least-stale"
    order = 70  # place in the registry (paging policies)
    kernel = "list:LEAST_STALE"
    dist_kernel = "list:LRU"
    stack = "LEAST_STALE"
    reference = "SpecMD, Sec. 4 and 5.2 (left, then stale)"
    #: whether the current layer's experts count as *left* (:class:`LeastStaleUpcoming`)
    current_is_left = False

    def evict_key(self, t, page):
        L = self.ctx.layout.n_layers
        s = int(self.ctx.steps[t])
        z = page // self.ctx.layout.n_experts
        c = s % L
        stale = self.last_step[page] // L < s // L
        left = z < c or (self.current_is_left and z == c)
        return (left, stale, -z, -self.last[page])


class LeastStaleUpcoming(LeastStale):
    """Least-Stale, App. A.3's reading: protect only the experts of *upcoming* layers.

    SpecMD App. A.3: "our Least-Stale policy prioritizes removing experts from already-processed
    layers while protecting experts needed for upcoming layers." Read this way, the current
    layer's cached experts that the running group does not use (the group itself is pinned) are
    evicted with the left ones: they are not needed before the next pass. The order is
    :class:`LeastStale`'s with *left* = layer ≤ c. Sec. 4's "earlier than the current execution
    point" reads as layer < c (:class:`LeastStale`); the two differ only in where the current
    layer's other experts go. Which one reproduces SpecMD's numbers: README, SpecMD reproduction.
    """

    name = "least-stale-upcoming"
    order = 80  # place in the registry (paging policies)
    kernel = "list:LEAST_STALE_UP"
    dist_kernel = "list:LRU"
    stack = "LEAST_STALE_UP"
    reference = "SpecMD, App. A.3 (protect upcoming layers)"
    current_is_left = True


class LeastStaleLayer(PriorityPolicy):
    """Least-Stale, Sec. 4.2's two queues as written (this package's ``least-stale`` before
    issue 19).

    A cached expert is *stale* if its last request was in an earlier forward pass, *current*
    otherwise. Stale experts are evicted before current ones ("Eviction prioritizes stale
    experts [...] Experts in the current queue are evicted only to prevent out-of-memory
    errors"); within each queue "experts follow FIFO ordering based on layer position": the
    lowest layer goes first, and within a layer the least recently used (oldest request index).
    *Left* (layer < the current one) is not a separate test, and needs none: the lowest layers
    are the left ones, so inside each queue the left experts already go first, and the order
    is "stale, then left, then lowest layer" (``tests/unit/test_policies.py`` checks the two
    keys evict alike). Where it parts from :class:`LeastStale` (left first, the reading that
    reproduces SpecMD's collision numbers): a current left expert against a stale one at or
    ahead of the execution point, which this reading keeps and :class:`LeastStale` evicts.
    Early in a pass no cached expert is left, and its lowest stale layer is one still ahead.

    Forward pass: ``steps // ℓ``. Ordering the stale queue by insertion time instead of layer
    would make it identical to LRU when there is no prefetching.
    """

    name = "least-stale-layer"
    order = 90  # place in the registry (paging policies)
    kernel = "list:LEAST_STALE_LAYER"
    dist_kernel = "list:LRU"
    stack = "LEAST_STALE_LAYER"
    reference = "SpecMD, Sec. 4.2's queues (stale, then layer; this package before issue 19)"

    def evict_key(self, t, page):
        L = self.ctx.layout.n_layers
        now_pass = int(self.ctx.steps[t]) // L
        stale = self.last_step[page] // L < now_pass
        return (stale, -(page // self.ctx.layout.n_experts), -self.last[page])
