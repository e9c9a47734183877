"""Adaptive HMC's batch burn-in (docs/tuning.md, "The batch burn-in"): a mixin for
`GPBanditTuner` subclasses (`ahmc_tuner.AHMCTuner`).

- **Chain groups.** In burn-in the vmapped chains are split into up to BATCH_GROUPS contiguous
  groups of at least MIN_GROUP_CHAINS chains; each runs its own (ε, L) (`points`, one per
  group) and is rewarded on its own chains, so one BO step observes one setting per group.
- **GP-BUCB batches** (Desautels, Krause & Burdick 2014; `gp_bucb`): the first point maximises
  the acquisition; each next one maximises it after the points chosen so far are added to the
  GP as if observed at their posterior mean, which leaves μ unchanged and shrinks σ near them.
- **An L box that grows.** L is capped at STEPS_CAP at first; the cap doubles while the
  incumbent's L is at least GROW_AT/4 of it, up to the box's own bound.

The mixin expects the tuner's `gp`, `points`, `steps_cap`, `batch`, `eps0`, `eps_bounds`,
`steps_bounds` and the `GPBanditTuner` methods (`incumbent`, `observe`, `propose`,
`_make_gp`, `_snap`, `start_point`).
"""

from __future__ import annotations

import math

import numpy as np

BATCH_GROUPS = 4  # burn-in: up to 4 groups of chains, each running its own (ε, L)
MIN_GROUP_CHAINS = 2  # ... of at least 2 chains each
STEPS_CAP = 8  # the L box starts at {1..8} and doubles while the incumbent is near its top:
GROW_AT = 3  # ... at L >= GROW_AT/4 of the cap


def gp_bucb(tuner, p: float, n: int) -> list[tuple[float, int]]:
    """n points of `tuner` to run side by side, by GP-BUCB (Desautels, Krause & Burdick 2014):
    the first maximises the acquisition (`tuner.propose`); each next one maximises it after
    the points chosen so far are added as if observed at their posterior mean. That leaves μ
    unchanged and shrinks σ around them, so the batch spreads where the GP is unsure instead
    of repeating one point. The tuner's GP is left as it was."""
    real = tuner.gp
    points = []
    try:
        for j in range(n):
            points.append(tuner.propose(p))
            if j < n - 1:
                fantasy = tuner.gp.copy()
                x = np.asarray(points[-1], dtype=float)
                fantasy.add(x, float(tuner.gp.mean(x[None])[0]))
                tuner.gp = fantasy
    finally:
        tuner.gp = real
    return points


class BatchBurnIn:
    """Chain groups with their own (ε, L) in burn-in, GP-BUCB batches and the growing L box
    (module docstring). Put it before `GPBanditTuner` among the bases: it overrides `upper`
    and `_apply`."""

    def set_points(self, points: list[tuple[float, int]]) -> None:
        """The groups' settings; the shared γ (`point`, hence `step_size`, `num_steps` and the
        saved state's "point") stands for the first group's while a batch runs."""
        self.points = list(points)
        self.point = self.points[0]

    def propose_batch(self, p: float, n: int) -> list[tuple[float, int]]:
        """`gp_bucb`: n points for the n groups."""
        return gp_bucb(self, p, n)

    # -- the box, grown in L ---------------------------------------------------------------
    @property
    def upper(self) -> np.ndarray:
        """The box's upper corner, with L at most `steps_cap` while that is below the box's."""
        hi = math.floor(self.steps_bounds[1])
        if self.steps_cap is not None:
            hi = min(hi, self.steps_cap)
        return np.array([math.log(self.eps_bounds[1]), hi])

    def _grow_steps(self) -> bool:
        """Double the L cap when the incumbent's L is at least GROW_AT/4 of it: the reward is
        still rising towards the longest trajectories tried, so longer ones may pay; until
        then none beyond the cap is run. The GP is rebuilt over the new box (its length
        scales are 0.2 of the box's range) with every observation kept."""
        if self.steps_cap is None or self.gp.n_obs == 0:
            return False
        hi = math.floor(self.steps_bounds[1])
        if self.steps_cap >= hi or 4 * self.incumbent()[1] < GROW_AT * self.steps_cap:
            return False
        self.steps_cap = min(hi, 2 * self.steps_cap)
        self.gp = self.gp.copy(lengthscales=self._make_gp().lengthscales)
        return True

    # -- chain groups in burn-in ----------------------------------------------------------
    def groups(self, chains: int) -> int:
        """Chain groups in burn-in: `batch` if given, else as many as BATCH_GROUPS allows
        with at least MIN_GROUP_CHAINS chains each (1 below 2·MIN_GROUP_CHAINS chains)."""
        if self.batch is not None:
            return max(1, min(self.batch, chains))
        return max(1, min(BATCH_GROUPS, chains // MIN_GROUP_CHAINS))

    @staticmethod
    def group_of(chains: int, groups: int) -> np.ndarray:
        """The group of each chain: contiguous blocks, as even as the counts allow."""
        return (np.arange(chains) * groups) // chains

    def first_batch(self, groups: int) -> list[tuple[float, int]]:
        """The first points of a fresh GP in batch burn-in: ε at Stan's heuristic ε₀ (the box's
        centre without one) and L spread geometrically over the box's range of L, so the
        first step already sees short and long trajectories at a sensible step size."""
        lo, hi = self.lower, self.upper
        log_eps = math.log(self.eps0) if self.eps0 else 0.5 * (lo[0] + hi[0])
        if groups == 1:
            return [self.start_point(math.exp(log_eps), lo[1])]
        frac = np.arange(groups) / (groups - 1)
        steps = np.exp(np.log(lo[1]) + frac * (np.log(hi[1]) - np.log(lo[1])))
        return [self._snap((log_eps, s)) for s in steps]

    def _chunk_of(self, chunk: dict, chains: np.ndarray) -> dict:
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

    def _observe_groups(self, chunk: dict) -> list[dict]:
        """One history entry per group, each observing its own chains' reward."""
        if not self.points:
            entry = self.observe(chunk)
            entry["group"] = 0
            return [entry]
        chains = np.asarray(chunk["positions"]).shape[0]
        group = self.group_of(chains, len(self.points))
        entries = []
        for g, point in enumerate(self.points):
            entry = self.observe(self._chunk_of(chunk, np.flatnonzero(group == g)), point)
            entry["group"] = g
            entries.append(entry)
        return entries

    def _apply(self, knobs):
        """Each chain's (ε, L): its group's in batch burn-in, else the shared one."""
        if not self.points:
            return super()._apply(knobs)
        eps = np.asarray(knobs.step_size)
        steps = np.asarray(knobs.num_steps)
        group = self.group_of(eps.shape[0], len(self.points))
        e = np.array([math.exp(p[0]) for p in self.points])[group]
        n = np.array([p[1] for p in self.points])[group]
        return knobs._replace(step_size=e.astype(eps.dtype).reshape(eps.shape),
                              num_steps=n.astype(steps.dtype).reshape(steps.shape))
