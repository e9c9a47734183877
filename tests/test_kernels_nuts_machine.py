"""NUTS tick by tick (kernels/nuts_machine.py, sampler "nuts_async"): the same transition as
`nuts.step`, run by the driver one leapfrog step per loop iteration so that chains do not
wait for each other's trees."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from stats import assert_moments
from tiers import by_default

import bomcmc
from bomcmc import models
from bomcmc.posterior import flatten
from bomcmc.kernels import nuts, nuts_machine

SEEDS = (0, 1, 2)


def _via_machine(logdensity):
    m = nuts_machine

    def transition(key, state, knobs):
        s = m.begin(key, state, logdensity, knobs)

        def tick(s):
            s = m.step(s, logdensity, knobs)
            return jax.lax.cond(s.pending, lambda: m.settle(s, logdensity, knobs), lambda: s)

        return m.finish(jax.lax.while_loop(lambda s: ~s.done, tick, s), knobs)
    return jax.jit(transition)


# (posterior, step size, max tree depth): divergent trees, trees cut at the maximum depth,
# deep trees ended by a U-turn of the merged trajectory, and trees ended by a U-turn inside
# a subtree
CASES = [("eight_schools-eight_schools_noncentered", 1.5, 10), ("logistic-german", 0.01, 4),
         ("kidiq-kidscore_interaction", 0.05, 10), ("gauss-2d-corr", 0.1, 10)]


@pytest.mark.parametrize("name,eps,depth", CASES)
def test_machine_transition_equals_nuts_step(name, eps, depth):
    """Same key, same knobs: begin / step / settle / finish gives `nuts.step`'s state and info,
    bit for bit, transition after transition."""
    flat = flatten(models.get(name))
    logdensity = flat.logdensity_fn
    knobs = jax.tree_util.tree_map(jnp.asarray, nuts.make_knobs(
        flat.dim, step_size=eps, max_tree_depth=depth))
    ref = jax.jit(lambda k, s, kn: nuts.step(k, s, logdensity, kn))
    ours = _via_machine(logdensity)
    a = b = nuts.init(flat.init_flat(jax.random.PRNGKey(0), 1, 1.0)[0], logdensity)
    seen = {"diverging": 0, "max depth": 0, "full depth": 0}
    for t in range(60):
        key = jax.random.fold_in(jax.random.PRNGKey(1), t)
        a, ia = ref(key, a, knobs)
        b, ib = ours(key, b, knobs)
        for f in ia._fields:
            np.testing.assert_array_equal(getattr(ib, f), getattr(ia, f), err_msg=f"{f}, t={t}")
        np.testing.assert_array_equal(b.position, a.position)
        np.testing.assert_array_equal(b.logdensity_grad, a.logdensity_grad)
        seen["diverging"] += int(ia.diverging)
        seen["max depth"] += int(ia.tree_depth) == depth
        seen["full depth"] += int(ia.n_grad) == 2 ** int(ia.tree_depth) - 1
    # what the case is there for did happen
    if name.startswith("eight"):
        assert seen["diverging"] > 0
    if name == "logistic-german":
        assert seen["max depth"] > 0
    if name == "gauss-2d-corr":
        assert seen["full depth"] < 60  # some trees ended inside a subtree (n < 2^depth - 1)


@pytest.mark.parametrize("thin", [1, 3])
def test_async_chunks_equal_lockstep_chunks(thin):
    """Fixed knobs, float64: the tick-by-tick chunks give the lockstep chunks' draws, over
    several chunks of uneven length and with thinning (n_grad summed, diverging any)."""
    kw = dict(posterior="gauss-2d-corr", chains=4, draws=60, warmup=0, seed=5, init_jitter=1.0,
              adapt=None, step_size=0.1, thin=thin, progress=False, chunk_seconds=None)
    a = bomcmc.sample(sampler="nuts_async", chunk_size=23, **kw)
    b = bomcmc.sample(sampler="nuts", chunk_size=60, **kw)
    for v in b.idata.posterior.data_vars:
        np.testing.assert_array_equal(a.idata.posterior[v].values, b.idata.posterior[v].values)
    for v in ("n_steps", "tree_depth", "diverging"):
        np.testing.assert_array_equal(a.idata.sample_stats[v].values,
                                      b.idata.sample_stats[v].values)
    for v in ("acceptance_rate", "energy", "lp"):
        np.testing.assert_allclose(a.idata.sample_stats[v].values,
                                   b.idata.sample_stats[v].values, rtol=1e-12, atol=1e-12)
    assert a.totals["n_grad"] == b.totals["n_grad"]
    n = a.idata.sample_stats["n_steps"].values
    assert n.min() < n.max()  # the chains' trees did differ in length


@pytest.mark.slow  # the suite's time: chunks of fixed knobs are compared in CI (above)
def test_async_chunking_does_not_change_draws():
    """With the window adapter in warm-up, float32: chunk boundaries change no draw."""
    kw = dict(posterior="logistic-ripley", sampler="nuts_async", chains=3, draws=40, warmup=60,
              seed=2, progress=False, float64=False, chunk_seconds=None)
    a = bomcmc.sample(chunk_size=100, **kw)
    b = bomcmc.sample(chunk_size=17, **kw)
    np.testing.assert_array_equal(a.idata.posterior["beta"].values,
                                  b.idata.posterior["beta"].values)
    np.testing.assert_array_equal(a.idata.sample_stats["step_size"].values,
                                  b.idata.sample_stats["step_size"].values)


@pytest.mark.slow  # the suite's time: chunks of fixed knobs are compared in CI (above)
def test_async_warmup_matches_lockstep_warmup_to_rounding():
    """The adapter sees each chain's transitions in the same order: the first warm-up
    transitions agree with the lockstep run to the last bits (later ones drift apart by
    rounding, which the adaptation then amplifies)."""
    from bomcmc import registry
    from bomcmc.driver import engine as R
    from bomcmc.options import SamplerConfig
    from bomcmc.store import MemoryStore

    outs = {}
    for label, smp in (("async", nuts_machine.kernel), ("lockstep", nuts.kernel)):
        spec = R.RunSpec(posterior="logistic-german", sampler=smp.name, chains=4, draws=1,
                         warmup=300, seed=3, chunk_size=300, float64=True,
                         config=SamplerConfig(adapt="window"))
        run = R.Run(spec, models.get("logistic-german"), MemoryStore(), None, registry.get(smp))
        st = run.initial_state()
        ad = run.initial_adapt_state(st)
        run.compile(st, ad)
        outs[label] = run.run_chunk(st, run.knobs, ad, 0, 20, 1)
    np.testing.assert_allclose(np.asarray(outs["async"][3][:, :20]),
                               np.asarray(outs["lockstep"][3][:, :20]), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.asarray(outs["async"][5].step_size[:, :20]),
                               np.asarray(outs["lockstep"][5].step_size[:, :20]), rtol=1e-10)


@pytest.mark.parametrize("seed", by_default(SEEDS, keep=1))
def test_async_illconditioned_100d_after_window_warmup(seed):
    """gauss-100-illcond with Stan's warm-up: every mean and variance within the Bonferroni
    bound of Monte-Carlo standard errors."""
    post = models.get("gauss-100-illcond")
    r = bomcmc.sample(posterior="gauss-100-illcond", sampler="nuts_async", chains=4,
                      draws=1000, warmup=1000, seed=seed, progress=False)
    assert_moments(np.asarray(r.idata.posterior["x"]), post.mean,
                   np.diag(post.cov), label=f"seed {seed}")
    assert r.totals["divergences"] == 0
