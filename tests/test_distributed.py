"""Runs over two processes on this machine (JAX's distributed runtime, Gloo collectives).

A run of C chains over N processes gives, bit for bit, the draws of the one-process run with
`chain_block = C/N` (the chains vmapped as each process vmaps them: XLA's CPU matrix products
round differently with the batch size, docs/distributed.md); every process holds the same
tuner state after every chunk; losing a worker stops the run with one line naming it, and
`resume` continues it to the same draws.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import bomcmc
from bomcmc.cli import launch
from bomcmc.distributed import free_port

sys.path.insert(0, str(Path(__file__).parent))
import distributed_worker as worker  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep
       + os.environ.get("PYTHONPATH", ""), "PYTHONUNBUFFERED": "1"}


def _start_two_workers(root: Path) -> list[subprocess.Popen]:
    port = free_port()
    return [subprocess.Popen([sys.executable, str(Path(worker.__file__)), str(rank), str(port),
                              str(root)], env=ENV, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True) for rank in (0, 1)]


def _wait(procs: list[subprocess.Popen], timeout: float = 240) -> None:
    try:
        outs = [p.communicate(timeout=timeout)[0] for p in procs]
    except subprocess.TimeoutExpired:  # workers waiting on each other: none outlives the test
        for p in procs:
            p.kill()
        raise
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out[-3000:]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The two-process runs of `worker.RUNS` (and the sharded ones) under a directory, and the
    one-process runs they are compared with, each sampler's with its chains vmapped in blocks
    of 2 as each of the two processes vmaps them. The one-process runs are computed while the
    workers run: the workers wait for each other at every chunk, and this process's
    compilations fill those waits."""
    from bomcmc.bnn.samplers import ahmc_gibbs_sampler

    root = tmp_path_factory.mktemp("two")
    procs = _start_two_workers(root)
    try:
        one = {name: bomcmc.sample(sampler=name, chain_block=2, **worker.SETTINGS,
                                   **worker.KNOBS[name]) for name in worker.RUNS}
        net = worker.network()
        one["ahmc-net"] = bomcmc.sample(net.posterior(), sampler=ahmc_gibbs_sampler(net),
                                        chain_block=1, **worker.NET_SETTINGS)
    finally:
        _wait(procs)
    return root, one


@pytest.mark.parametrize("name", worker.RUNS)
def test_two_processes_give_the_draws_of_one(runs, name):
    root, one = runs
    one, two = one[name], bomcmc.load(root / name)
    for group in ("posterior", "sample_stats"):
        a, b = getattr(one.idata, group), getattr(two.idata, group)
        for var in a.data_vars:
            np.testing.assert_array_equal(a[var].values, b[var].values, err_msg=f"{group}.{var}")
    assert two.totals["processes"] == 2 and two.totals["n_grad"] == one.totals["n_grad"]
    assert two.totals["n_grad_warmup"] == one.totals["n_grad_warmup"]


def test_every_process_holds_the_same_tuner_state_after_every_chunk(runs):
    chunks = runs[0] / "ahmc" / "chunks"
    parts = sorted(chunks.glob("*.p0of2.npz"))
    # a chunk per BO step in burn-in (10), then the sampling's; no one-process file
    assert len(parts) > 10 and len(list(chunks.glob("*.p1of2.npz"))) == len(parts)
    assert not list(chunks.glob("??????.npz"))
    for p0 in parts:
        with np.load(p0) as a, np.load(str(p0).replace("p0of2", "p1of2")) as b:
            assert str(a["tuner_state"]) == str(b["tuner_state"])
            assert str(a["tuner_history"]) == str(b["tuner_history"])
            assert a["positions"].shape[0] == b["positions"].shape[0] == 2  # chains each
    with np.load(parts[-1]) as last:
        assert json.loads(str(last["tuner_state"]))["gp"]["X"]  # the bandit learned


