"""Plots of a run as PNG files (matplotlib's Agg backend unless a session chose another).

ArviZ draws the diagnostics:

    plot_trace(idata, "trace.png")        # densities + traces, divergences marked
    plot_autocorr(idata, "autocorr.png")  # ACF per coordinate
    plot_rank(idata, "rank.png")          # rank histograms per chain
    plot_energy(idata, "energy.png")      # energy vs energy transitions, E-BFMI (HMC only)

The first three take the first `max_coords` scalar coordinates over all posterior variables
(in the order of the InferenceData), label them like `beta[3]`, write the file and return its
path.

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


def _names(attrs) -> list[str]:
    """The posterior's own name (a user's model too, not "custom") and the sampler's."""
    name = attrs.get("posterior_name") or attrs.get("posterior")
    return [str(v) for v in (name, attrs.get("sampler")) if v]


def _step_symbol(attrs) -> str:
    """η for Neal's network samplers, whose step is a factor on per-group step sizes
    (Neal 1996); ε otherwise."""
    from .checks import gibbs_within_hmc

    return "η" if gibbs_within_hmc(attrs) else "ε"


def _title(idata, what: str, shown: int, total: int) -> str:
    _, post = _posterior(idata)
    title = " | ".join([what, *_names(post.attrs)])
    if 0 < shown < total:
        title += f"  (first {shown} of {total} coordinates)"
    return title


def _coordinate_idata(idata, max_coords: int):
    """(an InferenceData whose posterior holds the first `max_coords` scalar coordinates as
    variables named by their labels, with the run's sample_stats; how many there are)."""
    import arviz as az

    max_coords = _check_max("max_coords", max_coords)
    full, post = _posterior(idata)
    coords = list(coordinates(full, max_coords))
    if not coords:
        raise ValueError("the posterior has no variables to plot")
    sub = az.convert_to_inference_data({label: x for label, x in coords})
    sub.posterior.attrs.update(post.attrs)
    stats = getattr(full, "sample_stats", None)
    if stats is not None:
        sub.add_groups(sample_stats=stats)
    return sub, len(coords)


def _save(axes, idata, what: str, shown: int, path) -> Path:
    """Title the figure of ArviZ's `axes`, write it to `path` and close it."""
    plt = _pyplot()
    fig = np.ravel(np.asarray(axes, dtype=object))[0].figure
    try:
        fig.set_layout_engine("constrained")  # titles and tick labels do not overlap
        fig.suptitle(_title(idata, what, shown, _count_coordinates(idata)), fontsize=10)
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)
    return Path(path)


def plot_trace(idata, path: str | os.PathLike, max_coords: int = 8) -> Path:
    """ArviZ's trace plot of the first `max_coords` scalar coordinates: each chain's density
    and its trace, divergent transitions after warm-up marked below the axes."""
    import arviz as az

    sub, n = _coordinate_idata(idata, max_coords)
    has_div = "sample_stats" in sub.groups() and "diverging" in sub.sample_stats
    with _arviz_quiet():
        axes = az.plot_trace(sub, compact=False, divergences="bottom" if has_div else None,
                             figsize=(11, 1.6 * n + 0.8), show=False)
    return _save(axes, idata, "trace", n, path)


def plot_autocorr(idata, path: str | os.PathLike, max_coords: int = 8,
                  max_lag: int = 100) -> Path:
    """ArviZ's auto-correlation plot of the first `max_coords` scalar coordinates (the chains
    combined), lags 0..max_lag (fewer for short chains)."""
    import arviz as az

    max_lag = _check_max("max_lag", max_lag)
    sub, n = _coordinate_idata(idata, max_coords)
    lag = max(1, min(max_lag, sub.posterior.sizes["draw"] - 1))
    with _arviz_quiet():
        axes = az.plot_autocorr(sub, max_lag=lag, combined=True, show=False)
    return _save(axes, idata, "autocorrelation", n, path)


