"""Diagnostics: the summary layout, ESS per gradient / per second, ACF, progress output."""

import json

import arviz as az
import numpy as np
import pytest

import bomcmc
from bomcmc.diagnostics import autocorrelation, efficiency, format_table, summarize


@pytest.fixture(scope="module")
def result():
    return bomcmc.sample(sampler="hmc", posterior="logistic-heart", chains=4, draws=400, warmup=100, seed=2,
                         steps=8, adapt="window", progress=False)


def test_summary_layout_and_values(result):
    s = summarize(result.idata)
    json.dumps(s)  # valid JSON, no NaN
    beta = s["variables"]["beta"]
    for key in ("mean", "sd", "mcse_mean", "ess_bulk", "ess_tail", "r_hat"):
        assert len(beta[key]) == 14, key
    x = np.asarray(result.idata.posterior["beta"])
    np.testing.assert_allclose(beta["mean"], x.mean(axis=(0, 1)), rtol=1e-10)
    np.testing.assert_allclose(beta["ess_bulk"],
                               np.asarray(az.ess(result.idata, method="bulk")["beta"]))
    run = s["run"]
    assert run["n_grad"] == 4 * 400 * 8 and run["n_grad_warmup"] == 4 * 100 * 8
    ess = np.asarray(beta["ess_bulk"])
    assert run["ess_per_grad"]["min"] == pytest.approx(ess.min() / run["n_grad"])
    assert run["ess_per_grad"]["median"] == pytest.approx(np.median(ess) / run["n_grad"])
    assert run["ess_per_s"]["max"] == pytest.approx(ess.max() / run["wall_s"])
    assert run["divergences"] == 0 and 0 < run["accept_mean"] <= 1
    assert max(beta["r_hat"]) < 1.05
    assert "ESS per gradient" in format_table(s)
    # the log density's own line, as Stan's lp__
    lp = np.asarray(result.idata.sample_stats["lp"])
    assert run["lp"]["mean"] == pytest.approx(lp.mean())
    assert run["lp"]["ess_bulk"] == pytest.approx(float(az.ess(lp, method="bulk")))
    assert run["lp"]["r_hat"] == pytest.approx(float(az.rhat(lp)))
    assert "log density (lp) mean=" in format_table(s)


def test_efficiency_handles_zero_cost():
    e = efficiency([10.0, 20.0], 0, 0.0)
    assert e["ess_per_grad"]["min"] is None and e["ess_per_s"]["max"] is None


def test_autocorrelation_of_ar1():
    rng = np.random.default_rng(0)
    x = np.zeros((2, 20000))
    for t in range(1, x.shape[1]):
        x[:, t] = 0.6 * x[:, t - 1] + rng.normal(size=2)
    acf = autocorrelation(x, max_lag=3)
    assert acf.shape == (2, 4)
    np.testing.assert_allclose(acf[:, 1], 0.6, atol=0.03)
    np.testing.assert_allclose(acf[:, 2], 0.36, atol=0.03)


def test_netcdf_round_trip_keeps_totals(tmp_path, result):
    r = bomcmc.sample(sampler="hmc", posterior="gauss-iid-3", chains=2, draws=50, warmup=10, seed=0,
                      step_size=0.5, steps=3, progress=False, out=tmp_path)
    loaded = bomcmc.load(tmp_path)
    assert summarize(loaded.idata)["run"]["n_grad"] == r.totals["n_grad"]
    np.testing.assert_array_equal(np.asarray(loaded.idata.posterior["x"]),
                                  np.asarray(r.idata.posterior["x"]))
    assert set(loaded.idata.sample_stats.data_vars) >= {
        "acceptance_rate", "energy", "energy_error", "diverging", "n_steps", "step_size"}


def test_progress_bar_with_vmapped_chains(capsys):
    bomcmc.sample(sampler="hmc", posterior="gauss-iid-2", chains=3, draws=40, warmup=20, chunk_size=10,
                  step_size=0.5, steps=3, progress=True)
    err = capsys.readouterr().err
    assert "hmc x3" in err and "60/60" in err and "acc=" in err and "div=0" in err
