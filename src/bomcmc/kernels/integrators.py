"""Leapfrog (velocity Verlet) with a diagonal or dense inverse mass matrix.

Wang 2012 §2.1, eq. (2.2):
    p_{τ+ε/2} = p_τ + (ε/2) ∇log π(x_τ)
    x_{τ+ε}   = x_τ + ε M⁻¹ p_{τ+ε/2}
    p_{τ+ε}   = p_{τ+ε/2} + (ε/2) ∇log π(x_{τ+ε})
A diagonal M⁻¹ (shape (d,)) is the same as per-coordinate step sizes ε·sqrt(M⁻¹ᵢ) (Choo 2000,
Alg. 3); a dense one (shape (d, d), an estimate of the posterior covariance) also undoes the
correlations (Neal 2011 §4.1). The shape is static, so each is its own compiled path.
The gradient at the end of one step is reused at the start of the next, so L steps cost
L gradient evaluations.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp


class IntegratorState(NamedTuple):
    position: jax.Array
    momentum: jax.Array
    logdensity: jax.Array
    logdensity_grad: jax.Array


def leapfrog_step(
    state: IntegratorState,
    logdensity_fn: Callable[[jax.Array], jax.Array],
    step_size: jax.Array,
    inverse_mass_matrix: jax.Array,
) -> IntegratorState:
    """One leapfrog step (Wang 2012, eq. 2.2): half kick, drift, full gradient, half kick."""
    p_half = state.momentum + 0.5 * step_size * state.logdensity_grad
    x_new = state.position + drift(p_half, inverse_mass_matrix, step_size)
    logp, grad = jax.value_and_grad(logdensity_fn)(x_new)
    p_new = p_half + 0.5 * step_size * grad
    return IntegratorState(x_new, p_new, logp, grad)


def leapfrog(
    state: IntegratorState,
    logdensity_fn: Callable[[jax.Array], jax.Array],
    step_size: jax.Array,
    inverse_mass_matrix: jax.Array,
    num_steps: jax.Array,
) -> IntegratorState:
    """`num_steps` leapfrog steps; `num_steps` may be a traced integer (no recompilation)."""

    def body(_, s):
        return leapfrog_step(s, logdensity_fn, step_size, inverse_mass_matrix)

    return jax.lax.fori_loop(0, num_steps, body, state)


def drift(momentum: jax.Array, inverse_mass_matrix: jax.Array, step_size) -> jax.Array:
    """The position's change over one step, ε M⁻¹ p."""
    if inverse_mass_matrix.ndim == 2:
        return step_size * (inverse_mass_matrix @ momentum)
    return step_size * inverse_mass_matrix * momentum


def kinetic_energy(momentum: jax.Array, inverse_mass_matrix: jax.Array) -> jax.Array:
    """K(p) = ½ pᵀ M⁻¹ p."""
    if inverse_mass_matrix.ndim == 2:
        return 0.5 * momentum @ (inverse_mass_matrix @ momentum)
    return 0.5 * jnp.sum(momentum * inverse_mass_matrix * momentum)


def sample_momentum(key: jax.Array, position: jax.Array,
                    inverse_mass_matrix: jax.Array) -> jax.Array:
    """p ~ N(0, M). Diagonal: z / sqrt(M⁻¹); dense: L⁻ᵀ z with M⁻¹ = L Lᵀ (Cholesky), whose
    covariance L⁻ᵀ L⁻¹ is M."""
    z = jax.random.normal(key, position.shape, position.dtype)
    if inverse_mass_matrix.ndim == 2:
        chol = jnp.linalg.cholesky(inverse_mass_matrix)
        return jax.scipy.linalg.solve_triangular(chol.T, z, lower=False)
    return z / jnp.sqrt(inverse_mass_matrix)
