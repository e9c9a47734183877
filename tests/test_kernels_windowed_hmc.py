"""Windowed HMC (Neal 1994): exact on a Gaussian, plain HMC at W = 1, and two broken variants
(a window's state drawn uniformly instead of ∝ e^{−H}; no random offset of the current state)
failing the same checks.

The target is N(0, 1) in one dimension with ε = 1.9 (near leapfrog's stability limit ε = 2),
L = 6 and W = 3, where the energy varies along a trajectory by O(1): there the weights
e^{−H} and the offset matter, and leaving either out biases the variance by 15–60 MCSE.
"""

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats as sps
from stats import assert_moments, bonferroni_sigma, moment_z_scores

import bomcmc
from bomcmc import BomcmcError, models, schemas
from bomcmc.kernels import hmc, windowed_hmc

EPS, L, W = 1.9, 6, 3
SEEDS = (0, 1, 2)
CHAINS, DRAWS = 8, 4000


def logdensity(x):
    return -0.5 * jnp.sum(x**2)


def _uniform_choice(energy, key):
    """Broken: a window's state drawn uniformly among its finite-energy states."""
    return jnp.where(jnp.isfinite(energy), jax.random.gumbel(key, (), energy.dtype), -jnp.inf)


def _no_offset(u, window):
    """Broken: the current state always first in the reject window."""
    return jnp.zeros((), jnp.int32)


BROKEN = {"uniform choice": ("choice_score", _uniform_choice),
          "no offset": ("window_offset", _no_offset)}


def _chains(knobs, step=windowed_hmc.step):
    """(seeds, chains, draws, 1) draws and the mean acceptance, every seed in one program;
    transition t of chain c of seed s keyed fold_in(fold_in(PRNGKey(s), c), t)."""
    def chain(seed, c):
        key = jax.random.fold_in(jax.random.PRNGKey(seed), c)

        def body(state, t):
            state, info = step(jax.random.fold_in(key, t), state, logdensity, knobs)
            return state, (state.position, info.acceptance_rate)

        return jax.lax.scan(body, hmc.init(jnp.zeros(1), logdensity), jnp.arange(DRAWS))[1]

    run = jax.vmap(jax.vmap(chain, (None, 0)), (0, None))
    x, acc = jax.jit(run)(jnp.asarray(SEEDS), jnp.arange(CHAINS))
    return np.asarray(x), float(acc.mean())


@pytest.fixture(scope="module")
def knobs():
    return windowed_hmc.make_knobs(1, step_size=EPS, steps=L, window=W)


def test_exact_on_a_gaussian(knobs):
    """Mean and variance within the Bonferroni bound (4.1 MCSE for the 2 comparisons) on
    every seed."""
    x, acc = _chains(knobs)
    for s, draws in zip(SEEDS, x):
        assert_moments(draws, np.zeros(1), np.ones(1), label=f"seed {s}")
    assert 0.5 < acc < 1.0


@pytest.mark.parametrize("variant", sorted(BROKEN))
def test_broken_variant_fails_the_same_check(knobs, variant, monkeypatch):
    """The same runs with the window's weights or the offset left out: every seed's variance
    is off by more than the bound the exact kernel meets (by 50 and 15 MCSE)."""
    monkeypatch.setattr(windowed_hmc, *BROKEN[variant])
    x, _ = _chains(knobs)
    bound = bonferroni_sigma(2)
    for s, draws in zip(SEEDS, x):
        _, z_var = moment_z_scores(draws, np.zeros(1), np.ones(1))
        assert abs(z_var[0]) > 3 * bound, (variant, s, z_var)


def _one_transition(knobs, n=100_000, seed=7):
    """n independent starts x ~ N(0, 1) and one windowed transition from each: (x, x')."""
    k0, k1 = jax.random.split(jax.random.PRNGKey(seed))
    x = jax.random.normal(k0, (n, 1))

    def move(key, xi):
        return windowed_hmc.step(key, hmc.init(xi, logdensity), logdensity, knobs)[0].position

    x1 = jax.jit(jax.vmap(move))(jax.random.split(k1, n), x)
    return np.asarray(x)[:, 0], np.asarray(x1)[:, 0]


