"""XLA's CPU emitters: compile time, sampling time and draws, default against older.

    python benchmarks/xla_emitters.py [--runs logistic-german:nuts,...] [--repeats 2]
        [--variant NAME=XLA_FLAGS ...]

Each run is a fresh process without the compilation cache (`BOMCMC_NO_CACHE=1`), float64,
4 chains × (1000 + 2000), seed 1, once under each variant in turn: by default XLA's own
flags and `--xla_cpu_use_fusion_emitters=false` (the test session's flag,
tests/conftest.py); `--variant` names others (e.g. `--variant
o1="--xla_cpu_use_fusion_emitters=false --xla_backend_optimization_level=1"`); a
variant's flags replace the environment's XLA_FLAGS. Prints per
run: compile seconds, warm-up and sampling seconds, microseconds of sampling per gradient,
and a digest of the draws (equal digests: the same draws).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

FLAG = "--xla_cpu_use_fusion_emitters=false"
RUNS = "logistic-german:nuts,logistic-german:ahmc,gauss-100-illcond:nuts,regression-correlated:hmc"

ONE = """
import hashlib, json, sys, warnings
warnings.simplefilter("ignore")
import numpy as np
import bomcmc
post, sampler = sys.argv[1].split(":")
r = bomcmc.sample(posterior=post, sampler=sampler, chains=4, warmup=1000, draws=2000, seed=1,
                  float64=True, progress=False)
t = r.totals
x = np.concatenate([np.asarray(v).ravel() for v in r.idata.posterior.data_vars.values()])
print(json.dumps({"compile_s": t["compile_s"], "warmup_s": t["wall_s_warmup"],
                  "sampling_s": t["wall_s"], "us_per_grad": 1e6 * t["wall_s"] / t["n_grad"],
                  "digest": hashlib.md5(x.tobytes()).hexdigest()[:8]}))
"""


def run(spec: str, flags: str) -> dict:
    env = {**os.environ, "BOMCMC_NO_CACHE": "1", "XLA_FLAGS": flags}
    out = subprocess.run([sys.executable, "-c", ONE, spec], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", default=RUNS, help="posterior:sampler, comma-separated")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--variant", action="append", default=None, help="NAME=XLA_FLAGS")
    a = p.parse_args(argv)
    variants = dict(v.split("=", 1) for v in a.variant) if a.variant else {
        "default": "", "older": FLAG}
    for _ in range(a.repeats):
        for spec in a.runs.split(","):
            for name, flags in variants.items():
                r = run(spec, flags)
                print(f"{spec:28s} {name:8s} "
                      f"compile {r['compile_s']:5.2f} s  warm-up {r['warmup_s']:5.2f} s  "
                      f"sampling {r['sampling_s']:5.2f} s  {r['us_per_grad']:6.1f} µs/grad  "
                      f"draws {r['digest']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
