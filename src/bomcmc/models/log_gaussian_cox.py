"""Log-Gaussian Cox process on an N × N grid (Møller, Syversveen & Waagepetersen 1998;
Girolami & Calderhead 2011 §8; Wang, Mohamed & de Freitas 2013 §5.2):

    y_a ~ Poisson(m exp(x_a)),  m = 1/N²
    x ~ N(μ1, Σ),  Σ_ab = σ² exp(−|s_a − s_b| / (βN)),  s_a on the unit square, spacing 1/(N−1)

with σ² = 1.91, β = 1/33, μ = log 126 − σ²/2. The distances are on the unit square, as in
Girolami & Calderhead's code; that is the covariance that generated their data
(docs/rmhmc.md).

Coordinates. Σ = Q Λ Qᵀ is diagonalised once, and the sampled vector is the field in Σ's
eigenbasis, v = Qᵀ(x − μ1). The prior is then N(0, Λ), and the likelihood needs x = μ + Qv and
its gradient Qᵀ(y − m eˣ): two (D, D) matrix-vector products per gradient, where a Cholesky
factor would need the same two triangular solves. The rotation is orthogonal, so HMC with
an identity mass, and NUTS with an identity metric, make the same moves as in x.

Girolami & Calderhead's metric, the expected Fisher information G = Σ⁻¹ + diag(m e^{μ + Σ_aa}),
is constant and shares Σ's eigenvectors; in v it is the diagonal 1/λ + m e^{μ + σ²}. RMHMC on
this posterior is therefore HMC with that diagonal mass, at HMC's cost. Σ has no cheaper
exact structure: the Euclidean exponential kernel is not separable (no Kronecker factors), and
at this range (122 grid spacings) its circulant embedding is indefinite even on a 512 × 512
torus, so FFTs cannot apply Σ^{±1/2} exactly (docs/rmhmc.md has the measurements).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..data import Data
from ..datasets import log_gaussian_cox as lgcp_data
from ..errors import BomcmcError
from ..posterior import Posterior

SIGMA2 = 1.91
BETA = 1.0 / 33.0
MEAN = float(np.log(126.0) - SIGMA2 / 2.0)
DATA_SIDE = 64  # the side of Girolami & Calderhead's data set
MAX_SIDE = 80  # Σ is diagonalised densely: O(N⁶) time, N⁴ numbers
MU_PRIOR_SD = 10.0  # the paper samples μ and states no prior; this one is weak (μ ≈ 3.9)


class LGCPFacts(NamedTuple):
    """What the model knows beyond its density (`Posterior.facts`): the grid side, the
    simulated field x and counts y (N, N), Σ's eigenvalues Λ and eigenvectors Q (the sampled
    v = Qᵀ(x − μ1)), and the shift m e^{μ + σ²} of the Fisher metric's diagonal."""

    n: int
    true_x: np.ndarray
    counts: np.ndarray
    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    fisher_shift: float


def covariance(n: int, sigma2: float = SIGMA2, beta: float = BETA) -> np.ndarray:
    """Σ (n², n²) over the grid's cells in row-major order (cell (i, j) is i·n + j)."""
    s = np.arange(n) / (n - 1.0)
    ii, jj = np.meshgrid(s, s, indexing="ij")
    pts = np.stack([ii.ravel(), jj.ravel()], axis=1)
    dist = np.sqrt(((pts[:, None, :] - pts[None, :, :]) ** 2).sum(-1))
    return sigma2 * np.exp(-dist / (beta * n))


def fisher_shift(n: int, sigma2: float = SIGMA2, mean: float = MEAN) -> float:
    """m e^{μ + Σ_aa}, the diagonal Girolami & Calderhead add to Σ⁻¹ in their metric. (The
    prior expectation of a count's Fisher information m eˣ is m e^{μ + Σ_aa/2}; any constant
    positive-definite metric leaves the sampler exact, and theirs is kept for comparison.)"""
    return float(np.exp(mean + sigma2) / n**2)


