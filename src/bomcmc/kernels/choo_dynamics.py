"""Choo's joint Hamiltonian dynamics of weights and hyperparameters (Choo 2000, ch. 4).

Instead of Gibbs draws of the hyperparameters between HMC trajectories of the weights
(`neal_gibbs_hmc.py`), the log-precisions λ join the weights θ in one Hamiltonian trajectory
(Choo 2000 §4.1, eq. 4.4): q = (q_γ, q_θ), p ~ N(0, I), H = E(q) + ½|p|².

Each block has its own per-coordinate step sizes v = η / √c (Choo 2000 §2.3.2, eqs.
2.19–2.20), η_p for the parameters and η_h = r·η_p for the hyperparameters (Choo 2000 §5.5:
two step-size adjustment factors; r = `eta_ratio`, default 1, his η_h = η_p of ch. 5; his
§6.2.3 tries r = 1/100). The step sizes of one block may
depend only on the other block, so that each block's update is an ordinary reversible,
volume-preserving leapfrog step while that block moves (Choo 2000 §4.1.2). One step of the
trajectory (Choo 2000, Alg. 4):

    v_θ ← η_p / √c_θ(q_γ);  leapfrog step of (q_θ, p_θ) with q_γ fixed
    v_γ ← η_h / √c_γ(q_θ);  leapfrog step of (q_γ, p_γ) with q_θ fixed

repeated L times, the two blocks in this order or the reverse with probability ½ each,
drawn once per trajectory: the reverse of a trajectory in one order is a trajectory in the
other, so the proposal is symmetric. The end point is accepted by the Metropolis test on H.

Choo's test of which block's step sizes are at fault (Choo 2000 §6.2.2, §6.2.4) splits a
block's update into k consecutive leapfrog steps of v/k (`splits` = (k_p, k_h), default
(1, 1)). v depends only on the other block, which stands still meanwhile, so the k steps
compose to a reversible, volume-preserving update of that block; each costs one gradient.
The splits are part of the kernel, not knobs: an unsplit kernel is the same program, and
so rounds the same, as before the option existed.

A leapfrog step of one block with step-size vector v is p ← p + (v/2)∇log π,
q ← q + v p, p ← p + (v/2)∇log π on that block's coordinates (v is zero on the others): a
composition of shears, so volume-preserving, and its own inverse after a momentum flip.
Each block step takes one gradient of the joint log density, so a trajectory of L steps
costs 2L gradients (reported as `n_grad`); the curvature estimates cost forward passes on
top (Choo 2000 §4.6–4.8 tabulates the total).

The kernel is generic in what it moves: `blocks` supplies `n_hyper` (the first coordinates
of the flat position are the hyperparameter block), `dim`, `weight_curvature(x)` (c_θ, a
function of x[:n_hyper] only) and `hyper_curvature(x)` (c_γ, a function of x[n_hyper:]
only). `bnn/dynamical.py` builds them for Choo's Dynamical A (the weights as they are) and
Dynamical B (the non-centred weights w·√τ).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..config import float_dtype
from ..errors import BomcmcError
from ..validation import positive_number
from .base import Kernel
from .hmc import (MAX_ENERGY_ERROR, HMCInfo, HMCState, metropolis, trajectory_length,
                  transition_info)
from .integrators import IntegratorState
from .neal_gibbs_hmc import eta_and_steps

ChooState = HMCState
ChooInfo = HMCInfo  # step_size reports η_p


class ChooKnobs(NamedTuple):
    step_size: jax.Array  # η_p, the step-size adjustment factor of the parameters
    num_steps: jax.Array  # L (the maximum when random_steps)
    random_steps: jax.Array  # bool: L_r ~ U{1..L} per transition
    eta_ratio: jax.Array  # r = η_h/η_p (1: one η for both blocks); the bandit tunes η_p only


def block_leapfrog(x, p, grad, v, logdensity_fn):
    """One leapfrog step with per-coordinate step sizes v (zero outside the moving block):
    returns (x, p, log π(x), ∇log π(x)) at the end."""
    p = p + 0.5 * v * grad
    x = x + v * p
    logp, grad = jax.value_and_grad(logdensity_fn)(x)
    p = p + 0.5 * v * grad
    return x, p, logp, grad


def step_sizes(blocks, x, eta, which: str):
    """The full-length step-size vector of one block (zero on the other block)."""
    n_hyper, dtype = blocks.n_hyper, x.dtype
    if which == "weights":
        v = eta / jnp.sqrt(blocks.weight_curvature(x).astype(dtype))
        return jnp.concatenate([jnp.zeros((n_hyper,), dtype), v])
    v = eta / jnp.sqrt(blocks.hyper_curvature(x).astype(dtype))
    return jnp.concatenate([v, jnp.zeros((blocks.dim - n_hyper,), dtype)])


def trajectory(blocks, x, p, logp, grad, logdensity_fn, eta, n, hyper_first,
               eta_hyper=None, splits=(1, 1)):
    """Choo 2000, Alg. 4: n alternating block steps, the hyperparameters first when
    `hyper_first` (a traced bool), with factors η_p = `eta` and η_h = `eta_hyper` (default
    `eta`), each block's update as `splits` = (k_p, k_h) leapfrog steps of v/k (Python
    integers; Choo 2000 §6.2.2). Returns the end as an `IntegratorState`."""
    etas = {"weights": eta, "hyper": eta if eta_hyper is None else eta_hyper}
    ks = {"weights": splits[0], "hyper": splits[1]}

    def one(which):
        def block(carry):
            x, p, logp, grad = carry
            return block_leapfrog(x, p, grad, step_sizes(blocks, x, etas[which], which),
                                  logdensity_fn)

        def split_block(carry):
            k = ks[which]
            v = step_sizes(blocks, carry[0], etas[which], which) / k

            def sub(_, c):
                return block_leapfrog(c[0], c[1], c[3], v, logdensity_fn)

            return jax.lax.fori_loop(0, k, sub, carry)

        return block if ks[which] == 1 else split_block

    def body(_, carry):
        carry = jax.lax.cond(hyper_first, one("hyper"), one("weights"), carry)  # first block
        return jax.lax.cond(hyper_first, one("weights"), one("hyper"), carry)  # second

    x, p, logp, grad = jax.lax.fori_loop(0, n, body, (x, p, logp, grad))
    return IntegratorState(x, p, logp, grad)


def choo_kernel(blocks, name: str = "dyn_a", splits: tuple[int, int] = (1, 1)) -> Kernel:
    """Choo's joint dynamics as a `Kernel` over the flat position [λ…, weights…] of `blocks`
    (use with the posterior the blocks were built for); `splits` = (k_p, k_h) as in
    `trajectory`."""
    dim = blocks.dim
    splits = tuple(splits)
    if (len(splits) != 2 or any(isinstance(k, bool) or not isinstance(k, (int, np.integer))
                                or k < 1 for k in splits)):
        raise BomcmcError(f"splits must be two positive integers (k_p, k_h), got {splits!r}")
    splits = (int(splits[0]), int(splits[1]))

    def init(position, logdensity_fn):
        logp, grad = jax.value_and_grad(logdensity_fn)(position)
        return ChooState(position, logp, grad)

    def step(key, state, logdensity_fn, knobs, max_energy_error=MAX_ENERGY_ERROR):
        k_p, k_u = jax.random.split(key)
        x0 = state.position
        dtype = x0.dtype
        u_accept, u_steps, u_order = jax.random.uniform(k_u, (3,), dtype)
        momentum = jax.random.normal(k_p, x0.shape, dtype)
        eta = jnp.asarray(knobs.step_size, dtype)
        n = trajectory_length(u_steps, knobs)
        eta_hyper = eta * jnp.asarray(knobs.eta_ratio, dtype)
        end = trajectory(blocks, x0, momentum, state.logdensity, state.logdensity_grad,
                         logdensity_fn, eta, n, u_order < 0.5, eta_hyper, splits)
        energy0, delta, diverging, accept_prob, accept = metropolis(
            state.logdensity, end, momentum, jnp.ones((dim,), dtype), u_accept,
            max_energy_error)
        new_state = ChooState(jnp.where(accept, end.position, x0),
                              jnp.where(accept, end.logdensity, state.logdensity),
                              jnp.where(accept, end.logdensity_grad, state.logdensity_grad))
        info = transition_info(x0, end.position, new_state.position, energy0, delta,
                               diverging, accept_prob, sum(splits) * n, n, eta)
        return new_state, info

    def make_knobs(d: int, step_size: float | None = None, steps: int = 100,
                   random_steps: bool = False, eta: float | None = None,
                   eta_ratio: float = 1.0) -> ChooKnobs:
        eta = eta_and_steps(name, dim, d, step_size, eta, steps)
        positive_number("eta_ratio (η_h/η_p)", eta_ratio)
        return ChooKnobs(step_size=np.asarray(eta, float_dtype()),
                         num_steps=np.asarray(int(steps), np.int32),
                         random_steps=np.asarray(bool(random_steps)),
                         eta_ratio=np.asarray(eta_ratio, float_dtype()))

    return Kernel(name=name, init=init, step=step, make_knobs=make_knobs)
