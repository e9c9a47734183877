"""Stan's warm-up: dual averaging of ε in every iteration, the metric learned in doubling
windows (the Stan Reference Manual, "HMC algorithm parameters"; Stan's source,
`windowed_adaptation.hpp`, `var_adaptation.hpp`, `covar_adaptation.hpp`,
`base_hmc.hpp::init_stepsize`; Hoffman & Gelman 2014 Alg. 6).

An `Adapter` (see `adaptation.base`): it runs inside the compiled chunk after every warm-up
transition of every chain, so everything here is jittable and vmappable and the state is a
flat NamedTuple of fixed-shape arrays (the driver stores it field by field).

The schedule, for num_warmup = W (defaults init_buffer 75, base_window 25, term_buffer 50):

    t ∈ [0, 75)        fast: step size only
    t ∈ [75, W − 50)   slow: positions feed a Welford estimator; windows [75, 100),
                       [100, 150), [150, 250), [250, 450), [450, 950) for W = 1000, each
                       twice the last, the last stretched to W − 50 (`build_schedule`)
    t ∈ [W − 50, W)    fast: step size only, with the final metric

At the end of each slow window: M⁻¹ ← (n/(n+5))·Σ̂ + 10⁻³·(5/(n+5))·I (Σ̂ the window's sample
variance, or covariance for a dense metric), Welford restarts, ε is re-initialised by Stan's
doubling/halving heuristic from the current ε with the new metric, and dual averaging
restarts with μ = log(10 ε). At t = W − 1 the knobs get ε = e^{x̄}. W < 20: no metric
adaptation (Stan); if init + base + term > W the buffers become 15% / 75% / 10% of W.

It adapts any sampler whose knobs have `step_size` and `inverse_mass_matrix` ("nuts", "hmc");
a (d, d) metric knob is adapted as a dense covariance, a (d,) one as a diagonal. δ is the
`target_accept` option (Stan's adapt_delta, 0.8).
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from blackjax.mcmc import integrators as bj_integrators
from blackjax.mcmc import metrics as bj_metrics

from ..errors import BomcmcError
from ..kernels.base import tree_where
from . import dual_averaging as da
from .base import Adapter
from .welford import regularized_metric, welford_update

INIT_BUFFER, TERM_BUFFER, BASE_WINDOW = 75, 50, 25  # Stan's defaults
MIN_WARMUP_FOR_METRIC = 20  # Stan: "No variance estimation is performed for num_warmup < 20"
MAX_WINDOWS = 32  # slow windows double, so a run has at most ~log2(W) of them
HEURISTIC_ACCEPT = 0.8  # Stan's init_stepsize threshold: ΔH = log 0.8, whatever δ is
HEURISTIC_MAX_TRIALS = 100  # Stan throws past ε > 1e7 or ε = 0; we stop instead
HEURISTIC_MAX_STEP = 1e7


# ---------------------------------------------------------------------------------------
# The schedule (host side, once per run)
# ---------------------------------------------------------------------------------------
def stan_buffers(num_warmup: int, init_buffer: int = INIT_BUFFER, term_buffer: int = TERM_BUFFER,
                 base_window: int = BASE_WINDOW) -> tuple[int, int, int]:
    """(init_buffer, term_buffer, base_window) as Stan's `set_window_params` sets them:
    the 15% / 75% / 10% split when the three do not fit in num_warmup."""
    if init_buffer + base_window + term_buffer > num_warmup:
        init_buffer = int(0.15 * num_warmup)
        term_buffer = int(0.10 * num_warmup)
        base_window = num_warmup - (init_buffer + term_buffer)
    return init_buffer, term_buffer, base_window


def build_schedule(num_warmup: int, init_buffer: int = INIT_BUFFER,
                   term_buffer: int = TERM_BUFFER,
                   base_window: int = BASE_WINDOW) -> list[tuple[int, int]]:
    """The slow windows [start, end) of Stan's `windowed_adaptation`: the first is
    base_window long after the initial buffer; each next one is twice the last, and a window
    is stretched to num_warmup − term_buffer when the one after it would not fit
    (`compute_next_window`). Empty for num_warmup < 20."""
    if num_warmup < MIN_WARMUP_FOR_METRIC:
        return []
    init_buffer, term_buffer, base_window = stan_buffers(
        num_warmup, init_buffer, term_buffer, base_window)
    last = num_warmup - term_buffer - 1  # last slow iteration
    size, start, end = base_window, init_buffer, init_buffer + base_window - 1
    windows = []
    while True:
        windows.append((start, end + 1))
        if end >= last:
            return windows
        size *= 2  # compute_next_window: adapt_window_size_ *= 2
        nxt = end + size
        if nxt != last and nxt + 2 * size >= num_warmup - term_buffer:
            nxt = last  # the following window would overtake: stretch this one
        start, end = end + 1, nxt


def stage_array(num_warmup: int, **buffers) -> np.ndarray:
    """Per-iteration stages for reading and plotting: 0 fast, 1 slow, 2 end of a slow window."""
    stages = np.zeros(num_warmup, np.int8)
    for start, end in build_schedule(num_warmup, **buffers):
        stages[start:end] = 1
        stages[end - 1] = 2
    return stages


# ---------------------------------------------------------------------------------------
# Stan's step-size heuristic
# ---------------------------------------------------------------------------------------
def one_step_log_accept(key, state, logdensity_fn: Callable, step_size, inverse_mass_matrix):
    """H₀ − H after one leapfrog step from `state` with fresh momentum (NaN → −∞)."""
    metric = bj_metrics.default_metric(inverse_mass_matrix)
    momentum = metric.sample_momentum(key, state.position)
    z0 = bj_integrators.IntegratorState(state.position, momentum, state.logdensity,
                                        state.logdensity_grad)
    z1 = bj_integrators.velocity_verlet(logdensity_fn, metric.kinetic_energy)(z0, step_size)
    h0 = -z0.logdensity + metric.kinetic_energy(z0.momentum)
    h1 = -z1.logdensity + metric.kinetic_energy(z1.momentum)
    log_accept = h0 - h1
    return jnp.where(jnp.isnan(log_accept), -jnp.inf, log_accept)


def init_stepsize(key, state, logdensity_fn: Callable, step_size, inverse_mass_matrix,
                  active=True, max_trials: int = HEURISTIC_MAX_TRIALS):
    """Stan `base_hmc::init_stepsize` (Hoffman & Gelman 2014, Alg. 4, FindReasonableEpsilon, with
    threshold 0.8). Trial i draws fresh momentum with key fold_in(key, i) and takes one
    leapfrog step at the current ε:

      trial 0: direction = +1 if ΔH > log 0.8 else −1       (Stan: first evolve)
      trial i ≥ 1: stop if the trial crossed log 0.8 against the direction,
                   else ε ← 2^direction ε                    (Stan: while (1) { ... })

    so the returned ε crossed the threshold and the ε of the previous trial did not.
    Returns (ε, number of trials). With `active` false no trial runs (no gradient cost even
    under vmap, where a batched `lax.cond` would run both branches)."""
    log_target = math.log(HEURISTIC_ACCEPT)
    step_size = jnp.asarray(step_size)
    tiny = jnp.finfo(step_size.dtype).tiny

    def trial(carry):
        i, eps, direction, _ = carry
        dh = one_step_log_accept(jax.random.fold_in(key, i), state, logdensity_fn, eps,
                                 inverse_mass_matrix)
        up = dh > log_target
        first_direction = jnp.where(up, 1, -1)
        crossed = jnp.where(direction == 1, ~up, ~(dh < log_target))
        done = (i > 0) & crossed
        direction = jnp.where(i == 0, first_direction, direction)
        grow = (i > 0) & ~done
        eps = jnp.where(grow, eps * jnp.where(direction == 1, 2.0, 0.5).astype(eps.dtype), eps)
        return i + 1, eps, direction, done

    def keep_going(carry):
        i, eps, _, done = carry
        return (active & ~done & (i < max_trials) & jnp.isfinite(eps)
                & (eps <= HEURISTIC_MAX_STEP) & (eps > tiny))

    i, eps, _, _ = jax.lax.while_loop(
        keep_going, trial, (jnp.asarray(0, jnp.int32), step_size, jnp.asarray(0, jnp.int32),
                            jnp.asarray(False)))
    return eps, i


# ---------------------------------------------------------------------------------------
# The adapter
# ---------------------------------------------------------------------------------------
class WindowAdaptState(NamedTuple):
    """One chain's warm-up state. Flat: the driver saves and restores it field by field."""

    da_count: jax.Array  # dual averaging (adaptation.dual_averaging.DualAveragingState)
    da_s_bar: jax.Array
    da_x: jax.Array
    da_x_bar: jax.Array
    da_mu: jax.Array
    w_count: jax.Array  # Welford: samples in the current slow window
    w_mean: jax.Array  # (d,)
    w_m2: jax.Array  # (d,) or (d, d)
    slow_start: jax.Array  # the schedule, as data: slow iterations are [slow_start, slow_stop)
    slow_stop: jax.Array
    window_ends: jax.Array  # (MAX_WINDOWS,): last iteration of each slow window, −1 padded
    last_iter: jax.Array  # num_warmup − 1: the update that hands over ε = e^{x̄}


