"""Adaptive HMC's batch burn-in: chain groups with their own (ε, L), GP-BUCB batches, the L
cap that grows and shrinks, and the mode search's gradients counted in the warm-up."""

import json
import math

import jax
import numpy as np
import pytest

import bomcmc
from bomcmc.kernels import ahmc, hmc
from bomcmc.tuning import ahmc_tuner, bandit, batch_burn_in
from bomcmc.tuning.ahmc_tuner import AHMCTuner
from bomcmc.tuning.rewards import esjd

FAST = dict(progress=False, float64=True)

pytestmark = pytest.mark.usefixtures("compilation_cache")  # fixture in conftest.py


def _tuner(**kw):
    opts = dict(warmup=1000, eps_bounds=(0.01, 1.0), steps_bounds=(1, 100), seed=0,
                maxfun=60)
    return AHMCTuner(**{**opts, **kw})


def test_groups_are_contiguous_and_as_even_as_the_counts_allow():
    assert batch_burn_in.group_of(8, 4).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert np.bincount(batch_burn_in.group_of(10, 4)).tolist() == [3, 2, 3, 2]
    groups = batch_burn_in.groups
    assert [groups(None, c) for c in (1, 2, 3, 4, 7, 8, 16, 64)] == [1, 1, 1, 2, 3, 4, 4, 4]
    assert groups(1, 16) == 1 and groups(8, 4) == 4


def test_gp_bucb_batch_spreads_and_leaves_the_gp_alone():
    t = _tuner(steps_cap=0)
    t.reset_gp()
    for le, L, r in [(math.log(0.1), 10, 1.0), (math.log(0.3), 40, 0.5)]:
        t.bandit = bandit.observe(t.bandit, (le, L), r)
    before = t.gp.state_dict()
    batch = t.propose_batch(1.0, 4)
    assert batch[0] == t.propose(1.0)  # the first point is the plain proposal
    assert len(set(batch)) == 4  # the fantasised observations push the others away
    assert t.gp.state_dict() == before


def test_each_group_observes_its_own_chains():
    t = _tuner()
    t.set_points([(math.log(0.1), 2), (math.log(0.2), 4)])
    t.reset_gp()
    jumps = np.array([[1.0] * 5, [3.0] * 5, [10.0] * 5, [20.0] * 5])  # (4 chains, 5)
    info = {"esjd": jumps, "diverging": np.zeros_like(jumps, bool)}
    chunk = {"phase": 0, "positions": np.zeros((4, 5, 2)), "lp": np.zeros((4, 5)),
             "info": info}
    entries = t.observe_groups(chunk)
    assert [e["group"] for e in entries] == [0, 1]
    assert [e["L"] for e in entries] == [2, 4]
    assert entries[0]["reward"] == pytest.approx(2.0 / math.sqrt(2))  # chains 0, 1
    assert entries[1]["reward"] == pytest.approx(15.0 / math.sqrt(4))  # chains 2, 3
    assert entries[1]["reward"] == pytest.approx(esjd({**chunk, "num_steps": 4, "info": {
        "esjd": jumps[2:], "diverging": info["diverging"][2:]}}))
    assert t.gp.n_obs == 2


def test_the_cap_grows_near_its_top_and_carries_over_a_metric_update():
    t = _tuner()  # cap 8
    t.reset_gp()

    def grow():
        t.burn, t.bandit, grown = batch_burn_in.grow_steps(t.burn, t.bandit, t.config,
                                                           t.steps_max)
        return grown

    t.bandit = bandit.observe(t.bandit, (math.log(0.1), 4), 1.0)
    assert not grow() and t.upper[1] == 8  # the best L = 4 is not near 8
    t.bandit = bandit.observe(t.bandit, (math.log(0.1), 7), 3.0)
    scale = t.gp.lengthscales[1]
    assert grow() and t.upper[1] == 16  # the best L = 7 >= 3/4 of 8: doubled
    assert t.gp.n_obs == 2 and t.gp.lengthscales[1] == pytest.approx(scale * 15 / 7)
    t.bandit = bandit.observe(t.bandit, (math.log(0.1), 15), 9.0)
    assert grow() and t.upper[1] == 32
    # the grown box as JSON reads it back (a float), so a resumed state is the same text
    assert json.dumps(bandit.to_json(t.bandit)["box"]) == json.dumps(
        bandit.to_json(bandit.from_json(bandit.to_json(t.bandit), t.config))["box"])
    # a metric update: the new epoch's cap is twice the last epoch's best L
    t.reset_gp()
    t.bandit = bandit.observe(t.bandit, (math.log(0.1), 5), 1.0)
    t.burn = t.burn._replace(steps_cap=max(t.steps_cap_start, 2 * t.incumbent()[1]))
    t.bandit = t.bandit._replace(box=t.capped(t.bandit.box))
    assert t.upper[1] == 10
    full = _tuner(steps_cap=0)
    assert full.upper[1] == 100 and full.steps_cap is None


