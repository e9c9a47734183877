"""Choo's Dynamical A and B (kernels/choo_dynamics.py, bnn/dynamical.py; Choo 2000, ch. 4):
the alternating leapfrog is reversible and volume-preserving, each block's step sizes ignore
the block they move, and both dynamics leave the joint posterior invariant — against the
exact posterior of a linear model with random precisions (quadrature, the reference of
test_bnn_network's Neal test), and against Neal's Gibbs-within-HMC on Choo's 8-point network
by two-sample tests of the hyperparameter marginals, as Choo verified his programs (§5.2).
Dynamical B without the Jacobian of its weight transform fails the exact test."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from stats import bonferroni_sigma, moment_z_scores
from tiers import by_default
from test_bnn_network import _data, _exact_linear_posterior

import bomcmc
from bomcmc.bnn.choo_data import choo_model, load_choo8
from bomcmc.bnn.dynamical import DynamicalA, DynamicalB
from bomcmc.bnn.network import BNN
from bomcmc.bnn.samplers import dynamical_sampler
from bomcmc.errors import BomcmcError
from bomcmc.kernels.choo_dynamics import trajectory

pytestmark = pytest.mark.usefixtures("compilation_cache")  # fixture in conftest.py


def _linear():
    X, y = _data(n=8, n_in=2, seed=4)
    return BNN(X, y, hidden=(), prior="io 1:3 bo 1", noise="0.5:4"), X, y


def _small_net():
    X, y = load_choo8()
    return BNN(X, y, hidden=(3,), prior="ih 1:0.5 bh 1:0.5 ho 0.45:0.5 bo 0.8:0.5",
               noise="0.1:0.5")


class NoJacobianB(DynamicalB):
    """Broken: Dynamical B's density without log|∂w/∂φ| = −Σ N_g λ_g / 2."""

    def logdensity(self, tree):
        return self.model.logdensity(self.to_centred(tree))


class GaussNewtonB(DynamicalB):
    """Dynamical B with the Gauss–Newton estimate of the hyperparameters' curvature."""

    def __init__(self, model):
        super().__init__(model, hyper_curvature="gauss_newton")


class MovingStepSizes(DynamicalA):
    """Broken: hyperparameter step sizes from the current λ (the block being moved)."""

    def hyper_curvature(self, x):
        return super().hyper_curvature(x) * jnp.exp(x[:self.n_hyper])


def _flat_logdensity(blocks):
    post = blocks.posterior()
    return lambda x: post.logdensity_fn(blocks.unravel(x))


def _run(blocks, x, p, n, hyper_first, eta=0.2, eta_hyper=None, splits=(1, 1)):
    logdensity = _flat_logdensity(blocks)

    @jax.jit
    def go(x, p):
        logp, grad = jax.value_and_grad(logdensity)(x)
        end = trajectory(blocks, x, p, logp, grad, logdensity, eta, n, hyper_first,
                         eta_hyper, splits)
        return end.position, end.momentum

    return go(x, p)


def _start(blocks, seed):
    key_x, key_p = jax.random.split(jax.random.PRNGKey(seed))
    model = blocks.model
    tree = model.posterior().initializer(key_x)
    if isinstance(blocks, DynamicalB):
        tree = blocks.to_noncentred(tree)
    x = jnp.asarray(blocks.ravel(tree), jnp.float64)
    return x, jax.random.normal(key_p, x.shape, jnp.float64)


# each dynamics on the linear model in the default run, on the network with `-m slow` (B's
# return on the network is also checked by the split test below)
@pytest.mark.parametrize("variant, make", by_default([
    (DynamicalA, _linear), (DynamicalB, _linear), (DynamicalB, _small_net),
    (DynamicalA, _small_net)], keep=2))
def test_alternating_leapfrog_is_reversible_and_volume_preserving(variant, make):
    """n steps weights-first, a momentum flip, n steps hyperparameters-first: back to the
    start (Choo 2000 §4.1.2: why the order is drawn per trajectory); and the Jacobian of
    (x, p) -> (x', p') has determinant 1 (autodiff)."""
    model = make()[0] if make is _linear else make()
    blocks = variant(model)
    x, p = _start(blocks, seed=3)
    x1, p1 = _run(blocks, x, p, 6, False)
    assert float(jnp.max(jnp.abs(x1 - x))) > 1e-2  # it moved
    x2, p2 = _run(blocks, x1, -p1, 6, True)
    np.testing.assert_allclose(x2, x, atol=1e-9)
    np.testing.assert_allclose(-p2, p, atol=1e-9)
    d = x.size
    z = jnp.concatenate([x, p])
    jac = jax.jacfwd(lambda z: jnp.concatenate(_run(blocks, z[:d], z[d:], 4, False)))(z)
    assert abs(float(jnp.linalg.det(jac)) - 1.0) < 1e-8


