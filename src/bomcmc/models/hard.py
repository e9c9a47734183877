"""Hard posteriors with known answers: the geometry that breaks samplers tuned on easy ones.

Each is simulated from a documented seed, and each Gaussian one has its exact mean and
covariance as `Posterior.mean` and `.cov` (a conjugate linear model with known noise), so a
test needs no reference run. None has an initializer: chains start where a user's would,
uniform(−2, 2) on every coordinate.

- `regression-year`: y = α + β·year + noise for the years 1950–2019, a covariate left
  unscaled (values near 2000), so α and β correlate at about −0.9999 and a trajectory must be
  long to travel the ridge.
- `regression-correlated`: 25 predictors with pairwise correlation 0.95 (n = 200): a
  posterior that needs a dense metric.
- `gauss-100-corr`: 100-d Gaussian with unit variances and every correlation 0.9
  (condition number about 900).
- `ridge-2d`: y ~ N(θ₁ + θ₂, 1), n = 100, θ ~ N(0, 5² I): only the sum is identified.
- `funnel-10`: Neal's funnel (Neal 2003 §8): v ~ N(0, 3²), x₁..₉ | v ~ N(0, eᵛ). Its neck is
  too narrow for any fixed step size, so the right answer from HMC is a divergence warning.

The centred eight schools (`eight_schools-eight_schools_centered`, posteriordb) is the other
posterior whose right answer is a warning.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..data import Data
from ..posterior import Posterior

SEED = 20_121  # the simulated data's seed (numpy default_rng)


def linear_regression(name: str, X, y, noise_sd: float, prior_sd, description: str
                      ) -> Posterior:
    """β | y for y ~ N(Xβ, noise_sd²), β ~ N(0, diag(prior_sd²)): exact Gaussian moments."""
    X, y = np.asarray(X, float), np.asarray(y, float)
    prior_sd = np.broadcast_to(np.asarray(prior_sd, float), (X.shape[1],))
    precision = X.T @ X / noise_sd**2 + np.diag(prior_sd**-2.0)
    cov = np.linalg.inv(precision)
    mean = cov @ (X.T @ y) / noise_sd**2

    data = Data(X=X, y=y)  # rows: the cases, which a sharded run splits

    def logdensity(p):
        beta = p["beta"]
        resid = data["y"].astype(beta.dtype) - data["X"].astype(beta.dtype) @ beta
        return (-0.5 * data.row_sum(resid**2) / noise_sd**2
                - 0.5 * jnp.sum((beta / jnp.asarray(prior_sd, beta.dtype)) ** 2))

    return Posterior(logdensity_fn=logdensity, init_position={"beta": np.zeros(X.shape[1])},
                     name=name, description=description, mean=mean, cov=cov, data=data)


def regression_year() -> Posterior:
    rng = np.random.default_rng(SEED)
    year = np.arange(1950.0, 2020.0)
    y = -60.0 + 0.03 * year + rng.normal(0.0, 0.5, year.size)
    X = np.column_stack([np.ones_like(year), year])
    return linear_regression("regression-year", X, y, 0.5, [1000.0, 10.0],
                             "linear regression on an unscaled year (corr(α, β) ≈ −0.9999)")


def regression_correlated(n: int = 200, d: int = 25, rho: float = 0.95) -> Posterior:
    rng = np.random.default_rng(SEED + 1)
    common = rng.normal(size=(n, 1))
    X = np.sqrt(rho) * common + np.sqrt(1 - rho) * rng.normal(size=(n, d))
    beta = rng.normal(size=d)
    y = X @ beta + rng.normal(size=n)
    return linear_regression("regression-correlated", X, y, 1.0, 10.0,
                             f"linear regression, {d} predictors correlated at {rho}")


def gauss_100_corr(d: int = 100, rho: float = 0.9) -> Posterior:
    cov = np.full((d, d), rho) + (1.0 - rho) * np.eye(d)
    prec = np.linalg.inv(cov)

    def logdensity(x):
        return -0.5 * x @ (jnp.asarray(prec, x.dtype) @ x)

    return Posterior(logdensity_fn=logdensity, init_position=np.zeros(d),
                     name="gauss-100-corr", mean=np.zeros(d), cov=cov,
                     description=f"{d}-d Gaussian, unit variances, every correlation {rho}")


def ridge_2d(n: int = 100, prior_sd: float = 5.0) -> Posterior:
    rng = np.random.default_rng(SEED + 2)
    y = 1.0 + rng.normal(size=n)
    return linear_regression("ridge-2d", np.ones((n, 2)), y, 1.0, prior_sd,
                             "y ~ N(θ₁ + θ₂, 1): a ridge along θ₁ + θ₂ = const")


def funnel(d: int = 10) -> Posterior:
    def logdensity(p):
        v, x = p["v"], p["x"]
        return (-0.5 * (v / 3.0) ** 2
                - 0.5 * jnp.sum(x**2) * jnp.exp(-v) - 0.5 * (d - 1) * v)

    return Posterior(logdensity_fn=logdensity,
                     init_position={"v": np.zeros(()), "x": np.zeros(d - 1)},
                     name=f"funnel-{d}",
                     description=f"Neal's funnel in {d} dimensions (v ~ N(0, 3²) exactly)")
