"""posteriordb posteriors (models/posteriordb.py): the log densities, and the
reference-posterior suite.

Quick tests (every registered posteriordb name):
- it builds, and the log density and its gradient are finite at the initializer's draws;
- the gradient matches central finite differences (float64);
- the log density equals an independent NumPyro implementation of the same model with NumPyro's
  own transforms (exp, sigmoid, ordered), up to an additive constant: differences between two
  points and the gradients agree. This catches transform and Jacobian mistakes;
- `constrain` reports exactly posteriordb's `dimensions`, named as the reference draws.

Reference suite (posteriors with reference draws): a sampler runs 4 chains and each parameter's
mean and sd on the constrained scale are compared with the reference (tests/reference.py:
|z| of the mean < 4, relative sd error < 10%). The sampler is the `sampler` fixture: the first
available of bomcmc NUTS + Stan window warm-up, bomcmc HMC + window warm-up, BlackJAX NUTS +
window adaptation. The slow version (`-m slow`) runs every available sampler, more draws,
seeds 0, 1, 2 and also the centred eight schools.
"""

from __future__ import annotations

import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import assert_matches, compare, table, worst
from tiers import by_default

import bomcmc
from bomcmc import models
from bomcmc.models import posteriordb as pdb
from bomcmc.posterior import flatten

NAMES = list(pdb.NAMES)
CENTERED = "eight_schools-eight_schools_centered"
WITH_REF = [n for n in NAMES if pdb.has_reference(n) and n != CENTERED]
# The default run's reference posteriors: a hierarchical model and a time series. The others
# repeat the same check on further posteriors and run with `-m slow`, where every posterior
# also runs at 4000 draws and five seeds (test_reference_posterior_long).
DEFAULT_REF = ("eight_schools-eight_schools_noncentered", "arK-arK")


# =======================================================================================
# Quick tests of the log densities
# =======================================================================================
def test_all_registered():
    assert set(NAMES) <= set(models.names())
    assert len(NAMES) == 10
    assert len(WITH_REF) == 7
    assert pdb.has_reference(CENTERED)
    assert not pdb.has_reference("wells_data-wells_dist")
    assert not pdb.has_reference("radon_mn-radon_hierarchical_intercept_noncentered")


@functools.lru_cache(maxsize=None)
def _flat(name):
    return flatten(models.get(name))


def _starts(name, n, seed=0):
    return np.asarray(_flat(name).init_flat(jax.random.key(seed), n))


@pytest.mark.parametrize("name", NAMES)
def test_builds_and_finite_at_initializer_draws(name):
    flat = _flat(name)
    assert flat.dim == flat.source.facts.dim
    starts = _starts(name, 8)
    assert np.all(np.abs(starts) <= 2.0) and np.ptp(starts, axis=0).min() > 0
    vg = jax.jit(jax.vmap(jax.value_and_grad(flat.logdensity_fn)))
    val, grad = vg(jnp.asarray(starts))
    assert np.all(np.isfinite(val)) and np.all(np.isfinite(grad))


@pytest.mark.parametrize("name", NAMES)
def test_gradient_matches_finite_differences(name):
    flat = _flat(name)
    f = jax.jit(flat.logdensity_fn)
    x = jnp.asarray(_starts(name, 1, seed=7)[0])
    grad = np.asarray(jax.grad(f)(x))
    h = 1e-5
    eye = np.eye(flat.dim) * h
    fd = np.asarray(jax.vmap(lambda e: (f(x + e) - f(x - e)) / (2 * h))(jnp.asarray(eye)))
    # float64 round-off of f (|f| up to ~4e6 for sblrc) over 2h, plus the O(h²) truncation
    atol = 1e-13 * (1 + abs(float(f(x)))) / h
    np.testing.assert_allclose(fd, grad, rtol=1e-6, atol=atol)


