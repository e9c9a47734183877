"""Mahendran (2011) ch. 4: the Intracluster-Move sampler tuned by Bayesian optimisation
(IMBayesOpt) against the expert's setting (IMExpert), a uniform policy (IMUnif) and Kawasaki
dynamics on a 2D ferromagnet, a 3D spin glass and an RBM at fixed magnetisation
(docs/spins.md, "Experiment").

    python experiments/im_sampler.py --model spinglass-9x9x9 --warmup 3000 --draws 20000 \\
        --out benchmarks/results/im-spinglass.json --plots docs/figures/im

Every method runs `--trials` independent single-chain runs (seeds 0, 1, ...), each with
`--warmup` moves of warm-up (IMBayesOpt's adaptation phase: warmup // 100 BO steps of 100
moves; for the other methods a burn-in at their own setting) and `--draws` moves kept. Per
trial: h of the energy (Mahendran's BO objective: `rewards.energy_acf` averaged over consecutive
blocks of 100 moves), the mean |ACF| of the energy over lags 1..500 (Figs 4.1, 4.4, 4.7),
ArviZ's ESS of the energy, per move and per second of sampling (compilation excluded),
the acceptance rate and the mean k. IMBayesOpt's GP mean over (γ, k) and its tried points
are kept for Figs 4.3, 4.6, 4.9. `--plots DIR` draws the ACFs, the first trial's energy
traces and the GP mean.

`--seeds 3` runs only the trials of those seeds, so that trials can run as separate processes
on separate cores; `--merge A.json B.json ... --out ALL.json` joins their results (each
method's trials in seed order, summaries recomputed), as if one process had run them all.
`--gamma-bounds LO HI` narrows the γ box of the methods that search it (IMBayesOpt, IMUnif,
IMBandit). `--reward energy_acf` gives IMBayesOpt Mahendran's h as its reward in place of the
variance of the energy's jump per move (bomcmc's default since 2026-12-02; results written
before then with no reward recorded used h, and a sampling policy with T = 1 for energy_jump
where no temperature was given). `--gamma-scale linear` gives IMBayesOpt's GP the linear γ axis
(Mahendran's, and bomcmc's default before 2026-11-28) instead of the axis stretched around β.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import warnings
from pathlib import Path

import arviz as az
import numpy as np

import bomcmc
from bomcmc.schemas import TUNERS
from bomcmc.tuning.im_tuner import gp_mean_surface, surface_grid
from bomcmc.tuning.rewards import energy_acf

METHODS = {"IMExpert": "im_expert", "IMUnif": "im_unif", "Kawasaki": "kawasaki",
           "IMBayesOpt": "im_bayesopt", "IMBandit": "im_bandit"}
MAX_LAG = 500
BLOCK = 100
DEFAULT_REWARD = next(o.default for o in TUNERS["im_bayesopt"] if o.name == "reward")


def abs_acf(e: np.ndarray, max_lag: int = MAX_LAG) -> np.ndarray:
    """|ρ̂_ℓ| of one energy series for ℓ = 0..max_lag (ArviZ's autocorrelation)."""
    if np.ptp(e) == 0:
        return np.ones(max_lag + 1)
    return np.abs(az.autocorr(e)[: max_lag + 1])


def block_h(lp: np.ndarray) -> float:
    """h over consecutive blocks of 100 moves (the tuner's objective), averaged."""
    n = lp.size // BLOCK
    return float(np.mean([energy_acf({"lp": lp[None, i * BLOCK:(i + 1) * BLOCK]})
                          for i in range(n)]))


def one_trial(posterior: str, sampler: str, seed: int, warmup: int, draws: int,
              **options) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # per-spin ESS warnings: the energy is what we read
        res = bomcmc.sample(posterior=posterior, sampler=sampler, chains=1, draws=draws,
                            warmup=warmup, seed=seed, progress=False, **options)
    stats = res.idata.sample_stats
    lp = np.asarray(stats.lp)[0]
    ess = float(az.ess(lp[None, :], method="bulk"))
    wall = float(res.totals["wall_s"])
    out = {"seed": seed, "h": block_h(lp), "mean_abs_acf": float(abs_acf(lp)[1:].mean()),
           "abs_acf": abs_acf(lp).tolist(), "ess": ess, "ess_per_move": ess / lp.size,
           "ess_per_s": ess / wall, "wall_s": wall, "wall_s_warmup": res.totals["wall_s_warmup"],
           "compile_s": res.totals["compile_s"],
           "accept": float(np.mean(stats.acceptance_rate)),
           "mean_k": float(np.mean(stats.n_steps)) / 2}
    if seed == 0:  # the energy trace of the first trial (Figs 4.2, 4.5, 4.8)
        out["lp_trace"] = lp[:4000].tolist()
    if "tuning" in res.idata.groups():
        state = json.loads(res.idata.tuning.attrs["tuner_state"])
        out["tuner_state"] = {k: state[k] for k in ("gp", "box", "steps_bounds",
                                                    "gamma_bounds", "config") if k in state}
        pol = state.get("policy")
        if pol:
            out["policy"] = {k: pol[k] for k in ("n_unique", "ess", "n_candidates")}
            out["policy_mean_k"] = float(np.mean(pol["k"]))
            out["policy_mean_gamma"] = float(np.mean(pol["gamma"]))
    return out


def summarize(trials: list[dict]) -> dict:
    keys = ("h", "mean_abs_acf", "ess_per_move", "ess_per_s", "accept", "mean_k")
    return {k: {"mean": float(np.mean([t[k] for t in trials])),
                "sd": float(np.std([t[k] for t in trials], ddof=1)) if len(trials) > 1 else 0.0}
            for k in keys}


def merge(parts: list[dict]) -> dict:
    """One result from the results of separate processes, of one model and one protocol."""
    same = ("model", "warmup", "draws", "temperature", "gamma_bounds", "bo_steps",
            "gamma_scale", "reward")
    for p in parts[1:]:
        differ = [k for k in same if p.get(k) != parts[0].get(k)]
        if differ:
            raise SystemExit(f"error: --merge: the parts differ in {', '.join(differ)}")
    out = {k: v for k, v in parts[0].items() if k not in ("methods", "machine")}
    out["machine"] = sorted({json.dumps(p.get("machine")) for p in parts})
    out["methods"] = {}
    for p in parts:
        for name, r in p["methods"].items():
            out["methods"].setdefault(name, {"trials": []})["trials"].extend(r["trials"])
    for name, r in out["methods"].items():
        seeds = [t["seed"] for t in r["trials"]]
        if len(set(seeds)) != len(seeds):
            raise SystemExit(f"error: --merge: {name} has seed {max(seeds, key=seeds.count)} "
                             "twice")
        r["trials"].sort(key=lambda t: t["seed"])
        r["summary"] = summarize(r["trials"])
    out["trials"] = max(len(r["trials"]) for r in out["methods"].values())
    out["complete"] = all(p.get("complete") for p in parts)
    return out


def plots(result: dict, out_dir: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    model = result["model"]
    beta = result["beta"]
    written = []
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, r in result["methods"].items():
        acf = np.array([t["abs_acf"] for t in r["trials"]])
        m, s = acf.mean(0), acf.std(0)
        lags = np.arange(acf.shape[1])
        ax.plot(lags, m, label=name)
        ax.fill_between(lags, m - s, m + s, alpha=0.2)
    ax.set(xlabel="lag", ylabel="|ACF| of the energy", title=f"{model}: mean ± sd over trials",
           ylim=(0, 1.02))
    ax.legend()
    path = out_dir / f"{model}-acf.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    written.append(str(path))
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, r in result["methods"].items():
        ax.plot(-np.asarray(r["trials"][0]["lp_trace"]) / beta, label=name, lw=0.8)
    ax.set(xlabel="move of the sampling phase", ylabel="energy", title=f"{model}: trial 0")
    ax.legend()
    path = out_dir / f"{model}-energy.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    written.append(str(path))
    plt.close(fig)

    bo = result["methods"].get("IMBayesOpt")
    if bo and all("tuner_state" in t for t in bo["trials"]):
        from bomcmc.tuning import bandit
        from bomcmc.tuning.gp_bandit import box_of_state

        surf = [gp_mean_surface(t["tuner_state"]) for t in bo["trials"]]
        ks = surf[0][1]
        mu = np.mean([s[2] for s in surf], axis=0)
        box = box_of_state(bo["trials"][0]["tuner_state"])
        # the GP's own γ axis (stretched around β where the box is warped), labelled in γ
        axis = surface_grid(bo["trials"][0]["tuner_state"])[0]
        fig, ax = plt.subplots(figsize=(6, 4))
        im = ax.pcolormesh(axis, ks, mu, shading="auto", cmap="viridis")
        label = ("GP mean of the standardised energy jump" if result.get("reward") == "energy_jump"
                 else "GP mean of h")
        fig.colorbar(im, ax=ax, label=f"{label} (average over trials)")
        for t in bo["trials"]:
            X = np.asarray(t["tuner_state"]["gp"]["X"])  # search coordinates
            ax.plot(X[:, 0], X[:, 1], "w.", ms=3)
        if box.warps()[0] is not None:
            ticks = np.linspace(axis[0], axis[-1], 9)
            ax.set_xticks(ticks, [f"{bandit.to_knobs(box, (u, 1))[0]:.3g}" for u in ticks])
        ax.set(xlabel="γ" + (" (the GP's stretched axis)" if box.warps()[0] else ""),
               ylabel="k", title=f"{model}: IMBayesOpt's GP mean, points tried")
        path = out_dir / f"{model}-gp-mean.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        written.append(str(path))
        plt.close(fig)
    return written


def table(result: dict) -> str:
    rows = [f"{result['model']}: {result['trials']} trials, warm-up {result['warmup']}, "
            f"{result['draws']} moves kept",
            "| method | h | mean abs ACF (lags 1-500) | ESS/move ×10³ | ESS/s | acceptance | "
            "mean k |", "|---|---|---|---|---|---|---|"]
    for name, r in result["methods"].items():
        s = r["summary"]
        rows.append(f"| {name} | {s['h']['mean']:.3f} ± {s['h']['sd']:.3f} | "
                    f"{s['mean_abs_acf']['mean']:.3f} ± {s['mean_abs_acf']['sd']:.3f} | "
                    f"{1e3 * s['ess_per_move']['mean']:.2f} ± {1e3 * s['ess_per_move']['sd']:.2f}"
                    f" | {s['ess_per_s']['mean']:.2f} ± {s['ess_per_s']['sd']:.2f} | "
                    f"{s['accept']['mean']:.2f} | {s['mean_k']['mean']:.1f} |")
    return "\n".join(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="a spin posterior, e.g. ising-60x60")
    ap.add_argument("--methods", default="IMExpert,IMUnif,Kawasaki,IMBayesOpt",
                    help=f"comma-separated, of {', '.join(METHODS)}")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=3000)
    ap.add_argument("--draws", type=int, default=10000)
    ap.add_argument("--temperature", type=float, default=None,
                    help="IMBayesOpt's SIR temperature T (weights exp(μ/T); default 0.2 with "
                         "energy_jump, 0.1 with energy_acf)")
    ap.add_argument("--bo-steps", type=int, default=None,
                    help="IMBayesOpt's BO steps in warm-up (default: warmup // 100, at most "
                         "100); fewer steps are longer blocks, each reward less noisy")
    ap.add_argument("--gamma-scale", choices=("beta", "linear"), default=None,
                    help="IMBayesOpt's γ axis for its GP (default beta: stretched around β; "
                         "linear: as before 2026-11-28)")
    ap.add_argument("--reward", choices=("energy_acf", "energy_jump"), default=DEFAULT_REWARD,
                    help="IMBayesOpt's reward per BO step (energy_jump: the variance of the "
                         "energy's jump per move, the default; energy_acf: Mahendran's h)")
    ap.add_argument("--gamma-bounds", type=float, nargs=2, default=None, metavar=("LO", "HI"),
                    help="IMBayesOpt's and IMUnif's γ box (default: the model's)")
    ap.add_argument("--seeds", default=None,
                    help="comma-separated trial seeds to run (default 0..trials-1)")
    ap.add_argument("--merge", nargs="+", default=None, metavar="JSON",
                    help="join these results (of --seeds runs) into --out and print the table")
    ap.add_argument("--out", required=True, help="results JSON")
    ap.add_argument("--plots", default=None, metavar="DIR")
    ap.add_argument("--from-json", action="store_true",
                    help="read --out and only print the table and draw the plots")
    args = ap.parse_args(argv)
    if args.from_json:
        result = json.loads(Path(args.out).read_text())
    elif args.merge:
        result = merge([json.loads(Path(f).read_text()) for f in args.merge])
        Path(args.out).write_text(json.dumps(result))
    else:
        import jax
        from bomcmc import models

        model = models.get(args.model).spin_model
        seeds = ([int(x) for x in args.seeds.split(",")] if args.seeds
                 else list(range(args.trials)))
        result = {"model": args.model, "beta": model.beta, "trials": len(seeds),
                  "warmup": args.warmup, "draws": args.draws, "n_spins": model.n,
                  "n_flipped": model.n_flipped, "box": model.box(),
                  "expert": model.expert, "temperature": args.temperature,
                  "gamma_bounds": args.gamma_bounds, "bo_steps": args.bo_steps,
                  "gamma_scale": args.gamma_scale, "reward": args.reward,
                  "methods": {},
                  "complete": False,
                  "machine": {"jax_backend": jax.default_backend(), "cpus": os.cpu_count(),
                              "processor": platform.processor() or platform.machine()}}
        t0 = time.time()
        for name in args.methods.split(","):
            trials = []
            for seed in seeds:
                opts = ({"temperature": args.temperature}
                        if name == "IMBayesOpt" and args.temperature is not None else {})
                if args.bo_steps and name == "IMBayesOpt":
                    opts["bo_steps"] = args.bo_steps
                if args.gamma_scale and name == "IMBayesOpt":
                    opts["gamma_scale"] = args.gamma_scale
                if args.reward and name == "IMBayesOpt":
                    opts["reward"] = args.reward
                if args.gamma_bounds and name in ("IMBayesOpt", "IMUnif", "IMBandit"):
                    opts["gamma_bounds"] = tuple(args.gamma_bounds)
                trials.append(one_trial(args.model, METHODS[name], seed, args.warmup,
                                        args.draws, **opts))
                print(f"{args.model} {name} trial {seed}: h {trials[-1]['h']:.3f}, ESS/s "
                      f"{trials[-1]['ess_per_s']:.2f}, {time.time() - t0:.0f} s", flush=True)
            result["methods"][name] = {"trials": trials, "summary": summarize(trials)}
            Path(args.out).write_text(json.dumps(result))  # after every method
        result["complete"] = True
        Path(args.out).write_text(json.dumps(result))
    print(table(result))
    if args.plots:
        for p in plots(result, Path(args.plots)):
            print("wrote", p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
