"""Where `ahmc`'s L-BFGS start leaves the chains, and how far its metric is from the
posterior's covariance (docs/tuning.md, "The metric on small scales and from stalled starts").

    python benchmarks/ahmc_start_and_metric.py start POSTERIOR [...] --seeds 0,1 --chains 16
    python benchmarks/ahmc_start_and_metric.py metric POSTERIOR --seed 0 --chains 16
    python benchmarks/ahmc_start_and_metric.py pathfinder POSTERIOR --seed 0 --chains 3
    python benchmarks/ahmc_start_and_metric.py rule POSTERIOR --seeds 0-63 --chains 4 \
        --scale log_sigma2 --neck -3

`start`: per posterior and seed, the worst chain's −log π above the best chain's after
`kernels.ahmc.find_mode_counted` from the harness's starts, the mean evaluations per chain, and
how the gradient's norm at the point reached compares with the start's (at a mode it vanishes;
down the neck of an unbounded density it grows).
`rule`: the start rule's decision for runs of `--chains` chains, one run per seed: whether any
chain's search ended steeper (then every chain keeps its own dispersed point), and where the
kept starts put the scalar `--scale`; a run that keeps its L-BFGS points with a chain's scale
below `--neck` is one the rule missed.
`metric`: one `ahmc` run (1000 warm-up + 2000 draws, float64), then, for each distinct metric
the chunks record (the Laplace start, then each window's), κ(M Σ) with Σ the covariance of
the sampling draws (1: the metric is the covariance up to scale); and min bulk ESS per 1000
sampling gradients. Run on an older commit (PYTHONPATH=that tree's src) for the before.
"""

from __future__ import annotations

import argparse
import glob
import tempfile
import warnings

import jax
import numpy as np


def start(names, seeds, chains):
    import bomcmc
    from bomcmc.kernels.ahmc import find_mode_counted
    from bomcmc.posterior import flatten

    for name in names:
        flat = flatten(bomcmc.models.get(name))
        f = flat.logdensity_fn
        for seed in seeds:
            x0 = flat.init_flat(jax.random.fold_in(jax.random.PRNGKey(seed), 0), chains)
            x, n = jax.vmap(lambda x: find_mode_counted(x, f))(x0)
            u = -np.asarray(jax.vmap(f)(x))
            g0, g = (np.linalg.norm(np.asarray(jax.vmap(jax.grad(f))(p)), axis=1)
                     for p in (x0, x))
            print(f"{name} seed {seed}: worst chain {u.max() - u.min():.3g} above the best, "
                  f"{np.mean(np.asarray(n)):.1f} evaluations per chain; |∇U| at the end over "
                  f"at the start: median {np.median(g / g0):.3g}, max {np.max(g / g0):.3g}, "
                  f"above 1 in {int(np.sum(g > g0))} of {chains} chains", flush=True)


def rule(names, seeds, chains, scale, neck):
    import bomcmc
    from bomcmc.kernels.ahmc import find_mode_checked
    from bomcmc.posterior import flatten

    for name in names:
        flat = flatten(bomcmc.models.get(name))
        search = jax.jit(jax.vmap(lambda x: find_mode_checked(x, flat.logdensity_fn)))
        dispersed = kept = missed = steeper_chains = 0
        for seed in seeds:
            x0 = flat.init_flat(jax.random.fold_in(jax.random.PRNGKey(seed), 0), chains)
            x, _, steeper = search(x0)
            steeper = np.asarray(steeper)
            steeper_chains += int(steeper.sum())
            starts = x0 if steeper.any() else x
            at = np.asarray(jax.vmap(lambda p: flat.unravel(p)[scale])(starts))
            ends = np.asarray(jax.vmap(lambda p: flat.unravel(p)[scale])(x))
            dispersed += int(steeper.any())
            kept += int(not steeper.any())
            missed += int((not steeper.any()) and (at < neck).any())
            print(f"{name} seed {seed}: steeper {steeper.astype(int).tolist()}, {scale} at the "
                  f"L-BFGS ends {np.round(ends, 2).tolist()}, at the kept starts "
                  f"{np.round(at, 2).tolist()}", flush=True)
        n = len(seeds)
        print(f"{name}: {n} runs of {chains} chains; chains ending steeper {steeper_chains} of "
              f"{n * chains}; runs dispersed {dispersed}, kept {kept}, of which with a chain's "
              f"{scale} below {neck}: {missed}", flush=True)


