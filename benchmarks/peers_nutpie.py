"""nutpie (Seyboldt and the PyMC developers' NUTS in Rust, docs/references.md) as runners of
`benchmarks/run.py`, with the same return shape as `peers_blackjax.py`'s runners.

nutpie samples a model given as a log density with gradient through
`nutpie.compiled_pyfunc.from_pyfunc` (not re-exported at the top level in 0.16.8), the
route its own JAX backend for PyMC models takes (`nutpie.compile_pymc_model(backend="jax")`
builds a jitted `jax.value_and_grad` and hands it to `from_pyfunc`). Here the function is the
harness's flat log density of the built-in posterior, so nutpie scores exactly the density
and coordinates the other samplers do, rather than a PyMC re-model of it.

- `nutpie`: `nutpie.sample(model, chains=C, tune=W, draws=D, seed=s, cores=2)` with nutpie's
  defaults: diagonal metric adapted from draws *and gradients* (`use_grad_based_mass_matrix`),
  target acceptance 0.8, at most 10 doublings.
- `nutpie-lowrank`: the same with `low_rank_modified_mass_matrix=True` (diagonal plus a
  low-rank correction from the same draw/gradient pairs; nutpie calls it experimental).

Chains start at the harness's starting points (`make_initial_point_fn` hands them out in
turn). Gradients: nutpie's `n_steps` of every sampling draw (one gradient per leapfrog step);
warm-up's are all other calls of the log density but the one at each chain's start (the
warm-up draws' `n_steps` plus nutpie's initial step-size search), counted in the callback. nutpie runs the chains
in its own threads and reports no split of its wall time into warm-up and sampling, so the
sampling seconds are the run's seconds times the sampling phase's share of the gradients
(`sampling_wall_source` says so); every call crosses from Rust into Python and JAX, so its
seconds carry a per-gradient dispatch cost that nutpie's numba backend for PyMC models would
not, and its ESS per second is not comparable with the jitted samplers' (its ESS per gradient
is).
"""

from __future__ import annotations

import itertools
import threading
import time

import numpy as np

NUTPIE_CORES = 2


def _model(ctx):
    """nutpie's model of the harness's log density, the jit-compile seconds, and the list
    whose single entry counts the log density calls."""
    import jax
    import jax.numpy as jnp

    from nutpie.compiled_pyfunc import from_pyfunc

    logdensity, starts = ctx["logdensity"], np.asarray(ctx["starts"])
    dtype, d = starts.dtype, starts.shape[1]
    t0 = time.perf_counter()
    vg = jax.jit(jax.value_and_grad(logdensity)).lower(jnp.zeros(d, dtype)).compile()
    compile_s = time.perf_counter() - t0
    calls, lock = [0], threading.Lock()

    def make_logp_fn():
        def logp(x):
            with lock:
                calls[0] += 1
            v, g = vg(np.asarray(x, dtype))
            return float(v), np.asarray(g, dtype=np.float64, order="C")
        return logp

    def make_expand_fn(seed1, seed2, chain):
        def expand(x):
            return {"x": np.array(x, dtype=np.float64, order="C")}
        return expand

    turn = itertools.count()

    def initial_point(_seed):
        return np.array(starts[next(turn) % len(starts)], dtype=np.float64)

    model = from_pyfunc(
        ndim=d, make_logp_fn=make_logp_fn, make_expand_fn=make_expand_fn,
        expanded_dtypes=[np.dtype("float64")], expanded_shapes=[(d,)], expanded_names=["x"],
        make_initial_point_fn=initial_point)
    return model, compile_s, calls


def _run(ctx, seed: int, low_rank: bool) -> dict:
    import nutpie

    C, D, W = ctx["chains"], ctx["draws"], ctx["warmup"]
    t_start = time.perf_counter()
    model, compile_s, calls = _model(ctx)
    t0 = time.perf_counter()
    idata = nutpie.sample(model, chains=C, tune=W, draws=D, seed=seed, cores=NUTPIE_CORES,
                          save_warmup=True, progress_bar=False,
                          low_rank_modified_mass_matrix=low_rank)
    wall = time.perf_counter() - t0
    stats, warm = idata.sample_stats, idata.warmup_sample_stats
    steps = np.asarray(stats["n_steps"])                     # (C, D)
    n_grad = int(steps.sum())
    # every evaluation but the sampling draws' and the one at each start is warm-up's: the
    # warm-up draws' n_steps and nutpie's initial step-size search (15 per chain in 0.16.8)
    warm_grads = calls[0] - n_grad - C
    share = n_grad / (n_grad + warm_grads)
    step_size = np.asarray(stats["step_size"])[:, -1]
    return {
        "draws": np.asarray(idata.posterior["x"]),            # (C, D, d)
        "grad_steps": steps,
        "n_grad": n_grad,
        "n_grad_warmup": warm_grads,
        "n_grad_warmup_draws": int(np.asarray(warm["n_steps"]).sum()),
        "wall_s": wall * share,
        "wall_s_warmup": wall * (1 - share),
        "compile_s": compile_s,
        "end_to_end_s": time.perf_counter() - t_start,
        "divergences": int(np.asarray(stats["diverging"]).sum()),
        "accept_mean": float(np.asarray(stats["mean_tree_accept"]).mean()),
        "step_size": float(step_size.mean()),
        "sampling_wall_source": (
            f"nutpie.sample wall ({NUTPIE_CORES} threads) × the sampling phase's share of "
            "the gradients; every gradient is a Python call into a jitted JAX function"),
    }


def run_nutpie(ctx, seed: int) -> dict:
    """nutpie's NUTS with its defaults (gradient-based diagonal metric)."""
    return _run(ctx, seed, low_rank=False)


def run_nutpie_lowrank(ctx, seed: int) -> dict:
    """nutpie's NUTS with its low-rank-modified metric."""
    return _run(ctx, seed, low_rank=True)


RUNNERS = {"nutpie": run_nutpie, "nutpie-lowrank": run_nutpie_lowrank}
