"""What the scikit-learn estimators for Bayesian MLPs share: parameters, fitting, persistence.

    reg = BayesianMLPRegressor(hidden=(16,), sampler="ahmc_cv", folds=8)   # bnn/regressor.py
    reg.fit(X, y)                     # Adam pre-training, then MCMC (docs/bnn.md)
    mean, std = reg.predict(X_new, return_std=True)
    clf = BayesianMLPClassifier(hidden=(8,)).fit(X, labels)                # bnn/classifier.py
    clf.predict_proba(X_new)
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
  §3.4), and with `window` > 1 Neal's (1994) accept and reject windows (FBM's `hybrid L:W η`);
- "nuts": NUTS on the joint posterior of (log τ, w) with Stan's warm-up (`nuts_warmup`
  transitions);
- "nuts_gibbs": Gibbs draws of the precisions, then NUTS on the weights;
- "dyn_a", "dyn_b": Choo's joint dynamics of weights and log-precisions (Choo 2000 ch. 4,
  `bnn/dynamical.py`), Dynamical A on the weights as they are, B on the non-centred weights
  w·√τ, with (η, L) tuned by the GP bandit (reward ESJD/√L); B's log-precision step sizes
  from Choo's estimate (eqs. 4.37–4.43), or with "dyn_b_gn" from the Gauss–Newton one
  (docs/bnn_dynamical.md).
Predictions pool the draws of every fold network for "ahmc_cv" (the K networks are draws of
K posteriors that each miss 1/K of the data; Wang averages their predictions, Wang 2012 §4.1).
"""

from __future__ import annotations

import dataclasses
from functools import partial
import json
import math
import os
import warnings
from pathlib import Path

import jax
import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted, validate_data

from ..diagnostics.checks import SamplingWarning
from ..driver.until import check_target
from ..errors import BomcmcError
from ..store import atomic_write, atomic_write_text
from ..validation import pair

from .defaults import DEFAULT_NOISE, DEFAULT_PRIOR, SAMPLERS, sampler_name  # noqa: F401

CONFIG = "bnn.json"
# training cases padded (weighed zero) to a multiple of this as the run's inputs, so that the
# training sets of cross-validation folds and grid-search splits, a few cases apart, share
# one compiled program (and its persistent-cache entry)
ROW_MULTIPLE = 16
# the parameters each sampler reads besides the shared ones: the warnings advise only these
_BANDIT = ("eps_bounds", "steps_bounds", "divergence_margin")
USES = {"ahmc_cv": _BANDIT + ("folds",), "ahmc_gibbs": _BANDIT, "dyn_a": _BANDIT,
        "dyn_b": _BANDIT, "dyn_b_gn": _BANDIT,
        "neal_gibbs": ("step_size", "steps", "window"),
        "nuts": ("nuts_warmup",), "nuts_gibbs": ("nuts_warmup",)}
SHARED = ("sampler", "chains", "super_transitions", "budget", "burn_in", "pretrain_steps", "seed")


def _write_npz(path, **arrays) -> None:
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def _check_int(name, v, lo=1):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
        raise BomcmcError(f"{name} must be an integer >= {lo}, got {v!r}")
    return int(v)


def checked(fn, *args, **kwargs):
    """scikit-learn's input validation, its ValueErrors raised as BomcmcError (a ValueError:
    the message and the type scikit-learn's checks expect are kept)."""
    try:
        return fn(*args, **kwargs)
    except BomcmcError:
        raise
    except ValueError as e:
        raise BomcmcError(str(e).strip()) from None


