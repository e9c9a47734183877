"""A mixture of M HMC kernels, and the two-phase Bayesian-optimised sampler "two_phase".

The kernel (Mahendran 2011 §3.3: "a mixture of M MCMC transition kernels ... where each kernel
uses one of the M parameters obtained in the SIR step"): the knobs hold M settings
(ε_k, L_k), k = 1..M, per chain; each transition draws k uniformly and makes one HMC
transition (`hmc.step`, Wang 2012, Alg. 1) with (ε_k, L_k). Each component leaves π
invariant, hence so does the mixture. M is the length of the knob arrays, fixed when the
run is built, so a new policy is a new knob *value*: never a recompilation.

The index comes from its own fold of the transition's key, fold_in(key, POLICY_STREAM); the
HMC transition gets the key unchanged. So with all M slots equal (the adaptation phase) a
transition is bit for bit `hmc.step` with those knobs.

`sampler` ("two_phase", `sample(..., sampler="two_phase")`): this kernel, started like AHMC (L-BFGS
towards the mode, `ahmc.find_mode_counted` as the kernel's `start`), with random trajectory
lengths L_r ~ U{1..L_k} on by default, and the `TwoPhaseTuner` (`tuning/two_phase.py`) built from
the options `schemas.TUNERS["two_phase"]` declares (docs/tuning.md, "Two-phase mode").
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import ahmc, hmc
from .base import Kernel

POLICY_SIZE = 50  # M (tuning.two_phase.POLICY_SIZE; the tuner resizes to its own M)
POLICY_STREAM = 0x6D6978  # fold_in data of the key that draws the policy index ("mix")


class MixtureKnobs(NamedTuple):
    """HMC's knobs with a policy axis: named as HMC's so the bandit tuners work unchanged."""

    step_size: jax.Array  # ε_k, shape (M,)
    num_steps: jax.Array  # L_k, shape (M,) (the maximum of L_r when random_steps)
    inverse_mass_matrix: jax.Array  # diagonal M⁻¹, shape (d,), shared by the components
    random_steps: jax.Array  # bool: L_r ~ U{1..L_k} per transition


class MixtureInfo(NamedTuple):
    """`hmc.HMCInfo` (step_size: the ε_k used; n_steps: the leapfrog steps run) plus the
    chosen slot k and its L_k."""

    acceptance_rate: jax.Array
    energy: jax.Array
    energy_error: jax.Array
    diverging: jax.Array
    n_grad: jax.Array
    n_steps: jax.Array
    sq_jump: jax.Array
    esjd: jax.Array
    step_size: jax.Array
    num_steps: jax.Array  # L_k of the chosen slot
    policy_index: jax.Array  # k


def select(key: jax.Array, knobs: MixtureKnobs) -> tuple[jax.Array, hmc.HMCKnobs]:
    """k ~ U{0..M−1} from fold_in(key, POLICY_STREAM), and HMC's knobs with (ε_k, L_k)."""
    slots = knobs.step_size.shape[-1]
    k = jax.random.randint(jax.random.fold_in(key, POLICY_STREAM), (), 0, slots)
    return k, hmc.HMCKnobs(step_size=knobs.step_size[k], num_steps=knobs.num_steps[k],
                           inverse_mass_matrix=knobs.inverse_mass_matrix,
                           random_steps=knobs.random_steps)


def step(key: jax.Array, state: hmc.HMCState, logdensity_fn, knobs: MixtureKnobs,
         max_energy_error: float = hmc.MAX_ENERGY_ERROR) -> tuple[hmc.HMCState, MixtureInfo]:
    """One transition of the mixture: a uniform slot k, then `hmc.step` with (ε_k, L_k)."""
    k, one = select(key, knobs)
    state, info = hmc.step(key, state, logdensity_fn, one, max_energy_error)
    return state, MixtureInfo(*info, num_steps=jnp.asarray(one.num_steps, jnp.int32),
                              policy_index=k.astype(jnp.int32))


def make_knobs(dim: int, step_size: float = 0.1, steps: int = 10, random_steps: bool = True,
               inverse_mass_matrix=None) -> MixtureKnobs:
    """POLICY_SIZE slots all holding (step_size, steps), random trajectory lengths on by
    default (validated as HMC's knobs). For "two_phase", step_size is where Stan's heuristic
    starts; the tuner resizes the slots to its policy_size and sets them."""
    size = POLICY_SIZE
    one = hmc.default_knobs(dim, step_size=step_size, steps=steps, random_steps=random_steps,
                            inverse_mass_matrix=inverse_mass_matrix)
    return MixtureKnobs(step_size=np.full((size,), one.step_size, one.step_size.dtype),
                        num_steps=np.full((size,), one.num_steps, one.num_steps.dtype),
                        inverse_mass_matrix=one.inverse_mass_matrix,
                        random_steps=one.random_steps)


kernel = Kernel(name="two_phase", init=hmc.init, step=step, make_knobs=make_knobs,
                start=ahmc.find_mode_checked)
