"""experiments/ess_tables.py's agreement of a run with a reference: the means' and the sds'
z in both runs' MCSEs (ArviZ) stay small for two runs of the same distribution and flag a
run whose spread is 10 % too wide."""

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import arviz as az
import numpy as np

SCRIPT = Path(__file__).resolve().parents[1] / "experiments" / "ess_tables.py"


def _module():
    spec = importlib.util.spec_from_file_location("ess_tables", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(seed, scale=1.0):
    """A stand-in for a SampleResult: 4 chains × 2000 draws of 6 coordinates, each an AR(1)
    with coefficient 0.5 and stationary law N(0, scale²), so ESS is below the draws."""
    rng = np.random.default_rng(seed)
    e = rng.normal(size=(4, 2000, 6))
    x = np.empty_like(e)
    x[:, 0] = e[:, 0]
    for t in range(1, x.shape[1]):
        x[:, t] = 0.5 * x[:, t - 1] + np.sqrt(1 - 0.25) * e[:, t]
    return SimpleNamespace(idata=az.from_dict(posterior={"x": scale * x}))


def test_agreement_passes_the_same_distribution_and_flags_a_wider_one():
    et = _module()
    ref = et.moments(_run(0), ("x",))
    same = et.agreement(et.moments(_run(1), ("x",)), ref)
    # 6 means and 6 sds, each z ~ N(0, 1): |z| > 4 has probability below 1e-3 over the 12
    assert same["max_abs_z"] < 4 and same["max_abs_sd_z"] < 4
    assert same["share_sd_off_10pct"] == 0
    wide = et.agreement(et.moments(_run(1, scale=1.1), ("x",)), ref)
    # each sd's relative MCSE here is about 1 %: a 10 % wider run is about 7 combined MCSEs
    # off (measured: max sd z 7.1-8.1, 5 or 6 of the 6 sds above 4, seeds 1-5)
    assert wide["max_abs_sd_z"] > 4 and wide["share_sd_z_above_4"] > 0.5
    assert wide["max_abs_z"] < 4  # the means still agree


def test_per_chain_ess_is_each_chains_own_near_the_ar1_value():
    # AR(1) with φ = 0.5: ESS = N (1 − φ)/(1 + φ) = 2000/3 ≈ 667 per chain, 2667 pooled
    # (measured on this series: monotone 535-793, bulk 511-790, pooled 2434-2827)
    et = _module()
    ess = et.per_chain_ess(_run(2), ("x",))
    assert ess["monotone"].shape == ess["bulk"].shape == (4, 6)
    assert np.all(np.abs(ess["monotone"] / 667 - 1) < 0.3)
    assert np.all(np.abs(ess["bulk"] / 667 - 1) < 0.3)
    assert np.all(np.abs(ess["pooled_monotone"] / 2667 - 1) < 0.2)
    assert et.spread(ess["monotone"])["min"].shape == (4,)


def test_a_chain_that_never_moved_counts_no_effective_draws():
    """A chain stuck at its start (docs/rmhmc.md: a ripley run whose every proposal
    diverged) counts ESS 0 on each coordinate, where ArviZ counts a constant series as N
    independent draws; the other chains keep their own ESS."""
    et = _module()
    run = _run(2)
    run.idata.posterior["x"][1] = run.idata.posterior["x"][1, 0]
    ess = et.per_chain_ess(run, ("x",))
    assert np.all(ess["monotone"][1] == 0) and np.all(ess["bulk"][1] == 0)
    assert np.all(ess["bulk"][[0, 2, 3]] > 300)
    assert float(np.squeeze(az.ess(run.idata.posterior["x"].values[1, :, 0]))) == 2000
