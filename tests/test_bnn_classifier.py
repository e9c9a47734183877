"""BayesianMLPClassifier: labels of any kind, probabilities, accuracy as score, and it runs in
a GridSearchCV over a Pipeline, which cross-validates each setting and refits the best
(scikit-learn's own checks:
test_bnn_estimator.py)."""

import numpy as np
import pytest
from sklearn.base import is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from bomcmc import BayesianMLPClassifier

pytestmark = pytest.mark.usefixtures("compilation_cache")  # fixture in conftest.py

TINY = dict(hidden=(3,), sampler="neal_gibbs", steps=10, step_size=0.1, super_transitions=4,
            budget=200, pretrain_steps=200, progress=False)


def _blobs(n=60, k=2, seed=0):
    """k well-separated Gaussian clusters in 2-D (centres 4 apart, unit spread)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, size=n)
    centres = 4.0 * np.stack([np.cos(2 * np.pi * np.arange(k) / k),
                              np.sin(2 * np.pi * np.arange(k) / k)], axis=1)
    return centres[labels] + rng.normal(size=(n, 2)), labels


def test_it_is_a_scikit_learn_classifier():
    clf = BayesianMLPClassifier(**TINY)
    assert is_classifier(clf) and repr(clf).startswith("BayesianMLPClassifier(")
    assert "noise" not in clf.get_params()
    with pytest.raises(NotFittedError):
        clf.predict(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="2 classes"):
        clf.fit(np.zeros((5, 2)), np.ones(5))
    with pytest.raises(ValueError, match="Unknown label type"):
        clf.fit(np.zeros((5, 2)), np.linspace(0, 1, 5))


@pytest.mark.parametrize("k", [2, 3])
def test_string_labels_probabilities_and_accuracy(k):
    X, codes = _blobs(k=k)
    names = np.array(["ant", "bee", "cat"])[:k]
    clf = BayesianMLPClassifier(**TINY).fit(X, names[codes])
    assert list(clf.classes_) == list(names)
    assert clf.model_.likelihood == ("binary" if k == 2 else "class")
    proba = clf.predict_proba(X)
    assert proba.shape == (len(X), k)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-6)
    pred = clf.predict(X)
    assert set(pred) <= set(names)
    np.testing.assert_array_equal(pred, names[proba.argmax(axis=1)])
    # separated clusters: the Bayes error is below 1 %; a fit that learned nothing scores 1/k
    # (measured training accuracy 1.0 for k = 2, 3 and seeds 0–2)
    assert clf.score(X, names[codes]) > 0.9
    assert clf.test_error(X, names[codes]) == pytest.approx(1 - clf.score(X, names[codes]))
    np.testing.assert_allclose(np.exp(clf.predict_log_proba(X)), proba, rtol=1e-6)


# the regressor's grid search covers Pipeline + GridSearchCV in CI; this one with -m slow
@pytest.mark.slow
def test_a_grid_search_over_a_pipeline_cross_validates_and_refits():
    X, y = _blobs(n=40)
    pipe = Pipeline([("scale", StandardScaler()), ("bnn", BayesianMLPClassifier(**TINY))])
    grid = GridSearchCV(pipe, {"bnn__steps": [5, 10]}, cv=2).fit(X, y)
    scores = np.array([grid.cv_results_[f"split{k}_test_score"] for k in range(2)])
    assert scores.shape == (2, 2) and np.all((0 <= scores) & (scores <= 1))  # accuracies
    assert grid.best_params_["bnn__steps"] in (5, 10)
    assert grid.best_estimator_.predict_proba(X).shape == (40, 2)
