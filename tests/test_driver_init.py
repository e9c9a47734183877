"""Where chains start: dispersed by default (Stan's and NumPyro's uniform(−2, 2)), drawn again
where the log density is not finite, at the init when asked, or one given start per chain."""

import jax.numpy as jnp
import numpy as np
import pytest

import bomcmc
from bomcmc import BomcmcError


def gauss(x):
    return -0.5 * jnp.sum(x**2)


def first_draws(**kw):
    kw = {**dict(sampler="hmc", chains=4, draws=1, warmup=0, seed=3, step_size=1e-9,
                 steps=1, progress=False, float64=True), **kw}
    res = bomcmc.sample(**kw)
    return np.concatenate([np.asarray(v).reshape(kw["chains"], -1)
                           for v in res.idata.posterior.values()], axis=1)


def test_chains_start_dispersed_by_default():
    """With a negligible step, the first draw is the start: each chain its own point in
    (−2, 2)^d, not the init."""
    x = first_draws(logdensity=gauss, init=jnp.full(3, 7.0))
    assert np.all(np.abs(x) < 2.0)
    assert len({tuple(r) for r in np.round(x, 12)}) == 4


def test_init_strategy_init_starts_every_chain_at_the_init():
    x = first_draws(logdensity=gauss, init=jnp.full(3, 7.0), init_strategy="init")
    np.testing.assert_allclose(x, 7.0, atol=1e-6)


def test_a_start_with_no_finite_density_is_drawn_again():
    """log(x₀ − 1) is finite on a quarter of the box: every chain still starts where it is."""
    x = first_draws(logdensity=lambda x: jnp.log(x[0] - 1.0) - 0.5 * jnp.sum(x**2),
                    init=jnp.zeros(2), chains=6)
    assert np.all(x[:, 0] > 1.0)


def test_per_chain_inits_as_a_leading_axis_or_a_list():
    starts = np.arange(12.0).reshape(4, 3)
    x = first_draws(logdensity=gauss, init=starts, init_per_chain=True)
    np.testing.assert_allclose(x, starts, atol=1e-6)
    trees = [{"a": np.array([float(c)]), "b": np.array([-float(c), 1.0])} for c in range(4)]
    y = first_draws(logdensity=lambda p: gauss(p["a"]) + gauss(p["b"]), init=trees,
                    init_per_chain=True)
    np.testing.assert_allclose(y[:, 0], np.arange(4.0), atol=1e-6)


def test_per_chain_inits_must_match_the_chains():
    with pytest.raises(BomcmcError, match="leading axis of 4 chains"):
        first_draws(logdensity=gauss, init=np.zeros((3, 2)), init_per_chain=True)
    with pytest.raises(BomcmcError, match="leading chain axis"):
        first_draws(logdensity=gauss, init={"a": np.zeros(())}, init_per_chain=True)
    with pytest.raises(BomcmcError, match="init_strategy"):
        first_draws(logdensity=gauss, init=np.zeros(2), init_strategy="everywhere")


def test_an_init_with_a_chain_sized_axis_is_not_guessed_per_chain():
    """A (4, 3) init without init_per_chain is one 12-number parameter, not four starts."""
    res = bomcmc.sample(gauss, np.zeros((4, 3)), sampler="hmc", chains=4, draws=2, warmup=0,
                        step_size=0.1, steps=2, progress=False)
    assert res.idata.posterior["x"].shape == (4, 2, 4, 3)
