"""The metric adaptive HMC learns in burn-in (docs/tuning.md, "The metric" and "Robust
defaults"): a `MetricState` and functions over it, held by `ahmc_tuner.AHMCTuner`.

- The metric knob's shape is fixed for the run (`shape_metric`): (chains, d, d) for
  mass "dense", and for "auto" up to AUTO_DENSE_MAX_DIM, so choosing later never recompiles.
- The run starts from the Laplace approximation (`laplace_metric`): the inverse negative
  Hessian at the chains' L-BFGS points near the best of them (`near_the_mode`), dense when
  its correlations call for it (`needs_dense`), else its diagonal.
- Burn-in's windows re-estimate it (`welford_add`, `estimate`): the (co)variance with
  Stan's regularisation taken in the coordinates' own scales (`regularize`), moved from the
  current metric towards the window's estimate only as far as the estimate's own noise
  allows (`shrink_weight`, `towards`), normalised by its smallest eigenvalue. An update
  that barely moves it keeps the bandit's GP (`keeps_rewards`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.stats

from ..adaptation.welford import (REG_SAMPLES, REG_VALUE, stan_regularize, welford_combine,
                                  welford_merge)
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
KEEP_GP = 0.1  # a warmup="auto" update moving M⁻¹ by δ below this keeps the bandit


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
    """What the metric's learning keeps: the epoch (metric updates so far that restarted
    the bandit, `next_epoch`), the window's Welford sums (count, mean, M2) of its
    even-numbered and of its odd-numbered chains (None: none yet), the kind chosen ("diag"
    or "dense", once learned), whether the knob is (d, d), and the last update's
    `shrink_weight` (None: none yet)."""

    epoch: int = 0
    halves: tuple = (None, None)
    metric_kind: str | None = None
    dense_knob: bool = False
    weight: float | None = None


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
    """Merge a batch (chains, n, d) into the Welford sums of its even-numbered and of its
    odd-numbered chains (chain numbers of the whole run: a batch burn-in's groups, blocks of
    consecutive chains, fall into both halves alike)."""
    return state._replace(halves=tuple(
        acc if part.shape[0] == 0 else welford_merge(acc, part.reshape(-1, part.shape[-1]),
                                                     dense=state.dense_knob)
        for acc, part in zip(state.halves, (x[0::2], x[1::2]))))


def estimate(state: MetricState, mass: str,
             current: np.ndarray) -> tuple[MetricState, np.ndarray]:
    """The new metric after a window: the window's regularised (co)variance Σ̂ (`regularize`),
    diagonal or dense as `metric_kind` (chosen at the first update), reached from the
    `current` metric by the fraction `shrink_weight` of the way to Σ̂ (`towards`), over its
    smallest eigenvalue. The state keeps the kind and the weight; the window is not emptied
    (`next_epoch`)."""
    halves = [h for h in state.halves if h is not None]
    whole = welford_combine(*state.halves)
    n, _, m2 = whole
    cov = m2 / max(n - 1, 1)
    if cov.ndim == 2 and state.metric_kind is None:
        state = state._replace(metric_kind="dense" if mass == "dense" or needs_dense(cov, n)
                               else "diag")

    def window(sums):  # a regularised estimate of the state's kind from Welford sums
        n, _, m2 = sums
        cov = m2 / max(n - 1, 1)
        return regularize(np.diag(np.diag(cov)) if cov.ndim == 2 and
                          state.metric_kind == "diag" else cov, n)

    new = window(whole)
    current = np.asarray(current, np.float64)
    if new.ndim == 1 and current.ndim == 2:
        current = np.diag(current)
    weight = 1.0
    if len(halves) == 2 and min(h[0] for h in halves) >= 2:
        weight = shrink_weight(current, new, window(halves[0]), window(halves[1]))
        new = towards(current, new, weight)
    scale = new.min() if new.ndim == 1 else np.linalg.eigvalsh(new)[0]
    return state._replace(weight=weight), new / scale


def shrink_weight(current: np.ndarray, new: np.ndarray, half_a: np.ndarray,
                  half_b: np.ndarray) -> float:
    """How far to move from the `current` metric towards a window's estimate `new`, in [0, 1]:
    1 − ν²/δ², where δ = `metric_change(current, new)` is how far the estimate lies from the
    current metric and ν its own noise, half the change between the estimates of the
    window's two halves of chains (independent estimates from half the draws each: their
    difference is twice as noisy as the whole's, √2 for half the draws and √2 for the
    difference). δ² is about the true change squared plus ν², so the weight is the share of
    the observed change that is not noise (a positive-part James-Stein weight, James & Stein
    1961); it is near 0 where the window's draws cannot tell the current metric from the
    estimate, and then the metric barely moves (a few effective draws per coordinate at 4
    chains: docs/warmup.md). Correlated draws need no effective-sample size here: the two
    halves' chains are independent, and their disagreement measures the noise directly."""
    change = metric_change(current, new)
    noise = 0.5 * metric_change(half_a, half_b)
    if not (math.isfinite(change) and math.isfinite(noise)) or change == 0.0:
        return 1.0
    return float(max(0.0, 1.0 - (noise / change) ** 2))


