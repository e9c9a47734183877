"""The randomised policy of Bayesian-optimised MCMC: SIR on the exponentiated GP mean.

Mahendran 2011 §3.3, Alg. 2 (strategy 0 of `IM_ego.c:build_sir_policy` in the authors' code
for Mahendran et al. 2012, docs/references.md): after the adaptation phase,

  1. generate N candidate settings θ_1..θ_N over the search box (a grid or a Latin hypercube),
  2. weight them w_j ∝ exp(μ(θ_j)), μ the GP posterior mean of the objective,
  3. normalise the weights,
  4. resample M settings with replacement from {(θ_j, w_j)}.

The sampling phase then draws one of the M settings uniformly at every transition: a mixture
of M fixed MCMC kernels (`kernels/hmc_mixture.py`). Here θ = (log ε, L) for HMC; ε is
searched on a log scale and L is an integer.

Pure functions on numpy arrays; the randomness comes from numpy Generators the caller seeds,
so a policy is a deterministic function of (GP, box, options, seed).
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numpy as np

from .base import SAMPLING

CANDIDATES = ("grid", "lhs")
RESAMPLING = ("systematic", "multinomial")
GRID_EPS = 100  # log-ε values of the grid (the authors' code: 100 values of the continuous knob)
LHS_POINTS = 10_000  # LHS candidates by default (the grid's size for L ∈ {1..100})


def _integer_range(lo: float, hi: float) -> tuple[int, int]:
    a, b = math.ceil(lo), math.floor(hi)
    if not (1 <= a <= b):
        raise ValueError(f"the L range [{lo}, {hi}] holds no integer >= 1")
    return a, b


def grid_candidates(lower, upper, n_eps: int = GRID_EPS) -> tuple[np.ndarray, np.ndarray]:
    """Candidates on a grid (Mahendran 2011 §4.2.1: "the cross-product of 100 evenly-spaced
    points within G with the elements of L"; strategy 0 of the authors' code): `n_eps` log-ε
    values evenly spaced over [lower[0], upper[0]] (ends included) × every integer L in
    [lower[1], upper[1]]. Returns (log_eps (N,), L (N,) int64), N = n_eps × #L."""
    n_eps = int(n_eps)
    if n_eps < 1:
        raise ValueError(f"n_eps must be >= 1, got {n_eps}")
    a, b = _integer_range(lower[1], upper[1])
    log_eps = np.linspace(float(lower[0]), float(upper[0]), n_eps)
    steps = np.arange(a, b + 1, dtype=np.int64)
    ee, ll = np.meshgrid(log_eps, steps, indexing="ij")
    return ee.ravel(), ll.ravel()


def lhs_candidates(lower, upper, n: int = LHS_POINTS, rng=None) -> tuple[np.ndarray, np.ndarray]:
    """`n` candidates from a Latin hypercube over the box (Mahendran 2011, Alg. 2 step 1, "using
    ... Latin hypercubes"): u ~ LHS on [0, 1)², log ε = lo + u₁ (hi − lo), and
    L = a + ⌊u₂ (b − a + 1)⌋ for the integers a..b of the L range, so every integer L gets
    its share of the strata. `rng` seeds scipy's LatinHypercube (an int or a Generator).
    Returns (log_eps (n,), L (n,) int64)."""
    from scipy.stats import qmc

    n = int(n)
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    a, b = _integer_range(lower[1], upper[1])
    u = qmc.LatinHypercube(d=2, rng=rng).random(n)
    log_eps = float(lower[0]) + u[:, 0] * (float(upper[0]) - float(lower[0]))
    steps = np.clip(a + np.floor(u[:, 1] * (b - a + 1)).astype(np.int64), a, b)
    return log_eps, steps


def sir_weights(mu, temperature: float = 1.0) -> np.ndarray:
    """Normalised w_j = exp(μ_j / T) / Σ_k exp(μ_k / T) (Mahendran 2011, Alg. 2 steps 2–3,
    T = 1; the authors' code for Mahendran et al. 2012 uses exp(10 μ), T = 0.1). Computed
    stably: the largest μ is subtracted before exponentiating, so no weight overflows and the
    largest is exactly 1 before normalising. Non-finite μ_j get weight 0; all non-finite is
    an error."""
    mu = np.asarray(mu, dtype=float)
    t = float(temperature)
    if not (t > 0 and math.isfinite(t)):
        raise ValueError(f"temperature must be a positive finite number, got {temperature}")
    ok = np.isfinite(mu)
    if not ok.any():
        raise ValueError("no candidate has a finite GP mean")
    z = np.where(ok, (mu - mu[ok].max()) / t, -np.inf)
    w = np.exp(z)
    return w / w.sum()


def resample(weights, m: int, rng: np.random.Generator,
             method: str = "systematic") -> np.ndarray:
    """Indices of `m` draws with replacement from the discrete measure {(j, w_j)} (Mahendran
    2011, Alg. 2 step 4). "multinomial": m independent draws; "systematic": Kitagawa 1996's
    (Mahendran 2011's ref. [13]; strategy 0 of the authors' code), one uniform u, points
    (u + i)/m, so every index j appears ⌊m w_j⌋ or ⌈m w_j⌉ times. Returns an int64 array of
    shape (m,)."""
    w = np.asarray(weights, dtype=float)
    m = int(m)
    if m < 1:
        raise ValueError(f"m must be >= 1, got {m}")
    if w.ndim != 1 or w.size == 0 or not np.all(np.isfinite(w)) or np.any(w < 0) \
            or not w.sum() > 0:
        raise ValueError("weights must be a non-empty vector of non-negative finite numbers")
    w = w / w.sum()
    if method == "multinomial":
        return rng.choice(w.size, size=m, replace=True, p=w).astype(np.int64)
    if method == "systematic":
        points = (rng.random() + np.arange(m)) / m
        cdf = np.cumsum(w)
        cdf[-1] = 1.0  # round-off: every point falls inside
        return np.minimum(np.searchsorted(cdf, points, side="right"), w.size - 1).astype(np.int64)
    raise ValueError(f"method must be one of {', '.join(RESAMPLING)}, got {method!r}")


def build_policy(mean_fn: Callable[[np.ndarray], np.ndarray], lower, upper, m: int,
                 rng: np.random.Generator, candidates: str = "grid",
                 n_candidates: int | None = None, temperature: float = 1.0,
                 method: str = "systematic") -> dict:
    """Mahendran 2011, Alg. 2 end to end: candidates over the (log ε, L) box `lower`..`upper`,
    weights exp(μ/T) from `mean_fn` (rows (log ε, L) -> μ, the GP posterior mean), and M
    resampled settings. `n_candidates` is the grid's number of log-ε values (default 100)
    or the number of LHS points (default 10⁴). `rng` draws the LHS and the resampling.

    Returns {"eps": [M] floats, "L": [M] ints, "weight": [M] the normalised SIR weight of
    each drawn candidate, "n_candidates": N, "ess": 1/Σw² of the N weights,
    "n_unique": distinct settings among the M}."""
    if candidates == "grid":
        log_eps, steps = grid_candidates(lower, upper, GRID_EPS if n_candidates is None
                                         else n_candidates)
    elif candidates == "lhs":
        log_eps, steps = lhs_candidates(lower, upper, LHS_POINTS if n_candidates is None
                                        else n_candidates, rng=rng)
    else:
        raise ValueError(f"candidates must be one of {', '.join(CANDIDATES)}, got {candidates!r}")
    X = np.column_stack([log_eps, steps.astype(float)])
    w = sir_weights(np.asarray(mean_fn(X), dtype=float), temperature)
    idx = resample(w, m, rng, method)
    eps, L = np.exp(log_eps[idx]), steps[idx]
    return {"eps": eps.tolist(), "L": [int(v) for v in L], "weight": w[idx].tolist(),
            "n_candidates": int(w.size), "ess": float(1.0 / np.sum(w * w)),
            "n_unique": int(np.unique(idx).size)}


class Phases(NamedTuple):
    """Where a two-phase tuner is (Mahendran 2011, Algs 1–2): the warm-up transitions seen,
    and the frozen policy once built (None while it adapts)."""

    transitions: int = 0
    policy: dict | None = None


def phase_step(phases: Phases, warmup: int, knobs, chunk: dict,
               adapt: Callable, build: Callable, apply: Callable) -> tuple[Phases, object]:
    """One chunk of a two-phase tuner: adapt (`adapt(knobs, chunk) -> knobs`, one BO step)
    through the `warmup` transitions, build the policy once when they end (`build() ->
    policy`), then leave the knobs as they are; `apply(knobs, policy)` puts the policy in
    the knobs."""
    if phases.policy is not None:  # sampling phase: the policy is frozen
        return phases, knobs
    if int(chunk.get("phase", 0)) == SAMPLING:  # (not reached when warm-up ran fully)
        policy = build()
        return phases._replace(policy=policy), apply(knobs, policy)
    knobs = adapt(knobs, chunk)
    seen = phases.transitions + int(np.shape(chunk["positions"])[1])
    phases = phases._replace(transitions=seen)
    if phases.transitions >= warmup:
        policy = build()
        return phases._replace(policy=policy), apply(knobs, policy)
    return phases, knobs


def phases_to_json(phases: Phases) -> dict:
    return {"transitions": int(phases.transitions),
            "policy": None if phases.policy is None else dict(phases.policy)}


def phases_from_json(d: dict) -> Phases:
    return Phases(int(d.get("transitions", 0)),
                  None if d.get("policy") is None else dict(d["policy"]))
