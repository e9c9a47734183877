"""Margins of the correctness suite: how far each sampler's worst error sits from its bound.

    python experiments/suite_margins.py --samplers nuts,ahmc --seeds 0-5 > margins.jsonl

For each posterior with a reference (the posteriordb reference posteriors and the hard
posteriors with exact moments, `bomcmc posteriors`) and each seed: 4 chains, 1000 warm-up +
1000 draws, float64, the sampler's defaults; prints one JSON line with the worst |z| of a mean
(bound 4, in combined MCSE), the worst relative sd error (bound 0.10), the divergences and
the warnings the run raised. Reference values and the comparison are tests/reference.py's.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import bomcmc  # noqa: E402
from bomcmc import models  # noqa: E402
from bomcmc.models import posteriordb as pdb  # noqa: E402
from reference import compare, worst  # noqa: E402

HARD = ["regression-year", "regression-correlated", "gauss-100-corr", "ridge-2d"]
EXPECT_WARNING = ["funnel-10", "eight_schools-eight_schools_centered"]


def exact_reference(post) -> dict:
    """{name: {mean, sd, mcse_mean=0}} from a posterior's exact moments (1-based names)."""
    mean, cov = np.asarray(post.mean), np.asarray(post.cov)
    key = next(iter(post.init_position)) if isinstance(post.init_position, dict) else "x"
    return {f"{key}[{i + 1}]": {"mean": float(mean[i]), "sd": float(np.sqrt(cov[i, i])),
                            "mcse_mean": 0.0} for i in range(mean.size)}


def draws_of(idata) -> dict:
    return pdb.flatten_idata(idata)


def one(name, sampler, seed):
    post = models.get(name)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = bomcmc.sample(posterior=name, sampler=sampler, chains=4, warmup=1000,
                            draws=1000, seed=seed, float64=True, progress=False)
    found = [str(w.message).split(" ")[0] for w in caught
             if w.category.__name__ == "SamplingWarning"]
    out = {"posterior": name, "sampler": sampler, "seed": seed,
           "divergences": int(res.totals["divergences"]), "warnings": found,
           "seconds": round(time.perf_counter() - t0, 1)}
    if name in EXPECT_WARNING:
        return out
    ref = exact_reference(post) if post.cov is not None else pdb.reference(name)
    z, sd = worst(compare(draws_of(res.idata), ref))
    out.update(max_z=round(z, 3), max_sd_err=round(sd, 4),
               z_margin=round(4.0 - z, 3), sd_margin=round(0.10 - sd, 4))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--samplers", default="nuts,ahmc")
    p.add_argument("--seeds", default="0-2")
    p.add_argument("--posteriors", default=None, help="comma-separated (default: all)")
    a = p.parse_args(argv)
    lo, _, hi = a.seeds.partition("-")
    seeds = range(int(lo), int(hi or lo) + 1)
    names = (a.posteriors.split(",") if a.posteriors else
             [n for n in pdb.NAMES if pdb.has_reference(n)
              and n != "eight_schools-eight_schools_centered"] + HARD + EXPECT_WARNING)
    for sampler in a.samplers.split(","):
        for name in names:
            for seed in seeds:
                print(json.dumps(one(name, sampler, seed)), flush=True)


if __name__ == "__main__":
    main()
