"""Gaussian-process regression with fixed hyperparameters: the bandit's reward model.

Zero mean, ARD squared-exponential kernel, Gaussian noise (Wang 2012 §3.1; the authors' code
for Wang, Mohamed & de Freitas 2013, docs/references.md):

    k(γ, γ') = sf² exp(−½ (γ − γ')ᵀ Σ⁻¹ (γ − γ')),   Σ = diag(ℓ₁², …, ℓ_d²)
    μ(γ)  = kᵀ (K + N)⁻¹ r
    σ²(γ) = sf² − kᵀ (K + N)⁻¹ k

with sf² = 25 and noise variance 0.1 in the authors' code; the length scales are
the caller's (the bandit uses 0.2 × the range of each search dimension). Nothing is learned.

Repeated inputs are merged, exactly. m observations r₁…r_m at the same γ with i.i.d. noise
N(0, σ_n²) have the likelihood ∏ N(r_j; f(γ), σ_n²) ∝ N(r̄; f(γ), σ_n²/m) as a function of
f(γ), so the posterior is the same as one observation r̄ with noise variance σ_n²/m: the
GP keeps one row per distinct point with its running sum and count, N = diag(σ_n²/m_j).
A bandit that keeps its γ for many chunks (p_i → 0) therefore costs O(distinct³), not
O(chunks³), and gives exactly what the authors' code (one row per observation) gives.

Points closer than `merge_tol` length scales in every dimension count as the same point.

`standardize=True` fits the GP to (r̄_j − m)/s, m and s the mean and standard deviation of the
distinct inputs' mean rewards (scikit-learn's `normalize_y`): the prior then has the
observations' mean and spread whatever the reward's units, and μ is in those standardised
units (μ = 0 is the observed mean). m and s follow from the observations, so nothing new is
saved.
"""

from __future__ import annotations


import numpy as np
from scipy.linalg import cho_factor, cho_solve, lapack, solve_triangular
from scipy.spatial.distance import cdist

SIGNAL_VAR = 25.0  # sf² (the authors' code for Wang, Mohamed & de Freitas 2013: sf = 5)
NOISE_VAR = 0.1  # σ_n² (the same code)


def find_close(X: np.ndarray, x, tol: np.ndarray, last: int | None) -> int | None:
    """The index of the first row of X within `tol` of x in every coordinate, or None. Row
    `last` (the point added last) is tried first: a bandit that keeps its γ repeats it."""
    if last is not None and np.all(np.abs(X[last] - x) <= tol):
        return last
    if len(X):
        close = np.flatnonzero(np.all(np.abs(X - x) <= tol, axis=1))
        if close.size:
            return int(close[0])
    return None


def se_ard_kernel(a: np.ndarray, b: np.ndarray, lengthscales: np.ndarray,
                  signal_var: float = SIGNAL_VAR) -> np.ndarray:
    """k(a_i, b_j) = sf² exp(−½ Σ_d ((a_id − b_jd)/ℓ_d)²)   (Wang 2012 §3.1)."""
    sq = cdist(np.atleast_2d(a) / lengthscales, np.atleast_2d(b) / lengthscales, "sqeuclidean")
    return signal_var * np.exp(-0.5 * sq)


