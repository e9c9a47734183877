"""bomcmc's entrants: fixed-L HMC, NUTS with Stan's window warm-up, adaptive HMC (with its
defaults and with the paper's burn-in) and adaptive MAMS; and the long bomcmc NUTS run that
serves as the reference for posteriors without exact moments.

Each runner calls `bomcmc.sample` on the built-in posterior by name, from the starting points
bomcmc draws for the seed (the ones the other entrants get as `ctx["starts"]`), and reads its
figures from the SampleResult's totals and sample stats.
"""

from __future__ import annotations

import time

import numpy as np

from .settings import NUTS_DENSE_MASS, NUTS_MAX_TREE_DEPTH, NUTS_TARGET_ACCEPT
from .stats import draw_moments, lockstep_factor, mmm

# bomcmc's NUTS as every NUTS entrant is configured (settings.py)
NUTS_OPTIONS = {"adapt": "window", "target_accept": NUTS_TARGET_ACCEPT,
                "max_tree_depth": NUTS_MAX_TREE_DEPTH, "dense_mass": NUTS_DENSE_MASS}


def bomcmc_flat_draws(res, flat) -> np.ndarray:
    """bomcmc's draws of the sampled coordinates, (chains, draws, d) in the flat order the
    other samplers see. A posterior with a `constrain` keeps them in the InferenceData's
    `unconstrained_posterior` group (its `posterior` group holds the constrained quantities,
    e.g. eight schools' theta = mu + tau·theta_trans, which are other coordinates)."""
    idata = res.idata
    group = (idata.unconstrained_posterior if "unconstrained_posterior" in idata.groups()
             else idata.posterior)
    cols = []
    for name in flat.var_names:
        a = np.asarray(group[name])
        cols.append(a.reshape(a.shape[:2] + (-1,)))
    return np.concatenate(cols, axis=-1)


def sample_bomcmc(ctx, seed: int, sampler: str, **options) -> tuple:
    """One `bomcmc.sample` run of the context's posterior, and the raw figures every bomcmc
    runner returns, read from its SampleResult (`grad_steps`: (C, D) gradients per draw)."""
    import bomcmc

    t0 = time.perf_counter()
    res = bomcmc.sample(
        posterior=ctx["name"], sampler=sampler, chains=ctx["chains"], draws=ctx["draws"],
        warmup=ctx["warmup"], seed=seed, progress=False, float64=ctx["float64"], **options,
    )
    e2e = time.perf_counter() - t0
    t = res.totals
    steps = np.asarray(res.idata.sample_stats["n_grad"])
    return res, {
        "draws": bomcmc_flat_draws(res, ctx["flat"]),
        "n_grad": int(t["n_grad"]),
        "n_grad_warmup": int(t["n_grad_warmup"]),
        "wall_s": float(t["wall_s"]),
        "wall_s_warmup": float(t["wall_s_warmup"]),
        "compile_s": float(t["compile_s"]),
        "end_to_end_s": e2e,
        "divergences": int(t["divergences"]),
        "accept_mean": float(t["accept_mean"]),
        "lockstep_factor": lockstep_factor(steps),
        "sampling_wall_source": "bomcmc totals['wall_s'] (chunk calls; compiled ahead of time)",
        "grad_steps": steps,
    }


def run_bomcmc(ctx, seed: int) -> dict:
    """bomcmc's fixed-L HMC at the posterior's knobs (`settings.HMC_KNOBS`); its warm-up is
    plain burn-in at the same knobs."""
    eps, L = ctx["knobs"]
    _, raw = sample_bomcmc(ctx, seed, "hmc", step_size=eps, steps=L)
    return {**raw, "step_size": eps, "knobs": {"step_size": eps, "steps": L}}


def run_bomcmc_nuts(ctx, seed: int) -> dict:
    """bomcmc's NUTS (BlackJAX's kernel in bomcmc's chunk driver) with Stan's window
    warm-up inside the compiled chunk (the default for sampler="nuts"), from the starting
    points bomcmc draws for `seed` (= ctx["starts"], which the other samplers get too)."""
    res, raw = sample_bomcmc(ctx, seed, "nuts", **NUTS_OPTIONS)
    ss = res.idata.sample_stats
    eps = np.asarray(ss["step_size"])[:, -1]  # per chain: the adapted ε used while sampling
    return {**raw,
            "step_size": float(eps.mean()),
            "step_size_chains": mmm(eps),
            "step_size_per_chain": eps.tolist(),
            "tree_depth_mean": float(np.asarray(ss["tree_depth"]).mean())}


