"""Test-wide settings: float64 (exactness tests need it; float32 runs are covered by the CLI
subprocess tests, which use the library's default) and one compilation cache per session."""

import os
import shutil
import tempfile

# One cache for the whole test session (both xdist workers, and the subprocesses they start,
# inherit the variables), unless the user named one, with no size cap: JAX's capped cache
# locks the directory and reads every entry's access time on every write (its LRU eviction),
# a cost that grows with the entries, and the workers would wait for each other's locks
# (docs/architecture.md, "The persistent cache's cost per write").
_OWN_CACHE = None  # the directory this process made, removed when the session ends
if os.environ.get("BOMCMC_CACHE_DIR") is None:
    _OWN_CACHE = tempfile.mkdtemp(prefix="bomcmc-test-cache-")
    os.environ["BOMCMC_CACHE_DIR"] = _OWN_CACHE
    os.environ.setdefault("BOMCMC_CACHE_MAX_BYTES", "-1")

# XLA's older CPU code emitters for the test session (both workers and every subprocess
# inherit the variable). The suite's compilations took 62 % of their time under the default
# fusion emitters, and they compute the same numbers: every golden draw and statistic came
# out as under the default, but for two statistics of one case, 2.4e-14 and 4.4e-16 apart
# in their distances from the recorded draws (docs/benchmarks.md, "The test suite's time").
# Users' runs keep XLA's default, under which NUTS samples 1.2-1.8 times faster; so does the
# golden draws test, which runs in a process of its own (tests/test_golden_draws.py).
# BOMCMC_TEST_XLA_DEFAULT=1 runs the whole suite under XLA's default.
FAST_COMPILE_FLAG = "--xla_cpu_use_fusion_emitters=false"
if not os.environ.get("BOMCMC_TEST_XLA_DEFAULT") \
        and FAST_COMPILE_FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {FAST_COMPILE_FLAG}".strip()

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)


import pytest  # noqa: E402


def pytest_unconfigure(config):
    """The session's cache (about 70 MB) goes with the session; xdist workers inherit the
    controller's directory and leave it to the controller."""
    if _OWN_CACHE is not None:
        shutil.rmtree(_OWN_CACHE, ignore_errors=True)


@pytest.fixture(scope="module")
def compilation_cache():
    """Runs of the same posterior and buffer size share compiled code through the session's
    private persistent cache (above); JAX's cache settings are restored afterwards."""
    import bomcmc

    keys = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs",
            "jax_persistent_cache_min_entry_size_bytes")
    before = {k: getattr(jax.config, k) for k in keys}
    bomcmc.enable_compilation_cache()
    yield
    for k, v in before.items():
        jax.config.update(k, v)
    try:
        from jax.experimental.compilation_cache import compilation_cache as cc

        cc.reset_cache()
    except Exception:  # noqa: BLE001 - best effort across JAX versions
        pass


@pytest.fixture(autouse=True)
def _programs_traced_afresh_under_monkeypatch(request):
    """A test that patches a function a kernel calls (a broken variant) must trace its own
    program, and leave none behind: the process's program cache (`driver.engine.PROGRAMS`)
    knows kernels and posteriors by identity, not the module functions they call; so do the
    other `config.Latest` caches (built samplers, built-in and flattened posteriors, the
    start's and the tuner's compiled functions)."""
    if "monkeypatch" not in request.fixturenames:
        yield
        return
    from bomcmc import config

    config.clear_caches()
    yield
    config.clear_caches()


# The slowest modules first (longest-first scheduling), meant to keep one xdist worker
# (`--dist loadscope`, one module to a worker at a time, in this order with
# `--no-loadscope-reorder`) from running a long module alone at the end. Order from
# `pytest --durations=0` (sum of a module's setup and call times, largest first); a module not
# named keeps its place after these. Measured once: the clean-clone suite took 21:18 with it
# (955 tests) against 20:49 without (940 tests), so no gain was shown.
SLOWEST_FIRST = (
    "test_bnn_estimator.py", "test_bnn_cv.py", "test_models_posteriordb.py",
    "test_models_numpyro.py", "test_kernels_intracluster.py", "test_tuning_ahmc_tuner.py",
    "test_kernels_nuts_machine.py", "test_distributed.py", "test_kernels_choo_dynamics.py",
    "test_kernels_rmhmc.py", "test_kernels_blocked_rmhmc.py", "test_bnn_regressor.py",
    "test_models_hard.py", "test_kernels_mams.py", "test_bnn_network.py", "test_tuning_im.py",
    "test_compile_once.py", "test_tuning_ahmc_batch.py", "test_diagnostics_advice.py",
    "test_cli.py",
)


def pytest_collection_modifyitems(session, config, items):
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable
