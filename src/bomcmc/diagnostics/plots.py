"""Trace and auto-correlation plots of a run (PNG files, matplotlib's Agg backend).

    plot_trace(idata, "trace.png")        # one row per scalar coordinate: traces + histograms
    plot_autocorr(idata, "autocorr.png")  # ACF per coordinate, chains overlaid

Both take the first `max_coords` scalar coordinates over all posterior variables (in the
order of the InferenceData), label them like `beta[3]`, write the file and return its path.

The GP bandit of an adaptive-HMC run (`sampler="ahmc"`, or any run whose InferenceData has
a `tuning` group from a GPBanditTuner; a live GPBanditTuner works too):

    plot_reward_surface(idata, "reward_surface.png")  # GP mean over (log ε, L), tried points
    plot_reward_slice(idata, "reward_slice.png")      # slice at the final L: mean ± 2 sd, the
                                                      # tried points, the acquisition below
(Wang 2012, Figs 4.1/4.4 and 4.2/4.6). matplotlib is imported only when a plot is drawn.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Iterator

import numpy as np


def _pyplot():
    import matplotlib

    # Headless by default; leave an interactive session's backend (e.g. a notebook) alone.
    if "matplotlib.pyplot" not in sys.modules:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _posterior(idata):
    idata = getattr(idata, "idata", idata)  # a SampleResult works too
    post = getattr(idata, "posterior", None)
    if post is None:
        raise ValueError("expected an InferenceData with a posterior group")
    return idata, post


def coordinates(idata, max_coords: int | None = None) -> Iterator[tuple[str, np.ndarray]]:
    """(label, draws of shape (chains, draws)) for the scalar coordinates of every posterior
    variable, at most `max_coords` of them: `x` for a scalar, `beta[3]`, `L[1, 2]`."""
    _, post = _posterior(idata)
    n = 0
    for name in post.data_vars:
        x = np.asarray(post[name].values)
        if x.ndim < 2:
            continue
        shape = x.shape[2:]
        flat = x.reshape(x.shape[0], x.shape[1], -1)
        for i in range(flat.shape[2]):
            if max_coords is not None and n >= max_coords:
                return
            if not shape:
                label = str(name)
            else:
                idx = np.unravel_index(i, shape)
                label = f"{name}[{', '.join(str(int(j)) for j in idx)}]"
            yield label, flat[:, :, i]
            n += 1


def _count_coordinates(idata) -> int:
    _, post = _posterior(idata)
    return int(sum(int(np.prod(post[v].shape[2:], dtype=int)) for v in post.data_vars
                   if post[v].ndim >= 2))


def _check_max(name: str, v: int) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ValueError(f"{name} must be a positive integer, got {v!r}")
    return int(v)


def _title(idata, what: str, shown: int, total: int) -> str:
    _, post = _posterior(idata)
    attrs = post.attrs
    parts = [what]
    if "posterior" in attrs:
        parts.append(str(attrs["posterior"]))
    if "sampler" in attrs:
        parts.append(str(attrs["sampler"]))
    title = " | ".join(parts)
    if shown < total:
        title += f"  (first {shown} of {total} coordinates)"
    return title


def plot_trace(idata, path: str | os.PathLike, max_coords: int = 8) -> Path:
    """Trace plot: one row per scalar coordinate (the first `max_coords`), each chain a line
    against the draw index, and beside it each chain's histogram (density)."""
    max_coords = _check_max("max_coords", max_coords)
    coords = list(coordinates(idata, max_coords))
    if not coords:
        raise ValueError("the posterior has no variables to plot")
    plt = _pyplot()
    n = len(coords)
    fig, axes = plt.subplots(n, 2, figsize=(11, 1.9 * n + 0.8), squeeze=False, sharey="row",
                             layout="constrained", gridspec_kw={"width_ratios": [3, 1]})
    try:
        colors = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
        for row, (label, x) in enumerate(coords):
            ax_t, ax_h = axes[row]
            n_chains, n_draws = x.shape
            draw = np.arange(n_draws)
            for c in range(n_chains):
                color = colors[c % len(colors)]
                ax_t.plot(draw, x[c], color=color, lw=0.7, alpha=0.8, label=f"chain {c}")
                finite = x[c][np.isfinite(x[c])]
                if finite.size:
                    ax_h.hist(finite, bins=min(40, max(5, finite.size // 10)), density=True,
                              histtype="step", color=color, lw=1.0, orientation="horizontal")
            ax_t.set_title(f"trace of {label}", fontsize=9)
            ax_t.set_ylabel(label)
            ax_t.set_xlim(0, max(n_draws - 1, 1))
            ax_h.set_title(f"{label} density", fontsize=9)
            ax_h.tick_params(labelleft=False)
            ax_h.set_xlabel("density" if row == n - 1 else "")
            ax_t.set_xlabel("draw" if row == n - 1 else "")
        if coords and coords[0][1].shape[0] <= 8:
            axes[0, 0].legend(loc="upper right", fontsize=7, ncol=min(4, coords[0][1].shape[0]),
                              framealpha=0.6)
        fig.suptitle(_title(idata, "trace", n, _count_coordinates(idata)), fontsize=10)
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)
    return Path(path)


def plot_autocorr(idata, path: str | os.PathLike, max_coords: int = 8,
                  max_lag: int = 100) -> Path:
    """Auto-correlation function of each of the first `max_coords` scalar coordinates, one
    panel each, chains overlaid, lags 0..max_lag (fewer for short chains)."""
    from .summary import autocorrelation

    max_coords = _check_max("max_coords", max_coords)
    max_lag = _check_max("max_lag", max_lag)
    coords = list(coordinates(idata, max_coords))
    if not coords:
        raise ValueError("the posterior has no variables to plot")
    plt = _pyplot()
    n = len(coords)
    ncols = min(n, 4)
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols + 0.5, 2.5 * nrows + 0.8),
                             squeeze=False, layout="constrained")
    try:
        colors = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
        for k, (label, x) in enumerate(coords):
            ax = axes[k // ncols, k % ncols]
            n_chains, n_draws = x.shape
            lag = min(max_lag, max(n_draws - 1, 0))
            with np.errstate(all="ignore"):
                acf = autocorrelation(x, max_lag=lag)
            lags = np.arange(acf.shape[1])
            for c in range(n_chains):
                ax.plot(lags, acf[c], color=colors[c % len(colors)], lw=0.9, alpha=0.85,
                        label=f"chain {c}")
            ax.axhline(0.0, color="0.3", lw=0.6)
            ax.set_title(f"ACF of {label}", fontsize=9)
            ax.set_xlim(0, max(lag, 1))
            low = np.nanmin(acf) if np.isfinite(acf).any() else 0.0
            ax.set_ylim(min(-0.2, low - 0.05), 1.05)
            if k // ncols == nrows - 1 or k + ncols >= n:
                ax.set_xlabel("lag")
            if k % ncols == 0:
                ax.set_ylabel("autocorrelation")
        for k in range(n, nrows * ncols):
            axes[k // ncols, k % ncols].set_visible(False)
        if coords[0][1].shape[0] <= 8:
            axes[0, 0].legend(loc="upper right", fontsize=7, framealpha=0.6)
        fig.suptitle(_title(idata, "autocorrelation", n, _count_coordinates(idata)),
                     fontsize=10)
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)
    return Path(path)


# ---------------------------------------------------------------------------------------
# The GP bandit (Wang 2012, Figs 4.1/4.4 and 4.2/4.6)
# ---------------------------------------------------------------------------------------
def _bandit(source):
    """(tuner, history, idata or None) from a run's InferenceData / SampleResult with a
    `tuning` group, or from a GPBanditTuner."""
    from ..tuning.gp_bandit import GPBanditTuner
    from ..tuning.history import tuning_from_idata

    if isinstance(source, GPBanditTuner):
        tuner, history, idata = source, source.history, None
    else:
        found = tuning_from_idata(source)
        if found is None:
            raise ValueError("no GP-bandit tuning recorded in this run (sampler='ahmc' or a "
                             "GPBanditTuner records one)")
        (tuner, history), idata = found, getattr(source, "idata", source)
    if tuner.gp is None or tuner.gp.n_obs == 0:
        raise ValueError("the bandit's GP has no observations to plot")
    return tuner, history, idata


def _current_points(tuner, history):
    """History entries behind the current GP (the last epoch: a metric update resets the
    GP), with a finite reward; and how many earlier entries were left out."""
    epoch = history[-1].get("epoch") if history else None
    pts = [h for h in history if h.get("reward") is not None
           and (epoch is None or h.get("epoch") == epoch)]
    return pts, len(history) - len(pts)


def _bandit_title(idata, what: str, tuner, history) -> str:
    parts = [what]
    if idata is not None:
        attrs = getattr(idata, "posterior", None)
        attrs = attrs.attrs if attrs is not None else {}
        parts += [str(attrs[k]) for k in ("posterior", "sampler") if k in attrs]
    parts.append(f"{len(history)} BO steps")
    return " | ".join(parts)


def _steps_grid(tuner) -> np.ndarray:
    lo, hi = int(tuner.lower[1]), int(tuner.upper[1])
    return np.arange(lo, hi + 1) if hi - lo <= 300 else np.linspace(lo, hi, 301)


def plot_reward_surface(source, path: str | os.PathLike, grid: int = 120) -> Path:
    """The GP posterior mean of the reward over the (ε, L) box (log ε axis), with the settings
    tried under the current GP as dots (area ∝ visits) and the final (ε, L) as a star
    (Wang 2012, Figs 4.1 and 4.4)."""
    tuner, history, idata = _bandit(source)
    log_eps = np.linspace(tuner.lower[0], tuner.upper[0], int(grid))
    steps = _steps_grid(tuner)
    E, S = np.meshgrid(log_eps, steps)
    mean, _ = tuner.gp.predict(np.column_stack([E.ravel(), S.ravel()]))
    pts, left_out = _current_points(tuner, history)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 5.2), layout="constrained")
    try:
        cs = ax.contourf(np.exp(E), S, mean.reshape(E.shape), levels=30, cmap="viridis")
        fig.colorbar(cs, ax=ax, label="GP posterior mean of the reward")
        if pts:
            seen: dict = {}
            for h in pts:
                seen[(h["eps"], h["L"])] = seen.get((h["eps"], h["L"]), 0) + 1
            xy = np.array(list(seen))
            n = np.array(list(seen.values()), float)
            ax.scatter(xy[:, 0], xy[:, 1], s=12 + 10 * np.sqrt(n), facecolor="white",
                       edgecolor="black", lw=0.6, alpha=0.85,
                       label=f"tried ({len(pts)} BO steps, {len(seen)} settings)")
        ax.scatter([tuner.step_size], [tuner.num_steps], marker="*", s=260, color="red",
                   edgecolor="black", lw=0.8, zorder=5,
                   label=f"final ε={tuner.step_size:.3g}, L={tuner.num_steps}")
        ax.set_xscale("log")
        ax.set_xlim(np.exp(tuner.lower[0]), np.exp(tuner.upper[0]))
        ax.set_ylim(steps[0], steps[-1])
        ax.set_xlabel("step size ε (log scale)")
        ax.set_ylabel("trajectory length L (maximum)")
        ax.legend(loc="upper right", fontsize=8, framealpha=0.8)
        title = _bandit_title(idata, "learned reward surface", tuner, history)
        if left_out:
            title += f"\n({left_out} steps before the last GP reset or without a reward not shown)"
        ax.set_title(title, fontsize=10)
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)
    return Path(path)


