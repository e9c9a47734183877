"""Blocked RMHMC (kernels/blocked_rmhmc.py) and its pieces: the tridiagonal mass against
dense linear algebra, the stochastic-volatility metrics against the Fisher information computed
directly, and the sampler's moments on a short stochastic-volatility series against a long NUTS
run, with a broken variant that must fail the same test."""

import warnings

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bomcmc
from bomcmc.kernels import blocked_rmhmc, integrators
from bomcmc.models import stochastic_volatility as sv


def _tridiagonal(d=7, seed=0):
    rng = np.random.default_rng(seed)
    off = rng.normal(size=d - 1)
    diag = np.abs(rng.normal(size=d)) + 2.5
    return diag, off, np.diag(diag) + np.diag(off, 1) + np.diag(off, -1)


def test_tridiagonal_mass_matches_dense_algebra():
    diag, off, M = _tridiagonal()
    l_diag, l_sub = integrators.tridiagonal_cholesky(jnp.asarray(diag), jnp.asarray(off))
    L = np.diag(np.asarray(l_diag)) + np.diag(np.asarray(l_sub), -1)
    np.testing.assert_allclose(L @ L.T, M, atol=1e-12)
    op = integrators.tridiagonal_mass(jnp.asarray(diag), jnp.asarray(off))
    p = np.random.default_rng(1).normal(size=7)
    np.testing.assert_allclose(np.asarray(op.inverse_apply(jnp.asarray(p))),
                               np.linalg.solve(M, p), atol=1e-12)
    key = jax.random.PRNGKey(3)
    z = np.asarray(jax.random.normal(key, (7,), jnp.float64))
    np.testing.assert_allclose(np.asarray(op.sample(key, jnp.zeros(7))), L @ z, atol=1e-12)


def _ar1_cov(log_sigma, atanh_phi, T):
    phi, s2 = jnp.tanh(atanh_phi), jnp.exp(2 * log_sigma)
    lag = jnp.abs(jnp.arange(T)[:, None] - jnp.arange(T)[None, :])
    return s2 / (1 - phi**2) * phi**lag


def test_sv_metrics_are_the_fisher_information():
    """G_x = C⁻¹ + ½ I; G_θ's (γ, α) block is ½ tr(C⁻¹ ∂ᵢC C⁻¹ ∂ⱼC) of the AR(1) prior, its
    log β entry 2T (y_t ~ N(0, β² e^{x_t})), each plus the prior's curvature −∂² log p(θ)."""
    T, theta = 6, jnp.asarray([1.7, -0.4, -1.2])  # (α, log β, γ)
    C = _ar1_cov(theta[2], theta[0], T)
    diag, off = sv.latent_metric(theta, T)
    G = np.diag(np.asarray(diag)) + np.diag(np.asarray(off), 1) + np.diag(np.asarray(off), -1)
    np.testing.assert_allclose(G, np.linalg.inv(np.asarray(C)) + 0.5 * np.eye(T), atol=1e-9)

    dC = jax.jacfwd(lambda g_a: _ar1_cov(g_a[0], g_a[1], T))(jnp.asarray([theta[2], theta[0]]))
    Ci = jnp.linalg.inv(C)
    fisher = np.array([[0.5 * float(jnp.trace(Ci @ dC[..., i] @ Ci @ dC[..., j]))
                        for j in range(2)] for i in range(2)])  # (γ, α)
    prior_curv = -np.diag(np.asarray(jax.hessian(
        lambda t: sv.log_prior(t[1], t[2], t[0]))(theta)))  # (α, log β, γ)
    Gp = np.asarray(sv.parameter_metric(theta, T))
    assert Gp[1, 1] == pytest.approx(2 * T + prior_curv[1])
    np.testing.assert_allclose(Gp[np.ix_([2, 0], [2, 0])],
                               fisher + np.diag(prior_curv[[2, 0]]), rtol=1e-9)


