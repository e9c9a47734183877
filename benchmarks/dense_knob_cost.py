"""What `mass="auto"`'s dense metric knob costs per transition where a gradient is nearly
free (docs/benchmarks.md, "Findings: against the modern self-tuning samplers", Seconds).

    python benchmarks/dense_knob_cost.py [--dim 100] [--chains 16]

Times, vmapped over the chains and jitted, each piece of an HMC transition that reads the
metric: drawing the momentum (a dense M⁻¹ is factorised by Cholesky on every draw, O(d³);
a diagonal one is O(d)), one drift M⁻¹p (O(d²) against O(d)), and a gradient of
`gauss-100-illcond`'s log density for scale. Two rounds, microseconds per call for all chains.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

from bomcmc.kernels import integrators


def per_call_us(f, *args, n: int = 2000) -> float:
    f(*args).block_until_ready()
    t0 = time.perf_counter()
    for _ in range(n):
        out = f(*args)
    out.block_until_ready()
    return (time.perf_counter() - t0) / n * 1e6


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--chains", type=int, default=16)
    a = ap.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    d, c = a.dim, a.chains
    scales = np.linspace(1.0, 2.0, d)
    dense = jnp.asarray(np.broadcast_to(np.diag(scales), (c, d, d)))  # a diagonal in a dense knob
    diag = jnp.asarray(np.broadcast_to(scales, (c, d)))
    keys = jax.random.split(jax.random.PRNGKey(0), c)
    x, p = jnp.zeros((c, d)), jnp.ones((c, d))
    momentum = jax.jit(jax.vmap(integrators.sample_momentum))
    drift = jax.jit(jax.vmap(lambda p, m: integrators.drift(p, m, 0.1)))
    sd = jnp.logspace(-2, 0, d)
    grad = jax.jit(jax.vmap(jax.grad(lambda x: -0.5 * jnp.sum((x / sd) ** 2))))
    for r in range(2):
        print(f"round {r}: momentum dense {per_call_us(momentum, keys, x, dense):.1f} us, "
              f"diagonal {per_call_us(momentum, keys, x, diag):.1f} us; drift dense "
              f"{per_call_us(drift, p, dense):.1f} us, diagonal {per_call_us(drift, p, diag):.1f}"
              f" us; gradient {per_call_us(grad, x):.1f} us ({c} chains, d = {d})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
