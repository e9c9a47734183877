"""What both network estimators share: scikit-learn's estimator checks, one pre-trained start
per chain, R-hat across chains, and the whole pipeline of Ask (2022) — fixed Gaussian priors,
Adam pre-training to the MAP, NUTS from there, the predictive mean and sd, R-hat."""

import warnings

import jax
import numpy as np
import pytest
from sklearn.utils.estimator_checks import estimator_checks_generator

from bomcmc import BayesianMLPClassifier, BayesianMLPRegressor
from bomcmc.bnn.network import BNN
from bomcmc.bnn.pretrain import pretrain

pytestmark = [pytest.mark.usefixtures("compilation_cache"),  # fixture in conftest.py
              pytest.mark.filterwarnings("ignore::bomcmc.SamplingWarning")]

TINY = dict(hidden=(3,), sampler="neal_gibbs", steps=10, step_size=0.1, super_transitions=4,
            budget=200, pretrain_steps=0, progress=False)  # pre-training: tested below
# scikit-learn's checks fit networks of fixed priors: no precision to Gibbs-draw, so each
# fit of a new shape compiles no Gibbs programs (one fit: 7.0 s against 13.6 s on a 2-core
# machine under load, a script not kept, one run). The checks test the estimators' contract;
# hierarchical fits through the estimators are tested in test_bnn_regressor.py and
# test_bnn_classifier.py.
FIXED_PRIOR = "ih 1 bh 1 ho 1 bo 1"


def _name(check) -> str:
    """A check's name, with the arguments a partial gives it (readonly_memmap=True)."""
    func = getattr(check, "func", check)
    kw = getattr(check, "keywords", None) or {}
    args = ",".join(f"{k}={v}" for k, v in kw.items())
    return func.__name__ + (f"({args})" if args else "")


# The classifier's checks that fit networks only to exercise what it shares with the
# regressor: the common fitting and parameter handling (`bnn/estimator.py`) and the conversion
# of lists and read-only (memory-mapped) input, which the regressor's same checks run in CI.
# Each fits networks of a new shape, about 10 s, so on the classifier they run with `-m slow`.
SHARED_FITS = {
    "check_fit_score_takes_y", "check_estimators_overwrite_params",
    "check_dont_overwrite_parameters", "check_estimators_fit_returns_self",
    "check_readonly_memmap_input", "check_n_features_in_after_fitting",
    "check_positive_only_tag_during_fit", "check_classifier_data_not_an_array",
    "check_classifiers_train(readonly_memmap=True)",
    "check_classifiers_train(readonly_memmap=True,X_dtype=float32)",
}


def _checks():
    """Every check scikit-learn runs on a regressor and a classifier, none expected to fail.
    In CI: the API checks (`legacy=False`) on the regressor, and on the classifier those that
    do not fit or that fit through its own code (SHARED_FITS above); the regression and
    target checks on the regressor; the classification checks and pickling on the
    classifier. The other legacy checks (dtypes, NaN and inf, 1-d and 1-sample input,
    idempotence, subset invariance, ...) exercise the validation, fitting and prediction
    code both estimators share (`bnn/estimator.py`) and run with `-m slow` on both (the
    suite's time, README). Skipped by scikit-learn itself: check_array_api_input (needs
    SCIPY_ARRAY_API=1 and an array library; the estimators convert their input to NumPy)."""
    for est in (BayesianMLPRegressor(**TINY, prior=FIXED_PRIOR, noise="0.5"),
                BayesianMLPClassifier(**TINY, prior=FIXED_PRIOR)):
        api = {_name(c) for _, c in estimator_checks_generator(est, legacy=False)}
        for e, check in estimator_checks_generator(est):
            name = _name(check)
            classifier = isinstance(e, BayesianMLPClassifier)
            own = ("classif" in name or "pickle" in name) if classifier else (
                "regress" in name or "supervised" in name)
            shared = (name not in api and not own) or (classifier and name in SHARED_FITS)
            yield pytest.param(e, check, id=f"{type(e).__name__}-{name}",
                               marks=[pytest.mark.slow] if shared else [])