@pytest.mark.parametrize("name", NAMES)
def test_constrain_reports_posteriordb_dimensions(name):
    post = models.get(name)
    dims = pdb.posterior_info(name)["dimensions"]
    flat = _flat(name)
    out = flat.constrained(_starts(name, 2)[None])  # (1 chain, 2 draws, dim)
    assert sorted(out) == sorted(dims)  # (JAX returns dict outputs in sorted key order)
    for var, size in dims.items():
        assert out[var].shape == (1, 2) + (() if size == 1 else (size,))  # scalars are 0-d
    names = list(pdb.flatten_draws(out))
    assert len(names) == sum(dims.values())
    if pdb.has_reference(name):
        assert sorted(names) == sorted(pdb.reference(name))
    assert post.description == models.describe()[name]


def test_flatten_draws_stan_names():
    a = np.arange(2 * 3 * 2 * 2).reshape(2, 3, 2, 2)
    out = pdb.flatten_draws({"m": a, "s": np.zeros((2, 3))})
    assert list(out) == ["m[1,1]", "m[1,2]", "m[2,1]", "m[2,2]", "s"]
    np.testing.assert_array_equal(out["m[2,1]"], a[:, :, 1, 0])


def test_reference_summaries():
    for name in WITH_REF + [CENTERED]:
        ref = pdb.reference(name)
        for p, r in ref.items():
            assert set(r) == {"mean", "sd", "mcse_mean", "mcse_sd"}
            assert r["sd"] > 0 and 0 < r["mcse_mean"] < 0.05 * r["sd"], (name, p)
    assert pdb.reference(CENTERED) == pdb.reference("eight_schools-eight_schools_noncentered")
    tau = pdb.reference(CENTERED)["tau"]
    assert 3.0 < tau["mean"] < 4.5  # the well-known eight-schools posterior mean of tau
    with pytest.raises(bomcmc.BomcmcError, match="no reference"):
        pdb.reference("wells_data-wells_dist")