class BayesianMLPBase(BaseEstimator):
    """Fitting, prediction plumbing and persistence shared by the regressor and the classifier.

    Subclasses define `__init__` (scikit-learn reads the parameters from its signature),
    `_likelihood(y)`, `fit` (scikit-learn's input validation, then `_fit` with the targets
    the network models) and the prediction methods. Parameters are documented on the
    subclasses."""

    # the command line's flags when `bomcmc bnn fit` fits (cli/bnn.py): the warnings' advice
    # is then spelled as those flags; None: as the estimator's parameters
    advice_flags: frozenset | None = None

    def _hidden(self) -> tuple[int, ...]:
        return (self.hidden,) if isinstance(self.hidden, (int, np.integer)) else \
            tuple(self.hidden)

    def _validate(self) -> None:
        if not isinstance(self.sampler, str) or sampler_name(self.sampler) not in SAMPLERS:
            raise BomcmcError(f"sampler must be one of {', '.join(SAMPLERS)}, "
                              f"got '{self.sampler}'")
        _check_int("chains", self.chains)
        _check_int("window", self.window)
        _check_int("super_transitions", self.super_transitions)
        _check_int("budget", self.budget)
        _check_int("pretrain_steps", self.pretrain_steps, 0)
        _check_int("seed", self.seed, 0)
        if not (isinstance(self.burn_in, (int, float)) and 0 <= self.burn_in < 1):
            raise BomcmcError(f"burn_in must be a fraction in [0, 1), got {self.burn_in!r}")
        check_target(self.until_ess, self.chains)  # before pre-training, as the driver would
        if "steps_bounds" in USES.get(sampler_name(self.sampler), ()):  # before pre-training
            pair("steps_bounds", self.steps_bounds, integer=True)
            from ..tuning.ceiling_bandit import check_margin

            check_margin(self.divergence_margin)

    # -- fitting ----------------------------------------------------------------------------
    def _model(self, X, y):
        from .network import BNN

        return BNN(X, y, hidden=self._hidden(), prior=self.prior, likelihood=self._likelihood(y),
                   noise=self._noise_prior(), activation=self.activation, name="bnn",
                   row_multiple=ROW_MULTIPLE)

    def _noise_prior(self):
        return None

    def _starts(self, model):
        """One pre-trained start per chain (a leading chain axis), or None."""
        if not self.pretrain_steps:
            return None
        from .pretrain import pretrain

        return pretrain(model, jax.random.PRNGKey(self.seed_), steps=self.pretrain_steps,
                        chains=int(self.chains)).position

    def _sampler_and_posterior(self, model, starts):
        """(sampler, posterior, keyword arguments of bomcmc.sample, the CV model or None)."""
        from .cv import CVModel
        from .samplers import (ahmc_gibbs_sampler, dynamical_sampler, neal_sampler,
                               nuts_gibbs_sampler)

        from .dynamical import DynamicalA, DynamicalB

        name = sampler_name(self.sampler)
        tuned = dict(adapt=None, eps_bounds=self.eps_bounds, steps_bounds=self.steps_bounds,
                     budget=self.budget, divergence_margin=self.divergence_margin)
        cv = CVModel(model, self.folds) if name == "ahmc_cv" else None
        blocks = {"dyn_a": DynamicalA, "dyn_b": DynamicalB,
                  "dyn_b_gn": partial(DynamicalB, hyper_curvature="gauss_newton")}.get(name)
        blocks = blocks(model) if blocks is not None else None
        target = cv if cv is not None else blocks if blocks is not None else model
        post = target.posterior()
        if starts is not None:
            first = jax.tree_util.tree_map(lambda a: a[0], starts)
            if cv is not None:  # every fold network of a chain starts at the chain's fit
                starts = jax.tree_util.tree_map(
                    lambda a: np.broadcast_to(a[:, None], (a.shape[0], cv.folds) + a.shape[1:]),
                    starts)
            if isinstance(blocks, DynamicalB):  # chain starts in B's coordinates
                starts = jax.tree_util.tree_map(np.asarray,
                                                jax.vmap(blocks.to_noncentred)(starts))
            post = dataclasses.replace(target.posterior(init=first), chain_inits=starts)
        if blocks is not None:
            sampler = dynamical_sampler(blocks, tuned=True, name=f"ahmc_{name}")
            return sampler, post, dict(tuned, reward="esjd"), None
        if name == "ahmc_cv":
            # one name for the sampler throughout: progress bar, run attrs, plot titles
            return ahmc_gibbs_sampler(cv, name="ahmc_cv"), post, dict(tuned, reward="cv"), cv
        if name == "ahmc_gibbs":
            return ahmc_gibbs_sampler(model), post, dict(tuned, reward="esjd"), None
        if name == "neal_gibbs":
            window = dict(window=self.window) if self.window != 1 else {}  # Neal 1994
            return neal_sampler(model, windowed=bool(window)), post, dict(
                adapt=None, step_size=self.step_size, steps=self.steps, **window), None
        if name == "nuts":
            return "nuts", post, dict(adapt="window"), None
        return nuts_gibbs_sampler(model), post, dict(adapt="auto"), None

    def _fit(self, X, y):
        """Sample the posterior of the network given validated X and modelled targets y."""
        from ..config import default_compilation_cache
        from ..driver import api as _run

        default_compilation_cache()  # before pre-training, whose programs it then keeps too
        self.seed_ = self._seed()
        model = checked(self._model, X, y)
        sampler, post, kw, cv = self._sampler_and_posterior(model, self._starts(model))
        if self.until_ess is not None:  # until the predictions are precise, after burn-in
            from .function_space import watch

            kw.update(until_ess=float(self.until_ess), until_watch=watch(model, cv),
                      until_burn_in=float(self.burn_in))
        name = sampler_name(self.sampler)
        max_grad = int(self.super_transitions) * int(self.budget)
        lo = math.ceil(float(self.steps_bounds[0])) if name.startswith(("ahmc", "dyn")) else (
            int(self.steps) if name == "neal_gibbs" else 1)
        warmup = int(self.nuts_warmup) if name.startswith("nuts") else 0
        draws = max_grad // max(lo, 1) + 1
        out = None if self.out is None else Path(self.out) / "run"
        if self.out is not None:
            Path(self.out).mkdir(parents=True, exist_ok=True)
        with warnings.catch_warnings():  # judged below, on the kept draws in function space
            warnings.simplefilter("ignore", SamplingWarning)
            result = _run.sample(posterior=post, sampler=sampler, chains=int(self.chains),
                                 draws=draws, warmup=warmup, seed=self.seed_, out=out,
                                 progress=self.progress, overwrite=self.overwrite,
                                 shard_data=bool(self.shard_data), checks=False,
                                 max_grad=max_grad, **kw)
        self.model_ = model
        self.cv_ = cv
        self.result_ = result
        self._judge(result, max_grad)
        self.idata_ = self._kept(result.idata, result.totals, max_grad)
        self.n_grad_ = int(result.totals["n_grad"] + result.totals["n_grad_warmup"])
        self.wall_s_ = float(result.totals["wall_s_total"])
        if self.out is not None:
            self._save(Path(self.out), X, y)
        return self

    def _seed(self) -> int:
        """`random_state` where given (a RandomState draws an int), else `seed`."""
        rs = self.random_state
        if isinstance(rs, np.random.RandomState):
            return int(rs.randint(2**31 - 1))
        return int(self.seed) if rs is None else _check_int("random_state", rs, 0)

    def _judge(self, result, max_grad) -> None:
        """Record in the run what its checks judge (`diagnostics.checks`): the burn-in draws
        (posterior attr `burn_in_draws`) and the function-space group (predictions at the
        training inputs, the fold networks' mean for "ahmc_cv", and the training data's
        log-likelihood, per draw); rewrite idata.nc with them, so `bomcmc summary` judges the
        same draws; warn (`SamplingWarning`) of each problem of the kept draws."""
        from ..diagnostics.checks import BURN_IN, FUNCTION_SPACE, check_run

        idata = result.idata
        first = int(self._kept(idata, result.totals, max_grad).posterior.draw.values[0]
                    - idata.posterior.draw.values[0])
        with warnings.catch_warnings():  # ArviZ: "function_space" is not one of its groups
            warnings.simplefilter("ignore", UserWarning)
            if FUNCTION_SPACE not in idata.groups():
                idata.add_groups({FUNCTION_SPACE: self._function_space(idata)})
        idata.posterior.attrs[BURN_IN] = first
        if result.path is not None and (Path(result.path) / "idata.nc").exists():
            atomic_write(Path(result.path) / "idata.nc",
                         lambda tmp: idata.to_netcdf(tmp, engine="h5netcdf"))
        for msg in check_run(idata, result.totals, context=self._advice(idata)):
            warnings.warn(msg, SamplingWarning, stacklevel=4)

    def _advice(self, idata):
        """For whom the warnings' advice is written: this estimator's sampler and parameters
        (or `bnn fit`'s flags), checked by `takes`."""
        from ..diagnostics import advice

        name = sampler_name(self.sampler)
        return advice.Context(
            sampler=name, interface=advice.ESTIMATOR if self.advice_flags is None
            else advice.BNN_FIT, options=self.get_params(),
            adapt={"nuts": "window", "nuts_gibbs": "dual_averaging"}.get(name),
            tunes_itself=name.startswith(("ahmc", "dyn")), family="network",
            step_size=advice.mean_step(idata.sample_stats), takes=self.takes)

    def takes(self, remedy: dict) -> bool:
        """Whether `remedy` (parameters, `sampler` among them) is accepted by this estimator
        and read by the sampler it names (and, for `bnn fit`, has a flag); a BomcmcError
        where a value is refused."""
        from sklearn.base import clone

        name = sampler_name(str(remedy.get("sampler", self.sampler)))
        if not set(remedy) <= set(SHARED) | set(USES.get(name, ())):
            return False
        if self.advice_flags is not None and not set(remedy) <= self.advice_flags:
            return False
        clone(self).set_params(**remedy)._validate()
        return True

    def _function_space(self, idata):
        """Every draw's predictions at the training inputs and training log-likelihood."""
        from .function_space import dataset

        return dataset(self.model_, self.cv_, idata, flat_draws(idata))

    def _kept(self, idata, totals, max_grad):
        """The draws after the first burn_in fraction of the budget (by gradients spent); of
        a run until precise, those its rule read (`until.burn_in_end`: the fraction of the
        sampling's gradients)."""
        if "until" in totals:
            return _from(idata, int(totals["until"].get("burn_in_draws", 0)))
        ss = idata.sample_stats
        grads = np.asarray(ss["n_grad"].values, float).mean(axis=0)  # (draws,)
        spent = totals["n_grad_warmup"] / max(totals["chains"], 1) + np.cumsum(grads)
        keep = spent > self.burn_in * max_grad
        first = int(np.argmax(keep)) if keep.any() else len(keep) - 1
        first = min(first, max(len(keep) - 2, 0))  # at least two draws for a std
        return _from(idata, first)

    # -- prediction -------------------------------------------------------------------------
    def _check_X(self, X) -> np.ndarray:
        """X for prediction: fitted first, a 2-D finite float array with the training
        columns (scikit-learn's messages)."""
        check_is_fitted(self, "model_")
        return checked(validate_data, self, X, reset=False, dtype=np.float64)

    def draws_(self) -> np.ndarray:
        """Flat network draws (S, dim) used for prediction (every fold network for CV)."""
        check_is_fitted(self, "model_")
        flat = flat_draws(self.idata_)
        if self.cv_ is not None:
            return self.cv_.fold_positions(flat).reshape(-1, self.model_.dim)
        return flat

    def rhat(self, X=None) -> float:
        """The largest rank-normalised split R-hat across chains (Vehtari et al. 2021); NaN
        with one chain. With X, of the network outputs f(x) at its rows (the fold networks'
        mean for "ahmc_cv"): what predictions depend on, as the weights themselves are
        identified only up to permutations and sign flips of hidden units. Without X, of every
        sampled coordinate. Converged by Ask 2022's rule of thumb when below 1.1."""
        from ..diagnostics import rank_normalized as rn
        from .predict import forward

        check_is_fitted(self, "model_")
        post = self.idata_.posterior
        chains, draws = post.sizes["chain"], post.sizes["draw"]
        if chains < 2:
            return float("nan")
        if X is None:
            r = rn.on_dataset(post, rn.rhat)
            return float(max(np.nanmax(np.asarray(r[v].values)) for v in r.data_vars))
        X = self._check_X(X)
        flat = flat_draws(self.idata_)  # (chains·draws, dim), chain-major
        if self.cv_ is not None:
            f = forward(self.model_, self.cv_.fold_positions(flat).reshape(-1, self.model_.dim),
                        X).reshape((chains * draws, self.cv_.folds, -1)).mean(axis=1)
        else:
            f = forward(self.model_, flat, X)
        f = np.asarray(f, np.float64).reshape(chains, draws, -1)
        return float(np.nanmax(rn.rhat(f)))

    # -- persistence ------------------------------------------------------------------------
    def _save(self, out: Path, X, y) -> None:
        params = {k: (list(v) if isinstance(v, tuple) else v)
                  for k, v in self.get_params().items() if k not in ("out",)}
        params.update(seed=self.seed_, random_state=None)  # the seed used: `load` refits alike
        info = {"params": params, "n_grad": self.n_grad_, "wall_s": self.wall_s_,
                "first_draw": int(self.idata_.posterior.draw.values[0]), **self._state()}
        atomic_write(out / "train.npz", lambda tmp: _write_npz(
            tmp, X=np.asarray(X, float), y=np.asarray(y)))
        atomic_write_text(out / CONFIG, json.dumps(info, indent=1))

    def _state(self) -> dict:
        """What a subclass needs besides the parameters to predict after `load` (JSON)."""
        return {}

    def _restore(self, info: dict) -> None:
        pass

    @classmethod
    def load(cls, out: str | os.PathLike):
        """A fitted estimator from the directory a fit with out= wrote."""
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
        est = cls(**params, out=out)
        est._restore(info)
        est.seed_ = int(params["seed"])
        X, y = data["X"], data["y"]
        est.n_features_in_ = X.shape[1]
        est.model_ = est._model(X, y)
        est.cv_ = None
        if sampler_name(est.sampler) == "ahmc_cv":
            from .cv import CVModel

            est.cv_ = CVModel(est.model_, est.folds)
        result = _run.load(out / "run")
        est.result_ = result
        est.idata_ = _from(result.idata, int(info["first_draw"]))
        est.n_grad_, est.wall_s_ = int(info["n_grad"]), float(info["wall_s"])
        return est


def _from(idata, first: int):
    """The draws from index `first` on, recorded as having no burn-in left to drop (the
    posterior attr `burn_in_draws` 0, new attrs dicts: the run's own stay as they are)."""
    from ..diagnostics.checks import BURN_IN

    kept = idata.isel(draw=slice(first, None))
    for group in kept.groups():
        kept[group].attrs = {**kept[group].attrs, BURN_IN: 0}
    return kept


def flat_draws(idata) -> np.ndarray:
    """(chains·draws, dim) flat unconstrained positions from an InferenceData of a run."""
    post = idata.posterior
    parts = []
    for name in post.data_vars:
        v = np.asarray(post[name].values)
        parts.append(v.reshape(v.shape[0] * v.shape[1], -1))
    return np.concatenate(parts, axis=1)
