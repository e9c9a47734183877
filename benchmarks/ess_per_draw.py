"""What sets the race's min bulk ESS at a fixed number of draws (issue 32; docs/benchmarks.md,
"The race's ESS at 1000 draws"): `bomcmc.sample` at its defaults (4 chains, warm-up "auto",
1000 draws) on one posterior, seed after seed, recording per run the min and median bulk
ESS, the sampling phase's and the warm-up's gradients, and the step size and largest
trajectory length the sampling phase used most.

    python benchmarks/ess_per_draw.py --seeds 0-23 --out benchmarks/results/ess-per-draw.json
    python benchmarks/ess_per_draw.py --seeds 0-23 --float32 --out ...   # the CLI's precision

It prints the correlation of the min ESS with the sampling gradients: at a fixed number of
draws the bandit's trajectory length, which its reward (ESS per gradient's proxy) leaves
nearly free, sets the ESS per draw.
"""

from __future__ import annotations

import argparse
import json
import warnings
from collections import Counter

import numpy as np


def run(posterior: str, seed: int, float64: bool) -> dict:
    import bomcmc
    from bomcmc.diagnostics import rank_normalized as rn

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = bomcmc.sample(posterior=posterior, chains=4, seed=seed, float64=float64,
                            progress=False)
    ss = res.idata.sample_stats
    knobs = Counter(zip(np.asarray(ss.step_size).ravel().round(6).tolist(),
                        np.asarray(ss.n_steps).ravel().tolist()))
    eps = Counter({e: n for (e, _), n in knobs.items()}).most_common(1)[0][0]
    ess = np.concatenate([rn.ess_bulk(v.values).ravel() for v in res.idata.posterior.values()])
    return {"seed": seed, "min_ess_bulk": float(ess.min()),
            "median_ess_bulk": float(np.median(ess)), "n_grad": int(res.totals["n_grad"]),
            "n_grad_warmup": int(res.totals["n_grad_warmup"]), "eps_mode": eps,
            "L_max": int(np.asarray(ss.n_steps).max())}


def seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--posterior", default="logistic-german")
    ap.add_argument("--seeds", default="0-7", help="a range, e.g. 0-23")
    ap.add_argument("--float32", action="store_true", help="the CLI's default precision")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    rows = []
    for seed in seeds(args.seeds):
        rows.append(run(args.posterior, seed, not args.float32))
        print(json.dumps(rows[-1]), flush=True)
    ess = np.array([r["min_ess_bulk"] for r in rows])
    grads = np.array([r["n_grad"] for r in rows])
    r = float(np.corrcoef(ess, grads)[0, 1]) if len(rows) > 2 else float("nan")
    summary = {"posterior": args.posterior, "float64": not args.float32,
               "min_ess_mean": float(ess.mean()), "min_ess_sd": float(ess.std(ddof=1)),
               "min_ess_per_grad_mean": float(np.mean(ess / grads)),
               "corr_min_ess_sampling_grads": r}
    print(json.dumps(summary))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"summary": summary, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
