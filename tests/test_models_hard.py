"""The hard-posterior suite (models/hard.py): the default sampler and adaptive HMC get ridges,
strong correlations and an unscaled covariate right (means within 4 combined MCSE, sds within
10 % of the exact values), and warn on the funnel and the centred eight schools.

Margins measured over seeds 0-5 (docs/defaults.md, `experiments/suite_margins.py`): worst
mean error 3.88 MCSE (ahmc with its batch burn-in, regression-correlated, seed 2), worst sd
error 0.049; these tests run seeds 0-2. That 3.88 is chance, not bias: over seeds 12-39
the 700 z values of ahmc's means on that posterior have sd 1.006 (max 3.93), and of seeds
6-11 one run exceeds 4 (4.53, seed 11), so a run fails the bound by chance about once in
several hundred, on any machine.
"""

import warnings

import numpy as np
import pytest
from reference import assert_matches, compare
from tiers import by_default

import bomcmc
from bomcmc import models, registry
from bomcmc.models import posteriordb as pdb

pytestmark = pytest.mark.usefixtures("compilation_cache")  # fixture in conftest.py

# the default warm-up ("auto"): AHMC's stops when it has learned, NUTS's is Stan's 1000
RUN = dict(chains=4, warmup="auto", draws=1000, float64=True, progress=False)
GAUSSIAN = ["regression-year", "regression-correlated", "gauss-100-corr", "ridge-2d"]
# nuts's diagonal metric cannot get gauss-100-corr's sds right (docs/defaults.md): not asked
NUTS_PASSES = ["regression-year", "regression-correlated", "ridge-2d"]


def exact_reference(post) -> dict:
    mean, cov = np.asarray(post.mean), np.asarray(post.cov)
    key = next(iter(post.init_position)) if isinstance(post.init_position, dict) else "x"
    return {f"{key}[{i + 1}]": {"mean": float(mean[i]), "sd": float(np.sqrt(cov[i, i])),
                                "mcse_mean": 0.0} for i in range(mean.size)}


def check(name, sampler, seed):
    post = models.get(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bomcmc.SamplingWarning)
        res = bomcmc.sample(posterior=name, sampler=sampler, seed=seed, **RUN)
    rows = compare(pdb.flatten_idata(res.idata), exact_reference(post))
    assert_matches(rows, f"{name} [{sampler}] seed {seed}")


def test_the_default_sampler_is_self_tuning():
    assert registry.DEFAULT == "ahmc" and registry.get(registry.DEFAULT).tunes_itself


# the two regressions repeat the correlated case at other sizes: `-m slow`
@pytest.mark.parametrize("name", by_default(GAUSSIAN, keep=("gauss-100-corr", "ridge-2d")))
def test_default_sampler_on_hard_gaussians(name):
    for seed in (0, 1, 2):
        check(name, registry.DEFAULT, seed)


# BlackJAX's NUTS with Stan's warm-up on the hard suite: -m slow (CI time); NUTS's moments
# stay in CI in test_kernels_nuts.py, the default sampler on this suite above
@pytest.mark.slow
@pytest.mark.parametrize("name", NUTS_PASSES)
def test_nuts_on_hard_gaussians(name):
    for seed in (0, 1, 2):
        check(name, "nuts", seed)


# the centred eight schools repeats the claim on a further funnel (`-m slow`)
@pytest.mark.parametrize("name", by_default(
    ["funnel-10", "eight_schools-eight_schools_centered"], keep=1))
def test_a_funnel_is_reported(name):
    """The right answer is a warning: the default sampler must say the run went wrong."""
    with pytest.warns(bomcmc.SamplingWarning):
        bomcmc.sample(posterior=name, seed=0, **RUN)


def test_exact_moments_match_a_direct_computation():
    """regression-year's exact moments are the conjugate formulas' (checked against a
    least-squares fit: with a flat-ish prior the mean is the OLS estimate)."""
    post = models.get("regression-year")
    cov = post.cov
    corr = cov[0, 1] / np.sqrt(cov[0, 0] * cov[1, 1])
    assert corr < -0.999
    post2 = models.get("gauss-100-corr")
    np.testing.assert_allclose(np.diag(post2.cov), 1.0)
