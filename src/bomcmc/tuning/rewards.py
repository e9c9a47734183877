"""Rewards: one number per super-transition (chunk) that the bandit maximises.

Every reward is `f(chunk) -> float`, where chunk is the driver's view of the chunk
({"phase", "positions": (chains, n, d), "info": sampler info with arrays (chains, n)}) plus
the knobs the bandit ran it with: "num_steps" (L, the maximum trajectory length it chose)
and "step_size" (ε). A non-finite value means "no reward": the bandit never feeds it to the GP.

- "esjd" (default): Rao-Blackwellised expected squared jump distance per transition, / √L
  (Wang, Mohamed & de Freitas 2013 §3; the estimator of the authors' `ahmc.m`)
- "ess": ESS per gradient evaluation, ArviZ bulk ESS over the chunk (Wang, Mohamed & de
  Freitas 2013 §5)
- "acf": the robust auto-correlation-area objective h(X) with l_min (Mahendran 2011 §3.1.1;
  `objectives.c` of the authors' code for Mahendran et al. 2012)
- "energy_acf": h of the energy series (Mahendran et al. 2012), the IM tuners' default
- "energy_jump": the variance of the energy's jump per move, a lower-noise reward for the
  IM tuners (docs/spins.md, "The reward's noise against its signal")
- any user callable f(chunk) -> float
"""

from __future__ import annotations

from typing import Callable

import numpy as np


def _info(chunk: dict, name: str) -> np.ndarray:
    info = chunk["info"]
    value = info[name] if isinstance(info, dict) else getattr(info, name)
    return np.asarray(value, dtype=float)


def any_divergence(chunk: dict) -> bool:
    """Whether any transition of any chain of the chunk diverged (False when the kernel
    records no `diverging` field, or the chunk has no info). The one reading of divergences
    for the ESJD reward, the settling rule and the ceiling on ε."""
    info = chunk.get("info")
    if info is None:
        return False
    flags = info.get("diverging") if isinstance(info, dict) else getattr(info, "diverging",
                                                                           None)
    return flags is not None and bool(np.any(np.asarray(flags)))


def esjd(chunk: dict, divergence_rule: bool = True) -> float:
    """r = (1/(chains·n)) Σ_chains Σ_t a_t ||x*_t − x_t||² / √L   (Wang, Mohamed & de
    Freitas 2013 §3; the Rao-Blackwellised estimator and the division by √L of the authors'
    `ahmc.m`).

    The authors' code sums over the block; here the sum is divided by the number of
    transitions (for readability; it does not change which γ wins) and averaged over
    chains. A non-finite contribution counts as 0 (the authors' code, as republished with
    NaN guards, skips NaNs in the sum). A super-transition in which any transition diverged
    scores 0: a divergence means the integrator is unstable somewhere the chains go, which
    biases the draws (Betancourt 2017), so such a setting is worth nothing however far its
    other transitions jumped (docs/tuning.md, "Robust defaults"). `divergence_rule=False`
    scores such a block as the authors' code does, by its jumps (a divergent transition's
    own is ~0, its acceptance being ~0): docs/rmhmc.md compares the two."""
    jumps = _info(chunk, "esjd")  # a·||x* − x||², recorded by the HMC kernel
    if jumps.size == 0:
        return float("nan")
    if divergence_rule and any_divergence(chunk):
        return 0.0
    jumps = np.where(np.isfinite(jumps), jumps, 0.0)
    return float(jumps.mean() / np.sqrt(float(chunk["num_steps"])))


def ess_per_grad(chunk: dict, stat: str = "min", method: str = "bulk") -> float:
    """min (or median / mean) over coordinates of ArviZ's ESS of the chunk's draws, divided
    by the chunk's gradient evaluations summed over chains (Wang, Mohamed & de Freitas 2013
    §5: ESS/L; the minimum is the paper's headline)."""
    import arviz as az

    pos = np.asarray(chunk["positions"], dtype=float)  # (chains, n, d)
    n_grad = float(_info(chunk, "n_grad").sum())
    if pos.shape[1] < 4 or n_grad <= 0:  # ArviZ needs a few draws per chain
        return float("nan")
    ess = np.asarray(az.ess(az.convert_to_dataset(pos), method=method)["x"]).ravel()
    ess = ess[np.isfinite(ess)]
    if ess.size == 0:
        return float("nan")
    summary = {"min": np.min, "median": np.median, "mean": np.mean}[stat]
    return float(summary(ess) / n_grad)


