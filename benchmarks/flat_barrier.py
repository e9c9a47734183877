#!/usr/bin/env python
"""The flat log density with and without its optimisation barrier (bomcmc.posterior,
`_BARRIER`), side by side in one process: µs per vmapped gradient and per vmapped leapfrog
step, each in one compiled loop, twice per posterior (docs/rmhmc.md, "At the paper's size on
a GPU": on an H200 the barrier made the LGCP's leapfrog step 3.5× faster; this checks that it
costs nothing elsewhere).

    python benchmarks/flat_barrier.py sv-2000 radon_mn-radon_hierarchical_intercept_noncentered \\
        eight_schools-eight_schools_noncentered funnel-10 [--chains 8] [--loop 500]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness.timing import gradient_loops  # noqa: E402
from bomcmc import models  # noqa: E402
from bomcmc.posterior import flatten  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("posteriors", nargs="+")
    ap.add_argument("--chains", type=int, default=8)
    ap.add_argument("--loop", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args(argv)
    for name in args.posteriors:
        post = models.get(name)
        flat = flatten(post)
        x0 = flat.init_flat(jax.random.PRNGKey(0), args.chains, 1.0)
        for _ in range(args.repeats):
            with_it, _, _ = gradient_loops(flat.logdensity_fn, x0, args.loop, data=post.data)
            without, _, _ = gradient_loops(lambda x: post.logdensity_fn(flat.unravel(x)), x0,
                                           args.loop, data=post.data)
            print(f"{name}: with the barrier grad {with_it['grad_us']:.2f} µs, leapfrog "
                  f"{with_it['leapfrog_us']:.2f} µs; without grad {without['grad_us']:.2f} "
                  f"µs, leapfrog {without['leapfrog_us']:.2f} µs", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
