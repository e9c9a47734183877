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
    """A stand-in for a SampleResult: 4 chains × 2000 iid N(0, scale²) draws of 6 coordinates
    (an AR(1) with coefficient 0.5 in each chain, so ESS is below the draws)."""
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
    # 6 coordinates, z ~ N(0, 1): |z| > 4 has probability 4e-4 over all of them
    assert same["max_abs_z"] < 4 and same["max_abs_sd_z"] < 4
    assert same["share_sd_off_10pct"] == 0
    wide = et.agreement(et.moments(_run(1, scale=1.1), ("x",)), ref)
    # sd's relative MCSE here is about 1/sqrt(2 ESS) = 1.3 %: 10 % is 5 of them on each side
    assert wide["max_abs_sd_z"] > 4 and wide["share_sd_z_above_4"] > 0.5
    assert wide["max_abs_z"] < 4  # the means still agree
