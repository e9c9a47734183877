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


def _error_line(logs: Path, rank: int) -> str:
    """The one-line error worker `rank` left (BOMCMC_ERROR_FILE), without its prefix."""
    try:
        return (logs / f"error-{rank}.txt").read_text().strip().removeprefix("bomcmc: error: ")
    except OSError:
        return ""


def _why(code: int, logs: Path, rank: int) -> str:
    """How a worker ended, in words."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    line = _error_line(logs, rank)
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
    """Run the workers to the end; the exit status of the run (0, or the first failure's).
    Each worker writes its error line, if any, to a file the launcher reads, so that the run's
    failure is reported once: a worker that was killed, else the workers' own error."""
    import os

    from ..distributed import free_port

    logs = Path(tempfile.mkdtemp(prefix="bomcmc-workers-"))
    procs, files = [], []
    try:
        for i, cmd in enumerate(worker_commands(argv, processes, free_port())):
            env = {**os.environ, "BOMCMC_ERROR_FILE": str(logs / f"error-{i}.txt")}
            if i == 0:  # process 0 talks to this terminal: progress, summary, warnings
                procs.append(subprocess.Popen(cmd, env=env))
                continue
            f = open(logs / f"process-{i}.log", "wb")
            files.append(f)
            procs.append(subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env))
        return _watch(procs, logs, resume_hint)
    except KeyboardInterrupt:
        _stop(procs)
        return 130
    finally:
        for f in files:
            f.close()
        if all(p.returncode == 0 for p in procs):
            for f in logs.iterdir():
                f.unlink()
            logs.rmdir()


def _watch(procs: list[subprocess.Popen], logs: Path, resume_hint: str) -> int:
    while True:
        codes = [p.poll() for p in procs]
        if any(c not in (None, 0) for c in codes):
            ended = {i: c for i, c in enumerate(codes) if c is not None}  # before any stop
            _stop(procs)
            return _report(ended, len(procs), logs, resume_hint)
        if all(c == 0 for c in codes):
            return 0
        time.sleep(POLL_S)


def _report(ended: dict[int, int], n: int, logs: Path, resume_hint: str) -> int:
    """One line for a failed run, from the workers that ended before the launcher stopped
    the rest: a worker that was lost (killed by a signal), else the first worker's own error
    (the same on every process for bad input)."""
    lost = [i for i, c in sorted(ended.items()) if c < 0]
    if lost:
        i = lost[0]
        sys.stderr.write(f"bomcmc: error: process {i} of {n} {_why(ended[i], logs, i)}; the "
                         f"other processes were stopped ({resume_hint}; worker logs in "
                         f"{logs})\n")
        return 1
    failed = sorted(i for i, c in ended.items() if c > 0)
    i = next((i for i in range(n) if _error_line(logs, i)), failed[0])
    line = _error_line(logs, i)
    sys.stderr.write(f"bomcmc: error: {line}\n" if line else
                     f"bomcmc: error: process {i} of {n} {_why(ended.get(i, 1), logs, i)} "
                     f"(worker logs in {logs})\n")
    return max(ended[j] for j in failed)
