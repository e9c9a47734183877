"""Bayesian neural networks: FBM prior notation, log densities, Gibbs conditionals, Neal's
Gibbs-within-HMC, predictions and pre-training (docs/bnn.md)."""

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, special, stats as sps
from stats import bonferroni_sigma, moment_z_scores

import bomcmc
from bomcmc.bnn import predict as bnn_predict
from bomcmc.bnn.pretrain import pretrain
from bomcmc.bnn.network import BNN
from bomcmc.bnn.priors import (
    INF,
    NetPrior,
    Prior,
    fixed_gaussian,
    parse_model_spec,
    sample_log_upper,
)
from bomcmc.bnn.samplers import neal_sampler
from bomcmc.kernels.neal_gibbs_hmc import neal_kernel, neal_step_sizes


def _data(n=12, n_in=2, n_out=1, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_in))
    y = np.sin(X[:, :1]) + 0.5 * X[:, 1:2] ** 2 + 0.1 * rng.normal(size=(n, 1))
    return X, np.repeat(y, n_out, axis=1) + 0.05 * rng.normal(size=(n, n_out))


def _random_position(model, key, scale=0.7):
    flat = scale * jax.random.normal(key, (model.dim,))
    return model.unravel(flat)


# ---------------------------------------------------------------------------------------
# FBM prior notation (FBM `util/prior.doc`; Neal 1996 as implemented in FBM)
# ---------------------------------------------------------------------------------------
SPEC_PRIORS = ["0.05:0.5", "x0.05:0.5", "100", "0.1:0.1", "x0.1:0.1", "1", "0.05:1:2",
               "0.2:1", "x0.3:1", "x0.1:1:4", "10", "0.05::2", "x1:::0.5", "+", "0.0015:2"]


@pytest.mark.parametrize("text", SPEC_PRIORS)
def test_prior_text_round_trips(text):
    p = Prior.parse(text)
    assert str(p) == text
    assert Prior.parse(str(p)) == p


def test_prior_fields_follow_fbm():
    p = Prior.parse("x0.1:1:4")
    assert (p.width, p.scaled, p.alphas) == (0.1, True, (1.0, 4.0, INF))
    assert Prior.parse("0.05::2").alphas == (INF, 2.0, INF)
    assert Prior.parse("+").width == 1e10
    assert Prior.parse("1.5e-3:2") == Prior.parse("0.0015:2")
    for bad in ["", "x", "0.1:0", "-1", "0.1:1:2:3:4", "0.1:a", "0.1!"]:
        with pytest.raises(bomcmc.BomcmcError):
            Prior.parse(bad)


NET_SPECS = [
    # robot arm (Wang's thesis-era code, `robot_arm.py`), FBM's regression recipe, Dexter
    # (Wang's thesis-era code, `dexter.py`)
    ("ih 0.1:0.1  bh 0.1:0.1  ho x0.1:0.1  bo 1", "ih 0.1:0.1 bh 0.1:0.1 ho x0.1:0.1 bo 1"),
    ("ih=0.05:0.5 bh=0.05:0.5 ho=x0.05:0.5 bo=100",
     "ih 0.05:0.5 bh 0.05:0.5 ho x0.05:0.5 bo 100"),
    ("ih 0.05:1:2 bh 0.2:1 hh x0.3:1 ho x0.1:1:4 bo 10",
     "ih 0.05:1:2 bh 0.2:1 hh x0.3:1 ho x0.1:1:4 bo 10"),
    ("ih0 0.05:1:2 bh0 0.2:1 hh1 x0.3:1 bh1 0.2:1 ho1 x0.1:1:4 bo 10",
     "ih 0.05:1:2 bh 0.2:1 hh x0.3:1 bh1 0.2:1 ho1 x0.1:1:4 bo 10"),
    ("ih 1 bh - ho x1 io - bo 1", "ih 1 ho x1 bo 1"),
]


@pytest.mark.parametrize("text, canonical", NET_SPECS)
def test_net_prior_round_trips(text, canonical):
    spec = NetPrior.parse(text)
    assert str(spec) == canonical
    assert NetPrior.parse(str(spec)) == spec


