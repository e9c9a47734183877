"""The reward surface a GP tuner learned, over its knob box, for the run to record.

`bandit_surface` evaluates the GP's posterior mean and sd on a grid over the box (the first
axis in search coordinates, the integers of the second), with the distinct settings observed
under this GP and the current point; `with_acquisition` adds the acquisition the last proposal
maximised. The driver writes them into the InferenceData group `tuning`, and the plots
(`diagnostics.reward_plots`) draw them without the tuner's code (Wang 2012, Figs 4.1-4.6;
Mahendran 2011, Figs 4.3, 4.6, 4.9).
"""

from __future__ import annotations

import numpy as np

from . import bandit, schedules

SURFACE_X = 120  # points of the grid over the first axis ...
SURFACE_Y = 301  # ... and at most this many over the second (every integer when they fit)

def with_acquisition(surface: dict | None, state: bandit.BanditState,
                     config: bandit.BanditConfig, history: list[dict]) -> dict | None:
    """The surface with the acquisition the last proposal maximised, on the same grid: the
    annealed UCB s·μ + p·√β·σ or EI(s·μ, σ; y* = s·max_j μ(γ_j), ξ), at the last p_i (Wang
    2012, Figs 4.2 and 4.6 draw it below the reward)."""
    if surface is None:
        return None
    from . import acquisition

    gp = state.gp
    p = float(history[-1]["p_i"]) if history else 1.0
    s = bandit.scale(state, config)
    if config.acquisition == "ucb":
        beta = schedules.beta(max(gp.n_obs, 1), d=2, delta=config.delta)
        acq = acquisition.ucb(surface["mean"], surface["sd"], s, p, beta)
    else:
        best = s * float(np.max(gp.mean(gp.X)))
        acq = acquisition.expected_improvement(s * surface["mean"], surface["sd"], best,
                                               config.xi)
    return {**surface, "acquisition": np.asarray(acq, float)}


def bandit_surface(state: bandit.BanditState, nx: int = SURFACE_X,
                   ny: int = SURFACE_Y) -> dict | None:
    """The GP's posterior mean and sd over the box, as `diagnostics.plots` draws it: `nx`
    points over the first axis (search coordinates) × every integer of the second when at
    most `ny` (else `ny` evenly spaced); the distinct points observed under this GP with
    their visit counts; the current point. None without an observation."""
    gp = state.gp
    if gp is None or gp.n_obs == 0:
        return None
    lo, hi = bandit.lower(state.box), bandit.upper(state.box)
    x = np.linspace(lo[0], hi[0], int(nx))
    if state.box.integer[1] and hi[1] - lo[1] < ny:
        y = np.arange(int(lo[1]), int(hi[1]) + 1)
    else:
        y = np.linspace(lo[1], hi[1], int(ny))
    X, Y = np.meshgrid(x, y)
    mean, var = gp.predict(np.column_stack([X.ravel(), Y.ravel()]))
    return {"names": state.box.axis_names(), "x": x, "y": y,
            "mean": mean.reshape(X.shape), "sd": np.sqrt(var).reshape(X.shape),
            "tried_x": gp.X[:, 0].copy(), "tried_y": gp.X[:, 1].copy(),
            "tried_n": gp.counts.copy(), "final": tuple(state.point)}
