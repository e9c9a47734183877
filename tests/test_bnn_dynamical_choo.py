"""Choo's estimate of the hyperparameters' curvature for Dynamical B (Choo 2000 §4.5.2,
eqs. 4.29, 4.32, 4.37–4.43; `bnn/dynamical.py`) and the separate factors η_h, η_p (§5.5):
the estimate against autodiff of the quantity its equations define, its dependence on φ and
λ̂ only, and the sampler with it against the exact posterior of a linear model, where the
same estimate taken at the current λ fails."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_kernels_choo_dynamics import _exact_z, _flat_logdensity, _linear, _small_net

from bomcmc.bnn.choo_data import load_choo8
from bomcmc.bnn.dynamical import (DynamicalA, DynamicalB, choo_step_curvature,
                                  choo_weight_group_curvatures)
from bomcmc.bnn.network import BNN
from bomcmc.errors import BomcmcError
from bomcmc.kernels.choo_dynamics import choo_kernel, trajectory

pytestmark = pytest.mark.usefixtures("compilation_cache")  # fixture in conftest.py

PRIOR = "ih 1:0.5 bh 1:0.5 ho 0.45:0.5 bo 0.8:0.5"


def _identity_net(hidden):
    """One unit per hidden layer, identity activations, one output: every approximation of
    eqs. 4.39–4.40 (no cross terms, no activation's derivatives) is exact."""
    prior = PRIOR + "".join(f" hh{i} 1:0.5 bh{i} 1:0.5" for i in range(1, len(hidden)))
    return BNN(*load_choo8(), hidden=hidden, activation="identity", prior=prior,
               noise="0.1:0.5")


def _at(blocks, seed=3):
    """A random position in the blocks' coordinates (weights and log-precisions about
    N(0, ½²) around the model's start), its tree and λ̂ (eq. 4.35)."""
    tree = blocks.model.init_position()
    x0 = blocks.ravel(blocks.to_noncentred(tree) if hasattr(blocks, "to_noncentred") else tree)
    x = jnp.asarray(x0 + 0.5 * np.random.default_rng(seed).normal(size=x0.shape), jnp.float64)
    tree = blocks.unravel(x)
    hat = {k: jnp.asarray(np.log(blocks.omega[k]), x.dtype) for k in tree["log_tau"]}
    return x, tree, hat


def _estimate(blocks, tree, hat):
    return jax.jit(lambda u, h: choo_weight_group_curvatures(blocks, u, h))(tree["u"], hat)


def _exact_hessian(blocks, tree, hat):
    """−∂²log p(φ, λ)/∂λ_k² at λ = λ̂, φ fixed (autodiff of Dynamical B's density)."""
    keys = sorted(hat)

    def energy(lam):
        return -blocks.logdensity({"log_tau": dict(zip(keys, lam)), "u": tree["u"]})

    h = jax.jit(jax.hessian(energy))(jnp.stack([hat[k] for k in keys]))
    return dict(zip(keys, np.diag(np.asarray(h))))


@pytest.mark.parametrize("make", [lambda: _linear()[0], lambda: _identity_net((1, 1))])
def test_choo_estimate_is_exact_where_its_approximations_are(make):
    """Eq. 4.38 is exact, and eq. 4.39 drops only cross terms between units j ≠ j' and
    eq. 4.40 the activation's derivatives: without hidden layers, or with one unit per layer
    and identity activations, eqs. 4.29 + 4.39 at β̂ equal the exact −∂²log p/∂λ² at λ̂ for
    every group (the noise's, eq. 4.36, too). Negative values occur (the exact curvature is
    negative there: ih0, hh1, bh1, ho of the two-layer network); the step size then uses
    |c| (eq. 4.43)."""
    blocks = DynamicalB(make())
    x, tree, hat = _at(blocks)
    est = _estimate(blocks, tree, hat)
    exact = _exact_hessian(blocks, tree, hat)
    assert set(est) | {"noise"} == set(exact)
    for g in est:
        np.testing.assert_allclose(float(est[g]), exact[g], rtol=1e-10, err_msg=g)
    step_c = dict(zip(blocks.keys, np.asarray(jax.jit(blocks.hyper_curvature)(x))))
    for g in est:
        np.testing.assert_allclose(step_c[g], abs(float(est[g])), rtol=1e-12)
        np.testing.assert_allclose(float(choo_step_curvature(est[g])), abs(float(est[g])))
    np.testing.assert_allclose(step_c["noise"], exact["noise"], rtol=1e-10)


def _reference_hidden_terms(blocks, tree, hat):
    """Eqs. 4.29, 4.39–4.42 for the groups feeding the hidden layer of a one-layer tanh
    network, term by term and independently of the code: ∂L/∂λ by central finite
    differences, ∂g_j/∂λ by autodiff of the hidden units' summed inputs, D_j = ω_δ·Σ_k
    w_jk² by a loop (eqs. 4.32, 4.40, tanh: a'² ≤ 1)."""
    model = blocks.model
    omega_noise = blocks.omega["noise"]

    def centred(lam_g, g):
        return blocks.to_centred({"log_tau": {**hat, g: lam_g}, "u": tree["u"]})["w"]

    def loss(lam_g, g):
        w = centred(lam_g, g)
        r = model.apply(w, model.X) - model.y
        return 0.5 * omega_noise * float(jnp.sum(r**2))

    w_hat = centred(hat["ih0"], "ih0")
    ho = np.asarray(w_hat["ho"])
    d = np.array([omega_noise * sum(ho[j, k] ** 2 for k in range(ho.shape[1]))
                  for j in range(ho.shape[0])])
    out = {}
    for g in ("ih0", "bh0"):
        h = 1e-5
        lam = float(hat[g])
        d_loss = (loss(lam + h, g) - loss(lam - h, g)) / (2 * h)

        def summed_inputs(lam_g, g=g):
            w = centred(lam_g, g)
            return model.X @ w["ih0"] + w["bh0"]

        dg = jax.jacfwd(summed_inputs)(hat[g])  # (n, units)
        second = float(np.sum(d * np.asarray(dg) ** 2))
        out[g] = blocks.model.groups[g].a0 / 2 - 0.5 * d_loss + second
    return out


def test_choo_estimate_on_a_tanh_network():
    """Choo's data, 3 tanh units, one output: the groups feeding the output (ho, bo) are
    exact as above; for the hidden layer's groups (ih0, bh0) eqs. 4.39–4.40 approximate,
    and the code's value equals the equations' quantity built independently (relative
    1e-6: the finite difference)."""
    blocks = DynamicalB(_small_net())
    _, tree, hat = _at(blocks)
    est = _estimate(blocks, tree, hat)
    exact = _exact_hessian(blocks, tree, hat)
    for g in ("ho", "bo"):
        np.testing.assert_allclose(float(est[g]), exact[g], rtol=1e-10, err_msg=g)
    ref = _reference_hidden_terms(blocks, tree, hat)
    for g, v in ref.items():
        np.testing.assert_allclose(float(est[g]), v, rtol=1e-6, err_msg=g)
        assert abs(v - exact[g]) > 1e-3 * abs(exact[g])  # an approximation here


@pytest.mark.parametrize("make", [_small_net, lambda: _identity_net((1, 1))])
def test_choo_step_sizes_depend_only_on_phi_and_the_prior_mean(make):
    """Reversibility needs the hyperparameters' step sizes to ignore λ (Choo 2000 §4.5):
    moving λ leaves them unchanged bit for bit; moving φ changes them."""
    blocks = DynamicalB(make())
    x, _, _ = _at(blocks, seed=5)
    h, curvature = blocks.n_hyper, jax.jit(blocks.hyper_curvature)
    for shift in (0.7, -2.0):
        np.testing.assert_array_equal(curvature(x), curvature(x.at[:h].add(shift)))
    assert not np.allclose(curvature(x), curvature(x.at[h:].add(0.3)))


class ChooAtCurrentLambda(DynamicalB):
    """Broken: Choo's estimate of the weight groups taken at the current λ instead of λ̂."""

    def hyper_curvature(self, x):
        tree = self.unravel(x)
        right = super().hyper_curvature(x)
        groups = choo_weight_group_curvatures(self, tree["u"], tree["log_tau"])
        return jnp.stack([choo_step_curvature(groups[k]) if k in groups else right[i]
                          for i, k in enumerate(self.keys)])


# Choo's η_h < η_p (his §6.2.3): at η_h = η_p = 0.3 the chains rarely enter the lower tail of
# log τ_io, where his curvature is small and the hyperparameters' steps long (docs)
CHOO_KNOBS = dict(step_size=0.3, eta_ratio=0.5)


@pytest.mark.parametrize("seed", [0, 1])
def test_dynamical_b_with_choos_estimate_matches_the_exact_posterior(seed):
    """As test_kernels_choo_dynamics's exact test (Bonferroni bound 4.4), with Choo's
    estimate and η_h = η_p/2. Measured worst |z|: 1.5 and 2.7 (seeds 0, 1)."""
    z, bound = _exact_z(DynamicalB(_linear()[0], hyper_curvature="choo"), seed, **CHOO_KNOBS)
    for name, (z_mean, z_var) in z.items():
        assert np.all(np.abs(z_mean) < bound), (name, z_mean)
        assert np.all(np.abs(z_var) < bound), (name, z_var)


def test_choos_estimate_at_the_current_lambda_fails_the_same_test():
    """Measured: z of the mean of log τ_io −9.4 and −10.7 (seeds 0, 1)."""
    z, bound = _exact_z(ChooAtCurrentLambda(_linear()[0]), 0, **CHOO_KNOBS)
    assert abs(float(z["log_tau.io"][0][0])) > bound, z  # the exact test's criterion


def test_eta_hyper_scales_only_the_hyperparameters_steps():
    """η_h and η_p (Choo 2000 §5.5): η_h = η_p gives today's trajectory bit for bit; a tiny
    η_h leaves λ (nearly) where it was while the weights move as before; the trajectory
    stays reversible with η_h ≠ η_p."""
    blocks = DynamicalA(_linear()[0])
    logdensity = _flat_logdensity(blocks)
    x, _, _ = _at(blocks)
    p = jnp.asarray(np.random.default_rng(4).normal(size=x.shape))
    h = blocks.n_hyper

    def run(x, p, eta_hyper, hyper_first):
        logp, grad = jax.value_and_grad(logdensity)(x)
        end = trajectory(blocks, x, p, logp, grad, logdensity, 0.2, 6, hyper_first, eta_hyper)
        return end.position, end.momentum

    same, default = jax.jit(lambda x, p: (run(x, p, 0.2, False)[0],
                                          run(x, p, None, False)[0]))(x, p)
    np.testing.assert_array_equal(same, default)
    run = jax.jit(run)
    frozen, _ = run(x, p, 1e-9, False)
    assert float(jnp.max(jnp.abs(frozen[:h] - x[:h]))) < 1e-6
    assert float(jnp.max(jnp.abs(frozen[h:] - x[h:]))) > 1e-2
    x1, p1 = run(x, p, 0.05, False)
    x2, p2 = run(x1, -p1, 0.05, True)
    np.testing.assert_allclose(x2, x, atol=1e-9)
    np.testing.assert_allclose(-p2, p, atol=1e-9)


def test_bad_options_are_one_line_errors():
    model = _linear()[0]
    with pytest.raises(BomcmcError, match="hyper_curvature must be one of"):
        DynamicalB(model, hyper_curvature="newton")
    blocks = DynamicalB(model)
    with pytest.raises(BomcmcError, match="eta_ratio"):
        choo_kernel(blocks).make_knobs(blocks.dim, eta_ratio=0.0)
    knobs = choo_kernel(blocks).make_knobs(blocks.dim, step_size=0.2)
    assert float(knobs.eta_ratio) == 1.0  # default: one η for both blocks


def test_the_estimator_offers_both_estimates_of_dynamical_b(monkeypatch):
    """`sampler="dyn_b"` is Choo's Dynamical B as the thesis defines it; "dyn_b_gn" keeps the
    Gauss-Newton estimate, under its own name in the run (nothing is sampled here)."""
    import bomcmc.bnn.dynamical as dynamical
    from bomcmc import BayesianMLPRegressor

    built = []

    class Recorded(dynamical.DynamicalB):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            built.append(self.hyper_estimate)

    monkeypatch.setattr(dynamical, "DynamicalB", Recorded)
    model = _linear()[0]
    for name, estimate in (("dyn_b", "choo"), ("dyn-b-gn", "gauss_newton")):
        sampler, _, _, _ = BayesianMLPRegressor(sampler=name)._sampler_and_posterior(model, None)
        assert sampler.kernel.name == "ahmc_" + name.replace("-", "_")
        assert built.pop() == estimate
