#!/usr/bin/env python
"""Side-by-side sampler benchmark: bomcmc HMC and NUTS vs NumPyro NUTS vs BlackJAX NUTS
and BlackJAX's self-tuning samplers (ChEES-HMC, MEADS, MAMS, NUTS with a low-rank metric;
benchmarks/peers_blackjax.py).

    python benchmarks/run.py --posteriors logistic-german \
        --samplers bomcmc-hmc,numpyro-nuts,blackjax-nuts --chains 4 --draws 1000 \
        --warmup 1000 --repeats 3 [--cache-check] [--tag NAME] [--float64]
    python benchmarks/run.py --posteriors sblri-blr,logistic-german,... \
        --samplers bomcmc-nuts,numpyro-nuts,blackjax-nuts --repeats 3

Everything runs in one process, sampler after sampler, repeat after repeat, so the figures
share the machine's state. It writes `benchmarks/results/<tag or timestamp>.json` (every
repeat, plus the median over repeats of every figure) and regenerates the generated part of
`docs/benchmarks.md` (hand-written text outside the GENERATED markers is kept).
`--doc-from FILE.json ...` rebuilds the document from saved results without sampling.

Figures for each (posterior, sampler), see benchmarks/README.md for the precise definitions:
ESS per gradient and per second (min / median / max over coordinates; ArviZ bulk ESS;
gradients and seconds of the sampling phase, gradients summed over chains), warm-up
gradients, divergences, end-to-end seconds (compilation included), and the overhead ratio
= (sampling seconds / gradients per chain) / floor, where floor is the seconds per
evaluation of `vmap(grad(logdensity))` over the same chains, N times inside one compiled
`lax.fori_loop` (a call after the first is timed), and the same ratio against the floor of
`vmap(value_and_grad(logdensity))` with the value kept live, which is what HMC and NUTS
evaluate and which on XLA CPU can be the faster program of the two. When bomcmc-nuts runs
next to another NUTS, a summary gives bomcmc ÷ NumPyro and ÷ BlackJAX of min ESS/grad and
min ESS/s per posterior and the checks ESS/s ≥ 1×, ESS/grad within ±20 %. Every run also
reports ESS per 1000 gradients with and without the warm-up's gradients, its largest R-hat,
and how far its posterior means are from a reference (the exact means where bomcmc has them,
else a long bomcmc NUTS run) as max |z| in MCSE units, flagged above 4.

NumPyro and BlackJAX are used only here (the optional `bench` extra) and imported lazily.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "benchmarks" / "results"
DOC_PATH = ROOT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- BEGIN GENERATED (benchmarks/run.py) -->", "<!-- END GENERATED -->"

# BlackJAX's self-tuning samplers, run by benchmarks/peers_blackjax.py
PEER_SAMPLERS = ("blackjax-chees", "blackjax-meads", "blackjax-mams", "blackjax-nuts-lowrank")
# nutpie's NUTS, run by benchmarks/peers_nutpie.py
NUTPIE_SAMPLERS = ("nutpie", "nutpie-lowrank")
ALL_SAMPLERS = ("bomcmc-hmc", "bomcmc-nuts", "bomcmc-ahmc", "bomcmc-ahmc-paper", "bomcmc-amams",
                "numpyro-nuts", "blackjax-nuts",
                "bare-hmc") + PEER_SAMPLERS + NUTPIE_SAMPLERS
DEFAULT_SAMPLERS = "bomcmc-hmc,numpyro-nuts,blackjax-nuts"
NUTS_SAMPLERS = ("bomcmc-nuts", "numpyro-nuts", "blackjax-nuts")

# The NUTS settings every NUTS sampler gets, spelled out to each library (they are also all
# three libraries' defaults): diagonal metric, Stan's window warm-up targeting δ = 0.8 from
# ε₀ = 1 and M⁻¹ = I, at most 10 doublings.
NUTS_TARGET_ACCEPT = 0.8
NUTS_MAX_TREE_DEPTH = 10
NUTS_DENSE_MASS = False

# Fixed HMC knobs (step size ε, leapfrog steps L) per posterior for bomcmc-hmc and the bare
# reference loop. The HMC warm-up is plain burn-in at these knobs (no adaptation yet).
# logistic-german: ε=0.05, L=10 gives mean acceptance ≈ 0.85 in float32 (checked).
HMC_KNOBS: dict[str, tuple[float, int]] = {
    "logistic-german": (0.05, 10),
    "logistic-australian": (0.05, 10),
    "logistic-heart": (0.05, 10),
    "logistic-pima": (0.05, 10),
    "logistic-ripley": (0.05, 10),
    "gauss-2d-corr": (0.1, 20),
    "gauss-2d-corr-wide": (0.1, 20),
    "gauss-100-illcond": (0.01, 100),
    "gauss-iid-100": (0.3, 10),
}
DEFAULT_KNOBS = (0.1, 10)


# ---------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------
def _mmm(values) -> dict:
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    if v.size == 0:
        return {"min": None, "median": None, "max": None}
    return {"min": float(v.min()), "median": float(np.median(v)), "max": float(v.max())}


def _median_tree(records: list):
    """Median over repeats of every numeric leaf; other leaves taken from the first."""
    first = records[0]
    if isinstance(first, dict):
        return {k: _median_tree([r.get(k) for r in records]) for k in first}
    nums = [r for r in records if isinstance(r, (int, float)) and not isinstance(r, bool)]
    if nums and len(nums) == len(records):
        finite = [x for x in nums if math.isfinite(x)]
        return float(statistics.median(finite)) if finite else None
    return first


def _median_with_flags(records: list) -> dict:
    """_median_tree, with the correctness flag raised when any repeat raised it."""
    med = _median_tree(records)
    if any("mean_z_flag" in r for r in records):
        med["mean_z_flag"] = any(bool(r.get("mean_z_flag")) for r in records)
    return med


def _clean(x):
    """NaN-safe JSON conversion: the library's own (imported late, after the JAX set-up)."""
    from bomcmc.diagnostics import clean_json as clean

    return clean(x)


def _lockstep_factor(steps: np.ndarray) -> float:
    """steps: (chains, draws) gradient evaluations per transition. With vmapped chains every
    transition costs as much as its slowest chain: Σ_t max_c n / Σ_t mean_c n (1 for fixed L)."""
    steps = np.asarray(steps, dtype=float)
    mean = steps.mean(axis=0).sum()
    return float(steps.max(axis=0).sum() / mean) if mean > 0 else float("nan")


