"""The weight and noise groups of Neal's hierarchical prior, and their Gibbs updates.

A `Group` is one FBM prior group (Neal 1996 §2.3; Choo 2000 ch. 3): its values (weights of one
layer, or the residuals for the noise), the precisions of its hierarchy and the closed-form
conditionals of those precisions that Neal's Gibbs sweep draws from.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import BomcmcError
from .priors import (INF, Prior, gamma_conditional, gamma_logpdf, normal_logpdf,
                     sample_log_upper, student_t_logpdf, upper_conditional)

# max a'(u)² for the curvature backpropagation (FBM `net-models.tex`, "Heuristic choice of
# stepsizes": 1 for tanh)
MAX_SLOPE_SQ = {"tanh": 1.0, "sigmoid": 1.0 / 16, "relu": 1.0, "swish": 1.0998**2,
                "identity": 1.0}


def typical_sq(activation: str, s2):
    """Typical squared value of a unit whose summed input has typical square s2 (FBM
    `net-models.tex`, "Heuristic choice of stepsizes": capped at 1 for tanh). sigmoid:
    ¼ + s2/16 (first order), capped at 1; relu: s2/2 (exact for a Gaussian input); swish:
    s2/2 (its large-input limit); identity: s2."""
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
        """−∂²log p/∂z² used by the step-size heuristic: τ, or (α+1)/α·τ for t (FBM
        `net-models.tex`)."""
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


def draw_upper(key, requests: list):
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
