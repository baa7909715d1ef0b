"""Kernels of the token-aware designed policies and of the robust combiner: token-hazard,
token-decay, token-match (:mod:`paging.policies.hazard`, :mod:`paging.policies.decay`,
:mod:`paging.policies.match`) and ``robust:A,B`` / ``robust-token-match``
(:mod:`paging.policies.robust`), shared and per layer (``-dist``), rounds and groups mode,
counted in pages or in bytes.

Each policy is a set of arrays per *instance*: one instance per partition for the token
policies (the shared cache, or one per layer as :class:`~paging.policies.dist.PerLayer` runs one
policy object per layer), and two per partition for the combiner (its components' virtual
caches, stepped in lockstep with the real one: the component serves request t, then the leader
is updated, then the combiner serves it, exactly the order of ``Robust._see``). An instance owns
a *universe* of pages (all nℓ pages, or the n pages of its layer); pages outside it are never
requested by it, and where the reference's numpy work runs over all nℓ pages (token-decay's
totals and log-losses) the kernel sums the same nℓ values, one constant per row outside the
universe (its logarithm taken once, its blocks summed on one lane: :func:`pairwise_runs`), in
numpy's order (its pairwise summation, :func:`pairwise`), so that every
probability, log-loss and posterior weight is the reference's to the last bit (but see
BOUNDED mode below; the reference
takes its ``log``, ``log1p``, ``exp``, 2-row mixtures and 5-term dot from
:mod:`paging.floatops`: the C library's calls and the plain products and sums the kernel makes,
where numpy's own differ in the last bit on AVX-512 machines;
``tests/property/test_token_kernels.py`` compares the two). Victims are then chosen by the
same total order: (P(unused) rounded at 1e-9, layer distance (z - c - 1) mod ℓ, page id),
the largest evicted; the combiner's lazy rule takes the least recently requested page outside
the leader's virtual cache (and, preferably, outside the other's).

What the kernels follow of the reference, hook for hook: a policy hears a request only through
``on_hit``, ``victims`` and ``on_insert``, so a bypassed request is unseen (its token may then
start later, and the combiner's virtual caches do not serve it); ``victims`` advances the token
before the choice; several victims per miss under a byte budget; the combiner's virtual caches
count the run's unit (pages, or bytes under a budget, as ``Robust.reset`` builds them: a margin
``k`` is the most pages a partition holds) and never pin.

Left in the reference loop (:func:`supports` is False, so :func:`paging.fast.plan` returns None):
the combiner over components other than token-hazard, token-decay, token-match and LRU (the
other kernels are whole-trace loops, not steppable per request, and a virtual cache must not pin
the group as the existing kernels do in groups mode), over ``-dist`` components, and any
subclass that does not declare its own ``kernel`` (``NeverSwitch``, ``TokenDecayLookahead``).
SpecMD's phases (a prefetch plan, the miss handlers) run in this kernel too
(:func:`token_kernel`'s ``phases``, from :func:`paging.fast.phases.run_phases`), and so do
routed runs (``route``, :mod:`paging.fast.routing`); a serving run carries the kernel's cache
from step to step (:class:`Carried`). A compiled run leaves the policy object as it was, except a
shared combiner's ``leader`` and ``switches`` (:func:`execute`); its virtual simulations
(``Robust.sims``) and the token policies' internal state exist only after a reference run.

*BOUNDED mode.* The losses matter only through the posterior weights: w_j ∝ exp(−L_j) and
token-match's β, the posterior mean over five values set to 0 below 1e-9. Once a memory's loss
trails the least by more than 746 its weight is exp(−gap) = 0 in float64 (the least one's exp(0)
= 1), and once every β trails β = 0's by more than 40 the mean rounds below 1e-9: the weights
are then decided by the losses' order alone, not their last bits. So an instance whose exact
losses decide its weights with a margin of :data:`ENTER` (50, then 500) to spare turns BOUNDED
(:func:`_losses_paid`): each token's rows are summed as logarithms of products of up to 67
factors (:func:`_loss_rows_bounded`, :func:`_beta_rows_bounded`; 4 logarithms per 256 pages
instead of 256), every loss is then known within a radius that grows by :func:`rho` (a proven
bound on one row's error against the exact row) and by the subtraction's rounding per token end,
and the weights are certified again after every token end with that radius as the margin
(:func:`_certify`). An instance of at most :data:`DEFER` pages (a ``-dist`` one of a few
experts) does not even take those logarithms per token: each row is kept as two products, its
factors inside the instance and its one factor outside, and a product's logarithm is paid into
the loss only when it falls below e^-OWE (:func:`_owe`); the losses as paid then owe at most
2·OWE, so they are certified with 2·OWE more to spare, and paid in full and certified again when
that fails. token-match's β losses often decide β long before its memories' losses decide the
weights: from then (with :data:`BETA_ENTER` to spare) its β rows alone are bounded, the
memories' still exact, and so is β in its victim choices (BETA mode, until the memories too are
decided). Victims read the certified weights, which are exactly the ones the reference computes
from its own losses; if a certificate fails (the losses come back within reach of each other),
the run stops and :func:`execute` redoes it with the next, wider margin, and after the last with
exact sums throughout (at most two extra runs; ``bounded=False`` asks for exact sums from the
start). On the shipped routing files the losses never separate that far (their sequences are a
few hundred tokens), so those runs are exact throughout; on long stationary traces the mode
starts after a few hundred tokens (``tests/property/test_token_bounds.py``).

Cost per request: O(1) for a hit; per token (per instance) O(nℓ) for token-decay's estimates
and log-losses (5 more log-loss rows for token-match), O(universe·max_age) for token-hazard;
per eviction O(k) candidate scores (BOUNDED with one visit per token and β = 0: O(k) marks,
one insertion into a sorted list, and the few scores of an ordered scan, :func:`_choose`);
token-match adds O(window) per page first used in a token (only past 4 used pages) and
O(window·neighbours) per match, O(neighbours) for a token of one page (its ring of uses,
:func:`_match_one`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from paging.fast.common import (
    DROPPED,
    FETCHED,
    SUBSTITUTED,
    SoFar,
    borrow,
    clock_group,
    frozen,
    is_grouped,
    most_requested,
    no_rule,
    piece_plan,
    pin_batch,
    pin_pages,
    pinned_room,
    route_group,
    route_scratch,
)
from paging.fast.lists import no_prior

# kinds: the policies (``kernel = "token:KIND"``); LRU only as a component of the combiner
HAZARD, DECAY, MATCH, ROBUST, LRU = range(5)

_NEVER = -(1 << 40)  # token-hazard's token index of a page never requested
_LAZY_U = 4  # token-match: similarities of at most this many used pages counted as scanned
_BETAS = np.linspace(0.0, 1.0, 5)
#: BOUNDED rows of an instance of at most this many pages are kept as products and their
#: logarithms taken only when the product falls below e^-OWE (:func:`_owe`): a token's row is
#: a product of at most DEFER factors, each at least 1e-4, so its product (>= 1e-240) times a
#: kept one (>= e^-OWE) is a normal double
DEFER = 60
OWE = 50.0
_E_OWE = math.exp(-OWE)

# per-instance integer fields (ist[i, .])
(I_KIND, I_BASE, I_NPG, I_CAP, I_HAS, I_TOK, I_NTOK, I_TSTART, I_NUSED, I_VCNT, I_VMISS,
 I_NHIST, I_NPEND, I_MCUR, I_MNEXT, I_MNEXTAT, I_M, I_W, I_A1, I_HOR, I_NB, I_VUSED, I_APX,
 I_NAPX, I_ABORT, I_SIMOK, I_LLEN, I_LTOK, I_EVID, I_LWIN, I_NBAPX) = range(31)
N_I = 31
# I_APX, the log-losses' mode (:func:`_certify`): EXACT (may turn BETA or BOUNDED), BETA
# (token-match's β rows bounded, β decided, the memories' rows exact; may turn BOUNDED),
# BOUNDED, or EXACT_ONLY (a rerun after a bound failed); I_NAPX counts the token ends scored in
# BOUNDED mode, I_NBAPX those in BETA mode; ist[0, I_ABORT] is set when a bound no longer
# decides the weights (the run is redone)
EXACT, BOUNDED, BETA, EXACT_ONLY = 0, 1, 2, -1
# per-instance float fields (fst[i, .]): decays λ_j, prior, shrink, alpha, losses L_j, N_j,
# totals Σ_q D_jq, token-match's β losses; for BOUNDED mode the radius of the losses, its
# growth per token end, the certified weights w_j and β, and the margin to enter it
F_LAM, F_PRIOR, F_SHRINK, F_ALPHA, F_LOSS, F_N, F_TOT, F_BLOSS = 0, 2, 3, 4, 5, 7, 9, 11
F_RAD, F_RHO, F_CW, F_CB, F_ENTER = 16, 17, 18, 20, 21
# BOUNDED rows kept as products (:func:`_owe`): per row (the memories' 0, 1, token-match's
# β rows 2..6) the product of its factors inside the instance's pages and of its factors
# outside (one per token, the row's 1 − x raised to P − npg when paid), and the threshold
# below which the outside product is paid
F_PIN, F_POUT, F_THOUT = 22, 29, 36
F_BENTER = 37  # the margin to turn BETA (:data:`BETA_ENTER`)
N_F = 38
# per-instance page rows (ipg[i, ., local page])
# R_SORT, R_INL, R_CAND: the ordered scan of the victim choice (:func:`_choose`)
(R_USED, R_ULIST, R_VRES, R_VLIST, R_VPOS, R_VLAST, R_LASTTOK, R_BEFORE, R_PEND, R_STAMP, R_SORT,
 R_INL, R_CAND) = range(13)
N_R = 13
# token-match: then per page the count of its uses in the history (R_NOCC) and a ring of the
# tokens of its last neighbours + 1 uses (R_OCC...; :func:`_match`'s one-page case)
R_NOCC = N_R
R_OCC = N_R + 1


@njit(cache=True, nogil=True)
def _pw_block(a, lo, n):
    """numpy's pairwise sum of at most 128 values ``a[lo:lo+n]``: 8 lanes, then the rest one
    by one."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    m = n - n % 8
    while i < m:
        j = lo + i
        r0 += a[j]
        r1 += a[j + 1]
        r2 += a[j + 2]
        r3 += a[j + 3]
        r4 += a[j + 4]
        r5 += a[j + 5]
        r6 += a[j + 6]
        r7 += a[j + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True, nogil=True, inline="always")
def _at(a, j, ra, rm, c):
    j -= ra
    return a[j] if 0 <= j < rm else c


@njit(cache=True, nogil=True)
def _pw_block_runs(a, lo, n, ra, rm, c):
    """:func:`_pw_block` over positions lo..lo+n−1 of the virtual array that holds ``a[0:rm]``
    at positions ra..ra+rm−1 and ``c`` everywhere else (:func:`pairwise_runs`): the same
    additions, those of c alone done once for the eight equal lanes."""
    if lo + n <= ra or lo >= ra + rm:  # c alone: the eight lanes are equal
        if n < 8:
            res = 0.0
            for _ in range(n):
                res += c
            return res
        r = c
        for _ in range(8, n - n % 8, 8):
            r += c
        res = ((r + r) + (r + r)) + ((r + r) + (r + r))
        for _ in range(n % 8):
            res += c
        return res
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += _at(a, i, ra, rm, c)
        return res
    r0, r1, r2, r3 = _at(a, lo, ra, rm, c), _at(a, lo + 1, ra, rm, c), _at(
        a, lo + 2, ra, rm, c), _at(a, lo + 3, ra, rm, c)
    r4, r5, r6, r7 = _at(a, lo + 4, ra, rm, c), _at(a, lo + 5, ra, rm, c), _at(
        a, lo + 6, ra, rm, c), _at(a, lo + 7, ra, rm, c)
    i = 8
    m = n - n % 8
    while i < m:
        j = lo + i
        if j + 8 <= ra or j >= ra + rm:  # eight c's
            r0 += c
            r1 += c
            r2 += c
            r3 += c
            r4 += c
            r5 += c
            r6 += c
            r7 += c
            i += 8
            continue
        r0 += _at(a, j, ra, rm, c)
        r1 += _at(a, j + 1, ra, rm, c)
        r2 += _at(a, j + 2, ra, rm, c)
        r3 += _at(a, j + 3, ra, rm, c)
        r4 += _at(a, j + 4, ra, rm, c)
        r5 += _at(a, j + 5, ra, rm, c)
        r6 += _at(a, j + 6, ra, rm, c)
        r7 += _at(a, j + 7, ra, rm, c)
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += _at(a, lo + i, ra, rm, c)
        i += 1
    return res


@njit(cache=True, nogil=True, inline="always")
def _leaf(a, lo, n, ra, rm, c, runs):
    return _pw_block_runs(a, lo, n, ra, rm, c) if runs else _pw_block(a, lo, n)


@njit(cache=True, nogil=True, inline="always")
def _split(n):
    n2 = n // 2
    return n2 - n2 % 8


