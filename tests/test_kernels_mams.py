"""MAMS (`kernels/mams.py`): BlackJAX's Metropolis-adjusted microcanonical transition with
HMC's knobs, alone and under adaptive HMC's bandit (`amams`)."""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from stats import assert_moments, moment_z_scores
from tiers import by_default

import bomcmc
from bomcmc import models
from bomcmc.errors import BomcmcError
from bomcmc.kernels import hmc, mams

POST = models.get("gauss-100-illcond")  # independent coordinates, sd log-spaced over [0.01, 1]
VAR = np.diag(POST.cov)
POOLED_MAX = 4.0


def _fixed_run(seed, step_size=1.5):
    r = bomcmc.sample(sampler="mams", posterior="gauss-100-illcond", chains=4, draws=1000,
                      warmup=100, seed=seed, step_size=step_size, steps=6,
                      inverse_mass_matrix=VAR, progress=False)
    return r, np.asarray(r.idata.posterior["x"])


def _pooled_variance_z(draws) -> float:
    """The 100 coordinates are independent, so the sum of their variance z-scores over √d is
    N(0, 1) for a correct sampler: a bias shared by all coordinates, too small to push any
    one past the Bonferroni bound, shows here."""
    _, z_var = moment_z_scores(draws, POST.mean, VAR)
    return float(z_var.sum() / np.sqrt(z_var.size))


@pytest.mark.parametrize("seed", (0, 1, 2))
def test_fixed_knobs_sample_the_gaussian(seed):
    # ε = 1.5 (HMC's units), L = 6, exact diagonal metric, acceptance 0.87: seeds 0-4 gave
    # max |z| 2.71, 2.76, 2.40, 3.33, 2.75 (means), 2.00, 2.91, 3.49, 3.50, 2.77 (variances)
    # against the Bonferroni bound 5.03, and pooled variance z 0.46, 1.27, -1.23, -1.10, 0.24
    r, x = _fixed_run(seed)
    assert_moments(x, POST.mean, VAR, label=f"seed {seed}")
    assert abs(_pooled_variance_z(x)) < POOLED_MAX
    ss = r.idata.sample_stats
    assert np.array_equal(np.asarray(ss["n_grad"]), mams.GRADS_PER_STEP * np.asarray(ss["n_steps"]))
    assert "energy" not in ss  # no E-BFMI for the isokinetic kinetic energy


def test_without_the_metropolis_test_fails(monkeypatch):
    """The same run with every proposal accepted (unadjusted microcanonical dynamics) shrinks
    the variances: pooled z -10.2 to -11.0 at seeds 0-2."""
    import blackjax.mcmc.adjusted_mclmc_dynamic as dynamic

    def always_accept(key, delta, state, end):
        return end, (jnp.asarray(True), jnp.minimum(1.0, jnp.exp(delta)), None)

    monkeypatch.setattr(dynamic, "adjusted_mclmc_proposal",
                        partial(dynamic.adjusted_mclmc_proposal, sample_proposal=always_accept))
    _, x = _fixed_run(0)
    assert _pooled_variance_z(x) < -2 * POOLED_MAX


def test_step_size_is_in_hmc_units():
    """The isokinetic step is ε√d: a lone transition at ε moves as far as ε√d of BlackJAX's
    own kernel (same keys, same draws)."""
    import blackjax

    d = 9
    logdensity = lambda x: -0.5 * jnp.sum(x ** 2)  # noqa: E731
    state = hmc.init(jnp.full(d, 0.3), logdensity)
    knobs = mams.make_knobs(d, step_size=0.2, steps=4, random_steps=False)
    key = jax.random.PRNGKey(3)
    new, info = mams.step(key, state, logdensity, knobs)
    key_n, key_move = jax.random.split(key)
    theirs = blackjax.adjusted_mclmc_dynamic.build_kernel(
        integration_steps_fn=lambda _: 4)(
        key_move, blackjax.adjusted_mclmc_dynamic.init(state.position, logdensity, key_n),
        logdensity, 0.2 * 3.0, inverse_mass_matrix=jnp.ones(d))
    np.testing.assert_allclose(new.position, theirs[0].position, rtol=1e-6)
    assert int(info.n_steps) == 4 and int(info.n_grad) == 8


def test_changing_knobs_never_recompiles():
    logdensity = lambda x: -0.5 * jnp.sum(x ** 2)  # noqa: E731
    state = hmc.init(jnp.zeros(3), logdensity)
    step = jax.jit(mams.step, static_argnums=(2,))
    for eps, L, rnd in [(0.1, 5, False), (0.3, 17, True), (0.05, 1, False)]:
        knobs = mams.make_knobs(3, step_size=eps, steps=L, random_steps=rnd)
        state, info = step(jax.random.PRNGKey(0), state, logdensity, knobs)
        assert 1 <= int(info.n_steps) <= L
    assert step._cache_size() == 1


def test_dense_metric_is_refused():
    with pytest.raises(BomcmcError, match="diagonal metric"):
        mams.make_knobs(3, inverse_mass_matrix=np.eye(3))
    with pytest.raises(BomcmcError, match="diagonal metric"):
        bomcmc.sample(posterior="gauss-2d-corr", sampler="amams", chains=2, draws=10,
                      warmup=10, mass="dense", progress=False)


@pytest.mark.parametrize("seed", by_default([0, 1, 2], keep=1))
def test_amams_defaults_sample_the_gaussian(seed):
    """The bandit tunes ε and L and learns the diagonal metric from a start at the identity:
    seeds 0-9 gave max |z| 2.67, 2.73, 2.53, 3.08, 2.97, 2.79, 2.01, 2.29, 2.68, 3.33 (means),
    3.33, 2.26, 2.47, 2.79, 3.17, 2.51, 2.79, 3.37, 3.82, 2.71 (variances) against 4.56, and
    pooled variance z -0.81, -0.69, -0.83, 0.24, -2.63, -0.88, -0.53, -0.50, 0.01, 0.10."""
    r = bomcmc.sample(posterior="gauss-100-illcond", sampler="amams", chains=8, draws=1000,
                      warmup=1000, seed=seed, progress=False)
    x = np.asarray(r.idata.posterior["x"])
    assert_moments(x, POST.mean, VAR, label=f"seed {seed}")
    assert abs(_pooled_variance_z(x)) < POOLED_MAX
    assert r.totals["n_grad_warmup"] > 0
