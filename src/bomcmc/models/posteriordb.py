"""Ten posteriors from posteriordb (stan-dev/posteriordb), written as JAX log densities.

Each model is the one stated as mathematics in the benchmark's `MODELS.md` (the Stan programs
themselves are not shipped). Sampling is on Stan's unconstrained space, log-Jacobians
included:

    x > 0            x = exp(u)                          log J = u
    x ∈ (0, 1)       x = sigmoid(u)                      log J = log x + log(1 − x)
    ordered (a < b)  a = u₁, b = u₁ + exp(u₂)            log J = u₂

Additive constants are kept where `jax.scipy.stats` keeps them and dropped elsewhere; no
sampler or test depends on them. Every posterior's `constrain` returns the quantities Stan
reports (posteriordb's `dimensions`: `theta`, `mu`, `tau` for the eight schools, `alpha` for
radon, ...), with scalars as 0-d arrays, so the InferenceData's `posterior` group carries the
same variables as the reference draws.

Data, the posterior and model info files and a summary of the reference draws are shipped in
`bomcmc/datasets/data/posteriordb/` (see `bomcmc/datasets/PROVENANCE.md`, BSD-3 licence
text beside the data). `reference(name)` gives the per-parameter mean, sd and their Monte-Carlo
standard errors of the reference draws (10 chains × 1000 draws, Stan NUTS), and
`flatten_idata(idata)` flattens a bomcmc InferenceData to the same names (`theta[1]`, ...).
"""

from __future__ import annotations

from functools import partial
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy import stats as jst

from ..errors import BomcmcError
from ..posterior import Posterior
from ..validation import finite_data

from .posteriordb_data import (flatten_draws, flatten_idata, has_reference, load_data,  # noqa: F401
                               posterior_info, reference, reference_name,
                               summarize_reference_draws)


def _arr(data: dict, key: str, name: str) -> np.ndarray:
    a = np.asarray(data[key], dtype=np.float64)
    finite_data(name, **{key: a})
    return a


# ---------------------------------------------------------------------------------------
# Transforms and densities
# ---------------------------------------------------------------------------------------
def _normal(x, loc, scale):
    return jnp.sum(jst.norm.logpdf(x, loc, scale))


def _half_cauchy(x, scale):
    return jnp.sum(jst.cauchy.logpdf(x, 0.0, scale))


def _positive(u):
    """x = exp(u) and its log-Jacobian (summed)."""
    return jnp.exp(u), jnp.sum(u)


def _as(dtype_like, a):
    return jnp.asarray(a, jnp.result_type(dtype_like))


class PosteriorDBFacts(NamedTuple):
    """What the model knows beyond its density (`Posterior.facts`): its posteriordb name,
    posteriordb's dimensions of the constrained parameters, the name of its reference
    posterior (None without one) and the flat vector's dimension."""

    posteriordb: str
    dimensions: dict
    reference_posterior_name: str | None
    dim: int


def _make(name: str, shapes: dict, logdensity: Callable, constrain: Callable,
          description: str) -> Posterior:
    """Wrap a model: zeros as the init position, Stan's uniform(-2, 2) start on every
    unconstrained coordinate as the initializer."""
    keys = list(shapes)

    def initializer(key):
        subkeys = jax.random.split(key, len(keys))
        return {k: jax.random.uniform(sk, shapes[k], minval=-2.0, maxval=2.0)
                for k, sk in zip(keys, subkeys)}

    info = posterior_info(name)
    facts = PosteriorDBFacts(
        posteriordb=name, dimensions=info["dimensions"],
        reference_posterior_name=info.get("reference_posterior_name"),
        dim=int(sum(int(np.prod(s, dtype=int)) for s in shapes.values())))
    return Posterior(
        logdensity_fn=logdensity,
        init_position={k: np.zeros(s) for k, s in shapes.items()},
        name=name,
        initializer=initializer,
        description=description,
        constrain=constrain,
        facts=facts,
    )


