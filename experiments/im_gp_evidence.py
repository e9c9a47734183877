"""What IMBayesOpt's 100 rewards say about k (issue 33): the GP's hyperparameters refitted by
maximum marginal likelihood (type-II ML; Rasmussen & Williams 2006, §5.4.1) on each trial's
saved observations, and the SIR policy that the refitted mean would give, beside the policy
the run used.

    python experiments/im_gp_evidence.py benchmarks/results/im-ising-60x60-paper-warp.json \\
        benchmarks/results/im-spinglass-9x9x9-paper-warp.json \\
        benchmarks/results/im-rbm-digits-100-paper-warp.json \\
        --out benchmarks/results/im-gp-evidence.json

The run's GP has fixed hyperparameters (signal variance 1, noise variance 0.1, length scales a
tenth of the box; `tuning/im_tuner.py`). Here the length scales, the signal and noise
variances and a constant mean (its generalised-least-squares value) are fitted to the same
observations by L-BFGS-B from nine starts, in the GP's own coordinates (γ stretched around β,
k). A length scale in k as wide as the box says the rewards do not resolve k. The policies
are summarised by their weights over the candidate grid, exp(μ/T) with T = 0.1: the mean k
and γ, and the weights' ESS out of the candidates.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.optimize import minimize

from bomcmc.tuning.gp import se_ard_kernel
from bomcmc.tuning.im_tuner import TEMPERATURE, gp_mean_surface, surface_grid


def _observations(state: dict):
    gp = state["gp"]
    counts = np.asarray(gp["counts"], float)
    return np.asarray(gp["X"], float), np.asarray(gp["sums"], float) / counts, counts


def _gls_mean(K, y):
    """The constant mean c maximising the likelihood given K (generalised least squares)."""
    chol = cho_factor(K, lower=True)
    one = np.ones_like(y)
    return float(one @ cho_solve(chol, y) / (one @ cho_solve(chol, one))), chol


def _kernel(theta, X, counts):
    ls, (sf2, sn2) = np.exp(theta[:-2]), np.exp(theta[-2:])
    K = se_ard_kernel(X, X, ls, sf2)
    K[np.diag_indices_from(K)] += sn2 / counts
    return K


def neg_log_marginal(theta, X, y, counts) -> float:
    """−log p(ȳ | θ) up to a constant: ½ rᵀK⁻¹r + log|L|, r = ȳ − c, with noise σ_n²/m_j
    at a point observed m_j times (the merged observations of `tuning/gp.py`)."""
    try:
        c, chol = _gls_mean(_kernel(theta, X, counts), y)
    except np.linalg.LinAlgError:
        return 1e10
    r = y - c
    return float(0.5 * r @ cho_solve(chol, r) + np.sum(np.log(np.diag(chol[0]))))


def refit(X, y, counts) -> dict:
    width = np.ptp(X, axis=0)
    width = np.where(width > 0, width, 1.0)
    bounds = [(np.log(0.01 * w), np.log(10 * w)) for w in width]
    bounds += [(np.log(1e-5), np.log(10.0)), (np.log(1e-6), np.log(1.0))]
    best = None
    for a in (0.05, 0.2, 0.5):
        for b in (0.05, 0.2, 0.5):
            start = np.log([a * width[0], b * width[1], max(y.var(), 1e-4),
                            max(y.var(), 1e-4) / 2])
            res = minimize(neg_log_marginal, start, args=(X, y, counts), method="L-BFGS-B",
                           bounds=bounds)
            if best is None or res.fun < best.fun:
                best = res
    K = _kernel(best.x, X, counts)
    c, chol = _gls_mean(K, y)
    return {"theta": best.x, "lengthscales": np.exp(best.x[:-2]).tolist(),
            "signal_var": float(np.exp(best.x[-2])), "noise_var": float(np.exp(best.x[-1])),
            "mean": c, "alpha": cho_solve(chol, y - c), "nll": float(best.fun)}


def policy_summary(mu, ks, gammas, temperature: float = TEMPERATURE) -> dict:
    w = np.exp((mu - mu.max()) / temperature)
    w /= w.sum()
    return {"mean_k": float(w.sum(axis=1) @ ks), "mean_gamma": float(w.sum(axis=0) @ gammas),
            "ess": float(1.0 / np.sum(w * w)), "candidates": int(w.size)}


def one_trial(state: dict) -> dict:
    X, y, counts = _observations(state)
    fit = refit(X, y, counts)
    gammas, ks, mu_run = gp_mean_surface(state)
    uu, kk = np.meshgrid(*surface_grid(state))  # the grid the run's surface is on
    grid = np.column_stack([uu.ravel(), kk.ravel().astype(float)])
    mu_fit = fit["mean"] + se_ard_kernel(grid, X, np.array(fit["lengthscales"]),
                                         fit["signal_var"]) @ fit["alpha"]
    mu_fit = mu_fit.reshape(kk.shape)
    warp = state["box"].get("warp", [None])[0]  # (β, s) where γ is stretched around β
    j = None if warp is None else int(np.argmin(np.abs(gammas - warp[0])))
    along_k = None if j is None else {  # the run's GP mean along k at the γ nearest β
        "gamma": float(gammas[j]), "min": float(mu_run[:, j].min()),
        "max": float(mu_run[:, j].max()), "argmax_k": int(ks[np.argmax(mu_run[:, j])])}
    return {"k_box": [int(ks[0]), int(ks[-1])], "observations": int(counts.sum()),
            "run_mean_along_k_at_beta": along_k,
            "fitted": {k: fit[k] for k in ("lengthscales", "signal_var", "noise_var", "mean",
                                           "nll")},
            "reward_sd": float(np.std(y)),
            "policy_run": policy_summary(mu_run, ks, gammas),
            "policy_refit": policy_summary(mu_fit, ks, gammas)}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+", help="experiments/im_sampler.py results JSON")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    report = {}
    for path in args.results:
        d = json.loads(Path(path).read_text())
        rows = []
        for t in d["methods"]["IMBayesOpt"]["trials"]:
            row = {"seed": t["seed"], "mean_abs_acf": t["mean_abs_acf"],
                   **one_trial(t["tuner_state"])}
            rows.append(row)
            f, a, b = row["fitted"], row["policy_run"], row["policy_refit"]
            print(f"{d['model']} seed {t['seed']}: mean |ACF| {t['mean_abs_acf']:.3f}; "
                  f"fitted length scales (u, k) {f['lengthscales'][0]:.2f}, "
                  f"{f['lengthscales'][1]:.1f} (k box {row['k_box']}), noise sd "
                  f"{np.sqrt(f['noise_var']):.3f}; policy mean k {a['mean_k']:.0f} -> "
                  f"{b['mean_k']:.0f}, mean γ {a['mean_gamma']:.4f} -> {b['mean_gamma']:.4f}, "
                  f"ESS {a['ess']:.0f} -> {b['ess']:.0f} of {a['candidates']}; the run's mean "
                  f"along k at β {row['run_mean_along_k_at_beta']}", flush=True)
        report[d["model"]] = {"source": path, "trials": rows}
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