def test_batch_burn_in_runs_per_group_knobs_then_one_shared_setting(tmp_path):
    out = tmp_path / "run"
    res = bomcmc.sample(posterior="gauss-iid-3", sampler="ahmc", chains=8, warmup=200,
                        draws=40, seed=1, out=out, **FAST)
    recs = [dict(np.load(p)) for p in sorted((out / "chunks").glob("*.npz"))]
    group = batch_burn_in.group_of(8, 4)
    for r in recs:
        eps, steps = r["knobs.step_size"], r["knobs.num_steps"]
        for g in range(4):  # one setting per group
            assert len(set(eps[group == g])) == 1 and len(set(steps[group == g])) == 1
        entries = json.loads(str(r["tuner_history"]))
        if int(r["phase"]) == 0:
            assert [h["group"] for h in entries] == [0, 1, 2, 3]
            assert [h["eps"] for h in entries] == pytest.approx(
                [eps[group == g][0] for g in range(4)])
            assert [h["L"] for h in entries] == [int(steps[group == g][0]) for g in range(4)]
        else:  # sampling: every chain runs the incumbent
            assert len(set(eps)) == 1 and len(set(steps)) == 1 and len(entries) == 1
    distinct = [len(set(r["knobs.num_steps"])) for r in recs if int(r["phase"]) == 0]
    assert max(distinct) > 1  # the groups did run different settings
    # burn-in's L never exceeded the cap in force when it was proposed (the state the chunk
    # before left; the cap starts at 8, doubles at most once a step, and a metric update
    # restarts it at twice the last incumbent's L, so the last cap may be below an earlier one)
    warm = [r for r in recs if int(r["phase"]) == 0]
    caps = [ahmc_tuner.STEPS_CAP] + [json.loads(str(r["tuner_state"]))["steps_cap"]
                                     for r in warm[:-1]]
    warm_L = [int(r["knobs.num_steps"].max()) for r in warm]
    assert all(L <= cap for L, cap in zip(warm_L, caps)), list(zip(warm_L, caps))


def test_the_mode_search_counts_its_evaluations():
    from bomcmc import models
    from bomcmc.posterior import flatten

    flat = flatten(models.get("logistic-heart"))
    calls = [0]

    def logdensity(x):  # counts every evaluation as it happens
        jax.debug.callback(lambda: calls.__setitem__(0, calls[0] + 1))
        return flat.logdensity_fn(x)

    x0 = flat.init_flat(jax.random.PRNGKey(0), 2)
    counted = jax.jit(lambda x: ahmc.find_mode_counted(x, logdensity))  # compiled once
    for i in range(2):
        calls[0] = 0
        x, n = counted(x0[i])
        jax.block_until_ready(x)
        assert int(n) == calls[0] > 2
        np.testing.assert_array_equal(x, ahmc.find_mode(x0[i], flat.logdensity_fn))


def test_the_mode_search_restarts_where_a_line_search_went_uphill():
    """Where the backtracking line search runs out, optax's L-BFGS still takes the step, and
    it can go uphill: from these starts it had stopped there, 237–140 042 above the mode in
    −log π (one or more chains of 16 in each case). Restarting from the lowest point
    visited, every chain reaches the mode, and the evaluations are still all counted."""
    from bomcmc import models
    from bomcmc.posterior import flatten

    for name, seed in (("sblrc-blr", 0), ("sblrc-blr", 1), ("sblri-blr", 1),
                       ("mesquite-logmesquite", 1)):
        flat = flatten(models.get(name))
        x0 = flat.init_flat(jax.random.fold_in(jax.random.PRNGKey(seed), 0), 16)
        x, _ = jax.vmap(lambda x: ahmc.find_mode_counted(x, flat.logdensity_fn))(x0)
        u = -np.asarray(jax.vmap(flat.logdensity_fn)(x))
        assert np.all(u - u.min() < 1e-6 * (1 + abs(u.min()))), (name, seed, u - u.min())

    flat = flatten(models.get("sblrc-blr"))
    calls = [0]

    def logdensity(x):
        jax.debug.callback(lambda: calls.__setitem__(0, calls[0] + 1))
        return flat.logdensity_fn(x)

    start = flat.init_flat(jax.random.fold_in(jax.random.PRNGKey(0), 0), 16)[15]
    x, n = jax.jit(lambda x: ahmc.find_mode_counted(x, logdensity))(start)
    jax.block_until_ready(x)
    assert int(n) == calls[0] > 2


