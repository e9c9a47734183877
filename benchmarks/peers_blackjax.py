"""BlackJAX's self-tuning samplers as runners of `benchmarks/run.py`.

Each `run_*(ctx, seed)` takes the harness's context (`logdensity`: the flat log density,
`starts`: (C, d) starting points, `chains`, `draws`, `warmup`) and returns one run's raw
figures: `draws` (C, D, d) NumPy draws, `n_grad` and `n_grad_warmup` (gradient evaluations of
sampling and of warm-up, summed over chains), `grad_steps` ((C, D) gradient evaluations per
kept draw, for the lockstep factor), seconds (`wall_s`, `wall_s_warmup`, `compile_s`,
`end_to_end_s`), `divergences`, `accept_mean`, `step_size` and a `tuned` dict of the adapted
settings. The harness (`harness/stats.py`) turns the draws into ESS, R-hat and the
comparison with its reference.

Only BlackJAX's public API of the installed version (1.7.1) is used. Every phase is jitted and
compiled ahead of time (`.lower().compile()`), so the warm-up and sampling seconds exclude
compilation; `end_to_end_s` includes it. The initial evaluation of the log density at the
starting points is not counted for any sampler (nor is it by the harness's other runners).
"""

from __future__ import annotations

import math
import time

import numpy as np

# ChEES-HMC (Hoffman, Radul & Sountsov 2021). Adam on the log trajectory length with
# β1 = 0, β2 = 0.95 and learning rate 0.025 (our setting, after the paper's description of
# its experiments; not compared here with other rates, e.g. the 0.5 of BlackJAX's own test);
# step size by dual averaging towards BlackJAX's default harmonic-mean acceptance 0.651,
# from ε₀ = 0.1;
# BlackJAX's ensemble-estimated diagonal metric (mass_matrix_estimation="diagonal").
CHEES_LEARNING_RATE = 0.025
CHEES_INITIAL_STEP_SIZE = 0.1
CHEES_MASS_MATRIX = "diagonal"

# MEADS (Hoffman & Sountsov 2022): BlackJAX's defaults (4 folds, step-size multiplier 0.5,
# damping slowdown 1). Each fold's step size, damping and momentum scale are estimated from
# the chains of one fold, so a fold needs many chains: BlackJAX's docstring takes 16 per fold
# (64 chains) as the paper's setting. With the harness's 16 chains (4 per fold) the estimates
# were so noisy on logistic-german that the ensemble blew up after ~3000 warm-up steps even
# from a start near the posterior (step size collapsed to ~1e-7, positions ~1e3); with 32 or
# 64 chains it reached the posterior in ~300 steps and stayed there for 10 000. So MEADS runs
# at least MEADS_FOLDS × MEADS_MIN_CHAINS_PER_FOLD chains: the harness's C starts plus extra
# ones from the same initializer. GHMC takes one leapfrog step (one gradient) per transition,
# so each harness transition is MEADS_STEPS_PER_DRAW GHMC steps, in warm-up and sampling
# alike, and one state in MEADS_STEPS_PER_DRAW is kept (ESS is divided by every gradient).
MEADS_FOLDS = 4
MEADS_MIN_CHAINS_PER_FOLD = 16
MEADS_STEPS_PER_DRAW = 10

# MAMS (Robnik, Cohn-Gordon & Seljak 2025): target acceptance 0.9 (BlackJAX's recommendation
# for the adjusted sampler), diagonal preconditioning, uniformly random trajectory length.
MAMS_TARGET_ACCEPT = 0.9
MAMS_GRADS_PER_STEP = 2  # isokinetic McLachlan: two gradient evaluations per integrator step


def _split(seed: int):
    import jax

    return jax.random.split(jax.random.PRNGKey(seed))


def _compile(fn, *args):
    """AOT-compiled `jit(fn)` for these arguments, and the seconds it took."""
    import jax

    t0 = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    return compiled, time.perf_counter() - t0


def _call(compiled, *args):
    """Run a compiled function to completion; (outputs, seconds)."""
    import jax

    t0 = time.perf_counter()
    out = jax.block_until_ready(compiled(*args))
    return out, time.perf_counter() - t0


