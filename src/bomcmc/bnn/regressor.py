"""Bayesian MLP regression as a scikit-learn regressor (the shared machinery:
`bnn/estimator.py`).

    reg = BayesianMLPRegressor(hidden=(16,)).fit(X, y)
    mean, std = reg.predict(X_new, return_std=True)     # Ask 2022, eqs. 6.19–6.20
    mean, cov = reg.predict(X_new, return_cov=True)     # (n, n_out, n_out) per input

Targets are Gaussian ("real" in FBM) with the `noise` prior on their precision; y may have
several columns (one network output each).
"""

from __future__ import annotations

import os
import warnings

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils.validation import validate_data

from ..errors import BomcmcError
from .defaults import BUDGET, DIVERGENCE_MARGIN, ETA_BOUNDS, SUPER_TRANSITIONS
from .estimator import DEFAULT_NOISE, DEFAULT_PRIOR, BayesianMLPBase, checked

# Targets the default priors fit poorly: an output bias of width 100 and Gamma hyperpriors on
# the output weights' and the noise's precisions, written for data near unit scale. On
# y = a + b (sin x₀ + x₁/2 + noise), 120 cases, a 3-8-1 network, one seed, the test R² was
# 0.98 for |a| ≤ 30 and b from 0.01 to 500, and 0.82-0.87 at a = 100-1000, 0.56 at
# b = 1e4, 0.74 at b = 1e-4, -4.2 at a house price's scale (docs/bnn.md, "Targets far from
# unit scale"). A mean counts in sds (of 1 at least): a spread-out y's output weights are
# large anyway, and a = 1000 with b = 500 scored 0.94.
TARGET_MEAN_MAX = 50.0
TARGET_SD_RANGE = (1e-3, 1e3)


