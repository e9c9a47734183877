"""A scikit-learn-style estimator for Bayesian MLP regression.

    reg = BayesianMLPRegressor(hidden=(16,), sampler="ahmc_cv", folds=8)
    reg.fit(X, y)                     # Adam pre-training, then MCMC (docs/bnn.md)
    mean, std = reg.predict(X_new, return_std=True)
    reg.idata_                        # the kept draws (ArviZ InferenceData)

**Run length** is a leapfrog budget, the unit of the source documents: `super_transitions` ×
`budget` gradient evaluations per chain (Wang 2012 §3.2: super-transitions of a fixed number
of leapfrog steps; the robot arm ran 200 × 24 000). The driver stops at that budget
(`bomcmc.sample(max_grad=...)`), so every sampler gets the same computation; draws from the
first `burn_in` fraction of it are discarded (kept on disk, not in `idata_`).

**Samplers** (`sampler=`):
- "ahmc_cv" (default): K networks, one per held-out fold, as one chain (`bnn/cv.py`);
  Neal's Gibbs-within-HMC transition with (η, L) tuned by the GP bandit on the CV reward
  (Wang 2012 §3.2, ch. 4);
- "ahmc_gibbs": the same on the one network, reward ESJD/√L;
- "neal_gibbs": Neal's hand-tuned scheme with fixed η = `step_size`, L = `steps` (Choo 2000
  §3.4);
- "nuts": NUTS on the joint posterior of (log τ, w) with Stan's warm-up (`nuts_warmup`
  transitions);
- "nuts_gibbs": Gibbs draws of the precisions, then NUTS on the weights (when installed).
Predictions pool the draws of every fold network for "ahmc_cv" (the K networks are draws of
K posteriors that each miss 1/K of the data; Wang averages their predictions, Wang 2012 §4.1).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import jax
import numpy as np

from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from ..errors import BomcmcError
from ..store import atomic_write, atomic_write_text

DEFAULT_PRIOR = "ih 0.05:0.5 bh 0.05:0.5 ho x0.05:0.5 bo 100"  # FBM's regression recipe
DEFAULT_NOISE = "0.05:0.5"
SAMPLERS = ("ahmc_cv", "ahmc_gibbs", "neal_gibbs", "nuts", "nuts_gibbs")
CONFIG = "bnn.json"


def _write_npz(path, **arrays) -> None:
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def sampler_name(name: str) -> str:
    """The canonical spelling (underscores) of an estimator's sampler name."""
    return name.strip().lower().replace("-", "_")


def _check_int(name, v, lo=1):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
        raise BomcmcError(f"{name} must be an integer >= {lo}, got {v!r}")
    return int(v)


