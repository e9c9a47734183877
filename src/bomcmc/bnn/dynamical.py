"""Choo's Dynamical A and B for a Bayesian neural network (Choo 2000, ch. 4): what the joint
dynamics of `kernels/choo_dynamics.py` moves, and the curvatures its step sizes come from.

**Dynamical A** (Choo 2000 §4.1–4.2) moves the model's own position [λ…, w…] (λ = log τ,
the log-Jacobian included, eq. 4.8). **Dynamical B** (§4.3) moves the non-centred weights
φ_g = w_g·√τ_g of every group whose precision τ_g is a random variable (eq. 4.10), with the
log density of eq. 4.14: log p(w(φ, λ), λ) − Σ_g N_g λ_g / 2 (the Jacobian of w = φ·e^{−λ/2},
eq. 4.13). Its InferenceData reports the weights w (the `posterior` group) and φ
(`unconstrained_posterior`).

Step sizes v = η / √c of each block may depend only on the other block (Choo 2000 §4.5):

- weights, from the precisions only: Neal's heuristic (`gibbs.neal_curvature`, Choo 2000
  §4.5.1, eqs. 4.30–4.34); for B divided by τ_g (∂²/∂φ² = ∂²/∂w² · e^{−λ}, the prior's part
  becoming 1, eq. 4.27);
- log-precisions, from the weights only, with every λ at its prior mean λ̂ = log ω (Choo
  2000, eq. 4.35). A: exactly −∂²log p/∂λ² there, ω·rate of the Gamma conditional:
  α/2 + ω·Σw²/2 for a weight group, α/2 + ω·SSE/2 for the noise (eqs. 4.28, 4.36). B: the
  noise as in A at w(φ, λ̂) (eq. 4.36); a weight group by one of two estimates
  (`hyper_curvature=`):

  - `"choo"` (default): Choo's own (eqs. 4.29, 4.37–4.42), α_g/2 + Σ_c [−½ ∂L^c/∂λ_g +
    Σ_j D_j (∂g_j/∂λ_g)²] at β̂, where g_j are the summed inputs of the layer the group
    feeds, (∂g_j/∂λ_g)² = ¼·(the group's term in g_j)² (eqs. 4.41–4.42) and D_j is Neal's
    backpropagated second derivative with the actual weights at λ̂ (eqs. 4.32, 4.40); the
    step size uses its absolute value (eq. 4.43, `choo_step_curvature`);
  - `"gauss_newton"`: α_g/2 + τ̂_out·Σ_c |∂f(x_c)/∂λ_g|² at λ̂ (∂f/∂λ_g by forward-mode
    differentiation; τ̂_out the noise's ω, ¼ for binary and class targets): positive by
    construction, the same information (φ and λ̂).

  Either depends on φ and λ̂ only, so reversibility holds (docs/bnn_dynamical.md).

Supported priors: one precision per group (FBM `ih 1:0.5`, Choo's model) or a fixed one
(`bo 100`), Gaussian weights; not per-unit (ARD) precisions or t-distributed weights.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from ..errors import BomcmcError
from ..kernels.neal_gibbs_hmc import model_curvature_flat
from ..posterior import Posterior
from .groups import MAX_SLOPE_SQ
from .network import ACTIVATIONS
from .priors import INF


def _check(model) -> None:
    if getattr(model, "case_weights", None) is not None:
        raise BomcmcError("Dynamical A/B: cross-validation fold models are not supported")
    for g in model._all_groups():
        if g.key1 or g.a2 != INF:
            raise BomcmcError(
                f"Dynamical A/B need one precision per group and Gaussian weights; group "
                f"'{g.name}' has per-unit precisions or t-distributed values ({g.prior})")


def _hyper_keys(model) -> list[str]:
    return sorted(model.init_position()["log_tau"])  # the flat order (ravel sorts keys)


def _omegas(model) -> dict[str, float]:
    return {g.key0: float(g.omega) for g in model._all_groups() if g.key0}


HYPER_CURVATURES = ("choo", "gauss_newton")
# The floor under |∂²E/∂λ²| in Choo's step size (eq. 4.43 divides by its square root): only a
# guard against an exact zero, so the step is at most 10⁴·η_h and such a trajectory diverges
# and is rejected, which leaves the chain exact.
MIN_CURVATURE = 1e-8


# -- Choo's estimate of −∂²log p/∂λ_g² for Dynamical B (Choo 2000 §4.5.2) ---------------------
def destination(model, name: str) -> int:
    """The layer whose summed inputs g^D group `name` feeds: hidden layer l, or
    len(model.hidden) for the outputs (Choo 2000 Fig. 4.1)."""
    if name in ("ho", "io", "bo"):
        return len(model.hidden)
    return 0 if name == "ih0" else int(name[2:])


def unit_values(model, w: dict, X) -> list:
    """The forward pass: [X, h_0, …, h_last], each layer's unit values (Choo 2000 eq. 4.20)."""
    hs = [X]
    for layer, act in enumerate(model.activations):
        u = hs[-1] @ w["ih0" if layer == 0 else f"hh{layer}"]
        if f"bh{layer}" in w:
            u = u + w[f"bh{layer}"]
        hs.append(ACTIVATIONS[act](u))
    return hs


