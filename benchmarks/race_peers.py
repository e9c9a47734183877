#!/usr/bin/env python
"""The race's peers (issue 32), each as its user writes it, in a process of its own:

    python benchmarks/race_peers.py ENTRANT POSTERIOR DATA.npz SEED [CAP]

ENTRANT: numpyro-diag, numpyro-dense (NumPyro's NUTS), nutpie-diag, nutpie-lowrank (nutpie's
NUTS on a PyMC model, its default numba backend), blackjax-diag, blackjax-dense (BlackJAX's
NUTS after its `window_adaptation`, a hand-written JAX log density). POSTERIOR: german
(logistic regression, prior N(0, 10²)), eight-schools (non-centred), regression-correlated
(linear regression, noise sd 1, prior N(0, 10²)), robot-arm (MacKay's 200 training cases, a
2-16-2 tanh network under `bomcmc bnn fit`'s default FBM priors, `network_quantities`);
DATA.npz holds its data, written by `race_field.py` from bomcmc's copies, so every side
scores the same posterior.

Each runs 4 chains, 1000 warm-up and 1000 draws, the libraries' defaults, then the loop a user
writes to reach a trustworthy answer: while the minimum over the parameters of ArviZ's bulk
and tail ESS is below 400 or the largest R-hat above 1.01 (the rule of bomcmc's
`--until-ess 400`), draw 1000 more per chain from where the chains stopped (NumPyro's
`post_warmup_state`; BlackJAX's states), or, for nutpie, which cannot continue a run, run
again with twice the draws; at most CAP draws per chain (20 000 unless given). On the network
the rule reads what `bomcmc bnn fit --until-ess` reads, since the weights are not identified
(hidden units permute and flip sign): the outputs at the training inputs and the
log-likelihood (`network_quantities`). Only the entrant's own library is imported (with
ArviZ). Prints one JSON line: the rule's figures, draws per chain, attempts.
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


# ---------------------------------------------------------------------------------------
# The robot-arm network: `bomcmc bnn fit`'s defaults, FBM's "ih 0.05:0.5 bh 0.05:0.5
# ho x0.05:0.5 bo 100" with noise "0.05:0.5", restated. Each precision τ of a group is
# Gamma(shape α/2, rate α/(2ω)) with α = 0.5 and mean ω = 1/0.05² = 400, for the hidden-to-
# output weights scaled by the 16 hidden units (ω = 16/0.05²); the output biases N(0, 100²);
# one noise precision for both outputs.
# ---------------------------------------------------------------------------------------
HIDDEN, SHAPE = 16, 0.25
RATES = {"t_ih": 1 / 1600, "t_bh": 1 / 1600, "t_ho": 1 / 25600, "t_y": 1 / 1600}


def network_quantities(p: dict, X, y) -> dict:
    """What the rule reads of network draws `p` (t_*, W1, b1, W2, b2 with leading (chains,
    draws) axes), as bomcmc's `bnn/function_space.py` does: f (chains, draws, case, output)
    at the training inputs, and log_lik, the Gaussian log-likelihood plus the noise
    precision's log-prior on the log scale (bomcmc's log_lik; constants aside)."""
    w1, b1, w2, b2, t = (np.asarray(p[k], np.float64) for k in ("W1", "b1", "W2", "b2", "t_y"))
    h = np.tanh(np.einsum("ni,cdih->cdnh", X, w1) + b1[:, :, None, :])
    f = np.einsum("cdnh,cdho->cdno", h, w2) + b2[:, :, None, :]
    sq = np.sum((np.asarray(y)[None, None] - f) ** 2, axis=(2, 3))
    log_lik = 0.5 * y.size * np.log(t) - 0.5 * t * sq + SHAPE * np.log(t) - RATES["t_y"] * t
    return {"f": f, "log_lik": log_lik}


def rule_quantities(posterior: str, data: dict):
    """Named draws -> what the rule reads: the parameters themselves, or on the network its
    function-space quantities (`network_quantities`)."""
    if posterior != "robot-arm":
        return lambda p: {k: np.asarray(v) for k, v in p.items() if k != "f"}
    return lambda p: network_quantities(p, data["X"], data["y"])


def reached(p: dict) -> bool:
    return (p["min_ess_bulk"] >= TARGET and p["min_ess_tail"] >= TARGET
            and p["max_rhat"] <= RHAT_MAX)


# ---------------------------------------------------------------------------------------
# NumPyro
# ---------------------------------------------------------------------------------------
def numpyro_model(posterior: str):
    import jax.numpy as jnp
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

    def robot_arm(X, y):
        t = {k: numpyro.sample(k, dist.Gamma(SHAPE, r)) for k, r in RATES.items()}
        w1 = numpyro.sample("W1", dist.Normal(0.0, t["t_ih"] ** -0.5).expand([2, HIDDEN]))
        b1 = numpyro.sample("b1", dist.Normal(0.0, t["t_bh"] ** -0.5).expand([HIDDEN]))
        w2 = numpyro.sample("W2", dist.Normal(0.0, t["t_ho"] ** -0.5).expand([HIDDEN, 2]))
        b2 = numpyro.sample("b2", dist.Normal(0.0, 100.0).expand([2]))
        f = numpyro.deterministic("f", jnp.tanh(X @ w1 + b1) @ w2 + b2)
        numpyro.sample("y", dist.Normal(f, t["t_y"] ** -0.5), obs=y)

    return {"german": german, "regression-correlated": regression,
            "eight-schools": eight_schools, "robot-arm": robot_arm}[posterior]


def run_numpyro(posterior: str, data: dict, seed: int, dense: bool) -> dict:
    import jax
    from numpyro.infer import MCMC, NUTS

    mcmc = MCMC(NUTS(numpyro_model(posterior), dense_mass=dense), num_warmup=WARMUP,
                num_samples=DRAWS, num_chains=CHAINS, chain_method="vectorized",
                progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed), **data)
    quantities = rule_quantities(posterior, data)
    parts, attempts = [quantities(mcmc.get_samples(group_by_chain=True))], 1
    while True:
        draws = {k: np.concatenate([np.asarray(p[k]) for p in parts], axis=1)
                 for k in parts[0]}
        p = precision(draws)
        n = next(iter(draws.values())).shape[1]
        if reached(p) or n >= CAP:
            return {**p, "reached": reached(p), "draws_per_chain": n, "attempts": attempts}
        mcmc.post_warmup_state = mcmc.last_state
        mcmc.run(mcmc.post_warmup_state.rng_key, **data)
        parts.append(quantities(mcmc.get_samples(group_by_chain=True)))
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
    if posterior == "robot-arm":
        return network_logdensity(data)
    X, y = jnp.asarray(data["X"]), jnp.asarray(data["y"])

    def logdensity(beta):
        eta = X @ beta
        loglik = (jnp.sum(y * eta - jnp.logaddexp(0.0, eta)) if posterior == "german"
                  else jnp.sum(stats.norm.logpdf(y, eta, 1.0)))
        return loglik + jnp.sum(stats.norm.logpdf(beta, 0.0, 10.0))

    return logdensity, X.shape[1], lambda d: {"beta": d}


def network_logdensity(data: dict):
    """The network's log density on x = (log t_ih, log t_bh, log t_ho, log t_y, W1, b1, W2,
    b2): each precision's Gamma density on the log scale (τ^shape e^(-rate τ)), the weights
    Gaussian given them."""
    import jax.numpy as jnp
    from jax.scipy import stats

    X, y = jnp.asarray(data["X"]), jnp.asarray(data["y"])
    shapes = {"W1": (2, HIDDEN), "b1": (HIDDEN,), "W2": (HIDDEN, 2), "b2": (2,)}
    ends = np.cumsum([4] + [int(np.prod(v)) for v in shapes.values()])

    def unpack(x):
        out = {k: jnp.exp(x[..., i]) for i, k in enumerate(RATES)}
        for (k, shape), a, b in zip(shapes.items(), ends[:-1], ends[1:]):
            out[k] = x[..., a:b].reshape(x.shape[:-1] + shape)
        return out

    def logdensity(x):
        p = unpack(x)
        hyper = sum(SHAPE * x[i] - r * p[k] for i, (k, r) in enumerate(RATES.items()))
        prior = sum(jnp.sum(stats.norm.logpdf(p[w], 0.0, p[t] ** -0.5))
                    for w, t in (("W1", "t_ih"), ("b1", "t_bh"), ("W2", "t_ho")))
        prior += jnp.sum(stats.norm.logpdf(p["b2"], 0.0, 100.0))
        f = jnp.tanh(X @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]
        return hyper + prior + jnp.sum(stats.norm.logpdf(y, f, p["t_y"] ** -0.5))

    return logdensity, int(ends[-1]), lambda d: {k: np.asarray(v) for k, v in unpack(d).items()}


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

    quantities = rule_quantities(posterior, data)
    parts, attempts = [], 0
    while True:
        k_draw, k = jax.random.split(k_draw)
        states, positions = sample(k, states)
        parts.append(quantities(names(np.asarray(positions))))
        attempts += 1
        draws = {k: np.concatenate([q[k] for q in parts], axis=1) for k in parts[0]}
        p = precision(draws)
        n = next(iter(draws.values())).shape[1]
        if reached(p) or n >= CAP:
            return {**p, "reached": reached(p), "draws_per_chain": int(n),
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
        elif posterior == "robot-arm":
            t = {k: pm.Gamma(k, alpha=SHAPE, beta=r) for k, r in RATES.items()}
            w1 = pm.Normal("W1", 0.0, t["t_ih"] ** -0.5, shape=(2, HIDDEN))
            b1 = pm.Normal("b1", 0.0, t["t_bh"] ** -0.5, shape=HIDDEN)
            w2 = pm.Normal("W2", 0.0, t["t_ho"] ** -0.5, shape=(HIDDEN, 2))
            b2 = pm.Normal("b2", 0.0, 100.0, shape=2)
            f = pm.math.tanh(data["X"] @ w1 + b1) @ w2 + b2
            pm.Normal("y", f, t["t_y"] ** -0.5, observed=data["y"])
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
        p = precision(rule_quantities(posterior, data)(
            {k: trace.posterior[k].values for k in trace.posterior.data_vars}))
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
    global CAP
    entrant, posterior, path, seed = argv[:4]
    CAP = int(argv[4]) if len(argv) > 4 else CAP
    if entrant.startswith(("numpyro", "blackjax")):
        import jax

        jax.config.update("jax_enable_x64", False)  # float32, as bomcmc's CLI samples
    with np.load(path) as z:
        data = {k: z[k] for k in z.files}
    print(json.dumps(ENTRANTS[entrant](posterior, data, int(seed))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
