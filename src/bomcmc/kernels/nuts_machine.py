"""NUTS one leapfrog step at a time: the transition of `nuts.step` as a state machine.

Why. Vmapped chains run a `while_loop` in lockstep: a batch of chains keeps iterating while
*any* chain still needs to, so with BlackJAX's (or NumPyro's) iterative NUTS every transition
costs the longest trajectory among the chains: Σ_t max_c n_{t,c} gradients, more than the
busiest chain's own (the "lockstep factor" of docs/benchmarks.md, "NUTS without lockstep").
Here a tick is one leapfrog step of every chain, and each chain moves on to its next transition as
soon as its own tree is done, so a chunk costs about max_c Σ_t n_{t,c} ticks. A tick carries
more bookkeeping than a lockstep leapfrog step, so this wins only where the trees' lengths
vary a lot (measured in docs/benchmarks.md, "NUTS without lockstep").

What. The same algorithm, draw for draw: BlackJAX's iterative NUTS (Betancourt 2017's
multinomial NUTS as in Stan; `blackjax.mcmc.trajectory.dynamic_multiplicative_expansion` around
`dynamic_progressive_integration`, with NumPyro's iterative U-turn checkpoints) with its two
nested loops (doublings; leapfrogs of one subtree) flattened into one. Every key is derived
as BlackJAX derives it (fold_in of the tree key by depth, split in three; fold_in of the
subtree key by leaf; the per-doubling draws are made up front, as uniforms compared the way
`jax.random.bernoulli` compares them), so the loop below returns exactly `nuts.step(key, ...)`
(tested bit for bit). BlackJAX's own building blocks do the work: the integrator,
the proposal weights, uniform and biased progressive sampling, trajectory merging and the
U-turn checks.

    m = begin(key, state, logdensity_fn, knobs)   # momentum, H₀, the tree's random draws
    while not m.done:
        m = step(m, logdensity_fn, knobs)          # one leapfrog step (one gradient)
        if m.pending:                              # the subtree is over: merge it, and
            m = settle(m, logdensity_fn, knobs)    # start the next doubling or be done
    state, info = finish(m, knobs)
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
from blackjax.mcmc import integrators as bj_integrators
from blackjax.mcmc import metrics as bj_metrics
from blackjax.mcmc import proposal as bj_proposal
from blackjax.mcmc import termination as bj_termination
from blackjax.mcmc import trajectory as bj_trajectory

from . import nuts
from .base import Kernel, tree_where
from .nuts import MAX_ENERGY_ERROR, NUTSInfo, NUTSKnobs, NUTSState


class NUTSMachine(NamedTuple):
    x0: jax.Array  # position at the transition's start (for the squared jump)
    energy0: jax.Array  # H₀
    # BlackJAX's draws for doubling k, made once when the transition begins (row k):
    direction_u: jax.Array  # (capacity,) uniform(direction_key): the side is +1 iff u < 1/2
    leaf_keys: jax.Array  # (capacity, key) the subtree keys, folded by leaf
    merge_u: jax.Array  # (capacity,) uniform(proposal_key): the biased draw accepts iff u < p
    depth: jax.Array  # doublings completed
    proposal: bj_proposal.Proposal  # the transition's draw so far (top level)
    trajectory: bj_trajectory.Trajectory  # the trajectory before the subtree being built
    direction: jax.Array  # ±1: the side the subtree grows on
    leaf: jax.Array  # leapfrog steps done in the subtree
    sub_proposal: bj_proposal.Proposal
    sub_trajectory: bj_trajectory.Trajectory
    uturn: bj_termination.IterativeUTurnState  # NumPyro's checkpoints
    diverging: jax.Array  # H − H₀ > 1000 in the last subtree
    turning: jax.Array  # the last subtree, or the merged trajectory, made a U-turn
    pending: jax.Array  # the subtree is over: `settle` must merge it before the next step
    done: jax.Array  # the transition is complete: `finish` may read it


def _parts(knobs: NUTSKnobs, logdensity_fn: Callable):
    metric = bj_metrics.default_metric(knobs.inverse_mass_matrix)
    integrator = bj_integrators.velocity_verlet(logdensity_fn, metric.kinetic_energy)
    _, generate = bj_proposal.proposal_generator(bj_trajectory.hmc_energy(metric.kinetic_energy))
    new_uturn, update_uturn, is_uturn = bj_termination.iterative_uturn_numpyro(
        metric.check_turning)
    return metric, integrator, generate, new_uturn, update_uturn, is_uturn


def _draws(key_tree: jax.Array, capacity: int, dtype):
    """Every random number the tree can use but the leaf draws, as `expand_once` makes them:
    for doubling k, split(fold_in(key_tree, k), 3) = (direction, leaf, proposal) keys, and
    bernoulli(key, p) = uniform(key, dtype of p) < p (`jax.random.bernoulli`; the side's p is
    the default 0.5, a Python float: float64 under x64, the proposal's p has `dtype`)."""
    keys = jax.vmap(lambda k: jax.random.split(jax.random.fold_in(key_tree, k), 3))(
        jnp.arange(capacity))
    side_dtype = jnp.result_type(float)
    direction_u = jax.vmap(lambda k: jax.random.uniform(k, (), side_dtype))(keys[:, 0])
    merge_u = jax.vmap(lambda k: jax.random.uniform(k, (), dtype))(keys[:, 2])
    return direction_u, keys[:, 1], merge_u


def _begin_subtree(m: NUTSMachine, generate) -> NUTSMachine:
    """Start doubling `m.depth`: its side, and an empty subtree at that end (the
    placeholders of `dynamic_progressive_integration`)."""
    direction = jnp.where(m.direction_u[m.depth] < 0.5, 1, -1).astype(jnp.int32)
    start = tree_where(direction > 0, m.trajectory.rightmost_state, m.trajectory.leftmost_state)
    return m._replace(
        direction=direction, leaf=jnp.zeros((), jnp.int32),
        sub_proposal=generate(m.energy0, start),
        sub_trajectory=bj_trajectory.Trajectory(start, start, start.momentum,
                                                jnp.zeros((), jnp.int32)),
    )


def begin(key: jax.Array, state: NUTSState, logdensity_fn: Callable,
          knobs: NUTSKnobs) -> NUTSMachine:
    """Start a transition: fresh momentum, H₀, and the first subtree (as `nuts.step`)."""
    metric, _, generate, new_uturn, _, _ = _parts(knobs, logdensity_fn)
    key_momentum, key_tree = jax.random.split(key)
    momentum = metric.sample_momentum(key_momentum, state.position)
    start = bj_integrators.IntegratorState(
        state.position, momentum, state.logdensity, state.logdensity_grad)
    energy0 = -start.logdensity + metric.kinetic_energy(start.momentum)
    capacity = knobs.tree_capacity.shape[-1]
    direction_u, leaf_keys, merge_u = _draws(key_tree, capacity, energy0.dtype)
    zero, false = jnp.zeros((), jnp.int32), jnp.zeros((), bool)
    m = NUTSMachine(
        x0=state.position, energy0=energy0,
        direction_u=direction_u, leaf_keys=leaf_keys, merge_u=merge_u, depth=zero,
        proposal=bj_proposal.Proposal(start, energy0, jnp.zeros_like(energy0),
                                      jnp.full_like(energy0, -jnp.inf)),
        trajectory=bj_trajectory.Trajectory(start, start, start.momentum, zero),
        direction=jnp.ones((), jnp.int32), leaf=zero,
        sub_proposal=None, sub_trajectory=None,
        uturn=new_uturn(start, capacity),
        diverging=false, turning=false, pending=false, done=false,
    )
    return _begin_subtree(m, generate)


def step(m: NUTSMachine, logdensity_fn: Callable, knobs: NUTSKnobs,
         divergence_threshold: float = MAX_ENERGY_ERROR) -> NUTSMachine:
    """One leapfrog step of the subtree (`add_one_state` of
    `dynamic_progressive_integration`). Sets `pending` when that ends the subtree (its
    2^depth steps are done, or it diverged or turned)."""
    _, integrator, generate, _, update_uturn, is_uturn = _parts(knobs, logdensity_fn)
    leaf = m.leaf
    new_state = integrator(m.sub_trajectory.rightmost_state, m.direction * knobs.step_size)
    new_proposal = generate(m.energy0, new_state)
    is_diverging = -new_proposal.weight > divergence_threshold
    first = leaf == 0
    sub_trajectory = tree_where(
        first, bj_trajectory.Trajectory(new_state, new_state, new_state.momentum,
                                        jnp.ones((), jnp.int32)),
        bj_trajectory.append_to_trajectory(m.sub_trajectory, new_state))
    sub_proposal = tree_where(
        first, new_proposal,
        bj_proposal.progressive_uniform_sampling(
            jax.random.fold_in(m.leaf_keys[m.depth], leaf), m.sub_proposal, new_proposal))
    uturn = update_uturn(m.uturn, sub_trajectory.momentum_sum, new_state.momentum, leaf)
    has_terminated = is_uturn(uturn, sub_trajectory.momentum_sum, new_state.momentum)
    leaf = leaf + 1
    pending = ~((leaf < 2 ** m.depth) & ~has_terminated & ~is_diverging)
    return m._replace(leaf=leaf, sub_proposal=sub_proposal, sub_trajectory=sub_trajectory,
                      uturn=uturn, diverging=is_diverging, turning=has_terminated,
                      pending=pending)


def settle(m: NUTSMachine, logdensity_fn: Callable, knobs: NUTSKnobs) -> NUTSMachine:
    """The end of a doubling, for a machine with `pending` set (`expand_once` after its
    subtree): update the draw (biased progressive sampling, unless the subtree diverged or
    turned), join the subtree on its side, check the whole trajectory for a U-turn, and
    start the next doubling -- or set `done`."""
    metric, _, generate, _, _, _ = _parts(knobs, logdensity_fn)
    sub = m.sub_trajectory
    sub = tree_where(m.direction > 0, sub, bj_trajectory.Trajectory(
        sub.rightmost_state, sub.leftmost_state, sub.momentum_sum, sub.num_states))
    stopped = m.diverging | m.turning
    p_accept = jnp.clip(jnp.exp(m.sub_proposal.weight - m.proposal.weight), max=1)
    biased = tree_where(m.merge_u[m.depth] < p_accept, m.sub_proposal, m.proposal)  # Betancourt
    proposal = bj_proposal.Proposal(  # (progressive_biased_sampling with its uniform drawn)
        tree_where(stopped, m.proposal.state, biased.state),
        jnp.where(stopped, m.proposal.energy, biased.energy),
        jnp.where(stopped, m.proposal.weight,
                  jnp.logaddexp(m.proposal.weight, m.sub_proposal.weight)),
        jnp.logaddexp(m.proposal.sum_log_p_accept, m.sub_proposal.sum_log_p_accept))
    left, right = bj_trajectory.reorder_trajectories(m.direction, m.trajectory, sub)
    trajectory = bj_trajectory.merge_trajectories(left, right)
    turning = m.turning | metric.check_turning(
        trajectory.leftmost_state.momentum, trajectory.rightmost_state.momentum,
        trajectory.momentum_sum)
    depth = m.depth + 1
    max_depth = jnp.minimum(jnp.asarray(knobs.max_tree_depth, jnp.int32),
                            knobs.tree_capacity.shape[-1])
    done = ~((depth < max_depth) & ~m.diverging & ~turning)
    m = m._replace(depth=depth, proposal=proposal, trajectory=trajectory, turning=turning,
                   pending=jnp.zeros((), bool), done=done)
    return tree_where(done, m, _begin_subtree(m, generate))


def tick(m: NUTSMachine, logdensity_fn: Callable, knobs: NUTSKnobs) -> NUTSMachine:
    """`step`, then `settle` if the step ended the subtree: one chain's tick."""
    m = step(m, logdensity_fn, knobs)
    return tree_where(m.pending, settle(m, logdensity_fn, knobs), m)


def finish(m: NUTSMachine, knobs: NUTSKnobs) -> tuple[NUTSState, NUTSInfo]:
    """The finished transition's state and info, as `nuts.step` returns them."""
    chosen = m.proposal
    new = chosen.state
    dtype = m.x0.dtype
    n = jnp.asarray(m.trajectory.num_states, jnp.int32)
    sq_jump = jnp.sum((new.position - m.x0) ** 2)
    info = NUTSInfo(
        acceptance_rate=jnp.asarray(jnp.exp(chosen.sum_log_p_accept) / n, dtype),
        energy=jnp.asarray(chosen.energy, dtype),
        energy_error=jnp.asarray(chosen.energy - m.energy0, dtype),
        diverging=jnp.asarray(m.diverging, bool),
        n_grad=n,
        n_steps=n,
        tree_depth=jnp.asarray(m.depth, jnp.int32),
        sq_jump=sq_jump,
        esjd=sq_jump,
        step_size=jnp.asarray(knobs.step_size, dtype),
    )
    return NUTSState(new.position, new.logdensity, new.logdensity_grad), info


class Machine(NamedTuple):
    """A sampler's transition in ticks of one gradient each (see `driver/engine.py`,
    `build_chunk_fn`):
    `begin(key, state, logdensity_fn, knobs)`; then repeatedly `step(m, logdensity_fn,
    knobs)` (one gradient), followed by `settle(m, logdensity_fn, knobs)` whenever
    `m.pending` (bookkeeping without gradients, which a batch may skip when no chain needs
    it); the transition is over when `m.done`, and `finish(m, knobs)` gives (state, info)."""
    begin: Callable
    step: Callable
    settle: Callable
    finish: Callable


machine = Machine(begin=begin, step=step, settle=settle, finish=finish)

# "nuts_async": the same transition and knobs as "nuts"; the driver runs it tick by tick
kernel = Kernel(name="nuts_async", init=nuts.init, step=nuts.step,
                make_knobs=nuts.make_knobs, machine=machine)