def _need(module: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        sys.exit(
            f"benchmarks/run.py: the '{module}' package is needed for this sampler; install "
            f"the benchmark extra: pip install -e '.[bench]' (or pip install {module})"
        )


class CompileClock:
    """Wall-clock time JAX spends tracing, lowering and compiling, from jax.monitoring
    time spans (nested spans are merged), so a library that compiles inside its own run
    call (NumPyro's MCMC.run) can have its sampling seconds reported without compilation."""

    EVENTS = (
        "/jax/core/compile/jaxpr_trace_duration",
        "/jax/core/compile/jaxpr_to_mlir_module_duration",
        "/jax/core/compile/backend_compile_duration",
    )

    def __init__(self):
        import jax

        self.spans: list[tuple[float, float, str]] = []
        jax.monitoring.register_event_time_span_listener(self._on_span)

    def _on_span(self, event, start, end, **kw):
        if event in self.EVENTS:
            self.spans.append((start, end, str(kw.get("fun_name", ""))))

    def seconds(self, t0: float, t1: float, anchor: str | None = None) -> float:
        """Union of the compile spans inside [t0, t1] (time.time() clock).

        With `anchor` (a function name), only spans up to the end of the last span of that
        function count: everything compiled before the main program is dispatched runs on
        the calling thread with nothing executing, while small functions compiled after it
        (e.g. a swapaxes on the results) overlap its asynchronous execution and must not be
        subtracted from the wall time."""
        spans = [(max(a, t0), min(b, t1), n) for a, b, n in self.spans if b > t0 and a < t1]
        if anchor is not None:
            ends = [b for _, b, n in spans if anchor in n]
            if not ends:
                return 0.0
            spans = [(a, min(b, max(ends)), n) for a, b, n in spans if a < max(ends)]
        total, cur_a, cur_b = 0.0, None, None
        for a, b, _ in sorted(spans):
            if cur_b is None or a > cur_b:
                if cur_b is not None:
                    total += cur_b - cur_a
                cur_a, cur_b = a, b
            else:
                cur_b = max(cur_b, b)
        if cur_b is not None:
            total += cur_b - cur_a
        return total


# ---------------------------------------------------------------------------------------
# The gradient floor
# ---------------------------------------------------------------------------------------
def make_floor(logdensity, starts, n_evals: int, with_value: bool = False):
    """Compiled `x -> x after n_evals chained gradient evaluations` over the chains.

    The brief's floor (`with_value=False`): `vmap(grad(logdensity))`, x ← x + 1e-9·∇ log π(x),
    so XLA can neither hoist nor drop an evaluation. `with_value=True`: `vmap(value_and_grad)`
    with the log density summed into the carry, so the value is not dead code; this is the
    work an HMC/NUTS step needs (the integrator keeps log π for the accept step), and on XLA
    CPU it can compile to a *faster* program than grad alone (see docs/benchmarks.md)."""
    import jax
    import jax.numpy as jnp

    if with_value:
        vg = jax.vmap(jax.value_and_grad(logdensity))

        def loop(x):
            def body(i, c):
                x, acc = c
                lp, g = vg(x)
                return x + 1e-9 * g, acc + lp

            return jax.lax.fori_loop(0, n_evals, body, (x, jnp.zeros(x.shape[:1], x.dtype)))
    else:
        grad = jax.vmap(jax.grad(logdensity))

        def loop(x):
            return jax.lax.fori_loop(0, n_evals, lambda i, x: x + 1e-9 * grad(x), x)

    fn = jax.jit(loop).lower(starts).compile()
    jax.block_until_ready(fn(starts))  # first call (allocations, thread pools)
    return fn


def time_floor(fn, starts, n_evals: int) -> float:
    """Seconds per vmapped gradient evaluation: a call after the first (compiled and run
    once already by make_floor)."""
    import jax

    t0 = time.perf_counter()
    jax.block_until_ready(fn(starts))
    return (time.perf_counter() - t0) / n_evals


# ---------------------------------------------------------------------------------------
# Samplers: each returns a dict of raw figures for one run
# ---------------------------------------------------------------------------------------
def _ess_from_draws(draws: np.ndarray) -> np.ndarray:
    """draws (chains, draws, d) -> bulk ESS per coordinate (ArviZ)."""
    import arviz as az

    from bomcmc.diagnostics import flat_ess

    return flat_ess(az.from_dict(posterior={"x": np.asarray(draws)}))


def _draw_moments(draws: np.ndarray) -> dict:
    """draws (chains, draws, d) -> per coordinate: mean, sd, MCSE of the mean (ArviZ), and
    rank-normalised split R-hat (ArviZ)."""
    import arviz as az

    x = np.asarray(draws, dtype=np.float64)
    ds = az.convert_to_dataset({"x": x})
    flat = x.reshape(-1, x.shape[-1])
    return {"mean": flat.mean(axis=0), "sd": flat.std(axis=0, ddof=1),
            "mcse": np.asarray(az.mcse(ds, method="mean")["x"]),
            "rhat": np.asarray(az.rhat(ds)["x"])}


# a run's posterior means are flagged when some coordinate is further than this many MCSEs
# (run's and reference's combined) from the reference
Z_FLAG = 4.0


def summarize_draws(raw: dict, ref: dict | None) -> dict:
    """Replace a runner's `draws` by what the figures need: bulk ESS per coordinate,
    R-hat, and the comparison of the posterior means with the reference `ref` ({"mean",
    "mcse", "source"} per coordinate, or None): z_i = |mean_i − ref_i| / sqrt(MCSE_i² +
    ref MCSE_i²), reported as max |z| and flagged above Z_FLAG. A runner's `grad_steps`
    ((C, D) gradients per draw) gives the lockstep factor when the runner did not."""
    draws = np.asarray(raw.pop("draws"))
    steps = raw.pop("grad_steps", None)
    if steps is not None and "lockstep_factor" not in raw:
        raw["lockstep_factor"] = _lockstep_factor(steps)
    raw["ess"] = _ess_from_draws(draws)
    mom = _draw_moments(draws)
    raw["rhat_max"] = float(np.nanmax(mom["rhat"]))
    if ref is not None:
        z = np.abs(mom["mean"] - ref["mean"]) / np.hypot(mom["mcse"], ref["mcse"])
        raw["mean_z_max"] = float(np.nanmax(z))
        raw["mean_z_flag"] = bool(not np.all(z <= Z_FLAG))
        raw["mean_z_coord"] = int(np.nanargmax(z))
        raw["sd_rel_err_max"] = (float(np.max(np.abs(mom["sd"] / ref["sd"] - 1.0)))
                                 if ref.get("sd") is not None else None)
        raw["reference_source"] = ref["source"]
    return raw


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
                        float64=args.float64, adapt="window",
                        target_accept=NUTS_TARGET_ACCEPT, max_tree_depth=NUTS_MAX_TREE_DEPTH,
                        dense_mass=NUTS_DENSE_MASS)
    mom = _draw_moments(_bomcmc_flat_draws(res, flat))
    return {"mean": mom["mean"], "mcse": mom["mcse"], "sd": mom["sd"],
            "source": (f"bomcmc NUTS, {args.reference_chains} chains × "
                       f"{args.reference_draws} draws (1000 warm-up), seed {seed}; "
                       f"R-hat max {np.nanmax(mom['rhat']):.3f}")}


def _bomcmc_flat_draws(res, flat) -> np.ndarray:
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


def _spread(values) -> dict:
    """min / median / max of per-chain values (e.g. adapted step sizes)."""
    return _mmm(values)