@pytest.mark.parametrize("estimator, check", _checks())
def test_scikit_learn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check(estimator)


def test_every_chain_starts_from_its_own_pretrained_fit():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(30, 1))
    model = BNN(X, np.sin(2 * X[:, 0]), hidden=(4,), prior="ih 1 bh 1 ho 1 bo 1",
                likelihood="real", noise="0.1")
    key = jax.random.PRNGKey(3)
    many = pretrain(model, key, steps=300, chains=3)
    one = pretrain(model, key, steps=300)
    assert many.losses.shape == (3, 300)
    assert np.all(many.losses[:, -1] < 0.2 * many.losses[:, 0])  # each fit went down
    w = np.asarray(many.position["w"]["ih0"])
    assert w.shape == (3, 1, 4) and np.all(np.ptp(w, axis=0) > 1e-3)  # three distinct fits
    np.testing.assert_allclose(one.position["w"]["ih0"], w[0], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="chains"):
        pretrain(model, None, chains=2)


def _sine(seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(40, 1))
    return X, np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=40)


ASK = dict(hidden=(8,), prior="ih 1 bh 1 ho 1 bo 1", noise="0.1", chains=4,
           pretrain_steps=1000, burn_in=0.0, progress=False)
GRID = np.linspace(-1.8, 1.8, 25)[:, None]


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_ask_2022_pipeline_fixed_gaussian_priors_adam_then_nuts(seed):
    """Fixed N(0, 1) priors on every weight and bias (Ask 2022, eq. 6.22), Gaussian noise of
    fixed sd 0.1, four chains each from its own Adam MAP fit, NUTS with Stan's warm-up.

    Measured (seeds 0–3, two data sets): R-hat of f(x) on the grid 1.002–1.006, the RMSE of
    the predictive mean against sin(2x) 0.021–0.044 with the predictive sd 0.043–0.045
    (ratio ≤ 1.0). Asserted: R-hat < 1.1 (Ask's rule) and RMSE < 2.5 predictive sd."""
    X, y = _sine(seed)
    reg = BayesianMLPRegressor(**ASK, sampler="nuts", nuts_warmup=200, super_transitions=400,
                               budget=1000, seed=seed).fit(X, y)
    assert reg.model_.n_hyper == 0  # nothing hierarchical: every prior is fixed
    mean, sd = reg.predict(GRID, return_std=True)
    rmse = np.sqrt(np.mean((mean - np.sin(2 * GRID[:, 0])) ** 2))
    assert rmse < 2.5 * sd.mean()
    assert reg.rhat(GRID) < 1.1
    assert np.isfinite(reg.rhat()) and reg.idata_.posterior.sizes["chain"] == 4


def test_rhat_flags_chains_stuck_at_their_own_optima():
    """The broken variant of the pipeline: a step size so small the chains stay where their
    pre-training left them. Measured R-hat of f(x): 4.0–4.2 over three seeds."""
    X, y = _sine(0)
    reg = BayesianMLPRegressor(**ASK, sampler="neal_gibbs", step_size=1e-4, steps=10,
                               super_transitions=40, budget=100, seed=0).fit(X, y)
    assert reg.rhat(GRID) > 2.0 and reg.rhat() > 2.0
    one = BayesianMLPRegressor(**{**ASK, "chains": 1}, sampler="neal_gibbs", steps=10,
                               super_transitions=4, budget=100).fit(X, y)
    assert np.isnan(one.rhat(GRID))


