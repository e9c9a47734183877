"""Stochastic volatility (Girolami & Calderhead 2011 §9; Wang, Mohamed & de Freitas 2013
§5.3) on Girolami & Calderhead's simulated series of T = 2000 returns:

    y_t = β ε_t exp(x_t / 2),   ε_t ~ N(0, 1)
    x_1 ~ N(0, σ² / (1 − φ²)),  x_{t+1} = φ x_t + η_t,  η_t ~ N(0, σ²)

Priors: σ² ~ scaled-inverse-χ²(10, 0.05), i.e. log p(σ²) = −6 log σ² − 0.25/σ²;
(φ + 1)/2 ~ Beta(20, 1.5); β ~ Exponential(1), log p(β) = −β. (The paper quotes p(β) ∝ 1/β,
improper; the authors' code uses −β. We take the code's proper prior: with T = 2000 returns it
moves the posterior of β by far less than its sd; docs/rmhmc.md.)

The sampled vector is unconstrained: the latent path `x` (T,), `log_beta`, `log_sigma`
(Girolami & Calderhead's γ) and `atanh_phi` (their α), with the Jacobians of the three
transforms in the log density. Flattened, the parameters come first, in the order
`atanh_phi, log_beta, log_sigma`, and the path after them.

Girolami & Calderhead's metrics for their blocked sampler (`Posterior.rmhmc_blocks`), the
expected Fisher information of p(y, x | θ):
- the path given θ: G_x = C⁻¹ + ½ I, with C⁻¹ the AR(1) precision (tridiagonal: 1/σ² at both
  ends, (1 + φ²)/σ² inside, −φ/σ² off the diagonal) and ½ the Fisher information of y_t in x_t;
- the parameters, in (α, log β, γ): 2T for log β (y_t's scale), and for (γ, α) the AR(1)'s
  [[2T, 2φ], [2φ, 2φ² + (T − 1)(1 − φ²)]]; plus, as in their code, the prior's curvature
  −∂² log p(θ) on the diagonal: β, 1/σ² and 21.5 (1 − φ²). Without it the (α, α) entry falls
  to 2 as φ → 1 on a short series, and the implicit steps stop converging.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..datasets import stochastic_volatility as sv_data
from ..posterior import Posterior, RMHMCBlocks

TRUTH = {"beta": 0.65, "sigma": 0.15, "phi": 0.98}


class SVFacts(NamedTuple):
    """What the model knows beyond its density (`Posterior.facts`): the series' length, the
    simulated log-volatility path x (T,) and the parameters that simulated it."""

    T: int
    true_x: np.ndarray
    truth: dict
LOG_2PI = float(np.log(2 * np.pi))


def log_prior(log_beta, log_sigma, atanh_phi):
    """The priors of β, σ² and φ on the unconstrained scale, Jacobians included."""
    lp_beta = -jnp.exp(log_beta) + log_beta  # Exponential(1), dβ = β d log β
    # σ² = e^{2γ}: −6 log σ² − 0.25/σ² + log |dσ²/dγ| (= log 2 + 2γ, constant dropped)
    lp_sigma = -12.0 * log_sigma - 0.25 * jnp.exp(-2.0 * log_sigma) + 2.0 * log_sigma
    # φ = tanh α: log((1+φ)/2) = −softplus(−2α), log((1−φ)/2) = −softplus(2α),
    # log|d((φ+1)/2)/dα| = log((1 − φ²)/2) = log 2 − softplus(2α) − softplus(−2α)
    up, down = jax.nn.softplus(-2.0 * atanh_phi), jax.nn.softplus(2.0 * atanh_phi)
    lp_phi = -19.0 * up - 0.5 * down - up - down
    return lp_beta + lp_sigma + lp_phi


def log_likelihood(x, log_beta, y):
    """Σ_t log N(y_t | 0, β² e^{x_t})."""
    return jnp.sum(-0.5 * LOG_2PI - log_beta - 0.5 * x
                   - 0.5 * y**2 * jnp.exp(-x - 2.0 * log_beta))


def log_latent(x, log_sigma, atanh_phi):
    """log p(x | σ, φ): the stationary AR(1) path."""
    phi = jnp.tanh(atanh_phi)
    sigma2 = jnp.exp(2.0 * log_sigma)
    # log(1 − φ²) = log 4 − softplus(2α) − softplus(−2α), stable as φ → ±1
    log1m_phi2 = (jnp.log(4.0) - jax.nn.softplus(2.0 * atanh_phi)
                  - jax.nn.softplus(-2.0 * atanh_phi))
    first = -0.5 * LOG_2PI - log_sigma + 0.5 * log1m_phi2 - 0.5 * x[0] ** 2 * jnp.exp(
        log1m_phi2) / sigma2
    innov = x[1:] - phi * x[:-1]
    rest = jnp.sum(-0.5 * LOG_2PI - log_sigma - 0.5 * innov**2 / sigma2)
    return first + rest


def latent_metric(theta, T: int):
    """G_x = C⁻¹ + ½ I given θ = (α, log β, γ): its diagonal (T,) and off-diagonal (T − 1,)."""
    phi, sigma2 = jnp.tanh(theta[0]), jnp.exp(2.0 * theta[2])
    inner = jnp.full((T,), (1.0 + phi**2) / sigma2)
    diag = inner.at[0].set(1.0 / sigma2).at[-1].set(1.0 / sigma2) + 0.5
    return diag, jnp.full((T - 1,), -phi / sigma2)


def parameter_metric(theta, T: int):
    """The (3, 3) metric of θ = (α, log β, γ) (module docstring): the Fisher information of
    p(y, x | θ) plus the prior's curvature −∂² log p(θ), which is diagonal and positive."""
    phi = jnp.tanh(theta[0])
    one_m = 1.0 - phi**2
    a = 2.0 * phi**2 + (T - 1.0) * one_m + 21.5 * one_m  # Beta(20, 1.5): 21.5 (1 − φ²)
    b = 2.0 * T + jnp.exp(theta[1])  # Exponential(1) on β: β
    g = 2.0 * T + jnp.exp(-2.0 * theta[2])  # scaled-inv-χ² on σ²: 1/σ²
    zero = jnp.zeros_like(phi)
    return jnp.stack([jnp.stack([a, zero, 2.0 * phi]),
                      jnp.stack([zero, b, zero]),
                      jnp.stack([2.0 * phi, zero, g])])