def _exchange_chi2(x, x1, bins=6) -> float:
    """p-value of the symmetry of the (x, x') table over N(0, 1)'s sextiles: detailed balance
    makes the pair exchangeable, N_ij ≈ N_ji (Σ_{i<j} (N_ij − N_ji)² / (N_ij + N_ji) ~ χ²)."""
    edges = sps.norm.ppf(np.linspace(0, 1, bins + 1)[1:-1])
    table = np.zeros((bins, bins))
    np.add.at(table, (np.digitize(x, edges), np.digitize(x1, edges)), 1)
    iu = np.triu_indices(bins, 1)
    a, b = table[iu], table.T[iu]
    return float(sps.chi2.sf(np.sum((a - b) ** 2 / (a + b)), len(a)))


def test_invariance_and_detailed_balance_from_independent_starts(knobs):
    """From 10⁵ independent draws of the target, one transition: x' ~ N(0, 1) (KS) and (x, x')
    exchangeable (χ² on a 6 × 6 table). (Checked once: the uniform-choice variant fails both
    with p < 1e-6.)"""
    x, x1 = _one_transition(knobs)
    assert sps.kstest(x1, "norm").pvalue > 1e-3
    assert _exchange_chi2(x, x1) > 1e-3


def test_window_of_one_is_hmc_draw_for_draw():
    """W = 1 is plain HMC, at a fixed L and at L_r ~ U{1..L}: the same keys give the same
    positions, bit for bit, over 300 transitions; W = L + 1 always accepts. The log density
    and ΔH agree to rounding (1e-12), not bit for bit: the windowed loop computes them in a
    loop body that XLA fuses differently from `hmc.step`'s (a last-bit difference that could, rarely, flip an accept
    decision)."""
    def logp(x):
        return -0.5 * jnp.sum(x**2 / jnp.array([1.0, 4.0]))

    def runner(step):
        def run(knobs):
            def body(state, t):
                state, info = step(jax.random.fold_in(jax.random.PRNGKey(3), t), state, logp,
                                   knobs)
                return state, (state.position, state.logdensity, info.acceptance_rate,
                               info.energy_error, info.n_grad)
            return jax.lax.scan(body, hmc.init(jnp.array([0.3, -1.0]), logp),
                                jnp.arange(300))[1]
        return jax.jit(run)  # the knobs are arguments: one program for both settings

    plain, windowed = runner(hmc.step), runner(windowed_hmc.step)
    for random_steps in (False, True):
        a = plain(hmc.default_knobs(2, step_size=0.7, steps=7, random_steps=random_steps))
        b = windowed(windowed_hmc.make_knobs(2, step_size=0.7, steps=7, window=1,
                                             random_steps=random_steps))
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[4], b[4])
        for i in (1, 2, 3):
            np.testing.assert_allclose(a[i], b[i], rtol=1e-12, atol=1e-12)
        assert 0.2 < float(np.mean(a[2])) < 1.0  # some rejections: the test is exercised
    # W = L + 1: both windows are the whole trajectory, P_acc = P_rej, every move accepted
    whole = windowed(windowed_hmc.make_knobs(2, step_size=0.7, steps=7, window=8))
    assert np.all(whole[2] == 1.0) and np.all(whole[3] == 0.0)


def test_the_sampler_whmc_through_the_driver():
    """`sampler="whmc"` with `window=`: registered, its knobs declared with make_knobs's
    defaults, a bad window one line, and a run of gauss-2d-corr exact."""
    declared = {o.name: o.default for o in schemas.KNOBS["whmc"]}
    sig = inspect.signature(windowed_hmc.make_knobs).parameters
    assert declared == {n: p.default for n, p in sig.items() if n != "dim"}
    with pytest.raises(BomcmcError, match="window must be at most steps"):
        windowed_hmc.make_knobs(2, steps=4, window=6)
    with pytest.raises(BomcmcError, match="window"):
        windowed_hmc.make_knobs(2, steps=4, window=0)
    post = models.get("gauss-2d-corr")
    r = bomcmc.sample(sampler="whmc", posterior="gauss-2d-corr", chains=4, draws=1500, warmup=0,
                      seed=1, step_size=0.15, steps=20, window=5, progress=False)
    assert_moments(np.asarray(r.idata.posterior["x"]), post.mean, np.diag(post.cov))
    assert float(r.idata.sample_stats["acceptance_rate"].mean()) > 0.8