class BayesianMLPRegressor(RegressorMixin, BayesianMLPBase):
    """Bayesian multi-layer perceptron regression by MCMC.

    Args:
        hidden: hidden layer sizes. activation: "tanh" (default), "sigmoid", "relu", "swish".
        prior: FBM net-spec text of the weight priors (docs/bnn.md); fixed widths such as
            "ih 1 bh 1 ho 1 bo 1" are the fixed Gaussian priors of Ask 2022, eq. 6.22.
        noise: the noise prior ("0.05:0.5": a Gamma hyperprior; "0.1": fixed σ = 0.1).
        sampler: one of "ahmc_cv", "ahmc_gibbs", "neal_gibbs", "nuts", "nuts_gibbs",
            "dyn_a", "dyn_b" (`bnn/estimator.py`). folds: K for "ahmc_cv".
        chains: independent chains (vmapped). seed: the run's seed. random_state:
            scikit-learn's name for it, which wins where given: an int is the seed, a
            `numpy.random.RandomState` draws one; None (the default) leaves it to `seed`.
            `seed_` is the seed a fit used.
        super_transitions, budget: the leapfrog budget per chain (their product).
        burn_in: fraction of the budget whose draws are discarded (with `until_ess`, of
            the sampling's gradients so far).
        eps_bounds, steps_bounds: the bandit's box for η and L ("ahmc_gibbs", "ahmc_cv").
            The η box is a quarter of Wang's [0.01, 1.01], which diverged more often at
            these defaults (docs/bnn.md); his reproductions pass his.
        divergence_margin: once an η has diverged, the bandit keeps η at most this × the
            smallest η that diverged (0.8; None: Wang's bandit, whose annealed proposals may
            still try a large η; docs/bnn.md, "Divergences and the η ceiling").
        step_size, steps: η and L for "neal_gibbs"; window: W of Neal's (1994) accept and
            reject windows for "neal_gibbs" (FBM's `hybrid L:W η`; 1: plain HMC).
        nuts_warmup: NUTS's warm-up transitions.
        pretrain_steps: Adam steps to a MAP start for every chain, with the sigmas fixed
            (0: none).
        out: directory for the run (streams to disk, resumable); None keeps it in memory.
        progress, overwrite: as `bomcmc.sample`.
        shard_data: split the training cases over every device of every process
            (`bomcmc.sample(shard_data=True)`), each summing its cases' likelihood; in a
            program over several processes every process calls `fit` alike and gets the fit.
        until_ess: sample until the predictions at the training inputs and the training
            log-likelihood (`bnn/function_space.py`) have bulk and tail ESS of at least this
            and R-hat <= 1.01 after the burn-in (the first `burn_in` of the gradients so
            far), the budget then a cap (a warning if it ends the fit first). Needs
            chains >= 2. None: the whole budget.

    A scikit-learn regressor: parameters are stored as given and checked in `fit`, `score`
    is R² (`test_error` is the squared error the robot-arm literature reports), `predict`
    before `fit` raises `NotFittedError`, and `fit` sets `n_features_in_` (and
    `feature_names_in_` for a DataFrame). Fitting is deterministic given `seed`.
    """

    def __init__(self, hidden=(16,), *, prior: str = DEFAULT_PRIOR, noise: str = DEFAULT_NOISE,
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
        self.prior, self.noise, self.activation = prior, noise, activation
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

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True  # one network output per column of y
        return tags

    def _likelihood(self, y) -> str:
        return "real"

    def _noise_prior(self):
        return self.noise

    def fit(self, X, y) -> "BayesianMLPRegressor":
        """Sample the posterior of the network given (X, y); returns self."""
        self._validate()
        X, y = checked(validate_data, self, X, y, multi_output=True, y_numeric=True,
                       dtype=np.float64)
        self._y_ndim_ = y.ndim
        y = np.asarray(y, dtype=np.float64)
        if self.prior == DEFAULT_PRIOR:
            self._warn_if_far_from_unit_scale(y)
        return self._fit(X, y)

    def _warn_if_far_from_unit_scale(self, y) -> None:
        """A UserWarning naming the first target column far from unit scale (above), and how
        to standardise it in the interface that fits."""
        y = y.reshape(len(y), -1)
        mean, sd = y.mean(axis=0), y.std(axis=0)
        lo, hi = TARGET_SD_RANGE
        far = (np.abs(mean) > TARGET_MEAN_MAX * np.maximum(sd, 1.0)) | (sd < lo) | (sd > hi)
        if not far.any():
            return
        j = int(np.flatnonzero(far)[0])
        which = f"target column {j}" if y.shape[1] > 1 else "y"
        fix = ("standardise the --target column(s) of the data (subtract the mean, divide by "
               "the sd) and scale the predictions back" if self.advice_flags is not None else
               "standardise it, e.g. TransformedTargetRegressor(BayesianMLPRegressor(...), "
               "transformer=StandardScaler()) from sklearn.compose and sklearn.preprocessing")
        warnings.warn(f"{which} has mean {mean[j]:.3g} and sd {sd[j]:.3g}, far from the unit "
                      f"scale the default priors are written for (|mean| <= "
                      f"{TARGET_MEAN_MAX:g} max(sd, 1), sd in [{lo:g}, {hi:g}]): the fit may "
                      f"be poor; {fix}", UserWarning, stacklevel=3)

    def predict(self, X, return_std: bool = False, return_cov: bool = False,
                include_noise: bool = False):
        """Posterior predictive mean, (n,) or (n, n_out) like y (Ask 2022, eq. 6.19).

        With `return_std`, also the predictive sd of each output; with `return_cov`, the
        predictive covariance (n, n_out, n_out) of the outputs (eq. 6.20). Both are the
        regression function's, or of a new target with `include_noise`."""
        from .predict import predict_regression

        if return_std and return_cov:
            raise BomcmcError("return_std and return_cov cannot both be requested")
        X = self._check_X(X)
        pred = predict_regression(self.model_, self.draws_(), X, include_noise=include_noise)
        mean, std, cov = (np.asarray(pred[k], np.float64) for k in ("mean", "std", "cov"))
        if self.model_.n_out == 1 and self._y_ndim_ == 1:
            mean, std = mean[:, 0], std[:, 0]
        if return_cov:
            return mean, cov
        return (mean, std) if return_std else mean

    def predict_folds(self, X) -> np.ndarray:
        """Each fold network's own posterior predictive mean, (K, n) or (K, n, n_out) like y:
        the K networks that sampler "ahmc_cv" advances together, one per held-out fold. Wang
        2012 §4.1 scores them one by one (the median and mean of their test errors); `predict`
        pools them."""
        from .estimator import flat_draws
        from .predict import forward

        X = self._check_X(X)
        if self.cv_ is None:
            raise BomcmcError(f"predict_folds needs sampler='ahmc_cv' (fold networks); this "
                              f"regressor was fitted with '{self.sampler}'")
        per_fold = self.cv_.fold_positions(flat_draws(self.idata_))  # (S, K, dim)
        means = np.stack([np.asarray(forward(self.model_, per_fold[:, k], X), np.float64)
                          .mean(axis=0) for k in range(self.cv_.folds)])
        return means[..., 0] if self.model_.n_out == 1 and self._y_ndim_ == 1 else means

    def test_error(self, X, y) -> float:
        """Test error in the convention of Wang 2012, Table 4.1: squared error summed over the
        outputs, averaged over cases (lower is better). `score` is scikit-learn's R²."""
        y = np.asarray(y, float).reshape(len(X), -1)
        return float(np.mean(np.sum((self.predict(X).reshape(y.shape) - y) ** 2, axis=1)))

    def _state(self) -> dict:
        return {"y_ndim": self._y_ndim_}

    def _restore(self, info: dict) -> None:
        self._y_ndim_ = int(info.get("y_ndim", 2))
