"""The NUTS sampler (kernels/nuts.py): BlackJAX's kernel behind our protocol, runtime knobs,
and the posterior it samples after Stan's warm-up, checked against known moments."""

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from stats import assert_moments

import bomcmc
from bomcmc import models
from bomcmc.errors import BomcmcError
from bomcmc.models.gaussians import mvn
from bomcmc.kernels import nuts
from bomcmc.store import DiskStore

SEEDS = (0, 1, 2)


def _corr_gauss():
    post = models.get("gauss-2d-corr")
    return post, post.logdensity_fn


@pytest.mark.parametrize("dense", [False, True])
def test_transition_equals_blackjax_kernel(dense):
    """Same key, same knobs: our transition is BlackJAX's `nuts.build_kernel()` step."""
    post, logdensity = _corr_gauss()
    knobs = nuts.make_knobs(2, step_size=0.05, dense_mass=dense,
                            inverse_mass_matrix=[1.0, 0.5])
    bj_kernel = blackjax.nuts.build_kernel()
    kernel = jax.jit(lambda k, s, imm: bj_kernel(k, s, logdensity, 0.05, imm, max_num_doublings=10))
    step = jax.jit(lambda k, s, kn: nuts.step(k, s, logdensity, kn))
    state = nuts.init(jnp.array([0.5, -0.3]), logdensity)
    for i in range(5):
        key = jax.random.PRNGKey(i)
        ours, info = step(key, state, knobs)
        theirs, binfo = kernel(key, state, knobs.inverse_mass_matrix)
        np.testing.assert_array_equal(ours.position, theirs.position)
        np.testing.assert_array_equal(ours.logdensity_grad, theirs.logdensity_grad)
        assert int(info.n_grad) == int(binfo.num_integration_steps) == int(info.n_steps)
        assert int(info.tree_depth) == int(binfo.num_trajectory_expansions)
        np.testing.assert_allclose(info.acceptance_rate, binfo.acceptance_rate, rtol=1e-12)
        np.testing.assert_allclose(info.energy, binfo.energy, rtol=1e-12)
        assert bool(info.diverging) == bool(binfo.is_divergent)
        np.testing.assert_allclose(info.sq_jump, np.sum((ours.position - state.position) ** 2))
        state = ours


def test_knobs_change_without_recompiling():
    """Step size, metric values and tree depth (up to the capacity) are traced values."""
    traces = []
    _, logdensity = _corr_gauss()

    @jax.jit
    def step(key, state, knobs):
        traces.append(1)
        return nuts.step(key, state, logdensity, knobs)

    state = nuts.init(jnp.array([0.5, -0.3]), logdensity)
    base = nuts.make_knobs(2, step_size=0.05, max_tree_depth=10)
    depths = []
    for i, (eps, depth, imm) in enumerate([(0.05, 10, [1.0, 1.0]), (0.01, 2, [2.0, 0.5]),
                                           (0.2, 5, [0.3, 0.3]), (0.01, 1, [1.0, 1.0])]):
        knobs = base._replace(step_size=jnp.asarray(eps), max_tree_depth=jnp.asarray(depth),
                              inverse_mass_matrix=jnp.asarray(imm))
        _, info = step(jax.random.PRNGKey(i), state, knobs)
        depths.append((depth, int(info.tree_depth), int(info.n_grad)))
    assert len(traces) == 1
    for depth, got, n_grad in depths:  # the runtime depth bounds the tree
        assert got <= depth and n_grad <= 2**depth - 1
    # a depth above the static capacity is clipped to it
    knobs = base._replace(step_size=jnp.asarray(1e-4), max_tree_depth=jnp.asarray(3),
                          tree_capacity=jnp.zeros(3, jnp.int8))
    _, info = jax.jit(lambda k, s, kn: nuts.step(k, s, logdensity, kn))(
        jax.random.PRNGKey(0), state, knobs._replace(max_tree_depth=jnp.asarray(9)))
    assert int(info.tree_depth) == 3 and int(info.n_grad) == 7


