"""two_phase (two-phase Bayesian-optimised MCMC, Mahendran 2011; Mahendran et al. 2012) vs ahmc
on one posterior: min bulk ESS per gradient over 3 seeds (docs/tuning.md, "Two-phase mode").

    python experiments/two_phase_vs_ahmc.py [--posterior logistic-german] [--seeds 0 1 2]
        [--warmup 1000] [--draws 1000] [--chains 4] [--two-phase KEY=VALUE ...]

Prints one JSON line per run and a table of means. --two-phase passes extra options to "two_phase"
(e.g. --two-phase temperature=0.05 candidates=lhs); values are parsed as JSON when they can be.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import bomcmc


def _value(text):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def run(posterior, sampler, seed, warmup, draws, chains, options):
    t0 = time.perf_counter()
    res = bomcmc.sample(posterior=posterior, sampler=sampler, chains=chains, warmup=warmup,
                        draws=draws, seed=seed, progress=False, **options)
    s = res.summary()["run"]
    tot = res.totals
    ess = s["ess_bulk"]["min"]
    return {"sampler": sampler, "seed": seed, "options": options,
            "min_ess": ess, "ess_per_grad": ess / tot["n_grad"],
            "ess_per_grad_total": ess / (tot["n_grad"] + tot["n_grad_warmup"]),
            "grad_per_draw": tot["n_grad"] / (chains * draws),
            "divergences": tot["divergences"], "accept": tot["accept_mean"],
            "wall_s": time.perf_counter() - t0}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--posterior", default="logistic-german")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--warmup", type=int, default=1000)
    p.add_argument("--draws", type=int, default=1000)
    p.add_argument("--chains", type=int, default=4)
    p.add_argument("--samplers", nargs="+", default=["two_phase", "ahmc"])
    p.add_argument("--two-phase", nargs="*", default=[], metavar="KEY=VALUE")
    a = p.parse_args()
    bomcmc.enable_compilation_cache()
    two_phase_opts = {k: _value(v) for k, v in (kv.split("=", 1) for kv in a.two_phase)}
    rows = []
    for sampler in a.samplers:
        for seed in a.seeds:
            r = run(a.posterior, sampler, seed, a.warmup, a.draws, a.chains,
                    two_phase_opts if sampler == "two_phase" else {})
            rows.append(r)
            print(json.dumps(r), flush=True)
    print(f"\n{a.posterior}: chains={a.chains} warmup={a.warmup} draws={a.draws} "
          f"seeds={a.seeds}")
    print(f"{'sampler':8} {'min ESS':>9} {'ESS/grad':>10} {'ESS/grad incl. warm-up':>23} "
          f"{'grad/draw':>10} {'div':>5}")
    for sampler in a.samplers:
        rs = [r for r in rows if r["sampler"] == sampler]
        m = {k: np.mean([r[k] for r in rs]) for k in ("min_ess", "ess_per_grad",
                                                       "ess_per_grad_total", "grad_per_draw",
                                                       "divergences")}
        per = " ".join(f"{r['ess_per_grad']:.4f}" for r in rs)
        print(f"{sampler:8} {m['min_ess']:9.0f} {m['ess_per_grad']:10.4f} "
              f"{m['ess_per_grad_total']:23.4f} {m['grad_per_draw']:10.1f} "
              f"{m['divergences']:5.0f}   (per seed: {per})")


if __name__ == "__main__":
    main()