@njit(cache=True, nogil=True)
def _pw_stack(a, lo, n, ra, rm, c, runs):
    """numpy's pairwise order walked on an explicit stack, for trees deeper than the written
    out levels (a cached recursive numba function crashed when loaded from the cache)."""
    los = np.empty(64, np.int64)
    ns = np.empty(64, np.int64)
    phase = np.zeros(64, np.int64)
    left = np.empty(64)
    top = 0
    los[0] = lo
    ns[0] = n
    while True:
        m = ns[top]
        if m > 128:  # descend into the left half
            phase[top] = 1
            n2 = m // 2
            n2 -= n2 % 8
            los[top + 1] = los[top]
            ns[top + 1] = n2
            top += 1
            continue
        ret = _leaf(a, los[top], m, ra, rm, c, runs)
        top -= 1
        while phase[top] == 2:  # a right half done: combine and go up
            ret = left[top] + ret
            if top == 0:
                return ret
            top -= 1
        left[top] = ret  # a left half done: the right half next
        phase[top] = 2
        n2 = ns[top] // 2
        n2 -= n2 % 8
        los[top + 1] = los[top] + n2
        ns[top + 1] = ns[top] - n2
        phase[top + 1] = 0
        top += 1


# numpy's pairwise order: blocks of at most 128 values (_pw_block) combined by halving, the
# split a multiple of 8. Four levels of halving are written out, with no allocation (rows of up
# to about 1,900 values: every layout the token kernels meet); a deeper tree walks _pw_stack.
@njit(cache=True, nogil=True)
def _pw1(a, lo, n, ra, rm, c, runs):
    return _leaf(a, lo, n, ra, rm, c, runs) if n <= 128 else _pw_stack(a, lo, n, ra, rm, c, runs)


@njit(cache=True, nogil=True, inline="always")
def _pw2(a, lo, n, ra, rm, c, runs):
    if n <= 128:
        return _leaf(a, lo, n, ra, rm, c, runs)
    n2 = _split(n)
    return _pw1(a, lo, n2, ra, rm, c, runs) + _pw1(a, lo + n2, n - n2, ra, rm, c, runs)


@njit(cache=True, nogil=True, inline="always")
def _pw3(a, lo, n, ra, rm, c, runs):
    if n <= 128:
        return _leaf(a, lo, n, ra, rm, c, runs)
    n2 = _split(n)
    return _pw2(a, lo, n2, ra, rm, c, runs) + _pw2(a, lo + n2, n - n2, ra, rm, c, runs)


@njit(cache=True, nogil=True)
def _pw_tree(a, lo, n, ra, rm, c, runs):
    if n <= 128:
        return _leaf(a, lo, n, ra, rm, c, runs)
    n2 = _split(n)
    return _pw3(a, lo, n2, ra, rm, c, runs) + _pw3(a, lo + n2, n - n2, ra, rm, c, runs)


@njit(cache=True, nogil=True)
def pairwise(a, lo, n):
    """``a[lo:lo+n].sum()`` in numpy's order (:func:`_pw_tree`)."""
    return _pw_tree(a, lo, n, 0, 0, 0.0, False)


@njit(cache=True, nogil=True, inline="always")
def pairwise_runs(a, ra, rm, c, n):
    """The sum, in numpy's order, of n values: ``c`` at positions 0..ra−1, ``a[0:rm]``, then
    ``c`` again; the blocks of c alone cost one lane each, not eight (and none for c = +0.0,
    :func:`_pw_zero`)."""
    if c == 0.0 and math.copysign(1.0, c) > 0.0:
        ok, v = _pw_zero(a, ra, rm, n)
        if ok:
            return v
    return _pw_tree(a, 0, n, ra, rm, c, True)


@njit(cache=True, nogil=True, inline="always")
def _lane(a, ra, lo, f, e, j):
    """Lane j of a leaf starting at lo: the run's values at positions f..e−1 that are j after
    a multiple of 8 from lo, added in order from +0.0."""
    r = 0.0
    for q in range(f + (j - (f - lo)) % 8, e, 8):
        r += a[q - ra]
    return r


@njit(cache=True, nogil=True, inline="always")
def _pw_zero(a, ra, rm, n):
    """:func:`pairwise_runs` for c = +0.0, when the run holds no −0.0 and lies in one leaf of
    numpy's tree (a block of at most 128 values): no partial sum is then −0.0, so adding +0.0
    leaves it as it is, every subtree outside the run sums to +0.0, and the total is the
    leaf's own sum over the run's positions (its 8 lanes, their tree, its tail). Returns
    (False, 0) when these do not hold."""
    for j in range(rm):
        if a[j] == 0.0 and math.copysign(1.0, a[j]) < 0.0:
            return False, 0.0
    lo = 0
    while n > 128:  # the child holding the whole run, else give up
        n2 = n // 2
        n2 -= n2 % 8
        if ra + rm <= lo + n2:
            n = n2
        elif ra >= lo + n2:
            lo += n2
            n -= n2
        else:
            return False, 0.0
    b = ra + rm
    if n < 8:
        res = 0.0
        for q in range(max(ra, lo), min(b, lo + n)):
            res += a[q - ra]
        return True, res
    main = lo + n - n % 8
    if rm <= 8 and (ra - lo) % 8 == 0 and b <= main:
        # a run of at most 8 from a lane boundary (a -dist instance's counts, n experts = 8):
        # lane j holds a[j] alone, the others +0.0, and the tail adds only +0.0
        r0 = a[0] if rm > 0 else 0.0
        r1 = a[1] if rm > 1 else 0.0
        r2 = a[2] if rm > 2 else 0.0
        r3 = a[3] if rm > 3 else 0.0
        r4 = a[4] if rm > 4 else 0.0
        r5 = a[5] if rm > 5 else 0.0
        r6 = a[6] if rm > 6 else 0.0
        r7 = a[7] if rm > 7 else 0.0
        return True, ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    f, e = max(ra, lo), min(b, main)
    res = ((_lane(a, ra, lo, f, e, 0) + _lane(a, ra, lo, f, e, 1)) + (
        _lane(a, ra, lo, f, e, 2) + _lane(a, ra, lo, f, e, 3))) + (
        (_lane(a, ra, lo, f, e, 4) + _lane(a, ra, lo, f, e, 5)) + (
            _lane(a, ra, lo, f, e, 6) + _lane(a, ra, lo, f, e, 7)))
    for q in range(max(ra, main), min(b, lo + n)):
        res += a[q - ra]
    return True, res


@njit(cache=True, nogil=True, inline="always")
def _clip(x, lo, hi):
    return lo if x < lo else (hi if x > hi else x)


@njit(cache=True, nogil=True, inline="always")
def _power(x, h):
    """numpy's ``x ** h`` for an integer h >= 1 (its fast paths for 1 and 2, else libm pow)."""
    if h == 1:
        return x
    if h == 2:
        return x * x
    return math.pow(x, float(h))


# -- token-hazard ------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _hazard_prior(S, i):
    """The layer hazards H_z(a) (shrunk to the global H(a)), stored in hzl[i, 2], for the
    layers of the instance's pages: a ``-dist`` instance's counts of other layers are 0, so its
    sums over the ℓ layers equal those over its own (adding +0.0 is exact), and only its own
    layer's hazards are ever read."""
    ist, hzl, layer_of = S[0], S[5], S[11]
    A1 = ist[i, I_A1]
    base = ist[i, I_BASE]
    zlo = layer_of[base]
    zhi = layer_of[base + ist[i, I_NPG] - 1] + 1
    for a in range(A1):
        se = 0.0
        st = 0.0
        for z in range(zlo, zhi):
            se += hzl[i, 0, z, a]
            st += hzl[i, 1, z, a]
        glob = (se + 1.0) / (st + 2.0)
        for z in range(zlo, zhi):
            hzl[i, 2, z, a] = (hzl[i, 0, z, a] + 2.0 * glob) / (hzl[i, 1, z, a] + 2.0)


@njit(cache=True, nogil=True)
def _hazard_end(S, i):
    ist, ipg, hz, hzl, layer_of = S[0], S[2], S[4], S[5], S[11]
    base, npg, ntok = ist[i, I_BASE], ist[i, I_NPG], ist[i, I_NTOK]
    amax = ist[i, I_A1] - 1
    for loc in range(npg):
        b = ipg[i, R_BEFORE, loc]
        if b > _NEVER:
            age = min(ntok - 1 - b, amax)
            hit = 1.0 if ipg[i, R_USED, loc] else 0.0
            z = layer_of[base + loc]
            hz[i, 1, loc, age] += 1.0
            hz[i, 0, loc, age] += hit
            hzl[i, 1, z, age] += 1.0
            hzl[i, 0, z, age] += hit
    _hazard_prior(S, i)


# -- token-decay and token-match ---------------------------------------------------------------
@njit(cache=True, nogil=True)
def _weights(fst, i, off, m, out):
    """Posterior weights exp(−(L − min L)) / Σ of the m losses fst[i, off:off+m] into out."""
    lo = fst[i, off]
    for j in range(1, m):
        if fst[i, off + j] < lo:
            lo = fst[i, off + j]
    tot = 0.0
    for j in range(m):
        out[j] = np.exp(-(fst[i, off + j] - lo))
        tot += out[j]
    return tot


@njit(cache=True, nogil=True)
def _beta(fst, i, wb):
    tot = _weights(fst, i, F_BLOSS, 5, wb)
    d = 0.0
    for j in range(5):
        d += wb[j] * _BETAS[j]
    b = d / tot
    return b if b >= 1e-9 else 0.0


@njit(cache=True, nogil=True, inline="always")
def _mixed(dec, m, beta, nb, shrink):
    return beta * (nb * m + shrink * dec) / (nb + shrink) + (1.0 - beta) * dec


@njit(cache=True, nogil=True)
def _match(ist, ipg, hist, sim, mcols, histt, i, which):
    """M(u) for u = the instance's current token so far: its neighbours' successor columns in
    mcols[i, which] (returns how many, 0 for no match). Called with the arrays of S it reads
    (S[0], S[2], S[6], S[7], S[8], S[12]), not S: a call counts each array it is given."""
    W = ist[i, I_W]
    n = ist[i, I_NHIST]
    filled = min(n, W)
    # the similarities |U ∩ U_s|: for a few used pages counted where the scan reads them (from
    # the token-major history, |U| bytes of one row each); beyond, kept in sim for the whole
    # window, zeroed at the token's first such match and grown by each page's row
    nu = ist[i, I_NUSED]
    ul = ipg[i, R_ULIST]
    lazy = nu <= _LAZY_U
    if not lazy:
        if ist[i, I_SIMOK] == 0:
            for s in range(filled):
                sim[i, s] = 0
            for j in range(nu):
                h = hist[i, ul[j]]
                for s in range(filled):
                    sim[i, s] += h[s]
            ist[i, I_SIMOK] = 1
        else:
            for j in range(ist[i, I_NPEND]):
                h = hist[i, ipg[i, R_PEND, j]]
                for s in range(filled):
                    sim[i, s] += h[s]
    ist[i, I_NPEND] = 0
    if n < 2:
        return 0
    lo = max(0, n - W)
    m = min(ist[i, I_NB], n - 1 - lo)
    if nu == 1:
        return _match_one(ipg, mcols, i, which, ul[0], n, lo, m, W, ist[i, I_NB] + 1)
    # the m largest keys (similarity, recency), descending: scanned from the latest token
    # back, a token enters only with a strictly larger similarity (of equal ones the later
    # ranks first), and the scan stops once the m kept all reach |U|, the largest possible
    topv = mcols[i, 2]  # scratch rows: no allocation per match
    tops = mcols[i, 3]
    for r in range(m):
        topv[r] = -1
        tops[r] = -1
    cap = ist[i, I_NUSED]  # sim[s] = |U ∩ U_s| <= |U|
    th = -1  # topv[m - 1], kept in a register
    s = n - 2
    while s >= lo and th < cap:
        # the tokens s, s − 1, ... down to lo or to the ring's column 0, without a wrap test
        col = s % W
        stop = max(lo, s - col)
        row = sim[i]
        while s >= stop:
            if lazy:
                v = 0
                for j in range(nu):
                    v += histt[i, col, ul[j]]
            else:
                v = row[col]
            if v > th:
                r = m - 1
                while r > 0 and v > topv[r - 1]:
                    topv[r] = topv[r - 1]
                    tops[r] = tops[r - 1]
                    r -= 1
                topv[r] = v
                tops[r] = s
                th = topv[m - 1]
                if th >= cap:
                    break
            s -= 1
            col -= 1
    if topv[0] == 0:  # no overlap at all
        return 0
    for r in range(m):
        mcols[i, which, r] = (tops[r] + 1) % W
    return m