def test_a_super_transition_longer_than_the_default_buffer_is_not_cut():
    """A bandit's unit is a super-transition of budget // L draws. At budget 20 100 and L = 10
    that is 2010, more than the driver's default buffer of 2000 draws: the driver sizes the
    buffer for the box's shortest L (`host_loop.super_transition_draws`), so the
    super-transition runs whole and nothing warns that it was cut (the warning's advice, a
    chunk_size, is not an estimator parameter)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=30)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reg = BayesianMLPRegressor(hidden=(2,), sampler="ahmc_gibbs", budget=20100,
                                   steps_bounds=(10, 11), super_transitions=1,
                                   pretrain_steps=20, progress=False).fit(X, y)
    assert not [w for w in caught if "cut short" in str(w.message)]
    assert reg.result_.idata.tuning["L"].values.tolist() == [10]
    assert reg.result_.totals["draws"] == 2010  # cut at the buffer, 2000


@pytest.mark.parametrize("bounds, message", [((0, 10), "0 < lo <= hi"),
                                             (("a", 3), "two numbers"),
                                             ((0.2, 0.7), "an integer >= 1")])
def test_a_bad_trajectory_box_is_a_one_line_error_before_pretraining(bounds, message):
    """The estimators size their chunks from steps_bounds, so they check it first: a one-line
    error, not a ZeroDivisionError or a ValueError from inside the fit."""
    from bomcmc.errors import BomcmcError

    X = np.zeros((10, 1))
    with pytest.raises(BomcmcError, match=f"steps_bounds must .*{message}"):
        BayesianMLPRegressor(sampler="ahmc_gibbs", steps_bounds=bounds).fit(X, X[:, 0])


def test_the_default_buffer_holds_a_whole_super_transition_up_to_its_cap():
    """`default_buffer`: 2000 draws or 2**24 numbers, raised to a tuner's super-transition of
    `unit` draws up to 2**28 numbers (Dexter's three chains of 64 050 weights: 87 draws before,
    1000 now at budget 20 000 and L >= 20); never more draws than the run has."""
    from bomcmc.bnn.samplers import ahmc_gibbs_sampler, neal_sampler
    from bomcmc.driver.host_loop import default_buffer, super_transition_draws
    from bomcmc.options import SamplerConfig

    assert default_buffer(3, 64050, 40001, 0) == 87
    assert default_buffer(3, 64050, 40001, 0, unit=1000) == 1000
    assert default_buffer(3, 64050, 500, 0, unit=1000) == 500
    assert default_buffer(3, 64050, 40001, 0, unit=10**6) == (1 << 28) // (3 * 64050)
    model = BNN(np.zeros((5, 1)), np.zeros((5, 1)), hidden=(2,), noise="0.1")
    sampler = ahmc_gibbs_sampler(model)
    config = SamplerConfig({}, None, {}, {"budget": 20000, "steps_bounds": (20, 2000)})
    assert super_transition_draws(sampler, config) == 1000
    default_bounds = SamplerConfig({}, None, {}, {"budget": 5000})  # the box's default L >= 10
    assert super_transition_draws(sampler, default_bounds) == 500
    assert super_transition_draws(sampler, SamplerConfig({}, None, {}, {})) is None
    assert super_transition_draws(neal_sampler(model), SamplerConfig({}, None, {}, None)) is None


class _Stop(Exception):
    """Raised in place of pre-training: the fit has chosen its seed by then."""


def _stopped(used):
    def starts(self, model):
        used.append(self.seed_)
        raise _Stop
    return starts


X_TINY, Y_TINY = np.linspace(-1, 1, 20)[:, None], np.sin(np.linspace(-1, 1, 20))


def test_random_state_is_scikit_learns_name_for_the_seed(monkeypatch):
    """`random_state` (an int, or a RandomState drawing one) sets the fit's seed where given,
    as scikit-learn's estimators take it; None leaves it to `seed`; a bad value is a one-line
    error before anything runs."""
    from bomcmc.bnn import estimator

    used = []
    monkeypatch.setattr(estimator.BayesianMLPBase, "_starts",
                        _stopped(used))
    for kw, want in [({}, 0), ({"seed": 5}, 5), ({"random_state": 7}, 7),
                     ({"seed": 5, "random_state": 7}, 7),
                     ({"random_state": np.random.RandomState(3)},
                      np.random.RandomState(3).randint(2**31 - 1))]:
        with pytest.raises(_Stop):
            BayesianMLPRegressor(**kw).fit(X_TINY, Y_TINY)
        assert used[-1] == want, kw
    with pytest.raises(ValueError, match="random_state must be an integer"):
        BayesianMLPRegressor(random_state="0").fit(X_TINY, Y_TINY)
    assert BayesianMLPRegressor(random_state=3).get_params()["random_state"] == 3
