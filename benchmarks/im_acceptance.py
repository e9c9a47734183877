#!/usr/bin/env python
"""The IM move's acceptance rate against its bias γ, at fixed walk lengths k, on a spin
posterior (docs/spins.md, "At the paper's budget"): the shape of the surface the IM tuners
search. One `sample(sampler="im", k=k, gamma=γ)` per setting (the knobs are arguments of one
compiled program), `--chains` chains of `--draws` moves after `--warmup`; the mean acceptance.

    python benchmarks/im_acceptance.py --model ising-60x60 --k 90 30 \\
        --out benchmarks/results/im-acceptance-ising60.json
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import numpy as np

import bomcmc

GAMMAS = (0.36, 0.40, 0.42, 0.43, 0.44, 0.45, 0.46, 0.48, 0.52)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="ising-60x60")
    ap.add_argument("--k", type=int, nargs="+", default=[90, 30])
    ap.add_argument("--gamma", type=float, nargs="+", default=list(GAMMAS))
    ap.add_argument("--chains", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--draws", type=int, default=150)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    rows = []
    for k in args.k:
        for g in args.gamma:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # per-spin ESS warnings of short runs
                r = bomcmc.sample(posterior=args.model, sampler="im", k=k, gamma=g,
                                  chains=args.chains, draws=args.draws, warmup=args.warmup,
                                  seed=args.seed, progress=False)
            acc = np.asarray(r.idata.sample_stats.acceptance_rate)
            rows.append({"k": k, "gamma": g, "acceptance": float(acc.mean()),
                         "acceptance_per_chain": acc.mean(axis=1).tolist()})
            print(f"k {k:4d}  γ {g:.3f}  acceptance {rows[-1]['acceptance']:.3f}", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"model": args.model, "chains": args.chains,
                                              "warmup": args.warmup, "draws": args.draws,
                                              "seed": args.seed, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
