"""`bomcmc.from_numpyro`: a NumPyro model sampled by bomcmc's NUTS on the unconstrained scale.

Three models with constrained parameters (a positive scale, a Dirichlet simplex, a Beta
probability) are checked on every constrained parameter's mean, over 3 seeds, within
4 Monte-Carlo standard errors (`az.mcse`) of the exact posterior mean: in closed form where
the model is conjugate (Beta-Binomial, Dirichlet-Multinomial), else by one-dimensional
quadrature (the scale model, whose mean is conjugate given the scale). The same bound
rejects the log density without the Jacobian of the unconstrained scale. With `-m slow`, a
correlation matrix's Cholesky factor (LKJ) against quadrature. Then the InferenceData groups
(`posterior` with deterministic sites, `unconstrained_posterior`, `observed_data`,
`log_likelihood`, `az.loo`) and `bomcmc sample --model FILE.py:NAME` with `resume`.
"""

import functools
import json

import jax
import numpy as np
import pytest

numpyro = pytest.importorskip("numpyro")
import numpyro.distributions as dist  # noqa: E402

import bomcmc  # noqa: E402
from bomcmc.cli import main as cli  # noqa: E402

SEEDS = (0, 1, 2)
BOUND = 4.0  # |mean error| / MCSE
RUN = dict(sampler="nuts", chains=4, draws=1000, warmup=500, progress=False, float64=True)
MARGINS = {}  # model -> largest |error| / MCSE over the seeds (printed with -s)


# ---------------------------------------------------------------------------------------
# The models
# ---------------------------------------------------------------------------------------
def scale_model(y):
    """Positive: a HalfNormal scale (and a mean); no closed form: the reference is quadrature
    (`_scale_model_exact_means`)."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0))
    numpyro.deterministic("variance", sigma**2)
    with numpyro.plate("n", y.shape[0]):
        numpyro.sample("y", dist.Normal(mu, sigma), obs=y)


def simplex_model(alpha, counts):
    """Simplex: Dirichlet-Multinomial, posterior Dirichlet(alpha + counts)."""
    p = numpyro.sample("p", dist.Dirichlet(alpha))
    numpyro.sample("counts", dist.Multinomial(int(counts.sum()), p), obs=counts)


def bounded_model(a, b, n, k):
    """Bounded: Beta-Binomial, posterior Beta(a + sum k, b + sum (n - k))."""
    theta = numpyro.sample("theta", dist.Beta(a, b))
    numpyro.deterministic("odds", theta / (1.0 - theta))
    with numpyro.plate("obs", k.shape[0]):
        numpyro.sample("k", dist.Binomial(n, theta), obs=k)


Y = np.random.default_rng(1).normal(1.0, 0.7, 15)
ALPHA, COUNTS = np.array([1.0, 2.0, 3.0, 1.0]), np.array([3.0, 0.0, 5.0, 1.0])
A, B, N, K = 1.5, 2.0, np.array([5, 6, 4]), np.array([1, 0, 2])

ARGS = {"scale": (scale_model, (Y,)), "simplex": (simplex_model, (ALPHA, COUNTS)),
        "bounded": (bounded_model, (A, B, N, K))}
post_alpha = ALPHA + COUNTS
EXACT = {
    "simplex": {"p": post_alpha / post_alpha.sum()},
    "bounded": {"theta": (A + K.sum()) / (A + B + N.sum())},
}


def _sample(post, seed):
    return bomcmc.sample(posterior=post, seed=seed, **RUN)


def _scale_model_exact_means(y, prior_sd_mu=5.0, prior_sd_sigma=2.0):
    """{site: exact posterior mean} of `scale_model` by quadrature: given sigma, mu is normal
    (conjugate prior), so sigma's marginal posterior is p(sigma) N(y; 0, sigma² I + 25 11ᵀ),
    and each mean is a one-dimensional integral over sigma."""
    from scipy import integrate, stats

    n, total = y.shape[0], y.sum()

    def log_marginal(sigma):
        cov = sigma**2 * np.eye(n) + prior_sd_mu**2
        return (stats.multivariate_normal.logpdf(y, np.zeros(n), cov)
                + stats.halfnorm.logpdf(sigma, scale=prior_sd_sigma))

    def mu_mean(sigma):  # E[mu | sigma, y]
        return (total / sigma**2) / (1.0 / prior_sd_mu**2 + n / sigma**2)

    shift = log_marginal(np.std(y))  # keeps the integrands near 1

    def moment(f):
        return integrate.quad(lambda s: f(s) * np.exp(log_marginal(s) - shift), 0.0, np.inf,
                              epsabs=0.0, epsrel=1e-10, limit=200)[0]

    z = moment(lambda s: 1.0)
    return {"mu": moment(mu_mean) / z, "sigma": moment(lambda s: s) / z,
            "variance": moment(lambda s: s**2) / z}


def _margin(idata, reference: dict) -> float:
    """The largest |mean - reference| / MCSE over the reference's sites and elements;
    `reference` maps a site to its exact posterior mean."""
    import arviz as az

    mcse = az.mcse(idata)
    worst = 0.0
    for site, ref in reference.items():
        mean = idata.posterior[site].mean(("chain", "draw")).values
        se = mcse[site].values
        worst = max(worst, float(np.max(np.abs(mean - ref) / se)))
    return worst


@pytest.fixture(scope="module")
def runs(compilation_cache):
    """{model: [SampleResult per seed]}: three seeds of each model, built and compiled once."""
    posts = {name: bomcmc.from_numpyro(model, *args) for name, (model, args) in ARGS.items()}
    return {name: [_sample(post, s) for s in SEEDS] for name, post in posts.items()}


# ---------------------------------------------------------------------------------------
# Correctness
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["simplex", "bounded"])
def test_conjugate_models_match_the_exact_posterior_mean(runs, name):
    margins = [_margin(r.idata, EXACT[name]) for r in runs[name]]
    MARGINS[name] = max(margins)
    print(f"\n{name}: |error|/MCSE per seed {np.round(margins, 2).tolist()}")
    assert max(margins) < BOUND


def test_scale_model_matches_the_posterior_mean_by_quadrature(runs):
    exact = _scale_model_exact_means(Y)
    margins = [_margin(r.idata, exact) for r in runs["scale"]]
    MARGINS["scale"] = max(margins)
    print(f"\nscale: |error|/MCSE per seed {np.round(margins, 2).tolist()}")
    assert max(margins) < BOUND


def test_the_bound_rejects_a_log_density_without_the_jacobian(compilation_cache):
    """The same model's log joint at the constrained values, with no log |J| of the
    logit transform: a Beta(a' - 1, b' - 1) in theta. The test's bound must catch it."""
    import dataclasses

    from numpyro.infer.util import log_density

    model, args = ARGS["bounded"]
    post = bomcmc.from_numpyro(model, *args)

    def no_jacobian(position):
        return log_density(model, args, {}, post.constrain(position))[0]

    broken = dataclasses.replace(post, logdensity_fn=no_jacobian)
    margin = _margin(_sample(broken, 0).idata, EXACT["bounded"])
    print(f"\nbounded without the Jacobian: |error|/MCSE {margin:.1f}")
    assert margin > BOUND  # measured: 10.9