class BayesianMLPRegressor(RegressorMixin, BaseEstimator):
    """Bayesian multi-layer perceptron regression by MCMC.

    Args:
        hidden: hidden layer sizes. activation: "tanh" (default), "sigmoid", "relu", "swish".
        prior: FBM net-spec text of the weight priors (docs/bnn.md); noise: the noise prior.
        sampler: one of SAMPLERS (module docstring). folds: K for "ahmc_cv".
        chains: independent chains (vmapped). seed: the run's seed.
        super_transitions, budget: the leapfrog budget per chain (their product).
        burn_in: fraction of the budget whose draws are discarded.
        eps_bounds, steps_bounds: the bandit's box for η and L ("ahmc_gibbs", "ahmc_cv").
        step_size, steps: η and L for "neal_gibbs". nuts_warmup: NUTS's warm-up transitions.
        pretrain_steps: Adam steps to a MAP start with the sigmas fixed (0: none).
        out: directory for the run (streams to disk, resumable); None keeps it in memory.
        progress, overwrite: as `bomcmc.sample`.

    A scikit-learn regressor: parameters are stored as given and checked in `fit`
    (`get_params` / `set_params`, `clone`, `Pipeline`, `GridSearchCV` and `cross_val_score`
    work), `score` is R² (`test_error` is the mean squared error the robot-arm literature
    reports), `predict` before `fit` raises `NotFittedError`, and `fit` sets
    `n_features_in_` (and `feature_names_in_` for a DataFrame).
    """

    def __init__(self, hidden=(16,), *, prior: str = DEFAULT_PRIOR, noise: str = DEFAULT_NOISE,
                 activation: str = "tanh", sampler: str = "ahmc_cv", folds: int = 8,
                 chains: int = 1, super_transitions: int = 100, budget: int = 4000,
                 burn_in: float = 0.25, eps_bounds=(0.01, 1.01), steps_bounds=(20, 500),
                 step_size: float = 0.1, steps: int = 100, nuts_warmup: int = 300,
                 pretrain_steps: int = 2000, seed: int = 0, out: str | os.PathLike | None = None,
                 progress: bool | None = None, overwrite: bool = False):
        self.hidden = hidden
        self.prior, self.noise, self.activation = prior, noise, activation
        self.sampler, self.folds, self.chains = sampler, folds, chains
        self.super_transitions, self.budget, self.burn_in = super_transitions, budget, burn_in
        self.eps_bounds, self.steps_bounds = eps_bounds, steps_bounds
        self.step_size, self.steps, self.nuts_warmup = step_size, steps, nuts_warmup
        self.pretrain_steps, self.seed, self.out = pretrain_steps, seed, out
        self.progress, self.overwrite = progress, overwrite

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True  # MCMC: a different seed gives different draws
        return tags

    def _hidden(self) -> tuple[int, ...]:
        return (self.hidden,) if isinstance(self.hidden, (int, np.integer)) else \
            tuple(self.hidden)

    def _validate(self) -> None:
        if not isinstance(self.sampler, str) or sampler_name(self.sampler) not in SAMPLERS:
            raise BomcmcError(f"sampler must be one of {', '.join(SAMPLERS)}, "
                              f"got '{self.sampler}'")
        _check_int("chains", self.chains)
        _check_int("super_transitions", self.super_transitions)
        _check_int("budget", self.budget)
        _check_int("pretrain_steps", self.pretrain_steps, 0)
        _check_int("seed", self.seed, 0)
        if not (isinstance(self.burn_in, (int, float)) and 0 <= self.burn_in < 1):
            raise BomcmcError(f"burn_in must be a fraction in [0, 1), got {self.burn_in!r}")

    # -- fitting ----------------------------------------------------------------------------
    def _model(self, X, y):
        from .network import BNN

        return BNN(X, y, hidden=self._hidden(), prior=self.prior, likelihood="real",
                   noise=self.noise, activation=self.activation, name="bnn")

    def _start(self, model):
        if not self.pretrain_steps:
            return None
        from .pretrain import pretrain

        return pretrain(model, jax.random.PRNGKey(self.seed), steps=self.pretrain_steps).position

    def _sampler_and_posterior(self, model, start):
        """(sampler, posterior, keyword arguments of bomcmc.sample, the CV model or None)."""
        from .cv import CVModel
        from .samplers import ahmc_gibbs_sampler, neal_sampler, nuts_gibbs_sampler

        name = sampler_name(self.sampler)
        if name == "ahmc_cv":
            cv = CVModel(model, self.folds)
            return ahmc_gibbs_sampler(cv), cv.posterior(init=start), dict(
                adapt=None, eps_bounds=self.eps_bounds, steps_bounds=self.steps_bounds,
                budget=self.budget, reward="cv"), cv
        if name == "ahmc_gibbs":
            return ahmc_gibbs_sampler(model), model.posterior(init=start), dict(
                adapt=None, eps_bounds=self.eps_bounds, steps_bounds=self.steps_bounds,
                budget=self.budget, reward="esjd"), None
        if name == "neal_gibbs":
            return neal_sampler(model), model.posterior(init=start), dict(
                adapt=None, step_size=self.step_size, steps=self.steps), None
        if name == "nuts":
            return "nuts", model.posterior(init=start), dict(adapt="window"), None
        return nuts_gibbs_sampler(model), model.posterior(init=start), dict(adapt="auto"), None

    def fit(self, X, y) -> "BayesianMLPRegressor":
        """Sample the posterior of the network given (X, y); returns self."""
        from ..driver import api as _run

        self._validate()
        self.n_features_in_ = int(np.shape(X)[1]) if np.ndim(X) == 2 else 1
        if hasattr(X, "columns"):
            self.feature_names_in_ = np.asarray([str(c) for c in X.columns], dtype=object)
        X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
        model = self._model(X, y)
        self._y_ndim = np.asarray(y).ndim
        sampler, post, kw, cv = self._sampler_and_posterior(model, self._start(model))
        name = sampler_name(self.sampler)
        max_grad = int(self.super_transitions) * int(self.budget)
        lo = math.ceil(float(self.steps_bounds[0])) if name.startswith("ahmc") else (
            int(self.steps) if name == "neal_gibbs" else 1)
        warmup = int(self.nuts_warmup) if name.startswith("nuts") else 0
        draws = max_grad // max(lo, 1) + 1
        out = None if self.out is None else Path(self.out) / "run"
        if self.out is not None:
            Path(self.out).mkdir(parents=True, exist_ok=True)
        result = _run.sample(posterior=post, sampler=sampler, chains=int(self.chains),
                             draws=draws, warmup=warmup, seed=int(self.seed), out=out,
                             progress=self.progress, overwrite=self.overwrite,
                             max_grad=max_grad, **kw)
        self.model_ = model
        self.cv_ = cv
        self.result_ = result
        self.idata_ = self._kept(result.idata, result.totals, max_grad)
        self.n_grad_ = int(result.totals["n_grad"] + result.totals["n_grad_warmup"])
        self.wall_s_ = float(result.totals["wall_s_total"])
        if self.out is not None:
            self._save(Path(self.out), X, y)
        return self

    def _kept(self, idata, totals, max_grad):
        """The draws after the first burn_in fraction of the budget (by gradients spent)."""
        ss = idata.sample_stats
        grads = np.asarray(ss["n_grad"].values, float).mean(axis=0)  # (draws,)
        spent = totals["n_grad_warmup"] / max(totals["chains"], 1) + np.cumsum(grads)
        keep = spent > self.burn_in * max_grad
        first = int(np.argmax(keep)) if keep.any() else len(keep) - 1
        first = min(first, max(len(keep) - 2, 0))  # at least two draws for a std
        return idata.isel(draw=slice(first, None))

    # -- prediction -------------------------------------------------------------------------
    def _check_fitted(self) -> None:
        check_is_fitted(self, "model_")

    def draws_(self) -> np.ndarray:
        """Flat network draws (S, dim) used for prediction (every fold network for CV)."""
        self._check_fitted()
        flat = _flat_draws(self.idata_)
        if self.cv_ is not None:
            return self.cv_.fold_positions(flat).reshape(-1, self.model_.dim)
        return flat

    def predict(self, X, return_std: bool = False, include_noise: bool = False):
        """Posterior predictive mean (n, n_out) (Ask 2022, eq. 6.19); with return_std, also
        the predictive sd per output (eq. 6.20; the regression function's, or of a new
        target with include_noise)."""
        from .predict import predict_regression

        self._check_fitted()
        X = np.asarray(X, dtype=float)
        if X.ndim == 1:
            X = X[:, None]
        if X.ndim != 2 or X.shape[1] != self.model_.n_in:
            raise BomcmcError(f"X must have {self.model_.n_in} columns, got shape {X.shape}")
        if not np.all(np.isfinite(X)):
            raise BomcmcError("X contains NaN or inf values")
        pred = predict_regression(self.model_, self.draws_(), X, include_noise=include_noise)
        squeeze = self.model_.n_out == 1 and self._y_ndim == 1
        mean, std = pred["mean"], pred["std"]
        if squeeze:
            mean, std = mean[:, 0], std[:, 0]
        return (mean, std) if return_std else mean

    def test_error(self, X, y) -> float:
        """Test error in the convention of Wang 2012, Table 4.1: squared error summed over the
        outputs, averaged over cases (lower is better). `score` is scikit-learn's R²."""
        y = np.asarray(y, float).reshape(len(X), -1)
        return float(np.mean(np.sum((self.predict(X).reshape(y.shape) - y) ** 2, axis=1)))

    # -- persistence ------------------------------------------------------------------------
    def _save(self, out: Path, X, y) -> None:
        params = {k: (list(v) if isinstance(v, tuple) else v)
                  for k, v in self.get_params().items() if k not in ("out",)}
        info = {"params": params, "y_ndim": self._y_ndim, "n_grad": self.n_grad_,
                "wall_s": self.wall_s_, "first_draw": int(self.idata_.posterior.draw.values[0])}
        atomic_write(out / "train.npz", lambda tmp: _write_npz(
            tmp, X=np.asarray(X, float), y=np.asarray(y, float)))
        atomic_write_text(out / CONFIG, json.dumps(info, indent=1))

    @classmethod
    def load(cls, out: str | os.PathLike) -> "BayesianMLPRegressor":
        """A fitted regressor from the directory a fit with out= wrote."""
        from ..driver import api as _run

        out = Path(out)
        if not (out / CONFIG).exists():
            raise BomcmcError(f"{out}: no {CONFIG} (not a finished `bnn fit` directory)")
        try:
            info = json.loads((out / CONFIG).read_text())
            data = np.load(out / "train.npz")
        except (OSError, ValueError) as e:
            raise BomcmcError(f"{out}: cannot read the fitted model: {e}") from None
        params = info["params"]
        params["hidden"] = tuple(params["hidden"])
        reg = cls(**params, out=out)
        reg._y_ndim = int(info["y_ndim"])
        X, y = data["X"], data["y"]
        reg.model_ = reg._model(X, y)
        reg.cv_ = None
        if sampler_name(reg.sampler) == "ahmc_cv":
            from .cv import CVModel

            reg.cv_ = CVModel(reg.model_, reg.folds)
        result = _run.load(out / "run")
        reg.result_ = result
        reg.idata_ = result.idata.isel(draw=slice(int(info["first_draw"]), None))
        reg.n_grad_, reg.wall_s_ = int(info["n_grad"]), float(info["wall_s"])
        return reg

    @property
    def _y_ndim(self) -> int:
        return getattr(self, "_y_ndim_", 2)

    @_y_ndim.setter
    def _y_ndim(self, v: int) -> None:
        self._y_ndim_ = v


def _flat_draws(idata) -> np.ndarray:
    """(chains·draws, dim) flat unconstrained positions from an InferenceData of a run."""
    post = idata.posterior
    parts = []
    for name in post.data_vars:
        v = np.asarray(post[name].values)
        parts.append(v.reshape(v.shape[0] * v.shape[1], -1))
    return np.concatenate(parts, axis=1)
