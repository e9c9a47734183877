"""Built-in posteriors: the data are preprocessed as documented and gradients are right."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bomcmc import models
from bomcmc.datasets import girolami_logreg
from bomcmc.posterior import flatten

SHAPES = {"australian": (690, 15), "german": (1000, 25), "heart": (270, 14),
          "pima": (532, 8), "ripley": (250, 7)}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_logistic_data_preprocessing(name):
    X, y = girolami_logreg(name)
    assert X.shape == SHAPES[name]
    assert set(np.unique(y)) == {0.0, 1.0}
    np.testing.assert_array_equal(X[:, 0], 1.0)
    d_raw = X.shape[1] - 1 if name != "ripley" else 2
    np.testing.assert_allclose(X[:, 1 : 1 + d_raw].mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(X[:, 1 : 1 + d_raw].std(0, ddof=1), 1.0, rtol=1e-12)
    if name == "ripley":  # cubic basis [1, x, x², x³] on the standardised inputs
        np.testing.assert_allclose(X[:, 3:5], X[:, 1:3] ** 2)
        np.testing.assert_allclose(X[:, 5:7], X[:, 1:3] ** 3)


def test_label_counts_match_provenance():
    assert girolami_logreg("german")[1].sum() == 300  # 2 = bad credit, 300 of 1000
    assert girolami_logreg("heart")[1].sum() == 120
    assert girolami_logreg("australian")[1].sum() == 307


@pytest.mark.parametrize("name", ["logistic-heart", "logistic-ripley"])
def test_logistic_logdensity_and_gradient(name):
    """Against a direct NumPy computation and central finite differences."""
    post = models.get(name)
    flat = flatten(post)
    X, y = girolami_logreg(name.split("-")[1])
    rng = np.random.default_rng(0)
    beta = rng.normal(scale=0.3, size=X.shape[1])
    z = X @ beta
    expected = np.sum(y * z - np.log1p(np.exp(z))) - beta @ beta / 200.0
    assert float(flat.logdensity_fn(jnp.asarray(beta))) == pytest.approx(expected, rel=1e-12)
    grad = np.asarray(jax.grad(flat.logdensity_fn)(jnp.asarray(beta)))
    h = 1e-6
    fd = np.array([(flat.logdensity_fn(jnp.asarray(beta + h * e))
                    - flat.logdensity_fn(jnp.asarray(beta - h * e))) / (2 * h)
                   for e in np.eye(len(beta))])
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6)


def test_gaussian_builtins_match_their_covariance():
    for name in ("gauss-2d-corr", "gauss-2d-corr-wide", "gauss-100-illcond", "gauss-iid-7"):
        post = models.get(name)
        flat = flatten(post)
        cov = post.cov
        x = np.linspace(-0.5, 0.5, cov.shape[0])
        expected = -0.5 * x @ np.linalg.solve(cov, x)
        assert float(flat.logdensity_fn(jnp.asarray(x))) == pytest.approx(expected, rel=1e-10)
    assert models.get("gauss-2d-corr-wide").cov[0, 0] == 2.0
    sd = np.sqrt(np.diag(models.get("gauss-100-illcond").cov))
    assert sd.min() == pytest.approx(0.01) and sd.max() == pytest.approx(1.0)


def test_registry_lists_required_names():
    required = {"gauss-2d-corr", "gauss-2d-corr-wide", "gauss-100-illcond", "gauss-iid-100",
                "logistic-australian", "logistic-german", "logistic-heart", "logistic-pima",
                "logistic-ripley"}
    assert required <= set(models.names())


def test_synthetic_logistic_family_adds_rows_without_changing_the_first():
    """`logistic-synthetic-N` (the data-size sweep of benchmarks/scaling.py): the first rows
    of a larger N are a smaller N's, so its log likelihood at any β is the smaller one's
    plus the new rows' terms; the gradient matches central differences."""
    small, large = models.get("logistic-synthetic-50"), models.get("logistic-synthetic-80")
    assert models.is_builtin("logistic-synthetic-80") and large.facts.n == 80
    beta = {"beta": jnp.linspace(-0.5, 0.5, 20, dtype=jnp.float64)}
    prior = -0.5 * float(jnp.sum(beta["beta"] ** 2)) / 100.0
    lik_small = float(small.logdensity_fn(beta)) - prior
    lik_large = float(large.logdensity_fn(beta)) - prior
    assert lik_large < lik_small < 0  # the extra 30 rows add negative log-likelihood terms
    again = models.get("logistic-synthetic-50")
    assert float(again.logdensity_fn(beta)) == float(small.logdensity_fn(beta))
    flat = flatten(small)
    x = jnp.linspace(-0.3, 0.3, flat.dim, dtype=jnp.float64)
    g = np.asarray(jax.grad(flat.logdensity_fn)(x))
    h = 1e-6
    fd = [(float(flat.logdensity_fn(x.at[i].add(h))) - float(flat.logdensity_fn(x.at[i].add(-h))))
          / (2 * h) for i in range(flat.dim)]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)
