"""The metric adaptive HMC learns in burn-in (docs/tuning.md, "The metric" and "Robust
defaults"): a `MetricState` and functions over it, held by `ahmc_tuner.AHMCTuner`.

- The metric knob's shape is fixed for the run (`shape_metric`): (chains, d, d) for
  mass "dense", and for "auto" up to AUTO_DENSE_MAX_DIM, so choosing later never recompiles.
- The run starts from the Laplace approximation (`laplace_metric`): the inverse negative
  Hessian at the chains' L-BFGS points near the best of them (`near_the_mode`), dense when
  its correlations call for it (`needs_dense`), else its diagonal.
- Burn-in's windows re-estimate it (`welford_add`, `estimate`): the (co)variance with
  Stan's regularisation taken in the coordinates' own scales (`regularize`), normalised by
  its smallest eigenvalue.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.stats

from ..adaptation.welford import REG_SAMPLES, REG_VALUE, stan_regularize, welford_merge
from ..config import Latest

MASSES = ("auto", "diag", "dense", "identity")
AUTO_DENSE_MAX_DIM = 400  # mass="auto" carries a dense metric knob up to this dimension
# "auto" goes dense when the correlations' condition number κ exceeds this and what sampling
# noise alone would give (Marchenko-Pastur). On a Gaussian, HMC's gradients per independent
# draw grow like √κ of the metric-scaled covariance, which a diagonal metric leaves at the
# correlations' κ and a dense one brings to 1: above κ = 2 the dense metric can save more than
# 1.4× the gradients, for O(d²) instead of O(d) work per leapfrog step (docs/tuning.md,
# "Robust defaults", for what it changed on the logistic regressions).
DENSE_CONDITION = 2.0
MIN_MASS_STEPS = 10  # fewer burn-in BO steps than this: no metric adaptation


def needs_dense(cov: np.ndarray, n: int | None) -> bool:
    """Whether a dense metric pays: the condition number of the correlation matrix of `cov`
    exceeds DENSE_CONDITION and, for a covariance estimated from n samples, twice what n
    samples of d independent coordinates would show by chance, ((1 + √(d/n)) / (1 − √(d/n)))²
    (the Marchenko-Pastur edges); never when n < 2d, where the estimate is mostly noise.
    n None: `cov` is exact (the inverse Hessian at the mode)."""
    d = cov.shape[0]
    if d < 2 or (n is not None and n < 2 * d):
        return False
    sd = np.sqrt(np.diag(cov))
    eig = np.linalg.eigvalsh(cov / np.outer(sd, sd))
    ratio = 0.0 if n is None else np.sqrt(d / n)
    chance = ((1 + ratio) / (1 - ratio)) ** 2
    return bool(eig[0] > 0 and eig[-1] / eig[0] > max(DENSE_CONDITION, 2 * chance))


def near_the_mode(logp: np.ndarray, d: int) -> np.ndarray:
    """Which chains' L-BFGS points are near the best one found: log π within the 99.9 %
    quantile of χ²_d / 2 of the highest, the bulk of a d-dimensional Gaussian's typical set
    (generous: points L-BFGS brought to the mode lie within rounding of it). A chain where
    L-BFGS stalled far out, whose Hessian can be orders of magnitude larger, is left out of
    the Laplace metric instead of dominating the average."""
    ok = np.isfinite(logp)
    if not ok.any():
        return ok
    return ok & (logp >= logp[ok].max() - 0.5 * scipy.stats.chi2.ppf(0.999, d))


def windows(burn_steps: int, fractions) -> list[int]:
    """BO step boundaries [b₀, b₁, …] of the metric's windows over `burn_steps` burn-in BO
    steps: Welford takes steps b₀ < i ≤ b_last and a new metric is set after steps b₁, b₂, …;
    empty windows dropped, none below MIN_MASS_STEPS steps."""
    if burn_steps < MIN_MASS_STEPS:
        return []
    bounds = []
    for f in fractions:
        b = int(round(float(f) * burn_steps))
        if not bounds or b > bounds[-1]:
            bounds.append(b)
    return bounds if len(bounds) >= 2 else []


class MetricState(NamedTuple):
    """What the metric's learning keeps: the epoch (metric updates so far), the window's
    Welford sums (count, mean, M2) or None, the kind chosen ("diag" or "dense", once
    learned) and whether the knob is (d, d)."""

    epoch: int = 0
    welford: tuple[int, np.ndarray, np.ndarray] | None = None
    metric_kind: str | None = None
    dense_knob: bool = False


def shape_metric(state: MetricState, mass: str, knobs) -> tuple[MetricState, object]:
    """Give the metric knob its run-long shape: (chains, d, d) for mass "dense", and for
    "auto" up to AUTO_DENSE_MAX_DIM (a diagonal metric then sits in a dense knob); the
    executable is compiled with this shape, so choosing later never recompiles."""
    inv = np.asarray(knobs.inverse_mass_matrix)
    d = inv.shape[-1]
    dense = inv.ndim == 3 or mass == "dense" or (mass == "auto" and d <= AUTO_DENSE_MAX_DIM)
    if dense and inv.ndim == 2:
        knobs = knobs._replace(
            inverse_mass_matrix=np.einsum("cd,de->cde", inv, np.eye(d, dtype=inv.dtype)))
    return state._replace(dense_knob=dense), knobs


# each log density's compiled Hessian and log density over chains (by identity), traced
# once per process: the log density dispatched op by op compiled a program for every op
_HESSIANS = Latest(4)


def laplace_metric(state: MetricState, mass: str, knobs, logdensity_fn,
                   start_positions) -> tuple[MetricState, object, int]:
    """With a dense knob, start from the Laplace approximation: M⁻¹ = the inverse of the
    negative Hessian of log π averaged over the chains' starts (the points L-BFGS reached
    towards the mode) that are near the best of them (`near_the_mode`), dense when its
    correlations call for it (`needs_dense`), else its diagonal; burn-in's windows then
    refine it. Left alone where that Hessian is not positive definite or cannot be
    computed. Returns (state, knobs, the gradients spent)."""
    if not state.dense_knob or mass == "identity" or logdensity_fn is None \
            or start_positions is None:
        return state, knobs, 0
    x = jnp.asarray(start_positions)
    # jax.hessian is d Hessian-vector products per chain, each counted as 2 gradients;
    # the log density at each start counted as one more
    grads = (2 * x.shape[-1] + 1) * x.shape[0]
    try:
        hessian, logp = _HESSIANS.get_or_build(id(logdensity_fn), lambda: (
            jax.jit(jax.vmap(jax.hessian(logdensity_fn))), jax.jit(jax.vmap(logdensity_fn))),
            keep=(logdensity_fn,))
        hess = hessian(x)
        near = near_the_mode(np.asarray(logp(x), np.float64), x.shape[-1])
        h = -np.mean(np.asarray(hess, np.float64)[near], axis=0)
        cov = np.linalg.inv(0.5 * (h + h.T))
        np.linalg.cholesky(cov)
    except Exception:  # noqa: BLE001 - no Hessian, a singular or indefinite one
        return state, knobs, grads
    if not np.all(np.isfinite(cov)):
        return state, knobs, grads
    kind = "dense" if mass == "dense" or needs_dense(cov, None) else "diag"
    inv = cov if kind == "dense" else np.diag(np.diag(cov))
    inv = inv / np.linalg.eigvalsh(inv)[0]
    old = np.asarray(knobs.inverse_mass_matrix)
    knobs = knobs._replace(inverse_mass_matrix=np.broadcast_to(
        inv.astype(old.dtype), old.shape).copy())
    return state._replace(metric_kind=kind), knobs, grads


def welford_add(state: MetricState, x: np.ndarray) -> MetricState:
    """Merge a batch (chains, n, d) into (count, mean, M2), pooled over chains."""
    return state._replace(welford=welford_merge(state.welford, x.reshape(-1, x.shape[-1]),
                                                dense=state.dense_knob))


def estimate(state: MetricState, mass: str) -> tuple[MetricState, np.ndarray]:
    """The window's regularised (co)variance (`regularize`) over its smallest eigenvalue;
    diagonal or dense as `metric_kind` (chosen at the first update). The state keeps the
    kind; the window is not emptied (`next_epoch`)."""
    n, _, m2 = state.welford
    cov = m2 / max(n - 1, 1)
    if cov.ndim == 1:
        reg = regularize(cov, n)
        return state, reg / reg.min()
    if state.metric_kind is None:
        state = state._replace(metric_kind="dense" if mass == "dense" or needs_dense(cov, n)
                               else "diag")
    reg = regularize(np.diag(np.diag(cov)) if state.metric_kind == "diag" else cov, n)
    return state, reg / np.linalg.eigvalsh(reg)[0]


def next_epoch(state: MetricState) -> MetricState:
    """After a metric update: an empty window and the epoch counted."""
    return state._replace(welford=None, epoch=state.epoch + 1)


def to_json(state: MetricState) -> dict:
    w = state.welford
    return {"epoch": int(state.epoch),
            "welford": None if w is None else {"n": int(w[0]), "mean": w[1].tolist(),
                                               "m2": w[2].tolist()},
            "metric_kind": state.metric_kind, "dense_knob": bool(state.dense_knob)}


def from_json(d: dict) -> MetricState:
    w = d.get("welford")
    return MetricState(
        epoch=int(d.get("epoch", 0)),
        welford=None if w is None else (int(w["n"]), np.asarray(w["mean"], float),
                                        np.asarray(w["m2"], float)),
        metric_kind=d.get("metric_kind"), dense_knob=bool(d.get("dense_knob", False)))


def regularize(cov: np.ndarray, n: int) -> np.ndarray:
    """Stan's shrinkage in the coordinates' own scales: (n/(n+5)) Σ̂ + 10⁻³ (5/(n+5)) D,
    D = diag(Σ̂), where Stan shrinks towards 10⁻³ I. Stan's target presumes unit scales: on a
    coefficient with posterior sd 10⁻³ it outweighs the variance itself after a few hundred
    draws and erases the correlations (docs/tuning.md, "Robust defaults"). A diagonal
    estimate is then only rescaled, which the normalisation undoes. Where a coordinate did
    not move (a zero variance), Stan's own rule."""
    var = np.diag(cov) if cov.ndim == 2 else cov
    if not np.all(var > 0):
        return stan_regularize(cov, n, np.eye(cov.shape[0]) if cov.ndim == 2 else 1.0)
    shrink = np.diag(var) if cov.ndim == 2 else var
    return (n * cov + REG_VALUE * REG_SAMPLES * shrink) / (n + REG_SAMPLES)