def _abs_acf_mean(x: np.ndarray, max_lag: int) -> np.ndarray:
    """(1/K) Σ_{ℓ=1..K} |ρ̂_ℓ| per chain for x of shape (chains, m, d), K = min(max_lag, m−1),
    ρ̂_ℓ = Σ_t (x_t − x̄)·(x_{t+ℓ} − x̄) / ((m−ℓ) v̂), v̂ = (1/m) Σ_t ||x_t − x̄||²,
    clipped to [−1, 1] (Mahendran 2011 §3.1.1; `objectives.c` of the authors' code for
    Mahendran et al. 2012). A constant chain has |ρ̂| = 1."""
    m = x.shape[1]
    k = min(max_lag, m - 1)
    y = x - x.mean(axis=1, keepdims=True)
    f = np.fft.rfft(y, n=2 * m, axis=1)
    acov = np.fft.irfft(np.abs(f) ** 2, n=2 * m, axis=1)[:, : k + 1].sum(axis=-1)  # (chains, k+1)
    v = acov[:, :1] / m
    lags = np.arange(1, k + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = acov[:, 1:] / ((m - lags) * v)
    rho = np.where(v > 1e-300, np.clip(rho, -1.0, 1.0), 1.0)
    return np.abs(rho).mean(axis=1)


def acf_area(chunk: dict, l_min: int = 26, max_lag: int = 100,
             series: Callable | None = None) -> float:
    """h(X) = (1/(n − l_min + 1)) Σ_{i=l_min..n} a(E_i),  a(E) = 1 − (1/K) Σ_ℓ |ρ̂_ℓ(E)|,
    E_i the last i states of the chunk (Mahendran 2011 §3.1.1; the authors' code for
    Mahendran et al. 2012, `objectives.c`, sums over the suffixes of length ≥ 26 and caps K
    at 100). Averaged over chains.

    The states are the positions (ρ̂ uses the inner product over coordinates, Mahendran
    2011 §3.1) or `series(positions)`, e.g. one coordinate. Needs n ≥ l_min draws per chain;
    shorter chunks give NaN (no reward)."""
    x = np.asarray(chunk["positions"], dtype=float)
    if series is not None:
        x = np.asarray(series(x), dtype=float)
    if x.ndim == 2:
        x = x[..., None]
    n = x.shape[1]
    l_min = max(int(l_min), 2)
    if n < l_min:
        return float("nan")
    a = [1.0 - _abs_acf_mean(x[:, n - i:], max_lag) for i in range(l_min, n + 1)]
    return float(np.mean(a))


def energy_acf(chunk: dict, l_min: int = 26, max_lag: int = 100) -> float:
    """h of the energy series (Mahendran et al. 2012; the authors' code,
    `objectives.c:compute_robust_avg_abs_acf_est`): `acf_area` of the log density −βE after
    each transition, which has the energy's auto-correlations (ρ̂ is invariant under
    E ↦ −βE)."""
    lp = np.asarray(chunk["lp"], dtype=float)
    return acf_area({"positions": lp[..., None]}, l_min=l_min, max_lag=max_lag)


def energy_jump(chunk: dict) -> float:
    """J = the variance of the jumps lp_{t+1} − lp_t within each chain, averaged over chains;
    lp = −βE the log density after each move. The energy's squared jump per move, in units
    of (βE)², less the block's mean jump (a drift, as in burn-in, is not mixing).

    In a stationary chain E[J] = 2σ²(1 − ρ₁) up to O(1/n²), σ² the target's variance of lp,
    which no setting of the sampler changes, and ρ₁ the energy's lag-1 auto-correlation; so J
    ranks settings as 1 − ρ₁ does, without the block's own mean and variance that h needs and
    that a block shorter than the energy's correlation time estimates poorly. It has units:
    the IM tuners' GP sees it standardised. A chain that never moved scores 0; a block of
    one move gives NaN (no reward)."""
    lp = np.asarray(chunk["lp"], dtype=float)
    if lp.ndim == 1:
        lp = lp[None, :]
    if lp.shape[1] < 2:
        return float("nan")
    return float(np.mean(np.var(np.diff(lp, axis=1), axis=1)))


REWARDS: dict[str, Callable] = {"esjd": esjd, "ess": ess_per_grad, "acf": acf_area,
                                "energy_acf": energy_acf, "energy_jump": energy_jump}


def get_reward(reward, **options) -> Callable[[dict], float]:
    """A built-in reward by name (with its options) or the user's callable f(chunk)."""
    if callable(reward):
        return reward
    try:
        fn = REWARDS[reward]
    except KeyError:
        raise ValueError(f"unknown reward {reward!r} (available: {', '.join(REWARDS)}, "
                         "or a callable f(chunk) -> float)") from None
    return (lambda chunk: fn(chunk, **options)) if options else fn
