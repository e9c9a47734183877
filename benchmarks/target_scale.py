"""The network regressor on targets far from unit scale, raw and standardised as its warning
advises (docs/bnn.md, "Targets far from unit scale").

    python benchmarks/target_scale.py [--cells 0:1,100:1,2e5:1e5] [--advised]

y = a + b (sin x₀ + x₁/2 + ε), ε ~ N(0, 0.1²), x ~ N(0, I₃); 120 training and 500 test cases
(the test targets with their own ε), seed 0; `BayesianMLPRegressor(hidden=(8,), budget=20000,
super_transitions=40, pretrain_steps=500)`. Printed per cell a:b: the test R², and whether the
fit warned that y is far from unit scale; with `--advised`, also the fit of
`TransformedTargetRegressor(..., transformer=StandardScaler())` on the same data.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from sklearn.compose import TransformedTargetRegressor
from sklearn.preprocessing import StandardScaler

import bomcmc

SETTINGS = dict(hidden=(8,), budget=20000, super_transitions=40, pretrain_steps=500,
                progress=False)
CELLS = ("0:1,0:0.01,0:10,0:100,0:500,30:1,100:1,300:1,1000:1,1000:500,0:1e4,0:1e-4,"
         "2e5:1e5")


def data(seed: int = 0):
    rng = np.random.default_rng(seed)

    def f(x):
        return np.sin(x[:, 0]) + 0.5 * x[:, 1]

    X = rng.normal(size=(120, 3))
    y = f(X) + 0.1 * rng.normal(size=120)
    Xt = rng.normal(size=(500, 3))
    return X, y, Xt, f(Xt) + 0.1 * rng.normal(size=500)


def fit(model, X, y):
    """(the fitted model, whether it warned of the target's scale)."""
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        model.fit(X, y)
    return model, any("far from the unit scale" in str(w.message) for w in said)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cells", default=CELLS, help="a:b pairs, comma-separated")
    p.add_argument("--advised", action="store_true", help="also fit the advised pipeline")
    a = p.parse_args(argv)
    X, z, Xt, zt = data()
    for cell in a.cells.split(","):
        shift, scale = (float(v) for v in cell.split(":"))
        y, yt = shift + scale * z, shift + scale * zt
        runs = [("raw", bomcmc.BayesianMLPRegressor(**SETTINGS))]
        if a.advised:
            runs.append(("advised", TransformedTargetRegressor(
                bomcmc.BayesianMLPRegressor(**SETTINGS), transformer=StandardScaler())))
        for name, model in runs:
            model, warned = fit(model, X, y)
            print(f"a {shift:g} b {scale:g} {name:8s} test R² {model.score(Xt, yt):.3f}  "
                  f"warned {warned}", flush=True)


if __name__ == "__main__":
    main()
