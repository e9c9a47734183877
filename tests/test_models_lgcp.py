"""The log-Gaussian Cox process (models/log_gaussian_cox.py): which covariance generated the
shipped data, the log density in the prior's eigenbasis against a direct SciPy computation in x,
its gradient against finite differences, the constant metric against Girolami & Calderhead's
dense formula, and RMHMC's reduction to HMC with that diagonal mass."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import linalg, stats

import bomcmc
from bomcmc import models
from bomcmc.datasets import log_gaussian_cox as data
from bomcmc.errors import BomcmcError
from bomcmc.models import log_gaussian_cox as lgcp


def _whitened_mean_square(x, cov):
    chol = linalg.cholesky(cov + 1e-10 * np.eye(len(cov)), lower=True)
    r = linalg.solve_triangular(chol, x - lgcp.MEAN, lower=True)
    return float(r @ r / len(r))


def test_the_data_were_generated_with_unit_square_distances():
    """Under the covariance that generated it, the field's whitened residual has mean square
    near 1 (a χ²₄₀₉₆/4096 has sd 0.022); under the other formula it is far from 1."""
    counts, true_x = data()
    assert counts.shape == (64, 64) and counts.sum() == 421
    x = true_x.ravel()  # row-major, as lgcp.covariance orders the cells
    code = _whitened_mean_square(x, lgcp.covariance(64))
    s = np.arange(64.0)
    ii, jj = np.meshgrid(s, s, indexing="ij")
    pts = np.stack([ii.ravel(), jj.ravel()], 1)
    index_dist = np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1))
    quoted = _whitened_mean_square(x, lgcp.SIGMA2 * np.exp(-index_dist / (64 * lgcp.BETA)))
    assert abs(code - 1.0) < 5 * 0.022, code  # measured 1.016
    assert abs(quoted - 1.0) > 0.5, quoted  # measured 0.124


def test_log_density_matches_a_direct_computation_in_x_up_to_a_constant():
    post = lgcp.log_gaussian_cox(6)
    Q, y = post.facts.eigenvectors, post.facts.counts.ravel()
    cov = lgcp.covariance(6)
    rng = np.random.default_rng(0)
    diffs = []
    for _ in range(3):
        v = rng.normal(size=36) * np.sqrt(post.facts.eigenvalues)
        x = lgcp.MEAN + Q @ v
        direct = (stats.multivariate_normal.logpdf(x, np.full(36, lgcp.MEAN), cov)
                  + stats.poisson.logpmf(y, np.exp(x) / 36).sum())
        diffs.append(float(post.logdensity_fn({"v": jnp.asarray(v)})) - direct)
    assert np.ptp(diffs) < 1e-8, diffs
    drawn = post.constrain({"v": jnp.asarray(v)})["x"]
    np.testing.assert_allclose(np.asarray(drawn).ravel(), x, rtol=1e-12)


def test_gradient_matches_finite_differences():
    post = lgcp.log_gaussian_cox(7)
    rng = np.random.default_rng(1)
    v = jnp.asarray(rng.normal(size=49) * np.sqrt(post.facts.eigenvalues))
    grad = jax.grad(lambda u: post.logdensity_fn({"v": u}))(v)
    h = 1e-6
    for k in (0, 20, 48):
        e = jnp.zeros(49).at[k].set(h)
        fd = (post.logdensity_fn({"v": v + e}) - post.logdensity_fn({"v": v - e})) / (2 * h)
        assert float(grad[k]) == pytest.approx(float(fd), rel=1e-5, abs=1e-6), k


def test_the_metric_is_girolami_and_calderheads_in_the_eigenbasis():
    """Qᵀ (Σ⁻¹ + diag(m e^{μ + Σ_aa})) Q is the diagonal the posterior carries."""
    post = lgcp.log_gaussian_cox(5)
    cov = lgcp.covariance(5)
    dense = np.linalg.inv(cov) + np.diag(np.exp(lgcp.MEAN + np.diag(cov)) / 25)
    Q = post.facts.eigenvectors
    np.testing.assert_allclose(Q.T @ dense @ Q, np.diag(post.metric_fn), atol=1e-8)


@pytest.mark.filterwarnings("ignore::bomcmc.SamplingWarning")  # 20 draws: short on purpose
def test_rmhmc_is_hmc_with_the_metrics_diagonal_mass():
    post = lgcp.log_gaussian_cox(4)
    run = dict(posterior=post, chains=2, warmup=0, draws=20, seed=3, progress=False,
               float64=True, step_size=0.3, steps=5)
    a = bomcmc.sample(sampler="rmhmc", **run)
    b = bomcmc.sample(sampler="hmc", random_steps=True,
                      inverse_mass_matrix=1.0 / np.asarray(post.metric_fn), **run)
    np.testing.assert_array_equal(np.asarray(a.idata.posterior["x"]),
                                  np.asarray(b.idata.posterior["x"]))


def test_the_family_and_its_limits():
    assert models.is_builtin("lgcp-64") and models.is_builtin("lgcp-12")
    assert models.get("lgcp-3").facts.n == 3
    with pytest.raises(BomcmcError, match="between 2 and"):
        models.get("lgcp-500")


@pytest.mark.parametrize("name", ["lgcp-8", "lgcp-hyper-8", "lgcp-hyper-nc-8"])
def test_the_eigenvectors_enter_the_program_as_an_input(name):
    """Q (N⁴ numbers) is an argument of the compiled log density, not a constant folded into
    it (134 MB at N = 64); with Q a constant, the lowered program holds a dense (64, 64)
    literal and the test fails. A run asked to split the data's rows says in one line why
    it cannot."""
    from bomcmc.data import with_data
    from bomcmc.posterior import flatten

    post = models.get(name)
    flat = flatten(post)
    assert set(post.data.arrays) == {"Q", "counts"}
    fn = jax.jit(with_data(jax.grad(flat.logdensity_fn), post.data))
    def holds_q(text):  # a (64, 64) literal, printed in full or elided as a resource
        return any("constant" in line and "64x64" in line for line in text.splitlines())

    assert not holds_q(fn.lower(post.data.device(), jnp.zeros(flat.dim)).as_text())
    assert holds_q(jax.jit(jax.grad(flat.logdensity_fn)).lower(jnp.zeros(flat.dim)).as_text())
    with pytest.raises(BomcmcError, match="cannot be split"):
        bomcmc.sample(posterior=name, sampler="hmc", step_size=0.1, steps=2, chains=2,
                      draws=2, warmup=0, shard_data=True, progress=False)


def _hyper_point(rng, post, key="v"):
    d = post.facts.n**2
    s, mu = rng.normal(0.5, 0.5), rng.normal(3.0, 1.0)
    u = rng.normal(size=d) * (np.sqrt(np.exp(s) * post.facts.eigenvalues / lgcp.SIGMA2)
                              if key == "v" else 1.0)
    return {"log_sigma2": jnp.asarray(s), "mu": jnp.asarray(mu), key: jnp.asarray(u)}


def test_hyper_log_density_matches_a_direct_computation_up_to_a_constant():
    """lgcp-hyper-N: the field with σ² ~ Gamma(2, scale 1/2) (sampled as log σ², with its
    Jacobian) and μ ~ N(0, 10²), against SciPy in (x, log σ², μ); v → x is a rotation and a
    shift, so the two densities differ by a constant only."""
    post = lgcp.log_gaussian_cox_hyper(5)
    Q, y, k = post.facts.eigenvectors, post.facts.counts.ravel(), lgcp.covariance(5, 1.0)
    rng = np.random.default_rng(2)
    diffs = []
    for _ in range(4):
        p = _hyper_point(rng, post)
        s, mu = float(p["log_sigma2"]), float(p["mu"])
        x = mu + Q @ np.asarray(p["v"])
        direct = (stats.multivariate_normal.logpdf(x, np.full(25, mu), np.exp(s) * k)
                  + stats.poisson.logpmf(y, np.exp(x) / 25).sum()
                  + stats.gamma.logpdf(np.exp(s), 2.0, scale=0.5) + s
                  + stats.norm.logpdf(mu, 0.0, lgcp.MU_PRIOR_SD))
        diffs.append(float(post.logdensity_fn(p)) - direct)
        drawn = post.constrain(p)
        np.testing.assert_allclose(np.asarray(drawn["x"]).ravel(), x, rtol=1e-12)
        assert float(drawn["sigma2"]) == pytest.approx(np.exp(s), rel=1e-12)
    assert np.ptp(diffs) < 1e-8, diffs


def test_the_non_centred_hyper_posterior_is_the_same_posterior():
    """z = v / (σ√Λ): the log densities differ by the Jacobian log|∂v/∂z| = (D/2) log σ² +
    const, and both report the same x, σ² and μ."""
    c, nc = lgcp.log_gaussian_cox_hyper(4), lgcp.log_gaussian_cox_hyper(4, centred=False)
    assert nc.name == "lgcp-hyper-nc-4" and models.get("lgcp-hyper-nc-4").name == nc.name
    lam = c.facts.eigenvalues / lgcp.SIGMA2
    rng = np.random.default_rng(3)
    diffs = []
    for _ in range(4):
        p = _hyper_point(rng, nc, key="z")
        s = p["log_sigma2"]
        v = jnp.exp(0.5 * s) * jnp.sqrt(lam) * p["z"]
        q = {"log_sigma2": s, "mu": p["mu"], "v": v}
        diffs.append(float(nc.logdensity_fn(p) - c.logdensity_fn(q)) - 8.0 * float(s))
        for name in ("x", "sigma2", "mu"):
            np.testing.assert_allclose(np.asarray(nc.constrain(p)[name]),
                                       np.asarray(c.constrain(q)[name]), rtol=1e-12)
    assert np.ptp(diffs) < 1e-9, diffs


@pytest.mark.parametrize("centred", [True, False])
def test_hyper_gradient_matches_finite_differences(centred):
    post = lgcp.log_gaussian_cox_hyper(4, centred=centred)
    key = "v" if centred else "z"
    p = _hyper_point(np.random.default_rng(4), post, key)
    grad = jax.grad(post.logdensity_fn)(p)
    h = 1e-6
    for name, k in (("log_sigma2", None), ("mu", None), (key, 0), (key, 15)):
        e = jnp.zeros_like(p[name]) + h if k is None else jnp.zeros(16).at[k].set(h)
        hi, lo = dict(p, **{name: p[name] + e}), dict(p, **{name: p[name] - e})
        fd = (post.logdensity_fn(hi) - post.logdensity_fn(lo)) / (2 * h)
        got = grad[name] if k is None else grad[name][k]
        assert float(got) == pytest.approx(float(fd), rel=1e-5, abs=1e-6), (name, k)


def test_the_hyper_metric_follows_the_flat_order():
    """The constant metric is a flat vector in ravel order (log_sigma2, mu, then the field),
    positive; for the centred field it is Girolami & Calderhead's at the simulation's σ²."""
    from jax.flatten_util import ravel_pytree

    post = lgcp.log_gaussian_cox_hyper(5)
    flat, unravel = ravel_pytree(jax.tree.map(jnp.asarray, post.init_position))
    assert flat.shape == post.metric_fn.shape == (27,)
    tagged = unravel(jnp.arange(27.0))
    assert float(tagged["log_sigma2"]) == 0 and float(tagged["mu"]) == 1
    assert post.metric_fn[0] == pytest.approx(25 / 2 + 2 * lgcp.SIGMA2)
    np.testing.assert_allclose(post.metric_fn[2:],
                               lgcp.log_gaussian_cox(5).metric_fn, rtol=1e-10)
    assert np.all(post.metric_fn > 0)
