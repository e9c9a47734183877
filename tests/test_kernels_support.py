"""The compact set M of adaptive HMC (Wang, Mohamed & de Freitas 2013 §4, Proposition 3):
`support=` for ahmc and armhmc rejects a proposal outside M.

The statistical test: a standard normal truncated to a box whose first coordinate is the
interval [−0.5, 1.5] and whose other two are the 2-D box [−1, 0.5] × [0, 2] (independent
coordinates, so scipy.stats.truncnorm gives each truncated mean and variance exactly; one
box, so that each variant compiles once). The restricted AHMC transition (fixed ε = 0.6,
L_r ~ U{1..4}, 8 chains × 1500 draws per seed, 4 seeds) must give every mean and variance
within Z_MAX Monte-Carlo standard errors (ArviZ's `mcse` of x and of (x − μ)²). Measured
over 20 seeds: the 120 z-scores have standard deviation 1.04 and max |z| = 2.9. The broken
variant that clips a proposal into the box instead of rejecting it (a test-local leapfrog,
below) fails the same test on every seed and every coordinate: its |z| are 18 to 73.
"""

import argparse
import json

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import bomcmc
from bomcmc import Posterior, registry
from bomcmc.cli.flags import add_sampler_flags, given_options
from bomcmc.errors import BomcmcError
from bomcmc.kernels import ahmc, hmc, rmhmc, support
from bomcmc.kernels.integrators import leapfrog

from runs import cut_copy

Z_MAX = 4.0  # the largest |error| / MCSE allowed (measured max over 20 seeds: 2.9)
SEEDS = (0, 1, 2, 3)
LOWER, UPPER = np.array([-0.5, -1.0, 0.0]), np.array([1.5, 0.5, 2.0])


def _logp(x):
    return -0.5 * jnp.sum(x ** 2)


def _chains(kernel, knobs, lo, hi, chains=8, draws=1500):
    """`chains` chains per seed of `kernel` from the box's centre, every seed's at once:
    positions of shape (seeds, chains, draws, D)."""
    x0 = jnp.asarray((lo + hi) / 2) * jnp.ones((len(SEEDS) * chains, lo.size))

    def chain(key, x):
        def body(state, t):
            state, _ = kernel.step(jax.random.fold_in(key, t), state, _logp, knobs)
            return state, state.position
        return jax.lax.scan(body, kernel.init(x, _logp), jnp.arange(draws))[1]

    keys = jnp.concatenate([jax.random.split(jax.random.PRNGKey(s), chains) for s in SEEDS])
    pos = jax.jit(jax.vmap(chain))(keys, x0)
    return np.asarray(pos).reshape(len(SEEDS), chains, draws, lo.size)


def _z_scores(pos, lo, hi):
    """(error of the mean, error of the variance) / MCSE per coordinate, against truncnorm."""
    z = []
    for i in range(lo.size):
        exact = stats.truncnorm(lo[i], hi[i])
        x = pos[..., i]
        sq = (x - exact.mean()) ** 2
        for est, target in ((x, exact.mean()), (sq, exact.var())):
            z.append((est.mean() - target) / np.asarray(az.mcse(est, method="mean")).item())
    return np.array(z)


def _restricted(lo, hi):
    kernel = support.restrict(ahmc.kernel, support.box_test(lo, hi), support.box(lo, hi))
    return kernel, kernel.make_knobs(lo.size, step_size=0.6, steps=4, support=(lo, hi))


def test_rejecting_outside_the_box_gives_the_truncated_moments():
    lo, hi = LOWER, UPPER
    pos = _chains(*_restricted(lo, hi), lo, hi)
    assert np.all((pos >= lo) & (pos <= hi))
    z = np.array([_z_scores(p, lo, hi) for p in pos])
    assert np.abs(z).max() < Z_MAX, z


def test_clipping_into_the_box_fails_the_same_test(monkeypatch):
    """The broken variant: a proposal outside the box is moved onto its boundary (and then
    accepted or rejected as usual) instead of being rejected."""
    lo, hi = LOWER, UPPER

    def clipping(state, logdensity_fn, *args):
        end = leapfrog(state, logdensity_fn, *args)
        x = jnp.clip(end.position, lo, hi)
        lp, grad = jax.value_and_grad(logdensity_fn)(x)
        return end._replace(position=x, logdensity=lp, logdensity_grad=grad)

    monkeypatch.setattr(hmc, "leapfrog", clipping)
    kernel = ahmc.kernel
    pos = _chains(kernel, kernel.make_knobs(lo.size, step_size=0.6, steps=4), lo, hi)
    z = np.array([_z_scores(p, lo, hi) for p in pos]).reshape(len(SEEDS), lo.size, 2)
    assert np.all(np.abs(z).max(axis=2) > Z_MAX), z  # every seed, every coordinate fails