def test_neal_gibbs_with_windows():
    """Neal's Gibbs-within-HMC built with windows (FBM's `hybrid L:W η`): W = 1 draws what
    the plain kernel draws (positions bit for bit); W > 1 is a declared knob of
    `neal_sampler(windowed=True)`, checked against L."""
    from bomcmc.bnn.network import BNN
    from bomcmc.bnn.samplers import neal_sampler
    from bomcmc.kernels.neal_gibbs_hmc import neal_kernel

    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 2))
    m = BNN(X, np.sin(X[:, :1]), hidden=(), prior="io 1:2 bo 1", noise="0.5:2")
    assert "window" in [o.name for o in neal_sampler(m, windowed=True).knobs]
    assert "window" not in [o.name for o in neal_sampler(m).knobs]
    with pytest.raises(BomcmcError, match="window must be at most steps"):
        neal_kernel(m, windowed=True).make_knobs(m.dim, steps=3, window=5)

    def logp(x):
        return m.logdensity(m.unravel(x))

    def run(kernel, knobs, n=20):
        def body(state, t):
            state, info = kernel.step(jax.random.fold_in(jax.random.PRNGKey(0), t), state,
                                      logp, knobs)
            return state, (state.position, info.acceptance_rate)
        x0 = m.ravel(m.posterior().initializer(jax.random.PRNGKey(1)))
        return jax.jit(lambda s: jax.lax.scan(body, s, jnp.arange(n))[1])(kernel.init(x0, logp))

    plain, windowed = neal_kernel(m), neal_kernel(m, windowed=True)
    a = run(plain, plain.make_knobs(m.dim, eta=0.3, steps=8))
    b = run(windowed, windowed.make_knobs(m.dim, eta=0.3, steps=8, window=1))
    np.testing.assert_array_equal(a[0], b[0])


def test_the_estimators_window_is_checked():
    """`BayesianMLPRegressor(window=...)`: a whole number ≥ 1, refused in one line before any
    work (W > L + 1 is refused by the kernel's knobs, above)."""
    from bomcmc import BayesianMLPRegressor

    X = np.zeros((4, 1))
    with pytest.raises(BomcmcError, match="window must be an integer >= 1"):
        BayesianMLPRegressor(sampler="neal_gibbs", window=0).fit(X, np.zeros(4))


def test_bnn_fit_passes_window_to_the_estimator(tmp_path, monkeypatch, capsys):
    """`bomcmc bnn fit --window W` runs the estimator with window=W (FBM's `hybrid L:W η`),
    and a window below 1 is a one-line error with exit status 2."""
    from bomcmc.bnn.regressor import BayesianMLPRegressor
    from bomcmc.cli.main import main

    data = tmp_path / "train.csv"
    data.write_text("x,y\n0.0,1.0\n1.0,2.0\n2.0,2.5\n")
    seen = {}

    class Stop(Exception):
        pass

    def fit(self, X, y):
        seen.update(window=self.window, sampler=self.sampler)
        raise Stop

    monkeypatch.setattr(BayesianMLPRegressor, "fit", fit)
    args = ["bnn", "fit", str(data), "--target", "y", "--out", str(tmp_path / "o"),
            "--sampler", "neal_gibbs", "--no-progress"]
    main(args + ["--window", "5"])  # the stand-in fit stops the command there
    assert seen == {"window": 5, "sampler": "neal_gibbs"}
    capsys.readouterr()
    assert main(args + ["--window", "0"]) == 2
    assert "--window" in capsys.readouterr().err
