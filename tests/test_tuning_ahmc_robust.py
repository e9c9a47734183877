"""What keeps adaptive HMC's defaults safe on posteriors nobody tuned it for: a dense metric
when the correlations call for it (started from the Laplace approximation), a reward that a
divergence zeroes, sampling that starts at burn-in's incumbent and refines near it."""

import numpy as np
import pytest

import bomcmc
from bomcmc.tuning import ahmc_tuner, rewards
from bomcmc.tuning.ahmc_tuner import AHMCTuner, needs_dense

FAST = dict(chains=4, progress=False, float64=True, adapt=None)


def test_needs_dense_reads_the_correlations_not_the_noise():
    rng = np.random.default_rng(0)
    assert not needs_dense(np.eye(10), None)
    # correlation 0.4 between two coordinates: κ = 1.4/0.6 = 2.33 > DENSE_CONDITION; 0.3: 1.86
    assert needs_dense(np.array([[1.0, 0.4], [0.4, 1.0]]), None)
    assert not needs_dense(np.array([[1.0, 0.3], [0.3, 1.0]]), None)
    equi = np.full((10, 10), 0.9) + 0.1 * np.eye(10)
    assert needs_dense(equi, None) and needs_dense(equi, 1000)
    assert not needs_dense(equi, 15)  # fewer than 2d samples: never
    # independent coordinates sampled n = 3d times look correlated by chance: still diagonal
    x = rng.normal(size=(60, 20))
    assert not needs_dense(np.cov(x.T), 60)
    # a strongly correlated pair among scales that differ by 1000: dense
    cov = np.array([[1e6, -0.9999e3], [-0.9999e3, 1.0]])
    assert needs_dense(cov, None)


def test_a_divergence_zeroes_the_esjd_reward():
    info = {"esjd": np.ones((4, 10)), "diverging": np.zeros((4, 10), bool)}
    chunk = {"info": info, "num_steps": 4}
    assert rewards.esjd(chunk) == pytest.approx(0.5)
    info["diverging"][2, 7] = True
    assert rewards.esjd(chunk) == 0.0


def test_laplace_metric_starts_dense_on_a_ridge():
    """regression-year: intercept and slope correlate at −0.9999; the metric the tuner starts
    with is the normalised inverse Hessian at the mode, so it is dense with that correlation."""
    post = bomcmc.models.get("regression-year")
    res = bomcmc.sample(posterior=post, sampler="ahmc", warmup=200, draws=10, seed=0,
                        chunk_size=10, **FAST)
    import json

    state = json.loads(res.idata.tuning.attrs["tuner_state"])
    assert state["metric_kind"] == "dense" and state["dense_knob"]
    cov = post.meta["cov"]
    assert cov[0, 1] / np.sqrt(cov[0, 0] * cov[1, 1]) < -0.999


def test_auto_keeps_a_diagonal_metric_for_independent_coordinates():
    res = bomcmc.sample(posterior="gauss-100-illcond", sampler="ahmc", warmup=300, draws=10,
                        seed=0, chunk_size=10, **FAST)
    import json

    state = json.loads(res.idata.tuning.attrs["tuner_state"])
    assert state["metric_kind"] == "diag"


def test_sampling_proposals_stay_near_the_incumbent():
    t = AHMCTuner(warmup=100, eps_bounds=(1e-3, 1.0), steps_bounds=(1, 100), seed=0,
                  steps_cap=0)
    t.gp = t._make_gp()
    t.gp.add((np.log(0.1), 20), 1.0)
    t.i = 50  # burn-in: the whole box
    lo, hi = t.search_box()
    np.testing.assert_allclose([lo, hi], [t.lower, t.upper])
    t.i = 150  # sampling: a factor TRUST around (0.1, 20)
    lo, hi = t.search_box()
    f = ahmc_tuner.TRUST
    np.testing.assert_allclose(np.exp([lo[0], hi[0]]), [0.1 / f, 0.1 * f])
    np.testing.assert_allclose([lo[1], hi[1]], [20 / f, 20 * f])
