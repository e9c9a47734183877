"""K-fold cross-validation networks advanced as one joint chain (Wang 2012 §3.2).

"We divide the data into n sets, and train n BNNs each on n − 1 sets and test them on the
remaining set … a single Markov chain exploring the state space which is a combination of n
independent copies of the original state space. During each super-transition, we draw samples
for each of the BNNs and calculate the mean cross-validation error by using only the samples
drawn in this super-transition." (Wang 2012 §3.2; robot arm: 8 folds, ch. 4.)

`CVModel(model, folds=K)` holds K copies of a `BNN`'s position, stacked on a leading fold axis
(`{"log_tau": {...: (K, ...)}, "w": {...: (K, ...)}}`). Copy k sees the training cases outside
fold k (`BNN.with_mask`); the joint log density is the sum of the K copies' log densities, so
the copies are independent and one HMC trajectory with shared knobs (η, L) moves all of them.
It offers the interface Neal's sampler uses (`unravel`, `ravel`, `gibbs`, `curvature`,
`n_hyper`, `dim`), each vmapped over the folds, so `neal_sampler(cv)` and
`ahmc_gibbs_sampler(cv)` (`bnn/samplers.py`) run Neal's Gibbs-within-HMC on all folds at once.

The reward (`cv_reward`) is computed on the training data alone: for every fold the predictive
mean of that fold's network over the super-transition's draws (all chains pooled) at the held-out
cases; the error is the squared error summed over outputs and averaged over cases (Wang 2012,
Table 4.1) for `real` targets, the misclassification rate of the averaged probabilities for
`binary`/`class`; the folds' errors are averaged. The bandit maximises 1 / error: positive,
bounded (for classification, capped at twice a fold's held-out cases), and with the tuner's
rescaling s = 4 / max r it becomes 4·(best error / error), so the GP sees relative
improvements whatever the units of y (docs/bnn.md).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ..data import Data
from ..errors import BomcmcError
from ..posterior import Posterior
from .network import ACTIVATIONS, unravel_leaves


def fold_masks(n: int, folds: int) -> np.ndarray:
    """(K, n) 0/1 training masks: fold k holds out the k-th of K contiguous blocks of cases
    (scikit-learn's `KFold` without shuffling: the first n mod K blocks one case longer)."""
    from sklearn.model_selection import KFold

    if isinstance(folds, bool) or not isinstance(folds, (int, np.integer)) or folds < 2:
        raise BomcmcError(f"folds must be an integer >= 2, got {folds!r}")
    if folds > n:
        raise BomcmcError(f"{folds} folds need at least {folds} training cases, got {n}")
    masks = np.ones((folds, n))
    for k, (_, held) in enumerate(KFold(n_splits=int(folds)).split(np.zeros((n, 1)))):
        masks[k, held] = 0.0
    return masks


class CVModel:
    """K networks, one per held-out fold, as one joint model (module docstring).

    Args:
        model: the `BNN` on the whole training set.
        folds: K (>= 2).
        inputs: optional (K, n, n_in): each fold network's own inputs for the n training
            cases, e.g. features chosen on that fold's training cases (`bnn/features.py`);
            by default every fold sees the model's inputs.
    """

    def __init__(self, model, folds: int = 8, inputs=None):
        self.base = model
        self.folds = int(folds) if not isinstance(folds, bool) else folds
        self.masks = fold_masks(model.n, folds)
        if inputs is None:
            inputs = np.broadcast_to(model.X, (self.folds,) + model.X.shape)
        self.inputs = np.asarray(inputs, dtype=np.float64)
        if self.inputs.shape != (self.folds,) + model.X.shape:
            raise BomcmcError(f"inputs must be (folds, cases, inputs) = "
                              f"{(self.folds,) + model.X.shape}, got {self.inputs.shape}")
        if not np.all(np.isfinite(self.inputs)):
            raise BomcmcError("inputs contain NaN or inf")
        # every fold sees the same inputs (the default): its outputs come from `stacked_apply`
        self.shared_inputs = bool(np.all(self.inputs == self.inputs[:1]))
        self.name = f"{model.name}-cv{self.folds}"
        # the cases as a run reads them (rows first: masks (n, K), inputs (n, K, n_in)), so
        # that the compiled chunk takes them as arguments and a sharded run splits them
        self.data = Data(y=model.y, masks=self.masks.T, inputs=self.inputs.transpose(1, 0, 2),
                         row_multiple=model.data.row_multiple)
        self.likelihood = model.likelihood
        self.n, self.n_in, self.n_out = model.n, model.n_in, model.n_out
        self.n_hyper = self.folds * model.n_hyper
        self.n_weights = self.folds * model.n_weights
        self.dim = self.folds * model.dim
        self._shapes = [(self.folds,) + tuple(s) for s in model._shapes]
        self._sizes = [self.folds * s for s in model._sizes]
        self._treedef = model._treedef

    # -- flat <-> pytree (leaves (K, ...), in the base model's leaf order) ---------------
    def unravel(self, flat):
        return unravel_leaves(flat, self._shapes, self._sizes, self._treedef)

    def ravel(self, tree):
        return jnp.concatenate([jnp.ravel(x) for x in jax.tree_util.tree_leaves(tree)])

    def stack(self, positions) -> dict:
        """K base-model position pytrees (a list) -> one stacked pytree."""
        return jax.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]),
                                      *positions)

    def fold_positions(self, flat) -> np.ndarray:
        """Joint flat draws (..., K·dim) -> per-fold flat draws (..., K, dim) of the base model.
        A re-layout in NumPy (each leaf's segment is K fold-major blocks): no program compiled
        for the number of draws, which differs from fit to fit."""
        flat = np.asarray(flat)
        lead = flat.shape[:-1]
        parts = np.split(flat.reshape(-1, self.dim), np.cumsum(self._sizes)[:-1], axis=1)
        per_fold = [p.reshape(-1, self.folds, size) for p, size in zip(parts, self.base._sizes)]
        return np.concatenate(per_fold, axis=2).reshape(lead + (self.folds, self.base.dim))

    # -- the joint model: each function vmapped over the folds ---------------------------
    def _folds(self, tree):
        """(fold networks' builder, masks (K, n), inputs (K, n, n_in)) in the position's
        dtype, from `data` (padding rows of a sharded run have mask 0 in every fold)."""
        dtype = jax.tree_util.tree_leaves(tree)[0].dtype
        data = self.data
        masks = data.weigh(data["masks"].astype(dtype)).T
        inputs = jnp.moveaxis(data["inputs"].astype(dtype), 1, 0)
        y = data["y"]

        def fold(mask, X):
            return self.base.with_mask(mask, X, y)

        return fold, masks, inputs

    def logdensity(self, tree):
        fold, masks, inputs = self._folds(tree)
        if self.shared_inputs:  # the K networks' outputs at once, then each fold's density
            X = inputs[0]
            f = stacked_apply(self.base, tree["w"], X)
            lps = jax.vmap(lambda t, m, f: fold(m, X).logdensity(t, f))(tree, masks, f)
        else:
            lps = jax.vmap(lambda t, m, X: fold(m, X).logdensity(t))(tree, masks, inputs)
        return jnp.sum(lps)

    def gibbs(self, key, tree, sample_sigmas=True, sample_noise=True):
        keys = jax.random.split(key, self.folds)
        fold, masks, inputs = self._folds(tree)
        return jax.vmap(lambda k, t, m, X: fold(m, X).gibbs(
            k, t, sample_sigmas, sample_noise))(keys, tree, masks, inputs)

    def curvature(self, tree):
        fold, masks, inputs = self._folds(tree)
        return jax.vmap(lambda t, m, X: fold(m, X).curvature(t))(tree, masks, inputs)

    # -- the held-out error ---------------------------------------------------------------
    def heldout_error_fn(self, batch: int = 64, loss: str = "error"):
        """f(draws (S, K·dim)) -> (K,) held-out error of each fold's network, using the
        predictive mean (or probabilities) over the S draws. The draws go through one jitted
        function in padded batches of `batch`, so super-transitions of any length reuse
        one executable. `loss`: "error" (squared error, or misclassification), or "logloss"
        (classification only: −log of the draw-averaged probability of the true label,
        averaged over the held-out cases; smooth where a misclassification count jumps)."""
        if loss not in ("error", "logloss"):
            raise BomcmcError(f"loss must be 'error' or 'logloss', got {loss!r}")
        if loss == "logloss" and self.base.likelihood == "real":
            raise BomcmcError("the log-loss reward needs a 'binary' or 'class' network")
        base, masks = self.base, self.masks
        held = np.asarray(1.0 - masks)  # (K, n)
        # the cases padded (zeros, dropped below) to the data's row multiple: training sets a
        # few cases apart share the compiled function
        n = self.n
        pad = -n % self.data.row_multiple
        inputs = jnp.asarray(np.pad(self.inputs, ((0, 0), (0, pad), (0, 0))))
        real = base.likelihood == "real"

        def outputs(flat, inputs):  # one draw -> (K, n, n_out): means, or probabilities
            tree = self.unravel(flat)
            if self.shared_inputs:
                f = stacked_apply(base, tree["w"], inputs[0])
            else:
                f = jax.vmap(lambda t, X: base.apply(t["w"], X))(tree, inputs)
            if real:
                return f
            return jax.nn.sigmoid(f) if base.likelihood == "binary" else jax.nn.softmax(f, -1)

        @jax.jit
        def batch_sum(draws, valid, inputs):  # the inputs as an argument: compiled once per shape
            f = jax.vmap(lambda flat: outputs(flat, inputs))(draws)
            return jnp.tensordot(valid.astype(f.dtype), f, axes=1)

        def error(draws):
            draws = np.asarray(draws)
            total = 0.0
            for i in range(0, draws.shape[0], batch):
                part = draws[i:i + batch]
                valid = np.zeros(batch, bool)
                valid[:part.shape[0]] = True
                if part.shape[0] < batch:
                    part = np.concatenate([part, np.repeat(part[-1:], batch - part.shape[0], 0)])
                total = total + np.asarray(batch_sum(jnp.asarray(part), jnp.asarray(valid),
                                                     inputs), np.float64)
            mean = total[:, :n] / draws.shape[0]  # (K, n, n_out)
            y = np.asarray(base.y)
            if real:
                per_case = np.sum((mean - y[None]) ** 2, axis=-1)
            elif loss == "logloss":
                if base.likelihood == "binary":
                    p_true = np.where(y[None] > 0.5, mean, 1.0 - mean).prod(axis=-1)
                else:
                    p_true = np.take_along_axis(
                        mean, y[None, :, None].astype(int).repeat(mean.shape[0], 0), -1)[..., 0]
                per_case = -np.log(np.maximum(p_true, 1e-300))
            elif base.likelihood == "binary":
                per_case = np.mean((mean > 0.5) != (y[None] > 0.5), axis=-1)
            else:
                per_case = (np.argmax(mean, axis=-1) != y[None]).astype(float)
            return np.sum(per_case * held, axis=1) / held.sum(axis=1)

        return error

    # -- the Posterior -------------------------------------------------------------------
    def init_position(self, fix: float = 0.5) -> dict:
        return self.stack([self.base.init_position(fix)] * self.folds)

    def posterior(self, init: dict | None = None, fix: float = 0.5,
                  init_scale: float = 0.1) -> Posterior:
        """The joint posterior of the K networks. Chains start at `init` — one base-model
        position (e.g. from pre-training on all the training data; copied to every fold) or
        a stacked one — or, per chain and fold, at sigma `fix` with weights N(0, init_scale²)."""
        base_post = self.base.posterior(fix=fix, init_scale=init_scale)
        if init is not None:
            leaf = np.asarray(jax.tree_util.tree_leaves(init)[0])
            ref = np.asarray(jax.tree_util.tree_leaves(self.base._template)[0])
            if leaf.shape == ref.shape:
                init = self.stack([init] * self.folds)
        start = init if init is not None else self.init_position(fix)

        def initializer(key):
            if init is not None:
                return init
            return self.stack([base_post.initializer(k)
                               for k in jax.random.split(key, self.folds)])

        return Posterior(
            logdensity_fn=self.logdensity,
            init_position=start,
            name=self.name,
            initializer=initializer,
            description=f"{self.folds}-fold CV of {self.base.describe()}",
            data=self.data,
        )

    def __repr__(self) -> str:
        return f"CVModel({self.folds} folds of {self.base.describe()})"