@njit(cache=True, nogil=True, inline="always")
def _match_one(ipg, mcols, i, which, q, n, lo, m, W, ring):
    """:func:`_match` for a token of one page q, from q's ring of uses instead of a scan: the
    similarities are then 1 (tokens s that used q) or 0, so the scan's m largest keys
    (similarity, recency) are q's last uses in lo..n−2, latest first, up to m, then, if fewer,
    the latest tokens of lo..n−2 that did not use q (those the scan keeps: a 0 enters only
    while fewer than m are kept, and a later 1 pushes out the earliest 0); no use at all is
    no match. The ring holds q's last ``ring`` = neighbours + 1 uses: the ended token's own
    use (n − 1) and m more at most."""
    tops = mcols[i, 3]
    c = 0
    cnt = ipg[i, R_NOCC, q]
    for t in range(min(cnt, ring)):
        s = ipg[i, R_OCC + (cnt - 1 - t) % ring, q]
        if s > n - 2:
            continue
        if s < lo or c == m:
            break
        tops[c] = s
        c += 1
    if c == 0:
        return 0
    if c < m:  # the latest tokens without q, skipping its uses (tops[:c], descending)
        k = c
        j = 0
        s = n - 2
        while k < m:
            if j < c and tops[j] == s:
                j += 1
            else:
                tops[k] = s
                k += 1
            s -= 1
    for r in range(m):
        mcols[i, which, r] = (tops[r] + 1) % W
    return m


@njit(cache=True, nogil=True, inline="always")
def _match_value(S, i, which, m, loc):
    """The match's value at a page: the mean of its neighbours' successor columns (read
    from the token-major copy of the history, where a column is contiguous)."""
    histt, mcols = S[12], S[8]
    c = 0
    for r in range(m):
        c += histt[i, mcols[i, which, r], loc]
    return c / m


@njit(cache=True, nogil=True)
def _loss_rows(xl, cx, usedl, base, npg, P, buf):
    """Σ log(x[used]) + Σ log1p(−x[unused]) over the P = nℓ values x, each sum in numpy's
    order (q ascending). The instance's pages base..base+npg−1 take ``xl[loc]``; a ``-dist``
    instance's other pages are never used and all take the one value ``cx``, so their
    ``log1p(−cx)`` is computed once and summed by :func:`pairwise_runs` (the same numbers,
    P − npg fewer logarithms and additions)."""
    nu = 0
    for loc in range(npg):
        if usedl[loc]:
            buf[nu] = np.log(xl[loc])
            nu += 1
    a = pairwise(buf, 0, nu)
    nn = 0
    for loc in range(npg):
        if not usedl[loc]:
            buf[nn] = np.log1p(-xl[loc])
            nn += 1
    if npg == P:
        return a + pairwise(buf, 0, nn)
    return a + pairwise_runs(buf, base, nn, np.log1p(-cx), P - npg + nn)


@njit(cache=True, nogil=True)
def _loss_rows_bounded(xl, cx, usedl, npg, P):
    """The sum of :func:`_loss_rows` within a known error (BOUNDED mode): the logarithms of
    products of at most 67 factors (x used, 1 − x unused: each in [1e-4, 1], so no product
    leaves the normal range) instead of one per page, four products at a time, and the P − npg
    pages outside a ``-dist`` instance's layer as one multiple. Its error against the exact
    row is within :func:`rho` (``F_RHO``)."""
    s = 0.0
    blk = 0
    while blk < npg:
        e = min(blk + 256, npg)
        a0, a1, a2, a3 = _lanes(xl, usedl, blk, e)
        s += np.log(a0) + np.log(a1) + np.log(a2) + np.log(a3)
        blk = e
    if npg < P:
        s += (P - npg) * np.log1p(-cx)
    return s


@njit(cache=True, nogil=True, inline="always")
def _lanes(xl, usedl, lo, e):
    """The products of the factors x (used) or 1 − x (unused) of pages lo..e−1 (at most 256,
    so at most 64 factors a lane), in four interleaved lanes."""
    a0 = 1.0
    a1 = 1.0
    a2 = 1.0
    a3 = 1.0
    loc = lo
    while loc + 4 <= e:
        v = xl[loc]
        a0 *= v if usedl[loc] else 1.0 - v
        v = xl[loc + 1]
        a1 *= v if usedl[loc + 1] else 1.0 - v
        v = xl[loc + 2]
        a2 *= v if usedl[loc + 2] else 1.0 - v
        v = xl[loc + 3]
        a3 *= v if usedl[loc + 3] else 1.0 - v
        loc += 4
    while loc < e:
        v = xl[loc]
        a0 *= v if usedl[loc] else 1.0 - v
        loc += 1
    return a0, a1, a2, a3


@njit(cache=True, nogil=True, inline="always")
def _owe(fst, i, r, f, a, oc, out):
    """A bounded row of an instance of at most :data:`DEFER` pages, kept as products: its
    factors inside the instance's pages (product ``a``) and its one factor ``oc`` = 1 − x of
    the ``out`` = P − npg pages outside, multiplied into row r's kept products. A kept product
    below its threshold (e^-OWE inside, e^(-OWE/out) outside) is paid: its logarithm (times
    ``out`` outside) is taken from the loss ``fst[i, f]`` and the product starts again at 1.
    So a loss owes at most 2·OWE when its instance certifies (:func:`_losses_paid`)."""
    p = fst[i, F_PIN + r] * a
    if p < _E_OWE:
        fst[i, f] -= np.log(p)
        p = 1.0
    fst[i, F_PIN + r] = p
    q = fst[i, F_POUT + r] * oc
    if q < fst[i, F_THOUT]:
        fst[i, f] -= out * np.log(q)
        q = 1.0
    fst[i, F_POUT + r] = q


@njit(cache=True, nogil=True)
def _pay(ist, fst, i, out):
    """Every kept product of instance i paid into its loss (:func:`_owe`)."""
    nr = 7 if ist[i, I_KIND] == MATCH else ist[i, I_M]
    for r in range(nr):
        f = F_LOSS + r if r < 2 else F_BLOSS + r - 2
        if fst[i, F_PIN + r] != 1.0:
            fst[i, f] -= np.log(fst[i, F_PIN + r])
            fst[i, F_PIN + r] = 1.0
        if fst[i, F_POUT + r] != 1.0:
            fst[i, f] -= out * np.log(fst[i, F_POUT + r])
            fst[i, F_POUT + r] = 1.0


@njit(cache=True, nogil=True, inline="always")
def _beta_block(dec, mval, usedl, lo, e, nb, shrink, inv):
    """The five β rows' products over pages lo..e−1 (at most 64 factors each)."""
    b1, b2, b3, b4 = _BETAS[1], _BETAS[2], _BETAS[3], _BETAS[4]
    cl, ch = 1e-4, 1.0 - 1e-4
    a0 = a1 = a2 = a3 = a4 = 1.0
    for loc in range(lo, e):
        d = dec[loc]
        mv = mval[loc]
        a = (nb * mv + shrink * d) * inv
        x0 = _clip(d, cl, ch)
        x1 = _clip(b1 * a + (1.0 - b1) * d, cl, ch)
        x2 = _clip(b2 * a + (1.0 - b2) * d, cl, ch)
        x3 = _clip(b3 * a + (1.0 - b3) * d, cl, ch)
        x4 = _clip(b4 * a + (1.0 - b4) * d, cl, ch)
        if usedl[loc]:
            a0 *= x0
            a1 *= x1
            a2 *= x2
            a3 *= x3
            a4 *= x4
        else:
            a0 *= 1.0 - x0
            a1 *= 1.0 - x1
            a2 *= 1.0 - x2
            a3 *= 1.0 - x3
            a4 *= 1.0 - x4
    return a0, a1, a2, a3, a4


@njit(cache=True, nogil=True, inline="always")
def _beta_rows_bounded(fst, i, dec, mval, dc, usedl, npg, P, nb, shrink):
    """token-match's five β rows of :func:`_decay_end` in BOUNDED mode, in one pass: each
    page's five values x_β = β·a + (1 − β)·d with a = (nb·m + shrink·d)/(nb + shrink) taken
    once per page (the exact rows' :func:`_mixed` divides for each β: the same value within
    4u), each row summed as :func:`_loss_rows_bounded` does (products of at most 64
    factors; the five products are independent chains, so they overlap)."""
    b1, b2, b3, b4 = _BETAS[1], _BETAS[2], _BETAS[3], _BETAS[4]
    lo, hi = 1e-4, 1.0 - 1e-4
    inv = 1.0 / (nb + shrink)
    s0 = s1 = s2 = s3 = s4 = 0.0
    out = P - npg
    if npg <= DEFER:  # one block; the rows kept as products (:func:`_owe`)
        a0, a1, a2, a3, a4 = _beta_block(dec, mval, usedl, 0, npg, nb, shrink, inv)
        _owe(fst, i, 2, F_BLOSS, a0, 1.0 - _clip(dc, lo, hi), out)
        _owe(fst, i, 3, F_BLOSS + 1, a1, 1.0 - _clip(_mixed(dc, 0.0, b1, nb, shrink), lo, hi),
             out)
        _owe(fst, i, 4, F_BLOSS + 2, a2, 1.0 - _clip(_mixed(dc, 0.0, b2, nb, shrink), lo, hi),
             out)
        _owe(fst, i, 5, F_BLOSS + 3, a3, 1.0 - _clip(_mixed(dc, 0.0, b3, nb, shrink), lo, hi),
             out)
        _owe(fst, i, 6, F_BLOSS + 4, a4, 1.0 - _clip(_mixed(dc, 0.0, b4, nb, shrink), lo, hi),
             out)
        return
    blk = 0
    while blk < npg:
        e = min(blk + 64, npg)
        a0, a1, a2, a3, a4 = _beta_block(dec, mval, usedl, blk, e, nb, shrink, inv)
        s0 += np.log(a0)
        s1 += np.log(a1)
        s2 += np.log(a2)
        s3 += np.log(a3)
        s4 += np.log(a4)
        blk = e
    if npg < P:
        out = P - npg
        s0 += out * np.log1p(-_clip(dc, lo, hi))
        s1 += out * np.log1p(-_clip(_mixed(dc, 0.0, b1, nb, shrink), lo, hi))
        s2 += out * np.log1p(-_clip(_mixed(dc, 0.0, b2, nb, shrink), lo, hi))
        s3 += out * np.log1p(-_clip(_mixed(dc, 0.0, b3, nb, shrink), lo, hi))
        s4 += out * np.log1p(-_clip(_mixed(dc, 0.0, b4, nb, shrink), lo, hi))
    fst[i, F_BLOSS] -= s0
    fst[i, F_BLOSS + 1] -= s1
    fst[i, F_BLOSS + 2] -= s2
    fst[i, F_BLOSS + 3] -= s3
    fst[i, F_BLOSS + 4] -= s4


@njit(cache=True, nogil=True, inline="always")
def _beta_decided(fst, i, margin):
    """:func:`_certify`'s test of token-match's five β losses alone, each known within
    ``margin / 2``; sets ``F_CB`` when they decide β."""
    bw = 0
    for b in range(1, 5):
        if fst[i, F_BLOSS + b] < fst[i, F_BLOSS + bw]:
            bw = b
    th = 40.0 if bw == 0 else 746.0
    for b in range(5):
        if b != bw and not fst[i, F_BLOSS + b] - fst[i, F_BLOSS + bw] > th + margin:
            return False
    fst[i, F_CB] = _BETAS[bw]
    return True


@njit(cache=True, nogil=True, inline="always")
def _certify(ist, fst, i, margin, bmargin=-1.0):
    """Whether the losses decide the posterior weights, each loss known within ``margin / 2``:
    every memory's loss above the least one's by more than 746 + margin (its weight
    exp(−gap) then rounds to 0, the least one's is exp(0) = 1, so w is exactly one-hot), and
    for token-match every β's above the least one's by more than 746 + margin, or, when the
    least is β = 0's, by more than 40 + margin (the others' weights then sum below 4e-17,
    the mean β below ``BETA_OFF`` = 1e-9, so β = 0). Sets the weights and β decided
    (``F_CW``, ``F_CB``). ``bmargin``: the β losses' margin (by default ``margin``)."""
    M = ist[i, I_M]
    win = 0
    for j in range(1, M):
        if fst[i, F_LOSS + j] < fst[i, F_LOSS + win]:
            win = j
    for j in range(M):
        if j != win and not fst[i, F_LOSS + j] - fst[i, F_LOSS + win] > 746.0 + margin:
            return False
    if ist[i, I_KIND] == MATCH and not _beta_decided(fst, i, margin if bmargin < 0 else bmargin):
        return False
    for j in range(M):
        fst[i, F_CW + j] = 1.0 if j == win else 0.0
    return True