def _bomcmc_raw(res, ctx, e2e: float) -> dict:
    """The raw figures every bomcmc runner returns, from its SampleResult."""
    t = res.totals
    return {
        "draws": _bomcmc_flat_draws(res, ctx["flat"]),
        "n_grad": int(t["n_grad"]),
        "n_grad_warmup": int(t["n_grad_warmup"]),
        "wall_s": float(t["wall_s"]),
        "wall_s_warmup": float(t["wall_s_warmup"]),
        "compile_s": float(t["compile_s"]),
        "end_to_end_s": e2e,
        "divergences": int(t["divergences"]),
        "accept_mean": float(t["accept_mean"]),
        "lockstep_factor": _lockstep_factor(np.asarray(res.idata.sample_stats["n_grad"])),
        "sampling_wall_source": "bomcmc totals['wall_s'] (chunk calls; compiled ahead of time)",
    }


def run_bomcmc(ctx, seed: int) -> dict:
    import bomcmc

    eps, L = ctx["knobs"]
    t0 = time.perf_counter()
    res = bomcmc.sample(
        posterior=ctx["name"], sampler="hmc", chains=ctx["chains"], draws=ctx["draws"],
        warmup=ctx["warmup"], seed=seed, step_size=eps, steps=L, progress=False,
        float64=ctx["float64"],
    )
    return {**_bomcmc_raw(res, ctx, time.perf_counter() - t0), "step_size": eps,
            "knobs": {"step_size": eps, "steps": L}}


def run_bomcmc_nuts(ctx, seed: int) -> dict:
    """bomcmc's NUTS (BlackJAX's kernel in bomcmc's chunk driver) with Stan's window
    warm-up inside the compiled chunk (the default for sampler="nuts"), from the starting
    points bomcmc draws for `seed` (= ctx["starts"], which the other samplers get too)."""
    import bomcmc

    t0 = time.perf_counter()
    res = bomcmc.sample(
        posterior=ctx["name"], sampler="nuts", chains=ctx["chains"], draws=ctx["draws"],
        warmup=ctx["warmup"], seed=seed, progress=False, float64=ctx["float64"],
        adapt="window", target_accept=NUTS_TARGET_ACCEPT, max_tree_depth=NUTS_MAX_TREE_DEPTH,
        dense_mass=NUTS_DENSE_MASS,
    )
    ss = res.idata.sample_stats
    eps = np.asarray(ss["step_size"])[:, -1]  # per chain: the adapted ε used while sampling
    return {**_bomcmc_raw(res, ctx, time.perf_counter() - t0),
            "step_size": float(eps.mean()),
            "step_size_chains": _spread(eps),
            "step_size_per_chain": eps.tolist(),
            "tree_depth_mean": float(np.asarray(ss["tree_depth"]).mean())}


def run_bomcmc_ahmc(ctx, seed: int, sampler: str = "ahmc", **options) -> dict:
    """bomcmc's adaptive HMC with its defaults (nothing set per posterior): the GP bandit
    tunes (ε, L) over the warm-up's 100 BO steps, one setting per group of chains (batch
    burn-in), and goes on adapting with vanishing probability while sampling; its default
    metric (`mass="auto"`: diagonal, or dense where the posterior's correlations call for
    it) is learned in burn-in. The warm-up's gradients include the bandit's exploration and
    the L-BFGS start (`kernels/ahmc.py`)."""
    import bomcmc

    t0 = time.perf_counter()
    res = bomcmc.sample(
        posterior=ctx["name"], sampler=sampler, chains=ctx["chains"], draws=ctx["draws"],
        warmup=ctx["warmup"], seed=seed, progress=False, float64=ctx["float64"], **options,
    )
    ss = res.idata.sample_stats
    eps = np.asarray(ss["step_size"]) if "step_size" in ss else np.array([np.nan])
    return {**_bomcmc_raw(res, ctx, time.perf_counter() - t0),
            "step_size": float(np.nanmean(eps))}


def run_bomcmc_ahmc_paper(ctx, seed: int) -> dict:
    """`bomcmc-ahmc` with the paper's burn-in: one (ε, L) for all chains and the whole L box
    from the start (batch=1, steps_cap=0), to measure what the batch burn-in changes."""
    return run_bomcmc_ahmc(ctx, seed, batch=1, steps_cap=0)


def run_bomcmc_amams(ctx, seed: int) -> dict:
    """bomcmc's `amams` with its defaults: adaptive HMC's bandit, schedule, L-BFGS start and
    learned diagonal metric driving MAMS's transition (`kernels/mams.py`) instead of HMC's."""
    return run_bomcmc_ahmc(ctx, seed, sampler="amams")


def run_numpyro(ctx, seed: int) -> dict:
    import jax

    _need("numpyro")
    from numpyro.infer import MCMC, NUTS

    logdensity, starts, C = ctx["logdensity"], ctx["starts"], ctx["chains"]
    clock: CompileClock = ctx["clock"]
    key_w, key_s = jax.random.split(jax.random.PRNGKey(seed))
    t_start = time.perf_counter()
    kernel = NUTS(potential_fn=lambda x: -logdensity(x), target_accept_prob=NUTS_TARGET_ACCEPT,
                  max_tree_depth=NUTS_MAX_TREE_DEPTH, dense_mass=NUTS_DENSE_MASS,
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
        "step_size_chains": _spread(step_size),
        "step_size_per_chain": step_size.tolist(),
        "lockstep_factor": _lockstep_factor(steps),
        "compile_s_all_spans_in_run": clock.seconds(s0, s1),
        "sampling_wall_source": "MCMC.run wall (to samples in NumPy) minus the JAX "
                                "trace/lower/compile time spans (jax.monitoring) up to the "
                                "compilation of its sampling loop",
    }


def run_blackjax(ctx, seed: int) -> dict:
    import jax

    blackjax = _need("blackjax")
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
        "step_size_chains": _spread(np.asarray(params["step_size"])),
        "step_size_per_chain": np.asarray(params["step_size"]).ravel().tolist(),
        "lockstep_factor": _lockstep_factor(steps),
        "sampling_wall_source": "jitted lax.scan, compiled ahead of time (.lower().compile())",
    }