def _da_state(s: WindowAdaptState) -> da.DualAveragingState:
    return da.DualAveragingState(s.da_count, s.da_s_bar, s.da_x, s.da_x_bar, s.da_mu)


def _with_da(s: WindowAdaptState, d: da.DualAveragingState) -> WindowAdaptState:
    return s._replace(da_count=d.count, da_s_bar=d.s_bar, da_x=d.x, da_x_bar=d.x_bar,
                      da_mu=d.mu)


def window_adaptation(
    target_accept: float = da.TARGET_ACCEPT,
    gamma: float = da.GAMMA,
    kappa: float = da.KAPPA,
    t0: float = da.T0,
    init_buffer: int = INIT_BUFFER,
    term_buffer: int = TERM_BUFFER,
    base_window: int = BASE_WINDOW,
) -> Adapter:
    """Stan's warm-up as an `Adapter` (registered as "window"); options as in CmdStan's
    `adapt delta= gamma= kappa= t0= init_buffer= term_buffer= window=`.

    Longer than most functions here because `init` and `update` are closures over the checked
    options; `update` reads top to bottom as Stan's `adapt_diag_e_nuts::transition`."""
    da.check_options(target_accept, gamma, kappa, t0)
    for name, v in (("init_buffer", init_buffer), ("term_buffer", term_buffer),
                    ("base_window", base_window)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise BomcmcError(f"{name} must be a non-negative integer, got {v!r}")
    if base_window < 1:
        raise BomcmcError("base_window must be at least 1")
    buffers = dict(init_buffer=int(init_buffer), term_buffer=int(term_buffer),
                   base_window=int(base_window))

    def init(position, knobs, num_warmup: int) -> WindowAdaptState:
        windows = build_schedule(int(num_warmup), **buffers)
        if len(windows) > MAX_WINDOWS:
            raise BomcmcError(f"{len(windows)} slow windows exceed {MAX_WINDOWS}")
        ends = np.full(MAX_WINDOWS, -1, np.int32)
        ends[: len(windows)] = [end - 1 for _, end in windows]
        slow = (windows[0][0], windows[-1][1]) if windows else (0, 0)
        inv_mass = knobs.inverse_mass_matrix
        dtype = inv_mass.dtype
        d0 = da.init(jnp.asarray(knobs.step_size, dtype))  # μ = log(10 ε_initial), as Stan
        i32 = jnp.int32
        return WindowAdaptState(
            da_count=d0.count, da_s_bar=d0.s_bar, da_x=d0.x, da_x_bar=d0.x_bar, da_mu=d0.mu,
            w_count=jnp.asarray(0, i32),
            w_mean=jnp.zeros(inv_mass.shape[:1], dtype),
            w_m2=jnp.zeros(inv_mass.shape, dtype),
            slow_start=jnp.asarray(slow[0], i32), slow_stop=jnp.asarray(slow[1], i32),
            window_ends=jnp.asarray(ends), last_iter=jnp.asarray(int(num_warmup) - 1, i32),
        )

    def update(key, s: WindowAdaptState, t, state, info, knobs, logdensity_fn):
        dtype = s.da_x.dtype
        delta = da.target(target_accept, dtype)

        # every warm-up iteration: dual averaging on this transition's acceptance statistic
        # (Stan adapt_diag_e_nuts::transition: learn_stepsize(nom_epsilon_, accept_stat))
        d = da.update(_da_state(s), info.acceptance_rate, delta, gamma, kappa, t0)
        eps = da.step_size(d)

        # slow iterations feed Welford (windowed_adaptation::adaptation_window → add_sample)
        in_slow = (t >= s.slow_start) & (t < s.slow_stop)
        n, mean, m2 = tree_where(in_slow, welford_update(s.w_count, s.w_mean, s.w_m2,
                                                     state.position.astype(dtype)),
                             (s.w_count, s.w_mean, s.w_m2))

        # end of a slow window (end_adaptation_window): new metric, restart Welford,
        # re-initialise ε (init_stepsize) and dual averaging (set_mu(log(10 ε)); restart())
        at_end = jnp.any(s.window_ends == t)
        new_metric = regularized_metric(n, m2)
        use_metric = at_end & (n >= 2)  # with < 2 samples keep the metric (stan-dev/stan#3037)
        inv_mass = jnp.where(use_metric, new_metric,
                             jnp.asarray(knobs.inverse_mass_matrix, dtype))
        n, mean, m2 = tree_where(at_end, (jnp.zeros_like(n), jnp.zeros_like(mean),
                                      jnp.zeros_like(m2)), (n, mean, m2))
        eps_heur, _ = init_stepsize(key, state, logdensity_fn, eps, inv_mass, active=at_end)
        eps = jnp.where(at_end, eps_heur, eps)
        d = tree_where(at_end, da.init(eps), d)

        # last warm-up iteration: ε = e^{x̄} (Stan: complete_adaptation). If a window also
        # ends here (term_buffer = 0) keep the heuristic's ε, not e^{x̄} of a fresh restart
        # (which would be e^0 = 1: stan-dev/stan#3023).
        eps = jnp.where((t == s.last_iter) & ~at_end, da.final_step_size(d), eps)

        new_s = _with_da(s, d)._replace(w_count=n, w_mean=mean, w_m2=m2)
        new_knobs = knobs._replace(
            step_size=jnp.asarray(eps, knobs.step_size.dtype),
            inverse_mass_matrix=jnp.asarray(inv_mass, knobs.inverse_mass_matrix.dtype),
        )
        return new_s, new_knobs

    return Adapter(name="window", init=init, update=update)
