"""Adaptive RMHMC against RMHMC at Girolami & Calderhead's hand-tuned setting on the five
Bayesian logistic regressions: Wang, Mohamed & de Freitas (2013) §5.1, Fig. 2 bottom row
(docs/rmhmc.md, "Logistic regression").

    python experiments/rmhmc_logistic.py --chains 10 --warmup 1000 --draws 5000 \\
        --seeds 0 --out benchmarks/results/rmhmc-logistic.json

Per (data set, sampler, seed), one run of `--chains` chains in float64:
- rmhmc   ε = 0.5, L_r ~ U{1..6}, 6 fixed-point steps, chains started at β = 0 (Girolami &
          Calderhead's start is β = 10⁻³·1), warm-up = burn-in at that setting;
- armhmc  the GP bandit over (ε, L) in ε ∈ [0.01, 1] × L ∈ {1..20}, chains from bomcmc's
          dispersed starts, adapting in burn-in and after.
With `--paper`, the protocol of Wang, Mohamed & de Freitas (2013) §5.1 instead: ARMHMC's box
ε ∈ [0.1, 1] × L ∈ {1..12}, 10 chains, 1000 burn-in + 5000 draws; each run also records every
chain's own ESS (the monotone-sequence estimator of Girolami & Calderhead 2011 and ArviZ's
bulk ESS, min / median / max over β per gradient of that chain), the paper's boxes being over
its 10 single-chain runs, and `--plot` draws them as Fig. 2's box plots:

    python experiments/rmhmc_logistic.py --paper --seeds 0 \\
        --out benchmarks/results/rmhmc-logistic-paper.json \\
        --plot docs/figures/rmhmc_logistic_paper.png

With `--independent` as well, each adaptive sampler's 10 chains are 10 runs of one chain, each
with its own bandit and start, as the paper's were (RMHMC adapts nothing, so its 10 chains of
one run are 10 independent runs already). `--samplers armhmc-authors` adds ARMHMC rewarded as
the authors' code rewards it: ESJD/√L with no rule for divergences (bomcmc's reward scores a
block in which a chain diverged 0); `armhmc-frozen` ARMHMC adapting in burn-in only.
`--reuse FILE` takes the rows of the samplers not run from an earlier results JSON.

Recorded: ArviZ's bulk ESS of each coefficient (min / median / max), per gradient of the
sampling phase, per gradient with the warm-up's, and per second of sampling (compilation
excluded; the metric's cost is in the seconds, not in the gradients); acceptance; the share
of transitions whose fixed points did not converge; the largest |z| of the means against a
NUTS reference run (4 × 5000 draws) in both runs' MCSEs.
"""

from __future__ import annotations

import argparse
from functools import partial
import json
import time
import warnings
from pathlib import Path

import numpy as np
from ess_tables import (agreement, ess_figures, moments, per_chain_ess, read_results,
                        spread, write_results)

import bomcmc
from bomcmc.tuning.rewards import esjd

DATASETS = ("australian", "german", "heart", "pima", "ripley")
SETTINGS = {
    "rmhmc": dict(step_size=0.5, steps=6, random_steps=True, fixed_point_steps=6,
                  init_strategy="init"),
    "armhmc": dict(eps_bounds=(0.01, 1.0), steps_bounds=(1, 20)),
}
# Wang, Mohamed & de Freitas (2013) §5.1: ARMHMC's box; RMHMC stays at Girolami & Calderhead's.
PAPER_SETTINGS = {"rmhmc": SETTINGS["rmhmc"],
                  "armhmc": dict(eps_bounds=(0.1, 1.0), steps_bounds=(1, 12))}
PAPER_RUN = dict(chains=10, warmup=1000, draws=5000)
AUTHORS = "armhmc-authors"  # ARMHMC with the authors' reward: no rule for divergences
FROZEN = "armhmc-frozen"  # ARMHMC adapting in burn-in only: what exploring after it costs
ADAPTIVE = ("armhmc", AUTHORS, FROZEN)


class Pooled:
    """Independent one-chain runs seen as one run of their chains: the posterior and
    sample_stats side by side along "chain", the totals summed (acceptance averaged), and
    each chain's own warm-up gradients."""

    def __init__(self, results):
        import xarray as xr

        def stack(group):
            parts = [getattr(r.idata, group) for r in results]
            return xr.concat(parts, dim="chain").assign_coords(chain=np.arange(len(parts)))

        self.idata = type("Groups", (), {"posterior": stack("posterior"),
                                         "sample_stats": stack("sample_stats")})()
        keys = ("n_grad", "n_grad_warmup", "wall_s", "wall_s_total", "wall_s_warmup",
                "divergences")
        self.totals = {k: sum(r.totals[k] for r in results) for k in keys}
        self.totals["accept_mean"] = float(np.mean([r.totals["accept_mean"] for r in results]))
        self.chain_n_grad_warmup = np.array([r.totals["n_grad_warmup"] for r in results],
                                            dtype=float)


