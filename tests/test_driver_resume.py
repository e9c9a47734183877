"""A run killed with SIGKILL resumes from its last complete chunk and ends bit-identical
(`resume` in driver/api.py; keys by transition index in driver/engine.py)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import bomcmc
from bomcmc import BomcmcError

KW = dict(sampler="hmc", posterior="logistic-ripley", chains=4, draws=6000, warmup=400,
          seed=11, step_size=0.1, steps=8, random_steps=True, chunk_size=20, float64=True,
          progress=False)
SCRIPT = f"""
import sys, bomcmc
out, mode = sys.argv[1], sys.argv[2]
if mode == "run":
    bomcmc.sample(out=out, **{KW!r})
else:
    bomcmc.resume(out, progress=False)
"""


def _python(tmp_path, *args, **popen_kw):
    env = dict(os.environ, BOMCMC_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.Popen([sys.executable, "-c", SCRIPT, *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen_kw)


def _arrays(result):
    out = {f"posterior.{k}": np.asarray(v) for k, v in result.idata.posterior.items()}
    out.update({f"stats.{k}": np.asarray(v) for k, v in result.idata.sample_stats.items()})
    return out


def test_sigkill_then_resume_is_bit_identical(tmp_path):
    killed, ref = tmp_path / "killed", tmp_path / "reference"
    proc = _python(tmp_path, str(killed), "run")
    chunks = killed / "chunks"
    deadline = time.time() + 240
    while time.time() < deadline:
        n = len(list(chunks.glob("*.npz"))) if chunks.exists() else 0
        if n >= 40 or proc.poll() is not None:  # warm-up is 20 chunks: kill while sampling,
            break  # with 280 of the 320 chunks still to write
        time.sleep(0.01)
    assert proc.poll() is None, "run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    n_chunks = len(list(chunks.glob("*.npz")))
    assert n_chunks < 320
    assert not (killed / "idata.nc").exists(), "a killed run must not look complete"
    with pytest.raises(BomcmcError, match="not complete"):
        bomcmc.load(killed)

    resumed = _python(tmp_path, str(killed), "resume")
    # the uninterrupted run in this process while the resumed one runs (the test session's
    # XLA flags, as the subprocesses have them)
    bomcmc.sample(out=ref, **KW)
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err.decode()[-2000:]

    a, b = _arrays(bomcmc.load(killed)), _arrays(bomcmc.load(ref))
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].shape == b[k].shape, k
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    assert a["posterior.beta"].shape == (4, 6000, 7)


def test_half_written_chunk_is_ignored_and_corrupt_chunk_is_reported(tmp_path):
    out = tmp_path / "run"
    kw = dict(sampler="hmc", posterior="gauss-iid-2", chains=2, draws=30, warmup=0, seed=0, step_size=0.5,
              steps=3, chunk_size=10, progress=False)
    full = bomcmc.sample(out=out, **kw)
    # simulate a kill during the write of the last chunk: the temp file exists, the chunk not
    last = out / "chunks" / "000002.npz"
    (out / "chunks" / ".000002.npz.abc.tmp").write_bytes(last.read_bytes()[:100])
    last.unlink()
    (out / "idata.nc").unlink()
    (out / "run.json").unlink()
    again = bomcmc.resume(out, progress=False)
    np.testing.assert_array_equal(np.asarray(again.idata.posterior["x"]),
                                  np.asarray(full.idata.posterior["x"]))
    # a chunk corrupted by something else is a clean error, not a traceback
    (out / "chunks" / "000001.npz").write_bytes(b"garbage")
    with pytest.raises(BomcmcError, match="unreadable chunk"):
        bomcmc.resume(out, progress=False)


def test_existing_output_needs_overwrite(tmp_path):
    kw = dict(sampler="hmc", posterior="gauss-iid-2", chains=1, draws=5, warmup=0, step_size=0.5, steps=2,
              progress=False)
    bomcmc.sample(out=tmp_path, **kw)
    with pytest.raises(BomcmcError, match="not empty"):
        bomcmc.sample(out=tmp_path, **kw)
    r = bomcmc.sample(out=tmp_path, overwrite=True, seed=1, **kw)
    assert (Path(r.path) / "idata.nc").exists()


def test_custom_logdensity_resume_needs_the_function(tmp_path):
    import jax.numpy as jnp

    f = lambda x: -0.5 * jnp.sum(x**2)  # noqa: E731
    bomcmc.sample(f, jnp.zeros(2), sampler="hmc", out=tmp_path, chains=1, draws=5, warmup=0, step_size=0.5,
                  steps=2, progress=False)
    with pytest.raises(BomcmcError, match="custom log density"):
        bomcmc.resume(tmp_path, progress=False)
    r = bomcmc.resume(tmp_path, f, jnp.zeros(2), progress=False)
    assert r.idata.posterior["x"].shape == (1, 5, 2)


def test_malformed_config_is_reported(tmp_path):
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(BomcmcError, match="malformed JSON"):
        bomcmc.resume(tmp_path)
    (tmp_path / "config.json").write_text('{"posterior": "gauss-iid-2", "bogus": 1}')
    with pytest.raises(BomcmcError, match="not a bomcmc run configuration"):
        bomcmc.resume(tmp_path)
    with pytest.raises(BomcmcError, match="not a run directory"):
        bomcmc.resume(tmp_path / "missing")
