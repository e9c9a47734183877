"""Hybrid Monte Carlo with accept and reject windows.

Neal 1994, "An improved acceptance procedure for the hybrid Monte Carlo algorithm"; FBM's
`hybrid steps:window stepsize` (`mc/mc-spec.doc`), the form of FBM's network recipes
(`sample-sigmas heatbath hybrid 2000:10 0.5`, `doc/Ex-netgp-r.doc`).

A trajectory of L leapfrog steps visits the states s_0, ..., s_L. The reject window holds the
first W of them, s_0 ... s_{W-1}, the accept window the last W, s_{L-W+1} ... s_L. One
transition, from (x, p) with fresh momentum p:

1. The offset F ~ U{0, ..., W-1}: the current state is s_F. The dynamics run F steps
   backward from it (step size −ε) to s_0 and L − F steps forward to s_L.
2. With P_rej = Σ_{reject window} e^{−H(s)} and P_acc = Σ_{accept window} e^{−H(s)}, the
   next state comes from the accept window with probability min(1, P_acc / P_rej), else from
   the reject window.
3. Within the chosen window, state s is drawn with probability e^{−H(s)} / P_window.

Detailed balance: from s_j of the accept window with its momentum reversed, the same states
make a trajectory in reverse, in which s_j sits at offset L − j < W of the reject window and
the two windows swap; the probability of going from s_F to s_j, (1/W)·min(1/P_rej,
1/P_acc)·e^{−H(s_F)}·e^{−H(s_j)}, is then that of the way back, and a move within the reject
window is symmetric in the same way. This holds for every W ≤ L + 1, the windows overlapping
or not. W = 1 is plain HMC: the offset is 0, P_rej = e^{−H(s_0)}, P_acc = e^{−H(s_L)}.
W = L + 1 always accepts (FBM then ignores the reject window). The acceptance rate rises
because the test compares sums over W states, whose energy errors partly average out, instead
of one state's (Neal 1994).

The hot loop is one `lax.fori_loop` over the L steps (L is a traced knob, as in
`integrators.leapfrog`: a `lax.scan` would need a static length). Each visited state is drawn
into each window it belongs to by the Gumbel-max trick: the state of largest −H(s) + G_s wins,
G_s a standard Gumbel variable keyed by the state's index along the trajectory, which gives
probability e^{−H(s)} / P_window. A state with a non-finite energy has weight 0. The window
sums are kept as log-sums, so the free energies −log P never overflow.

Knobs: HMC's (`step_size`, `steps`, `random_steps`, `inverse_mass_matrix`) and `window` (W),
all arrays, so no knob change recompiles. With random_steps, the trajectory has
L_r ~ U{1..L} steps and the window min(W, L_r + 1).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..config import float_dtype
from ..errors import BomcmcError
from ..validation import inverse_mass, positive_number, whole_number
from .base import Kernel, tree_where
from .hmc import MAX_ENERGY_ERROR, HMCInfo, HMCState, init, trajectory_length, transition_info
from .integrators import IntegratorState, kinetic_energy, leapfrog_step, sample_momentum

WindowedState = HMCState
WindowedInfo = HMCInfo  # energy_error: F_acc − F_rej, the windows' free-energy difference


class WindowedKnobs(NamedTuple):
    step_size: jax.Array  # ε
    num_steps: jax.Array  # L (the maximum when random_steps)
    inverse_mass_matrix: jax.Array  # M⁻¹: diagonal (d,) or dense (d, d)
    random_steps: jax.Array  # bool: L_r ~ U{1..L} per transition
    window: jax.Array  # W: states in each of the accept and reject windows


class Window(NamedTuple):
    """A window's running state: log Σ e^{−H} over the states seen in it, and the state
    drawn from them so far with its Gumbel score."""

    log_sum: jax.Array
    score: jax.Array
    state: IntegratorState


class WindowedResult(NamedTuple):
    """What one windowed trajectory decided."""

    state: IntegratorState  # the next state (momentum as at that point of the trajectory)
    proposal: IntegratorState  # the state drawn from the accept window
    accepted: jax.Array  # the next state came from the accept window
    energy0: jax.Array  # H at the current state
    delta: jax.Array  # F_acc − F_rej, F = −log P_window
    diverging: jax.Array
    accept_prob: jax.Array  # min(1, P_acc / P_rej), 0 for a divergence


def window_offset(u: jax.Array, window: jax.Array) -> jax.Array:
    """The current state's index F ~ U{0, ..., W−1} in the reject window, from one uniform
    u ∈ [0, 1) (Neal 1994)."""
    return jnp.clip(jnp.floor(u * window).astype(jnp.int32), 0, window - 1)


def choice_score(energy: jax.Array, key: jax.Array) -> jax.Array:
    """−H(s) + G, G ~ Gumbel(0, 1): the state of largest score within a window is drawn with
    probability e^{−H(s)} / Σ_window e^{−H} (the Gumbel-max trick)."""
    return -energy + jax.random.gumbel(key, (), energy.dtype)


def energy(state: IntegratorState, inv_mass) -> jax.Array:
    """H = −log π(x) + ½ pᵀM⁻¹p; +∞ where it is not a number (such a state has weight 0)."""
    h = -state.logdensity + kinetic_energy(state.momentum, inv_mass)
    return jnp.where(jnp.isnan(h), jnp.inf, h)


def _visit(win: Window, inside, h, score, state: IntegratorState) -> Window:
    """`win` after state s (energy h, Gumbel score) when s lies inside it."""
    take = inside & (score > win.score)
    return Window(jnp.where(inside, jnp.logaddexp(win.log_sum, -h), win.log_sum),
                  jnp.where(take, score, win.score), tree_where(take, state, win.state))


def windowed_trajectory(key: jax.Array, start: IntegratorState, logdensity_fn: Callable,
                        step_size, inv_mass, num_steps, window, u_offset, u_accept,
                        max_energy_error: float = MAX_ENERGY_ERROR) -> WindowedResult:
    """Neal's (1994) windowed acceptance of one trajectory of `num_steps` (L) leapfrog steps
    through `start` (position, fresh momentum, log density and gradient): the current state
    at offset F (from `u_offset`) of the reject window of W = `window` states, the accept
    decision from `u_accept`, each window's state drawn with `key` (Gumbel variables keyed by
    the index along the trajectory)."""
    n = jnp.asarray(num_steps, jnp.int32)
    w = jnp.minimum(jnp.asarray(window, jnp.int32), n + 1)
    offset = window_offset(u_offset, w)
    h0 = energy(start, inv_mass)
    score0 = choice_score(h0, jax.random.fold_in(key, offset))
    empty = Window(jnp.asarray(-jnp.inf, h0.dtype), jnp.asarray(-jnp.inf, h0.dtype), start)
    reject = Window(-h0, score0, start)  # F < W: the current state is in the reject window
    accept = _visit(empty, offset > n - w, h0, score0, start)
    eps = jnp.asarray(step_size, start.position.dtype)

    def body(i, carry):
        state, reject, accept = carry
        backward = i < offset
        # F steps backward from the current state to s_0, then L − F forward from it again
        state = tree_where(i == offset, start, state)
        state = leapfrog_step(state, logdensity_fn, jnp.where(backward, -eps, eps), inv_mass)
        index = jnp.where(backward, offset - 1 - i, i + 1)
        h = energy(state, inv_mass)
        score = choice_score(h, jax.random.fold_in(key, index))
        return (state, _visit(reject, index < w, h, score, state),
                _visit(accept, index > n - w, h, score, state))

    _, reject, accept = jax.lax.fori_loop(0, n, body, (start, reject, accept))
    delta = reject.log_sum - accept.log_sum  # F_acc − F_rej
    diverging = ~jnp.isfinite(delta) | (delta > max_energy_error)
    accept_prob = jnp.where(diverging, 0.0, jnp.minimum(1.0, jnp.exp(-delta)))
    accepted = u_accept < accept_prob
    return WindowedResult(tree_where(accepted, accept.state, reject.state), accept.state,
                          accepted, h0, delta, diverging, accept_prob)


def step(key: jax.Array, state: HMCState, logdensity_fn: Callable, knobs: WindowedKnobs,
         max_energy_error: float = MAX_ENERGY_ERROR) -> tuple[HMCState, HMCInfo]:
    """One windowed HMC transition (Neal 1994). The momentum and the accept and trajectory
    -length uniforms come from the same streams as `hmc.step`'s, so W = 1 is `hmc.step`."""
    key_p, key_u = jax.random.split(key)
    u_accept, u_steps = jax.random.uniform(key_u, (2,), state.position.dtype)
    key_offset, key_choice = jax.random.split(jax.random.fold_in(key, 1))
    u_offset = jax.random.uniform(key_offset, (), state.position.dtype)
    inv_mass = knobs.inverse_mass_matrix
    momentum = sample_momentum(key_p, state.position, inv_mass)
    n = trajectory_length(u_steps, knobs)
    start = IntegratorState(state.position, momentum, state.logdensity, state.logdensity_grad)
    res = windowed_trajectory(key_choice, start, logdensity_fn, knobs.step_size, inv_mass, n,
                              knobs.window, u_offset, u_accept, max_energy_error)
    new = HMCState(res.state.position, res.state.logdensity, res.state.logdensity_grad)
    info = transition_info(state.position, res.proposal.position, new.position, res.energy0,
                           res.delta, res.diverging, res.accept_prob, n, n,
                           jnp.asarray(knobs.step_size, state.position.dtype))
    return new, info


