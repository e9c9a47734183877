"""Adaptive HMC's kernel: HMC started at a point L-BFGS reached towards the mode.

The authors' start (Wang, Mohamed & de Freitas 2013, the code's step 0): each chain's initial
point is moved by at most 100 L-BFGS iterations towards the mode before sampling, x₀ = argmin U
on a small budget (their maxFunEvals = 2·L_u = 200). The transition is HMC's (`hmc.step`)
with random trajectory lengths L_r ~ U{1..L} on by default.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from . import hmc
from .base import Kernel

MODE_ITERATIONS = 100  # L-BFGS iterations towards the mode before sampling
MODE_BACKTRACKING = 20  # backtracking line-search steps per iteration, at most


def find_mode(position: jax.Array, logdensity_fn, iterations: int = MODE_ITERATIONS):
    """At most `iterations` L-BFGS steps (optax, backtracking Armijo line search) up the log
    density from `position`, stopping when U stops decreasing: the authors' step 0,
    x₀ = argmin U by L-BFGS on a small budget (the authors' `ahmc.m` for Wang, Mohamed & de
    Freitas 2013: maxFunEvals = 2·L_u = 200). Returns the point reached, or `position` if
    that is not finite or not better. (optax's zoom line search reaches the same modes but
    compiles more slowly: docs/tuning.md, "Defaults, and why".)"""
    import optax

    def neg(x):
        return -logdensity_fn(x)

    opt = optax.lbfgs(linesearch=optax.scale_by_backtracking_linesearch(
        max_backtracking_steps=MODE_BACKTRACKING, store_grad=True))
    value_and_grad = optax.value_and_grad_from_state(neg)

    # Stop early once an iteration no longer lowers U beyond rounding (relative decrease
    # below 100 machine epsilons): past convergence every iteration would exhaust the line
    # search (21 evaluations) for nothing (docs/tuning.md, "Defaults, and why").
    tol = 100 * jnp.finfo(position.dtype).eps

    def body(carry):
        i, x, state, u_prev, _ = carry
        u, g = value_and_grad(x, state=state)
        updates, state = opt.update(g, state, x, value=u, grad=g, value_fn=neg)
        stalled = (u_prev - u) <= tol * (1.0 + jnp.abs(u))
        return i + 1, optax.apply_updates(x, updates), state, u, stalled

    inf = jnp.asarray(jnp.inf, position.dtype)
    _, x, _, _, _ = jax.lax.while_loop(
        lambda c: (c[0] < iterations) & ~c[4], body,
        (jnp.asarray(0, jnp.int32), position, opt.init(position), inf, jnp.asarray(False)))
    u0, u1 = neg(position), neg(x)
    better = jnp.isfinite(u1) & jnp.all(jnp.isfinite(x)) & ~(u1 > u0)
    return jnp.where(better, x, position)


def init(position: jax.Array, logdensity_fn) -> hmc.HMCState:
    """The HMC state at the point `find_mode` reaches from `position`."""
    return hmc.init(find_mode(position, logdensity_fn), logdensity_fn)


def make_knobs(dim: int, step_size: float = 0.1, steps: int = 10, random_steps: bool = True,
               inverse_mass_matrix=None) -> hmc.HMCKnobs:
    """HMC's knobs with random trajectory lengths on by default. ε and L are the bandit's
    (step_size is only where Stan's heuristic starts its doubling); the inverse mass is the
    initial metric."""
    return hmc.default_knobs(dim, step_size=step_size, steps=steps, random_steps=random_steps,
                             inverse_mass_matrix=inverse_mass_matrix)


kernel = Kernel(name="ahmc", init=init, step=hmc.step, make_knobs=make_knobs)