def stacked_apply(base, w, X):
    """`vmap(base.apply)` over K networks of `base`'s architecture, their weights stacked on a
    leading axis, on one set of inputs X (n, n_in): outputs (K, n, n_out). The first layer
    is one (n, n_in) × (n_in, K·h₀) product, which XLA runs about twice as fast on a CPU as
    K batched products (docs/bnn.md, "What a fit costs")."""
    dtype = jax.tree_util.tree_leaves(w)[0].dtype
    X = jnp.asarray(X, dtype)
    n, k = X.shape[0], jax.tree_util.tree_leaves(w)[0].shape[0]
    h = None
    for layer, act in enumerate(base.activations):
        # u: (n, K·units), column k·units + j for unit j of network k; the bias is added in
        # this layout (added to u reshaped to (n, K, units), XLA's CPU program was far slower)
        if layer == 0:
            u = X @ jnp.moveaxis(w["ih0"], 0, 1).reshape(X.shape[1], -1)
        else:
            u = jnp.einsum("nkh,khg->nkg", h, w[f"hh{layer}"]).reshape(n, -1)
        if f"bh{layer}" in w:
            u = u + w[f"bh{layer}"].reshape(-1)
        h = ACTIVATIONS[act](u).reshape(n, k, -1)
    out = jnp.zeros((k, n, base.n_out), dtype)
    if "ho" in w:
        out = out + jnp.einsum("nkh,kho->kno", h, w["ho"])
    if "io" in w:
        out = out + jnp.einsum("nd,kdo->kno", X, w["io"])
    if "bo" in w:
        out = out + w["bo"][:, None]
    return out