@njit(cache=True, nogil=True, inline="always")
def _losses_paid(ist, fst, i, P):
    """After a token end's log-losses: an EXACT instance turns BOUNDED once its losses decide
    the weights by ``F_ENTER`` more than needed, and a token-match one whose β losses alone
    decide β so turns BETA (its β rows bounded from the next token end, its memories' still
    exact, until they decide the weights too); a BETA or BOUNDED one widens its radius by the rows'
    error bound and the subtraction's rounding (2u·|L| for the reference's and its own), and
    stops the run (``ist[0, I_ABORT]``: :func:`execute` redoes it EXACT_ONLY) when the
    weights are no longer decided. (It and :func:`_certify` take the two arrays they read,
    not S: a call counts each array it is given.)"""
    mode = ist[i, I_APX]
    if mode == EXACT_ONLY:
        return
    enter = fst[i, F_ENTER]
    if mode == EXACT:
        if _certify(ist, fst, i, enter):
            ist[i, I_APX] = BOUNDED
            fst[i, F_RAD] = 0.0
        elif ist[i, I_KIND] == MATCH and _beta_decided(fst, i, fst[i, F_BENTER]):
            ist[i, I_APX] = BETA
            fst[i, F_RAD] = 0.0
        return
    # a loss kept as products owes at most 2·OWE (:func:`_owe`): the losses as paid, each
    # within that of its bounded value, decide the weights with 2·OWE more to spare, or are
    # paid in full and certified again
    owe = 2.0 * OWE if ist[i, I_NPG] <= DEFER else 0.0
    big = 0.0
    if mode == BOUNDED:
        for j in range(ist[i, I_M]):
            big = max(big, abs(fst[i, F_LOSS + j]))
    if ist[i, I_KIND] == MATCH:
        for b in range(5):
            big = max(big, abs(fst[i, F_BLOSS + b]))
    fst[i, F_RAD] += fst[i, F_RHO] + 4.5e-16 * (big + owe)
    margin = 2.0 * fst[i, F_RAD]
    if mode == BETA:  # β's losses bounded, the memories' exact
        ist[i, I_NBAPX] += 1
        if not _beta_decided(fst, i, margin + owe):
            if owe > 0.0:
                _pay(ist, fst, i, P - ist[i, I_NPG])
            if not _beta_decided(fst, i, margin):
                ist[0, I_ABORT] = 1
                return
        if _certify(ist, fst, i, enter, enter + margin + owe):
            ist[i, I_APX] = BOUNDED
        return
    ist[i, I_NAPX] += 1
    if _certify(ist, fst, i, margin + owe):
        return
    if owe > 0.0:
        _pay(ist, fst, i, P - ist[i, I_NPG])
        if _certify(ist, fst, i, margin):
            return
    ist[0, I_ABORT] = 1


@njit(cache=True, nogil=True)
def _decay_end(S, i, P):
    """``TokenDecay`` / ``TokenMatch`` at a token's end: the losses of the memories and of the
    five β, then the decayed counts. The reference scores all P pages; a ``-dist`` instance's
    pages outside its layer share one probability per row (their counts are 0), so the rows
    are computed over its npg pages plus that one value (:func:`_loss_rows`)."""
    ist, fst, ipg, fpg, scr = S[0], S[1], S[2], S[3], S[9]
    base, npg, M, ntok = ist[i, I_BASE], ist[i, I_NPG], ist[i, I_M], ist[i, I_NTOK]
    prior = fst[i, F_PRIOR]
    pi = scr[0:2]
    usedl = scr[2]
    buf = scr[3]
    x = scr[4]
    w = scr[7, 0:2]
    out0 = scr[7, 2:4]
    for loc in range(npg):
        usedl[loc] = 1.0 if ipg[i, R_USED, loc] else 0.0
    # BOUNDED: pi feeds only the bounded sums, so it may be rounded differently (a product
    # by 1/den instead of a quotient: within 4u of the quotient, inside F_RHO)
    bounded = ist[i, I_APX] == BOUNDED
    bbounded = bounded or ist[i, I_APX] == BETA  # the β rows bounded
    for j in range(M):
        N = fst[i, F_N + j]
        bj = fst[i, F_TOT + j] / (N * P) if N > 0 else 0.0
        den = N + prior
        out0[j] = (0.0 + prior * bj) / den if den > 0 else 0.0
        if bounded and den > 0:
            inv = 1.0 / den
            pb = prior * bj
            for loc in range(npg):
                pi[j, loc] = (fpg[i, j, loc] + pb) * inv
        else:
            for loc in range(npg):
                pi[j, loc] = (fpg[i, j, loc] + prior * bj) / den if den > 0 else out0[j]
    if ist[i, I_KIND] == MATCH and ntok >= 2 and ist[i, I_MCUR] > 0:
        if bounded:
            for j in range(M):
                w[j] = fst[i, F_CW + j]
        else:
            tot = _weights(fst, i, F_LOSS, M, w)
            for j in range(M):
                w[j] = w[j] / tot
        m = ist[i, I_MCUR]
        nb = float(ist[i, I_NB])
        shrink = fst[i, F_SHRINK]
        dec = scr[5]
        mval = scr[6]
        dc = w[0] * out0[0]
        if M > 1:
            dc = dc + w[1] * out0[1]
        for loc in range(npg):
            d = w[0] * pi[0, loc]
            if M > 1:
                d = d + w[1] * pi[1, loc]
            dec[loc] = d
            mval[loc] = _match_value(S, i, 0, m, loc)
        if bbounded:
            _beta_rows_bounded(fst, i, dec, mval, dc, usedl, npg, P, nb, shrink)
        else:
            for b in range(5):
                beta = _BETAS[b]
                for loc in range(npg):
                    d = dec[loc]
                    if beta != 0.0:
                        d = _mixed(d, mval[loc], beta, nb, shrink)
                    x[loc] = _clip(d, 1e-4, 1.0 - 1e-4)
                d = dc
                if beta != 0.0:
                    d = _mixed(d, 0.0, beta, nb, shrink)
                fst[i, F_BLOSS + b] -= _loss_rows(x, _clip(d, 1e-4, 1.0 - 1e-4), usedl, base,
                                                  npg, P, buf)
    if ntok >= 2:
        for j in range(M):
            for loc in range(npg):
                x[loc] = _clip(pi[j, loc], 1e-4, 1.0 - 1e-4)
            cx = _clip(out0[j], 1e-4, 1.0 - 1e-4)
            if bounded and npg <= DEFER:
                a0, a1, a2, a3 = _lanes(x, usedl, 0, npg)
                _owe(fst, i, j, F_LOSS + j, (a0 * a1) * (a2 * a3), 1.0 - cx, P - npg)
            elif bounded:
                fst[i, F_LOSS + j] -= _loss_rows_bounded(x, cx, usedl, npg, P)
            else:
                fst[i, F_LOSS + j] -= _loss_rows(x, cx, usedl, base, npg, P, buf)
        _losses_paid(ist, fst, i, P)
    for j in range(M):
        lam = fst[i, F_LAM + j]
        for loc in range(npg):
            d = fpg[i, j, loc] * lam
            if ipg[i, R_USED, loc]:
                d += 1.0
            fpg[i, j, loc] = d
            x[loc] = d
        fst[i, F_N + j] = lam * fst[i, F_N + j] + 1.0
        fst[i, F_TOT + j] = pairwise(x, 0, P) if npg == P else pairwise_runs(x, base, npg, 0.0, P)
    if ist[i, I_KIND] == MATCH:
        hist = S[6]
        W = ist[i, I_W]
        col = ist[i, I_NHIST] % W
        histt = S[12]
        ring = ist[i, I_NB] + 1
        for loc in range(npg):
            u = ipg[i, R_USED, loc]
            hist[i, loc, col] = u
            histt[i, col, loc] = u
        for j in range(ist[i, I_NUSED]):  # the token's pages: their rings of uses
            loc = ipg[i, R_ULIST, j]
            c = ipg[i, R_NOCC, loc]
            ipg[i, R_OCC + c % ring, loc] = ist[i, I_NHIST]
            ipg[i, R_NOCC, loc] = c + 1
        ist[i, I_NHIST] += 1
        ist[i, I_MCUR] = _match(ist, ipg, hist, S[7], S[8], histt, i, 0)


# -- the token clock ---------------------------------------------------------------------------
@njit(cache=True, nogil=True, inline="always")
def _advance(S, i, t, steps, token, n_experts, L, P):
    """``TokenPolicy._advance``: start request t's token if it is a new one."""
    ist, ipg = S[0], S[2]
    s = steps[t]
    tok = token[t]
    if ist[i, I_HAS] != 0 and tok == ist[i, I_TOK]:
        return
    kind = ist[i, I_KIND]
    if ist[i, I_NTOK] >= 0:
        if kind == HAZARD:
            _hazard_end(S, i)
        else:
            _decay_end(S, i, P)
    ist[i, I_NTOK] += 1
    ist[i, I_HAS] = 1
    ist[i, I_TOK] = tok
    ist[i, I_TSTART] = s
    if kind == HAZARD:
        for loc in range(ist[i, I_NPG]):
            ipg[i, R_BEFORE, loc] = ipg[i, R_LASTTOK, loc]
    elif kind == MATCH:
        ist[i, I_SIMOK] = 0  # the similarities restart (zeroed when next kept: _match)
        ist[i, I_NPEND] = 0
        ist[i, I_MNEXT] = 0
        ist[i, I_MNEXTAT] = -1
    for j in range(ist[i, I_NUSED]):
        ipg[i, R_USED, ipg[i, R_ULIST, j]] = 0
    ist[i, I_NUSED] = 0


@njit(cache=True, nogil=True, inline="always")
def _touch(S, i, t, p, steps, token, n_experts, L, P):
    """``on_hit`` / ``on_insert`` of instance i."""
    ist, ipg = S[0], S[2]
    loc = p - ist[i, I_BASE]
    kind = ist[i, I_KIND]
    if kind == LRU:
        ipg[i, R_VLAST, loc] = t
        return
    _advance(S, i, t, steps, token, n_experts, L, P)
    if not ipg[i, R_USED, loc]:
        ipg[i, R_USED, loc] = 1
        ipg[i, R_ULIST, ist[i, I_NUSED]] = loc
        ist[i, I_NUSED] += 1
        if kind == MATCH:
            ipg[i, R_PEND, ist[i, I_NPEND]] = loc
            ist[i, I_NPEND] += 1
    if kind == HAZARD:
        ipg[i, R_LASTTOK, loc] = ist[i, I_NTOK]


@njit(cache=True, nogil=True, inline="always")
def _list_insert(ipg, fpg, i, win, n_l, loc):
    """Page ``loc`` into instance i's ordered list ``R_SORT[:n_l]`` by its decayed count under
    memory ``win``, after the pages of an equal count (:func:`_choose`)."""
    lrow = ipg[i, R_SORT]
    d = fpg[i, win, loc]
    q = n_l
    while q > 0 and fpg[i, win, lrow[q - 1]] > d:
        lrow[q] = lrow[q - 1]
        q -= 1
    lrow[q] = loc


