"""Cost of the log-Gaussian Cox process's gradient and of one RMHMC transition on lgcp-N:
the package's eigenbasis coordinates (two (D, D) products per gradient, a diagonal metric)
against the dense alternatives in x (Σ⁻¹ as a dense matrix; the constant metric as a dense
mass, whose Cholesky factor the dense `hmc` path takes at every transition; the generalised
leapfrog on a callable dense G, which factorises G at every fixed-point iteration); and one
vmapped gradient of 1, 4, 8 and 16 chains.

    python benchmarks/lgcp_cost.py --side 64 --out benchmarks/results/lgcp-cost.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness.timing import compiled_seconds  # noqa: E402
from bomcmc.kernels import hmc, rmhmc  # noqa: E402
from bomcmc.models import log_gaussian_cox as lgcp  # noqa: E402


def _sym(a):
    return 0.5 * (a + a.T)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--side", type=int, default=64)
    ap.add_argument("--steps", type=int, default=10, help="leapfrog steps per transition")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    n = args.side
    t = time.perf_counter()
    post = lgcp.log_gaussian_cox(n)
    build_s = time.perf_counter() - t
    D = n * n
    y = jnp.asarray(post.facts.counts.ravel())
    cov = lgcp.covariance(n)
    prec = jnp.asarray(np.linalg.inv(cov))  # the dense alternative's Σ⁻¹
    G = np.asarray(prec) + post.facts.fisher_shift * np.eye(D)

    def dense_logdensity(x):
        r = x - lgcp.MEAN
        return y @ x - jnp.sum(jnp.exp(x)) / D - 0.5 * r @ (prec @ r)

    def eig_logdensity(v):
        return post.logdensity_fn({"v": v})

    v0 = jnp.zeros(D)
    x0 = jnp.full(D, lgcp.MEAN)
    grad_eig = jax.jit(jax.value_and_grad(eig_logdensity))
    grad_dense = jax.jit(jax.value_and_grad(dense_logdensity))
    out = {"side": n, "dim": D, "build_seconds": build_s,
           "gradient_seconds": {"eigenbasis": compiled_seconds(grad_eig, v0),
                                "dense_x": compiled_seconds(grad_dense, x0)}}
    batched = jax.jit(jax.vmap(jax.value_and_grad(eig_logdensity)))
    out["vmapped_gradient_seconds"] = {  # one gradient of every chain at once
        str(c): compiled_seconds(batched, jnp.zeros((c, D))) for c in (1, 4, 8, 16)}

    key = jax.random.PRNGKey(0)
    knobs_diag = hmc.default_knobs(D, step_size=0.1, steps=args.steps,
                                   inverse_mass_matrix=1.0 / post.metric_fn)
    knobs_dense = hmc.default_knobs(D, step_size=0.1, steps=args.steps,
                                    inverse_mass_matrix=_sym(np.linalg.inv(G)))
    st_eig = hmc.init(v0, eig_logdensity)
    st_dense = hmc.init(x0, dense_logdensity)
    step_eig = jax.jit(lambda k, s: hmc.step(k, s, eig_logdensity, knobs_diag))
    step_dense = jax.jit(lambda k, s: hmc.step(k, s, dense_logdensity, knobs_dense))
    trans = {"eigenbasis_diagonal_mass": compiled_seconds(step_eig, key, st_eig, repeat=5),
             "dense_x_dense_mass": compiled_seconds(step_dense, key, st_dense, repeat=3)}
    if D <= 4096:
        Gj = jnp.asarray(G)
        kern = rmhmc.rmhmc_kernel(lambda x: Gj)
        knobs = kern.make_knobs(D, step_size=0.1, steps=1, random_steps=False)
        st = kern.init(x0, dense_logdensity)
        step_gl = jax.jit(lambda k, s: kern.step(k, s, dense_logdensity, knobs))
        trans["generalised_leapfrog_dense_G_one_step"] = compiled_seconds(step_gl, key, st, repeat=2)
    out["transition_seconds"] = trans
    out["leapfrog_steps"] = args.steps
    print(json.dumps(out, indent=2))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=2)
    return out


if __name__ == "__main__":
    main()
