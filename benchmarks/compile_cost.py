"""What a network's random-variate programs cost to compile on the CPU (docs/benchmarks.md,
"The whole suite by JAX's own clocks"): `jax.random.loggamma` of 7 shapes, the vmapped
rejection sampler of the upper-level precisions (`bnn/priors.py`, `sample_log_upper`), and
for scale a 50 × 50 product, each compiled afresh; with --save/--compare, their outputs, to
see whether an XLA flag changes results.

    python benchmarks/compile_cost.py --save /tmp/base.npy
    XLA_FLAGS=--xla_backend_optimization_level=0 python benchmarks/compile_cost.py \\
        --compare /tmp/base.npy
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

from bomcmc.bnn.priors import sample_log_upper  # noqa: E402


def programs():
    a = jnp.linspace(0.1, 3.0, 7)
    return {
        "loggamma": (lambda k, a: jax.random.loggamma(k, a), a),
        "sample_log_upper": (lambda k, a: jax.vmap(sample_log_upper)(
            jax.random.split(k, 7), a, a, a), a),
        "matmul_tanh": (lambda k, a: jnp.sum(jnp.tanh(jax.random.normal(k, (50, 50)) @ a)),
                        jnp.linspace(0.1, 3.0, 50)),
    }


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--save", default=None)
    ap.add_argument("--compare", default=None)
    args = ap.parse_args(argv)
    key, seconds, outputs = jax.random.PRNGKey(0), {}, []
    for name, (fn, arg) in programs().items():
        lowered = jax.jit(fn).lower(key, arg)
        t0 = time.perf_counter()
        compiled = lowered.compile()
        seconds[name] = round(time.perf_counter() - t0, 3)
        outputs.append(np.ravel(np.asarray(compiled(key, arg))))
    out = np.concatenate(outputs)
    report = {"compile_s": seconds}
    if args.save:
        np.save(args.save, out)
    if args.compare:
        report["max_abs_difference"] = float(np.max(np.abs(out - np.load(args.compare))))
    print(report)
    return report


if __name__ == "__main__":
    main()
