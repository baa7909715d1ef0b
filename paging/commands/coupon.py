"""``paging coupon --n N --collectors C [--exact | --mc --trials T --seed S] [--json]``.

The cover time E[T(N, C)] of the parallel coupon collector (:mod:`paging.coupon`) next to
Theorem 5's lower bound ``max(N·H_N, log(C)/6)`` (Angelopoulos et al., Sec. 3.2). Methods:

* default ``series``: the numerically exact series (floating point, truncation < 1e-15 relative);
* ``--exact``: exact rational arithmetic (small N and C only), printed also as a fraction;
* ``--mc``: Monte Carlo over ``--trials`` runs seeded by ``--seed``, with a 95% CLT interval.
"""

from __future__ import annotations

import argparse
import sys
from fractions import Fraction

from paging.options import int64, seed


def add_parser(sub) -> None:
    p = sub.add_parser("coupon", help="parallel coupon collector: cover time vs Theorem 5",
                       description="Expected number of rounds E[T(N,C)] until each of C "
                       "independent collectors holds all N coupon types, and Theorem 5's "
                       "lower bound max(N*H_N, log(C)/6).")
    p.add_argument("--n", type=int64, required=True, metavar="N", help="coupon types (>= 1)")
    p.add_argument("--collectors", type=int64, required=True, metavar="C",
                   help="independent collectors (>= 1)")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--exact", action="store_true",
                     help="exact rational arithmetic (small N, C)")
    how.add_argument("--mc", action="store_true", help="Monte Carlo estimate with a 95%% CI")
    p.add_argument("--trials", type=int64, default=None, metavar="T",
                   help="Monte Carlo trials (default 10000; only with --mc)")
    p.add_argument("--seed", type=seed, default=None, metavar="S",
                   help="Monte Carlo seed (default 0; only with --mc)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def fraction_text(value: Fraction) -> str:
    """``"p/q"`` in decimal. An exact cover time may have 10^5 digits, beyond Python's limit on
    int-to-str conversion (3.11+); the limit is lifted for this conversion only."""
    get_limit = getattr(sys, "get_int_max_str_digits", None)
    if get_limit is None:  # Python without the limit
        return f"{value.numerator}/{value.denominator}"
    old = get_limit()
    sys.set_int_max_str_digits(0)
    try:
        return f"{value.numerator}/{value.denominator}"
    finally:
        sys.set_int_max_str_digits(old)


def result(args: argparse.Namespace) -> dict:
    """The JSON record of one ``paging coupon`` call (N, C, trials and seed are validated by
    :mod:`paging.coupon`)."""
    import math

    from paging import coupon
    from paging.errors import PagingError

    n, c = args.n, args.collectors
    if not args.mc and (args.trials is not None or args.seed is not None):
        raise PagingError("--trials and --seed apply only to --mc")
    rec: dict = {"n": n, "collectors": c}
    if args.mc:
        trials = 10_000 if args.trials is None else args.trials
        seed = 0 if args.seed is None else args.seed
        mean, lo, hi = coupon.monte_carlo_cover_time(n, c, trials, seed)
        rec.update(method="monte-carlo", expected=mean,
                   ci_low=None if math.isnan(lo) else lo,
                   ci_high=None if math.isnan(hi) else hi, trials=trials, seed=seed)
    elif args.exact:
        value = coupon.expected_cover_time_exact(n, c)
        rec.update(method="rational", expected=float(value),
                   expected_fraction=fraction_text(value))
    else:
        rec.update(method="series", expected=coupon.expected_cover_time(n, c))
    if n >= 2:
        bound = coupon.theorem5_bound(n, c)
        rec.update(bound=bound, n_h_n=coupon.n_harmonic(n),
                   log_c_over_6=math.log(c) / 6, margin=rec["expected"] - bound)
    else:  # Theorem 5 assumes N >= 2 (T(1, C) = 1 for every C)
        rec.update(bound=None, n_h_n=1.0, log_c_over_6=math.log(c) / 6, margin=None,
                   note="Theorem 5 assumes N >= 2")
    return rec


def run(args: argparse.Namespace) -> int:
    from paging.cli import print_json

    rec = result(args)
    if args.json:
        print_json(rec)
        return 0
    lines = [f"N = {rec['n']} coupon types, C = {rec['collectors']} collectors"]
    if rec["method"] == "monte-carlo":
        ci = ("no interval with one trial" if rec["ci_low"] is None
              else f"95% CI [{rec['ci_low']:.6g}, {rec['ci_high']:.6g}]")
        lines.append(f"E[T(N,C)] ~ {rec['expected']:.6g}  (Monte Carlo, {rec['trials']} trials, "
                     f"seed {rec['seed']}; {ci})")
    elif rec["method"] == "rational":
        frac = rec["expected_fraction"]
        if len(frac) > 200:  # the whole fraction is in --json
            num, den = frac.split("/")
            frac = f"({len(num)}-digit integer)/({len(den)}-digit integer)"
        lines.append(f"E[T(N,C)] = {frac} = {rec['expected']:.15g}  (exact)")
    else:
        lines.append(f"E[T(N,C)] = {rec['expected']:.15g}  (series, truncation < 1e-15 rel.)")
    if rec["bound"] is None:
        lines.append("Theorem 5 bound: not applicable (it assumes N >= 2)")
    else:
        lines.append(f"Theorem 5 bound max(N*H_N, log(C)/6) = max({rec['n_h_n']:.15g}, "
                     f"{rec['log_c_over_6']:.6g}) = {rec['bound']:.15g}; margin "
                     f"{rec['margin']:.6g}")
    print("\n".join(lines))
    return 0