def contribution(model, w: dict, hs: list, name: str):
    """Group `name`'s term in the summed inputs of its destination layer, (n, units): μ_j =
    Σ_i h_i^S w_ij for weights (Choo 2000 eq. 4.24), b_j for biases (eq. 4.20); with w at
    λ̂, −½ of it is ∂g_j^D/∂λ_g (eqs. 4.25–4.26, 4.41–4.42)."""
    if name.startswith("b"):
        return jnp.broadcast_to(w[name], (hs[0].shape[0],) + w[name].shape)
    source = 0 if name in ("ih0", "io") else (len(model.hidden) if name == "ho"
                                              else int(name[2:]))
    return hs[source] @ w[name]


def unit_curvatures(model, w: dict, d2_out) -> list:
    """Choo 2000 eqs. 4.32 and 4.40: ∂²L/∂(g_j)² of every layer's summed inputs, the output
    layer's `d2_out` backpropagated with the actual weights (at λ̂): D_i^S = a'²_max·Σ_j
    D_j^D w_ij², a'²_max = 1 for tanh (eq. 4.40 as written; Neal's bound for other
    activations, as `gibbs.neal_curvature`). The same for every case."""
    d2 = [None] * len(model.hidden) + [d2_out]
    for layer in reversed(range(len(model.hidden))):
        above = w["ho"] if layer == len(model.hidden) - 1 else w[f"hh{layer + 1}"]
        d2[layer] = MAX_SLOPE_SQ[model.activations[layer]] * (above**2 @ d2[layer + 1])
    return d2


def second_order_term(contrib, d2_dest, case_weights=None):
    """Σ_c Σ_j D_j (∂g_j^D/∂λ)², (∂g_j^D/∂λ)² = ¼·contrib² (Choo 2000 eqs. 4.39, 4.41–4.42)."""
    per_case = jnp.sum(d2_dest * 0.25 * contrib**2, axis=-1)
    return jnp.sum(per_case if case_weights is None else per_case * case_weights)


def choo_weight_group_curvatures(blocks, u: dict, hat: dict) -> dict:
    """Choo 2000 eqs. 4.29 and 4.39 at β̂ for every weight group with a random precision:
    {key: α_g/2 + Σ_c [−½ ∂L^c/∂λ_g + Σ_j D_j (∂g_j^D/∂λ_g)²]} (the prior's α/(2ω)·e^λ̂ =
    α/2). `u` are the non-centred weights φ, `hat` every λ at λ̂ = log ω (eq. 4.35); the
    first derivative is exact (eqs. 4.25–4.26, by autodiff of the likelihood at β̂)."""
    model = blocks.model._weighed()  # a sharded run's padding rows weighed out
    w = blocks.to_centred({"log_tau": hat, "u": u})["w"]
    dtype = jax.tree_util.tree_leaves(w)[0].dtype
    X = jnp.asarray(model.inputs(), dtype)
    hs = unit_values(model, w, X)
    d2 = unit_curvatures(model, w, output_curvature(model, hat, dtype))

    def loss(lam):
        lt = {**hat, **lam}
        return -model.log_likelihood(blocks.to_centred({"log_tau": lt, "u": u}))

    d_loss = jax.grad(loss)({key: hat[key] for key in blocks.scaled.values()})
    alpha = {g.key0: g.a0 for g in model._all_groups() if g.key0}
    out = {}
    for name, key in blocks.scaled.items():
        second = second_order_term(contribution(model, w, hs, name),
                                   d2[destination(model, name)], model.case_weights)
        out[key] = alpha[key] / 2 - 0.5 * d_loss[key] + second
    return out


