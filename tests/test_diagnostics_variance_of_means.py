"""Choo's variance-of-means measure (diagnostics/variance_of_means.py) on AR(1) chains,
whose variance of the mean of N consecutive draws is known exactly:
Var[x̄_N] = (1/N)·[1 + 2 Σ_{k<N} (1 − k/N) φ^k] for unit stationary variance."""

import numpy as np
import pytest
from scipy.stats import norm

from bomcmc.diagnostics.variance_of_means import (bootstrap_interval, combined,
                                                  equilibrium_starts, ratio_interval,
                                                  variance_of_means)


def exact_var_of_mean(phi, n):
    k = np.arange(1, n)
    return (1 + 2 * np.sum((1 - k / n) * phi**k)) / n


def ar1(rng, chains, n, phi, start=None):
    """Stationary AR(1) chains (chains, n) with unit variance; `start` fixes x_0."""
    x = np.empty((chains, n))
    x[:, 0] = rng.normal(size=chains) if start is None else start
    eps = rng.normal(size=(chains, n)) * np.sqrt(1 - phi**2)
    for t in range(1, n):
        x[:, t] = phi * x[:, t - 1] + eps[:, t]
    return x


@pytest.mark.parametrize("phi", [0.0, 0.5, 0.9])
def test_rho_estimates_the_exact_variance_of_the_mean(phi):
    rng = np.random.default_rng(int(10 * phi))
    n = 100
    q = np.stack([ar1(rng, 4000, n, phi).mean(axis=1),
                  ar1(rng, 4000, n, phi).mean(axis=1) * 2.0], axis=1)  # Var scales by 4
    r = variance_of_means(q, [0.0, 0.0])
    want = exact_var_of_mean(phi, n) * np.array([1.0, 4.0])
    z = (r.rho - want) / r.se
    assert np.all(np.abs(z) < 4), z  # the standard error is eq. 5.7's
    # T = ρ·N / Var: the inefficiency factor, 1 for independent draws
    assert combined(r.rho) == pytest.approx(np.sqrt(r.rho[0] * r.rho[1]))


def test_stratified_starts_are_reweighted_to_the_unstratified_value():
    """Chains started in the tail G = {x₀ > 1.5} (mass p = 0.0668) oversampled 50 %: the
    weighted ρ of eqs. 5.10–5.11 still estimates the stationary variance of the mean; the
    unweighted mean of squares would not."""
    rng = np.random.default_rng(3)
    phi, n, p = 0.95, 50, float(norm.sf(1.5))
    outside = rng.normal(size=6000)
    outside = outside[outside <= 1.5][:3000]
    inside = norm.isf(rng.uniform(size=3000) * p)  # x0 | x0 > 1.5
    starts = np.concatenate([outside, inside])
    means = ar1(rng, 6000, n, phi, start=starts).mean(axis=1)
    strata = np.arange(6000) >= 3000
    r = variance_of_means(means, 0.0, strata=strata, p=p)
    want = exact_var_of_mean(phi, n)
    assert abs((r.rho[0] - want) / r.se[0]) < 4
    naive = variance_of_means(means, 0.0)
    assert (naive.rho[0] - want) / naive.se[0] > 10  # the oversampled tail inflates it
    with pytest.raises(ValueError, match="p"):
        variance_of_means(means, 0.0, strata=strata)


def test_bootstrap_intervals_cover_the_truth():
    """90 % percentile intervals of ρ from 50 chains (Choo's size) cover the exact value in
    about 90 % of 100 independent experiments (binomial sd 3 %; accepted 80–98 %), and the
    ratio interval of two samplers covers the exact ratio. Measured over generator seeds 7,
    100 and 200: 87, 90 and 87 hits; ratio 89, 91 and 91."""
    rng = np.random.default_rng(7)
    n, hits, ratio_hits = 40, 0, 0
    want_a, want_b = exact_var_of_mean(0.8, n), exact_var_of_mean(0.3, n)
    for trial in range(100):
        a = ar1(rng, 50, n, 0.8).mean(axis=1)
        b = ar1(rng, 50, n, 0.3).mean(axis=1)
        lo, hi = bootstrap_interval(a, 0.0, resamples=400, seed=trial)
        hits += lo <= want_a <= hi
        point, (rlo, rhi) = ratio_interval(a, b, 0.0, resamples=400, seed=trial)
        assert rlo <= point <= rhi
        ratio_hits += rlo <= want_a / want_b <= rhi
    assert 80 <= hits <= 98, hits
    assert 80 <= ratio_hits <= 98, ratio_hits


def test_equilibrium_starts_are_spaced_and_stratified():
    rng = np.random.default_rng(0)
    master = ar1(rng, 1, 20000, 0.9)[0]
    idx = equilibrium_starts(master, 40, 300)
    assert len(idx) == 40 and np.all(np.diff(idx) == 300)
    region = master > 1.5
    idx = equilibrium_starts(master, 50, 300, in_region=region, n_in_region=10, seed=1)
    assert len(idx) == 50 and len(set(idx)) == 50
    assert region[idx].sum() == 10 and np.all(region[idx[-10:]])
    with pytest.raises(ValueError, match="too short"):
        equilibrium_starts(master, 100, 300)
