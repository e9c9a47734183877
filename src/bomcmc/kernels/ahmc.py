"""Adaptive HMC's kernel: HMC started at a point L-BFGS reached towards the mode.

The authors' start (Wang, Mohamed & de Freitas 2013, the code's step 0): each chain's initial
point is moved by at most 100 L-BFGS iterations towards the mode before sampling, x₀ = argmin U
on a small budget (their maxFunEvals = 2·L_u = 200). The transition is HMC's (`hmc.step`)
with random trajectory lengths L_r ~ U{1..L} on by default.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..errors import BomcmcError
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
    return find_mode_counted(position, logdensity_fn, iterations)[0]


def find_mode_counted(position: jax.Array, logdensity_fn, iterations: int = MODE_ITERATIONS):
    """`find_mode`'s point and the gradient evaluations it spent: one for the first
    value_and_grad, one per line-search step (each is `jax.linearize` of the log density, the
    accepted step's gradient a transpose of it), and two for the final comparison of U and
    its gradient at the start and the end."""
    return find_mode_checked(position, logdensity_fn, iterations)[:2]


def find_mode_checked(position: jax.Array, logdensity_fn, iterations: int = MODE_ITERATIONS):
    """`find_mode_counted`'s point and count, and whether the point is steeper than the start
    (|∇U| larger). At a mode the gradient vanishes; a search that ends steeper has climbed a
    density without a maximum, such as a centred funnel's neck, and the driver then starts
    every chain from its own point instead (docs/tuning.md, "The start on unbounded
    densities")."""
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
        i, x, state, n, u_prev, _, restarted, best = carry
        u, g = value_and_grad(x, state=state)
        # A line search that exhausts its backtracking steps still moves, possibly uphill.
        # From a point above the lowest one visited, L-BFGS restarts there with no memory;
        # when the step after a restart goes uphill too, it stops.
        uphill = u - best[1] > tol * (1.0 + jnp.abs(best[1]))
        x, u, g = (jnp.where(uphill, b, a) for a, b in zip((x, u, g), best))
        state = jax.tree.map(lambda fresh, s: jnp.where(uphill, fresh, s), opt.init(x),
                             state)
        updates, state = opt.update(g, state, x, value=u, grad=g, value_fn=neg)
        n = n + optax.tree.get(state, "num_linesearch_steps").astype(n.dtype)
        stalled = jnp.where(uphill, restarted, (u_prev - u) <= tol * (1.0 + jnp.abs(u)))
        best = tuple(jnp.where(u <= best[1], a, b) for a, b in zip((x, u, g), best))
        return i + 1, optax.apply_updates(x, updates), state, n, u, stalled, uphill, best

    inf = jnp.asarray(jnp.inf, position.dtype)
    _, x, _, n, _, _, _, (best_x, best_u, best_g) = jax.lax.while_loop(
        lambda c: (c[0] < iterations) & ~c[5], body,
        (jnp.asarray(0, jnp.int32), position, opt.init(position), jnp.asarray(1, jnp.int32),
         inf, jnp.asarray(False), jnp.asarray(False),
         (position, inf, jnp.zeros_like(position))))
    u1, g1 = jax.value_and_grad(neg)(x)
    x, u1, g1 = (jnp.where(u1 < best_u, a, b)
                 for a, b in zip((x, u1, g1), (best_x, best_u, best_g)))
    u0, g0 = jax.value_and_grad(neg)(position)
    better = jnp.isfinite(u1) & jnp.all(jnp.isfinite(x)) & ~(u1 > u0)
    steeper = better & (jnp.linalg.norm(g1) > jnp.linalg.norm(g0))
    return jnp.where(better, x, position), n + 2, steeper


def init(position: jax.Array, logdensity_fn) -> hmc.HMCState:
    """The HMC state at the point `find_mode` reaches from `position`."""
    return hmc.init(find_mode(position, logdensity_fn), logdensity_fn)


def make_knobs(dim: int, step_size: float = 0.1, steps: int = 10, random_steps: bool = True,
               inverse_mass_matrix=None, support=None) -> hmc.HMCKnobs:
    """HMC's knobs with random trajectory lengths on by default. ε and L are the bandit's
    (step_size is only where Stan's heuristic starts its doubling); the inverse mass is the
    initial metric. `support` (the compact set M) is not a knob: the run restricts the
    kernel to it (`support.restrict`), whose make_knobs takes it instead of this one."""
    if support is not None:
        raise BomcmcError("support restricts the kernel (bomcmc.kernels.support.restrict): "
                          "it is not one of the knobs")
    return hmc.default_knobs(dim, step_size=step_size, steps=steps, random_steps=random_steps,
                             inverse_mass_matrix=inverse_mass_matrix)


# the driver runs `find_mode_checked` (start) then `hmc.init`: what `init` does, with the
# mode search's gradients counted in the warm-up's
kernel = Kernel(name="ahmc", init=hmc.init, step=hmc.step, make_knobs=make_knobs,
                start=find_mode_checked)
