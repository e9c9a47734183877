"""HMC with a dense inverse mass matrix (kernels/integrators.py, kernels/hmc.py): the leapfrog
stays reversible, volume preserving and second order, the momentum has covariance M, and HMC
with M⁻¹ = Σ samples a correlated Gaussian correctly, where the diagonal metric cannot."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from stats import assert_moments

import bomcmc
from bomcmc.kernels.integrators import (IntegratorState, kinetic_energy, leapfrog,
                                        sample_momentum)

SIGMA = np.array([[1.0, 0.95, 0.2], [0.95, 1.0, 0.1], [0.2, 0.1, 0.5]])
PREC = jnp.asarray(np.linalg.inv(SIGMA))
X0 = jnp.array([0.3, -0.7, 1.1])
P0 = jnp.array([0.5, 0.2, -0.4])


def logdensity(x):
    return -0.5 * x @ (PREC @ x) - 0.02 * jnp.sum(x**4)


def start(x, p):
    lp, g = jax.value_and_grad(logdensity)(x)
    return IntegratorState(x, p, lp, g)


def test_dense_leapfrog_is_reversible_and_volume_preserving():
    inv = jnp.asarray(SIGMA)
    fwd = leapfrog(start(X0, P0), logdensity, 0.05, inv, 40)
    back = leapfrog(start(fwd.position, -fwd.momentum), logdensity, 0.05, inv, 40)
    np.testing.assert_allclose(back.position, X0, atol=1e-10, rtol=0)
    np.testing.assert_allclose(-back.momentum, P0, atol=1e-10, rtol=0)

    def flow(z):
        s = leapfrog(start(z[:3], z[3:]), logdensity, 0.1, inv, 5)
        return jnp.concatenate([s.position, s.momentum])

    jac = jax.jacfwd(flow)(jnp.concatenate([X0, P0]))
    assert abs(np.linalg.det(np.asarray(jac)) - 1.0) < 1e-10


def test_dense_energy_error_is_second_order():
    inv = jnp.asarray(SIGMA)
    eps = np.array([0.2, 0.1, 0.05, 0.025])
    errs = []
    for e in eps:
        s0 = start(X0, P0)
        s1 = leapfrog(s0, logdensity, e, inv, int(round(1.0 / e)))
        h = [-s.logdensity + kinetic_energy(s.momentum, inv) for s in (s0, s1)]
        errs.append(abs(float(h[1] - h[0])))
    slope = np.polyfit(np.log(eps), np.log(errs), 1)[0]
    assert abs(slope - 2.0) < 0.2, slope


def test_momentum_covariance_is_the_mass_matrix():
    """p ~ N(0, M) with M = Σ⁻¹: the sample covariance of 20 000 draws is M to 5 %."""
    keys = jax.random.split(jax.random.PRNGKey(0), 20_000)
    p = jax.vmap(lambda k: sample_momentum(k, X0, jnp.asarray(SIGMA)))(keys)
    cov = np.cov(np.asarray(p).T)
    np.testing.assert_allclose(cov, np.linalg.inv(SIGMA), rtol=0.05, atol=0.05)


def test_dense_identity_matches_the_diagonal_kernel():
    """A dense identity and the diagonal ones give the same chain (to rounding)."""
    post = bomcmc.models.get("gauss-2d-corr")
    kw = dict(posterior=post, sampler="hmc", chains=2, draws=50, warmup=0, seed=1,
              step_size=0.1, steps=5, float64=True, progress=False, chunk_size=50)
    a = bomcmc.sample(**kw).idata.posterior["x"].values
    b = bomcmc.sample(inverse_mass_matrix=np.eye(2), **kw).idata.posterior["x"].values
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


KW = dict(sampler="hmc", chains=4, draws=2000, warmup=0, step_size=0.5, steps=3,
          random_steps=True, float64=True, progress=False)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hmc_with_the_covariance_as_metric_samples_a_correlated_gaussian(seed):
    """gauss-2d-corr (correlation 0.99): with M⁻¹ = Σ a short trajectory is enough; the
    moments are within the Bonferroni MCSE bound."""
    post = bomcmc.models.get("gauss-2d-corr")
    cov = post.cov
    x = bomcmc.sample(posterior=post, seed=seed, inverse_mass_matrix=cov,
                      **KW).idata.posterior["x"].values
    assert_moments(x, post.mean, np.diag(cov), label=f"dense seed {seed}")


def test_a_momentum_of_the_wrong_covariance_fails_the_same_test(monkeypatch):
    """The broken variant: momentum drawn N(0, I) while the kinetic energy uses M⁻¹ = Σ,
    so the chain leaves the wrong distribution invariant."""
    import bomcmc.kernels.hmc as hmc

    monkeypatch.setattr(hmc, "sample_momentum",
                        lambda key, x, inv: jax.random.normal(key, x.shape, x.dtype))
    post = bomcmc.models.get("gauss-2d-corr")
    cov = post.cov
    x = bomcmc.sample(posterior=post, seed=0, inverse_mass_matrix=cov,
                      **KW).idata.posterior["x"].values
    with pytest.raises(AssertionError):
        assert_moments(x, post.mean, np.diag(cov), label="wrong momentum")