def pathfinder(names, seed, chains):
    """Per chain, where L-BFGS (`find_mode_counted`) and BlackJAX's Pathfinder (its iterate
    with the best ELBO; Zhang et al. 2022) go from the harness's starts: −log π at the start,
    at each end, and the scalar variables (a scale's logarithm shows a funnel's neck)."""
    import bomcmc
    from blackjax.vi import pathfinder as pf
    from bomcmc.kernels.ahmc import find_mode_counted
    from bomcmc.posterior import flatten

    for name in names:
        flat = flatten(bomcmc.models.get(name))
        f = flat.logdensity_fn
        x0 = flat.init_flat(jax.random.fold_in(jax.random.PRNGKey(seed), 0), chains)
        lbfgs = jax.jit(lambda x: find_mode_counted(x, f)[0])
        path = jax.jit(lambda k, x: pf.approximate(k, f, x, num_samples=50, maxiter=100,
                                                    maxls=20)[0].position)
        for i in range(chains):
            ends = {"start": x0[i], "L-BFGS": lbfgs(x0[i]),
                    "Pathfinder": path(jax.random.PRNGKey(i), x0[i])}
            parts = []
            for where, x in ends.items():
                tree = flat.unravel(x)
                scalars = {k: float(v) for k, v in tree.items() if np.ndim(v) == 0}
                parts.append(f"{where}: −log π {-float(f(x)):.4g} "
                             + " ".join(f"{k} {v:.3g}" for k, v in scalars.items()))
            print(f"{name} chain {i}: " + "; ".join(parts), flush=True)


def metric(name, seed, chains):
    import arviz as az

    import bomcmc

    out = tempfile.mkdtemp(prefix="ahmc-metric-")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = bomcmc.sample(posterior=name, sampler="ahmc", chains=chains, warmup=1000,
                            draws=2000, seed=seed, float64=True, out=out, overwrite=True)
    recs = [dict(np.load(p)) for p in sorted(glob.glob(f"{out}/chunks/*.npz"))]
    draws = np.concatenate([r["positions"] for r in recs if int(r["phase"]) == 1], axis=1)
    cov = np.cov(draws.reshape(-1, draws.shape[-1]).T)
    seen = []
    for r in recs:
        m = np.asarray(r["knobs.inverse_mass_matrix"])[0]
        m = m if m.ndim == 2 else np.diag(m)
        if not any(np.array_equal(m, s) for s in seen):
            seen.append(m)
            ev = np.linalg.eigvals(np.linalg.solve(m, cov)).real
            print(f"{name} seed {seed}: metric {len(seen)} (from chunk {int(r['index'])}, "
                  f"phase {int(r['phase'])}): κ(M Σ) = {ev.max() / ev.min():.3g}", flush=True)
    ess = az.ess(res.idata, method="bulk")
    low = min(float(np.min(np.asarray(ess[v]))) for v in ess.data_vars)
    print(f"{name} seed {seed}: min bulk ESS per 1000 sampling gradients "
          f"{1e3 * low / res.totals['n_grad']:.1f}", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("start", "pathfinder", "metric", "rule"))
    ap.add_argument("posteriors", nargs="+")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--chains", type=int, default=16)
    ap.add_argument("--scale", default="log_sigma2", help="rule: the scalar to locate")
    ap.add_argument("--neck", type=float, default=-3.0, help="rule: the scale's neck below")
    a = ap.parse_args(argv)
    if "-" in a.seeds:
        lo, hi = (int(v) for v in a.seeds.split("-"))
        a.seeds = ",".join(map(str, range(lo, hi + 1)))
    jax.config.update("jax_enable_x64", True)
    if a.what == "start":
        start(a.posteriors, [int(s) for s in a.seeds.split(",")], a.chains)
    elif a.what == "pathfinder":
        pathfinder(a.posteriors, a.seed, a.chains)
    elif a.what == "rule":
        rule(a.posteriors, [int(s) for s in a.seeds.split(",")], a.chains, a.scale, a.neck)
    else:
        for name in a.posteriors:
            metric(name, a.seed, a.chains)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