def test_a_networks_eta_ceiling_is_learned_from_the_chains_of_both_processes(runs):
    """The networks' bandit with `divergence_margin` over two processes, one chain each: the
    draws are the one-process run's, both processes hold the same ceiling after every chunk,
    and the ceiling was set. In this run (measured on this project's machine) only chain 1,
    on process 1, diverged, so process 0 learned its ceiling from the other process's chain:
    a tuner reading only its own chains would leave process 0 without a ceiling."""
    root, one = runs
    two = bomcmc.load(root / "ahmc-net")
    for var in one["ahmc-net"].idata.posterior.data_vars:
        np.testing.assert_array_equal(one["ahmc-net"].idata.posterior[var].values,
                                      two.idata.posterior[var].values, err_msg=var)
    parts = sorted((root / "ahmc-net" / "chunks").glob("*.p0of2.npz"))
    ceilings = []
    for p0 in parts:
        with np.load(p0) as a, np.load(str(p0).replace("p0of2", "p1of2")) as b:
            assert str(a["tuner_state"]) == str(b["tuner_state"])
            ceilings.append(json.loads(str(a["tuner_state"]))["divergence_ceiling"]["eps"])
    assert ceilings[-1] is not None and ceilings[0] is None, ceilings


def test_sharded_log_density_gradient_and_gibbs_equal_the_unsharded(runs):
    """The rows of a logistic regression (101) and of a network and its 3 CV folds (37) split
    over two processes, odd in number so the last shard is padded: the log density and its
    gradient (and the folds' Neal's Gibbs draw and curvature) equal the unsharded ones to
    rounding, on both processes alike. (Without the padding rows' zero weights the log
    densities differ by more than 1: measured.)"""
    root = runs[0]
    with np.load(root / "sharded-0.npz") as a, np.load(root / "sharded-1.npz") as b:
        names = sorted(k[: -len(".sharded")] for k in a if k.endswith(".sharded"))
        assert {n.split(".")[0] for n in names} == {"logistic", "bnn", "cv"}
        assert any(n.startswith("cv.gibbs") for n in names)
        for name in names:
            whole = (a, b)[worker.WHOLE_ON[name.split(".")[0]]][name + ".whole"]
            sharded = a[name + ".sharded"]
            assert np.all(np.isfinite(whole)), name  # not NaN alike
            scale = max(1.0, float(np.max(np.abs(whole))))
            np.testing.assert_allclose(sharded, whole, rtol=0, atol=1e-12 * scale,
                                       err_msg=name)
            np.testing.assert_array_equal(sharded, b[name + ".sharded"], err_msg=name)


def test_a_sharded_run_follows_the_unsharded_one(runs):
    """Every chain on both processes, the data's rows split between them: the draws are the
    one-process run's to rounding (the log density's sums are joined in another order; the
    one-process run's chain blocks of 2 are the hmc test's, its programs already compiled)."""
    one, two = runs[1]["hmc"], bomcmc.load(runs[0] / "hmc-sharded")
    assert two.totals["shard_data"] and two.totals["processes"] == 2
    a, b = one.idata.posterior["beta"].values, two.idata.posterior["beta"].values
    assert np.max(np.abs(a - b)) < 1e-9


def _cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "bomcmc", *args], env=ENV, text=True,
                          capture_output=True, **kw)


