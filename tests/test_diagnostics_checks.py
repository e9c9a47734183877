"""Warnings for a run that went wrong (`diagnostics.check_run`): each fires on a run or an
InferenceData built to trigger it, stays silent on a healthy run, reaches `sample`/`resume`
users as a `bomcmc.SamplingWarning` (not `load` users), `summary --json` users in
"warnings", and command-line users as `bomcmc: warning: ...` lines on stderr.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import arviz as az
import numpy as np
import pytest

import bomcmc
from bomcmc.diagnostics import SamplingWarning, check_run, summarize

SRC = Path(__file__).resolve().parents[1] / "src"


def _sampling_warnings(fn, *args, **kwargs):
    """(fn's result, the messages of the SamplingWarnings it raised, their file names)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*args, **kwargs)
    got = [w for w in caught if issubclass(w.category, SamplingWarning)]
    return out, [str(w.message) for w in got], [w.filename for w in got]


def _idata(chains=4, draws=400, seed=0, **stats):
    """A healthy InferenceData (iid normal draws, iid energies), with `stats` replacing or
    adding sample_stats."""
    rng = np.random.default_rng(seed)
    sample_stats = {
        "energy": rng.normal(size=(chains, draws)),
        "acceptance_rate": np.full((chains, draws), 0.8),
        "diverging": np.zeros((chains, draws), bool),
    }
    sample_stats.update(stats)
    return az.from_dict(posterior={"x": rng.normal(size=(chains, draws, 3))},
                        sample_stats=sample_stats)


def _one(msgs, needle):
    hits = [m for m in msgs if needle in m]
    assert len(hits) == 1, msgs
    assert "\n" not in hits[0]
    return hits[0]


# ---------------------------------------------------------------------------------------
# Healthy: nothing to say
# ---------------------------------------------------------------------------------------
def test_healthy_nuts_run_is_silent():
    res, msgs, _ = _sampling_warnings(
        bomcmc.sample, posterior="gauss-iid-2", sampler="nuts", chains=4, draws=500,
        warmup=300, seed=0, progress=False, float64=True)
    assert msgs == []
    assert check_run(res.idata, res.totals) == []
    assert summarize(res.idata, res.totals)["warnings"] == []


def test_healthy_idata_is_silent():
    assert check_run(_idata()) == []


# ---------------------------------------------------------------------------------------
# Runs that go wrong
# ---------------------------------------------------------------------------------------
def test_stuck_run_warns_and_reports_no_ess(tmp_path):
    """ε = 3 on a standard normal: every trajectory diverges, both chains stay where they
    started. ArviZ would give such a chain ESS = draws; bomcmc reports NaN, and 0 in the run's
    min/median/max."""
    res, msgs, files = _sampling_warnings(
        bomcmc.sample, posterior="gauss-iid-2", sampler="hmc", chains=2, draws=100, warmup=0,
        seed=0, progress=False, float64=True, step_size=3.0, steps=10, out=tmp_path / "run")
    assert files and set(files) == {__file__}  # stacklevel: the warning points at the caller
    assert "200 divergent transitions after warm-up (100.0% of 200 draws)" in _one(
        msgs, "divergent")
    assert "mean acceptance 0 < 0.05" in _one(msgs, "acceptance")
    assert "chains 0, 1" in _one(msgs, "never moved")
    assert "bulk ESS min 0" in _one(msgs, "ESS")
    assert not [m for m in msgs if "R-hat" in m]  # a frozen coordinate is no R-hat of 1e16
    s = summarize(res.idata, res.totals)
    assert s["warnings"] == msgs
    assert s["variables"]["x"]["ess_bulk"] == [None, None]  # NaN -> JSON null
    assert s["variables"]["x"]["ess_tail"] == [None, None]
    assert s["run"]["ess_bulk"] == {"min": 0.0, "median": 0.0, "max": 0.0}
    assert s["run"]["ess_per_grad"]["max"] == 0.0
    # resume (of the finished run) warns too; load does not
    _, again, _ = _sampling_warnings(bomcmc.resume, tmp_path / "run", progress=False)
    assert again == msgs
    loaded, none, _ = _sampling_warnings(bomcmc.load, tmp_path / "run")
    assert none == []
    assert summarize(loaded.idata)["warnings"] == msgs


def test_crawling_run_warns_of_ess_and_acceptance():
    """ε = 0.01, L = 1: every proposal accepted, the chains barely move."""
    _, msgs, _ = _sampling_warnings(
        bomcmc.sample, posterior="gauss-iid-2", sampler="hmc", chains=2, draws=100, warmup=0,
        seed=0, progress=False, float64=True, step_size=0.01, steps=1)
    assert "< 200 (100 per chain × 2 chains" in _one(msgs, "ESS min")
    assert "> 0.995" in _one(msgs, "mean acceptance")
    assert not [m for m in msgs if "divergent" in m or "never moved" in m]


def test_a_flat_density_is_told_it_may_be_improper_and_a_proper_prior_removes_the_warning():
    """A log density without a prior on x (flat everywhere): every proposal is accepted, and
    the acceptance warning used to advise a larger step box (1e8 and up, which changes
    nothing). With the log density equal at every draw it names the flat density instead;
    the advice applied, a N(0, 10²) prior, leaves no acceptance or R-hat warning."""
    import jax.numpy as jnp

    run = dict(chains=4, draws=300, warmup=300, seed=0, progress=False, float64=True)
    _, msgs, _ = _sampling_warnings(bomcmc.sample, lambda x: 0.0 * jnp.sum(x), jnp.zeros(2),
                                    **run)
    flat = _one(msgs, "mean acceptance")
    assert "log density equal at every draw" in flat and "proper prior" in flat
    assert "step" not in flat
    _, msgs, _ = _sampling_warnings(bomcmc.sample, lambda x: -jnp.sum(x ** 2) / 200.0,
                                    jnp.zeros(2), **run)
    assert not [m for m in msgs if "mean acceptance" in m or "R-hat" in m], msgs


# ---------------------------------------------------------------------------------------
# InferenceData built to trigger one warning each
# ---------------------------------------------------------------------------------------
def test_rhat_when_chains_disagree():
    idata = _idata()
    idata.posterior["x"][1] += 3.0  # chain 1 sits elsewhere
    msg = _one(check_run(idata), "R-hat")
    assert "> 1.01" in msg and "on 3 of 3 coordinates" in msg


def test_ebfmi_when_energy_moves_slowly():
    energy = np.random.default_rng(1).normal(size=(4, 400))
    energy[2] = np.cumsum(energy[2])  # a random walk: E-BFMI ≈ 1/400
    msgs = check_run(_idata(energy=energy))
    assert msgs == [_one(msgs, "E-BFMI")]
    assert "< 0.3" in msgs[0] and "in chain(s) 2:" in msgs[0]
    # Neal's Gibbs-within-HMC records the energy of a changing conditional: no E-BFMI there.
    # Runs record it (Kernel.gibbs_within); runs written before are read by sampler name.
    gibbs = _idata(energy=energy)
    gibbs.posterior.attrs.update(sampler="my_sampler", gibbs_within_hmc=1)
    assert check_run(gibbs) == []
    old = _idata(energy=energy)
    old.posterior.attrs["sampler"] = "ahmc_gibbs"
    assert check_run(old) == []
    plain = _idata(energy=energy)
    plain.posterior.attrs.update(sampler="neal_lookalike", gibbs_within_hmc=0)
    assert msgs == check_run(plain)


def test_tree_depth_against_the_runs_maximum():
    depth = np.full((4, 400), 3, np.int64)
    depth[:, :20] = 10  # 5 % of transitions at the default maximum 10
    msg = _one(check_run(_idata(tree_depth=depth)), "tree depth")
    assert "maximum 10 in 5.0% of sampling transitions > 1%" in msg
    depth[:, :20] = 3
    depth[0, :4] = 10  # 0.25 %: within the threshold
    assert check_run(_idata(tree_depth=depth)) == []
    depth[:, :40] = 6  # 10 % at a run's own max_tree_depth=6 (config.json in the attrs)
    idata = _idata(tree_depth=depth)
    assert check_run(idata) == []
    idata.posterior.attrs["config"] = json.dumps({"knobs": {"max_tree_depth": 6}})
    assert "maximum 6 in 10.0%" in _one(check_run(idata), "tree depth")


@pytest.mark.parametrize("rate, needle", [(0.01, "< 0.05"), (1.0, "> 0.995")])
def test_acceptance_bounds(rate, needle):
    msgs = check_run(_idata(acceptance_rate=np.full((4, 400), rate)))
    assert msgs == [_one(msgs, "mean acceptance")] and needle in msgs[0]


def test_divergences_in_sample_stats():
    div = np.zeros((4, 400), bool)
    div[3, 7] = True
    msgs = check_run(_idata(diverging=div))
    assert len(msgs) == 1
    assert msgs[0].startswith("1 divergent transitions after warm-up (0.1% of 1600 draws) > 0")


def test_a_coordinate_constant_by_construction_is_not_judged():
    """The Cholesky factor L of a 2 × 2 correlation matrix: L[0,0] = 1 and L[0,1] = 0 in
    every draw of every chain, so they have no ESS, but nothing is wrong. The same entry stuck
    at a different value in each chain is judged: ESS 0."""
    rng = np.random.default_rng(1)
    r = np.tanh(rng.normal(size=(4, 400)))
    chol = np.zeros((4, 400, 2, 2))
    chol[..., 0, 0], chol[..., 1, 0], chol[..., 1, 1] = 1.0, r, np.sqrt(1.0 - r**2)
    idata = _idata()
    idata.posterior["L"] = (("chain", "draw", "row", "col"), chol)
    assert check_run(idata) == []
    s = summarize(idata)
    assert s["variables"]["L"]["ess_bulk"][0] == [None, None]  # no ESS, as before
    assert s["run"]["ess_bulk"]["min"] > 400  # the judged coordinates' figures only
    chol[..., 0, 0] = np.arange(4.0)[:, None]  # broken: each chain stuck where it started
    idata.posterior["L"] = (("chain", "draw", "row", "col"), chol)
    assert "bulk ESS min 0 (L[0,0])" in _one(check_run(idata), "ESS")
    assert summarize(idata)["run"]["ess_bulk"]["min"] == 0.0


def test_one_stuck_chain_is_named():
    idata = _idata()
    idata.posterior["x"][2] = idata.posterior["x"][2, 0]  # chain 2 never moves
    msgs = check_run(idata)
    assert "1 of 4 chains never moved (chain 2:" in _one(msgs, "never moved")
    assert _one(msgs, "R-hat")  # the other coordinates disagree with the stuck chain
    # not every chain is constant: ArviZ's ESS of the coordinate stands in the summary
    assert None not in summarize(idata)["variables"]["x"]["ess_bulk"]


# ---------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------
def test_cli_prints_each_warning_once(tmp_path, monkeypatch, capsys):
    from bomcmc.cli import main as cli

    env = dict(os.environ, BOMCMC_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("BOMCMC_DEBUG", None)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC)] + [p for p in [env.get("PYTHONPATH")] if p])
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "bomcmc", "sample", "--posterior", "gauss-100-illcond",
         "--sampler", "hmc", "--chains", "2", "--draws", "200", "--warmup", "200", "--out", str(out),
         "--no-progress"], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines and all(line.startswith("bomcmc: warning: ") for line in lines), proc.stderr
    assert len(lines) == len(set(lines))  # Python's own warning printing stays quiet
    assert "SamplingWarning" not in proc.stderr
    assert sum("divergent transitions" in line for line in lines) == 1
    assert sum("mean acceptance 0 < 0.05" in line for line in lines) == 1
    # summary --json carries the same messages (in-process: no second JAX start-up)
    monkeypatch.setenv("BOMCMC_NO_CACHE", "1")
    assert cli.main(["summary", str(out), "--json"]) == 0
    captured = capsys.readouterr()
    s = json.loads(captured.out)
    assert ["bomcmc: warning: " + m for m in s["warnings"]] == lines
    assert captured.err.splitlines() == lines


