"""A ceiling on the step size after divergences (beyond the paper; docs/tuning.md, "Robust
defaults"): a `CeilingState` and functions over it, held by `ahmc_tuner.AHMCTuner`.

The ESJD reward scores a super-transition with a divergence 0 (`rewards.esjd`), but the
GP smooths that 0 over a length scale of a fifth of the box (a factor 2.5 in ε on the
default box), so the bandit's incumbent and its proposals can sit right below, or even
above, a step size that diverged: on two logistic regressions at the defaults, sampling
diverged at 0.81–0.95 of the smallest ε that had diverged in the last burn-in epoch
(docs/tuning.md). A divergence is a rare event, not a sharp edge: the chains of one
super-transition visit part of the posterior only, and the leapfrog integrator is
unstable where the posterior's curvature exceeds 4/ε² (a Gaussian of sd σ needs ε < 2σ,
Neal 2011 §4.2; Betancourt 2017), somewhere the chains may reach later. So after burn-in
the tuner keeps

    ε ≤ ceiling = margin × ε_div,    ε_div the smallest ε that diverged under this metric,

for its proposals (`region`), for the setting sampling starts from and for the setting it
runs on after a divergence (`safe_point`). Every divergence of the sampling phase lowers
ε_div to its own ε, so a setting that diverges is left at once and each further
divergence costs at least a factor `margin` in ε. ε_div is recorded from the start of the
run and forgotten at each metric update (ε is measured in the metric's units).
Divergences of burn-in steer nothing before it ends: burn-in's exploration, and hence the
warm-up's cost, is the paper's. No margin makes a divergence impossible (a chain may yet
reach a region more curved than any seen); the ceiling bounds how often it recurs.

The state is computed from each super-transition's `diverging` flags of every chain
(gathered from every process) and saved with the tuner's state, so every process and a
resumed run keep the same ceiling.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from . import bandit
from .rewards import any_divergence

MARGIN = 0.8  # the ceiling: a fifth below the smallest step size that diverged


class CeilingState(NamedTuple):
    """`eps`: the smallest step size that diverged under the current metric (None: none)."""

    eps: float | None = None


def observed(state: CeilingState, eps: float, chunk: dict) -> CeilingState:
    """The state after a super-transition run at step size `eps`."""
    if not any_divergence(chunk) or not math.isfinite(eps):
        return state
    return CeilingState(eps if state.eps is None else min(state.eps, float(eps)))


def ceiling(state: CeilingState, margin: float | None) -> float | None:
    """margin × ε_div, in ε's own units; None without a divergence or a margin."""
    if state.eps is None or not margin:
        return None
    return float(margin) * state.eps


def _top(box: bandit.KnobBox, state: CeilingState, margin) -> float | None:
    """The ceiling in the box's search coordinates (log ε); None when it does not apply."""
    top = ceiling(state, margin)
    if top is None or box is None or box.names[0] != "step_size":
        return None
    return math.log(top) if box.log[0] else top


def region(lo, hi, box: bandit.KnobBox, state: CeilingState, margin):
    """The search region (lo, hi) with ε at most the ceiling (the region keeps at least its
    lowest ε when the ceiling is below it)."""
    top = _top(box, state, margin)
    if top is None:
        return lo, hi
    hi = np.array(hi, dtype=float)
    hi[0] = max(min(hi[0], top), lo[0])
    return lo, hi


def safe_point(box: bandit.KnobBox, point, state: CeilingState, margin) -> tuple:
    """`point` with its ε lowered to the ceiling where it is above (its L kept; snapped to
    the box): the least change to the bandit's choice that obeys the ceiling. (The GP's
    mean cannot choose among safe settings: it is pulled towards its prior, 0, away from
    the points observed, so it prefers any observed point to one just below the ceiling.)"""
    top = _top(box, state, margin)
    if top is None or point is None or point[0] <= top:
        return point
    return bandit.snap(box, (top, *point[1:]))


def to_json(state: CeilingState) -> dict:
    return {"divergence_ceiling": {"eps": state.eps}}


def from_json(d: dict) -> CeilingState:
    """`to_json`'s inverse; a state saved without one has seen no divergence."""
    return CeilingState((d.get("divergence_ceiling") or {}).get("eps"))