def correlation_model(y):
    """A correlation matrix by its Cholesky factor: L[0,0] = 1 and L[0,1] = 0 in every draw."""
    chol = numpyro.sample("L", dist.LKJCholesky(2, 2.0))
    numpyro.sample("y", dist.MultivariateNormal(np.zeros(2), scale_tril=chol), obs=y)


def _correlation_exact_mean(y, eta=2.0):
    """E[r | y] by quadrature: p(r | y) ∝ (1 − r²)^(η−1) Π N(y_i; 0, [[1, r], [r, 1]])."""
    from scipy import integrate

    n, sxx, sxy = y.shape[0], float(np.sum(y**2)), float(np.sum(y[:, 0] * y[:, 1]))

    def log_post(r):
        return ((eta - 1.0) * np.log1p(-r * r) - 0.5 * n * np.log1p(-r * r)
                - 0.5 * (sxx - 2.0 * r * sxy) / (1.0 - r * r))

    shift = log_post(sxy / sxx)

    def moment(k):
        return integrate.quad(lambda r: r**k * np.exp(log_post(r) - shift), -1.0, 1.0,
                              epsabs=0.0, epsrel=1e-10, limit=200)[0]

    return moment(1) / moment(0)


@pytest.mark.slow
def test_a_correlation_model_is_exact_and_its_constant_entries_raise_no_warning(
        compilation_cache):
    """LKJ's Cholesky transform through `from_numpyro`, on the correlation's posterior mean
    (quadrature), 3 seeds; the factor's constant entries have no ESS but are no problem, so the
    runs are silent (ESS warnings on them suggested more draws, which could never help)."""
    import warnings

    import arviz as az

    y = np.random.default_rng(0).multivariate_normal(np.zeros(2), [[1.0, 0.6], [0.6, 1.0]], 30)
    post = bomcmc.from_numpyro(correlation_model, y)
    exact = _correlation_exact_mean(y)
    margins = []
    for seed in SEEDS:
        with warnings.catch_warnings():
            warnings.simplefilter("error", bomcmc.SamplingWarning)
            idata = _sample(post, seed).idata
        r = idata.posterior["L"][:, :, 1, 0]
        margins.append(abs(float(r.mean()) - exact) / float(az.mcse(idata)["L"][1, 0]))
    print(f"\ncorrelation: |error|/MCSE per seed {np.round(margins, 2).tolist()}")
    assert max(margins) < BOUND


