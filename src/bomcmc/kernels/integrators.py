"""Leapfrog (velocity Verlet) with a diagonal or dense inverse mass matrix.

Wang 2012 §2.1, eq. (2.2):
    p_{τ+ε/2} = p_τ + (ε/2) ∇log π(x_τ)
    x_{τ+ε}   = x_τ + ε M⁻¹ p_{τ+ε/2}
    p_{τ+ε}   = p_{τ+ε/2} + (ε/2) ∇log π(x_{τ+ε})
A diagonal M⁻¹ (shape (d,)) is the same as per-coordinate step sizes ε·sqrt(M⁻¹ᵢ) (Choo 2000,
Alg. 3); a dense one (shape (d, d), an estimate of the posterior covariance) also undoes the
correlations (Neal 2011 §4.1). The shape is static, so each is its own compiled path. A
`MassOperator` gives the mass by its actions instead (M⁻¹p and a draw of p ~ N(0, M)), for a
structured metric that is never formed as a (d, d) array (a tridiagonal one, say); it is
built inside a transition, e.g. from parameters held fixed in a Gibbs block.
The gradient at the end of one step is reused at the start of the next, so L steps cost
L gradient evaluations.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp


class MassOperator(NamedTuple):
    """A mass matrix M given by two functions: `inverse_apply(p) -> M⁻¹p` and
    `sample(key, like) -> p ~ N(0, M)` (`like`: an array of p's shape and dtype)."""

    inverse_apply: Callable[[jax.Array], jax.Array]
    sample: Callable[[jax.Array, jax.Array], jax.Array]


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
    if isinstance(inverse_mass_matrix, MassOperator):
        return step_size * inverse_mass_matrix.inverse_apply(momentum)
    if inverse_mass_matrix.ndim == 2:
        return step_size * (inverse_mass_matrix @ momentum)
    return step_size * inverse_mass_matrix * momentum


def kinetic_energy(momentum: jax.Array, inverse_mass_matrix: jax.Array) -> jax.Array:
    """K(p) = ½ pᵀ M⁻¹ p."""
    if isinstance(inverse_mass_matrix, MassOperator):
        return 0.5 * momentum @ inverse_mass_matrix.inverse_apply(momentum)
    if inverse_mass_matrix.ndim == 2:
        return 0.5 * momentum @ (inverse_mass_matrix @ momentum)
    return 0.5 * jnp.sum(momentum * inverse_mass_matrix * momentum)


def sample_momentum(key: jax.Array, position: jax.Array,
                    inverse_mass_matrix: jax.Array) -> jax.Array:
    """p ~ N(0, M). Diagonal: z / sqrt(M⁻¹); dense: L⁻ᵀ z with M⁻¹ = L Lᵀ (Cholesky), whose
    covariance L⁻ᵀ L⁻¹ is M; an operator, its own draw."""
    if isinstance(inverse_mass_matrix, MassOperator):
        return inverse_mass_matrix.sample(key, position)
    z = jax.random.normal(key, position.shape, position.dtype)
    if inverse_mass_matrix.ndim == 2:
        chol = jnp.linalg.cholesky(inverse_mass_matrix)
        return jax.scipy.linalg.solve_triangular(chol.T, z, lower=False)
    return z / jnp.sqrt(inverse_mass_matrix)


def tridiagonal_cholesky(diag: jax.Array, off: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The bidiagonal Cholesky factor L (M = L Lᵀ) of the symmetric tridiagonal M with
    diagonal `diag` (d,) and off-diagonal `off` (d − 1,): L's diagonal lᵢ = √(diagᵢ − cᵢ₋₁²)
    and subdiagonal cᵢ = offᵢ / lᵢ (d − 1,), by one scan."""
    def step(c_prev, a_b):
        a, b = a_b
        l = jnp.sqrt(a - c_prev**2)
        return b / l, (l, b / l)

    upper = jnp.concatenate([off, jnp.zeros((1,), diag.dtype)])
    _, (l_diag, l_sub) = jax.lax.scan(step, jnp.zeros((), diag.dtype), (diag, upper))
    return l_diag, l_sub[:-1]


def tridiagonal_mass(diag: jax.Array, off: jax.Array) -> MassOperator:
    """The mass M with diagonal `diag` (d,) and off-diagonal `off` (d − 1,), symmetric
    positive definite, in O(d): M⁻¹p by LAPACK's tridiagonal solver, p = L z ~ N(0, M) with L
    its bidiagonal Cholesky factor (`tridiagonal_cholesky`)."""
    zero = jnp.zeros((1,), diag.dtype)
    lower, upper = jnp.concatenate([zero, off]), jnp.concatenate([off, zero])
    l_diag, l_sub = tridiagonal_cholesky(diag, off)

    def inverse_apply(p):
        return jax.lax.linalg.tridiagonal_solve(lower, diag, upper, p[:, None])[:, 0]

    def sample(key, like):
        z = jax.random.normal(key, like.shape, like.dtype)
        return l_diag * z + jnp.concatenate([jnp.zeros((1,), z.dtype), l_sub * z[:-1]])

    return MassOperator(inverse_apply, sample)
