"""The reward surface a tuned run learned, drawn from what the run recorded.

A tuner that learns a reward surface (the GP bandits of adaptive HMC, Wang 2012; the IM
tuners, Mahendran 2011) gives the driver its GP's posterior mean and sd over a grid of its knob
box at the end of a run (`Tuner.surface`), and the driver writes them into the InferenceData
group `tuning` as the `surface_*` variables. These plots read only that group, so they need
none of the tuner's code:

    plot_reward_surface(idata, "reward_surface.png")  # GP mean over the box, tried settings
    plot_reward_slice(idata, "reward_slice.png")      # one row or column of it: mean ± 2 sd,
                                                      # the rewards on it, the acquisition

(Wang 2012, Figs 4.1/4.4 and 4.2/4.6; Mahendran 2011, Figs 4.3, 4.6 and 4.9). A dict as
`Tuner.surface()` returns it works in place of a run.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np

# How each knob axis is labelled and drawn: (label, drawn on a log scale from its log)
AXES = {"log_step_size": ("step size {sym} (log scale)", True),
        "num_steps": ("trajectory length L (maximum)", False),
        "gamma": ("γ", False), "k": ("k", False)}


def read_surface(source) -> dict:
    """The recorded surface of a run (an InferenceData or a `SampleResult`), as the dict
    `Tuner.surface()` returns: names, x, y, mean, sd, tried_x, tried_y, tried_n, final."""
    if isinstance(source, dict):
        return source
    ds = _tuning_group(source)
    if ds is None or "surface_mean" not in ds:
        raise ValueError("no reward surface recorded in this run (a tuned sampler such as "
                         "'ahmc', 'armhmc', 'im_bayesopt' or 'im_bandit' records one)")
    out = {"names": tuple(str(ds.attrs["surface_names"]).split(",")),
           "final": tuple(json.loads(str(ds.attrs["surface_final"])))}
    for key in ("x", "y", "mean", "sd", "tried_x", "tried_y", "tried_n", "acquisition"):
        if f"surface_{key}" in ds.variables:
            out[key] = np.asarray(ds[f"surface_{key}"].values)
    return out


def _tuning_group(source):
    idata = getattr(source, "idata", source)  # a SampleResult works too
    groups = idata.groups() if callable(getattr(idata, "groups", None)) else ()
    return idata.tuning if "tuning" in groups else None


def _history(source) -> list[dict]:
    """The tuner's history rows (one per observation) of a run, [] for a dict source."""
    ds = None if isinstance(source, dict) else _tuning_group(source)
    if ds is None or "step" not in ds.sizes:
        return []
    cols = {k: np.asarray(ds[k].values) for k in ds.data_vars if ds[k].dims == ("step",)}
    rows = []
    for j in range(ds.sizes["step"]):
        row = {k: v[j].item() for k, v in cols.items()}
        rows.append({k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                     for k, v in row.items()})
    return rows


def _attrs(source) -> dict:
    if isinstance(source, dict):
        return {}
    post = getattr(getattr(source, "idata", source), "posterior", None)
    return dict(post.attrs) if post is not None else {}


def _axis(name: str, values, sym: str):
    """(values as drawn, label, log scale) of a knob axis."""
    label, log = AXES.get(name, (name, False))
    values = np.asarray(values, dtype=float)
    return (np.exp(values) if log else values), label.format(sym=sym), log


def _title(source, what: str, history: list[dict]) -> str:
    from .plots import _names

    parts = [what, *_names(_attrs(source))]
    if history and "i" in history[0]:
        parts.append(f"{len({h['i'] for h in history})} BO steps")
    return " | ".join(parts)


def _symbol(source) -> str:
    from .plots import _step_symbol

    return _step_symbol(_attrs(source))


def plot_reward_surface(source, path: str | os.PathLike) -> Path:
    """The GP posterior mean of the reward over the knob box, the settings tried under the
    current GP as dots (area ∝ visits) and the final setting as a star."""
    from .plots import _pyplot

    s = read_surface(source)
    sym = _symbol(source)
    x, xlabel, xlog = _axis(s["names"][0], s["x"], sym)
    y, ylabel, _ = _axis(s["names"][1], s["y"], sym)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 5.2), layout="constrained")
    try:
        cs = ax.contourf(*np.meshgrid(x, y), np.asarray(s["mean"]), levels=30, cmap="viridis")
        fig.colorbar(cs, ax=ax, label="GP posterior mean of the reward")
        n = np.asarray(s.get("tried_n", []), float)
        if n.size:
            tx, _, _ = _axis(s["names"][0], s["tried_x"], sym)
            ty, _, _ = _axis(s["names"][1], s["tried_y"], sym)
            ax.scatter(tx, ty, s=12 + 10 * np.sqrt(n), facecolor="white", edgecolor="black",
                       lw=0.6, alpha=0.85, label=f"tried ({int(n.sum())} observations, "
                                                 f"{n.size} settings)")
        fx, _, _ = _axis(s["names"][0], [s["final"][0]], sym)
        fy, _, _ = _axis(s["names"][1], [s["final"][1]], sym)
        ax.scatter(fx, fy, marker="*", s=260, color="red", edgecolor="black", lw=0.8,
                   zorder=5, label=f"final ({fx[0]:.3g}, {fy[0]:.3g})")
        if xlog:
            ax.set_xscale("log")
        ax.set_xlim(x[0], x[-1])
        ax.set_ylim(y[0], y[-1])
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.legend(loc="upper right", fontsize=8, framealpha=0.8)
        ax.set_title(_title(source, "learned reward surface", _history(source)), fontsize=10)
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)
    return Path(path)


