"""Synthetic sequences (paging.generators): exact cyclic pages, determinism, Zipf frequencies
against p_j ~ 1/(j+h)^a (Angelopoulos et al., Sec. 5.1), spec strings and their errors."""

from __future__ import annotations

import numpy as np
import pytest

from paging.errors import PagingError
from paging.generators import cyclic, parse_spec, uniform, zipf, zipf_weights
from paging.layout import Layout
from paging.trace import Trace


def test_cyclic_exact_pages():
    # Theorem 3: round i requests expert i mod n of every layer; page = layer * n + expert
    t = cyclic(2, 3, 3)
    assert t.layout == Layout(2, 3)
    assert t.pages.tolist() == [0, 2, 4, 1, 3, 5, 0, 2, 4]
    assert t.steps.tolist() == list(range(9)) and t.expand == "rounds"
    assert t.meta["n_tokens"] == 3 and t.meta["top_k"] == 1


def test_spec_equals_function_call():
    (a,) = parse_spec("zipf:n=8,layers=4,tokens=50,a=1.2,h=1,seed=3")
    b = zipf(8, 4, 50, a=1.2, h=1.0, seed=3)
    assert a.name == "zipf:n=8,layers=4,tokens=50,a=1.2,h=1,seed=3"
    assert np.array_equal(a.pages, b.pages)
    (c,) = parse_spec("uniform:n=4,layers=8,tokens=500,seed=1")
    assert c.n_requests == 4000 and np.array_equal(c.pages, uniform(4, 8, 500, seed=1).pages)
    (d,) = parse_spec("cyclic:n=4,layers=8,rounds=100", expand="groups")
    assert d.n_requests == 800 and d.expand == "groups"


@pytest.mark.parametrize("make", [
    lambda s: zipf(8, 4, 300, seed=s),
    lambda s: zipf(8, 4, 300, seed=s, topk=3),
    lambda s: uniform(5, 3, 300, seed=s),
    lambda s: uniform(5, 3, 300, seed=s, topk=2, expand="groups"),
])
def test_determinism(make):
    a, b, c = make(7), make(7), make(8)
    assert np.array_equal(a.pages, b.pages) and np.array_equal(a.steps, b.steps)
    assert not np.array_equal(a.pages, c.pages)


def test_valid_layered_traces_and_topk_distinct():
    t = zipf(6, 3, 200, topk=3, seed=1, expand="groups")
    # rebuilding through the validating constructor raises if the layered order were wrong
    Trace(t.layout, t.pages, t.steps, expand="groups")
    table = t.pages.reshape(200, 3, 3) % 6
    assert all(len(set(row)) == 3 for row in table.reshape(-1, 3).tolist())
    assert t.n_requests == 200 * 3 * 3 and t.meta["top_k"] == 3


def test_generated_arrays_are_adopted_without_copy():
    t = zipf(8, 32, 100, seed=5)
    assert not t.pages.flags.writeable
    again = Trace(t.layout, t.pages, t.steps)  # the validating constructor adopts frozen arrays
    assert again.pages is t.pages and again.steps is t.steps


def _layer_freqs(t: Trace) -> np.ndarray:
    n, L = t.layout.n_experts, t.layout.n_layers
    counts = np.bincount(t.pages, minlength=n * L).reshape(L, n)
    return counts / counts.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("a,h", [(1.0, 0.0), (1.5, 2.0), (0.0, 0.0)])
def test_zipf_identity_frequencies(a, h):
    # 200,000 draws per layer: the standard error of a frequency is at most
    # sqrt(0.25 / 200000) = 0.0011, so 0.006 is over 5 standard errors (false alarm < 1e-6 per
    # cell), while a wrong exponent (a vs a + 0.1) moves p_1 by more than 0.01.
    t = zipf(8, 2, 200_000, a=a, h=h, seed=11, perm="identity")
    p = (np.arange(1, 9) + h) ** -a
    p /= p.sum()
    assert np.allclose(zipf_weights(8, a, h), p)
    assert np.abs(_layer_freqs(t) - p[None, :]).max() < 0.006


