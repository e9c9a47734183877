"""Two-phase Bayesian-optimised MCMC (Mahendran 2011, ch. 3; Mahendran et al. 2012):
`sample(..., sampler="two_phase")`.

Adaptation by EI on a GP over (log ε, L) in warm-up, then a frozen SIR policy of M settings
(Mahendran 2011, Alg. 2) that a mixture of M HMC kernels draws from at every transition.
"""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats as sps
from stats import assert_moments

import bomcmc
from bomcmc import models
from bomcmc.kernels import hmc, hmc_mixture
from bomcmc.tuning import sir_policy
from bomcmc.tuning.history import tuning_from_idata
from bomcmc.tuning.two_phase import TwoPhaseTuner, default_bo_steps, policy_from_idata

from runs import cut_copy

pytestmark = pytest.mark.usefixtures("compilation_cache")  # fixture in conftest.py

P_FAIL = 1e-6  # the frequency checks below fail a correct resampler with at most this chance


# ---------------------------------------------------------------------------------------
# (a) SIR weights and resampling
# ---------------------------------------------------------------------------------------
def test_sir_weights_are_the_normalised_exponentiated_mean():
    rng = np.random.default_rng(0)
    mu = rng.normal(size=200)
    for t in (1.0, 0.1):
        direct = np.exp(mu / t) / np.exp(mu / t).sum()
        np.testing.assert_allclose(sir_policy.sir_weights(mu, t), direct, rtol=1e-12)
    # stable where exp(μ) overflows: the weights depend on μ only up to a shift
    w = sir_policy.sir_weights(mu + 5000.0, 0.1)
    np.testing.assert_allclose(w, sir_policy.sir_weights(mu, 0.1), rtol=1e-9)
    assert np.isfinite(w).all() and w.sum() == pytest.approx(1.0)
    w = sir_policy.sir_weights(np.array([0.0, np.nan, 1.0]))  # a non-finite μ: weight 0
    np.testing.assert_allclose(w, [1 / (1 + np.e), 0.0, np.e / (1 + np.e)])
    with pytest.raises(ValueError, match="temperature"):
        sir_policy.sir_weights(mu, 0.0)


def test_resampling_frequencies_match_the_weights():
    """Multinomial: Pearson's χ² of the counts of m = 10⁵ draws below its 1 − P_FAIL quantile
    (df = N − 1), and every count within the per-category binomial bound
    |n_j − m w_j| < z √(m w_j (1 − w_j)), z = Φ⁻¹(1 − P_FAIL / (2N)). Systematic: every count
    is ⌊m w_j⌋ or ⌈m w_j⌉, exactly (Kitagawa)."""
    w = sir_policy.sir_weights(np.array([0.0, 0.3, -1.0, 1.2, 0.5, -3.0]), 0.5)
    n, m = w.size, 100_000
    idx = sir_policy.resample(w, m, np.random.default_rng(1), "multinomial")
    counts = np.bincount(idx, minlength=n)
    expected = m * w
    chi2 = float(np.sum((counts - expected) ** 2 / expected))
    assert chi2 < sps.chi2.isf(P_FAIL, df=n - 1), chi2
    z = sps.norm.isf(P_FAIL / (2 * n))
    assert np.all(np.abs(counts - expected) < z * np.sqrt(m * w * (1 - w)))
    for mm in (7, 50, 1000):
        idx = sir_policy.resample(w, mm, np.random.default_rng(2), "systematic")
        counts = np.bincount(idx, minlength=n)
        assert idx.shape == (mm,) and counts.sum() == mm
        assert np.all(counts >= np.floor(mm * w) - 1e-9) and np.all(counts <= np.ceil(mm * w))
    a = sir_policy.resample(w, 50, np.random.default_rng(3), "multinomial")
    np.testing.assert_array_equal(a, sir_policy.resample(w, 50, np.random.default_rng(3),
                                                         "multinomial"))  # seeded


