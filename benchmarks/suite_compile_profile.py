"""The test suite by JAX's own clocks (docs/benchmarks.md): a pytest plugin that sums
`jax.monitoring` events (backend compilation, tracing, lowering, persistent-cache hits and
misses) per test and writes one JSON file per xdist worker; then a summary by module.

    PYTHONPATH=benchmarks:src pytest -p suite_compile_profile   # writes /tmp/suite-profile
    python benchmarks/suite_compile_profile.py /tmp/suite-profile

Subprocesses (the CLI, distributed and resume tests) are not seen: their time counts as
"other".
"""

from __future__ import annotations

import collections
import json
import os
import sys
import time
from pathlib import Path

import pytest

OUT = Path(os.environ.get("SUITE_PROFILE_DIR", "/tmp/suite-profile"))
_current = {"id": None}
_sums: dict = collections.defaultdict(collections.Counter)
_programs: dict = collections.defaultdict(collections.Counter)  # backend compile by fun_name


def _duration(event, duration, fun_name=None, **_):
    if _current["id"] is not None:
        name = event.rsplit("/", 1)[1]
        _sums[_current["id"]][name] += duration
        if name == "backend_compile_duration" and fun_name is not None:
            _programs[fun_name]["seconds"] += duration
            _programs[fun_name]["count"] += 1


def _event(event, **_):
    if _current["id"] is not None:
        _sums[_current["id"]]["n_" + event.rsplit("/", 1)[1]] += 1


def pytest_configure(config):
    from jax import monitoring

    monitoring.register_event_duration_secs_listener(_duration)
    monitoring.register_event_listener(_event)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _current["id"] = item.nodeid
    t0 = time.perf_counter()
    yield
    _sums[item.nodeid]["wall"] += time.perf_counter() - t0
    _current["id"] = None


def pytest_unconfigure(config):
    OUT.mkdir(parents=True, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    (OUT / f"{worker}.json").write_text(json.dumps({k: dict(v) for k, v in _sums.items()}))
    (OUT / f"{worker}.programs").write_text(
        json.dumps({k: dict(v) for k, v in _programs.items()}))


def summary(directory: Path) -> dict:
    tests = {}
    for f in sorted(directory.glob("*.json")):
        tests.update(json.loads(f.read_text()))
    total = collections.Counter()
    for v in tests.values():
        total.update(v)
    keys = ("wall", "backend_compile_duration", "jaxpr_trace_duration",
            "jaxpr_to_mlir_module_duration", "n_cache_misses", "n_cache_hits")
    programs = collections.defaultdict(collections.Counter)
    for f in sorted(directory.glob("*.programs")):
        for name, v in json.loads(f.read_text()).items():
            programs[name].update(v)
    top = sorted(programs.items(), key=lambda kv: -kv[1]["seconds"])[:25]
    return {"tests": len(tests), **{k: round(total[k], 1) for k in keys},
            "backend_compile_by_program": {k: [round(v["seconds"], 1), v["count"]]
                                           for k, v in top}}


if __name__ == "__main__":
    print(json.dumps(summary(Path(sys.argv[1] if len(sys.argv) > 1 else OUT)), indent=1))