def check_window(window, steps) -> int:
    """W, a whole number from 1 to L + 1 (the trajectory's states), or a one-line error."""
    whole_number("window (W)", window)
    if int(window) > int(steps) + 1:
        raise BomcmcError(f"window must be at most steps + 1 = {int(steps) + 1} (the "
                          f"trajectory's states), got {window}")
    return int(window)


def make_knobs(dim: int, step_size: float = 0.1, steps: int = 10, window: int = 1,
               random_steps: bool = False, inverse_mass_matrix=None,
               dense_mass: bool = False) -> WindowedKnobs:
    """Validated knobs for one chain: HMC's (`hmc.default_knobs`) and the window W ≥ 1 (at
    most L + 1: the windows then hold the whole trajectory)."""
    positive_number("step_size", step_size)
    whole_number("steps (L)", steps)
    check_window(window, steps)
    dtype = float_dtype()
    return WindowedKnobs(
        step_size=np.asarray(step_size, dtype),
        num_steps=np.asarray(int(steps), np.int32),
        inverse_mass_matrix=inverse_mass(dim, inverse_mass_matrix, dense_mass).astype(dtype),
        random_steps=np.asarray(bool(random_steps)),
        window=np.asarray(int(window), np.int32),
    )


kernel = Kernel(name="whmc", init=init, step=step, make_knobs=make_knobs)
