"""Chains are sharded over jax.devices() when there are several (4 fake CPU devices here;
driver/engine.py)."""

import json
import os
import subprocess
import sys

import numpy as np

RUN = r"""
def summary():
    import jax, numpy as np, bomcmc
    r = bomcmc.sample(sampler="hmc", posterior="logistic-heart", chains=8, draws=300,
                      warmup=100, seed=4, step_size=0.1, steps=6, float64=True, progress=False)
    x = np.asarray(r.idata.posterior["beta"])
    return {"devices": len(jax.devices()), "used": r.totals["devices"],
            "digest": float(np.sum(x * np.arange(x.size).reshape(x.shape) % 97)),
            "mean": x.mean(axis=(0, 1)).tolist()}
"""
SCRIPT = RUN + "import json\nprint(json.dumps(summary()))\n"


def on_one_device():
    """The run on one CPU device: in this process where it has exactly that (the test
    session's XLA flags, as the subprocesses have them), else in a subprocess."""
    import jax

    if jax.default_backend() != "cpu" or len(jax.devices()) != 1:
        return run(1)
    namespace = {}
    exec(RUN, namespace)
    return namespace["summary"]()


def run(n_devices):
    env = dict(os.environ)
    env["XLA_FLAGS"] = (f"{env.get('XLA_FLAGS', '')} "
                        f"--xla_force_host_platform_device_count={n_devices}").strip()
    env["JAX_PLATFORMS"] = "cpu"
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_sharded_over_four_devices_matches_one_device():
    four, one = run(4), on_one_device()
    assert four["devices"] == 4 and four["used"] == 4
    assert one["devices"] == 1 and one["used"] == 1
    # Each chain computes the same thing on any device, but XLA's SPMD partitioner may order
    # floating-point operations differently (seen: a last-bit difference in the digest), so
    # the draws agree to rounding, not necessarily bit for bit.
    np.testing.assert_allclose(four["mean"], one["mean"], rtol=1e-6, atol=1e-9)
    assert abs(four["digest"] - one["digest"]) <= 1e-9 * abs(one["digest"])


def test_a_chain_alone_runs_as_it_does_in_a_batch():
    """A block of one chain runs unbatched (`driver/lockstep.py`): chain 0 of a one-chain run
    is chain 0 of a three-chain run (same keys, same start), to rounding, for fixed-length
    HMC and for NUTS (whose trajectory is a loop of random length)."""
    import bomcmc

    for sampler, knobs in (("hmc", dict(step_size=0.1, steps=6, adapt=None)),
                           ("nuts", dict(step_size=0.1, adapt=None))):
        runs = [bomcmc.sample(sampler=sampler, posterior="logistic-heart", chains=c, draws=40,
                              warmup=0, seed=3, float64=True, progress=False, checks=False,
                              **knobs) for c in (1, 3)]
        alone, batch = (np.asarray(r.idata.posterior["beta"]) for r in runs)
        np.testing.assert_allclose(alone[0], batch[0], rtol=1e-9, atol=1e-12)
        assert not np.allclose(batch[0], batch[1])  # the chains differ: the test can fail
