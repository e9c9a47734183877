"""What keeps adaptive HMC's defaults safe on posteriors nobody tuned it for: a dense metric
when the correlations call for it (started from the Laplace approximation), a reward that a
divergence zeroes, sampling that starts at burn-in's incumbent and refines near it."""

import arviz as az
import jax.numpy as jnp
import numpy as np
import pytest
from stats import assert_moments
from tiers import by_default

import bomcmc
from bomcmc.tuning import ahmc_tuner, bandit, learned_metric, rewards
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
    # without the rule (the authors' reward, docs/rmhmc.md) the block keeps its jumps' score
    assert rewards.esjd(chunk, divergence_rule=False) == pytest.approx(0.5)


# `-m slow`: "auto" going dense is checked by test_the_run_records_the_metric_its_tuner_learned
# (tests/test_diagnostics_advice.py), the Laplace metric by the tests below
@pytest.mark.slow
def test_laplace_metric_starts_dense_on_a_ridge():
    """regression-year: intercept and slope correlate at −0.9999; the metric the tuner starts
    with is the normalised inverse Hessian at the mode, so it is dense with that correlation."""
    post = bomcmc.models.get("regression-year")
    res = bomcmc.sample(posterior=post, sampler="ahmc", warmup=200, draws=10, seed=0,
                        chunk_size=10, **FAST)
    import json

    state = json.loads(res.idata.tuning.attrs["tuner_state"])
    assert state["metric_kind"] == "dense" and state["dense_knob"]
    cov = post.cov
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
    t.reset_gp()
    t.bandit = bandit.observe(t.bandit, (np.log(0.1), 20), 1.0)
    t.bandit = t.bandit._replace(i=50)  # burn-in: the whole box
    lo, hi = t.search_box()
    np.testing.assert_allclose([lo, hi], [t.lower, t.upper])
    t.bandit = t.bandit._replace(i=150)  # sampling: a factor TRUST around (0.1, 20)
    lo, hi = t.search_box()
    f = ahmc_tuner.TRUST
    np.testing.assert_allclose(np.exp([lo[0], hi[0]]), [0.1 / f, 0.1 * f])
    np.testing.assert_allclose([lo[1], hi[1]], [20 / f, 20 * f])


def _sblrc_at_its_mode():
    """sblrc-blr's flat log density (β₁..β₅, log σ) and its mode, by SciPy's BFGS."""
    import jax
    import scipy.optimize

    from bomcmc.posterior import flatten

    f = flatten(bomcmc.models.get("sblrc-blr")).logdensity_fn
    u = jax.jit(jax.value_and_grad(lambda x: -f(x)))
    res = scipy.optimize.minimize(lambda x: [np.asarray(v) for v in u(x)], np.zeros(6),
                                  jac=True, method="BFGS", options=dict(gtol=1e-9))
    # a Newton step from there moves it by less than 10⁻⁶ posterior sd: the mode
    cov = np.linalg.inv(-np.asarray(jax.hessian(f)(res.x)))
    assert np.max(np.abs(cov @ res.jac) / np.sqrt(np.diag(cov))) < 1e-6
    return f, res.x


def _condition(a, b):
    """κ of a⁻¹b: 1 when the metric a is the covariance b up to scale."""
    ev = np.linalg.eigvals(np.linalg.solve(a, b)).real
    return ev.max() / ev.min()


def test_laplace_metric_ignores_a_chain_that_stalled_far_from_the_mode():
    """Three chains' L-BFGS points at sblrc-blr's mode, one stalled 100 posterior sd out in
    β₁, 1.9·10⁴ below the mode in log density (as L-BFGS left one of 16 chains at seed 0,
    3.8·10⁴ below). The Laplace metric is the inverse Hessian at the mode; the average over
    all four chains (the rule before) is a metric κ ≈ 200 off."""
    import jax

    from bomcmc.kernels.hmc import HMCKnobs

    f, mode = _sblrc_at_its_mode()
    laplace = np.linalg.inv(-np.asarray(jax.hessian(f)(mode)))
    far = mode.copy()
    far[0] += 100 * np.sqrt(laplace[0, 0])
    starts = np.stack([mode, mode, mode, far])
    knobs = HMCKnobs(np.full(4, 0.1), np.full(4, 5), np.ones((4, 6)), np.ones(4, bool))
    state, knobs = learned_metric.shape_metric(learned_metric.MetricState(), "auto", knobs)
    state, knobs, grads = learned_metric.laplace_metric(state, "auto", knobs, f, starts)
    inv = np.asarray(knobs.inverse_mass_matrix)
    assert state.metric_kind == "dense" and grads == (2 * 6 + 1) * 4
    assert _condition(inv[0], laplace) < 1 + 1e-6
    average = np.linalg.inv(-np.mean([np.asarray(jax.hessian(f)(x)) for x in starts], axis=0))
    assert _condition(average, laplace) > 100