# ---------------------------------------------------------------------------------------
# The independent implementation: NumPyro models, written from MODELS.md
# ---------------------------------------------------------------------------------------
def _numpyro_model(name):
    import numpyro
    import numpyro.distributions as dist
    from numpyro.distributions import constraints

    sample, factor = numpyro.sample, numpyro.factor
    d = pdb.load_data(name.split("-")[0])
    A = lambda k: jnp.asarray(np.asarray(d[k], dtype=np.float64))  # noqa: E731

    def improper(support, n=None):
        return dist.ImproperUniform(support, (), () if n is None else (n,))

    if name == "eight_schools-eight_schools_noncentered":
        def model():
            mu = sample("mu", dist.Normal(0.0, 5.0))
            tau = sample("tau", dist.HalfCauchy(5.0))
            tt = sample("theta_trans", dist.Normal(0.0, 1.0).expand([d["J"]]))
            sample("y", dist.Normal(mu + tau * tt, A("sigma")), obs=A("y"))
    elif name == CENTERED:
        def model():
            mu = sample("mu", dist.Normal(0.0, 5.0))
            tau = sample("tau", dist.HalfCauchy(5.0))
            theta = sample("theta", dist.Normal(mu, tau).expand([d["J"]]))
            sample("y", dist.Normal(theta, A("sigma")), obs=A("y"))
    elif name in ("sblri-blr", "sblrc-blr"):
        def model():
            beta = sample("beta", dist.Normal(0.0, 10.0).expand([d["D"]]))
            sigma = sample("sigma", dist.HalfNormal(10.0))
            sample("y", dist.Normal(A("X") @ beta, sigma), obs=A("y"))
    elif name == "arK-arK":
        def model():
            K, T, y = d["K"], d["T"], A("y")
            alpha = sample("alpha", dist.Normal(0.0, 10.0))
            beta = sample("beta", dist.Normal(0.0, 10.0).expand([K]))
            sigma = sample("sigma", dist.HalfCauchy(2.5))
            # convolve(y, beta)[n] = Σ_j beta[j] y[n − j]: entry n = t − 1 is mu_t − alpha
            mu = alpha + jnp.convolve(y, beta, mode="valid")[:T - K]
            sample("y", dist.Normal(mu, sigma), obs=y[K:])
    elif name == "low_dim_gauss_mix-low_dim_gauss_mix":
        def model():
            mu = sample("mu", improper(constraints.ordered_vector, 2))
            factor("mu_prior", dist.Normal(0.0, 2.0).log_prob(mu).sum())
            sigma = sample("sigma", dist.HalfNormal(2.0).expand([2]))
            theta = sample("theta", dist.Beta(5.0, 5.0))
            mix = dist.MixtureSameFamily(dist.Categorical(probs=jnp.stack([theta, 1 - theta])),
                                         dist.Normal(mu, sigma))
            sample("y", mix, obs=A("y"))
    elif name == "mesquite-logmesquite":
        def model():
            beta = sample("beta", improper(constraints.real, 7))
            sigma = sample("sigma", improper(constraints.positive))
            lin = (beta[0] + beta[1] * jnp.log(A("diam1")) + beta[2] * jnp.log(A("diam2"))
                   + beta[3] * jnp.log(A("canopy_height")) + beta[4] * jnp.log(A("total_height"))
                   + beta[5] * jnp.log(A("density")) + beta[6] * A("group"))
            sample("lw", dist.Normal(lin, sigma), obs=jnp.log(A("weight")))
    elif name == "kidiq-kidscore_interaction":
        def model():
            beta = sample("beta", improper(constraints.real, 4))
            sigma = sample("sigma", dist.HalfCauchy(2.5))
            hs, iq = A("mom_hs"), A("mom_iq")
            lin = beta[0] + beta[1] * hs + beta[2] * iq + beta[3] * hs * iq
            sample("kid_score", dist.Normal(lin, sigma), obs=A("kid_score"))
    elif name == "wells_data-wells_dist":
        def model():
            beta = sample("beta", improper(constraints.real, 2))
            sample("switched", dist.Bernoulli(logits=beta[0] + beta[1] * A("dist")),
                   obs=A("switched"))
    elif name == "radon_mn-radon_hierarchical_intercept_noncentered":
        def model():
            J = d["J"]
            sigma_alpha = sample("sigma_alpha", dist.HalfNormal(1.0))
            sigma_y = sample("sigma_y", dist.HalfNormal(1.0))
            mu_alpha = sample("mu_alpha", dist.Normal(0.0, 10.0))
            beta = sample("beta", dist.Normal(0.0, 10.0).expand([2]))
            alpha_raw = sample("alpha_raw", dist.Normal(0.0, 1.0).expand([J]))
            alpha = mu_alpha + sigma_alpha * alpha_raw
            idx = np.asarray(d["county_idx"]) - 1
            mu = alpha[idx] + beta[0] * A("log_uppm") + beta[1] * A("floor_measure")
            sample("log_radon", dist.Normal(mu, sigma_y), obs=A("log_radon"))
    else:  # pragma: no cover - a new posterior needs its reference model here
        raise KeyError(name)
    return model


# our unconstrained coordinate -> NumPyro's name for the same unconstrained site
_RENAME = {"log_tau": "tau", "log_sigma": "sigma", "logit_theta": "theta", "mu_raw": "mu",
           "log_sigma_alpha": "sigma_alpha", "log_sigma_y": "sigma_y"}


