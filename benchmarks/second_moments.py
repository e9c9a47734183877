"""ESS of the means and of the second moments, per gradient: what the benchmarks' bulk ESS
leaves out (docs/benchmarks.md, "Bulk ESS against the second moments").

    python benchmarks/second_moments.py [--posteriors logistic-german,gauss-iid-1000]
        [--samplers ahmc,nuts,ahmc:ess] [--seeds 2] [--warmup 1000 --draws 1000]

Each run: 4 chains, float64, at the sampler's defaults; `ahmc:R` is `ahmc` with the bandit's
reward R (`reward=R`, e.g. `ess`). Printed per run, each the minimum over the coordinates:
bulk ESS of x (what the benchmark tables report), tail ESS of x, and bulk ESS of
(x - its mean)², each also per 1000 gradients with the warm-up's counted; the largest R-hat
(rank-normalised, bulk and folded).

A likely reason, reasoned and not measured here: on a Gaussian, an integration time near half
a period maps x to about -x, a large jump, which a squared-jump reward favours and which makes
the bulk ESS of x large, while |x| barely changes, so the second moments (and the tails, and
the folded R-hat) mix slowly.
"""

from __future__ import annotations

import argparse
import warnings

import arviz as az
import numpy as np

import bomcmc


def flat_draws(idata) -> np.ndarray:
    """(chains, draws, coordinates) of every posterior variable."""
    post = idata.posterior
    c, n = post.sizes["chain"], post.sizes["draw"]
    return np.concatenate([post[v].values.reshape(c, n, -1) for v in post.data_vars], -1)


def figures(result) -> dict:
    x = flat_draws(result.idata)
    sq = (x - x.mean(axis=(0, 1))) ** 2
    ess = {"bulk": az.ess(az.from_dict(posterior={"x": x}))["x"].values.min(),
           "tail": az.ess(az.from_dict(posterior={"x": x}), method="tail")["x"].values.min(),
           "squared": az.ess(az.from_dict(posterior={"x": sq}))["x"].values.min()}
    grads = result.totals["n_grad"] + result.totals["n_grad_warmup"]
    return {"ess": ess, "per_1000": {k: 1000 * v / grads for k, v in ess.items()},
            "rhat": float(az.rhat(az.from_dict(posterior={"x": x}))["x"].values.max())}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--posteriors", default="logistic-german,gauss-iid-1000")
    p.add_argument("--samplers", default="ahmc,nuts")
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--warmup", type=int, default=1000)
    p.add_argument("--draws", type=int, default=1000)
    a = p.parse_args(argv)
    warnings.simplefilter("ignore")
    for post in a.posteriors.split(","):
        for entry in a.samplers.split(","):
            sampler, _, reward = entry.partition(":")
            options = {"reward": reward} if reward else {}
            for seed in range(a.seeds):
                r = bomcmc.sample(posterior=post, sampler=sampler, chains=4, draws=a.draws,
                                  warmup=a.warmup, seed=seed, progress=False, float64=True,
                                  **options)
                f = figures(r)
                e, g = f["ess"], f["per_1000"]
                print(f"{post:18s} {entry:10s} seed {seed}  min ESS bulk {e['bulk']:6.0f} "
                      f"tail {e['tail']:6.0f} squared {e['squared']:6.0f}  per 1000 gradients "
                      f"{g['bulk']:6.1f} {g['tail']:6.1f} {g['squared']:6.1f}  max R-hat "
                      f"{f['rhat']:.3f}", flush=True)


if __name__ == "__main__":
    main()