def test_fbm_specs_build_their_networks():
    """The robot-arm and Dexter specs of Wang's thesis-era code for Wang 2012 (`robot_arm.py`,
    `dexter.py`) as networks: groups, stored precisions and the x-scaled top-level means."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(10, 2)), rng.normal(size=(10, 2))
    robot = BNN(X, y, hidden=(16,), prior="ih 0.1:0.1  bh 0.1:0.1  ho x0.1:0.1  bo 1",
                likelihood="real 0.1:0.1")
    assert sorted(robot.init_position()["log_tau"]) == ["bh0", "ho", "ih0", "noise"]
    assert robot.groups["ho"].omega == pytest.approx(16 / 0.01)
    assert robot.groups["bo"].omega == pytest.approx(1.0) and robot.noise_group.a0 == 0.1
    X = rng.normal(size=(10, 295))
    dexter = BNN(X, rng.integers(0, 2, 10), hidden=(20, 8), likelihood="binary",
                 prior="ih0 0.05:1:2 bh0 0.2:1 hh1 x0.3:1 bh1 0.2:1 ho1 x0.1:1:4 bo 10")
    lt = dexter.init_position()["log_tau"]
    assert {k: np.shape(v) for k, v in lt.items()} == {
        "ih0": (), "ih0_src": (295,), "bh0": (), "hh1": (), "bh1": (), "ho": (), "ho_src": (8,)}
    assert dexter.groups["hh1"].omega == pytest.approx(20 / 0.09)
    assert dexter.groups["ho"].omega == pytest.approx(8 * 4 / 2 / 0.01)
    assert dexter.groups["ih0"].omega == pytest.approx(1 / 0.0025)


def test_model_spec_and_fixed_gaussian():
    assert parse_model_spec("real 0.05:0.5") == ("real", Prior.parse("0.05:0.5"))
    assert parse_model_spec("binary") == ("binary", None)
    g = fixed_gaussian(2, lambda_w=4.0, lambda_b=0.25, noise_precision=100.0)
    assert str(g) == "ih 0.5 bh 2 hh 0.5 bh1 2 ho 0.5 bo 2" and str(g.noise) == "0.1"
    for bad in ["ih 1 bh", "ti 1", "ah 1", "hh0 1", "ih 1 ih0 2"]:
        with pytest.raises(bomcmc.BomcmcError):
            NetPrior.parse(bad)


def test_width_scaling_follows_specs():
    n = 16
    assert Prior.parse("x0.5").mean_precision(n) == pytest.approx(n / 0.25)
    assert Prior.parse("x0.5:1:4").mean_precision(n) == pytest.approx(n * 4 / 2 / 0.25)
    assert Prior.parse("x0.5:1:2").mean_precision(n) == pytest.approx(n * math.log(n) / 0.25)
    assert Prior.parse("x0.5:1:1").mean_precision(n) == pytest.approx(n**2 / 0.25)
    assert Prior.parse("x0.5:1:4:1").mean_precision(n) == pytest.approx(n**2 / 0.25)  # α_param
    assert Prior.parse("0.5:1:1").mean_precision(n) == pytest.approx(4.0)
    # the scaled width is used by the model: ho x0.1:0.1 with 8 hidden units, omega = 8/0.01
    X, y = _data()
    m = BNN(X, y, hidden=(8,), prior="ih 0.1:0.1 bh 0.1:0.1 ho x0.1:0.1 bo 1", noise="0.1:0.1")
    assert m.groups["ho"].omega == pytest.approx(800.0)


# ---------------------------------------------------------------------------------------
# Log densities: definition and gradients
# ---------------------------------------------------------------------------------------
def test_fixed_gaussian_is_seed003_potential():
    """Ask 2022, eq. 6.23: V = λ_W/2 Σ‖W‖² + λ_b/2 Σ‖b‖² + λ/2 Σ‖y − f‖² (+ const)."""
    X, y = _data()
    lw, lb, lam = 2.0, 0.5, 30.0
    m = BNN(X, y, hidden=(5, 3), prior=fixed_gaussian(2, lw, lb, noise_precision=lam),
            activation=["tanh", "swish"])
    assert m.n_hyper == 0

    def potential(pos):
        w = pos["w"]
        kern = sum(jnp.sum(w[k] ** 2) for k in ("ih0", "hh1", "ho"))
        bias = sum(jnp.sum(w[k] ** 2) for k in ("bh0", "bh1", "bo"))
        return lw / 2 * kern + lb / 2 * bias + lam / 2 * jnp.sum((y - m.apply(w, X)) ** 2)

    a, b = (_random_position(m, jax.random.PRNGKey(i)) for i in (1, 2))
    assert float(m.logdensity(a) - m.logdensity(b)) == pytest.approx(
        float(potential(b) - potential(a)), rel=1e-12)


GRAD_CASES = [
    ("real", "0.5:2", "tanh"),  # one noise precision
    ("real", "0.5:2:3", "sigmoid"),  # one per output
    ("real", "0.5:2:3:5", "relu"),  # per output, t noise
    ("real", "0.5", "swish"),  # fixed noise precision
    ("binary", None, "tanh"),
    ("binary", None, "swish"),
    ("class", None, "sigmoid"),
    ("class", None, "relu"),
]


@pytest.mark.parametrize("likelihood, noise, activation", GRAD_CASES)
def test_logdensity_gradient_matches_finite_differences(likelihood, noise, activation):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(9, 3))
    if likelihood == "real":
        y = rng.normal(size=(9, 2))
    elif likelihood == "binary":
        y = rng.integers(0, 2, size=(9, 2))
    else:
        y = rng.integers(0, 3, size=9)
    prior = "ih 1:2:3 bh 1:2:4 hh x1:1::5 bh1 1 ho x1:2:3 io 1::2 bo 1:3"
    m = BNN(X, y, hidden=(4, 3), prior=prior, likelihood=likelihood, noise=noise,
            activation=activation)
    f = lambda flat: m.logdensity(m.unravel(flat))  # noqa: E731
    x = 0.6 * jax.random.normal(jax.random.PRNGKey(3), (m.dim,))
    grad = np.asarray(jax.jit(jax.grad(f))(x))
    h = 1e-6
    # every coordinate by central differences
    eye = h * jnp.eye(m.dim)
    fx = jax.jit(jax.vmap(f))
    fd = np.asarray(fx(x + eye) - fx(x - eye)) / (2 * h)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(grad).max()))


# ---------------------------------------------------------------------------------------
# Gibbs conditionals (FBM `net-mc.c`; Choo 2000, eqs. 3.11–3.12)
# ---------------------------------------------------------------------------------------
def _gibbs_model():
    X, y = _data(n=10, n_out=2)
    return BNN(X, y, hidden=(3,), prior="ih 0.5:2:3 bh 0.7:1.5 ho x0.4:2.5 bo 2:4",
               noise="0.3:3:2")


def test_gibbs_conditionals_equal_closed_forms():
    m = _gibbs_model()
    pos = _random_position(m, jax.random.PRNGKey(0))
    lt, w = pos["log_tau"], pos["w"]
    cond = m.gibbs_conditionals(pos)
    assert set(cond) == {"ih0_src", "bh0", "ho", "bo", "noise_out"}
    # ARD, per input unit i: shape (α₁ + n_d)/2, rate (α₁/τ₀ + Σ_j w_ij²)/2
    tau0 = np.exp(float(lt["ih0"]))
    shape, rate = cond["ih0_src"]
    assert float(shape) == pytest.approx((3 + 3) / 2)
    np.testing.assert_allclose(rate, (3 / tau0 + np.sum(np.asarray(w["ih0"]) ** 2, 1)) / 2)
    # one precision per group: shape (α + n)/2, rate (α/ω + Σ w²)/2, ω = 1/W² (x: N/W²)
    for key, alpha, omega in [("bh0", 1.5, 1 / 0.49), ("ho", 2.5, 3 / 0.16), ("bo", 4, 0.25)]:
        shape, rate = cond[key]
        n = np.size(w[key])
        assert float(shape) == pytest.approx((alpha + n) / 2)
        assert float(rate) == pytest.approx((alpha / omega + np.sum(np.asarray(w[key]) ** 2)) / 2)
    # noise, per output j given the residuals (Choo 2000, eq. 3.12)
    resid = m.y - np.asarray(m.apply(w, m.X))
    shape, rate = cond["noise_out"]
    assert float(shape) == pytest.approx((2 + m.n) / 2)
    np.testing.assert_allclose(rate, (2 / np.exp(float(lt["noise"])) + np.sum(resid**2, 0)) / 2)


def test_gibbs_draws_have_the_gamma_moments():
    """Many Gibbs draws of each lowest-level precision: mean and variance of τ equal those of
    the closed-form Gamma(shape, rate) within Monte-Carlo error (independent draws)."""
    m = _gibbs_model()
    pos = _random_position(m, jax.random.PRNGKey(5))
    cond = m.gibbs_conditionals(pos)
    n = 10000
    draws = jax.jit(jax.vmap(lambda k: m.gibbs(k, pos)["log_tau"]))(
        jax.random.split(jax.random.PRNGKey(6), n))
    bound = bonferroni_sigma(2 * 8)
    for key, (shape, rate) in cond.items():
        tau = np.exp(np.asarray(draws[key])).reshape(n, -1)
        mean, var = np.asarray(shape / rate), np.asarray(shape / rate**2)
        z_mean = (tau.mean(0) - mean) / (tau.std(0) / math.sqrt(n))
        sq = (tau - mean) ** 2
        z_var = (sq.mean(0) - var) / (sq.std(0) / math.sqrt(n))
        assert np.all(np.abs(z_mean) < bound), (key, z_mean)
        assert np.all(np.abs(z_var) < bound), (key, z_var)


@pytest.mark.parametrize("a, b, c", [(-10.0, 0.5, 3.0), (2.0, 1e-3, 50.0), (0.3, 2.0, 1e-4),
                                     (-200.0, 1e3, 1e5)])
def test_upper_level_draws_match_quadrature(a, b, c):
    """x = log τ ∝ exp(a x − b eˣ − c e⁻ˣ) (FBM cond_sigma): moments against quadrature."""
    mode = math.log((a + math.sqrt(a * a + 4 * b * c)) / (2 * b))
    logp = lambda x: a * x - b * math.exp(x) - c * math.exp(-x)  # noqa: E731
    ref = logp(mode)
    dens = lambda x: math.exp(logp(x) - ref)  # noqa: E731
    span = (mode - 40 / math.sqrt(b * math.exp(mode) + c * math.exp(-mode)) - 5, mode + 20)
    z = integrate.quad(dens, *span, points=[mode], limit=200)[0]
    mean = integrate.quad(lambda x: x * dens(x), *span, points=[mode], limit=200)[0] / z
    var = integrate.quad(lambda x: (x - mean) ** 2 * dens(x), *span, points=[mode],
                         limit=200)[0] / z
    n = 20000
    x = np.asarray(jax.jit(jax.vmap(lambda k: sample_log_upper(k, a, b, c)))(
        jax.random.split(jax.random.PRNGKey(7), n)))
    z_mean, z_var = moment_z_scores(x.reshape(1, n, 1), [mean], [var])
    bound = bonferroni_sigma(2)
    assert abs(z_mean[0]) < bound and abs(z_var[0]) < bound, (z_mean, z_var)


def _log_marginal_tau0(prior_group, z, grid):
    """log p(log τ₀ | Z) on a grid, with the lower levels integrated analytically (ARD:
    τ₁ᵢ ~ Gamma(mean τ₀, α₁), Zᵢ· ~ N(0, 1/τ₁ᵢ)) or numerically (t values)."""
    g = prior_group
    tau0 = np.exp(grid)
    lp = sps.gamma.logpdf(tau0, g.a0 / 2, scale=2 * g.omega / g.a0) + grid
    if g.a1 < INF:  # ∫ Gamma(τ₁; τ₀, α₁) Π_j N(z_ij; 1/τ₁) dτ₁, per source unit i
        k, r = g.a1 / 2, g.a1 / (2 * tau0)
        for row in z:
            nd, ss = row.size, np.sum(row**2)
            lp += (k * np.log(r) - special.gammaln(k) + special.gammaln(k + nd / 2)
                   - (k + nd / 2) * np.log(r + ss / 2) - nd / 2 * np.log(2 * np.pi))
    else:  # Student-t values with scale τ₀^{-1/2}
        for v in z.ravel():
            lp += sps.t.logpdf(v * np.sqrt(tau0), g.a2) + 0.5 * np.log(tau0)
    return lp


@pytest.mark.parametrize("prior", ["0.5:2:3", "x0.5:3::4"])
def test_gibbs_upper_levels_keep_the_conditional_invariant(prior):
    """With the weights fixed, iterating the group's Gibbs sweep (ARD: τ₁ | W, τ₀ then
    τ₀ | τ₁; t weights: auxiliary τ₂ | W, τ₀ then τ₀ | τ₂) samples p(τ₀ | W): its log-τ₀
    moments match 1-d quadrature of that marginal within MCSE."""
    X, y = _data(n=6, n_in=3)
    m = BNN(X, y, hidden=(), prior=f"io {prior} bo 1", noise="1")
    g = m.groups["io"]
    w = {"io": jnp.asarray([[0.8], [-0.3], [1.5]]), "bo": jnp.asarray([0.1])}
    pos = m.init_position()
    pos = {"log_tau": {k: jnp.asarray(v) for k, v in pos["log_tau"].items()}, "w": w}

    def chain(key):
        def body(p, k):
            p = m.gibbs(k, p)
            return p, p["log_tau"]["io"]
        return jax.lax.scan(body, pos, jax.random.split(key, 3000))[1]

    x = np.asarray(jax.jit(jax.vmap(chain))(jax.random.split(jax.random.PRNGKey(11), 8)))
    grid = np.linspace(-12, 10, 20001)
    lp = _log_marginal_tau0(g, np.asarray(w["io"]), grid)
    p = np.exp(lp - lp.max())
    p /= p.sum()
    mean = np.sum(p * grid)
    var = np.sum(p * (grid - mean) ** 2)
    z_mean, z_var = moment_z_scores(x[:, 200:, None], [mean], [var])
    bound = bonferroni_sigma(2)
    assert abs(z_mean[0]) < bound and abs(z_var[0]) < bound, (z_mean, z_var)


# ---------------------------------------------------------------------------------------
# Neal's step-size heuristic
# ---------------------------------------------------------------------------------------
def test_curvature_is_exact_for_a_linear_gaussian_model():
    """With no hidden layer and Gaussian noise, Neal's estimate is the exact Hessian diagonal:
    τ_noise Σ_c x_ci² + τ_w for weights, n τ_noise + τ_b for the bias."""
    X, y = _data(n=7, n_in=3, n_out=2)
    m = BNN(X, y, hidden=(), prior="io 0.5:2:3 bo 2:3", noise="0.3:3:2")
    pos = _random_position(m, jax.random.PRNGKey(2))
    hyper = m.ravel(pos)[: m.n_hyper]
    f = lambda w: m.logdensity(m.unravel(jnp.concatenate([hyper, w])))  # noqa: E731
    hess = -np.diag(np.asarray(jax.jit(jax.hessian(f))(m.ravel(pos)[m.n_hyper:])))
    curv = np.concatenate([np.ravel(v) for _, v in sorted(m.curvature(pos).items())])
    np.testing.assert_allclose(curv, hess, rtol=1e-10)
    eps = neal_step_sizes(m, pos, 0.3)
    np.testing.assert_allclose(eps, 0.3 / np.sqrt(hess), rtol=1e-10)


def test_curvature_backpropagates_through_hidden_layers():
    """FBM's step-size heuristic (`net-models.tex`, "Heuristic choice of stepsizes") by hand for
    a 2-3-1 tanh network with fixed precisions."""
    X, y = _data(n=5)
    m = BNN(X, y, hidden=(3,), prior="ih 0.5 bh 2 ho x1 bo 1", noise="0.2")
    c = m.curvature(m.init_position())
    tau_n, tau_ih, tau_ho = 25.0, 4.0, 3.0
    d2_u = tau_n / tau_ho  # σ²_ho · d²L/du_out, max tanh'² = 1
    typ = min(1.0, np.sum(np.mean(X**2, 0)) / tau_ih)
    np.testing.assert_allclose(c["ih0"], np.sum(X**2, 0)[:, None] * d2_u + tau_ih + 0 * c["ih0"])
    np.testing.assert_allclose(c["bh0"], 5 * d2_u + 0.25)
    np.testing.assert_allclose(c["ho"], 5 * typ * tau_n + tau_ho)
    np.testing.assert_allclose(c["bo"], 5 * tau_n + 1.0)


# ---------------------------------------------------------------------------------------
# Neal's Gibbs-within-HMC samples the joint posterior
# ---------------------------------------------------------------------------------------
def _exact_linear_posterior(m, X, y, grid_n=161):
    """Linear model y = X w + b + ε with hierarchical τ_w and τ_noise: p(log τ | y) on a grid
    by the Gaussian marginal likelihood, and p(w, b | τ, y) Gaussian — exact moments."""
    gw, gn = m.groups["io"], m.noise_group
    A = np.hstack([X, np.ones((X.shape[0], 1))])
    yv = y[:, 0]
    lw = np.linspace(-7, 6, grid_n)
    ln = np.linspace(-4, 7, grid_n)
    LW, LN = np.meshgrid(lw, ln, indexing="ij")
    tau_b = m.groups["bo"].omega
    tw, tn = np.exp(LW)[..., None], np.exp(LN)[..., None, None]
    k = A.shape[1]
    prior_var = np.concatenate([np.broadcast_to(1 / tw, LW.shape + (k - 1,)),
                                np.full(LW.shape + (1,), 1 / tau_b)], axis=-1)
    C = np.einsum("ik,...k,jk->...ij", A, prior_var, A) + np.eye(len(yv)) / tn
    _, logdet = np.linalg.slogdet(C)
    sol = np.linalg.solve(C, np.broadcast_to(yv[:, None], C.shape[:-1] + (1,)))[..., 0]
    quad = np.einsum("i,...i->...", yv, sol)
    logp = -0.5 * (logdet + quad)
    S = np.linalg.inv(np.eye(k) / prior_var[..., None] + tn * (A.T @ A))
    means = tn[..., 0] * np.einsum("...kl,l->...k", S, A.T @ yv)
    seconds = S + means[..., :, None] * means[..., None, :]
    logp += (sps.gamma.logpdf(np.exp(LW), gw.a0 / 2, scale=2 * gw.omega / gw.a0) + LW
             + sps.gamma.logpdf(np.exp(LN), gn.a0 / 2, scale=2 * gn.omega / gn.a0) + LN)
    p = np.exp(logp - logp.max())
    p /= p.sum()
    assert p[0].sum() + p[-1].sum() + p[:, 0].sum() + p[:, -1].sum() < 1e-6  # grid covers it
    out = {}
    for name, grid in (("log_tau.io", LW), ("log_tau.noise", LN)):
        mu = np.sum(p * grid)
        out[name] = (np.array([mu]), np.array([np.sum(p * (grid - mu) ** 2)]))
    mu = np.einsum("ij,ijk->k", p, means)
    var = np.diagonal(np.einsum("ij,ijkl->kl", p, seconds)) - mu**2
    out["w.io"] = (mu[:-1], var[:-1])
    out["w.bo"] = (mu[-1:], var[-1:])
    return out


def test_neal_gibbs_hmc_matches_the_exact_posterior():
    X, y = _data(n=8, n_in=2, seed=4)
    m = BNN(X, y, hidden=(), prior="io 1:3 bo 1", noise="0.5:4")
    exact = _exact_linear_posterior(m, X, y)
    res = bomcmc.sample(m.posterior(), sampler=neal_sampler(m), chains=4, draws=2500,
                        warmup=200, seed=3, progress=False, chunk_size=2700, step_size=0.5,
                        steps=8, random_steps=True)
    assert res.totals["divergences"] == 0
    post = res.idata.posterior
    n_cmp = 2 * sum(v[0].size for v in exact.values())
    bound = bonferroni_sigma(n_cmp)
    for name, (mean, var) in exact.items():
        draws = np.asarray(post[name].values).reshape(4, 2500, -1)
        z_mean, z_var = moment_z_scores(draws, mean, var)
        assert np.all(np.abs(z_mean) < bound), (name, z_mean)
        assert np.all(np.abs(z_var) < bound), (name, z_var)


@pytest.mark.slow
def test_neal_gibbs_hmc_matches_nuts_on_an_ard_network():
    """One tanh hidden unit, ARD on the inputs, t-distributed noise: Neal's scheme against
    NUTS on the joint in log-precision space (two-sample z-scores of the means). The sign
    of the hidden unit is not identified, so its weights enter as |w_ho|. About 30 s."""
    import arviz as az

    X, y = _data(n=10, n_in=2, seed=6)
    m = BNN(X, y, hidden=(1,), prior="ih 1:2:3 bh 1 ho 1:3 bo 1", noise="0.5:4::6")
    post = m.posterior()
    ref = bomcmc.sample(post, sampler="nuts", chains=4, draws=1500, warmup=500, seed=1,
                        progress=False)
    neal = bomcmc.sample(post, sampler=neal_sampler(m), chains=4, draws=3000, warmup=300,
                         seed=2, progress=False, step_size=0.4, steps=10, random_steps=True)
    z = []
    for name, fn in [("log_tau.ih0", None), ("log_tau.ih0_src", None), ("log_tau.ho", None),
                     ("log_tau.noise", None), ("w.bo", None), ("w.ho", np.abs)]:
        a, b = ref.idata.posterior[name], neal.idata.posterior[name]
        if fn is not None:
            a, b = fn(a), fn(b)
        se = np.sqrt(np.asarray(az.mcse(a.to_dataset(name=name))[name]) ** 2
                     + np.asarray(az.mcse(b.to_dataset(name=name))[name]) ** 2)
        z.append(np.ravel((a.mean(("chain", "draw")) - b.mean(("chain", "draw"))) / se))
    z = np.concatenate(z)
    assert np.all(np.abs(z) < bonferroni_sigma(z.size)), z


def test_neal_knobs_and_fixed_hyperparameters():
    X, y = _data(n=6)
    m = BNN(X, y, hidden=(), prior="io 1:2 bo 1", noise="0.5:2")
    s = neal_kernel(m)
    with pytest.raises(bomcmc.BomcmcError):
        s.make_knobs(m.dim + 1)
    with pytest.raises(bomcmc.BomcmcError):
        s.make_knobs(m.dim, eta=-1.0)
    knobs = s.make_knobs(m.dim, eta=0.2, steps=5, sample_sigmas=False, sample_noise=False)
    pos = m.posterior().initializer(jax.random.PRNGKey(0))
    flat = m.ravel(pos)
    state = jax.jit(lambda x: s.init(x, lambda x: m.logdensity(m.unravel(x))))(flat)
    step = jax.jit(lambda k, st: s.step(k, st, lambda x: m.logdensity(m.unravel(x)), knobs))
    for i in range(5):
        state, info = step(jax.random.PRNGKey(i), state)
    np.testing.assert_array_equal(state.position[: m.n_hyper], flat[: m.n_hyper])
    assert int(info.n_grad) == 6 and float(info.step_size) == pytest.approx(0.2)
    assert float(state.logdensity) == pytest.approx(float(m.logdensity(m.unravel(state.position))))


# ---------------------------------------------------------------------------------------
# Prediction (Ask 2022, eqs. 6.19–6.20) and pre-training
# ---------------------------------------------------------------------------------------
def _tanh_net_by_hand(w, x):
    h = np.tanh(x @ w["ih0"] + w["bh0"])
    return h @ w["ho"] + w["bo"]


def test_regression_prediction_equals_brute_force():
    X, y = _data(n=6, n_out=2)
    m = BNN(X, y, hidden=(3,), prior="ih 1:2 bh 1 ho 1 bo 1", noise="0.5:2:3")
    flat = 0.8 * jax.random.normal(jax.random.PRNGKey(0), (3, 4, m.dim))  # chains, draws
    Xt = np.array([[0.1, -0.4], [1.2, 0.3], [-2.0, 0.5]])
    out = bnn_predict.predict_regression(m, flat, Xt)
    preds = []
    for d in np.asarray(flat).reshape(-1, m.dim):
        w = {k: np.asarray(v) for k, v in m.unravel(jnp.asarray(d))["w"].items()}
        preds.append(_tanh_net_by_hand(w, Xt))
    preds = np.array(preds)  # (12, 3, 2)
    mean = sum(preds) / len(preds)
    for i in range(len(Xt)):
        cov = sum(np.outer(p[i] - mean[i], p[i] - mean[i]) for p in preds) / (len(preds) - 1)
        np.testing.assert_allclose(out["cov"][i], cov, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(out["std"][i], np.sqrt(np.diag(cov)), rtol=1e-10)
    np.testing.assert_allclose(out["mean"], mean, rtol=1e-10)
    noisy = bnn_predict.predict_regression(m, flat, Xt, include_noise=True)
    noise_var = np.mean([np.exp(-np.asarray(m.unravel(jnp.asarray(d))["log_tau"]["noise_out"]))
                         for d in np.asarray(flat).reshape(-1, m.dim)], axis=0)
    np.testing.assert_allclose(noisy["cov"] - out["cov"], np.broadcast_to(np.diag(noise_var),
                                                                          out["cov"].shape))


def test_classification_prediction_equals_brute_force():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(8, 2))
    m = BNN(X, rng.integers(0, 3, 8), hidden=(3,), prior="ih 1 bh 1 ho 1 bo 1",
            likelihood="class")
    flat = 2.0 * jax.random.normal(jax.random.PRNGKey(1), (15, m.dim))
    out = bnn_predict.predict_classification(m, flat, X)
    logits = np.array([_tanh_net_by_hand({k: np.asarray(v) for k, v in
                                          m.unravel(jnp.asarray(d))["w"].items()}, X)
                       for d in np.asarray(flat)])
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    np.testing.assert_allclose(out["probs"], probs.mean(0), rtol=1e-10)
    votes = logits.argmax(-1)
    for i in range(len(X)):
        counts = np.bincount(votes[:, i], minlength=3)
        assert out["vote"][i] == counts.argmax()
        np.testing.assert_allclose(out["vote_fraction"][i], counts / 15)
    mb = BNN(X, rng.integers(0, 2, 8), hidden=(3,), prior="ih 1 bh 1 ho 1 bo 1",
             likelihood="binary")
    outb = bnn_predict.predict(mb, flat[:, : mb.dim], X)
    lb = np.array([_tanh_net_by_hand({k: np.asarray(v) for k, v in
                                      mb.unravel(jnp.asarray(d))["w"].items()}, X)
                   for d in np.asarray(flat[:, : mb.dim])])
    np.testing.assert_allclose(outb["probs"], (1 / (1 + np.exp(-lb))).mean(0), rtol=1e-10)
    np.testing.assert_array_equal(outb["vote"], ((lb > 0).mean(0) > 0.5).astype(int))


def test_binary_probabilities_of_large_logits_warn_of_nothing():
    """Weights large enough for logits of ±1000 (a confident classifier on unscaled inputs):
    the probabilities are 0 and 1, with no overflow warning (1/(1 + e^{-f}) overflowed)."""
    X = np.array([[-1.0, 0.0], [1.0, 0.0]])
    m = BNN(X, np.array([0, 1]), hidden=(1,), prior="ih 1 bh 1 ho 1 bo 1", likelihood="binary")
    tree = m.unravel(jnp.zeros(m.dim))
    w = {k: np.zeros(np.shape(v)) for k, v in tree["w"].items()}
    w["ih0"].flat[0], w["ho"].flat[0] = 50.0, 1000.0  # x1 → a saturated tanh → logit ±1000
    flat = np.asarray(m.ravel({**tree, "w": w}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = bnn_predict.predict_classification(m, flat[None], X)
    np.testing.assert_allclose(out["probs"][:, 0], [0.0, 1.0], atol=1e-300)


def test_prediction_reads_inference_data():
    X, y = _data(n=6)
    m = BNN(X, y, hidden=(2,), prior="ih 1:2 bh 1 ho x1:2 bo 1", noise="0.5:2")
    res = bomcmc.sample(m.posterior(), sampler=neal_sampler(m), chains=2, draws=5, warmup=0,
                        progress=False, chunk_size=5, steps=3)
    a = bnn_predict.predict(m, res.idata, X)
    flat = np.concatenate([res.idata.posterior[n].values.reshape(2, 5, -1) for n in
                           ("log_tau.ho", "log_tau.ih0", "log_tau.noise", "w.bh0", "w.bo",
                            "w.ho", "w.ih0")], axis=-1)
    b = bnn_predict.predict(m, flat, X)
    np.testing.assert_allclose(a["mean"], b["mean"])
    np.testing.assert_allclose(a["cov"], b["cov"])


def test_pretrain_reaches_the_map_of_a_linear_gaussian_model():
    """Adam on a fixed Gaussian prior and noise is ridge regression: closed-form MAP."""
    X, y = _data(n=20, n_in=3)
    lw, lb, lam = 2.0, 0.5, 10.0
    m = BNN(X, y, hidden=(), prior=fixed_gaussian(0, lw, lb, noise_precision=lam))
    res = pretrain(m, jax.random.PRNGKey(0), steps=3000, learning_rate=0.05)
    A = np.hstack([X, np.ones((20, 1))])
    theta = np.linalg.solve(lam * A.T @ A + np.diag([lw] * 3 + [lb]), lam * A.T @ y[:, 0])
    np.testing.assert_allclose(res.position["w"]["io"][:, 0], theta[:3], atol=1e-5)
    np.testing.assert_allclose(res.position["w"]["bo"], theta[3:], atol=1e-5)
    assert res.losses[-1] < res.losses[0]


def test_pretrain_sets_the_noise_and_starts_a_run():
    X, y = _data(n=15)
    m = BNN(X, y, hidden=(4,), prior="ih 1:2 bh 1 ho x1:2 bo 1", noise="0.5:2",
            activation="relu")
    res = pretrain(m, jax.random.PRNGKey(1), steps=300, objective="ml")
    resid = y - np.asarray(m.apply(res.position["w"], X))
    assert res.position["log_tau"]["noise"] == pytest.approx(-np.log(np.mean(resid**2)))
    run = bomcmc.sample(m.posterior(init=res.position), sampler=neal_sampler(m), chains=1,
                        draws=3, warmup=0, progress=False, chunk_size=3, steps=2)
    assert np.all(np.isfinite(run.idata.sample_stats["lp"].values))


def test_bad_models_are_one_line_errors():
    X, y = _data(n=5)
    cases = [
        dict(prior="ih 1 bh 1 bo 1"),  # no ho
        dict(prior="ih 1 bh x1 ho 1"),  # x on biases
        dict(prior="ih 1 bh 1:2:3:4 ho 1"),  # three alphas on biases
        dict(prior="ih 1 hh 1 ho 1"),  # hh1 in a one-layer net
        dict(prior="ih 1 ho1 1"),  # ho1 in a one-layer net
        dict(prior="ih 1 ho 1", noise=None),  # regression without noise
        dict(prior="ih 1 ho 1", activation="softsign"),
        dict(prior="ih 1 ho 1", likelihood="poisson"),
    ]
    for kw in cases:
        kw.setdefault("noise", "1")
        with pytest.raises(bomcmc.BomcmcError):
            BNN(X, y, hidden=(2,), **kw)
    with pytest.raises(bomcmc.BomcmcError):
        BNN(X, np.array([0, 1, 2, 0.5, 1]), hidden=(2,), prior="ih 1 ho 1", likelihood="class")
