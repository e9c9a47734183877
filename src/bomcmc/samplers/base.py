"""The sampler protocol every kernel plugs into the driver with.

A `Sampler` bundles pure functions on one chain and one flat position vector:

    init(position, logdensity_fn) -> state
    step(key, state, logdensity_fn, knobs) -> (state, info)
    make_knobs(dim, **user_knobs) -> knobs      (validated; a NamedTuple of arrays)

`state`, `knobs` and `info` are NamedTuples of arrays, so the driver can vmap them over
chains, carry them through `lax` loops, write them to disk and read them back. Every info
must carry `n_grad` (gradient evaluations) and `diverging`; the driver sums and counts them.

A sampler whose transition has a random length (NUTS) may also give `machine`: the same
transition as `begin / step / settle / finish` functions, one gradient per `step` (see
`nuts_machine.Machine`). The driver then runs its chunks tick by tick, so that vmapped
chains do not wait for each other's trajectories (`run.build_chunk_fn`).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp


class Sampler(NamedTuple):
    name: str
    init: Callable[..., Any]
    step: Callable[..., Any]
    make_knobs: Callable[..., Any]
    machine: Any = None  # optional: the transition as ticks (`nuts_machine.Machine`)
    default_adapt: str | None = None  # the warm-up adapter `adapt="auto"` picks ("window")


def tree_where(pred, a, b):
    """a where pred, else b, leaf by leaf. pred is a scalar, or a batch of them matching the
    leaves' leading axes (one per chain)."""
    def pick(x, y):
        return jnp.where(jnp.reshape(pred, jnp.shape(pred) + (1,) * (jnp.ndim(x) - jnp.ndim(pred))),
                         x, y)
    return jax.tree_util.tree_map(pick, a, b)


def as_float():
    return jnp.float64 if jax.config.read("jax_enable_x64") else jnp.float32
