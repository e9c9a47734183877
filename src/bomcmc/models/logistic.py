"""Bayesian logistic regression (Wang, Mohamed & de Freitas 2013 §5.1; Girolami & Calderhead
2011 §7).

    log p(β | X, y) = Σ_i [y_i x_iᵀβ − log(1 + exp(x_iᵀβ))] − βᵀβ / (2α),   α = 100

on the five data sets of Girolami & Calderhead, preprocessed as their code does
(`bomcmc.datasets.girolami_logreg`).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..data import Data
from ..datasets import girolami_logreg
from ..errors import BomcmcError
from ..posterior import Posterior
from ..validation import finite_data

PRIOR_VARIANCE = 100.0


class LogisticFacts(NamedTuple):
    """What the model knows beyond its density (`Posterior.facts`): rows and columns of X
    (the intercept's column included)."""

    n: int
    d: int


def logistic_regression(X, y, name: str = "logistic", prior_variance: float = PRIOR_VARIANCE,
                        description: str = "") -> Posterior:
    """Posterior over the coefficient vector `beta` (the first column of X is the intercept)."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    finite_data(name, X=X, y=y)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise BomcmcError(f"{name}: X must be (n, d) and y (n,), got {X.shape} and {y.shape}")
    if not np.all((y == 0) | (y == 1)):
        raise BomcmcError(f"{name}: labels y must be 0 or 1")
    d = X.shape[1]
    data = Data(X=X, y=y)  # rows: the cases, which a sharded run splits

    def logdensity(params):
        beta = params["beta"]
        logits = data["X"].astype(beta.dtype) @ beta
        y_ = data["y"].astype(beta.dtype)
        loglik = data.row_sum(y_ * logits - jnp.logaddexp(0.0, logits))
        return loglik - 0.5 * jnp.sum(beta**2) / prior_variance

    def initializer(key):
        return {"beta": jax.random.uniform(key, (d,), minval=-2.0, maxval=2.0)}

    def metric_fn(beta):
        """G(β) = XᵀΛX + I/α, Λ = diag(p(1 − p)), p = σ(Xβ): the expected Fisher information
        plus the prior's precision (Girolami & Calderhead 2011 §7), on the flat vector."""
        Xj = data["X"].astype(beta.dtype)
        p = jax.nn.sigmoid(Xj @ beta)
        fisher = (Xj.T * data.weigh(p * (1.0 - p))) @ Xj
        return fisher + jnp.eye(d, dtype=beta.dtype) / prior_variance

    return Posterior(
        logdensity_fn=logdensity,
        init_position={"beta": np.zeros(d)},
        name=name,
        initializer=initializer,
        description=description or f"logistic regression, n={X.shape[0]}, d={d}",
        metric_fn=metric_fn,
        facts=LogisticFacts(n=X.shape[0], d=d),
        data=data,
    )


def girolami(dataset: str) -> Posterior:
    X, y = girolami_logreg(dataset)
    return logistic_regression(
        X, y, name=f"logistic-{dataset}",
        description=f"Bayesian logistic regression, {dataset} (n={X.shape[0]}, d={X.shape[1]}), "
        "prior N(0, 100 I)",
    )


SYNTHETIC_DIM = 20  # coefficients of `synthetic` (an intercept and 19 features)


def synthetic(n: int, d: int = SYNTHETIC_DIM, seed: int = 0) -> Posterior:
    """Logistic regression on n simulated rows, for measuring how cost grows with data size:
    standard-normal features (with an intercept column), coefficients drawn once from
    N(0, 0.5² I), labels y_i ~ Bernoulli(σ(x_iᵀβ)), all from `seed`. The rows of a smaller n
    are the first rows of a larger one, so only the amount of data changes."""
    if int(n) < 1:
        raise BomcmcError(f"logistic-synthetic needs at least one row, got {n}")
    rng = np.random.default_rng(seed)
    beta = rng.normal(0.0, 0.5, d)
    features = np.random.default_rng(seed + 1).normal(size=(int(n), d - 1))
    X = np.column_stack([np.ones(int(n)), features])
    u = np.random.default_rng(seed + 2).uniform(size=int(n))
    y = (u < 1.0 / (1.0 + np.exp(-(X @ beta)))).astype(float)
    return logistic_regression(X, y, name=f"logistic-synthetic-{int(n)}",
                               description=f"logistic regression on {int(n)} simulated rows, "
                               f"d={d} (for scaling in data size)")