@njit(cache=True, nogil=True)
def _choose(S, i, t, cands, nc, steps, n_experts, L, P, K, virt):
    """The victim of instance i among ``cands[:nc]`` (token policies: ``TokenPolicy.victim``
    after the advance; LRU: the least recently used).

    What does not change inside a token is computed once per page and token (``fc``, stamped
    ``R_STAMP`` = token index + 1): token-hazard's h at the age before the token and its two
    products Π (1 − h) (used in the token or not), token-decay's h (mixed with the match of the
    previous token for token-match) and λ_j·D_jq; the rest per eviction, with the same
    operations in the same order as the reference's numpy expressions.

    ``virt``: ``cands[:nc]`` is instance i's whole virtual cache, its ``R_VLIST`` row of
    instance-local ids (a component of the combiner, :func:`_vserve`), else page ids."""
    ist, fst, ipg, fpg, hz, hzl, fc, layer_of = S[0], S[1], S[2], S[3], S[4], S[5], S[10], S[11]
    kind = ist[i, I_KIND]
    base = ist[i, I_BASE]
    if kind == LRU:
        best = -1
        bl = 0
        for j in range(nc):
            v = cands[j] + base if virt else cands[j]
            lv = ipg[i, R_VLAST, v - base]
            if best < 0 or lv < bl:
                best = v
                bl = lv
        return best
    s = steps[t]
    c = s % L
    rnd = (s - ist[i, I_TSTART]) // L
    hor = ist[i, I_HOR]
    sc = S[9][7]  # scratch: no allocation per eviction
    w = sc[0:2]
    wb = sc[2:7]
    c2 = sc[7:9]
    den2 = sc[9:11]
    w[0] = 0.0
    w[1] = 0.0
    c2[0] = 0.0
    c2[1] = 0.0
    den2[0] = 1.0
    den2[1] = 1.0
    M = ist[i, I_M]
    beta = 0.0
    mcur = 0
    mnext = 0
    prior = fst[i, F_PRIOR]
    nused = float(ist[i, I_NUSED])
    win = -1  # BOUNDED: the memory of weight 1 (the others' 0)
    if kind != HAZARD:
        bounded = ist[i, I_APX] == BOUNDED  # the weights decided by the losses' bounds
        if bounded:
            for j in range(M):
                w[j] = fst[i, F_CW + j]
                if w[j] == 1.0:
                    win = j
        else:
            tot = _weights(fst, i, F_LOSS, M, w)
            for j in range(M):
                w[j] = w[j] / tot
        for j in range(M):
            lam = fst[i, F_LAM + j]
            n2 = lam * fst[i, F_N + j] + 1.0
            t2 = lam * fst[i, F_TOT + j] + nused
            c2[j] = prior * (t2 / (n2 * P))
            den2[j] = n2 + prior
        if kind == MATCH:
            decided = bounded or ist[i, I_APX] == BETA
            beta = fst[i, F_CB] if decided else _beta(fst, i, wb)
            if beta > 0.0 and ist[i, I_MNEXTAT] != ist[i, I_NUSED]:
                ist[i, I_MNEXT] = (_match(ist, ipg, S[6], S[7], S[8], S[12], i, 1)
                                   if ist[i, I_NUSED] else 0)
                ist[i, I_MNEXTAT] = ist[i, I_NUSED]
            mcur = ist[i, I_MCUR]
            mnext = ist[i, I_MNEXT]
    ntok = ist[i, I_NTOK]
    stamp = ntok + 1
    amax = ist[i, I_A1] - 1
    alpha = fst[i, F_ALPHA]
    nb = float(ist[i, I_NB])
    shrink = fst[i, F_SHRINK]
    fw = 1 + win  # BOUNDED: the row and constants of the memory of weight 1, in registers
    c2w = c2[win] if win >= 0 else 0.0
    d2w = den2[win] if win >= 0 else 1.0
    # Ordered scan (BOUNDED, one visit per token, β = 0: no match mixed in): every candidate's
    # key is then a non-increasing function of its decayed count d under the memory of weight 1
    # (fixed for the token): each step of it (λ·d, + used + c2, / den2, 1 − ·, h = (d + prior·b)
    # / den, the clip, 1 − a0, the square of a number ≥ 0, the product, rint) is monotone; and
    # a page unused in the token whose layer is not ahead (a0 = 0) has the largest key of any
    # page of the same d. So the candidates are visited in ascending d (a list sorted once per
    # token, pages inserted as they become candidates; R_CAND marks this eviction's, or, in a
    # virtual cache, whose candidates are its residents, R_VRES, and :func:`_vserve` inserts a
    # page as it enters once the token's list is built) and the
    # scan stops at the first d whose largest possible key is below the best found: the pages
    # left cannot beat it or tie with it.
    lam_w = fst[i, F_LAM + win] if win >= 0 else 0.0
    ordered = win >= 0 and K == 1 and beta == 0.0  # (win >= 0: not token-hazard)
    lrow = ipg[i, R_SORT]
    n_it = nc
    evid = 0
    if ordered:
        stamp_l = ist[i, I_NTOK] + 1
        fresh = ist[i, I_LTOK] != stamp_l
        if fresh:
            ist[i, I_LTOK] = stamp_l
            ist[i, I_LWIN] = win
            ist[i, I_LLEN] = 0
        n_l = ist[i, I_LLEN]
        if not virt:
            evid = ist[i, I_EVID] + 1
            ist[i, I_EVID] = evid
        if fresh or not virt:
            for j in range(nc):
                loc = cands[j] if virt else cands[j] - base
                if not virt:
                    ipg[i, R_CAND, loc] = evid
                if ipg[i, R_INL, loc] != stamp_l:  # a new candidate: into the list by its d
                    ipg[i, R_INL, loc] = stamp_l
                    _list_insert(ipg, fpg, i, win, n_l, loc)
                    n_l += 1
        ist[i, I_LLEN] = n_l
        n_it = n_l
    best = -1
    bkey = 0.0
    br = 0
    for j in range(n_it):
        if ordered:
            loc = lrow[j]
            if (ipg[i, R_VRES, loc] == 0) if virt else (ipg[i, R_CAND, loc] != evid):
                continue  # evicted since it entered, or pinned now
            v = loc + base
            if best >= 0:  # the largest key at this d: unused, a0 = 0
                pn = (lam_w * fpg[i, win, loc] + 0.0 + c2w) / d2w
                if np.rint((1.0 - 0.0) * _power(1.0 - pn, hor) * 1e9) < bkey:
                    break
        else:
            v = cands[j] + base if virt else cands[j]
            loc = v - base
        z = layer_of[v]
        used = ipg[i, R_USED, loc] != 0
        if ipg[i, R_STAMP, loc] != stamp:  # the page's values for this token
            ipg[i, R_STAMP, loc] = stamp
            if kind == HAZARD:
                ab = min(ntok - 1 - ipg[i, R_BEFORE, loc], amax)
                fc[i, 0, loc] = (hz[i, 0, loc, ab] + alpha * hzl[i, 2, z, ab]) / (
                    hz[i, 1, loc, ab] + alpha)
                for u in range(2):  # 1: not used in the token (age after it ab + 1), 2: used
                    age = min(ab + 1, amax) if u == 0 else 0
                    nl = 1.0
                    for _ in range(hor):
                        nl *= 1.0 - (hz[i, 0, loc, age] + alpha * hzl[i, 2, z, age]) / (
                            hz[i, 1, loc, age] + alpha)
                        age = min(age + 1, amax)
                    fc[i, 1 + u, loc] = nl
            else:
                h = 0.0
                for jj in range(M):
                    N = fst[i, F_N + jj]
                    d = fpg[i, jj, loc]
                    bj = fst[i, F_TOT + jj] / (N * P) if N > 0 else 0.0
                    den = N + prior
                    hv = (d + prior * bj) / den if den > 0 else 0.0
                    h = w[0] * hv if jj == 0 else h + w[jj] * hv
                    fc[i, 1 + jj, loc] = fst[i, F_LAM + jj] * d
                if beta != 0.0 and mcur > 0:
                    h = _mixed(h, _match_value(S, i, 0, mcur, loc), beta, nb, shrink)
                fc[i, 0, loc] = h
        h = fc[i, 0, loc]
        # the within-token chance a0 (TokenPolicy.within_token)
        # (rem = 0 gives exactly 0, and rem = K divides by exactly 1: both skip divisions)
        a0 = 0.0
        if K == 1 and rnd == 0:  # one visit per token: rem = 1 ahead (a0 = h·1/1), else 0
            hc = _clip(h, 0.0, 1.0)
            a0 = hc if not used and z > c else 0.0
        elif not used:
            rem = K - rnd - 1 + (1 if z > c else 0)
            if rem >= K:
                a0 = _clip(h * K / K, 0.0, 1.0)
            elif rem > 0:
                dd = 1.0 - h * (K - rem) / K
                a0 = _clip(h * rem / K / (dd if dd > 1e-12 else 1e-12), 0.0, 1.0)
        if kind == HAZARD:
            pu = (1.0 - a0) * fc[i, 2 if used else 1, loc]
        else:
            ux = 1.0 if used else 0.0
            if win >= 0:  # 1·a + 0·b = a exactly (a, b finite, ≥ 0): one memory's estimate
                pn = (fc[i, fw, loc] + ux + c2w) / d2w
            else:
                pn = w[0] * ((fc[i, 1, loc] + ux + c2[0]) / den2[0])
                if M > 1:
                    pn = pn + w[1] * ((fc[i, 2, loc] + ux + c2[1]) / den2[1])
            if beta != 0.0 and mnext > 0:
                pn = _mixed(pn, _match_value(S, i, 1, mnext, loc), beta, nb, shrink)
            pu = (1.0 - a0) * _power(1.0 - pn, hor)
        key = np.rint(pu * 1e9)
        # (layer distance (z − c − 1) mod ℓ, page id) as one number: z, c in 0..ℓ−1, v < P
        r = (z - c - 1 + (L if z <= c else 0)) * P + v
        if best < 0 or key > bkey or (key == bkey and r > br):
            best = v
            bkey = key
            br = r
    return best


#: :func:`_choose` inlined into the kernel's eviction loop: a call per eviction was about a
#: fifth of a token-match-dist run (its small helpers above, inlined too, another fifth:
#: benchmarks/README.md, "Inlined helpers"); the combiner's virtual caches keep the call,
#: which compiles once (each inlined copy adds to the first run's compile time)
_choose_here = njit(cache=True, nogil=True, inline="always")(_choose.py_func)


@njit(cache=True, nogil=True, inline="always")
def _vserve(S, i, t, p, steps, token, n_experts, L, P, K, sizes):
    """A component's virtual cache serves request t (a ``Simulation.serve`` without pins):
    pages take ``sizes[p]`` of its capacity (1 each in a run counted in pages, their bytes
    under a budget); a page larger than the capacity is served uncached (a bypass, no hook),
    else victims leave until it fits."""
    ist, ipg = S[0], S[2]
    base = ist[i, I_BASE]
    loc = p - base
    if ipg[i, R_VRES, loc]:
        _touch(S, i, t, p, steps, token, n_experts, L, P)
        return
    ist[i, I_VMISS] += 1
    need = sizes[p]
    if need > ist[i, I_CAP]:
        return
    n = ist[i, I_VCNT]
    if ist[i, I_VUSED] + need > ist[i, I_CAP]:
        if ist[i, I_KIND] != LRU:
            _advance(S, i, t, steps, token, n_experts, L, P)
        while ist[i, I_VUSED] + need > ist[i, I_CAP]:
            v = _choose(S, i, t, ipg[i, R_VLIST], n, steps, n_experts, L, P, K, True) - base
            # swap-remove v from the list
            pos = ipg[i, R_VPOS, v]
            last = ipg[i, R_VLIST, n - 1]
            ipg[i, R_VLIST, pos] = last
            ipg[i, R_VPOS, last] = pos
            ipg[i, R_VRES, v] = 0
            ist[i, I_VUSED] -= sizes[v + base]
            n -= 1
    ipg[i, R_VLIST, n] = loc
    ipg[i, R_VPOS, loc] = n
    ipg[i, R_VRES, loc] = 1
    ist[i, I_VCNT] = n + 1
    ist[i, I_VUSED] += need
    stamp_l = ist[i, I_LTOK]
    if stamp_l == ist[i, I_NTOK] + 1 and ipg[i, R_INL, loc] != stamp_l:
        # the token's ordered list is built (:func:`_choose`): the new resident joins it
        ipg[i, R_INL, loc] = stamp_l
        _list_insert(ipg, S[3], i, ist[i, I_LWIN], ist[i, I_LLEN], loc)
        ist[i, I_LLEN] += 1
    _touch(S, i, t, p, steps, token, n_experts, L, P)


