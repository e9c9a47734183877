"""How samplers explore the scale of a posterior without a mode (a funnel), against its known
marginal (docs/tuning.md, "The start on unbounded densities").

    python benchmarks/funnel_scales.py funnel-10 --samplers ahmc,nuts --seeds 0,1,2
    python benchmarks/funnel_scales.py eight_schools-eight_schools_centered --seeds 0,1,2

Per sampler and seed (float64, `--chains` chains, `--warmup` + `--draws`): the scale's mean and
sd against the reference (funnel-10: v ~ N(0, 3²), exact; the centred eight schools: τ from
posteriordb's reference draws of the non-centred model, the same posterior), the mean's
z-score with its MCSE, its 1 % quantile (the neck), min bulk ESS and max R-hat of the scale,
the share of divergent transitions, how many warnings the run printed, and where `ahmc`
started (run.json's `start`). Run on an older commit (PYTHONPATH=that tree's src) for the
before.
"""

from __future__ import annotations

import argparse
import json
import warnings

import numpy as np

# name -> (variable, transform to the reported scale, reference mean, sd, 1 % quantile)
SCALES = {
    "funnel-10": ("v", lambda v: v, 0.0, 3.0, -6.979),
    "eight_schools-eight_schools_centered": ("tau", lambda t: t, 3.602, 3.198, None),
}


def one(name: str, sampler: str, seed: int, chains: int, warmup: int, draws: int) -> dict:
    import arviz as az
    import bomcmc

    var, transform, _, _, _ = SCALES[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", bomcmc.SamplingWarning)
        r = bomcmc.sample(posterior=name, sampler=sampler, chains=chains, warmup=warmup,
                          draws=draws, seed=seed, progress=False)
    x = transform(np.asarray(r.idata.posterior[var].values, float))
    div = np.asarray(r.idata.sample_stats["diverging"].values, bool)
    def scalar(v) -> float:
        return float(np.squeeze(np.asarray(v)))

    return {"sampler": sampler, "seed": seed, "mean": float(x.mean()), "sd": float(x.std()),
            "mcse": scalar(az.mcse(x, method="mean")), "q01": float(np.quantile(x, 0.01)),
            "ess_bulk": scalar(az.ess(x, method="bulk")), "rhat": scalar(az.rhat(x)),
            "divergent": float(div.mean()), "chain_means": np.round(x.mean(axis=1), 2).tolist(),
            "warnings": sum(issubclass(w.category, bomcmc.SamplingWarning) for w in caught),
            "start": r.totals.get("start", "")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("posterior", choices=sorted(SCALES))
    ap.add_argument("--samplers", default="ahmc,nuts")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--out", default=None, help="a JSON file for the rows")
    a = ap.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    _, _, mean, sd, q01 = SCALES[a.posterior]
    print(f"{a.posterior}: reference mean {mean}, sd {sd}" + (f", 1 % quantile {q01}"
                                                              if q01 is not None else ""))
    rows = []
    for sampler in a.samplers.split(","):
        for seed in (int(s) for s in a.seeds.split(",")):
            row = one(a.posterior, sampler, seed, a.chains, a.warmup, a.draws)
            rows.append(row)
            z = (row["mean"] - mean) / row["mcse"]
            print(f"{sampler} seed {seed}: mean {row['mean']:.3f} (z {z:+.2f}), sd "
                  f"{row['sd']:.3f}, q01 {row['q01']:.2f}, bulk ESS "
                  f"{row['ess_bulk']:.0f}, R-hat {row['rhat']:.3f}, divergent "
                  f"{row['divergent']:.1%}, chain means {row['chain_means']}, warnings "
                  f"{row['warnings']}, start {row['start'] or '-'}", flush=True)
    if a.out:
        with open(a.out, "w") as fh:
            json.dump({"posterior": a.posterior, "argv": vars(a), "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
