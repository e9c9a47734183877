"""Constrained Boltzmann machines: spin systems at a fixed Hamming distance from a reference.

Mahendran 2011 ch. 4 and Mahendran et al. 2012 (the Intracluster-Move experiments; Hamze &
de Freitas 2010): states s ∈ {−1, +1}^N with energy

    E(s) = −Σ_{(i,j)} J_ij s_i s_j − Σ_i h_i s_i

and target π(s) ∝ exp(−β E(s)) on the states with d_H(s, c) = n (c all +1 by default: zero
magnetisation is n = N/2). The couplings are stored as neighbour lists: `neighbors` (N, D)
indices padded with N (a dummy spin that is always 0) and `couplings` (N, D), symmetric
(J_ij appears in i's list and in j's), so an effective field h^eff_i = h_i + Σ_j J_ij s_j is a
gather of D values and a flip updates D fields.

A position is the spin vector as floats (±1.0); the log density is −β·E(s) (the constraint is
kept by the samplers, which move within it: `kernels/intracluster.py`).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import BomcmcError
from ..posterior import Posterior


MAX_SIDE_2D, MAX_SIDE_3D, MAX_HIDDEN = 1000, 100, 10_000  # a million spins at most


@dataclasses.dataclass(frozen=True, eq=False)
class SpinModel:
    neighbors: np.ndarray  # (N, D) int32, padded with N
    couplings: np.ndarray  # (N, D) float, 0 where padded
    fields: np.ndarray  # (N,)
    beta: float
    n_flipped: int  # the Hamming distance n from the reference
    reference: np.ndarray  # (N,) ±1
    name: str = "spins"
    # the IM sampler's search box and the expert's setting (`tuning/im_tuner.py`):
    k_bounds: tuple[int, int] | None = None  # default (1, min(50, n, N − n))
    gamma_bounds: tuple[float, float] | None = None  # default (0, 2β)
    expert: tuple[tuple[int, ...], float] | None = None  # (k values drawn uniformly, γ)

    @property
    def n(self) -> int:
        return int(self.fields.shape[0])

    @property
    def k_limit(self) -> int:
        """The longest walk that keeps the constraint: min(n, N − n)."""
        return min(self.n_flipped, self.n - self.n_flipped)

    def box(self) -> tuple[tuple[int, int], tuple[float, float]]:
        """(k_bounds, gamma_bounds) of the IM sampler's tuners: the model's own, else
        k ∈ {1..min(50, k_limit)} and γ ∈ [0, 2β] (Mahendran 2011 §4.2.1 searches twice
        the expert's γ, which is β on the 2D grid)."""
        k = self.k_bounds or (1, min(50, self.k_limit))
        g = self.gamma_bounds or (0.0, 2.0 * self.beta)
        return (int(k[0]), int(k[1])), (float(g[0]), float(g[1]))

    def effective_fields(self, s):
        """h^eff = h + Σ_j J_ij s_j for every spin (the dummy spin N contributes 0)."""
        padded = jnp.concatenate([s, jnp.zeros((1,), s.dtype)])
        return jnp.asarray(self.fields, s.dtype) + jnp.sum(
            jnp.asarray(self.couplings, s.dtype) * padded[jnp.asarray(self.neighbors)], axis=1)

    def energy(self, s):
        """E(s) = −½ Σ_i s_i (h^eff_i − h_i) − Σ_i h_i s_i (each pair counted once)."""
        h = jnp.asarray(self.fields, s.dtype)
        return -0.5 * jnp.sum(s * (self.effective_fields(s) - h)) - jnp.sum(h * s)

    def logdensity(self, s):
        return -self.beta * self.energy(s)

    def random_state(self, key) -> jax.Array:
        """The reference with n spins, chosen uniformly, flipped."""
        flip = jax.random.permutation(key, self.n)[:self.n_flipped]
        c = jnp.asarray(self.reference, float)
        return c.at[flip].multiply(-1.0)

    def posterior(self) -> Posterior:
        return Posterior(logdensity_fn=self.logdensity,
                         init_position=np.asarray(self.random_state(jax.random.PRNGKey(0))),
                         name=self.name, initializer=self.random_state,
                         description=f"{self.n} spins at Hamming distance {self.n_flipped} "
                                     f"from the reference, beta = {self.beta:g}",
                         spin_model=self)


def from_pairs(n: int, pairs, weights, fields=None, beta: float = 1.0,
               n_flipped: int | None = None, reference=None, name: str = "spins") -> SpinModel:
    """A SpinModel from a list of pairs (i, j) with couplings J_ij (each pair once)."""
    pairs = np.asarray(pairs, int).reshape(-1, 2)
    weights = np.broadcast_to(np.asarray(weights, float), (len(pairs),))
    if np.any(pairs < 0) or np.any(pairs >= n) or np.any(pairs[:, 0] == pairs[:, 1]):
        raise BomcmcError("pairs must be distinct spin indices in [0, N)")
    lists: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for (i, j), w in zip(pairs, weights):
        lists[i].append((j, w))
        lists[j].append((i, w))
    degree = max(1, max(len(x) for x in lists))
    nbr = np.full((n, degree), n, np.int32)
    cpl = np.zeros((n, degree))
    for i, x in enumerate(lists):
        for d, (j, w) in enumerate(x):
            nbr[i, d], cpl[i, d] = j, w
    fields = np.zeros(n) if fields is None else np.asarray(fields, float)
    reference = np.ones(n) if reference is None else np.asarray(reference, float)
    n_flipped = n // 2 if n_flipped is None else int(n_flipped)
    if not 0 < n_flipped < n:
        raise BomcmcError(f"the Hamming distance must be in (0, {n}), got {n_flipped}")
    if fields.shape != (n,) or reference.shape != (n,) or not np.all(np.abs(reference) == 1):
        raise BomcmcError("fields must be (N,) and the reference ±1 of length N")
    return SpinModel(nbr, cpl, fields, float(beta), n_flipped, reference, name)


def ising_grid(side: int, beta: float = 1 / 2.27, coupling: float = 1.0) -> SpinModel:
    """The ferromagnet on a periodic side × side grid at zero magnetisation (n = N/2)."""
    if not 3 <= side <= MAX_SIDE_2D:
        raise BomcmcError(f"the periodic grid needs 3 <= side <= {MAX_SIDE_2D}, got {side}")
    idx = np.arange(side * side).reshape(side, side)
    pairs = np.concatenate([np.stack([idx.ravel(), np.roll(idx, -1, 0).ravel()], 1),
                            np.stack([idx.ravel(), np.roll(idx, -1, 1).ravel()], 1)])
    model = from_pairs(side * side, pairs, coupling, beta=beta, name=f"ising-{side}x{side}")
    if side == 60 and beta == 1 / 2.27 and coupling == 1.0:  # Mahendran 2011 Table 4.1
        model = dataclasses.replace(model, k_bounds=(1, 300), gamma_bounds=(0.0, 0.88),
                                    expert=((90,), 0.44))
    return model


def rbm_spins(weights, visible_bias, hidden_bias, beta: float = 1.0,
              n_flipped: int | None = None, name: str = "rbm") -> SpinModel:
    """A restricted Boltzmann machine over binary units x = (s + 1)/2, E = −vᵀWh − bᵀv − cᵀh,
    in spin form: J = W/4 between visible i and hidden j, fields b_i/2 + Σ_j W_ij/4 and
    c_j/2 + Σ_i W_ij/4 (the conversion of Mahendran et al.'s code), spins ordered visible
    then hidden; constrained at Hamming distance n from all +1 (default round(2N/3), their
    setting)."""
    W = np.asarray(weights, float)
    b, c = np.asarray(visible_bias, float), np.asarray(hidden_bias, float)
    nv, nh = W.shape
    if b.shape != (nv,) or c.shape != (nh,):
        raise BomcmcError(f"biases must be ({nv},) and ({nh},) for weights of shape {W.shape}")
    ii, jj = np.meshgrid(np.arange(nv), np.arange(nh), indexing="ij")
    pairs = np.stack([ii.ravel(), nv + jj.ravel()], axis=1)
    fields = np.concatenate([b / 2 + W.sum(axis=1) / 4, c / 2 + W.sum(axis=0) / 4])
    n = nv + nh
    n_flipped = int(round(2 * n / 3)) if n_flipped is None else n_flipped
    return from_pairs(n, pairs, W.ravel() / 4, fields=fields, beta=beta, n_flipped=n_flipped,
                      name=name)


def spin_glass(side: int = 9, seed: int = 2012, beta: float = 1.0) -> SpinModel:
    """The ±J spin glass on a periodic side³ cubic lattice, h = 0, n = ⌊N/2⌋. The couplings
    are ±1 with probability ½ each from NumPy's generator seeded with `seed`: the coupling
    file of Mahendran et al.'s 9 × 9 × 9 experiment is not available, so this is a sample
    of the same ensemble, not their instance (docs/spins.md)."""
    if not 3 <= side <= MAX_SIDE_3D:
        raise BomcmcError(f"the periodic lattice needs 3 <= side <= {MAX_SIDE_3D}, got {side}")
    idx = np.arange(side**3).reshape(side, side, side)
    pairs = np.concatenate([np.stack([idx.ravel(), np.roll(idx, -1, a).ravel()], 1)
                            for a in range(3)])
    rng = np.random.default_rng(seed)
    weights = rng.choice([-1.0, 1.0], size=len(pairs))
    model = from_pairs(side**3, pairs, weights, beta=beta,
                       name=f"spinglass-{side}x{side}x{side}")
    if side == 9 and beta == 1.0:  # Mahendran 2011 Table 4.1
        model = dataclasses.replace(model, k_bounds=(1, 50), gamma_bounds=(0.0, 1.6),
                                    expert=(tuple(range(1, 26)), 0.8))
    return model


RBM_LEARNING_RATE, RBM_BATCH = 0.05, 10  # the training of every RBM here (10: sklearn's default)


def train_rbm(X: np.ndarray, n_hidden: int, seed: int = 0, n_iter: int = 20):
    """(W (visible, hidden), visible bias, hidden bias) of scikit-learn's `BernoulliRBM`
    trained on the binary rows of X by persistent contrastive divergence."""
    from sklearn.neural_network import BernoulliRBM

    rbm = BernoulliRBM(n_components=int(n_hidden), learning_rate=RBM_LEARNING_RATE,
                       batch_size=RBM_BATCH, n_iter=int(n_iter), random_state=seed).fit(X)
    return rbm.components_.T, rbm.intercept_visible_, rbm.intercept_hidden_


@functools.lru_cache(maxsize=4)
def rbm_digits(n_hidden: int = 100, seed: int = 0, beta: float = 1.0) -> SpinModel:
    """An RBM trained by scikit-learn's `BernoulliRBM` (20 epochs) on the 8 × 8 digits that
    scikit-learn ships, pixels binarised at half intensity, in spin form (64 + n_hidden
    spins). It stands in for Mahendran et al.'s 784 × 500 MNIST RBM, whose weights are not
    available (docs/spins.md)."""
    if not 1 <= int(n_hidden) <= MAX_HIDDEN:
        raise BomcmcError(f"the RBM needs 1 <= n_hidden <= {MAX_HIDDEN}, got {n_hidden}")
    from sklearn.datasets import load_digits

    X = (load_digits().data / 16.0 > 0.5).astype(float)
    model = rbm_spins(*train_rbm(X, n_hidden, seed), beta=beta, name=f"rbm-digits-{n_hidden}")
    # the box and expert of Mahendran 2011 Table 4.1 for their (larger) MNIST RBM
    limit = model.k_limit
    return dataclasses.replace(model, k_bounds=(1, min(50, limit)), gamma_bounds=(0.0, 1.6),
                               expert=(tuple(range(1, min(20, limit) + 1)), 0.8))
