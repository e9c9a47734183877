"""Bayesian neural networks: multi-layer perceptrons with Neal's hierarchical priors.

Sources: Ask 2022 §6.1–6.4 (the network, eqs. 6.2 and 6.16, activations §6.2, Gaussian priors
eq. 6.22, the potential energy eq. 6.23); Choo 2000, ch. 3 (Neal's model: groups U, A, V, B
with Gamma-distributed precisions, eqs. 3.1–3.13); Neal 1996 as implemented in FBM (the prior
notation of `prior.doc`, the Gibbs updates of `net-mc.c`, the step-size heuristic of
`net-models.tex`).

**Network.** Hidden layer l computes h_l = a_l(h_{l−1} W_l + b_l) (h_{−1} = x), the outputs are
f = h_last·W_ho + x·W_io + b_o, with no activation (Ask 2022, eq. 6.2; Choo 2000, eqs.
3.1–3.2). Activations: tanh (default, FBM's and Neal's), sigmoid, relu, swish (Ask 2022 §6.2),
identity.

**Parameters** are a dict of named groups, FBM's names: `ih0` (inputs → hidden 0, shape
(n_in, h₀)), `bh0` (h₀,), `hh1` (h₀, h₁), `bh1`, …, `ho` (last hidden → outputs), `io`
(inputs → outputs), `bo` (n_out,). A group exists when the prior names it.

**Likelihoods** ("model-spec" in FBM): `real` — Gaussian targets with one noise precision
(α_sub infinite) or one per output (α_sub finite), Student-t when α_param is finite; `binary` —
independent Bernoulli outputs with logits f; `class` — categorical with softmax(f).

**Position** (what a sampler moves, one flat vector in `ravel_pytree` order):
`{"log_tau": {...}, "w": {...}}`. `w` holds the weights; `log_tau` holds the log of every
precision that is a random variable: `<group>` for a group's common precision (finite
α_group), `<group>_src` for one precision per source unit (finite α_sub: ARD for `ih0`),
`noise` and `noise_out` for the noise. Precisions with an infinite α are constants and are not
stored; the parameter-level precisions of t-distributed weights, biases and noise are
integrated out. The log density is that of the joint in (log τ, w): the log-τ Jacobian
(+log τ) is included, so NUTS or HMC on the joint and Neal's Gibbs-within-HMC
(`kernels/neal_gibbs_hmc.py`) target the same distribution.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..data import Data
from ..errors import BomcmcError
from ..posterior import Posterior
from ..validation import finite_data
from .gibbs import gibbs_sweep, neal_curvature
from .groups import Group
from .priors import INF, NetPrior, fixed_gaussian, parse_model_spec

ACTIVATIONS: dict[str, Callable] = {
    "tanh": jnp.tanh,
    "sigmoid": jax.nn.sigmoid,
    "relu": jax.nn.relu,
    "swish": jax.nn.silu,
    "identity": lambda u: u,
}
LIKELIHOODS = ("real", "binary", "class")


def unravel_leaves(flat, shapes, sizes, treedef):
    """Split a flat vector into leaves of the given shapes (in order) and rebuild the pytree."""
    parts, i = [], 0
    for shape, size in zip(shapes, sizes):
        parts.append(flat[i:i + size].reshape(shape))
        i += size
    return jax.tree_util.tree_unflatten(treedef, parts)


class BNN:
    """A multi-layer perceptron with a (hierarchical) prior and a likelihood, on data (X, y).

    Args:
        X: (n, n_in) inputs. y: targets — `real`: (n,) or (n, n_out); `binary`: 0/1 of shape
            (n,) or (n, n_out); `class`: integer labels (n,) in 0..K−1.
        hidden: sizes of the hidden layers, e.g. (16,) or (20, 8); () for a linear model.
        prior: FBM text ("ih 0.05:0.5 bh 0.05:0.5 ho x0.05:0.5 bo 100"), a dict or NetPrior.
        likelihood: "real", "binary" or "class", or FBM model-spec text ("real 0.05:0.5").
        noise: the noise prior of a `real` model (FBM model-spec), e.g. "0.05:0.5".
        activation: one name for every hidden layer or one per layer.
        n_out: outputs; by default from y (classes: max label + 1).
        row_multiple: pad the cases (weighed zero) to a multiple of it as a run's inputs.
    """

    def __init__(self, X, y, hidden: Sequence[int] = (8,), prior: Any = None,
                 likelihood: str = "real", noise: Any = None,
                 activation: str | Sequence[str] = "tanh", n_out: int | None = None,
                 name: str = "bnn", row_multiple: int = 1):
        self.name = name
        if " " in likelihood.strip():
            likelihood, spec_noise = parse_model_spec(likelihood)
            if noise is not None and spec_noise is not None:
                raise BomcmcError("give the noise prior once: in likelihood='real ...' or noise=")
            noise = noise if noise is not None else spec_noise
        if likelihood not in LIKELIHOODS:
            raise BomcmcError(f"likelihood must be one of {LIKELIHOODS}, got '{likelihood}'")
        self.likelihood = likelihood
        self.hidden = tuple(int(h) for h in hidden)
        if any(h < 1 for h in self.hidden):
            raise BomcmcError(f"hidden layer sizes must be positive, got {hidden}")
        acts = [activation] * len(self.hidden) if isinstance(activation, str) else list(activation)
        if len(acts) != len(self.hidden):
            raise BomcmcError(f"give one activation or {len(self.hidden)}, got {len(acts)}")
        for a in acts:
            if a not in ACTIVATIONS:
                raise BomcmcError(f"unknown activation '{a}' (use {', '.join(ACTIVATIONS)})")
        self.activations = tuple(acts)
        self.X, self.y = self._check_data(X, y, n_out)
        self.n, self.n_in = self.X.shape
        self.data = Data(X=self.X, y=self.y, row_multiple=row_multiple)  # the chunk's inputs
        if prior is None:
            prior = fixed_gaussian(len(self.hidden), 1.0, 1.0, io=False)
        self.prior = NetPrior.parse(prior, noise)
        if likelihood == "real" and self.prior.noise is None:
            raise BomcmcError("a 'real' (regression) model needs a noise prior, e.g. "
                              "noise='0.05:0.5', or a fixed one, noise='0.1' (width 1/sqrt(τ))")
        if likelihood != "real" and self.prior.noise is not None:
            raise BomcmcError(f"a '{likelihood}' model has no noise prior")
        self.groups = self._build_groups()
        self.noise_group = self._noise_group()
        self._template = self._position_template()
        leaves, self._treedef = jax.tree_util.tree_flatten(self._template)
        self._shapes = [np.shape(x) for x in leaves]
        self._sizes = [int(np.prod(s, dtype=int)) for s in self._shapes]
        self.dim = int(sum(self._sizes))
        self.n_hyper = int(sum(np.size(x) for x in jax.tree_util.tree_leaves(
            self._template.get("log_tau", {}))))
        self.n_weights = self.dim - self.n_hyper
        self._fold_X = self._fold_y = self._x_sumsq = self.case_weights = None  # `with_mask`
        self.n_eff = float(self.n)  # cases in the likelihood

    # -- construction -------------------------------------------------------------------
    def _check_data(self, X, y, n_out):
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X[:, None]
        if X.ndim != 2 or X.shape[0] < 1:
            raise BomcmcError(f"{self.name}: X must be (n, n_in), got shape {X.shape}")
        y = np.asarray(y)
        if y.shape[0] != X.shape[0]:
            raise BomcmcError(f"{self.name}: X has {X.shape[0]} rows but y has {y.shape[0]}")
        finite_data(self.name, X=X, y=np.asarray(y, dtype=float))
        if self.likelihood == "class":
            if y.ndim != 1 or not np.all(y == np.round(y)) or y.min() < 0:
                raise BomcmcError(f"{self.name}: class labels must be integers >= 0 of shape (n,)")
            y = y.astype(np.int32)
            k = int(y.max()) + 1 if n_out is None else int(n_out)
            if k < 2 or y.max() >= k:
                raise BomcmcError(f"{self.name}: need n_out >= 2 classes covering the labels")
            self.n_out = k
            return X, y
        y = np.asarray(y, dtype=np.float64)
        if y.ndim == 1:
            y = y[:, None]
        if y.ndim != 2:
            raise BomcmcError(f"{self.name}: y must be (n,) or (n, n_out), got {y.shape}")
        if n_out is not None and int(n_out) != y.shape[1]:
            raise BomcmcError(f"{self.name}: n_out={n_out} but y has {y.shape[1]} columns")
        if self.likelihood == "binary" and not np.all((y == 0) | (y == 1)):
            raise BomcmcError(f"{self.name}: binary targets must be 0 or 1")
        self.n_out = y.shape[1]
        return X, y

    def _layer_shapes(self) -> dict[str, tuple[int, ...]]:
        sizes = (self.n_in,) + self.hidden
        shapes: dict[str, tuple[int, ...]] = {}
        for layer, h in enumerate(self.hidden):
            shapes["ih0" if layer == 0 else f"hh{layer}"] = (sizes[layer], h)
            shapes[f"bh{layer}"] = (h,)
        if self.hidden:
            shapes["ho"] = (self.hidden[-1], self.n_out)
        shapes["io"] = (self.n_in, self.n_out)
        shapes["bo"] = (self.n_out,)
        return shapes

    def _build_groups(self) -> dict[str, Group]:
        shapes = self._layer_shapes()
        groups: dict[str, Group] = {}
        for name, pr in self.prior.groups.items():
            if name.startswith("ho") and name != "ho":
                if int(name[2:]) != len(self.hidden) - 1:
                    raise BomcmcError(
                        f"prior group '{name}': only weights from the last hidden layer to the "
                        f"outputs (ho{len(self.hidden) - 1}, or ho) are supported")
                if "ho" in self.prior.groups:
                    raise BomcmcError(f"prior groups 'ho' and '{name}' are the same group")
                name = "ho"
            if name not in shapes:
                raise BomcmcError(
                    f"prior group '{name}' does not exist in a network with hidden layers "
                    f"{self.hidden} (groups: {', '.join(shapes)})")
            shape = shapes[name]
            if len(shape) == 1:  # biases: FBM allows two alphas and no 'x'
                if pr.scaled:
                    raise BomcmcError(f"prior '{name} {pr}': biases take no 'x' width scaling")
                if pr.alpha_param < INF:
                    raise BomcmcError(f"prior '{name} {pr}': biases take at most two alphas")
                groups[name] = Group(name, "biases", shape, 1, shape[0], pr,
                                     pr.mean_precision(), pr.alpha_group, INF, pr.alpha_sub)
            else:
                groups[name] = Group(name, "weights", shape, shape[0], shape[1], pr,
                                     pr.mean_precision(shape[0]), *pr.alphas)
        for layer in range(len(self.hidden)):
            need = "ih0" if layer == 0 else f"hh{layer}"
            if need not in groups:
                raise BomcmcError(f"the network needs a prior for '{need}' (hidden layer {layer}"
                                  " would have no inputs)")
        if self.hidden and "ho" not in groups:
            raise BomcmcError("the network needs a prior for 'ho' (the hidden units would not "
                              "reach the outputs)")
        if not self.hidden and "io" not in groups:
            raise BomcmcError("a network without hidden layers needs a prior for 'io'")
        return groups

    def _noise_group(self) -> Group | None:
        pr = self.prior.noise
        if pr is None:
            return None
        if pr.scaled:
            raise BomcmcError(f"noise prior '{pr}' takes no 'x' width scaling")
        return Group("noise", "noise", (self.n_out,), self.n_out, self.n, pr,
                     pr.mean_precision(), *pr.alphas)

    def _all_groups(self) -> list[Group]:
        return list(self.groups.values()) + ([self.noise_group] if self.noise_group else [])

    def _position_template(self) -> dict:
        log_tau = {}
        for g in self._all_groups():
            if g.key0:
                log_tau[g.key0] = np.zeros(())
            if g.key1:
                log_tau[g.key1] = np.zeros((g.ns,))
        w = {name: np.zeros(g.shape) for name, g in self.groups.items()}
        return {"log_tau": log_tau, "w": w} if log_tau else {"w": w}

    # -- flat <-> pytree ------------------------------------------------------------------
    def unravel(self, flat):
        """Flat vector (ravel_pytree order) -> position pytree, keeping the dtype."""
        return unravel_leaves(flat, self._shapes, self._sizes, self._treedef)

    def ravel(self, tree):
        leaves = jax.tree_util.tree_leaves(tree)
        return jnp.concatenate([jnp.ravel(x) for x in leaves])

    def init_position(self, fix: float = 0.5, weights: dict | None = None) -> dict:
        """FBM `net-gen fix 0.5`: every stored sigma (1/√τ) set to `fix`, the weights zero
        (or `weights`)."""
        pos = jax.tree_util.tree_map(np.asarray, self._template)
        pos = {k: dict(v) for k, v in pos.items()}
        for k, v in pos.get("log_tau", {}).items():
            pos["log_tau"][k] = np.full(np.shape(v), -2.0 * math.log(fix))
        if weights is not None:
            for k in pos["w"]:
                pos["w"][k] = np.asarray(weights[k], dtype=float).reshape(pos["w"][k].shape)
        return pos

    def inputs(self):  # the cases' inputs (n, n_in): a fold's own, or the data's
        return self.data["X"] if self._fold_X is None else self._fold_X

    def targets(self):  # the cases' targets: a fold's own, or the data's
        return self.data["y"] if self._fold_y is None else self._fold_y

    def with_mask(self, mask, X=None, y=None) -> "BNN":
        """The network with its likelihood, counts, Gibbs conditionals and curvature on the
        cases where `mask` (n,) is 1: a CV fold's (`bnn/cv.py`), with inputs `X` (n, n_in)
        and targets `y` for the model's when given; all may be traced (vmapped over folds)."""
        m = copy.copy(self)
        mask = jnp.asarray(mask)
        m._fold_X = self._fold_X if X is None else jnp.asarray(X, mask.dtype)
        m._fold_y = self._fold_y if y is None else y
        m.case_weights = mask
        m.n_eff = jnp.sum(mask)
        m._x_sumsq = mask @ jnp.asarray(m.inputs() ** 2, mask.dtype)
        if self.noise_group is not None:
            m.noise_group = dataclasses.replace(self.noise_group, mask=mask, count=m.n_eff)
        return m

    def x_sumsq(self):  # Σ over the cases of each input squared (Neal's curvature)
        return jnp.sum(self.inputs() ** 2, axis=0) if self._x_sumsq is None else self._x_sumsq

    def _weighed(self) -> "BNN":
        """Itself, or with a sharded placement's padding rows masked out (`Data.row_weights`)."""
        weights = self.data.row_weights()
        if self.case_weights is None and weights is not None:
            return self.with_mask(weights)
        return self

    def _case_sum(self, v):
        return jnp.sum(v if self.case_weights is None else v * self.case_weights)

    # -- the network ----------------------------------------------------------------------
    def apply(self, w: dict, X):
        """Network outputs f(X; w) (n, n_out): means for `real`, logits otherwise."""
        X = jnp.asarray(X, jax.tree_util.tree_leaves(w)[0].dtype)
        h = X
        for layer, act in enumerate(self.activations):
            kernel = w["ih0"] if layer == 0 else w[f"hh{layer}"]
            u = h @ kernel
            if f"bh{layer}" in w:
                u = u + w[f"bh{layer}"]
            h = ACTIVATIONS[act](u)
        out = jnp.zeros((X.shape[0], self.n_out), X.dtype)
        if "ho" in w:
            out = out + h @ w["ho"]
        if "io" in w:
            out = out + X @ w["io"]
        if "bo" in w:
            out = out + w["bo"]
        return out

    # -- log densities -------------------------------------------------------------------
    def log_prior(self, position: dict):
        """log p(w | τ) + log p(log τ) over the weight groups (no data)."""
        log_tau = position.get("log_tau", {})
        w = position["w"]
        dtype = jax.tree_util.tree_leaves(w)[0].dtype
        lp = jnp.zeros((), dtype)
        for name, g in self.groups.items():
            _, tau1 = g.precisions(log_tau, dtype)
            z = w[name].reshape(g.ns, g.nd)
            lp = lp + g.hyper_logpdf(log_tau, dtype) + g.value_logpdf(z, tau1)
        return lp

    def log_likelihood(self, position: dict, outputs=None):
        """log p(y | X, w, τ_noise), plus for `real` the noise precisions' own prior;
        `outputs`: f(X; w) when already computed (`bnn.cv.stacked_apply`)."""
        m = self._weighed()  # padding rows of a sharded run masked out
        log_tau = position.get("log_tau", {})
        w = position["w"]
        dtype = jax.tree_util.tree_leaves(w)[0].dtype
        f = m.apply(w, m.inputs()) if outputs is None else outputs
        if m.likelihood == "real":
            g = m.noise_group
            _, tau1 = g.precisions(log_tau, dtype)
            resid = (m.targets().astype(dtype) - f).T  # (n_out, n)
            return g.hyper_logpdf(log_tau, dtype) + g.value_logpdf(resid, tau1)
        if m.likelihood == "binary":
            y = m.targets().astype(dtype)
            return m._case_sum(jnp.sum(y * f - jnp.logaddexp(0.0, f), axis=1))
        logp = jax.nn.log_softmax(f, axis=-1)
        return m._case_sum(
            jnp.take_along_axis(logp, m.targets()[:, None], axis=1)[:, 0])

    def logdensity(self, position: dict, outputs=None):
        """The joint log density of (log τ, w) given the data (up to a constant)."""
        return self.log_prior(position) + self.log_likelihood(position, outputs)

    # -- Neal's scheme: Gibbs conditionals and step-size heuristic -----------------------
    def _values(self, position: dict) -> dict:
        """Z of every group: weights as (ns, nd), and for `real` the residuals (n_out, n)."""
        w = position["w"]
        dtype = jax.tree_util.tree_leaves(w)[0].dtype
        out = {name: w[name].reshape(g.ns, g.nd) for name, g in self.groups.items()}
        if self.noise_group is not None:
            resid = (self.targets().astype(dtype) - self.apply(w, self.inputs())).T
            out["noise"] = resid if self.case_weights is None else resid * self.case_weights
        return out

    def gibbs_conditionals(self, position: dict) -> dict:
        """{log_tau key: (shape, rate)}: the closed-form Gamma conditional of the lowest
        stored precision of every group whose values are Gaussian (FBM `net-mc.c`)."""
        log_tau = position.get("log_tau", {})
        dtype = jax.tree_util.tree_leaves(position["w"])[0].dtype
        values = self._values(position)
        out = {}
        for g in self._all_groups():
            if g.a2 == INF:
                key, sr = g.lowest_conditional(values[g.name], log_tau, dtype)
                if key is not None:
                    out[key] = sr
        return out

    def gibbs(self, key, position: dict, sample_sigmas=True, sample_noise=True) -> dict:
        """One Gibbs sweep over the stored precisions given the weights (`gibbs.gibbs_sweep`)."""
        return gibbs_sweep(self._weighed(), key, position, sample_sigmas, sample_noise)

    def curvature(self, position: dict) -> dict:
        """Neal's estimate of −∂²log p/∂wᵢ² for every weight (`gibbs.neal_curvature`)."""
        return neal_curvature(self._weighed(), position)

    # -- the Posterior ---------------------------------------------------------------------
    def posterior(self, init: dict | None = None, fix: float = 0.5,
                  init_scale: float = 0.1) -> Posterior:
        """The joint posterior over `{"log_tau": ..., "w": ...}` as a `bomcmc.Posterior`.

        Chains start at `init` (e.g. from `bnn.pretrain.pretrain`) or, per chain, with every
        stored sigma at `fix` and weights N(0, init_scale²)."""
        start = init if init is not None else self.init_position(fix)
        base = self.init_position(fix)

        def initializer(key):
            if init is not None:
                return init
            keys = jax.random.split(key, len(base["w"]))
            w = {k: init_scale * jax.random.normal(kk, np.shape(v))
                 for kk, (k, v) in zip(keys, base["w"].items())}
            return {**base, "w": w}

        return Posterior(
            logdensity_fn=self.logdensity,
            init_position=start,
            name=self.name,
            initializer=initializer,
            description=self.describe(),
            data=self.data,
        )

    def describe(self) -> str:
        arch = " ".join(str(s) for s in (self.n_in,) + self.hidden + (self.n_out,))
        noise = f" {self.prior.noise}" if self.prior.noise else ""
        return f"BNN {arch} / {self.prior}; {self.likelihood}{noise}"

    def __repr__(self) -> str:
        return f"BNN({self.describe()})"
