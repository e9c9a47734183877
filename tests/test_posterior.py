"""Bad input is a one-line BomcmcError (a ValueError) naming the problem, never a deep traceback."""

import dataclasses

import jax.numpy as jnp
import numpy as np
import pytest

import bomcmc
from bomcmc import BomcmcError
from bomcmc.models.logistic import logistic_regression
from bomcmc.posterior import Posterior, flatten


def gauss(x):
    return -0.5 * jnp.sum(x**2)


def run(*args, **kw):
    kw.setdefault("draws", 5)
    kw.setdefault("warmup", 0)
    kw.setdefault("chains", 1)
    kw.setdefault("progress", False)
    return bomcmc.sample(*args, **kw)


@pytest.mark.parametrize(
    "args, kw, match",
    [
        ((gauss, jnp.array([0.0, jnp.nan])), {}, "NaN or inf"),
        ((gauss, {"a": np.array([], dtype=float)}), {}, "empty"),
        ((gauss, {"a": np.array(["x"])}), {}, "non-numeric"),
        ((lambda x: x, jnp.zeros(3)), {}, "must return a scalar"),
        ((lambda x: jnp.log(x[0] - 1.0), jnp.zeros(2)), {"init_strategy": "init"},
         "not finite at the initial position"),
        ((lambda x: jnp.log(x[0] - 5.0), jnp.zeros(2)), {}, "after 100 dispersed starts"),
        ((lambda x: x @ jnp.ones(4), jnp.zeros(3)), {}, "cannot be evaluated"),
        ((gauss,), {}, "init"),
        ((), {}, "nothing to sample"),
        ((gauss, jnp.zeros(2)), {"posterior": "gauss-2d-corr"}, "not both"),
        ((), {"posterior": "no-such-thing"}, "unknown posterior"),
        ((gauss, jnp.zeros(2)), {"sampler": "magic"}, "unknown sampler"),
        ((gauss, jnp.zeros(2)), {"chains": 0}, "chains"),
        ((gauss, jnp.zeros(2)), {"draws": -1}, "draws"),
        ((gauss, jnp.zeros(2)), {"warmup": 2.5}, "warmup"),
        ((gauss, jnp.zeros(2)), {"step_size": -0.1}, "step_size"),
        ((gauss, jnp.zeros(2)), {"steps": 0}, "steps"),
        ((gauss, jnp.zeros(2)), {"inverse_mass_matrix": [1.0, 1.0, 1.0]}, "shape"),
        ((gauss, jnp.zeros(2)), {"inverse_mass_matrix": [1.0, -1.0]}, "positive"),
        ((gauss, jnp.zeros(2)), {"no_such_knob": 1}, "no_such_knob"),
    ],
)
def test_bad_input_is_one_line_value_error(args, kw, match):
    with pytest.raises(ValueError, match=match) as exc:
        run(*args, **kw)
    assert isinstance(exc.value, BomcmcError)
    assert "\n" not in str(exc.value)


def test_a_box_the_dispersed_starts_miss_is_started_around_the_init():
    """A log density finite only on (0, 1)^6: a uniform(-2, 2) draw lands there once in 4096,
    so Stan's 100 draws miss it for nearly every chain. The starts are then drawn around the
    given init (within ±1, ±0.5, ...), still one per chain, and the run says how far."""
    from bomcmc.driver import engine

    def box(x):
        return jnp.where(jnp.all((x > 0.0) & (x < 1.0)), -jnp.sum((x - 0.5) ** 2), -jnp.inf)

    kw = dict(sampler="hmc", step_size=0.05, steps=5, chains=3, warmup=0, draws=20, seed=0,
              float64=True)
    res = run(box, np.full(6, 0.5), **kw)
    assert res.totals["init_spread"] == 0.5  # ±1 still misses (0, 1)^6 often; ±0.5 cannot
    first = res.idata.posterior["x"].values[:, 0]
    assert np.all((first > 0) & (first < 1)) and len({tuple(f) for f in first}) == 3
    with pytest.MonkeyPatch.context() as m:  # broken: no starts around the init
        m.setattr(engine, "NEAR_INIT_TRIES", 0)
        with pytest.raises(BomcmcError, match="after 100 dispersed starts"):
            run(box, np.full(6, 0.5), **kw)


