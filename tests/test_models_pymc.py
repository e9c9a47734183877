"""`bomcmc.from_pymc`: a PyMC model through PyMC's JAX graph, sampled by bomcmc's NUTS.

A Beta-Binomial (exact posterior Beta(a + sum k, b + sum (n - k))) with a deterministic: the
mean of the constrained parameter within 4 MCSE of the exact one over 3 seeds, and the
InferenceData groups `az.loo` needs. Skipped where PyMC is not installed (it is in the `dev`
extra)."""

import numpy as np
import pytest

pm = pytest.importorskip("pymc")

import bomcmc  # noqa: E402

A, B, N, K = 1.5, 2.0, np.array([5, 6, 4]), np.array([1, 0, 2])
EXACT = (A + K.sum()) / (A + B + N.sum())
RUN = dict(sampler="nuts", chains=4, draws=1000, warmup=500, progress=False, float64=True)


def _model():
    with pm.Model() as m:
        theta = pm.Beta("theta", A, B)
        pm.Deterministic("odds", theta / (1 - theta))
        pm.Binomial("k", n=N, p=theta, observed=K)
    return m


@pytest.fixture(scope="module")
def results(compilation_cache):
    post = bomcmc.from_pymc(_model())
    return [bomcmc.sample(posterior=post, seed=s, **RUN) for s in (0, 1, 2)]


def test_beta_binomial_matches_the_exact_posterior_mean(results):
    import arviz as az

    margins = [float(abs(r.idata.posterior["theta"].mean() - EXACT)
                     / az.mcse(r.idata)["theta"]) for r in results]
    print(f"\npymc bounded: |error|/MCSE per seed {np.round(margins, 2).tolist()}")
    assert max(margins) < 4.0


def test_groups_and_loo(results):
    import arviz as az
    from scipy.stats import binom

    idata = results[0].idata
    theta = idata.posterior["theta"].values
    assert theta.shape == (4, 1000)
    np.testing.assert_allclose(idata.posterior["odds"].values, theta / (1 - theta), rtol=1e-12)
    np.testing.assert_allclose(idata.unconstrained_posterior["theta_logodds__"].values,
                               np.log(theta / (1 - theta)), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(idata.observed_data["k"].values, K)
    np.testing.assert_allclose(idata.log_likelihood["k"].values,
                               binom.logpmf(K, N, theta[..., None]), rtol=1e-10)
    assert np.isfinite(az.loo(idata).elpd_loo)
    assert results[0].totals["divergences"] == 0


def test_name_and_bad_input():
    post = bomcmc.from_pymc(_model())
    assert post.name == "pymc:model"
    assert set(post.init_position) == {"theta_logodds__"}
    with pytest.raises(bomcmc.BomcmcError, match="expected a pymc.Model"):
        bomcmc.from_pymc(lambda: None)
    with pm.Model() as discrete:
        pm.Poisson("n", 3.0)
    with pytest.raises(bomcmc.BomcmcError, match="discrete free variables"):
        bomcmc.from_pymc(discrete)


def test_nan_in_observed_data_is_a_one_line_error_naming_the_variable_and_row():
    """Issue 31: NaN or inf in the data is named, with its first row."""
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=np.array([0.1, 0.2, np.inf, 0.3]))
    with pytest.raises(bomcmc.BomcmcError, match=r"observed variable 'y' holds inf at row 2"):
        bomcmc.from_pymc(m)


def test_the_models_coords_and_dims_name_every_groups_axes(compilation_cache):
    """A model's `coords=` and `dims=` name the axes of every group as PyMC's own
    InferenceData names them, value variables under their random variables' dims where the
    shapes agree (not the simplex's K − 1 entries), and the warnings label by the coords."""
    schools = ["Choate", "Deerfield", "Exeter"]
    with pm.Model(coords={"school": schools, "k": ["a", "b", "c"]}) as m:
        tau = pm.HalfNormal("tau", 1.0, dims="school")
        w = pm.Dirichlet("w", np.ones(3), dims="k")
        pm.Deterministic("scale", tau * w[0], dims="school")
        pm.Normal("y", 0.0, tau, observed=np.array([0.3, -1.2, 0.4]), dims="school")
    res = bomcmc.sample(posterior=bomcmc.from_pymc(m), sampler="hmc", step_size=0.3, steps=3,
                        chains=2, draws=15, warmup=10, seed=0, progress=False)
    idata = res.idata
    for group, name in [("posterior", "tau"), ("posterior", "scale"),
                        ("unconstrained_posterior", "tau_log__"), ("observed_data", "y"),
                        ("log_likelihood", "y")]:
        assert idata[group][name].dims[-1] == "school", (group, name)
        assert list(idata[group]["school"].values) == schools
    assert idata.posterior["w"].dims[-1] == "k"
    assert idata.unconstrained_posterior["w_simplex__"].dims[-1] == "w_simplex___dim_0"
    said = " ".join(bomcmc.diagnostics.check_run(idata))  # 15 draws: too few for the ESS bar
    assert any(f"[{s}]" in said for s in schools + ["a", "b", "c"]), said
