"""The IM sampler's tuners (tuning/im_tuner.py) and the spin samplers by name (registry):
the energy-ACF reward, IMBayesOpt's two phases (BO steps of 100 moves, then a frozen SIR
policy in fixed knob shapes), exactness of the policy it samples with on the enumerated
4 × 4 Ising grid, resume to identical draws, the bandit alternative, and one-line errors."""

import json

import numpy as np
import pytest
from scipy import stats

import bomcmc
from bomcmc.errors import BomcmcError
from bomcmc.tuning.im_tuner import gp_mean_surface
from bomcmc.tuning.rewards import acf_area, energy_acf, energy_jump

from runs import cut_copy
from test_kernels_intracluster import ENUM_4X4, _chi2_levels, _energy, _exact_levels

pytestmark = pytest.mark.usefixtures("compilation_cache")  # fixture in conftest.py


# ---------------------------------------------------------------------------------------
# The reward: h of the energy series
# ---------------------------------------------------------------------------------------
def test_energy_acf_is_h_of_the_energy_series():
    rng = np.random.default_rng(0)
    e = rng.normal(size=(4, 100)).cumsum(axis=1) * 0.1 + rng.normal(size=(4, 100))
    beta = 0.44
    h = energy_acf({"lp": -beta * e})
    assert h == pytest.approx(acf_area({"positions": e[..., None]}), abs=1e-12)
    # white noise mixes perfectly, a slow AR(1) badly, a stuck chain not at all; over seeds
    # 0-299, white noise gave h in [0.80, 0.84] and the AR(1) with φ = 0.99 [0.44, 0.62]
    white = energy_acf({"lp": rng.normal(size=(8, 100))})
    ar = np.zeros((8, 100))
    for t in range(1, 100):
        ar[:, t] = 0.99 * ar[:, t - 1] + rng.normal(size=8)
    slow = energy_acf({"lp": ar})
    assert white > 0.75 and slow < 0.7, (white, slow)
    assert energy_acf({"lp": np.ones((2, 100))}) == 0.0
    assert np.isnan(energy_acf({"lp": np.ones((2, 20))}))  # shorter than l_min = 26


def _ar1(phi: float, chains: int, n: int, rng) -> np.ndarray:
    """Stationary AR(1) series of unit variance: x_t = φ x_{t−1} + √(1 − φ²) ε_t."""
    x = np.empty((chains, n))
    x[:, 0] = rng.normal(size=chains)
    for t in range(1, n):
        x[:, t] = phi * x[:, t - 1] + np.sqrt(1 - phi * phi) * rng.normal(size=chains)
    return x


@pytest.mark.parametrize("phi", [0.5, 0.9, 0.99])
def test_energy_jump_estimates_twice_the_variance_times_one_minus_the_lag_one_acf(phi):
    """E[J] = 2σ²(1 − ρ₁) − 2σ²(1 − ρ₁ⁿ⁻¹)/(n − 1)² on blocks of n = 100 moves (the second
    term is the block's mean jump, which J removes), σ² = 1 and ρ₁ = φ for the AR(1): within
    4 standard errors of the mean over 400 independent blocks (the blocks' own spread;
    measured −1.5 to 0.1 here, −2.0 to 1.8 over five other seeds each). A jump over two
    moves (E = 2(1 − φ²)) fails it by 38–57 standard errors, J divided by the block's own
    variance by 6–25. A drift added to the block does not change J. J is in units of lp:
    −βE gives β² times E's."""
    rng = np.random.default_rng(int(phi * 100))
    x = _ar1(phi, 400, 100, rng)
    per_block = np.array([energy_jump({"lp": b}) for b in x])
    se = per_block.std(ddof=1) / np.sqrt(per_block.size)
    expected = 2 * (1 - phi) - 2 * (1 - phi ** 99) / 99 ** 2
    assert abs(per_block.mean() - expected) < 4 * se, (per_block.mean(), expected, se)
    drift = 0.5 * np.arange(100)
    assert energy_jump({"lp": x[:8] + drift}) == pytest.approx(energy_jump({"lp": x[:8]}),
                                                               rel=1e-9)
    beta = 0.44
    assert energy_jump({"lp": -beta * x[:8]}) == pytest.approx(
        beta ** 2 * energy_jump({"lp": x[:8]}), rel=1e-12)
    assert energy_jump({"lp": np.ones((2, 100))}) == 0.0  # stuck chains
    assert np.isnan(energy_jump({"lp": np.ones((2, 1))}))  # no jump to measure


