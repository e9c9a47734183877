"""Plots of a run as PNG files (matplotlib's Agg backend unless a session chose another).

ArviZ draws the diagnostics:

    plot_trace(idata, "trace.png")        # densities + traces, divergences marked
    plot_autocorr(idata, "autocorr.png")  # ACF per coordinate
    plot_rank(idata, "rank.png")          # rank histograms per chain
    plot_energy(idata, "energy.png")      # energy vs energy transitions, E-BFMI (HMC only)

The first three take the first `max_coords` scalar coordinates over all posterior variables,
the named scalar variables first (`mu`, `sigma`), then the coordinates of the vector and array
variables, each group in the order of the InferenceData; they label them like `beta[3]`, write
the file and return its path. Every axis is labelled. The trace plot draws the divergent
transitions as black ticks in a strip below every trace, and each chain that never moved
(`stillness.stuck_chains`) as a thick dashed line named in the legend, so it cannot hide in that
strip.

A tuned run's learned reward surface, read from its `tuning` group (`reward_plots.py`;
Wang 2012, Figs 4.1/4.4 and 4.2/4.6):

    plot_reward_surface(idata, "reward_surface.png")  # GP mean over the knob box, tried points
    plot_reward_slice(idata, "reward_slice.png")      # slice at the final L: mean ± 2 sd, the
                                                      # tried points, the acquisition below
matplotlib is imported only when a plot is drawn.
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
    """(the InferenceData, its posterior), of the draws the run kept (`checks.kept`: a
    network fit's burn-in is not drawn)."""
    from .checks import kept

    idata = getattr(idata, "idata", idata)  # a SampleResult works too
    if getattr(idata, "posterior", None) is None:
        raise ValueError("expected an InferenceData with a posterior group")
    idata, _ = kept(idata)
    return idata, idata.posterior


def coordinates(idata, max_coords: int | None = None) -> Iterator[tuple[str, np.ndarray]]:
    """(label, draws of shape (chains, draws)) for the scalar coordinates of every posterior
    variable, at most `max_coords` of them: `x` for a scalar, `beta[3]`, `L[1, 2]`; the
    scalar variables first, so a model's named parameters are never crowded out by a long
    vector."""
    from .checks import index_label

    _, post = _posterior(idata)
    n = 0
    names = sorted(post.data_vars, key=lambda v: post[v].ndim > 2)  # stable: scalars first
    for name in names:
        x = np.asarray(post[name].values)
        if x.ndim < 2:
            continue
        shape = x.shape[2:]
        axes = [post[name][d].values for d in post[name].dims[2:]]  # the model's coords
        flat = x.reshape(x.shape[0], x.shape[1], -1)
        for i in range(flat.shape[2]):
            if max_coords is not None and n >= max_coords:
                return
            if not shape:
                label = str(name)
            else:
                idx = np.unravel_index(i, shape)
                label = f"{name}[{index_label(axes, idx, ', ')}]"
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

    from .stillness import stuck_chains

    sub, n = _coordinate_idata(idata, max_coords)
    stats = sub.sample_stats if "sample_stats" in sub.groups() else None
    div = (np.asarray(stats["diverging"].values, bool)
           if stats is not None and "diverging" in stats else None)
    stuck = stuck_chains(_posterior(idata)[1])
    with _arviz_quiet():
        axes = az.plot_trace(sub, compact=False, divergences=None,
                             figsize=(11, 1.6 * n + 0.8), show=False)
    for (density, trace), label in zip(np.atleast_2d(axes), sub.posterior.data_vars):
        density.set_xlabel("value")
        density.set_ylabel("density")
        trace.set_xlabel("draw")
        trace.set_ylabel("value")
        _mark_trace(trace, np.asarray(sub.posterior[label].values, float), div, stuck)
    return _save(axes, idata, "trace", n, path)


def _mark_trace(ax, x: np.ndarray, div: np.ndarray | None, stuck: list[int]) -> None:
    """Divergent transitions as black ticks in a strip below the trace's range (x: (chains,
    draws)), and each chain that never moved as a thick dashed line named in a legend."""
    finite = x[np.isfinite(x)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    span = hi - lo if hi > lo else max(abs(hi), 1.0)
    if div is not None and div.any():
        draws = np.arange(x.shape[1])
        y = lo - 0.12 * span
        ax.plot(draws[div.any(axis=0)], np.full(int(div.any(axis=0).sum()), y), "|",
                color="black", ms=8, label="divergent transition")
        ax.set_ylim(lo - 0.2 * span, hi + 0.08 * span)
    for c in stuck:
        ax.axhline(x[c, 0], color=f"C{c % 10}", ls="--", lw=2.5,
                   label=f"chain {c} never moved")
    if stuck or (div is not None and div.any()):
        ax.legend(fontsize=7, loc="upper right")


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
    for ax in np.ravel(np.asarray(axes, dtype=object)):
        if ax.has_data():
            ax.set_xlabel("lag")
            ax.set_ylabel("autocorrelation")
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
    from matplotlib.ticker import AutoLocator

    with _arviz_quiet():
        ax = az.plot_energy(idata, figsize=(7, 4.5), show=False)
    for one in np.ravel(np.asarray(ax, dtype=object)):  # ArviZ hides both axes' ticks
        one.xaxis.set_major_locator(AutoLocator())
        one.yaxis.set_major_locator(AutoLocator())
        one.tick_params(labelbottom=True, labelleft=True)
        one.set_xlabel("energy − its mean (marginal); energy change between draws "
                       "(transition)")
        one.set_ylabel("density")
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


# The learned reward surface (read from the run: reward_plots.py)
from .reward_plots import plot_reward_slice, plot_reward_surface  # noqa: E402,F401


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

