"""The compact set M of adaptive HMC (Wang, Mohamed & de Freitas 2013 §4, Proposition 3).

The paper's ergodicity result restricts the sampler to a compact set M and rejects every
proposal outside it. With the target π, this is the Metropolis–Hastings chain of the
restricted target π_M ∝ π · 1_M: the acceptance probability of a proposal x* is

    a(x, x*) = min(1, π(x*) q(x | x*) / π(x) q(x* | x)) · 1_M(x*),

so a proposal outside M is a rejection (the chain stays; it is not a divergence), and a chain
started in M never leaves it. The trajectory itself runs on π, unchanged: only its end point
is tested. (Clipping a proposal into M instead is *not* a valid move: it puts mass on the
boundary; tests/test_kernels_support.py shows the bias.)

M is given as a box on the flat unconstrained vector, (lower, upper), each a scalar or D
numbers (±inf for an open side), or as a membership test `inside(flat_position) -> bool`
written in JAX (Python API only). config.json records a box; a membership test it cannot
record, so a run with one cannot be resumed (`CALLABLE`; `registry.with_support` applies the
option to a run's kernel).
"""

from __future__ import annotations

import inspect
from typing import Callable

import jax.numpy as jnp
import numpy as np

from ..errors import BomcmcError
from .base import Kernel

CALLABLE = "callable"  # what config.json records of a membership test


def box(lower, upper) -> list:
    """A box (lower, upper) checked and as config.json stores it: floats, or lists of floats
    of one length (a scalar side broadcasts); lower < upper everywhere, no NaN."""
    try:
        lo, hi = (np.asarray(v, dtype=float) for v in (lower, upper))
    except (TypeError, ValueError):
        raise BomcmcError(f"support must be a box (lower, upper) of numbers, got "
                          f"({lower!r}, {upper!r})") from None
    if lo.ndim > 1 or hi.ndim > 1 or (lo.ndim == hi.ndim == 1 and lo.shape != hi.shape):
        raise BomcmcError(f"support's lower and upper must be scalars or vectors of one "
                          f"length, got shapes {lo.shape} and {hi.shape}")
    if np.isnan(lo).any() or np.isnan(hi).any() or not np.all(lo < hi):
        raise BomcmcError(f"support must have lower < upper on every coordinate, got "
                          f"({lo.tolist()}, {hi.tolist()})")
    return [lo.tolist(), hi.tolist()]


def parse(support):
    """The option `support=` as config.json records it: a box (`box`), `CALLABLE` for a
    membership test; one line for anything else."""
    if callable(support):
        return CALLABLE
    if isinstance(support, str):
        raise BomcmcError(f"support must be a box (lower, upper) or a membership test "
                          f"flat_position -> bool, got {support!r}")
    try:
        lower, upper = support
    except (TypeError, ValueError):
        raise BomcmcError(f"support must be a box (lower, upper) or a membership test "
                          f"flat_position -> bool, got {support!r}") from None
    return box(lower, upper)


def box_test(lower, upper) -> Callable:
    """The membership test of the box: lower ≤ x ≤ upper on every coordinate."""
    lo, hi = np.asarray(lower, float), np.asarray(upper, float)

    def inside(x):
        return jnp.all((x >= lo.astype(x.dtype)) & (x <= hi.astype(x.dtype)))

    return inside


def check_dim(box_: tuple, dim: int) -> None:
    """A box with D numbers per side must match the posterior's dimension."""
    for side in map(np.asarray, box_):
        if side.ndim == 1 and side.shape[0] != dim:
            raise BomcmcError(f"support's box has {side.shape[0]} numbers per side, the "
                              f"posterior has {dim} dimensions")


def restrict(kernel: Kernel, inside: Callable, box_: tuple | None = None) -> Kernel:
    """`kernel` restricted to M = {x : inside(x)}: its step rejects a proposal outside M (the
    kernel's `step` takes `support=`, as `hmc.step` and RMHMC's do); its `start` (AHMC's
    L-BFGS towards the mode) keeps the starting point when the point it reaches lies outside
    M; `Kernel.support` names the test, so that the driver refuses a start outside M; its
    `make_knobs` takes `support=` (already applied) and checks the box `box_`, if M is one,
    against the dimension."""
    if "support" not in inspect.signature(kernel.step).parameters:
        raise BomcmcError(f"sampler '{kernel.name}' takes no support (the samplers ahmc and "
                          f"armhmc do)")
    step, start, make_knobs = kernel.step, kernel.start, kernel.make_knobs

    def restricted_step(key, state, logdensity_fn, knobs):
        return step(key, state, logdensity_fn, knobs, support=inside)

    def restricted_start(position, logdensity_fn):
        moved, n, steeper = start(position, logdensity_fn)
        kept = inside(moved)
        return jnp.where(kept, moved, position), n, steeper & kept

    def restricted_knobs(dim, support=None, **knobs):
        if box_ is not None:
            check_dim(box_, dim)
        return make_knobs(dim, **knobs)

    return kernel._replace(step=restricted_step, make_knobs=restricted_knobs, support=inside,
                           start=None if start is None else restricted_start)


__all__ = ["CALLABLE", "box", "box_test", "check_dim", "parse", "restrict"]