def fold_vote(cv: CVModel, draws, X) -> dict:
    """Majority voting across the K fold networks (Wang 2012 §4.2, Dexter): each network
    classifies X (n, n_in), or its own inputs X[k] when X is (K, n, n_in), by its predictive
    probabilities averaged over `draws` (joint flat draws (..., K·dim)); every input gets the
    label most networks gave, ties to the lower class.
    Returns {"pred": (n,) voted labels, "votes": (K, n) each network's labels,
    "vote_fraction": (n,) share of networks that agree with the vote}."""
    from .predict import predict_classification

    base = cv.base
    if base.likelihood == "real":
        raise BomcmcError("majority voting needs a 'binary' or 'class' model")
    X = np.asarray(X)
    per_fold_X = X if X.ndim == 3 else np.broadcast_to(X, (cv.folds,) + X.shape)
    if per_fold_X.shape[0] != cv.folds:
        raise BomcmcError(f"per-fold inputs need {cv.folds} folds, got {per_fold_X.shape[0]}")
    per_fold = cv.fold_positions(np.asarray(draws).reshape(-1, cv.dim))  # (S, K, dim)
    votes = np.stack([np.asarray(predict_classification(base, per_fold[:, k],
                                                        per_fold_X[k])["pred"])
                      for k in range(cv.folds)])
    n = per_fold_X.shape[1]
    votes = votes.reshape(cv.folds, n, -1)
    n_cls = base.n_out if base.likelihood == "class" else 2
    counts = np.stack([(votes == c).sum(axis=0) for c in range(n_cls)])  # (classes, n, ...)
    pred = np.argmax(counts, axis=0)  # argmax takes the first (lower) class on ties
    frac = np.take_along_axis(counts, pred[None], axis=0)[0] / cv.folds
    squeeze = votes.shape[-1] == 1
    return {"pred": pred[:, 0] if squeeze else pred,
            "votes": votes[..., 0] if squeeze else votes,
            "vote_fraction": frac[:, 0] if squeeze else frac}


