"""Shared figures of the Riemann-manifold experiments (`lgcp.py`, `sv.py`,
`rmhmc_logistic.py`): ESS of a group of variables per gradient (with and without the
warm-up's) and per second, and agreement of a run's means and sds with a reference run's."""

from __future__ import annotations

import arviz as az
import numpy as np


def _flat(res, names) -> np.ndarray:
    """(chains, draws, k): the named variables of the posterior group, side by side."""
    post = res.idata.posterior
    parts = [np.asarray(post[n]).reshape(post[n].shape[0], post[n].shape[1], -1)
             for n in names]
    return np.concatenate(parts, axis=-1)


def ess_figures(res, names) -> dict:
    """Bulk ESS (min / median / max over the named variables' coordinates) per gradient of the
    sampling phase, per gradient with the warm-up's, per second of sampling and per second end
    to end (compilation included); acceptance and divergences."""
    draws = _flat(res, names)
    ess = np.array([float(np.squeeze(az.ess(draws[..., k], method="bulk")))
                    for k in range(draws.shape[-1])])
    t = res.totals
    out = {"ess_min": float(ess.min()), "ess_median": float(np.median(ess)),
           "ess_max": float(ess.max()), "n_grad": t["n_grad"],
           "n_grad_warmup": t["n_grad_warmup"], "wall_s": t["wall_s"],
           "wall_s_total": t["wall_s_total"], "accept": t["accept_mean"],
           "divergences": t["divergences"]}
    for k in ("min", "median", "max"):
        out[f"per_grad_{k}"] = out[f"ess_{k}"] / t["n_grad"]
        out[f"per_grad_all_{k}"] = out[f"ess_{k}"] / (t["n_grad"] + t["n_grad_warmup"])
        out[f"per_s_{k}"] = out[f"ess_{k}"] / t["wall_s"]
        out[f"per_s_total_{k}"] = out[f"ess_{k}"] / t["wall_s_total"]
    return out


def _ess(x: np.ndarray, method: str) -> np.ndarray:
    """ArviZ's ESS of each coordinate of x (chains, draws, k)."""
    return np.array([float(np.squeeze(az.ess(x[..., k], method=method)))
                     for k in range(x.shape[-1])])


def moments(res, names) -> dict:
    """Means, variances, and the MCSEs of the means (ArviZ) and of the sds of the named
    variables' coordinates. The sd's MCSE is the delta method on sd = √E[(x − x̄)²]:
    Var(s2)/(4·sd²·ESS(s2)) with s2 = (x − x̄)² and ESS(s2) ArviZ's ESS of its mean
    (az.mcse(method="sd") fails on arrays with this ArviZ and NumPy)."""
    draws = _flat(res, names)
    mean = draws.mean((0, 1))
    s2 = (draws - mean) ** 2
    var = s2.mean((0, 1))
    mcse_sd = np.sqrt(s2.var((0, 1)) / (4 * var * _ess(s2, "mean")))
    mcse = np.array([float(np.squeeze(az.mcse(draws[..., k], method="mean")))
                     for k in range(draws.shape[-1])])
    return {"mean": mean, "var": var, "mcse": mcse, "mcse_sd": mcse_sd}


def agreement(m: dict, ref: dict) -> dict:
    """The largest |z| of the means in both runs' MCSEs, the share of coordinates with
    |z| > 4, the share whose sd is more than 10 % from the reference's, and the largest sd
    error with its coordinate's index (in the flattened order of `moments`); where both runs
    carry the sds' MCSEs, also the largest |z| of the sds and that coordinate's index."""
    z = np.abs(m["mean"] - ref["mean"]) / np.hypot(m["mcse"], ref["mcse"])
    sd_rel = np.sqrt(m["var"] / ref["var"]) - 1.0
    out = {"max_abs_z": float(z.max()), "share_z_above_4": float(np.mean(z > 4)),
           "share_sd_off_10pct": float(np.mean(np.abs(sd_rel) > 0.1)),
           "max_abs_sd_rel": float(np.abs(sd_rel).max()),
           "max_abs_sd_rel_coord": int(np.abs(sd_rel).argmax())}
    if "mcse_sd" in m and "mcse_sd" in ref:
        z_sd = np.abs(np.sqrt(m["var"]) - np.sqrt(ref["var"])) / np.hypot(m["mcse_sd"],
                                                                           ref["mcse_sd"])
        out.update(max_abs_sd_z=float(z_sd.max()), max_abs_sd_z_coord=int(z_sd.argmax()),
                   share_sd_z_above_4=float(np.mean(z_sd > 4)))
    return out


