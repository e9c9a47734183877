"""Posterior predictions of a Bayesian neural network from its draws.

Ask 2022 §6.3, eqs. 6.18–6.20: with draws θ₁…θ_S of the posterior, the predictions
ŷ_s = f(x, θ_s) give the predictive mean ŷ = (1/S) Σ_s f(x, θ_s) (eq. 6.19) and the sample
covariance Cov(ŷ) = 1/(S−1) Σ_s (ŷ_s − ŷ)(ŷ_s − ŷ)ᵀ (eq. 6.20), per input x; its diagonal gives
the standard deviation of each output. With `include_noise=True` the covariance is that of
a new target, Cov(ŷ) + E[diag(1/τ_noise)] (FBM `net-pred`'s predictive distribution; t noise
with ν > 2 contributes ν/(ν−2)·E[1/τ]).

Classification: the predictive probability is the average of each draw's probabilities
(sigmoid for `binary`, softmax for `class`); the majority vote is the class most draws
predict (ties go to the lowest class).

Draws may be given as an ArviZ InferenceData from `bomcmc.sample` on `model.posterior()`,
as flat positions (..., dim), or as a position pytree with leading draw axes.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.special

from ..config import float_dtype
from ..errors import BomcmcError
from .priors import INF


def stack_draws(model, draws: Any, thin: int = 1) -> dict:
    """Any form of draws -> position pytree with one leading axis of S draws."""
    if hasattr(draws, "posterior") and hasattr(draws, "groups"):  # InferenceData
        post = draws.posterior
        flat_leaves = []
        for path, leaf in jax.tree_util.tree_flatten_with_path(model.init_position())[0]:
            name = ".".join(str(p.key) for p in path)
            if name not in post:
                raise BomcmcError(f"InferenceData has no variable '{name}': not drawn from "
                                  f"this model's posterior")
            v = np.asarray(post[name].values)  # (chains, draws, *shape)
            v = v[:, ::thin].reshape((-1,) + np.shape(leaf))
            flat_leaves.append(v)
        treedef = jax.tree_util.tree_structure(model.init_position())
        return jax.tree_util.tree_unflatten(treedef, flat_leaves)
    if isinstance(draws, dict):
        template = model.init_position()
        try:
            return jax.tree_util.tree_map(
                lambda a, t: np.asarray(a).reshape((-1,) + np.shape(t))[::thin], draws, template)
        except ValueError as e:
            raise BomcmcError(f"draws do not have this model's position structure: {e}") from None
    flat = np.asarray(draws)
    if flat.shape[-1] != model.dim:
        raise BomcmcError(f"draws have last axis {flat.shape[-1]}, the model's dimension is "
                          f"{model.dim}")
    flat = flat.reshape(-1, model.dim)[::thin]
    parts = np.split(flat, np.cumsum(model._sizes)[:-1], axis=1)  # in NumPy: no program per S
    return jax.tree_util.tree_unflatten(model._treedef, [
        p.reshape((-1,) + tuple(shape)) for p, shape in zip(parts, model._shapes)])


def draw_bucket(s: int) -> int:
    """The number of draws s padded to, so that fits whose numbers of draws differ a little
    share one compiled program: s rounded up to four significant bits (m·2^k, 8 ≤ m < 16),
    at most 12.5 % more."""
    if s <= 16:
        return s
    k = s.bit_length() - 4
    return -(-s // (1 << k)) << k


def pad_draws(a, s: int):
    """`a` (s, ...) padded along its first axis to `draw_bucket(s)` rows by repeating its last."""
    a = np.asarray(a)
    return np.concatenate([a, np.repeat(a[-1:], draw_bucket(s) - s, axis=0)])


def forward(model, draws: Any, X, thin: int = 1) -> np.ndarray:
    """f(X; θ_s) for every draw: (S, n, n_out) — means for `real`, logits otherwise."""
    tree = stack_draws(model, draws, thin)
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    if X.shape[1] != model.n_in:
        raise BomcmcError(f"X has {X.shape[1]} columns, the network has {model.n_in} inputs")
    s = jax.tree_util.tree_leaves(tree["w"])[0].shape[0]
    w = {k: jnp.asarray(pad_draws(v, s)) for k, v in tree["w"].items()}
    # inputs padded to the model's row multiple, and draws to `draw_bucket`, so that data sets
    # a few cases apart (the training sets of cross-validation folds) and fits with a few
    # draws more or less share one compiled program
    n, multiple = X.shape[0], model.data.row_multiple
    X = np.concatenate([X, np.zeros((-n % multiple, X.shape[1]))])
    return np.asarray(_batched_apply(model)(w, X))[:s, :n]


@functools.lru_cache(maxsize=8)
def _batched_apply(model):
    """The model's outputs for a stack of draws, compiled once per model and shape: every
    call (the K fold networks of one base model, say) reuses one traced function. Held
    here, not on the model, which stays picklable; the last few models' are kept."""
    return jax.jit(jax.vmap(model.apply, in_axes=(0, None)))