@njit(cache=True, nogil=True)
def token_kernel(pages, steps, token, visits, sizes, n_experts, n_layers, caps,
                 dist, robust, margins, S, record, C, route, phases, t_lo):
    """Replay ``pages`` under the instances of ``S`` (built by :func:`setup`): a token policy
    (``robust`` False: instance q serves partition q) or the combiner (instances 2q, 2q + 1 are
    partition q's components; ``margins[q]`` its h), from request ``t_lo`` on, with the
    cache of ``C`` (:func:`cache_state`: a fresh one, or the state an earlier call left after
    serving requests ``0..t_lo-1`` of the same arrays: a run carried from piece to piece,
    :class:`Carried`). ``C``'s ``leader[q]`` and ``switches[q]`` end as the partition's
    ``Robust.leader`` and ``Robust.switches``, its ``page_miss`` counts every call's misses;
    the logs returned hold requests ``t_lo..``, the request indices counted from 0.

    ``route`` = ``(order, m, j, cp, rule)`` (:func:`paging.fast.routing.run_routed`; ``m``
    empty: no routing): each group is first routed by :func:`paging.fast.common.route_group`
    against the cache as it stands, its served pages written over ``pages`` in place; with a
    miss handler, ``rule`` decides ``act`` and ``lvl`` for them from their routed ranks and
    router weights (:func:`paging.fast.common.clock_group`).

    ``phases`` = ``(pf_start, pf_pages, pf_size, act, lvl, level_slots, substitute)``
    (None: none, a plain run compiled apart), SpecMD's phases as
    :func:`paging.fast.phases.phase_kernel` takes them: batch g of the prefetch plan,
    ``pf_pages[pf_start[g]:pf_start[g + 1]]``, is inserted after group g with the group and
    the batch pinned (a resident page skipped, one no eviction can make room for a skipped
    prefetch); the token policy hears a prefetch of x after request t as ``on_prefetch(t,
    x)`` = ``on_insert``: the victims' advance to t's token, then x used in it (the combiner
    refuses prefetching in the reference, so :func:`paging.fast.phases.unsupported` sends it
    there). ``act[t]`` 1 drops a missing request (the policy hears nothing), ``lvl[t]`` is
    its fetch level (``level_slots[lvl, p]`` its room), ``substitute`` serves a miss with the
    most requested resident unpinned expert of its layer (ties to the lower id), which the
    policy hears as a hit.

    A carried call with phases (:class:`CarriedPhases`: the plan, ``act`` and ``lvl`` of the
    run so far) first inserts the batch after the call before's last group (group
    ``cnt[2] - 1`` of ``C``'s counters, its last request heard as the one before it; from
    plan page ``cnt[4]`` on: a call without requests may have inserted its start), then
    serves its own requests (and with ``cnt[5]`` set, the batch after its last group); its
    logs and outcomes start at ``t_lo`` (the prefetch rows keep the run's request indices),
    and with ``cnt[3]`` set the prefetches still pending at its end are not counted as wasted
    (the run may go on).

    Returns the tuple of :func:`paging.fast.phases.phase_kernel`: the eight of
    :mod:`paging.fast.common`, then ``outcome``, ``subst``, ``pf_counts``, the prefetch log
    and the prefetch-eviction log (empty without phases)."""
    n = pages.size
    L = n_layers
    P = n_experts * n_layers
    K = visits
    # the state without reference counts (:func:`borrow`: the caller holds S for the call)
    S = (borrow(S[0]), borrow(S[1]), borrow(S[2]), borrow(S[3]), borrow(S[4]), borrow(S[5]),
         borrow(S[6]), borrow(S[7]), borrow(S[8]), borrow(S[9]), borrow(S[10]), borrow(S[11]),
         borrow(S[12]))
    pages, steps, token, sizes = borrow(pages), borrow(steps), borrow(token), borrow(sizes)
    if phases is None:  # (pruned as numba compiles: the plain run's loop has no phase left)
        pf_start = np.zeros(0, np.int64)
        pf_pages, pf_size, lvl = pf_start, pf_start, pf_start
        act = np.zeros(0, np.int8)
        level_slots = np.zeros((1, 1), np.int64)
        substitute = has_pf = handled = leveled = False
        n_pf = 0
    else:
        pf_start, pf_pages, pf_size, act, lvl, level_slots, substitute = phases
        has_pf = pf_start.size > 0
        n_pf = pf_pages.size
        handled = act.size > 0
        leveled = lvl.size > 0
    ist = S[0]
    layer_of = S[11]
    # (requested: the substitute's request counts; pending: prefetched, not requested since)
    (resident, room, used_c, clist, cpos, ccount, pin, hseen, evicted_pass, page_miss, rlast,
     seen, leader, switches, cnt, requested, pending) = C
    cands = np.zeros(P, np.int64)
    m = n - t_lo  # the requests of this call
    # a carried call with a prefetch plan first inserts the batch after the last group of the
    # call before (``resume``: the loop starts at that group's last request, not served again)
    resume = has_pf and t_lo > 0
    t_first = t_lo - 1 if resume else t_lo
    if has_pf:  # the plan's pages of this call, from the batch it starts with on
        n_pf = pf_pages.size - pf_start[cnt[2] - 1 if resume else cnt[2]]
    # (a carried call may also evict the pages its state starts with)
    extra = P if t_lo > 0 else 0
    hit_mask = np.zeros(m if record >= 1 else 0, np.bool_)
    ev = np.zeros((m + n_pf + extra if record >= 2 else 0, 2), np.int64)
    byp = np.zeros(m if record >= 2 else 0, np.int64)
    outcome = np.zeros(m if (record >= 1 or handled or substitute or leveled) else 0, np.int8)
    subst = np.full(m if substitute else 0, -1, np.int64)
    pf_log = np.zeros((n_pf if record >= 1 else 0, 2), np.int64)
    pf_ev = np.zeros((m + n_pf + extra if record >= 1 and has_pf else 0, 2), np.int64)
    misses = 0
    coll = 0
    n_ev = 0
    n_byp = 0
    n_pf_log = 0
    n_pf_ev = 0
    prefetches = 0
    useful = 0
    wasted = 0
    skipped = 0
    pf_bytes = 0
    grouped = is_grouped(steps[t_lo:])
    prev_s = -1  # (a carried call starts at a group's first request)
    g_start = 0
    g_end = 0
    stamp = -2  # the pin stamp of the pages pinned now (-2: none, rounds mode)
    next_stamp = cnt[0]  # (carried: stamps of earlier calls stay in pin)
    hstamp = cnt[1]
    r_order, r_m, r_j, r_cp, r_rule = route
    routed = r_m.size > 0
    clocked = r_rule[6].size > 0  # the served ranks and scores, the handler's decisions
    r_rank, r_pos, r_taken, r_zz = route_scratch(n_experts)
    group = cnt[2] - 1  # (carried: the groups of earlier calls)
    for t in range(t_first, n):
        if ist[0, I_ABORT]:  # a BOUNDED instance's weights are undecided: execute redoes it
            break
        p = pages[t]
        s = steps[t]
        if t < t_lo:  # resuming: the call before's last group, served then
            prev_s = s
            g_start = t
            while g_start > 0 and steps[g_start - 1] == s:
                g_start -= 1
            g_end = t_lo
        elif s != prev_s:
            prev_s = s
            group += 1
            j = t + 1
            if grouped or has_pf or routed:
                while j < n and steps[j] == s:
                    j += 1
            g_start = t
            g_end = j
            if routed:  # the group's served experts, chosen against the cache as it stands
                route_group(pages, t, j - t, (s % L) * n_experts, n_experts, group, r_order,
                            r_m[group], r_j, j - t, resident, r_rank, r_taken, pages, t, r_cp,
                            r_zz, r_pos)
                if clocked:
                    clock_group(r_rank, r_pos, n_experts, j - t, r_order.shape[0] > 0,
                                (s % L) * n_experts, group, t, pages, t, j - t, r_rule, act,
                                lvl)
                p = pages[t]
            if grouped:
                stamp = next_stamp
                next_stamp += 1
                pin_pages(pin, pages, g_start, g_end, stamp)
            else:
                stamp = -2
        if substitute and t >= t_lo:
            requested[p] += 1
        # one pass of the loop body below serves request t (sub = 0), then, at the end of a
        # group that has a prefetch batch, inserts the batch's pages one by one (sub = 1..)
        b_lo = 0
        b_hi = 0
        if has_pf and t + 1 == g_end and (g_end < n or t < t_lo or cnt[5] != 0):  # (resuming:
            b_lo = pf_start[group]  # the batch after the call before's last group, whatever
            # follows; cnt[5]: a call that closes inserts the batch after its last group)
            b_hi = pf_start[group + 1]
            if t < t_lo:  # (the part an earlier call inserted already: not again)
                b_lo = max(b_lo, cnt[4])
        batch_pinned = False
        for sub in range(1 if t < t_lo else 0, b_hi - b_lo + 1):
            prefetching = sub > 0
            if prefetching:
                x = pf_pages[b_lo + sub - 1]
                if resident[x]:
                    continue
                if not batch_pinned:  # pin the group just served and the batch
                    batch_pinned = True
                    stamp = next_stamp
                    next_stamp += 1
                    pin_batch(pin, pages, g_start, g_end, pf_pages, b_lo, b_hi, stamp)
                need = sizes[x]
            else:
                x = p
                hp = p  # the page the policy hears: p, or the substitute serving it
                if not resident[p]:
                    hp = -1
                    if handled and act[t] != 0:
                        outcome[t - t_lo] = DROPPED
                        continue
                    if substitute:
                        hp = most_requested(resident, pin, stamp, requested, layer_of[p],
                                            n_experts)
                        if hp >= 0:
                            outcome[t - t_lo] = SUBSTITUTED
                            subst[t - t_lo] = hp
                if hp >= 0:  # a hit (on p, or on its substitute)
                    q = layer_of[hp] if dist else 0
                    if hp == p:
                        if record:
                            hit_mask[t - t_lo] = True
                        if has_pf and pending[p]:
                            pending[p] = False
                            useful += 1
                    if robust:
                        if seen[q] != t:
                            seen[q] = t
                            _hear(S, 2 * q, t, hp, steps, token, n_experts, L, P, K, sizes,
                                  leader, switches, margins, q)
                            rlast[hp] = t
                    else:
                        _touch(S, q, t, hp, steps, token, n_experts, L, P)
                    continue
                level = lvl[t] if leveled else 0
                if outcome.size > 0:
                    outcome[t - t_lo] = FETCHED
                misses += 1
                page_miss[p] += 1
                if evicted_pass[p] == s // L:
                    coll += 1
                need = sizes[p] if level == 0 else level_slots[level, p]
            z = layer_of[x]
            q = z if dist else 0
            if used_c[q] + need > caps[q]:
                held = 0  # room of the pinned resident pages of the partition
                if stamp >= 0:
                    hstamp += 1
                    held = pinned_room(pages, g_start, g_end, pf_pages, b_lo,
                                       b_hi - b_lo if prefetching else 0, resident, hseen,
                                       hstamp, dist, layer_of, z, room)
                if need > caps[q] - held:
                    if prefetching:
                        skipped += 1
                    else:
                        if record > 1:
                            byp[n_byp] = t
                        n_byp += 1
                    continue
            # the hook of request t (victims or insert; the same for both)
            if robust:
                if seen[q] != t:
                    seen[q] = t
                    _hear(S, 2 * q, t, x, steps, token, n_experts, L, P, K, sizes, leader,
                          switches, margins, q)
                    rlast[x] = t
            else:
                _advance(S, q, t, steps, token, n_experts, L, P)
            while used_c[q] + need > caps[q]:
                nc = 0
                for j in range(ccount[q]):
                    v = clist[q, j]
                    if pin[v] != stamp:
                        cands[nc] = v
                        nc += 1
                if robust:
                    victim = _lazy(S, 2 * q + leader[q], 2 * q + 1 - leader[q], cands, nc, rlast)
                else:
                    victim = _choose_here(S, q, t, cands, nc, steps, n_experts, L, P, K, False)
                pos = cpos[victim]
                last = clist[q, ccount[q] - 1]
                clist[q, pos] = last
                cpos[last] = pos
                ccount[q] -= 1
                resident[victim] = False
                used_c[q] -= room[victim]
                evicted_pass[victim] = s // L
                if has_pf and pending[victim]:
                    pending[victim] = False
                    wasted += 1
                if prefetching:
                    if record >= 1:
                        pf_ev[n_pf_ev, 0] = t + 1
                        pf_ev[n_pf_ev, 1] = victim
                        n_pf_ev += 1
                elif record > 1:
                    ev[n_ev, 0] = t
                    ev[n_ev, 1] = victim
                    n_ev += 1
            clist[q, ccount[q]] = x
            cpos[x] = ccount[q]
            ccount[q] += 1
            resident[x] = True
            room[x] = need
            used_c[q] += need
            if not robust:
                _touch(S, q, t, x, steps, token, n_experts, L, P)
            if prefetching:
                prefetches += 1
                pf_bytes += pf_size[x]
                pending[x] = True
                if record >= 1:
                    pf_log[n_pf_log, 0] = t + 1
                    pf_log[n_pf_log, 1] = x
                    n_pf_log += 1
    if cnt[3] == 0:  # (a carried run counts its pending prefetches when it ends)
        for y in range(pending.size):
            if pending[y]:
                wasted += 1
    cnt[0] = next_stamp
    cnt[1] = hstamp
    cnt[2] = group + 1
    pf_counts = np.array([prefetches, useful, wasted, skipped, pf_bytes], np.int64)
    return (misses, coll, page_miss, hit_mask, ev, n_ev, byp, n_byp, outcome, subst, pf_counts,
            pf_log, n_pf_log, pf_ev, n_pf_ev)


@njit(cache=True, nogil=True, inline="always")
def _hear(S, a, t, p, steps, token, n_experts, L, P, K, sizes, leader, switches, margins, q):
    """``Robust._see``: both components of partition q (instances a, a + 1) serve request t
    (page p), then the leader follows."""
    _vserve(S, a, t, p, steps, token, n_experts, L, P, K, sizes)
    _vserve(S, a + 1, t, p, steps, token, n_experts, L, P, K, sizes)
    ist = S[0]
    lead = leader[q]
    if ist[a + lead, I_VMISS] > ist[a + 1 - lead, I_VMISS] + margins[q]:
        leader[q] = 1 - lead
        switches[q] += 1


@njit(cache=True, nogil=True, inline="always")
def _lazy(S, lead, oth, cands, nc, rlast):
    """The combiner's victim among ``cands[:nc]``: the least recently requested outside both
    virtual caches (instances ``lead``, ``oth``), else outside the leader's, else any."""
    bo = -1  # outside both virtual caches
    bl = -1  # outside the leader's
    ba = -1  # any
    for j in range(nc):
        v = cands[j]
        if ba < 0 or rlast[v] < rlast[ba]:
            ba = v
        if not ipg_res(S, lead, v):
            if bl < 0 or rlast[v] < rlast[bl]:
                bl = v
            if not ipg_res(S, oth, v):
                if bo < 0 or rlast[v] < rlast[bo]:
                    bo = v
    return bo if bo >= 0 else (bl if bl >= 0 else ba)


@njit(cache=True, nogil=True, inline="always")
def ipg_res(S, i, p):
    """Whether page p is in instance i's virtual cache."""
    loc = p - S[0][i, I_BASE]
    return S[2][i, R_VRES, loc] != 0


# -- set-up (Python) ---------------------------------------------------------------------------
def _component_kind(pol) -> int | None:
    from paging.policies.classic import LRU as LRUPolicy
    from paging.policies.decay import TokenDecay
    from paging.policies.hazard import TokenHazard
    from paging.policies.match import TokenMatch

    return {TokenHazard: HAZARD, TokenDecay: DECAY, TokenMatch: MATCH,
            LRUPolicy: LRU}.get(type(pol))