# ---------------------------------------------------------------------------------------
# IMBayesOpt on the enumerated 4 × 4 grid
# ---------------------------------------------------------------------------------------
BO_RUN = dict(posterior="ising-4x4", sampler="im_bayesopt", chains=8, warmup=1500,
              draws=3000, chunk_size=1000, progress=False, policy_size=200)


def _chunks(path):
    return [dict(np.load(p)) for p in sorted((path / "chunks").glob("*.npz"))]


@pytest.fixture(scope="module")
def bo_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("im_bayesopt") / "run"
    res = bomcmc.sample(out=path, seed=0, **BO_RUN)
    return path, res


def test_bayesopt_adapts_in_blocks_of_100_then_samples_a_frozen_policy(bo_run):
    path, res = bo_run
    recs = _chunks(path)
    assert [int(r["phase"]) for r in recs] == [0] * 15 + [1] * 3
    assert all(r["positions"].shape[1] == 100 for r in recs[:15])
    for r in recs:  # the knobs' shape never changes: (chains, M)
        assert r["knobs.k"].shape == (8, 200) and r["knobs.gamma"].shape == (8, 200)
    for r in recs[:15]:  # one setting per BO step, in every slot and chain
        assert len(np.unique(r["knobs.k"])) == 1 and len(np.unique(r["knobs.gamma"])) == 1
    state = json.loads(res.idata.tuning.attrs["tuner_state"])
    policy = state["policy"]
    assert len(policy["k"]) == 200 and policy["n_candidates"] == 8 * 100  # k ∈ {1..8}
    assert min(policy["k"]) >= 1 and max(policy["k"]) <= 8
    assert 0.0 <= min(policy["gamma"]) and max(policy["gamma"]) <= 2 / 2.27 + 1e-12
    for r in recs[15:]:
        np.testing.assert_array_equal(r["knobs.k"][0], policy["k"])
    ks = np.asarray(res.idata.sample_stats.n_steps) // 2  # the moves drew from the policy
    assert len(np.unique(ks)) > 3
    assert set(np.unique(ks)) <= set(policy["k"])
    hist = res.idata.tuning  # the first block, from the initial state, is burn-in
    rewards = np.asarray(hist["reward"], dtype=float)
    assert hist.sizes["step"] == 15 and np.isnan(rewards[0]) and np.all(np.isfinite(rewards[1:]))
    gammas, k_grid, mu = gp_mean_surface(state)
    assert mu.shape == (8, 100) and np.all(np.isfinite(mu))


def test_bayesopt_policy_samples_the_exact_distribution(bo_run):
    """The sampling phase is a fixed mixture of exact IM kernels: the energy levels pass the
    chi-square test of test_kernels_intracluster. Measured over seeds 0-2 at the defaults (the
    energy jump, T = 0.2, γ stretched around β): acceptance 0.77-0.81, X² 2.9, 2.2, 11.2 on 6
    degrees of freedom against the 0.1 % point 22.5 (with h: 7.1, 2.1, 8.2)."""
    _, res = bo_run
    levels, p = _exact_levels(ENUM_4X4)
    x2, df = _chi2_levels(_energy(res, ENUM_4X4), levels, p)
    assert x2 < stats.chi2.isf(0.001, df), (x2, df)


@pytest.mark.parametrize("keep", [6, 16])  # cut in adaptation / in sampling
def test_cut_run_resumes_to_identical_draws_and_policy(bo_run, tmp_path, keep):
    path, full = bo_run
    cut = cut_copy(path, tmp_path / "cut", keep)
    resumed = bomcmc.resume(cut, progress=False)
    a, b = full.idata, resumed.idata
    np.testing.assert_array_equal(np.asarray(a.posterior["x"]), np.asarray(b.posterior["x"]))
    np.testing.assert_array_equal(np.asarray(a.sample_stats.n_steps),
                                  np.asarray(b.sample_stats.n_steps))
    assert a.tuning.attrs["tuner_state"] == b.tuning.attrs["tuner_state"]


