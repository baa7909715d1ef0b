"""Compiled simulation kernels (placeholder until the kernels land): ``run`` returns None when
no kernel applies, and :func:`paging.simulate.simulate` falls back to the reference loop."""

from __future__ import annotations


def run(trace, policy, k, *, seed=0, record=False):
    return None
