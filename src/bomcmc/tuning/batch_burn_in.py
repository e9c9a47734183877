"""Adaptive HMC's batch burn-in (docs/tuning.md, "The batch burn-in"): a `BurnInState` and
functions over it and the bandit's state, held by `ahmc_tuner.AHMCTuner`.

- **Chain groups.** In burn-in the vmapped chains are split into up to BATCH_GROUPS contiguous
  groups of at least MIN_GROUP_CHAINS chains; each runs its own (ε, L) (`points`, one per
  group) and is rewarded on its own chains, so one BO step observes one setting per group.
- **GP-BUCB batches** (Desautels, Krause & Burdick 2014; `gp_bucb`): the first point maximises
  the acquisition; each next one maximises it after the points chosen so far are added to the
  GP as if observed at their posterior mean, which leaves μ unchanged and shrinks σ near them.
- **An L box that grows.** L is capped at STEPS_CAP at first; the cap doubles while the
  incumbent's L is at least GROW_AT/4 of it, up to the box's own bound (`grow_steps`).
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numpy as np

from . import bandit
from .bandit import BanditConfig, BanditState, KnobBox

BATCH_GROUPS = 4  # burn-in: up to 4 groups of chains, each running its own (ε, L)
MIN_GROUP_CHAINS = 2  # ... of at least 2 chains each
STEPS_CAP = 8  # the L box starts at {1..8} and doubles while the incumbent is near its top:
GROW_AT = 3  # ... at L >= GROW_AT/4 of the cap


class BurnInState(NamedTuple):
    """The L cap (None: the whole box), the groups' points (None: one shared setting) and
    Stan's heuristic ε₀ of the current epoch (None: not known), where a batch starts."""

    steps_cap: int | None = None
    points: tuple | None = None
    eps0: float | None = None


def capped_box(box: KnobBox, steps_max: float, cap: int | None) -> KnobBox:
    """The box with L at most `cap` (None: up to `steps_max`, the box's own bound), a float
    as a box read back from JSON holds it (a resumed run's state is then the same text)."""
    hi = float(steps_max if cap is None else min(steps_max, cap))
    return box._replace(upper=(box.upper[0], hi))


def grow_steps(burn: BurnInState, state: BanditState, config: BanditConfig,
               steps_max: float) -> tuple[BurnInState, BanditState, bool]:
    """Double the L cap when the incumbent's L is at least GROW_AT/4 of it: the reward is
    still rising towards the longest trajectories tried, so longer ones may pay; until
    then none beyond the cap is run. The GP is rebuilt over the new box (its length scales
    are 0.2 of the box's range) with every observation kept."""
    if not would_grow(burn, state, steps_max):
        return burn, state, False
    cap = min(math.floor(steps_max), 2 * burn.steps_cap)
    box = capped_box(state.box, steps_max, cap)
    gp = state.gp.copy(lengthscales=bandit.make_gp(box, config).lengthscales)
    return burn._replace(steps_cap=cap), state._replace(box=box, gp=gp), True


def would_grow(burn: BurnInState, state: BanditState, steps_max: float) -> bool:
    """Whether `grow_steps` doubles the cap now: a cap below the box's own bound and an
    incumbent at L >= GROW_AT/4 of it."""
    if burn.steps_cap is None or state.gp is None or state.gp.n_obs == 0:
        return False
    return (burn.steps_cap < math.floor(steps_max)
            and 4 * bandit.incumbent(state)[1] >= GROW_AT * burn.steps_cap)


def gp_bucb(state: BanditState, config: BanditConfig, p: float, n: int,
            region: Callable[[BanditState], tuple]) -> list[tuple]:
    """n points to run side by side, by GP-BUCB (Desautels, Krause & Burdick 2014): the first
    maximises the acquisition over `region(state)` (`bandit.propose`); each next one
    maximises it after the points chosen so far are added as if observed at their
    posterior mean. That leaves μ unchanged and shrinks σ around them, so the batch spreads
    where the GP is unsure instead of repeating one point."""
    points = []
    for j in range(n):
        _, x = bandit.propose(state, config, p, region(state))
        points.append(x)
        if j < n - 1:
            fantasy = state.gp.copy()
            xa = np.asarray(x, dtype=float)
            fantasy.add(xa, float(state.gp.mean(xa[None])[0]))
            state = state._replace(gp=fantasy)
    return points


def groups(batch: int | None, chains: int) -> int:
    """Chain groups in burn-in: `batch` if given, else as many as BATCH_GROUPS allows with
    at least MIN_GROUP_CHAINS chains each (1 below 2·MIN_GROUP_CHAINS chains)."""
    if batch is not None:
        return max(1, min(batch, chains))
    return max(1, min(BATCH_GROUPS, chains // MIN_GROUP_CHAINS))


def group_of(chains: int, n_groups: int) -> np.ndarray:
    """The group of each chain: contiguous blocks, as even as the counts allow."""
    return (np.arange(chains) * n_groups) // chains


def first_batch(burn: BurnInState, box: KnobBox, n_groups: int, start: str) -> list[tuple]:
    """The first points of a fresh GP in batch burn-in: ε at Stan's heuristic ε₀ (the box's
    centre without one) and L spread geometrically over the box's range of L, so the first
    step already sees short and long trajectories at a sensible step size."""
    lo, hi = bandit.lower(box), bandit.upper(box)
    log_eps = math.log(burn.eps0) if burn.eps0 else 0.5 * (lo[0] + hi[0])
    if n_groups == 1:
        return [bandit.start_point(box, start, (math.exp(log_eps), lo[1]))]
    frac = np.arange(n_groups) / (n_groups - 1)
    steps = np.exp(np.log(lo[1]) + frac * (np.log(hi[1]) - np.log(lo[1])))
    return [bandit.snap(box, (log_eps, s)) for s in steps]


def chunk_of(chunk: dict, chains: np.ndarray) -> dict:
    """The chunk restricted to some chains (the leading axis of every array)."""
    def take(a):
        return a[chains] if isinstance(a, np.ndarray) and a.ndim >= 1 else a

    info = chunk["info"]
    if isinstance(info, dict):
        info = {k: take(np.asarray(v)) for k, v in info.items()}
    else:
        info = type(info)(*[take(np.asarray(v)) for v in info])
    return {**chunk, "positions": take(np.asarray(chunk["positions"])),
            "lp": take(np.asarray(chunk["lp"])) if "lp" in chunk else None, "info": info}


def apply_points(knobs, points):
    """Each chain's (ε, L): its group's point."""
    eps = np.asarray(knobs.step_size)
    steps = np.asarray(knobs.num_steps)
    group = group_of(eps.shape[0], len(points))
    e = np.array([math.exp(p[0]) for p in points])[group]
    n = np.array([p[1] for p in points])[group]
    return knobs._replace(step_size=e.astype(eps.dtype).reshape(eps.shape),
                          num_steps=n.astype(steps.dtype).reshape(steps.shape))


def to_json(burn: BurnInState) -> dict:
    return {"steps_cap": burn.steps_cap, "eps0": burn.eps0,
            "points": None if burn.points is None else [list(p) for p in burn.points]}


def from_json(d: dict) -> BurnInState:
    points = d.get("points")
    return BurnInState(steps_cap=d.get("steps_cap"), eps0=d.get("eps0"),
                       points=None if points is None else tuple(
                           (float(a), int(b)) for a, b in points))
