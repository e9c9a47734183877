"""bomcmc's `rmhmc` (generalised leapfrog) against BlackJAX's `rmhmc` (implicit midpoint,
Brofos & Lederman 2021) on Bayesian logistic regression with the Fisher metric, side by side
in one process (docs/rmhmc.md, "Against BlackJAX").

    python benchmarks/rmhmc_peer.py --datasets heart,german --out benchmarks/results/rmhmc-peer.json

Both samplers: float64, ε = 0.5 and L = 6 fixed (Girolami & Calderhead's setting; BlackJAX has
no random trajectory length; `--step-size`, `--steps` choose another), `--chains` chains from β = 0, `--warmup` transitions of burn-in
at that setting, then `--draws` kept. bomcmc runs 6 fixed-point iterations per implicit step;
BlackJAX iterates its midpoint solver to 10⁻⁶ (at most 100 iterations). Recorded: bulk ESS of
the coefficients (min / median), per second of the sampling phase (compilation excluded for
both: BlackJAX's compiled loop is run once on the burn-in, then timed on the draws), the
acceptance rate, and the largest |z| of the means against a NUTS run of 4 × 5000 draws.
Gradients per transition are not compared: BlackJAX does not report its solver's
iterations, and each of them evaluates ∇ log π.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np

import bomcmc

EPS, STEPS = 0.5, 6  # Girolami & Calderhead's setting (εL = 3: antithetic draws, ESS capped)


def run_blackjax(post, chains: int, warmup: int, draws: int, seed: int, eps: float = EPS,
                 steps: int = STEPS):
    import blackjax

    logdensity = post.logdensity_fn
    metric_fn = post.metric_fn
    algo = blackjax.rmhmc(lambda b: logdensity({"beta": b}), eps, metric_fn, steps)
    d = post.facts.d
    states = jax.vmap(algo.init)(jnp.zeros((chains, d)))

    @jax.jit
    def run(states, keys):
        def one(state, key):
            state, info = jax.vmap(algo.step)(jax.random.split(key, chains), state)
            return state, (state.position, info.acceptance_rate)
        return jax.lax.scan(one, states, keys)

    key = jax.random.PRNGKey(seed)
    k_warm, k_draw = jax.random.split(key)
    # burn-in, which also compiles (keys of the same shape: the draws reuse the executable)
    n = max(warmup, draws)
    states, _ = run(states, jax.random.split(k_warm, n))
    jax.block_until_ready(states)
    t0 = time.perf_counter()
    _, (pos, acc) = run(states, jax.random.split(k_draw, n))
    jax.block_until_ready(pos)
    wall = (time.perf_counter() - t0) * draws / n
    pos = np.asarray(pos)[:draws].transpose(1, 0, 2)  # (chains, draws, d)
    return pos, float(np.mean(np.asarray(acc)[:draws])), wall


def figures(beta: np.ndarray, wall: float, ref: np.ndarray) -> dict:
    ess = np.asarray(az.ess(az.convert_to_dataset({"beta": beta}), method="bulk")["beta"])
    se = np.hypot(np.asarray(az.mcse(az.convert_to_dataset({"beta": beta}),
                                     method="mean")["beta"]),
                  np.asarray(az.mcse(az.convert_to_dataset({"beta": ref}),
                                     method="mean")["beta"]))
    z = np.abs(beta.mean((0, 1)) - ref.mean((0, 1))) / se
    return {"ess_min": float(ess.min()), "ess_median": float(np.median(ess)), "wall_s": wall,
            "ess_per_s_min": float(ess.min() / wall),
            "ess_per_s_median": float(np.median(ess) / wall), "z_vs_nuts": float(z.max())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default="heart,german")
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--step-size", type=float, default=EPS)
    ap.add_argument("--steps", type=int, default=STEPS,
                    help="fixed L; the default's εL = 3 gives antithetic draws whose bulk ESS "
                         "hits ArviZ's cap, εL = 1.5 (--steps 3) does not")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    bomcmc.config.set_float64(True)
    rows = []
    for ds in args.datasets.split(","):
        name = f"logistic-{ds}"
        post = bomcmc.models.get(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = np.asarray(bomcmc.sample(posterior=name, sampler="nuts", chains=4, draws=5000,
                                           warmup=1000, seed=1000, float64=True,
                                           progress=False).idata.posterior["beta"])
            for seed in map(int, args.seeds.split(",")):
                res = bomcmc.sample(posterior=name, sampler="rmhmc", chains=args.chains,
                                    draws=args.draws, warmup=args.warmup, seed=seed,
                                    float64=True, progress=False, step_size=args.step_size,
                                    steps=args.steps, random_steps=False, init_strategy="init")
                row = {"dataset": ds, "sampler": "bomcmc-rmhmc", "seed": seed,
                       "accept": res.totals["accept_mean"],
                       **figures(np.asarray(res.idata.posterior["beta"]),
                                 res.totals["wall_s"], ref)}
                rows.append(row)
                print(row, flush=True)
                beta, acc, wall = run_blackjax(post, args.chains, args.warmup, args.draws, seed,
                                               args.step_size, args.steps)
                row = {"dataset": ds, "sampler": "blackjax-rmhmc", "seed": seed,
                       "accept": acc, **figures(beta, wall, ref)}
                rows.append(row)
                print(row, flush=True)
    Path(args.out).write_text(json.dumps({"meta": vars(args), "runs": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
