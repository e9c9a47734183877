"""The race's robot-arm network as its peers write it (benchmarks/race_peers.py) is the
posterior `bomcmc bnn fit` samples at its defaults, and its rule reads the same quantities.

At five random points (log-precisions around their posterior's scale, weights N(0, 0.5²)):
the BlackJAX entrant's hand-written log density, NumPyro's model (its potential energy on
the unconstrained scale) and PyMC's model (nutpie's) each differ from
bomcmc's joint log density of (log τ, w) by one constant (measured spread of the
difference: 1.3e-10 for BlackJAX, 7e-11 for NumPyro, 3.5e-10 for PyMC; bound 1e-6);
`network_quantities` gives bomcmc's watched f to 1e-15 and its log_lik up to a constant
(spread 3e-11). A broken variant (the output weights'
precision unscaled, ω = 400 instead of 16/0.05²) fails the same check."""

import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bomcmc.bnn.defaults import DEFAULT_NOISE, DEFAULT_PRIOR
from bomcmc.bnn.function_space import watch
from bomcmc.bnn.network import BNN
from bomcmc.datasets import robot_arm

ROOT = Path(__file__).resolve().parents[1]
# the benchmark harness, not the library: `pytest -m slow` runs it (before any race), and the
# 20-minute suite leaves it out, as test_benchmarks_peers.py does
pytestmark = pytest.mark.slow
SPREAD = 1e-6  # of a difference meant constant, on log densities of size 1e4-1e5


def _race_peers():
    spec = importlib.util.spec_from_file_location("race_peers",
                                                  ROOT / "benchmarks" / "race_peers.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


RP = _race_peers()
X, Y = robot_arm("train")
DATA = {"X": X, "y": Y}
MODEL = BNN(X, Y, hidden=(16,), prior=DEFAULT_PRIOR, likelihood="real", noise=DEFAULT_NOISE,
            activation="tanh", name="bnn")


def _points():
    """Five flat points in the BlackJAX entrant's layout, and each as bomcmc's position."""
    _, dim, names = RP.network_logdensity(DATA)
    rng = np.random.default_rng(0)
    out = []
    for _ in range(5):
        x = 0.5 * rng.normal(size=dim)
        x[:4] += np.array([3.0, 3.0, 6.0, 5.0]) + rng.normal(size=4)
        p = names(x)
        pos = {"log_tau": {"ih0": x[0], "bh0": x[1], "ho": x[2], "noise": x[3]},
               "w": {"ih0": p["W1"], "bh0": p["b1"], "ho": p["W2"], "bo": p["b2"]}}
        out.append((x, p, jax.tree_util.tree_map(jnp.asarray, pos)))
    return out


def _assert_constant(a, b):
    d = np.asarray(a, float) - np.asarray(b, float)
    assert np.ptp(d) < SPREAD, d


def test_blackjax_and_numpyro_densities_are_bomcmcs(monkeypatch):
    from numpyro.infer.util import potential_energy

    pts = _points()
    bomcmc = [float(MODEL.logdensity(pos)) for _, _, pos in pts]
    logd = RP.network_logdensity(DATA)[0]
    _assert_constant([float(logd(jnp.asarray(x))) for x, _, _ in pts], bomcmc)
    args = (jnp.asarray(X), jnp.asarray(Y))

    def numpyro_logd():
        model = RP.numpyro_model("robot-arm")
        return [-float(potential_energy(model, args, {}, {
            **{k: jnp.asarray(x[i]) for i, k in enumerate(RP.RATES)},
            **{k: jnp.asarray(p[k]) for k in ("W1", "b1", "W2", "b2")}})) for x, p, _ in pts]

    _assert_constant(numpyro_logd(), bomcmc)
    monkeypatch.setitem(RP.RATES, "t_ho", 1 / 1600)  # the broken variant: ω not scaled
    with pytest.raises(AssertionError):
        _assert_constant(numpyro_logd(), bomcmc)


def test_pymc_density_is_bomcmcs():
    pts = _points()
    logp = RP.pymc_model("robot-arm", DATA).compile_logp()
    values = [float(logp({**{f"{k}_log__": x[i] for i, k in enumerate(RP.RATES)},
                          **{k: p[k] for k in ("W1", "b1", "W2", "b2")}})) for x, p, _ in pts]
    _assert_constant(values, [float(MODEL.logdensity(pos)) for _, _, pos in pts])


def test_the_peers_rule_reads_what_bomcmcs_watch_reads():
    pts = _points()
    flat = np.stack([np.asarray(jax.flatten_util.ravel_pytree(pos)[0]) for _, _, pos in pts])
    watched = watch(MODEL, None)(flat[None])[0]  # (5, 200·2 + 1)
    peers = RP.network_quantities({k: np.stack([p[k] for _, p, _ in pts])[None]
                                   for k in ("W1", "b1", "W2", "b2", "t_y")}, X, Y)
    np.testing.assert_allclose(peers["f"][0].reshape(5, -1), watched[:, :-1], atol=1e-12)
    _assert_constant(peers["log_lik"][0], watched[:, -1])
