"""What every lower-bound construction returns, and the checks they share.

An adversary builds a request sequence (non-adaptive, adaptive against one online policy, or a
random one drawn from a distribution, Yao's principle) and certifies it: the online policy's
misses, OPT's misses (Belady's rule on the very same sequence, :mod:`paging.offline.belady`),
their ratio and the bound the theorem claims. The certificate is computed, never asserted: the
proofs in :mod:`proofs` and the tests compare it with the bound.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from paging.errors import PagingError, positive_int
from paging.layout import Layout
from paging.policies import make_policy
from paging.policies.base import Policy
from paging.result import Result
from paging.simulate import simulate, verifying_now
from paging.trace import Trace


@dataclass(frozen=True)
class AdversaryResult:
    """A constructed sequence and its certificate.

    Attributes
    ----------
    name : str
        The construction (``"theorem2"``, ``"sleator-tarjan"``, ...).
    policy : str
        The online policy it was run against.
    k : int
        Cache size.
    trace : Trace
        The sequence (for distributions: the first of ``traces``).
    online_misses, opt_misses : int
        Misses of the policy and of OPT (Belady) on the sequence; for distributions, totals over
        all sequences in ``traces`` (so ``ratio`` is the ratio of the means).
    ratio : Fraction
        ``online_misses / opt_misses`` exactly (``opt_misses`` is never 0: every non-empty
        sequence has a compulsory miss).
    bound : Fraction or float
        What the theorem says the ratio is at least (asymptotically); a float only where the
        bound involves a logarithm.
    bound_name : str
        The bound as a formula, e.g. ``"k - l + 1"``.
    params : dict
        Everything else: n, layers, rounds, the theorem's additive constant, per-round counts.
    traces : tuple of Trace
        All sequences of a randomized construction (empty for a single sequence).
    opt_run : Result, optional
        OPT's (Belady's) run on ``trace`` with its hit mask and eviction log, when the
        construction was asked to ``record`` it (Theorem 2); not part of :meth:`to_dict`.
    """

    name: str
    policy: str
    k: int
    trace: Trace
    online_misses: int
    opt_misses: int
    ratio: Fraction
    bound: Fraction | float
    bound_name: str
    params: dict = field(default_factory=dict)
    traces: tuple[Trace, ...] = ()
    opt_run: Result | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        """A JSON-ready record (exact fractions also as strings ``"p/q"``)."""
        return {
            "adversary": self.name,
            "policy": self.policy,
            "k": self.k,
            "requests": sum(len(t) for t in self.traces) if self.traces else len(self.trace),
            "online_misses": int(self.online_misses),
            "opt_misses": int(self.opt_misses),
            "ratio": float(self.ratio),
            "ratio_exact": str(self.ratio),
            "bound": float(self.bound),
            "bound_exact": str(self.bound) if isinstance(self.bound, Fraction) else None,
            "bound_name": self.bound_name,
            "params": jsonable(self.params),
        }


def jsonable(obj, exact: bool = False):
    """Plain JSON values, recursively (for ``--json``): numpy scalars unwrapped, non-finite
    floats as strings (documents are printed with allow_nan=False), Fractions as floats, or as
    exact strings such as ``"1/3"`` with ``exact=True`` (the theorem ledger)."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v, exact) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v, exact) for v in obj]
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, Fraction):
        return str(obj) if exact else float(obj)
    if isinstance(obj, numbers.Integral):
        return int(obj)
    if isinstance(obj, numbers.Real):
        x = float(obj)
        return x if math.isfinite(x) else str(x)
    return str(obj)


# -- shared argument checks ----------------------------------------------------------------------

#: what a simulation holds per page of the layout (residency, sizes, heap state), measured on
#: LRU and Belady through the compiled kernels (2026-11-29): about 95 bytes
PAGE_BYTES = 100


def layout_of(n: int, layers: int) -> Layout:
    """The n x l layout, refused up front when a simulation's per-page arrays would not fit in
    memory (theorem1 --n 4*10^8 --layers 2 failed, or was killed, in its first allocation)."""
    from paging.memory import check_memory

    n = positive_int("n (experts per layer)", n)
    layers = positive_int("layers", layers)
    check_memory(n * layers * PAGE_BYTES, f"n*layers = {n * layers:,} pages",
                 f" in a simulation ({PAGE_BYTES} bytes per page)",
                 ": expected fewer experts (--n) or layers (--layers)")
    return Layout(n, layers)


def policy_of(policy: str | Policy) -> Policy:
    """A fresh policy instance (names go through the registry)."""
    return make_policy(policy) if isinstance(policy, str) else policy


def require_deterministic_online(pol: Policy, adversary: str) -> None:
    """Adaptive adversaries predict the policy's next state, so it must be deterministic and
    online (Theorem 2 and Sleator-Tarjan are statements about deterministic algorithms)."""
    if pol.randomized:
        raise PagingError(f"{adversary} adapts to a deterministic policy's cache; {pol.name} is "
                          "randomized (use theorem4 or random-hk for randomized policies)")
    if pol.clairvoyant:
        raise PagingError(f"{adversary} adapts to an online policy; {pol.name} is clairvoyant "
                          "(it would need the sequence before it exists)")


def require_k(k: int | None, expected: int, adversary: str, why: str) -> int:
    """The theorem's cache size, or a :class:`PagingError` when ``k`` is given and differs."""
    if k is None:
        return expected
    k = positive_int("k", k)
    if k != expected:
        raise PagingError(f"{adversary} needs k = {expected} ({why}), got k = {k}")
    return k


