#!/usr/bin/env python
"""Where a Dexter super-transition's time goes: the ten 295-20-8-2 fold networks of
`experiments/dexter.py` (issue 34: make the paper's budget of 3.2 million gradients
affordable), in µs per gradient of one chain:

- `grad`: the weights' conditional log density and its gradient alone, in a compiled loop;
- `leapfrog`: `kernels.integrators.leapfrog` on it (the integrator's own work on top);
- `transition_C`: Neal's Gibbs-within-HMC at η = 0.1, L = 500 through `bomcmc.sample`, C
  chains (sampling seconds over the gradients of one chain: what C seeds side by side cost);
- `ahmc_cv`: `experiments/dexter.py`'s `ahmc_cv` for a few super-transitions: sampling seconds,
  the tuner's host seconds (the held-out reward and the GP), and the scoring of the kept draws
  after the run (`score_s`);
- `score`: scoring 53 draws of the ten networks by their vote, first and later calls;
- with `--trace`, a profiler trace of `leapfrog` (`OUT/trace/`), summarised as the device's
  busy time per step and its ten costliest operations (`kernels`).

    python benchmarks/dexter_profile.py --out /tmp/dexter-profile            # on a GPU
    python benchmarks/dexter_profile.py --size small --out /tmp/dexter-profile  # the pipeline

Writes OUT/dexter-profile.json and prints one line per measurement.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bomcmc  # noqa: E402
from benchmarks.harness.timing import gradient_loops as timing_loops  # noqa: E402
from benchmarks.harness.timing import trace_steps  # noqa: E402
from bomcmc.bnn.samplers import neal_sampler  # noqa: E402
from dexter import BUDGETS, build, data, errors, fold_vote, kept, run  # noqa: E402


def conditional(cv, dtype):
    """(weights w0, log p(w | τ) as a function of w) at the run's starting point."""
    post = cv.posterior()
    flat = jnp.asarray(cv.ravel(post.init_position), dtype)
    hyper, w0 = flat[:cv.n_hyper], flat[cv.n_hyper:]

    def cond(w):
        return cv.logdensity(cv.unravel(jnp.concatenate([hyper, w])))

    return w0, cond


def gradient_loops(cv, n: int, dtype) -> tuple[dict, callable, tuple]:
    """µs per gradient alone and per leapfrog step of the weights' conditional, each in one
    compiled loop of n (`harness.timing.gradient_loops`)."""
    w0, cond = conditional(cv, dtype)
    return timing_loops(cond, w0, n)


def transitions(cv, chains: int, draws: int, steps: int) -> dict:
    """Neal's transition at η = 0.1, L = steps through `bomcmc.sample`."""
    r = bomcmc.sample(posterior=cv.posterior(), sampler=neal_sampler(cv), chains=chains,
                      draws=draws, warmup=0, adapt=None, step_size=0.1, steps=steps,
                      progress=False, checks=False)
    t = r.totals
    return {"us_per_chain_grad": t["wall_s"] / (t["n_grad"] / chains) * 1e6,
            "wall_s": t["wall_s"], "compile_s": t["compile_s"],
            "wall_s_total": t["wall_s_total"], "grads_per_chain": t["n_grad"] / chains}


def ahmc_cv(cv, budget: dict, valid, yv) -> dict:
    res, max_grad = run("ahmc_cv", cv, budget, seed=0)
    t = res.totals
    t0 = time.perf_counter()
    draws = kept(res, max_grad)
    scores = errors(cv, draws, valid, yv)
    return {"us_per_grad": t["wall_s"] / t["n_grad"] * 1e6, "wall_s": t["wall_s"],
            "tuner_s": t["tuner_s"], "compile_s": t["compile_s"],
            "wall_s_total": t["wall_s_total"], "n_grad": t["n_grad"],
            "kept_draws": int(len(draws)), "score_s": time.perf_counter() - t0,
            "vote": scores["vote"]}


def scoring(cv, valid, draws: int = 53, repeat: int = 3) -> dict:
    """Seconds to score `draws` random draws of the ten networks by their vote (`fold_vote`),
    the first call (compilation included) and the best of the later ones."""
    rng = np.random.default_rng(0)
    flat = (0.1 * rng.normal(size=(draws, cv.dim))).astype(np.float32)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fold_vote(cv, flat, valid)
        times.append(time.perf_counter() - t)
    return {"draws": draws, "first_s": times[0], "later_s": min(times[1:])}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", choices=("small", "paper"), default="paper",
                    help="'paper': 295-20-8-2, 300 cases; 'small': the pipeline check")
    ap.add_argument("--out", required=True)
    ap.add_argument("--chains", default="1,3")
    ap.add_argument("--supers", type=int, default=4, help="ahmc_cv's super-transitions")
    ap.add_argument("--trace", action="store_true")
    ap.add_argument("--skip", default="", help="comma-separated parts to leave out")
    args = ap.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    budget = dict(BUDGETS["paper" if args.size == "paper" else "small"])
    budget.update(supers=args.supers, steps=2000 if args.size == "paper" else 200)
    L = 500 if args.size == "paper" else 50
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    X, y, Xv, yv = data(budget)
    cv, valid = build(budget, X, y, Xv)
    dtype = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32
    report = {"device": str(jax.devices()[0].device_kind), "jax": jax.__version__,
              "dtype": jnp.dtype(dtype).name, "size": args.size, "dim": cv.dim}

    def save(key, value):
        report[key] = value
        print(key, json.dumps(value), flush=True)
        (out_dir / "dexter-profile.json").write_text(json.dumps(report, indent=1))

    if "grad" not in skip:
        loops, steps, loop_args = gradient_loops(cv, 1000 if args.size == "paper" else 200, dtype)
        save("loops", loops)
        if args.trace:
            save("trace", trace_steps(steps, loop_args, 100, out_dir / "trace"))
    for c in (int(c) for c in args.chains.split(",") if c):
        if f"transition_{c}" not in skip:
            save(f"transition_{c}", transitions(cv, c, draws=8, steps=L))
    if "score" not in skip:
        save("score", scoring(cv, valid))
    if "ahmc_cv" not in skip:
        save("ahmc_cv", ahmc_cv(cv, budget, valid, yv))
    return report


if __name__ == "__main__":
    main()
