"""Stan's step-size heuristic over a batch of chains, for adaptive HMC's relative ε box
(docs/tuning.md, "Adaptive HMC as a sampler"): the median over chains of Stan's
`init_stepsize` (Hoffman & Gelman 2014, Alg. 4; `adaptation/window_adaptation.py`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..config import Latest
from ..kernels import hmc

# the compiled heuristic of each log density (by identity; `posterior.flatten` gives a
# posterior one), so that a further run of it in the process does not trace it again
_COMPILED = Latest(4)


def compile_heuristic(logdensity_fn):
    """(keys, positions, ε, M⁻¹) ↦ (ε per chain, trials per chain), jitted and vmapped over
    the chains."""
    return _COMPILED.get_or_build(id(logdensity_fn), lambda: _build(logdensity_fn),
                                  keep=(logdensity_fn,))


def _build(logdensity_fn):
    from ..adaptation.window_adaptation import init_stepsize

    def one(key, x, eps, inv_mass):
        state = hmc.init(x, logdensity_fn)
        return init_stepsize(key, state, logdensity_fn, eps, inv_mass)

    return jax.jit(jax.vmap(one, in_axes=(0, 0, None, None)))


def median_step_size(heuristic, seed: int, epoch: int, positions, inverse_mass,
                     step_size) -> tuple[float | None, int]:
    """(median over chains of the heuristic's ε from `step_size` at `positions`, or None when
    none is finite; the gradients it spent). The keys are folded from (seed, 1 + epoch)."""
    x = jnp.asarray(positions)
    keys = jax.random.split(jax.random.fold_in(jax.random.PRNGKey(seed), 1 + epoch),
                            x.shape[0])
    eps, trials = heuristic(keys, x, jnp.asarray(step_size, x.dtype),
                            jnp.asarray(inverse_mass, x.dtype))
    # one gradient at each start and one per trial (a leapfrog step)
    grads = int(np.sum(np.asarray(trials))) + x.shape[0]
    eps = np.asarray(eps, float)
    eps = eps[np.isfinite(eps) & (eps > 0)]
    return (float(np.median(eps)) if eps.size else None), grads
