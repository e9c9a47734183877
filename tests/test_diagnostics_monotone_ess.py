"""Girolami & Calderhead's (2011) monotone-sequence ESS on AR(1) chains of known ESS.

x_t = φ x_{t−1} + √(1 − φ²) ε_t has ESS N (1 − φ) / (1 + φ). With 8 chains of N = 4000 draws,
measured over 100 seeds, the ratio estimate / true ESS had:

    φ      per-chain (mean of 8)      pooled over 8          pooled / ArviZ ess(method="mean")
           mean   sd     max|r−1|     mean   sd     max|r−1|  mean   sd     max|r−1|
    0.0    0.984  0.008  0.039        0.994  0.009  0.038     1.002  0.013  0.048
    0.5    0.998  0.026  0.074        1.004  0.029  0.079     1.004  0.007  0.038
    0.9    1.016  0.055  0.138        1.022  0.063  0.153     1.025  0.021  0.110

The tolerances below are about 5 sd (at least 1.5 times the largest deviation over the 100
seeds). For φ < 0 the true ESS exceeds N; this estimator sums positive autocorrelations only,
so it is exactly N per chain (C·N pooled), where ArviZ's, which sums pairs of lags, is near
the true ESS: the two are not meant to agree there.
"""

import arviz as az
import numpy as np
import pytest
from scipy.signal import lfilter

from bomcmc.diagnostics.monotone_ess import (autocorrelations, monotone_ess, monotone_sum,
                                             pooled_monotone_ess)
from bomcmc.errors import BomcmcError

N, CHAINS, SEEDS = 4000, 8, (0, 1, 2)
TOL = {0.0: 0.06, 0.5: 0.15, 0.9: 0.30}  # relative, estimate against N (1 − φ)/(1 + φ)
ARVIZ_TOL = 0.15  # relative, pooled against ArviZ's ess(method="mean"), φ ≥ 0


def _ar1(phi, seed, chains=CHAINS, n=N):
    rng = np.random.default_rng(seed)
    e = rng.standard_normal((chains, n)) * np.sqrt(1 - phi ** 2)
    e[:, 0] = rng.standard_normal(chains)  # the stationary start
    return lfilter([1.0], [1.0, -phi], e, axis=-1)


@pytest.mark.parametrize("phi", sorted(TOL))
def test_the_ess_of_ar1_chains(phi):
    true = N * (1 - phi) / (1 + phi)
    for seed in SEEDS:
        x = _ar1(phi, seed)
        per_chain = np.mean([monotone_ess(c) for c in x]) / true
        pooled = pooled_monotone_ess(x) / (CHAINS * true)
        assert abs(per_chain - 1) < TOL[phi] and abs(pooled - 1) < TOL[phi], (seed, per_chain,
                                                                            pooled)
        arviz = float(az.ess(x, method="mean"))
        assert abs(pooled_monotone_ess(x) / arviz - 1) < ARVIZ_TOL, (seed, arviz)


@pytest.mark.parametrize("phi", [-0.5, -0.2])
def test_negative_autocorrelation_gives_n_where_arviz_exceeds_it(phi):
    x = _ar1(phi, 0)
    assert [monotone_ess(c) for c in x] == [float(N)] * CHAINS
    assert pooled_monotone_ess(x) == CHAINS * N
    true = CHAINS * N * (1 - phi) / (1 + phi)
    assert abs(float(az.ess(x, method="mean")) / true - 1) < 0.1


def test_the_sum_is_over_the_initial_positive_monotone_part():
    rho = np.array([1.0, 0.5, 0.6, 0.2, 0.3, -0.1, 0.4])
    assert monotone_sum(rho) == pytest.approx(0.5 + 0.5 + 0.2 + 0.2)
    assert monotone_sum(np.array([1.0, -0.2, 0.5])) == 0.0
    np.testing.assert_allclose(autocorrelations(np.ones(10))[1:], 0.0)


@pytest.mark.parametrize("x", [np.zeros(3), np.zeros((2, 2, 10)), np.array([0, 1, np.nan, 2])])
def test_bad_draws_are_one_line(x):
    with pytest.raises(BomcmcError):
        monotone_ess(x)
