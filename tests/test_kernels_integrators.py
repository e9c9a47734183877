"""The leapfrog integrator (kernels/integrators.py): reversibility, volume preservation,
second-order energy error."""

import jax
import jax.numpy as jnp
import numpy as np

from bomcmc.kernels.integrators import IntegratorState, kinetic_energy, leapfrog

# A small anisotropic, non-Gaussian target (so the tests are not special to quadratics).
SCALES = jnp.array([1.0, 0.5, 2.0])


def logdensity(x):
    return -0.5 * jnp.sum((x / SCALES) ** 2) - 0.1 * jnp.sum(x**4) / 4


def start(x, p):
    lp, g = jax.value_and_grad(logdensity)(x)
    return IntegratorState(x, p, lp, g)


X0 = jnp.array([0.3, -0.7, 1.1])
P0 = jnp.array([0.5, 0.2, -0.4])
INV_MASS = jnp.array([1.0, 2.0, 0.5])


def energy(s):
    return -s.logdensity + kinetic_energy(s.momentum, INV_MASS)


def test_reversibility_float64():
    """Integrate forward, negate momentum, integrate back: the start is recovered to 1e-10."""
    fwd = leapfrog(start(X0, P0), logdensity, 0.05, INV_MASS, 50)
    back = leapfrog(start(fwd.position, -fwd.momentum), logdensity, 0.05, INV_MASS, 50)
    assert X0.dtype == jnp.float64
    np.testing.assert_allclose(back.position, X0, atol=1e-10, rtol=0)
    np.testing.assert_allclose(-back.momentum, P0, atol=1e-10, rtol=0)


def test_volume_preservation():
    """The Jacobian determinant of one leapfrog map (x, p) -> (x', p') is 1."""

    for n_steps in (1, 7):
        def flow_n(z, n=n_steps):
            s = leapfrog(start(z[:3], z[3:]), logdensity, 0.1, INV_MASS, n)
            return jnp.concatenate([s.position, s.momentum])

        jac = jax.jacfwd(flow_n)(jnp.concatenate([X0, P0]))
        assert abs(np.linalg.det(np.asarray(jac)) - 1.0) < 1e-10


def test_energy_error_is_second_order():
    """Over a fixed integration time T = εL, |ΔH| shrinks as ε²: the fitted log-log slope is 2 ± 0.2."""
    T = 1.0
    eps = np.array([0.2, 0.1, 0.05, 0.025, 0.0125])
    errs = []
    for e in eps:
        n = int(round(T / e))
        s0 = start(X0, P0)
        s1 = leapfrog(s0, logdensity, e, INV_MASS, n)
        errs.append(abs(float(energy(s1) - energy(s0))))
    slope = np.polyfit(np.log(eps), np.log(errs), 1)[0]
    assert abs(slope - 2.0) < 0.2, f"slope {slope:.3f}, errors {errs}"


def test_zero_steps_is_identity_and_traced_steps():
    s0 = start(X0, P0)
    s = leapfrog(s0, logdensity, 0.1, INV_MASS, 0)
    np.testing.assert_array_equal(s.position, X0)
    # num_steps as a traced value inside jit
    f = jax.jit(lambda n: leapfrog(s0, logdensity, 0.1, INV_MASS, n).position)
    np.testing.assert_allclose(f(3), leapfrog(s0, logdensity, 0.1, INV_MASS, 3).position)