def figures(res) -> dict:
    """The shared ESS figures of β (`ess_tables.ess_figures`), the warm-up's seconds and the
    share of fixed-point iterations that did not converge."""
    out = ess_figures(res, ["beta"])
    out["wall_s_warmup"] = res.totals["wall_s_warmup"]
    ss = res.idata.sample_stats
    if "fixed_point_failed" in ss:
        out["fixed_point_failed"] = float(np.mean(ss.fixed_point_failed))
    return out


def chain_figures(res) -> dict:
    """Each chain's ESS of β (monotone-sequence and bulk; min / median / max over
    coefficients) per gradient of that chain's sampling phase, and with its 1/C share of the
    warm-up's gradients; the pooled monotone-sequence ESS per gradient; each chain's
    acceptance, median ε and median L of the sampling phase."""
    ess = per_chain_ess(res, ["beta"])
    ss = res.idata.sample_stats
    grads = np.asarray(ss.n_grad).sum(axis=1).astype(float)
    warm = getattr(res, "chain_n_grad_warmup", res.totals["n_grad_warmup"] / grads.size)
    out = {"chain_n_grad": grads, "chain_accept": np.asarray(ss.acceptance_rate).mean(1),
           "chain_eps_median": np.median(np.asarray(ss.step_size), 1),
           "chain_L_median": np.median(np.asarray(ss.n_steps), 1)}
    for est in ("monotone", "bulk"):
        for k, v in spread(ess[est]).items():
            out[f"chain_{est}_{k}"] = v
            out[f"chain_{est}_per_grad_{k}"] = v / grads
            out[f"chain_{est}_per_grad_all_{k}"] = v / (grads + warm)
    for k, v in spread(ess["pooled_monotone"]).items():
        out[f"pooled_monotone_{k}"] = float(v)
        out[f"pooled_monotone_per_grad_{k}"] = float(v) / res.totals["n_grad"]
        out[f"pooled_monotone_per_grad_all_{k}"] = float(v) / (res.totals["n_grad"]
                                                               + res.totals["n_grad_warmup"])
    return {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in out.items()}