# ---------------------------------------------------------------------------------------
# Numbers with the digits that matter
# ---------------------------------------------------------------------------------------
def test_values_beside_their_bounds_keep_the_digits_that_matter():
    """The defect: R-hat 1.011 printed as "R-hat 1.01 > 1.01"."""
    from bomcmc.diagnostics.checks import beside

    assert beside(1.011, 1.01) == "1.011"
    assert beside(1.0101, 1.01) == "1.0101"
    assert beside(99.96, 100) == "99.96"
    assert beside(0.04996, 0.05) == "0.04996"
    assert beside(0.99504, 0.995) == "0.99504"
    assert beside(0.01004, 0.01, percent=True) == "1.004%"
    assert beside(2.345, 1.01) == "2.35"  # three figures where they suffice


def test_rhat_message_shows_a_value_above_the_bound():
    idata = _idata()
    conv = {"ess_bulk": idata.posterior * 0 + 1e4, "ess_tail": idata.posterior * 0 + 1e4,
            "r_hat": (idata.posterior.isel(draw=0) * 0 + 1.011).drop_vars("draw")}
    msg = _one(check_run(idata, figures=conv), "R-hat")
    assert msg.startswith("R-hat 1.011 > 1.01 ")


@pytest.mark.filterwarnings("ignore::bomcmc.SamplingWarning")
def test_a_run_and_its_summary_compute_the_convergence_figures_once(monkeypatch):
    """`sample` checks the run and its summary reports the same figures: ArviZ's ESS, MCSE
    and R-hat are computed once, and the summary is the one computed afresh."""
    from bomcmc.diagnostics import checks, summary

    calls, real = [], checks.convergence

    def counted(*args, **kw):
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(checks, "convergence", counted)
    monkeypatch.setattr(summary, "convergence", counted)
    res = bomcmc.sample(posterior="gauss-2d-corr", sampler="hmc", chains=2, warmup=20,
                        draws=50, step_size=0.3, steps=5, adapt="none", progress=False)
    once = res.summary()
    assert len(calls) == 1
    afresh = summary.summarize(res.idata, res.totals, res.advice)
    assert len(calls) == 2
    assert json.dumps(once, sort_keys=True) == json.dumps(afresh, sort_keys=True)


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-12), (np.float32, 1e-6)])
def test_convergence_figures_are_arvizs_without_its_numba_functions(monkeypatch, dtype, rtol):
    """The run's ESS, MCSE and R-hat are ArviZ's, by its NumPy path (`checks.numpy_path`):
    equal to its default path's to rounding, with the Numba functions that path compiles in
    every process never called, and ArviZ's own setting left as it was."""
    from arviz.stats import diagnostics as az_diag
    from arviz.utils import Numba

    from bomcmc.diagnostics import checks

    idata = _idata(seed=3)
    idata.posterior["x"] = idata.posterior["x"].astype(dtype)
    ds = idata.posterior
    default = {"ess_bulk": az.ess(ds, method="bulk"), "ess_tail": az.ess(ds, method="tail"),
               "mcse_mean": az.mcse(ds, method="mean"), "r_hat": az.rhat(ds)}
    flag = Numba.numba_flag

    def numba_variance(*args, **kwargs):
        raise AssertionError("ArviZ's Numba variance was called")

    monkeypatch.setattr(az_diag, "svar", numba_variance)
    figures = checks.convergence(idata)
    assert check_run(idata, figures=figures) == []
    assert Numba.numba_flag == flag
    for key, value in default.items():
        np.testing.assert_allclose(figures[key]["x"].values, value["x"].values, rtol=rtol)
