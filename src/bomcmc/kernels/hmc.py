"""Hamiltonian Monte Carlo with fixed or random trajectory length.

Wang 2012, Alg. 1 (one transition: fresh momentum, L leapfrog steps, Metropolis accept);
Wang, Mohamed & de Freitas 2013 §4 and the authors' `hmc_iter.m` (random length
L_r ~ U{1..L} drawn at each transition); Choo 2000, Alg. 3 (per-coordinate step sizes, here
a diagonal inverse mass matrix).

Pure functions on one chain, in the style of BlackJAX: `init(position, logdensity_fn)` and
`step(key, state, logdensity_fn, knobs) -> (state, info)`. All knobs are array arguments, so
changing the step size, L or the mass between calls never recompiles.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..config import float_dtype
from ..validation import inverse_mass, positive_number, whole_number
from .base import Kernel
from .integrators import IntegratorState, kinetic_energy, leapfrog, sample_momentum

MAX_ENERGY_ERROR = 1000.0  # |ΔH| above this is a divergence (Stan's and BlackJAX's default)


class HMCState(NamedTuple):
    position: jax.Array
    logdensity: jax.Array
    logdensity_grad: jax.Array


class HMCKnobs(NamedTuple):
    step_size: jax.Array  # ε
    num_steps: jax.Array  # L (the maximum when random_steps)
    inverse_mass_matrix: jax.Array  # M⁻¹: diagonal (d,) or dense (d, d)
    random_steps: jax.Array  # bool: draw L_r ~ U{1..L} per transition


class HMCInfo(NamedTuple):
    acceptance_rate: jax.Array  # min(1, exp(-ΔH)), 0 for a divergence
    energy: jax.Array  # H at the start of the transition
    energy_error: jax.Array  # ΔH = H(proposal) - H(start)
    diverging: jax.Array  # non-finite ΔH or ΔH > MAX_ENERGY_ERROR
    n_grad: jax.Array  # gradient evaluations spent
    n_steps: jax.Array  # leapfrog steps taken (L_r or L)
    sq_jump: jax.Array  # ||x_{t+1} - x_t||²
    esjd: jax.Array  # a · ||x* - x_t||²: Rao-Blackwellised jump (as the authors' `ahmc.m`)
    step_size: jax.Array


def init(position: jax.Array, logdensity_fn: Callable) -> HMCState:
    logp, grad = jax.value_and_grad(logdensity_fn)(position)
    return HMCState(position, logp, grad)


def trajectory_length(u: jax.Array, knobs: HMCKnobs) -> jax.Array:
    """L, or L_r ~ U{1, ..., L} when random_steps (Wang, Mohamed & de Freitas 2013 §4; the
    authors' `hmc_iter.m`: ceil(rand·L)), from one uniform u ∈ [0, 1)."""
    num_steps = jnp.asarray(knobs.num_steps, jnp.int32)
    drawn = jnp.clip(1 + jnp.floor(u * num_steps).astype(jnp.int32), 1, num_steps)
    return jnp.where(knobs.random_steps, drawn, num_steps)


def restricted_accept(inside, accept_prob, u_accept):
    """(acceptance probability, accepted) of a proposal restricted to a set M: a · 1_M(x*),
    then u < a (Wang, Mohamed & de Freitas 2013 §4, Proposition 3; `kernels/support.py`)."""
    accept_prob = jnp.where(inside, accept_prob, jnp.zeros_like(accept_prob))
    return accept_prob, u_accept < accept_prob


def metropolis(logdensity0, end: IntegratorState, momentum0, inv_mass, u_accept,
               max_energy_error: float = MAX_ENERGY_ERROR):
    """The Metropolis test of a trajectory from (x₀, p₀) to `end`: H = −log π + ½ pᵀM⁻¹p,
    ΔH = H(end) − H₀; a divergence (ΔH not finite or above `max_energy_error`) is
    rejected. A proposal beyond a wall (`beyond_a_wall`) is rejected too, but is not a
    divergence.
    Returns (H₀, ΔH, diverging, acceptance probability min(1, e^{−ΔH}), accepted)."""
    kinetic0, kinetic1 = kinetic_energy(momentum0, inv_mass), kinetic_energy(end.momentum,
                                                                             inv_mass)
    energy0 = -logdensity0 + kinetic0
    energy1 = -end.logdensity + kinetic1
    delta = energy1 - energy0
    diverging = ((~jnp.isfinite(delta) | (delta > max_energy_error))
                 & ~beyond_a_wall(end, kinetic1 - kinetic0, max_energy_error))
    accept_prob = jnp.where(diverging, 0.0, jnp.minimum(1.0, jnp.exp(-delta)))  # 0 beyond
    return energy0, delta, diverging, accept_prob, u_accept < accept_prob


def beyond_a_wall(end: IntegratorState, kinetic_change, max_energy_error: float):
    """Whether a trajectory ended where the density is zero (log density −∞, as a wall written
    `jnp.where(inside, log π, -jnp.inf)` gives) with its position, gradient and momentum
    finite and its kinetic energy changed by less than `max_energy_error`: the proposal has
    zero density and is rejected, as Metropolis rejects any such proposal, but the integrator
    did not fail, so it is not a divergence, which would steer a tuner to ever smaller steps
    (docs/defaults.md, "Divergences at a hard boundary"). A trajectory that blows up
    gains kinetic energy as its gradient grows, so one that overflows to −∞ is expected past
    that bound (reasoned; tested on constructed ends only); a NaN (a log of a negative
    number) stays a divergence, as it cannot be told from a blow-up's NaN."""
    finite = (jnp.all(jnp.isfinite(end.position)) & jnp.all(jnp.isfinite(end.logdensity_grad))
              & jnp.isfinite(kinetic_change))
    return (end.logdensity == -jnp.inf) & finite & (kinetic_change < max_energy_error)


def step(
    key: jax.Array,
    state: HMCState,
    logdensity_fn: Callable,
    knobs: HMCKnobs,
    max_energy_error: float = MAX_ENERGY_ERROR,
    support: Callable | None = None,
) -> tuple[HMCState, HMCInfo]:
    """One HMC transition (Wang 2012, Alg. 1); with `support` (a membership test of the
    position, `support.restrict`), a proposal outside it is rejected (Wang, Mohamed & de
    Freitas 2013 §4)."""
    # Two random streams per transition: the momentum, and two uniforms (accept, L_r).
    key_p, key_u = jax.random.split(key)
    u_accept, u_steps = jax.random.uniform(key_u, (2,), state.position.dtype)
    inv_mass = knobs.inverse_mass_matrix
    momentum = sample_momentum(key_p, state.position, inv_mass)
    n = trajectory_length(u_steps, knobs)
    start = IntegratorState(state.position, momentum, state.logdensity, state.logdensity_grad)
    end = leapfrog(start, logdensity_fn, knobs.step_size, inv_mass, n)

    energy0, delta, diverging, accept_prob, accept = metropolis(
        state.logdensity, end, momentum, inv_mass, u_accept, max_energy_error)
    if support is not None:
        accept_prob, accept = restricted_accept(support(end.position), accept_prob, u_accept)

    new_state = jax.tree_util.tree_map(
        lambda new, old: jnp.where(accept, new, old),
        HMCState(end.position, end.logdensity, end.logdensity_grad),
        state,
    )
    info = transition_info(state.position, end.position, new_state.position, energy0, delta,
                           diverging, accept_prob, n, n,
                           jnp.asarray(knobs.step_size, state.position.dtype))
    return new_state, info


def transition_info(x0, proposal, x1, energy0, delta, diverging, accept_prob, n_grad,
                    n_steps, step_size) -> HMCInfo:
    """The info of a transition from x0 that proposed `proposal` and moved to x1: the squared
    jump ||x1 − x0||² and the Rao-Blackwellised jump a·||x* − x0||² (0 for a divergence)."""
    prop_jump = jnp.sum((proposal - x0) ** 2)
    esjd = jnp.where(diverging | ~jnp.isfinite(prop_jump), 0.0, accept_prob * prop_jump)
    return HMCInfo(acceptance_rate=accept_prob, energy=energy0, energy_error=delta,
                   diverging=diverging, n_grad=n_grad, n_steps=n_steps,
                   sq_jump=jnp.sum((x1 - x0) ** 2), esjd=esjd, step_size=step_size)


def default_knobs(
    dim: int,
    step_size: float = 0.1,
    steps: int = 10,
    random_steps: bool = False,
    inverse_mass_matrix=None,
    dense_mass: bool = False,
) -> HMCKnobs:
    """Validated knobs for one chain. The metric is diagonal unless `dense_mass=True` or a
    (d, d) `inverse_mass_matrix` is given; the choice fixes the knob's shape for the run."""
    positive_number("step_size", step_size)
    whole_number("steps (L)", steps)
    inv_mass = inverse_mass(dim, inverse_mass_matrix, dense_mass)
    dtype = float_dtype()
    return HMCKnobs(
        step_size=np.asarray(step_size, dtype),
        num_steps=np.asarray(int(steps), np.int32),
        inverse_mass_matrix=inv_mass.astype(dtype),
        random_steps=np.asarray(bool(random_steps)),
    )


kernel = Kernel(name="hmc", init=init, step=step, make_knobs=default_knobs)