def output_curvature(model, hat: dict, dtype):
    """∂²L/∂f_j² at β̂ (Choo 2000 eq. 4.32): the noise precision at λ̂, ω_δ, per output; ¼
    for binary and class targets (the logistic curvature's bound, as Neal's heuristic)."""
    g = model.noise_group
    if g is None:
        return jnp.full((model.n_out,), 0.25, dtype)
    return jnp.broadcast_to(g.prior_curvature(g.precisions(hat, dtype)[1]), (model.n_out,))


def choo_step_curvature(c):
    """|∂²E/∂λ²|, floored at MIN_CURVATURE: Choo 2000 eq. 4.43 takes the absolute value
    when his estimate is negative ("the negative sign is really no problem")."""
    return jnp.maximum(jnp.abs(c), MIN_CURVATURE)


class DynamicalA:
    """Dynamical A's blocks on the model's position [λ…, w…] (module docstring)."""

    def __init__(self, model):
        _check(model)
        self.model, self.n_hyper, self.dim = model, model.n_hyper, model.dim
        self.keys, self.omega = _hyper_keys(model), _omegas(model)

    def unravel(self, flat):
        return self.model.unravel(flat)

    def ravel(self, tree):
        return self.model.ravel(tree)

    def weight_curvature(self, x):
        return model_curvature_flat(self.model, self.model.unravel(x))

    def hyper_curvature(self, x):
        cond = self.model.gibbs_conditionals(self.model.unravel(x))
        return jnp.stack([self.omega[k] * cond[k][1] for k in self.keys])

    def posterior(self, init=None) -> Posterior:
        return self.model.posterior(init=init)