def predict_regression(model, draws: Any, X, include_noise: bool = False,
                       thin: int = 1) -> dict:
    """Predictive mean (n, n_out), covariance (n, n_out, n_out) and std (n, n_out) per input
    (Ask 2022, eqs. 6.19–6.20); `include_noise` adds the expected noise variance."""
    if model.likelihood != "real":
        raise BomcmcError("predict_regression needs a 'real' model; use predict_classification")
    f = forward(model, draws, X, thin)  # (S, n, k)
    s = f.shape[0]
    if s < 2:
        raise BomcmcError("the predictive covariance needs at least 2 draws")
    mean = f.mean(axis=0)
    dev = f - mean
    cov = np.einsum("sni,snj->nij", dev, dev) / (s - 1)
    if include_noise:
        cov = cov + np.diag(_noise_variance(model, stack_draws(model, draws, thin)))[None]
    std = np.sqrt(np.diagonal(cov, axis1=1, axis2=2))
    return {"mean": mean, "cov": cov, "std": std, "draws": s}


def _noise_variance(model, tree) -> np.ndarray:
    """E[variance of the noise] per output over the draws."""
    g = model.noise_group
    log_tau = {k: jnp.asarray(v) for k, v in tree.get("log_tau", {}).items()}
    dtype = float_dtype()
    s = jax.tree_util.tree_leaves(tree["w"])[0].shape[0]

    def one(lt):
        return g.precisions(lt, dtype)[1]

    if log_tau:
        tau1 = np.asarray(jax.vmap(one)(log_tau))
    else:
        tau1 = np.broadcast_to(np.asarray(one({})), (s, g.ns))
    var = 1.0 / tau1
    if g.a2 < INF:
        if g.a2 <= 2:
            raise BomcmcError("t noise with alpha <= 2 has no finite variance")
        var = var * g.a2 / (g.a2 - 2)
    return var.mean(axis=0)


def predict_classification(model, draws: Any, X, thin: int = 1) -> dict:
    """Predictive probabilities, the class of the averaged probabilities, and the majority
    vote over draws.

    `binary`: probs (n, n_out) of y = 1, `pred` and `vote` 0/1 (n, n_out), `vote_fraction`
    the share of draws voting 1. `class`: probs (n, K), `pred` and `vote` (n,),
    `vote_fraction` (n, K) the share of draws voting each class."""
    if model.likelihood == "real":
        raise BomcmcError("predict_classification needs a 'binary' or 'class' model")
    f = forward(model, draws, X, thin)  # logits (S, n, k)
    if model.likelihood == "binary":
        p = scipy.special.expit(f)  # 1/(1 + e^{-f}) without overflow at large |f|
        votes = (f > 0).astype(float)  # each draw's class: p > 1/2
        frac = votes.mean(axis=0)
        return {"probs": p.mean(axis=0), "pred": (p.mean(axis=0) > 0.5).astype(int),
                "vote": (frac > 0.5).astype(int), "vote_fraction": frac, "draws": f.shape[0]}
    z = f - f.max(axis=-1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
    k = f.shape[-1]
    choice = f.argmax(axis=-1)  # (S, n)
    frac = np.stack([(choice == c).mean(axis=0) for c in range(k)], axis=-1)  # (n, K)
    probs = p.mean(axis=0)
    return {"probs": probs, "pred": probs.argmax(axis=-1), "vote": frac.argmax(axis=-1),
            "vote_fraction": frac, "draws": f.shape[0]}


def predict(model, draws: Any, X, **kwargs) -> dict:
    """`predict_regression` or `predict_classification`, by the model's likelihood."""
    if model.likelihood == "real":
        return predict_regression(model, draws, X, **kwargs)
    return predict_classification(model, draws, X, **kwargs)
