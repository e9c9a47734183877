"""`Tuner.surface()`: the learned reward surface a GP tuner hands to the plots, and the
protocol's defaults (`take_grads`, `surface`)."""

import json
import math

import numpy as np
import pytest

from bomcmc.kernels.hmc import HMCKnobs, HMCInfo
from bomcmc.tuning import bandit
from bomcmc.tuning.ahmc_tuner import AHMCTuner
from bomcmc.tuning.base import FixedTuner
from bomcmc.tuning.gp_bandit import GPBanditTuner
from bomcmc.tuning.im_tuner import IMBanditTuner, gp_mean_surface


def _chunk(rng, chains=4, n=12, phase=0):
    zeros = np.zeros((chains, n))
    info = HMCInfo(acceptance_rate=zeros + 0.9, energy=zeros, energy_error=zeros,
                   diverging=zeros.astype(bool), n_grad=zeros + 7, n_steps=zeros + 7,
                   sq_jump=zeros, esjd=rng.exponential(2.0, (chains, n)),
                   step_size=zeros + 0.1)
    return {"phase": phase, "positions": rng.normal(size=(chains, n, 2)), "info": info}


def _knobs(chains=4):
    return HMCKnobs(step_size=np.full(chains, 0.1, np.float32),
                    num_steps=np.full(chains, 10, np.int32),
                    inverse_mass_matrix=np.ones((chains, 2), np.float32),
                    random_steps=np.ones(chains, bool))


def _check(surface, gp, names, ny):
    assert surface["names"] == names
    assert surface["x"].shape == (120,) and surface["y"].shape == (ny,)
    assert surface["mean"].shape == surface["sd"].shape == (ny, 120)
    j, i = ny // 3, 77  # the mean and sd are the GP's posterior at the grid's points
    mean, var = gp.predict(np.array([[surface["x"][i], surface["y"][j]]]))
    assert surface["mean"][j, i] == pytest.approx(mean[0], rel=1e-12)
    assert surface["sd"][j, i] == pytest.approx(math.sqrt(var[0]), rel=1e-12)
    np.testing.assert_array_equal(surface["tried_n"], gp.counts)
    np.testing.assert_array_equal(np.column_stack([surface["tried_x"], surface["tried_y"]]),
                                  gp.X)


def test_protocol_defaults():
    assert FixedTuner().take_grads() == 0 and FixedTuner().surface() is None


def test_bandit_surface_is_the_current_gp_over_the_box():
    rng = np.random.default_rng(0)
    t = GPBanditTuner(eps_bounds=(0.01, 1.0), steps_bounds=(1, 40), seed=1, maxfun=40)
    kn = t.initial_knobs(_knobs())
    assert t.surface() is None  # nothing observed yet
    for _ in range(6):
        kn = t.after_chunk(kn, _chunk(rng))
    s = t.surface()
    _check(s, t.gp, ("log_step_size", "num_steps"), 40)
    np.testing.assert_array_equal(s["y"], np.arange(1, 41))  # every integer L
    assert s["x"][0] == pytest.approx(math.log(0.01)) and s["x"][-1] == pytest.approx(0.0)
    assert s["final"] == t.point and s["tried_n"].sum() == t.gp.n_obs
    # the acquisition the last proposal maximised, on the same grid
    u = bandit.acquisition_fn(t.bandit, t.config, t.history[-1]["p_i"])
    for j, i in ((0, 0), (7, 3), (39, 119)):
        assert s["acquisition"][j, i] == pytest.approx(u(np.array([s["x"][i], s["y"][j]])),
                                                       rel=1e-12)
    wide = GPBanditTuner(eps_bounds=(0.01, 1.0), steps_bounds=(1, 1000))
    wide.reset_gp()
    wide.bandit = bandit.observe(wide.bandit._replace(point=(0.0, 5)), (0.0, 5), 1.0)
    assert wide.surface()["y"].shape == (301,)  # more than 301 integers: evenly spaced


def test_ahmc_surface_covers_the_whole_l_box_and_survives_the_saved_state():
    rng = np.random.default_rng(1)
    t = AHMCTuner(warmup=100, eps_bounds=(0.01, 1.0), steps_bounds=(1, 50), seed=0,
                  maxfun=40, mass="identity")
    kn = t.initial_knobs(_knobs())
    for _ in range(5):
        kn = t.after_chunk(kn, _chunk(rng))
    assert t.upper[1] < 50  # the bandit searches up to its cap ...
    s = t.surface()
    _check(s, t.gp, ("log_step_size", "num_steps"), 50)  # ... the surface spans the box
    again = GPBanditTuner.from_state(json.loads(json.dumps(t.state_dict())))
    r = again.surface()
    for key in ("x", "y", "mean", "sd", "tried_x", "tried_y", "tried_n"):
        np.testing.assert_allclose(r[key], s[key], rtol=1e-12, err_msg=key)
    assert r["final"] == s["final"]


def test_im_surface_matches_the_saved_state_surface():
    rng = np.random.default_rng(2)
    t = IMBanditTuner((1, 12), (0.0, 2.0), reward=lambda ch: float(rng.normal()), seed=0,
                      maxfun=40)
    from bomcmc.kernels.intracluster import IMKnobs

    kn = t.initial_knobs(IMKnobs(*[np.zeros((2, 3)) for _ in IMKnobs._fields]))
    for _ in range(4):
        kn = t.after_chunk(kn, {"phase": 0, "positions": np.zeros((2, 5, 3)), "info": {}})
    s = t.surface()
    _check(s, t.gp, ("gamma", "k"), 12)
    gammas, ks, mu = gp_mean_surface(json.loads(json.dumps(t.state_dict())), n_gamma=120)
    np.testing.assert_allclose(s["x"], gammas)
    np.testing.assert_array_equal(s["y"], ks)
    np.testing.assert_allclose(s["mean"], mu, rtol=1e-12)
