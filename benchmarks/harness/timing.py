"""Seconds of a compiled call for the micro-benchmarks (`benchmarks/lgcp_cost.py`,
`cv_gradient_cost.py`, `dexter_profile.py`), compilation excluded."""

from __future__ import annotations

import statistics
import time

import jax


def compiled_seconds(fn, *args, repeat: int = 20, best: bool = False) -> float:
    """The median (with `best`, the least) seconds of `fn(*args)` over `repeat` calls, after
    one call that compiles it."""
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t)
    return min(times) if best else float(statistics.median(times))