def check_rounds(rounds: int, layers: int, adversary: str, request_bytes: int = 16) -> int:
    """``rounds`` of ``layers`` requests, refused up front when the construction's run would
    not fit in memory at ``request_bytes`` per request (its peak, measured: theorem1 43,
    theorem3 23, the adaptive ones 98 with their Python lists; theorem1 --rounds 10^9 on two
    layers was killed by the system while building its sequence)."""
    from paging.memory import check_memory

    requests = rounds * layers
    check_memory(requests * request_bytes, f"{requests:,} requests",
                 f" ({request_bytes} bytes per request)",
                 f". Expected fewer rounds (--rounds) for {adversary}")
    return rounds


def seed_of(seed: int | None) -> int | None:
    """A seed for :func:`numpy.random.default_rng` / ``SeedSequence``: an int >= 0, or None for
    fresh entropy (a :class:`PagingError` for anything else, instead of numpy's traceback)."""
    return None if seed is None else positive_int("seed", seed, 0)


def checked_online(trace: Trace, policy, k: int, misses: int, seed: int | None = 0) -> int:
    """An adaptive construction's online misses (counted by the interactive simulation that
    chose each request); inside :func:`paging.simulate.verifying` they must equal a verified
    replay of the sequence it built (the interactive simulation records nothing)."""
    if verifying_now():
        from paging.verify import VerificationError

        replay = simulate(trace, policy, k, seed=seed).misses
        if replay != misses:
            raise VerificationError(f"{trace.name}: the adaptive run counted {misses} misses, "
                                    f"a verified replay of its sequence {replay}")
    return misses


def opt_run(trace: Trace, k: int, *, record: bool = False) -> Result:
    """OPT's run: Belady's furthest-next-use rule (optimal for unit costs, Belady 1966);
    ``record`` keeps its hit mask and eviction log (verified inside
    :func:`paging.simulate.verifying`, as every run)."""
    return simulate(trace, "belady", k, record=record)


def opt_misses(trace: Trace, k: int) -> int:
    """OPT's misses (:func:`opt_run`)."""
    return opt_run(trace, k).misses


#: the most sequences :func:`certify_random` draws: about 2 ms each at small sizes (theorem4,
#: n = 3, two layers), so a million is over half an hour under its progress bar; 10^12 was a
#: silent hang (or, since the memory guard, an out-of-memory line)
MAX_SEQUENCES = 1_000_000


def certify_random(policies: Sequence[Policy], k: int,
                   draw: Callable[[np.random.Generator, int], Trace], *, sequences: int,
                   seed: int | None, show: bool | None = None, requests: int | None = None
                   ) -> tuple[tuple[Trace, ...], list[list[tuple[int, int]]]]:
    """Draw independent sequences and certify every policy on each (Yao's principle).

    ``numpy.random.SeedSequence(seed).spawn(sequences)`` gives one child per sequence: sequence j
    is ``draw(default_rng(child_j), j)``, and a randomized policy's run on it is seeded with
    ``child_j.generate_state(1)[0]`` (the same for every policy). OPT (Belady) runs once per
    sequence, whatever the number of policies. More than :data:`MAX_SEQUENCES` are refused up
    front, and so are sequences of ``requests`` each (when given) that all together would not
    fit in memory (every sequence is kept: :func:`paging.memory.check_requests`); the sequences
    go by under a progress bar (``show``: on a terminal by default).

    Returns
    -------
    traces : tuple of Trace
        The sequences.
    per_policy : list of list of (int, int)
        For each policy, ``(online misses, OPT misses)`` on every sequence.
    """
    from paging.progress import bar

    S = positive_int("sequences", sequences)
    if S > MAX_SEQUENCES:
        raise PagingError(f"sequences={S:,}; expected at most {MAX_SEQUENCES:,} (each is drawn, "
                          "run by every policy and by OPT: about 2 ms at the smallest sizes)")
    if requests is not None:
        from paging.memory import check_requests

        check_requests(S * requests, f"Expected {S:,} sequences of {requests:,} requests that "
                                     "fit together: fewer sequences (--sequences) or rounds "
                                     "(--rounds), or a smaller instance")
    children = np.random.SeedSequence(seed).spawn(S)
    traces: list[Trace] = []
    per_policy: list[list[tuple[int, int]]] = [[] for _ in policies]
    with bar(S, "sequences", unit="seq", show=show) as pb:
        for j, child in enumerate(children):
            trace = draw(np.random.default_rng(child), j)
            traces.append(trace)
            opt = opt_misses(trace, k)
            run_seed = int(child.generate_state(1)[0])
            for runs, pol in zip(per_policy, policies, strict=True):
                runs.append((simulate(trace, pol, k, seed=run_seed).misses, opt))
            pb.update()
    return tuple(traces), per_policy


def steady_ratio(online: int, opt: int, k: int, sequences: int) -> Fraction | None:
    """(A − kS)/(OPT − kS) over S sequences: the ratio without the k compulsory misses both make
    on each sequence (None while OPT has no other miss)."""
    drop = k * sequences
    return Fraction(online - drop, opt - drop) if opt > drop else None


def exact_ratio(online: int, opt: int) -> Fraction:
    if opt <= 0:
        raise PagingError("the sequence is empty: OPT has no miss, the ratio is undefined")
    return Fraction(int(online), int(opt))