def _broken_kernel(post):
    """Broken: the latent move's momentum drawn from N(0, I) while its kinetic energy is
    ½ pᵀ G_x⁻¹ p, so the move no longer leaves p(x | θ, y) invariant."""
    good = integrators.tridiagonal_mass

    def identity_draw(diag, off):
        op = good(diag, off)
        return op._replace(sample=lambda key, like: jax.random.normal(key, like.shape,
                                                                       like.dtype))

    b = post.rmhmc_blocks
    kernel = blocked_rmhmc.blocked_rmhmc_kernel(b.latent, b.parameters, b.latent_metric,
                                                b.parameter_metric)

    def step(key, state, fn, knobs):
        blocked_rmhmc.tridiagonal_mass = identity_draw
        try:
            return kernel.step(key, state, fn, knobs)
        finally:
            blocked_rmhmc.tridiagonal_mass = good

    return kernel._replace(step=step)


def _columns(res):
    """Every coordinate's draws, (chains, draws) each."""
    post = res.idata.posterior
    out = []
    for name in ("x", "log_beta", "log_sigma", "atanh_phi"):
        a = np.asarray(post[name])
        out += [c for c in a.reshape(a.shape[0], a.shape[1], -1).transpose(2, 0, 1)]
    return out


def _mcse(a):
    return float(np.squeeze(az.mcse(a, method="mean")))


def _mcse_sd(a):
    """The sd's MCSE by the delta method: the MCSE of the mean of (x − x̄)², over 2 sd.
    (ArviZ's `mcse(method="sd")` fails on this NumPy.)"""
    return _mcse((a - a.mean()) ** 2) / (2 * a.std())


def _discrepancy(res, ref):
    """The largest |z| over coordinates of the means and of the sds, each difference in both
    runs' Monte-Carlo standard errors."""
    zs, zsd = [], []
    for a, b in zip(_columns(res), _columns(ref)):
        zs.append(abs(a.mean() - b.mean()) / np.hypot(_mcse(a), _mcse(b)))
        zsd.append(abs(a.std() - b.std()) / np.hypot(_mcse_sd(a), _mcse_sd(b)))
    return float(max(zs)), float(max(zsd))


@pytest.fixture(scope="module")
def sv_reference():
    post = sv.stochastic_volatility(T=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = bomcmc.sample(posterior=post, sampler="nuts", chains=4, warmup=1000, draws=6000,
                            seed=100, float64=True, progress=False)
    return post, ref


def test_blocked_rmhmc_matches_nuts_on_a_short_sv_series(sv_reference):
    """All 23 coordinates' means within 4 MCSE of a long NUTS run, and sds within 5 (the
    delta-method MCSE of an sd is itself rougher), seeds 0–2. Measured over seeds 0–7, the
    largest over coordinates: means 0.58–2.39, sds 0.88–3.18 MCSE; the broken variant below,
    122–125 and 35–40. Girolami & Calderhead's setting is for T = 2000; here 5–7 % of the
    parameter moves end with an unconverged fixed point (warned)."""
    post, ref = sv_reference
    for seed in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = bomcmc.sample(posterior=post, sampler="rmhmc", chains=2, warmup=300,
                                draws=3000, seed=seed, float64=True, progress=False)
        z, zsd = _discrepancy(res, ref)
        assert z < 4.0 and zsd < 5.0, (seed, z, zsd)


def test_the_broken_variant_fails_the_same_test(sv_reference):
    """A third of the draws above (it missed by 122-125 MCSE at 3000 draws): measured 102
    MCSE at these 1000, seed 0."""
    post, ref = sv_reference
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = bomcmc.sample(posterior=post, sampler=_broken_kernel(post), chains=2,
                            warmup=300, draws=1000, seed=0, float64=True, progress=False)
    z = _discrepancy(res, ref)[0]
    print(f"\nbroken blocked RMHMC: {z:.1f} MCSE")
    assert z > 4.0
