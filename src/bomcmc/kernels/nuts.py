"""The No-U-Turn Sampler: BlackJAX's iterative NUTS behind our sampler protocol.

As in Stan (`base_nuts.hpp`): multinomial sampling of the trajectory (Betancourt 2017),
biased progressive sampling at the top level, the generalised U-turn criterion on
p♯ = M⁻¹p, divergence when H − H₀ > 1000, adaptation statistic Σ min(1, e^{H₀−H}) /
n_leapfrog. The trajectory is built by BlackJAX (`blackjax.mcmc.nuts`, iterative version of
Phan et al. 2019 / NumPyro); this module only maps its state and info onto ours and makes
every knob a runtime value.

The one change to BlackJAX's `nuts.build_kernel()`: there, `max_num_doublings` is a Python
int that fixes both the loop bound and the number of rows of the U-turn checkpoint buffer,
so a new depth recompiles. Here the two are split (see `propose`): the buffer has a static
number of rows (`knobs.tree_capacity.shape[-1]`, set by `make_knobs` from `max_tree_depth`)
and the loop bound is the traced knob `knobs.max_tree_depth`, clipped to that capacity.
Changing the step size, the metric or the depth (up to the capacity) never recompiles;
for the same key the transition equals `blackjax.nuts.build_kernel()(..., max_num_doublings)`.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from blackjax.mcmc import integrators as bj_integrators
from blackjax.mcmc import metrics as bj_metrics
from blackjax.mcmc import proposal as bj_proposal
from blackjax.mcmc import termination as bj_termination
from blackjax.mcmc import trajectory as bj_trajectory

from ..config import float_dtype
from ..validation import inverse_mass, positive_number, tree_depth
from .base import Kernel
from .hmc import HMCState

MAX_ENERGY_ERROR = 1000.0  # H − H₀ above this is a divergence (Stan's and BlackJAX's default)
DEFAULT_MAX_TREE_DEPTH = 10  # Stan's max_depth, BlackJAX's max_num_doublings

NUTSState = HMCState  # position, logdensity, logdensity_grad: BlackJAX's HMCState field for field


class NUTSKnobs(NamedTuple):
    step_size: jax.Array  # ε
    inverse_mass_matrix: jax.Array  # M⁻¹: diagonal (d,) or dense (d, d); the shape is fixed per run
    max_tree_depth: jax.Array  # int32: at most this many doublings (runtime, ≤ capacity)
    tree_capacity: jax.Array  # (capacity,) zeros: only its static *shape* is read, the rows
    #                           of the U-turn checkpoint buffer (= max_tree_depth at make_knobs)


class NUTSInfo(NamedTuple):
    acceptance_rate: jax.Array  # Σ_trajectory min(1, e^{H₀−H}) / n_leapfrog (Stan's accept_stat__)
    energy: jax.Array  # H at the returned state (Stan's energy__)
    energy_error: jax.Array  # H(returned) − H₀
    diverging: jax.Array  # the last subtree hit H − H₀ > 1000 (NaN counts as +∞)
    n_grad: jax.Array  # gradient evaluations = leapfrog steps (Stan's n_leapfrog__)
    n_steps: jax.Array  # leapfrog steps (same as n_grad)
    tree_depth: jax.Array  # doublings done (Stan's treedepth__)
    sq_jump: jax.Array  # ||x_{t+1} − x_t||²
    esjd: jax.Array  # = sq_jump (no cheap Rao-Blackwellised form for a multinomial draw)
    step_size: jax.Array


def init(position: jax.Array, logdensity_fn: Callable) -> NUTSState:
    logp, grad = jax.value_and_grad(logdensity_fn)(position)
    return NUTSState(position, logp, grad)


def propose(
    key: jax.Array,
    start: bj_integrators.IntegratorState,
    logdensity_fn: Callable,
    metric: bj_metrics.Metric,
    step_size: jax.Array,
    max_tree_depth: jax.Array,
    capacity: int,
    divergence_threshold: float = MAX_ENERGY_ERROR,
):
    """BlackJAX's `iterative_nuts_proposal`, with the checkpoint buffer sized by the static
    `capacity` and the doubling loop bounded by the traced `max_tree_depth`."""
    new_uturn_state, update_uturn_state, is_uturn = bj_termination.iterative_uturn_numpyro(
        metric.check_turning
    )
    integrate = bj_trajectory.dynamic_progressive_integration(
        bj_integrators.velocity_verlet(logdensity_fn, metric.kinetic_energy),
        metric.kinetic_energy,
        update_uturn_state,
        is_uturn,
        divergence_threshold,
    )
    expand = bj_trajectory.dynamic_multiplicative_expansion(
        integrate, metric.check_turning, max_tree_depth
    )
    energy0 = -start.logdensity + metric.kinetic_energy(start.momentum)
    expansion0 = bj_trajectory.DynamicExpansionState(
        0,
        bj_proposal.Proposal(start, energy0, 0.0, -np.inf),
        bj_trajectory.Trajectory(start, start, start.momentum, 0),
        new_uturn_state(start, capacity),
    )
    expansion, (diverging, _) = expand(key, expansion0, energy0, step_size)
    depth, chosen, trajectory, _ = expansion
    n_leapfrog = trajectory.num_states
    acceptance = jnp.exp(chosen.sum_log_p_accept) / n_leapfrog
    return chosen, energy0, diverging, depth, n_leapfrog, acceptance


def step(
    key: jax.Array,
    state: NUTSState,
    logdensity_fn: Callable,
    knobs: NUTSKnobs,
    divergence_threshold: float = MAX_ENERGY_ERROR,
) -> tuple[NUTSState, NUTSInfo]:
    """One NUTS transition (Betancourt 2017; Stan's multinomial NUTS): fresh momentum, a
    doubling trajectory, a multinomial draw from it."""
    capacity = knobs.tree_capacity.shape[-1]
    max_depth = jnp.minimum(jnp.asarray(knobs.max_tree_depth, jnp.int32), capacity)
    metric = bj_metrics.default_metric(knobs.inverse_mass_matrix)
    key_momentum, key_tree = jax.random.split(key)  # as blackjax.nuts.build_kernel does
    momentum = metric.sample_momentum(key_momentum, state.position)
    start = bj_integrators.IntegratorState(
        state.position, momentum, state.logdensity, state.logdensity_grad
    )
    chosen, energy0, diverging, depth, n_leapfrog, acceptance = propose(
        key_tree, start, logdensity_fn, metric, knobs.step_size, max_depth, capacity,
        divergence_threshold,
    )
    new = chosen.state
    new_state = NUTSState(new.position, new.logdensity, new.logdensity_grad)
    dtype = state.position.dtype
    n = jnp.asarray(n_leapfrog, jnp.int32)
    sq_jump = jnp.sum((new.position - state.position) ** 2)
    info = NUTSInfo(
        acceptance_rate=jnp.asarray(acceptance, dtype),
        energy=jnp.asarray(chosen.energy, dtype),
        energy_error=jnp.asarray(chosen.energy - energy0, dtype),
        diverging=jnp.asarray(diverging, bool),
        n_grad=n,
        n_steps=n,
        tree_depth=jnp.asarray(depth, jnp.int32),
        sq_jump=sq_jump,
        esjd=sq_jump,
        step_size=jnp.asarray(knobs.step_size, dtype),
    )
    return new_state, info


def make_knobs(
    dim: int,
    step_size: float = 1.0,
    inverse_mass_matrix=None,
    dense_mass: bool = False,
    max_tree_depth: int = DEFAULT_MAX_TREE_DEPTH,
) -> NUTSKnobs:
    """Validated knobs for one chain.

    `step_size` defaults to Stan's 1 (warm-up adaptation replaces it). The metric is
    diagonal unless `dense_mass=True` or a (d, d) `inverse_mass_matrix` is given; the choice
    fixes the knob's shape for the run. `max_tree_depth` also fixes the capacity of the
    U-turn buffer: later values above it are clipped to it. The warm-up's target
    acceptance δ is the adapter's option (`target_accept`), not a knob.
    """
    positive_number("step_size", step_size)
    tree_depth(max_tree_depth)
    inv_mass = inverse_mass(dim, inverse_mass_matrix, dense_mass)
    dtype = float_dtype()
    depth = int(max_tree_depth)
    return NUTSKnobs(
        step_size=np.asarray(step_size, dtype),
        inverse_mass_matrix=inv_mass.astype(dtype),
        max_tree_depth=np.asarray(depth, np.int32),
        tree_capacity=np.zeros((depth,), np.int8),
    )


kernel = Kernel(name="nuts", init=init, step=step, make_knobs=make_knobs)
