"""A serving workload: requests built from routing traces, and when they arrive.

A *request* is a sequence of tokens, its first ``prompt`` tokens the prompt (the prefill) and the
rest decode tokens; each token carries its experts on every layer, with their gate scores and
the layer's full router logits when the trace has them (a routing hook reads them: Cumsum's M,
Cache-Prior's Δavg, the quality proxies' weights). It is drawn from a *pool* of sequences:

* a prefill+decode dump (``phase_bounds`` in the trace, e.g. the Mixtral ``prefill_decode_raw``
  file or the granite dump): the prompt is the file's prefill phase, the output its decode phase;
* a decode log (no phases, e.g. ``humaneval_2_routing.jsonl``): the log holds only generated
  tokens, so the first ``prompt_tokens`` of them (default 32, at most half the sequence, at
  least 1) stand in for the prompt and are processed as a prefill; the rest are the output.
  Their routing is that of decode tokens, not of a real prompt: say so when reporting TTFT;
* ``lengths=(prompt_range, output_range)``: each request draws its prompt and output lengths
  uniformly from the two inclusive ranges and takes that many consecutive tokens from a random
  place of the pool's token stream (all sequences joined, wrapping around): the way to serve a
  synthetic ``router:`` stream with given length distributions.

Requests draw their sequence from the pool uniformly with the workload's seed (a long workload
therefore *repeats* the pool's routing: 200 requests from 3 sequences serve each sequence's
experts about 67 times, which a cache can learn; real traffic would not repeat exactly).

Arrivals (:class:`Arrivals`): Poisson at ``rate`` requests/s over ``duration`` s; a closed loop
of ``clients`` users, each sending its next request ``think`` s after its previous one finished
(a fixed think time), until ``duration``; or the timestamps of a file (one arrival time in
seconds per line, non-decreasing).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from paging.errors import TIME_MAX_S, PagingError, check_time
from paging.trace import Trace, group_starts

#: the most Poisson arrivals a run may expect (rate × duration): their gaps are drawn one at a
#: time before the run, and every request is served
MAX_ARRIVALS = 10_000_000

#: the most expert slots (tokens x layers x K) the windows of drawn lengths may hold in all:
#: they are copied out of the pool's token stream before the run (the reference loop's room,
#: :data:`paging.serve.engine.MAX_ROOM`)
MAX_WINDOWS = 200_000_000

__all__ = ["Sequence", "Arrivals", "pool", "read_arrivals"]


@dataclass(frozen=True)
class Sequence:
    """One request's routing: ``experts[token, layer, j]`` (expert ids, -1 padding when a token
    has fewer than K experts on a layer), the first ``prompt`` tokens being the prompt;
    ``scores[token, layer, j]`` their gate scores (NaN beside a -1) and ``logits[token, layer,
    e]`` the router's full logits, each None when the trace has none."""

    name: str
    experts: np.ndarray
    prompt: int
    scores: np.ndarray | None = None
    logits: np.ndarray | None = None

    @property
    def n_tokens(self) -> int:
        return int(self.experts.shape[0])

    @property
    def output(self) -> int:
        """Decode tokens (each decode pass emits one token after the prefill's first)."""
        return self.n_tokens - self.prompt


def _experts(trace: Trace) -> tuple:
    """``(experts, scores, logits)`` of a groups-mode trace (:class:`Sequence`), in the trace's
    token order."""
    lay = trace.layout
    tok = np.asarray(trace.token if trace.token is not None else trace.passes, dtype=np.int64)
    ids, tok = np.unique(tok, return_inverse=True)
    layer = trace.layers
    steps = trace.steps
    starts = group_starts(steps)
    size = np.diff(np.r_[starts, steps.size])
    j = np.arange(steps.size) - np.repeat(starts, size)
    K = int(size.max()) if size.size else 1
    out = np.full((int(tok.max()) + 1 if tok.size else 0, lay.n_layers, K), -1, dtype=np.int64)
    out[tok, layer, j] = trace.pages % lay.n_experts
    scores = None
    if trace.score is not None:
        scores = np.full(out.shape, np.nan)
        scores[tok, layer, j] = trace.score
    # the logits' rows are the trace's token ids (groups_of reads logits[token, layer])
    logits = None if trace.logits is None else np.asarray(trace.logits[ids], dtype=np.float64)
    return out, scores, logits


