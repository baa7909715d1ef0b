"""Adversary search: the worst layered sequence a search can find against *any* policy.

``search(policy, n=, layers=, k=)`` looks for a layered request sequence of ``length`` rounds
(a round requests one page of every layer, layer 0 first: README, "The model and its
conventions") that maximizes ALG/OPT, with OPT exact (Belady's rule, optimal for unit-cost
demand paging, :mod:`paging.offline.belady`). It needs nothing from the policy but the simulator
interface, so it works for every registered online policy and for a :class:`Policy` object
defined in a notebook. A randomized policy's cost is its mean over ``seeds`` runs (common random
numbers: the same run seeds for every candidate), and the certificate re-estimates the winner on
fresh seeds with a 95 % confidence interval (the search's own estimate is biased upward: it is
the maximum over many noisy candidates).

The result is a *lower bound found* on the policy's competitive ratio for these instance sizes,
never a proof of the ratio: the witness and its re-simulated certificate make it checkable.

Representation: a genome is a list of blocks ``(motif, reps)``; a motif is an ``m × ℓ`` array of
expert ids (m rounds), and the sequence is the motifs in order, each repeated ``reps`` times,
the last one repeated on until the sequence has ``length`` rounds (cut there). Every known
paging lower bound has this shape: one block for the cyclic sequence over k + 1 pages (LRU,
FIFO, FWF: ratio k; Marking: H_k), two blocks for LFU (a frequency-building block, then a block
that alternates two pages the counts keep evicting: the ratio grows with the length). A motif
is layered by construction (column z holds layer z's experts), so no mutation can produce an
invalid sequence, and long sequences cost a few dozen genes, which keeps the search space small.

Search: simulated annealing with random restarts. Why: the objective is a ratio of miss
counts, so it is flat on plateaus (many candidates tie) and has deep isolated optima (a cyclic
motif is optimal for LRU; one wrong expert in it costs much); annealing accepts sideways and
downhill moves to cross plateaus, and restarts from fresh random genomes escape an optimum the
annealing has frozen into. It was preferred to an evolutionary loop because one candidate at a
time costs one simulation per step (nothing wasted on a population when a policy runs in the
slow Python loop), and to MCTS over prefixes because ALG/OPT of a prefix says little about the
ratio of the long sequence it starts (compulsory misses dominate short prefixes). Each of
``restarts`` runs gets ``budget // restarts`` evaluations, starts from a random genome drawn
from the run's seed and anneals the log-ratio from temperature 0.05 geometrically down to 0.0005.

Mutations, suited to the layered model (one per step, chosen at random):

* ``point``: one expert of one round of a motif (its layer kept);
* ``round``: a whole round of a motif redrawn;
* ``insert`` / ``delete``: a round added (random or a copy of one) or removed;
* ``swap`` / ``rotate``: two rounds exchanged, a motif rotated by one round;
* ``shift``: one layer's column of a motif rotated, moving that layer's requests against the
  others' (the layer clock is the model's distinctive feature);
* ``relabel``: two experts of one layer exchanged throughout a motif;
* ``reps``: a block's repetitions doubled, halved or moved by one;
* ``blocks``: a block added (random, or a mutated copy of another), removed, or two adjacent
  blocks swapped.

Every random choice flows from ``seed`` (``numpy.random.SeedSequence``): same seed, same result.
Cost per evaluation: one run of the policy (per seed) and one Belady run on ``length·ℓ``
requests; compiled kernels (:mod:`paging.fast`) where the policy has one, the reference loop
otherwise. Evaluations of a sequence already seen are looked up, not re-run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from paging.errors import PagingError, positive_int
from paging.layout import Layout
from paging.policies import make_policy
from paging.policies.base import Policy
from paging.trace import Trace, from_pages

#: Default number of rounds: 64·k (LRU on k + 1 pages then reaches 7·(1 − O(1/64)) at k = 7).
LENGTH_PER_K = 64
#: Default evaluation budget and restarts (chosen so that LRU, n = 4, ℓ = 2, k = 7 reaches
#: ratio >= 6.5 from random starts for every seed tried; tests/unit/test_adversary_search.py).
DEFAULT_BUDGET = 4000
DEFAULT_RESTARTS = 6
#: Runs per candidate of a randomized policy (search), and fresh runs of its certificate.
DEFAULT_SEEDS = 8
CERTIFICATE_SEEDS = 32
MAX_MOTIF = 12
T_START, T_END = 0.05, 0.0005
MUTATIONS = ("point", "round", "insert", "delete", "swap", "rotate", "shift", "relabel", "reps",
             "blocks")


@dataclass
class SearchResult:
    """The best sequence found and its certificate.

    ``ratio`` is ALG/OPT on ``trace``: exact (a Fraction) for a deterministic policy; for a
    randomized one the mean misses over the certificate's fresh seeds divided by OPT, with
    ``ci`` its 95 % confidence interval (Student t over the seeds) and ``search_ratio`` the
    (upward-biased) estimate on the search's own seeds. ``certificate`` holds the re-simulated,
    verified runs (:func:`paging.verify.verify`). Weighted searches (``costs`` set): the
    ``*_misses`` fields hold fetch costs, OPT is the exact min-cost-flow optimum.
    """

    policy: str
    n: int
    layers: int
    k: int
    length: int
    budget: int
    restarts: int
    seed: int
    randomized: bool
    trace: Trace
    online_misses: float
    opt_misses: int
    ratio: Fraction | float
    search_ratio: float
    ci: tuple[float, float] | None
    evaluations: int
    distinct: int
    blocks: list = field(default_factory=list)
    history: list = field(default_factory=list)
    certificate: dict = field(default_factory=dict)
    costs: np.ndarray | None = None

    def to_dict(self, sequence: bool = True) -> dict:
        d = {
            "adversary": "search", "policy": self.policy, "n": self.n, "layers": self.layers,
            "k": self.k, "length": self.length, "requests": int(self.trace.n_requests),
            "budget": self.budget, "restarts": self.restarts, "seed": self.seed,
            "randomized": self.randomized, "online_misses": self.online_misses,
            "opt_misses": self.opt_misses, "ratio": float(self.ratio),
            "ratio_exact": str(self.ratio) if isinstance(self.ratio, Fraction) else None,
            "search_ratio": self.search_ratio,
            "ci95": list(self.ci) if self.ci is not None else None,
            "evaluations": self.evaluations, "distinct_sequences": self.distinct,
            "method": "simulated annealing with random restarts over repeated layered motifs",
            "blocks": [{"motif": m.tolist(), "reps": int(r)} for m, r in self.blocks],
            "certificate": self.certificate,
            "weighted": self.costs is not None,
            "costs": None if self.costs is None else [float(x) for x in self.costs],
        }
        if sequence:
            d["sequence"] = self.trace.pages.tolist()
        return d


# -- the objective -------------------------------------------------------------------------------

class Objective:
    """ALG/OPT of a page sequence: OPT by Belady, ALG's mean over ``seeds`` runs (one run for a
    deterministic policy), compiled kernels where available; memoized on the sequence (keyed
    by a 32-byte digest of it, :func:`sequence_key`, not by the sequence itself)."""

    def __init__(self, policy: Policy, layout: Layout, k: int, seeds: list[int]):
        from paging import fast

        self.policy, self.layout, self.k, self.seeds = policy, layout, k, seeds
        self.spec = fast.plan(policy)
        self.opt_spec = fast.plan(make_policy("belady"))
        # Marking and LeCaR consume the run's draws, made before it
        self.draws = self.spec is not None and fast.needs_draws(self.spec)
        self.memo: dict[bytes, tuple[float, int]] = {}
        self.calls = 0

    def misses(self, trace: Trace, seed: int) -> int:
        from paging import fast
        from paging.simulate import simulate

        if self.spec is not None:
            draws = fast.marking_draws(seed, trace.n_requests) if self.draws else None
            return fast.run_misses(trace, self.spec, self.k, draws=draws)
        return simulate(trace, self.policy, self.k, seed=seed, engine="reference").misses

    def opt(self, trace: Trace) -> int:
        from paging import fast

        return fast.run_misses(trace, self.opt_spec, self.k)

    def weighted(self, trace: Trace, costs: np.ndarray) -> tuple[float, float]:
        """(mean ALG cost, OPT cost) with page costs: OPT by min-cost flow (exact)."""
        from paging.offline.weighted import opt_weighted
        from paging.simulate import simulate

        alg = float(np.mean([simulate(trace, self.policy, self.k, costs=costs, seed=s).cost
                             for s in self.seeds]))
        return alg, float(opt_weighted(trace, k=self.k, costs=costs, method="flow").cost)

    def __call__(self, pages: np.ndarray, costs: np.ndarray | None = None
                 ) -> tuple[float, float, float]:
        """(ratio, mean ALG misses, OPT misses) of a page sequence (costs with ``costs``)."""
        self.calls += 1
        key = sequence_key(pages, costs)
        hit = self.memo.get(key)
        if hit is None:
            trace = from_pages(pages, self.layout, name="search")
            if costs is not None:
                hit = self.weighted(trace, costs)
            else:
                alg = float(np.mean([self.misses(trace, s) for s in self.seeds]))
                hit = (alg, self.opt(trace))
            if len(self.memo) < 200_000:
                self.memo[key] = hit
        alg, opt = hit
        return alg / opt, alg, opt


def sequence_key(pages: np.ndarray, costs: np.ndarray | None = None) -> bytes:
    """The memo key of a candidate: a BLAKE2b digest (32 bytes) of its pages (and costs).
    Keying by the bytes themselves held 8 bytes per request for every distinct candidate: 4000
    candidates of 2·10^6 requests (64·k rounds at k = 1000, 32 layers) are 64 GB."""
    import hashlib

    h = hashlib.blake2b(np.ascontiguousarray(pages, dtype=np.int64).tobytes(), digest_size=32)
    if costs is not None:
        h.update(b"costs")
        h.update(np.ascontiguousarray(costs, dtype=np.float64).tobytes())
    return h.digest()


# -- genomes -------------------------------------------------------------------------------------

def decode(blocks, length: int, layers: int, n: int) -> np.ndarray:
    """The page sequence of a genome: motifs in order, each ``reps`` times, the last repeated
    until ``length`` rounds, cut at ``length`` rounds; page = layer·n + expert."""
    parts, total = [], 0
    for motif, reps in blocks:
        if total >= length:
            break
        parts.append(np.tile(motif, (reps, 1)))
        total += motif.shape[0] * reps
    if total < length:
        motif = blocks[-1][0]
        parts.append(np.tile(motif, (-(-(length - total) // motif.shape[0]), 1)))
    rounds = np.concatenate(parts)[:length]
    return (rounds + np.arange(layers, dtype=np.int64) * n).reshape(-1)


def used_blocks(blocks, length: int) -> list:
    """The blocks :func:`decode` uses for ``length`` rounds, the last one with the repetitions
    it needs (``decode(used_blocks(g, T), T, ...)`` equals ``decode(g, T, ...)``): a genome
    carries on blocks past ``length`` rounds that no round comes from, which the witness must
    not name."""
    out, total = [], 0
    for motif, reps in blocks:
        if total >= length:
            break
        m = motif.shape[0]
        reps = min(int(reps), -(-(length - total) // m))
        out.append((motif, reps))
        total += m * reps
    return out


def random_motif(rng, n: int, layers: int, max_motif: int) -> np.ndarray:
    m = int(rng.integers(1, max_motif + 1))
    return rng.integers(0, n, size=(m, layers), dtype=np.int64)


def random_genome(rng, n: int, layers: int, length: int, max_motif: int) -> list:
    nb = int(rng.integers(1, 4))
    blocks = []
    for _ in range(nb):
        motif = random_motif(rng, n, layers, max_motif)
        reps = int(rng.integers(1, max(2, length // (nb * motif.shape[0])) + 1))
        blocks.append((motif, reps))
    return blocks


def mutate(blocks, rng, n: int, layers: int, length: int, max_motif: int) -> list:
    """One random mutation (see the module docstring); returns a new genome."""
    blocks = [(m.copy(), r) for m, r in blocks]
    b = int(rng.integers(len(blocks)))
    motif, reps = blocks[b]
    m = motif.shape[0]
    kind = MUTATIONS[int(rng.integers(len(MUTATIONS)))]
    applies = {"insert": m < max_motif, "delete": m > 1, "swap": m > 1, "rotate": m > 1,
               "shift": m > 1, "relabel": n > 1}
    if not applies.get(kind, True):  # a move that does not apply to this motif: a point one
        kind = "point"
    if kind == "point":
        r, z = int(rng.integers(m)), int(rng.integers(layers))
        if n > 1:
            motif[r, z] = (motif[r, z] + rng.integers(1, n)) % n
    elif kind == "round":
        motif[int(rng.integers(m))] = rng.integers(0, n, size=layers)
    elif kind == "insert":
        row = motif[int(rng.integers(m))] if rng.random() < 0.5 else rng.integers(0, n, layers)
        motif = np.insert(motif, int(rng.integers(m + 1)), row, axis=0)
    elif kind == "delete":
        motif = np.delete(motif, int(rng.integers(m)), axis=0)
    elif kind == "swap":
        i, j = rng.choice(m, size=2, replace=False)
        motif[[i, j]] = motif[[j, i]]
    elif kind == "rotate":
        motif = np.roll(motif, 1 if rng.random() < 0.5 else -1, axis=0)
    elif kind == "shift":
        z = int(rng.integers(layers))
        motif[:, z] = np.roll(motif[:, z], 1 if rng.random() < 0.5 else -1)
    elif kind == "relabel":
        z = int(rng.integers(layers))
        a, c = rng.choice(n, size=2, replace=False)
        col = motif[:, z].copy()
        motif[col == a, z], motif[col == c, z] = c, a
    elif kind == "reps":
        u = rng.random()
        reps = max(1, reps * 2 if u < 0.25 else reps // 2 if u < 0.5
                   else reps + 1 if u < 0.75 else reps - 1)
        reps = min(reps, length)
    elif kind == "blocks":
        u = rng.random()
        if u < 0.4 and len(blocks) < 6:
            if rng.random() < 0.5:
                new = (random_motif(rng, n, layers, max_motif), int(rng.integers(1, 9)))
            else:
                src = blocks[int(rng.integers(len(blocks)))]
                new = mutate([src], rng, n, layers, length, max_motif)[0]
            blocks.insert(int(rng.integers(len(blocks) + 1)), new)
            return blocks
        if u < 0.7 and len(blocks) > 1:
            del blocks[b]
            return blocks
        if len(blocks) > 1 and b + 1 < len(blocks):
            blocks[b], blocks[b + 1] = blocks[b + 1], blocks[b]
            return blocks
    blocks[b] = (motif, reps)
    return blocks


# -- the search ----------------------------------------------------------------------------------

def check_instance(pol: Policy, n: int, layers: int, k: int, length: int | None) -> int:
    positive_int("n (experts per layer)", n)
    positive_int("layers", layers)
    positive_int("k", k)
    dist = getattr(pol, "per_layer", False)
    if k >= n * layers or (dist and k < layers):
        raise PagingError(f"adversary search needs {'layers' if dist else '1'} <= k < n*layers "
                          f"(with k >= n*layers every page fits"
                          + (", with k < layers a -dist policy has a layer without a slot and "
                             "bypasses" if dist else "") + f"), got n={n}, layers={layers}, "
                          f"k={k}")
    if pol.clairvoyant:
        raise PagingError(f"adversary search is for online policies; {pol.name} is clairvoyant")
    if getattr(pol, "needs_scores", False):
        raise PagingError(f"{pol.name} reads gate scores, which the searched sequences do not "
                          "carry")
    length = (max(4, LENGTH_PER_K * k) if length is None
              else positive_int("length (rounds)", length))
    check_memory(n * layers, length * layers)
    return length


#: what one evaluation holds per request of the sequence (the candidate, its trace, next uses,
#: the kernels' arrays), measured (LRU and Belady through the compiled kernels, 2026-11-29):
#: about 74 bytes; per page of the layout: :data:`adversaries.base.PAGE_BYTES`
SEARCH_REQUEST_BYTES = 80


def check_memory(pages: int, requests: int) -> None:
    """Refuse up front a search whose evaluations would not fit in this machine's memory (the
    system killed such runs, or numpy failed in the middle of the search)."""
    from adversaries.base import PAGE_BYTES
    from paging.memory import available, human

    need = pages * PAGE_BYTES + requests * SEARCH_REQUEST_BYTES
    have = available()
    if need > have:
        raise PagingError(f"adversary search: n*layers = {pages:,} pages and length*layers = "
                          f"{requests:,} requests need about {human(need)} of memory per "
                          f"evaluation ({PAGE_BYTES} bytes per page, {SEARCH_REQUEST_BYTES} per "
                          f"request); this machine has {human(have)} available: expected fewer "
                          "experts (--n), layers or rounds (--length)")


def _ci(values: list[float]) -> tuple[float, float]:
    from scipy import stats

    a = np.asarray(values, dtype=float)
    if a.size < 2 or float(a.std(ddof=1)) == 0.0:
        return float(a.mean()), float(a.mean())
    half = float(stats.t.ppf(0.975, a.size - 1) * a.std(ddof=1) / math.sqrt(a.size))
    return float(a.mean() - half), float(a.mean() + half)


def search(policy: str | Policy, *, n: int, layers: int, k: int, length: int | None = None,
           budget: int | None = None, restarts: int | None = None, seed: int = 0,
           seeds: int | None = None, max_motif: int = MAX_MOTIF, show: bool | None = None,
           start=None, max_cost: int = 0) -> SearchResult:
    """Search for the largest ALG/OPT over layered sequences of ``length`` rounds.

    Parameters
    ----------
    policy : str or Policy
        A registered name (``"lru"``, ``"token-match"``, ``"robust:token-match,lru"``) or a
        policy object; online (not clairvoyant), not reading gate scores.
    n, layers, k : int
        Experts per layer, layers and cache size; ``layers <= k < n·layers``.
    length : int, optional
        Rounds of the sequence (``length·layers`` requests); default 64·k.
    budget : int, optional
        Candidate evaluations in all (default 4000); 0 evaluates the random start genomes only
        (one per restart).
    restarts : int, optional
        Independent annealing runs from random genomes (default 6, at most ``budget``).
    seed : int
        Seeds every random choice of the search and the policy's runs.
    seeds : int, optional
        Runs per candidate for a randomized policy (default 8; 1 for deterministic ones).
    start : list of (motif, reps), optional
        A genome to start the first restart from (e.g. a hand-made construction); the
        rediscovery tests and ledger rows never pass one.
    show : bool, optional
        Progress bar (default: when stderr is a terminal).
    max_cost : int
        0: unit costs (misses; OPT by Belady). C >= 2: weighted paging, the search also chooses
        every page's fetch cost in 1..C (``--weighted --max-cost C``); ALG's cost is its total
        fetch cost and OPT the exact min-cost-flow optimum (:mod:`paging.offline.flow`).
    """
    from paging import progress

    pol = make_policy(policy) if isinstance(policy, str) else policy
    if not isinstance(pol, Policy):
        raise PagingError(f"policy must be a registered name or a Policy object, got "
                          f"{type(policy).__name__}")
    length = check_instance(pol, n, layers, k, length)
    budget = DEFAULT_BUDGET if budget is None else positive_int("budget", budget, 0)
    restarts = DEFAULT_RESTARTS if restarts is None else positive_int("restarts", restarts)
    restarts = max(1, min(restarts, budget)) if budget else restarts
    seed = positive_int("seed", seed, 0)
    max_motif = positive_int("max_motif", max_motif)
    max_cost = positive_int("max_cost", max_cost, 0)
    if max_cost == 1:
        raise PagingError("max_cost must be 0 (unit costs) or >= 2 (weighted), got 1")
    randomized = bool(pol.randomized)
    n_seeds = DEFAULT_SEEDS if seeds is None else positive_int("seeds", seeds)
    if seeds is not None and n_seeds > 1 and not randomized:  # (it was dropped without a word)
        raise PagingError(f"seeds={n_seeds} applies to a randomized policy; {pol.name} is "
                          "deterministic and runs once per candidate (give no --seeds)")
    n_seeds = n_seeds if randomized else 1  # a deterministic policy runs once
    root = np.random.SeedSequence(seed)
    ss_search, ss_runs, ss_cert = root.spawn(3)
    run_seeds = [int(x) for x in ss_runs.generate_state(n_seeds)]
    layout = Layout(n, layers)
    obj = Objective(pol, layout, k, run_seeds)

    with progress.bar(total=max(budget, restarts), desc=f"search {pol.name}", unit="eval",
                      show=show) as pb:
        best, history = anneal(lambda *a: obj(*a)[0], n=n, layers=layers, length=length,
                               budget=budget, restarts=restarts, seeds=ss_search,
                               max_motif=max_motif, start=start, bar=pb, max_cost=max_cost)
    search_ratio, genome, pages, costs = best
    genome = used_blocks(genome, length)
    trace = from_pages(pages, layout, name=f"search:{pol.name},n={n},layers={layers},k={k},"
                                           f"length={length},seed={seed}")
    cert_seeds = ([int(x) for x in ss_cert.generate_state(CERTIFICATE_SEEDS)] if randomized
                  else run_seeds)
    cert = certify(trace, pol, k, cert_seeds, costs=costs)
    if randomized:
        vals = [a / cert["opt_misses"] for a in cert["online_misses"]]
        ratio: Fraction | float = float(np.mean(vals))
        ci = _ci(vals)
        online = float(np.mean(cert["online_misses"]))
    else:
        online = cert["online_misses"][0]
        ratio = Fraction(online).limit_denominator(10**9) / Fraction(cert["opt_misses"]) \
            .limit_denominator(10**9)
        ci = None
        if float(ratio) != search_ratio:  # the certificate re-runs the search's own run
            raise AssertionError(f"certificate {ratio} disagrees with the search's "
                                 f"{search_ratio}")
    return SearchResult(
        policy=pol.name, n=n, layers=layers, k=k, length=length, budget=budget,
        restarts=restarts, seed=seed, randomized=randomized, trace=trace,
        online_misses=online, opt_misses=cert["opt_misses"], ratio=ratio,
        search_ratio=search_ratio, ci=ci, evaluations=obj.calls, distinct=len(obj.memo),
        blocks=genome, history=history, certificate=cert, costs=costs)


def anneal(evaluate, *, n: int, layers: int, length: int, budget: int, restarts: int,
           seeds: np.random.SeedSequence, max_motif: int = MAX_MOTIF, start=None, bar=None,
           max_cost: int = 0):
    """The search loop (module docstring): ``restarts`` annealing runs from random genomes,
    ``budget`` calls of ``evaluate(pages) -> float`` (> 0) in all. With ``max_cost`` > 0 the
    state also holds integer page costs in 1..max_cost (drawn uniformly at each restart; one in
    five mutations redraws, doubles or halves one page's cost) and ``evaluate(pages, costs)``
    is called. Returns ``(best, history)``: ``best = (value, genome, pages, costs)`` (costs None
    without ``max_cost``) and the improvements as ``(call, value)``."""
    best = (-math.inf, None, None, None)
    history = []
    calls = 0
    per = budget // restarts if budget else 0
    P = n * layers

    def value(pages, w):
        return evaluate(pages) if w is None else evaluate(pages, w)

    for j, child in enumerate(seeds.spawn(restarts)):
        rng = np.random.default_rng(child)
        genome = start if (j == 0 and start is not None) else \
            random_genome(rng, n, layers, length, max_motif)
        genome = [(np.asarray(m, dtype=np.int64).reshape(-1, layers), int(r)) for m, r in genome]
        w = rng.integers(1, max_cost + 1, size=P).astype(np.float64) if max_cost else None
        pages = decode(genome, length, layers, n)
        f = value(pages, w)
        calls += 1
        if f > best[0]:
            best = (f, genome, pages, w)
            history.append((calls, f))
        steps = per - 1 if j < restarts - 1 else budget - calls
        temp = T_START
        decay = (T_END / T_START) ** (1.0 / max(steps, 1))
        for _ in range(max(steps, 0)):
            cw = w
            if max_cost and rng.random() < 0.2:
                cand, cw = genome, w.copy()
                p, u = int(rng.integers(P)), rng.random()
                cw[p] = (float(rng.integers(1, max_cost + 1)) if u < 0.5
                         else min(cw[p] * 2, max_cost) if u < 0.75 else max(cw[p] // 2, 1))
            else:
                cand = mutate(genome, rng, n, layers, length, max_motif)
            cpages = decode(cand, length, layers, n)
            g = value(cpages, cw)
            calls += 1
            d = math.log(max(g, 1e-12)) - math.log(max(f, 1e-12))
            if d >= 0 or rng.random() < math.exp(d / temp):
                genome, w, f = cand, cw, g
                if f > best[0]:
                    best = (f, genome, cpages, w)
                    history.append((calls, f))
                    if bar is not None:
                        bar.set_postfix(best=f"{f:.4f}", refresh=False)
            temp *= decay
            if bar is not None:
                bar.update(1)
        if not per and bar is not None:
            bar.update(1)
    return best, history


def search_score(score, *, n: int, layers: int, length: int, budget: int = DEFAULT_BUDGET,
                 restarts: int = DEFAULT_RESTARTS, seed: int = 0, max_motif: int = MAX_MOTIF,
                 show: bool | None = None) -> tuple[float, Trace]:
    """The same search for any score of a sequence: ``score(trace) -> float`` (> 0, larger is
    worse for the claim under test), e.g. a policy's cost over a proven bound. Returns the best
    score found and its trace. Deterministic scores only (the caller seeds its runs)."""
    from paging import progress

    layout = Layout(positive_int("n", n), positive_int("layers", layers))
    memo: dict[bytes, float] = {}

    def evaluate(pages):
        key = sequence_key(pages)
        if key not in memo:
            memo[key] = float(score(from_pages(pages, layout, name="search")))
        return memo[key]

    with progress.bar(total=max(budget, restarts), desc="search", unit="eval", show=show) as pb:
        (value, _, pages, _), _ = anneal(evaluate, n=n, layers=layers, length=length,
                                      budget=budget, restarts=max(1, min(restarts, budget or 1)),
                                      seeds=np.random.SeedSequence(seed), max_motif=max_motif,
                                      bar=pb)
    return value, from_pages(pages, layout, name=f"search_score:n={n},layers={layers},"
                                                 f"length={length},seed={seed}")


def certify(trace: Trace, policy: str | Policy, k: int, seeds: list[int],
            costs: np.ndarray | None = None) -> dict:
    """Re-simulate ALG (once per seed) and OPT (Belady) on ``trace`` through
    :func:`paging.simulate.simulate` with recording, and check every run with
    :func:`paging.verify.verify` (a :class:`~paging.verify.VerificationError` if one is not a
    feasible demand-paging run). With ``costs``: ALG's total fetch cost, and OPT the exact
    min-cost-flow optimum, checked to be at most Belady's cost under the same costs and at
    most ALG's (a feasible schedule's cost bounds OPT from above)."""
    from paging.simulate import simulate
    from paging.verify import verify

    opt = simulate(trace, "belady", k, record=True, costs=costs)
    verify(trace, opt, costs=costs)
    online = []
    for s in seeds:
        res = simulate(trace, policy, k, seed=s, record=True, costs=costs)
        verify(trace, res, costs=costs)
        online.append(int(res.misses) if costs is None else float(res.cost))
    if costs is None:
        return {"opt_misses": int(opt.misses), "online_misses": online, "seeds": list(seeds),
                "verified": True, "opt": "belady"}
    from paging.offline.weighted import opt_weighted

    flow = float(opt_weighted(trace, k=k, costs=costs, method="flow").cost)
    if not flow <= min([float(opt.cost)] + online) + 1e-9:
        raise AssertionError(f"the flow optimum {flow} exceeds a feasible schedule's cost")
    return {"opt_misses": flow, "online_misses": online, "seeds": list(seeds),
            "verified": True, "opt": "min-cost flow", "belady_cost": float(opt.cost)}


__all__ = ["search", "search_score", "anneal", "certify", "SearchResult", "decode", "mutate",
           "random_genome", "sequence_key", "used_blocks", "DEFAULT_BUDGET", "DEFAULT_RESTARTS"]
