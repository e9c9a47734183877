"""The learned objective of a tuned Intracluster-Move run (Mahendran 2011 Figs 4.3, 4.6,
4.9): the GP mean of h over (γ, k), the settings tried, and the frozen SIR policy's settings
for IMBayesOpt.

    im_state(idata) -> dict | None             the IM tuner's final state, if the run has one
    describe_im_tuning(state) -> str           one line for the command line's summary
    plot_im_surface(idata, "reward_surface.png")
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from ..knob_box import box_from_json, to_knobs, to_search

IM_TUNERS = ("im_bayesopt", "im_bandit")


def im_state(idata) -> dict | None:
    """The final state of an IM tuner (`tuning/im_tuner.py`) from a run's `tuning` group."""
    idata = getattr(idata, "idata", idata)
    if not hasattr(idata, "groups") or "tuning" not in idata.groups():
        return None
    state = json.loads(idata.tuning.attrs.get("tuner_state", "{}"))
    if state.get("name") not in IM_TUNERS or not state.get("gp"):
        return None
    return state


def gamma_of(state: dict, u) -> np.ndarray:
    """γ at points u of the GP's γ axis, from the state's saved box: u itself on a linear
    axis, γ = β + sign(u) s (e^|u| − 1) on one stretched around β (`knob_box.to_knobs`)."""
    box = box_from_json(state["box"])
    g = [to_knobs(box, (x, box.lower[1]))[0] for x in np.ravel(u)]
    return np.reshape(g, np.shape(u))


def axis_of(state: dict, gamma) -> np.ndarray:
    """`gamma_of`'s inverse: where values of γ lie on the GP's γ axis."""
    box = box_from_json(state["box"])
    x = [to_search(box, (g, box.lower[1]))[0] for g in np.ravel(gamma)]
    return np.reshape(x, np.shape(gamma))


def stretched(state: dict) -> bool:
    """Whether the GP searched γ on an axis stretched around β."""
    return box_from_json(state["box"]).warps()[0] is not None


def describe_im_tuning(state: dict) -> str:
    """The tuner, its rewards observed, the best of them and where, and the policy."""
    X = np.asarray(state["gp"]["X"], dtype=float)
    means = np.asarray(state["gp"]["sums"], dtype=float) / np.asarray(state["gp"]["counts"])
    best = int(np.argmax(means))
    line = (f"tuner ({state['name']}): {int(np.sum(state['gp']['counts']))} rewards, best "
            f"{means[best]:.3g} at γ={float(gamma_of(state, X[best, 0])):.3g}, "
            f"k={int(X[best, 1])}")
    policy = state.get("policy")
    if policy:
        line += (f"; frozen policy of {len(policy['k'])} settings ({policy['n_unique']} "
                 f"distinct), mean γ={np.mean(policy['gamma']):.3g}, mean k="
                 f"{np.mean(policy['k']):.3g}")
    return line


def plot_im_surface(idata, path: str | os.PathLike) -> Path:
    """The GP mean of the reward over the (γ, k) box as the run recorded it (Mahendran 2011
    Figs 4.3, 4.6, 4.9), the settings tried, and the frozen policy's settings."""
    from .plots import _names, _pyplot
    from .reward_plots import _attrs, read_surface

    idata = getattr(idata, "idata", idata)
    state = im_state(idata)
    if state is None:
        raise ValueError("no IM tuning recorded in this run (sampler 'im_bayesopt' or "
                         "'im_bandit' records one)")
    surface = read_surface(idata)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    try:
        mesh = ax.pcolormesh(surface["x"], surface["y"], surface["mean"], shading="auto",
                             cmap="viridis")
        fig.colorbar(mesh, ax=ax, label="GP mean of the reward")
        ax.plot(surface["tried_x"], surface["tried_y"], "w.", ms=4, label="settings tried")
        policy = state.get("policy")
        if policy:
            ax.plot(axis_of(state, policy["gamma"]), policy["k"], "r+", ms=5, alpha=0.4,
                    label=f"policy ({policy['n_unique']} distinct of {len(policy['k'])})")
        warped = stretched(state)
        if warped:  # the GP's own axis, labelled in γ
            ticks = np.linspace(surface["x"][0], surface["x"][-1], 7)
            ax.set_xticks(ticks, [f"{g:.3g}" for g in gamma_of(state, ticks)])
        ax.set(xlabel="γ (the GP's axis, stretched around β)" if warped else "γ",
               ylabel="k",
               title=" | ".join(["learned reward surface"] + _names(_attrs(idata))))
        ax.legend(loc="upper right", fontsize=8)
        path = Path(path)
        fig.savefig(path, dpi=110, bbox_inches="tight")
    finally:
        plt.close(fig)
    return path
