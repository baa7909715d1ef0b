"""SpecMD's phases in a run fed piece by piece: a serving run's prefetches and miss handlers,
compiled (:class:`CarriedPhases`).

A serving run (:mod:`paging.serve`) makes its stream as it goes: which requests share a step
depends on how long the steps before took, which depends on their hits. Its cache must
therefore be carried from step to step, and the prefetch after a step's last group (layer 0
of the next step, :mod:`paging.serve.prefetch`) is known only once the next step is composed.
:func:`paging.fast.phases.phase_kernel` replays a whole trace and keeps its state (some sixty
arrays and counters) in local variables; passing them in and out would be a second copy of its
bookkeeping, and making the kernel itself a generator cost whole runs 7–65 % of their speed
(measured with ``benchmarks/paired.py``: LRU with ``fetch-lowest-bit`` 0.35x). So the kernel
is kept as it is, and its carried form is *generated from its source* (:func:`source`): the
same body, with the request loop fed in pieces,

* ``ctl`` (int64): ``ctl[0]`` the requests given so far, ``ctl[1]`` 1 (a carried run),
  ``ctl[2]`` 1 to stop, ``ctl[3]`` the draws the piece consumed (written back), ``ctl[4]`` 1
  when the caller has put larger buffers in ``grown_*`` (the arrays indexed by request or
  group: the requests and their steps, levels, substitutes and gate scores, the hit mask, the
  outcomes, the plan's group bounds and the prefetch-eviction log), which the kernel takes up before
  the next piece (only the current piece's entries are ever read, so they start empty: a run
  holds at most twice the requests it has made, not the most it could make), and the
  markers' chain lengths (indexed by chain, one at most per insertion: copied over);
  ``ctl[5]`` 1 when the piece *closes* (below);
* every piece ends with a group; the kernel yields after the piece's last request and, when
  resumed with the next piece, first inserts the plan's batch after that group (its
  ``pf_start[g]:pf_start[g + 1]``, which the caller writes then: the batch of a step's last
  layer targets the next step, whose requests are not known before). A piece that closes
  brings that batch with it and the kernel inserts it before it yields (a routed serving
  step's layer, whose batch must be in the cache before the next layer is routed: one call
  a layer instead of two); the next piece's ``across`` is then inserted after it, both with
  that group pinned;
* the prefetch plan, the prefetch log and the draws are per piece: the caller writes each
  piece's batches from the start of ``pf_pages``, the log restarts at row 0 and the draws at
  ``draws[0]`` after every yield (request indices and everything else run on);
* a carried run is in groups mode (a serving step is a group per layer: its pages pinned while
  it is served, as :meth:`paging.core.Simulation.serve_group` pins them).

The generated module is written once per kernel source (named by its hash) to a cache folder
(``$PAGING_CACHE``, else ``$XDG_CACHE_HOME/paging`` or ``~/.cache/paging``, else the system's
temporary folder) and imported from there, so numba caches its compiled code beside it as for
any module. Tests: the carried form fed random traces in random pieces equals the reference
loop request by request (hit mask, misses, bypasses, substitutes, the prefetch log and
counters; hypothesis over every policy it admits, with and without prefetching and a handler,
and a long run that outgrows its buffers: ``tests/property/test_carried_phases.py``), and a
compiled serving run equals the reference loop's field by field (``tests/unit/test_serve.py``).

The token policies are carried in their own kernel (:class:`paging.fast.tokens.
CarriedPhases`, which :func:`carry` picks). Not carried (a serving run with them takes the
reference loop, ``--engine fast`` refuses): Belady and the ``oracle`` predictor
(clairvoyant), FlashMoE, and the token combiner with a prefetcher (its reference refuses one).
The handlers that read ranks or scores (``drop``, ``fetch-priority``) decide from a request's
own, so a carried run takes them as each piece's drop flags and fetch levels (``feed``'s
``act``, ``lvl``: :func:`paging.fast.phases.miss_actions`); Score-Based, which sums the gate
scores of the requests it serves, takes each piece's (``feed``'s ``scores``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import os
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
from numba import njit
from numba.typed import List

from paging.errors import PagingError
from paging.fast import common

__all__ = ["CarriedPhases", "carried_kernel", "source", "admits", "carry"]

#: ``ctl`` fields
N_AVAIL, CARRIED, STOP, DRAWS_USED, GROWN, CLOSE = 0, 1, 2, 3, 4, 5


def _once(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:  # the kernel's source changed under this transformation
        raise RuntimeError(f"carried_phases: expected one {old.strip()!r} in phase_kernel, "
                           f"found {text.count(old)}; update paging/fast/carried_phases.py")
    return text.replace(old, new)


def source() -> str:
    """The source of ``carried_phase_kernel``: :func:`paging.fast.phases.phase_kernel`'s, its
    request loop fed in pieces (module docstring)."""
    from paging.fast import phases

    src = textwrap.dedent(inspect.getsource(phases.phase_kernel.py_func))
    src = src[src.index("def phase_kernel("):]  # without the decorator
    src = _once(src, "def phase_kernel(", "def carried_phase_kernel(")
    src = _once(src, "adp, route):",
                "adp, route, ctl, grown_i, grown_b, grown_o, grown_2, grown_f):")
    src = _once(src, "    grouped = is_grouped(steps)\n",
                "    grouped = True  # a carried run is in groups mode\n")
    lines = src.split("\n")
    head = lines.index("    for t in range(n):")
    end = head + 1
    while not lines[end].strip() or lines[end].startswith("        "):
        end += 1
    while not lines[end - 1].strip():
        end -= 1
    body = "\n".join(("    " + ln) if ln.strip() else ln for ln in lines[head + 1:end])
    body = _once(body, "while j < n and steps[j] == s:", "while j < n_avail and steps[j] == s:")
    body = _once(body, "            if substitute:\n                requested[p] += 1\n",
                 "            if substitute and not resume:\n                requested[p] += 1\n")
    body = _once(body, "if has_pf and t + 1 == g_end and g_end < n:",
                 "if has_pf and t + 1 == g_end and (g_end < n_avail or resume or "
                 "ctl[5] != 0):")
    body = _once(body, "for sub in range(b_hi - b_lo + 1):",
                 "for sub in range(1 if resume else 0, b_hi - b_lo + 1):")
    loop = f"""    n_avail = ctl[0]
    t = 0
    resume = False  # t is the last request of the piece before: its group's batch is next
    while True:
        while t < n_avail:
{body}
            resume = False
            t += 1
        # the piece is served: hand it back; the caller gives the next piece and the batch
        # after this one's last group, or stops
        ctl[3] = n_draw
        yield (misses, coll, page_miss, hit_mask, ev, n_ev, byp, n_byp, outcome, subst,
               np.array([prefetches, useful, wasted, skipped, pf_bytes], np.int64), pf_log,
               n_pf_log, pf_ev, n_pf_ev, resident)
        n_pf_log = 0
        n_pf_ev = 0
        n_draw = 0
        if ctl[4] != 0:  # the caller moved the run to larger buffers (the same indices)
            pages = borrow(grown_i[0])
            steps = borrow(grown_i[1])
            lvl = grown_i[2]
            subst = grown_i[3]
            pf_start = grown_i[4]
            hit_mask = grown_b[0]
            outcome = grown_o[0]
            act = grown_o[1]
            pf_ev = grown_2[0]
            gscore = grown_f[0]
            if grown_i[5].size > chain_len.size:  # the markers' chains, every one kept
                grown_i[5][:chain_len.size] = chain_len
                chain_len = grown_i[5]
            n = pages.size
            ctl[4] = 0
        n_avail = ctl[0]
        if ctl[2] != 0:
            break
        if has_pf and t > 0:
            t -= 1
            resume = True"""
    out = "\n".join(lines[:head]) + "\n" + loop + "\n" + "\n".join(lines[end:])
    # (the residency last: a routing hook reads it between two pieces, CarriedPhases.resident)
    out = _once(out, "            pf_log, n_pf_log, pf_ev, n_pf_ev)\n",
                "            pf_log, n_pf_log, pf_ev, n_pf_ev, resident)\n")
    return _once(out, "\n    return (misses, coll,", "\n    yield (misses, coll,")


def _folder() -> Path:
    for base in (os.environ.get("PAGING_CACHE"),
                 os.path.join(os.environ.get("XDG_CACHE_HOME") or
                              os.path.join(os.path.expanduser("~"), ".cache"), "paging"),
                 os.path.join(tempfile.gettempdir(), f"paging-{os.getuid()}")):
        if not base:
            continue
        try:
            os.makedirs(base, exist_ok=True)
            if os.access(base, os.W_OK):
                return Path(base)
        except OSError:
            continue
    raise PagingError("no writable cache folder for the compiled serving phases: set "
                      "PAGING_CACHE")


_KERNEL = None


def carried_kernel():
    """The compiled ``carried_phase_kernel`` (a numba generator), made from :func:`source` on
    first use: its module is written to the cache folder under its hash and imported."""
    global _KERNEL
    if _KERNEL is not None:
        return _KERNEL
    body = source()
    digest = hashlib.sha256(body.encode()).hexdigest()[:16]
    name = f"paging_carried_phases_{digest}"
    text = ('"""Generated by paging.fast.carried_phases from paging.fast.phases.phase_kernel: '
            'do not edit."""\n\nimport numpy as np\nfrom numba import njit\n\n'
            "import paging.fast.phases as _phases\n\n"
            "globals().update({k: v for k, v in vars(_phases).items() "
            "if not k.startswith('__')})\n\n\n@njit(cache=True, nogil=True)\n" + body + "\n")
    folder = _folder()
    path = folder / f"{name}.py"
    if not path.exists() or path.read_text() != text:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)  # atomic: parallel processes write the same text
        for old in (*folder.glob("paging_carried_phases_*.py"),  # earlier sources' modules
                    *folder.glob("__pycache__/paging_carried_phases_*")):
            if not old.name.startswith(name):
                old.unlink(missing_ok=True)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    _KERNEL = module.carried_phase_kernel
    return _KERNEL