def supports(proto, kind: int) -> bool:
    """Whether the kernel reproduces ``proto`` (a policy of kind ``kind``; for the combiner:
    both components are token-hazard, token-decay, token-match or LRU, exact types)."""
    if kind != ROBUST:
        return True
    return all(_component_kind(make()) is not None for make in (proto.make_a, proto.make_b))


def owing(fst, i: int, npg: int, P: int) -> None:
    """Instance i's rows kept as products (:func:`_owe`) start owing nothing: every product
    1, and the outside threshold e^(-OWE/(P − npg)) (0, never reached, with no page
    outside)."""
    fst[i, F_PIN:F_THOUT] = 1.0
    fst[i, F_THOUT] = math.exp(-OWE / (P - npg)) if npg < P else 0.0


def _fill(ist, fst, i, pol, kind, base, npg, cap, P, enter) -> None:
    ist[i, I_KIND], ist[i, I_BASE], ist[i, I_NPG], ist[i, I_CAP] = kind, base, npg, cap
    ist[i, I_APX] = EXACT if enter is not None else EXACT_ONLY
    fst[i, F_ENTER] = enter if enter is not None else 0.0
    fst[i, F_BENTER] = max(fst[i, F_ENTER], BETA_ENTER)
    fst[i, F_RHO] = rho(P)
    owing(fst, i, npg, P)
    ist[i, I_NTOK] = -1
    ist[i, I_MNEXTAT] = -1
    ist[i, I_M] = 1
    if kind == HAZARD:
        ist[i, I_HOR], ist[i, I_A1] = pol.horizon, pol.max_age + 1
        fst[i, F_ALPHA] = pol.alpha
    elif kind in (DECAY, MATCH):
        ist[i, I_HOR], ist[i, I_M] = pol.horizon, len(pol.lams)
        fst[i, F_LAM:F_LAM + len(pol.lams)] = pol.lams
        fst[i, F_PRIOR] = pol.prior
        if kind == MATCH:
            ist[i, I_W], ist[i, I_NB] = pol.window, pol.neighbours
            fst[i, F_SHRINK] = pol.shrink


def rho(P: int) -> float:
    """A bound on one bounded row's error against the exact row, P values (``F_RHO``): the
    probabilities computed within 8u of the exact ones (pi as a product by 1/den, the β
    mixtures with one division), so each factor 1 − x, at least 1e-4 after the clip,
    within 8u/1e-4 < 9e-12 relative, P·9e-12 in all; the products' own rounding and the
    libm calls' (≤ 134u and 2 ulp per product of ≤ 67 factors, ≤ P/64 + 8 products), and
    both sums' (the exact row's pairwise ≤ (log2 P + 3)·u·Σ|term|, this one's sequential
    ≤ (P/64 + 8)·u·Σ|term|, |term| ≤ 9.22), together below 1e-11 + 1e-14·P·(log2 P + 14) +
    2e-17·P²: all of it below 2e-11·P + 1e-14·P². Rows kept as products (:func:`_owe`, at
    most 60 pages inside) err less per token: the same factors, one product of at most 61
    factors and one rounding of 1 − x, ``P − npg`` times over (≤ (P + 2)·u), and a logarithm
    of at most 2 ulp of |log| ≤ OWE + 553 when paid, after one token or more."""
    return 2e-11 * P + 1e-14 * P * P


#: the margins beyond the certification's thresholds (746 and 40, :func:`_certify`) by which an
#: instance's exact losses must decide its weights before it turns BOUNDED, tried in turn: a run
#: whose bound fails is redone with the next margin, then with exact sums. The exact token ends
#: before an instance turns are the costly ones (their log-losses are summed term by term, and
#: token-match's β > 0 matches at every eviction): on the 2M-request benchmark trace
#: (``bench_matrix.py``, k = 43) token-match-dist turns at 1.86 M token ends with 50 and at
#: 1.54 M with 500, 0.70 M req/s against 0.56 M (``bench_token_bounds.py --margins``). No
#: bound failed at 50 on the 24 runs of ``bench_token_bounds.py --safety --tokens 62500``; at 5,
#: 2 of them did, and at 0 the benchmark run did (benchmarks/README.md, "Two margins"). The
#: wide margin stays as the second try, so a failure costs one run more than before at most.
ENTER = (50.0, 500.0)

#: the margin beyond :func:`_certify`'s β thresholds by which token-match's exact β losses must
#: decide β before its β rows alone are bounded, the memories' still exact (BETA mode), at least
#: the run's margin of :data:`ENTER`. A bound failing there redoes the run as one failing in
#: BOUNDED mode does, so it keeps the first margin of the ladder even where a test lowers
#: ENTER: with 0 for both, 20 of the 24 runs of ``bench_token_bounds.py --safety --first 0``
#: failed (2 at 5, none at 50). On the benchmark trace token-match-dist spends 62,630 token
#: ends in BETA mode (``bench_token_bounds.py``, "β only").
BETA_ENTER = 50.0

#: the ``route`` argument of :func:`token_kernel` for a run without routing
_NO_ROUTE = (np.zeros((0, 0), np.int64), np.zeros(0, np.int64), 0, no_prior(), no_rule())


def setup(proto, kind: int, layout, caps: np.ndarray, dist: bool,
          enter: float | None = ENTER[0]):
    """The instances' state for a run of ``proto`` (the policy, or the factory's product of a
    ``-dist`` one) on partitions of capacities ``caps``; returns ``(S, margins)``. ``enter``:
    the margin to turn BOUNDED (:func:`_losses_paid`), None to stay EXACT_ONLY."""
    n, L, P = layout.n_experts, layout.n_layers, layout.n_pages
    parts = caps.size
    if kind == ROBUST:
        comps = (proto.make_a(), proto.make_b())
        members = [(2 * q + c, comps[c], _component_kind(comps[c]), q)
                   for q in range(parts) for c in (0, 1)]
        margins = np.array([int(c) if proto.margin == "k" else int(proto.margin)
                            for c in caps], dtype=np.int64)
    else:
        members = [(q, proto, kind, q) for q in range(parts)]
        margins = np.zeros(parts, dtype=np.int64)
    I = len(members)
    npg = n if dist else P
    kinds = {m[2] for m in members}
    pols = [m[1] for m in members]
    A1 = max([pl.max_age + 1 for pl in pols if hasattr(pl, "max_age")] or [1])
    W = max([pl.window for pl in pols if hasattr(pl, "window")] or [1])
    NB = max([pl.neighbours for pl in pols if hasattr(pl, "neighbours")] or [1])
    ist = np.zeros((I, N_I), np.int64)
    fst = np.zeros((I, N_F), np.float64)
    for i, pol, k, q in members:
        _fill(ist, fst, i, pol, k, q * n if dist else 0, npg, int(caps[q]), P, enter)
    ipg = np.zeros((I, R_OCC + NB + 1, npg), np.int64)
    ipg[:, R_LASTTOK] = _NEVER
    ipg[:, R_BEFORE] = _NEVER
    fpg = np.zeros((I, 2, npg) if kinds & {DECAY, MATCH} else (I, 2, 1))
    hz = np.zeros((I, 2, npg, A1) if HAZARD in kinds else (I, 2, 1, 1))
    hzl = np.zeros((I, 3, L, A1) if HAZARD in kinds else (I, 3, 1, 1))
    # 0/1 in bytes: a page's row of W tokens is read whole (the similarities), a token's
    # column across the pages (the match's values) at a stride of W bytes, in cache
    hist = np.zeros((I, npg, W) if MATCH in kinds else (I, 1, 1), np.int8)
    histt = np.zeros((I, W, npg) if MATCH in kinds else (I, 1, 1), np.int8)  # its transpose
    # similarities |U ∩ U_s| <= npg: 16 bits where that fits (twice the lanes per addition)
    sim = np.zeros((I, W) if MATCH in kinds else (I, 1), np.int16 if npg < 32767 else np.int32)
    mcols = np.zeros((I, 4, NB), np.int64)  # rows 0, 1: the matches; 2, 3: _match's scratch
    scr = np.zeros((8, max(P, 16)))  # rows 0-6: _decay_end's; row 7: small scratch
    fc = np.zeros((I, 3, npg))
    layer_of = np.arange(P, dtype=np.int64) // n
    S = (ist, fst, ipg, fpg, hz, hzl, hist, sim, mcols, scr, fc, layer_of, histt)
    for i, _, k, _ in members:
        if k == HAZARD:
            _hazard_prior(S, i)
    return S, margins


def cache_state(P: int, parts: int) -> tuple:
    """A cold cache of :func:`token_kernel` over ``parts`` partitions of P pages: ``resident``,
    ``room`` (what each resident page takes), ``used``, each partition's list of residents
    (``clist``, ``cpos``, ``ccount``), ``pin`` stamps, the bypass rule's ``hseen``, the pass of
    each page's last eviction, ``page_miss``, the combiner's last request of each page and of
    each partition, its ``leader`` and ``switches``, the counters ``cnt`` (the next pin stamps,
    the groups served, 1 for a carried run with a prefetch plan, whose pending prefetches
    count as wasted only when it ends: :class:`CarriedPhases`, where in the plan the part
    of the last group's batch not yet inserted starts, and 1 when a call inserts the batch
    after its own last group), the substitute's request counts and the pending prefetches."""
    i64 = np.int64
    return (np.zeros(P, np.bool_), np.zeros(P, i64), np.zeros(parts, i64),
            np.zeros((parts, P), i64), np.zeros(P, i64), np.zeros(parts, i64),
            np.full(P, -1, i64), np.full(P, -1, i64), np.full(P, -1, i64), np.zeros(P, i64),
            np.full(P, -1, i64), np.full(parts, -1, i64), np.zeros(parts, i64),
            np.zeros(parts, i64), np.zeros(6, i64), np.zeros(P, i64), np.zeros(P, np.bool_))


def _start(spec, lay, caps, slots, enter):
    """``(S, margins, C)`` of a run from its first request (:func:`setup`,
    :func:`cache_state`); the combiner's margin ``k`` is the most pages a partition holds."""
    _, kind, dist = spec
    S, margins = setup(spec.proto, kind, lay, caps, dist, enter)
    if kind == ROBUST and spec.proto.margin == "k":
        margins = caps // int(np.min(slots))
    return S, margins, cache_state(lay.n_pages, caps.size)