def plot_rank(idata, path: str | os.PathLike, max_coords: int = 8) -> Path:
    """ArviZ's rank plot (Vehtari et al. 2021): each chain's histogram of the ranks of its
    draws among all chains; chains that mix give flat, alike histograms."""
    import arviz as az

    sub, n = _coordinate_idata(idata, max_coords)
    with _arviz_quiet():
        axes = az.plot_rank(sub, kind="bars", show=False)
    return _save(axes, idata, "rank", n, path)


def has_energy(idata) -> bool:
    """Whether the run recorded the Hamiltonian of momentum resampling (HMC-type samplers),
    so plot_energy applies; not for Neal's Gibbs-within-HMC network samplers, whose energy is
    that of a conditional that changes between transitions."""
    from .checks import gibbs_within_hmc

    idata = getattr(idata, "idata", idata)
    stats = getattr(idata, "sample_stats", None)
    post = getattr(idata, "posterior", None)
    attrs = post.attrs if post is not None else {}
    return stats is not None and "energy" in stats and not gibbs_within_hmc(attrs)


def plot_energy(idata, path: str | os.PathLike) -> Path:
    """ArviZ's energy plot (Betancourt 2016): the marginal energy distribution against that
    of the energy transitions, with each chain's E-BFMI; a transition density much narrower
    than the marginal means the momentum resampling explores the energy levels slowly."""
    import arviz as az

    idata, _ = _posterior(idata)
    if not has_energy(idata):
        raise ValueError("the run recorded no energy (not an HMC-type sampler)")
    with _arviz_quiet():
        ax = az.plot_energy(idata, figsize=(7, 4.5), show=False)
    return _save(ax, idata, "energy", 0, path)


class _arviz_quiet:
    """Silence the RuntimeWarnings ArviZ and NumPy raise on short or constant chains (the
    plot shows what there is) and matplotlib's deprecation notices about ArviZ's calls."""

    def __enter__(self):
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        _pyplot()

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)


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
    parts = [what, *_names(_attrs(idata)), f"{len({h['i'] for h in history})} BO steps"]
    return " | ".join(parts)


def _attrs(idata) -> dict:
    post = getattr(idata, "posterior", None) if idata is not None else None
    return dict(post.attrs) if post is not None else {}


def _steps_grid(tuner) -> np.ndarray:
    lo, hi = int(tuner.lower[1]), int(tuner.upper[1])
    return np.arange(lo, hi + 1) if hi - lo <= 300 else np.linspace(lo, hi, 301)