def test_bayesopt_by_default_standardises_the_energy_jump(bo_run):
    """The sampler's default reward "energy_jump": each BO step's reward is J of its 100
    moves, but the first's (burn-in from the initial state) is not observed; the GP sees them
    standardised and the policy's weights are exp(μ / T) with T = 0.2 on that scale
    (recomputed here from the saved GP; from the unstandardised GP they differ). The tuner
    class keeps Mahendran's h, with the unstandardised GP and T = 0.1."""
    from bomcmc import schemas
    from bomcmc.tuning import sir_policy
    from bomcmc.tuning.im_tuner import SAMPLER_REWARD, IMBayesOptTuner

    declared = next(o.default for o in schemas.TUNERS["im_bayesopt"] if o.name == "reward")
    assert declared == SAMPLER_REWARD == "energy_jump"  # the schema's is the factory's
    path, res = bo_run
    state = json.loads(res.idata.tuning.attrs["tuner_state"])
    assert state["config"]["standardize"] is True and state["config"]["rescale"] is None
    rewards = np.asarray(res.idata.tuning["reward"], dtype=float)
    recs = _chunks(path)
    assert np.isnan(rewards[0])  # the first block, from the initial state, is burn-in
    np.testing.assert_allclose(rewards[1:], [energy_jump({"lp": r["lp"]}) for r in recs[1:15]],
                               rtol=1e-12)
    assert sum(state["gp"]["counts"]) == 14
    policy = state["policy"]
    assert policy["temperature"] == 0.2
    _, _, mu = gp_mean_surface(state)  # (k, γ) grid, the policy's candidates
    w = sir_policy.sir_weights(mu.T.ravel(), 0.2)
    assert policy["ess"] == pytest.approx(1 / np.sum(w ** 2), rel=1e-9)
    _, _, mu_raw = gp_mean_surface({**state, "config": {**state["config"],
                                                        "standardize": False}})
    w_raw = sir_policy.sir_weights(mu_raw.T.ravel(), 0.2)
    assert abs(policy["ess"] - 1 / np.sum(w_raw ** 2)) > 1.0
    h_tuner = IMBayesOptTuner((1, 8), (0.0, 1.0), warmup=100)
    assert h_tuner.config.standardize is False and h_tuner.temperature == 0.1
    with pytest.raises(BomcmcError, match="need the full GP"):
        IMBayesOptTuner((1, 8), (0.0, 1.0), warmup=100, reward="energy_jump", gp="sparse")
    assert h_tuner.burn_in_steps == 0
    jump_tuner = IMBayesOptTuner((1, 8), (0.0, 1.0), warmup=300, reward="energy_jump",
                                 burn_in_steps=0, standardize=False)
    assert jump_tuner.burn_in_steps == 0 and jump_tuner.config.standardize is False
    jump_tuner.bandit = jump_tuner.bandit._replace(i=1)  # as in the first BO step
    assert np.isfinite(jump_tuner._observed_reward(dict(recs[0])))  # observed when asked
    with pytest.raises(BomcmcError, match="standardize must be"):
        IMBayesOptTuner((1, 8), (0.0, 1.0), warmup=100, standardize="yes")
    with pytest.raises(BomcmcError, match="burn_in_steps must be"):
        IMBayesOptTuner((1, 8), (0.0, 1.0), warmup=300, burn_in_steps=3)
    one_step = IMBayesOptTuner((1, 8), (0.0, 1.0), warmup=100, reward="energy_jump")
    assert one_step.burn_in_steps == 0  # a single BO step is observed


def _without_reward_names(run_dir):
    """The run as bomcmc wrote it before 2026-12-02: no reward in its options (h was the
    default) and none in its tuner states."""
    cfg = json.loads((run_dir / "config.json").read_text())
    cfg["tuner_options"].pop("reward")
    (run_dir / "config.json").write_text(json.dumps(cfg))
    for f in sorted((run_dir / "chunks").glob("*.npz")):
        rec = dict(np.load(f))
        state = json.loads(str(rec["tuner_state"]))
        state["config"].pop("reward")
        rec["tuner_state"] = np.array(json.dumps(state))
        np.savez(f, **rec)


