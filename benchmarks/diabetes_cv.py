"""The scikit-learn user's wait (issue 32): `cross_val_score` of
`make_pipeline(StandardScaler(), BayesianMLPRegressor())` on scikit-learn's diabetes data
(442 × 10, 3 folds), wall time and R², for one or several code versions in one invocation.

    python benchmarks/diabetes_cv.py --version main=/work/main/src --version new=src \\
        --out benchmarks/results/diabetes-cv.json
    python benchmarks/diabetes_cv.py --data friedman1 ...     # or breast_cancer (classifier)

Each version runs in its own process (`PYTHONPATH=<src>`), alternating A B A B for `--pairs`
pairs, so that both see the same machine at the same time. `--set key=value` passes estimator
parameters to every version (`--set` repeated; the values are read as Python literals), and
`--version name=src:key=value,...` to one. Per fit it reports what the estimator records
(`result_.totals`: compilation, warm-up, sampling, the tuner's host time, assembly) and what it
times here: the Adam pre-training, the backend compilations (JAX's monitoring events) and the
prediction (scikit-learn's score time).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = {"diabetes": "sklearn load_diabetes (442 x 10), BayesianMLPRegressor, R^2",
        "friedman1": "sklearn make_friedman1(n_samples=400, n_features=10, noise=1.0, "
                     "random_state=0), BayesianMLPRegressor, R^2",
        "breast_cancer": "sklearn load_breast_cancer (569 x 30), BayesianMLPClassifier, "
                         "accuracy and log loss"}

CHILD = r"""
import json, sys, time
from jax import monitoring
compiles = []
monitoring.register_event_duration_secs_listener(
    lambda name, secs, **_: compiles.append(secs)
    if name == "/jax/core/compile/backend_compile_duration" else None)
from sklearn.datasets import load_diabetes
from sklearn.model_selection import cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
import bomcmc
from bomcmc.bnn import estimator as est

params = json.loads(sys.argv[1])
pre = []
_starts = est.BayesianMLPBase._starts
def timed_starts(self, model):
    t = time.perf_counter(); out = _starts(self, model); pre.append(time.perf_counter() - t)
    return out
est.BayesianMLPBase._starts = timed_starts

fits = []
_fit = est.BayesianMLPBase._fit
def timed_fit(self, X, y):
    n0, c0 = len(compiles), sum(compiles)
    t = time.perf_counter(); out = _fit(self, X, y); wall = time.perf_counter() - t
    tot = self.result_.totals
    fits.append({"rows": int(X.shape[0]), "fit_s": wall, "pretrain_s": pre[-1] if pre else 0.0,
                 "backend_compiles": len(compiles) - n0, "backend_compile_s": sum(compiles) - c0,
                 **{k: tot.get(k) for k in ("compile_s", "prepare_s", "wall_s_warmup", "wall_s",
                                            "tuner_s", "assemble_s", "n_grad", "n_grad_warmup",
                                            "draws")}})
    return out
est.BayesianMLPBase._fit = timed_fit

data = params.pop("data")
if data == "diabetes":
    X, y = load_diabetes(return_X_y=True)
elif data == "friedman1":
    from sklearn.datasets import make_friedman1
    X, y = make_friedman1(n_samples=400, n_features=10, noise=1.0, random_state=0)
else:
    from sklearn.datasets import load_breast_cancer
    X, y = load_breast_cancer(return_X_y=True)
classify = data == "breast_cancer"
est_cls = bomcmc.BayesianMLPClassifier if classify else bomcmc.BayesianMLPRegressor
scoring = ["accuracy", "neg_log_loss"] if classify else ["r2"]
t = time.perf_counter()
cv = cross_validate(make_pipeline(StandardScaler(), est_cls(**params)), X, y, cv=3,
                    scoring=scoring)
wall = time.perf_counter() - t
for f, s in zip(fits, cv["score_time"]):
    f["predict_s"] = float(s)
scores = {k: [float(v) for v in cv["test_" + k]] for k in scoring}
print("RESULT " + json.dumps({"wall_s": wall, "scores": scores,
                              "means": {k: sum(v) / len(v) for k, v in scores.items()},
                              "fits": fits}))
"""


def _value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _params(pairs) -> dict:
    out = {}
    for p in pairs:
        k, v = p.split("=", 1)
        out[k.strip()] = _value(v.strip())
    return out


def _version(text: str) -> tuple[str, str, dict]:
    name, rest = text.split("=", 1)
    src, _, extra = rest.partition(":")
    items = re.split(r",(?=\s*\w+=)", extra)  # a value may hold commas: eps_bounds=(0.01,1.01)
    return name, str((ROOT / src).resolve()), _params(x for x in items if x)


def run_one(src: str, params: dict) -> dict:
    env = {**os.environ, "PYTHONPATH": src, "PYTHONWARNINGS": "ignore"}
    t, cpu = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps({"progress": False,
                                                                    **params})],
                          env=env, capture_output=True, text=True, cwd=str(ROOT))
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not line:
        raise SystemExit(f"run failed ({src}, {params}):\n{proc.stderr[-3000:]}")
    out = json.loads(line[-1][len("RESULT "):])
    out["process_s"] = time.perf_counter() - t
    now = resource.getrusage(resource.RUSAGE_CHILDREN)  # CPU seconds: less sensitive to load
    out["process_cpu_s"] = (now.ru_utime - cpu.ru_utime) + (now.ru_stime - cpu.ru_stime)
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", action="append", required=True,
                    help="name=src[:key=value,...] (src relative to the repository or absolute)")
    ap.add_argument("--set", action="append", default=[], help="key=value for every version")
    ap.add_argument("--data", default="diabetes",
                    choices=("diabetes", "friedman1", "breast_cancer"),
                    help="friedman1: make_friedman1(400, noise=1, random_state=0); "
                         "breast_cancer: BayesianMLPClassifier, accuracy and log loss")
    ap.add_argument("--pairs", type=int, default=1, help="rounds of A B (alternating)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    shared = _params(args.set)
    versions = [_version(v) for v in args.version]
    runs = {name: [] for name, _, _ in versions}
    for _ in range(args.pairs):
        for name, src, extra in versions:
            r = run_one(src, {"data": args.data, **shared, **extra})
            runs[name].append(r)
            print(f"{name}: {r['wall_s']:.1f} s ({r['process_cpu_s']:.0f} s CPU), " + "; ".join(
                f"{k} {r['means'][k]:.4f} ({', '.join(f'{v:.4f}' for v in vs)})"
                for k, vs in r["scores"].items()), flush=True)
            for f in r["fits"]:
                print("   " + ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                                        for k, v in f.items()), flush=True)
    report = {"data": DATA[args.data], "cross_validation": "cross_validate(..., cv=3)",
              "pipeline": "make_pipeline(StandardScaler(), BayesianMLP*(**params))",
              "shared_params": shared, "cpus": os.cpu_count(),
              "versions": {name: {"src": src, "params": extra, "runs": runs[name]}
                           for name, src, extra in versions}}
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