# ---------------------------------------------------------------------------------------
# The models
# ---------------------------------------------------------------------------------------
def eight_schools_noncentered() -> Posterior:
    name = "eight_schools-eight_schools_noncentered"
    d = load_data("eight_schools")
    J = int(d["J"])
    y, sigma = _arr(d, "y", name), _arr(d, "sigma", name)

    def constrain(p):
        tau = jnp.exp(p["log_tau"])
        return {"theta": p["mu"] + tau * p["theta_trans"], "mu": p["mu"], "tau": tau}

    def logdensity(p):
        c = constrain(p)
        return (_normal(p["theta_trans"], 0.0, 1.0)
                + _normal(_as(p["mu"], y), c["theta"], _as(p["mu"], sigma))
                + _normal(p["mu"], 0.0, 5.0)
                + _half_cauchy(c["tau"], 5.0) + p["log_tau"])

    return _make(name, {"theta_trans": (J,), "mu": (), "log_tau": ()}, logdensity, constrain,
                 DESCRIPTIONS[name])


def eight_schools_centered() -> Posterior:
    name = "eight_schools-eight_schools_centered"
    d = load_data("eight_schools")
    J = int(d["J"])
    y, sigma = _arr(d, "y", name), _arr(d, "sigma", name)

    def constrain(p):
        return {"theta": p["theta"], "mu": p["mu"], "tau": jnp.exp(p["log_tau"])}

    def logdensity(p):
        tau = jnp.exp(p["log_tau"])
        return (_half_cauchy(tau, 5.0) + p["log_tau"]
                + _normal(p["theta"], p["mu"], tau)
                + _normal(_as(p["mu"], y), p["theta"], _as(p["mu"], sigma))
                + _normal(p["mu"], 0.0, 5.0))

    return _make(name, {"theta": (J,), "mu": (), "log_tau": ()}, logdensity, constrain,
                 DESCRIPTIONS[name])


def blr(data_name: str) -> Posterior:
    name = f"{data_name}-blr"
    d = load_data(data_name)
    X, y = _arr(d, "X", name), _arr(d, "y", name)
    N, D = int(d["N"]), int(d["D"])
    if X.shape != (N, D) or y.shape != (N,):
        raise BomcmcError(f"{name}: X must be ({N}, {D}) and y ({N},)")

    def constrain(p):
        return {"beta": p["beta"], "sigma": jnp.exp(p["log_sigma"])}

    def logdensity(p):
        beta = p["beta"]
        sigma, logj = _positive(p["log_sigma"])
        return (_normal(beta, 0.0, 10.0) + _normal(sigma, 0.0, 10.0) + logj
                + _normal(_as(beta, y), _as(beta, X) @ beta, sigma))

    return _make(name, {"beta": (D,), "log_sigma": ()}, logdensity, constrain,
                 DESCRIPTIONS[name])


def arK() -> Posterior:
    name = "arK-arK"
    d = load_data("arK")
    K, T = int(d["K"]), int(d["T"])
    y = _arr(d, "y", name)
    # lags[t − K, k − 1] = y_{t−k} for t = K+1..T (1-based), i.e. rows t = K..T−1 0-based
    lags = np.stack([y[K - k: T - k] for k in range(1, K + 1)], axis=1)
    target = y[K:]

    def constrain(p):
        return {"alpha": p["alpha"], "beta": p["beta"], "sigma": jnp.exp(p["log_sigma"])}

    def logdensity(p):
        sigma, logj = _positive(p["log_sigma"])
        mu = p["alpha"] + _as(p["beta"], lags) @ p["beta"]
        return (_normal(p["alpha"], 0.0, 10.0) + _normal(p["beta"], 0.0, 10.0)
                + _half_cauchy(sigma, 2.5) + logj
                + _normal(_as(mu, target), mu, sigma))

    return _make(name, {"alpha": (), "beta": (K,), "log_sigma": ()}, logdensity, constrain,
                 DESCRIPTIONS[name])