@pytest.mark.parametrize("keep", [4, 16])  # cut in adaptation / in sampling
def test_a_run_begun_under_the_old_default_resumes_with_it(tmp_path, keep):
    """A run begun with h when h was the default (its files name no reward) resumes with h,
    its T and its burn-in, to the draws of the whole run, though the sampler now defaults to
    the energy jump; a run that names its reward keeps it however the defaults change."""
    run = dict(BO_RUN, draws=1000, chunk_size=500, seed=1)
    full = bomcmc.sample(out=tmp_path / "full", reward="energy_acf", **run)
    cut = cut_copy(tmp_path / "full", tmp_path / "cut", keep)
    _without_reward_names(cut)
    resumed = bomcmc.resume(cut, progress=False)
    np.testing.assert_array_equal(np.asarray(full.idata.posterior["x"]),
                                  np.asarray(resumed.idata.posterior["x"]))
    state = json.loads(resumed.idata.tuning.attrs["tuner_state"])
    assert state["config"]["reward"] == "energy_acf" and state["config"]["temperature"] == 0.1


def test_gamma_searched_stretched_around_beta(tmp_path):
    """gamma_scale="beta" (the default): the GP sees γ as u = sign(γ − β) log(1 + 100 |γ − β|
    / β), so the policy's candidates crowd around β, where the IM move's acceptance falls
    off (docs/spins.md); the knobs stay γ, inside the box, and the state reloads.
    gamma_scale="linear" is Mahendran's axis. Run with Mahendran's reward h, which observes
    every block (no burn-in) and keeps T = 0.1."""
    from bomcmc.tuning import bandit
    from bomcmc.tuning.im_tuner import im_box

    beta = 1 / 2.27
    box = im_box((1, 8), (0.0, 2 * beta), warp_at=beta)
    for g in (0.0, 0.3, beta - 1e-3, beta, beta + 0.02, 2 * beta):
        u = bandit.to_search(box, (g, 3))[0]
        assert bandit.to_knobs(box, (u, 3))[0] == pytest.approx(g, abs=1e-12)
    assert bandit.to_search(box, (0.43, 3))[0] < bandit.to_search(box, (0.44, 3))[0] - 1
    run = dict(posterior="ising-4x4", sampler="im_bayesopt", chains=2, warmup=300, draws=100,
               seed=0, progress=False, policy_size=50, reward="energy_acf")
    res = bomcmc.sample(**run)
    state = json.loads(res.idata.tuning.attrs["tuner_state"])
    assert bandit.box_from_json(state["box"]) == box
    assert np.all(np.isfinite(res.idata.tuning["reward"])) and state["policy"]["temperature"] == 0.1
    tried = np.asarray(res.idata.tuning["gamma"])
    assert tried.min() >= 0 and tried.max() <= 2 * beta
    policy = np.asarray(state["policy"]["gamma"])
    assert policy.min() >= 0 and policy.max() <= 2 * beta
    gammas, _, mu = gp_mean_surface(state)  # the candidates' γ: half within 10 % of β
    assert np.all(np.diff(gammas) > 0) and np.all(np.isfinite(mu))
    assert np.mean(np.abs(gammas - beta) < 0.1 * beta) > 0.5
    # the summary and its plot show the GP's points in γ, not in the GP's coordinates
    from bomcmc.diagnostics.spin_plots import (axis_of, describe_im_tuning, gamma_of,
                                               plot_im_surface)

    u = np.asarray(state["gp"]["X"])[:, 0]
    closed = beta + np.sign(u) * beta / 100 * np.expm1(np.abs(u))  # γ = β + sign(u) s(e^|u|−1)
    np.testing.assert_allclose(gamma_of(state, u), np.clip(closed, 0.0, 2 * beta), rtol=1e-12)
    np.testing.assert_allclose(axis_of(state, gamma_of(state, u)), u, rtol=1e-9, atol=1e-12)
    best = float(describe_im_tuning(state).split("at γ=")[1].split(",")[0])
    assert 0 <= best <= 2 * beta
    assert plot_im_surface(res, tmp_path / "surface.png").stat().st_size > 0
    linear = bomcmc.sample(**{**run, "warmup": 100, "draws": 10, "gamma_scale": "linear"})
    state = json.loads(linear.idata.tuning.attrs["tuner_state"])
    assert bandit.box_from_json(state["box"]) == im_box((1, 8), (0.0, 2 * beta))
    gammas, _, _ = gp_mean_surface(state)
    assert np.allclose(np.diff(gammas), gammas[1] - gammas[0])


