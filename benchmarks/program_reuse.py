#!/usr/bin/env python
"""A second run of the same posterior in one process: seconds of each `bomcmc.sample` call,
of its `compile_s` (tracing, lowering and compilation of the chunk) and of its `prepare_s`
(the start, the tuner's set-up, and the chunk's compilation), for seeds 0, 1, 2 of a NumPyro
model (the scale model of tests/test_models_numpyro.py), the persistent cache in a fresh
directory.

    python benchmarks/program_reuse.py                 # NUTS
    python benchmarks/program_reuse.py --sampler ahmc  # the default sampler

Seed 0 traces and compiles the programs; seeds 1 and 2 reuse them: the chunk
(`driver.engine.PROGRAMS`), the chains' start (AHMC's L-BFGS), Stan's step-size heuristic and
the Laplace metric's Hessian (`config.Latest` caches keyed by the flattened posterior).
"""

from __future__ import annotations

import argparse
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sampler", default="nuts")
    args = ap.parse_args(argv)
    y = np.random.default_rng(1).normal(1.0, 0.7, 15)
    post = bomcmc.from_numpyro(scale_model, y)
    for seed in range(3):
        t0 = time.perf_counter()
        res = bomcmc.sample(posterior=post, sampler=args.sampler, chains=4, draws=1000,
                            warmup=500, seed=seed, progress=False, float64=True)
        print(f"{args.sampler} seed {seed}: {time.perf_counter() - t0:.2f} s, compile_s "
              f"{res.totals['compile_s']:.2f}, prepare_s {res.totals['prepare_s']:.2f}",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
