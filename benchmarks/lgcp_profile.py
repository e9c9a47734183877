#!/usr/bin/env python
"""Where a step of NUTS on the LGCP with σ² and μ sampled goes, float64 (docs/rmhmc.md, "Not
done yet": on one H200 a step of ten vmapped chains of `lgcp-hyper-nc-64` cost at most
1.93 ms, too slow for the paper's protocol in one loan, and nobody knew why). In µs per step
of all the chains together:

- `grad`: the vmapped log density and gradient alone, in one compiled loop;
- `leapfrog`: `kernels.integrators.leapfrog` on it, vmapped (the integrator's own work);
- both again `without_barrier`: the flat log density as it was before bomcmc.posterior put
  its leaves through an optimisation barrier (`_BARRIER` there);
- `nuts`: bomcmc's NUTS through `bomcmc.sample` at a fixed step size (no warm-up): the
  sampling seconds per step of the batch, and the batch's waste, Σ_t max_c n_ct / Σ_t mean_c
  n_ct (vmapped chains wait for the longest trajectory of each transition);
- with `--trace`, a profiler trace of `leapfrog` (`OUT/trace/`), summarised as the device's
  busy time per step and its ten costliest operations.

    python benchmarks/lgcp_profile.py --side 64 --trace --out OUT        # on a GPU
    python benchmarks/lgcp_profile.py --side 16 --out /tmp/lgcp-profile  # the pipeline

Writes OUT/lgcp-profile.json and prints one line per measurement.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bomcmc  # noqa: E402
from benchmarks.harness.timing import gradient_loops, trace_steps  # noqa: E402
from bomcmc import models  # noqa: E402
from bomcmc.posterior import flatten  # noqa: E402


def loops(post, chains: int, n: int) -> tuple[dict, callable, tuple]:
    """µs per vmapped gradient and per vmapped leapfrog step of `chains` chains, each in one
    compiled loop of n, the data entering as the programs' inputs as in a run."""
    flat = flatten(post)
    x0 = flat.init_flat(jax.random.PRNGKey(0), chains, 1.0)
    found, steps, args = gradient_loops(flat.logdensity_fn, x0, n, data=post.data,
                                        grad_eps=1e-6, step_eps=1e-4)
    plain, _, _ = gradient_loops(lambda x: post.logdensity_fn(flat.unravel(x)), x0, n,
                                 data=post.data, grad_eps=1e-6, step_eps=1e-4)
    return {"chains": chains, **found, "without_barrier": plain}, steps, args


def nuts(post, chains: int, draws: int, step_size: float) -> dict:
    """bomcmc's NUTS at a fixed step size: sampling seconds per step of the batch, and how
    many of the batch's steps were waits for another chain's longer trajectory."""
    r = bomcmc.sample(posterior=post, sampler="nuts", chains=chains, draws=draws, warmup=0,
                      adapt=None, step_size=step_size, float64=True, progress=False,
                      checks=False)
    n = np.asarray(r.idata.sample_stats["n_steps"])  # (chains, draws)
    batch_steps = float(n.max(axis=0).sum())
    return {"chains": chains, "draws": draws, "step_size": step_size,
            "wall_s": r.totals["wall_s"], "compile_s": r.totals["compile_s"],
            "steps_per_transition": float(n.mean()),
            "us_per_batch_step": r.totals["wall_s"] / batch_steps * 1e6,
            "batch_waste": batch_steps / float(n.mean(axis=0).sum()),
            "accept": float(np.asarray(r.idata.sample_stats["acceptance_rate"]).mean())}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--side", type=int, default=64)
    ap.add_argument("--posterior", default="lgcp-hyper-nc",
                    help="the family: lgcp, lgcp-hyper or lgcp-hyper-nc")
    ap.add_argument("--chains", type=int, default=10)
    ap.add_argument("--loop", type=int, default=200, help="steps in each compiled loop")
    ap.add_argument("--draws", type=int, default=30, help="NUTS transitions")
    ap.add_argument("--step-size", type=float, default=0.05)
    ap.add_argument("--trace", action="store_true")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    post = models.get(f"{args.posterior}-{args.side}")
    report = {"device": str(jax.devices()[0].device_kind), "jax": jax.__version__,
              "posterior": post.name, "build_s": time.perf_counter() - t}

    def save(key, value):
        report[key] = value
        print(key, json.dumps(value), flush=True)
        (out_dir / "lgcp-profile.json").write_text(json.dumps(report, indent=1))

    found, steps, loop_args = loops(post, args.chains, args.loop)
    save("loops", found)
    if args.trace:
        save("trace", trace_steps(steps, loop_args, 50, out_dir / "trace"))
    save("nuts", nuts(post, args.chains, args.draws, args.step_size))
    return report


if __name__ == "__main__":
    main()
