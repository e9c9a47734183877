"""When adaptive HMC's burn-in has learned what it can (docs/warmup.md, "A warm-up that
stops when it has learned"): a `SettleState` and functions over it, held by
`ahmc_tuner.AHMCTuner` when the run's warm-up is "auto".

Burn-in learns two things, the metric M⁻¹ and the bandit's incumbent (ε, L). It may end
after BO step i, before the cap of k steps, when all of these hold:

1. **the metric has settled**: no metric window is left to run (i ≥ the last window's end),
   and the last update moved M⁻¹ by a relative change δ < `metric_change`, δ the root mean
   square of the centred logarithms of the generalised eigenvalues λ_j of (M⁻¹_new,
   M⁻¹_old) (`learned_metric.metric_change`; an update moves M⁻¹ only as far as its
   window's noise allows, `learned_metric.shrink_weight`). HMC's cost per independent
   draw on a Gaussian grows with the spread of the λ_j of the metric-scaled covariance (√κ
   for the trajectory, Neal 2011 §4.2), so δ measures how far the old metric was from the
   new estimate in the sense sampling feels; the common scale (the mean log λ) is ε's
   business and is left out.
2. **the incumbent has settled**: at least `min_steps` BO steps have been observed by the
   bandit's GP (reset at a metric update unless the update barely moved M⁻¹,
   `learned_metric.keeps_rewards`), `window` of them under the final metric, and the
   incumbent's predicted reward, max over the observed points of the GP's posterior mean,
   changed by at most `gain` (relative, either way) over the last `window` BO steps. The
   reward is what sampling will earn per transition at the incumbent: a reward that still
   rises is a bandit still finding better settings, and one that falls is a bandit finding
   that its best setting was overrated, whose incumbent may yet move. The adaptation goes on in
   sampling with a vanishing probability (Wang, Mohamed & de Freitas 2013 §4), from a GP
   whose data then depend on the chains' states; a GP of few observations moves more with
   each, so the minimum is not small (with 10 steps and a one-sided test, two of three
   runs on logistic-australian ended with divergences, one with a mean 5 MCSE off the
   reference; docs/warmup.md).
3. **no divergence lately**: no transition of any chain diverged in the last `window` BO
   steps. The ESJD reward scores a divergent super-transition 0, so divergences are how
   the bandit learns where ε becomes unstable; while they still occur it is still
   learning that edge, and the incumbent it would hand to sampling may sit on it.
4. **the L box has stopped growing**: the incumbent's L is below the point at which
   `batch_burn_in.grow_steps` doubles the cap, or the cap is the box's own bound: else the
   bandit has not yet tried the longer trajectories it is about to open.

Every quantity is the tuner's own state, computed from the rewards and the Welford sums of
every chain (gathered from every process), so every process takes the same decision, and a
resumed run, which rebuilds the tuner from the last chunk's state, takes it at the same step.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .rewards import any_divergence

MIN_STEPS = 20  # BO steps under the final metric before the test may fire
WINDOW = 10  # the incumbent's predicted reward is compared with its value 10 BO steps ago
GAIN = 0.05  # ... and must be within 5 % of it
METRIC_CHANGE = 0.3  # δ of the last metric update below this: the metric has settled


class SettleRule(NamedTuple):
    """The stopping test's constants (module docstring)."""

    min_steps: int = MIN_STEPS
    window: int = WINDOW
    gain: float = GAIN
    metric_change: float = METRIC_CHANGE


class SettleState(NamedTuple):
    """The incumbent's predicted reward after each BO step of the bandit's current epoch
    (since its GP was last reset), δ of the last metric update (None: none yet), the warm-up
    transitions seen, the BO steps since the last divergence, the stop once decided
    ({"bo_step", "transitions", "reason"}), and the BO steps run under the current metric
    (as many as the trace holds unless a metric update kept the GP)."""

    trace: tuple = ()
    metric_change: float | None = None
    transitions: int = 0
    stop: dict | None = None
    calm: int = 0
    under: int = 0


def new_epoch(state: SettleState, change: float | None, kept: bool = False) -> SettleState:
    """After a metric update of relative change `change`: the trace starts again unless the
    update `kept` the bandit's GP (`learned_metric.keeps_rewards`), whose incumbent's
    predicted reward then goes on; the steps under the metric start again either way."""
    return state._replace(trace=state.trace if kept else (), metric_change=change, under=0)


def observed(state: SettleState, predicted: float, transitions: int,
             diverged: bool = False) -> SettleState:
    """After a BO step of `transitions` warm-up transitions that kept the metric: the
    incumbent's predicted reward appended, the step counted."""
    return counted(state, transitions, diverged)._replace(
        trace=state.trace + (float(predicted),), under=state.under + 1)


