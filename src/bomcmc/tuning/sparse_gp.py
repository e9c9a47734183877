"""A sparse GP over an approximately-linearly-dependent dictionary: the bandit's reward model
when adaptation never ends (Engel, Mannor & Meir 2004, the kernel RLS; Engel 2005).

The same prior and noise as `gp.GaussianProcess` (zero mean, ARD squared-exponential kernel
with sf², noise σ_n²), approximated so that the cost of an observation and of a prediction
depends on the size m of a dictionary D, not on the number of observations.

**The ALD test** (Engel, Mannor & Meir 2004). For a new input x, with k = k(D, x),

    a = K_D⁻¹ k,   δ = k(x, x) − kᵀ a

δ is the squared distance in feature space from φ(x) to the span of the dictionary's φ. If
δ > ν, x joins D; else φ(x) ≈ Σ_j a_j φ(d_j), hence f(x) ≈ aᵀ f_D, and D is unchanged.
The dictionary's points are at least √ν apart in feature space, so in a bounded box D stays
finite however many points are seen (Engel, Mannor & Meir 2004).

**The recursive inverse** (ibid., the KRLS recursion). Adding x with (a, δ) to D:

    K_D'⁻¹ = (1/δ) [[δ K_D⁻¹ + a aᵀ, −a], [−aᵀ, 1]]

O(m²), with no refactorisation.

**The posterior.** Each observation r_t = aₜᵀ f_D + ε_t (aₜ = e_j for a dictionary point,
the ALD coefficients otherwise; earlier aₜ keep their meaning as D grows, with a zero
appended). With P = Σ_t aₜ aₜᵀ and b = Σ_t aₜ r_t, the posterior of f_D is Gaussian with

    Σ_D = (K_D⁻¹ + P/σ_n²)⁻¹,   μ_D = Σ_D b / σ_n²

and at any x, with a(x) = K_D⁻¹ k(D, x), f(x) | f_D has mean a(x)ᵀ f_D and variance
δ(x) = sf² − k(D, x)ᵀ a(x), so

    μ(x)  = k(D, x)ᵀ w,                 w = K_D⁻¹ μ_D
    σ²(x) = sf² − k(D, x)ᵀ C k(D, x),   C = K_D⁻¹ − K_D⁻¹ Σ_D K_D⁻¹

the form of Engel's (2005) sparse GP predictor: a vector and a matrix on D. P and b are
sufficient statistics: a repeat of an input adds to them, as the full GP merges repeats.

**With ν = 0** every distinct input joins D (its δ > 0), every aₜ is some e_j, P is the
diagonal of counts and b of sums, and the posterior is the full GP's exactly (to rounding).

`X` and `counts` are the dictionary and the observations attributed to each of its points
(the point of largest k(d_j, x)): the incumbent is sought among D, and `copy` with new length
scales re-sparsifies from these attributed sums and counts, an approximation where ν > 0
(exact at ν = 0).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular

from .gp import NOISE_VAR, SIGNAL_VAR, find_close, se_ard_kernel

# ν, in the kernel's units (sf² = 25, σ_n² = 0.1): docs/tuning.md, "The sparse GP"
ALD_THRESHOLD = 1e-3


class SparseGaussianProcess:
    """The posterior of a zero-mean GP on an ALD dictionary (module docstring): the
    interface the bandit uses of `gp.GaussianProcess`."""

    def __init__(self, lengthscales, signal_var: float = SIGNAL_VAR,
                 noise_var: float = NOISE_VAR, merge_tol: float = 1e-9,
                 threshold: float = ALD_THRESHOLD):
        self.lengthscales = np.asarray(lengthscales, dtype=float)
        if self.lengthscales.ndim != 1 or not np.all(self.lengthscales > 0):
            raise ValueError("lengthscales must be a vector of positive numbers")
        if not threshold >= 0:
            raise ValueError(f"the ALD threshold must be >= 0, got {threshold!r}")
        self.signal_var, self.noise_var = float(signal_var), float(noise_var)
        self.merge_tol, self.threshold = float(merge_tol), float(threshold)
        d = self.lengthscales.size
        self.X = np.zeros((0, d))  # the dictionary D
        self.K_inv = np.zeros((0, 0))  # K_D⁻¹, updated recursively
        self.P = np.zeros((0, 0))  # Σ_t aₜ aₜᵀ
        self.b = np.zeros(0)  # Σ_t aₜ r_t
        self.sums = np.zeros(0)  # rewards attributed to each dictionary point
        self.counts = np.zeros(0, dtype=np.int64)  # ... and their number
        self._post = None
        self._last: int | None = None

    @property
    def dim(self) -> int:
        return self.lengthscales.size

    @property
    def n_obs(self) -> int:
        """Observations so far, repeats counted."""
        return int(self.counts.sum())

    @property
    def y(self) -> np.ndarray:
        """The mean reward attributed to each dictionary point."""
        return self.sums / self.counts

    # -- observations ------------------------------------------------------------------------
    def add(self, x, r: float, count: int = 1) -> None:
        """Add `count` observations of x whose rewards sum to r (one observation r by
        default): into D if x fails the ALD test, else onto its coefficients a."""
        x = np.asarray(x, dtype=float).reshape(self.dim)
        r = float(r)
        if not np.isfinite(r) or not np.all(np.isfinite(x)):
            raise ValueError("GP observations must be finite")
        j = self._find(x)
        if j is not None:
            self.P[j, j] += count
            self.b[j] += r
        else:
            k = self._k(x)
            a = self.K_inv @ k
            delta = self.signal_var - float(k @ a)
            if delta > self.threshold or not len(self.X):
                j = self._extend(x, a, delta)
                self.P[j, j] += count
                self.b[j] += r
            else:
                self.P += count * np.outer(a, a)
                self.b += r * a
                j = int(np.argmax(k))
        self.sums[j] += r
        self.counts[j] += count
        self._last = j
        self._post = None

    def _k(self, x) -> np.ndarray:
        return se_ard_kernel(self.X, x[None], self.lengthscales, self.signal_var)[:, 0]

    def _extend(self, x, a, delta: float) -> int:
        """x into D: K_D⁻¹ by the recursive update (Engel, Mannor & Meir 2004); P, b
        and the attributions padded with zeros."""
        m = len(self.X)
        inv = np.empty((m + 1, m + 1))
        inv[:m, :m] = self.K_inv * delta + np.outer(a, a)
        inv[:m, m] = inv[m, :m] = -a
        inv[m, m] = 1.0
        self.K_inv = inv / delta
        self.X = np.vstack([self.X, x])
        self.P = np.pad(self.P, ((0, 1), (0, 1)))
        self.b = np.append(self.b, 0.0)
        self.sums = np.append(self.sums, 0.0)
        self.counts = np.append(self.counts, 0)
        return m

    def _find(self, x) -> int | None:
        """The dictionary point within merge_tol of x (the last one used tried first)."""
        return find_close(self.X, x, self.merge_tol * self.lengthscales, self._last)

    def copy(self, lengthscales=None) -> "SparseGaussianProcess":
        """The same GP; with other length scales, a new dictionary built from the attributed
        sums and counts (module docstring)."""
        same = lengthscales is None or np.array_equal(np.asarray(lengthscales, float),
                                                      self.lengthscales)
        other = SparseGaussianProcess(self.lengthscales if same else lengthscales,
                                      self.signal_var, self.noise_var, self.merge_tol,
                                      self.threshold)
        if same:
            for name in ("X", "K_inv", "P", "b", "sums", "counts"):
                setattr(other, name, getattr(self, name).copy())
        else:
            for x, s, c in zip(self.X, self.sums, self.counts):
                if c > 0:
                    other.add(x, s, int(c))
            other._last = None
        return other

    def added(self, x, r: float) -> "SparseGaussianProcess":
        """A new GP with one more observation, this one left as it was."""
        other = self.copy()
        other._last = self._last
        other.add(x, r)
        return other

    # -- the posterior -----------------------------------------------------------------------
    def _posterior(self):
        """w = K_D⁻¹ μ_D and C = K_D⁻¹ − K_D⁻¹ Σ_D K_D⁻¹ (module docstring), kept until the
        next observation."""
        if self._post is None:
            prec = self.K_inv + self.P / self.noise_var  # Σ_D⁻¹
            prec = 0.5 * (prec + prec.T)
            chol = cho_factor(prec, lower=True, check_finite=False)
            mu = cho_solve(chol, self.b / self.noise_var, check_finite=False)
            v = solve_triangular(chol[0], self.K_inv, lower=True, check_finite=False)
            self._post = (self.K_inv @ mu, self.K_inv - v.T @ v)
        return self._post

    def mean(self, Xs) -> np.ndarray:
        """The posterior mean μ at the rows of Xs."""
        Xs = np.atleast_2d(np.asarray(Xs, dtype=float))
        if not len(self.X):
            return np.zeros(len(Xs))
        w, _ = self._posterior()
        return se_ard_kernel(Xs, self.X, self.lengthscales, self.signal_var) @ w

    def predict(self, Xs) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean μ and latent variance σ² at the rows of Xs."""
        Xs = np.atleast_2d(np.asarray(Xs, dtype=float))
        if not len(self.X):
            return np.zeros(len(Xs)), np.full(len(Xs), self.signal_var)
        w, C = self._posterior()
        ks = se_ard_kernel(Xs, self.X, self.lengthscales, self.signal_var)
        var = self.signal_var - np.einsum("ij,jk,ik->i", ks, C, ks)
        return ks @ w, np.maximum(var, 0.0)

    def point_predictor(self, grad: bool = False):
        """x ↦ (μ, σ²), or with grad=True ↦ (μ, σ², ∇μ, ∇σ²), at one point: `predict`
        without its per-call overhead, for DIRECT and the polish. With ê = k(D, x)/sf²,
        μ = sf² wᵀê, σ² = sf² − sf⁴ êᵀCê, ∂ê_j/∂x_d = ê_j (d_jd − x_d)/ℓ_d²."""
        sf2 = self.signal_var
        if not len(self.X):
            zero = np.zeros(self.dim)
            return (lambda x: (0.0, sf2, zero, zero)) if grad else (lambda x: (0.0, sf2))
        w, C = self._posterior()
        w, C = sf2 * w, (sf2 * sf2) * C
        X, inv_var = self.X, 1.0 / self.lengthscales**2
        half_prec = -0.5 * inv_var

        def factors(x):
            return np.exp(((X - x) ** 2) @ half_prec)

        if not grad:
            def predict(x):
                e = factors(x)
                return float(w @ e), max(sf2 - float(e @ (C @ e)), 0.0)

            return predict

        def predict_grad(x):
            e = factors(x)
            ce = C @ e
            de = (e[:, None] * (X - x)) * inv_var  # ∂ê, (m, d)
            return (float(w @ e), max(sf2 - float(e @ ce), 0.0), w @ de, -2.0 * (ce @ de))

        return predict_grad

    # -- state -------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The dictionary, K_D⁻¹ as updated (not recomputed: a resumed run continues with
        the same numbers), P, b and the attributions; JSON floats round-trip exactly."""
        return {"kind": "sparse", "threshold": self.threshold, "X": self.X.tolist(),
                "K_inv": self.K_inv.tolist(), "P": self.P.tolist(), "b": self.b.tolist(),
                "sums": self.sums.tolist(), "counts": self.counts.tolist()}

    def load_state_dict(self, state: dict) -> None:
        if state.get("kind") != "sparse":  # a full GP's observations: re-sparsified
            X = np.asarray(state["X"], dtype=float).reshape(-1, self.dim)
            fresh = SparseGaussianProcess(self.lengthscales, self.signal_var, self.noise_var,
                                          self.merge_tol, self.threshold)
            for x, s, c in zip(X, state["sums"], state["counts"]):
                fresh.add(x, s, int(c))
            state = fresh.state_dict()
        self.threshold = float(state["threshold"])
        m = len(state["X"])
        self.X = np.asarray(state["X"], dtype=float).reshape(m, self.dim)
        self.K_inv = np.asarray(state["K_inv"], dtype=float).reshape(m, m)
        self.P = np.asarray(state["P"], dtype=float).reshape(m, m)
        self.b = np.asarray(state["b"], dtype=float)
        self.sums = np.asarray(state["sums"], dtype=float)
        self.counts = np.asarray(state["counts"], dtype=np.int64)
        self._post = None
        self._last = None
