"""Neal's Gibbs-within-HMC for Bayesian neural networks, built for one model.

Choo 2000 §3.3–3.4: alternately draw every hyperparameter γ from P(γ | θ, data) by Gibbs
sampling and update the weights θ by HMC leaving P(θ | γ, data) invariant; Choo 2000
§2.3.2, Alg. 3: per-parameter step sizes εᵢ = η·(∂²E/∂θᵢ²)^{-1/2} set from the current
hyperparameters only (so the trajectory stays reversible); Neal 1996 as implemented in FBM
(`net-mc.c`, `net-models.tex`, `mc-spec.doc`: `sample-sigmas heatbath hybrid L η`).

One transition (a "super-transition" of FBM's `mc-spec sample-sigmas heatbath hybrid L η`):

1. Gibbs: every stored precision drawn from its exact conditional given the weights
   (`BNN.gibbs`: Gamma conditionals, and exact draws for upper levels and t-distributed
   groups); the noise precisions given the residuals. Each part can be switched off at run
   time (`sample_sigmas`, `sample_noise`), e.g. for FBM's warm-up with fixed hyperparameters.
2. Step sizes εᵢ = η / √(cᵢ) with cᵢ Neal's curvature estimate from the new precisions
   (`BNN.curvature`).
3. HMC on the weights only (the log-precisions stay fixed): fresh momentum, L leapfrog steps,
   Metropolis accept. Per-coordinate step sizes are the leapfrog with step η and diagonal
   inverse mass 1/cᵢ (Choo 2000, eqs. 2.19–2.20: the mass-absorbed form), so
   `integrators.leapfrog` is reused unchanged.
   Built with `windowed=True`, the accept step is Neal's (1994) over windows of W states at
   the trajectory's two ends (`kernels/windowed_hmc.py`), FBM's `hybrid L:W η`, with the
   knob `window`.

The position is the model's flat vector `[log τ…, w…]`; the state stores the joint log
density (the driver records it as `lp`) and its gradient in the weights (the log-precision
part of `logdensity_grad` is zero: the Gibbs step does not need it). Knobs are runtime arrays:
`step_size` (= η, FBM's step-size adjustment factor), `num_steps` (= L), `random_steps`,
`sample_sigmas`, `sample_noise`. Named `step_size` and `num_steps` as HMC's, so the same
tuners (the GP bandit over η × L of Wang's robot-arm runs) drive it.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import BomcmcError
from ..config import float_dtype
from ..validation import positive_number, whole_number
from .base import Kernel
from .hmc import (MAX_ENERGY_ERROR, HMCInfo, HMCState, metropolis, trajectory_length,
                  transition_info)
from .integrators import IntegratorState, leapfrog
from .windowed_hmc import check_window, windowed_trajectory

NealState = HMCState
NealInfo = HMCInfo  # step_size reports η


class NealKnobs(NamedTuple):
    step_size: jax.Array  # η: step-size adjustment factor (FBM's ε_adj)
    num_steps: jax.Array  # L (the maximum when random_steps)
    random_steps: jax.Array  # bool: L_r ~ U{1..L} per transition
    sample_sigmas: jax.Array  # bool: Gibbs-update the weight-group precisions
    sample_noise: jax.Array  # bool: Gibbs-update the noise precisions


class WindowedNealKnobs(NamedTuple):
    """`NealKnobs` and the window W of Neal's (1994) windowed acceptance."""

    step_size: jax.Array
    num_steps: jax.Array
    random_steps: jax.Array
    sample_sigmas: jax.Array
    sample_noise: jax.Array
    window: jax.Array  # W: states in each of the accept and reject windows


def gibbs_then_condition(model, key, x0, knobs, logdensity_fn):
    """The Gibbs half of a Gibbs-within-MCMC transition (Choo 2000 §3.4): draw every stored
    precision given the weights, then return the weights' conditional given them —
    (log-precisions, weights, log p(w | τ, data) as a function, its value and gradient at the
    weights, Neal's inverse curvature 1/c as the metric (FBM `net-models.tex`, "Heuristic
    choice of stepsizes"))."""
    dtype = x0.dtype
    tree = model.gibbs(key, model.unravel(x0), knobs.sample_sigmas, knobs.sample_noise)
    x = model.ravel(tree).astype(dtype)
    hyper, w0 = x[:model.n_hyper], x[model.n_hyper:]

    def cond_logdensity(w):
        return logdensity_fn(jnp.concatenate([hyper, w]))

    logp, grad = jax.value_and_grad(cond_logdensity)(w0)
    inv_mass = 1.0 / model_curvature_flat(model, tree).astype(dtype)
    return hyper, w0, cond_logdensity, logp, grad, inv_mass


def neal_step_sizes(model, position_tree, eta):
    """Flat per-weight step sizes ε = η / √c (c = `model.curvature`), in weight order."""
    return eta / jnp.sqrt(model_curvature_flat(model, position_tree))


