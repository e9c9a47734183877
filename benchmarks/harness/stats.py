"""The figures of one run: ESS per gradient and per second, R-hat, the posterior means
against a reference, the overhead ratios, and medians over repeats.

ESS is ArviZ's rank-normalised bulk ESS (Vehtari et al. 2021); the lockstep factor is what
vmapped chains pay when their trajectories differ in length: every transition costs as much
as its slowest chain.
"""

from __future__ import annotations

import math
import statistics

import numpy as np

# a run's posterior means are flagged when some coordinate is further than this many MCSEs
# (run's and reference's combined) from the reference
Z_FLAG = 4.0


def mmm(values) -> dict:
    """min / median / max of the finite values (None where there are none)."""
    from bomcmc.diagnostics import min_median_max

    return min_median_max(values)


def clean(x):
    """NaN-safe JSON conversion: the library's own (imported late, after the JAX set-up)."""
    from bomcmc.diagnostics import clean_json

    return clean_json(x)


def median_tree(records: list):
    """Median over repeats of every numeric leaf; other leaves taken from the first."""
    first = records[0]
    if isinstance(first, dict):
        return {k: median_tree([r.get(k) for r in records]) for k in first}
    nums = [r for r in records if isinstance(r, (int, float)) and not isinstance(r, bool)]
    if nums and len(nums) == len(records):
        finite = [x for x in nums if math.isfinite(x)]
        return float(statistics.median(finite)) if finite else None
    return first


def median_with_flags(records: list) -> dict:
    """median_tree, with the correctness flag raised when any repeat raised it."""
    med = median_tree(records)
    if any("mean_z_flag" in r for r in records):
        med["mean_z_flag"] = any(bool(r.get("mean_z_flag")) for r in records)
    return med


def lockstep_factor(steps: np.ndarray) -> float:
    """steps: (chains, draws) gradient evaluations per transition. With vmapped chains every
    transition costs as much as its slowest chain: Σ_t max_c n / Σ_t mean_c n (1 for fixed L)."""
    steps = np.asarray(steps, dtype=float)
    mean = steps.mean(axis=0).sum()
    return float(steps.max(axis=0).sum() / mean) if mean > 0 else float("nan")


def ess_from_draws(draws: np.ndarray) -> np.ndarray:
    """draws (chains, draws, d) -> bulk ESS per coordinate (ArviZ)."""
    import arviz as az

    from bomcmc.diagnostics import flat_ess

    return flat_ess(az.from_dict(posterior={"x": np.asarray(draws)}))


def draw_moments(draws: np.ndarray) -> dict:
    """draws (chains, draws, d) -> per coordinate: mean, sd, MCSE of the mean (ArviZ), and
    rank-normalised split R-hat (ArviZ)."""
    import arviz as az

    x = np.asarray(draws, dtype=np.float64)
    ds = az.convert_to_dataset({"x": x})
    flat = x.reshape(-1, x.shape[-1])
    return {"mean": flat.mean(axis=0), "sd": flat.std(axis=0, ddof=1),
            "mcse": np.asarray(az.mcse(ds, method="mean")["x"]),
            "rhat": np.asarray(az.rhat(ds)["x"])}


def summarize_draws(raw: dict, ref: dict | None) -> dict:
    """Replace a runner's `draws` by what the figures need: bulk ESS per coordinate,
    R-hat, and the comparison of the posterior means with the reference `ref` ({"mean",
    "mcse", "source"} per coordinate, or None): z_i = |mean_i − ref_i| / sqrt(MCSE_i² +
    ref MCSE_i²), reported as max |z| and flagged above Z_FLAG. A runner's `grad_steps`
    ((C, D) gradients per draw) gives the lockstep factor when the runner did not."""
    draws = np.asarray(raw.pop("draws"))
    steps = raw.pop("grad_steps", None)
    if steps is not None and "lockstep_factor" not in raw:
        raw["lockstep_factor"] = lockstep_factor(steps)
    raw["ess"] = ess_from_draws(draws)
    mom = draw_moments(draws)
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
    out["ess_bulk"] = mmm(ess)
    out["ess_per_grad"] = mmm(ess / n_grad) if n_grad > 0 else mmm([])
    out["ess_per_s"] = mmm(ess / wall) if wall > 0 else mmm([])
    # ESS per 1000 gradients, of the sampling phase alone and of warm-up + sampling
    out["ess_per_kgrad"] = mmm(1000 * ess / n_grad) if n_grad > 0 else mmm([])
    total = n_grad + (raw.get("n_grad_warmup") or 0)
    out["ess_per_kgrad_incl_warmup"] = mmm(1000 * ess / total) if total > 0 else mmm([])
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
