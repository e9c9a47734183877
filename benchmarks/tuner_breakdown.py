"""Where the AHMC tuner's host time goes inside a run (docs/tuning.md, docs/logistic_ess.md).

Runs `bomcmc.sample(sampler="ahmc")` on a logistic regression with the logistic benchmark's
settings (10 chains, 1000 + 5000, float64, ε ∈ [0.01, 0.2], L ∈ {1..100}; Wang, Mohamed &
de Freitas 2013 §5.1) and times, in this process only, the tuner's methods, the GP's, DIRECT
and the polish.

    python benchmarks/tuner_breakdown.py --dataset heart
    python benchmarks/tuner_breakdown.py --dataset heart --no-blas-limit   # BLAS threads on
    python benchmarks/tuner_breakdown.py --dataset heart --reward-twice    # cold vs warm host

"move outside proposals" is the BO step's coin flip and bookkeeping; "--reward-twice"
computes each chunk's reward a second time right after the first, to show how much slower
the host's first numpy calls after a compiled chunk are.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import time

PC = time.perf_counter


def instrument(no_blas_limit: bool, reward_twice: bool):
    from bomcmc.tuning.ahmc_tuner import AHMCTuner
    from bomcmc.tuning import acquisition, rewards
    from bomcmc.tuning import bandit, gp_bandit as gb
    from bomcmc.tuning.gp import GaussianProcess

    seconds, calls = collections.defaultdict(float), collections.Counter()

    def wrap(owner, name, label):
        orig = getattr(owner, name)

        def timed(*a, **k):
            t0 = PC()
            try:
                return orig(*a, **k)
            finally:
                seconds[label] += PC() - t0
                calls[label] += 1

        setattr(owner, name, timed)

    wrap(AHMCTuner, "after_chunk", "after_chunk (all tuner work)")
    wrap(gb.GPBanditTuner, "move", "move")
    wrap(bandit, "propose", "propose")
    wrap(gb.GPBanditTuner, "observe", "observe")
    wrap(GaussianProcess, "add", "GP add")
    wrap(GaussianProcess, "_factor", "GP factor")
    wrap(acquisition, "direct", "DIRECT")
    wrap(acquisition, "minimize", "polish (L-BFGS-B)")
    if no_blas_limit:
        bandit.one_blas_thread = contextlib.nullcontext
    if reward_twice:
        orig = rewards.REWARDS["esjd"]

        def esjd(chunk):
            t0 = PC()
            r = orig(chunk)
            t1 = PC()
            orig(chunk)
            seconds["reward, first call"] += t1 - t0
            seconds["reward, second call"] += PC() - t1
            calls["reward, first call"] += 1
            calls["reward, second call"] += 1
            return r

        rewards.REWARDS["esjd"] = esjd
    return seconds, calls


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="heart",
                    choices=("australian", "german", "heart", "pima", "ripley"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-blas-limit", action="store_true")
    ap.add_argument("--reward-twice", action="store_true")
    args = ap.parse_args(argv)
    seconds, calls = instrument(args.no_blas_limit, args.reward_twice)

    import bomcmc

    t0 = PC()
    res = bomcmc.sample(posterior=f"logistic-{args.dataset}", sampler="ahmc", chains=10,
                        draws=5000, warmup=1000, seed=args.seed, progress=False, float64=True,
                        eps_bounds=(0.01, 0.2), steps_bounds=(1, 100), mass="diag")
    t = res.totals
    print(f"logistic-{args.dataset}: end to end {PC() - t0:.2f} s, warm-up + sampling "
          f"{t['wall_s'] + t['wall_s_warmup']:.2f} s, tuner {t.get('tuner_s', float('nan')):.3f} s")
    seconds["move outside proposals"] = seconds["move"] - seconds["propose"]
    calls["move outside proposals"] = calls["move"]
    for label in sorted(seconds):
        n = calls[label]
        print(f"  {label:30s} {seconds[label]:8.4f} s  {n:5d} calls  "
              f"{1e6 * seconds[label] / max(n, 1):8.1f} µs/call")


if __name__ == "__main__":
    main()