def _finish(t_start, draws, steps, warm_grads, div, acc, wall_w, wall_s, compile_s, **extra):
    """The raw figures every runner returns. draws: (D, C, d) positions as scanned;
    steps: (D, C) gradients per kept draw."""
    steps = np.asarray(steps).T
    out = {
        "draws": np.swapaxes(np.asarray(draws), 0, 1),
        "grad_steps": steps,
        "n_grad": int(steps.sum()),
        "n_grad_warmup": int(warm_grads),
        "wall_s": wall_s,
        "wall_s_warmup": wall_w,
        "compile_s": compile_s,
        "end_to_end_s": time.perf_counter() - t_start,
        "divergences": int(np.asarray(div).sum()),
        "accept_mean": float(np.asarray(acc).mean()),
        "sampling_wall_source": "jitted lax.scan, compiled ahead of time (.lower().compile())",
    }
    out.update(extra)
    return out


# ---------------------------------------------------------------------------------------
# ChEES-HMC
# ---------------------------------------------------------------------------------------
def run_chees(ctx, seed: int) -> dict:
    """ChEES-HMC (Hoffman, Radul & Sountsov 2021): jittered-trajectory HMC whose trajectory
    length maximises the ChEES criterion over the ensemble of all chains.

    `blackjax.chees_adaptation(logdensity, C, mass_matrix_estimation="diagonal")` adapts step
    size, trajectory length and a diagonal metric jointly over all C chains for W steps
    (`run(key, starts, step_size=0.1, optim=optax.adam(0.025, b1=0, b2=0.95), num_steps=W,
    max_sampling_steps=D)`); the chains then sample with `blackjax.dynamic_hmc(logdensity,
    **parameters)` (Halton-jittered number of leapfrog steps, the same for every chain at a
    given transition). Gradients: `num_integration_steps` of every transition, summed over
    chains, in warm-up and sampling."""
    import jax
    import optax

    import blackjax

    logdensity, starts = ctx["logdensity"], ctx["starts"]
    C, D, W = ctx["chains"], ctx["draws"], ctx["warmup"]
    key_w, key_s = _split(seed)
    t_start = time.perf_counter()
    adaptation = blackjax.chees_adaptation(
        logdensity, C, mass_matrix_estimation=CHEES_MASS_MATRIX,
        adaptation_info_fn=blackjax.adaptation.base.get_filter_adapt_info_fn(
            info_keys={"num_integration_steps"}))
    schedule = {}  # the kernel's step-count functions, captured while tracing the warm-up

    def warm(key, x):
        (states, params), info = adaptation.run(
            key, x, step_size=CHEES_INITIAL_STEP_SIZE,
            optim=optax.adam(CHEES_LEARNING_RATE, b1=0.0, b2=0.95), num_steps=W,
            max_sampling_steps=D)
        schedule.update({k: params[k] for k in ("next_random_arg_fn", "integration_steps_fn")})
        tuned = {k: params[k] for k in ("step_size", "inverse_mass_matrix")}
        tuned["mean_steps"] = params["integration_steps_params"][0]
        return states, tuned, info.info.num_integration_steps

    warm_c, comp_w = _compile(warm, key_w, starts)
    (states, tuned, warm_steps), wall_w = _call(warm_c, key_w, starts)

    def sample(key, states, step_size, inv_mass, mean_steps):
        step = blackjax.dynamic_hmc(
            logdensity, step_size, inv_mass, integration_steps_params=(mean_steps,),
            **schedule).step

        def body(st, k):
            st, info = jax.vmap(step)(jax.random.split(k, C), st)
            return st, (st.position, info.num_integration_steps, info.is_divergent,
                        info.acceptance_rate)

        return jax.lax.scan(body, states, jax.random.split(key, D))[1]

    args = (key_s, states, tuned["step_size"], tuned["inverse_mass_matrix"],
            tuned["mean_steps"])
    samp_c, comp_s = _compile(sample, *args)
    (pos, steps, div, acc), wall_s = _call(samp_c, *args)
    eps = float(tuned["step_size"])
    return _finish(t_start, pos, steps, np.asarray(warm_steps).sum(), div, acc, wall_w, wall_s,
                   comp_w + comp_s, step_size=eps,
                   tuned={"step_size": eps, "mean_leapfrog_steps": float(tuned["mean_steps"])})


