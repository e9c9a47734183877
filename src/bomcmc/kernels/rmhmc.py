"""Riemann-manifold HMC with the generalised leapfrog (Girolami & Calderhead 2011).

The Hamiltonian on a position-dependent metric G(θ) (a user's `metric_fn(θ) -> (D, D)`):

    H(θ, p) = −log π(θ) + ½ log |G(θ)| + ½ pᵀ G(θ)⁻¹ p        (+ ½ D log 2π)
    ∂H/∂θ_i = −∂_i log π + ½ tr(G⁻¹ ∂_iG) − ½ pᵀ G⁻¹ (∂_iG) G⁻¹ p

with p ~ N(0, G(θ)) drawn afresh at every transition. One step of the generalised leapfrog
(Girolami & Calderhead 2011, eqs. 16–18):

1. p½ = p − (ε/2) ∂_θH(θ, p½)                     implicit in p½: fixed-point iterations
2. θ' = θ + (ε/2) [G(θ)⁻¹ + G(θ')⁻¹] p½            implicit in θ': fixed-point iterations
3. p' = p½ − (ε/2) ∂_θH(θ', p½)                    explicit

The map is reversible and volume-preserving when the fixed points are solved exactly; a
stated number of iterations (the knob `fixed_point_steps`, 6 by default: Girolami &
Calderhead's code uses 4–10) is run, and the largest relative change of the last iteration
over the trajectory is reported as `fixed_point_error` (a transition whose error exceeds
`tol` is flagged `fixed_point_failed` in `sample_stats`). Derivatives of G come from JAX:
∇½ log|G| by differentiating the log-determinant, and the quadratic term as the
vector-Jacobian product of `metric_fn` with the cotangent v vᵀ, v = G⁻¹p (one VJP per
fixed-point iteration; G itself is factorised once per point).

Knobs are `hmc`'s: ε, L, random L_r ~ U{1..L}; all runtime values, so changing them never
recompiles. A constant metric makes the log-determinant cancel and the scheme ordinary
leapfrog with mass matrix G: `kernel_for_metric` then returns `hmc` with the dense inverse
mass G⁻¹ (the same draws as `hmc` with that mass matrix); a diagonal one, a diagonal mass.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..config import float_dtype
from ..errors import BomcmcError
from ..validation import positive_number, whole_number
from . import hmc
from .base import Kernel

FIXED_POINT_STEPS = 6
FIXED_POINT_TOL = 1e-3  # relative change of the last fixed-point iteration


class RMHMCKnobs(NamedTuple):
    step_size: jax.Array  # ε
    num_steps: jax.Array  # L (the maximum when random_steps)
    random_steps: jax.Array  # bool: L_r ~ U{1..L} per transition
    fixed_point_steps: jax.Array  # iterations of each implicit step


class RMHMCInfo(NamedTuple):
    acceptance_rate: jax.Array
    energy: jax.Array  # H at the start
    energy_error: jax.Array  # ΔH
    diverging: jax.Array
    n_grad: jax.Array  # gradients of log π spent (one per step; the metric's cost is apart)
    n_steps: jax.Array
    sq_jump: jax.Array
    esjd: jax.Array
    step_size: jax.Array
    fixed_point_error: jax.Array  # largest relative change of a last fixed-point iteration
    fixed_point_failed: jax.Array  # fixed_point_error > tol, or not finite


class Point(NamedTuple):
    """What the integrator keeps of a position: log π, ∇ log π, ∇ ½ log|G|, and G's
    Cholesky factor."""

    position: jax.Array
    logdensity: jax.Array
    logdensity_grad: jax.Array
    half_logdet_grad: jax.Array
    chol: jax.Array


def _half_logdet(chol):
    return jnp.sum(jnp.log(jnp.diag(chol)))


def make_point(position, logdensity_fn, metric_fn, logp_and_grad=None) -> Point:
    """The Point at θ; `logp_and_grad` when log π and its gradient are known already."""
    if logp_and_grad is None:
        logp_and_grad = jax.value_and_grad(logdensity_fn)(position)
    logp, grad = logp_and_grad

    def half_logdet(x):  # G and its Cholesky factor once, for the value and the gradient
        chol = jnp.linalg.cholesky(metric_fn(x))
        return _half_logdet(chol), chol

    (_, chol), ld_grad = jax.value_and_grad(half_logdet, has_aux=True)(position)
    return Point(position, logp, grad, ld_grad, chol)


def _solve(chol, p):
    """G⁻¹ p from G's Cholesky factor."""
    return jax.scipy.linalg.cho_solve((chol, True), p)