@pytest.mark.parametrize("name", NAMES)
def test_logdensity_matches_numpyro(name):
    from numpyro.infer.util import potential_energy  # numpyro is in the dev extra: no skip

    model = _numpyro_model(name)
    flat = _flat(name)

    def numpyro_logp(x):
        params = {_RENAME.get(k, k): v for k, v in flat.unravel(x).items()}
        return -potential_energy(model, (), {}, params)

    ours = jax.jit(jax.value_and_grad(flat.logdensity_fn))
    theirs = jax.jit(jax.value_and_grad(numpyro_logp))
    xs = _starts(name, 3, seed=11)
    vals = [ours(jnp.asarray(x)) for x in xs]
    refs = [theirs(jnp.asarray(x)) for x in xs]
    scale = 1 + max(abs(float(v)) for v, _ in vals + refs)
    for (v, g), (rv, rg) in zip(vals, refs):
        # equal up to one additive constant: compare differences to the first point
        np.testing.assert_allclose(float(v - vals[0][0]), float(rv - refs[0][0]),
                                   rtol=1e-9, atol=1e-11 * scale)
        np.testing.assert_allclose(np.asarray(g), np.asarray(rg), rtol=1e-8,
                                   atol=1e-11 * scale)


# =======================================================================================
# The reference-posterior suite
# =======================================================================================
def _draws_bomcmc(sampler_name, post, seed, chains, warmup, draws, adapt="window", **knobs):
    res = bomcmc.sample(posterior=post, sampler=sampler_name, adapt=adapt, chains=chains,
                        draws=draws, warmup=warmup, seed=seed, progress=False, **knobs)
    return pdb.flatten_idata(res.idata), int(res.totals["divergences"])


@functools.lru_cache(maxsize=None)
def _blackjax_program(name, chains, warmup, draws):
    """One jitted program per (posterior, sizes): BlackJAX window adaptation (Stan's
    schedule, target 0.8) then NUTS, all chains vmapped; the seed is a runtime argument."""
    import blackjax

    flat = _flat(name)
    logdensity = flat.logdensity_fn

    def one_chain(x0, key):
        k_warm, k_samp = jax.random.split(key)
        adapt = blackjax.window_adaptation(blackjax.nuts, logdensity)
        (state, params), _ = adapt.run(k_warm, x0, num_steps=warmup)
        step = blackjax.nuts(logdensity, **params).step

        def body(st, k):
            st, info = step(k, st)
            return st, (st.position, info.is_divergent)

        _, (xs, div) = jax.lax.scan(body, state, jax.random.split(k_samp, draws))
        return xs, div

    return jax.jit(jax.vmap(one_chain))


def _draws_blackjax(post, seed, chains, warmup, draws):
    flat = _flat(post.name)
    key = jax.random.key(seed)
    k_init, k_run = jax.random.split(key)
    x0 = flat.init_flat(k_init, chains)
    xs, div = _blackjax_program(post.name, chains, warmup, draws)(
        x0, jax.random.split(k_run, chains))
    return pdb.flatten_draws(flat.constrained(np.asarray(xs))), int(np.sum(div))


# Samplers in order of preference; each is available or not at import time. Adding one is one
# line here (name, availability, runner(post, seed, chains, warmup, draws) -> (draws, n_div)).
_SAMPLERS = [
    ("bomcmc-nuts", lambda: "nuts" in bomcmc.registry.names()
     and "window" in bomcmc.adaptation.adapter_names(),
     functools.partial(_draws_bomcmc, "nuts")),
    ("bomcmc-nuts-async", lambda: "nuts_async" in bomcmc.registry.names()
     and "window" in bomcmc.adaptation.adapter_names(),
     functools.partial(_draws_bomcmc, "nuts_async")),
    ("bomcmc-ahmc", lambda: "ahmc" in bomcmc.registry.names(),
     functools.partial(_draws_bomcmc, "ahmc", adapt=None)),
    ("bomcmc-hmc", lambda: "window" in bomcmc.adaptation.adapter_names(),
     functools.partial(_draws_bomcmc, "hmc", steps=32, random_steps=True)),
    ("blackjax-nuts", lambda: True, _draws_blackjax),
]


def _available():
    import bomcmc.adaptation  # noqa: F401 - make the attribute paths above resolvable

    return [(n, run) for n, ok, run in _SAMPLERS if ok()]


