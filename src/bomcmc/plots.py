"""Trace and auto-correlation plots of a run (PNG files, matplotlib's Agg backend).

    plot_trace(idata, "trace.png")        # one row per scalar coordinate: traces + histograms
    plot_autocorr(idata, "autocorr.png")  # ACF per coordinate, chains overlaid

Both take the first `max_coords` scalar coordinates over all posterior variables (in the
order of the InferenceData), label them like `beta[3]`, write the file and return its path.
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
    from .diagnostics import autocorrelation

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
