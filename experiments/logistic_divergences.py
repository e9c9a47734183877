#!/usr/bin/env python
"""Divergences after warm-up at the defaults (issue 32, item 6): `bomcmc.sample` with nothing
but the posterior and the seed, on each logistic regression, seeds 0–2; one JSON line per run
with the divergent draws' chain, draw, step size and trajectory length, and the min bulk ESS
per 1000 gradients, of the sampling phase and with the warm-up's gradients counted.

    python experiments/logistic_divergences.py --posteriors logistic-german,logistic-australian,\
logistic-ripley,logistic-heart,logistic-pima --seeds 0,1,2 [--divergence-margin 0.6]
"""

from __future__ import annotations

import argparse
import json
import warnings

import arviz as az
import numpy as np

import bomcmc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--posteriors", required=True)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--divergence-margin", type=float, default=None,
                    help="AHMC's ceiling margin instead of its default (0: no ceiling)")
    args = ap.parse_args(argv)
    if args.divergence_margin is not None:
        # `sample` takes no tuner options for this; the experiment changes the default
        from bomcmc.tuning.ahmc_tuner import AHMCTuner

        AHMCTuner.__init__.__kwdefaults__["divergence_margin"] = args.divergence_margin or None
    for name in args.posteriors.split(","):
        for seed in map(int, args.seeds.split(",")):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", bomcmc.SamplingWarning)
                res = bomcmc.sample(posterior=name, seed=seed, progress=False)
            stats = res.idata.sample_stats
            div = stats["diverging"].values
            eps, steps = stats["step_size"].values, stats["n_steps"].values
            where = [dict(chain=int(c), draw=int(d), step_size=float(eps[c, d]),
                          steps=int(steps[c, d])) for c, d in np.argwhere(div)]
            ess = float(np.min(az.ess(res.idata, method="bulk").to_array().values))
            grads, warm = res.totals["n_grad"], res.totals["n_grad_warmup"]
            print(json.dumps({"posterior": name, "seed": seed, "divergences": int(div.sum()),
                              "where": where, "median_step_size": float(np.median(eps)),
                              "warmup": res.totals.get("warmup"), "min_ess_bulk": ess,
                              "ess_per_1000_grads": 1000 * ess / grads,
                              "ess_per_1000_grads_with_warmup": 1000 * ess / (grads + warm)}),
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
