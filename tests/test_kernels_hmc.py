"""The HMC kernel and the driver, tested statistically against targets with known moments."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from stats import assert_moments

import bomcmc
from bomcmc import models
from bomcmc.kernels import hmc

SEEDS = (0, 1, 2)


def draws_of(result, name="x"):
    return np.asarray(result.idata.posterior[name])


@pytest.mark.parametrize("seed", SEEDS)
def test_correlated_2d_gaussian(seed):
    """gauss-2d-corr (Wang 2012, eq. 2.3), random trajectory length."""
    post = models.get("gauss-2d-corr")
    r = bomcmc.sample(sampler="hmc", posterior="gauss-2d-corr", chains=4, draws=2000, warmup=200, seed=seed,
                      step_size=0.15, steps=40, random_steps=True, progress=False)
    assert_moments(draws_of(r), post.mean, np.diag(post.cov), label=f"seed {seed}")
    # the correlation is part of the target too
    x = draws_of(r).reshape(-1, 2)
    assert abs(np.corrcoef(x.T)[0, 1] - 0.99) < 0.01


@pytest.mark.parametrize("seed", SEEDS)
def test_illconditioned_100d_with_mass_matrix(seed):
    """gauss-100-illcond (sd log-spaced over [0.01, 1]) with the exact diagonal metric M⁻¹ = diag(sd²)."""
    post = models.get("gauss-100-illcond")
    var = np.diag(post.cov)
    r = bomcmc.sample(sampler="hmc", posterior="gauss-100-illcond", chains=4, draws=1000, warmup=100, seed=seed,
                      step_size=0.5, steps=6, random_steps=True, inverse_mass_matrix=var,
                      progress=False)
    assert_moments(draws_of(r), post.mean, var, label=f"seed {seed}")


@pytest.mark.parametrize("seed", SEEDS)
def test_illconditioned_100d_identity_mass(seed):
    """The same target with identity mass: the step size is bound by sd=0.01, long trajectories."""
    post = models.get("gauss-100-illcond")
    var = np.diag(post.cov)
    r = bomcmc.sample(sampler="hmc", posterior="gauss-100-illcond", chains=4, draws=1000, warmup=200, seed=seed,
                      step_size=0.012, steps=200, random_steps=True, progress=False)
    assert_moments(draws_of(r), post.mean, var, label=f"seed {seed}")


def test_user_function_with_dict_pytree():
    """A plain JAX function over a dict: variables are named by the keys, shapes kept."""
    def logdensity(p):
        return -0.5 * jnp.sum((p["mu"] - 1.0) ** 2) - 0.5 * jnp.sum((p["tau"] / 2.0) ** 2)

    init = {"mu": jnp.zeros(3), "tau": jnp.zeros((2, 2))}
    r = bomcmc.sample(logdensity, init, sampler="hmc", chains=4, draws=1500, warmup=200, seed=3,
                      step_size=0.4, steps=8, random_steps=True, progress=False)
    post = r.idata.posterior
    assert post["mu"].shape == (4, 1500, 3) and post["tau"].shape == (4, 1500, 2, 2)
    assert_moments(np.asarray(post["mu"]), np.ones(3), np.ones(3), label="mu")
    tau = np.asarray(post["tau"]).reshape(4, 1500, 4)
    assert_moments(tau, np.zeros(4), 4.0 * np.ones(4), label="tau")


def test_info_record_and_sample_stats():
    r = bomcmc.sample(sampler="hmc", posterior="gauss-iid-5", chains=2, draws=200, warmup=50, seed=0,
                      step_size=0.3, steps=7, progress=False)
    ss = r.idata.sample_stats
    for name in ("acceptance_rate", "energy", "energy_error", "diverging", "n_steps", "step_size",
                 "n_grad", "sq_jump", "esjd", "lp"):
        assert ss[name].shape == (2, 200), name
    assert np.all(np.asarray(ss["n_steps"]) == 7)
    assert r.totals["n_grad"] == 2 * 200 * 7 and r.totals["n_grad_warmup"] == 2 * 50 * 7
    acc = np.asarray(ss["acceptance_rate"])
    assert np.all((acc >= 0) & (acc <= 1))
    # a rejected move has zero jump; an accepted one moved
    assert np.all(np.asarray(ss["sq_jump"]) >= 0)


def test_random_steps_are_uniform_on_1_to_L():
    r = bomcmc.sample(sampler="hmc", posterior="gauss-iid-3", chains=4, draws=2000, warmup=0, seed=1,
                      step_size=0.2, steps=10, random_steps=True, progress=False)
    n = np.asarray(r.idata.sample_stats["n_steps"]).ravel()
    counts = np.bincount(n, minlength=11)
    assert counts[0] == 0 and n.max() == 10
    # chi-square test of uniformity on {1..10}, 8000 draws
    from scipy.stats import chisquare
    assert chisquare(counts[1:]).pvalue > 1e-3


def test_divergence_is_counted_not_a_crash():
    """A log density that is -inf/NaN outside a box: proposals leaving it diverge and are rejected."""
    def logdensity(x):
        inside = jnp.all(jnp.abs(x) < 1.5)
        return jnp.where(inside, -0.5 * jnp.sum(x**2), jnp.nan)

    r = bomcmc.sample(logdensity, jnp.zeros(2), sampler="hmc", chains=2, draws=300, warmup=0, seed=0,
                      step_size=0.5, steps=10, progress=False)
    ss = r.idata.sample_stats
    div = np.asarray(ss["diverging"])
    assert div.sum() > 0
    assert np.all(np.asarray(ss["acceptance_rate"])[div] == 0)
    x = np.asarray(r.idata.posterior["x"])
    assert np.all(np.isfinite(x)) and np.all(np.abs(x) < 1.5)
    assert r.totals["divergences"] == int(div.sum())


def test_a_proposal_beyond_a_wall_is_rejected_but_is_no_divergence():
    """A trajectory that ends where the log density is -inf, its position, gradient and
    momentum finite and its kinetic energy nearly what it was, proposed a point of zero
    density: rejected, not a divergence. One whose kinetic energy grew beyond the bound (an
    overflow to -inf), or that ends in NaN, diverged."""
    from bomcmc.kernels.integrators import IntegratorState

    x, p = jnp.array([0.1, -0.2]), jnp.array([0.5, 1.0])
    start_lp, inv_mass = -0.025, jnp.ones(2)

    def diverged(logdensity, momentum, grad=jnp.zeros(2)):
        end = IntegratorState(x + 0.3, momentum, jnp.asarray(logdensity), grad)
        _, delta, diverging, accept_prob, accepted = hmc.metropolis(
            jnp.asarray(start_lp), end, p, inv_mass, jnp.asarray(0.0))
        assert float(accept_prob) == 0.0 and not bool(accepted)
        return bool(diverging)

    assert not diverged(-jnp.inf, p * 1.1)  # beyond a wall
    assert diverged(-jnp.inf, p * 1e3)  # kinetic energy up by 6e5: a blow-up
    assert diverged(-jnp.inf, p, grad=jnp.array([jnp.inf, 0.0]))
    assert diverged(jnp.nan, p)
    box = lambda x: jnp.where(jnp.all(jnp.abs(x) < 1.5), -0.5 * jnp.sum(x**2), -jnp.inf)  # noqa
    r = bomcmc.sample(box, jnp.zeros(2), sampler="hmc", chains=2, draws=300, warmup=0, seed=0,
                      step_size=0.5, steps=10, progress=False)
    acc = np.asarray(r.idata.sample_stats["acceptance_rate"])
    assert (acc == 0).sum() > 10 and r.totals["divergences"] == 0
    assert np.all(np.abs(np.asarray(r.idata.posterior["x"])) < 1.5)


def test_energy_error_threshold_marks_divergence():
    """A finite but huge energy error (> 1000) is a divergence."""
    logdensity = lambda x: -0.5 * jnp.sum(x**2) * 1e4  # noqa: E731 - sd 0.01
    state = hmc.init(jnp.ones(2) * 0.05, logdensity)
    knobs = hmc.default_knobs(2, step_size=1.0, steps=3)
    _, info = hmc.step(jax.random.PRNGKey(0), state, logdensity, knobs)
    assert bool(info.diverging) and float(info.acceptance_rate) == 0.0
    assert np.isfinite(float(info.energy_error)) and float(info.energy_error) > 1000


def test_changing_knobs_never_recompiles():
    """Step size, L and the mass are runtime values: the jitted kernel is traced once."""
    traces = []

    def logdensity(x):
        traces.append(1)  # runs only when JAX traces
        return -0.5 * jnp.sum(x**2)

    state = hmc.init(jnp.zeros(3), logdensity)
    n_after_init = len(traces)
    step = jax.jit(hmc.step, static_argnums=(2,))
    key = jax.random.PRNGKey(0)
    for eps, L, rnd, m in [(0.1, 5, False, 1.0), (0.3, 17, True, 2.0), (0.05, 1, False, 0.5)]:
        knobs = hmc.default_knobs(3, step_size=eps, steps=L, random_steps=rnd,
                                  inverse_mass_matrix=np.full(3, m))
        state, info = step(key, state, logdensity, knobs)
        assert int(info.n_steps) <= L and float(info.step_size) == pytest.approx(eps)
    assert step._cache_size() == 1
    traced = len(traces) - n_after_init
    # one trace of step: value_and_grad traces the function once inside the leapfrog body
    assert traced == 1, traced


def test_tuner_changing_knobs_between_chunks_reuses_executable():
    """A tuner that changes ε and L after every chunk: the driver's one compiled chunk runs all."""
    from bomcmc.tuning.base import FixedTuner

    class Cycling(FixedTuner):
        name = "cycling"
        i = 0

        def after_chunk(self, knobs, chunk):
            self.i += 1
            return knobs._replace(step_size=knobs.step_size * 0 + 0.1 * (1 + self.i % 3),
                                  num_steps=knobs.num_steps * 0 + 3 + self.i % 4)

    traces = []

    def logdensity(x):
        traces.append(1)
        return -0.5 * jnp.sum(x**2)

    r = bomcmc.sample(logdensity, jnp.zeros(2), sampler="hmc", chains=2, draws=60, warmup=0, chunk_size=10,
                      seed=0, step_size=0.1, steps=3, tuner=Cycling(), progress=False)
    eps = np.asarray(r.idata.sample_stats["step_size"])[0]
    assert len(np.unique(np.round(eps, 6))) == 3
    assert len(np.unique(np.asarray(r.idata.sample_stats["n_steps"]))) == 4
    # flatten (1 eval_shape), init (1), AOT compile of the chunk (eval_shape + lowering)
    assert len(traces) <= 4, len(traces)


def test_thinning_keeps_every_kth_and_counts_all_gradients():
    kw = dict(sampler="hmc", posterior="gauss-iid-2", chains=2, warmup=10, seed=5, step_size=0.3, steps=4,
              progress=False)
    full = bomcmc.sample(draws=30, **kw)
    thin = bomcmc.sample(draws=10, thin=3, **kw)
    x_full = np.asarray(full.idata.posterior["x"])
    x_thin = np.asarray(thin.idata.posterior["x"])
    np.testing.assert_array_equal(x_thin, x_full[:, 2::3])
    assert thin.totals["n_grad"] == full.totals["n_grad"]


def test_chunking_does_not_change_draws():
    kw = dict(sampler="hmc", posterior="logistic-ripley", chains=2, draws=50, warmup=20, seed=7,
              step_size=0.1, steps=5, random_steps=True, progress=False)
    a = bomcmc.sample(chunk_size=50, **kw)
    b = bomcmc.sample(chunk_size=7, **kw)
    np.testing.assert_array_equal(np.asarray(a.idata.posterior["beta"]),
                                  np.asarray(b.idata.posterior["beta"]))