def neal_kernel(model, name: str = "neal_gibbs", windowed: bool = False) -> Kernel:
    """Neal's Gibbs-within-HMC `Kernel` for a `bomcmc.bnn.network.BNN` (use it with
    `bomcmc.sample(model.posterior(), sampler=neal_sampler(model), ...)`); `windowed`: with
    Neal's (1994) accept and reject windows, the knob `window` (FBM's `hybrid L:W η`)."""
    n_hyper, dim = model.n_hyper, model.dim

    def init(position, logdensity_fn):
        logp, grad = jax.value_and_grad(logdensity_fn)(position)
        return NealState(position, logp, grad)

    def step(key, state, logdensity_fn, knobs, max_energy_error=MAX_ENERGY_ERROR):
        k_gibbs, k_p, k_u = jax.random.split(key, 3)
        x0 = state.position
        dtype = x0.dtype
        # 1–2. Gibbs draws of the precisions; Neal's step sizes ε_i = η·c_i^{-1/2} from them
        hyper, w0, cond_logdensity, logp, grad, inv_mass = gibbs_then_condition(
            model, k_gibbs, x0, knobs, logdensity_fn)
        eta = jnp.asarray(knobs.step_size, dtype)
        # 3. HMC on the weights
        u_accept, u_steps = jax.random.uniform(k_u, (2,), dtype)
        momentum = jax.random.normal(k_p, w0.shape, dtype) / jnp.sqrt(inv_mass)
        n = trajectory_length(u_steps, knobs)
        start = IntegratorState(w0, momentum, logp, grad)
        if windowed:  # the next state from one of the two windows (Neal 1994)
            k_offset, k_choice = jax.random.split(jax.random.fold_in(key, 1))
            res = windowed_trajectory(k_choice, start, cond_logdensity, eta, inv_mass, n,
                                      knobs.window, jax.random.uniform(k_offset, (), dtype),
                                      u_accept, max_energy_error)
            end, energy0, delta = res.proposal, res.energy0, res.delta
            diverging, accept_prob = res.diverging, res.accept_prob
            w1, logp1, grad_w = res.state.position, res.state.logdensity, res.state.logdensity_grad
        else:
            end = leapfrog(start, cond_logdensity, eta, inv_mass, n)
            energy0, delta, diverging, accept_prob, accept = metropolis(
                logp, end, momentum, inv_mass, u_accept, max_energy_error)
            w1 = jnp.where(accept, end.position, w0)
            logp1 = jnp.where(accept, end.logdensity, logp)
            grad_w = jnp.where(accept, end.logdensity_grad, grad)
        x1 = jnp.concatenate([hyper, w1])
        # Only the weight part of the gradient is used (and maintained); the log-precision
        # part is set to zero rather than left stale.
        full_grad = jnp.concatenate([jnp.zeros((n_hyper,), dtype), grad_w])
        new_state = NealState(x1, logp1, full_grad)
        # n_grad: L leapfrog gradients + one at the start (the precisions changed)
        info = transition_info(x0, jnp.concatenate([hyper, end.position]), x1, energy0, delta,
                               diverging, accept_prob, n + 1, n, eta)
        return new_state, info

    def make_knobs(d: int, step_size: float | None = None, steps: int = 100,
                   random_steps: bool = False, sample_sigmas: bool = True,
                   sample_noise: bool = True, eta: float | None = None) -> NealKnobs:
        eta = eta_and_steps(name, dim, d, step_size, eta, steps)
        dtype = float_dtype()
        return NealKnobs(
            step_size=np.asarray(eta, dtype),
            num_steps=np.asarray(int(steps), np.int32),
            random_steps=np.asarray(bool(random_steps)),
            sample_sigmas=np.asarray(bool(sample_sigmas)),
            sample_noise=np.asarray(bool(sample_noise)),
        )

    def make_windowed_knobs(d: int, step_size: float | None = None, steps: int = 100,
                            random_steps: bool = False, sample_sigmas: bool = True,
                            sample_noise: bool = True, eta: float | None = None,
                            window: int = 1) -> WindowedNealKnobs:
        knobs = make_knobs(d, step_size, steps, random_steps, sample_sigmas, sample_noise, eta)
        check_window(window, steps)
        return WindowedNealKnobs(*knobs, window=np.asarray(int(window), np.int32))

    return Kernel(name=name, init=init, step=step, gibbs_within=True,
                  make_knobs=make_windowed_knobs if windowed else make_knobs)


def eta_and_steps(name: str, dim: int, d: int, step_size, eta, steps) -> float:
    """The checked step-size adjustment factor η of a network kernel built for dimension
    `dim` (given as eta= or step_size=, default 0.1), after checking d and L."""
    if d != dim:
        raise BomcmcError(f"sampler '{name}' was built for a model of dimension {dim}, "
                          f"but the posterior has dimension {d}")
    if step_size is not None and eta is not None:
        raise BomcmcError("give the step-size adjustment factor once: eta= or step_size=")
    eta = 0.1 if step_size is None and eta is None else (eta if eta is not None else step_size)
    positive_number("eta (step_size)", eta)
    whole_number("steps (L)", steps)
    return eta


def model_curvature_flat(model, tree) -> jax.Array:
    """`model.curvature(tree)` as one vector in the weights' ravel order."""
    curv = model.curvature(tree)
    return jnp.concatenate([jnp.ravel(curv[k]) for k in sorted(curv)])