def run_bare_hmc(ctx, seed: int) -> dict:
    """Reference: the same fixed-L HMC as bomcmc (value_and_grad leapfrog in a fori_loop,
    Metropolis accept), written directly as one lax.scan over draws of the chains vmapped;
    no chunks, no buffers, no info records. Shows what the driver itself costs."""
    import jax
    import jax.numpy as jnp

    logdensity, starts, C, D, W = (ctx["logdensity"], ctx["starts"], ctx["chains"],
                                   ctx["draws"], ctx["warmup"])
    eps, L = ctx["knobs"]
    vg = jax.value_and_grad(logdensity)

    def hmc_step(key, x, lp, g):
        kp, ku = jax.random.split(key)
        p0 = jax.random.normal(kp, x.shape, x.dtype)

        def leap(_, s):
            x, p, _, g = s
            p = p + 0.5 * eps * g
            x = x + eps * p
            lp, g = vg(x)
            return x, p + 0.5 * eps * g, lp, g

        x1, p1, lp1, g1 = jax.lax.fori_loop(0, L, leap, (x, p0, lp, g))
        delta = (-lp1 + 0.5 * p1 @ p1) - (-lp + 0.5 * p0 @ p0)
        acc = jnp.where(jnp.isfinite(delta), jnp.minimum(1.0, jnp.exp(-delta)), 0.0)
        ok = jax.random.uniform(ku, (), x.dtype) < acc
        pick = lambda a, b: jnp.where(ok, a, b)  # noqa: E731
        return pick(x1, x), pick(lp1, lp), pick(g1, g), acc

    step_all = jax.vmap(hmc_step)

    def run(key, xs, n: int):
        lps, gs = jax.vmap(vg)(xs)

        def body(carry, k):
            xs, lps, gs = carry
            xs, lps, gs, acc = step_all(jax.random.split(k, C), xs, lps, gs)
            return (xs, lps, gs), (xs, acc)

        return jax.lax.scan(body, (xs, lps, gs), jax.random.split(key, n))

    key_w, key_s = jax.random.split(jax.random.PRNGKey(seed))
    t_start = time.perf_counter()
    warm_c = jax.jit(lambda k, x: run(k, x, W)[0][0]).lower(key_w, starts).compile() \
        if W > 0 else None
    samp_c = jax.jit(lambda k, x: run(k, x, D)).lower(key_s, starts).compile()
    compile_s = time.perf_counter() - t_start
    w0 = time.perf_counter()
    xs = jax.block_until_ready(warm_c(key_w, starts)) if W > 0 else starts
    wall_w = time.perf_counter() - w0
    s0 = time.perf_counter()
    _, (pos, acc) = jax.block_until_ready(samp_c(key_s, xs))
    wall_s = time.perf_counter() - s0
    draws = np.swapaxes(np.asarray(pos), 0, 1)
    e2e = time.perf_counter() - t_start
    return {
        "draws": draws,
        "n_grad": C * D * L,
        "n_grad_warmup": C * W * L,
        "wall_s": wall_s,
        "wall_s_warmup": wall_w,
        "compile_s": compile_s,
        "end_to_end_s": e2e,
        "divergences": 0,
        "accept_mean": float(np.asarray(acc).mean()),
        "step_size": eps,
        "lockstep_factor": 1.0,
        "knobs": {"step_size": eps, "steps": L},
        "sampling_wall_source": "jitted lax.scan, compiled ahead of time",
    }


def _peers_module(name: str):
    """benchmarks/<name>.py (peers_blackjax: BlackJAX's self-tuning samplers; peers_nutpie:
    nutpie), loaded from its path so this script works both run directly and imported from a
    file path."""
    import importlib.util

    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


def _peer(name: str):
    return lambda ctx, seed: _peers_module("peers_blackjax").RUNNERS[name](ctx, seed)


def _nutpie(name: str):
    return lambda ctx, seed: _peers_module("peers_nutpie").RUNNERS[name](ctx, seed)


RUNNERS = {"bomcmc-hmc": run_bomcmc, "bomcmc-nuts": run_bomcmc_nuts,
           "bomcmc-ahmc": run_bomcmc_ahmc, "bomcmc-ahmc-paper": run_bomcmc_ahmc_paper,
           "bomcmc-amams": run_bomcmc_amams,
           "numpyro-nuts": run_numpyro, "blackjax-nuts": run_blackjax,
           "bare-hmc": run_bare_hmc,
           **{name: _peer(name) for name in PEER_SAMPLERS},
           **{name: _nutpie(name) for name in NUTPIE_SAMPLERS}}


def figures(raw: dict, chains: int, floor_s: float, floor_vg_s: float) -> dict:
    """Derived figures of one run."""
    ess = raw.pop("ess")
    n_grad, wall = raw["n_grad"], raw["wall_s"]
    # a sampler may run more chains than asked (blackjax-meads: 16 per fold); its overhead
    # ratio against floors timed for the asked chains would compare different programs
    chains_run = raw.get("chains_run", chains)
    per_chain = n_grad / chains_run
    if chains_run != chains:
        floor_s = floor_vg_s = None
    out = dict(raw)
    out["ess_bulk"] = _mmm(ess)
    out["ess_per_grad"] = _mmm(ess / n_grad) if n_grad > 0 else _mmm([])
    out["ess_per_s"] = _mmm(ess / wall) if wall > 0 else _mmm([])
    # ESS per 1000 gradients, of the sampling phase alone and of warm-up + sampling
    out["ess_per_kgrad"] = _mmm(1000 * ess / n_grad) if n_grad > 0 else _mmm([])
    total = n_grad + (raw.get("n_grad_warmup") or 0)
    out["ess_per_kgrad_incl_warmup"] = _mmm(1000 * ess / total) if total > 0 else _mmm([])
    out["grads_per_chain"] = per_chain
    out["s_per_grad_per_chain"] = wall / per_chain if per_chain > 0 else None
    out["floor_s"] = floor_s
    out["overhead_ratio"] = (wall / per_chain) / floor_s if per_chain > 0 and floor_s else None
    out["floor_vg_s"] = floor_vg_s
    out["overhead_ratio_vg"] = ((wall / per_chain) / floor_vg_s
                                if per_chain > 0 and floor_vg_s else None)
    lf = raw.get("lockstep_factor")
    out["overhead_ratio_lockstep_adjusted"] = (
        out["overhead_ratio"] / lf if out["overhead_ratio"] and lf else None)
    return out


# ---------------------------------------------------------------------------------------
# The compile-cache check: two fresh processes sharing one cache directory
# ---------------------------------------------------------------------------------------
CACHE_SNIPPET = """\
import json, time
t0 = time.perf_counter()
import bomcmc
bomcmc.enable_compilation_cache({cache!r})
r = bomcmc.sample(posterior={posterior!r}, sampler="hmc", chains={chains}, draws={draws},
                  warmup={warmup}, seed=0, step_size={eps}, steps={steps}, progress=False,
                  float64={f64})
t = r.totals
print("BENCH_JSON " + json.dumps({{"in_process_s": time.perf_counter() - t0,
      "compile_s": t["compile_s"], "wall_s_total": t["wall_s_total"]}}))
"""


