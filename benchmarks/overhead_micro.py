"""Driver overhead, measured directly: bomcmc's compiled chunk against two gradient floors.

    python benchmarks/overhead_micro.py [--reps 15]

logistic-german, 4 chains, fixed-L HMC (eps = 0.05, L = 10), 1000 transitions per call. The
floors are N = 20 000 chained evaluations of vmap(grad) and of vmap(value_and_grad) inside one
compiled fori_loop. Prints microseconds per vmapped gradient (minimum over interleaved calls)
and the ratios. No host work is timed, unlike benchmarks/run.py, which times whole runs.
"""

import argparse
import time

import jax
import jax.numpy as jnp

from bomcmc import models
from bomcmc import registry
from bomcmc.driver import engine as R
from bomcmc.options import SamplerConfig
from bomcmc.store import MemoryStore
from bomcmc.posterior import flatten


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    post = models.get("logistic-german")
    flat = flatten(post)
    chains, n_floor, draws, steps = 4, 20000, 1000, 10
    x0 = jnp.zeros((chains, flat.dim), jnp.float32)

    def floor(with_value: bool):
        def f(x):
            def body(_, c):
                x, acc = c
                if with_value:
                    v, g = jax.vmap(jax.value_and_grad(flat.logdensity_fn))(x)
                    acc = acc + v
                else:
                    g = jax.vmap(jax.grad(flat.logdensity_fn))(x)
                return x + 1e-9 * g, acc
            return jax.lax.fori_loop(0, n_floor, body, (x, jnp.zeros(chains)))
        fn = jax.jit(f)
        jax.block_until_ready(fn(x0))
        return fn

    fl_g, fl_vg = floor(False), floor(True)
    spec = R.RunSpec(posterior="logistic-german", sampler="hmc", chains=chains, draws=draws,
                     warmup=0, seed=0, chunk_size=draws,
                     config=SamplerConfig(knobs=dict(step_size=0.05, steps=steps)))
    run = R.Run(spec, post, MemoryStore(), None, registry.get(spec.sampler))
    st = run.initial_state()
    ad = run.initial_adapt_state(st)
    run.compile(st, ad)
    res = {"grad": [], "value_and_grad": [], "bomcmc chunk": []}
    for _ in range(args.reps):
        t = time.perf_counter()
        jax.block_until_ready(fl_g(x0))
        res["grad"].append((time.perf_counter() - t) / n_floor)
        t = time.perf_counter()
        jax.block_until_ready(fl_vg(x0))
        res["value_and_grad"].append((time.perf_counter() - t) / n_floor)
        t = time.perf_counter()
        run.run_chunk(st, run.knobs, ad, 0, draws, 1)
        res["bomcmc chunk"].append((time.perf_counter() - t) / (draws * steps))
    us = {k: min(v) * 1e6 for k, v in res.items()}
    print({k: round(v, 2) for k, v in us.items()}, "µs per vmapped gradient")
    print(f"ratio vs grad {us['bomcmc chunk'] / us['grad']:.2f}, "
          f"vs value_and_grad {us['bomcmc chunk'] / us['value_and_grad']:.2f}")


if __name__ == "__main__":
    main()