def plot_boxes(runs, path, estimator: str = "monotone") -> None:
    """Fig. 2's bottom row as box plots: one box per data set and sampler over the chains
    (and seeds) of each run's ESS per gradient, rows min / median / max over β."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [d for d in DATASETS if any(r["dataset"] == d for r in runs)]
    samplers = [s for s in ("rmhmc", *ADAPTIVE) if any(r["sampler"] == s for r in runs)]
    labels = {"rmhmc": "RMHMC", "armhmc": "ARMHMC", AUTHORS: "ARMHMC\n(authors'\nreward)",
              FROZEN: "ARMHMC\n(burn-in\nonly)"}
    fig, axes = plt.subplots(3, len(names), figsize=((1.2 + 0.7 * len(samplers)) * len(names),
                                                      7.5), squeeze=False)
    for j, ds in enumerate(names):
        for i, k in enumerate(("min", "median", "max")):
            ax = axes[i, j]
            data = [[x for r in runs if r["dataset"] == ds and r["sampler"] == s
                     for x in r.get(f"chain_{estimator}_per_grad_{k}", [])]
                    for s in samplers]
            ax.boxplot(data)
            ax.set_xticks(range(1, len(samplers) + 1), [labels[s] for s in samplers])
            ax.set_title(f"{ds}: {k}" if i == 0 else k, fontsize=9)
            ax.tick_params(labelsize=8)
            if j == 0:
                ax.set_ylabel(f"{k} ESS / gradient")
    fig.suptitle(f"{estimator} ESS per gradient, one value per chain", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def table(runs) -> str:
    """The Markdown table of docs/rmhmc.md from a `--paper` results JSON's runs: ESS per
    gradient of β (min / median / max over coefficients), pooled over the chains (ArviZ's bulk
    and the monotone-sequence ESS) and per chain (median over chains of each chain's min),
    without and with the warm-up's gradients; acceptance, the median ε and L, unconverged
    fixed points and the largest |z| against NUTS."""
    lines = ["| data set | sampler | bulk, pooled: min / med / max | monotone, pooled: min / "
             "med / max | monotone per chain: min (median over chains) | the same, warm-up "
             "counted | bulk pooled min, warm-up counted | acceptance | ε, L (median) | fixed "
             "points unconverged | max \\|z\\| vs NUTS |", "|---" * 11 + "|"]
    order = ("rmhmc", *ADAPTIVE)
    for r in sorted(runs, key=lambda r: (DATASETS.index(r["dataset"]), order.index(r["sampler"]),
                                         r["seed"])):
        f = "{:.3f}".format
        lines.append(
            f"| {r['dataset']} | {r['sampler']} | {f(r['per_grad_min'])} / "
            f"{f(r['per_grad_median'])} / {f(r['per_grad_max'])} | "
            f"{f(r['pooled_monotone_per_grad_min'])} / {f(r['pooled_monotone_per_grad_median'])}"
            f" / {f(r['pooled_monotone_per_grad_max'])} | "
            f"{f(np.median(r['chain_monotone_per_grad_min']))} | "
            f"{f(np.median(r['chain_monotone_per_grad_all_min']))} | "
            f"{f(r['per_grad_all_min'])} | {r['accept']:.2f} | "
            f"{np.median(r['chain_eps_median']):.3f}, {np.median(r['chain_L_median']):.0f} | "
            f"{100 * r.get('fixed_point_failed', 0):.1f} % | {r['z_vs_nuts']:.2f} |")
    return "\n".join(lines)


def check(ds: str, settings: str, block: int = 10, warmup: int = 200, draws: int = 1000
          ) -> None:
    """`rmhmc` on `ds` at fixed settings "ε:L" (an "r" after L: L_r ~ U{1..L}), 10 chains of
    `warmup` + `draws` (200 + 1000; with --paper, the paper's 1000 + 5000): the share of
    divergent transitions, the share of the bandit's blocks (`block` transitions × 10 chains)
    holding one, which its ESJD reward scores 0 (`tuning.rewards.esjd`), that reward, the min
    bulk ESS per gradient of the 10 chains pooled, and the median over the chains of each
    chain's own (a chain here is an independent run: nothing adapts); and the sd of that
    reward over one chain's blocks of `block` transitions, the reward a BO step of
    `--independent` observes."""
    import arviz as az

    for item in settings.split(","):
        eps, steps = item.split(":")
        res = bomcmc.sample(posterior=f"logistic-{ds}", sampler="rmhmc", chains=10, draws=draws,
                            warmup=warmup, seed=0, float64=True, progress=False,
                            step_size=float(eps), steps=int(steps.rstrip("r")),
                            random_steps=steps.endswith("r"), fixed_point_steps=6,
                            init_strategy="init")
        ss = res.idata.sample_stats
        div = np.asarray(ss.diverging)
        blocks = div.reshape(10, -1, block).any(axis=(0, 2))
        beta = res.idata.posterior["beta"].values
        ess = min(float(az.ess(beta[..., k], method="bulk")) for k in range(beta.shape[-1]))
        own = chain_figures(res)["chain_bulk_per_grad_min"]
        # one chain's block of `block` transitions: the reward one BO step of --independent sees
        jumps = np.asarray(ss.esjd) / np.sqrt(int(steps.rstrip("r")))
        one = jumps[:, : jumps.shape[1] // block * block].reshape(10, -1, block).mean(axis=2)
        print(f"{ds} eps {eps} L {steps}: divergent {div.mean():.3f}, blocks with one "
              f"{blocks.mean():.2f}, acceptance {res.totals['accept_mean']:.2f}, ESJD/sqrt(L) "
              f"{jumps.mean():.3f} (one chain's block: sd {one.std():.3f}), min ESS/grad "
              f"{ess / res.totals['n_grad']:.3f} pooled, {np.median(own):.3f} per chain "
              f"(median; quartiles {np.quantile(own, 0.25):.3f}, {np.quantile(own, 0.75):.3f})",
              flush=True)


def start_check(ds: str, seed: int, eps_list=(0.01, 0.03, 0.1, 0.3)) -> None:
    """Where a one-chain ARMHMC run of `--independent` starts (seed `seed`, the paper's box),
    the log density and the metric's eigenvalues there, and `rmhmc` from that start with
    L = 1 at each ε of `eps_list` (50 transitions): its acceptance, the share of divergent
    transitions and of unconverged fixed points, and whether the chain moved; then the
    ARMHMC run again (1000 + 5000) in the step-size box its warnings suggest."""
    import dataclasses

    import jax.numpy as jnp

    from bomcmc.models import get

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = bomcmc.sample(posterior=f"logistic-{ds}", sampler="armhmc", chains=1, draws=20,
                            warmup=20, seed=seed, float64=True, progress=False,
                            **PAPER_SETTINGS["armhmc"])
        start = res.idata.posterior["beta"].values[0, 0]
        post = get(f"logistic-{ds}")
        beta = jnp.asarray(start)
        eig = np.linalg.eigvalsh(np.asarray(post.metric_fn(beta)))
        print(f"{ds} seed {seed}: start {np.round(start, 3).tolist()}, log density "
              f"{float(post.logdensity_fn({'beta': beta})):.1f}, metric eigenvalues "
              f"{eig.min():.3g}-{eig.max():.3g}")
        there = dataclasses.replace(post, init_position={"beta": beta})
        for eps in eps_list:
            r = bomcmc.sample(posterior=there, sampler="rmhmc", chains=1, draws=50, warmup=0,
                              seed=1, float64=True, progress=False, step_size=eps, steps=1,
                              fixed_point_steps=6, init_strategy="init")
            ss = r.idata.sample_stats
            moved = float(np.ptp(r.idata.posterior["beta"].values[0], axis=0).max())
            print(f"  eps {eps}, L 1: acceptance {float(ss.acceptance_rate.mean()):.3f}, "
                  f"divergent {float(ss.diverging.mean()):.2f}, fixed points unconverged "
                  f"{float(ss.fixed_point_failed.mean()):.2f}, moved {moved:.3g}", flush=True)
        # the run again, 1000 + 5000, in the step-size box its warnings suggest
        fixed = bomcmc.sample(posterior=f"logistic-{ds}", sampler="armhmc", chains=1,
                              draws=5000, warmup=1000, seed=seed, float64=True, progress=False,
                              eps_bounds=(0.025, 0.25), steps_bounds=(1, 12))
    f = figures(fixed)
    ss = fixed.idata.sample_stats
    print(f"  armhmc, eps_bounds=(0.025, 0.25): acceptance {f['accept']:.2f}, divergent "
          f"{f['divergences']}, fixed points unconverged {f['fixed_point_failed']:.2f}, min bulk "
          f"ESS/grad {f['per_grad_min']:.3f}, median eps {np.median(ss.step_size):.2f}, "
          f"median L {np.median(ss.n_steps):.0f}")


def z_against(res, ref) -> float:
    """The largest |z| of β's means against the reference run, in both runs' MCSEs."""
    return agreement(moments(res, ["beta"]), moments(ref, ["beta"]))["max_abs_z"]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--paper", action="store_true",
                    help="the paper's protocol: ARMHMC box [0.1, 1] x {1..12}, 10 chains, "
                         "1000 + 5000, per-chain ESS (overrides --chains/--warmup/--draws)")
    ap.add_argument("--chains", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=5000)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--samplers", default="rmhmc,armhmc",
                    help=f"comma-separated, of rmhmc, armhmc, {AUTHORS}, {FROZEN}")
    ap.add_argument("--independent", action="store_true",
                    help="the adaptive samplers' chains as independent one-chain runs, each "
                         "with its own bandit and start")
    ap.add_argument("--reuse", metavar="FILE",
                    help="take the rows of the samplers not in --samplers from this results "
                         "JSON (e.g. rmhmc's, which --independent does not change)")
    ap.add_argument("--out",
                    help="results JSON; with --paper, rewritten after every run and resumed "
                         "from (the runs already in it are skipped)")
    ap.add_argument("--plot", help="PNG of the box plots (monotone-sequence ESS; the bulk "
                                   "ESS beside it as <name>-bulk.png)")
    ap.add_argument("--plot-only", action="store_true",
                    help="redraw --plot from --out and print its Markdown table")
    ap.add_argument("--start-check", metavar="DATASET=SEED",
                    help="where the one-chain ARMHMC run with this seed starts, and whether "
                         "rmhmc moves from there at small and large steps (e.g. ripley=5)")
    ap.add_argument("--check", metavar="DATASET=EPS:L,...",
                    help="only run rmhmc at fixed settings on one data set and print its "
                         "divergences per bandit block (e.g. ripley=0.5:3r,0.203:6)")
    args = ap.parse_args(argv)
    if not args.out and not args.check and not args.start_check:
        ap.error("--out is required")
    if args.paper:
        vars(args).update(PAPER_RUN)
    return args


def sample(post, label, kw, seed, args, chains):
    """One run of `label`'s sampler; ARMHMC with the authors' reward is `armhmc` with a
    block bandit rewarded by `tuning.rewards.esjd` without its divergence rule, and frozen
    ARMHMC one whose bandit samples at its incumbent once sampling starts (the same bandit,
    seed and burn-in as `armhmc`'s run of that seed; `adapt_in_sampling=False`)."""
    sampler, kw = label, dict(kw)
    if label in (AUTHORS, FROZEN):
        from bomcmc.tuning.block_bandit import BlockBanditTuner

        sampler = "armhmc"
        if label == AUTHORS:
            kw["reward"] = partial(esjd, divergence_rule=False)
        kw = {"tuner": BlockBanditTuner(warmup=args.warmup, seed=seed, **kw)}
    return bomcmc.sample(posterior=post, sampler=sampler, chains=chains, draws=args.draws,
                         warmup=args.warmup, seed=seed, float64=True, progress=False, **kw)


def run_one(post, sampler, kw, seed, args, ref, paper) -> dict:
    """One run of `--chains` chains of `sampler` on `post` (with `--independent`, an adaptive
    sampler's `--chains` one-chain runs, seeds 1000·seed + i), with its figures."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if args.independent and sampler in ADAPTIVE:
            res = Pooled([sample(post, sampler, kw, 1000 * seed + i, args, 1)
                          for i in range(args.chains)])
        else:
            res = sample(post, sampler, kw, seed, args, args.chains)
    row = {"dataset": post.removeprefix("logistic-"), "sampler": sampler, "seed": seed,
           "independent": bool(args.independent and sampler in ADAPTIVE),
           **figures(res), "z_vs_nuts": z_against(res, ref),
           "warnings": [str(w.message).split(":")[0] for w in caught
                        if issubclass(w.category, bomcmc.SamplingWarning)]}
    if paper:
        row.update(chain_figures(res))
    return row


def draw(args, runs) -> None:
    if args.plot:
        plot_boxes(runs, args.plot, "monotone")
        plot_boxes(runs, str(Path(args.plot).with_suffix("")) + "-bulk.png", "bulk")


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.check:
        ds, _, items = args.check.partition("=")
        check(ds, items, **({"warmup": args.warmup, "draws": args.draws} if args.paper
                            else {}))
        return 0
    if args.start_check:
        ds, _, seed = args.start_check.partition("=")
        start_check(ds, int(seed))
        return 0
    settings = dict(PAPER_SETTINGS if args.paper else SETTINGS)
    settings[AUTHORS] = {**settings["armhmc"], "reward": "esjd without the divergence rule"}
    settings[FROZEN] = {**settings["armhmc"], "adapt_in_sampling": False}
    chosen = args.samplers.split(",")
    meta = {k: v for k, v in vars(args).items() if k not in ("out", "plot", "plot_only")}
    out = Path(args.out)
    runs = read_results(out)["runs"] if args.paper and out.exists() else []
    if args.reuse and not runs:
        runs = [dict(r, reused_from=args.reuse) for r in read_results(Path(args.reuse))["runs"]
                if r["sampler"] not in chosen]
    if args.plot_only:
        draw(args, read_results(out)["runs"])
        print(table(read_results(out)["runs"]))
        return 0
    done = {(r["dataset"], r["sampler"], r["seed"]) for r in runs}
    used = {s: settings[s] for s in ("rmhmc", *ADAPTIVE) if s in chosen
            or any(r["sampler"] == s for r in runs)}
    t0 = time.time()
    for ds in args.datasets.split(","):
        post = f"logistic-{ds}"
        todo = [(s, {k: v for k, v in settings[s].items() if k != "reward"}, seed)
                for s in chosen for seed in map(int, args.seeds.split(","))
                if (ds, s, seed) not in done]
        if not todo:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = bomcmc.sample(posterior=post, sampler="nuts", chains=4, draws=5000,
                                warmup=1000, seed=1000, float64=True, progress=False)
        for sampler, kw, seed in todo:
            row = run_one(post, sampler, kw, seed, args, ref, args.paper)
            runs.append(row)
            print(f"{ds} {sampler} seed {seed}: min ESS/grad {row['per_grad_min']:.4f} "
                  f"(with warm-up {row['per_grad_all_min']:.4f}), min ESS/s "
                  f"{row['per_s_min']:.1f}, |z| {row['z_vs_nuts']:.2f}, "
                  f"{time.time() - t0:.0f} s", flush=True)
            if args.paper:
                write_results(out, {"meta": meta, "settings": used, "runs": runs},
                              complete=False)
    if args.paper:
        write_results(out, {"meta": meta, "settings": used, "runs": runs}, complete=True)
        draw(args, runs)
    else:
        out.write_text(json.dumps({"meta": meta, "settings": used, "runs": runs},
                                  indent=1, default=list))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
