"""A tuner's saved state: the states' `_asdict()` side by side, and a state saved before the
bandit's box was recorded (flat "eps_bounds", "steps_bounds", "steps_cap") still loads and
continues the run as the code that saved it did."""

import json

import numpy as np

from bomcmc.kernels.hmc import HMCInfo, HMCKnobs
from bomcmc.tuning import bandit
from bomcmc.tuning.ahmc_tuner import AHMCTuner
from bomcmc.tuning.gp_bandit import GPBanditTuner

# AHMCTuner(warmup=100, eps_bounds=(0.01, 1.0), steps_bounds=(1, 50), seed=0, maxfun=40,
# mass="identity") after 3 chunks of `_chunk(np.random.default_rng(1))`, saved by the code
# before the composed tuners
LEGACY = {'name': 'ahmc',
          'i': 3,
          'seed': 0,
          'max_reward': 2.223671662801302,
          'eps_bounds': [0.01, 1.0],
          'steps_bounds': [1.0, 50.0],
          'point': [0.0, 4],
          'gp': {'X': [[-2.3025850929940455, 1.0],
                       [-2.3025850929940455, 8.0],
                       [-3.853400565623396, 1.0],
                       [-2.300786272259229, 3.0],
                       [-4.532002515392235, 3.0],
                       [-0.513170790580538, 1.0]],
                 'sums': [2.213533754329086,
                          0.94788439962408,
                          2.223671662801302,
                          0.9672640993653303,
                          1.3153563540586846,
                          1.6850599304920835],
                 'counts': [1, 1, 1, 1, 1, 1]},
          'config': {'signal_var': 25.0,
                     'noise_var': 0.1,
                     'lengthscale_factor': 0.2,
                     'acquisition': 'ucb',
                     'delta': 0.1,
                     'xi': 0.01},
          'epoch': 0,
          'eps0': None,
          'welford': None,
          'metric_kind': None,
          'dense_knob': False,
          'steps_cap': 8,
          'points': [[0.0, 4], [-3.9525398323232426, 6]]}
# what that code did next, on 3 chunks of `_chunk(np.random.default_rng(2))`: (ε, L, reward)
# per history entry, then the knobs
LEGACY_NEXT = [(1.0, 4, 0.9105538812518977),
               (0.019205860112515877, 6, 0.7615021741284591),
               (0.7760444790802705, 7, 0.8711071822112516),
               (0.15868277346771745, 6, 0.7321827345040649),
               (0.034558358946638494, 4, 0.7304596493467788),
               (0.3620342179216657, 3, 1.254132877661738)]
LEGACY_KNOBS = ([0.009999999776482582] * 2 + [0.4380490779876709] * 2, [8, 8, 5, 5])


def _chunk(rng, n=12, chains=4):
    zeros = np.zeros((chains, n))
    info = HMCInfo(acceptance_rate=zeros + 0.9, energy=zeros, energy_error=zeros,
                   diverging=zeros.astype(bool), n_grad=zeros + 7, n_steps=zeros + 7,
                   sq_jump=zeros, esjd=rng.exponential(2.0, (chains, n)),
                   step_size=zeros + 0.1)
    return {"phase": 0, "positions": rng.normal(size=(chains, n, 2)), "info": info}


def _tuner():
    t = AHMCTuner(warmup=100, eps_bounds=(0.01, 1.0), steps_bounds=(1, 50), seed=0,
                  maxfun=40, mass="identity")
    kn = HMCKnobs(np.full(4, 0.1, np.float32), np.full(4, 10, np.int32),
                  np.ones((4, 2), np.float32), np.ones(4, bool))
    return t, t.initial_knobs(kn)


def test_a_legacy_state_loads_and_continues_as_before():
    t, kn = _tuner()
    t.load_state_dict(LEGACY, [])
    assert t.steps_cap == 8 and t.upper[1] == 8 and t.steps_bounds == (1.0, 50.0)
    assert t.bandit.box == bandit.KnobBox(("step_size", "num_steps"), (0.01, 1.0),
                                          (1.0, 8.0), (False, True), (True, False))
    rng = np.random.default_rng(2)
    for _ in range(3):
        kn = t.after_chunk(kn, _chunk(rng))
    got = [(h["eps"], h["L"], h["reward"]) for h in t.history]
    assert [L for _, L, _ in got] == [L for _, L, _ in LEGACY_NEXT]
    np.testing.assert_allclose([(e, r) for e, _, r in got], [(e, r) for e, _, r in LEGACY_NEXT],
                               rtol=1e-10)  # as the golden draws across machines
    np.testing.assert_array_equal(kn.step_size, np.float32(LEGACY_KNOBS[0]))
    np.testing.assert_array_equal(kn.num_steps, LEGACY_KNOBS[1])
    old = GPBanditTuner.from_state(LEGACY)  # for reading a finished run
    assert old.steps_bounds == (1.0, 50.0) and old.upper[1] == 50 and old.gp.n_obs == 6


def test_the_state_is_the_states_asdict_and_round_trips():
    t, kn = _tuner()
    rng = np.random.default_rng(1)
    for _ in range(3):
        kn = t.after_chunk(kn, _chunk(rng))
    state = json.loads(json.dumps(t.state_dict()))
    for field in (*bandit.BanditState._fields, "epoch", "halves", "metric_weight", "metric_kind",
                  "dense_knob", "steps_cap", "points", "eps0"):
        assert field in state, field
    u, _ = _tuner()
    u.load_state_dict(state)
    assert u.state_dict() == t.state_dict() and u.bandit.point == t.bandit.point
    assert u.burn == t.burn and u.metric.epoch == t.metric.epoch
