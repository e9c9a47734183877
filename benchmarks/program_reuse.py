#!/usr/bin/env python
"""A second run of the same posterior in one process: seconds of each `bomcmc.sample` call,
and of its `compile_s` (tracing, lowering and compilation), for seeds 0, 1, 2 of a NumPyro
model's NUTS run (the scale model of tests/test_models_numpyro.py), the persistent cache
in a fresh directory.

    python benchmarks/program_reuse.py

Seed 0 traces and compiles the chunk program; seeds 1 and 2 reuse it
(`driver.engine.PROGRAMS`).
"""

from __future__ import annotations

import os
import tempfile
import time

os.environ.setdefault("BOMCMC_CACHE_DIR", tempfile.mkdtemp(prefix="bomcmc-reuse-"))

import numpy as np  # noqa: E402
import numpyro  # noqa: E402
import numpyro.distributions as dist  # noqa: E402

import bomcmc  # noqa: E402


def scale_model(y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0))
    with numpyro.plate("n", y.shape[0]):
        numpyro.sample("y", dist.Normal(mu, sigma), obs=y)


def main() -> int:
    y = np.random.default_rng(1).normal(1.0, 0.7, 15)
    post = bomcmc.from_numpyro(scale_model, y)
    for seed in range(3):
        t0 = time.perf_counter()
        res = bomcmc.sample(posterior=post, sampler="nuts", chains=4, draws=1000, warmup=500,
                            seed=seed, progress=False, float64=True)
        print(f"seed {seed}: {time.perf_counter() - t0:.2f} s, compile_s "
              f"{res.totals['compile_s']:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
