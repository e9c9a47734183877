"""The AHMC bandit's GP, full (reset at each metric update) against Engel's (2005) sparse
ALD-dictionary GP (never reset): host cost per BO step, and ESS per gradient
(docs/tuning.md, "The sparse GP").

cost: an `AHMCTuner` (8 chains, burn-in of k = 100 BO steps with its metric updates, then
the paper's annealed adaptation) fed fake chunks whose reward is a synthetic function of
(ε, L) plus noise, for --steps BO steps (--power P: p_i = i^−P, an adaptation that
vanishes more slowly, so more proposals and more distinct inputs). Recorded per BO step:
the CPU seconds of `after_chunk` (everything the tuner does: the reward, the GP, the
proposal when the coin says so; CPU time, as the machine is shared), the GP's size
(distinct inputs or dictionary) and whether a proposal was made. Writes JSON; --plot
draws the runs' JSON files into one PNG.

    python experiments/sparse_gp.py cost --steps 10000 --out /tmp/sgp_cost.json \
        --png /tmp/sgp_cost.png
    python experiments/sparse_gp.py cost --steps 10000 --power 0.25 --out /tmp/sgp_p25.json
    python experiments/sparse_gp.py cost --plot /tmp/sgp_cost.json /tmp/sgp_p25.json \
        --png docs/figures/sparse_gp_cost.png

ess: `bomcmc.sample(sampler="ahmc")` per posterior, seed and variant, scored as
`experiments/ahmc_warmup_ab.py` scores it (min bulk ESS per 1000 gradients). Variants:
"reset" (the default, full GP reset at the metric updates), "sparse" (gp="sparse": kept)
and "kept" (the full GP kept: `bandit.new_epoch_gp` patched to `refit_gp`), to tell the
sparsification from the reset.

    python experiments/sparse_gp.py ess --posteriors logistic-german --seeds 0,1 \
        --chains 16 --warmup 1000 --draws 2000 --out /tmp/sgp_ess.jsonl
    python experiments/sparse_gp.py table --out /tmp/sgp_ess.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))
sys.path.insert(0, str(ROOT))


def synthetic_reward(eps: float, L: float, rng) -> float:
    """An ESJD/√L-like surface: a ridge in log ε around 0.05, rising in L up to ~20, noisy."""
    ridge = math.exp(-((math.log(eps) - math.log(0.05)) ** 2) / 0.5)
    return ridge * (1 - math.exp(-L / 20)) * 2 + 0.05 * float(rng.normal())


def cost_run(gp: str, steps: int, seed: int, power: float | None = None) -> dict:
    from bomcmc.kernels.hmc import HMCKnobs
    from bomcmc.tuning import ahmc_tuner

    rng = np.random.default_rng(seed)
    schedule = {} if power is None else {"schedule": "power", "power": power}
    tuner = ahmc_tuner.AHMCTuner(warmup=1000, bo_steps=100, mass="diag", gp=gp, seed=seed,
                                 eps_bounds=(1e-3, 1.0), **schedule)
    tuner.reward_fn = lambda chunk: synthetic_reward(chunk["step_size"], chunk["num_steps"],
                                                     rng)
    chains, dim = 8, 3
    knobs = tuner.initial_knobs(HMCKnobs(
        step_size=np.full(chains, 0.1), num_steps=np.full(chains, 10, np.int32),
        inverse_mass_matrix=np.ones((chains, dim)), random_steps=np.ones(chains, bool)))
    seconds, size, proposed = [], [], []
    for i in range(1, steps + 1):
        d = tuner.chunk_draws(knobs, 10_000)
        chunk = {"phase": 0 if i <= tuner.burn_end else 1,
                 "positions": rng.normal(size=(chains, d, dim)),
                 "info": {"esjd": np.ones((chains, d)), "n_grad": np.ones((chains, d))}}
        t0 = time.process_time()  # CPU seconds: the machine is shared, its wall time noisy
        knobs = tuner.after_chunk(knobs, chunk)
        seconds.append(time.process_time() - t0)
        size.append(len(tuner.gp.X))
        proposed.append(bool(tuner.history[-1]["proposed"]))
    return {"gp": gp, "power": power, "seconds": seconds, "size": size, "proposed": proposed,
            "n_obs": tuner.gp.n_obs, "best": tuner.best()}


def cost(args) -> None:
    if args.plot:
        plot([r for f in args.plot for r in json.loads(Path(f).read_text())], args.png)
        return
    runs = [cost_run(gp, args.steps, args.seed, args.power) for gp in ("full", "sparse")]
    Path(args.out).write_text(json.dumps(runs))
    for r in runs:
        s = np.asarray(r["seconds"])
        p = np.asarray(r["proposed"])
        bins = np.array_split(np.arange(len(s)), 10)
        print(f"{r['gp']:6s}: total {s.sum():.1f} s, GP size {r['size'][-1]}, n_obs "
              f"{r['n_obs']}, proposals {p.sum()}; ms per BO step by tenth: "
              + " ".join(f"{1e3 * s[b].mean():.2f}" for b in bins)
              + "; ms per proposal by tenth: "
              + " ".join(f"{1e3 * s[b][p[b]].mean():.1f}" if p[b].any() else "-"
                         for b in bins)
              + f"; incumbent {r['best']}")
    if args.png:
        plot(runs, args.png)


def plot(runs, png: str) -> None:
    """One row per schedule: the CPU time per BO step and per proposing BO step (means over
    20 bins of steps), and the GP's size; full against sparse."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = sorted({r["power"] or 0.0 for r in runs})
    fig, axes = plt.subplots(len(rows), 3, figsize=(13, 3.4 * len(rows)), squeeze=False)
    for r in runs:
        a, c, b = axes[rows.index(r["power"] or 0.0)]
        label = ("p_i = (i − k + 1)^−1/2, the paper's" if not r["power"]
                 else f"p_i = i^−{r['power']}")
        s = 1e3 * np.asarray(r["seconds"])
        prop = np.asarray(r["proposed"])
        n = len(s)
        bins = np.array_split(np.arange(n), 20)
        mid = [int(bb.mean()) + 1 for bb in bins]
        a.plot(mid, [s[bb].mean() for bb in bins], "o-", ms=3, label=f"{r['gp']} GP")
        c.plot(mid, [s[bb][prop[bb]].mean() if prop[bb].any() else np.nan for bb in bins],
               "o-", ms=3, label=f"{r['gp']} GP")
        b.plot(np.arange(1, n + 1), r["size"], label=f"{r['gp']} GP")
        a.set(xlabel="BO step", ylabel="CPU ms per BO step", yscale="log",
              title=label)
        c.set(xlabel="BO step", ylabel="CPU ms per proposing BO step", yscale="log",
              title=label)
        b.set(xlabel="BO step", ylabel="GP size (distinct inputs / dictionary)", title=label)
    for ax in axes.ravel():
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
        ax.title.set_fontsize(9)
    fig.suptitle("AHMC tuner on a synthetic reward: full GP (reset at the metric updates) "
                 "against Engel's sparse GP (ν = 1e-3, never reset)", fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=100)


