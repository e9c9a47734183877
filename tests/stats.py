"""Monte-Carlo error checks shared by the statistical tests.

A sampler is right when its estimates differ from the truth by no more than a stated number of
Monte-Carlo standard errors. For the mean, MCSE = ArviZ's `mcse(method="mean")`. For the
variance with a known mean μ, the estimator is the sample mean of s = (x − μ)², so its MCSE is
sd(s) / sqrt(ESS(s)) — the "MCSE-equivalent" of the variance.
"""

from __future__ import annotations

import arviz as az
import numpy as np


def _ess(x: np.ndarray) -> np.ndarray:
    """ESS per coordinate of (chains, draws, d) draws."""
    return np.asarray(az.ess(az.convert_to_dataset(x), method="mean")["x"])


def moment_z_scores(draws: np.ndarray, mean: np.ndarray, var: np.ndarray):
    """(z_mean, z_var): per-coordinate errors in units of MCSE for draws (chains, n, d)."""
    draws = np.asarray(draws, dtype=float)
    mean, var = np.asarray(mean, float), np.asarray(var, float)
    est_mean = draws.mean(axis=(0, 1))
    ess_x = _ess(draws)
    mcse_mean = draws.std(axis=(0, 1), ddof=1) / np.sqrt(ess_x)
    sq = (draws - mean) ** 2
    est_var = sq.mean(axis=(0, 1))
    mcse_var = sq.std(axis=(0, 1), ddof=1) / np.sqrt(_ess(sq))
    return (est_mean - mean) / mcse_mean, (est_var - var) / mcse_var


def assert_moments(draws, mean, var, n_sigma: float = 4.0, label: str = ""):
    z_mean, z_var = moment_z_scores(draws, mean, var)
    worst_m, worst_v = np.max(np.abs(z_mean)), np.max(np.abs(z_var))
    assert worst_m < n_sigma, f"{label}: a mean is {worst_m:.2f} MCSE from the truth"
    assert worst_v < n_sigma, f"{label}: a variance is {worst_v:.2f} MCSE from the truth"
    return worst_m, worst_v