def plot_reward_slice(source, path: str | os.PathLike, steps: int | None = None,
                      grid: int = 300) -> Path:
    """A slice of the GP at L = `steps` (default: the final L): the posterior mean ± 2 sd of
    the reward against ε (log axis) with the rewards measured at that L, and below it the
    acquisition function along the slice at the last p_i (Wang 2012, Figs 4.2 and 4.6)."""
    tuner, history, idata = _bandit(source)
    steps = int(tuner.num_steps if steps is None else steps)
    log_eps = np.linspace(tuner.lower[0], tuner.upper[0], int(grid))
    X = np.column_stack([log_eps, np.full(log_eps.shape, float(steps))])
    mean, var = tuner.gp.predict(X)
    sd = np.sqrt(var)
    p_last = float(history[-1]["p_i"]) if history else 1.0
    u = tuner.acquisition_fn(p_last)
    acq = np.array([u(x) for x in X])
    pts, _ = _current_points(tuner, history)
    at_l = [h for h in pts if int(h["L"]) == steps]
    eps = np.exp(log_eps)
    plt = _pyplot()
    fig, (ax, ax_u) = plt.subplots(2, 1, figsize=(7.5, 6.2), sharex=True, layout="constrained",
                                   gridspec_kw={"height_ratios": [2, 1]})
    try:
        ax.fill_between(eps, mean - 2 * sd, mean + 2 * sd, color="C0", alpha=0.25,
                        label="mean ± 2 sd")
        ax.plot(eps, mean, color="C3", lw=1.5, label="GP posterior mean")
        if at_l:
            ax.scatter([h["eps"] for h in at_l], [h["reward"] for h in at_l], s=16,
                       color="black", zorder=4, label=f"rewards at L = {steps} ({len(at_l)})")
        ax.axvline(tuner.step_size, color="0.4", ls="--", lw=0.8,
                   label=f"final ε = {tuner.step_size:.3g}")
        finite = [h["reward"] for h in pts]
        if finite:  # the GP's prior sd (5) dwarfs the rewards far from the data: zoom on them
            lo, hi = min(0.0, min(finite)), max(finite)
            pad = 0.5 * (hi - lo if hi > lo else 1.0)
            ax.set_ylim(lo - pad, hi + pad)
        ax.set_ylabel("reward")
        ax.legend(loc="upper left", fontsize=8, framealpha=0.8)
        ax.set_title(_bandit_title(idata, f"reward slice at L = {steps}", tuner, history),
                     fontsize=10)
        name = "annealed UCB" if tuner.acquisition == "ucb" else "expected improvement"
        ax_u.plot(eps, acq, color="C2", lw=1.5)
        ax_u.axvline(tuner.step_size, color="0.4", ls="--", lw=0.8)
        ax_u.set_ylabel(f"{name}\n(p_i = {p_last:.3g})", fontsize=9)
        ax_u.set_xlabel("step size ε (log scale)")
        ax_u.set_xscale("log")
        ax_u.set_xlim(eps[0], eps[-1])
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)
    return Path(path)