def test_a_split_update_is_k_steps_of_a_kth_of_the_step_and_stays_reversible():
    """Choo 2000 §6.2.2: a block's update split into k leapfrog steps of v/k. With the other
    block frozen (its η = 0), one split trajectory step equals k unsplit steps at η/k; with
    both blocks moving, the split trajectory is reversible and differs from the unsplit one;
    splits that are not two positive integers are refused. Measured: the split and unsplit
    steps agree exactly (0.0; 1e-12 allows another CPU's rounding), the return misses the
    start by 2e-13 (the 1e-9 of the unsplit reversibility test above)."""
    blocks = DynamicalB(_small_net())
    x, p = _start(blocks, seed=3)
    for k, split, etas in ((3, (1, 3), (0.0, 0.3)), (2, (2, 1), (0.3, 0.0))):
        xs, ps = _run(blocks, x, p, 1, False, eta=etas[0], eta_hyper=etas[1], splits=split)
        xk, pk = _run(blocks, x, p, k, False, eta=etas[0] / k * (split[0] > 1),
                      eta_hyper=etas[1] / k * (split[1] > 1))
        assert float(jnp.max(jnp.abs(xs - x))) > 1e-2
        np.testing.assert_allclose(xs, xk, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(ps, pk, rtol=1e-12, atol=1e-12)
    x1, p1 = _run(blocks, x, p, 6, False, splits=(2, 3))
    x0, _ = _run(blocks, x, p, 6, False)
    assert float(jnp.max(jnp.abs(x1 - x0))) > 1e-3
    x2, p2 = _run(blocks, x1, -p1, 6, True, splits=(2, 3))
    np.testing.assert_allclose(x2, x, atol=1e-9)
    np.testing.assert_allclose(-p2, p, atol=1e-9)
    for bad in ((0, 1), (1, 2.5), (3,)):
        with pytest.raises(BomcmcError, match="splits must be two positive integers"):
            dynamical_sampler(blocks, splits=bad)


def test_step_sizes_from_the_moving_block_break_reversibility():
    """The same check fails when the hyperparameters' step sizes depend on λ itself."""
    blocks = MovingStepSizes(_small_net())
    x, p = _start(blocks, seed=3)
    x1, p1 = _run(blocks, x, p, 6, False)
    x2, _ = _run(blocks, x1, -p1, 6, True)
    assert float(jnp.max(jnp.abs(x2 - x))) > 1e-4


@pytest.mark.parametrize("variant", [DynamicalA, DynamicalB, GaussNewtonB])
def test_each_blocks_curvature_ignores_the_block_it_moves(variant):
    blocks = variant(_small_net())
    x, _ = _start(blocks, seed=5)
    h = blocks.n_hyper
    other_w = x.at[h:].add(0.3)
    other_lam = x.at[:h].add(0.7)
    np.testing.assert_array_equal(blocks.weight_curvature(x),
                                  blocks.weight_curvature(other_w))
    np.testing.assert_array_equal(blocks.hyper_curvature(x),
                                  blocks.hyper_curvature(other_lam))
    assert np.all(np.asarray(blocks.hyper_curvature(x)) > 0)
    assert not np.allclose(blocks.weight_curvature(x), blocks.weight_curvature(other_lam))
    assert not np.allclose(blocks.hyper_curvature(x), blocks.hyper_curvature(other_w))


CHAINS, DRAWS = 4, 2500


def _exact_z(blocks, seed, splits=(1, 1), **knobs):
    m, X, y = _linear()
    exact = _exact_linear_posterior(m, X, y)
    knobs = {"step_size": 0.3, "steps": 20, "random_steps": True, **knobs}
    res = bomcmc.sample(blocks.posterior(), sampler=dynamical_sampler(blocks, splits=splits),
                        chains=CHAINS, draws=DRAWS, warmup=0, seed=seed, progress=False,
                        float64=True, chunk_size=500, **knobs)
    post = res.idata.posterior
    z = {}
    for name, (mean, var) in exact.items():
        draws = np.asarray(post[name].values).reshape(CHAINS, DRAWS, -1)
        z[name] = moment_z_scores(draws, mean, var)
    bound = bonferroni_sigma(2 * sum(v[0].size for v in exact.values()))
    ss = res.idata.sample_stats
    np.testing.assert_array_equal(ss.n_grad.values, sum(splits) * ss.n_steps.values)
    return z, bound


SPLIT = dict(splits=(2, 3), step_size=0.6)


@pytest.mark.parametrize("variant, seed, knobs", [(DynamicalA, 0, {}), (DynamicalA, 2, SPLIT),
                                                  (GaussNewtonB, 0, {}), (GaussNewtonB, 1, {})])
def test_dynamics_match_the_exact_posterior(variant, seed, knobs):
    """Log-precisions and weights of a linear model with Gamma priors on τ_w and τ_noise:
    means and variances within the Bonferroni MCSE bound (4.4 for 10 comparisons) of
    quadrature. Measured worst |z|: A 1.4 (seed 0); B (Gauss–Newton) 1.6, 2.4 (seeds 0, 1);
    η = 0.3, L ~ U{1..20}, acceptance 0.98. A with each weight update split in two and each
    hyperparameter update in three (Choo 2000 §6.2.2), at η = 0.6 (acceptance above 0.99 at
    0.3; 5 gradients per leapfrog step): 1.78, 1.29 (seeds 2, 3). B with Choo's estimate:
    test_bnn_dynamical_choo."""
    z, bound = _exact_z(variant(_linear()[0]), seed, **knobs)
    for name, (z_mean, z_var) in z.items():
        assert np.all(np.abs(z_mean) < bound), (name, z_mean)
        assert np.all(np.abs(z_var) < bound), (name, z_var)


def test_dynamical_b_without_its_jacobian_fails_the_same_test():
    """Measured: z of the mean of log τ_io 37 and 40 (seeds 0, 1)."""
    z, bound = _exact_z(NoJacobianB(_linear()[0]), 0)
    assert abs(float(z["log_tau.io"][0][0])) > 3 * bound


@pytest.mark.slow
@pytest.mark.parametrize("seed", [21, 31])
@pytest.mark.parametrize("variant", ["a", "b"])
def test_dynamics_agree_with_neal_on_choo_network(variant, seed):
    """Choo 2000 §5.2 on his 8-point data, 8 tanh units: the five log-precisions' marginals
    of Dynamical A or B against Neal's Gibbs-within-HMC by two-sample KS tests after thinning
    to about one draw per ESS (test_bnn_choo_data's helpers, family-wise 1 %), and the
    predictive mean at the training inputs within 4 combined standard errors. About 3
    CPU-minutes per variant; measured p-values in docs/bnn_dynamical.md."""
    from test_bnn_choo_data import CI, hyper_draws, ks_pvalues, P_MIN, run_neal

    from bomcmc.bnn.predict import predict_regression

    model = choo_model(8)
    neal = run_neal(model, CI, seed=seed)
    blocks = (DynamicalA if variant == "a" else DynamicalB)(model)
    knobs = DYN_KNOBS[variant]
    dyn = bomcmc.sample(blocks.posterior(), sampler=dynamical_sampler(blocks),
                        chains=CI.chains, draws=CI.draws, warmup=CI.warmup, seed=seed + 1,
                        thin=CI.thin, progress=False, chunk_size=CI.chunk, **knobs)
    p = ks_pvalues(hyper_draws(neal), hyper_draws(dyn))
    print(f"\ndynamical {variant} vs neal (seed {seed}): KS p "
          + ", ".join(f"{h} {v:.3g}" for h, v in p.items()))
    assert all(v > P_MIN for v in p.values()), p
    X = model.X
    preds = []
    for res in (neal, dyn):
        f = predict_regression(model, res.idata, X)["mean"][:, 0]
        per_chain = np.stack([predict_regression(model, res.idata.isel(chain=[c]), X)["mean"]
                              for c in range(CI.chains)])[..., 0]
        preds.append((f, per_chain.std(axis=0, ddof=1) / np.sqrt(CI.chains)))
    (fa, sa), (fb, sb) = preds
    z = (fa - fb) / np.sqrt(sa**2 + sb**2)
    print(f"predictive mean z: {np.round(z, 2)}")
    assert np.all(np.abs(z) < 4), z


# knobs for the comparison with Neal's scheme (acceptance 0.8–0.95 on Choo's network)
DYN_KNOBS = {"a": dict(step_size=0.3, steps=40, random_steps=True),
             "b": dict(step_size=0.1, steps=40, random_steps=True)}


# dynamics A under the bandit runs with `-m slow`: the estimator's path is B's, and A's
# exactness is test_dynamics_match_the_exact_posterior's
@pytest.mark.parametrize("sampler", by_default(["dyn-b", "dyn_a"], keep=1))
def test_the_estimator_runs_the_dynamics_with_the_bandit(sampler):
    """`BayesianMLPRegressor(sampler="dyn_a" | "dyn_b")`: (η, L) tuned by the GP bandit; the
    kept draws are reported as the network's weights (B's φ in unconstrained_posterior).
    Measured training R² (float32, seeds 0, 1): A 0.95, 0.92; B 0.95, 0.95; AHMC-Gibbs
    0.97, 0.95 at the same budget. Asserted: R² > 0.8."""
    from bomcmc import BayesianMLPRegressor

    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(40, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=40)
    reg = BayesianMLPRegressor(hidden=(6,), sampler=sampler, super_transitions=15, budget=400,
                               steps_bounds=(5, 30), pretrain_steps=500, progress=False)
    reg.fit(X, y)
    assert reg.score(X, y) > 0.8
    post = reg.idata_.posterior
    assert {"w.ih0", "log_tau.ih0"} <= set(post.data_vars)
    assert post.attrs["sampler"] == ("ahmc_dyn_a" if sampler == "dyn_a" else "ahmc_dyn_b")
    if sampler == "dyn-b":
        assert "u.ih0" in reg.result_.idata.unconstrained_posterior
    assert "tuning" in reg.result_.idata.groups()