# ---------------------------------------------------------------------------------------
# MEADS + GHMC
# ---------------------------------------------------------------------------------------
def meads_chains(chains: int) -> int:
    """Chains MEADS runs: at least MEADS_MIN_CHAINS_PER_FOLD per fold, a multiple of the
    number of folds."""
    n = max(chains, MEADS_FOLDS * MEADS_MIN_CHAINS_PER_FOLD)
    return MEADS_FOLDS * math.ceil(n / MEADS_FOLDS)


def _meads_starts(ctx, seed: int):
    """The harness's starts, then extra ones from the posterior's own initializer."""
    import jax
    import jax.numpy as jnp

    starts = ctx["starts"]
    extra = meads_chains(starts.shape[0]) - starts.shape[0]
    if extra == 0:
        return starts
    more = ctx["flat"].init_flat(jax.random.fold_in(jax.random.PRNGKey(seed), 1), extra)
    return jnp.concatenate([starts, more.astype(starts.dtype)])


def run_meads(ctx, seed: int) -> dict:
    """MEADS (Hoffman & Sountsov 2022): generalized HMC (one leapfrog step per transition,
    persistent momentum, non-reversible slice acceptance) whose step size, damping and
    diagonal momentum scale come from the largest eigenvalues of the ensemble's scaled
    gradients and positions, with K-fold cross-chain updates.

    M = `meads_chains(C)` chains (at least 16 per fold; the harness's C starts first, the
    others drawn by `ctx["flat"].init_flat` from key fold_in(PRNGKey(seed), 1)).
    `blackjax.meads_adaptation(logdensity, num_chains=M, num_folds=4)` runs W·k steps
    (k = MEADS_STEPS_PER_DRAW; each step one fold is frozen, but every chain's step is
    computed, so M gradients per step), then `blackjax.ghmc`'s kernel with the returned
    fold-averaged `step_size`, `momentum_inverse_scale`, `alpha`, `delta` runs D·k steps per
    chain, keeping every k-th state. Gradients: one per GHMC step (`num_integration_steps`
    = 1), summed over the M chains."""
    import jax
    import jax.numpy as jnp

    import blackjax

    logdensity, C, D, W = ctx["logdensity"], ctx["chains"], ctx["draws"], ctx["warmup"]
    k = MEADS_STEPS_PER_DRAW
    starts, C = _meads_starts(ctx, seed), meads_chains(C)
    key_w, key_s = _split(seed)
    t_start = time.perf_counter()
    adaptation = blackjax.meads_adaptation(
        logdensity, num_chains=C, num_folds=MEADS_FOLDS,
        adaptation_info_fn=blackjax.adaptation.base.get_filter_adapt_info_fn(
            info_keys={"num_integration_steps"}))

    def warm(key, x):
        (states, params), info = adaptation.run(key, x, num_steps=W * k)
        return states, params, info.info.num_integration_steps

    warm_c, comp_w = _compile(warm, key_w, starts)
    (states, params, warm_steps), wall_w = _call(warm_c, key_w, starts)
    kernel = blackjax.ghmc.build_kernel()

    def sample(key, states, params):
        def step(st, kk):
            return jax.vmap(lambda a, b: kernel(a, b, logdensity, **params))(
                jax.random.split(kk, C), st)

        def body(st, kd):
            st, info = jax.lax.scan(step, st, jax.random.split(kd, k))
            return st, (st.position, info.num_integration_steps.sum(axis=0),
                        info.is_divergent.sum(axis=0), info.acceptance_rate.mean(axis=0))

        return jax.lax.scan(body, states, jax.random.split(key, D))[1]

    samp_c, comp_s = _compile(sample, key_s, states, params)
    (pos, steps, div, acc), wall_s = _call(samp_c, key_s, states, params)
    eps = float(params["step_size"])
    warm_grads = np.asarray(jnp.broadcast_to(warm_steps, (W * k, C))).sum()
    return _finish(t_start, pos, steps, warm_grads, div, acc, wall_w, wall_s, comp_w + comp_s,
                   step_size=eps, chains_run=C,
                   tuned={"step_size": eps, "alpha": float(params["alpha"]),
                          "delta": float(params["delta"]), "steps_per_draw": k,
                          "warmup_steps": W * k})