def test_window_regularisation_keeps_small_scales_and_their_correlations():
    """A window estimate of two coefficients with sd 10⁻³ and correlation 0.9 beside a unit
    one, from n = 240 draws: Stan's shrinkage towards 10⁻³ I adds 2·10⁻⁵ to variances of
    10⁻⁶ and leaves the metric 18 times off; in the coordinates' own scales it stays within
    rounding of the estimate. Scaling the draws scales the metric. A coordinate that never
    moved falls back on Stan's rule (finite, positive definite)."""
    from bomcmc.adaptation.welford import stan_regularize
    from bomcmc.tuning.learned_metric import regularize

    sd = np.array([1e-3, 1e-3, 1.0])
    corr = np.array([[1.0, 0.9, 0.0], [0.9, 1.0, 0.0], [0.0, 0.0, 1.0]])
    cov = corr * np.outer(sd, sd)
    assert _condition(regularize(cov, 240), cov) < 1.001
    assert _condition(stan_regularize(cov, 240, np.eye(3)), cov) > 10
    np.testing.assert_allclose(regularize(100.0 * cov, 240), 100.0 * regularize(cov, 240))
    np.testing.assert_allclose(regularize(np.diag(cov), 240), np.diag(regularize(cov, 240)))
    stuck = cov.copy()
    stuck[2, :] = stuck[:, 2] = 0.0
    np.linalg.cholesky(regularize(stuck, 240))
    assert np.all(regularize(np.diag(stuck), 240) > 0)


def test_laplace_metric_compiles_two_programs():
    """The Laplace metric's Hessian and its log density at the starts are each one compiled
    program: the log density dispatched op by op lowered a program for every op (12 for a
    logistic regression), each paid again in every process."""
    import jax.numpy as jnp
    from jax import monitoring

    from bomcmc.kernels.hmc import HMCKnobs

    X = jnp.asarray(np.random.default_rng(0).normal(size=(37, 7)))  # shapes no other test has

    def f(b):
        return -jnp.sum(jnp.logaddexp(0.0, -(X @ b))) - 0.5 * jnp.sum(b * b)

    lowered = []

    def listen(event, duration, **kwargs):
        if event == "/jax/core/compile/jaxpr_to_mlir_module_duration":
            lowered.append(event)

    starts = jnp.asarray(np.zeros((4, 7)) + 0.01 * np.arange(4)[:, None])
    knobs = HMCKnobs(np.full(4, 0.1), np.full(4, 5), np.ones((4, 7)), np.ones(4, bool))
    state, knobs = learned_metric.shape_metric(learned_metric.MetricState(), "auto", knobs)
    monitoring.register_event_duration_secs_listener(listen)
    try:
        learned_metric.laplace_metric(state, "auto", knobs, f, starts)
    finally:
        monitoring.unregister_event_duration_listener(listen)
    assert len(lowered) == 2, len(lowered)


@pytest.mark.parametrize("seed", by_default([0, 1, 2], keep=1))
def test_ahmc_samples_a_half_normal_written_with_a_wall(seed):
    """x ~ N(0, 1) on x > 0, written `jnp.where(x > 0, -x²/2, -inf)`: proposals beyond the
    wall are rejections, not divergences (`hmc.beyond_a_wall`), so neither the reward nor
    the ceiling on ε takes them for curvature; the mean sqrt(2/π) and the variance 1 − 2/π
    within the Bonferroni bound of MCSE, and a bulk ESS of 400 at least (seeds 0-5: 721 to
    1257). The broken variant, where they counted as divergences, sets the bandit's ε near
    its floor: ESS 5 to 9 and R-hat 1.4 to 2.9 on the same seeds (docs/defaults.md)."""
    wall = lambda p: jnp.where(p["x"] > 0, -0.5 * p["x"] ** 2, -jnp.inf)  # noqa: E731
    r = bomcmc.sample(wall, {"x": np.array(1.0)}, sampler="ahmc", draws=1000, seed=seed, **{
        k: v for k, v in FAST.items() if k != "adapt"})
    assert r.totals["divergences"] == 0
    assert float(az.ess(r.idata)["x"]) >= 400
    x = np.asarray(r.idata.posterior["x"])[..., None]
    assert_moments(x, np.array([np.sqrt(2 / np.pi)]), np.array([1 - 2 / np.pi]),
                   label=f"seed {seed}")