def pool(traces, *, prompt_tokens: int = 32, split: bool = True) -> list[Sequence]:
    """The sequences requests are drawn from (module docstring), one per trace sequence.

    ``traces`` must be in groups mode (``expand="groups"``): a token's experts on a layer are
    one group. Every token must visit every layer (the readers drop incomplete tokens unless
    ``--strict``). ``split=False``: the requests are cut from the joined token stream
    (:func:`windows`), so a sequence's own prompt split is not used and a sequence too short
    for one is not refused."""
    if prompt_tokens < 1:
        raise PagingError(f"--prompt-tokens must be >= 1, got {prompt_tokens}")
    out = []
    for t in traces:
        if t.n_requests == 0:
            continue
        if t.expand != "groups":
            raise PagingError(f"{t.name}: a serving workload reads traces in groups mode")
        ex, scores, logits = _experts(t)
        if (ex[:, :, 0] < 0).any():
            raise PagingError(f"{t.name}: a token misses a layer; serving needs every token "
                              "to visit every layer")
        T = ex.shape[0]
        pre = (t.meta.get("phase_bounds") or {}).get("prefill")
        if pre is not None and pre[1] > pre[0]:
            tok = np.asarray(t.token if t.token is not None else t.passes)
            prompt = int(np.unique(tok[pre[0]:pre[1]]).size)
        else:
            prompt = max(1, min(prompt_tokens, T // 2))
        if prompt >= T and split:
            raise PagingError(f"{t.name}: {T} tokens leave no decode token after a prompt of "
                              f"{prompt}")
        out.append(Sequence(t.name, ex, prompt, scores, logits))
    if not out:
        raise PagingError("the traces hold no sequence to serve")
    K = max(s.experts.shape[2] for s in out)  # one K for the pool (-1 pads a smaller one)
    return [s if s.experts.shape[2] == K else _widen(s, K) for s in out]


def _widen(s: Sequence, K: int) -> Sequence:
    """``s`` with K experts per token and layer (-1 and NaN padding)."""
    pad = ((0, 0), (0, 0), (0, K - s.experts.shape[2]))
    return Sequence(s.name, np.pad(s.experts, pad, constant_values=-1), s.prompt,
                    None if s.scores is None else np.pad(s.scores, pad,
                                                         constant_values=np.nan), s.logits)


def windows(seqs: list[Sequence], lengths, count: int, rng) -> list[Sequence]:
    """``count`` requests of drawn lengths cut from the pool's joined token stream."""
    (p_lo, p_hi), (o_lo, o_hi) = lengths
    if not (1 <= p_lo <= p_hi and 1 <= o_lo <= o_hi):
        raise PagingError("--prompt-len and --output-len take ranges LO-HI with 1 <= LO <= HI")
    stream = np.concatenate([s.experts for s in seqs])
    # a window may cross sequences: it carries scores (logits) when every sequence has them
    sc = (np.concatenate([s.scores for s in seqs])
          if all(s.scores is not None for s in seqs) else None)
    lg = (np.concatenate([s.logits for s in seqs])
          if all(s.logits is not None for s in seqs) else None)
    T, per_tok = stream.shape[0], stream.shape[1] * stream.shape[2]
    # the windows are copied out of the stream before the run: their lengths are drawn first
    # (in the same order), so a workload too large to hold is refused before it is built (an
    # endpoint beyond int64 was a numpy traceback, a large one an out-of-memory kill)
    if (p_hi + o_hi) * per_tok > MAX_WINDOWS:
        raise PagingError(f"--prompt-len {p_lo}-{p_hi} and --output-len {o_lo}-{o_hi} allow "
                          f"requests of {p_hi + o_hi:,} tokens; expected at most "
                          f"{MAX_WINDOWS // per_tok:,} tokens a request (LO-HI ranges)")
    draws = [(int(rng.integers(p_lo, p_hi + 1)), int(rng.integers(o_lo, o_hi + 1)),
              int(rng.integers(0, T))) for _ in range(count)]
    total = sum(p + o for p, o, _ in draws)
    if total * per_tok > MAX_WINDOWS:
        raise PagingError(f"the drawn requests hold {total:,} tokens ({total * per_tok:,} "
                          f"expert slots, copied before the run; at most {MAX_WINDOWS:,}): "
                          "shorten --prompt-len, --output-len or --duration, lower --rate or "
                          "set --max-requests")
    out = []
    for i, (p, o, start) in enumerate(draws):
        idx = (start + np.arange(p + o)) % T
        out.append(Sequence(f"window{i}@{start}", stream[idx], p,
                            None if sc is None else sc[idx], None if lg is None else lg[idx]))
    return out


@dataclass(frozen=True)
class Arrivals:
    """When requests arrive: exactly one of ``rate`` (Poisson, requests/s), ``clients`` (a
    closed loop with ``think`` s between a request's end and the client's next one) or
    ``times`` (seconds); new requests arrive only before ``duration`` s (``times`` beyond it
    are dropped; None: all of them)."""

    rate: float | None = None
    clients: int | None = None
    think: float = 0.0
    times: tuple | None = None
    duration: float | None = None

    def __post_init__(self):
        given = sum(x is not None for x in (self.rate, self.clients, self.times))
        if given != 1:
            raise PagingError("give the arrivals as one of --rate R, --clients N or "
                              "--arrivals FILE")
        if self.rate is not None and not (np.isfinite(self.rate) and self.rate > 0):
            raise PagingError(f"--rate must be a number of requests/s > 0, got {self.rate}")
        if self.clients is not None and self.clients < 1:
            raise PagingError(f"--clients must be >= 1, got {self.clients}")
        if self.clients is not None and self.clients > MAX_ARRIVALS:
            raise PagingError(f"--clients {self.clients:,} is more than {MAX_ARRIVALS:,} "
                              "(each client sends a request at once: as many arrivals as "
                              "--rate allows); expected fewer clients")
        if not (np.isfinite(self.think) and self.think >= 0):
            raise PagingError(f"--think must be seconds >= 0, got {self.think}")
        check_time("--think", self.think, "s")
        if self.think and self.clients is None:
            raise PagingError("--think applies only to --clients (a closed loop); drop it")
        if self.duration is not None and not (np.isfinite(self.duration)
                                              and self.duration > 0):
            raise PagingError(f"--duration must be seconds > 0, got {self.duration}")
        if self.duration is not None:
            check_time("--duration", self.duration, "s")
        if self.times is not None:
            _check_times(self.times)
        if self.times is None and self.duration is None:
            raise PagingError("--rate and --clients need --duration S (how long requests "
                              "arrive)")
        if self.rate is not None and self.rate * self.duration > MAX_ARRIVALS:
            raise PagingError(f"--rate {self.rate:g} for --duration {self.duration:g} s draws "
                              f"about {self.rate * self.duration:.3g} arrivals (at most "
                              f"{MAX_ARRIVALS:,}, drawn one at a time before the run): lower "
                              "--rate or --duration")

    @property
    def closed(self) -> bool:
        return self.clients is not None

    def open_times(self, rng, cap: int | None = None) -> tuple[np.ndarray, int]:
        """The first ``cap`` (None: all) arrival times in ms of an open workload (Poisson or a
        file), and how many arrive in all. Every gap of the duration is drawn, kept or not, so
        the draws after them do not depend on the cap."""
        if self.times is not None:
            t = np.asarray(self.times, dtype=np.float64) * 1e3
            t = t if self.duration is None else t[t < self.duration * 1e3]
            return t[:cap], int(t.size)
        out, now, horizon, n = [], 0.0, self.duration, 0
        while True:  # exponential gaps of mean 1/rate, until the horizon
            now += float(rng.exponential(1.0 / self.rate))
            if now >= horizon:
                return np.asarray(out, dtype=np.float64) * 1e3, n
            n += 1
            if cap is None or len(out) < cap:
                out.append(now)

    def describe(self) -> dict:
        if self.rate is not None:
            return {"arrivals": "poisson", "rate": self.rate, "duration_s": self.duration}
        if self.clients is not None:
            return {"arrivals": "closed", "clients": self.clients, "think_s": self.think,
                    "duration_s": self.duration}
        return {"arrivals": "file", "duration_s": self.duration}


def _check_times(times) -> None:
    """Arrival times as :func:`read_arrivals` reads them from a file: at least one, each finite,
    >= 0 and at most :data:`TIME_MAX_S`, non-decreasing. ``Arrivals(times=...)`` given in
    Python was not checked: a NaN time hung the run (the server idled until it forever), an
    infinite one was served at infinity, a negative one queued before the run began, and
    ``()`` was a TypeError."""
    try:
        t = np.asarray(times, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise PagingError(f"the arrival times must be numbers (seconds), got {times!r}") from None
    if t.size == 0:
        raise PagingError("the arrival times are empty; expected at least one")
    fault = _time_fault(t)
    if fault is None:
        return
    i, rule = fault
    if rule == "down":
        raise PagingError(f"arrival times must not decrease (time {i + 1} of {t.size}, "
                          f"{float(t[i])}, after {float(t[i - 1])})")
    raise PagingError(f"arrival time {i + 1} of {t.size} is {float(t[i])}; expected seconds, "
                      f"finite, >= 0 and at most {TIME_MAX_S:.0e}")


def _time_fault(t: np.ndarray) -> tuple[int, str] | None:
    """The first arrival time of ``t`` that is not one, as ``(index, rule)``: ``"invalid"``
    (not finite, or below 0), ``"large"`` (above :data:`TIME_MAX_S`) or ``"down"`` (below
    the time before it), or None: the one rule :func:`read_arrivals` and
    ``Arrivals(times=...)`` both hold times to (each words it for its source)."""
    invalid = ~(np.isfinite(t) & (t >= 0))
    large = ~invalid & (t > TIME_MAX_S)
    down = np.r_[False, np.diff(t) < 0] & ~invalid & ~large
    bad = np.flatnonzero(invalid | large | down)
    if not bad.size:
        return None
    i = int(bad[0])
    return i, "invalid" if invalid[i] else "large" if large[i] else "down"


def read_arrivals(path) -> tuple:
    """Arrival times in seconds from a text file: one number per line (``#`` comments and blank
    lines skipped), finite, >= 0 and non-decreasing; errors name the file and line."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8-sig").splitlines()
    except OSError as e:
        raise PagingError(f"cannot read the arrivals: {e.strerror or e}", file=str(p)) from None
    except UnicodeDecodeError:
        raise PagingError("the arrivals file is not UTF-8 text; expected one time in seconds "
                          "per line", file=str(p)) from None
    out, texts, where = [], [], []
    for i, line in enumerate(lines, 1):
        s = line.split("#", 1)[0].strip()
        if not s:
            continue
        try:
            out.append(float(s))
        except ValueError:
            raise PagingError(f"expected an arrival time in seconds, got {s!r}", file=str(p),
                              line=i) from None
        texts.append(s)
        where.append(i)
    if not out:
        raise PagingError("the arrivals file holds no arrival time", file=str(p))
    fault = _time_fault(np.asarray(out))
    if fault is not None:
        j, rule = fault
        msg = (f"an arrival time must be finite and >= 0, got {texts[j]}" if rule == "invalid"
               else f"an arrival time must be at most {TIME_MAX_S:.0e} s (about 32 years), got "
                    f"{texts[j]}" if rule == "large"
               else f"arrival times must not decrease ({out[j]} after {out[j - 1]})")
        raise PagingError(msg, file=str(p), line=where[j])
    return tuple(out)