AVAILABLE = _available()
# In CI: the default sampler, bomcmc's adaptive HMC. bomcmc's NUTS (BlackJAX's kernel under
# Stan's window warm-up) and the tick-by-tick NUTS ("nuts_async") run these seven posteriors
# with `-m slow` (test_reference_posterior_long, 5 seeds of 4000 draws): NUTS's moments are
# checked in CI on the correlated and ill-conditioned Gaussians and the conjugate NumPyro
# models (tests/test_kernels_nuts.py, tests/test_kernels_nuts_machine.py,
# tests/test_models_numpyro.py), and nuts_async's transition equals NUTS's, so a second run
# of the seven in every CI run adds time (87 s of test time in one loaded run) and little
# power (the suite's time, README).
PREFERRED = [(n, run) for n, run in AVAILABLE if n == "bomcmc-ahmc"]


@pytest.fixture(params=[n for n, _ in PREFERRED], ids=[n for n, _ in PREFERRED])
def sampler(request, compilation_cache):
    """bomcmc's AHMC (PREFERRED): (label, runner)."""
    return request.param, dict(AVAILABLE)[request.param]


@pytest.fixture(params=[n for n, _ in AVAILABLE], ids=[n for n, _ in AVAILABLE])
def any_sampler(request, compilation_cache):
    """Every available sampler in turn: (label, runner)."""
    return request.param, dict(AVAILABLE)[request.param]


def _check(name, sampler, seeds, chains, warmup, draws):
    """Run `sampler` once per seed; print each comparison (pytest -s shows it) and a
    `RESULT {json}` line per run for collecting the numbers."""
    label, runner = sampler
    post = models.get(name)
    ref = pdb.reference(name)
    results = []
    for seed in seeds:
        draws_, n_div = runner(post, seed, chains, warmup, draws)
        rows = compare(draws_, ref)
        z, sd = worst(rows)
        print(f"\n{name} [{label}] seed {seed}: divergences {n_div}, max |z| {z:.2f}, "
              f"max sd err {sd:.3f}\n{table(rows)}")
        print("RESULT " + json.dumps({"posterior": name, "sampler": label, "seed": seed,
                                      "chains": chains, "warmup": warmup, "draws": draws,
                                      "divergences": n_div, "max_z": z, "max_sd_err": sd,
                                      "worst_z_param": max(rows, key=lambda r: r.z).param,
                                      "worst_sd_param": max(rows, key=lambda r: r.sd_err).param}))
        results.append((seed, rows, n_div))
    return results


@pytest.mark.parametrize("name", by_default(WITH_REF, keep=DEFAULT_REF))
def test_reference_posterior(name, sampler):
    """CI version: 4 chains, the default warm-up + 1000 draws, seeds 0, 1, 2."""
    # each sampler's default warm-up: NUTS's is Stan's 1000, AHMC's stops when it has learned
    for seed, rows, _ in _check(name, sampler, (0, 1, 2), 4, "auto", 1000):
        assert_matches(rows, f"{name} [{sampler[0]}] seed {seed}")


SLOW_SEEDS = (0, 1, 2, 3, 4)


@pytest.mark.slow
@pytest.mark.parametrize("name", WITH_REF)
def test_reference_posterior_long(name, any_sampler):
    """4 chains, 1000 warm-up + 4000 draws, seeds 0-4, every available sampler."""
    for seed, rows, _ in _check(name, any_sampler, SLOW_SEEDS, 4, 1000, 4000):
        assert_matches(rows, f"{name} [{any_sampler[0]}] seed {seed}")


@pytest.mark.slow
def test_centered_eight_schools_long(any_sampler):
    """The funnel: the sampler must report divergences. The comparison with the (non-centred)
    reference is printed, not asserted: tau's known upward bias here (the chains miss the
    funnel's neck) is the parameterisation's failure, not the model's; the numbers are in
    docs/reference_posteriors.md."""
    results = _check(CENTERED, any_sampler, SLOW_SEEDS, 4, 1000, 4000)
    assert sum(n for _, _, n in results) > 0, "no divergences reported on the centred funnel"
