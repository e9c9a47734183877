"""The stochastic-volatility posterior (models/stochastic_volatility.py): its log density
against an independent SciPy computation on the constrained scale with the Jacobians of the
transforms, its gradient against finite differences, and the shipped data."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from bomcmc import models
from bomcmc.models.stochastic_volatility import stochastic_volatility


def _scipy_logdensity(y, x, b, g, a):
    """log p(y, x, β, σ, φ) + log|Jacobian| of (log β, log σ, atanh φ), up to a constant."""
    beta, sigma, phi = np.exp(b), np.exp(g), np.tanh(a)
    lp = stats.norm.logpdf(y, 0.0, beta * np.exp(x / 2)).sum()
    lp += stats.norm.logpdf(x[0], 0.0, sigma / np.sqrt(1 - phi**2))
    lp += stats.norm.logpdf(x[1:], phi * x[:-1], sigma).sum()
    lp += stats.expon.logpdf(beta) + b  # dβ/db = β
    lp += stats.invgamma.logpdf(sigma**2, 5.0, scale=0.25) + np.log(2 * sigma**2)  # ν/2, νs²/2
    lp += stats.beta.logpdf((phi + 1) / 2, 20.0, 1.5) + np.log((1 - phi**2) / 2)
    return lp


def test_log_density_matches_scipy_up_to_a_constant():
    from bomcmc.datasets import stochastic_volatility as data

    post = stochastic_volatility(T=50)

    y, true_x = data()
    rng = np.random.default_rng(0)
    diffs = []
    for _ in range(3):
        x = true_x[:50] + 0.3 * rng.normal(size=50)
        b, g, a = rng.normal(-0.4, 0.3), rng.normal(-1.9, 0.3), rng.normal(2.3, 0.3)
        ours = float(post.logdensity_fn({"x": jnp.asarray(x), "log_beta": b, "log_sigma": g,
                                         "atanh_phi": a}))
        diffs.append(ours - _scipy_logdensity(y[:50], x, b, g, a))
    assert np.ptp(diffs) < 1e-8, diffs  # the same function up to its constant


def test_gradient_matches_finite_differences():
    post = models.get("sv-2000")
    rng = np.random.default_rng(1)
    from bomcmc.datasets import stochastic_volatility as data

    _, true_x = data()
    params = {"x": jnp.asarray(true_x + 0.1 * rng.normal(size=2000)),
              "log_beta": jnp.asarray(-0.4), "log_sigma": jnp.asarray(-1.9),
              "atanh_phi": jnp.asarray(2.3)}
    grad = jax.grad(post.logdensity_fn)(params)
    h = 1e-5
    for name, idx in [("x", 0), ("x", 777), ("x", 1999), ("log_beta", None),
                      ("log_sigma", None), ("atanh_phi", None)]:
        def shifted(d):
            p = dict(params)
            p[name] = p[name].at[idx].add(d) if idx is not None else p[name] + d
            return float(post.logdensity_fn(p))

        fd = (shifted(h) - shifted(-h)) / (2 * h)
        g = float(grad[name][idx] if idx is not None else grad[name])
        assert g == pytest.approx(fd, rel=1e-5, abs=1e-5), (name, idx, g, fd)


def test_the_built_in_is_registered_with_its_truth():
    post = models.get("sv-2000")
    assert post.facts.true_x.shape == (2000,)
    assert post.facts.T == 2000 and post.facts.truth == {"beta": 0.65, "sigma": 0.15,
                                                             "phi": 0.98}
    assert "sv-2000" in models.describe()
