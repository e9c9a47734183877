"""Choo's variance-of-means measure of sampling efficiency (Choo 2000 §5.3–5.4).

Many short, independent chains, each started from an equilibrium state and run for the same
budget of computation, each give the mean of every quantity of interest over its N_s kept
draws (one per super-transition). The variance of those means about the true posterior mean,

    ρ_q = (1/N_m) Σ_i (m̄_q,i − ⟨q⟩)²                                      (Choo 2000, eq. 5.5)

is T_q/N_s · Var[q] with T_q the inefficiency factor (eq. 5.6): lower is better, and
ρ_q / Var[q] = T_q / N_s compares quantities and samplers. Unlike ESS from one long chain it
needs no autocorrelation estimate, and it sees a sampler that mixes well in most of the
posterior but sticks in a rare region, when the starts cover that region. It is a second
efficiency measure beside ESS per gradient, for any sampler that can be started from given
states.

- `variance_of_means`: ρ per quantity, with its standard error (eq. 5.7). With `strata`
  (each chain's start inside a region G or not) and `p` (the posterior mass of G), the two
  strata are weighted (1 − p, p) (eqs. 5.10–5.12), so G can be oversampled.
- `combined`: g = (Π ρ_q)^{1/Q}, the geometric mean over the chosen quantities (eq. 5.8;
  Choo leaves out the output bias).
- `bootstrap_interval`: a percentile interval (90 % from 1000 resamples, Choo §5.3.3) of any
  statistic of the chains' means, resampling chains within each stratum (§5.4.3);
  `ratio_interval` the same for the ratio of a statistic between two samplers, their chains
  resampled independently, or paired by start state (§5.7).
- `equilibrium_starts`: start states from a long master run, spaced apart, optionally
  stratified (§5.4.1–5.4.2).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np


class Rho(NamedTuple):
    rho: np.ndarray  # (Q,) variance of means about the truth
    se: np.ndarray  # (Q,) its standard error (Choo 2000, eqs. 5.7 and 5.12)


def _check(means, truth):
    means = np.asarray(means, float)
    if means.ndim == 1:
        means = means[:, None]
    if means.ndim != 2 or means.shape[0] < 2:
        raise ValueError(f"means must be (chains >= 2, quantities), got shape {means.shape}")
    truth = np.broadcast_to(np.asarray(truth, float), means.shape[1:])
    if not (np.all(np.isfinite(means)) and np.all(np.isfinite(truth))):
        raise ValueError("means and truth must be finite")
    return means, truth


def _strata(strata, n, p):
    if strata is None:
        return None
    strata = np.asarray(strata, bool)
    if strata.shape != (n,):
        raise ValueError(f"strata must be one bool per chain ({n}), got shape {strata.shape}")
    if p is None or not 0 < p < 1:
        raise ValueError(f"stratified chains need p, the posterior mass of the region, in "
                         f"(0, 1); got {p!r}")
    if strata.sum() < 2 or (~strata).sum() < 2:
        raise ValueError("each stratum needs at least 2 chains")
    return strata


def variance_of_means(means, truth, strata=None, p: float | None = None) -> Rho:
    """ρ and its standard error per quantity from `means` (chains, Q), each chain's mean,
    about `truth` (Q,) (Choo 2000, eqs. 5.5 and 5.7; stratified, eqs. 5.10–5.12)."""
    means, truth = _check(means, truth)
    return _rho(means, truth, _strata(strata, len(means), p), p)


def _rho(means, truth, strata, p) -> Rho:
    """`variance_of_means` on inputs already checked (the bootstraps' resamples)."""
    sq = (means - truth) ** 2
    if strata is None:
        return Rho(sq.mean(axis=0), sq.std(axis=0, ddof=1) / np.sqrt(len(sq)))
    parts = [(1 - p, sq[~strata]), (p, sq[strata])]
    rho = sum(w * s.mean(axis=0) for w, s in parts)
    var = sum(w**2 * s.var(axis=0, ddof=1) / len(s) for w, s in parts)
    return Rho(rho, np.sqrt(var))


def combined(rho, which=None) -> float:
    """g = (Π_q ρ_q)^{1/Q} over the quantities `which` (indices; all by default)."""
    rho = np.asarray(rho, float)
    rho = rho if which is None else rho[np.asarray(which)]
    if np.any(rho <= 0):
        raise ValueError("the geometric mean needs positive variances of means")
    return float(np.exp(np.mean(np.log(rho))))


def _resample(rng, n, strata):
    if strata is None:
        return rng.integers(0, n, n)
    idx = []
    for member in (False, True):
        pool = np.flatnonzero(strata == member)
        idx.append(pool[rng.integers(0, len(pool), len(pool))])
    return np.concatenate(idx)


def _percentile(values, level):
    lo = 100 * (1 - level) / 2
    return float(np.percentile(values, lo)), float(np.percentile(values, 100 - lo))


def bootstrap_interval(means, truth, statistic: Callable[[Rho], float] | None = None,
                       strata=None, p: float | None = None, level: float = 0.9,
                       resamples: int = 1000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of `statistic(variance_of_means(...))` (default: g over
    all quantities), chains resampled with replacement within each stratum (Choo 2000
    §5.3.3 and §5.4.3)."""
    means, truth = _check(means, truth)
    strata = _strata(strata, len(means), p)
    statistic = statistic or (lambda r: combined(r.rho))
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(int(resamples)):
        idx = _resample(rng, len(means), strata)
        values.append(statistic(_rho(means[idx], truth,
                                     None if strata is None else strata[idx], p)))
    return _percentile(values, level)


def ratio_interval(means_a, means_b, truth, statistic: Callable[[Rho], float] | None = None,
                   strata_a=None, strata_b=None, p: float | None = None, level: float = 0.9,
                   resamples: int = 1000, seed: int = 0,
                   paired: bool = False) -> tuple[float, tuple[float, float]]:
    """(statistic of A / statistic of B, its percentile bootstrap interval), the chains of
    A and B resampled independently (each within its strata), or with `paired` (chain i of
    both started from the same state) by the same draw of start states (Choo 2000 §5.7)."""
    means_a, truth = _check(means_a, truth)
    means_b, _ = _check(means_b, truth)
    sa = _strata(strata_a, len(means_a), p)
    sb = _strata(strata_b, len(means_b), p)
    if paired and (len(means_a) != len(means_b) or not np.array_equal(
            np.asarray(strata_a), np.asarray(strata_b))):
        raise ValueError("paired chains need the same starts (and strata) for A and B")
    statistic = statistic or (lambda r: combined(r.rho))

    def stat(m, s):
        return statistic(_rho(m, truth, s, p))

    point = stat(means_a, sa) / stat(means_b, sb)
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(int(resamples)):
        ia = _resample(rng, len(means_a), sa)
        ib = ia if paired else _resample(rng, len(means_b), sb)
        values.append(stat(means_a[ia], None if sa is None else sa[ia])
                      / stat(means_b[ib], None if sb is None else sb[ib]))
    return point, _percentile(values, level)


def equilibrium_starts(master, n: int, separation: int, in_region=None,
                       n_in_region: int = 0, seed: int = 0) -> np.ndarray:
    """Indices of start states in a master run `master` (draws, ...) after its burn-in:
    `n` states `separation` draws apart (several inefficiency factors, Choo 2000 Table 5.8);
    with `in_region` (a bool per draw) and `n_in_region` > 0, the last `n_in_region` of the
    n are drawn uniformly from the draws in the region and the others from outside it, each
    at least `separation` from the regular grid (§5.4.2)."""
    total = len(master)
    if separation < 1 or n < 1:
        raise ValueError("n and separation must be positive")
    n_out = n - int(n_in_region)
    grid = np.arange(n_out) * separation + separation // 2
    if grid.size and grid[-1] >= total:
        raise ValueError(f"the master run ({total} draws) is too short for {n_out} starts "
                         f"{separation} apart")
    if not n_in_region:
        return grid
    in_region = np.asarray(in_region, bool)
    grid = grid[~in_region[grid]][:n_out]
    far = np.ones(total, bool)
    for g in grid:
        far[max(g - separation, 0):g + separation] = False
    rng = np.random.default_rng(seed)
    picks = []
    for member, count in ((False, n_out - len(grid)), (True, int(n_in_region))):
        pool = np.flatnonzero(far & (in_region == member))
        if len(pool) < count:
            raise ValueError(f"only {len(pool)} draws {'in' if member else 'outside'} the "
                             f"region away from the grid; {count} needed")
        picks.append(np.sort(rng.choice(pool, count, replace=False)))
    return np.concatenate([grid, picks[0], picks[1]]).astype(int)
