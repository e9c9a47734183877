"""Adaptive HMC, adaptive RMHMC, RMHMC at Girolami & Calderhead's setting and NUTS on the
stochastic-volatility model with T = 2000: Wang, Mohamed & de Freitas (2013) §5.3, Table 1
(docs/rmhmc.md, "Stochastic volatility").

    python experiments/sv.py --chains 2 --warmup 2000 --draws 5000 --seeds 0,1 \\
        --out benchmarks/results/sv-2000.json

Per (sampler, seed), one run of `--chains` vmapped chains in float64 from bomcmc's dispersed
starts (the paper: 10 000 burn-in, 20 000 draws):
- ahmc    the GP bandit over ε ∈ [10⁻⁴, 10⁻²] × L ∈ {1..300} (the paper's box), on the joint;
- armhmc  Girolami & Calderhead's blocked sampler with the path's (ε, L) tuned by the bandit
          over ε ∈ [0.01, 1] × L ∈ {1..60}, the parameters' move at their setting;
- rmhmc   the blocked sampler at their setting: path ε = 0.1, L_r ~ U{1..50}; parameters
          ε = 0.5, L_r ~ U{1..6}, 5 fixed-point iterations;
- nuts    Stan's warm-up and multinomial NUTS on the joint.
Recorded: bulk ESS (min / median / max) of the latent path x and of the parameters (β, σ, φ
as sampled: log β, log σ, atanh φ), per gradient of the sampling phase, per gradient with the
warm-up's, per second of sampling and per second end to end; agreement of all 2003 means and
sds with a long NUTS reference run (seed 1000, `--ref-chains` chains of `--ref-draws` draws;
`--ref-file` keeps its moments for later runs).
"""

from __future__ import annotations

import argparse
import time
import warnings

import bomcmc

from ess_tables import (agreement, ess_figures, moments, read_results, reference_moments,
                        write_results)

SETTINGS = {
    "ahmc": dict(eps_bounds=(1e-4, 1e-2), steps_bounds=(1, 300)),
    "armhmc": dict(eps_bounds=(0.01, 1.0), steps_bounds=(1, 60)),
    "rmhmc": dict(),  # the blocked kernel's defaults are Girolami & Calderhead's setting
    "nuts": dict(),
}
GROUPS = {"latent": ("x",), "parameters": ("log_beta", "log_sigma", "atanh_phi")}
ALL = GROUPS["latent"] + GROUPS["parameters"]


def table(results: dict) -> str:
    """Table 1's layout: min / median / max bulk ESS of the path and of the parameters, per
    1000 gradients (sampling; with the warm-up's) and per second of sampling, seed means."""
    rows = ["| sampler | group | ESS/1000 grad min / med / max | with warm-up, min | "
            "ESS/s min / med / max | max |z| vs NUTS ref |", "|---|---|---|---|---|---|"]
    for sampler in dict.fromkeys(r["sampler"] for r in results["runs"]):
        rs = [r for r in results["runs"] if r["sampler"] == sampler]
        for group in GROUPS:
            def mean(key, scale=1.0, g=group):
                return scale * sum(r[g][key] for r in rs) / len(rs)
            rows.append(
                f"| {sampler} ({len(rs)} seeds) | {group} | "
                + " / ".join(f"{mean(f'per_grad_{k}', 1e3):.3g}" for k in ("min", "median", "max"))
                + f" | {mean('per_grad_all_min', 1e3):.3g} | "
                + " / ".join(f"{mean(f'per_s_{k}'):.3g}" for k in ("min", "median", "max"))
                + f" | {max(r['max_abs_z'] for r in rs):.2f} |")
    return "\n".join(rows)


def run_reference(args):
    """The long NUTS reference: `--ref-chains` × `--ref-draws` draws, seed 1000."""
    chains = args.ref_chains or args.chains
    t0 = time.time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = bomcmc.sample(posterior="sv-2000", sampler="nuts", chains=chains,
                            warmup=args.warmup, draws=args.ref_draws, seed=1000,
                            float64=True, progress=False)
    return res, (f"NUTS {chains} × {args.ref_draws} draws after {args.warmup} warm-up, "
                 f"seed 1000, {time.time() - t0:.0f} s")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samplers", default=",".join(SETTINGS))
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=2000)
    ap.add_argument("--draws", type=int, default=5000)
    ap.add_argument("--ref-draws", type=int, default=10000)
    ap.add_argument("--ref-chains", type=int, default=None,
                    help="chains of the NUTS reference (default: --chains)")
    ap.add_argument("--ref-file", default=None,
                    help="an .npz of the reference's moments: read if it exists, else "
                         "written after the reference run, so a long reference runs once")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--out", required=True)
    ap.add_argument("--table", action="store_true",
                    help="print the table of the results in --out and stop")
    args = ap.parse_args(argv)
    if args.table:
        print(table(read_results(args.out)))
        return 0
    run = dict(posterior="sv-2000", chains=args.chains, float64=True, progress=False)
    ref, reference = reference_moments(args.ref_file, GROUPS,
                                       lambda: run_reference(args))
    t0 = time.time()
    runs = []
    meta = {k: v for k, v in vars(args).items() if k != "out"}
    for sampler in args.samplers.split(","):
        for seed in map(int, args.seeds.split(",")):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                res = bomcmc.sample(sampler=sampler, warmup=args.warmup, draws=args.draws,
                                    seed=seed, **run, **SETTINGS[sampler])
            row = {"sampler": sampler, "seed": seed,
                   **{g: ess_figures(res, names) for g, names in GROUPS.items()},
                   **agreement(moments(res, ALL), ref),
                   "warnings": [str(w.message).split(":")[0] for w in caught
                                if issubclass(w.category, bomcmc.SamplingWarning)]}
            ss = res.idata.sample_stats
            if "fixed_point_failed" in ss:
                row["fixed_point_failed"] = float(ss.fixed_point_failed.mean())
            runs.append(row)
            results = {"meta": meta, "settings": SETTINGS, "reference": reference,
                       "runs": runs}
            write_results(args.out, results, complete=False)
            lat, par = row["latent"], row["parameters"]
            print(f"{sampler} seed {seed}: min ESS/grad x {lat['per_grad_min']:.2e} "
                  f"θ {par['per_grad_min']:.2e} (with warm-up x {lat['per_grad_all_min']:.2e} "
                  f"θ {par['per_grad_all_min']:.2e}), min ESS/s x {lat['per_s_min']:.2f} "
                  f"θ {par['per_s_min']:.2f}, max |z| {row['max_abs_z']:.2f}, "
                  f"{time.time() - t0:.0f} s", flush=True)
    write_results(args.out, results, complete=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
