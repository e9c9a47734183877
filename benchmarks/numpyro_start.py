"""What a NumPyro user waits for before sampling starts (docs/benchmarks.md, "A NumPyro model's
start"): `bomcmc.from_numpyro` and then `bomcmc.sample` at the defaults, each in a fresh
process, several processes one after another sharing one new cache directory, so that the
first finds it empty and the rest find what the first wrote. Per process: the seconds of each
call and JAX's own clocks (tracing, lowering, backend compilation; persistent-cache hits
and misses, and the programs compiled while the cache was off).

    python benchmarks/numpyro_start.py --processes 3
    python benchmarks/numpyro_start.py --src /path/to/another/checkout/src   # another version

The model is a correlation matrix by its LKJ Cholesky factor with half-normal scales, 50
rows of three-dimensional data: six unconstrained parameters whose transforms are costly to
trace.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import collections, json, time
t0 = time.perf_counter()
import numpy as np, jax.numpy as jnp
import numpyro, numpyro.distributions as dist
from jax import monitoring
import bomcmc
counts, clocks = collections.Counter(), collections.Counter()
monitoring.register_event_listener(lambda name, **_: counts.update([name.rsplit("/", 1)[1]]))
monitoring.register_event_duration_secs_listener(
    lambda name, d, **_: clocks.update({name.rsplit("/", 1)[1]: d}))


def model(y):
    chol = numpyro.sample("L", dist.LKJCholesky(3, 2.0))
    scale = numpyro.sample("scale", dist.HalfNormal(jnp.ones(3)))
    numpyro.sample("y", dist.MultivariateNormal(jnp.zeros(3), scale_tril=scale[:, None] * chol),
                   obs=y)


y = np.random.default_rng(0).multivariate_normal(
    np.zeros(3), [[1, .5, .2], [.5, 1, .3], [.2, .3, 1]], 50)
out = {"import_s": time.perf_counter() - t0}


def phase(name, call):
    counts.clear(); clocks.clear()
    t = time.perf_counter()
    value = call()
    out[name] = {"s": time.perf_counter() - t,
                 "trace_s": clocks["jaxpr_trace_duration"],
                 "lower_s": clocks["jaxpr_to_mlir_module_duration"],
                 "compile_s": clocks["backend_compile_duration"],
                 "hits": counts["cache_hits"], "misses": counts["cache_misses"],
                 "uncached": counts["compile_requests_use_cache"] - counts["cache_hits"]
                 - counts["cache_misses"]}
    return value


post = phase("from_numpyro", lambda: bomcmc.from_numpyro(model, y))
phase("sample", lambda: bomcmc.sample(posterior=post, seed=0, progress=False))
print(json.dumps(out))
"""


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--src", default=str(Path(__file__).resolve().parents[1] / "src"),
                    help="the bomcmc source directory to import (default: this checkout's)")
    args = ap.parse_args(argv)
    env = {**os.environ, "PYTHONPATH": args.src, "BOMCMC_CACHE_DIR": tempfile.mkdtemp()}
    env.pop("BOMCMC_NO_CACHE", None)
    rows = []
    for i in range(args.processes):
        proc = subprocess.run([sys.executable, "-W", "ignore", "-c", CHILD], env=env,
                              capture_output=True, text=True, check=True)
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(f"process {i}: " + "; ".join(
            f"{k} {v:.1f} s" if not isinstance(v, dict) else
            f"{k} {v['s']:.1f} s (trace {v['trace_s']:.1f}, lower {v['lower_s']:.1f}, "
            f"compile {v['compile_s']:.1f}; {v['hits']} hits, {v['misses']} misses, "
            f"{v['uncached']} uncached)" for k, v in row.items()), flush=True)
    return rows


if __name__ == "__main__":
    main()