def _slice(s: dict, steps, step_size):
    """(index into the grid, along-x?) of the slice: the row at the final (or given) second
    knob, or with `step_size` the column nearest that first knob."""
    if step_size is not None:
        if steps is not None:
            raise ValueError("give steps or step_size, not both: the slice fixes one of them")
        x = np.asarray(s["x"], float)
        target = math.log(step_size) if s["names"][0].startswith("log_") else step_size
        return int(np.argmin(np.abs(x - target))), False
    y = np.asarray(s["y"], float)
    target = s["final"][1] if steps is None else steps
    return int(np.argmin(np.abs(y - target))), True


def plot_reward_slice(source, path: str | os.PathLike, steps: int | None = None,
                      step_size: float | None = None) -> Path:
    """A slice of the GP: mean ± 2 sd of the reward with the rewards measured on it, and
    below it the acquisition along it where the run recorded one (Wang 2012, Figs 4.2 and
    4.6). By default the slice is at the final second knob (L) against the first (ε); with
    `steps` at that L; with `step_size` at that ε against L."""
    from .plots import _pyplot

    s = read_surface(source)
    sym = _symbol(source)
    j, along_x = _slice(s, steps, step_size)
    mean, sd = np.asarray(s["mean"]), np.asarray(s["sd"])
    acq = np.asarray(s["acquisition"]) if "acquisition" in s else None
    if along_x:
        name, grid, fixed_name, fixed = s["names"][0], s["x"], s["names"][1], s["y"][j]
        mean, sd = mean[j], sd[j]
        acq = None if acq is None else acq[j]
    else:
        name, grid, fixed_name, fixed = s["names"][1], s["y"], s["names"][0], s["x"][j]
        mean, sd = mean[:, j], sd[:, j]
        acq = None if acq is None else acq[:, j]
    axis, xlabel, xlog = _axis(name, grid, sym)
    shown, _, _ = _axis(fixed_name, [fixed], sym)
    where = f"{'L' if fixed_name == 'num_steps' else fixed_name} = {shown[0]:.3g}"
    final, _, _ = _axis(name, [s["final"][0 if along_x else 1]], sym)
    on_slice = _rewards_on_slice(_history(source), s, along_x, fixed)
    plt = _pyplot()
    rows = 2 if acq is not None else 1
    fig, axes = plt.subplots(rows, 1, figsize=(7.5, 6.2 if rows == 2 else 4.2), sharex=True,
                             layout="constrained", squeeze=False,
                             gridspec_kw={"height_ratios": [2, 1][:rows]})
    ax = axes[0, 0]
    try:
        ax.fill_between(axis, mean - 2 * sd, mean + 2 * sd, color="C0", alpha=0.25,
                        label="mean ± 2 sd")
        ax.plot(axis, mean, color="C3", lw=1.5, label="GP posterior mean")
        if on_slice:
            ax.scatter(*zip(*on_slice), s=16, color="black", zorder=4,
                       label=f"rewards at {where} ({len(on_slice)})")
            rewards = [r for _, r in on_slice]
            lo, hi = min(0.0, min(rewards)), max(rewards)
            pad = 0.5 * (hi - lo if hi > lo else 1.0)  # the prior sd dwarfs the rewards
            ax.set_ylim(lo - pad, hi + pad)
        for a in axes[:, 0]:
            a.axvline(final[0], color="0.4", ls="--", lw=0.8)
        ax.set_ylabel("reward")
        ax.legend(loc="upper left", fontsize=8, framealpha=0.8)
        ax.set_title(_title(source, f"reward slice at {where}", _history(source)),
                     fontsize=10)
        if acq is not None:
            axes[1, 0].plot(axis, acq, color="C2", lw=1.5)
            axes[1, 0].set_ylabel("acquisition\n(at the last p_i)", fontsize=9)
        axes[-1, 0].set_xlabel(xlabel)
        if xlog:
            axes[-1, 0].set_xscale("log")
        axes[-1, 0].set_xlim(axis[0], axis[-1])
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)
    return Path(path)


def _rewards_on_slice(history: list[dict], s: dict, along_x: bool, fixed) -> list[tuple]:
    """(knob as drawn, reward) of the current GP's observations on the slice: the same second
    knob, or a first knob within 5 % (it is continuous)."""
    keys = {"log_step_size": "eps", "num_steps": "L"}
    xk, yk = (keys.get(n, n) for n in s["names"])
    epoch = history[-1].get("epoch") if history else None
    out = []
    for h in history:
        if h.get("reward") is None or h.get(xk) is None or h.get(yk) is None \
                or (epoch is not None and h.get("epoch") != epoch):
            continue
        hx = math.log(h[xk]) if s["names"][0].startswith("log_") else float(h[xk])
        if along_x and round(float(h[yk])) == round(float(fixed)):
            out.append((float(h[xk]), float(h["reward"])))
        elif not along_x and abs(hx - float(fixed)) < 0.05:
            out.append((float(h[yk]), float(h["reward"])))
    return out


__all__ = ["plot_reward_slice", "plot_reward_surface", "read_surface"]