def test_the_warm_up_counts_the_mode_search(tmp_path):
    """totals["n_grad_warmup"] = the warm-up transitions' gradients + the L-BFGS start's,
    stored with the first chunk so that a resumed run keeps them, + the tuner's own: the
    Laplace Hessian (2 per chain and dimension, and the log density at each chain's start)
    and Stan's heuristic (one gradient per chain at the point and one per trial, at least two
    trials, run at the start and after each of the two metric updates), stored with the
    chunk after which they were spent."""
    from bomcmc import models
    from bomcmc.posterior import flatten

    kw = dict(posterior="logistic-heart", sampler="ahmc", chains=4, warmup=20, draws=10,
              seed=3, **FAST)
    res = bomcmc.sample(out=tmp_path / "run", **kw)
    recs = [dict(np.load(p)) for p in sorted((tmp_path / "run" / "chunks").glob("*.npz"))]
    transitions = sum(int(r["info.n_grad"].sum()) for r in recs if int(r["phase"]) == 0)
    flat = flatten(models.get("logistic-heart"))
    starts = flat.init_flat(jax.random.fold_in(jax.random.PRNGKey(3), 0), 4)
    _, n = jax.jit(jax.vmap(lambda x: ahmc.find_mode_counted(x, flat.logdensity_fn)))(starts)
    assert int(recs[0]["start_grads"]) == int(np.sum(n)) > 0
    tuner = sum(int(r["tuner_grads"]) for r in recs)
    C, d = 4, flat.dim
    assert tuner >= (2 * d + 1) * C + 3 * (C + 2 * C)
    assert res.totals["n_grad_warmup"] == transitions + int(np.sum(n)) + tuner
    assert bomcmc.load(tmp_path / "run").totals["n_grad_warmup"] == res.totals["n_grad_warmup"]
    plain = bomcmc.sample(posterior="logistic-heart", sampler="hmc", chains=4, warmup=5,
                          draws=5, seed=3, out=tmp_path / "hmc", **FAST)
    first = dict(np.load(sorted((tmp_path / "hmc" / "chunks").glob("*.npz"))[0]))
    assert int(first["start_grads"]) == 0 and plain.totals["n_grad_warmup"] == sum(
        int(np.asarray(dict(np.load(p))["info.n_grad"]).sum())
        for p in sorted((tmp_path / "hmc" / "chunks").glob("*.npz"))
        if int(dict(np.load(p))["phase"]) == 0)
    assert hmc.init is ahmc.kernel.init  # the start runs apart, before the plain init


def test_the_mode_search_reports_a_climb_down_a_funnel():
    """At a mode the gradient vanishes, so the search ends flatter than it began; on the
    centred LGCP with σ² sampled, whose density grows without bound as σ² → 0 with the field
    at its mean, it ends steeper (measured at log σ² −20.6 to −22.2 on lgcp-hyper-8)."""
    from bomcmc.posterior import flatten

    for name, climbs in (("logistic-heart", False), ("lgcp-hyper-8", True)):
        flat = flatten(bomcmc.models.get(name))
        starts = flat.init_flat(jax.random.fold_in(jax.random.PRNGKey(0), 0), 3)
        _, _, steeper = jax.jit(jax.vmap(
            lambda x: ahmc.find_mode_checked(x, flat.logdensity_fn)))(starts)
        assert np.asarray(steeper).tolist() == [climbs] * 3, name


def test_a_funnel_keeps_the_chains_out_of_its_neck():
    """When any chain's mode search ends steeper than it began, every chain starts from its
    own point. On lgcp-hyper-8 (σ²'s posterior 2.2 ± 0.7) every chain then explores σ²; with
    the L-BFGS points kept (the broken variant, the behaviour before) every chain sits at
    σ² ≈ 0."""
    import warnings

    kw = dict(posterior="lgcp-hyper-8", sampler="ahmc", chains=4, warmup=500, draws=300,
              seed=0, **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = bomcmc.sample(**kw)
    assert res.totals["start"].startswith("dispersed")
    per_chain = np.asarray(res.idata.posterior["sigma2"]).mean(axis=1)
    assert np.all(per_chain > 0.5), per_chain


def test_one_chain_reads_probe_searches_before_it_keeps_its_mode_search():
    """A run of one chain also searches from three further dispersed points, and starts
    dispersed if any search ends steeper. On funnel-10 (v ~ N(0, 3²)), one chain, seeds 0-7,
    every chain then starts dispersed and its v averages above -10 (measured -2.8 to 2.2;
    200 draws of one slowly mixing chain). Without the probes
    (the broken variant, `engine.PROBES = 1`) the chains of seeds 4 and 7 ended flatter, kept
    their searches' points down the neck and stayed there: v averaged -29.8 and -25.1. The
    test runs those two seeds and seed 0."""
    import warnings

    means = []
    for seed in (0, 4, 7):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = bomcmc.sample(posterior="funnel-10", sampler="ahmc", chains=1, warmup=300,
                                draws=200, seed=seed, **FAST)
        assert res.totals["start"].startswith("dispersed"), (seed, res.totals["start"])
        means.append(float(np.asarray(res.idata.posterior["v"]).mean()))
    assert np.all(np.asarray(means) > -10.0), means