def stochastic_volatility(T: int | None = None) -> Posterior:
    """The posterior of (x, log β, log σ, atanh φ) given the first T returns (all 2000 by
    default)."""
    y_all, true_x = sv_data()
    T = y_all.size if T is None else int(T)
    y = y_all[:T]

    def logdensity(params):
        yj = jnp.asarray(y, params["x"].dtype)
        return (log_likelihood(params["x"], params["log_beta"], yj)
                + log_latent(params["x"], params["log_sigma"], params["atanh_phi"])
                + log_prior(params["log_beta"], params["log_sigma"], params["atanh_phi"]))

    def initializer(key):
        k_x, k_p = jax.random.split(key)
        p = jax.random.uniform(k_p, (3,), minval=-2.0, maxval=2.0)
        return {"x": jax.random.uniform(k_x, (T,), minval=-2.0, maxval=2.0),
                "log_beta": p[0], "log_sigma": p[1], "atanh_phi": p[2]}

    init = {"x": np.zeros(T), "log_beta": np.log(0.5), "log_sigma": np.log(0.5),
            "atanh_phi": np.arctanh(0.5)}  # Girolami & Calderhead start β = σ = φ = 0.5
    return Posterior(logdensity_fn=logdensity, init_position=init, name=f"sv-{T}",
                     initializer=initializer,
                     description=f"stochastic volatility, T={T} (Girolami & Calderhead's "
                                 "simulated returns; β = 0.65, σ = 0.15, φ = 0.98)",
                     facts=SVFacts(T=T, true_x=true_x[:T], truth=dict(TRUTH)),
                     rmhmc_blocks=RMHMCBlocks(
                         latent=(3, 3 + T), parameters=(0, 3),
                         latent_metric=partial(latent_metric, T=T),
                         parameter_metric=partial(parameter_metric, T=T)))