# ---------------------------------------------------------------------------------------
# The InferenceData
# ---------------------------------------------------------------------------------------
def test_groups_and_shapes(runs):
    import arviz as az

    chains, draws = RUN["chains"], RUN["draws"]
    idata = runs["bounded"][0].idata
    assert {"posterior", "unconstrained_posterior", "observed_data", "log_likelihood",
            "sample_stats"} <= set(idata.groups())
    assert idata.posterior["theta"].shape == (chains, draws)
    np.testing.assert_allclose(idata.posterior["odds"].values,  # deterministic site
                               idata.posterior["theta"].values
                               / (1 - idata.posterior["theta"].values), rtol=1e-12)
    theta = idata.posterior["theta"].values
    np.testing.assert_allclose(idata.unconstrained_posterior["theta"].values,
                               np.log(theta / (1 - theta)), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(idata.observed_data["k"].values, K)
    ll = idata.log_likelihood["k"].values
    assert ll.shape == (chains, draws, K.size)
    from scipy.stats import binom

    np.testing.assert_allclose(ll, binom.logpmf(K, N, theta[..., None]), rtol=1e-10)
    from bomcmc.posterior import flatten  # batches of 333 draws, the last one padded

    flat = flatten(bomcmc.from_numpyro(ARGS["bounded"][0], *ARGS["bounded"][1]))
    raw = idata.unconstrained_posterior["theta"].values[..., None]
    np.testing.assert_allclose(flat.log_likelihood(raw, max_elements=999)["k"], ll, rtol=1e-12)
    loo = az.loo(idata)
    assert np.isfinite(loo.elpd_loo)
    assert np.isfinite(az.waic(idata).elpd_waic)

    simplex = runs["simplex"][0].idata
    assert simplex.posterior["p"].shape == (chains, draws, 4)
    assert simplex.unconstrained_posterior["p"].shape == (chains, draws, 3)
    np.testing.assert_allclose(simplex.posterior["p"].sum("p_dim_0").values, 1.0, rtol=1e-12)
    assert simplex.log_likelihood["counts"].shape == (chains, draws)
    scale = runs["scale"][0].idata
    assert scale.posterior["variance"].shape == (chains, draws)
    assert scale.log_likelihood["y"].shape == (chains, draws, Y.size)
    assert np.isfinite(az.loo(scale).elpd_loo)
    assert runs["scale"][0].idata.posterior.attrs["posterior"] == "custom"


def test_starts_and_name():
    model, args = ARGS["simplex"]
    post = bomcmc.from_numpyro(model, *args)
    assert post.name == "numpyro:simplex_model"
    start = post.initializer(jax.random.PRNGKey(3))
    assert np.shape(start["p"]) == (3,) and np.all(np.abs(np.asarray(start["p"])) <= 2.0)
    bound = bomcmc.from_numpyro(functools.partial(scale_model, Y))
    assert bound.name == "numpyro:scale_model"


def test_bad_models_are_one_line_errors():
    with pytest.raises(bomcmc.BomcmcError, match="callable"):
        bomcmc.from_numpyro(42)

    def broken(y):
        numpyro.sample("y", dist.Normal(0.0, 1.0), obs=y)
        raise ValueError("no\nsecond line")

    with pytest.raises(bomcmc.BomcmcError, match="cannot be initialized: ValueError: no$"):
        bomcmc.from_numpyro(broken, Y)


# ---------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------
MODEL_FILE = '''
import functools
import numpy as np
import numpyro
import numpyro.distributions as dist


def bounded_model(a, b, n, k):
    theta = numpyro.sample("theta", dist.Beta(a, b))
    numpyro.deterministic("odds", theta / (1.0 - theta))
    with numpyro.plate("obs", k.shape[0]):
        numpyro.sample("k", dist.Binomial(n, theta), obs=k)


model = functools.partial(bounded_model, 1.5, 2.0, np.array([5, 6, 4]), np.array([1, 0, 2]))
not_a_model = 3
'''


def test_cli_model_file_sample_and_resume(tmp_path, monkeypatch, capsys, compilation_cache):
    import arviz as az

    from bomcmc.cli import commands
    from bomcmc.models import model_file

    monkeypatch.setenv("BOMCMC_NO_CACHE", "1")  # the fixture's cache is on; leave it as is
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_model.py").write_text(MODEL_FILE)
    # ArviZ is imported with Numba hidden (`commands.preload_arviz`) only once a model file,
    # which may import Numba, is loaded, and not by the resume of a run from one
    events, load = [], model_file.load
    monkeypatch.setattr(commands, "preload_arviz", lambda: events.append("preload"))
    monkeypatch.setattr(model_file, "load", lambda spec: (events.append("load"), load(spec))[1])
    argv = ["sample", "--model", "my_model.py:model", "--sampler", "nuts", "--chains", "2",
            "--draws", "100", "--warmup", "100", "--chunk-size", "50", "--float64",
            "--no-progress", "--json", "--out"]
    assert cli.main(argv + ["run"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert events == ["load", "preload"]
    assert set(summary["variables"]) == {"theta", "odds"}
    cfg = json.loads((tmp_path / "run" / "config.json").read_text())
    assert cfg["model"] == f"{tmp_path / 'my_model.py'}:model"
    idata = az.from_netcdf(tmp_path / "run" / "idata.nc")
    assert {"observed_data", "log_likelihood"} <= set(idata.groups())

    # cut the run after its first sampling chunk; `resume` loads the model file again
    import shutil

    shutil.copytree(tmp_path / "run", tmp_path / "cut")
    chunks = sorted((tmp_path / "cut" / "chunks").iterdir())
    for p in [chunks[-1], tmp_path / "cut" / "idata.nc", tmp_path / "cut" / "run.json"]:
        p.unlink()
    events.clear()
    assert cli.main(["resume", "cut", "--no-progress", "--json"]) == 0
    assert events == ["load"]
    capsys.readouterr()
    resumed = az.from_netcdf(tmp_path / "cut" / "idata.nc")
    np.testing.assert_array_equal(resumed.posterior["theta"].values,
                                  idata.posterior["theta"].values)


@pytest.mark.parametrize("spec, needle", [
    ("my_model.py:nope", "defines no 'nope'"),
    ("missing.py:model", "no such model file"),
    ("my_model.py", "--model must be FILE.py:NAME"),
    ("my_model.py:not_a_model", "is a int"),
    ("my_model.py:bounded_model", "takes arguments"),
])
def test_cli_bad_model_spec_is_one_line_exit_2(tmp_path, monkeypatch, capsys, spec, needle):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_model.py").write_text(MODEL_FILE)
    assert cli.main(["sample", "--model", spec, "--out", "run"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("bomcmc: error: ") and needle in err


def test_cli_needs_exactly_one_of_posterior_and_model(capsys):
    assert cli.main(["sample", "--out", "d"]) == 2
    assert "one of the arguments --posterior --model is required" in capsys.readouterr().err
    assert cli.main(["sample", "--posterior", "funnel-10", "--model", "m.py:x",
                     "--out", "d"]) == 2
    assert "not allowed with" in capsys.readouterr().err


def test_model_file_rules(tmp_path):
    """NAME is a Posterior as it is; a callable with NAME_init a JAX log density; another
    callable a NumPyro model with its data bound. The Posterior records FILE.py:NAME."""
    from bomcmc.models import model_file

    (tmp_path / "more.py").write_text(
        "import jax.numpy as jnp\nimport bomcmc\n"
        "def logdensity(x):\n    return -0.5 * jnp.sum(x['a'] ** 2)\n"
        "logdensity_init = {'a': jnp.zeros(3)}\n"
        "post = bomcmc.Posterior(logdensity, {'b': jnp.zeros(2)}, name='mine')\n")
    (tmp_path / "my_model.py").write_text(MODEL_FILE)
    ld = model_file.load(f"{tmp_path / 'more.py'}:logdensity")
    assert ld.name == "file:logdensity" and np.shape(ld.init_position["a"]) == (3,)
    assert ld.model_file == f"{tmp_path / 'more.py'}:logdensity"
    assert model_file.load(f"{tmp_path / 'more.py'}:post").name == "mine"
    nm = model_file.load(f"{tmp_path / 'my_model.py'}:model")
    assert nm.name == "numpyro:bounded_model" and set(nm.init_position) == {"theta"}


NAN_MODEL_FILE = '''
import functools

import numpy as np
import numpyro
import numpyro.distributions as dist


def regression(x, y):
    beta = numpyro.sample("beta", dist.Normal(0.0, 1.0))
    numpyro.sample("y", dist.Normal(beta * x, 1.0), obs=y)


model = functools.partial(regression, np.array([1.0, 2.0, 3.0]), np.array([0.5, np.nan, 1.0]))
bad_x = functools.partial(regression, np.array([1.0, np.inf, 3.0]), None)
'''


def test_nan_in_the_data_is_a_one_line_error_naming_the_site_and_row(tmp_path, monkeypatch,
                                                                    capsys):
    """Issue 31: NaN in a model's data gave NumPyro UserWarnings, then "cannot be initialized:
    RuntimeError: Cannot find valid initial parameters", never naming the NaN."""
    def regression(x, y):
        beta = numpyro.sample("beta", dist.Normal(0.0, 1.0))
        numpyro.sample("y", dist.Normal(beta * x, 1.0), obs=y)

    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises(bomcmc.BomcmcError, match=r"observed site 'y' holds nan at row 1"):
        bomcmc.from_numpyro(regression, x, np.array([0.5, np.nan, 1.0]))
    with pytest.raises(bomcmc.BomcmcError, match=r"argument 'x' holds inf at row 1"):
        bomcmc.from_numpyro(regression, np.array([1.0, np.inf, 3.0]), None)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nan_model.py").write_text(NAN_MODEL_FILE)
    assert cli.main(["sample", "--model", "nan_model.py:model", "--out", "run"]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "observed site 'y' holds nan at row 1" in err


def test_missing_values_the_model_masks_itself_are_not_refused():
    """NumPyro's own ways with missing data build: a likelihood masked where y is NaN
    (`.mask`), and `obs_mask=`, which imputes the missing y. The masked model's log density is
    the complete cases' (no NaN reaches it), at any point; the NaN check above still refuses
    NaN that reaches the likelihood unmasked."""
    import jax.numpy as jnp

    y = np.array([1.0, 2.0, np.nan, 4.0])

    def masked(y):
        mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
        with numpyro.plate("n", y.shape[0]):
            numpyro.sample("y", dist.Normal(mu, 1.0).mask(~jnp.isnan(y)),
                           obs=jnp.nan_to_num(y))

    def complete(y):
        mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
        with numpyro.plate("n", y.shape[0]):
            numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)

    a = bomcmc.from_numpyro(masked, y)
    b = bomcmc.from_numpyro(complete, y[~np.isnan(y)])
    for mu in (-3.0, 0.5, 2.3):
        point = {"mu": np.asarray(mu)}
        np.testing.assert_allclose(float(a.logdensity_fn(point)), float(b.logdensity_fn(point)),
                                   rtol=1e-12)

    def imputed(y):
        mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
        with numpyro.plate("n", y.shape[0]):
            numpyro.sample("y", dist.Normal(mu, 1.0), obs=y, obs_mask=~np.isnan(y))

    assert "y_unobserved" in bomcmc.from_numpyro(imputed, y).init_position


def test_plates_name_the_axes_as_arviz_names_them():
    """`from_numpyro` names each site's axes by its plates, where ArviZ's `from_numpyro`
    puts them (its `infer_dims`), nested plates, an LKJ factor and a simplex in a plate
    included; the bounded model's observed site is named in both of its groups."""
    from arviz.data.io_numpyro import infer_dims

    def nested(y):
        mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
        with numpyro.plate("g", 3, dim=-2):
            with numpyro.plate("school", 8):
                z = numpyro.sample("z", dist.Normal(0.0, 1.0))
                theta = numpyro.deterministic("theta", mu + z)
                numpyro.sample("y", dist.Normal(theta, 1.0), obs=y)
            numpyro.sample("L", dist.LKJCholesky(4))
            numpyro.sample("w", dist.Dirichlet(np.ones(5)))

    y = np.zeros((3, 8))
    ours = bomcmc.from_numpyro(nested, y).dims
    named = {k: [d for d in v if d is not None] for k, v in ours.items()}
    assert named == infer_dims(nested, (y,), {})
    assert ours["L"] == ["g", None, None, None] and ours["z"] == ["g", "school"]
    assert bomcmc.from_numpyro(ARGS["bounded"][0], *ARGS["bounded"][1]).dims == {"k": ["obs"]}


def test_the_bounded_models_observed_site_is_named_by_its_plate(runs):
    idata = runs["bounded"][0].idata
    assert idata.observed_data["k"].dims == ("obs",)
    assert idata.log_likelihood["k"].dims == ("chain", "draw", "obs")