def reference_moments(ref_file, groups: dict, run) -> tuple[dict, dict]:
    """A reference run's moments of every coordinate of `groups` (name -> variable names, in
    order) and its ESS figures per group: read from the .npz `ref_file` when it exists, else
    computed from `run()` (a SampleResult and a line describing it) and saved to `ref_file`,
    so that a long reference runs once."""
    import json
    from pathlib import Path

    path = Path(ref_file) if ref_file else None
    if path is not None and path.exists():
        saved = np.load(path)
        print(f"reference: {path} ({saved['about']})", flush=True)
        return ({k: saved[k] for k in ("mean", "var", "mcse", "mcse_sd") if k in saved},
                json.loads(str(saved["ess"])))
    res, about = run()
    ref = moments(res, tuple(n for names in groups.values() for n in names))
    ess = {g: ess_figures(res, names) for g, names in groups.items()}
    print(f"reference: {about}", flush=True)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp.npz")
        np.savez(tmp, **ref, ess=json.dumps(ess, default=float), about=about)
        tmp.replace(path)
    return ref, ess


def write_results(path, results: dict, complete: bool) -> None:
    """Write the results JSON atomically (a temporary file renamed over it), with
    `"complete"` false until the last run is in, so a killed experiment keeps its finished runs
    and never leaves a file that looks complete."""
    import json
    from pathlib import Path

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(dict(results, complete=complete), indent=1, default=list))
    tmp.replace(path)


def read_results(path) -> dict:
    """A results JSON written by `write_results`."""
    import json
    from pathlib import Path

    return json.loads(Path(path).read_text())


def per_chain_ess(res, names) -> dict:
    """ESS of each chain alone, as the paper's boxes are over its single-chain runs: the
    monotone-sequence ESS of Girolami & Calderhead (2011) (`diagnostics.monotone_ess`) and
    ArviZ's bulk ESS, each (chains, k) over the named variables' coordinates; beside them the
    pooled monotone-sequence ESS of every coordinate (k,). A chain that never moved on a
    coordinate gave it no effective draws: ESS 0 (ArviZ counts a constant series as
    independent draws, ESS = N)."""
    draws = _flat(res, names)
    chains, _, k = draws.shape
    mono, pooled = monotone_per_chain(draws)
    bulk = np.array([[float(np.squeeze(az.ess(draws[c, :, j], method="bulk")))
                      for j in range(k)] for c in range(chains)])
    still = np.ptp(draws, axis=1) == 0  # (chains, k)
    mono[still], bulk[still] = 0.0, 0.0
    pooled[still.all(0)] = 0.0
    return {"monotone": mono, "bulk": bulk, "pooled_monotone": pooled}


def monotone_per_chain(draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Girolami & Calderhead's monotone-sequence ESS of draws (chains, N, k): each chain's
    (chains, k) and the pooled one over the chains (k,)."""
    from bomcmc.diagnostics.monotone_ess import monotone_ess, pooled_monotone_ess

    chains, _, k = draws.shape
    mono = np.array([[monotone_ess(draws[c, :, j]) for j in range(k)] for c in range(chains)])
    pooled = np.array([pooled_monotone_ess(draws[..., j]) for j in range(k)])
    return mono, pooled


def spread(ess: np.ndarray) -> dict:
    """min / median / max over the last axis (the coordinates) of an ESS array."""
    return {"min": np.min(ess, -1), "median": np.median(ess, -1), "max": np.max(ess, -1)}
