"""A/B of adaptive HMC's warm-up options, scored as the modern-peers table scores them.

For each posterior, variant and seed: `bomcmc.sample(sampler="ahmc", **options)` with 16
chains, 1000 warm-up transitions and 2000 draws (float64), then the min bulk ESS over
coordinates per 1000 gradients of the sampling phase, and of warm-up + sampling, and the
largest |z| of the means against the long reference stored by `benchmarks/run.py` in
`benchmarks/results/peers-<posterior>.json`. One line of JSON per run goes to --out.

    python experiments/ahmc_warmup_ab.py --posteriors logistic-heart --seeds 0,1,2 \
        --variants 'paper={"batch": 1, "steps_cap": 0}' 'default={}' --out /tmp/ab.jsonl

A variant may set "warmup" itself ('auto={"warmup": "auto"}', docs/warmup.md); the
variants of one seed run one after the other, so their seconds are paired.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ (a package at the repository root)


def reference(name: str):
    path = RESULTS / f"peers-{name}.json"
    if not path.exists():
        return None
    ref = json.loads(path.read_text())["posteriors"][name].get("reference")
    return None if ref is None else {k: np.asarray(ref[k]) for k in ("mean", "sd", "mcse")
                                     if k in ref}


def one_run(name, options, seed, chains, warmup, draws):
    import arviz as az
    import bomcmc
    from bomcmc import models
    from bomcmc.posterior import flatten

    from benchmarks.harness.bomcmc_runners import bomcmc_flat_draws as _bomcmc_flat_draws

    flat = flatten(models.get(name))
    options = dict(options)
    warmup = options.pop("warmup", warmup)
    t0 = time.perf_counter()
    res = bomcmc.sample(posterior=name, sampler="ahmc", chains=chains, draws=draws,
                        warmup=warmup, seed=seed, progress=False, float64=True, **options)
    e2e = time.perf_counter() - t0
    x = _bomcmc_flat_draws(res, flat)
    ess = np.asarray(az.ess(az.convert_to_dataset(x), method="bulk")["x"]).ravel()
    t = res.totals
    g, gw = float(t["n_grad"]), float(t["n_grad_warmup"])
    out = {"posterior": name, "seed": seed, "ess_min": float(ess.min()),
           "kgrad_sampling": g / 1000, "kgrad_warmup": gw / 1000,
           "min_ess_per_kgrad": 1000 * float(ess.min()) / g,
           "min_ess_per_kgrad_incl_warmup": 1000 * float(ess.min()) / (g + gw),
           "end_to_end_s": e2e, "divergences": int(t["divergences"]),
           "warmup_transitions": t["warmup"]["transitions"],
           "warmup_reason": t["warmup"]["reason"],
           "rhat_max": float(np.nanmax(np.asarray(az.rhat(az.convert_to_dataset(x))["x"])))}
    ref = reference(name)
    if ref is not None:
        mcse = x.reshape(-1, x.shape[-1]).std(0) / np.sqrt(ess)
        out["z_max"] = float(np.max(np.abs(x.mean((0, 1)) - ref["mean"]) / mcse))
        if "mcse" in ref:  # the reference's own error counted too
            out["z_max_ref"] = float(np.max(np.abs(x.mean((0, 1)) - ref["mean"])
                                            / np.sqrt(mcse**2 + ref["mcse"]**2)))
    tun = res.idata.tuning if "tuning" in res.idata.groups() else None
    if tun is not None and "L" in tun:
        L = np.asarray(tun["L"]).ravel()
        out["L_final"] = float(L[-1])
    out["step_size"] = float(np.nanmean(np.asarray(res.idata.sample_stats["step_size"])))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--posteriors", default="logistic-german,logistic-australian,"
                   "logistic-ripley,logistic-heart,logistic-pima")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--variants", nargs="+", default=['default={}'],
                   help="name=JSON options for bomcmc.sample")
    p.add_argument("--chains", type=int, default=16)
    p.add_argument("--warmup", type=int, default=1000)
    p.add_argument("--draws", type=int, default=2000)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    import jax

    jax.config.update("jax_enable_x64", True)
    variants = [(v.split("=", 1)[0], json.loads(v.split("=", 1)[1])) for v in args.variants]
    with open(args.out, "a") as f:
        for name in args.posteriors.split(","):
            for seed in [int(s) for s in args.seeds.split(",")]:
                for vname, opts in variants:
                    row = {"variant": vname, "options": opts,
                           **one_run(name, opts, seed, args.chains, args.warmup, args.draws)}
                    f.write(json.dumps(row) + "\n")
                    f.flush()
                    print(f"{name:22s} {vname:10s} seed {seed}: "
                          f"{row['min_ess_per_kgrad']:6.1f} sampling, "
                          f"{row['min_ess_per_kgrad_incl_warmup']:6.1f} with warm-up "
                          f"(warm-up {row['kgrad_warmup']:.0f}k, sampling "
                          f"{row['kgrad_sampling']:.0f}k grads), z {row.get('z_max', 0):.1f}, "
                          f"{row['end_to_end_s']:.0f}s, {row['warmup_transitions']} warm-up "
                          "transitions", flush=True)


if __name__ == "__main__":
    main()