# ---------------------------------------------------------------------------------------
# MAMS: Metropolis-adjusted microcanonical HMC
# ---------------------------------------------------------------------------------------
def mams_tuning_steps(warmup: int) -> int:
    """`num_steps` for `adjusted_mclmc_find_L_and_step_size` so that its three passes
    (0.1 + 0.1 of num_steps, then 0.1 again, with frac_tune3 = 0) take ≈ `warmup`
    transitions: 10·⌈W/3⌉."""
    return 10 * math.ceil(warmup / 3)


def run_mams(ctx, seed: int) -> dict:
    """MAMS (Robnik, Cohn-Gordon & Seljak 2025): microcanonical (isokinetic) dynamics with a
    Metropolis-Hastings step, momentum resampled each proposal, random trajectory length.

    Per chain (vmapped): `blackjax.adjusted_mclmc_find_L_and_step_size(kernel, logdensity,
    num_steps=10·⌈W/3⌉, state, key, target=0.9, frac_tune1=0.1, frac_tune2=0.1,
    frac_tune3=0.0, diagonal_preconditioning=True)` with `kernel =
    blackjax.mcmc.adjusted_mclmc_dynamic.build_kernel(integration_steps_fn=
    make_random_trajectory_length_fn(True))` (≈ W tuning transitions), then the same kernel
    with the chain's tuned step size, diagonal inverse mass matrix and L / step_size mean
    integration steps (BlackJAX's `adjusted_mclmc_dynamic` sampler, the one its docs
    recommend over `adjusted_mclmc`). Gradients: 2 per integrator step (isokinetic
    McLachlan) × the tuner's returned step count, and × `num_integration_steps` per
    sampling transition."""
    import jax
    import jax.numpy as jnp

    import blackjax
    from blackjax.mcmc import adjusted_mclmc_dynamic as amd

    logdensity, starts = ctx["logdensity"], ctx["starts"]
    C, D, W = ctx["chains"], ctx["draws"], ctx["warmup"]
    key_w, key_s = _split(seed)
    t_start = time.perf_counter()
    kernel = amd.build_kernel(integration_steps_fn=amd.make_random_trajectory_length_fn(True))

    def tune_one(key, x):
        k_init, k_tune = jax.random.split(key)
        state = amd.init(x, logdensity, k_init)
        state, params, n_steps = blackjax.adjusted_mclmc_find_L_and_step_size(
            mclmc_kernel=kernel, logdensity_fn=logdensity, num_steps=mams_tuning_steps(W),
            state=state, rng_key=k_tune, target=MAMS_TARGET_ACCEPT, frac_tune1=0.1,
            frac_tune2=0.1, frac_tune3=0.0, diagonal_preconditioning=True)
        return state, params, n_steps

    keys_w = jax.random.split(key_w, C)
    warm_c, comp_w = _compile(jax.vmap(tune_one), keys_w, starts)
    (states, params, warm_steps), wall_w = _call(warm_c, keys_w, starts)

    def sample(key, states, eps, inv_mass, avg):
        def one(kk, st, e, m, a):
            return kernel(kk, st, logdensity, e, jnp.inf, m, (a,))

        def body(st, kk):
            st, info = jax.vmap(one)(jax.random.split(kk, C), st, eps, inv_mass, avg)
            return st, (st.position, MAMS_GRADS_PER_STEP * info.num_integration_steps,
                        info.is_divergent, info.acceptance_rate)

        return jax.lax.scan(body, states, jax.random.split(key, D))[1]

    args = (key_s, states, params.step_size, params.inverse_mass_matrix,
            params.L / params.step_size)
    samp_c, comp_s = _compile(sample, *args)
    (pos, steps, div, acc), wall_s = _call(samp_c, *args)
    eps = np.asarray(params.step_size)
    return _finish(t_start, pos, steps, MAMS_GRADS_PER_STEP * np.asarray(warm_steps).sum(),
                   div, acc, wall_w, wall_s, comp_w + comp_s, step_size=float(eps.mean()),
                   step_size_chains=_mmm(eps), step_size_per_chain=eps.tolist(),
                   tuned={"mean_integration_steps": float(np.mean(args[-1])),
                          "tuning_num_steps": mams_tuning_steps(W)})


