#!/usr/bin/env python
"""How noisy the bandit's reward is on Dexter: the ten fold networks' held-out
misclassification of one super-transition's draws (`bnn.cv.cv_reward`, whose reward is 1 / this
error), repeated at fixed settings (η, L) from one burned-in state.

    python experiments/dexter_reward_noise.py --out benchmarks/results/dexter-reward-noise.json

A chain of Neal's scheme (η = 0.1, L = 500) on `experiments/dexter.py`'s networks (295-20-8-2,
300 training documents, 30 held out per fold) is burned in for `--burn` gradients. From its
last state each setting runs `--supers` super-transitions of `--steps` leapfrog steps, and
each super-transition's held-out error (mean over the ten folds) is recorded, with its
divergences: any divergence makes the bandit's reward 0.

Reported per setting: the mean and sd of the error over its super-transitions, the share of
super-transitions the bandit would score 0, and the acceptance; overall, the sd of the
settings' mean errors against the typical within-setting sd (the signal the bandit has to find
against the noise of one reward). The binomial sd of an error rate p on 300 held-out documents,
sqrt(p(1 − p) / 300), is given for scale: the draws of one super-transition average the
networks' probabilities, so the documents' errors are not independent coin flips.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bomcmc  # noqa: E402
from bomcmc.bnn.samplers import neal_sampler  # noqa: E402
from dexter import BUDGETS, build, chain_draws, data  # noqa: E402

SETTINGS = ((0.02, 100), (0.05, 200), (0.1, 500), (0.2, 500), (0.3, 100), (0.1, 20))


def neal_run(cv, post, eta: float, L: int, draws: int, seed: int):
    res = bomcmc.sample(posterior=post, sampler=neal_sampler(cv), chains=1, draws=draws,
                        warmup=0, adapt=None, step_size=eta, steps=L, seed=seed,
                        progress=False, checks=False)
    ss = res.idata.sample_stats
    return chain_draws(res), np.asarray(ss["diverging"].values[0]), np.asarray(
        ss["acceptance_rate"].values[0])


def per_super(cv, error_fn, flat, diverging, per: int) -> tuple[list, list]:
    """Held-out error (mean over folds) and divergence count of each super-transition."""
    errs, divs = [], []
    for i in range(0, len(flat) - per + 1, per):
        errs.append(float(np.mean(error_fn(flat[i:i + per]))))
        divs.append(int(diverging[i:i + per].sum()))
    return errs, divs


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--burn", type=int, default=40000, help="burn-in gradients (η 0.1, L 500)")
    ap.add_argument("--supers", type=int, default=8, help="super-transitions per setting")
    ap.add_argument("--steps", type=int, default=2000, help="leapfrog steps per super-transition")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget", choices=("small", "default"), default="default",
                    help="the networks' size: 'small' checks the pipeline")
    args = ap.parse_args(argv)
    budget = BUDGETS[args.budget]
    X, y, Xv, _ = data(budget)
    cv, _ = build(budget, X, y, Xv)
    error_fn = cv.heldout_error_fn()
    t0 = time.time()
    flat, _, _ = neal_run(cv, cv.posterior(), 0.1, 500, max(1, args.burn // 500), args.seed)
    start = cv.unravel(flat[-1])
    report = {"burn_gradients": args.burn, "steps": args.steps, "supers": args.supers,
              "seed": args.seed, "budget": args.budget, "held_out": int(
                  np.sum(1.0 - np.asarray(cv.masks))), "settings": []}
    for i, (eta, L) in enumerate(SETTINGS):
        per = max(1, args.steps // L)
        flat, div, acc = neal_run(cv, cv.posterior(init=start), eta, L, per * args.supers,
                                  args.seed + 1 + i)
        errs, divs = per_super(cv, error_fn, flat, div, per)
        row = {"eta": eta, "L": L, "errors": errs, "divergences": divs,
               "mean": float(np.mean(errs)), "sd": float(np.std(errs, ddof=1)),
               "zero_reward_share": float(np.mean(np.asarray(divs) > 0)),
               "accept_mean": float(np.mean(acc))}
        report["settings"].append(row)
        print(f"eta {eta} L {L}: error {row['mean']:.4f} ± {row['sd']:.4f} (sd over "
              f"{len(errs)}), zero rewards {row['zero_reward_share']:.2f}, acceptance "
              f"{row['accept_mean']:.2f}, {time.time() - t0:.0f} s", flush=True)
    means = np.array([r["mean"] for r in report["settings"]])
    sds = np.array([r["sd"] for r in report["settings"]])
    p = float(means.mean())
    report["summary"] = {"between_settings_sd": float(means.std(ddof=1)),
                         "within_setting_sd_median": float(np.median(sds)),
                         "binomial_sd": float(np.sqrt(p * (1 - p) / report["held_out"]))}
    print(json.dumps(report["summary"]), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