def hamiltonian(point: Point, momentum) -> jax.Array:
    """H = −log π + ½ log|G| + ½ pᵀG⁻¹p (without the constant ½ D log 2π)."""
    return (-point.logdensity + _half_logdet(point.chol)
            + 0.5 * jnp.dot(momentum, _solve(point.chol, momentum)))


def _dH_dtheta(point: Point, metric_vjp, momentum):
    """∂H/∂θ at (θ, p): −∇log π + ∇½log|G| − ½ ∂_θ(vᵀG(θ)v) at v = G⁻¹p."""
    v = _solve(point.chol, momentum)
    (quad,) = metric_vjp(jnp.outer(v, v))
    return -point.logdensity_grad + point.half_logdet_grad - 0.5 * quad


def _rel_change(new, old):
    return jnp.max(jnp.abs(new - old)) / (1.0 + jnp.max(jnp.abs(new)))


def generalised_leapfrog(point: Point, momentum, logdensity_fn, metric_fn, step_size,
                         fixed_point_steps):
    """One step of the generalised leapfrog (module docstring) from (θ, p): returns
    (Point at θ', p', the largest relative change of a last fixed-point iteration)."""
    half = 0.5 * step_size
    _, vjp0 = jax.vjp(metric_fn, point.position)

    def momentum_iter(_, carry):  # 1. p½ = p − (ε/2) ∂_θH(θ, p½)
        pm, _ = carry
        new = momentum - half * _dH_dtheta(point, vjp0, pm)
        return new, _rel_change(new, pm)

    p_half, err_p = jax.lax.fori_loop(0, fixed_point_steps, momentum_iter,
                                      (momentum, jnp.zeros((), momentum.dtype)))
    drift0 = _solve(point.chol, p_half)

    def position_iter(_, carry):  # 2. θ' = θ + (ε/2)[G(θ)⁻¹ + G(θ')⁻¹] p½
        theta, _ = carry
        chol = jnp.linalg.cholesky(metric_fn(theta))
        new = point.position + half * (drift0 + _solve(chol, p_half))
        return new, _rel_change(new, theta)

    theta1, err_x = jax.lax.fori_loop(0, fixed_point_steps, position_iter,
                                      (point.position, jnp.zeros((), momentum.dtype)))
    point1 = make_point(theta1, logdensity_fn, metric_fn)
    _, vjp1 = jax.vjp(metric_fn, theta1)
    p1 = p_half - half * _dH_dtheta(point1, vjp1, p_half)  # 3. explicit
    return point1, p1, jnp.maximum(err_p, err_x)


def trajectory(point: Point, momentum, logdensity_fn, metric_fn, step_size, n_steps,
               fixed_point_steps):
    """n_steps generalised-leapfrog steps; returns (Point, p, largest fixed-point error)."""
    def body(_, carry):
        pt, p, err = carry
        pt, p, e = generalised_leapfrog(pt, p, logdensity_fn, metric_fn, step_size,
                                        fixed_point_steps)
        return pt, p, jnp.maximum(err, e)

    return jax.lax.fori_loop(0, n_steps, body,
                             (point, momentum, jnp.zeros((), momentum.dtype)))


