"""NUTS with Gibbs: Neal's hierarchical BNN sampled by exact Gibbs draws of the precisions
alternating with one No-U-Turn transition on the weights.

Choo 2000 §3.3–3.4: alternately draw the hyperparameters γ ~ P(γ | θ, data) and move the
weights θ by a kernel that leaves P(θ | γ, data) invariant. Neal and FBM use HMC with L
leapfrog steps there (`kernels/neal_gibbs_hmc.py`); here the weight move is NUTS
(`kernels/nuts.py`: BlackJAX's multinomial NUTS with the generalised U-turn criterion of
Betancourt 2017, as in Stan's `base_nuts.hpp`), so no trajectory length has to be chosen.

One transition:

1. Gibbs: every stored precision from its exact conditional given the weights (`BNN.gibbs`),
   the noise precisions given the residuals; `sample_sigmas` / `sample_noise` switch the two
   parts off at run time, as in `bnn.samplers.neal_sampler`.
2. Metric: inverse mass M⁻¹ᵢ = 1/cᵢ with cᵢ Neal's curvature estimate from the *new*
   precisions (`BNN.curvature`; Choo 2000 §4.5.1; FBM `net-models.tex`, "Heuristic choice of
   stepsizes"), so a leapfrog step of size η moves weight i by about η·cᵢ^{-1/2}, Neal's
   per-weight step sizes (Choo 2000, eqs. 2.19–2.20). `step_size` is therefore Neal's global
   adjustment factor η, not an absolute ε.
3. NUTS on the weights only, conditional on the precisions: the log-precisions are fixed
   inside the trajectory. M⁻¹ depends on the precisions only, which are fixed during the NUTS
   step, so that step is an ordinary NUTS transition with a fixed metric for p(w | τ, data),
   a valid kernel for the conditional; the Gibbs draw leaves p(τ | w, data) invariant, so the
   composition leaves the joint invariant.

The position is the model's flat `[log τ…, w…]`; the state holds the joint log density and its
gradient in the weights (the log-precision part is zero, as in `neal_sampler`). The info is
NUTS's, with `n_grad` = leapfrog steps + 1 (the gradient at the start is recomputed because
the precisions changed).

**Warm-up.** The driver's Stan window adaptation (`adapt="window"`) cannot be used: it also
learns a metric from the positions, writes it into `knobs.inverse_mass_matrix` and re-runs
Stan's step-size heuristic on the joint density at the end of each slow window, and it has no
option to leave the metric alone. Here the metric is Neal's, recomputed every transition, so
only η needs adapting. The adapter `"dual_averaging"` (`adaptation/dual_averaging.py`,
listed in `adaptation/__init__.py`; the default of `bnn.samplers.nuts_gibbs_sampler`) does
that: dual averaging (Nesterov 2009) of log η on the NUTS acceptance statistic in every warm-up
transition, one chain at a time, and η = e^{x̄} at the end (Hoffman & Gelman 2014, Alg. 6;
Stan's constants, as in Ask 2022, ch. 5: δ = 0.8, γ = 0.05, κ = 0.75, t₀ = 10,
μ = log(10 η₀)). It adapts any sampler whose knobs have a `step_size` and whose info has an
`acceptance_rate` (Neal's scheme too).

    bomcmc.sample(model.posterior(), sampler=nuts_gibbs_sampler(model),
                  adapt="dual_averaging", chains=4, draws=1000, warmup=500)
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..config import float_dtype
from ..errors import BomcmcError
from ..validation import positive_number, tree_depth
from . import nuts
from .base import Kernel
from .neal_gibbs_hmc import gibbs_then_condition

DEFAULT_STEP_SIZE = 0.2  # η: a multiplier of Neal's step sizes (FBM's recipes use 0.1–0.5)


class NUTSGibbsState(NamedTuple):
    position: jax.Array  # [log τ…, w…]
    logdensity: jax.Array  # the joint log density at position
    logdensity_grad: jax.Array  # its gradient in w; zeros in the log τ part


class NUTSGibbsKnobs(NamedTuple):
    step_size: jax.Array  # η, the global multiplier of Neal's step sizes
    max_tree_depth: jax.Array  # int32, at most this many doublings (≤ capacity)
    tree_capacity: jax.Array  # (capacity,): only its static shape is read (see kernels/nuts.py)
    sample_sigmas: jax.Array  # bool: Gibbs-draw the weight groups' precisions
    sample_noise: jax.Array  # bool: Gibbs-draw the noise precisions


NUTSGibbsInfo = nuts.NUTSInfo  # acceptance and tree of the weights' NUTS; n_grad + 1


def nuts_gibbs_kernel(model, name: str = "nuts_gibbs") -> Kernel:
    """Gibbs sweep of the precisions, then one NUTS transition on the weights with Neal's
    per-weight scales as the metric, for one `BNN` (use with
    `bomcmc.sample(model.posterior(), sampler=nuts_gibbs_sampler(model), ...)`).

    A factory of three closures over the model (init, step, make_knobs), hence its length."""
    n_hyper, dim = model.n_hyper, model.dim

    def init(position, logdensity_fn):
        logp, grad = jax.value_and_grad(logdensity_fn)(position)
        return NUTSGibbsState(position, logp, grad)

    def step(key, state, logdensity_fn, knobs, max_energy_error=nuts.MAX_ENERGY_ERROR):
        k_gibbs, k_nuts = jax.random.split(key)
        x0 = state.position
        dtype = x0.dtype
        # 1–2. Gibbs draws of the precisions; Neal's scales from them as the metric M⁻¹ = 1/c
        hyper, w0, cond_logdensity, logp, grad, inv_mass = gibbs_then_condition(
            model, k_gibbs, x0, knobs, logdensity_fn)
        # 3. one NUTS transition on p(w | τ, data)
        nuts_knobs = nuts.NUTSKnobs(
            step_size=jnp.asarray(knobs.step_size, dtype),
            inverse_mass_matrix=inv_mass,
            max_tree_depth=knobs.max_tree_depth,
            tree_capacity=knobs.tree_capacity,
        )
        w_state, w_info = nuts.step(k_nuts, nuts.NUTSState(w0, logp, grad), cond_logdensity,
                                    nuts_knobs, max_energy_error)
        x1 = jnp.concatenate([hyper, w_state.position])
        full_grad = jnp.concatenate([jnp.zeros((n_hyper,), dtype), w_state.logdensity_grad])
        sq_jump = jnp.sum((x1 - x0) ** 2)
        info = NUTSGibbsInfo(
            acceptance_rate=w_info.acceptance_rate,
            energy=w_info.energy,
            energy_error=w_info.energy_error,
            diverging=w_info.diverging,
            n_grad=w_info.n_grad + 1,
            n_steps=w_info.n_steps,
            tree_depth=w_info.tree_depth,
            sq_jump=sq_jump,
            esjd=sq_jump,
            step_size=w_info.step_size,
        )
        return NUTSGibbsState(x1, w_state.logdensity, full_grad), info

    def make_knobs(d: int, step_size: float = DEFAULT_STEP_SIZE,
                   max_tree_depth: int = nuts.DEFAULT_MAX_TREE_DEPTH,
                   sample_sigmas: bool = True, sample_noise: bool = True) -> NUTSGibbsKnobs:
        if d != dim:
            raise BomcmcError(f"sampler '{name}' was built for a model of dimension {dim}, "
                              f"but the posterior has dimension {d}")
        positive_number("step_size (η)", step_size)
        tree_depth(max_tree_depth)
        dtype = float_dtype()
        depth = int(max_tree_depth)
        return NUTSGibbsKnobs(
            step_size=np.asarray(step_size, dtype),
            max_tree_depth=np.asarray(depth, np.int32),
            tree_capacity=np.zeros((depth,), np.int8),
            sample_sigmas=np.asarray(bool(sample_sigmas)),
            sample_noise=np.asarray(bool(sample_noise)),
        )

    return Kernel(name=name, init=init, step=step, make_knobs=make_knobs, gibbs_within=True)






