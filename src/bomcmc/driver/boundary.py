"""Where a posterior's log density stops being finite just beyond its draws: a hard boundary.

A log density written with a wall (`jnp.where(x > 0, ..., -jnp.inf)`, a box, a log of a
negative number) gives every Hamiltonian trajectory that crosses the wall an end where the
density is zero or NaN. NUTS counts it as a divergence, and so does the HMC family where the
end is NaN (`kernels/hmc.py`, `beyond_a_wall`). The transition is rejected, so the draws stay
correct, but the trajectory is wasted, and no step size removes the wall. Sampling an
unconstrained transform does (log(x − a) for x > a, a scaled logit for a < x < b, with the
transform's log-Jacobian added), as Stan and NumPyro do for every constrained parameter (Stan,
*Reference Manual*, "Constraint transforms").

The test, run after a run with divergences (`driver.assemble`): from the draw with each
coordinate's smallest value, and from the one with its largest, step outwards along that
coordinate by STEP of the coordinate's posterior sd; from up to DIVERGENT_DRAWS divergent
draws, step both ways along every coordinate by each of DIVERGENT_STEPS sds (a divergent
trajectory may have started further from the wall than the extremes are, in chains that
explored little). A coordinate where the log density is -inf or NaN at such a point has a
boundary on that side. A density with unbounded support is finite a few sds from its draws
(its log density drops by tens of units there at most, far from float32's range), so the
test does not flag the curvature a funnel's divergences come from.
"""

from __future__ import annotations

import numpy as np

from ..config import Latest
from ..diagnostics.checks import coordinate_labels

STEP = 0.5  # the outward step from the extremes, in posterior sds of the coordinate
DIVERGENT_STEPS = (0.5, 2.0)  # the steps from divergent draws, in the same units
MOST_POINTS = 4096  # log-density evaluations per run at most
BATCH = 512  # evaluated this many at a time, one compiled shape
DIVERGENT_DRAWS = 8  # divergent draws probed along every coordinate, at most
PROGRAMS = Latest(4)  # the batched log density of the latest posteriors probed


def probes(positions: np.ndarray, diverging: np.ndarray | None, seed: int = 0):
    """(points (P, dim), coordinate (P,), side (P,): −1 below, +1 above) to test, at most
    MOST_POINTS: the extremes of up to MOST_POINTS / 2 coordinates (chosen at random beyond
    that), then divergent draws along every coordinate probed, while the budget lasts."""
    rows = positions.reshape(-1, positions.shape[-1]).astype(np.float64)
    sd = rows.std(axis=0)
    rng = np.random.default_rng(seed)
    coords = np.flatnonzero(sd > 0)  # a constant coordinate has no scale to step by
    if 2 * coords.size > MOST_POINTS:
        coords = np.sort(rng.choice(coords, MOST_POINTS // 2, replace=False))
    starts = [rows[np.argmin(rows[:, coords], axis=0)], rows[np.argmax(rows[:, coords], axis=0)]]
    sides = [-np.ones(coords.size), np.ones(coords.size)]
    index = [coords, coords]
    div = (np.flatnonzero(np.asarray(diverging).reshape(-1)) if diverging is not None
           else np.zeros(0, int))
    steps = [np.full(2 * coords.size, STEP)]
    per_draw = 2 * len(DIVERGENT_STEPS) * coords.size
    room = (MOST_POINTS - 2 * coords.size) // max(per_draw, 1)
    for r in rng.permutation(div)[: min(DIVERGENT_DRAWS, room)]:
        for s in (-1.0, 1.0):
            for h in DIVERGENT_STEPS:
                starts.append(np.repeat(rows[r][None], coords.size, axis=0))
                sides.append(np.full(coords.size, s))
                index.append(coords)
                steps.append(np.full(coords.size, h))
    coord, side = np.concatenate(index), np.concatenate(sides)
    points = np.concatenate(starts)
    points[np.arange(len(coord)), coord] += side * np.concatenate(steps) * sd[coord]
    return points, coord, side


def boundaries(flat, positions: np.ndarray, diverging: np.ndarray | None,
               seed: int = 0) -> list[dict]:
    """Each boundary found (`probes`) as {"name", "side": "below" or "above", "draws_reach":
    the draws' smallest or largest value, beyond which the boundary lies}. [] where the log
    density is finite at every probe."""
    import jax

    from ..data import jit as data_jit

    points, coord, side = probes(positions, diverging, seed)
    if not len(points):
        return []
    data = flat.source.data  # by identity, as the engine keeps its programs
    f = PROGRAMS.get_or_build(("boundary", id(flat.logdensity_fn), id(data)),
                              lambda: data_jit(jax.vmap(flat.logdensity_fn), data),
                              (flat.logdensity_fn, data))
    finite = np.ones(len(points), bool)
    dtype = np.asarray(positions).dtype
    for i in range(0, len(points), BATCH):
        chunk = points[i : i + BATCH]
        pad = BATCH - len(chunk)
        if pad:
            chunk = np.concatenate([chunk, np.repeat(chunk[-1:], pad, axis=0)])
        finite[i : i + BATCH] = np.isfinite(np.asarray(f(chunk.astype(dtype))))[: BATCH - pad]
    names = [label for name, shape in zip(flat.var_names, flat.var_shapes)
             for label in coordinate_labels(name, shape)]
    rows = positions.reshape(-1, positions.shape[-1])
    found = sorted({(int(c), float(s)) for c, s in zip(coord[~finite], side[~finite])})
    return [{"name": names[c], "side": "below" if s < 0 else "above",
             "draws_reach": float(rows[:, c].min() if s < 0 else rows[:, c].max())}
            for c, s in found]