def low_dim_gauss_mix() -> Posterior:
    name = "low_dim_gauss_mix-low_dim_gauss_mix"
    d = load_data("low_dim_gauss_mix")
    y = _arr(d, "y", name)

    def _mu(p):
        u = p["mu_raw"]
        return jnp.stack([u[0], u[0] + jnp.exp(u[1])])

    def constrain(p):
        return {"mu": _mu(p), "sigma": jnp.exp(p["log_sigma"]),
                "theta": jax.nn.sigmoid(p["logit_theta"])}

    def logdensity(p):
        mu = _mu(p)
        sigma, logj_sigma = _positive(p["log_sigma"])
        u = p["logit_theta"]
        log_t, log_1mt = jax.nn.log_sigmoid(u), jax.nn.log_sigmoid(-u)
        yj = _as(u, y)
        mix = jnp.logaddexp(log_t + jst.norm.logpdf(yj, mu[0], sigma[0]),
                            log_1mt + jst.norm.logpdf(yj, mu[1], sigma[1]))
        return (_normal(sigma, 0.0, 2.0) + logj_sigma
                + _normal(mu, 0.0, 2.0) + p["mu_raw"][1]
                + 4.0 * log_t + 4.0 * log_1mt  # Beta(5, 5) up to its constant
                + log_t + log_1mt  # Jacobian of the logit
                + jnp.sum(mix))

    return _make(name, {"mu_raw": (2,), "log_sigma": (2,), "logit_theta": ()}, logdensity,
                 constrain, DESCRIPTIONS[name])


def logmesquite() -> Posterior:
    name = "mesquite-logmesquite"
    d = load_data("mesquite")
    cols = {k: _arr(d, k, name) for k in
            ("weight", "diam1", "diam2", "canopy_height", "total_height", "density", "group")}
    if any(np.any(cols[k] <= 0) for k in cols if k != "group"):
        raise BomcmcError(f"{name}: a logged data column has a non-positive value")
    design = np.stack([np.ones_like(cols["weight"])]
                      + [np.log(cols[k]) for k in
                         ("diam1", "diam2", "canopy_height", "total_height", "density")]
                      + [cols["group"]], axis=1)
    log_weight = np.log(cols["weight"])

    def constrain(p):
        return {"beta": p["beta"], "sigma": jnp.exp(p["log_sigma"])}

    def logdensity(p):
        sigma, logj = _positive(p["log_sigma"])
        return _normal(_as(sigma, log_weight), _as(sigma, design) @ p["beta"], sigma) + logj

    return _make(name, {"beta": (7,), "log_sigma": ()}, logdensity, constrain,
                 DESCRIPTIONS[name])


def kidscore_interaction() -> Posterior:
    name = "kidiq-kidscore_interaction"
    d = load_data("kidiq")
    score, iq, hs = (_arr(d, k, name) for k in ("kid_score", "mom_iq", "mom_hs"))
    design = np.stack([np.ones_like(iq), hs, iq, hs * iq], axis=1)

    def constrain(p):
        return {"beta": p["beta"], "sigma": jnp.exp(p["log_sigma"])}

    def logdensity(p):
        sigma, logj = _positive(p["log_sigma"])
        return (_half_cauchy(sigma, 2.5) + logj
                + _normal(_as(sigma, score), _as(sigma, design) @ p["beta"], sigma))

    return _make(name, {"beta": (4,), "log_sigma": ()}, logdensity, constrain,
                 DESCRIPTIONS[name])


def wells_dist() -> Posterior:
    name = "wells_data-wells_dist"
    d = load_data("wells_data")
    switched, dist = _arr(d, "switched", name), _arr(d, "dist", name)
    if not np.all((switched == 0) | (switched == 1)):
        raise BomcmcError(f"{name}: 'switched' must be 0 or 1")

    def constrain(p):
        return {"beta": p["beta"]}

    def logdensity(p):
        beta = p["beta"]
        eta = beta[0] + beta[1] * _as(beta, dist)
        return jnp.sum(_as(beta, switched) * eta - jnp.logaddexp(0.0, eta))

    return _make(name, {"beta": (2,)}, logdensity, constrain, DESCRIPTIONS[name])


