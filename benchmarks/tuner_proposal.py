"""The GP bandit's cost per proposal (GP factorisation + acquisition maximisation) against the
number of distinct GP points (docs/tuning.md, "Measured").

A GP over the logistic benchmark's box (ε ∈ [0.01, 0.2] on a log scale, L ∈ {1, …, 100};
Wang, Mohamed & de Freitas 2013 §5.1) is filled with n distinct points of a smooth synthetic
reward plus noise, and `GPBanditTuner.propose` is timed from a fresh factorisation, as in a
run (every proposal follows a new observation). Reported: the median and the minimum over blocks of
`--calls` proposals, in ms per proposal, wall and CPU.

    python benchmarks/tuner_proposal.py                 # n = 10 50 100 140 200 400
    python benchmarks/tuner_proposal.py --points 140 --blocks 9
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from bomcmc.tuning import bandit
from bomcmc.tuning.gp_bandit import GPBanditTuner

VARIANTS = {
    "UCB, grid + Brent (ahmc's default)": dict(acquisition="ucb", polish=True, search="grid"),
    "UCB, DIRECT + L-BFGS-B (gp_bandit's default)": dict(acquisition="ucb", polish=True),
    "UCB, DIRECT only": dict(acquisition="ucb", polish=False),
    "EI, DIRECT + L-BFGS-B": dict(acquisition="ei", polish=True),
}


def filled_tuner(n: int, seed: int = 0, **options) -> GPBanditTuner:
    rng = np.random.default_rng(seed)
    tuner = GPBanditTuner(eps_bounds=(0.01, 0.2), steps_bounds=(1, 100), seed=seed, **options)
    tuner.reset_gp()
    lo, hi = tuner.lower, tuner.upper
    while len(tuner.gp.X) < n:
        x = lo + (hi - lo) * rng.random(2)
        x[1] = round(x[1])
        r = 1.0 + math.sin(3 * x[0]) * math.cos(x[1] / 30) + 0.1 * rng.standard_normal()
        tuner.bandit = bandit.observe(tuner.bandit, x, r)  # the GP and max_j r_j
    tuner.bandit = tuner.bandit._replace(i=n, point=(math.log(0.01), 1))
    return tuner


def time_proposals(tuner: GPBanditTuner, calls: int, blocks: int) -> dict:
    tuner.propose(0.3)  # imports, first-call costs
    wall, cpu = [], []
    for _ in range(blocks):
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(calls):
            tuner.gp._chol = tuner.gp._parts = None  # a fresh factorisation, as after an add
            tuner.propose(0.3)
        wall.append((time.perf_counter() - w0) / calls * 1e3)
        cpu.append((time.process_time() - c0) / calls * 1e3)
    return {"wall_median": float(np.median(wall)), "wall_min": float(np.min(wall)),
            "cpu_median": float(np.median(cpu))}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, nargs="+", default=[10, 50, 100, 140, 200, 400])
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--blocks", type=int, default=5)
    args = ap.parse_args(argv)
    header = "| variant | " + " | ".join(f"{n} points" for n in args.points) + " |"
    print(header)
    print("|---" * (len(args.points) + 1) + "|")
    for name, opts in VARIANTS.items():
        cells = []
        for n in args.points:
            t = time_proposals(filled_tuner(n, **opts), args.calls, args.blocks)
            cells.append(f"{t['wall_median']:.2f} ms ({t['cpu_median']:.2f} CPU)")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
