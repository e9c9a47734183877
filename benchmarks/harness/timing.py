"""Seconds of a compiled call for the micro-benchmarks (`benchmarks/lgcp_cost.py`,
`cv_gradient_cost.py`, `dexter_profile.py`, `lgcp_profile.py`), compilation excluded, and
the summary of a profiler trace of such a call."""

from __future__ import annotations

import gzip
import json
import statistics
import time
from collections import defaultdict
from pathlib import Path

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


def trace_summary(trace_dir: Path, steps: int) -> dict:
    """Device busy time per step and the costliest operations, from the perfetto trace."""
    files = sorted(trace_dir.rglob("perfetto_trace.json.gz"))
    if not files:
        return {"error": "no perfetto trace written"}
    events = json.loads(gzip.decompress(files[-1].read_bytes()))
    events = events.get("traceEvents", events) if isinstance(events, dict) else events
    names = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    device = {p for p, n in names.items() if "GPU" in n or "gpu" in n or "device" in n}
    per_op, count = defaultdict(float), defaultdict(int)
    for e in events:
        if e.get("ph") == "X" and (not device or e["pid"] in device):
            per_op[e["name"]] += e.get("dur", 0.0)
            count[e["name"]] += 1
    top = sorted(per_op, key=per_op.get, reverse=True)[:10]
    return {"processes": sorted(set(names.values())), "device_pids": len(device),
            "busy_us_per_step": sum(per_op.values()) / steps,
            "ops_per_step": sum(count.values()) / steps,
            "kernels": [{"name": k[:80], "us_per_step": per_op[k] / steps,
                         "calls_per_step": count[k] / steps} for k in top]}
