"""Test-wide settings: float64 (exactness tests need it; float32 runs are covered by the CLI
subprocess tests, which use the library's default) and a private compilation cache."""

import os
import tempfile

os.environ.setdefault("BOMCMC_CACHE_DIR", tempfile.mkdtemp(prefix="bomcmc-test-cache-"))

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)


import pytest  # noqa: E402


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
