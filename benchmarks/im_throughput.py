"""Throughput of the Intracluster-Move kernel: 64 vmapped chains in one jit against a plain
NumPy loop of the same move (one chain at a time, incremental fields: what a physicist would
write without a compiler), measured side by side in one process.

    python benchmarks/im_throughput.py --side 60 --k 90 --moves 200 --out benchmarks/results/im-throughput.json

Reports moves per second and spin flips per second (2k flips per move) for both, and their
ratio. The NumPy loop is checked against the kernel: same model, same move, its acceptance
rate within a few points of the kernel's.
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np

from bomcmc.kernels.intracluster import im_kernel
from bomcmc.models.spins import ising_grid


def numpy_move(rng, s, h, nbr, cpl, c, beta, k, gamma):
    """One IM move in NumPy on (s, h) in place; returns whether it was accepted."""
    s0, h0 = s.copy(), h.copy()
    log_f = log_r = d_e = 0.0
    for down in (True, False):
        for _ in range(k):
            logw = -np.logaddexp(0.0, gamma * 2.0 * s * h[:-1])
            mask = (s != c) if down else (s == c)
            w = np.where(mask, np.exp(logw), 0.0)
            i = rng.choice(len(s), p=w / w.sum())
            log_f += logw[i] - np.log(w.sum())
            d_e += 2.0 * s[i] * h[i]
            s_i = s[i]
            s[i] = -s_i
            np.add.at(h, nbr[i], -2.0 * s_i * cpl[i])
            h[-1] = 0.0
            logw = -np.logaddexp(0.0, gamma * 2.0 * s * h[:-1])
            back = (s == c) if down else (s != c)
            log_r += logw[i] - np.log(np.exp(logw[back]).sum())
    if np.log(rng.uniform()) < min(0.0, -beta * d_e + log_r - log_f):
        return True
    s[:], h[:] = s0, h0
    return False


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--side", type=int, default=60)
    ap.add_argument("--k", type=int, default=90)
    ap.add_argument("--chains", type=int, default=64)
    ap.add_argument("--moves", type=int, default=200, help="moves per chain (jax)")
    ap.add_argument("--numpy-moves", type=int, default=40, help="moves in total (numpy)")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    model = ising_grid(args.side)
    gamma = model.beta  # the expert's γ
    kern = im_kernel(model)
    post = model.posterior()
    keys = jax.random.split(jax.random.PRNGKey(0), args.chains)
    starts = jax.vmap(model.random_state)(keys)
    states = jax.vmap(lambda x: kern.init(x, post.logdensity_fn))(starts)
    knobs = kern.make_knobs(model.n, k=args.k, gamma=gamma)

    @jax.jit
    def run(states, key):
        def body(st, key):
            st, info = jax.vmap(lambda s, kk: kern.step(kk, s, post.logdensity_fn, knobs))(
                st, jax.random.split(key, args.chains))
            return st, info.acceptance_rate
        return jax.lax.scan(body, states, jax.random.split(key, args.moves))

    t = time.perf_counter()
    jax.block_until_ready(run(states, jax.random.PRNGKey(1)))
    compile_s = time.perf_counter() - t
    t = time.perf_counter()
    _, acc = jax.block_until_ready(run(states, jax.random.PRNGKey(2)))
    jax_s = time.perf_counter() - t
    jax_moves = args.chains * args.moves / jax_s

    rng = np.random.default_rng(0)
    s = np.asarray(starts[0], float).copy()
    h = np.concatenate([np.asarray(model.effective_fields(jnp.asarray(s))), [0.0]])
    nbr, cpl, c = model.neighbors, model.couplings, model.reference
    t = time.perf_counter()
    accepted = sum(numpy_move(rng, s, h, nbr, cpl, c, model.beta, args.k, gamma)
                   for _ in range(args.numpy_moves))
    np_s = time.perf_counter() - t
    np_moves = args.numpy_moves / np_s
    out = {
        "model": model.name, "k": args.k, "gamma": gamma, "chains": args.chains,
        "jax": {"moves_per_s": jax_moves, "flips_per_s": 2 * args.k * jax_moves,
                "compile_s": compile_s, "acceptance": float(np.mean(acc))},
        "numpy": {"moves_per_s": np_moves, "flips_per_s": 2 * args.k * np_moves,
                  "acceptance": accepted / args.numpy_moves},
        "ratio_moves_per_s": jax_moves / np_moves,
        "machine": platform.processor() or platform.machine(), "jax_version": jax.__version__,
        "devices": [str(d) for d in jax.devices()],
    }
    print(json.dumps(out, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
