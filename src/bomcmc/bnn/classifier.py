"""Bayesian MLP classification as a scikit-learn classifier (the shared machinery:
`bnn/estimator.py`).

    clf = BayesianMLPClassifier(hidden=(8,)).fit(X, labels)
    clf.predict_proba(X_new)        # the posterior predictive class probabilities
    clf.predict(X_new)              # the class of the largest averaged probability

Any labels scikit-learn accepts (integers, strings) are mapped to 0…K−1 in sorted order
(`classes_`). Two classes use FBM's `binary` likelihood (one logit, Bernoulli), more use
`class` (K logits, softmax). The predictive probability is the average over the draws of each
draw's probabilities (`bnn/predict.py`).
"""

from __future__ import annotations

import os

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from ..errors import BomcmcError
from .defaults import BUDGET, DIVERGENCE_MARGIN, ETA_BOUNDS, SUPER_TRANSITIONS
from .estimator import BayesianMLPBase, checked

DEFAULT_CLASS_PRIOR = "ih 0.05:0.5 bh 0.05:0.5 ho x0.05:0.5 bo 100"  # FBM's recipe, no noise


class BayesianMLPClassifier(ClassifierMixin, BayesianMLPBase):
    """Bayesian multi-layer perceptron classification by MCMC.

    Args:
        hidden, prior, activation, sampler, folds, chains, super_transitions, budget,
        burn_in, eps_bounds, steps_bounds, divergence_margin, step_size, steps, window,
        nuts_warmup, pretrain_steps, seed, out, progress, overwrite, shard_data, until_ess,
            random_state: as `BayesianMLPRegressor` (there is no noise).

    A scikit-learn classifier: `classes_` holds the labels, `score` is the accuracy,
    `test_error` the misclassification rate, `predict_proba` the predictive probabilities
    (n, K); `predict` before `fit` raises `NotFittedError`. Fitting is deterministic given
    `seed`.
    """

    def __init__(self, hidden=(16,), *, prior: str = DEFAULT_CLASS_PRIOR,
                 activation: str = "tanh", sampler: str = "ahmc_cv", folds: int = 8,
                 chains: int = 1, super_transitions: int = SUPER_TRANSITIONS,
                 budget: int = BUDGET,
                 burn_in: float = 0.25, eps_bounds=ETA_BOUNDS, steps_bounds=(20, 500),
                 divergence_margin: float | None = DIVERGENCE_MARGIN,
                 step_size: float = 0.1, steps: int = 100, window: int = 1,
                 nuts_warmup: int = 300,
                 pretrain_steps: int = 2000, seed: int = 0, out: str | os.PathLike | None = None,
                 progress: bool | None = None, overwrite: bool = False,
                 shard_data: bool = False, until_ess: float | None = None,
                 random_state: int | np.random.RandomState | None = None):
        self.hidden = hidden
        self.prior, self.activation = prior, activation
        self.sampler, self.folds, self.chains = sampler, folds, chains
        self.super_transitions, self.budget, self.burn_in = super_transitions, budget, burn_in
        self.eps_bounds, self.steps_bounds = eps_bounds, steps_bounds
        self.divergence_margin = divergence_margin
        self.step_size, self.steps, self.nuts_warmup = step_size, steps, nuts_warmup
        self.window = window
        self.pretrain_steps, self.seed, self.out = pretrain_steps, seed, out
        self.progress, self.overwrite = progress, overwrite
        self.shard_data, self.until_ess = shard_data, until_ess
        self.random_state = random_state

    def _likelihood(self, y) -> str:
        return "binary" if len(self.classes_) == 2 else "class"

    def fit(self, X, y) -> "BayesianMLPClassifier":
        """Sample the posterior of the network given (X, labels); returns self."""
        self._validate()
        X, y = checked(validate_data, self, X, y, dtype=np.float64)
        checked(check_classification_targets, y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise BomcmcError(f"a classifier needs at least 2 classes in y; the data has one "
                              f"class: {self.classes_[0]!r}")
        return self._fit(X, codes if len(self.classes_) > 2 else codes[:, None])

    def predict_proba(self, X) -> np.ndarray:
        """Posterior predictive probability of each class, (n, K) in the order of `classes_`
        (the average over draws of each draw's probabilities)."""
        from .predict import predict_classification

        X = self._check_X(X)
        probs = np.asarray(predict_classification(self.model_, self.draws_(), X)["probs"],
                           np.float64)
        if len(self.classes_) == 2:  # binary: the probability of the second class
            probs = np.concatenate([1.0 - probs, probs], axis=1)
        return probs

    def predict_log_proba(self, X) -> np.ndarray:
        """The log of `predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X) -> np.ndarray:
        """The class with the largest predictive probability (ties: the first in classes_)."""
        probs = self.predict_proba(X)  # first: it checks that the classifier is fitted
        return self.classes_[np.argmax(probs, axis=1)]

    def test_error(self, X, y) -> float:
        """The misclassification rate (1 − accuracy; lower is better)."""
        return float(np.mean(self.predict(X) != np.asarray(y)))

    def _state(self) -> dict:
        return {"classes": self.classes_.tolist()}

    def _restore(self, info: dict) -> None:
        self.classes_ = np.asarray(info["classes"])
