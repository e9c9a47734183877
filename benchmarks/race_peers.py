#!/usr/bin/env python
"""The race's peers (issue 32), each as its user writes it, in a process of its own:

    python benchmarks/race_peers.py ENTRANT POSTERIOR DATA.npz SEED

ENTRANT: numpyro-diag, numpyro-dense (NumPyro's NUTS), nutpie-diag, nutpie-lowrank (nutpie's
NUTS on a PyMC model, its default numba backend), blackjax-diag, blackjax-dense (BlackJAX's
NUTS after its `window_adaptation`, a hand-written JAX log density). POSTERIOR: german
(logistic regression, prior N(0, 10²)), eight-schools (non-centred), regression-correlated
(linear regression, noise sd 1, prior N(0, 10²)); DATA.npz holds its data, written by
`race_field.py` from bomcmc's copies, so every side scores the same posterior.

Each runs 4 chains, 1000 warm-up and 1000 draws, the libraries' defaults, then the loop a user
writes to reach a trustworthy answer: while the minimum over the parameters of ArviZ's bulk
and tail ESS is below 400 or the largest R-hat above 1.01 (the rule of bomcmc's
`--until-ess 400`), draw 1000 more per chain from where the chains stopped (NumPyro's
`post_warmup_state`; BlackJAX's states), or, for nutpie, which cannot continue a run, run
again with twice the draws; at most 20 000 draws per chain. Only the entrant's own library is
imported (with ArviZ). Prints one JSON line: the rule's figures, draws per chain, attempts.
"""

from __future__ import annotations

import json
import sys

import numpy as np

# bomcmc's rule (`driver.until`, `diagnostics.checks.RHAT_MAX`), restated: a peer's process
# imports no bomcmc
CHAINS, WARMUP, DRAWS, TARGET, RHAT_MAX, CAP = 4, 1000, 1000, 400.0, 1.01, 20000


def precision(draws: dict) -> dict:
    """ArviZ's min bulk and tail ESS and max R-hat over every parameter; `draws` maps a
    name to an array (chains, draws, ...)."""
    import arviz as az

    idata = az.from_dict(posterior=draws)
    lo = lambda ds: float(min(np.nanmin(ds[k].values) for k in ds.data_vars))  # noqa: E731
    return {"min_ess_bulk": lo(az.ess(idata, method="bulk")),
            "min_ess_tail": lo(az.ess(idata, method="tail")),
            "max_rhat": float(max(np.nanmax(v.values) for v in az.rhat(idata).data_vars
                                  .values()))}


def reached(p: dict) -> bool:
    return (p["min_ess_bulk"] >= TARGET and p["min_ess_tail"] >= TARGET
            and p["max_rhat"] <= RHAT_MAX)


# ---------------------------------------------------------------------------------------
# NumPyro
# ---------------------------------------------------------------------------------------
def numpyro_model(posterior: str):
    import numpyro
    import numpyro.distributions as dist

    def german(X, y):
        beta = numpyro.sample("beta", dist.Normal(0.0, 10.0).expand([X.shape[1]]))
        numpyro.sample("y", dist.Bernoulli(logits=X @ beta), obs=y)

    def regression(X, y):
        beta = numpyro.sample("beta", dist.Normal(0.0, 10.0).expand([X.shape[1]]))
        numpyro.sample("y", dist.Normal(X @ beta, 1.0), obs=y)

    def eight_schools(y, sigma):
        mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
        tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
        theta_trans = numpyro.sample("theta_trans", dist.Normal(0.0, 1.0).expand([y.size]))
        numpyro.sample("y", dist.Normal(mu + tau * theta_trans, sigma), obs=y)

    return {"german": german, "regression-correlated": regression,
            "eight-schools": eight_schools}[posterior]


def run_numpyro(posterior: str, data: dict, seed: int, dense: bool) -> dict:
    import jax
    from numpyro.infer import MCMC, NUTS

    mcmc = MCMC(NUTS(numpyro_model(posterior), dense_mass=dense), num_warmup=WARMUP,
                num_samples=DRAWS, num_chains=CHAINS, chain_method="vectorized",
                progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed), **data)
    parts, attempts = [mcmc.get_samples(group_by_chain=True)], 1
    while True:
        draws = {k: np.concatenate([np.asarray(p[k]) for p in parts], axis=1)
                 for k in parts[0]}
        p = precision(draws)
        n = next(iter(draws.values())).shape[1]
        if reached(p) or n >= CAP:
            return {**p, "reached": reached(p), "draws_per_chain": n, "attempts": attempts}
        mcmc.post_warmup_state = mcmc.last_state
        mcmc.run(mcmc.post_warmup_state.rng_key, **data)
        parts.append(mcmc.get_samples(group_by_chain=True))
        attempts += 1


