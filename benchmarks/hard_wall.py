"""Samplers at a hard wall: a log density that is −∞ or NaN beyond a boundary (docs/defaults.md,
"Divergences at a hard boundary").

    python benchmarks/hard_wall.py halfnormal [--broken] [--seeds 6]
    python benchmarks/hard_wall.py gamma --sampler nuts [--seeds 6]
    python benchmarks/hard_wall.py box --sampler ahmc [--seeds 3] [--warmup 2000 --draws 2000]

`halfnormal`: `ahmc` at its defaults (4 chains × 1000 draws, float64) on x ~ N(0, 1) on
x > 0 written `jnp.where(x > 0, -x²/2, -inf)`: divergences, bulk ESS, R-hat, mean step size
and the mean against sqrt(2/π). `--broken` counts a proposal beyond the wall as a divergence,
as before `hmc.beyond_a_wall`.

`gamma`: a Gamma(2, 1) density written `log x - x` (NaN for x < 0) and the same sampled as
y = log x (`2y - e^y`), 2 chains × 200 draws: the divergences of each, and the boundary the
run found (`totals["boundary"]`).

`box`: the uniform density on (0, 1)³ written `jnp.where(inside, 0, -inf)`, 4 chains × 1000
draws (`--warmup`, `--draws`): divergences, max R-hat, min bulk ESS, the means (truth 0.5)
and variances (1/12).
"""

from __future__ import annotations

import argparse
import warnings

import arviz as az
import jax.numpy as jnp
import numpy as np

import bomcmc
from bomcmc.kernels import hmc


def halfnormal(seeds: int) -> None:
    def wall(p):
        return jnp.where(p["x"] > 0, -0.5 * p["x"] ** 2, -jnp.inf)

    for seed in range(seeds):
        r = bomcmc.sample(wall, {"x": np.array(1.0)}, sampler="ahmc", chains=4, draws=1000,
                          seed=seed, float64=True, progress=False)
        x = np.asarray(r.idata.posterior["x"])
        print(f"seed {seed}: divergences {r.totals['divergences']}, bulk ESS "
              f"{float(az.ess(r.idata)['x']):.0f}, R-hat {float(az.rhat(r.idata)['x']):.3f}, "
              f"step size {float(np.mean(r.idata.sample_stats['step_size'])):.4f}, mean "
              f"{x.mean():.3f} (truth {np.sqrt(2 / np.pi):.3f})", flush=True)


def gamma(seeds: int, sampler: str) -> None:
    def wall(p):
        return jnp.log(p["x"]) - p["x"]

    def transformed(p):
        return 2 * p["y"] - jnp.exp(p["y"])

    for seed in range(seeds):
        kw = dict(sampler=sampler, chains=2, draws=200, seed=seed, progress=False)
        before = bomcmc.sample(wall, {"x": np.array(1.0)}, **kw)
        after = bomcmc.sample(transformed, {"y": np.array(0.0)}, **kw)
        found = [(b["name"], b["side"]) for b in before.totals.get("boundary", [])]
        print(f"{sampler} seed {seed}: at the wall {before.totals['divergences']} divergences, "
              f"boundary {found}; after the transform {after.totals['divergences']}",
              flush=True)


def box(seeds: int, sampler: str, warmup="auto", draws: int = 1000) -> None:
    def inside(p):
        return jnp.where(jnp.all((p["x"] > 0) & (p["x"] < 1)), 0.0, -jnp.inf)

    for seed in range(seeds):
        r = bomcmc.sample(inside, {"x": np.full(3, 0.5)}, sampler=sampler, chains=4,
                          warmup=warmup, draws=draws, seed=seed, progress=False)
        x = np.asarray(r.idata.posterior["x"])
        print(f"{sampler} seed {seed}: divergences {r.totals['divergences']}, max R-hat "
              f"{float(az.rhat(r.idata)['x'].max()):.3f}, min bulk ESS "
              f"{float(az.ess(r.idata)['x'].min()):.0f}, means {np.round(x.mean((0, 1)), 3)}, "
              f"variances {np.round(x.var((0, 1)), 4)} (truth 0.5, {1 / 12:.4f})", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("case", choices=("halfnormal", "gamma", "box"))
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--sampler", default="ahmc")
    ap.add_argument("--warmup", default="auto", help="box: the warm-up (default: auto)")
    ap.add_argument("--draws", type=int, default=1000, help="box: draws per chain")
    ap.add_argument("--broken", action="store_true",
                    help="count a proposal beyond the wall as a divergence")
    a = ap.parse_args()
    if a.broken:
        hmc.beyond_a_wall = lambda end, kinetic_change, max_energy_error: jnp.zeros((), bool)
    warnings.simplefilter("ignore")  # the runs' warnings are what is measured, not shown
    if a.case == "halfnormal":
        halfnormal(a.seeds)
    elif a.case == "gamma":
        gamma(a.seeds, a.sampler)
    else:
        box(a.seeds, a.sampler, a.warmup if a.warmup == "auto" else int(a.warmup), a.draws)


if __name__ == "__main__":
    main()
