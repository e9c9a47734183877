"""Bayesian neural networks: multi-layer perceptrons with Neal's hierarchical priors.

Sources: seed 003 §6.1–6.4 (the network, eqs. 6.2 and 6.16, activations §6.2, Gaussian priors
eq. 6.22, the potential energy eq. 6.23); seed 004 ch. 3 (Neal's model: groups U, A, V, B with
Gamma-distributed precisions, eqs. 3.1–3.13); SPECS.md §E (FBM's prior notation, the Gibbs
updates of `net-mc.c`, the step-size heuristic of `net-models.tex`).

**Network.** Hidden layer l computes h_l = a_l(h_{l−1} W_l + b_l) (h_{−1} = x), the outputs are
f = h_last·W_ho + x·W_io + b_o, with no activation (seed 003 eq. 6.2; seed 004 eqs. 3.1–3.2).
Activations: tanh (default, FBM's and Neal's), sigmoid, relu, swish (seed 003 §6.2), identity.

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
(`samplers/neal_gibbs_hmc.py`) target the same distribution.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import BomcmcError
from ..posterior import Posterior, check_finite_data
from .priors import (
    INF,
    NetPrior,
    Prior,
    fixed_gaussian,
    gamma_conditional,
    gamma_logpdf,
    normal_logpdf,
    parse_model_spec,
    sample_log_upper,
    student_t_logpdf,
    upper_conditional,
)

ACTIVATIONS: dict[str, Callable] = {
    "tanh": jnp.tanh,
    "sigmoid": jax.nn.sigmoid,
    "relu": jax.nn.relu,
    "swish": jax.nn.silu,
    "identity": lambda u: u,
}
# max a'(u)² for the curvature backpropagation (SPECS §E.3: 1 for tanh)
MAX_SLOPE_SQ = {"tanh": 1.0, "sigmoid": 1.0 / 16, "relu": 1.0, "swish": 1.0998**2,
                "identity": 1.0}
LIKELIHOODS = ("real", "binary", "class")


def typical_sq(activation: str, s2):
    """Typical squared value of a unit whose summed input has typical square s2 (SPECS §E.3:
    capped at 1 for tanh). sigmoid: ¼ + s2/16 (first order), capped at 1; relu: s2/2 (exact
    for a Gaussian input); swish: s2/2 (its large-input limit); identity: s2."""
    if activation == "tanh":
        return jnp.minimum(1.0, s2)
    if activation == "sigmoid":
        return jnp.minimum(1.0, 0.25 + s2 / 16)
    if activation in ("relu", "swish"):
        return s2 / 2
    return s2


@dataclasses.dataclass(frozen=True)
class Group:
    """One prior group and its precision hierarchy, seen as a (ns, nd) matrix of values Z.

    Levels: τ₀ ~ Gamma(mean ω, a0), τ₁ (ns,) ~ Gamma(mean τ₀, a1), Zᵢⱼ ~ N(0, 1/τ₂ᵢⱼ) with
    τ₂ᵢⱼ ~ Gamma(mean τ₁ᵢ, a2) integrated out (a Student-t when a2 is finite). For weights
    (ns, nd) = (source, destination); for biases (1, n) and the bias prior's second alpha is
    a2; for the noise Z is the residual matrix transposed (outputs, cases)."""

    name: str
    kind: str  # "weights" | "biases" | "noise"
    shape: tuple[int, ...]  # the parameter's shape (noise: (n_out,))
    ns: int
    nd: int
    prior: Prior
    omega: float  # top-level mean precision (after x scaling)
    a0: float
    a1: float
    a2: float
    # noise groups of a cross-validation fold (`BNN.with_mask`): the cases' 0/1 weights (nd,)
    # and their sum, the number of values per source row that the conditionals count
    mask: Any = None
    count: Any = None

    @property
    def n_count(self):
        """Values per source row that enter the likelihood (nd, or the fold's case count)."""
        return self.nd if self.count is None else self.count

    def _weighted_sum(self, v, axis=None):
        return jnp.sum(v if self.mask is None else v * self.mask, axis=axis)

    @property
    def key0(self) -> str | None:
        return self.name if self.a0 < INF else None

    @property
    def key1(self) -> str | None:
        if self.a1 == INF:
            return None
        return "noise_out" if self.kind == "noise" else f"{self.name}_src"

    def precisions(self, log_tau: dict, dtype):
        """(τ₀ scalar, τ₁ (ns,)) with constants substituted for unstored levels."""
        tau0 = (jnp.exp(log_tau[self.key0]) if self.key0 else jnp.asarray(self.omega, dtype))
        if self.key1:
            tau1 = jnp.exp(log_tau[self.key1])
        else:
            tau1 = jnp.broadcast_to(tau0, (self.ns,))
        return tau0, tau1

    def value_logpdf(self, z, tau1):
        """Σ log p(Zᵢⱼ | τ₁ᵢ): Gaussian, or Student-t with a2 degrees of freedom."""
        prec = tau1[:, None]
        if self.a2 == INF:
            return self._weighted_sum(normal_logpdf(z, prec))
        return self._weighted_sum(student_t_logpdf(z, prec, self.a2))

    def hyper_logpdf(self, log_tau: dict, dtype):
        """log p(log τ₀) + log p(log τ₁ | τ₀), Jacobians included."""
        tau0, tau1 = self.precisions(log_tau, dtype)
        lp = jnp.zeros((), dtype)
        if self.key0:
            lp = lp + gamma_logpdf(tau0, self.omega, self.a0) + log_tau[self.key0]
        if self.key1:
            lp = lp + jnp.sum(gamma_logpdf(tau1, tau0, self.a1) + log_tau[self.key1])
        return lp

    def prior_curvature(self, tau1):
        """−∂²log p/∂z² used by the step-size heuristic: τ, or (α+1)/α·τ for t (SPECS §E.3)."""
        return tau1 if self.a2 == INF else (self.a2 + 1) / self.a2 * tau1

    def lowest_conditional(self, z, log_tau: dict, dtype):
        """Closed-form Gamma conditional (shape, rate) of the lowest stored precision given
        the values (only when a2 is infinite): τ₁ᵢ | Zᵢ·, τ₀ if a1 is finite, else τ₀ | Z."""
        if self.a2 != INF:
            raise BomcmcError(f"group {self.name}: t-distributed values have no Gamma conditional")
        tau0, _ = self.precisions(log_tau, dtype)
        if self.key1:
            return self.key1, gamma_conditional(self.a1, tau0, jnp.sum(z**2, axis=1),
                                                self.n_count)
        if self.key0:
            return self.key0, gamma_conditional(self.a0, self.omega, jnp.sum(z**2),
                                                self.ns * self.n_count)
        return None, None

    # Gibbs updates, in three phases so that a sweep over all groups draws its Gamma
    # variates in one call and its upper-level variates in two (each call site of a
    # rejection sampler costs seconds of compilation). Gamma(shape, rate) = Gamma(shape)/rate
    # and every shape is a constant, so the standard variates are drawn first.
    def gamma_shapes(self) -> dict[str, np.ndarray]:
        """The constant Gamma shapes of the variates one sweep of this group draws."""
        out = {}
        if not (self.key0 or self.key1):
            return out
        if self.a2 < INF:  # auxiliary per-value precisions
            out["aux"] = jnp.full((self.ns, self.nd), (self.a2 + 1) / 2)
        if self.key1 and self.a2 == INF:
            out["lower"] = jnp.full((self.ns,), (self.a1 + self.n_count) / 2)
        if self.key0 and not self.key1 and self.a2 == INF:
            out["upper"] = jnp.asarray((self.a0 + self.ns * self.n_count) / 2)
        return out

    def aux_sum(self, z, tau1, std_aux):
        """Σⱼ τ₂ᵢⱼ for τ₂ᵢⱼ | Zᵢⱼ, τ₁ᵢ ~ Gamma((a2+1)/2, (a2/τ₁ᵢ + Zᵢⱼ²)/2) (FBM draws these
        auxiliaries for t-distributed values, `net-mc.c:gibbs_conn`)."""
        rate = (self.a2 / tau1[:, None] + z**2) / 2
        return self._weighted_sum(jnp.exp(std_aux - jnp.log(rate)), axis=1)

    def lower_update(self, z, tau0, aux, std_lower):
        """τ₁ | Z, τ₀: log τ₁ (Gamma case) or the (a, b, c) of its upper-level form."""
        if self.a2 == INF:
            _, rate = gamma_conditional(self.a1, tau0, jnp.sum(z**2, axis=1), self.n_count)
            return std_lower - jnp.log(rate), None
        abc = upper_conditional(self.a1, tau0, self.a2, aux, self.n_count)
        return None, tuple(jnp.broadcast_to(v, (self.ns,)) for v in abc)

    def upper_update(self, z, tau1, aux, std_upper):
        """τ₀ | τ₁ (ARD), τ₀ | τ₂ (t values) or τ₀ | Z: log τ₀ or (a, b, c)."""
        if self.key1:
            abc = upper_conditional(self.a0, self.omega, self.a1, jnp.sum(tau1), self.ns)
        elif self.a2 < INF:
            abc = upper_conditional(self.a0, self.omega, self.a2, jnp.sum(aux),
                                    self.ns * self.n_count)
        else:
            _, rate = gamma_conditional(self.a0, self.omega, jnp.sum(z**2),
                                        self.ns * self.n_count)
            return std_upper - jnp.log(rate), None
        return None, tuple(jnp.reshape(v, (1,)) for v in abc)


def _draw_upper(key, requests: list):
    """One batched exact draw for every (a, b, c) request (vectors); returns the pieces."""
    if not requests:
        return []
    a, b, c = (jnp.concatenate([r[i] for r in requests]) for i in range(3))
    x = jax.vmap(sample_log_upper)(jax.random.split(key, a.shape[0]), a, b, c)
    out, i = [], 0
    for r in requests:
        out.append(x[i:i + r[0].shape[0]])
        i += r[0].shape[0]
    return out


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
    """

    def __init__(self, X, y, hidden: Sequence[int] = (8,), prior: Any = None,
                 likelihood: str = "real", noise: Any = None,
                 activation: str | Sequence[str] = "tanh", n_out: int | None = None,
                 name: str = "bnn"):
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
        self._x_sumsq = np.sum(self.X**2, axis=0)
        self.case_weights = None  # a fold's 0/1 case weights (`with_mask`)
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
        check_finite_data(self.name, X=X, y=np.asarray(y, dtype=float))
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

    def with_mask(self, mask) -> "BNN":
        """The same network with the likelihood restricted to the cases where `mask` (n,) is 1
        (0 elsewhere): one cross-validation fold's training set (`models.bnn_cv`). `mask` may
        be a traced array, so one function vmaps over the folds. The data, counts, Gibbs
        conditionals and Neal's curvature all see only the weighted cases."""
        m = copy.copy(self)
        mask = jnp.asarray(mask)
        m.case_weights = mask
        m.n_eff = jnp.sum(mask)
        m._x_sumsq = mask @ jnp.asarray(self.X**2, mask.dtype)
        if self.noise_group is not None:
            m.noise_group = dataclasses.replace(self.noise_group, mask=mask, count=m.n_eff)
        return m

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

    def log_likelihood(self, position: dict):
        """log p(y | X, w, τ_noise), plus for `real` the noise precisions' own prior."""
        log_tau = position.get("log_tau", {})
        w = position["w"]
        dtype = jax.tree_util.tree_leaves(w)[0].dtype
        f = self.apply(w, self.X)
        if self.likelihood == "real":
            g = self.noise_group
            _, tau1 = g.precisions(log_tau, dtype)
            resid = (jnp.asarray(self.y, dtype) - f).T  # (n_out, n)
            return g.hyper_logpdf(log_tau, dtype) + g.value_logpdf(resid, tau1)
        if self.likelihood == "binary":
            y = jnp.asarray(self.y, dtype)
            return self._case_sum(jnp.sum(y * f - jnp.logaddexp(0.0, f), axis=1))
        logp = jax.nn.log_softmax(f, axis=-1)
        return self._case_sum(
            jnp.take_along_axis(logp, jnp.asarray(self.y)[:, None], axis=1)[:, 0])

    def logdensity(self, position: dict):
        """The joint log density of (log τ, w) given the data (up to a constant)."""
        return self.log_prior(position) + self.log_likelihood(position)

    # -- Neal's scheme: Gibbs conditionals and step-size heuristic -----------------------
    def _values(self, position: dict) -> dict:
        """Z of every group: weights as (ns, nd), and for `real` the residuals (n_out, n)."""
        w = position["w"]
        dtype = jax.tree_util.tree_leaves(w)[0].dtype
        out = {name: w[name].reshape(g.ns, g.nd) for name, g in self.groups.items()}
        if self.noise_group is not None:
            resid = (jnp.asarray(self.y, dtype) - self.apply(w, self.X)).T
            out["noise"] = resid if self.case_weights is None else resid * self.case_weights
        return out

    def gibbs_conditionals(self, position: dict) -> dict:
        """{log_tau key: (shape, rate)}: the closed-form Gamma conditional of the lowest
        stored precision of every group whose values are Gaussian (SPECS §E.2)."""
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
        """One Gibbs sweep over the stored precisions given the weights: every weight group
        (when `sample_sigmas`) and the noise given the residuals (when `sample_noise`)
        (seed 004 §3.4; FBM `sample-sigmas` / `sample-noise`; the flags may be traced).

        In every group, as FBM's `gibbs_conn`: first τ₁ | Z, τ₀, then τ₀ | τ₁ (or τ₀ | Z); for
        t-distributed values the per-value precisions are drawn first as auxiliaries and the
        levels above are drawn given them. Each draw is exact: a Gamma conditional, or the
        log-concave upper-level conditional (`sample_log_upper`)."""
        log_tau = position.get("log_tau", {})
        if not log_tau:
            return position
        dtype = jax.tree_util.tree_leaves(position["w"])[0].dtype
        groups = [g for g in self._all_groups() if g.key0 or g.key1]
        values = self._values(position)
        k_gamma, k_lower, k_upper = jax.random.split(key, 3)
        # all standard Gamma variates of the sweep in one call
        layout, shapes, i = {}, [], 0
        for g in groups:
            for part, shp in g.gamma_shapes().items():
                layout[g.name, part] = (i, shp.shape)
                shapes.append(shp.ravel())
                i += shp.size
        std = (jax.random.loggamma(k_gamma, jnp.concatenate(shapes).astype(dtype))
               if shapes else None)

        def variates(g, part):
            if (g.name, part) not in layout:
                return None
            start, shape = layout[g.name, part]
            return std[start:start + int(np.prod(shape, dtype=int))].reshape(shape)

        new = dict(log_tau)
        aux = {g.name: g.aux_sum(values[g.name], g.precisions(new, dtype)[1],
                                 variates(g, "aux")) for g in groups if g.a2 < INF}
        for phase, k in (("lower", k_lower), ("upper", k_upper)):
            pending = []
            for g in groups:
                tau0, tau1 = g.precisions(new, dtype)
                if phase == "lower" and g.key1:
                    lt, abc = g.lower_update(values[g.name], tau0, aux.get(g.name),
                                             variates(g, "lower"))
                    target = g.key1
                elif phase == "upper" and g.key0:
                    lt, abc = g.upper_update(values[g.name], tau1, aux.get(g.name),
                                             variates(g, "upper"))
                    target = g.key0
                else:
                    continue
                if abc is None:
                    new[target] = lt.astype(dtype)
                else:
                    pending.append((g, target, abc))
            drawn = _draw_upper(k, [abc for _, _, abc in pending])
            for (g, target, _), x in zip(pending, drawn):
                new[target] = x.reshape(np.shape(log_tau[target])).astype(dtype)
        out = dict(log_tau)
        for g in groups:
            flag = sample_noise if g.kind == "noise" else sample_sigmas
            for lk in (g.key0, g.key1):
                if lk:
                    out[lk] = jnp.where(flag, new[lk], log_tau[lk])
        return {**position, "log_tau": out}

    def curvature(self, position: dict) -> dict:
        """Neal's estimate of −∂²log p/∂wᵢ² for every weight, from the precisions only
        (SPECS §E.3; seed 004 §4.5.1; FBM `mc_app_stepsizes`). Output curvature: τ_noise per
        output (×(α+1)/α for t noise), ¼ for binary and softmax targets; backpropagated with
        d²L/du² = max a'(u)²·d²L/dv² and d²L/dv_i = Σⱼ σ²_{w,i} d²L/du_j; per weight:
        n·(typical v_i²)·d²L/du_j (Σ_c x_ci² for inputs), per bias n·d²L/du_j, plus the prior
        curvature. Typical hidden v² comes from a forward pass Σ typical v_i² σ²_{w,i}
        through `typical_sq`."""
        log_tau = position.get("log_tau", {})
        dtype = jax.tree_util.tree_leaves(position["w"])[0].dtype
        n = self.n_eff
        tau1 = {name: g.precisions(log_tau, dtype)[1] for name, g in self.groups.items()}
        if self.likelihood == "real":
            g = self.noise_group
            d2_out = g.prior_curvature(g.precisions(log_tau, dtype)[1])  # (n_out,)
        else:
            d2_out = jnp.full((self.n_out,), 0.25, dtype)
        n_layers = len(self.hidden)
        # backward: curvature of each hidden layer's summed inputs u
        d2_u = [None] * n_layers
        above = d2_out
        for layer in reversed(range(n_layers)):
            src = "ho" if layer == n_layers - 1 else f"hh{layer + 1}"
            d2_v = (1.0 / tau1[src]) * jnp.sum(above)  # (h_layer,)
            d2_u[layer] = MAX_SLOPE_SQ[self.activations[layer]] * d2_v
            above = d2_u[layer]
        # forward: typical squared unit values
        x_sumsq = jnp.asarray(self._x_sumsq, dtype)
        typ = [None] * n_layers
        prev = x_sumsq / n
        for layer in range(n_layers):
            src = "ih0" if layer == 0 else f"hh{layer}"
            s2 = jnp.sum(prev / tau1[src])
            typ[layer] = typical_sq(self.activations[layer], s2)
            prev = jnp.broadcast_to(typ[layer], (self.hidden[layer],))
        out = {}
        for name, g in self.groups.items():
            prior = g.prior_curvature(tau1[name])  # (ns,)
            if name == "ih0":
                lik = x_sumsq[:, None] * d2_u[0][None, :]
            elif name.startswith("hh"):
                layer = int(name[2:])
                lik = n * typ[layer - 1] * jnp.broadcast_to(d2_u[layer], g.shape)
            elif name.startswith("bh"):
                lik = n * d2_u[int(name[2:])]
            elif name == "ho":
                lik = n * typ[-1] * jnp.broadcast_to(d2_out, g.shape)
            elif name == "io":
                lik = x_sumsq[:, None] * d2_out[None, :]
            else:  # bo
                lik = n * d2_out
            prior_term = prior[:, None] if len(g.shape) == 2 else prior[0]
            out[name] = (lik + prior_term).reshape(g.shape).astype(dtype)
        return out

    # -- the Posterior ---------------------------------------------------------------------
    def posterior(self, init: dict | None = None, fix: float = 0.5,
                  init_scale: float = 0.1) -> Posterior:
        """The joint posterior over `{"log_tau": ..., "w": ...}` as a `bomcmc.Posterior`.

        Chains start at `init` (e.g. from `bnn_pretrain.pretrain`) or, per chain, with every
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
            meta={"model": self, "n": self.n, "n_in": self.n_in, "n_out": self.n_out,
                  "hidden": self.hidden, "prior": str(self.prior),
                  "noise": str(self.prior.noise) if self.prior.noise else None},
        )

    def describe(self) -> str:
        arch = " ".join(str(s) for s in (self.n_in,) + self.hidden + (self.n_out,))
        noise = f" {self.prior.noise}" if self.prior.noise else ""
        return f"BNN {arch} / {self.prior}; {self.likelihood}{noise}"

    def __repr__(self) -> str:
        return f"BNN({self.describe()})"
