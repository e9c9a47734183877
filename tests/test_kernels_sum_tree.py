"""The log-domain sum tree (kernels/sum_tree.py) against NumPy: totals after builds and
updates, descents against the inverse of the cumulative weights, on random weights with
zeros among them and with a single nonzero weight, in float32 and float64."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bomcmc.kernels import sum_tree


def _weights(rng, n, kind):
    w = rng.uniform(0.01, 1.0, size=(n, 2))
    if kind == "zeros":
        w[rng.uniform(size=(n, 2)) < 0.4] = 0.0
        w[0] = 0.5  # at least one positive weight per column
    elif kind == "single":
        w[:] = 0.0
        w[rng.integers(n), 0] = 1e-30  # tiny, so that only the log domain keeps it
        w[rng.integers(n), 1] = 0.7
    return w


def _log(w, dtype):
    with np.errstate(divide="ignore"):
        return jnp.asarray(np.log(w), dtype)


def _inverse_cdf(w, u):
    """NumPy's answer: the i with cumsum(w)[i−1] ≤ u·Σw < cumsum(w)[i]."""
    return int(np.searchsorted(np.cumsum(w), u * w.sum(), side="right"))


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
@pytest.mark.parametrize("kind", ["random", "zeros", "single"])
def test_totals_leaves_and_descents_match_numpy_after_updates(dtype, kind):
    rng = np.random.default_rng(0)
    n = 37  # not a power of two: padded leaves
    w = _weights(rng, n, kind)
    tree = sum_tree.build(_log(w, dtype))
    assert tree.shape == (2 * sum_tree.capacity(n), 2) and tree.dtype == dtype
    update = jax.jit(sum_tree.update)
    descend = jax.jit(sum_tree.descend, static_argnums=2)
    rtol = 1e-5 if dtype == jnp.float32 else 1e-12
    for r in range(6):
        if r:  # change a few weights (a repeated index with equal weights is allowed)
            idx = rng.choice(n, size=4, replace=False)
            new = _weights(rng, n, kind)[:4]
            if kind == "single":
                new[:] = 0.0
            idx = np.append(idx, idx[0])
            new = np.vstack([new, new[:1]])
            w[idx] = new
            if (w.sum(axis=0) == 0).any():
                w[idx[0]] = 0.25
                new[0] = new[-1] = 0.25
            tree = update(tree, jnp.asarray(idx), _log(new, dtype))
        for col in (0, 1):
            assert float(jnp.exp(sum_tree.log_total(tree, col))) == pytest.approx(
                w[:, col].sum(), rel=rtol)
            np.testing.assert_allclose(
                np.exp(np.asarray([sum_tree.log_leaf(tree, i, col) for i in range(n)])),
                w[:, col], rtol=rtol, atol=0)
            for u in rng.uniform(size=20):
                i = int(descend(tree, jnp.asarray(u, dtype), col))
                assert w[i, col] > 0
                want = _inverse_cdf(w[:, col], u)
                if i != want:  # only at an interval's edge, where rounding decides
                    edge = np.cumsum(w[:, col])[min(i, want)] / w[:, col].sum()
                    assert abs(u - edge) < 10 * rtol, (u, i, want)


def test_descent_frequencies_are_the_weights():
    """2 × 10⁴ uniform descents on 5 weights, one of them 0: frequencies within 5 binomial
    standard errors of the normalised weights, and the zero-weight leaf never drawn."""
    w = np.array([[0.1], [0.0], [0.45], [0.2], [0.25]])
    tree = sum_tree.build(_log(w, jnp.float64))
    u = jax.random.uniform(jax.random.PRNGKey(0), (20_000,), jnp.float64)
    draws = np.asarray(jax.vmap(lambda x: sum_tree.descend(tree, x))(u))
    freq = np.bincount(draws, minlength=8) / draws.size
    p = np.append(w[:, 0], [0, 0, 0])
    assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / draws.size))


def test_an_inactive_update_leaves_the_tree_unchanged():
    rng = np.random.default_rng(1)
    tree = sum_tree.build(_log(_weights(rng, 20, "random"), jnp.float64))
    idx, new = jnp.asarray([3, 4, 17]), _log(_weights(rng, 3, "random"), jnp.float64)
    np.testing.assert_array_equal(sum_tree.update(tree, idx, new, False), tree)
    assert not np.array_equal(sum_tree.update(tree, idx, new, True), tree)