def towards(current: np.ndarray, new: np.ndarray, weight: float) -> np.ndarray:
    """The point a fraction `weight` of the way from `current` to `new` along the geodesic of
    positive-definite matrices, C^{1/2} (C^{-1/2} N C^{-1/2})^w C^{1/2} (elementwise
    C (N/C)^w for diagonals): the generalised eigenvalues λ_j of (new, current) become λ_j^w,
    so `metric_change(current, result)` is w times `metric_change(current, new)`, and the
    result is positive definite."""
    if weight >= 1.0:
        return new
    if new.ndim == 1:
        return current * (new / current) ** weight
    chol = np.linalg.cholesky(_as_matrix(current))
    inv = np.linalg.inv(chol)
    lam, vec = np.linalg.eigh(_as_matrix(inv @ new @ inv.T))
    root = chol @ vec
    return _as_matrix(root @ np.diag(lam ** weight) @ root.T)


def metric_change(old: np.ndarray, new: np.ndarray) -> float:
    """δ = RMS of the centred log generalised eigenvalues of (new, old): 0 when the two
    metrics differ by a scale only. Diagonal metrics ((d,)) or dense ((d, d)), or one of
    each."""
    old, new = np.asarray(old, np.float64), np.asarray(new, np.float64)
    if old.ndim == 1 and new.ndim == 1:  # no d × d matrix for a long diagonal
        lam = new / old
    else:
        inv = np.linalg.inv(np.linalg.cholesky(_as_matrix(old)))
        lam = np.linalg.eigvalsh(inv @ _as_matrix(new) @ inv.T)
    if not np.all(lam > 0):
        return math.inf
    log = np.log(lam)
    return float(np.sqrt(np.mean((log - log.mean()) ** 2)))


def _as_matrix(m: np.ndarray) -> np.ndarray:
    return np.diag(m) if m.ndim == 1 else 0.5 * (m + m.T)


def keeps_rewards(change: float) -> bool:
    """Whether a metric update that moved M⁻¹ by δ = `change` (`metric_change`) leaves the
    bandit's rewards describing the new sampler, so that its GP is kept (`KEEP_GP`; the
    tuner asks under warmup="auto" only: docs/warmup.md).

    Under a metric moved by δ (the RMS of the centred log generalised eigenvalues), the
    metric-scaled widths of the posterior change by about δ/2 in log units, and with them
    the step size that the narrowest direction allows and the trajectory length that the
    widest one needs. Below δ = 0.1 that is a few per cent of ε, against a length scale of
    0.9 in log ε for the GP over the default two-decade box: a change the GP cannot resolve.
    The rewards observed under the old metric then still describe the new one, and a reset
    would throw away the epoch's bandit learning for nothing (with the window's noise
    weight, every first update of the logistic regressions measured moved M⁻¹ by less than
    0.1: docs/warmup.md, "A metric update that keeps the GP")."""
    return bool(change < KEEP_GP)


def next_epoch(state: MetricState, count: bool = True) -> MetricState:
    """After a metric update: an empty window and, unless the update kept the bandit's GP
    (`count` False, `keeps_rewards`), the epoch counted: epochs are the bandit's restarts."""
    return state._replace(halves=(None, None), epoch=state.epoch + int(count))


def to_json(state: MetricState) -> dict:
    def sums(w):
        return None if w is None else {"n": int(w[0]), "mean": w[1].tolist(),
                                       "m2": w[2].tolist()}

    return {"epoch": int(state.epoch), "halves": [sums(w) for w in state.halves],
            "metric_kind": state.metric_kind, "dense_knob": bool(state.dense_knob),
            "metric_weight": state.weight}


def from_json(d: dict) -> MetricState:
    def sums(w):
        return None if w is None else (int(w["n"]), np.asarray(w["mean"], float),
                                       np.asarray(w["m2"], float))

    # a state saved before the halves holds one Welford sum of every chain: no weight then
    halves = d.get("halves") or [d.get("welford"), None]
    return MetricState(epoch=int(d.get("epoch", 0)), halves=tuple(sums(w) for w in halves),
                       metric_kind=d.get("metric_kind"),
                       dense_knob=bool(d.get("dense_knob", False)),
                       weight=d.get("metric_weight"))


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
