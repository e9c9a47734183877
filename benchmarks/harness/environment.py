"""Where and with what a run ran: the machine, the library versions, the command line."""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

from .settings import ROOT


def command_line(script: str, argv=None) -> str:
    """The command as typed (`python SCRIPT ARGS`, relative to the repository): this
    process's own when `argv` is None, else `script` with `argv`."""
    words = ([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:] if argv is None
             else [script] + list(argv))
    return "python " + " ".join(shlex.quote(x) for x in words)


def machine_info() -> dict:
    import jax

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "jax_backend": jax.default_backend(),
        "jax_devices": [str(d) for d in jax.devices()],
        "loadavg_at_start": load,
    }


def package_versions(packages) -> dict:
    """{package: installed version, or None where it is not installed}."""
    from importlib import metadata

    out = {}
    for pkg in packages:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def versions() -> dict:
    """The benchmark's libraries' versions and bomcmc's `git describe`."""
    out = package_versions(("bomcmc", "jax", "jaxlib", "numpyro", "blackjax", "arviz", "numpy"))
    try:
        out["bomcmc_git"] = subprocess.run(
            ["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
            capture_output=True, text=True, timeout=10).stdout.strip() or None
    except Exception:  # noqa: BLE001
        out["bomcmc_git"] = None
    return out