def radon_hierarchical_intercept_noncentered() -> Posterior:
    name = "radon_mn-radon_hierarchical_intercept_noncentered"
    d = load_data("radon_mn")
    J, N = int(d["J"]), int(d["N"])
    idx = np.asarray(d["county_idx"], dtype=np.int64) - 1  # 1-based in the data
    if idx.shape != (N,) or idx.min() < 0 or idx.max() >= J:
        raise BomcmcError(f"{name}: county_idx must be N values in 1..J")
    log_uppm, floor, log_radon = (_arr(d, k, name)
                                  for k in ("log_uppm", "floor_measure", "log_radon"))
    covariates = np.stack([log_uppm, floor], axis=1)

    def constrain(p):
        sigma_alpha = jnp.exp(p["log_sigma_alpha"])
        return {"alpha": p["mu_alpha"] + sigma_alpha * p["alpha_raw"], "beta": p["beta"],
                "mu_alpha": p["mu_alpha"], "sigma_alpha": sigma_alpha,
                "sigma_y": jnp.exp(p["log_sigma_y"])}

    def logdensity(p):
        c = constrain(p)
        mu = c["alpha"][idx] + _as(p["beta"], covariates) @ p["beta"]
        return (_normal(c["sigma_alpha"], 0.0, 1.0) + p["log_sigma_alpha"]
                + _normal(c["sigma_y"], 0.0, 1.0) + p["log_sigma_y"]
                + _normal(p["mu_alpha"], 0.0, 10.0) + _normal(p["beta"], 0.0, 10.0)
                + _normal(p["alpha_raw"], 0.0, 1.0)
                + _normal(_as(mu, log_radon), mu, c["sigma_y"]))

    return _make(name, {"alpha_raw": (J,), "beta": (2,), "mu_alpha": (),
                        "log_sigma_alpha": (), "log_sigma_y": ()},
                 logdensity, constrain, DESCRIPTIONS[name])


FACTORIES: dict[str, Callable[[], Posterior]] = {
    "eight_schools-eight_schools_noncentered": eight_schools_noncentered,
    "eight_schools-eight_schools_centered": eight_schools_centered,
    "sblri-blr": partial(blr, "sblri"),
    "sblrc-blr": partial(blr, "sblrc"),
    "arK-arK": arK,
    "low_dim_gauss_mix-low_dim_gauss_mix": low_dim_gauss_mix,
    "mesquite-logmesquite": logmesquite,
    "kidiq-kidscore_interaction": kidscore_interaction,
    "wells_data-wells_dist": wells_dist,
    "radon_mn-radon_hierarchical_intercept_noncentered": radon_hierarchical_intercept_noncentered,
}

DESCRIPTIONS: dict[str, str] = {
    "eight_schools-eight_schools_noncentered":
        "posteriordb: eight schools, non-centred (d=10; theta, mu, tau > 0)",
    "eight_schools-eight_schools_centered":
        "posteriordb: eight schools, centred funnel (d=10; expect divergences)",
    "sblri-blr": "posteriordb: Bayesian linear regression, N=100, D=5 (d=6)",
    "sblrc-blr": "posteriordb: Bayesian linear regression, correlated X, N=100, D=5 (d=6)",
    "arK-arK": "posteriordb: AR(5) time series, T=200 (d=7)",
    "low_dim_gauss_mix-low_dim_gauss_mix":
        "posteriordb: 2-component normal mixture, ordered means, N=1000 (d=5)",
    "mesquite-logmesquite": "posteriordb: log-log regression of mesquite biomass, N=46 (d=8)",
    "kidiq-kidscore_interaction":
        "posteriordb: kid IQ regression with interaction, N=434 (d=5)",
    "wells_data-wells_dist":
        "posteriordb: logistic regression, well switching vs distance, N=3020 (d=2; no reference)",
    "radon_mn-radon_hierarchical_intercept_noncentered":
        "posteriordb: radon, Minnesota, non-centred county intercepts (d=90; no reference)",
}

NAMES: tuple[str, ...] = tuple(FACTORIES)


def get(name: str) -> Posterior:
    try:
        factory = FACTORIES[name]
    except KeyError:
        raise BomcmcError(f"unknown posteriordb posterior '{name}' (one of {NAMES})") from None
    return factory()