def test_make_knobs_validates_and_shapes():
    kn = nuts.make_knobs(3)
    assert kn.inverse_mass_matrix.shape == (3,) and kn.tree_capacity.shape == (10,)
    assert "target_accept" not in kn._fields  # δ is the warm-up adapter's option
    assert int(kn.max_tree_depth) == 10
    assert nuts.make_knobs(3, dense_mass=True).inverse_mass_matrix.shape == (3, 3)
    assert nuts.make_knobs(3, inverse_mass_matrix=np.eye(3)).inverse_mass_matrix.shape == (3, 3)
    np.testing.assert_array_equal(
        nuts.make_knobs(2, dense_mass=True, inverse_mass_matrix=[2.0, 3.0]).inverse_mass_matrix,
        np.diag([2.0, 3.0]))
    assert nuts.make_knobs(3, max_tree_depth=6).tree_capacity.shape == (6,)
    for bad in (dict(step_size=-1.0), dict(step_size=float("nan")), dict(max_tree_depth=0),
                dict(max_tree_depth=2.5),
                dict(inverse_mass_matrix=[1.0, -1.0, 1.0]),
                dict(inverse_mass_matrix=np.ones((2, 2))),
                dict(inverse_mass_matrix=[[1.0, 2.0, 0], [0, 1.0, 0], [0, 0, 1.0]])):
        with pytest.raises(BomcmcError):
            nuts.make_knobs(3, **bad)
    with pytest.raises(BomcmcError, match="unexpected keyword|nuts"):
        bomcmc.sample(posterior="gauss-iid-2", sampler="nuts", steps=3, progress=False)


def _draws(result):
    return np.asarray(result.idata.posterior["x"])


@pytest.mark.parametrize("seed", SEEDS)
def test_window_nuts_correlated_gaussian(seed):
    """gauss-2d-corr (ρ = 0.99) with a diagonal metric learned in warm-up: means and variances
    within 4 MCSE of the truth, the correlation too, and no divergences."""
    post = models.get("gauss-2d-corr")
    r = bomcmc.sample(posterior="gauss-2d-corr", sampler="nuts", adapt="window", chains=4,
                      draws=1000, warmup=500, seed=seed, progress=False)
    assert_moments(_draws(r), post.mean, np.diag(post.cov), label=f"seed {seed}")
    x = _draws(r).reshape(-1, 2)
    assert abs(np.corrcoef(x.T)[0, 1] - 0.99) < 0.01
    assert r.totals["divergences"] == 0
    acc = float(np.mean(r.idata.sample_stats.acceptance_rate))
    assert 0.7 < acc < 0.97, acc


def test_window_nuts_dense_metric_learns_covariance(tmp_path):
    """A 4-d Gaussian with strong correlations and scales 0.1..10, dense metric: the learned
    M⁻¹ is close to the covariance, and the moments are right."""
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    cov = q @ np.diag([0.01, 0.5, 4.0, 100.0]) @ q.T
    post = mvn("corr-4d", [1.0, -1.0, 0.0, 2.0], cov)
    r = bomcmc.sample(post, sampler="nuts", adapt="window", dense_mass=True, chains=4,
                      draws=1000, warmup=500, seed=0, progress=False, out=tmp_path / "run")
    assert_moments(_draws(r), post.mean, np.diag(cov), label="dense")
    assert r.totals["divergences"] == 0
    last = list(DiskStore(tmp_path / "run").chunks())[-1]
    for inv_mass in last.knobs["inverse_mass_matrix"]:  # each chain's learned M⁻¹ ≈ cov:
        whitened = np.linalg.eigvals(np.linalg.solve(inv_mass, cov)).real  # of M·Σ
        assert np.all((whitened > 0.4) & (whitened < 2.5)), whitened
    # the whitened target is isotropic, so trees are short
    assert float(np.mean(r.idata.sample_stats.tree_depth)) < 3.5
