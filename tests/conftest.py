"""Test-wide settings: float64 (exactness tests need it; float32 runs are covered by the CLI
subprocess tests, which use the library's default) and a private compilation cache."""

import os
import tempfile

os.environ.setdefault("BOMCMC_CACHE_DIR", tempfile.mkdtemp(prefix="bomcmc-test-cache-"))

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