# ---------------------------------------------------------------------------------------
# NUTS with the low-rank window adaptation
# ---------------------------------------------------------------------------------------
def run_nuts_lowrank(ctx, seed: int) -> dict:
    """NUTS (Hoffman & Gelman 2014) with BlackJAX's low-rank window adaptation: Stan's
    window schedule, the metric a diagonal plus low-rank correction fitted by minimising a
    Fisher divergence between draws and gradients (the method BlackJAX cites as Seyboldt
    2026, as in nutpie).

    Per chain (vmapped, one adaptation per chain like `blackjax-nuts`):
    `blackjax.window_adaptation_low_rank(blackjax.nuts, logdensity, max_rank=10,
    initial_step_size=1.0, target_acceptance_rate=0.8, max_num_doublings=10).run(key, x, W)`,
    then `blackjax.nuts.build_kernel()` (max_num_doublings=10) with the returned step size and
    `LowRankInverseMassMatrix`. The adaptation restarts each chain at its estimated mean μ*,
    one more gradient per chain (counted in warm-up). Gradients: `num_integration_steps`."""
    import jax

    import blackjax

    logdensity, starts = ctx["logdensity"], ctx["starts"]
    C, D, W = ctx["chains"], ctx["draws"], ctx["warmup"]
    target = ctx.get("nuts_target_accept", 0.8)
    depth = ctx.get("nuts_max_tree_depth", 10)
    key_w, key_s = _split(seed)
    t_start = time.perf_counter()
    adaptation = blackjax.window_adaptation_low_rank(
        blackjax.nuts, logdensity, max_rank=10, initial_step_size=1.0,
        target_acceptance_rate=target, max_num_doublings=depth)

    def warm_one(key, x):
        (state, params), info = adaptation.run(key, x, num_steps=W)
        return state, params["step_size"], params["inverse_mass_matrix"], \
            info.info.num_integration_steps

    keys_w = jax.random.split(key_w, C)
    warm_c, comp_w = _compile(jax.vmap(warm_one), keys_w, starts)
    (states, eps, imm, warm_steps), wall_w = _call(warm_c, keys_w, starts)
    kernel = blackjax.nuts.build_kernel()

    def sample(key, states, eps, imm):
        one = lambda kk, st, e, m: kernel(kk, st, logdensity, e, m,  # noqa: E731
                                          max_num_doublings=depth)

        def body(st, kk):
            st, info = jax.vmap(one)(jax.random.split(kk, C), st, eps, imm)
            return st, (st.position, info.num_integration_steps, info.is_divergent,
                        info.acceptance_rate)

        return jax.lax.scan(body, states, jax.random.split(key, D))[1]

    samp_c, comp_s = _compile(sample, key_s, states, eps, imm)
    (pos, steps, div, acc), wall_s = _call(samp_c, key_s, states, eps, imm)
    eps = np.asarray(eps)
    return _finish(t_start, pos, steps, np.asarray(warm_steps).sum() + C, div, acc, wall_w,
                   wall_s, comp_w + comp_s, step_size=float(eps.mean()),
                   step_size_chains=_mmm(eps), step_size_per_chain=eps.tolist(),
                   tuned={"max_rank": 10})


def _mmm(values) -> dict:
    v = np.asarray(values, dtype=float).ravel()
    return {"min": float(v.min()), "median": float(np.median(v)), "max": float(v.max())}


RUNNERS = {"blackjax-chees": run_chees, "blackjax-meads": run_meads,
           "blackjax-mams": run_mams, "blackjax-nuts-lowrank": run_nuts_lowrank}