def ess(args) -> None:
    import jax

    jax.config.update("jax_enable_x64", True)
    from ahmc_warmup_ab import one_run

    from bomcmc.tuning import bandit

    reset = bandit.new_epoch_gp
    common = json.loads(args.options)
    variants = {"reset": common, "sparse": {**common, "gp": "sparse"}, "kept": common}
    with open(args.out, "a") as f:
        for name in args.posteriors.split(","):
            for seed in [int(s) for s in args.seeds.split(",")]:
                for vname in args.variants.split(","):
                    bandit.new_epoch_gp = bandit.refit_gp if vname == "kept" else reset
                    row = {"variant": vname, "options": common, "chains": args.chains,
                           "warmup": args.warmup, "draws": args.draws,
                           **one_run(name, variants[vname], seed, args.chains, args.warmup,
                                     args.draws)}
                    bandit.new_epoch_gp = reset
                    f.write(json.dumps(row) + "\n")
                    f.flush()
                    print(f"{name:22s} {vname:7s} seed {seed}: "
                          f"{row['min_ess_per_kgrad']:6.1f} sampling, "
                          f"{row['min_ess_per_kgrad_incl_warmup']:6.1f} with warm-up per 1000 "
                          f"grads (warm-up {row['kgrad_warmup']:.0f}k, sampling "
                          f"{row['kgrad_sampling']:.0f}k), z {row.get('z_max', 0):.1f}, "
                          f"L {row.get('L_final')}, eps {row['step_size']:.3g}, "
                          f"{row['end_to_end_s']:.0f}s", flush=True)


def table(args) -> None:
    """The ESS rows of --out as a Markdown table: per posterior and variant, the min ESS per
    1000 gradients (sampling, and warm-up + sampling), each seed's and the mean, and the
    warm-up's gradients."""
    rows = [json.loads(line) for line in Path(args.out).read_text().splitlines()]
    order = list(dict.fromkeys(r["variant"] for r in rows))
    print("| posterior | variant | seeds | min ESS / 1000 grads, sampling (mean) | "
          "with warm-up (mean) | warm-up k grads (mean) | divergences |")
    print("|---|---|---|---|---|---|---|")
    for name in dict.fromkeys(r["posterior"] for r in rows):
        for v in order:
            rs = sorted((r for r in rows if r["posterior"] == name and r["variant"] == v),
                        key=lambda r: r["seed"])
            if not rs:
                continue
            a = [r["min_ess_per_kgrad"] for r in rs]
            b = [r["min_ess_per_kgrad_incl_warmup"] for r in rs]
            w = [r["kgrad_warmup"] for r in rs]
            print(f"| {name} | {v} | {len(rs)} | " + ", ".join(f"{x:.0f}" for x in a)
                  + f" ({np.mean(a):.0f}) | " + ", ".join(f"{x:.0f}" for x in b)
                  + f" ({np.mean(b):.0f}) | {np.mean(w):.0f} | "
                  + f"{sum(r['divergences'] for r in rs)} |")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="what", required=True)
    c = sub.add_parser("cost")
    c.add_argument("--steps", type=int, default=10_000)
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--out")
    c.add_argument("--png")
    c.add_argument("--plot", nargs="+", help="only plot these --out files into --png")
    c.add_argument("--power", type=float, help="p_i = i^-power (default: the paper's "
                   "(i - k + 1)^-1/2 after burn-in)")
    e = sub.add_parser("ess")
    e.add_argument("--posteriors", default="logistic-german,logistic-australian,"
                   "logistic-ripley")
    e.add_argument("--seeds", default="0,1")
    e.add_argument("--variants", default="reset,sparse,kept")
    e.add_argument("--options", default="{}", help="JSON options of bomcmc.sample for "
                   "every variant, e.g. '{\"mass\": \"diag\"}'")
    e.add_argument("--chains", type=int, default=16)
    e.add_argument("--warmup", type=int, default=1000)
    e.add_argument("--draws", type=int, default=2000)
    e.add_argument("--out", required=True)
    t = sub.add_parser("table")
    t.add_argument("--out", required=True)
    args = p.parse_args()
    {"cost": cost, "ess": ess, "table": table}[args.what](args)


if __name__ == "__main__":
    main()
