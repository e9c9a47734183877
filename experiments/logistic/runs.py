"""One run of the experiment per (data set, sampler, seed), and its figures.

Every sampler starts from the same points for a seed (bomcmc's initializer for these
posteriors, β ~ U(−2, 2)^d per chain). AHMC is bomcmc's with the paper's box (Wang, Mohamed &
de Freitas 2013 §5.1); NUTS and NumPyro's NUTS are the benchmark harness's runners
(`benchmarks/harness/`), same settings. Each runner returns the raw figures with `draws`
(C, D, d) and `steps` (C, D gradients per transition), which `summarize_run` turns into the
pooled and per-chain ESS per gradient.
"""

from __future__ import annotations

import numpy as np

from benchmarks.harness.bomcmc_runners import run_bomcmc_nuts, sample_bomcmc
from benchmarks.harness.nuts_peers import run_numpyro
from benchmarks.harness.stats import ess_from_draws, mmm
from experiments.ess_tables import monotone_per_chain

from .probe import Probe
from .results import EPS_BOUNDS, STEPS_BOUNDS, adaptation_grads


def run_ahmc(ctx, seed: int, probe: Probe, mass: str) -> dict:
    """bomcmc's AHMC with the paper's box and metric `mass`; the L-BFGS mode search's own
    evaluations are counted apart too (they are inside `n_grad_warmup` as well)."""
    import jax

    from bomcmc.kernels.ahmc import find_mode_counted
    from bomcmc.tuning.history import summarize_tuning

    probe.reset()
    res, raw = sample_bomcmc(ctx, seed, "ahmc", eps_bounds=EPS_BOUNDS,
                             steps_bounds=STEPS_BOUNDS, mass=mass)
    del raw["sampling_wall_source"]
    steps = raw.pop("grad_steps")
    _, mode_n = jax.jit(jax.vmap(lambda x: find_mode_counted(x, ctx["logdensity"])))(
        ctx["starts"])
    tuning = summarize_tuning(res.idata) or {}
    return {
        **raw, "steps": steps,
        "n_grad_mode": int(np.asarray(mode_n).sum()), "n_grad_warmup_includes_mode": True,
        "step_size": float(np.asarray(res.idata.sample_stats["step_size"])[:, -1].mean()),
        "final_L": tuning.get("final", {}).get("num_steps"),
        "best": tuning.get("best"),
        "tuning": {k: tuning.get(k) for k in ("bo_steps", "bo_steps_warmup", "proposals",
                                              "distinct_settings", "gp_resets", "last_p_i")},
        "phases": probe.phases(), "tuner": probe.tuner(),
    }


def run_nuts(ctx, seed: int, probe: Probe) -> dict:
    """bomcmc's NUTS as the harness runs it, its phases timed by the probe."""
    probe.reset()
    raw = run_bomcmc_nuts(ctx, seed)
    raw.update(steps=raw.pop("grad_steps"), phases=probe.phases())
    return raw


def run_numpyro_nuts(ctx, seed: int, probe: Probe) -> dict:
    """NumPyro's NUTS as the harness runs it; its phases are its own warm-up and run calls."""
    raw = run_numpyro(ctx, seed)
    raw["steps"] = raw.pop("grad_steps")
    raw["phases"] = {"warmup_phase_s": raw["wall_s_warmup"], "sampling_phase_s": raw["wall_s"]}
    return raw


RUNS = {"ahmc": lambda ctx, seed, probe: run_ahmc(ctx, seed, probe, "diag"),
        "ahmc-identity": lambda ctx, seed, probe: run_ahmc(ctx, seed, probe, "identity"),
        "ahmc-auto": lambda ctx, seed, probe: run_ahmc(ctx, seed, probe, "auto"),
        "nuts": run_nuts, "numpyro-nuts": run_numpyro_nuts}


def chain_ess(draws: np.ndarray) -> np.ndarray:
    """(C, d): ArviZ bulk ESS of each chain alone (split in halves, rank-normalised)."""
    return np.stack([ess_from_draws(draws[c:c + 1]) for c in range(draws.shape[0])])


def summarize_run(raw: dict) -> dict:
    """A run's figures: ESS per gradient of the sampling phase and with the adaptation's
    gradients, per second, pooled over the chains (ArviZ) and per chain (the paper's boxes),
    the same per gradient with the paper's monotone-sequence estimator, and the tuner's
    share of the run."""
    draws, steps = raw.pop("draws"), raw.pop("steps")
    ess = ess_from_draws(draws)
    C = draws.shape[0]
    n_samp = raw["n_grad"]
    n_adapt = adaptation_grads(raw)
    ph = raw.get("phases", {})
    samp_s, warm_s = ph.get("sampling_phase_s"), ph.get("warmup_phase_s")
    out = {k: v for k, v in raw.items() if k not in ("ess",)}
    out.update({
        "ess_bulk": mmm(ess),
        "ess_per_grad": mmm(ess / n_samp),
        "ess_per_grad_incl_adapt": mmm(ess / (n_samp + n_adapt)),
        "ess_per_s": mmm(ess / samp_s) if samp_s else mmm([]),
        "ess_per_s_incl_warmup": mmm(ess / (samp_s + warm_s)) if samp_s and warm_s else mmm([]),
        "grad_per_draw": n_samp / (C * draws.shape[1]),
    })
    per_mono, pooled_mono = monotone_per_chain(draws)  # the paper's estimator
    out.update({"ess_monotone": mmm(pooled_mono),
                "monotone_per_grad": mmm(pooled_mono / n_samp),
                "monotone_per_grad_incl_adapt": mmm(pooled_mono / (n_samp + n_adapt))})
    # per chain (the paper's boxes: one value per chain run from a differing start). The
    # adaptation's gradients are shared by the chains (AHMC's ε, L are common), split evenly.
    ce = chain_ess(draws)
    g = np.asarray(steps, float).sum(axis=1)
    per = []
    for c in range(C):
        a = mmm(ce[c] / g[c])
        b = mmm(ce[c] / (g[c] + n_adapt / C))
        per.append({"ess_per_grad": a, "ess_per_grad_incl_adapt": b,
                    "monotone_per_grad": mmm(per_mono[c] / g[c]),
                    "monotone_per_grad_incl_adapt": mmm(per_mono[c] / (g[c] + n_adapt / C))})
    out["per_chain"] = per
    tuner = raw.get("tuner")
    if tuner:
        run_s = (samp_s or 0.0) + (warm_s or 0.0)
        tuner["fraction_of_run"] = tuner["total_s"] / run_s if run_s else None
        tuner["fraction_of_end_to_end"] = tuner["total_s"] / raw["end_to_end_s"]
        tuner["fraction_of_sampling_phase"] = (tuner["sampling_s"] / samp_s if samp_s else None)
        out["tuner"] = tuner
    return out
