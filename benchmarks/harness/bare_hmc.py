"""The driver-free reference: bomcmc's fixed-L HMC (Neal 2011) written
directly as one `lax.scan` over draws of the chains vmapped, with no chunks, buffers or info
records. Its difference to `bomcmc-hmc` is what bomcmc's driver itself costs.
"""

from __future__ import annotations

import time

import numpy as np


def run_bare_hmc(ctx, seed: int) -> dict:
    """Reference: the same fixed-L HMC as bomcmc (value_and_grad leapfrog in a fori_loop,
    Metropolis accept), written directly as one lax.scan over draws of the chains vmapped;
    no chunks, no buffers, no info records. Shows what the driver itself costs."""
    import jax
    import jax.numpy as jnp

    logdensity, starts, C, D, W = (ctx["logdensity"], ctx["starts"], ctx["chains"],
                                   ctx["draws"], ctx["warmup"])
    eps, L = ctx["knobs"]
    vg = jax.value_and_grad(logdensity)

    def hmc_step(key, x, lp, g):
        kp, ku = jax.random.split(key)
        p0 = jax.random.normal(kp, x.shape, x.dtype)

        def leap(_, s):
            x, p, _, g = s
            p = p + 0.5 * eps * g
            x = x + eps * p
            lp, g = vg(x)
            return x, p + 0.5 * eps * g, lp, g

        x1, p1, lp1, g1 = jax.lax.fori_loop(0, L, leap, (x, p0, lp, g))
        delta = (-lp1 + 0.5 * p1 @ p1) - (-lp + 0.5 * p0 @ p0)
        acc = jnp.where(jnp.isfinite(delta), jnp.minimum(1.0, jnp.exp(-delta)), 0.0)
        ok = jax.random.uniform(ku, (), x.dtype) < acc
        pick = lambda a, b: jnp.where(ok, a, b)  # noqa: E731
        return pick(x1, x), pick(lp1, lp), pick(g1, g), acc

    step_all = jax.vmap(hmc_step)

    def run(key, xs, n: int):
        lps, gs = jax.vmap(vg)(xs)

        def body(carry, k):
            xs, lps, gs = carry
            xs, lps, gs, acc = step_all(jax.random.split(k, C), xs, lps, gs)
            return (xs, lps, gs), (xs, acc)

        return jax.lax.scan(body, (xs, lps, gs), jax.random.split(key, n))

    key_w, key_s = jax.random.split(jax.random.PRNGKey(seed))
    t_start = time.perf_counter()
    warm_c = jax.jit(lambda k, x: run(k, x, W)[0][0]).lower(key_w, starts).compile() \
        if W > 0 else None
    samp_c = jax.jit(lambda k, x: run(k, x, D)).lower(key_s, starts).compile()
    compile_s = time.perf_counter() - t_start
    w0 = time.perf_counter()
    xs = jax.block_until_ready(warm_c(key_w, starts)) if W > 0 else starts
    wall_w = time.perf_counter() - w0
    s0 = time.perf_counter()
    _, (pos, acc) = jax.block_until_ready(samp_c(key_s, xs))
    wall_s = time.perf_counter() - s0
    draws = np.swapaxes(np.asarray(pos), 0, 1)
    e2e = time.perf_counter() - t_start
    return {
        "draws": draws,
        "n_grad": C * D * L,
        "n_grad_warmup": C * W * L,
        "wall_s": wall_s,
        "wall_s_warmup": wall_w,
        "compile_s": compile_s,
        "end_to_end_s": e2e,
        "divergences": 0,
        "accept_mean": float(np.asarray(acc).mean()),
        "step_size": eps,
        "lockstep_factor": 1.0,
        "knobs": {"step_size": eps, "steps": L},
        "sampling_wall_source": "jitted lax.scan, compiled ahead of time",
    }


RUNNERS = {"bare-hmc": run_bare_hmc}