def test_zipf_weights_when_every_power_underflows():
    """(j+h)^-a is 0 in float64 for every rank once a·ln(1+h) > 745: the weights were 0/0 = NaN
    and every request went to expert 0. With h = 10^6 - 1 and a = 10^6·ln 2 the weight ratio of
    rank j to rank 1 is (1 + (j-1)/10^6)^-a = 2^-(j-1) to within a·49/(2·10^12) < 2·10^-5, so
    n = 8 gives p = (128, 64, 32, 16, 8, 4, 2, 1)/255."""
    import warnings

    h, a = 10**6 - 1.0, 10**6 * np.log(2.0)
    expected = np.array([128, 64, 32, 16, 8, 4, 2, 1]) / 255
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (0/0 warned "invalid value encountered in divide")
        assert np.allclose(zipf_weights(8, a, h), expected, rtol=1e-4, atol=0)
        t = zipf(8, 2, 20_000, a=a, h=h, seed=0, perm="identity")
    # 20,000 draws per layer: standard error <= 0.0036, tolerance 0.02 = 5.6 standard errors
    assert np.abs(_layer_freqs(t) - expected[None, :]).max() < 0.02


def test_zipf_topk_with_weights_below_float64_follows_the_ranks():
    """At a = 400, n = 8 the weights of ranks 6..8 (6^-400 = 1.6e-311 and below) are subnormal
    or 0, so their keys E/q were inf (with divide and overflow warnings) and the stable sort
    put them in expert-id order. Their true order is the rank order except with probability
    below (8/7)^-300 < 10^-17, the same as at a = 300, where every key is finite: the same
    seed (the same permutations) must give the same trace."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        big = zipf(8, 3, 20, a=400.0, topk=8, seed=0, expand="groups")
    ref = zipf(8, 3, 20, a=300.0, topk=8, seed=0, expand="groups")
    assert np.array_equal(big.pages, ref.pages)


def test_zipf_random_permutation_per_layer():
    # 100,000 draws per layer: standard error <= 0.0016, tolerance 0.008 = 5 standard errors
    t = zipf(8, 4, 100_000, a=1.0, seed=2)
    f = _layer_freqs(t)
    p = zipf_weights(8, 1.0)
    # each layer follows the Zipf law up to a relabelling of its experts ...
    assert np.abs(np.sort(f, axis=1)[:, ::-1] - p[None, :]).max() < 0.008
    # ... and the favourite expert is not the same in every layer for this seed
    assert len(set(np.argmax(f, axis=1).tolist())) > 1


def test_zipf_topk_draw_order_frequencies():
    # successive sampling without replacement: the first draw has law p; the second draw is j
    # with probability sum_{i != j} p_i p_j / (1 - p_i). Tolerance 0.008 = 5 standard errors of
    # a frequency over 100,000 tokens.
    n, T = 5, 100_000
    t = zipf(n, 1, T, topk=2, seed=4, perm="identity")
    p = zipf_weights(n, 1.0)
    first = np.bincount(t.pages[0::2], minlength=n) / T
    second = np.bincount(t.pages[1::2], minlength=n) / T
    q2 = np.array([sum(p[i] * p[j] / (1 - p[i]) for i in range(n) if i != j) for j in range(n)])
    assert np.abs(first - p).max() < 0.008 and np.abs(second - q2).max() < 0.008
    assert (t.pages[0::2] != t.pages[1::2]).all()


# -- chi-square goodness of fit (fixed seeds, so each is a fixed pass/fail; a p-value below
# 1e-3 would mean the law is not the documented one, e.g. a in place of a + 0.05 at n = 8 and
# 100,000 draws gives a p-value below 1e-6)
@pytest.mark.parametrize("n,a,h", [(8, 1.0, 0.0), (33, 1.2, 0.0), (34, 1.2, 0.0), (50, 0.7, 3.0)])
def test_zipf_pmf_chi_square(n, a, h):
    # n <= 33 draws by n - 1 comparisons, n > 33 by binary search: both against p_j
    from scipy.stats import chisquare

    T = 100_000
    t = zipf(n, 2, T, a=a, h=h, seed=21, perm="identity")
    p = zipf_weights(n, a, h)
    for z in range(2):
        counts = np.bincount(t.pages[z::2] - z * n, minlength=n)
        assert chisquare(counts, T * p).pvalue > 1e-3


def test_zipf_topk_ordered_pairs_chi_square():
    # successive sampling without replacement: (first, second) = (i, j) with probability
    # p_i p_j / (1 - p_i), never i = j
    from scipy.stats import chisquare

    n, T = 5, 100_000
    t = zipf(n, 1, T, a=1.3, h=0.5, topk=2, seed=4, perm="identity", expand="groups")
    p = zipf_weights(n, 1.3, 0.5)
    law = (p[:, None] * p[None, :] / (1 - p[:, None])).ravel()
    off = ~np.eye(n, dtype=bool).ravel()
    counts = np.bincount(t.pages[0::2] * n + t.pages[1::2], minlength=n * n)
    assert counts[~off].sum() == 0
    assert chisquare(counts[off], T * law[off]).pvalue > 1e-3


def test_zipf_favourite_expert_uniform_over_layers():
    # perm="random": each layer's rank-1 expert is uniform over the n experts (a = 60 puts all
    # but 2^-60 of a layer's mass on rank 1, so one token shows every layer's favourite)
    from scipy.stats import chisquare

    L = 8000
    fav = zipf(8, L, 1, a=60.0, seed=3).pages % 8
    assert chisquare(np.bincount(fav, minlength=8)).pvalue > 1e-3


def test_uniform_chi_square():
    # Theorem 4's input, K = 1 per layer; top-3 ordered triples uniform over the 4·3·2 = 24
    from scipy.stats import chisquare

    T = 60_000
    t = uniform(6, 3, T, seed=9)
    for z in range(3):
        assert chisquare(np.bincount(t.pages[z::3] - 6 * z, minlength=6)).pvalue > 1e-3
    t = uniform(4, 2, T, seed=2, topk=3, expand="groups")
    tab = t.pages.reshape(T, 2, 3) % 4
    for z in range(2):
        idx = tab[:, z, 0] * 16 + tab[:, z, 1] * 4 + tab[:, z, 2]
        triples = np.bincount(idx, minlength=64)
        distinct = np.array([len({i // 16, i // 4 % 4, i % 4}) == 3 for i in range(64)])
        assert triples[~distinct].sum() == 0
        assert chisquare(triples[distinct]).pvalue > 1e-3


def test_uniform_frequencies():
    # Theorem 4's input; 100,000 draws per layer, tolerance 5 standard errors
    t = uniform(4, 3, 100_000, seed=9)
    assert np.abs(_layer_freqs(t) - 0.25).max() < 0.008


@pytest.mark.parametrize("spec,fragment", [
    ("zipf:n=8,layers=32,tokens=10,foo=1", "unknown key 'foo'"),
    ("zipf:n=8,layers=32", "missing tokens"),
    ("zipf:n=8,layers=32,tokens=-1", "tokens=-1 is not a non-negative integer"),
    ("zipf:n=8,layers=32,tokens=ten", "tokens=ten is not a non-negative integer"),
    ("zipf:n=8,layers=32,tokens=10,a=NaN", "a must be a finite number >= 0, got nan"),
    ("zipf:n=8,layers=32,tokens=10,a=-1", "a must be a finite number >= 0"),
    ("zipf:n=8,layers=32,tokens=10,h=x", "h=x is not a number"),
    ("zipf:n=8,layers=32,tokens=10,topk=9", "topk must be an integer in 1..8, got 9"),
    ("zipf:n=8,layers=32,tokens=10,perm=sorted", "perm must be one of random, identity"),
    ("uniform:n=0,layers=2,tokens=3", "n must be an integer >= 1, got 0"),
    ("cyclic:n=4,layers=8,rounds=100,seed=1", "unknown key 'seed'"),
    ("cyclic:n=4,layers=8,rounds", "is not key=value"),
    ("poisson:n=4", "unknown generator 'poisson'"),
    # no requests: simulate printed a miss ratio of 0.000000 for them, exit 0, where a trace
    # file without rows is refused
    ("zipf:n=8,layers=32,tokens=0", "tokens=0 gives no requests; expected tokens >= 1"),
    ("uniform:n=4,layers=2,tokens=0,topk=2", "tokens=0 gives no requests"),
    ("router:n=4,layers=2,tokens=0", "tokens=0 gives no requests"),
    ("cyclic:n=4,layers=8,rounds=0", "rounds=0 gives no requests; expected rounds >= 1"),
])
def test_spec_errors_name_the_spec(spec, fragment):
    with pytest.raises(PagingError) as e:
        parse_spec(spec)
    assert fragment in e.value.message and repr(spec) in e.value.message
    assert e.value.file is None


@pytest.mark.parametrize("spec,fragment", [
    # 2^-2000 is 0 in float64: log 0 warned "divide by zero", then the error blamed "the
    # logit of token 0, layer 0, expert 0 is -inf"
    ("router:n=8,layers=2,tokens=5,a=2000",
     "a=2000 makes the Zipf weight 1/j^a of the rarest of 8 experts 0 in float64"),
    # sigma·N(0,1) beyond 1.8e308 is inf: an "invalid value" warning, then the same error
    ("router:n=8,layers=2,tokens=5,sigma=1e308", "sigma=1e+308 overflows the logits"),
])
def test_router_parameters_beyond_float64_are_one_error(spec, fragment):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(PagingError) as e:
            parse_spec(spec)
    assert fragment in e.value.message and repr(spec) in e.value.message


def test_sizes_that_cannot_fit_in_memory_are_refused_up_front(capsys):
    """zipf with 10^12 tokens used to die with a MemoryError traceback: it is now one line that
    says how much memory the sequence needs, before anything is allocated."""
    from paging.cli import main

    rc = main(["simulate", "zipf:n=8,layers=32,tokens=1000000000000", "--policy", "lru",
               "--k", "4"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert "32,000,000,000,000 requests need about 512.0 TB" in err
    with pytest.raises(PagingError, match="requests need about"):
        uniform(n=4, layers=8, tokens=10**15)
    with pytest.raises(PagingError, match="requests need about"):
        cyclic(n=4, layers=8, rounds=10**15)


def test_zipf_tables_beyond_memory_are_refused_up_front(monkeypatch):
    """The per-layer popularity tables take 24 bytes per page whatever the number of tokens:
    n = 10^9 on two layers (48 GB) went straight into np.tile, a MemoryError or a process the
    system killed. Here: 10^7 x 2 pages = 480 MB against 100 MB available."""
    import paging.memory
    from paging.generators import zipf_chunks

    monkeypatch.setattr(paging.memory, "available", lambda: 100 * 10**6)
    msg = "n\\*layers = 20,000,000 pages need about 480.0 MB of memory for the per-layer Zipf"
    with pytest.raises(PagingError, match=msg):
        zipf(10**7, 2, 1)
    with pytest.raises(PagingError, match="expected fewer experts"):
        zipf_chunks(10**7, 2, 1)
    with pytest.raises(PagingError, match="'zipf:n=10000000,layers=2,tokens=1': n\\*layers"):
        parse_spec("zipf:n=10000000,layers=2,tokens=1")
    assert zipf(10**6, 2, 1).n_requests == 2  # 48 MB fits


def test_same_spec_converts_to_identical_csv_bytes(tmp_path, capsys):
    """Reproducibility end to end: the same seed gives byte-identical CSV files, which read
    back to the generator's arrays; another seed gives another file."""
    from paging.cli import main
    from paging.io import load

    spec = "zipf:n=8,layers=4,tokens=50,seed={},topk=2"
    paths = [tmp_path / f"{i}.csv" for i in range(3)]
    for path, seed in zip(paths, (0, 0, 1), strict=True):
        assert main(["trace", "convert", spec.format(seed), str(path)]) == 0
    capsys.readouterr()
    assert paths[0].read_bytes() == paths[1].read_bytes() != paths[2].read_bytes()
    (back,) = load(str(paths[0]))
    made = zipf(8, 4, 50, seed=0, topk=2)
    assert np.array_equal(back.pages, made.pages) and np.array_equal(back.steps, made.steps)
    assert np.array_equal(back.token, made.token) and np.array_equal(back.rank, made.rank)


def test_a_generator_name_ignores_case_as_every_spec_name_does():
    # ZIPF:... read as a file name ("no such trace file"), where policy, handler and routing
    # names ignore case
    from paging.generators import is_spec

    assert is_spec("ZIPF:n=4,layers=2,tokens=5") and is_spec(" Uniform:n=2,layers=2,tokens=3")
    a = parse_spec("ZIPF:n=4,layers=2,tokens=20,seed=0")[0]
    b = parse_spec("zipf:n=4,layers=2,tokens=20,seed=0")[0]
    assert np.array_equal(a.pages, b.pages) and np.array_equal(a.steps, b.steps)
