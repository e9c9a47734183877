"""The test for a hard boundary (`driver/boundary.py`) finds the walls a log density is written
with, on the side they are, and nothing on densities whose support is unbounded: a Gaussian,
a Student-t with 3 degrees of freedom (tails far past its draws' sd), Neal's funnel (the
curvature its divergences come from). The draws are exact draws of each density."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from bomcmc.driver import boundary
from bomcmc.posterior import Posterior, flatten

N = (4, 2000)  # chains, draws


def _found(logdensity, init: dict, draws: np.ndarray, diverging=None) -> set:
    flat = flatten(Posterior(logdensity, init))
    return {(b["name"], b["side"])
            for b in boundary.boundaries(flat, draws, diverging, seed=0)}


def test_a_half_normal_written_with_a_wall_has_it_below():
    draws = np.abs(np.random.default_rng(0).normal(size=N + (1,)))
    found = _found(lambda p: jnp.where(p["x"] > 0, -0.5 * p["x"] ** 2, -jnp.inf),
                   {"x": np.array(1.0)}, draws)
    assert found == {("x", "below")}


def test_a_box_has_every_side_and_a_log_of_a_negative_counts():
    rng = np.random.default_rng(1)
    draws = np.concatenate([rng.uniform(size=N + (2,)), rng.gamma(2.0, size=N + (1,))], -1)

    def logdensity(p):
        b = p["b"]
        box = jnp.where(jnp.all((b > 0) & (b < 1)), 0.0, -jnp.inf)
        return box + jnp.log(p["g"][0]) - p["g"][0]  # log of a negative: NaN

    found = _found(logdensity, {"b": np.full(2, 0.5), "g": np.ones(1)}, draws)
    assert found == {("b[0]", "below"), ("b[0]", "above"), ("b[1]", "below"),
                     ("b[1]", "above"), ("g[0]", "below")}


@pytest.mark.parametrize("name", ["gaussian", "student-t", "funnel"])
def test_an_unbounded_support_has_none(name):
    rng = np.random.default_rng(2)
    if name == "gaussian":
        draws = rng.normal(size=N + (3,)) * np.array([1e-3, 1.0, 1e3])
        fn = lambda p: -0.5 * jnp.sum((p["x"] / jnp.array([1e-3, 1.0, 1e3])) ** 2)  # noqa: E731
    elif name == "student-t":
        draws = rng.standard_t(3, size=N + (3,))
        fn = lambda p: -2.0 * jnp.sum(jnp.log1p(p["x"] ** 2 / 3))  # noqa: E731
    else:  # v ~ N(0, 3²), x_i | v ~ N(0, e^v)
        v = 3 * rng.normal(size=N + (1,))
        draws = np.concatenate([v, rng.normal(size=N + (9,)) * np.exp(v / 2)], -1)
        fn = lambda p: (-p["x"][0] ** 2 / 18 - 4.5 * p["x"][0]  # noqa: E731
                        - 0.5 * jnp.sum(p["x"][1:] ** 2) * jnp.exp(-p["x"][0]))
    diverging = rng.uniform(size=N) < 0.01  # divergent draws are probed too
    assert _found(fn, {"x": np.zeros(draws.shape[-1])}, draws, diverging) == set()


def test_the_probes_stay_within_their_budget_and_step_outwards():
    rng = np.random.default_rng(3)
    draws = rng.normal(size=(2, 500, 3000))  # 3000 coordinates: their extremes fill it
    points, coord, side = boundary.probes(draws, rng.uniform(size=(2, 500)) < 0.1, seed=0)
    assert len(points) <= boundary.MOST_POINTS
    rows = draws.reshape(-1, 3000)
    lo, hi = rows.min(0), rows.max(0)
    moved = points[np.arange(len(coord)), coord]
    assert np.all(np.where(side < 0, moved < lo[coord], moved > hi[coord]))
    points, coord, _ = boundary.probes(draws[..., :10], np.ones((2, 500), bool), seed=0)
    assert len(points) == 2 * 10 * (1 + len(boundary.DIVERGENT_STEPS) * boundary.DIVERGENT_DRAWS)
