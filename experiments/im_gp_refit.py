#!/usr/bin/env python
"""Refit each IMBayesOpt trial's GP by marginal likelihood (docs/spins.md, "Why IMBayesOpt
trails on the grid"): do the rewards a trial saw support a sharper surface than the fixed GP
of the authors' code (length scales 0.1 × the box's widths)? For every IMBayesOpt trial of
an `experiments/im_sampler.py` results JSON: the inputs scaled to the unit box, the mean
reward at each, and scikit-learn's `GaussianProcessRegressor` with a constant × ARD RBF +
white-noise kernel, `normalize_y=True`, 3 optimiser restarts. Prints the fitted length
scales (as fractions of the box), the noise as a fraction of the rewards' variance, and the
refitted GP mean's argmax. Beside them, the noise the rewards really have: the sd of h over
the 100-move blocks of IMExpert's first trace (a fixed setting, so its spread is noise alone).

    python experiments/im_gp_refit.py benchmarks/results/im-ising-60x60-paper-device.json
"""

from __future__ import annotations

import argparse
import json
import warnings

import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

from bomcmc.tuning.im_tuner import NOISE_VAR


def refit(state: dict) -> dict:
    gp, box = state["gp"], state["box"]
    X = np.asarray(gp["X"], float)
    y = np.asarray(gp["sums"], float) / np.asarray(gp["counts"], float)
    lo, hi = np.asarray(box["lower"], float), np.asarray(box["upper"], float)
    kernel = (ConstantKernel(0.01, (1e-4, 10.0)) * RBF([0.1, 0.1], (1e-3, 10.0))
              + WhiteKernel(1e-3, (1e-6, 1.0)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # bounds reached by a restart
        g = GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=3,
                                     random_state=0).fit((X - lo) / (hi - lo), y)
    grid = np.stack(np.meshgrid(np.linspace(0, 1, 100), np.linspace(0, 1, 60),
                                indexing="ij"), -1).reshape(-1, 2)
    best = lo + grid[np.argmax(g.predict(grid))] * (hi - lo)
    k = g.kernel_
    return {"lengthscales": k.k1.k2.length_scale.tolist(), "noise": float(k.k2.noise_level),
            "argmax": best.tolist(), "n": int(y.size)}


def block_noise(lp_trace) -> tuple[int, float, float]:
    """(blocks, mean, sd) of h over consecutive 100-move blocks of one energy trace."""
    from bomcmc.tuning.rewards import energy_acf

    lp = np.asarray(lp_trace, float)
    h = [energy_acf({"lp": lp[None, i * 100:(i + 1) * 100]}) for i in range(lp.size // 100)]
    return len(h), float(np.mean(h)), float(np.std(h, ddof=1))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", help="an experiments/im_sampler.py results JSON")
    args = ap.parse_args(argv)
    r = json.loads(open(args.results).read())
    for t in r["methods"]["IMBayesOpt"]["trials"]:
        f = refit(t["tuner_state"])
        print(f"seed {t['seed']}: {f['n']} inputs, length scales (γ, k) "
              f"{f['lengthscales'][0]:.3f}, {f['lengthscales'][1]:.3f} of the box; noise "
              f"{f['noise']:.3f} of the rewards' variance; argmax γ {f['argmax'][0]:.3f}, "
              f"k {f['argmax'][1]:.0f}")
    expert = r["methods"].get("IMExpert")
    if expert and "lp_trace" in expert["trials"][0]:
        n, m, sd = block_noise(expert["trials"][0]["lp_trace"])
        print(f"IMExpert trial {expert['trials'][0]['seed']}: h over {n} blocks of 100 moves "
              f"{m:.3f} ± {sd:.3f} (sd); the fixed GP assumes a noise sd of {NOISE_VAR ** 0.5:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
