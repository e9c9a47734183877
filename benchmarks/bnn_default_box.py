"""The network estimators' η box (issue 32): divergences after the burn-in, the warnings a
fit prints, and the fit's score, for each box on the same data and seeds, in one invocation.

    python benchmarks/bnn_default_box.py --box wang=0.01,1.01 --box quarter=0.0025,0.25 \\
        --data sin,diabetes,robot_arm --seeds 0,1,2 --out benchmarks/results/bnn-box.json

A box may carry the bandit's ceiling on η after divergences as a third number,
`--box ceiling=0.0025,0.25,0.8` (`divergence_margin`); without one the bandit is Wang's
(`divergence_margin=None`, the estimators' default before the ceiling).

Data (inputs standardised with the training cases' mean and sd, as a scikit-learn pipeline
would, except the robot arm's angles, raw as in Neal's and Wang's runs):

- sin: 30 inputs uniform on [-1, 1] (seed 0), y = sin(3x) + N(0, 0.1²); regressor; score
  R² on 200 fresh inputs from the same law.
- diabetes: scikit-learn's load_diabetes, 442 × 10, y standardised; the regressor fits the
  first 300 cases; score R² on the other 142.
- breast_cancer: scikit-learn's load_breast_cancer, 569 × 30; classifier on the first 400;
  score accuracy on the other 169.
- friedman1: scikit-learn's make_friedman1(400, 10 features, noise 1, random_state 0), y
  standardised by the first 300; regressor on those 300, R² on the other 100.
- wine: scikit-learn's load_wine, 178 × 13, 3 classes, rows shuffled (seed 0); classifier
  on the first 120, accuracy on the other 58.
- robot_arm: `bomcmc.datasets.robot_arm`; the score is `test_error` on its test set.

Every fit runs at the estimators' defaults except `eps_bounds` and `divergence_margin`:
1 chain, float32, 100 super-transitions of 4000 gradients, the first quarter burn-in. Each is reported with its
wall time, the fraction of kept draws that diverged, and the warnings' first words.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np


def _data(name: str):
    """(estimator class name, X_train, y_train, X_test, y_test, score name)."""
    if name == "sin":
        rng = np.random.default_rng(0)
        x = rng.uniform(-1, 1, 30)
        xt = rng.uniform(-1, 1, 200)
        return ("regressor", x[:, None], np.sin(3 * x) + 0.1 * rng.normal(size=30),
                xt[:, None], np.sin(3 * xt) + 0.1 * rng.normal(size=200), "r2")
    if name == "diabetes":
        from sklearn.datasets import load_diabetes

        X, y = load_diabetes(return_X_y=True)
        y = (y - y.mean()) / y.std()
        return "regressor", X[:300], y[:300], X[300:], y[300:], "r2"
    if name == "friedman1":
        from sklearn.datasets import make_friedman1

        X, y = make_friedman1(n_samples=400, n_features=10, noise=1.0, random_state=0)
        y = (y - y[:300].mean()) / y[:300].std()
        return "regressor", X[:300], y[:300], X[300:], y[300:], "r2"
    if name == "wine":
        from sklearn.datasets import load_wine

        X, y = load_wine(return_X_y=True)
        order = np.random.default_rng(0).permutation(len(y))  # the file is sorted by class
        X, y = X[order], y[order]
        return "classifier", X[:120], y[:120], X[120:], y[120:], "accuracy"
    if name == "breast_cancer":
        from sklearn.datasets import load_breast_cancer

        X, y = load_breast_cancer(return_X_y=True)
        return "classifier", X[:400], y[:400], X[400:], y[400:], "accuracy"
    if name == "robot_arm":
        from bomcmc.datasets import robot_arm

        return ("regressor", *robot_arm("train"), *robot_arm("test"), "test_error")
    raise SystemExit(f"unknown data {name!r}")


def fit_one(data: str, eps_bounds: tuple[float, float], seed: int,
            margin: float | None = None) -> dict:
    from bomcmc import BayesianMLPClassifier, BayesianMLPRegressor

    kind, X, y, Xt, yt, score = _data(data)
    if data != "robot_arm":  # Neal's and Wang's runs use the raw angles
        mu, sd = X.mean(axis=0), X.std(axis=0) + 1e-12
        X, Xt = (X - mu) / sd, (Xt - mu) / sd
    cls = BayesianMLPRegressor if kind == "regressor" else BayesianMLPClassifier
    est = cls(eps_bounds=eps_bounds, divergence_margin=margin, seed=seed, progress=False)
    t = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    wall = time.perf_counter() - t
    div = np.asarray(est.idata_.sample_stats["diverging"].values).ravel()
    eta = np.asarray(est.idata_.sample_stats["step_size"].values).ravel()
    where = np.flatnonzero(div)
    value = (est.test_error(Xt, yt) if score == "test_error" else est.score(Xt, yt))
    return {"data": data, "eps_bounds": list(eps_bounds), "divergence_margin": margin,
            "seed": seed, "wall_s": wall,
            "divergent_fraction": float(div.mean()), "kept_draws": int(div.size),
            # the bandit's η at the kept draws, diverged or not, and where the divergences lie
            "eta_median_divergent": float(np.median(eta[div])) if where.size else None,
            "eta_min_divergent": float(eta[div].min()) if where.size else None,
            "eta_median_other": float(np.median(eta[~div])) if (~div).any() else None,
            "divergent_draws_first_last": [int(where[0]), int(where[-1])] if where.size
            else None,
            score: float(value),
            "warnings": [str(w.message)[:120] for w in caught
                         if type(w.message).__name__ == "SamplingWarning"]}


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--box", action="append", required=True, help="name=lo,hi[,margin]")
    ap.add_argument("--data", default="sin,diabetes,breast_cancer,robot_arm")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    boxes = []
    for text in args.box:
        name, _, pair = text.partition("=")
        lo, hi, *margin = (float(v) for v in pair.split(","))
        boxes.append((name, (lo, hi), margin[0] if margin else None))
    rows = []
    for data in args.data.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            for name, box, margin in boxes:  # they alternate: each sees the machine alike
                row = {"box": name, **fit_one(data, box, seed, margin)}
                rows.append(row)
                print(json.dumps({k: v for k, v in row.items() if k != "warnings"}),
                      flush=True)
                if args.out:
                    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
                    Path(args.out).write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    main()
