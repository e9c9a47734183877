"""A network sampled until its predictions are precise (`until_ess`): the rule reads the
function space (`bnn/function_space.py`) after the burn-in (`driver.until.burn_in_end`), the
fit keeps exactly the draws it read, and a budget that runs out first says so."""

import warnings

import arviz as az
import numpy as np
import pytest

from bomcmc import BayesianMLPRegressor, BomcmcError, SamplingWarning
from bomcmc.driver import until as until_mod

pytestmark = pytest.mark.usefixtures("compilation_cache")  # fixture in conftest.py


def test_burn_in_end_is_the_first_draw_past_the_fraction_of_gradients():
    assert until_mod.burn_in_end(np.ones(100), 0.25) == 25  # draws 0-24 spend 25 of 100
    assert until_mod.burn_in_end(np.ones(100), 0.0) == 0
    # cheap draws first: 10 draws of 1 and 10 of 9 (100 in all); 25 is spent after draw 11
    assert until_mod.burn_in_end(np.r_[np.ones(10), np.full(10, 9.0)], 0.25) == 11


def test_the_rule_reads_what_it_watches_after_the_burn_in():
    """After every chunk the rule decides as the whole precision of the watched draws from
    the burn-in's end on, with chunks of unequal gradients; a rule that read from draw 0
    (the broken variant) decides otherwise on these chains, which start far out."""
    rng = np.random.default_rng(5)
    rho = np.array([0.5, 0.2])
    x = np.zeros((4, 1200, 2))
    x[:, 0] = rng.normal(size=(4, 2)) + np.array([[8.0], [-8.0], [6.0], [-6.0]])
    for t in range(1, 1200):
        x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho**2) * rng.normal(size=(4, 2))
    grads = rng.integers(1, 20, size=(4, 1200))

    def watch(p):  # a function of the draws: their sum and the square of the first
        return np.stack([p.sum(-1), p[..., 0] ** 2], axis=-1)

    rule = until_mod.Until(300.0, None, watch=watch, burn_in=0.5)
    plain = until_mod.Until(300.0, None, watch=watch)
    differ = False
    for k in range(0, 1200, 40):
        rule.add(x[:, k:k + 40], 0.1, grads[:, k:k + 40])
        plain.add(x[:, k:k + 40], 0.1, grads[:, k:k + 40])
        first = until_mod.burn_in_end(grads[:, :k + 40].mean(axis=0), 0.5)
        read = watch(x[:, first:k + 40])
        assert rule.done == until_mod.precision(read).reaches(300.0), k + 40
        differ |= rule.done != plain.done
        if rule.done:
            break
    report = rule.report()
    assert rule.done and report["burn_in_draws"] == first and report["draws"] == k + 40 - first
    assert differ


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(40, 1))
    return X, np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=40)


FIXED = dict(hidden=(4,), prior="ih 1 bh 1 ho 1 bo 1", noise="0.3", chains=4,
             pretrain_steps=1000, progress=False, seed=0)


def test_a_fit_until_precise_stops_early_and_keeps_the_draws_its_rule_read():
    """NUTS on a small network with fixed priors (it mixes in function space; Ask 2022's
    setting, test_bnn_estimator.py) until the predictions' ESS is 200. It stops before its
    cap; the kept draws are those the rule read, and ArviZ's ESS and R-hat of their
    function-space group are the rule's figures (so the rule lays the draws out as the fit
    does). Measured (seeds 0-2, several runs): stopped at 110 000-194 000 of the 400 000
    gradients per chain, R-hat 1.0023-1.0083 (what stops it; the bulk ESS is then 450-1060).
    Where it stops depends on where chunks end, which follows the machine's pace (chunks of
    about a second), hence the bound of three quarters of the cap."""
    X, y = _data()
    cap = 400 * 1000
    reg = BayesianMLPRegressor(**FIXED, sampler="nuts", nuts_warmup=200, super_transitions=400,
                               budget=1000, until_ess=200).fit(X, y)
    until = reg.result_.totals["until"]
    assert until["reached"] and reg.n_grad_ < 0.75 * cap * 4
    fs = reg.idata_["function_space"]
    assert fs.sizes["draw"] == until["draws"]
    figures = [float(min(az.ess(fs, method=m)[v].values.min() for v in ("f", "log_lik")))
               for m in ("bulk", "tail")]
    np.testing.assert_allclose(figures, [until["ess_bulk"], until["ess_tail"]], rtol=1e-6)
    assert min(figures) >= 200 and float(az.rhat(fs)["f"].max()) <= 1.01


def test_a_budget_that_ends_first_warns_and_the_rule_is_checked_early():
    """Chains whose step is too small to move (the stuck variant of test_bnn_estimator.py)
    cannot reach the target: the fit ends at its budget and warns that the rule was not met."""
    X, y = _data()
    reg = BayesianMLPRegressor(**FIXED, sampler="neal_gibbs", step_size=1e-4, steps=10,
                               super_transitions=20, budget=100, until_ess=100)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reg.fit(X, y)
    assert not reg.result_.totals["until"]["reached"]
    assert any("stopped at its cap before its rule held (bulk and tail ESS >= until_ess=100"
               in str(w.message) and w.category is SamplingWarning for w in caught)
    for kw, match in ((dict(chains=1), "needs chains >= 2"),
                      (dict(until_ess=-3), "until_ess must be a positive number")):
        with pytest.raises(BomcmcError, match=match):
            BayesianMLPRegressor(**{**FIXED, "until_ess": 100, **kw}).fit(X, y)
