"""The metric adaptive HMC learns in burn-in: a window's estimate moves the metric only as far
as the estimate's own noise allows (`learned_metric.shrink_weight`, `towards`).

Draws are independent Gaussian ones, 4 chains × 150 (the size of a window at `sample`'s
default 4 chains), d = 20, a covariance of condition number 30; 8 seeds each. The errors are
`metric_change` against the true covariance (what sampling feels: the spread of the
generalised eigenvalues, the scale taken out).
"""

import numpy as np
import pytest

from bomcmc.adaptation.welford import welford_combine
from bomcmc.tuning import learned_metric as lm

D, CHAINS, N = 20, 4, 150
SEEDS = range(8)


def _covariance(rng, cond=30.0):
    q, _ = np.linalg.qr(rng.normal(size=(D, D)))
    return q @ np.diag(np.geomspace(1.0, cond, D)) @ q.T


def _update(rng, truth, current, kind="dense"):
    """(weight, error of the new metric, error of the unshrunk estimate, error of `current`)
    after one window of draws from N(0, truth)."""
    x = rng.multivariate_normal(np.zeros(D), truth, size=(CHAINS, N))
    state = lm.welford_add(lm.MetricState(dense_knob=True, metric_kind=kind), x)
    after, new = lm.estimate(state, kind, current)
    whole = state._replace(halves=(welford_combine(*state.halves), None))  # one half: no weight
    _, raw = lm.estimate(whole, kind, current)
    if kind == "diag":
        truth = np.diag(np.diag(truth))
    return (after.weight, lm.metric_change(truth, new), lm.metric_change(truth, raw),
            lm.metric_change(truth, current))


@pytest.mark.parametrize("seed", SEEDS)
def test_a_window_that_cannot_tell_keeps_the_metric(seed):
    """The current metric is the truth: the window's estimate differs from it by noise only
    (δ ≈ 0.18-0.20 measured), the weight stays near 0 (measured ≤ 0.15) and the metric keeps
    at least half of that noise out (measured ≤ 0.15 of it)."""
    rng = np.random.default_rng(seed)
    truth = _covariance(rng)
    weight, shrunk, raw, _ = _update(rng, truth, truth)
    assert raw > 0.1
    assert weight <= 0.4 and shrunk <= 0.5 * raw


@pytest.mark.parametrize("seed", SEEDS)
def test_a_window_far_from_the_metric_replaces_it(seed):
    """The current metric is the identity, δ 1.03 from the truth: the weight is near 1
    (0.96-0.97 measured) and the new metric is the window's estimate within 5 %."""
    rng = np.random.default_rng(seed)
    weight, shrunk, raw, current = _update(rng, _covariance(rng), np.eye(D))
    assert current > 1.0
    assert weight >= 0.9 and shrunk <= 1.05 * raw


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", ["dense", "diag"])
def test_the_new_metric_is_nearer_the_truth_than_the_estimate_and_the_old(seed, kind):
    """The current metric lies between the identity and the truth, with about twice the
    estimate's noise to learn (δ 0.31 dense, 0.052 diagonal): the new one is nearer the truth
    than both the current metric and the unshrunk estimate (measured: dense 0.147-0.175
    against 0.178-0.201 and 0.310; diagonal 0.032-0.048 against 0.048-0.069 and 0.052)."""
    rng = np.random.default_rng(seed)
    truth = _covariance(rng) if kind == "dense" else np.diag(rng.permutation(
        np.geomspace(1.0, 30.0, D)))
    # a diagonal's estimate is less noisy (δ about 0.05 against 0.19): its metric starts nearer
    current = lm.towards(np.eye(D), truth, 0.7 if kind == "dense" else 0.95)
    weight, shrunk, raw, old = _update(rng, truth, current, kind)
    assert 0.0 < weight < 1.0
    assert shrunk < raw and shrunk < old


def test_without_the_weight_the_noise_goes_into_the_metric(monkeypatch):
    """The broken variant, every window's estimate taken whole (the weight 1, as before the
    weight): the test above that the metric keeps the noise out fails on every seed."""
    monkeypatch.setattr(lm, "shrink_weight", lambda *a: 1.0)
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        truth = _covariance(rng)
        weight, shrunk, raw, _ = _update(rng, truth, truth)
        assert weight == 1.0 and not shrunk <= 0.5 * raw


@pytest.mark.parametrize("diagonal", [False, True])
def test_towards_goes_the_fraction_of_the_way(diagonal):
    rng = np.random.default_rng(3)
    a, b = _covariance(rng, 10.0), _covariance(rng, 50.0)
    if diagonal:
        a, b = np.diag(a).copy(), np.diag(b).copy()
    for w in (0.0, 0.25, 0.6):
        mid = lm.towards(a, b, w)
        assert lm.metric_change(a, mid) == pytest.approx(w * lm.metric_change(a, b), abs=1e-9)
        assert lm.metric_change(mid, b) == pytest.approx((1 - w) * lm.metric_change(a, b),
                                                         abs=1e-9)
        if not diagonal:
            assert np.all(np.linalg.eigvalsh(mid) > 0)
    np.testing.assert_allclose(lm.towards(a, b, 1.0), b)


def test_one_chain_has_no_halves_and_takes_the_window_whole():
    rng = np.random.default_rng(0)
    truth = _covariance(rng)
    x = rng.multivariate_normal(np.zeros(D), truth, size=(1, 600))
    state = lm.welford_add(lm.MetricState(dense_knob=True, metric_kind="dense"), x)
    assert state.halves[1] is None
    after, _ = lm.estimate(state, "dense", truth)
    assert after.weight == 1.0


def test_the_halves_are_the_even_and_the_odd_chains():
    x = np.arange(4 * 3 * 2, dtype=float).reshape(4, 3, 2)
    state = lm.welford_add(lm.MetricState(), x)
    (na, ma, _), (nb, mb, _) = state.halves
    assert na == nb == 6
    np.testing.assert_allclose(ma, x[0::2].reshape(-1, 2).mean(0))
    np.testing.assert_allclose(mb, x[1::2].reshape(-1, 2).mean(0))
    whole = welford_combine(*state.halves)
    np.testing.assert_allclose(whole[1], x.reshape(-1, 2).mean(0))
    np.testing.assert_allclose(whole[2], ((x.reshape(-1, 2) - whole[1]) ** 2).sum(0))
