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


def gradient_loops(logdensity, x0, n: int, data=None, grad_eps: float = 1e-4,
                   step_eps: float = 1e-3) -> tuple[dict, callable, tuple]:
    """µs per gradient alone and per leapfrog step (`kernels.integrators.leapfrog`), each in
    one compiled loop of n. `x0` is one chain's position (d,), or (chains, d) for vmapped
    chains, whose figures are then per step of all of them; `data` is the posterior's
    `bomcmc.data.Data`, which then enters the programs as their inputs, as in a run. Returns
    the figures, the compiled leapfrog loop and its arguments before the step count (for a
    profiler trace: `steps(*args, jnp.int32(k))`)."""
    import jax.numpy as jnp

    from bomcmc.data import with_data
    from bomcmc.kernels.integrators import IntegratorState, leapfrog

    def grads(x):
        def body(_, c):
            x, p = c
            p = p + grad_eps * jax.grad(logdensity)(x)
            return x + grad_eps * p, p
        return jax.lax.fori_loop(0, n, body, (x, jnp.zeros_like(x)))

    def steps(x, num):
        logp, g = jax.value_and_grad(logdensity)(x)
        start = IntegratorState(x, jnp.zeros_like(x), logp, g)
        return leapfrog(start, logdensity, jnp.asarray(step_eps, x.dtype), jnp.ones_like(x),
                        num)

    if jnp.ndim(x0) == 2:
        grads, steps = jax.vmap(grads), jax.vmap(steps, in_axes=(0, None))
    if data is None:
        grads, steps, args = jax.jit(grads), jax.jit(steps), (x0,)
    else:
        grads = jax.jit(with_data(grads, data))
        steps = jax.jit(with_data(steps, data))
        args = (data.device(), x0)
    out = {"grad_us": compiled_seconds(grads, *args, repeat=3, best=True) / n * 1e6,
           "leapfrog_us": compiled_seconds(steps, *args, jnp.int32(n), repeat=3,
                                           best=True) / n * 1e6}
    return out, steps, args


def trace_steps(steps, args: tuple, n: int, trace_dir: Path) -> dict:
    """A profiler trace of n steps of a `gradient_loops` leapfrog loop (run once before, so
    that the trace holds no compilation), summarised by `trace_summary`."""
    import jax.numpy as jnp

    jax.block_until_ready(steps(*args, jnp.int32(n)))
    with jax.profiler.trace(str(trace_dir), create_perfetto_trace=True):
        jax.block_until_ready(steps(*args, jnp.int32(n)))
    return trace_summary(trace_dir, n)


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