def rmhmc_kernel(metric_fn: Callable, name: str = "rmhmc", tol: float = FIXED_POINT_TOL,
                 max_energy_error: float = hmc.MAX_ENERGY_ERROR) -> Kernel:
    """The RMHMC `Kernel` for a metric `metric_fn(θ) -> (D, D)` symmetric positive definite.
    Knobs: step_size (0.1), steps (10), random_steps (True), fixed_point_steps (6). Its step
    takes `support=`, a membership test: a proposal outside it is rejected
    (`support.restrict`)."""

    def init(position, logdensity_fn):
        logp, grad = jax.value_and_grad(logdensity_fn)(position)
        return hmc.HMCState(position, logp, grad)

    def step(key, state, logdensity_fn, knobs, support=None):
        key_p, key_u = jax.random.split(key)
        u_accept, u_steps = jax.random.uniform(key_u, (2,), state.position.dtype)
        point0 = make_point(state.position, logdensity_fn, metric_fn,
                            (state.logdensity, state.logdensity_grad))
        z = jax.random.normal(key_p, state.position.shape, state.position.dtype)
        momentum = point0.chol @ z  # p ~ N(0, G(θ))
        n = hmc.trajectory_length(u_steps, knobs)
        point1, p1, err = trajectory(point0, momentum, logdensity_fn, metric_fn,
                                     knobs.step_size, n, knobs.fixed_point_steps)
        energy0 = hamiltonian(point0, momentum)
        delta = hamiltonian(point1, p1) - energy0
        diverging = ~jnp.isfinite(delta) | (delta > max_energy_error)
        accept_prob = jnp.where(diverging, 0.0, jnp.minimum(1.0, jnp.exp(-delta)))
        accept = u_accept < accept_prob
        if support is not None:  # a proposal outside M is rejected (`kernels/support.py`)
            accept_prob, accept = hmc.restricted_accept(support(point1.position), accept_prob,
                                                        u_accept)
        new = jax.tree_util.tree_map(
            lambda a, b: jnp.where(accept, a, b),
            hmc.HMCState(point1.position, point1.logdensity, point1.logdensity_grad), state)
        base = hmc.transition_info(state.position, point1.position, new.position, energy0,
                                   delta, diverging, accept_prob, n, n,
                                   jnp.asarray(knobs.step_size, state.position.dtype))
        return new, RMHMCInfo(*base, fixed_point_error=err, fixed_point_failed=~(err <= tol))

    def make_knobs(dim: int, step_size: float = 0.1, steps: int = 10,
                   random_steps: bool = True,
                   fixed_point_steps: int = FIXED_POINT_STEPS) -> RMHMCKnobs:
        positive_number("step_size", step_size)
        whole_number("steps (L)", steps)
        whole_number("fixed_point_steps", fixed_point_steps)
        return RMHMCKnobs(step_size=np.asarray(step_size, float_dtype()),
                          num_steps=np.asarray(int(steps), np.int32),
                          random_steps=np.asarray(bool(random_steps)),
                          fixed_point_steps=np.asarray(int(fixed_point_steps), np.int32))

    return Kernel(name=name, init=init, step=step, make_knobs=make_knobs)


def kernel_for_metric(metric, name: str = "rmhmc") -> Kernel:
    """RMHMC for a callable metric. For a constant metric, `hmc` with inverse mass G⁻¹ as its
    default (the generalised leapfrog is then ordinary leapfrog): a (D, D) matrix G gives a
    dense mass, a (D,) vector a diagonal G and a diagonal mass (no D × D array is formed)."""
    if callable(metric):
        return rmhmc_kernel(metric, name=name)
    G = np.asarray(metric, dtype=float)
    if G.ndim == 1:
        if not np.all(np.isfinite(G)) or not np.all(G > 0):
            raise BomcmcError("a diagonal metric must be finite and positive")
        inv_mass = 1.0 / G
    elif G.ndim == 2 and G.shape[0] == G.shape[1] and np.allclose(G, G.T):
        try:
            np.linalg.cholesky(G)
        except np.linalg.LinAlgError:
            raise BomcmcError("the metric is not positive definite") from None
        inv_mass = np.linalg.inv(G)
        inv_mass = 0.5 * (inv_mass + inv_mass.T)  # symmetric to the last bit
    else:
        raise BomcmcError("a constant metric must be a symmetric (D, D) matrix or a (D,) "
                          "diagonal")

    def make_knobs(dim: int, step_size: float = 0.1, steps: int = 10,
                   random_steps: bool = True):
        if inv_mass.shape[0] != dim:
            raise BomcmcError(f"the metric is for {inv_mass.shape[0]} dimensions, the "
                              f"posterior has {dim}")
        return hmc.default_knobs(dim, step_size=step_size, steps=steps,
                                 random_steps=random_steps, inverse_mass_matrix=inv_mass)

    return hmc.kernel._replace(name=name, make_knobs=make_knobs)