class DynamicalB:
    """Dynamical B: the model on {"log_tau": λ, "u": φ} with φ_g = w_g·√τ_g (module
    docstring); `posterior()` is the Posterior to sample, `to_centred` / `to_noncentred` map
    positions."""

    def __init__(self, model, hyper_curvature: str = "choo"):
        _check(model)
        if hyper_curvature not in HYPER_CURVATURES:
            raise BomcmcError(f"Dynamical B: hyper_curvature must be one of "
                              f"{', '.join(HYPER_CURVATURES)}, got '{hyper_curvature}'")
        self.hyper_estimate = hyper_curvature
        self.model, self.keys, self.omega = model, _hyper_keys(model), _omegas(model)
        self.scaled = {name: g.key0 for name, g in model.groups.items() if g.key0}
        self.n_per_group = {name: math.prod(g.shape) for name, g in model.groups.items()}
        template = self.to_noncentred(model.init_position())
        flat, self._unravel = ravel_pytree(template)
        self.dim, self.n_hyper = int(flat.size), model.n_hyper
        self.name = f"{model.name}-B"

    # -- coordinates ------------------------------------------------------------------------
    def _scale(self, tree_log_tau, sign):
        return {name: jnp.exp(sign * 0.5 * tree_log_tau[key])
                for name, key in self.scaled.items()}

    def to_centred(self, tree: dict) -> dict:
        s = self._scale(tree["log_tau"], -1.0)
        w = {k: v * s[k] if k in s else v for k, v in tree["u"].items()}
        return {"log_tau": tree["log_tau"], "w": w}

    def to_noncentred(self, tree: dict) -> dict:
        s = self._scale(tree["log_tau"], 1.0)
        u = {k: v * s[k] if k in s else v for k, v in tree["w"].items()}
        return {"log_tau": tree["log_tau"], "u": u}

    def unravel(self, flat):
        return self._unravel(flat)

    def ravel(self, tree):
        return ravel_pytree(tree)[0]

    # -- density ----------------------------------------------------------------------------
    def logdensity(self, tree: dict):
        jac = sum(-0.5 * self.n_per_group[name] * tree["log_tau"][key]
                  for name, key in self.scaled.items())
        return self.model.logdensity(self.to_centred(tree)) + jac

    def _constrain(self, tree: dict) -> dict:
        centred = self.to_centred(tree)
        out = {f"log_tau.{k}": v for k, v in sorted(centred["log_tau"].items())}
        out.update({f"w.{k}": v for k, v in sorted(centred["w"].items())})
        return out

    def posterior(self, init: dict | None = None) -> Posterior:
        """Chains start at `init` (a centred position, e.g. from pre-training) or at the
        model's dispersed starts, mapped to φ."""
        base = self.model.posterior(init=init)

        def initializer(key):
            return self.to_noncentred(base.initializer(key))

        return Posterior(logdensity_fn=self.logdensity,
                         init_position=self.to_noncentred(base.init_position),
                         name=self.name, initializer=initializer,
                         description=f"Dynamical B coordinates of {self.model.describe()}",
                         constrain=self._constrain)

    # -- step-size curvatures ---------------------------------------------------------------
    def weight_curvature(self, x):
        tree = self.unravel(x)
        centred = self.to_centred(tree)
        curv = self.model.curvature(centred)
        tau = {name: jnp.exp(tree["log_tau"][key]) for name, key in self.scaled.items()}
        return jnp.concatenate([jnp.ravel(curv[k] / tau[k] if k in tau else curv[k])
                                for k in sorted(curv)])

    def hyper_curvature(self, x):
        """c of the step sizes η_h/√c of the log-precisions, from φ and λ̂ only: the noise
        by eq. 4.36, the weight groups by `hyper_estimate` (module docstring)."""
        tree = self.unravel(x)
        dtype = x.dtype
        hat = {k: jnp.asarray(np.log(self.omega[k]), dtype) for k in tree["log_tau"]}
        cond = self.model.gibbs_conditionals(self.to_centred({"log_tau": hat, "u": tree["u"]}))
        if self.hyper_estimate == "choo":
            groups = {k: choo_step_curvature(c) for k, c in
                      choo_weight_group_curvatures(self, tree["u"], hat).items()}
        else:
            groups = self._gauss_newton(tree["u"], hat)
        # the noise: exact at λ̂ (eq. 4.36), as in Dynamical A
        return jnp.stack([groups[k] if k in groups else self.omega[k] * cond[k][1]
                          for k in self.keys])

    def _gauss_newton(self, u: dict, hat: dict) -> dict:
        """α_g/2 + τ̂_out·Σ_c |∂f(x_c)/∂λ_g|² at λ̂ for every weight group's λ_g."""
        weight_keys = sorted(self.scaled.values())
        if not weight_keys:
            return {}
        dtype = hat[weight_keys[0]].dtype

        def outputs(lam):
            lt = {**hat, **dict(zip(weight_keys, lam))}
            return self.model.apply(self.to_centred({"log_tau": lt, "u": u})["w"],
                                    self.model.X)

        lam_hat = jnp.stack([hat[k] for k in weight_keys])
        jac = jax.jacfwd(outputs)(lam_hat)  # (n, n_out, groups)
        gn = self._out_precision(dtype) * jnp.sum(jac**2, axis=(0, 1))
        alpha = {g.key0: g.a0 for g in self.model._all_groups() if g.key0}
        return {k: alpha[k] / 2 + c for k, c in zip(weight_keys, gn)}

    def _out_precision(self, dtype):
        g = self.model.noise_group
        if g is None:
            return jnp.asarray(0.25, dtype)  # binary / class: the logistic curvature's bound
        return jnp.asarray(g.omega, dtype)
