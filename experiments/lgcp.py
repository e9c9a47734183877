"""Adaptive HMC and adaptive RMHMC on the 64 × 64 log-Gaussian Cox process: Wang, Mohamed &
de Freitas (2013) §5.2, Figs 3–4 (docs/rmhmc.md, "Log-Gaussian Cox process").

    python experiments/lgcp.py --side 64 --chains 4 --warmup 1000 --draws 2000 --seeds 0,1 \\
        --out benchmarks/results/lgcp-64.json --plots docs/figures/lgcp

Per (sampler, seed), one run of `--chains` vmapped chains in float64 from bomcmc's dispersed
starts (the paper: 10 chains, 1000 burn-in, 5000 draws):
- ahmc    the GP bandit over ε ∈ [0.001, 0.1] × L ∈ {1..500} (the paper's box), identity mass;
- nuts    Stan's warm-up and multinomial NUTS;
- rmhmc   Girolami & Calderhead's setting, ε = 0.1, L_r ~ U{1..30}, with their constant metric;
- armhmc  the GP bandit over ε ∈ [0.01, 1] × L ∈ {1..60} (the paper's box) on that metric.
The metric is constant, so rmhmc and armhmc are HMC with the metric's diagonal mass in the
posterior's coordinates (the prior's eigenbasis; models/log_gaussian_cox.py).

Recorded for the field x (4096 cells): ArviZ's bulk ESS, min / median / max, per gradient of the
sampling phase, per gradient with the warm-up's, per second of sampling and per second end to
end (compilation included); acceptance; and agreement with a long NUTS reference run (seed
1000, `--ref-draws` draws per chain): the largest |z| of the cell means in both runs' MCSEs,
the share of cells with |z| > 4, and the share whose sd is more than 10 % from the reference's.
The plots are Fig. 3 (ESS per gradient, adaptive against its baseline) and Fig. 4 (the true
field and the counts beside the posterior mean and variance fields of ahmc and NUTS).

With σ² and μ sampled too (the paper's Fig. 4 samples its hyperparameters; β stays fixed,
models/log_gaussian_cox.py):

    python experiments/lgcp.py --hyper centred --side 32 --chains 4 --warmup 1000 \
        --draws 2000 --ref-draws 5000 --samplers nuts,ahmc --out OUT.json --plots DIR

`--hyper centred` samples `lgcp-hyper-N` (the field centred, as the paper samples x) and
`--hyper nc` the non-centred `lgcp-hyper-nc-N`; the reference is bomcmc's NUTS with Stan's
warm-up on the non-centred one (seed 1000). Each row adds σ² and μ: mean, sd, |z| against
the reference, bulk ESS and R-hat.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import arviz as az
import numpy as np

import bomcmc
from bomcmc import models

from ess_tables import (agreement, ess_figures, moments, read_results, reference_moments,
                        write_results)

SETTINGS = {
    "ahmc": dict(eps_bounds=(0.001, 0.1), steps_bounds=(1, 500)),
    "nuts": dict(),
    "rmhmc": dict(step_size=0.1, steps=30, random_steps=True),
    "armhmc": dict(eps_bounds=(0.01, 1.0), steps_bounds=(1, 60)),
    # ahmc's bandit and box from the dispersed starts, without its L-BFGS start (which ran
    # down the funnel of the centred posterior with σ² sampled before the driver learned to
    # drop it there: docs/rmhmc.md)
    "ahmc_dispersed": dict(eps_bounds=(0.001, 0.1), steps_bounds=(1, 500)),
}
FIELD = ("x",)
HYPER = ("sigma2", "mu")
PAIRS = (("ahmc", "nuts"), ("armhmc", "rmhmc"))  # Fig. 3: adaptive against baseline
REF_DEPTH = 5  # the reference NUTS's maximum tree depth (run_reference)


def how(sampler: str, warmup: int) -> dict:
    """`bomcmc.sample`'s sampler and options for a row of SETTINGS."""
    if sampler == "ahmc_dispersed":
        from bomcmc.tuning.ahmc_tuner import AHMCTuner

        return dict(sampler="hmc", random_steps=True,
                    tuner=AHMCTuner(warmup=warmup, **SETTINGS[sampler]))
    return dict(sampler=sampler, **SETTINGS[sampler])


