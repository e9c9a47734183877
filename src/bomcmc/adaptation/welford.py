"""Welford's running variance (Welford 1962) and Stan's regularisation of the metric it
estimates.

Two forms of one estimator. `welford_update` adds one sample at a time inside the compiled
loop (Stan's `welford_var_estimator::add_sample`, `welford_covar_estimator` when dense);
`welford_merge` adds a batch on the host and `welford_combine` joins two sums (Chan, Golub &
LeVeque 1979, the pairwise update).
`stan_regularize` is Stan's shrinkage of the estimate towards a small multiple of the
identity (`var_adaptation::learn_variance`):

    M⁻¹ = (n / (n + 5)) Σ̂ + 10⁻³ (5 / (n + 5)) I
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

REG_SAMPLES = 5.0  # the 5 in n / (n + 5)
REG_VALUE = 1e-3  # the 10⁻³ of the identity it shrinks towards


def welford_update(count, mean, m2, x):
    """n += 1; δ = x − m; m += δ/n; m2 += (x − m)·δ (an outer product when m2 is d×d)."""
    n = count + 1
    delta = x - mean
    mean = mean + delta / n
    if m2.ndim == 2:
        m2 = m2 + jnp.outer(x - mean, delta)
    else:
        m2 = m2 + (x - mean) * delta
    return n, mean, m2


def welford_merge(acc, x: np.ndarray, dense: bool = False):
    """(count, mean, m2) with a batch x of shape (n, d) added; `acc` None starts afresh. With
    `dense`, m2 is the d×d matrix of summed cross-products (a covariance estimate)."""
    mb = x.mean(axis=0)
    centred = x - mb
    m2b = centred.T @ centred if dense else (centred**2).sum(axis=0)
    return welford_combine(acc, (x.shape[0], mb, m2b))


def welford_combine(a, b):
    """Two Welford sums (count, mean, m2) as one, the pairwise update; None is an empty sum."""
    if a is None or b is None:
        return b if a is None else a
    (na, ma, m2a), (nb, mb, m2b) = a, b
    n = na + nb
    delta = mb - ma
    cross = np.outer(delta, delta) if m2a.ndim == 2 else delta**2
    return n, ma + delta * nb / n, m2a + m2b + cross * na * nb / n


def stan_regularize(var, n, eye=1.0):
    """(n / (n + 5)) var + 10⁻³ (5 / (n + 5)) eye: `eye` is 1 for a diagonal metric, the
    identity matrix for a dense one."""
    return (n / (n + REG_SAMPLES)) * var + REG_VALUE * (REG_SAMPLES / (n + REG_SAMPLES)) * eye


def regularized_metric(count, m2):
    """Stan's regularised metric from a Welford state: Σ̂ = m2 / (n − 1)."""
    n = jnp.asarray(count, m2.dtype)
    eye = jnp.eye(m2.shape[0], dtype=m2.dtype) if m2.ndim == 2 else jnp.ones_like(m2)
    return stan_regularize(m2 / (n - 1.0), n, eye)