def counted(state: SettleState, transitions: int, diverged: bool = False) -> SettleState:
    """A BO step's transitions counted, and whether any of them diverged."""
    return state._replace(transitions=state.transitions + int(transitions),
                          calm=0 if diverged else state.calm + 1)


def settled(rule: SettleRule, state: SettleState, *, metric_done: bool, learns_metric: bool,
            growing: bool) -> str | None:
    """The reason burn-in may stop now, or None: `metric_done` when no metric window is
    left, `learns_metric` when the run learns one at all (else test 1 holds trivially),
    `growing` when the L cap would still grow."""
    if not metric_done or growing or len(state.trace) < max(rule.min_steps, rule.window + 1) \
            or min(state.calm, state.under) < rule.window:
        return None
    if learns_metric and not (state.metric_change is not None
                              and state.metric_change < rule.metric_change):
        return None
    now, before = state.trace[-1], state.trace[-1 - rule.window]
    if not (math.isfinite(now) and math.isfinite(before) and before > 0):
        return None
    rise = now / before - 1.0
    if abs(rise) > rule.gain:
        return None
    change = ("no metric learned" if not learns_metric
              else f"metric change {state.metric_change:.3f} < {rule.metric_change}")
    return (f"settled: incumbent's predicted reward changed {100 * rise:+.1f}% over the last "
            f"{rule.window} BO steps (at most ±{100 * rule.gain:g}%), {change}, "
            f"{len(state.trace)} BO steps of the bandit's GP, {state.under} under the final "
            f"metric, no divergence in the last {state.calm}, L cap not growing")


def end_step(state: SettleState, cap: int) -> int:
    """The BO step at which burn-in ends: `cap`, or the step at which it settled."""
    return cap if state.stop is None else int(state.stop["bo_step"])


def end_transitions(state: SettleState) -> int | None:
    """The warm-up transitions after which burn-in settled; None: it has not."""
    return None if state.stop is None else int(state.stop["transitions"])


def metric_settled(rule: SettleRule | None, state: SettleState) -> bool:
    """Whether the last metric update moved M⁻¹ by less than the rule's δ: then no further
    metric window is run, and the epoch now running is the final one."""
    change = state.metric_change
    return rule is not None and change is not None and change < rule.metric_change


def after_step(rule: SettleRule, state: SettleState, *, i: int, chunk: dict, updated: bool,
               predicted: float, cap: int, windows: list[int], growing: bool) -> SettleState:
    """The state after warm-up BO step i, the `chunk` the tuner saw (every chain): its
    transitions and divergences counted, the incumbent's `predicted` reward appended
    unless the step `updated` the metric (the update then starts the trace again,
    `new_epoch`), and `stop` set where the test (`settled`) fires before the `cap`-th
    step; `windows` the metric's window bounds (`learned_metric.windows`; none: no metric
    is learned)."""
    if state.stop is not None:
        return state
    transitions = np.asarray(chunk["positions"]).shape[1]
    diverged = any_divergence(chunk)
    if updated:
        return counted(state, transitions, diverged)
    state = observed(state, predicted, transitions, diverged)
    done = not windows or i >= windows[-1] or metric_settled(rule, state)
    reason = None if i >= cap else settled(rule, state, metric_done=done,
                                           learns_metric=bool(windows), growing=growing)
    if reason is None:
        return state
    return state._replace(stop={"bo_step": int(i), "transitions": state.transitions,
                                "reason": reason})


def report(state: SettleState, cap: int) -> dict:
    """How burn-in ended, for run.json: where it settled, or the cap."""
    if state.stop is not None:
        return dict(state.stop)
    return {"bo_step": int(cap), "transitions": state.transitions,
            "reason": f"cap: the {cap} BO steps of the warm-up ran out before the metric "
                      "and the incumbent settled"}


def to_json(state: SettleState) -> dict:
    return {"settle": {"trace": list(state.trace), "metric_change": state.metric_change,
                       "transitions": int(state.transitions), "stop": state.stop,
                       "calm": int(state.calm), "under": int(state.under)}}


def from_json(d: dict) -> SettleState:
    s = d.get("settle") or {}
    return SettleState(trace=tuple(float(v) for v in s.get("trace", ())),
                       metric_change=s.get("metric_change"),
                       transitions=int(s.get("transitions", 0)), stop=s.get("stop"),
                       calm=int(s.get("calm", 0)),
                       under=int(s.get("under", len(s.get("trace", ())))))
