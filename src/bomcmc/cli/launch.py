"""`--processes N`: N worker processes of one run on this machine, joined by JAX's runtime.

The launcher starts `python -m bomcmc <the same command> --coordinator 127.0.0.1:PORT
--num-processes N --process-id I` for I = 0..N-1 and watches them. Process 0 writes to this
terminal (the summary, warnings, progress); the others write to log files in a temporary
folder. When a process fails, the launcher stops the others at once and reports the failure in
one line, naming the process; the run directory then holds every chunk all processes finished,
and `bomcmc resume DIR` continues it.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

POLL_S = 0.1
STOP_GRACE_S = 5.0


def worker_commands(argv: list[str], processes: int, port: int) -> list[list[str]]:
    """The command line of each worker: the user's, less --processes, plus its place."""
    return [[sys.executable, "-m", "bomcmc", *argv, "--coordinator", f"127.0.0.1:{port}",
             "--num-processes", str(processes), "--process-id", str(i)]
            for i in range(processes)]


def _last_line(path: Path) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines()
                 if ln.strip() and "Gloo" not in ln]
    except OSError:
        return ""
    errors = [ln for ln in lines if ln.startswith("bomcmc: error:")]
    return (errors or lines or [""])[-1]


def _why(code: int, log: Path | None) -> str:
    """How a worker ended, in words."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    line = _last_line(log) if log is not None else ""
    line = line.removeprefix("bomcmc: error: ")
    return f"exited with status {code}" + (f": {line}" if line else "")


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    for p in procs:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def launch(argv: list[str], processes: int, resume_hint: str) -> int:
    """Run the workers to the end; the exit status of the run (0, or the first failure's)."""
    from ..distributed import free_port

    logs = Path(tempfile.mkdtemp(prefix="bomcmc-workers-"))
    procs, files = [], []
    try:
        for i, cmd in enumerate(worker_commands(argv, processes, free_port())):
            if i == 0:
                procs.append(subprocess.Popen(cmd))
                files.append(None)
                continue
            f = open(logs / f"process-{i}.log", "wb")
            files.append(f)
            procs.append(subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT))
        return _watch(procs, logs, resume_hint)
    except KeyboardInterrupt:
        _stop(procs)
        return 130
    finally:
        for f in files:
            if f is not None:
                f.close()
        if all(p.returncode == 0 for p in procs):
            for f in logs.iterdir():
                f.unlink()
            logs.rmdir()


def _watch(procs: list[subprocess.Popen], logs: Path, resume_hint: str) -> int:
    while True:
        codes = [p.poll() for p in procs]
        failed = [i for i, c in enumerate(codes) if c not in (None, 0)]
        if failed:
            i = failed[0]
            _stop(procs)
            if i == 0 and codes[0] > 0:  # process 0 printed its own one-line error
                return codes[0]
            log = logs / f"process-{i}.log" if i else None
            sys.stderr.write(f"bomcmc: error: process {i} of {len(procs)} "
                             f"{_why(codes[i], log)}; the other processes were stopped "
                             f"({resume_hint}; worker logs in {logs})\n")
            return codes[i] if codes[i] > 0 else 1
        if all(c == 0 for c in codes):
            return 0
        time.sleep(POLL_S)


__all__ = ["launch", "worker_commands"]
