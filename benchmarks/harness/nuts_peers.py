"""NumPyro's and BlackJAX's NUTS, configured as bomcmc's (settings.py: diagonal metric, Stan's
window warm-up towards δ = 0.8 from ε₀ = 1 and M⁻¹ = I, at most 10 doublings; Hoffman &
Gelman 2014), on the harness's flat log density from the harness's starting points.

NumPyro and BlackJAX are used only here (the optional `bench` extra) and imported lazily.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from .floor import CompileClock
from .settings import NUTS_DENSE_MASS, NUTS_MAX_TREE_DEPTH, NUTS_TARGET_ACCEPT
from .stats import lockstep_factor, mmm


def need(module: str):
    """The optional library `module`, or an exit with the install hint."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        sys.exit(
            f"benchmarks/run.py: the '{module}' package is needed for this sampler; install "
            f"the benchmark extra: pip install -e '.[bench]' (or pip install {module})"
        )


def run_numpyro(ctx, seed: int, dense: bool = NUTS_DENSE_MASS) -> dict:
    """NumPyro's NUTS, chains vectorized: `MCMC.warmup` then `MCMC.run`; its sampling seconds
    exclude the compilation it does inside those calls (`CompileClock`). `dense`: Stan's
    windows estimate a dense metric (a covariance) instead of a diagonal one."""
    import jax

    need("numpyro")
    from numpyro.infer import MCMC, NUTS

    logdensity, starts, C = ctx["logdensity"], ctx["starts"], ctx["chains"]
    clock: CompileClock = ctx["clock"]
    key_w, key_s = jax.random.split(jax.random.PRNGKey(seed))
    t_start = time.perf_counter()
    kernel = NUTS(potential_fn=lambda x: -logdensity(x), target_accept_prob=NUTS_TARGET_ACCEPT,
                  max_tree_depth=NUTS_MAX_TREE_DEPTH, dense_mass=dense,
                  adapt_step_size=True, adapt_mass_matrix=True, step_size=1.0)
    mcmc = MCMC(kernel, num_warmup=ctx["warmup"], num_samples=ctx["draws"], num_chains=C,
                chain_method="vectorized", progress_bar=False)
    w0 = time.time()
    mcmc.warmup(key_w, init_params=starts, extra_fields=("num_steps",), collect_warmup=True)
    jax.block_until_ready(mcmc.post_warmup_state)
    w1 = time.time()
    warm_steps = np.asarray(mcmc.get_extra_fields(group_by_chain=True)["num_steps"])
    s0 = time.time()
    mcmc.run(key_s, extra_fields=("num_steps", "accept_prob"))
    draws = np.asarray(mcmc.get_samples(group_by_chain=True))
    extra = {k: np.asarray(v) for k, v in mcmc.get_extra_fields(group_by_chain=True).items()}
    s1 = time.time()
    e2e = time.perf_counter() - t_start
    # NumPyro compiles its sampling loop (`_fori_collect_loop`) inside every warmup/run call
    comp_w = clock.seconds(w0, w1, anchor="_fori_collect_loop")
    comp_s = clock.seconds(s0, s1, anchor="_fori_collect_loop")
    steps = extra["num_steps"]
    step_size = np.asarray(mcmc.last_state.adapt_state.step_size).ravel()
    return {
        "draws": draws,
        "n_grad": int(steps.sum()),
        "n_grad_warmup": int(warm_steps.sum()),
        "wall_s": (s1 - s0) - comp_s,
        "wall_s_warmup": (w1 - w0) - comp_w,
        "wall_s_incl_compile": s1 - s0,
        "wall_s_warmup_incl_compile": w1 - w0,
        "compile_s": comp_w + comp_s,
        "end_to_end_s": e2e,
        "divergences": int(extra["diverging"].sum()),
        "accept_mean": float(extra["accept_prob"].mean()),
        "step_size": float(step_size.mean()),
        "step_size_chains": mmm(step_size),
        "step_size_per_chain": step_size.tolist(),
        "lockstep_factor": lockstep_factor(steps),
        "compile_s_all_spans_in_run": clock.seconds(s0, s1),
        "sampling_wall_source": "MCMC.run wall (to samples in NumPy) minus the JAX "
                                "trace/lower/compile time spans (jax.monitoring) up to the "
                                "compilation of its sampling loop",
        "grad_steps": steps,
    }