def test_rmhmc_rejects_a_proposal_outside_the_box():
    """RMHMC's transition (armhmc's kernel) with a box: every proposal outside is a
    rejection with acceptance probability 0, not a divergence, and the chains stay in M."""
    lo, hi = np.array([-0.5]), np.array([0.5])
    kernel = support.restrict(rmhmc.rmhmc_kernel(lambda x: jnp.eye(1) * (1.0 + x ** 2)),
                              support.box_test(lo, hi), support.box(lo, hi))
    knobs = kernel.make_knobs(1, step_size=0.5, steps=3, support=(lo, hi))

    def chain(key):
        def body(state, t):
            state, info = kernel.step(jax.random.fold_in(key, t), state, _logp, knobs)
            return state, (state.position, info.acceptance_rate, info.diverging)
        return jax.lax.scan(body, kernel.init(jnp.zeros(1), _logp), jnp.arange(200))[1]

    pos, acc, div = jax.jit(jax.vmap(chain))(jax.random.split(jax.random.PRNGKey(0), 4))
    assert np.all((np.asarray(pos) >= lo) & (np.asarray(pos) <= hi))
    assert np.mean(np.asarray(acc) == 0) > 0.1 and not np.any(np.asarray(div))


def test_ahmc_support_is_recorded_and_resumes_bit_for_bit(tmp_path, compilation_cache):
    """support= through sample(): config.json records the box, the draws stay in it, and a
    run resumed after its second chunk ends with the same draws (the resume loads the
    compiled chunk from the session's cache). The same run directory recording a membership
    test instead is refused by resume, in one line."""
    post = Posterior(_logp, jnp.array([0.2]), name="normal")
    kw = dict(sampler="ahmc", support=(-0.5, 1.5), chains=2, draws=40, warmup=20, bo_steps=2,
              seed=3, chunk_size=30, progress=False, init_strategy="init")
    full = bomcmc.sample(post, out=tmp_path / "full", **kw)
    x = np.asarray(full.idata.posterior["x"])
    assert x.min() >= -0.5 and x.max() <= 1.5
    config = json.loads((tmp_path / "full" / "config.json").read_text())
    assert config["knobs"] == {"support": [-0.5, 1.5]}
    cut = cut_copy(tmp_path / "full", tmp_path / "cut", keep=2)
    again = bomcmc.resume(cut, post, progress=False)
    np.testing.assert_array_equal(np.asarray(again.idata.posterior["x"]), x)

    cut = cut_copy(tmp_path / "full", tmp_path / "callable", keep=2)
    config["knobs"]["support"] = support.CALLABLE
    (cut / "config.json").write_text(json.dumps(config))
    with pytest.raises(BomcmcError, match="membership test .* cannot be resumed") as e:
        bomcmc.resume(cut, post)
    assert "\n" not in str(e.value)


def test_a_membership_test_is_recorded_as_callable():
    inside = lambda x: jnp.all(x > 0)  # noqa: E731
    smp = registry.get("ahmc")
    restricted, cfg = registry.with_support(
        smp, registry.configure(smp, {"support": inside}, warmup=10))
    assert restricted.kernel.support is inside and cfg.knobs == {"support": "callable"}


def test_the_mode_search_keeps_a_start_whose_mode_lies_outside():
    kernel = support.restrict(ahmc.kernel, support.box_test(0.5, 1.5), support.box(0.5, 1.5))
    x, _, steeper = jax.jit(lambda x: kernel.start(x, _logp))(jnp.array([1.0]))
    assert float(x[0]) == 1.0 and not bool(steeper)  # the mode, 0, is outside [0.5, 1.5]


@pytest.mark.parametrize("value, needle", [
    ((1.0, 0.0), "lower < upper"), ("box", "a box"), ((0.0,), "a box"),
    (([0.0, 0.0], [1.0]), "one length"), (([0.0, 0.0], [1.0, 1.0]), "1 dimensions")])
def test_a_bad_support_is_one_line(value, needle):
    post = Posterior(_logp, jnp.array([0.2]), name="normal")
    with pytest.raises(BomcmcError, match=needle) as e:
        bomcmc.sample(post, sampler="ahmc", support=value, chains=2, draws=5, warmup=5,
                      progress=False, init_strategy="init")
    assert "\n" not in str(e.value)


def test_a_start_outside_the_support_is_one_line():
    post = Posterior(_logp, jnp.array([2.0]), name="normal")
    with pytest.raises(BomcmcError, match="initial position lies outside the sampler's "
                                          "support"):
        bomcmc.sample(post, sampler=hmc.kernel, support=(-0.5, 1.5), chains=2, draws=5,
                      warmup=0, progress=False, init_strategy="init")


def test_armhmc_takes_support_and_the_others_do_not():
    """armhmc (callable or constant metric) is restricted; nuts and rmhmc take no support;
    without the option nothing changes (the golden draws hold that)."""
    for metric in (lambda x: jnp.eye(1), np.ones(1)):
        post = Posterior(_logp, jnp.array([0.2]), name="normal", metric_fn=metric)
        smp = registry.get("armhmc", post)
        cfg = registry.configure(smp, {"support": (0, 1)}, warmup=10)
        restricted, cfg = registry.with_support(smp, cfg)
        assert restricted.kernel.support is not None and cfg.knobs["support"] == [0.0, 1.0]
        with pytest.raises(BomcmcError, match="does not take support"):
            registry.configure(registry.get("rmhmc", post), {"support": (0, 1)}, warmup=10)
    with pytest.raises(BomcmcError, match="does not take support"):
        registry.configure(registry.get("nuts"), {"support": (0, 1)}, warmup=10)
    smp = registry.get("ahmc")
    assert registry.with_support(smp, registry.configure(smp, {}, warmup=10))[0] is smp


def test_the_cli_takes_support_as_a_box():
    p = argparse.ArgumentParser()
    add_sampler_flags(p)
    assert given_options(p.parse_args(["--support", "-0.5", "1.5"])) == {
        "support": [-0.5, 1.5]}