# ---------------------------------------------------------------------------------------
# The bandit alternative, the other named samplers, errors
# ---------------------------------------------------------------------------------------
def test_bandit_keeps_adapting_within_the_box():
    res = bomcmc.sample(posterior="spinglass-3x3x3", sampler="im_bandit", chains=2,
                        warmup=500, draws=500, seed=1, progress=False, k_bounds=(1, 6),
                        gamma_bounds=(0.0, 1.5))
    hist = res.idata.tuning
    assert hist.sizes["step"] == 10  # one reward per block of 100 moves, in both phases
    assert set(np.asarray(hist["phase"]).tolist()) == {0, 1}
    ks = np.asarray(res.idata.sample_stats.n_steps) // 2
    gammas = np.asarray(res.idata.sample_stats.step_size)
    assert ks.min() >= 1 and ks.max() <= 6 and gammas.min() >= 0 and gammas.max() <= 1.5


def test_uniform_and_expert_policies():
    post = bomcmc.models.get("spinglass-9x9x9")
    model = post.spin_model
    unif = bomcmc.registry.get("im_unif", post).kernel.make_knobs(model.n)
    assert unif.k.shape == (50 * 100,) and sorted(set(unif.k.tolist())) == list(range(1, 51))
    assert unif.gamma.min() == 0.0 and unif.gamma.max() == pytest.approx(1.6)
    expert = bomcmc.registry.get("im_expert", post).kernel.make_knobs(model.n)
    assert expert.k.tolist() == list(range(1, 26)) and np.allclose(expert.gamma, 0.8)


@pytest.mark.parametrize("kw, match", [
    (dict(posterior="gauss-2d-corr", sampler="im"), "samples spin models"),
    (dict(posterior="ising-4x4", sampler="im_expert"), "no expert setting"),
    (dict(posterior="ising-4x4", sampler="im", k=9), r"k must be an integer in \[1, 8\]"),
    (dict(posterior="ising-4x4", sampler="im_bayesopt", warmup=0), "needs warmup >= 1"),
    (dict(posterior="ising-4x4", sampler="im_bayesopt", k_bounds=(0, 3)), "k_bounds"),
    (dict(posterior="ising-4x4", sampler="im_bayesopt", policy_size=0), "policy_size"),
    (dict(posterior="ising-4x4", sampler="im_bayesopt", reward="nope"), "unknown reward"),
])
def test_one_line_errors(kw, match):
    with pytest.raises(BomcmcError, match=match):
        bomcmc.sample(chains=1, draws=10, progress=False, **kw)


def test_the_learned_surface_is_described_and_plotted(bo_run, tmp_path):
    from bomcmc.diagnostics import spin_plots

    _, res = bo_run
    state = spin_plots.im_state(res)
    line = spin_plots.describe_im_tuning(state)
    # 15 BO steps, the first unobserved (burn-in)
    assert line.startswith("tuner (im_bayesopt): 14 rewards, best ")
    assert "frozen policy of 200 settings" in line
    path = spin_plots.plot_im_surface(res, tmp_path / "surface.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    plain = bomcmc.sample(posterior="ising-4x4", sampler="im", k=2, chains=1, draws=50,
                          warmup=0, progress=False)
    assert spin_plots.im_state(plain) is None
    with pytest.raises(ValueError, match="no IM tuning"):
        spin_plots.plot_im_surface(plain, tmp_path / "none.png")
