"""Metropolis-adjusted microcanonical HMC (MAMS; Robnik, Cohn-Gordon & Seljak 2025) with
HMC's knobs, so that adaptive HMC's bandit tunes it as it tunes `hmc`.

The transition is BlackJAX's (`blackjax.adjusted_mclmc_dynamic.build_kernel`): a velocity of
unit length in the metric's frame drawn afresh, n steps of the isokinetic McLachlan
integrator (two gradients per step), a Metropolis test on the change of log density and
kinetic energy. What this module adds is the knob protocol (`hmc.HMCKnobs`, all runtime
values, so the bandit's changes never recompile):

- `step_size` ε is in HMC's units, and the isokinetic step is ε√d. An HMC step with
  p ~ N(0, M) moves the position by ε‖M⁻¹p‖ ≈ ε√d in the metric's frame; an isokinetic step
  moves it by its own step size. With the scaling, one ε moves the chains as far under both
  kernels, so the bandit's relative ε box, centred on Stan's step-size heuristic (an HMC
  heuristic), fits MAMS too.
- `num_steps` L and `random_steps`: n = L integrator steps, or n ~ U{1..L} per transition
  (`hmc.trajectory_length`; MAMS's own recipe also draws the length at random).
- `inverse_mass_matrix`: diagonal only (BlackJAX's isokinetic integrators take a diagonal or
  low-rank metric, not a dense one).

No partial velocity refresh inside a trajectory (BlackJAX's `L_proposal_factor = ∞`, its
default). The info has no `energy`: the isokinetic kinetic energy is not the Gaussian one
that E-BFMI (Betancourt 2016) reads.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import BomcmcError
from . import ahmc, hmc
from .base import Kernel

GRADS_PER_STEP = 2  # the isokinetic McLachlan step evaluates the gradient twice


class MAMSInfo(NamedTuple):
    acceptance_rate: jax.Array
    diverging: jax.Array
    n_grad: jax.Array  # 2 per integrator step
    n_steps: jax.Array  # integrator steps taken
    sq_jump: jax.Array  # ||x_{t+1} - x_t||²
    esjd: jax.Array  # a · ||x* - x_t||², 0 for a divergence
    step_size: jax.Array  # ε in HMC's units (the knob)


def _blackjax_kernel():
    import blackjax

    def integration_steps(key, num_steps, random_steps):
        u = jax.random.uniform(key)
        return hmc.trajectory_length(u, hmc.HMCKnobs(None, num_steps, None, random_steps))

    return blackjax.adjusted_mclmc_dynamic.build_kernel(
        integration_steps_fn=integration_steps, divergence_threshold=hmc.MAX_ENERGY_ERROR)


def step(key: jax.Array, state: hmc.HMCState, logdensity_fn: Callable,
         knobs: hmc.HMCKnobs) -> tuple[hmc.HMCState, MAMSInfo]:
    """One MAMS transition at the knobs (module docstring for the units of ε)."""
    from blackjax.mcmc.dynamic_hmc import DynamicHMCState

    key_n, key_move = jax.random.split(key)
    x0 = state.position
    dtype = x0.dtype
    step_size = jnp.asarray(knobs.step_size, dtype)
    inner = DynamicHMCState(x0, state.logdensity, state.logdensity_grad, key_n)
    new, info = _blackjax_kernel()(
        key_move, inner, logdensity_fn, step_size * jnp.sqrt(jnp.asarray(x0.shape[-1], dtype)),
        inverse_mass_matrix=jnp.asarray(knobs.inverse_mass_matrix, dtype),
        integration_steps_params=(knobs.num_steps, knobs.random_steps))
    n = jnp.asarray(info.num_integration_steps, jnp.int32)
    accept = jnp.asarray(info.acceptance_rate, dtype)
    jump = jnp.sum((info.proposal.position - x0) ** 2)
    diverging = info.is_divergent | ~jnp.isfinite(jump)
    out = hmc.HMCState(new.position, new.logdensity, new.logdensity_grad)
    return out, MAMSInfo(
        acceptance_rate=jnp.where(diverging, 0.0, accept), diverging=diverging,
        n_grad=GRADS_PER_STEP * n, n_steps=n, sq_jump=jnp.sum((new.position - x0) ** 2),
        esjd=jnp.where(diverging, 0.0, accept * jump), step_size=step_size)


def make_knobs(dim: int, step_size: float = 0.1, steps: int = 10, random_steps: bool = True,
               inverse_mass_matrix=None, dense_mass: bool = False) -> hmc.HMCKnobs:
    """HMC's knobs with random lengths on by default; the metric must be diagonal."""
    if dense_mass or (inverse_mass_matrix is not None and np.ndim(inverse_mass_matrix) == 2):
        raise BomcmcError("MAMS takes a diagonal metric only (BlackJAX's isokinetic "
                          "integrator): give inverse_mass_matrix as a vector")
    return hmc.default_knobs(dim, step_size=step_size, steps=steps, random_steps=random_steps,
                             inverse_mass_matrix=inverse_mass_matrix)


# fixed knobs from the start point as given; `amams` (the registry) adds the bandit and
# adaptive HMC's L-BFGS start
kernel = Kernel(name="mams", init=hmc.init, step=step, make_knobs=make_knobs)
bandit_kernel = kernel._replace(name="amams", start=ahmc.find_mode_checked)
