"""What the diagnostic plots show (issue 31): the named scalar variables first, every axis
labelled, a chain that never moved visible apart from the divergence strip. The figures are
read before they close, so the tests check their content, not only that a file exists."""

from __future__ import annotations

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pytest

from bomcmc.diagnostics import plots


@pytest.fixture
def figures(monkeypatch):
    """The figures the plots close, in order."""
    seen, real_close = [], plt.close

    def keep(fig=None):
        seen.append(fig)
        return real_close(fig)

    monkeypatch.setattr(plt, "close", keep)
    return seen


def _idata(stuck_chain: int | None = None):
    """A run whose first variable alphabetically is a 14-vector ("alpha"), then "mu" and
    "sigma", with two divergences and energies."""
    rng = np.random.default_rng(0)
    post = {"alpha": rng.normal(size=(2, 60, 14)), "mu": rng.normal(size=(2, 60)),
            "sigma": np.exp(rng.normal(size=(2, 60)))}
    if stuck_chain is not None:
        for v in post.values():
            v[stuck_chain] = v[stuck_chain, :1]
    diverging = np.zeros((2, 60), bool)
    diverging[0, [5, 30]] = True
    return az.from_dict(posterior=post, sample_stats={"diverging": diverging,
                                                      "energy": rng.normal(size=(2, 60))})


def test_named_scalars_come_first_and_every_axis_is_labelled(tmp_path, figures):
    """The defect: "first 8 of 16 coordinates" in the posterior's order left mu and sigma
    out; energy.png had no x-axis ticks or label."""
    idata = _idata()
    plots.plot_trace(idata, tmp_path / "t.png")
    titles = [ax.get_title() for ax in figures[-1].axes[1::2]]
    assert titles == ["mu", "sigma"] + [f"alpha[{i}]" for i in range(6)]
    assert "first 8 of 16 coordinates" in figures[-1]._suptitle.get_text()
    for ax in figures[-1].axes:
        assert ax.get_xlabel() and ax.get_ylabel()
    plots.plot_autocorr(idata, tmp_path / "a.png", max_coords=3)
    assert [ax.get_title() for ax in figures[-1].axes if ax.has_data()][:2] == ["mu", "sigma"]
    assert all(ax.get_xlabel() == "lag" for ax in figures[-1].axes if ax.has_data())
    plots.plot_rank(idata, tmp_path / "r.png", max_coords=3)
    assert all(ax.get_xlabel() and ax.get_ylabel() for ax in figures[-1].axes
               if ax.has_data())
    plots.plot_energy(idata, tmp_path / "e.png")
    ax = figures[-1].axes[0]
    assert ax.get_xlabel() and ax.get_ylabel() == "density"
    assert len(ax.get_xticks()) > 1
    # every Axes of every figure the diagnostics draw (the reward plots: in
    # test_tuning_ahmc_tuner.py, the demo's: in test_bnn_cv.py)
    plots.plot_error_curve([1, 10, 100], {"ahmc": [0.3, 0.2, 0.1]}, tmp_path / "c.png",
                           ylabel="test error", title="t", references={"paper": 0.15})
    assert len(figures) == 5
    assert not [unlabelled_axes(fig) for fig in figures if unlabelled_axes(fig)]


def test_a_chain_that_never_moved_is_drawn_apart_from_the_divergence_strip(tmp_path,
                                                                           figures):
    """The defect: a stuck chain's flat trace lay inside the black divergence strip."""
    idata = _idata(stuck_chain=1)
    plots.plot_trace(idata, tmp_path / "t.png", max_coords=2)
    trace = figures[-1].axes[1]
    legend = [t.get_text() for t in trace.get_legend().get_texts()]
    assert "chain 1 never moved" in legend and "divergent transition" in legend
    ticks = [ln for ln in trace.get_lines() if ln.get_label() == "divergent transition"][0]
    stuck = [ln for ln in trace.get_lines() if ln.get_label() == "chain 1 never moved"][0]
    strip = float(ticks.get_ydata()[0])
    assert set(ticks.get_xdata()) == {5, 30}
    x = idata.posterior["mu"].values
    assert strip < x.min() and float(stuck.get_ydata()[0]) == x[1, 0] > strip
    assert trace.get_ylim()[0] < strip


def test_plots_draw_only_the_draws_a_run_kept(tmp_path, figures):
    """A network fit records its burn-in (`burn_in_draws`): the trace leaves it out."""
    idata = _idata()
    idata.posterior.attrs["burn_in_draws"] = 20
    plots.plot_trace(idata, tmp_path / "t.png", max_coords=1)
    lines = figures[-1].axes[1].get_lines()
    traces = [ln for ln in lines if ln.get_label() != "divergent transition"]
    assert traces and {len(ln.get_xdata()) for ln in traces} == {40}
    ticks = [ln for ln in lines if ln.get_label() == "divergent transition"][0]
    assert list(ticks.get_xdata()) == [10]  # draw 30; draw 5 was burn-in


def unlabelled_axes(fig) -> list[str]:
    """The axes of `fig` that show something but lack an x or a y label; a colorbar (its
    label is the colour scale's) and a grid cell left empty are not axes of data, and an
    axis shared with a labelled one (a panel above another, sharex) is labelled by it."""
    def label(ax, which):
        shared = ax.get_shared_x_axes() if which == "x" else ax.get_shared_y_axes()
        return any(getattr(a, f"get_{which}label")() for a in shared.get_siblings(ax))

    missing = []
    for ax in fig.axes:
        if not ax.get_visible() or not ax.has_data() or hasattr(ax, "_colorbar"):
            continue
        if not (label(ax, "x") and label(ax, "y")):
            missing.append(f"{ax.get_title()!r}: x {ax.get_xlabel()!r}, y {ax.get_ylabel()!r}")
    return missing