def test_non_finite_gradient_at_init():
    with pytest.raises(BomcmcError, match="gradient"):
        flatten(Posterior(lambda x: jnp.sum(jnp.sqrt(x)), jnp.zeros(2)))


def test_nan_in_data_is_named():
    X = np.ones((5, 2))
    X[2, 1] = np.nan
    with pytest.raises(BomcmcError, match="'X' has 1 non-finite"):
        logistic_regression(X, np.zeros(5))


def test_wrong_data_shapes_and_labels():
    with pytest.raises(BomcmcError, match="X must be"):
        logistic_regression(np.ones((5, 2)), np.zeros(4))
    with pytest.raises(BomcmcError, match="0 or 1"):
        logistic_regression(np.ones((5, 2)), np.full(5, 2.0))


def test_chain_starting_where_density_is_infinite():
    """Dispersed starts from an initializer are checked per chain: these are never finite,
    so the chains start around the initial position instead; without one, an error."""
    post = Posterior(lambda x: jnp.where(x[0] > 0, gauss(x), -jnp.inf), jnp.ones(2),
                     initializer=lambda k: -jnp.ones(2))
    res = run(post, sampler="hmc", warmup=0, draws=5)
    assert res.totals["init_spread"] == 1.0
    assert np.all(res.idata.posterior["x"].values[:, 0, 0] > 0)
    with pytest.raises(BomcmcError, match="not finite"):
        run(dataclasses.replace(post, init_position=-jnp.ones(2)), sampler="hmc")


def test_variable_names_from_pytree():
    f = flatten(Posterior(lambda p: -jnp.sum(p["a"] ** 2) - p["b"] ** 2,
                          {"b": jnp.zeros(()), "a": jnp.zeros((2, 3))}))
    assert f.var_names == ("a", "b") and f.var_shapes == ((2, 3), ())
    split = f.split(np.arange(14.0).reshape(2, 7))
    assert split["a"].shape == (2, 2, 3) and split["b"].shape == (2,)
    np.testing.assert_array_equal(split["b"], [6.0, 13.0])


def test_what_a_posterior_knows_is_in_typed_fields():
    """Exact moments, the Riemannian metric, the blocks, the spin model and the facts of a
    built-in are fields of Posterior, not keys of a dict."""
    from bomcmc import models
    from bomcmc.models.log_gaussian_cox import LGCPFacts
    from bomcmc.models.stochastic_volatility import stochastic_volatility
    from bomcmc.posterior import RMHMCBlocks

    g = models.get("gauss-2d-corr")
    assert g.cov.shape == (2, 2) and g.mean.shape == (2,) and g.metric_fn is None
    lgcp = models.get("lgcp-3")
    assert isinstance(lgcp.facts, LGCPFacts) and lgcp.facts.n == 3
    assert np.shape(lgcp.metric_fn) == (9,)
    sv = stochastic_volatility(20)
    assert isinstance(sv.rmhmc_blocks, RMHMCBlocks) and sv.rmhmc_blocks.latent == (3, 23)
    assert models.get("ising-4x4").spin_model is not None and g.spin_model is None


def test_meta_of_earlier_code_sets_the_fields_or_is_one_line_error():
    blocks = {"latent": (0, 1), "parameters": (1, 2), "latent_metric": None,
              "parameter_metric": None}
    p = Posterior(gauss, jnp.zeros(2), meta={"mean": np.zeros(2), "cov": np.eye(2),
                                             "metric_fn": np.ones(2), "rmhmc_blocks": blocks,
                                             "model_file": "m.py:f"})
    assert p.model_file == "m.py:f" and p.cov.shape == (2, 2) and p.rmhmc_blocks.latent == (0, 1)
    assert flatten(p).source.metric_fn is p.metric_fn  # kept through dataclasses.replace
    with pytest.raises(BomcmcError, match=r"meta key\(s\) 'truth' unknown .*metric_fn") as e:
        Posterior(gauss, jnp.zeros(2), meta={"truth": 1})
    assert "\n" not in str(e.value)