def cache_check(posterior: str, chains: int, draws: int, warmup: int, knobs, f64: bool) -> dict:
    eps, L = knobs
    runs = []
    with tempfile.TemporaryDirectory(prefix="bomcmc-cache-") as cache:
        code = CACHE_SNIPPET.format(cache=cache, posterior=posterior, chains=chains,
                                    draws=draws, warmup=warmup, eps=eps, steps=L, f64=f64)
        env = dict(os.environ)
        env.pop("BOMCMC_NO_CACHE", None)
        for i in range(2):
            t0 = time.perf_counter()
            p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               env=env, cwd=str(ROOT))
            wall = time.perf_counter() - t0
            if p.returncode != 0:
                raise RuntimeError(f"cache check run {i + 1} failed:\n{p.stderr[-2000:]}")
            line = [x for x in p.stdout.splitlines() if x.startswith("BENCH_JSON ")][-1]
            rec = json.loads(line[len("BENCH_JSON "):])
            rec["process_s"] = wall
            runs.append(rec)
        n_files = sum(1 for _ in Path(cache).rglob("*") if _.is_file())
    return {
        "posterior": posterior, "chains": chains, "draws": draws, "warmup": warmup,
        "knobs": {"step_size": eps, "steps": L}, "float64": f64,
        "first": runs[0], "second": runs[1], "cache_files": n_files,
        "command": "python -c \"import bomcmc; bomcmc.enable_compilation_cache(DIR); "
                   f"bomcmc.sample(posterior='{posterior}', sampler='hmc', chains={chains}, "
                   f"draws={draws}, warmup={warmup}, seed=0, step_size={eps}, steps={L}, "
                   "progress=False)\" (twice, same DIR)",
    }


# ---------------------------------------------------------------------------------------
# Machine and versions
# ---------------------------------------------------------------------------------------
def machine_info() -> dict:
    import jax

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "jax_backend": jax.default_backend(),
        "jax_devices": [str(d) for d in jax.devices()],
        "loadavg_at_start": load,
    }


