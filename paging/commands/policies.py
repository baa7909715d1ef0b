"""``paging policies [--json]``: every registered policy with its properties.

Properties are read from the policy objects (one instance per name), never kept in a second
list: ``clairvoyant`` and ``randomized`` (class flags), ``needs_scores`` and ``needs_model``
(class attributes, default False: a policy that reads gate scores, or a trained model, sets
them), ``needs_predictor`` (the prediction-based policies; they accept ``NAME:PREDICTOR``),
``has_kernel`` (:func:`paging.fast.has_kernel`: a compiled kernel reproduces it), ``weighted``
(it reads the per-page costs or sizes: GreedyDual, Landlord, GDSF, Layered Landlord), ``dist``
(a per-layer variant) and a one-line ``description`` (the first sentence of the class
docstring) with its ``reference`` (the class's own ``reference`` attribute).
"""

from __future__ import annotations


def add_parser(sub) -> None:
    p = sub.add_parser("policies", help="list the registered policies and their properties",
                       description="List every registered policy name with its properties: "
                       "online or clairvoyant, randomized, needs gate scores, needs a trained "
                       "model, needs a predictor, has a compiled kernel, weighted (reads costs "
                       "or sizes), and a one-line description with its reference.")
    p.add_argument("--json", action="store_true",
                   help="print a JSON list with one object per policy")
    p.set_defaults(func=run)


_ABBREV = ("al", "Fig", "Sec", "App", "Alg", "Def", "Thm", "e.g", "i.e", "cf", "vs")


def _first_sentence(doc: str | None) -> str:
    """The first sentence of a docstring's first paragraph (abbreviations such as "et al." and
    "Sec." do not end it, nor a period inside parentheses, such as a quotation's "...")."""
    para = " ".join((doc or "").strip().split("\n\n")[0].split())
    start = 0
    while True:
        i = para.find(". ", start)
        if i < 0:
            return para
        word = para[:i].rsplit(" ", 1)[-1].lstrip("(")
        if (word not in _ABBREV and not word[-1:].isupper()
                and para[:i].count("(") <= para[:i].count(")")):
            return para[: i + 1]
        start = i + 1


def describe(name: str) -> dict:
    """The property record of one registered policy name."""
    from paging.fast import has_kernel
    from paging.policies import PerLayer, make_policy
    from paging.policies.weighted import GreedyDual

    pol = make_policy(name)
    dist = isinstance(pol, PerLayer)
    proto = pol.factory() if dist else pol
    import sys

    desc = _first_sentence(type(proto).__doc__
                           or sys.modules[type(proto).__module__].__doc__)
    if dist:
        desc = f"per-layer (DIST) variant: {desc}"
    return {
        "name": name,
        "online": not pol.clairvoyant,
        "clairvoyant": bool(pol.clairvoyant),
        "randomized": bool(pol.randomized),
        "needs_scores": bool(getattr(proto, "needs_scores", False)),
        "needs_model": bool(getattr(proto, "needs_model", False)),
        "needs_predictor": bool(getattr(proto, "needs_predictor", False)),
        "has_kernel": bool(has_kernel(pol)),
        "weighted": isinstance(proto, GreedyDual) or bool(getattr(proto, "weighted", False)),
        "dist": dist,
        "description": desc,
        "reference": type(proto).reference,
    }


def policy_records() -> list[dict]:
    """One record per registered name, in registry order, then the model policies."""
    from paging.policies import MODEL_POLICIES, POLICY_NAMES

    return [describe(n) for n in POLICY_NAMES + tuple(MODEL_POLICIES)]


def run(args) -> int:
    from paging.cli import print_json

    records = policy_records()
    if args.json:
        print_json(records)
        return 0
    flags = ("clairvoyant", "randomized", "needs_scores", "needs_model", "needs_predictor",
             "has_kernel", "weighted")
    short = ("clairv", "random", "scores", "model", "predictor", "kernel", "weighted")
    width = max(len(r["name"]) for r in records)
    print(f"{'policy':<{width}}  " + " ".join(f"{s:>9}" for s in short) + "  description")
    for r in records:
        cells = " ".join(f"{'yes' if r[f] else '-':>9}" for f in flags)
        ref = f" [{r['reference']}]" if r["reference"] else ""
        print(f"{r['name']:<{width}}  {cells}  {r['description']}{ref}")
    return 0
