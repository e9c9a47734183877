"""The ESS of Girolami & Calderhead (2011), which Wang, Mohamed & de Freitas (2013) report.

Girolami & Calderhead (2011) compute

    ESS = N / (1 + 2 Σ_k ρ_k)

with the sum over "the K monotone sample autocorrelations", the initial monotone sequence
estimator of Geyer (1992) applied to the positive autocorrelations: ρ_1, ρ_2, ... are summed
while they stay positive, each replaced by the smallest of those before it (ρ'_k =
min(ρ'_{k−1}, ρ_k)), so that the sequence summed is positive and non-increasing. Wang,
Mohamed & de Freitas (2013) use this estimator for the ESS of their Fig. 2 (one chain per
run; box plots over runs).

Two differences from ArviZ's `ess(method="mean")` (Vehtari et al. 2021), which applies
Geyer's initial monotone sequence to the sums of *pairs* of lags, Γ_m = ρ_{2m} + ρ_{2m+1},
and combines chains through the between-chain variance:

- a chain with negative lag-1 autocorrelation (antithetic, ESS > N) stops the sum at once:
  this estimator is at most N (exactly N when ρ_1 ≤ 0), where ArviZ's exceeds N;
- with positive autocorrelations that decay slowly the two agree to within their sampling
  noise (tests/test_diagnostics_monotone_ess.py: AR(1) chains).

`monotone_ess` is per chain (the paper's: each run is one chain). `pooled_monotone_ess`
pools C chains as the multi-chain form of the same estimator: the autocorrelations averaged
over chains (each chain about its own mean), ESS = C·N / (1 + 2 Σ_k ρ̄'_k).
"""

from __future__ import annotations

import numpy as np

from ..errors import BomcmcError


def autocorrelations(x) -> np.ndarray:
    """ρ_0 = 1, ρ_1, ..., ρ_{N−1} of each chain (the last axis), by FFT: the biased estimator
    γ_k = (1/N) Σ_t (x_t − x̄)(x_{t+k} − x̄), ρ_k = γ_k / γ_0. A constant chain has ρ_k = 0
    for k ≥ 1."""
    x = np.asarray(x, dtype=float)
    n = x.shape[-1]
    centred = x - x.mean(axis=-1, keepdims=True)
    size = 1 << int(2 * n - 1).bit_length()
    f = np.fft.rfft(centred, n=size, axis=-1)
    acov = np.fft.irfft(f * np.conj(f), n=size, axis=-1)[..., :n] / n
    var = acov[..., :1]
    rho = np.divide(acov, var, out=np.zeros_like(acov), where=var > 0)
    rho[..., 0] = 1.0
    return rho


def monotone_sum(rho) -> float:
    """Σ_k ρ'_k over the initial positive, non-increasing sequence of ρ_1, ρ_2, ... (ρ'_k =
    min(ρ'_{k−1}, ρ_k), stopping at the first ρ_k ≤ 0)."""
    rho = np.asarray(rho, dtype=float)[1:]
    stop = np.flatnonzero(~(rho > 0))
    positive = rho[: stop[0] if stop.size else rho.size]
    return float(np.sum(np.minimum.accumulate(positive))) if positive.size else 0.0


def _check(x, ndim: int, shape: str) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim != ndim or x.shape[-1] < 4:
        raise BomcmcError(f"monotone ESS takes {shape} with at least 4 draws, got shape "
                          f"{x.shape}")
    if not np.all(np.isfinite(x)):
        raise BomcmcError("monotone ESS: the draws are not all finite")
    return x


def monotone_ess(x) -> float:
    """Girolami & Calderhead's (2011) ESS of one chain of N draws (a 1-D array):
    N / (1 + 2 Σ_k ρ'_k), the monotone sum of its positive autocorrelations (module
    docstring). At most N."""
    x = _check(x, 1, "one chain (N,)")
    return x.shape[0] / (1.0 + 2.0 * monotone_sum(autocorrelations(x)))


def pooled_monotone_ess(x) -> float:
    """The same estimator over C chains of N draws ((C, N)): C·N / (1 + 2 Σ_k ρ̄'_k), ρ̄ the
    chains' autocorrelations averaged over chains."""
    x = _check(x, 2, "chains (C, N)")
    rho = autocorrelations(x).mean(axis=0)
    return x.size / (1.0 + 2.0 * monotone_sum(rho))


__all__ = ["autocorrelations", "monotone_ess", "monotone_sum", "pooled_monotone_ess"]