class GaussianProcess:
    """The posterior of a zero-mean GP given (merged) noisy observations."""

    def __init__(self, lengthscales, signal_var: float = SIGNAL_VAR,
                 noise_var: float = NOISE_VAR, merge_tol: float = 1e-9,
                 standardize: bool = False):
        self.lengthscales = np.asarray(lengthscales, dtype=float)
        if self.lengthscales.ndim != 1 or not np.all(self.lengthscales > 0):
            raise ValueError("lengthscales must be a vector of positive numbers")
        self.signal_var, self.noise_var = float(signal_var), float(noise_var)
        self.merge_tol = float(merge_tol)
        self.standardize = bool(standardize)
        d = self.lengthscales.size
        self.X = np.zeros((0, d))  # distinct inputs
        self.sums = np.zeros(0)  # Σ r at each distinct input
        self.counts = np.zeros(0, dtype=np.int64)  # m_j observations at each
        self._chol = self._parts = None
        self._last: int | None = None  # index of the input added last (add's fast path)

    @property
    def dim(self) -> int:
        return self.lengthscales.size

    @property
    def n_obs(self) -> int:
        """Observations so far, repeated ones counted (the n of β in the GP-UCB of Srinivas
        et al. 2010)."""
        return int(self.counts.sum())

    @property
    def y(self) -> np.ndarray:
        """r̄_j: the mean reward at each distinct input."""
        return self.sums / self.counts

    @property
    def target(self) -> np.ndarray:
        """What the GP is fitted to: r̄, or (r̄ − m)/s with `standardize` (s = 1 while the
        rewards do not spread)."""
        y = self.y
        if not self.standardize:
            return y
        sd = float(y.std())
        return (y - y.mean()) / (sd if sd > 0 else 1.0)

    def add(self, x, r: float) -> None:
        """Add one observation; a repeat of a known input updates its sum and count."""
        x = np.asarray(x, dtype=float).reshape(self.dim)
        r = float(r)
        if not np.isfinite(r) or not np.all(np.isfinite(x)):
            raise ValueError("GP observations must be finite")
        j = self._find(x)
        if j is None:
            self.X = np.vstack([self.X, x])
            self.sums = np.append(self.sums, r)
            self.counts = np.append(self.counts, 1)
            j = len(self.X) - 1
        else:
            self.sums[j] += r
            self.counts[j] += 1
        self._last = j
        self._chol = self._parts = None

    def _find(self, x) -> int | None:
        """The index of the stored input within merge_tol of x, or None (`find_close`)."""
        return find_close(self.X, x, self.merge_tol * self.lengthscales, self._last)

    def _factor(self):
        """Cholesky of K + diag(σ_n²/m_j) and α = (K + N)⁻¹ r̄ (Wang 2012 §3.1)."""
        if self._chol is None:
            K = se_ard_kernel(self.X, self.X, self.lengthscales, self.signal_var)
            K[np.diag_indices_from(K)] += self.noise_var / self.counts
            chol = cho_factor(K, lower=True, check_finite=False)
            self._chol = (chol, cho_solve(chol, self.target, check_finite=False))
        return self._chol

    def copy(self, lengthscales=None) -> "GaussianProcess":
        """The same observations in a new GP, with other length scales if given (a grown
        search box) and the same variances."""
        other = GaussianProcess(self.lengthscales if lengthscales is None else lengthscales,
                                self.signal_var, self.noise_var, self.merge_tol,
                                self.standardize)
        other.X, other.sums, other.counts = self.X.copy(), self.sums.copy(), self.counts.copy()
        return other

    def added(self, x, r: float) -> "GaussianProcess":
        """A new GP with one more observation (`add`), this one left as it was: the same
        numbers as `add` in place (the last input added is tried first by both)."""
        other = self.copy()
        other._last = self._last
        other.add(x, r)
        return other

    def mean(self, Xs) -> np.ndarray:
        """The posterior mean μ alone at the rows of Xs: k(Xs, X) α, without the O(n²m)
        triangular solve that the variance needs (the incumbent asks for μ at all n inputs
        after every step)."""
        Xs = np.atleast_2d(np.asarray(Xs, dtype=float))
        if not len(self.X):
            return np.zeros(len(Xs))
        _, alpha = self._factor()
        return se_ard_kernel(Xs, self.X, self.lengthscales, self.signal_var) @ alpha

    def predict(self, Xs) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean μ and latent variance σ² at the rows of Xs (Wang 2012 §3.1)."""
        Xs = np.atleast_2d(np.asarray(Xs, dtype=float))
        if not len(self.X):  # the prior
            return np.zeros(len(Xs)), np.full(len(Xs), self.signal_var)
        (c, lower), alpha = self._factor()
        ks = se_ard_kernel(Xs, self.X, self.lengthscales, self.signal_var)  # (m, n)
        mean = ks @ alpha
        # v = L⁻¹ k, so kᵀ (K + N)⁻¹ k = ||v||²
        v = solve_triangular(c, ks.T, lower=lower, check_finite=False)
        var = self.signal_var - np.sum(v * v, axis=0)
        return mean, np.maximum(var, 0.0)

    def _predictor_parts(self):
        """W = sf²·[αᵀ; L⁻¹] (point_predictor), kept until the next observation."""
        if self._parts is None:
            (c, lower), alpha = self._factor()
            l_inv, info = lapack.dtrtri(c, lower=int(lower))  # L⁻¹ (triangular inverse)
            if info != 0:
                raise np.linalg.LinAlgError(f"GP Cholesky factor is singular (dtrtri {info})")
            if lower:
                l_inv = np.tril(l_inv)  # dtrtri leaves the other triangle as it found it
            else:
                l_inv = np.triu(l_inv).T
            self._parts = self.signal_var * np.vstack([alpha[None, :], l_inv])
        return self._parts

    def point_predictor(self, grad: bool = False):
        """x ↦ (μ(x), σ²(x)) at one point, or with grad=True ↦ (μ, σ², ∇μ, ∇σ²): `predict`
        with its per-call overhead taken out, for DIRECT and the polish (some 200 calls per
        proposal). The kernel is a product over dimensions,

            k_j = sf² Π_d e_d(x_d)_j,   e_d(t)_j = exp(−½ ((X_jd − t)/ℓ_d)²),

        and DIRECT's points share coordinates (it trisects the box), so each e_d(t) is
        computed once per coordinate value t and cached for this predictor's life. With
        W = [αᵀ; L⁻¹], W k = (μ, v) and σ² = sf² − ‖v‖² in one product (Wang 2012 §3.1);
        ∂k_j/∂x_d = k_j (X_jd − x_d)/ℓ_d², ∇μ = αᵀ∂k, ∇σ² = −2 vᵀ L⁻¹ ∂k.
        """
        sf2 = self.signal_var
        if not len(self.X):  # the prior
            zero = np.zeros(self.dim)
            return (lambda x: (0.0, sf2, zero, zero)) if grad else (lambda x: (0.0, sf2))
        W = self._predictor_parts()  # sf²·[αᵀ; L⁻¹]: W ê = (μ, v) for ê = k / sf²
        cols = [np.ascontiguousarray(self.X[:, d]) for d in range(self.dim)]
        half_prec = [-0.5 / ell**2 for ell in self.lengthscales.tolist()]
        caches = [{} for _ in cols]

        def factors(x):
            """ê = Π_d e_d(x_d), from the caches."""
            e = None
            for t, col, h, cache in zip(x.tolist(), cols, half_prec, caches):
                f = cache.get(t)
                if f is None:
                    f = cache[t] = np.exp(h * (col - t) ** 2)
                e = f if e is None else e * f
            return e

        if not grad:
            def predict(x):
                w = W @ factors(x)
                mean = float(w[0])
                return mean, max(sf2 - (float(w @ w) - mean * mean), 0.0)  # ‖v‖² = ‖w‖² − μ²

            return predict

        inv_var = 1.0 / self.lengthscales**2
        X = self.X

        def predict_grad(x):
            e = factors(x)
            w = W @ e
            wd = W @ ((e[:, None] * (X - x)) * inv_var)  # W ∂ê, (n+1, d)
            v = w[1:]
            return float(w[0]), max(sf2 - float(v @ v), 0.0), wd[0], -2.0 * (v @ wd[1:])

        return predict_grad

    def state_dict(self) -> dict:
        return {"X": self.X.tolist(), "sums": self.sums.tolist(), "counts": self.counts.tolist()}

    def load_state_dict(self, state: dict) -> None:
        self.X = np.asarray(state["X"], dtype=float).reshape(-1, self.dim)
        self.sums = np.asarray(state["sums"], dtype=float)
        self.counts = np.asarray(state["counts"], dtype=np.int64)
        self._chol = self._parts = None
        self._last = None