def versions() -> dict:
    from importlib import metadata

    out = {}
    for pkg in ("bomcmc", "jax", "jaxlib", "numpyro", "blackjax", "arviz", "numpy"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    try:
        out["bomcmc_git"] = subprocess.run(
            ["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
            capture_output=True, text=True, timeout=10).stdout.strip() or None
    except Exception:  # noqa: BLE001
        out["bomcmc_git"] = None
    return out


# ---------------------------------------------------------------------------------------
# The document
# ---------------------------------------------------------------------------------------
def _f(v, fmt="{:.3g}"):
    return "–" if v is None else fmt.format(v)


def _mmm_str(d, fmt="{:.3g}"):
    return " / ".join(_f(d.get(k), fmt) for k in ("min", "median", "max"))


def _mm_str(d, fmt="{:.3g}"):
    d = d or {}
    return " / ".join(_f(d.get(k), fmt) for k in ("min", "median"))


def nuts_comparison(result: dict) -> dict:
    """Per posterior, bomcmc-nuts ÷ NumPyro and ÷ BlackJAX of min ESS per gradient and of
    min ESS per second (each the median over repeats first, then the ratio; the per-repeat
    ratios, same seed and starts, are kept for the spread), and the two checks of the NUTS
    issue: ESS/s ≥ 1× each, ESS/grad within ±20 % of each. Empty unless bomcmc-nuts ran
    next to another NUTS."""
    out = {}
    for name, post in result["posteriors"].items():
        sams = post["samplers"]
        if "bomcmc-nuts" not in sams:
            continue
        ours = sams["bomcmc-nuts"]
        row = {"dim": post["dim"]}
        for other in ("numpyro-nuts", "blackjax-nuts"):
            if other not in sams:
                continue
            theirs = sams[other]
            r = {}
            for fig in ("ess_per_grad", "ess_per_s"):
                a_ = ours["median"][fig]["min"]
                b_ = theirs["median"][fig]["min"]
                r[fig] = a_ / b_ if a_ and b_ else None
                reps = [x[fig]["min"] / y[fig]["min"]
                        for x, y in zip(ours["repeats"], theirs["repeats"])
                        if x[fig]["min"] and y[fig]["min"]]
                r[fig + "_per_repeat"] = reps
            # seconds per gradient of the slowest chain (wall ÷ Σ_t max_c n): the speed of
            # the code, free of how many steps the adapted ε and metric happened to need
            cost = [[x["s_per_grad_per_chain"] / x["lockstep_factor"] for x in q["repeats"]
                     if x.get("s_per_grad_per_chain") and x.get("lockstep_factor")]
                    for q in (ours, theirs)]
            r["s_per_lockstep_grad"] = (statistics.median(cost[0]) / statistics.median(cost[1])
                                        if cost[0] and cost[1] else None)
            r["s_per_lockstep_grad_per_repeat"] = [a_ / b_ for a_, b_ in zip(*cost)]
            r["ess_per_s_ok"] = r["ess_per_s"] is not None and r["ess_per_s"] >= 1.0
            r["ess_per_grad_ok"] = (r["ess_per_grad"] is not None
                                    and abs(r["ess_per_grad"] - 1.0) <= 0.2)
            row[other] = r
        out[name] = row
    return out


def _ratio_cell(r: dict | None, fig: str) -> str:
    if not r or r.get(fig) is None:
        return "–"
    reps = r.get(fig + "_per_repeat") or []
    spread = f" ({min(reps):.2f}–{max(reps):.2f})" if len(reps) > 1 else ""
    return f"{r[fig]:.2f}{spread}"


def render_nuts_summary(result: dict, title: str = "NUTS: bomcmc ÷ NumPyro and ÷ BlackJAX"
                        ) -> list[str]:
    comp = nuts_comparison(result)
    if not comp:
        return []
    others = [o for o in ("numpyro-nuts", "blackjax-nuts")
              if any(o in row for row in comp.values())]
    short = {"numpyro-nuts": "NumPyro", "blackjax-nuts": "BlackJAX"}
    names = ["bomcmc"] + [short[o] for o in others]
    lines = [
        f"#### {title}",
        "",
        "Ratios of medians over repeats (in brackets: the lowest and highest per-repeat "
        "ratio, same seed and starting points). Checks: ESS/s ratio ≥ 1 against each, "
        "ESS/grad ratio within 1 ± 0.2 against each. \"s per lockstep grad\" = sampling "
        "seconds ÷ Σ_t max_c n_{t,c} (gradients of the slowest chain per transition): the "
        "cost of the code per gradient, free of how long the trajectories happened to be; "
        "below 1 means bomcmc's code is faster.",
        "",
        f"| posterior | d | min ESS/grad ({' / '.join(names)}) "
        + "".join(f"| ESS/grad ÷ {short[o]} " for o in others)
        + f"| min ESS/s ({' / '.join(names)}) "
        + "".join(f"| ESS/s ÷ {short[o]} " for o in others)
        + "".join(f"| s per lockstep grad ÷ {short[o]} " for o in others)
        + f"| adapted ε, median over chains ({' / '.join(names)}) "
        + f"| grads/draw ({' / '.join(names)}) "
        + f"| div. ({' / '.join(names)}) | ESS/grad ±20 % | ESS/s ≥ |",
        "|" + "---|" * (2 + 1 + len(others) + 1 + 2 * len(others) + 3 + 2),
    ]
    chains, draws = result["meta"]["args"]["chains"], result["meta"]["args"]["draws"]
    for name, row in comp.items():
        sams = result["posteriors"][name]["samplers"]
        order = ["bomcmc-nuts"] + others
        med = [sams[o]["median"] if o in sams else {} for o in order]
        epg = " / ".join(_f((m_.get("ess_per_grad") or {}).get("min"), "{:.3g}") for m_ in med)
        eps_ = " / ".join(_f((m_.get("ess_per_s") or {}).get("min"), "{:.3g}") for m_ in med)
        step = " / ".join(_f((m_.get("step_size_chains") or {}).get("median"), "{:.3g}")
                          for m_ in med)
        gpd = " / ".join(_f(m_["n_grad"] / (chains * draws) if m_.get("n_grad") else None,
                            "{:.1f}") for m_ in med)
        div = " / ".join(_f(m_.get("divergences"), "{:.0f}") for m_ in med)
        ok_g = all(row[o]["ess_per_grad_ok"] for o in others if o in row)
        ok_s = all(row[o]["ess_per_s_ok"] for o in others if o in row)
        lines.append(
            f"| `{name}` | {row['dim']} | {epg} "
            + "".join(f"| {_ratio_cell(row.get(o), 'ess_per_grad')} " for o in others)
            + f"| {eps_} "
            + "".join(f"| {_ratio_cell(row.get(o), 'ess_per_s')} " for o in others)
            + "".join(f"| {_ratio_cell(row.get(o), 's_per_lockstep_grad')} " for o in others)
            + f"| {step} | {gpd} | {div} | {'yes' if ok_g else '**no**'} "
            f"| {'yes' if ok_s else '**no**'} |")
    return lines + [""]


def render_efficiency(post: dict) -> list[str]:
    """Per posterior: ESS per 1000 gradients with and without the warm-up's gradients, ESS
    per second, R-hat and the check of the posterior means against the reference. Empty for
    results written before these figures existed."""
    if not any("ess_per_kgrad" in s["median"] for s in post["samplers"].values()):
        return []
    ref = post.get("reference") or {}
    lines = ["", "ESS per 1000 gradients (min / median over coordinates) of the sampling "
             "phase and of warm-up + sampling; max R-hat (ArviZ rank-normalised split R-hat); "
             f"max over coordinates of |mean − reference| / MCSE (flagged above {Z_FLAG:g}). "
             f"Reference: {ref.get('source', 'none')}.", "",
             "| sampler | ESS/1000 grads, sampling | ESS/1000 grads, incl. warm-up "
             "| ESS/s min / med | warm-up grads | sampling grads | max R-hat | max \\|z\\| |",
             "|---|---|---|---|---|---|---|---|"]
    for sname, s in post["samplers"].items():
        md = s["median"]
        z = _f(md.get("mean_z_max"), "{:.2f}")
        if md.get("mean_z_flag"):
            z = f"**{z} (> {Z_FLAG:g})**"
        lines.append(
            f"| {sname} | {_mm_str(md.get('ess_per_kgrad'))} "
            f"| {_mm_str(md.get('ess_per_kgrad_incl_warmup'))} "
            f"| {_mm_str(md.get('ess_per_s'))} | {_f(md.get('n_grad_warmup'), '{:.0f}')} "
            f"| {_f(md.get('n_grad'), '{:.0f}')} | {_f(md.get('rhat_max'), '{:.3f}')} | {z} |")
    return lines


def render(result: dict) -> str:
    m, a = result["meta"], result["meta"]["args"]
    v, mach = m["versions"], m["machine"]
    lines = [
        f"### Run `{m['tag']}` — {m['date']}",
        "",
        f"- Command: `{m['command']}`",
        f"- Machine: {mach['cpu']}, {mach['cpu_count']} logical CPUs "
        f"({mach['cpu_affinity']} usable), JAX backend `{mach['jax_backend']}`; "
        f"load average at start {', '.join(f'{x:.2f}' for x in mach['loadavg_at_start'] or [])} "
        "(the machine is shared, so absolute seconds are noisy; ratios are measured side by side)",
        f"- Versions: bomcmc {v.get('bomcmc')} (git {v.get('bomcmc_git')}), jax {v.get('jax')}, "
        f"jaxlib {v.get('jaxlib')}, numpyro {v.get('numpyro')}, blackjax {v.get('blackjax')}, "
        f"arviz {v.get('arviz')}, Python {mach['python']}",
        f"- Settings: {a['chains']} chains (vmapped), {a['warmup']} warm-up + {a['draws']} draws "
        f"per chain, {'float64' if a['float64'] else 'float32'}, {a['repeats']} repeat(s) "
        f"(figures are medians over repeats), floors = {a['floor_evals']} chained "
        "`vmap(grad)` (the specified floor) or `vmap(value_and_grad)` (value kept live) "
        "evaluations in one compiled `fori_loop`, timed just before and just after each "
        "sampler run and averaged",
        "",
    ]
    lines += render_nuts_summary(result)
    for name, post in result["posteriors"].items():
        lines += [
            f"#### `{name}` (d = {post['dim']})",
            "",
            "| sampler | knobs | accept | ESS/grad min / med / max | ESS/s min / med / max "
            "| grads/draw/chain | warm-up grads | div. | sampling s | end-to-end s "
            "| floor µs grad / v+g | **overhead ratio** (grad floor) | overhead ratio (v+g floor) "
            "| lockstep | v+g ratio ÷ lockstep |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for sname, s in post["samplers"].items():
            md = s["median"]
            sc = md.get("step_size_chains")
            knobs = (f"ε={md['knobs']['step_size']:g}, L={int(md['knobs']['steps'])}"
                     if md.get("knobs") else
                     f"adapted ε {_f(sc['median'])} [{_f(sc['min'])}, {_f(sc['max'])}]"
                     if sc and sc.get("median") is not None else
                     f"adapted ε≈{_f(md.get('step_size'))}")
            gpd = (md["n_grad"] / ((md.get("chains_run") or a["chains"]) * a["draws"])
                   if md.get("n_grad") else None)
            vg = md.get("overhead_ratio_vg")
            lf = md.get("lockstep_factor")
            floors = (f"{_f(md['floor_s'] * 1e6 if md.get('floor_s') else None, '{:.1f}')} / "
                      f"{_f(md['floor_vg_s'] * 1e6 if md.get('floor_vg_s') else None, '{:.1f}')}")
            lines.append(
                f"| {sname} | {knobs} | {_f(md.get('accept_mean'), '{:.2f}')} "
                f"| {_mmm_str(md['ess_per_grad'], '{:.2g}')} "
                f"| {_mmm_str(md['ess_per_s'], '{:.3g}')} "
                f"| {_f(gpd, '{:.1f}')} | {_f(md.get('n_grad_warmup'), '{:.0f}')} "
                f"| {_f(md.get('divergences'), '{:.0f}')} | {_f(md.get('wall_s'), '{:.2f}')} "
                f"| {_f(md.get('end_to_end_s'), '{:.1f}')} | {floors} "
                f"| **{_f(md.get('overhead_ratio'), '{:.2f}')}** | {_f(vg, '{:.2f}')} "
                f"| {_f(lf, '{:.2f}')} | {_f(vg / lf if vg and lf else None, '{:.2f}')} |"
            )
        lines += render_efficiency(post)
        per_rep = []
        for sname, s in post["samplers"].items():
            ratios = ", ".join(f"{_f(r.get('overhead_ratio'), '{:.2f}')} "
                               f"({_f(r.get('overhead_ratio_vg'), '{:.2f}')})"
                               for r in s["repeats"])
            per_rep.append(f"{sname} {ratios}")
        lines += ["", "Overhead ratio per repeat, grad floor (v+g floor): "
                  f"{'; '.join(per_rep)}.", ""]
        extra = []
        for sname, s in post["samplers"].items():
            md = s["median"]
            bits = [f"sampling {_f(md.get('wall_s'), '{:.2f}')} s",
                    f"warm-up {_f(md.get('wall_s_warmup'), '{:.2f}')} s",
                    f"compile {_f(md.get('compile_s'), '{:.1f}')} s"]
            if md.get("wall_s_incl_compile") is not None:
                bits.append(f"MCMC.run incl. compile {_f(md['wall_s_incl_compile'], '{:.2f}')} s")
            extra.append(f"- {sname}: {', '.join(bits)}; ESS bulk min/med/max "
                         f"{_mmm_str(md['ess_bulk'], '{:.0f}')}")
        lines += ["Seconds (medians):", ""] + extra + [""]
    cc = result.get("cache_check")
    if cc:
        lines += [
            "#### Persistent compilation cache",
            "",
            f"Two fresh processes, same cache directory: `{cc['command']}`.",
            "",
            "| run | process wall s (incl. Python + imports) | `bomcmc.sample` wall_s_total "
            "| compile_s |",
            "|---|---|---|---|",
        ]
        for which in ("first", "second"):
            r = cc[which]
            lines.append(f"| {which} | {r['process_s']:.2f} | {r['wall_s_total']:.2f} "
                         f"| {r['compile_s']:.2f} |")
        lines += ["", f"Cache entries written: {cc['cache_files']} files.", ""]
    return "\n".join(lines)


DOC_HEADER = """# Benchmarks

How bomcmc's samplers (fixed-L HMC, NUTS) compare with NumPyro's and BlackJAX's NUTS when
they run side by side in one process. Produced by `benchmarks/run.py` (see `benchmarks/README.md` for
the definitions); the section between the GENERATED markers is rewritten on every run, the
rest of this file is kept.

"""


def pool_results(results: list[dict]) -> dict | None:
    """The repeats of several runs with the same settings (chains, draws, warm-up, float)
    pooled per posterior, for the samplers every contributing run has (so per-repeat pairs
    stay aligned); a seed already pooled for a posterior is not pooled again (repeat r of a
    run has seed `--seed` + r). Medians are recomputed. None unless at least two runs hold
    bomcmc-nuts."""
    runs = [r for r in results
            if any("bomcmc-nuts" in p["samplers"] for p in r["posteriors"].values())]
    if len(runs) < 2:
        return None
    key = lambda r: tuple(r["meta"]["args"][k] for k in ("chains", "draws", "warmup",  # noqa: E731
                                                          "float64"))
    runs = [r for r in runs if key(r) == key(runs[0])]
    if len(runs) < 2:
        return None
    pooled, used = {}, set()
    names = list(dict.fromkeys(n for r in runs for n in r["posteriors"]))
    for name in names:
        have = [r for r in runs if "bomcmc-nuts" in r["posteriors"].get(name, {})
                .get("samplers", {})]
        common = [sn for sn in have[0]["posteriors"][name]["samplers"]
                  if all(sn in r["posteriors"][name]["samplers"] for r in have)]
        reps = {sn: [] for sn in common}
        seeds = set()
        for r in have:
            seed0 = r["meta"]["args"]["seed"]
            sams = r["posteriors"][name]["samplers"]
            n_rep = min(len(sams[sn]["repeats"]) for sn in common)
            for i in range(n_rep):
                if seed0 + i in seeds:
                    continue
                seeds.add(seed0 + i)
                used.add(r["meta"]["tag"])
                for sn in common:
                    reps[sn].append(sams[sn]["repeats"][i])
        pooled[name] = {
            "dim": have[0]["posteriors"][name]["dim"], "seeds": sorted(seeds),
            "samplers": {sn: {"repeats": v, "median": _median_tree(v)}
                         for sn, v in reps.items()},
        }
    meta = dict(runs[0]["meta"])
    meta["tag"] = " + ".join(r["meta"]["tag"] for r in runs if r["meta"]["tag"] in used)
    n_max = max(len(p["seeds"]) for p in pooled.values())
    meta["args"] = dict(meta["args"], repeats=n_max)
    return {"meta": meta, "posteriors": pooled}


def render_pooled(results: list[dict]) -> str:
    pooled = pool_results(results)
    if pooled is None:
        return ""
    tags = ", ".join(f"`{r['meta']['tag']}`" for r in results
                     if r["meta"]["tag"] in pooled["meta"]["tag"].split(" + "))
    counts = sorted({len(p["seeds"]) for p in pooled["posteriors"].values()})
    lines = [f"### NUTS, the repeats of runs {tags} pooled",
             "",
             f"{' or '.join(map(str, counts))} repeats per posterior (distinct seeds; sampler "
             "order and machine load as in each run below). Figures are medians over the "
             "pooled repeats.", ""]
    lines += render_nuts_summary(pooled, "NUTS, pooled: bomcmc ÷ NumPyro and ÷ BlackJAX")
    return "\n".join(lines)


def write_doc(results: list[dict], path: Path = DOC_PATH) -> None:
    pooled = render_pooled(results)
    body = "\n\n".join(([pooled] if pooled else []) + [render(r) for r in results])
    block = f"{BEGIN}\n\n{body}\n\n{END}"
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        text = path.read_text()
        if BEGIN in text and END in text:
            pre, rest = text.split(BEGIN, 1)
            post = rest.split(END, 1)[1]
            path.write_text(pre + block + post)
            return
    path.write_text(DOC_HEADER + block + "\n")


# ---------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--posteriors", default="logistic-german",
                   help="comma-separated built-in posterior names")
    p.add_argument("--samplers", default=DEFAULT_SAMPLERS,
                   help=f"comma-separated, from {', '.join(ALL_SAMPLERS)}")
    p.add_argument("--chains", type=int, default=4)
    p.add_argument("--draws", type=int, default=1000)
    p.add_argument("--warmup", type=int, default=1000)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--seed", type=int, default=0, help="repeat r uses seed + r")
    p.add_argument("--step-size", type=float, default=None,
                   help="HMC step size for every posterior (default: the table in this file)")
    p.add_argument("--steps", type=int, default=None, help="HMC leapfrog steps L")
    p.add_argument("--float64", action="store_true")
    p.add_argument("--reference-draws", type=int, default=10000,
                   help="draws per chain of the bomcmc NUTS reference run that every run's "
                        "posterior means are checked against, for posteriors without exact "
                        "moments (0: no check for those)")
    p.add_argument("--reference-chains", type=int, default=8)
    p.add_argument("--floor-evals", type=int, default=20000,
                   help="gradient evaluations in the floor's fori_loop")
    p.add_argument("--tag", default=None, help="results file name (default: a timestamp)")
    p.add_argument("--results-dir", default=str(RESULTS_DIR))
    p.add_argument("--doc", default=str(DOC_PATH), help="markdown file to regenerate")
    p.add_argument("--no-doc", action="store_true", help="do not touch the markdown file")
    p.add_argument("--cache-check", action="store_true",
                   help="also time two fresh processes sharing a compilation cache")
    p.add_argument("--cache-posterior", default="logistic-german")
    p.add_argument("--doc-from", nargs="+", default=None, metavar="JSON",
                   help="only rebuild the document from saved results files")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.doc_from:
        write_doc([json.loads(Path(f).read_text()) for f in args.doc_from], Path(args.doc))
        print(f"wrote {args.doc}")
        return 0
    samplers = [s.strip() for s in args.samplers.split(",") if s.strip()]
    bad = [s for s in samplers if s not in RUNNERS]
    if bad:
        sys.exit(f"unknown sampler(s) {bad}; choose from {', '.join(ALL_SAMPLERS)}")
    for s in samplers:  # fail fast, before any sampling, if an optional library is missing
        if s == "numpyro-nuts":
            _need("numpyro")
        if s.startswith("blackjax-"):
            _need("blackjax")
        if s in NUTPIE_SAMPLERS:
            _need("nutpie")

    import jax

    if args.float64:
        jax.config.update("jax_enable_x64", True)
    import arviz  # noqa: F401  (imported up front so no sampler pays for it)

    from bomcmc import models
    from bomcmc.posterior import flatten

    clock = CompileClock()
    posteriors = [p.strip() for p in args.posteriors.split(",") if p.strip()]
    tag = args.tag or _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    if not re.fullmatch(r"[\w.\-]+", tag):
        sys.exit("--tag may only hold letters, digits, '.', '-' and '_'")
    command = "python " + " ".join(shlex.quote(x) for x in
                                   ([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]))
    meta = {
        "tag": tag,
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": command,
        "args": vars(args),
        "machine": machine_info(),
        "versions": versions(),
    }
    result = {"meta": meta, "posteriors": {}, "cache_check": None}

    for name in posteriors:
        post = models.get(name)
        flat = flatten(post)
        knobs = HMC_KNOBS.get(name, DEFAULT_KNOBS)
        knobs = (args.step_size if args.step_size is not None else knobs[0],
                 args.steps if args.steps is not None else knobs[1])
        # the starting points bomcmc draws for a seed (uniform(-2, 2) for the built-ins) are
        # given to the other samplers too; these (seed `args.seed`) also feed the floors
        starts = flat.init_flat(jax.random.fold_in(jax.random.PRNGKey(args.seed), 0),
                                args.chains)
        floor_fn = make_floor(flat.logdensity_fn, starts, args.floor_evals)
        floor_vg_fn = make_floor(flat.logdensity_fn, starts, args.floor_evals, with_value=True)
        t_ref = time.perf_counter()
        ref = reference_moments(name, post, flat, args)
        if ref is not None:
            print(f"[{name}] reference: {ref['source']} ({time.perf_counter() - t_ref:.1f}s)",
                  flush=True)
        ctx = {"name": name, "flat": flat, "logdensity": flat.logdensity_fn, "starts": starts,
               "chains": args.chains, "draws": args.draws, "warmup": args.warmup,
               "knobs": knobs, "float64": args.float64, "clock": clock,
               "nuts_target_accept": NUTS_TARGET_ACCEPT,
               "nuts_max_tree_depth": NUTS_MAX_TREE_DEPTH}
        per = {s: [] for s in samplers}
        for rep in range(args.repeats):
            # each repeat r: seed + r, and the starting points bomcmc draws for that seed
            ctx["starts"] = flat.init_flat(
                jax.random.fold_in(jax.random.PRNGKey(args.seed + rep), 0), args.chains)
            for s in samplers:
                # the floor is timed just before and just after the sampler (the machine
                # may be shared) and the mean used
                fb = time_floor(floor_fn, starts, args.floor_evals)
                vb = time_floor(floor_vg_fn, starts, args.floor_evals)
                raw = summarize_draws(RUNNERS[s](ctx, args.seed + rep), ref)
                va = time_floor(floor_vg_fn, starts, args.floor_evals)
                fa = time_floor(floor_fn, starts, args.floor_evals)
                raw["floor_s_before"], raw["floor_s_after"] = fb, fa
                raw["floor_vg_s_before"], raw["floor_vg_s_after"] = vb, va
                fig = figures(raw, args.chains, 0.5 * (fb + fa), 0.5 * (vb + va))
                per[s].append(fig)
                print(f"[{name}] rep {rep + 1}/{args.repeats} {s:14s} "
                      f"ratio={_f(fig['overhead_ratio'], '{:.2f}')} "
                      f"(vg {_f(fig['overhead_ratio_vg'], '{:.2f}')}) "
                      f"ESS/grad(min)={fig['ess_per_grad']['min']:.3g} "
                      f"ESS/s(min)={fig['ess_per_s']['min']:.3g} "
                      f"sampling={fig['wall_s']:.2f}s e2e={fig['end_to_end_s']:.1f}s "
                      f"floor={0.5 * (fb + fa) * 1e6:.1f}us (vg {0.5 * (vb + va) * 1e6:.1f}us) "
                      f"acc={fig['accept_mean']:.2f} "
                      f"div={fig['divergences']} "
                      f"ESS/kgrad min/med={_mm_str(fig['ess_per_kgrad'])} "
                      f"(incl. warm-up {_mm_str(fig['ess_per_kgrad_incl_warmup'])}) "
                      f"rhat={fig['rhat_max']:.3f} "
                      f"max|z|={_f(fig.get('mean_z_max'), '{:.2f}')}"
                      f"{' FLAG' if fig.get('mean_z_flag') else ''}", flush=True)
        result["posteriors"][name] = {
            "dim": flat.dim,
            "reference": None if ref is None else {
                "source": ref["source"], "mean": ref["mean"], "mcse": ref["mcse"],
                "sd": ref.get("sd")},
            "samplers": {s: {"median": _median_with_flags(per[s]), "repeats": per[s]}
                         for s in samplers},
        }

    if args.cache_check:
        knobs = HMC_KNOBS.get(args.cache_posterior, DEFAULT_KNOBS)
        knobs = (args.step_size or knobs[0], args.steps or knobs[1])
        cc = cache_check(args.cache_posterior, args.chains, args.draws, args.warmup, knobs,
                         args.float64)
        result["cache_check"] = cc
        print(f"[cache] first {cc['first']['process_s']:.2f}s "
              f"(compile {cc['first']['compile_s']:.2f}s), second "
              f"{cc['second']['process_s']:.2f}s (compile {cc['second']['compile_s']:.2f}s)")

    result["nuts_comparison"] = nuts_comparison(result) or None
    result = _clean(result)
    out_dir = Path(args.results_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{tag}.json"
    out.write_text(json.dumps(result, indent=1, sort_keys=False) + "\n")
    print(f"wrote {out}")
    if not args.no_doc:
        write_doc([result], Path(args.doc))
        print(f"wrote {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