def plot_reward_surface(source, path: str | os.PathLike, grid: int = 120) -> Path:
    """The GP posterior mean of the reward over the (ε, L) box (log ε axis), with the settings
    tried under the current GP as dots (area ∝ visits) and the final (ε, L) as a star
    (Wang 2012, Figs 4.1 and 4.4)."""
    tuner, history, idata = _bandit(source)
    sym = _step_symbol(_attrs(idata))
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
                       label=f"tried ({len(pts)} observations, {len(seen)} settings)")
        ax.scatter([tuner.step_size], [tuner.num_steps], marker="*", s=260, color="red",
                   edgecolor="black", lw=0.8, zorder=5,
                   label=f"final {sym}={tuner.step_size:.3g}, L={tuner.num_steps}")
        ax.set_xscale("log")
        ax.set_xlim(np.exp(tuner.lower[0]), np.exp(tuner.upper[0]))
        ax.set_ylim(steps[0], steps[-1])
        ax.set_xlabel(f"step size {sym} (log scale)")
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
                      grid: int = 300, step_size: float | None = None) -> Path:
    """A slice of the GP: the posterior mean ± 2 sd of the reward with the rewards measured on
    the slice, and below it the acquisition function along the slice at the last p_i (Wang
    2012, Figs 4.2 and 4.6). By default the slice is at L = `steps` (the final L when None)
    against ε (log axis); with `step_size`, it is at that ε against L."""
    tuner, history, idata = _bandit(source)
    sym = _step_symbol(_attrs(idata))
    pts, _ = _current_points(tuner, history)
    if step_size is None:  # fixed L, ε varies
        steps = int(tuner.num_steps if steps is None else steps)
        log_eps = np.linspace(tuner.lower[0], tuner.upper[0], int(grid))
        X = np.column_stack([log_eps, np.full(log_eps.shape, float(steps))])
        axis, final = np.exp(log_eps), tuner.step_size
        on_slice = [(h["eps"], h["reward"]) for h in pts if int(h["L"]) == steps]
        where, xlabel = f"L = {steps}", f"step size {sym} (log scale)"
    else:  # fixed ε, L varies
        if steps is not None:
            raise ValueError("give steps or step_size, not both: the slice fixes one of them")
        axis = _steps_grid(tuner).astype(float)
        X = np.column_stack([np.full(axis.shape, np.log(step_size)), axis])
        final = tuner.num_steps
        # rewards within 5 % of the slice's ε count as on it (ε is continuous)
        on_slice = [(h["L"], h["reward"]) for h in pts
                    if abs(np.log(h["eps"]) - np.log(step_size)) < 0.05]
        where, xlabel = f"{sym} = {step_size:.3g}", "trajectory length L (maximum)"
    mean, var = tuner.gp.predict(X)
    sd = np.sqrt(var)
    p_last = float(history[-1]["p_i"]) if history else 1.0
    u = tuner.acquisition_fn(p_last)
    acq = np.array([u(x) for x in X])
    plt = _pyplot()
    fig, (ax, ax_u) = plt.subplots(2, 1, figsize=(7.5, 6.2), sharex=True, layout="constrained",
                                   gridspec_kw={"height_ratios": [2, 1]})
    try:
        ax.fill_between(axis, mean - 2 * sd, mean + 2 * sd, color="C0", alpha=0.25,
                        label="mean ± 2 sd")
        ax.plot(axis, mean, color="C3", lw=1.5, label="GP posterior mean")
        if on_slice:
            ax.scatter(*zip(*on_slice), s=16, color="black", zorder=4,
                       label=f"rewards at {where} ({len(on_slice)})")
        final_label = f"final {sym} = {final:.3g}" if step_size is None else f"final L = {final}"
        ax.axvline(final, color="0.4", ls="--", lw=0.8, label=final_label)
        finite = [h["reward"] for h in pts]
        if finite:  # the GP's prior sd (5) dwarfs the rewards far from the data: zoom on them
            lo, hi = min(0.0, min(finite)), max(finite)
            pad = 0.5 * (hi - lo if hi > lo else 1.0)
            ax.set_ylim(lo - pad, hi + pad)
        ax.set_ylabel("reward")
        ax.legend(loc="upper left", fontsize=8, framealpha=0.8)
        ax.set_title(_bandit_title(idata, f"reward slice at {where}", tuner, history),
                     fontsize=10)
        name = "annealed UCB" if tuner.acquisition == "ucb" else "expected improvement"
        ax_u.plot(axis, acq, color="C2", lw=1.5)
        ax_u.axvline(final, color="0.4", ls="--", lw=0.8)
        ax_u.set_ylabel(f"{name}\n(p_i = {p_last:.3g})", fontsize=9)
        ax_u.set_xlabel(xlabel)
        if step_size is None:
            ax_u.set_xscale("log")
        ax_u.set_xlim(axis[0], axis[-1])
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)
    return Path(path)


def plot_error_curve(draws, curves: dict, path: str | os.PathLike, *, ylabel: str,
                     title: str, references: dict | None = None) -> Path:
    """Prediction error against the number of kept draws averaged (log axis; Wang 2012,
    Figs 4.3 and 4.5): `curves` maps a label to its errors at `draws`, `references` a label
    to a constant drawn as a dashed line (e.g. a paper's figure)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4), layout="constrained")
    try:
        for i, (label, err) in enumerate(curves.items()):
            ax.plot(draws, err, color=f"C{i}", lw=1.5, label=label)
        styles = iter([("C3", "--"), ("0.4", ":"), ("C4", "-.")] * 4)
        for label, value in (references or {}).items():
            color, ls = next(styles)
            ax.axhline(value, color=color, ls=ls, lw=0.8, label=f"{label} ({value})")
        ax.set_xscale("log")
        ax.set_xlabel("kept draws (after the discarded burn-in)")
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8)
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)
    return Path(path)

