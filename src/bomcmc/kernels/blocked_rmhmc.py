"""Blocked Riemann-manifold HMC for a latent-variable model (Girolami & Calderhead 2011 §9,
their stochastic-volatility sampler): a Gibbs sweep over two blocks of the flat position,
the latent block x and the parameters θ.

1. x | θ: the metric G_x(θ) depends on θ only, so it is constant within this move and the
   generalised leapfrog is ordinary leapfrog with mass G_x(θ): HMC on p(x | θ, y) with that
   mass. G_x is given by its diagonal and off-diagonal (tridiagonal), so it is never formed as
   a (T, T) array (`integrators.tridiagonal_mass`).
2. θ | x: RMHMC (`kernels/rmhmc.py`) on p(θ | x, y) with the position-dependent G_θ(θ).

Each move leaves its block's conditional invariant, so the sweep leaves the joint invariant.
Knobs: the latent move's ε and L (`step_size`, `num_steps`, the ones a tuner adapts), the
parameter move's (`param_step_size`, `param_num_steps`), L_r ~ U{1..L} for both when
`random_steps`, and the parameter move's `fixed_point_steps`. Girolami & Calderhead's setting
is the default: ε = 0.1, L = 50 for the path; ε = 0.5, L = 6 and 5 fixed-point iterations for
the parameters. `n_grad` counts the gradients of the joint log density: one per leapfrog step
of either move, one at the start of the parameter move (the path changed), and one of the
joint at the end, which the next latent move starts from.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..config import float_dtype
from ..validation import positive_number, whole_number
from . import hmc, rmhmc
from .base import Kernel
from .integrators import tridiagonal_mass


class BlockedKnobs(NamedTuple):
    step_size: jax.Array  # the latent move's ε
    num_steps: jax.Array  # the latent move's L
    param_step_size: jax.Array
    param_num_steps: jax.Array
    random_steps: jax.Array  # bool: L_r ~ U{1..L} in both moves
    fixed_point_steps: jax.Array  # of the parameter move's generalised leapfrog


class BlockedInfo(NamedTuple):
    acceptance_rate: jax.Array  # of the latent move
    energy: jax.Array  # H of the latent move's conditional at its start
    energy_error: jax.Array
    diverging: jax.Array  # either move diverged
    n_grad: jax.Array
    n_steps: jax.Array  # the latent move's leapfrog steps
    sq_jump: jax.Array  # of the whole position
    esjd: jax.Array  # the latent move's a·||x* − x||² plus the parameter move's
    step_size: jax.Array
    param_acceptance_rate: jax.Array
    fixed_point_error: jax.Array
    fixed_point_failed: jax.Array


def blocked_rmhmc_kernel(latent: tuple[int, int], parameters: tuple[int, int],
                         latent_metric: Callable, parameter_metric: Callable,
                         name: str = "rmhmc", tol: float = rmhmc.FIXED_POINT_TOL,
                         max_energy_error: float = hmc.MAX_ENERGY_ERROR) -> Kernel:
    """The blocked sampler for a flat position whose coordinates [a, b) of `latent` are x and
    [c, d) of `parameters` are θ; `latent_metric(θ) -> (diagonal, off-diagonal)` of G_x and
    `parameter_metric(θ) -> (d − c, d − c)` G_θ. A factory of closures, hence its length."""
    (la, lb), (pa, pb) = latent, parameters
    param_kernel = rmhmc.rmhmc_kernel(parameter_metric, tol=tol,
                                      max_energy_error=max_energy_error)

    def init(position, logdensity_fn):
        return hmc.init(position, logdensity_fn)

    def latent_move(key, state, logdensity_fn, knobs):
        pos = state.position

        def cond(x):
            return logdensity_fn(pos.at[la:lb].set(x))

        mass = tridiagonal_mass(*latent_metric(pos[pa:pb]))
        # the joint's log density and gradient at the state are the conditional's
        start = hmc.HMCState(pos[la:lb], state.logdensity, state.logdensity_grad[la:lb])
        state, info = hmc.step(key, start, cond, hmc.HMCKnobs(
            knobs.step_size, knobs.num_steps, mass, knobs.random_steps), max_energy_error)
        return pos.at[la:lb].set(state.position), info

    def param_move(key, pos, logdensity_fn, knobs):
        def cond(theta):
            return logdensity_fn(pos.at[pa:pb].set(theta))

        start = param_kernel.init(pos[pa:pb], cond)
        state, info = param_kernel.step(key, start, cond, rmhmc.RMHMCKnobs(
            knobs.param_step_size, knobs.param_num_steps, knobs.random_steps,
            knobs.fixed_point_steps))
        return pos.at[pa:pb].set(state.position), state, info

    def step(key, state, logdensity_fn, knobs):
        k_latent, k_param = jax.random.split(key)
        pos, x_info = latent_move(k_latent, state, logdensity_fn, knobs)
        pos, p_state, p_info = param_move(k_param, pos, logdensity_fn, knobs)
        grad = jax.grad(logdensity_fn)(pos)  # the joint's gradient, kept for the state
        info = BlockedInfo(
            acceptance_rate=x_info.acceptance_rate, energy=x_info.energy,
            energy_error=x_info.energy_error,
            diverging=x_info.diverging | p_info.diverging,
            n_grad=x_info.n_grad + p_info.n_grad + 2,
            n_steps=x_info.n_steps, sq_jump=jnp.sum((pos - state.position) ** 2),
            esjd=x_info.esjd + p_info.esjd, step_size=x_info.step_size,
            param_acceptance_rate=p_info.acceptance_rate,
            fixed_point_error=p_info.fixed_point_error,
            fixed_point_failed=p_info.fixed_point_failed)
        return hmc.HMCState(pos, p_state.logdensity, grad), info

    def make_knobs(dim: int, step_size: float = 0.1, steps: int = 50,
                   param_step_size: float = 0.5, param_steps: int = 6,
                   random_steps: bool = True, fixed_point_steps: int = 5) -> BlockedKnobs:
        positive_number("step_size", step_size)
        positive_number("param_step_size", param_step_size)
        whole_number("steps (L)", steps)
        whole_number("param_steps", param_steps)
        whole_number("fixed_point_steps", fixed_point_steps)
        dtype = float_dtype()
        return BlockedKnobs(
            step_size=np.asarray(step_size, dtype), num_steps=np.asarray(int(steps), np.int32),
            param_step_size=np.asarray(param_step_size, dtype),
            param_num_steps=np.asarray(int(param_steps), np.int32),
            random_steps=np.asarray(bool(random_steps)),
            fixed_point_steps=np.asarray(int(fixed_point_steps), np.int32))

    return Kernel(name=name, init=init, step=step, make_knobs=make_knobs, gibbs_within=True)
