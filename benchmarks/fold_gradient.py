"""What a gradient of the diabetes fold networks costs (issue 32; docs/bnn.md, "What a fit
costs"), for one or several code versions, each in its own process, alternating A B A B.

The model is what `BayesianMLPRegressor()` samples in the first fold of the diabetes
cross-validation: the 8 fold networks of a 10-16-1 network on 294 standardised cases, float32.
Per version it reports µs per gradient of

- the joint log density alone, in a compiled loop of 2000 gradients (`grad_us`);
- Neal's transition with fixed η = 0.001 and L = 100 through `bomcmc.sample`, 100 draws, for
  1 and for 4 chains (`transition_us_1`, `transition_us_4`: wall seconds of sampling over the
  gradients of all chains).

    python benchmarks/fold_gradient.py --version before=<src> --version new=src --pairs 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.diabetes_cv import _version  # noqa: E402

CHILD = r"""
import json, time, warnings
warnings.simplefilter("ignore")
import jax, jax.numpy as jnp, numpy as np
from sklearn.datasets import load_diabetes
from sklearn.preprocessing import StandardScaler
import bomcmc
from bomcmc.bnn.regressor import BayesianMLPRegressor
from bomcmc.bnn.cv import CVModel
from bomcmc.bnn.samplers import neal_sampler

X, y = load_diabetes(return_X_y=True)
X = StandardScaler().fit_transform(X)[:294]
cv = CVModel(BayesianMLPRegressor()._model(X, y[:294, None]), 8)
post = cv.posterior()
flat = cv.ravel(post.init_position).astype(jnp.float32)
grad = jax.grad(lambda f: cv.logdensity(cv.unravel(f)))
N = 2000

@jax.jit
def loop(x):
    def body(i, c):
        x, p = c
        p = p + 1e-4 * grad(x)
        return x + 1e-4 * p, p
    return jax.lax.fori_loop(0, N, body, (x, jnp.zeros_like(x)))

jax.block_until_ready(loop(flat))
times = []
for _ in range(3):
    t = time.perf_counter()
    jax.block_until_ready(loop(flat))
    times.append(time.perf_counter() - t)
out = {"grad_us": min(times) / N * 1e6}
for chains in (1, 4):
    r = bomcmc.sample(posterior=post, sampler=neal_sampler(cv), chains=chains, draws=100,
                      warmup=0, adapt=None, step_size=0.001, steps=100, progress=False,
                      checks=False)
    out[f"transition_us_{chains}"] = r.totals["wall_s"] / r.totals["n_grad"] * 1e6
print("RESULT " + json.dumps(out))
"""


def run_one(src: str) -> dict:
    env = {**os.environ, "PYTHONPATH": src, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                          text=True, cwd=str(ROOT))
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not line:
        raise SystemExit(f"run failed ({src}):\n{proc.stderr[-3000:]}")
    return json.loads(line[-1][len("RESULT "):])


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", action="append", required=True,
                    help="name=src (relative to the repository or absolute)")
    ap.add_argument("--pairs", type=int, default=1, help="rounds of A B (alternating)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    versions = [_version(v)[:2] for v in args.version]
    runs = {name: [] for name, _ in versions}
    for _ in range(args.pairs):
        for name, src in versions:
            r = run_one(src)
            runs[name].append(r)
            print(f"{name}: " + ", ".join(f"{k} {v:.1f}" for k, v in r.items()), flush=True)
    report = {"model": "diabetes fold 1: 8 fold networks, 10-16-1, 294 cases, float32",
              "cpus": os.cpu_count(), "versions": {name: {"src": src, "runs": runs[name]}
                                                   for name, src in versions}}
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