def run_bomcmc_ahmc(ctx, seed: int, sampler: str = "ahmc", **options) -> dict:
    """bomcmc's adaptive HMC with its defaults (nothing set per posterior): the GP bandit
    tunes (ε, L) over the warm-up's 100 BO steps, one setting per group of chains (batch
    burn-in), and goes on adapting with vanishing probability while sampling; its default
    metric (`mass="auto"`: diagonal, or dense where the posterior's correlations call for
    it) is learned in burn-in. The warm-up's gradients include the bandit's exploration and
    the L-BFGS start (`kernels/ahmc.py`)."""
    res, raw = sample_bomcmc(ctx, seed, sampler, **options)
    ss = res.idata.sample_stats
    eps = np.asarray(ss["step_size"]) if "step_size" in ss else np.array([np.nan])
    return {**raw, "step_size": float(np.nanmean(eps))}


def run_bomcmc_ahmc_paper(ctx, seed: int) -> dict:
    """`bomcmc-ahmc` with the paper's burn-in: one (ε, L) for all chains and the whole L box
    from the start (batch=1, steps_cap=0), to measure what the batch burn-in changes."""
    return run_bomcmc_ahmc(ctx, seed, batch=1, steps_cap=0)


def run_bomcmc_ahmc_auto(ctx, seed: int) -> dict:
    """`bomcmc-ahmc` with `sample`'s default warm-up, "auto": burn-in ends once the metric
    and the incumbent have settled (docs/warmup.md), at most 1000 transitions, the peers'
    --warmup (the run is refused for another, so that the cap is the peers' warm-up)."""
    from bomcmc.driver.spec import AUTO_WARMUP_CAP

    if ctx["warmup"] != AUTO_WARMUP_CAP:
        raise SystemExit(f"bomcmc-ahmc-auto: warmup 'auto' is capped at {AUTO_WARMUP_CAP} "
                         f"transitions; run it with --warmup {AUTO_WARMUP_CAP}")
    return run_bomcmc_ahmc({**ctx, "warmup": "auto"}, seed)


def run_bomcmc_amams(ctx, seed: int) -> dict:
    """bomcmc's `amams` with its defaults: adaptive HMC's bandit, schedule, L-BFGS start and
    learned diagonal metric driving MAMS's transition (`kernels/mams.py`) instead of HMC's."""
    return run_bomcmc_ahmc(ctx, seed, sampler="amams")


RUNNERS = {"bomcmc-hmc": run_bomcmc, "bomcmc-nuts": run_bomcmc_nuts,
           "bomcmc-ahmc": run_bomcmc_ahmc, "bomcmc-ahmc-paper": run_bomcmc_ahmc_paper,
           "bomcmc-ahmc-auto": run_bomcmc_ahmc_auto, "bomcmc-amams": run_bomcmc_amams}


def reference_moments(name: str, post, flat, args) -> dict | None:
    """The reference each run's posterior means are checked against: the posterior's exact
    mean (and covariance) when bomcmc ships them (`Posterior.mean`, `.cov`, e.g. the
    Gaussians), else the means and MCSEs of one long bomcmc NUTS run (`--reference-draws`
    per chain, `--reference-chains` chains, 1000 warm-up, seed 10 000 + `--seed`, so other
    draws than any benchmarked run); None with --reference-draws 0."""
    mean, cov = post.mean, post.cov
    if mean is not None and np.size(mean) == flat.dim:
        sd = np.sqrt(np.diag(np.asarray(cov))) if cov is not None else None
        return {"mean": np.asarray(mean, float).ravel(), "mcse": np.zeros(flat.dim),
                "sd": sd, "source": "exact moments (Posterior.mean, .cov)"}
    if args.reference_draws <= 0:
        return None
    import bomcmc

    seed = 10_000 + args.seed
    res = bomcmc.sample(posterior=name, sampler="nuts", chains=args.reference_chains,
                        draws=args.reference_draws, warmup=1000, seed=seed, progress=False,
                        float64=args.float64, **NUTS_OPTIONS)
    mom = draw_moments(bomcmc_flat_draws(res, flat))
    return {"mean": mom["mean"], "mcse": mom["mcse"], "sd": mom["sd"],
            "source": (f"bomcmc NUTS, {args.reference_chains} chains × "
                       f"{args.reference_draws} draws (1000 warm-up), seed {seed}; "
                       f"R-hat max {np.nanmax(mom['rhat']):.3f}")}