def plot_fields(true_x, counts, fields: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(fields)
    fig, axes = plt.subplots(2, 1 + len(names), figsize=(3.2 * (1 + len(names)), 6.2))
    lo = min(true_x.min(), *(f["mean"].min() for f in fields.values()))
    hi = max(true_x.max(), *(f["mean"].max() for f in fields.values()))
    vhi = max(f["var"].max() for f in fields.values())
    axes[0, 0].imshow(true_x, vmin=lo, vmax=hi)
    axes[0, 0].set_title("true field x")
    axes[1, 0].imshow(counts, cmap="Greys")
    axes[1, 0].set_title(f"counts ({int(counts.sum())})")
    for j, name in enumerate(names, start=1):
        axes[0, j].imshow(fields[name]["mean"].reshape(true_x.shape), vmin=lo, vmax=hi)
        axes[0, j].set_title(f"{name}: posterior mean")
        axes[1, j].imshow(fields[name]["var"].reshape(true_x.shape), vmin=0, vmax=vhi,
                          cmap="magma")
        axes[1, j].set_title(f"{name}: posterior variance")
    for ax in axes.ravel():
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_scatter(runs: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ran = {r["sampler"] for r in runs}
    pairs = [(a, b) for a, b in PAIRS if a in ran and b in ran]
    if not pairs:  # Fig. 3 compares an adaptive sampler with its baseline: none ran both
        return
    fig, axes = plt.subplots(1, len(pairs), figsize=(5 * len(pairs), 4.6))
    for ax, (adaptive, base) in zip(np.atleast_1d(axes), pairs):
        for stat, marker in (("min", "v"), ("median", "o"), ("max", "^")):
            for key, fill in (("per_grad", True), ("per_grad_all", False)):
                xs, ys = [], []
                for seed in sorted({r["seed"] for r in runs}):
                    a = [r for r in runs if r["sampler"] == adaptive and r["seed"] == seed]
                    b = [r for r in runs if r["sampler"] == base and r["seed"] == seed]
                    if a and b:
                        xs.append(a[0][f"{key}_{stat}"])  # as the paper: adaptive on x,
                        ys.append(b[0][f"{key}_{stat}"])  # so below the diagonal is better
                if xs:
                    ax.scatter(xs, ys, marker=marker, facecolors=None if fill else "none",
                               edgecolors="C0" if fill else "C1",
                               label=f"{stat}{'' if fill else ', warm-up counted'}")
        lim = ax.get_xlim()[0], ax.get_xlim()[1]
        lo, hi = min(lim[0], ax.get_ylim()[0]), max(lim[1], ax.get_ylim()[1])
        ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"{adaptive}: ESS per gradient")
        ax.set_ylabel(f"{base}: ESS per gradient")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table(results: dict) -> str:
    """Bulk ESS of the field, min / median / max, per 1000 gradients (sampling; with the
    warm-up's) and per second (sampling; end to end), and agreement with the reference."""
    rows = ["| sampler | ESS/1000 grad min / med / max | with warm-up min / med | "
            "ESS/s min (sampling; end to end) | max \\|z\\| | cells with sd off > 10 % |",
            "|---|---|---|---|---|---|"]
    for r in results["runs"]:
        rows.append(
            f"| {r['sampler']} (seed {r['seed']}) | "
            + " / ".join(f"{1e3 * r[f'per_grad_{k}']:.3g}" for k in ("min", "median", "max"))
            + f" | {1e3 * r['per_grad_all_min']:.3g} / {1e3 * r['per_grad_all_median']:.3g} | "
            f"{r['per_s_min']:.3g}; {r['per_s_total_min']:.3g} | {r['max_abs_z']:.2f} | "
            f"{100 * r['share_sd_off_10pct']:.1f} % |")
    hyper = [r for r in results["runs"] if HYPER[0] in r]
    if hyper:
        rows += ["", "| sampler | " + " | ".join(f"{h}: mean ± sd (reference) | {h}: \\|z\\|, "
                                                 f"bulk ESS, R-hat" for h in HYPER) + " |",
                 "|---|" + "---|---|" * len(HYPER)]
        for r in hyper:
            rows.append(f"| {r['sampler']} (seed {r['seed']}) | " + " | ".join(
                f"{r[h]['mean']:.3f} ± {r[h]['sd']:.3f} ({r[h]['ref_mean']:.3f} ± "
                f"{r[h]['ref_sd']:.3f}) | {r[h]['z']:.2f}, {r[h]['ess_bulk']:.0f}, "
                f"{r[h]['rhat']:.3f}" for h in HYPER) + " |")
    return "\n".join(rows)


def run_reference(args, post):
    """The long NUTS reference, `--ref-chains` × `--ref-draws` draws, seed 1000, with
    Girolami & Calderhead's constant metric G as its mass matrix and the step size adapted by
    dual averaging, trees at most REF_DEPTH deep; with `--ref-dir` on disk: a finished run
    there is read, an unfinished one continued. Any fixed mass and any depth cap leave NUTS
    exact. This mass spares the reference Stan's metric warm-up, which from the identity took
    79 % of a NUTS run's gradients here; the cap stops the one chain in eight whose trees,
    after the warm-up, ran to depth 9 (511 steps) where the others stopped at depth 4, and
    which the other chains wait for when vmapped (docs/rmhmc.md)."""
    chains = args.ref_chains or args.chains
    t0 = time.time()
    if args.hyper != "none":
        return run_hyper_reference(args, chains, t0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = Path(args.ref_dir) if args.ref_dir else None
        how = "run"
        if out is not None and (out / "config.json").exists():
            try:
                res, how = bomcmc.load(out), f"read from {out}"
            except bomcmc.BomcmcError:  # killed before it finished
                res, how = bomcmc.resume(out, progress=False), f"continued in {out}"
        else:
            res = bomcmc.sample(posterior=post, sampler="nuts", chains=chains,
                                warmup=args.warmup, draws=args.ref_draws, seed=1000,
                                float64=True, progress=False, out=out,
                                adapt="dual_averaging", max_tree_depth=REF_DEPTH,
                                inverse_mass_matrix=1.0 / post.metric_fn)
    rhat = float(np.max(az.rhat(res.idata, var_names=list(FIELD))["x"]))
    return res, (f"NUTS (mass G, depth ≤ {REF_DEPTH}) {chains} × {args.ref_draws} draws after "
                 f"{args.warmup} warm-up, seed 1000, max R-hat {rhat:.3f}, {how} in "
                 f"{time.time() - t0:.0f} s")


def run_hyper_reference(args, chains: int, t0: float):
    """The reference with σ² and μ sampled: NUTS (Stan's warm-up) on the non-centred
    posterior, which does not have the centred one's funnel between σ² and the field."""
    post = models.get(f"lgcp-hyper-nc-{args.side}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = bomcmc.sample(posterior=post, sampler="nuts", chains=chains, warmup=args.warmup,
                            draws=args.ref_draws, seed=1000, float64=True, progress=False)
    rhat = az.rhat(res.idata, var_names=list(FIELD + HYPER))
    worst = max(float(np.max(rhat[v])) for v in FIELD + HYPER)
    return res, (f"NUTS on lgcp-hyper-nc-{args.side}, {chains} × {args.ref_draws} draws "
                 f"after {args.warmup} warm-up, seed 1000, max R-hat {worst:.3f}, "
                 f"{time.time() - t0:.0f} s")


def hyper_figures(res, m: dict, ref: dict, d: int) -> dict:
    """σ² and μ of a run: mean, sd, |z| of the mean against the reference (moments of the
    field's d cells, then σ², then μ), bulk ESS and R-hat."""
    out = {}
    for k, name in enumerate(HYPER, start=d):
        draws = np.asarray(res.idata.posterior[name])
        out[name] = {"mean": float(m["mean"][k]), "sd": float(np.sqrt(m["var"][k])),
                     "ref_mean": float(ref["mean"][k]), "ref_sd": float(np.sqrt(ref["var"][k])),
                     "z": float(abs(m["mean"][k] - ref["mean"][k])
                                / np.hypot(m["mcse"][k], ref["mcse"][k])),
                     "ess_bulk": float(az.ess(draws, method="bulk")),
                     "rhat": float(az.rhat(draws))}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--side", type=int, default=64)
    ap.add_argument("--samplers", default=",".join(SETTINGS))
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--ref-draws", type=int, default=4000,
                    help="0: the first NUTS run is the reference")
    ap.add_argument("--ref-chains", type=int, default=None,
                    help="chains of the NUTS reference (default: --chains)")
    ap.add_argument("--ref-file", default=None,
                    help="an .npz of the reference's moments: read if it exists, else "
                         "written after the reference run, so a long reference runs once")
    ap.add_argument("--ref-dir", default=None,
                    help="a run directory for the reference's draws (continued if unfinished)")
    ap.add_argument("--hyper", choices=("none", "centred", "nc"), default="none",
                    help="sample σ² and μ too, the field centred or non-centred")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--out", required=True)
    ap.add_argument("--plots", default=None)
    ap.add_argument("--table", action="store_true",
                    help="print the table of the results in --out and stop")
    args = ap.parse_args(argv)
    if args.table:
        print(table(read_results(args.out)))
        return 0
    family = {"none": "lgcp", "centred": "lgcp-hyper", "nc": "lgcp-hyper-nc"}[args.hyper]
    post = models.get(f"{family}-{args.side}")
    names = FIELD if args.hyper == "none" else FIELD + HYPER
    d = args.side**2
    t0 = time.time()
    run = dict(posterior=post, chains=args.chains, float64=True, progress=False)
    samplers = args.samplers.split(",")
    ref = reference = None
    if args.ref_draws:
        ref, reference = reference_moments(args.ref_file, {"x": names},
                                           lambda: run_reference(args, post))
        reference = reference["x"]
    elif "nuts" in samplers:  # the first NUTS run is the reference of the others
        samplers = ["nuts"] + [s for s in samplers if s != "nuts"]
    else:
        raise SystemExit("--ref-draws 0 takes the NUTS run as the reference: include nuts")
    runs, fields = [], {}
    meta = {k: v for k, v in vars(args).items() if k != "out"}
    for sampler in samplers:
        for seed in map(int, args.seeds.split(",")):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                res = bomcmc.sample(warmup=args.warmup, draws=args.draws, seed=seed, **run,
                                    **how(sampler, args.warmup))
            m = moments(res, names)
            if ref is None:
                ref, reference = m, ess_figures(res, FIELD)
            field_m, field_ref = ({k: v[:d] for k, v in x.items()} for x in (m, ref))
            if seed == int(args.seeds.split(",")[0]):
                fields[sampler] = field_m
            row = {"sampler": sampler, "seed": seed, **ess_figures(res, FIELD),
                   **agreement(field_m, field_ref),
                   **({} if args.hyper == "none" else hyper_figures(res, m, ref, d)),
                   "warnings": [str(w.message).split(":")[0] for w in caught
                                if issubclass(w.category, bomcmc.SamplingWarning)]}
            runs.append(row)
            results = {"meta": meta, "settings": SETTINGS,
                       "reference": reference, "runs": runs}
            write_results(args.out, results, complete=False)
            print(f"{sampler} seed {seed}: min ESS/grad {row['per_grad_min']:.2e} (with "
                  f"warm-up {row['per_grad_all_min']:.2e}), min ESS/s {row['per_s_min']:.2f}, "
                  f"max |z| {row['max_abs_z']:.2f}, sd off >10 % "
                  f"{row['share_sd_off_10pct']:.3f}, {time.time() - t0:.0f} s"
                  + "".join(f"; {h} {row[h]['mean']:.3f} ± sd {row[h]['sd']:.3f} (ref "
                            f"{row[h]['ref_mean']:.3f} ± {row[h]['ref_sd']:.3f}), ESS "
                            f"{row[h]['ess_bulk']:.0f}, R-hat {row[h]['rhat']:.3f}"
                            for h in HYPER if h in row), flush=True)
    write_results(args.out, results, complete=True)
    if args.plots:
        out = Path(args.plots)
        out.mkdir(parents=True, exist_ok=True)
        shown = {k: fields[k] for k in ("ahmc", "ahmc_dispersed", "nuts", "armhmc")
                 if k in fields}
        plot_fields(post.facts.true_x, post.facts.counts, shown, out / "fields.png")
        plot_scatter(runs, out / "ess_scatter.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