class Carried:
    """A token-policy run fed piece by piece (a serving run's steps: :class:`paging.fast.
    CarriedRun`), each piece cut between two groups, one token per walk over the layers
    (``steps // ℓ``, one visit per token: what a run without the trace's tokens reads, as a
    serving run's reference loop does). Every call serves its piece from the cache the last
    one left. A bound that fails in a piece (BOUNDED mode, :func:`execute`) redoes the whole
    run so far with the next margin, then with exact sums: the pieces are kept for that (24
    bytes a request), and the earlier pieces' decisions, the reference's either way, are
    unchanged. :meth:`feed` returns the piece's tuple of :mod:`paging.fast.common` (its hit
    mask, its misses, collisions and bypasses; ``page_miss``: the run's totals so far)."""

    #: the run's counters summed over the pieces: misses, collisions, bypasses
    N_COUNTS = 3

    def __init__(self, layout, spec, caps: np.ndarray, slots: np.ndarray):
        self.layout, self.spec, self.caps, self.slots = layout, spec, caps, slots
        self.tries = list(ENTER)
        self.enter = self.tries.pop(0)  # the margin of the run so far (None: exact sums)
        self._begin()
        self.req = SoFar(3)  # pages, steps, tokens
        self.totals = np.zeros(self.N_COUNTS, np.int64)  # the counters so far

    def _begin(self) -> None:
        """A cold run's state with the margin ``enter``."""
        self.S, self.margins, self.C = _start(self.spec, self.layout, self.caps, self.slots,
                                              self.enter)

    def _phases(self):
        """:func:`token_kernel`'s ``phases`` (None: a plain run)."""
        return None

    def _call(self, lo: int, record: int):
        lay, req = self.layout, self.req
        # the pages writable (a routed run writes them), the rest read-only (the slots are
        # CarriedRun's): the signature of a whole run's call (common.frozen)
        return token_kernel(req.row(0), frozen(req.row(1)), frozen(req.row(2)), 1,
                            self.slots, lay.n_experts,
                            lay.n_layers, self.caps, self.spec[2], self.spec[1] == ROBUST,
                            self.margins, self.S, record, self.C, _NO_ROUTE, self._phases(),
                            lo)

    def _counts(self, out) -> np.ndarray:
        return np.array([out[0], out[1], out[7]], np.int64)

    def _serve(self, lo: int, record: int):
        """The kernel's tuple for the requests from ``lo`` on, and whether the run so far was
        redone (the tuple then holds the whole run's logs), the counters of the piece."""
        out = self._call(lo, record)
        redone = bool(self.S[0][0, I_ABORT])
        while self.S[0][0, I_ABORT]:  # redo the run so far, the pieces as one
            self.enter = self.tries.pop(0) if self.tries else None
            self._begin()
            out = self._call(0, record)
        whole = self._counts(out) + (0 if redone else self.totals)
        piece = whole - self.totals
        self.totals = whole
        return out, redone, piece

    def feed(self, pages, steps, hits: bool = False):
        """Serve the next piece; its hit mask (the fourth item) is filled when ``hits``."""
        record = 1 if hits else 0
        lo = self.req.append(pages, steps,
                             np.asarray(steps, dtype=np.int64) // self.layout.n_layers)
        out, redone, piece = self._serve(lo, record)
        # (the logs are empty: record <= 1)
        return (int(piece[0]), int(piece[1]), out[2], out[3][lo:] if record and redone
                else out[3], out[4], out[5], out[6], int(piece[2]))


class Streamed:
    """A token-policy run fed a stream's chunks (:mod:`paging.stream`), memory bounded by its
    state and one chunk: unlike :class:`Carried`, it does not keep the requests so far. Each
    call serves one chunk (cut between two groups) as a carried call of :func:`token_kernel`
    on the chunk alone, behind one placeholder request (``t_lo`` = 1: never served, it makes
    the call a carried one). The request indices the state keeps (each page's and each
    partition's last request, the combiner's LRU instances' last uses) are moved by the
    chunk before's length first, so they keep their order and their distances to the
    requests to come, as in one call over the whole trace.

    ``enter``: the margin of the run (:data:`ENTER`; None: exact sums throughout, which never
    fail). A bound that fails sets :attr:`failed` and the run ignores the rest of its chunks:
    the stream, which did not keep them, reads the sequence again with a new run at the next
    margin (:func:`paging.stream.stream_run`). The decisions are the reference's whatever the
    margin. ``token`` (a chunk's token ids, ``visits`` per token: the trace's top-K in rounds
    mode) or one token per walk over the layers (``steps // ℓ``), as :func:`execute` reads a
    trace with or without tokens."""

    def __init__(self, layout, spec, caps: np.ndarray, slots: np.ndarray, enter,
                 visits: int = 1):
        self.layout, self.spec, self.caps, self.slots = layout, spec, caps, slots
        self.enter, self.visits = enter, int(visits)
        self.S, self.margins, self.C = _start(spec, layout, caps, slots, enter)
        self.totals = np.zeros(3, np.int64)  # misses, collisions, bypasses
        self.shift = 0  # the length of the chunk before (the indices kept move by it)
        self.failed = False
        self.n = 0  # the requests served

    def feed(self, pages, steps, token=None, record: int = 0):
        """Serve the next chunk: the kernel's tuple of :mod:`paging.fast.common` for it, its
        request indices counted in the chunk (``record``: 1 the hit mask, 2 the logs too), or
        None once a bound has failed (:attr:`failed`)."""
        if self.failed:
            return None
        lay = self.layout
        m = len(pages)
        P = np.empty(m + 1, np.int64)  # (the placeholder: request 0, never served)
        P[1:] = pages
        P[0] = P[1] if m else 0
        St = np.empty(m + 1, np.int64)
        St[1:] = steps
        St[0] = St[1] if m else 0
        Tk = St // lay.n_layers if token is None else np.r_[np.int64(0), token].astype(np.int64)
        if self.shift:
            C, ipg = self.C, self.S[2]
            C[10][:] -= self.shift  # rlast
            C[11][:] -= self.shift  # seen
            ipg[:, R_VLAST, :] -= self.shift
        out = token_kernel(P, frozen(St), frozen(Tk), self.visits, self.slots, lay.n_experts,
                           lay.n_layers, self.caps, self.spec[2], self.spec[1] == ROBUST,
                           self.margins, self.S, record, self.C, _NO_ROUTE, None, 1)
        if self.S[0][0, I_ABORT]:
            self.failed = True
            return None
        self.shift = m
        self.n += m
        self.totals += np.array([out[0], out[1], out[7]], np.int64)
        if record >= 2:  # (the logs' request indices: the window's, one ahead of the chunk's)
            ev, byp = out[4][:out[5]], out[6][:out[7]]
            ev = ev.copy()
            ev[:, 0] -= 1
            return (*out[:4], ev, out[5], byp - 1, out[7])
        return out


class CarriedPhases(Carried):
    """A token-policy run with SpecMD's phases fed step by step (a serving run's steps with a
    prefetcher or a miss handler: the interface of :class:`paging.fast.carried_phases.
    CarriedPhases`, which runs every other policy): ``substitute`` serves a miss with the
    most requested resident expert of its layer, ``drops`` and ``levels``: each piece gives
    its requests' drop flags and fetch levels (their room ``level_slots[level, p]``),
    ``prefetch``: each piece gives the
    prefetch batches after its groups, the one after its last group coming with the next
    piece (``across``), inserted before that piece's first request as :func:`token_kernel`
    resumes, or with the piece itself when it closes (``close``: inserted in the same call).
    The plan and the levels are kept with the pieces (a redone run reads them)."""

    #: misses, collisions, bypasses; the prefetches made, useful, wasted, skipped, bytes
    N_COUNTS = 8

    def __init__(self, layout, spec, caps: np.ndarray, slots: np.ndarray, sizes=None, *,
                 substitute: bool = False, level_slots=None, prefetch: bool = False,
                 drops: bool = False, levels: bool = False):
        from paging.weights import unit_sizes

        P = layout.n_pages
        self.substitute, self.prefetch = bool(substitute), prefetch
        # per-request drop flags and fetch levels, given with each piece (feed's act, lvl)
        self.drops, self.levels = bool(drops), bool(levels)
        self.acts = SoFar(1, np.int8)
        # (writable, as run_phases gives them: the compiled signature of a whole run's call)
        self.sizes = np.array(unit_sizes(P) if sizes is None else sizes, dtype=np.int64)
        self.level_slots = np.array(np.zeros((1, P)) if level_slots is None else level_slots,
                                    dtype=np.int64)
        self.plan = SoFar(1)  # the prefetch pages, batch after batch
        self.bounds = SoFar(1)  # batch g: plan[bounds[g]:bounds[g + 1]] (pf_start)
        if prefetch:
            self.bounds.append(np.zeros(1, np.int64))
        self.done = None
        self.closing = False  # the piece being served brings the batch after its last group
        super().__init__(layout, spec, caps, slots)
        if levels:
            self.req = SoFar(4)  # pages, steps, tokens, levels

    def _begin(self) -> None:
        super()._begin()
        self.C[14][3] = 1 if self.prefetch else 0  # the pending prefetches counted at the end

    def _phases(self):
        req = self.req
        return (self.bounds.row(0), self.plan.row(0), self.sizes,
                self.acts.row(0) if self.drops else _NO_ACT,
                req.row(3) if self.levels else _NO_LEVEL, self.level_slots,
                self.substitute)

    def _counts(self, out) -> np.ndarray:
        return np.r_[out[0], out[1], out[7], out[10]].astype(np.int64)

    @property
    def t(self) -> int:
        """The requests fed so far."""
        return self.req.n

    def resident(self) -> np.ndarray:
        """Each page's residency now (bool, one per page), as the last piece left it (a
        routing hook reads it between two pieces)."""
        return self.C[0]

    def _call(self, lo: int, record: int):
        self.C[14][5] = self.closing  # (a redone run too: its last piece's)
        return super()._call(lo, record)

    def feed(self, pages, steps, batches=(), across=None, act=None, lvl=None, close=None):
        """:meth:`paging.fast.carried_phases.CarriedPhases.feed`: ``(hits, outcome, subst,
        pf_rows)`` of the piece (``act``, ``lvl``: its drop flags and fetch levels, in a run
        made with ``drops``, ``levels``; ``close``: the batch after its last group, inserted
        in the call)."""
        if close is not None and not len(pages):
            raise ValueError("a piece without pages has no group to close")
        if (close is not None or across is not None and len(across)) and not self.prefetch:
            raise ValueError("prefetch batches in a run without prefetching")
        self.closing = close is not None
        pages = np.asarray(pages, dtype=np.int64)
        steps = np.asarray(steps, dtype=np.int64)
        cols = [pages, steps, steps // self.layout.n_layers]
        if self.levels:
            cols.append(lvl)
        if self.drops:
            self.acts.append(act)
        if self.prefetch:
            n_groups = int(np.count_nonzero(np.diff(steps))) + 1 if pages.size else 0
            a, b_sizes, b_pages = piece_plan(batches, across, n_groups, close)
            if self.req.n:  # the batch after the last group so far: ``a`` more of it (what
                self.C[14][4] = self.plan.n  # the calls before inserted is not inserted again)
                self.plan.append(a)
                self.bounds.a[0, self.bounds.n - 1] = self.plan.n
            base = self.plan.n
            self.plan.append(b_pages)
            ends = b_sizes if self.closing else np.concatenate((b_sizes, (0,)))
            self.bounds.append(base + np.cumsum(ends)[:n_groups])
        lo = self.req.append(*cols)
        out, redone, _ = self._serve(lo, 1)
        at = lo if redone else 0
        rows = out[11][:out[12]]
        if redone:
            rows = rows[rows[:, 0] >= lo]
        subst = out[9][at:] if self.substitute else np.full(pages.size, -1, np.int64)
        return out[3][at:].copy(), out[8][at:].copy(), subst.copy(), rows.copy()

    def finish(self) -> dict:
        """:meth:`paging.fast.carried_phases.CarriedPhases.finish`: the run's counters (the
        prefetches still pending count as wasted)."""
        if self.done is None:
            c = [int(x) for x in self.totals]
            c[5] += int(self.C[16].sum()) if self.prefetch else 0
            self.done = dict(zip(("misses", "collisions", "bypasses", "prefetches", "useful",
                                  "wasted", "skipped", "bytes"), c, strict=True))
        return self.done


_NO_ACT = np.zeros(0, np.int8)
_NO_LEVEL = np.zeros(0, np.int64)


def execute(trace, spec, slots, capacity: int, record: int, policy=None, *,
            bounded: bool = True, info: dict | None = None, route=None, served=None,
            phases=None):
    """Run the kernel of ``spec`` (:func:`paging.fast.plan`: its ``proto`` carries the
    parameters) on ``trace``; ``slots[p]`` is the room page p takes in ``capacity``. A shared
    combiner given as ``policy`` ends with the run's ``leader`` and ``switches``, as after a
    reference run (its virtual ``sims`` exist only in the reference loop).

    token-decay's and token-match's log-losses are summed exactly until they decide the
    posterior weights by the first margin of :data:`ENTER`, then (``bounded``) within a bound
    (:func:`_losses_paid`); if a bound stops deciding them the run is redone with the next
    margin, and after the last with exact sums throughout, so the decisions are the reference's
    either way. ``info``, if given, receives ``bounded`` (the token ends scored within a bound,
    in the run returned), ``beta_bounded`` (token-match's token ends with only its β rows within
    a bound, BETA mode), ``beta_losses`` (each instance's β log-losses at the end, rows of
    :func:`setup`'s instances), ``redone`` (whether a bound failed) and ``enter`` (the
    margin of the run returned, None for exact sums).

    A routed run (:func:`paging.fast.routing.run_routed`) gives ``route`` (the kernel's) and
    ``served``, an array of the trace's length that receives the served pages (the kernel
    routes over a copy of the trace's pages; a redone run starts again from the trace's).

    ``phases`` (:func:`token_kernel`'s, from :func:`paging.fast.phases.run_phases`): a run with
    prefetching or miss handling, which returns :func:`token_kernel`'s whole tuple; without
    it, the first eight (:mod:`paging.fast.common`'s)."""
    _, kind, dist = spec
    lay = trace.layout
    caps = lay.dist_shares(capacity) if dist else np.array([capacity], dtype=np.int64)
    from paging.trace import token_visits

    # TokenPolicy: the trace's tokens and K visits per token, else one walk (steps // ℓ) each
    if trace.token is not None:
        token, visits = trace.token, max(token_visits(trace), 1)
    else:
        token, visits = trace.passes, 1
    redone = False
    tries = list(ENTER) if bounded else []
    while True:
        enter = tries.pop(0) if tries else None
        S, margins, C = _start(spec, lay, caps, slots, enter)
        # a writable copy of the pages (a routed run writes the served ones over them; numba
        # types the write for every run)
        pages = np.array(trace.pages, dtype=np.int64)
        rt = _NO_ROUTE if route is None else route
        out = token_kernel(pages, frozen(trace.steps), frozen(token), visits, frozen(slots),
                           lay.n_experts, lay.n_layers, caps, dist, kind == ROBUST, margins, S,
                           record, C, rt, phases, 0)
        if not S[0][0, I_ABORT]:
            break
        redone = True
    if served is not None:
        served[:] = pages
    if info is not None:
        info["bounded"] = int(S[0][:, I_NAPX].sum())
        info["beta_bounded"] = int(S[0][:, I_NBAPX].sum())
        # token-match's β losses of each instance at the end (exact in a run with exact sums;
        # within the radius, less what its kept products owe, in a bounded one)
        info["beta_losses"] = S[1][:, F_BLOSS:F_BLOSS + 5].copy()
        info["redone"] = redone
        info["enter"] = enter
    if policy is not None and kind == ROBUST and not dist:
        policy.leader, policy.switches = int(C[12][0]), int(C[13][0])
    return out if phases is not None else out[:8]