def simulate(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(counts, x) drawn from the model on an n × n grid."""
    rng = np.random.default_rng(seed)
    chol = np.linalg.cholesky(covariance(n) + 1e-10 * np.eye(n * n))
    x = MEAN + chol @ rng.standard_normal(n * n)
    counts = rng.poisson(np.exp(x) / n**2)
    return counts.reshape(n, n).astype(float), x.reshape(n, n)


def _data(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(counts, true x): Girolami & Calderhead's for n = 64, a draw from the model (seed n)
    otherwise."""
    if not 2 <= n <= MAX_SIDE:
        raise BomcmcError(f"lgcp-{n}: the grid's side must be between 2 and {MAX_SIDE} (the "
                          f"prior is diagonalised as a dense (N², N²) matrix)")
    return lgcp_data() if n == DATA_SIDE else simulate(n, seed=n)


def _eigen_data(Q: np.ndarray, counts: np.ndarray) -> Data:
    """The eigenvectors (D, D) and the counts (N, N) as the compiled program's inputs: a
    constant Q of N⁴ numbers (134 MB at N = 64) would be folded into every executable. Their
    leading axes differ, so a run that splits data rows over devices refuses them."""
    return Data(Q=Q, counts=counts)


def _counts_loglik(x, counts: np.ndarray):
    """log Poisson(y_a | m e^{x_a}) per cell, (n, n), for the field x (n²,)."""
    n = counts.shape[0]
    rate = jnp.exp(x) / n**2
    y = jnp.asarray(counts.ravel(), x.dtype)
    return (y * jnp.log(rate) - rate - jax.scipy.special.gammaln(y + 1.0)).reshape(n, n)


def log_gaussian_cox(n: int = DATA_SIDE) -> Posterior:
    """The posterior of the latent field on an n × n grid: Girolami & Calderhead's data for
    n = 64, a draw from the model (seed n) otherwise. Sampled: `v` (n²,), the field in the
    prior's eigenbasis; reported: `x` (n, n)."""
    n = int(n)
    counts, true_x = _data(n)
    lam, Q = np.linalg.eigh(covariance(n))
    lam = np.maximum(lam, lam.max() * 1e-14)  # Σ is positive definite; guard the rounding
    shift = fisher_shift(n)
    metric = 1.0 / lam + shift  # G in v: diagonal and constant
    data = _eigen_data(Q, counts)
    m = 1.0 / n**2

    def field(v):
        return MEAN + data["Q"].astype(v.dtype) @ v

    def logdensity(params):
        v = params["v"]
        x = field(v)
        y = data["counts"].astype(v.dtype).ravel()
        return (jnp.dot(y, x) - m * jnp.sum(jnp.exp(x))
                - 0.5 * jnp.sum(v**2 / jnp.asarray(lam, v.dtype)))

    def initializer(key):  # Stan's U(−2, 2), in the metric's units: v_k = u_k / √G_k
        u = jax.random.uniform(key, (n * n,), minval=-2.0, maxval=2.0)
        return {"v": u / jnp.sqrt(jnp.asarray(metric, u.dtype))}

    def constrain(params):
        return {"x": field(params["v"]).reshape(n, n)}

    def log_likelihood(params):
        return {"y": _counts_loglik(field(params["v"]), counts)}

    return Posterior(
        logdensity_fn=logdensity,
        init_position={"v": np.zeros(n * n)},  # x = μ1, Girolami & Calderhead's start
        name=f"lgcp-{n}",
        initializer=initializer,
        description=f"log-Gaussian Cox process on a {n} × {n} grid, latent field "
                    f"({n * n} dimensions)",
        constrain=constrain,
        log_likelihood_fn=log_likelihood,
        observed_data={"y": counts},
        metric_fn=metric,
        facts=LGCPFacts(n=n, true_x=true_x, counts=counts, eigenvalues=lam, eigenvectors=Q,
                        fisher_shift=shift),
        data=data,
    )


def log_gaussian_cox_hyper(n: int = DATA_SIDE, centred: bool = True) -> Posterior:
    """The joint posterior of the field, σ² and μ on an n × n grid, with β fixed at 1/33 (the
    data as in `log_gaussian_cox`). Wang, Mohamed & de Freitas (2013) sample the field with
    its hyperparameters; β is held here because every move of β changes Σ's eigenvectors, an
    O(N⁶) factorisation (docs/rmhmc.md). With K = Σ/σ² = Q Λ Qᵀ:

        v | σ² ~ N(0, σ² Λ),  x = μ1 + Qv,
        σ² ~ Gamma(shape 2, scale 1/2) (Girolami & Calderhead's prior), sampled as log σ²,
        μ ~ N(0, MU_PRIOR_SD²).

    `centred=True` samples v, as the paper samples x: the field's scale moves with σ, a funnel
    when the counts say little about σ². `centred=False` samples z = v / (σ √Λ) instead, which
    is N(0, I) a priori whatever σ² (Papaspiliopoulos, Roberts & Sköld 2007); the posterior is
    the same, and `constrain` reports the same x, σ² and μ from either.

    The constant metric is Girolami & Calderhead's for v at the simulation's σ² (for z: the
    same, times σ²Λ), the expected information D/2 of log σ² plus its prior's, and D m e^{μ+σ²}
    for μ; any constant metric leaves RMHMC exact."""
    n = int(n)
    counts, true_x = _data(n)
    lam, Q = np.linalg.eigh(covariance(n, sigma2=1.0))
    lam = np.maximum(lam, lam.max() * 1e-14)
    d = n * n
    shift = fisher_shift(n)
    metric = {"log_sigma2": d / 2.0 + 2.0 * SIGMA2, "mu": d * shift + MU_PRIOR_SD**-2,
              "v": 1.0 / (SIGMA2 * lam) + shift}
    if not centred:
        metric["v"] = metric["v"] * SIGMA2 * lam
    data = _eigen_data(Q, counts)
    key = "v" if centred else "z"

    def eigen_field(params):  # v = Qᵀ(x − μ1), from the sampled block
        u = params[key]
        if centred:
            return u
        return jnp.exp(0.5 * params["log_sigma2"]) * jnp.sqrt(jnp.asarray(lam, u.dtype)) * u

    def field(params):
        v = eigen_field(params)
        return params["mu"] + data["Q"].astype(v.dtype) @ v

    def logdensity(params):
        u, s, mu = params[key], params["log_sigma2"], params["mu"]
        x = field(params)
        if centred:
            prior_u = -0.5 * jnp.exp(-s) * jnp.sum(u**2 / jnp.asarray(lam, u.dtype)) - 0.5 * d * s
        else:
            prior_u = -0.5 * jnp.sum(u**2)
        prior_s = 2.0 * s - 2.0 * jnp.exp(s)  # Gamma(2, 1/2) on e^s, with the Jacobian e^s
        prior_mu = -0.5 * (mu / MU_PRIOR_SD) ** 2
        y = data["counts"].astype(u.dtype).ravel()
        return (jnp.dot(y, x) - jnp.sum(jnp.exp(x)) / d
                + prior_u + prior_s + prior_mu)

    def initializer(key_):  # Stan's U(−2, 2), the field's in the metric's units
        u = jax.random.uniform(key_, (d + 2,), minval=-2.0, maxval=2.0)
        return {"log_sigma2": u[0], "mu": u[1],
                key: u[2:] / jnp.sqrt(jnp.asarray(metric["v"], u.dtype))}

    def constrain(params):
        return {"x": field(params).reshape(n, n), "sigma2": jnp.exp(params["log_sigma2"]),
                "mu": params["mu"]}

    return Posterior(
        logdensity_fn=logdensity,
        init_position={"log_sigma2": 0.0, "mu": 0.0, key: np.zeros(d)},  # σ² at its prior mean
        name=f"lgcp-hyper-{n}" if centred else f"lgcp-hyper-nc-{n}",
        initializer=initializer,
        description=f"log-Gaussian Cox process on a {n} × {n} grid, the latent field with σ² "
                    f"and μ ({d + 2} dimensions; β fixed; "
                    f"{'centred' if centred else 'non-centred'})",
        constrain=constrain,
        log_likelihood_fn=lambda params: {"y": _counts_loglik(field(params), counts)},
        observed_data={"y": counts},
        metric_fn=np.concatenate([[metric["log_sigma2"]], [metric["mu"]], metric["v"]]),
        facts=LGCPFacts(n=n, true_x=true_x, counts=counts, eigenvalues=SIGMA2 * lam,
                        eigenvectors=Q, fisher_shift=shift),
        data=data,
    )