def run_blackjax(ctx, seed: int) -> dict:
    """BlackJAX's window adaptation vmapped over chains (one adaptation per chain), then its
    NUTS kernel vmapped inside a jitted `lax.scan` over draws; both compiled ahead of time."""
    import jax

    blackjax = need("blackjax")
    logdensity, starts, C, D, W = (ctx["logdensity"], ctx["starts"], ctx["chains"],
                                   ctx["draws"], ctx["warmup"])
    key_w, key_s = jax.random.split(jax.random.PRNGKey(seed))
    keys_w = jax.random.split(key_w, C)
    t_start = time.perf_counter()

    adaptation = blackjax.window_adaptation(
        blackjax.nuts, logdensity, is_mass_matrix_diagonal=not NUTS_DENSE_MASS,
        initial_step_size=1.0, target_acceptance_rate=NUTS_TARGET_ACCEPT,
        max_num_doublings=NUTS_MAX_TREE_DEPTH)

    def warm_one(key, x):
        (state, params), info = adaptation.run(key, x, num_steps=W)
        return state, params, info.info.num_integration_steps

    c0 = time.perf_counter()
    warm = jax.jit(jax.vmap(warm_one)).lower(keys_w, starts).compile()
    compile_w = time.perf_counter() - c0
    w0 = time.perf_counter()
    states, params, warm_steps = jax.block_until_ready(warm(keys_w, starts))
    wall_w = time.perf_counter() - w0

    kernel = blackjax.nuts.build_kernel()
    step_all = jax.vmap(lambda k, s, e, m: kernel(k, s, logdensity, e, m,
                                                  max_num_doublings=NUTS_MAX_TREE_DEPTH))

    def sample(key, states, step_size, inv_mass):
        def body(st, k):
            st, info = step_all(jax.random.split(k, C), st, step_size, inv_mass)
            return st, (st.position, info.num_integration_steps, info.is_divergent,
                        info.acceptance_rate)

        return jax.lax.scan(body, states, jax.random.split(key, D))

    args = (key_s, states, params["step_size"], params["inverse_mass_matrix"])
    c0 = time.perf_counter()
    sample_c = jax.jit(sample).lower(*args).compile()
    compile_s = time.perf_counter() - c0
    s0 = time.perf_counter()
    out = jax.block_until_ready(sample_c(*args))
    wall_s = time.perf_counter() - s0
    _, (pos, steps, div, acc) = out
    draws = np.swapaxes(np.asarray(pos), 0, 1)  # (C, D, d)
    steps = np.asarray(steps).T  # (C, D)
    e2e = time.perf_counter() - t_start
    return {
        "draws": draws,
        "n_grad": int(steps.sum()),
        "n_grad_warmup": int(np.asarray(warm_steps).sum()),
        "wall_s": wall_s,
        "wall_s_warmup": wall_w,
        "compile_s": compile_w + compile_s,
        "end_to_end_s": e2e,
        "divergences": int(np.asarray(div).sum()),
        "accept_mean": float(np.asarray(acc).mean()),
        "step_size": float(np.asarray(params["step_size"]).mean()),
        "step_size_chains": mmm(np.asarray(params["step_size"])),
        "step_size_per_chain": np.asarray(params["step_size"]).ravel().tolist(),
        "lockstep_factor": lockstep_factor(steps),
        "sampling_wall_source": "jitted lax.scan, compiled ahead of time (.lower().compile())",
    }


def run_numpyro_dense(ctx, seed: int) -> dict:
    """`numpyro-nuts` with a dense metric (`dense_mass=True`): the dense-metric NUTS peer."""
    return run_numpyro(ctx, seed, dense=True)


RUNNERS = {"numpyro-nuts": run_numpyro, "numpyro-nuts-dense": run_numpyro_dense,
           "blackjax-nuts": run_blackjax}
