"""What a gradient costs with nothing around it, and how long JAX spends compiling.

The floor is the seconds per evaluation of `vmap(grad(logdensity))` over the chains, N times
inside one compiled `lax.fori_loop` (a call after the first is timed); the v+g floor is the
same with `vmap(value_and_grad(logdensity))` and the value kept live. A sampler's overhead
ratio is its sampling seconds per gradient per chain over a floor.
"""

from __future__ import annotations

import time


class CompileClock:
    """Wall-clock time JAX spends tracing, lowering and compiling, from jax.monitoring
    time spans (nested spans are merged), so a library that compiles inside its own run
    call (NumPyro's MCMC.run) can have its sampling seconds reported without compilation."""

    EVENTS = (
        "/jax/core/compile/jaxpr_trace_duration",
        "/jax/core/compile/jaxpr_to_mlir_module_duration",
        "/jax/core/compile/backend_compile_duration",
    )

    def __init__(self):
        import jax

        self.spans: list[tuple[float, float, str]] = []
        jax.monitoring.register_event_time_span_listener(self._on_span)

    def _on_span(self, event, start, end, **kw):
        if event in self.EVENTS:
            self.spans.append((start, end, str(kw.get("fun_name", ""))))

    def seconds(self, t0: float, t1: float, anchor: str | None = None) -> float:
        """Union of the compile spans inside [t0, t1] (time.time() clock).

        With `anchor` (a function name), only spans up to the end of the last span of that
        function count: everything compiled before the main program is dispatched runs on
        the calling thread with nothing executing, while small functions compiled after it
        (e.g. a swapaxes on the results) overlap its asynchronous execution and must not be
        subtracted from the wall time."""
        spans = [(max(a, t0), min(b, t1), n) for a, b, n in self.spans if b > t0 and a < t1]
        if anchor is not None:
            ends = [b for _, b, n in spans if anchor in n]
            if not ends:
                return 0.0
            spans = [(a, min(b, max(ends)), n) for a, b, n in spans if a < max(ends)]
        total, cur_a, cur_b = 0.0, None, None
        for a, b, _ in sorted(spans):
            if cur_b is None or a > cur_b:
                if cur_b is not None:
                    total += cur_b - cur_a
                cur_a, cur_b = a, b
            else:
                cur_b = max(cur_b, b)
        if cur_b is not None:
            total += cur_b - cur_a
        return total


def make_floor(logdensity, starts, n_evals: int, with_value: bool = False):
    """Compiled `x -> x after n_evals chained gradient evaluations` over the chains.

    The brief's floor (`with_value=False`): `vmap(grad(logdensity))`, x ← x + 1e-9·∇ log π(x),
    so XLA can neither hoist nor drop an evaluation. `with_value=True`: `vmap(value_and_grad)`
    with the log density summed into the carry, so the value is not dead code; this is the
    work an HMC/NUTS step needs (the integrator keeps log π for the accept step), and on XLA
    CPU it can compile to a *faster* program than grad alone (see docs/benchmarks.md)."""
    import jax
    import jax.numpy as jnp

    if with_value:
        vg = jax.vmap(jax.value_and_grad(logdensity))

        def loop(x):
            def body(i, c):
                x, acc = c
                lp, g = vg(x)
                return x + 1e-9 * g, acc + lp

            return jax.lax.fori_loop(0, n_evals, body, (x, jnp.zeros(x.shape[:1], x.dtype)))
    else:
        grad = jax.vmap(jax.grad(logdensity))

        def loop(x):
            return jax.lax.fori_loop(0, n_evals, lambda i, x: x + 1e-9 * grad(x), x)

    fn = jax.jit(loop).lower(starts).compile()
    jax.block_until_ready(fn(starts))  # first call (allocations, thread pools)
    return fn


def time_floor(fn, starts, n_evals: int) -> float:
    """Seconds per vmapped gradient evaluation: a call after the first (compiled and run
    once already by make_floor)."""
    import jax

    t0 = time.perf_counter()
    jax.block_until_ready(fn(starts))
    return (time.perf_counter() - t0) / n_evals
