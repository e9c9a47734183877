"""Are a sampler's z values N(0, 1)? The calibration behind a correctness bound.

    python experiments/z_calibration.py regression-correlated '{}' 12 40 > z.jsonl

For each seed in [first, last): `ahmc` with the given options (JSON), 4 chains, 1000 warm-up
+ 1000 draws, float64 (the correctness suite's settings); one JSON line with the z value of
every mean against the posterior's exact mean, z = (x̄ − μ) / MCSE (ArviZ's MCSE of the
mean, as the suite's combined MCSE when the reference is exact). Then, e.g.,
`python -c "import json,numpy as n; z=n.array([json.loads(l)['z'] for l in open('z.jsonl')]);
print(z.std(), abs(z).max())"`: sd near 1 and a maximum as N(0, 1) would give say the bound
fails by chance, not by bias.
"""

import json
import sys
import warnings

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

import arviz as az  # noqa: E402
import bomcmc  # noqa: E402
from bomcmc import models  # noqa: E402


def main(name: str, options: str, first: int, last: int) -> None:
    warnings.simplefilter("ignore")
    opts = json.loads(options)
    mean = np.asarray(models.get(name).mean)
    for seed in range(first, last):
        res = bomcmc.sample(posterior=name, sampler="ahmc", chains=4, warmup=1000, draws=1000,
                            seed=seed, float64=True, progress=False, **opts)
        var = list(res.idata.posterior.data_vars)[0]
        x = np.asarray(res.idata.posterior[var]).reshape(4, 1000, -1)
        mcse = np.asarray(az.mcse(az.convert_to_dataset(x))["x"])
        z = (x.mean((0, 1)) - mean) / mcse
        print(json.dumps({"posterior": name, "options": opts, "seed": seed,
                          "z": np.round(z, 3).tolist()}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
