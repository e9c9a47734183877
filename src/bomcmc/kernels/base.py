"""The kernel protocol: what every transition kernel gives the driver.

A `Kernel` bundles pure functions on one chain and one flat position vector:

    init(position, logdensity_fn) -> state
    step(key, state, logdensity_fn, knobs) -> (state, info)
    make_knobs(dim, **user_knobs) -> knobs      (validated; a NamedTuple of arrays)

`state`, `knobs` and `info` are NamedTuples of arrays, so the driver can vmap them over
chains, carry them through `lax` loops, write them to disk and read them back. Every info
must carry `n_grad` (gradient evaluations) and `diverging`; the driver sums and counts them.

A kernel whose transition has a random length (NUTS) may also give `machine`: the same
transition as `begin / step / settle / finish` functions, one gradient per `step` (see
`nuts_machine.Machine`). The driver then runs its chunks tick by tick, so that vmapped
chains do not wait for each other's trajectories (`driver.ticks`).

A kernel knows nothing of tuners, adapters or models: what a kernel needs of a model (Gibbs
conditionals, curvature) it receives as arguments when it is built. The registry
(`bomcmc.registry.Sampler`) pairs a kernel with its default warm-up and tuner.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp


class Kernel(NamedTuple):
    name: str
    init: Callable[..., Any]
    step: Callable[..., Any]
    make_knobs: Callable[..., Any]
    machine: Any = None  # optional: the transition as ticks (`nuts_machine.Machine`)
    # Gibbs draws of hyperparameters alternate with HMC or NUTS on the rest (Neal 1996): the
    # recorded energy is that of a conditional that changes between transitions (no E-BFMI)
    # and the step size is a factor η on per-group step sizes
    gibbs_within: bool = False
    # optional: moves a starting point before `init`, start(position, logdensity_fn) ->
    # (position, gradient evaluations spent, whether the point is steeper than the start);
    # the driver counts the evaluations in the warm-up's, and when any chain's point is
    # steeper, it starts every chain from its own point instead
    start: Callable[..., Any] | None = None
    # optional: the compact set M the kernel is restricted to, a membership test of the flat
    # position (`support.restrict`); the driver refuses a chain that starts outside it
    support: Callable[..., Any] | None = None


def tree_where(pred, a, b):
    """a where pred, else b, leaf by leaf. pred is a scalar, or a batch of them matching the
    leaves' leading axes (one per chain)."""
    def pick(x, y):
        return jnp.where(jnp.reshape(pred, jnp.shape(pred) + (1,) * (jnp.ndim(x) - jnp.ndim(pred))),
                         x, y)
    return jax.tree_util.tree_map(pick, a, b)
