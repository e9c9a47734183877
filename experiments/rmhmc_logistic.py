"""Adaptive RMHMC against RMHMC at Girolami & Calderhead's hand-tuned setting on the five
Bayesian logistic regressions: Wang, Mohamed & de Freitas (2013) §5.1, Fig. 2 bottom row
(docs/rmhmc.md, "Logistic regression").

    python experiments/rmhmc_logistic.py --chains 10 --warmup 1000 --draws 5000 \\
        --seeds 0 --out benchmarks/results/rmhmc-logistic.json

Per (data set, sampler, seed), one run of `--chains` chains in float64:
- rmhmc   ε = 0.5, L_r ~ U{1..6}, 6 fixed-point steps, chains started at β = 0 (Girolami &
          Calderhead's start is β = 10⁻³·1), warm-up = burn-in at that setting;
- armhmc  the GP bandit over (ε, L) in ε ∈ [0.01, 1] × L ∈ {1..20}, chains from bomcmc's
          dispersed starts, adapting in burn-in and after.
Recorded: ArviZ's bulk ESS of each coefficient (min / median / max), per gradient of the
sampling phase, per gradient with the warm-up's, and per second of sampling (compilation
excluded; the metric's cost is in the seconds, not in the gradients); acceptance; the share
of transitions whose fixed points did not converge; the largest |z| of the means against a
NUTS reference run (4 × 5000 draws) in both runs' MCSEs.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
from ess_tables import agreement, ess_figures, moments

import bomcmc

DATASETS = ("australian", "german", "heart", "pima", "ripley")
SETTINGS = {
    "rmhmc": dict(step_size=0.5, steps=6, random_steps=True, fixed_point_steps=6,
                  init_strategy="init"),
    "armhmc": dict(eps_bounds=(0.01, 1.0), steps_bounds=(1, 20)),
}


def figures(res) -> dict:
    """The shared ESS figures of β (`ess_tables.ess_figures`), the warm-up's seconds and the
    share of fixed-point iterations that did not converge."""
    out = ess_figures(res, ["beta"])
    out["wall_s_warmup"] = res.totals["wall_s_warmup"]
    ss = res.idata.sample_stats
    if "fixed_point_failed" in ss:
        out["fixed_point_failed"] = float(np.mean(ss.fixed_point_failed))
    return out


def z_against(res, ref) -> float:
    """The largest |z| of β's means against the reference run, in both runs' MCSEs."""
    return agreement(moments(res, ["beta"]), moments(ref, ["beta"]))["max_abs_z"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--chains", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=5000)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    runs = []
    t0 = time.time()
    for ds in args.datasets.split(","):
        post = f"logistic-{ds}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = bomcmc.sample(posterior=post, sampler="nuts", chains=4, draws=5000,
                                warmup=1000, seed=1000, float64=True, progress=False)
        for sampler, kw in SETTINGS.items():
            for seed in map(int, args.seeds.split(",")):
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    res = bomcmc.sample(posterior=post, sampler=sampler, chains=args.chains,
                                        draws=args.draws, warmup=args.warmup, seed=seed,
                                        float64=True, progress=False, **kw)
                row = {"dataset": ds, "sampler": sampler, "seed": seed, **figures(res),
                       "z_vs_nuts": z_against(res, ref),
                       "warnings": [str(w.message).split(":")[0] for w in caught
                                    if issubclass(w.category, bomcmc.SamplingWarning)]}
                runs.append(row)
                print(f"{ds} {sampler} seed {seed}: min ESS/grad {row['per_grad_min']:.4f} "
                      f"(with warm-up {row['per_grad_all_min']:.4f}), min ESS/s "
                      f"{row['per_s_min']:.1f}, |z| {row['z_vs_nuts']:.2f}, "
                      f"{time.time() - t0:.0f} s", flush=True)
    meta = {k: v for k, v in vars(args).items() if k != "out"}
    Path(args.out).write_text(json.dumps({"meta": meta, "settings": SETTINGS, "runs": runs},
                                         indent=1, default=list))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
