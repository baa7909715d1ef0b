"""Shared test configuration: hypothesis profiles and the real-trace location."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# shared test modules: tests/strategies.py, tests/golden/naive.py and its GOLDEN numbers
sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parent / "golden")]

# "ci" runs more examples, "deep" many more (a new kernel's local soak); none has a deadline
# (numba compiles on first call).
settings.register_profile("ci", max_examples=150, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("deep", max_examples=1000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=50, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

TRACES = os.environ.get("PAGING_TRACES")
needs_traces = pytest.mark.skipif(not TRACES, reason="PAGING_TRACES is not set (real traces "
                                  "live in ../shared/traces; make test sets it when present)")


def real_sequence(src: str, i: int, expand: str = "rounds"):
    """Sequence ``i`` of the real trace file ``src`` (a path under ``PAGING_TRACES``)."""
    from paging.io import load

    return load(os.path.join(TRACES, src), expand=expand)[i]


@pytest.fixture
def break_compiled_serving(monkeypatch):
    """A call that mutates the compiled serving engine for the rest of the test: a run that is
    neither verified nor the reference loop reports its first miss as a hit (the wrong decision
    a verified run, which replays the reference loop beside it, must catch)."""

    def apply():
        import numpy as np

        import paging.serve.engine as eng

        real = eng._Server.result

        def broken(self):
            res = real(self)
            if self.run_spec.verify is False and self.run_spec.engine != "reference":
                res.hits = res.hits.copy()
                res.hits[int(np.flatnonzero(~res.hits)[0])] = True
            return res

        monkeypatch.setattr(eng._Server, "result", broken)

    return apply
