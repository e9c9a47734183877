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
  prior's α/2 plus, for a weight group, the Gauss–Newton term τ̂_out·Σ_c |∂f(x_c)/∂λ_g|² at
  λ̂ (∂f/∂λ_g by forward-mode differentiation; τ̂_out the noise's ω, ¼ for binary and class
  targets); the noise as in A at w(φ, λ̂). Choo estimates the weight-group term by
  Neal-style backpropagation with a −½∂L/∂λ correction (eqs. 4.37–4.42), which can turn
  negative; Gauss–Newton keeps the curvature positive and uses the same information (φ and
  λ̂ only), so reversibility holds as in his scheme (docs/bnn_dynamical.md).

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

    def __init__(self, model):
        _check(model)
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
        tree = self.unravel(x)
        dtype = x.dtype
        hat = {k: jnp.asarray(np.log(self.omega[k]), dtype) for k in tree["log_tau"]}
        at_hat = {"log_tau": hat, "u": tree["u"]}
        cond = self.model.gibbs_conditionals(self.to_centred(at_hat))
        weight_keys = sorted(self.scaled.values())

        def outputs(lam):
            lt = {**hat, **dict(zip(weight_keys, lam))}
            return self.model.apply(self.to_centred({"log_tau": lt, "u": tree["u"]})["w"],
                                    self.model.X)

        lam_hat = jnp.stack([hat[k] for k in weight_keys])
        jac = jax.jacfwd(outputs)(lam_hat)  # (n, n_out, groups)
        gn = self._out_precision(dtype) * jnp.sum(jac**2, axis=(0, 1))
        gn = dict(zip(weight_keys, gn))
        alpha = {g.key0: g.a0 for g in self.model._all_groups() if g.key0}
        curv = []
        for k in self.keys:
            if k in gn:
                curv.append(alpha[k] / 2 + gn[k])
            else:  # the noise: exact at λ̂, as in Dynamical A
                curv.append(self.omega[k] * cond[k][1])
        return jnp.stack(curv)

    def _out_precision(self, dtype):
        g = self.model.noise_group
        if g is None:
            return jnp.asarray(0.25, dtype)  # binary / class: the logistic curvature's bound
        return jnp.asarray(g.omega, dtype)
