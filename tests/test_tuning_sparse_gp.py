"""Engel's (2005) ALD-dictionary GP (`tuning/sparse_gp.py`) against the full GP (`tuning/gp.py`)
it approximates, and as the AHMC bandit's GP (`gp="sparse"`: never reset)."""

import json

import numpy as np
import pytest

from bomcmc.errors import BomcmcError
from bomcmc.tuning import sparse_gp
from bomcmc.tuning.gp import GaussianProcess
from bomcmc.tuning.sparse_gp import SparseGaussianProcess

SCALES = np.array([0.9, 1.5])  # the bandit's: 0.2 × the box's range
LO, HI = np.array([-5.0, 1.0]), np.array([-0.4, 8.0])


def _reward(x):
    return np.sin(2 * x[..., 0]) + 0.2 * x[..., 1]


def _fill(gps, n=300, seed=0, points=None):
    """n noisy observations at inputs drawn from `points`, the same ones into every GP."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        x = points[rng.integers(len(points))]
        r = float(_reward(x) + 0.3 * rng.normal())
        for gp in gps:
            gp.add(x, r)


def _grid(step):
    """A grid over the box, `step` length scales apart (L rounded, as the bandit's)."""
    a = np.arange(LO[0], HI[0] + 1e-9, step * SCALES[0])
    b = np.arange(LO[1], HI[1] + 1e-9, step * SCALES[1])
    return np.array([(u, v) for u in a for v in b])


def _tests(seed=1, n=100):
    return np.random.default_rng(seed).uniform(LO, HI, (n, 2))


def _gap(a, b, X):
    """Largest |Δμ| and |Δσ²| between two GPs at the rows of X."""
    (ma, va), (mb, vb) = a.predict(X), b.predict(X)
    return float(np.max(np.abs(ma - mb))), float(np.max(np.abs(va - vb)))


# ν = 0 against the full GP: 1e-8 is rounding here (σ² ≤ sf² = 25, the cancellation in
# sf² − k̂ᵀCk̂ with cond(K_D) ≈ 1e4 on a grid 0.7 length scales apart)
EXACT = 1e-8


def test_nu_zero_is_the_full_gp_to_rounding():
    points = _grid(0.7)  # 8 × 7 distinct inputs, each seen about 5 times
    full, sparse = GaussianProcess(SCALES), SparseGaussianProcess(SCALES, threshold=0.0)
    _fill([full, sparse], points=points)
    assert len(sparse.X) == len(full.X) == len(points)
    np.testing.assert_array_equal(sparse.counts, full.counts)
    for X in (full.X, _tests()):
        dm, dv = _gap(full, sparse, X)
        assert dm < EXACT and dv < EXACT, (dm, dv)
    x = _tests(n=1)[0]
    for a, b in zip(full.point_predictor(grad=True)(x), sparse.point_predictor(grad=True)(x)):
        np.testing.assert_allclose(a, b, rtol=0, atol=EXACT)
    u, v = full.point_predictor()(x), sparse.point_predictor()(x)
    np.testing.assert_allclose(u, v, rtol=0, atol=EXACT)


def test_small_nu_matches_the_full_gp_on_the_dictionary_and_between():
    """ν = 1e-3 (the default) on a grid 0.35 length scales apart: half of the 197 inputs are
    ALD and left out of D, and μ, σ² stay within 0.01 of the full GP's (measured: 0.005 and
    0.0009; the posterior sd at the data is up to 0.25), on D and at random points."""
    points = _grid(0.35)
    full, sparse = GaussianProcess(SCALES), SparseGaussianProcess(SCALES)
    _fill([full, sparse], n=600, points=points)
    assert len(sparse.X) < 0.8 * len(full.X)
    for X in (sparse.X, _tests()):
        dm, dv = _gap(full, sparse, X)
        assert dm < 1e-2 and dv < 1e-2, (dm, dv)


def test_the_recursive_inverse_without_its_correction_term_fails_the_same_check(monkeypatch):
    """K_D'⁻¹ without the a aᵀ/δ term (a plausible slip in the KRLS recursion) breaks the ν = 0
    equality (measured: μ off by 3.1, σ² by 69): the test above would catch it."""
    def broken(self, x, a, delta):
        m = len(self.X)
        inv = np.zeros((m + 1, m + 1))
        inv[:m, :m] = self.K_inv  # the a aᵀ / δ term left out
        inv[:m, m] = inv[m, :m] = -a / delta
        inv[m, m] = 1.0 / delta
        self.K_inv = inv
        self.X = np.vstack([self.X, x])
        self.P = np.pad(self.P, ((0, 1), (0, 1)))
        self.b, self.sums = np.append(self.b, 0.0), np.append(self.sums, 0.0)
        self.counts = np.append(self.counts, 0)
        return m

    monkeypatch.setattr(SparseGaussianProcess, "_extend", broken)
    points = _grid(0.7)
    full, sparse = GaussianProcess(SCALES), SparseGaussianProcess(SCALES, threshold=0.0)
    _fill([full, sparse], points=points)
    dm, dv = _gap(full, sparse, _tests())
    assert max(dm, dv) > 1e-2


def test_dictionary_stays_bounded_when_points_repeat_in_a_box():
    """Points drawn at random in the box, L rounded: the full GP's distinct inputs grow with
    n, the dictionary stops growing (Engel, Mannor & Meir 2004)."""
    rng = np.random.default_rng(2)
    full, sparse = GaussianProcess(SCALES), SparseGaussianProcess(SCALES)
    sizes = {}
    for n in range(1, 2001):
        x = rng.uniform(LO, HI)
        x[1] = np.round(x[1])
        r = float(_reward(x))
        full.add(x, r)
        sparse.add(x, r)
        if n in (500, 2000):
            sizes[n] = (len(full.X), len(sparse.X))
    assert sizes[2000][0] > 3 * sizes[500][0] // 2  # the full GP: nearly linear
    assert sizes[2000][1] - sizes[500][1] <= 10 and sizes[2000][1] < 100, sizes
    assert sparse.n_obs == 2000


def test_state_dict_round_trip_is_exact_and_a_full_gps_state_loads():
    full, sparse = GaussianProcess(SCALES), SparseGaussianProcess(SCALES)
    _fill([full, sparse], n=200, points=_grid(0.35))
    back = SparseGaussianProcess(SCALES)
    back.load_state_dict(json.loads(json.dumps(sparse.state_dict())))
    X = _tests()
    for a, b in zip(sparse.predict(X), back.predict(X)):
        np.testing.assert_array_equal(a, b)
    r = 0.5
    np.testing.assert_array_equal(sparse.added(X[0], r).predict(X)[0],
                                  back.added(X[0], r).predict(X)[0])
    # a run saved with the full GP resumes with a sparse one: its observations re-sparsified
    full = GaussianProcess(SCALES)
    _fill([full], points=_grid(0.7))
    from_full = SparseGaussianProcess(SCALES, threshold=0.0)
    from_full.load_state_dict(full.state_dict())
    assert from_full.n_obs == full.n_obs
    assert max(_gap(full, from_full, X)) < EXACT


def test_new_length_scales_keep_every_observation():
    """`copy(lengthscales)` (the L cap grows, the box re-centres): at ν = 0 the same as the
    full GP's copy; at the default ν the counts are all kept."""
    full, sparse = GaussianProcess(SCALES), SparseGaussianProcess(SCALES, threshold=0.0)
    _fill([full, sparse], points=_grid(1.0))
    wider = 1.2 * SCALES  # ν = 0 needs a well-conditioned K_D: the grid 0.83 scales apart
    assert max(_gap(full.copy(wider), sparse.copy(wider), _tests())) < EXACT
    dense = SparseGaussianProcess(SCALES)
    _fill([dense], points=_grid(0.35))
    assert dense.copy(2 * SCALES).n_obs == dense.n_obs
    assert len(dense.copy(2 * SCALES).X) < len(dense.X)


def _ahmc(gp):
    from bomcmc.tuning import ahmc_tuner

    return ahmc_tuner.AHMCTuner(warmup=200, bo_steps=20, mass="diag", batch=1, gp=gp,
                                eps_bounds=(0.01, 1.0), maxfun=20, polish=False)


def _drive(t, kn, n, rng):
    """n fake chunks (random positions and rewards; sampling after the burn-in's 20)."""
    for _ in range(n):
        d = t.chunk_draws(kn, 10_000)
        info = {"esjd": rng.uniform(0.5, 1.5, (4, d)), "n_grad": np.ones((4, d))}
        kn = t.after_chunk(kn, {"phase": int(t.i >= 20), "info": info,
                                "positions": rng.normal(size=(4, d, 3))})
    return kn


def test_ahmc_with_the_sparse_gp_keeps_its_observations_across_metric_updates():
    """gp="sparse": the metric updates keep the GP, so its observations count every BO
    step of the burn-in; the default full GP holds only those since the last update. A
    state saved as JSON resumes to the same proposals."""
    from bomcmc.kernels.hmc import HMCKnobs

    steps = {}
    for gp in ("full", "sparse"):
        t = _ahmc(gp)
        rng = np.random.default_rng(0)
        kn = _drive(t, t.initial_knobs(HMCKnobs(
            step_size=np.full(4, 0.1), num_steps=np.full(4, 10, np.int32),
            inverse_mass_matrix=np.ones((4, 3)), random_steps=np.ones(4, bool))), 20, rng)
        assert t.epoch == 2
        steps[gp] = t.gp.n_obs
    assert steps["sparse"] == 20 and steps["full"] < 20
    resumed = _ahmc("sparse")
    resumed.load_state_dict(json.loads(json.dumps(t.state_dict())))
    assert resumed.config.gp == "sparse"
    _drive(t, kn, 30, np.random.default_rng(1))
    _drive(resumed, kn, 30, np.random.default_rng(1))
    assert resumed.history == t.history and any(h["proposed"] for h in t.history[20:])
    from bomcmc.tuning import ahmc_tuner

    with pytest.raises(BomcmcError, match="gp"):
        ahmc_tuner.AHMCTuner(warmup=200, gp="dense")
    with pytest.raises(BomcmcError, match="ald_threshold"):
        ahmc_tuner.AHMCTuner(warmup=200, gp="sparse", ald_threshold=-1.0)
    assert sparse_gp.ALD_THRESHOLD == 1e-3
