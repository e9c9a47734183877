"""Random-walk Metropolis: BlackJAX's additive-step kernel behind bomcmc's knob protocol.

The baseline of Choo 2000 (Fig. 2.1, the random walk that HMC avoids) and Ask 2022 (Alg.
3.1): propose x* = x + σ·M^{-1/2}·z with z ~ N(0, I), accept with probability
min(1, π(x*)/π(x)) (Metropolis et al. 1953; `blackjax.mcmc.random_walk`'s additive-step
Rosenbluth–Metropolis–Hastings kernel does each move).

So that the tuners that drive HMC drive it unchanged, one transition is L such moves (L_r ~
U{1..L} with `random_steps`) and the knobs are `step_size` (σ), `num_steps` (L),
`random_steps` and `inverse_mass_matrix` (a diagonal M⁻¹: the proposal's variances are
σ²·M⁻¹), all runtime values. The info's `esjd` is the Rao-Blackwellised squared jump summed
over the L moves, Σ a·||x* − x||²; `n_grad` is 0 (no gradient is taken: compare it with
gradient-based samplers by wall time or by log-density evaluations, `n_steps`).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..config import float_dtype
from ..errors import BomcmcError
from ..validation import positive_number, whole_number
from .base import Kernel
from .hmc import HMCState, trajectory_length

RWMState = HMCState  # the gradient stays zero: the driver's state has one


class RWMKnobs(NamedTuple):
    step_size: jax.Array  # σ
    num_steps: jax.Array  # L moves per transition (the maximum when random_steps)
    random_steps: jax.Array  # bool
    inverse_mass_matrix: jax.Array  # diagonal (d,): proposal variances σ²·M⁻¹


class RWMInfo(NamedTuple):
    acceptance_rate: jax.Array  # mean acceptance probability of the L moves
    diverging: jax.Array  # always False (kept for the driver's bookkeeping)
    n_grad: jax.Array  # 0
    n_steps: jax.Array  # moves made (log-density evaluations)
    sq_jump: jax.Array  # ||x_{t+1} − x_t||²
    esjd: jax.Array  # Σ_moves a·||x* − x||²
    step_size: jax.Array


def init(position, logdensity_fn) -> RWMState:
    return RWMState(position, logdensity_fn(position), jnp.zeros_like(position))


def step(key, state: RWMState, logdensity_fn, knobs: RWMKnobs):
    from blackjax.mcmc.random_walk import RWState, build_additive_step

    move = build_additive_step()
    x0 = state.position
    dtype = x0.dtype
    scale = jnp.asarray(knobs.step_size, dtype) * jnp.sqrt(
        jnp.asarray(knobs.inverse_mass_matrix, dtype))
    k_steps, k_moves = jax.random.split(key)
    n = trajectory_length(jax.random.uniform(k_steps, (), dtype), knobs)

    def random_step(k, position):
        return scale * jax.random.normal(k, position.shape, dtype)

    def body(i, carry):
        rw, acc, esjd = carry
        new, info = move(jax.random.fold_in(k_moves, i), rw, logdensity_fn, random_step)
        a = info.acceptance_rate.astype(dtype)
        jump = jnp.sum((info.proposal.position - rw.position) ** 2)
        return new, acc + a, esjd + jnp.where(jnp.isfinite(jump), a * jump, 0.0)

    zero = jnp.zeros((), dtype)
    rw, acc, esjd = jax.lax.fori_loop(0, n, body, (RWState(x0, state.logdensity), zero, zero))
    new_state = RWMState(rw.position, rw.logdensity, state.logdensity_grad)
    info = RWMInfo(acceptance_rate=acc / n, diverging=jnp.zeros((), bool),
                   n_grad=jnp.zeros((), jnp.int32), n_steps=n,
                   sq_jump=jnp.sum((rw.position - x0) ** 2), esjd=esjd,
                   step_size=jnp.asarray(knobs.step_size, dtype))
    return new_state, info


def make_knobs(dim: int, step_size: float | None = None, steps: int = 1,
               random_steps: bool = False, inverse_mass_matrix=None) -> RWMKnobs:
    """Knobs with defaults: σ = 2.38/√d (Roberts, Gelman & Gilks 1997: optimal for a
    standard Gaussian target), one move per transition, M⁻¹ = I."""
    step_size = 2.38 / np.sqrt(dim) if step_size is None else step_size
    positive_number("step_size", step_size)
    whole_number("steps (L)", steps)
    dtype = float_dtype()
    inv = np.ones(dim, dtype) if inverse_mass_matrix is None else np.asarray(
        inverse_mass_matrix, dtype)
    if inv.shape != (dim,) or not np.all(inv > 0):
        raise BomcmcError(f"inverse_mass_matrix must be {dim} positive variances, got shape "
                          f"{inv.shape}")
    return RWMKnobs(step_size=np.asarray(step_size, dtype),
                    num_steps=np.asarray(int(steps), np.int32),
                    random_steps=np.asarray(bool(random_steps)), inverse_mass_matrix=inv)


kernel = Kernel(name="rwm", init=init, step=step, make_knobs=make_knobs)