def cv_reward(cv: CVModel, loss: str = "error", stuck_zero: bool = False):
    """The bandit's reward for a super-transition: 1 / (mean over folds of the held-out error
    of that super-transition's draws, all chains pooled) (Wang 2012 §3.2; module docstring);
    `loss="logloss"` uses the held-out log loss instead (classification).
    NaN (no reward) when the error is not finite or the chunk has no draws.

    A super-transition in which any transition diverged scores 0, as for the ESJD reward
    (`tuning.rewards.esjd`): a diverging trajectory is rejected, so a setting whose
    trajectories diverge leaves the chain where it was, and its draws' held-out error is
    that of the last good state however bad the setting is; the divergences themselves bias
    the draws (Betancourt 2017).

    With `stuck_zero`, so does a super-transition in which some chain accepted, in
    expectation, fewer than half a trajectory (its acceptance probabilities sum to < 1/2): its
    weights stayed where the previous setting left them, and its draws' error is again that
    of a state this setting did not reach (on Dexter, one reward in five to seven at the
    default budget; measured not to help there: docs/dexter.md)."""
    error_fn = cv.heldout_error_fn(loss=loss)
    # A misclassification rate moves in steps of one case in n held-out cases per fold. A mean
    # error below half a case of the average fold counts as that half case: the reward is
    # capped at 2n (60 for 30 held-out cases), so a super-transition that happens to
    # misclassify almost nothing (or nothing: 1/0) cannot dwarf every other reward after the
    # tuner's rescaling by 4 / max r.
    held = float(np.mean(np.sum(1.0 - np.asarray(cv.masks), axis=1)))
    floor = 0.5 / held if cv.base.likelihood != "real" and loss == "error" else 1e-300

    def reward(chunk: dict) -> float:
        pos = np.asarray(chunk["positions"])
        if pos.size == 0:
            return float("nan")
        if np.any(_diverging(chunk)) or (stuck_zero and _stuck(chunk)):
            return 0.0
        err = float(np.mean(error_fn(pos.reshape(-1, pos.shape[-1]))))
        if not math.isfinite(err):
            return float("nan")
        return 1.0 / max(err, floor)

    reward.error_fn = error_fn
    return reward


def _stuck(chunk: dict) -> bool:
    """Whether some chain's acceptance probabilities over the chunk sum to less than 1/2 (False
    where its sampler records none)."""
    info = chunk.get("info")
    acc = (info.get("acceptance_rate") if isinstance(info, dict)
           else getattr(info, "acceptance_rate", None))
    if acc is None:
        return False
    acc = np.asarray(acc, float)
    return bool(np.any(np.nansum(acc.reshape(-1, acc.shape[-1]), axis=-1) < 0.5))


def _diverging(chunk: dict) -> np.ndarray:
    """The chunk's divergence flags (chains, n); none where its sampler records none."""
    info = chunk.get("info")
    flags = (info.get("diverging") if isinstance(info, dict)
             else getattr(info, "diverging", None))
    return np.zeros(0, bool) if flags is None else np.asarray(flags, bool)
