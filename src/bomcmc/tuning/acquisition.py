"""Acquisition functions and their maximisation over the search box.

- annealed UCB: u(γ) = s·μ(γ) + p_i·√β·σ(γ)   (Wang 2012 §3.3 ū; Wang, Mohamed & de Freitas
  2013 §3, with s and p_i as the authors' code computes them, `acq.m` and `update_model.m`)
- expected improvement over the best value y*, with margin ξ:
      EI(γ) = (μ − y* − ξ) Φ(Z) + σ φ(Z),  Z = (μ − y* − ξ)/σ;  EI = max(μ − y* − ξ, 0) at σ = 0
  (Mahendran 2011 §3.2; ξ = 0.01 from the authors' code for Mahendran et al. 2012)
- maximisation: DIRECT (Jones et al. 1993's original, unbiased variant: the authors' MATLAB
  used `direct.m` of Finkel 2003) with at most 200 evaluations and 50 iterations, then a bounded
  L-BFGS-B polish from DIRECT's point, at most 100 iterations (the authors' code for Wang,
  Mohamed & de Freitas 2013: DIRECT then `minConf_TMP`). The polish is kept only if it
  improves on DIRECT. Both compare the acquisition rounded to SIGNIFICANT_DIGITS: its last
  bits differ from CPU to CPU (BLAS kernels, vector units), and DIRECT turns a difference in
  the 15th digit into another rectangle, hence another proposal (docs/tuning.md, "The same
  proposals on every CPU").
- maximisation over a box with integer axes and one continuous axis (`maximize_grid`, AHMC's
  (log ε, L)): the acquisition at every integer value (or GRID_INTEGERS of them, evenly
  spread, where there are more) times GRID_POINTS values of the continuous axis, evaluated in
  one vectorised call, then a bounded Brent search (scipy's `minimize_scalar`) along the
  continuous axis between the best point's grid neighbours. It searches the integer values
  the run will use (DIRECT searches a continuous L that is rounded afterwards) and costs a
  fraction of DIRECT's 200 one-point calls (docs/tuning.md, "A grid search for AHMC").
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from scipy.optimize import direct, minimize, minimize_scalar
from scipy.special import ndtr

SIGNIFICANT_DIGITS = 9  # of the acquisition values `maximize` compares
GRID_POINTS = 17  # the continuous axis's grid in `maximize_grid`, ends included
GRID_INTEGERS = 16  # at most this many values of each integer axis


def norm_cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def norm_pdf(z: float) -> float:
    return math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)


def ucb(mean, std, scale: float = 1.0, weight: float = 1.0, beta: float = 1.0):
    """u = s·μ + p·√β·σ; only the mean is rescaled (as in the authors' code for Wang,
    Mohamed & de Freitas 2013). Scalars or arrays."""
    return scale * mean + weight * math.sqrt(beta) * std


def ucb_slope(scale: float, weight: float, beta: float) -> tuple[float, float]:
    """(∂u/∂μ, ∂u/∂σ) of `ucb`."""
    return scale, weight * math.sqrt(beta)


def improvement(gain: float, sd: float) -> float:
    """EI at one point from its expected gain g = μ − y* − ξ and sd σ:
    gΦ(Z) + σφ(Z), Z = g/σ; max(g, 0) at σ = 0 (Mahendran 2011 §3.2)."""
    if sd <= 0.0:
        return max(gain, 0.0)
    z = gain / sd
    return gain * norm_cdf(z) + sd * norm_pdf(z)


def improvement_slope(gain: float, sd: float, scale: float = 1.0) -> tuple[float, float]:
    """(∂EI/∂μ, ∂EI/∂σ) of `improvement` when g = scale·μ − const: (scale Φ(Z), φ(Z))."""
    if sd <= 0.0:
        return (scale if gain > 0 else 0.0), 0.0
    z = gain / sd
    return scale * norm_cdf(z), norm_pdf(z)


def improvement_array(gain, sd) -> np.ndarray:
    """`improvement` elementwise over arrays of g and σ."""
    gain, sd = np.asarray(gain, dtype=float), np.asarray(sd, dtype=float)
    pos = sd > 0.0
    z = np.where(pos, gain / np.where(pos, sd, 1.0), 0.0)
    ei = gain * ndtr(z) + sd * np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    return np.where(pos, ei, np.maximum(gain, 0.0))


def expected_improvement(mean, std, best: float, xi: float = 0.01):
    """EI over the best value y* with margin ξ, elementwise over arrays of μ and σ."""
    return improvement_array(np.asarray(mean, dtype=float) - best - xi, std)


def maximize(fn: Callable[[np.ndarray], float], lower, upper, maxfun: int = 200,
             maxiter: int = 50, polish: bool = True, polish_maxiter: int = 100,
             value_and_grad: Callable | None = None) -> tuple[np.ndarray, float]:
    """argmax of fn over the box [lower, upper]: DIRECT, then L-BFGS-B (as the authors' code
    for Wang, Mohamed & de Freitas 2013 does).

    `value_and_grad(x) -> (fn(x), ∇fn(x))`, when given, is the polish's objective (analytic
    gradient; without it L-BFGS-B differences fn). Dimensions with lower == upper are held
    fixed. Returns (x, fn(x))."""
    lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    free = upper > lower
    if not free.any():
        return lower.copy(), float(fn(lower))
    if free.all():  # no embedding: DIRECT's points go straight to fn
        embed = _identity
    else:
        x_full = lower.copy()

        def embed(z):
            x = x_full.copy()
            x[free] = z
            return x

    def neg_exact(z):
        v = float(fn(embed(z)))
        return -v if math.isfinite(v) else math.inf

    def neg(z):
        return rounded(neg_exact(z))

    bounds = list(zip(lower[free], upper[free]))
    res = direct(neg, bounds, maxfun=maxfun, maxiter=maxiter, locally_biased=False)
    z, val = np.asarray(res.x, dtype=float), float(res.fun)
    if polish:
        if value_and_grad is None:  # L-BFGS-B's finite differences need every digit
            objective, jac = neg_exact, None
        else:
            def objective(z):
                v, g = value_and_grad(embed(z))
                if not math.isfinite(v) or not np.all(np.isfinite(g)):
                    return math.inf, np.zeros_like(z)
                return -float(v), -np.asarray(g, dtype=float)[free]

            jac = True
        pol = minimize(objective, z, method="L-BFGS-B", jac=jac, bounds=bounds,
                       options={"maxiter": polish_maxiter})
        if np.isfinite(pol.fun) and pol.fun < val:
            z_pol = np.clip(pol.x, lower[free], upper[free])
            val_pol = neg(z_pol)  # fn's own value at the (clipped) point
            if val_pol < val:
                z, val = z_pol, val_pol
    return embed(z), -val


def rounded(v: float, digits: int = SIGNIFICANT_DIGITS) -> float:
    """v to `digits` significant digits (0, ±inf and NaN unchanged)."""
    if v == 0.0 or not math.isfinite(v):
        return v
    return float(f"{v:.{digits - 1}e}")


def grid_axes(lower, upper, integer, points: int = GRID_POINTS,
              integers: int = GRID_INTEGERS) -> list[np.ndarray]:
    """The values `maximize_grid` tries on each axis: every integer in [⌈lo⌉, ⌊hi⌋] (at most
    `integers` of them, evenly spread and rounded; the nearest integer to the middle where
    the range holds none), `points` evenly spaced values of a continuous axis (one where
    lo == hi)."""
    axes = []
    for lo, hi, is_int in zip(lower, upper, integer):
        if is_int:
            a, b = math.ceil(lo), math.floor(hi)
            if a > b:
                vals = np.array([float(math.floor(0.5 * (lo + hi) + 0.5))])
            elif b - a + 1 <= integers:
                vals = np.arange(a, b + 1, dtype=float)
            else:
                vals = np.unique(np.floor(np.linspace(a, b, integers) + 0.5))
        else:
            centres = (np.arange(points) + 0.5) / points  # cell centres
            vals = np.array([float(lo)]) if hi <= lo else lo + (hi - lo) * centres
        axes.append(vals)
    return axes


def maximize_grid(fn_batch: Callable[[np.ndarray], np.ndarray],
                  fn: Callable[[np.ndarray], float], lower, upper, integer,
                  polish: bool = True, points: int = GRID_POINTS,
                  integers: int = GRID_INTEGERS) -> tuple[np.ndarray, float]:
    """argmax over the box [lower, upper] whose axes are integer where `integer` says and
    continuous on exactly one axis: `fn_batch` (rows of points ↦ values) on the product of
    `grid_axes`, then a bounded Brent search of `fn` (one point ↦ value) along the
    continuous axis between the best grid point's neighbours, kept if it improves. The first
    of tied maxima wins. Returns (x, fn(x)); integer coordinates are integers."""
    lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    integer = np.asarray(integer, dtype=bool)
    if (~integer).sum() != 1:
        raise ValueError("maximize_grid needs exactly one continuous axis")
    axes = grid_axes(lower, upper, integer, points, integers)
    mesh = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, len(axes))
    vals = np.asarray(fn_batch(mesh), dtype=float)
    vals = np.where(np.isfinite(vals), vals, -np.inf)
    best = int(np.argmax(vals))
    x, val = mesh[best].copy(), float(vals[best])
    c = int(np.flatnonzero(~integer)[0])
    grid = axes[c]
    if polish and grid.size > 1:
        k = int(np.searchsorted(grid, x[c]))
        a = grid[k - 1] if k > 0 else lower[c]
        b = grid[k + 1] if k + 1 < grid.size else upper[c]
        probe = x.copy()

        def neg(t):
            probe[c] = t
            v = float(fn(probe))
            return -v if math.isfinite(v) else math.inf

        res = minimize_scalar(neg, bounds=(a, b), method="bounded")
        if math.isfinite(res.fun) and -float(res.fun) > val:
            x[c], val = float(res.x), -float(res.fun)
    return x, val


def _identity(z):
    return z