def test_a_metric_sampler_takes_the_metric_field():
    r = run(Posterior(gauss, jnp.zeros(2), metric_fn=np.ones(2)), sampler="rmhmc",
            step_size=0.5, steps=3)
    assert r.idata.posterior["x"].shape == (1, 5, 2)
    with pytest.raises(BomcmcError, match="needs a Riemannian metric.*metric_fn=G"):
        run(gauss, jnp.zeros(2), sampler="rmhmc")


def test_dispersed_starts_are_the_initializers_draws_key_by_key():
    """The starts are drawn for all chains at once (vmapped, so that their cost does not grow
    with the chains), yet each is the initializer's draw for its chain's key; an initializer
    JAX cannot trace (NumPy on the key) is called key by key and gives the same starts."""
    import jax
    from jax.flatten_util import ravel_pytree

    def init(key):
        return {"a": jax.random.normal(key, (2,)), "b": jax.random.uniform(key, ())}

    def init_numpy(key):  # concretizes the key: not traceable under vmap
        seed = int(np.asarray(jax.random.key_data(key)).ravel()[-1])
        return {"a": np.random.default_rng(seed).normal(size=2), "b": np.float32(0.5)}

    key = jax.random.PRNGKey(3)
    keys = jax.random.split(key, 5)
    for fn in (init, init_numpy):
        flat = flatten(Posterior(lambda p: -jnp.sum(p["a"] ** 2) - p["b"] ** 2,
                                 {"a": jnp.zeros(2), "b": jnp.zeros(())}, initializer=fn))
        one_by_one = np.stack([np.asarray(ravel_pytree(fn(k))[0]) for k in keys])
        np.testing.assert_array_equal(np.asarray(flat.init_flat(key, 5)), one_by_one)
    german = flatten(bomcmc.models.get("logistic-german"))
    assert german.init_flat(key, 64).shape == (64, german.dim)


def test_the_gradients_pieces_are_finished_before_the_flat_gradient_is_joined():
    """A posterior of several leaves puts them through an optimisation barrier, so that XLA
    cannot fuse the sums of a scalar leaf's gradient into the concatenation of the flat
    gradient (on a GPU that fusion ran serially: bomcmc.posterior, _BARRIER). The gradient's
    program must hold the barrier's transpose before its concatenation; one leaf needs none."""
    import jax

    def walk(jaxpr):  # the primitives in program order, nested jitted calls inlined
        for e in jaxpr.eqns:
            inner = e.params.get("jaxpr")  # a jitted call's (closed) jaxpr
            if hasattr(inner, "jaxpr") or hasattr(inner, "eqns"):
                yield from walk(getattr(inner, "jaxpr", inner))
            else:
                yield str(e.primitive)

    def prims(post):
        flat = flatten(post)
        jaxpr = jax.make_jaxpr(jax.vmap(jax.grad(flat.logdensity_fn)))(jnp.ones((3, flat.dim)))
        return list(walk(jaxpr.jaxpr))

    two = Posterior(logdensity_fn=lambda p: -jnp.exp(p["s"]) * jnp.sum(p["z"] ** 2) + p["s"],
                    init_position={"s": 0.0, "z": np.zeros(4)})
    seen = prims(two)
    assert seen.count("optimization_barrier") == 2, seen  # the leaves, then their gradients
    last_barrier = len(seen) - 1 - seen[::-1].index("optimization_barrier")
    assert seen.index("concatenate") > last_barrier
    one = Posterior(logdensity_fn=lambda p: -jnp.sum(p**2), init_position=np.zeros(4))
    assert "optimization_barrier" not in prims(one)
