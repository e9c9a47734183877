"""Dual averaging (Nesterov 2009) of log ε (Hoffman & Gelman 2014, Alg. 6; Stan's
`stan/mcmc/stepsize_adaptation.hpp`; the Stan Reference Manual, "HMC algorithm parameters").

Pure functions on a NamedTuple of scalars, jittable and vmappable. One update per warm-up
transition, with that transition's acceptance statistic α:

    η  = 1 / (m + t₀)
    H̄_m = (1 − η) H̄_{m−1} + η (δ − α)                      the running error ("s̄")
    x_m = log ε_m = μ − (√m / γ) H̄_m                        the iterate
    x̄_m = log ε̄_m = m^{−κ} x_m + (1 − m^{−κ}) x̄_{m−1}       the averaged iterate

ε = e^{x_m} while adapting; ε̄ = e^{x̄} when adaptation ends. Stan's defaults (also NumPyro's
and BlackJAX's): δ = 0.8, γ = 0.05, κ = 0.75, t₀ = 10, μ = log(10 ε₀).

Unlike BlackJAX's `optimizers.dual_averaging`, which averages the *previous* iterate
(x̄_m = m^{−κ} x_{m−1} + ...: the first average is the initial log ε, not x_1), this averages
the iterate just computed, as Algorithm 6 and Stan do.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from ..errors import BomcmcError
from .base import Adapter

GAMMA = 0.05  # γ: Alg. 6 / Stan `gamma_`
KAPPA = 0.75  # κ: Alg. 6 / Stan `kappa_`
T0 = 10.0  # t₀: Alg. 6 / Stan `t0_`
TARGET_ACCEPT = 0.8  # δ: Stan's adapt_delta (Hoffman & Gelman 2014 used 0.65)


class DualAveragingState(NamedTuple):
    count: jax.Array  # m: updates since the last restart (Stan `counter_`)
    s_bar: jax.Array  # H̄_m (Stan `s_bar_`)
    x: jax.Array  # log ε_m, the current iterate
    x_bar: jax.Array  # log ε̄_m, the averaged iterate (Stan `x_bar_`)
    mu: jax.Array  # μ, the point the iterates are shrunk towards (Stan `mu_`)


def init(step_size: jax.Array) -> DualAveragingState:
    """Start (or restart) at ε: μ = log(10 ε) (Alg. 6 line 2 / Stan `set_mu(log(10 ε))`),
    m = H̄ = x̄ = 0 (Alg. 6 line 2: H̄₀ = 0, ε̄₀ = 1 / Stan `restart()`)."""
    log_eps = jnp.log(step_size)
    zero = jnp.zeros_like(log_eps)
    return DualAveragingState(count=zero, s_bar=zero, x=log_eps, x_bar=zero,
                              mu=jnp.log(10.0) + log_eps)


def update(
    state: DualAveragingState,
    accept_stat: jax.Array,
    target_accept: jax.Array = TARGET_ACCEPT,
    gamma: float = GAMMA,
    kappa: float = KAPPA,
    t0: float = T0,
) -> DualAveragingState:
    """One step of Alg. 6 (lines 11-13) / Stan `learn_stepsize`."""
    dtype = state.x.dtype
    # Stan: adapt_stat = adapt_stat > 1 ? 1 : adapt_stat  (a NaN statistic counts as 0)
    alpha = jnp.clip(jnp.nan_to_num(jnp.asarray(accept_stat, dtype), nan=0.0), 0.0, 1.0)
    m = state.count + 1  # Stan: ++counter_
    eta = 1.0 / (m + t0)  # Stan: eta = 1.0 / (counter_ + t0_)
    s_bar = (1.0 - eta) * state.s_bar + eta * (target_accept - alpha)  # Alg. 6 l.11 (H̄_m)
    x = state.mu - s_bar * jnp.sqrt(m) / gamma  # Alg. 6 l.12: log ε_m = μ − √m/γ · H̄_m
    w = m ** (-kappa)  # Stan: x_eta = pow(counter_, -kappa_)
    x_bar = (1.0 - w) * state.x_bar + w * x  # Alg. 6 l.13: log ε̄_m
    return DualAveragingState(count=m, s_bar=jnp.asarray(s_bar, dtype), x=jnp.asarray(x, dtype),
                              x_bar=jnp.asarray(x_bar, dtype), mu=state.mu)


def step_size(state: DualAveragingState) -> jax.Array:
    """ε_m = e^{x_m}, used while adapting (Stan: epsilon = exp(x))."""
    return jnp.exp(state.x)


def final_step_size(state: DualAveragingState) -> jax.Array:
    """ε̄ = e^{x̄}, used after adaptation (Alg. 6 line 16 / Stan `complete_adaptation`)."""
    return jnp.exp(state.x_bar)


def check_options(target_accept, gamma: float, kappa: float, t0: float) -> None:
    """One-line errors for dual-averaging options outside their domains."""
    if target_accept is not None and not (0.0 < float(target_accept) < 1.0):
        raise BomcmcError(f"target_accept must be in (0, 1), got {target_accept}")
    if not (gamma > 0 and t0 >= 0 and 0.5 < kappa <= 1.0):
        raise BomcmcError("dual averaging needs gamma > 0, t0 >= 0 and kappa in (0.5, 1]")


def target(target_accept, dtype) -> jax.Array:
    """δ: the adapter's `target_accept` option (None: Stan's 0.8)."""
    return jnp.asarray(TARGET_ACCEPT if target_accept is None else target_accept, dtype)


# ---------------------------------------------------------------------------------------
# Warm-up: dual averaging of the step size alone
# ---------------------------------------------------------------------------------------
class DualAveragingAdaptState(NamedTuple):
    """One chain's dual-averaging state (flat: the driver stores it field by field)."""

    count: jax.Array
    s_bar: jax.Array
    x: jax.Array
    x_bar: jax.Array
    mu: jax.Array
    last_iter: jax.Array  # num_warmup − 1: the update that hands over ε = e^{x̄}


def dual_averaging_adaptation(target_accept: float = TARGET_ACCEPT, gamma: float = GAMMA,
                              kappa: float = KAPPA, t0: float = T0) -> Adapter:
    """Dual averaging of log `step_size` in every warm-up transition (Hoffman & Gelman 2014
    Alg. 6, Stan's `stepsize_adaptation`), nothing else: no metric, no step-size heuristic.
    Starts at the knobs' step size with μ = log(10 ε₀); at the last warm-up transition the
    knobs get ε̄ = e^{x̄}. δ is `target_accept` (Stan's adapt_delta)."""
    check_options(target_accept, gamma, kappa, t0)

    def adapt_init(position, knobs, num_warmup: int) -> DualAveragingAdaptState:
        d0 = init(jnp.asarray(knobs.step_size, position.dtype))
        return DualAveragingAdaptState(*d0, last_iter=jnp.asarray(int(num_warmup) - 1,
                                                                    jnp.int32))

    def adapt_update(key, s, t, state, info, knobs, logdensity_fn):
        dtype = s.x.dtype
        delta = target(target_accept, dtype)
        d = update(DualAveragingState(*s[:5]), info.acceptance_rate, delta, gamma, kappa, t0)
        eps = jnp.where(t >= s.last_iter, final_step_size(d), step_size(d))
        new_knobs = knobs._replace(step_size=jnp.asarray(eps, knobs.step_size.dtype))
        return DualAveragingAdaptState(*d, last_iter=s.last_iter), new_knobs

    return Adapter(name="dual_averaging", init=adapt_init, update=adapt_update)