def admits(policy, spec, prefetch: bool = False) -> bool:
    """Whether :func:`carry` runs ``policy`` (``spec``: :func:`paging.fast.plan`'s) fed in
    pieces, with a prefetcher when ``prefetch``: :class:`CarriedPhases`, or the token
    policies' :class:`paging.fast.tokens.CarriedPhases` (the combiner without a prefetcher:
    its reference refuses one)."""
    from paging.fast import phases
    from paging.fast.predictive import FREQUENCY, predictor_kind
    from paging.fast.tokens import ROBUST

    if spec is not None and spec[0] == "token":
        return not (prefetch and spec[1] == ROBUST)
    if spec is None or spec[0] not in ("list", "credit", "marking", "heap", "adaptive",
                                       "predictive"):
        return False
    kind = phases.phase_kind(policy, spec)
    if kind == phases.BELADY_SCAN:
        return False
    if kind in (phases.BLIND_SCAN, phases.ROBUST_SCAN, phases.PMARK_SCAN, phases.LMARK_SCAN):
        return predictor_kind(spec.proto.predictor) == FREQUENCY
    return True


def carry(layout, policy, capacity: int, room: int = 1 << 16, *, slots=None, costs=None,
          sizes=None, seed=0, substitute=False, level_slots=None, prefetch=False,
          batch_room=0, piece_room=None, drops=False, levels=False):
    """A run of ``policy`` with a miss handler and/or a prefetcher fed step by step (the
    arguments of :class:`CarriedPhases`): :class:`CarriedPhases`, or for the token policies
    their own kernel's :class:`paging.fast.tokens.CarriedPhases`, with the same
    :meth:`~CarriedPhases.feed` and :meth:`~CarriedPhases.finish`."""
    from paging import fast

    spec = fast.plan(policy)
    if spec is not None and spec[0] == "token":
        from paging.fast import tokens
        from paging.fast.common import frozen
        from paging.weights import unit_sizes

        if not admits(policy, spec, bool(prefetch)):
            raise ValueError(f"{policy.name} refuses prefetching")
        P = layout.n_pages
        return tokens.CarriedPhases(
            layout, spec, fast._caps(layout, int(capacity), spec[2]),
            unit_sizes(P) if slots is None else frozen(slots), sizes, substitute=substitute,
            level_slots=level_slots, prefetch=prefetch, drops=drops, levels=levels)
    return CarriedPhases(layout, policy, capacity, room, slots=slots, costs=costs, sizes=sizes,
                         seed=seed, substitute=substitute, level_slots=level_slots,
                         prefetch=prefetch, batch_room=batch_room, piece_room=piece_room,
                         drops=drops, levels=levels)