# ---------------------------------------------------------------------------------------
# (b) candidates
# ---------------------------------------------------------------------------------------
def test_grid_and_lhs_candidates_lie_in_the_box_with_integer_L():
    lower, upper = np.array([np.log(0.01), 1.0]), np.array([np.log(0.5), 30.0])
    e, s = sir_policy.grid_candidates(lower, upper, n_eps=100)
    assert e.shape == s.shape == (100 * 30,) and s.dtype.kind == "i"
    assert set(s.tolist()) == set(range(1, 31))
    assert e.min() == pytest.approx(lower[0]) and e.max() == pytest.approx(upper[0])
    assert len(np.unique(e)) == 100
    n = 30 * 40
    e, s = sir_policy.lhs_candidates(lower, [np.log(0.5), 30.4], n, rng=np.random.default_rng(0))
    assert s.dtype.kind == "i" and s.min() >= 1 and s.max() <= 30
    assert np.all((e >= lower[0]) & (e <= upper[0]))
    # Latin hypercube: one point per stratum of log ε; every L gets n / 30 points
    strata = np.floor((e - lower[0]) / (upper[0] - lower[0]) * n).astype(int)
    np.testing.assert_array_equal(np.sort(strata), np.arange(n))
    np.testing.assert_array_equal(np.bincount(s)[1:], np.full(30, n // 30))
    # the policy: M pairs from the candidates, seeded
    mean_fn = lambda X: -((X[:, 0] - np.log(0.1)) ** 2) - ((X[:, 1] - 10) / 5) ** 2  # noqa: E731
    for cand in ("grid", "lhs"):
        p = sir_policy.build_policy(mean_fn, lower, upper, 50, np.random.default_rng(4),
                                    candidates=cand, temperature=0.5)
        assert len(p["eps"]) == len(p["L"]) == len(p["weight"]) == 50
        assert all(isinstance(v, int) and 1 <= v <= 30 for v in p["L"])
        assert all(0.01 * (1 - 1e-12) <= v <= 0.5 * (1 + 1e-12) for v in p["eps"])
        assert abs(np.median(np.log(p["eps"])) - np.log(0.1)) < 0.5  # near the peak
        again = sir_policy.build_policy(mean_fn, lower, upper, 50, np.random.default_rng(4),
                                        candidates=cand, temperature=0.5)
        assert again == p


# ---------------------------------------------------------------------------------------
# (c) the mixture kernel
# ---------------------------------------------------------------------------------------
def test_mixture_step_is_hmc_with_a_uniform_slot():
    post = models.get("gauss-2d-corr")
    logdensity = post.logdensity_fn
    state = hmc.init(jnp.array([0.3, -0.2]), logdensity)
    eps, steps = np.linspace(0.05, 0.2, 5), np.arange(3, 8, dtype=np.int32)
    knobs = hmc_mixture.MixtureKnobs(step_size=jnp.asarray(eps), num_steps=jnp.asarray(steps),
                                     inverse_mass_matrix=jnp.ones(2),
                                     random_steps=jnp.asarray(False))
    one = jax.jit(lambda k: hmc_mixture.step(k, state, logdensity, knobs))
    keys = jax.random.split(jax.random.PRNGKey(0), 4000)
    states, info = jax.vmap(one)(keys)
    k = np.asarray(info.policy_index)
    np.testing.assert_allclose(np.asarray(info.step_size), eps[k])
    np.testing.assert_array_equal(np.asarray(info.num_steps), steps[k])
    np.testing.assert_array_equal(np.asarray(info.n_steps), steps[k])  # random_steps off
    counts = np.bincount(k, minlength=5)  # uniform slots: χ² below its 1 − P_FAIL quantile
    chi2 = float(np.sum((counts - 800.0) ** 2 / 800.0))
    assert chi2 < sps.chi2.isf(P_FAIL, df=4), counts
    # the transition is hmc.step with (ε_k, L_k) and the same key, to rounding: the vmapped
    # and the single program fuse their arithmetic differently (equal on this project's
    # AVX2 machines; one ulp apart in a position and 7e-16 in an acceptance probability with
    # XLA's code for a CPU without FMA, --xla_cpu_max_isa=AVX)
    ref = jax.jit(lambda key, e, n: hmc.step(key, state, logdensity, hmc.HMCKnobs(
        e, n, jnp.ones(2), jnp.asarray(False))))
    for j in range(5):
        ref_state, ref_info = ref(keys[j], jnp.asarray(eps[k[j]]), jnp.asarray(steps[k[j]]))
        np.testing.assert_allclose(np.asarray(states.position[j]),
                                   np.asarray(ref_state.position), rtol=1e-12, atol=1e-15)
        assert float(info.acceptance_rate[j]) == pytest.approx(
            float(ref_info.acceptance_rate), rel=1e-12, abs=1e-15)


def test_tuner_phases_unit():
    """The tuner alone, on synthetic chunks: policy_size slots from the first knobs on; BO
    steps of m transitions (the first warmup mod I one longer) with every slot at the EI
    proposal; after the warm-up's last transition the policy, frozen."""
    chains, m_slots = 3, 8
    t = TwoPhaseTuner(warmup=105, bo_steps=10, policy_size=m_slots, reward="esjd",
                      eps_bounds=(0.01, 1.0), steps_bounds=(1, 30), mass="identity", seed=4,
                      maxfun=30, polish=False)
    kn = hmc_mixture.MixtureKnobs(step_size=np.full((chains, 50), 0.1),
                                  num_steps=np.full((chains, 50), 10, np.int32),
                                  inverse_mass_matrix=np.ones((chains, 2)),
                                  random_steps=np.ones(chains, bool))
    kn = t.initial_knobs(kn)
    assert kn.step_size.shape == kn.num_steps.shape == (chains, m_slots)
    assert kn.num_steps.dtype == np.int32
    lengths, phase = [], 0
    for j in range(14):
        d = t.chunk_draws(kn, 10_000)
        lengths.append(d)
        n = d if d is not None else 7
        assert len(np.unique(kn.step_size)) == (1 if t.policy is None else len(np.unique(
            t.policy["eps"])))
        eps = float(np.asarray(kn.step_size)[0, 0])
        info = {"esjd": np.full((chains, n), eps), "n_grad": np.ones((chains, n))}
        kn = t.after_chunk(kn, {"phase": phase, "positions": np.zeros((chains, n, 2)),
                                "info": info})
        assert kn.step_size.shape == (chains, m_slots)
        phase = 1 if t.policy is not None else 0
    assert lengths == [11] * 5 + [10] * 5 + [None] * 4
    assert len(t.history) == 10 and t.policy is not None
    np.testing.assert_array_equal(kn.num_steps, np.tile(t.policy["L"], (chains, 1)))
    np.testing.assert_allclose(kn.step_size, np.tile(t.policy["eps"], (chains, 1)))
    # the state round-trips, policy included
    state = json.loads(json.dumps(t.state_dict()))
    u = TwoPhaseTuner(warmup=105, bo_steps=10, policy_size=m_slots, reward="esjd",
                      eps_bounds=(0.01, 1.0), steps_bounds=(1, 30), mass="identity")
    u.load_state_dict(state)
    assert u.policy == t.policy and u.state_dict() == t.state_dict()


# The runs below share their compiled code (the session's persistent cache, conftest.py):
# the same log density, 4 chains, M = 50 slots, a buffer of 50 draws.
SHARED = dict(sampler="two_phase", chains=4, chunk_size=50, progress=False)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_two_phase_moments_on_the_correlated_gaussian(seed):
    """gauss-2d-corr with the defaults of "two_phase" (chunk_size only sets the buffer): 50 BO
    steps of 10 transitions (reward ESJD/√L), then the frozen mixture. Means and variances within the
    Bonferroni MCSE bound (tests/stats.py)."""
    post = models.get("gauss-2d-corr")
    res = bomcmc.sample(posterior="gauss-2d-corr", warmup=500, draws=1000, seed=seed, **SHARED)
    x = np.asarray(res.idata.posterior["x"])
    assert_moments(x, post.mean, np.diag(post.cov), label=f"two_phase seed {seed}")
    assert abs(np.corrcoef(x.reshape(-1, 2).T)[0, 1] - 0.99) < 0.01
    # the sampling phase ran the policy: slots drawn at random, the settings the policy's
    policy = policy_from_idata(res)
    ss = res.idata.sample_stats
    k = np.asarray(ss["policy_index"])
    assert len(np.unique(k)) == 50
    np.testing.assert_allclose(np.asarray(ss["step_size"]), np.asarray(policy["eps"])[k],
                               rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(ss["num_steps"]), np.asarray(policy["L"])[k])
    tuner, hist = tuning_from_idata(res)
    assert len(hist) == default_bo_steps(500, "esjd") == 50
    assert all(h["phase"] == 0 for h in hist)  # no adaptation after warm-up


# ---------------------------------------------------------------------------------------
# (d) fixed knob shapes, one compilation; (e) resume
# ---------------------------------------------------------------------------------------
RUN = dict(warmup=260, draws=60, seed=3, bo_steps=10, steps_bounds=(1, 20),
           candidates="lhs", n_candidates=2000, **SHARED)  # 10 BO steps of 26 transitions:
#                                                  the metric changes after steps 2 and 5


def _chunks(path):
    return [dict(np.load(p)) for p in sorted((path / "chunks").glob("*.npz"))]


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    """One run of gauss-2d-corr's log density, wrapped to count its traces, with the number
    of traces seen at every `after_chunk`."""
    post = models.get("gauss-2d-corr")
    traces, seen = [], []

    def logdensity(x):
        traces.append(1)
        return post.logdensity_fn(x)

    orig = TwoPhaseTuner.after_chunk

    def spy(self, knobs, chunk):
        seen.append(len(traces))
        return orig(self, knobs, chunk)

    TwoPhaseTuner.after_chunk = spy
    try:
        path = tmp_path_factory.mktemp("two_phase") / "full"
        res = bomcmc.sample(logdensity, post.init_position, out=path, **RUN)
    finally:
        TwoPhaseTuner.after_chunk = orig
    return path, res, logdensity, post.init_position, seen, len(traces)


def test_knob_shapes_are_fixed_and_the_run_never_recompiles(full_run):
    path, res, _, _, seen, n_traces = full_run
    recs = _chunks(path)
    assert [int(r["phase"]) for r in recs] == [0] * 10 + [1] * 2  # 50 + 10 draws sampled
    for r in recs:
        for f in ("knobs", "next_knobs"):
            assert r[f"{f}.step_size"].shape == (4, 50) and r[f"{f}.num_steps"].shape == (4, 50)
    # adaptation: the M slots hold one setting; sampling: the frozen policy
    for r in recs[:10]:
        assert len(np.unique(r["knobs.step_size"])) == 1
    policy = policy_from_idata(res)
    assert len(policy["eps"]) == 50 and policy["candidates"] == "lhs"
    assert policy["n_candidates"] == 2000 and max(policy["L"]) <= 20
    for r in recs[10:]:
        np.testing.assert_array_equal(r["knobs.num_steps"][0], policy["L"])
        np.testing.assert_array_equal(r["knobs.step_size"], r["next_knobs.step_size"])
    hist = tuning_from_idata(res)[1]
    assert [h["epoch"] for h in hist] == [0, 0, 1, 1, 1, 2, 2, 2, 2, 2]
    # no trace of the log density after the first chunk: one executable ran all 12 chunks,
    # in both phases (the heuristic of the metric updates reuses its own compiled function)
    assert len(seen) == 12 and seen[0] == seen[-1] == n_traces


@pytest.mark.parametrize("keep", [4, 11])  # cut in adaptation (after a metric update) / sampling
def test_cut_run_resumes_to_identical_draws_and_policy(full_run, tmp_path, keep):
    path, full, logdensity, init, _, _ = full_run
    cut = cut_copy(path, tmp_path / "cut", keep)
    resumed = bomcmc.resume(cut, logdensity, init, progress=False)
    a, b = full.idata, resumed.idata
    np.testing.assert_array_equal(np.asarray(a.posterior["x"]), np.asarray(b.posterior["x"]))
    for v in ("step_size", "num_steps", "policy_index"):
        np.testing.assert_array_equal(np.asarray(a.sample_stats[v]),
                                      np.asarray(b.sample_stats[v]))
    assert tuning_from_idata(a)[1] == tuning_from_idata(b)[1]
    assert a.tuning.attrs["tuner_state"] == b.tuning.attrs["tuner_state"]  # policy included


# ---------------------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw, match", [
    (dict(policy_size=0), "policy_size must be a positive integer"),
    (dict(candidates="sobol"), "candidates must be one of grid, lhs"),
    (dict(temperature=-1.0), "temperature must be a positive number"),
    (dict(resampling="residual"), "resampling must be one of"),
    (dict(reward="acf", bo_steps=20, warmup=100), "reward 'acf' needs BO steps of >= 26"),
    (dict(warmup=0), "needs warmup >= 1"),
    (dict(adapt="window"), "cannot run with adapt='window'"),
    (dict(schedule="power"), "sampler 'two_phase'"),  # not an option of two_phase: a knob it lacks
])
def test_options_are_validated_with_one_line_errors(kw, match):
    args = dict(posterior="gauss-2d-corr", draws=10, **SHARED)
    args.update({"warmup": 100, **kw})
    with pytest.raises(bomcmc.BomcmcError, match=match) as e:
        bomcmc.sample(**args)
    assert "\n" not in str(e.value)


def test_options_are_recorded_in_the_config():
    cfg_opts = dict(eps_bounds=(0.05, 0.5), steps_bounds=(1, 10), reward="esjd",
                    temperature=0.2, resampling="multinomial", mass="identity")
    res = bomcmc.sample(posterior="gauss-2d-corr", warmup=40, draws=20, seed=1, **cfg_opts,
                        **SHARED)
    cfg = json.loads(res.idata.posterior.attrs["config"])
    assert cfg["tuner_options"]["resampling"] == "multinomial" and cfg["knobs"] == {}
    policy = policy_from_idata(res)
    assert policy["method"] == "multinomial" and policy["temperature"] == 0.2
    assert all(0.05 <= e <= 0.5 for e in policy["eps"]) and max(policy["L"]) <= 10
    assert len(tuning_from_idata(res)[1]) == default_bo_steps(40, "esjd") == 4
