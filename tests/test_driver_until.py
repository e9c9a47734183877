"""Run until precise (`driver/until.py`): sampling stops when every coordinate's bulk and tail
ESS reach the target and R-hat is at most 1.01, or at the cap; it resumes under the same rule."""

import shutil

import arviz as az
import numpy as np
import pytest

import bomcmc

SCALES = np.array([1.0, 3.0, 0.3])


def logdensity(p):
    return -0.5 * ((p["x"] / SCALES) ** 2).sum()


RUN = dict(sampler="hmc", step_size=0.4, steps=6, chains=4, warmup=50, chunk_size=50,
           seed=1, progress=False)


def _min_ess(idata) -> float:
    ess = [az.ess(idata, method=m)["x"].values.min() for m in ("bulk", "tail")]
    return float(min(ess))


def test_stops_once_precise_well_before_the_cap(tmp_path):
    res = bomcmc.sample(logdensity, {"x": np.zeros(3)}, draws=5000, until_ess=300,
                        out=tmp_path / "run", **RUN)
    until = res.totals["until"]
    draws = res.idata.posterior.sizes["draw"]
    assert until["reached"] and until["draws"] == draws < 5000
    assert _min_ess(res.idata) >= 300 and until["rhat"] <= 1.01
    # it stopped at the first chunk end where the rule held: one chunk fewer did not suffice
    from bomcmc.driver.until import precision

    x = res.idata.posterior["x"].values[:, : draws - RUN["chunk_size"]]
    assert not precision(x).reaches(300)
    # resumed from an earlier chunk, the rule stops at the same draw with the same draws
    cut = tmp_path / "cut"
    shutil.copytree(tmp_path / "run", cut)
    for f in sorted((cut / "chunks").iterdir())[-2:]:
        f.unlink()
    (cut / "idata.nc").unlink()
    (cut / "run.json").unlink()
    again = bomcmc.resume(cut, logdensity, {"x": np.zeros(3)}, progress=False)
    np.testing.assert_array_equal(again.idata.posterior["x"].values,
                                  res.idata.posterior["x"].values)


def test_the_cap_ends_a_run_that_cannot_be_precise_and_says_so():
    with pytest.warns(bomcmc.SamplingWarning, match="stopped at its cap before its rule held"):
        res = bomcmc.sample(logdensity, {"x": np.zeros(3)}, draws=100, until_mcse=0.01, **RUN)
    until = res.totals["until"]
    assert until["until_ess"] == pytest.approx(1e4) and not until["reached"]
    assert res.idata.posterior.sizes["draw"] == 100


@pytest.mark.parametrize("kw, match", [
    (dict(until_ess=-1), "until_ess must be a positive number"),
    (dict(until_seconds=5), "give until_ess too"),
    (dict(until_ess=100, until_mcse=0.1), "not both"),
    (dict(until_mcse=2.0), "until_mcse must be a fraction"),
    (dict(until_ess=100, chains=1), "needs chains >= 2"),  # one chain's R-hat is undefined
])
def test_bad_targets_are_one_line(kw, match):
    with pytest.raises(bomcmc.BomcmcError, match=match) as e:
        bomcmc.sample(logdensity, {"x": np.zeros(3)}, draws=100, **{**RUN, **kw})
    assert "\n" not in str(e.value)


def test_the_command_line_runs_until_precise(tmp_path, monkeypatch):
    import json

    from bomcmc.cli.main import main

    monkeypatch.setenv("BOMCMC_NO_CACHE", "1")  # leave this process's JAX config alone
    out = tmp_path / "run"
    assert main(["sample", "--posterior", "gauss-2d-corr", "--sampler", "nuts", "--warmup",
                 "200", "--draws", "4000", "--chunk-size", "100",
                 "--until-mcse", "0.1", "--out", str(out), "--no-progress"]) == 0
    run = json.loads((out / "run.json").read_text())
    until = run["until"]
    assert until["until_ess"] == 100 and until["reached"]
    assert until["draws"] < 4000 and until["ess_bulk"] >= 100
    # run.json accounts for the whole command, phase by phase
    phases = ["prepare_s", "compile_s", "wall_s_warmup", "wall_s", "assemble_s", "write_s"]
    assert all(run[k] >= 0 for k in phases + ["startup_s", "report_s"])
    assert sum(run[k] for k in phases) <= run["wall_s_total"] * 1.01
    assert run["wall_s_total"] - sum(run[k] for k in phases) < 0.5 * run["wall_s_total"]


def test_the_rule_decides_as_the_whole_precision_at_every_chunk(monkeypatch):
    """`Until.add` reads one coordinate's bulk ESS first and the whole precision only where
    no coordinate falls short: the same decision after every chunk as `precision` alone,
    with the whole precision computed a few times instead of after every chunk."""
    from bomcmc.driver import until as until_mod

    rng = np.random.default_rng(3)
    # AR(1) chains, one coordinate slower than the others, in 20-draw chunks
    rho = np.array([0.3, 0.7, 0.1])
    x = np.zeros((4, 800, 3))
    x[:, 0] = rng.normal(size=(4, 3))
    for t in range(1, 800):
        x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho**2) * rng.normal(size=(4, 3))
    target = 450.0  # reached near 500 draws
    whole = until_mod.precision
    calls = []
    monkeypatch.setattr(until_mod, "precision", lambda p: calls.append(1) or whole(p))
    rule = until_mod.Until(target, None)
    for k in range(0, 800, 20):
        rule.add(x[:, k:k + 20], 0.1)
        assert rule.done == whole(x[:, :k + 20]).reaches(target), k + 20
        if rule.done:
            break
    assert rule.done and len(calls) < (k + 20) // 20 / 2
    assert rule.report()["ess_bulk"] == whole(x[:, :k + 20]).ess_bulk
