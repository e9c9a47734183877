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


# The chance that a correct sampler fails one whole assert_moments call. The suite makes about
# 80 such calls, and each machine draws its own chains (XLA's rounding differs by CPU, and a
# trajectory amplifies it), so at 1e-3 about one machine in 13 would fail a correct sampler
# somewhere; it happened (2026-12-02, nuts on gauss-100-illcond, seed 0: a variance 4.86 MCSE
# off against the bound 4.56, while 800 such z over seeds 0-7 had sd 1.00 and 0.25 % beyond 3).
FAMILY_ALPHA = 1e-4


def bonferroni_sigma(n_comparisons: int, alpha: float = FAMILY_ALPHA) -> float:
    """The |z| bound such that n independent N(0, 1) errors all stay below it with probability
    1 - alpha: 4.2 for a 2-d target's 4 comparisons, 5.0 for a 100-d target's 200. A fixed
    bound of 4 would fail a correct 100-d sampler in about 1 run in 80."""
    from scipy.stats import norm

    return float(norm.isf(alpha / (2 * n_comparisons)))


def assert_moments(draws, mean, var, n_sigma: float | None = None, label: str = ""):
    """Means and variances within n_sigma MCSE of the truth; by default the Bonferroni bound
    for the 2·d comparisons made, at family-wise error FAMILY_ALPHA."""
    z_mean, z_var = moment_z_scores(draws, mean, var)
    if n_sigma is None:
        n_sigma = bonferroni_sigma(z_mean.size + z_var.size)
    worst_m, worst_v = np.max(np.abs(z_mean)), np.max(np.abs(z_var))
    assert worst_m < n_sigma, f"{label}: a mean is {worst_m:.2f} MCSE from the truth"
    assert worst_v < n_sigma, f"{label}: a variance is {worst_v:.2f} MCSE from the truth"
    return worst_m, worst_v