def _worker_pid(rank: int, out: Path) -> int | None:
    """The pid of the worker `--process-id rank` of the run writing into `out`."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if str(out).encode() in cmd and b"--process-id" in cmd \
                and cmd[cmd.index(b"--process-id") + 1] == str(rank).encode():
            return int(pid)
    return None


KILL_RUN = ["--posterior", "logistic-heart", "--sampler", "hmc", "--step-size", "0.05",
            "--steps", "8", "--chains", "4", "--draws", "600", "--warmup", "0", "--seed", "5",
            "--chunk-size", "10", "--float64", "--no-progress", "--no-plots", "--json"]


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs Linux's /proc")
def test_a_killed_worker_stops_the_run_and_resume_gives_the_same_draws(tmp_path):
    out = tmp_path / "killed"
    launcher = subprocess.Popen([sys.executable, "-m", "bomcmc", "sample", *KILL_RUN,
                                 "--out", str(out), "--processes", "2"], env=ENV, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while len(list((out / "chunks").glob("*.p1of2.npz"))) < 3:
        assert launcher.poll() is None and time.monotonic() < deadline, launcher.stderr.read()
        time.sleep(0.02)
    os.kill(_worker_pid(1, out), signal.SIGKILL)
    killed = time.monotonic()
    _, err = launcher.communicate(timeout=60)
    assert launcher.returncode != 0
    # the launcher stops process 0 at once: its SIGTERM is not held by JAX's preemption
    # service until the grace period's SIGKILL
    assert time.monotonic() - killed < launch.STOP_GRACE_S
    lines = [ln for ln in err.splitlines() if ln.startswith("bomcmc: error:")]
    assert len(lines) == 1 and "process 1 of 2 was killed by SIGKILL" in lines[0], err
    assert f"bomcmc resume {out}" in lines[0]
    assert not (out / "idata.nc").exists() and not (out / "run.json").exists()
    done = len(list((out / "chunks").glob("*.p1of2.npz")))
    assert done < 60  # killed during sampling

    bomcmc.resume(out)  # in one process now: the chain blocks keep the draws
    whole = bomcmc.sample(posterior="logistic-heart", sampler="hmc", step_size=0.05, steps=8,
                          chains=4, draws=600, warmup=0, seed=5, chunk_size=10,
                          float64=True, chain_block=2)  # uninterrupted, in one process
    np.testing.assert_array_equal(bomcmc.load(out).idata.posterior["beta"].values,
                                  whole.idata.posterior["beta"].values)


def test_bad_input_to_a_run_over_processes_is_one_line(tmp_path):
    more = _cli("sample", *KILL_RUN, "--out", str(tmp_path / "a"), "--processes", "8")
    assert more.returncode == 2
    assert more.stderr.strip() == ("bomcmc: error: 8 processes for 4 chains: every process "
                                   "needs at least one chain (use as many chains as "
                                   "processes, or more)")
    uneven = _cli("sample", *KILL_RUN, "--out", str(tmp_path / "b"), "--processes", "3")
    assert uneven.returncode == 2 and "multiple of the number of processes" in uneven.stderr
    half = _cli("sample", *KILL_RUN, "--out", str(tmp_path / "c"), "--coordinator",
                "127.0.0.1:1234")
    assert half.returncode == 2 and len(half.stderr.splitlines()) == 1
    assert "together" in half.stderr
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        busy = _cli("sample", *KILL_RUN, "--out", str(tmp_path / "d"), "--coordinator",
                    f"127.0.0.1:{port}", "--num-processes", "2", "--process-id", "0")
    assert busy.returncode == 2 and len(busy.stderr.splitlines()) == 1
    assert f"coordinator port {port} on 127.0.0.1 is not free" in busy.stderr


def test_processes_started_with_different_flags_stop_with_one_line(tmp_path):
    port = free_port()
    procs = [subprocess.Popen([sys.executable, "-m", "bomcmc", "sample", *KILL_RUN,
                               "--out", str(tmp_path / "m"), "--coordinator",
                               f"127.0.0.1:{port}", "--num-processes", "2", "--process-id",
                               str(rank), "--seed", str(rank)], env=ENV, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for rank in (0, 1)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 2
        assert err.strip().splitlines()[-1] == (
            "bomcmc: error: the processes were started with different run configuration: "
            "seed differs (process 0: 0, process 1: 1); start every process with the same "
            "flags")


def test_shard_data_on_a_posterior_without_data_is_one_line():
    with pytest.raises(bomcmc.BomcmcError, match="declares no data") as e:
        bomcmc.sample(lambda p: -0.5 * (p["x"] ** 2).sum(), {"x": np.zeros(2)},
                      shard_data=True, chains=2, draws=5, warmup=5, progress=False)
    assert "\n" not in str(e.value)
    with pytest.raises(bomcmc.BomcmcError, match="chain_block"):
        bomcmc.sample(posterior="logistic-heart", shard_data=True, chain_block=1, chains=2,
                      draws=5, warmup=5, progress=False)
