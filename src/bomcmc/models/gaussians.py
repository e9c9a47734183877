"""Gaussian targets with known moments, for testing samplers.

- `gauss-2d-corr`, `gauss-2d-corr-wide`: the bivariate Gaussians of Wang 2012 §2.2,
  eqs. (2.3) and (2.4), covariances [[1, .99], [.99, 1]] and [[2, .99], [.99, 2]].
- `gauss-100-illcond`: 100 independent coordinates, standard deviations log-spaced over
  [0.01, 1] (the ill-conditioned test of Neal 2011 / Hoffman & Gelman 2014).
- `gauss-iid-<d>`: d standard normals.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..posterior import Posterior


def mvn(name: str, mean, cov, description: str = "") -> Posterior:
    """N(mean, cov) with a dense covariance; log density via the precision matrix."""
    mean = np.asarray(mean, dtype=np.float64)
    cov = np.asarray(cov, dtype=np.float64)
    prec = np.linalg.inv(cov)
    d = mean.shape[0]

    def logdensity(x):
        m = jnp.asarray(mean, x.dtype)
        r = x - m
        return -0.5 * r @ (jnp.asarray(prec, x.dtype) @ r)

    def initializer(key):
        return jnp.asarray(mean) + jax.random.uniform(key, (d,), minval=-2.0, maxval=2.0)

    return Posterior(
        logdensity_fn=logdensity,
        init_position=np.zeros(d),
        name=name,
        initializer=initializer,
        description=description or f"{d}-d Gaussian",
        mean=mean, cov=cov,
    )


def diagonal(name: str, sd, description: str = "") -> Posterior:
    """Independent N(0, sd_i²): O(d) log density, no matrix."""
    sd = np.asarray(sd, dtype=np.float64)
    d = sd.shape[0]

    def logdensity(x):
        return -0.5 * jnp.sum((x / jnp.asarray(sd, x.dtype)) ** 2)

    def initializer(key):
        return jax.random.uniform(key, (d,), minval=-2.0, maxval=2.0) * jnp.asarray(sd)

    return Posterior(
        logdensity_fn=logdensity,
        init_position=np.zeros(d),
        name=name,
        initializer=initializer,
        description=description,
        mean=np.zeros(d), cov=np.diag(sd**2),
    )


def gauss_2d_corr() -> Posterior:
    return mvn("gauss-2d-corr", [0.0, 0.0], [[1.0, 0.99], [0.99, 1.0]],
               "bivariate Gaussian, cov [[1, .99], [.99, 1]] (Wang 2012, eq. 2.3)")


def gauss_2d_corr_wide() -> Posterior:
    return mvn("gauss-2d-corr-wide", [0.0, 0.0], [[2.0, 0.99], [0.99, 2.0]],
               "bivariate Gaussian, cov [[2, .99], [.99, 2]] (Wang 2012, eq. 2.4)")


def gauss_100_illcond() -> Posterior:
    return diagonal("gauss-100-illcond", np.logspace(-2, 0, 100),
                    "100-d Gaussian, sd log-spaced over [0.01, 1]")


def gauss_iid(d: int = 100) -> Posterior:
    return diagonal(f"gauss-iid-{d}", np.ones(d), f"{d}-d standard normal")