# ---------------------------------------------------------------------------------------
# BlackJAX
# ---------------------------------------------------------------------------------------
def jax_logdensity(posterior: str, data: dict):
    """The posterior's log density on unconstrained coordinates, as a BlackJAX user writes
    it; and a function taking its draws to named parameters."""
    import jax.numpy as jnp
    from jax.scipy import stats

    if posterior == "eight-schools":
        y, sigma = jnp.asarray(data["y"]), jnp.asarray(data["sigma"])

        def logdensity(x):  # x = (mu, log tau, theta_trans...)
            mu, log_tau, tt = x[0], x[1], x[2:]
            tau = jnp.exp(log_tau)
            return (stats.norm.logpdf(mu, 0.0, 5.0) + stats.cauchy.logpdf(tau, 0.0, 5.0)
                    + log_tau + jnp.sum(stats.norm.logpdf(tt))
                    + jnp.sum(stats.norm.logpdf(y, mu + tau * tt, sigma)))

        names = lambda d: {"mu": d[..., 0], "tau": np.exp(d[..., 1]),  # noqa: E731
                           "theta_trans": d[..., 2:]}
        return logdensity, 2 + y.size, names
    X, y = jnp.asarray(data["X"]), jnp.asarray(data["y"])

    def logdensity(beta):
        eta = X @ beta
        loglik = (jnp.sum(y * eta - jnp.logaddexp(0.0, eta)) if posterior == "german"
                  else jnp.sum(stats.norm.logpdf(y, eta, 1.0)))
        return loglik + jnp.sum(stats.norm.logpdf(beta, 0.0, 10.0))

    return logdensity, X.shape[1], lambda d: {"beta": d}


def run_blackjax(posterior: str, data: dict, seed: int, dense: bool) -> dict:
    import blackjax
    import jax
    import jax.numpy as jnp

    logdensity, d, names = jax_logdensity(posterior, data)
    k_init, k_warm, k_draw = jax.random.split(jax.random.PRNGKey(seed), 3)
    x0 = jax.random.uniform(k_init, (CHAINS, d), minval=-2.0, maxval=2.0)
    warmup = blackjax.window_adaptation(blackjax.nuts, logdensity,
                                        is_mass_matrix_diagonal=not dense)
    adapt = jax.jit(jax.vmap(lambda k, x: warmup.run(k, x, num_steps=WARMUP)[0]))
    states, params = adapt(jax.random.split(k_warm, CHAINS), x0)

    @jax.jit
    def sample(key, states):
        def one_chain(k, s, p):
            kernel = blackjax.nuts(logdensity, **p)

            def step(s, k):
                s, _ = kernel.step(k, s)
                return s, s.position

            return jax.lax.scan(step, s, jax.random.split(k, DRAWS))

        return jax.vmap(one_chain)(jax.random.split(key, CHAINS), states, params)

    parts, attempts = [], 0
    while True:
        k_draw, k = jax.random.split(k_draw)
        states, positions = sample(k, states)
        parts.append(np.asarray(positions))
        attempts += 1
        draws = np.concatenate(parts, axis=1)
        p = precision(names(draws))
        if reached(p) or draws.shape[1] >= CAP:
            return {**p, "reached": reached(p), "draws_per_chain": int(draws.shape[1]),
                    "attempts": attempts}


# ---------------------------------------------------------------------------------------
# nutpie (PyMC models)
# ---------------------------------------------------------------------------------------
def pymc_model(posterior: str, data: dict):
    import pymc as pm

    with pm.Model() as model:
        if posterior == "eight-schools":
            mu = pm.Normal("mu", 0.0, 5.0)
            tau = pm.HalfCauchy("tau", 5.0)
            theta_trans = pm.Normal("theta_trans", 0.0, 1.0, shape=data["y"].size)
            pm.Normal("y", mu + tau * theta_trans, data["sigma"], observed=data["y"])
        else:
            beta = pm.Normal("beta", 0.0, 10.0, shape=data["X"].shape[1])
            if posterior == "german":
                pm.Bernoulli("y", logit_p=data["X"] @ beta, observed=data["y"])
            else:
                pm.Normal("y", data["X"] @ beta, 1.0, observed=data["y"])
    return model


def run_nutpie(posterior: str, data: dict, seed: int, lowrank: bool) -> dict:
    import nutpie

    compiled = nutpie.compile_pymc_model(pymc_model(posterior, data))
    draws, attempts = DRAWS, 0
    while True:
        trace = nutpie.sample(compiled, chains=CHAINS, tune=WARMUP, draws=draws,
                              seed=seed + 1000 * attempts, progress_bar=False,
                              low_rank_modified_mass_matrix=lowrank)
        attempts += 1
        p = precision({k: trace.posterior[k].values for k in trace.posterior.data_vars})
        if reached(p) or draws >= CAP:
            return {**p, "reached": reached(p), "draws_per_chain": draws, "attempts": attempts}
        draws *= 2


ENTRANTS = {
    "numpyro-diag": lambda *a: run_numpyro(*a, dense=False),
    "numpyro-dense": lambda *a: run_numpyro(*a, dense=True),
    "nutpie-diag": lambda *a: run_nutpie(*a, lowrank=False),
    "nutpie-lowrank": lambda *a: run_nutpie(*a, lowrank=True),
    "blackjax-diag": lambda *a: run_blackjax(*a, dense=False),
    "blackjax-dense": lambda *a: run_blackjax(*a, dense=True),
}


def main(argv: list[str]) -> int:
    entrant, posterior, path, seed = argv
    if entrant.startswith(("numpyro", "blackjax")):
        import jax

        jax.config.update("jax_enable_x64", False)  # float32, as bomcmc's CLI samples
    with np.load(path) as z:
        data = {k: z[k] for k in z.files}
    print(json.dumps(ENTRANTS[entrant](posterior, data, int(seed))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