@njit(cache=True)
def _handover(ints, b0, bytes_, e0, f0):
    """The typed lists through which a grown run's buffers reach the running kernel
    (``grown_i`` from the arrays of ``ints``, ``grown_b``, ``grown_o`` from those of
    ``bytes_``, ``grown_2``, ``grown_f``), made in a cached compiled function, as :func:`_put`
    fills them:
    numba would otherwise compile a typed list's constructor and methods in every process
    (about a second)."""
    li = List()
    for a in ints:
        li.append(a)
    lb = List()
    lb.append(b0)
    lo = List()
    for a in bytes_:
        lo.append(a)
    le = List()
    le.append(e0)
    lf = List()
    lf.append(f0)
    return li, lb, lo, le, lf


@njit(cache=True)
def _put(lst, k, a):
    """``lst[k] = a`` (:func:`_handover`)."""
    lst[k] = a


class CarriedPhases:
    """A run of :func:`carried_kernel` fed step by step: one policy's cache with a miss
    handler (``substitute``; ``drops``, ``levels``: each piece gives its requests' drop flags
    and fetch levels, :func:`paging.fast.phases.miss_actions`, the levels' room in
    ``level_slots``) and/or a prefetcher (``prefetch``: each piece gives its
    batches), under ``capacity`` (pages, or bytes with ``slots``). ``room``: the buffers of
    request indices to start with (they double when the run outgrows them); ``batch_room``:
    the most prefetch pages one piece can give (the plan's buffer); ``piece_room``: the most
    requests in one piece (default: one per page, a serving step's groups)."""

    def __init__(self, layout, policy, capacity: int, room: int = 1 << 16, *, slots=None,
                 costs=None,
                 sizes=None, seed=0, substitute=False, level_slots=None,
                 prefetch=False, batch_room=0, piece_room=None, drops=False, levels=False):
        from paging import fast
        from paging.fast import phases
        from paging.fast.common import frozen
        from paging.weights import unit_costs, unit_sizes

        spec = fast.plan(policy)
        if spec is None or spec[0] == "token" or not admits(policy, spec):
            raise ValueError(f"no carried phase kernel for {policy.name} (the token policies: "
                             "carry)")
        self.layout = layout
        P = layout.n_pages
        self.dist = spec[2]
        kind, scan = phases.run_kind(policy, spec, bool(prefetch))
        self.caps = fast._caps(layout, int(capacity), self.dist)
        # read-only inputs (common.frozen): one compiled signature for every run
        by_bytes = slots is not None  # a byte budget: the markers' k counts bytes
        slots = frozen(unit_sizes(P) if slots is None else slots)
        costs = frozen(unit_costs(P) if costs is None else costs)
        sizes = frozen(unit_sizes(P) if sizes is None else sizes)
        self.piece_room = P if piece_room is None else int(piece_room)
        room = max(int(room), self.piece_room + 2)  # (the first piece fits: see _grow)
        self.substitute, self.prefetch = bool(substitute), prefetch
        # per-request drop flags and fetch levels, given with each piece (feed's act, lvl)
        self.drops, self.levels = bool(drops), bool(levels)
        self.pages = np.zeros(room, np.int64)
        self.steps = np.zeros(room, np.int64)
        self.lvl = np.zeros(room if levels else 0, np.int64)
        self.act = np.zeros(room if drops else 0, np.int8)
        # Score-Based's gate scores, given with each piece (feed's scores)
        self.scored = kind == phases.SCORE_SCAN
        self.gscore = np.zeros(room if self.scored else 0)
        if level_slots is None:
            level_slots = np.zeros((1, P), np.int64)
        self.pf_start = np.zeros(room + 2 if prefetch else 0, np.int64)
        self.pf_pages = np.zeros(max(int(batch_room), 1) if prefetch else 0, np.int64)
        self.rng = np.random.default_rng(seed) if fast.needs_draws(spec) else None
        self.draws = np.zeros(0)
        # a fixed buffer the kernel reads from 0 after every piece, refilled in place: a piece
        # and its batches evict at most their own insertions and the P pages the cache holds
        self.draw_buf = np.zeros(self.piece_room + P + self.pf_pages.size if self.rng else 0)
        hks, self.rob, adp = phases.partition_inputs(kind, self.caps, slots, by_bytes, P)
        self.chains = kind == phases.PMARK_SCAN or kind == phases.LMARK_SCAN
        # the kernel's chain lengths: two per request and per prefetch page at most (the first
        # eviction's, and one after a new phase, which a byte budget can bring mid-insertion)
        self.chain_room = 2 * (room + self.pf_pages.size) + 1 if self.chains else 0
        self.inserted = 0  # the chains the requests and prefetch pages given so far may start
        self.ctl = np.array([0, 1, 0, 0, 0, 0], np.int64)
        self.t = self.t_prev = 0  # requests fed, and where the last piece started
        self.groups = 0  # groups fed
        # the larger buffers a grown run moves to (typed lists: the kernel reads them when
        # ctl[GROWN] says so); placeholders of the buffers' types until then
        self.grown = _handover((self.pages, self.steps, self.lvl, np.zeros(0, np.int64),
                                self.pf_start, np.zeros(0, np.int64)), np.zeros(0, np.bool_),
                               (np.zeros(0, np.int8), self.act), np.zeros((0, 2), np.int64),
                               self.gscore)
        self.gen = carried_kernel()(
            self.pages, self.steps, slots, frozen(np.asarray(level_slots, dtype=np.int64)),
            layout.n_experts, layout.n_layers, self.caps, self.dist, kind, 1, self.pf_start,
            self.pf_pages, sizes, self.act, self.lvl, bool(substitute), scan,
            costs, sizes, self.draw_buf, frozen(np.zeros(0, np.int64)), np.zeros(0, np.int64),
            np.zeros(1, np.int64), self.gscore, phases.FREQUENCY, np.zeros((1, 0)),
            np.zeros(self.caps.size, np.int64), hks, self.rob, adp, phases.no_route(), self.ctl,
            *self.grown)
        self.out = None

    def _grow(self, room: int, chain_room: int | None = None) -> None:
        """Move the run to buffers of ``room`` requests, which the kernel takes up when it
        resumes (after its first piece: the first fits the buffers it starts with). Only the
        piece before is copied: its last group is pinned again while the
        batch after it is inserted; nothing earlier is read again. The markers' chains move
        when they must grow (or to ``chain_room``), every one copied by the kernel."""
        lo, hi = self.t_prev, self.t
        pages, steps = np.zeros(room, np.int64), np.zeros(room, np.int64)
        pages[lo:hi], steps[lo:hi] = self.pages[lo:hi], self.steps[lo:hi]
        self.pages, self.steps = pages, steps
        # (the drop flags, levels and gate scores are read only as a request is served: not
        # copied)
        self.lvl = np.zeros(room if self.levels else 0, np.int64)
        self.act = act = np.zeros(room if self.drops else 0, np.int8)
        self.gscore = np.zeros(room if self.scored else 0)
        self.pf_start = np.zeros(room + 2 if self.prefetch else 0, np.int64)
        i, b, o, e, f = self.grown
        for k, a in enumerate((pages, steps, self.lvl,
                               np.full(room if self.substitute else 0, -1, np.int64),
                               self.pf_start, np.zeros(0, np.int64))):
            _put(i, k, a)  # (5: the kernel keeps its chains unless they must grow)
        _put(b, 0, np.zeros(room, np.bool_))
        _put(o, 0, np.zeros(room, np.int8))
        _put(o, 1, act)
        _put(e, 0, np.zeros((room + self.pf_pages.size if self.prefetch else 0, 2), np.int64))
        _put(f, 0, self.gscore)
        if self.chains and (chain_room is not None or self.inserted + 1 > self.chain_room):
            self.chain_room = (max(2 * self.chain_room, self.inserted + 1) if chain_room is None
                               else max(int(chain_room), self.inserted + 1))
            _put(i, 5, np.zeros(self.chain_room, np.int64))
        self.ctl[GROWN] = 1

    def _refill(self, used: int) -> None:
        """The draws from the next unused one on, at the start of the buffer."""
        from paging.fast import carry_draws

        self.draws = carry_draws(self.rng, self.draws, used, self.draw_buf.size)
        self.draw_buf[:] = self.draws[:self.draw_buf.size]

    def feed(self, pages, steps, batches=(), across=None, act=None, lvl=None, scores=None,
             close=None):
        """Serve the next piece (``pages``, their ``steps``: whole groups); ``batches[i]``:
        the prefetch pages after its group i (none for the last: it comes with the next
        piece, as ``across``), or ``batches = (sizes, pages)``, those batches' sizes and their
        pages one after another. Returns ``(hits, outcome, subst, pf_rows)``: the piece's hit
        mask, its requests' outcomes (``paging.fast.common``'s HIT, FETCHED, DROPPED,
        SUBSTITUTED) and substitutes, and the prefetches inserted, rows ``(t + 1, page)``.
        ``act``, ``lvl``: the piece's drop flags and fetch levels (a run made with ``drops``,
        ``levels``: :func:`paging.fast.phases.miss_actions`); ``scores``: its gate scores
        (Score-Based's run, and only it). A piece without pages only inserts ``across`` (a
        routed step's batch after a layer's group, before the next layer is routed).
        ``close``: the batch after the piece's last group, inserted now, before the call
        returns (the next piece then has no ``across``): a routed step's layer and its batch
        in one call."""
        pages = np.asarray(pages, dtype=np.int64)
        steps = np.asarray(steps, dtype=np.int64)
        t0, t1 = self.t, self.t + pages.size
        if pages.size > self.piece_room:
            raise PagingError(f"carried phases: a piece of {pages.size:,} requests (at most "
                              f"{self.piece_room:,})")
        n_groups = (0 if not pages.size else 1 if steps[0] == steps[-1]  # (steps ascend)
                    else int(np.count_nonzero(steps[1:] != steps[:-1])) + 1)
        g0 = self.groups
        plan = np.zeros(0, np.int64)
        closes = close is not None
        if closes and not n_groups:
            raise ValueError("a piece without pages has no group to close")
        if (closes or across is not None and len(across)) and not self.pf_start.size:
            raise ValueError("prefetch batches in a run without prefetching")
        if self.pf_start.size and n_groups == 1 and across is None and not len(batches):
            # (one group, nothing across: a routed step's layer; its plan without numpy's
            # small calls, as the general one below makes it)
            plan = np.asarray(close if closes else (), np.int64)
            bounds = np.array([0, 0, plan.size] if g0 else [0, plan.size], np.int64)
        elif self.pf_start.size:
            a, b_sizes, b_pages = common.piece_plan(batches, across, n_groups, close)
            plan = np.concatenate((a, b_pages))  # (not np.r_: slow, a call per piece)
            # batch g is pf_pages[pf_start[g]:pf_start[g + 1]], from the piece before's last
            # group (whose batch is `across`) on
            sizes = np.concatenate(((a.size,), b_sizes)) if g0 else b_sizes
            bounds = np.zeros(sizes.size + 1, np.int64)
            np.cumsum(sizes, out=bounds[1:])
        if plan.size > self.pf_pages.size:
            raise PagingError(f"carried phases: a piece's prefetch plan of {plan.size:,} "
                              f"pages exceeds its buffer ({self.pf_pages.size:,})")
        self.inserted += 2 * (pages.size + plan.size)
        if t1 + 2 > self.pages.size or self.chains and self.inserted + 1 > self.chain_room:
            # (the plan's group bounds need two more; the markers two chains per insertion)
            self._grow(max(2 * self.pages.size, t1 + 2))
        self.pages[t0:t1] = pages
        self.steps[t0:t1] = steps
        if self.drops:
            self.act[t0:t1] = act
        if self.levels:
            self.lvl[t0:t1] = lvl
        if self.scored:
            if scores is None or len(scores) != pages.size:
                raise ValueError("Score-Based's carried run needs each request's gate score")
            self.gscore[t0:t1] = scores
        if self.pf_start.size:
            self.pf_pages[:plan.size] = plan
            first = max(g0 - 1, 0)
            self.pf_start[first:first + bounds.size] = bounds
            self.pf_start[first + bounds.size:g0 + n_groups + 1] = bounds[-1]
        if self.rng is not None:
            self._refill(int(self.ctl[DRAWS_USED]) if self.out is not None else 0)
        self.ctl[N_AVAIL] = t1
        self.ctl[CLOSE] = closes
        self.out = next(self.gen)
        if pages.size:  # (an empty piece only inserts the batch after the last group: the
            self.t_prev = t0  # piece before stays the one _grow copies)
        self.t, self.groups = t1, g0 + n_groups
        out = self.out
        rows = out[11][:out[12]].copy()
        subst = out[9][t0:t1].copy() if out[9].size else np.full(t1 - t0, -1, np.int64)
        return out[3][t0:t1].copy(), out[8][t0:t1].copy(), subst, rows

    def resident(self) -> np.ndarray:
        """Each page's residency now (bool, one per page), as the last piece left it: the
        kernel's own array (live), which a routing hook reads between two pieces
        (:mod:`paging.serve.engine`); all False before the first piece."""
        if self.out is None:
            return np.zeros(self.layout.n_pages, np.bool_)
        return self.out[15]

    def finish(self) -> dict:
        """End the run: its counters (``misses``, ``collisions``, ``bypasses``, and the
        prefetches made, useful, wasted (inserted and evicted or never used), skipped, bytes).
        Called again, the same counters."""
        if self.gen is not None:
            self.ctl[STOP] = 1
            out = next(self.gen)  # (before any piece: the first yield, every count 0)
            self.gen = None
            pf = [int(x) for x in out[10]]
            self.done = {"misses": int(out[0]), "collisions": int(out[1]),
                         "bypasses": int(out[7]), "prefetches": pf[0], "useful": pf[1],
                         "wasted": pf[2], "skipped": pf[3], "bytes": pf[4]}
        return self.done
