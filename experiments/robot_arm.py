#!/usr/bin/env python
"""Robot-arm regression at equal leapfrog budgets: Wang 2012 §4.1, Table 4.1.

    python experiments/robot_arm.py --budget paper --seeds 3 --out docs
    python experiments/robot_arm.py --budget default --seeds 3 --methods ahmc_cv,neal_gibbs,nuts

MacKay's data (rows 1–200 train, 401–600 test), a 2-16-2 tanh network with Neal's
hierarchical priors (Wang's thesis-era code for Wang 2012, `robot_arm.py`:
`ih 0.1:0.1 bh 0.1:0.1 ho x0.1:0.1 bo 1`, noise `0.1:0.1`), one chain per run, every method
started from the same Adam MAP pre-training (2000 steps, sigmas fixed at 0.5: FBM's
`net-gen fix 0.5` plus its fixed-hyperparameter warm-up), the same leapfrog budget per run
(`bomcmc demo`'s budgets: super-transitions × steps), and the first third of the budget
discarded:

- `ahmc_cv`: adaptive HMC (Neal's Gibbs-within-HMC transition, (η, L) tuned by the GP bandit
  on the 8-fold CV reward, box η ∈ [0.01, 1.01], L ∈ [20, L_max]); 8 networks, each spending
  the full budget, predictions pooled (Wang 2012 §3.2, §4.1);
- `neal_gibbs`: Neal's scheme with hand-set η and L. Neal's own robot-arm settings are lost;
  we use the starting point of Wang's FBM runs, L = 500, η = 0.1 (Wang's thesis-era
  code, `robot_arm.py`), with FBM's `sample-sigmas` Gibbs updates every transition;
- `neal_gibbs_fbm`: the same with the sampling phase of FBM's generic regression recipe
  (`doc/Ex-netgp-r.doc`: `sample-sigmas heatbath hybrid 2000:10 0.5`): L = 2000, η = 0.5 and
  Neal's (1994) accept and reject windows of W = 10 states (`kernels/windowed_hmc.py`);
  `neal_gibbs_fbm_03` the same at η = 0.3, the step-size adjustment reduced as that document
  advises when the rejection rate is high, and `neal_gibbs_fbm_03_w1` at η = 0.3 without
  windows (W = 1);
- `nuts`: NUTS on the joint posterior of (log τ, w), Stan's warm-up (300 transitions);
- `nuts_gibbs`: Gibbs draws of the precisions, then NUTS on the weights (if installed);
- `neal_gibbs_ard`: `neal_gibbs` with automatic relevance determination (Table 4.1's "Neal
  HMC with ARD"): one more precision level for the input-to-hidden weights, one per input,
  Gamma with shape 1 around the group's precision (`ih 0.1:0.1:1`; docs/robot_arm.md).

For `ahmc_cv` the report also gives Wang's statistic, the median and mean of the 8 fold
networks' individual test errors (each network's own posterior predictive mean), beside the
pooled prediction. `--figures DIR` draws Figs 4.1–4.3 from the first `ahmc_cv` run: the
learned reward surface with the tried points, the slice at L = 1500 with the acquisition,
and the test error against the number of kept draws.

Writes OUT/robot_arm.md (tables: median and mean ± sd of the test error over seeds, against
Table 4.1) and OUT/robot_arm.json (every run). The methods recorded before the samplers were
renamed (`ahmc-cv`, `neal`, `neal-fbm`, `nuts-gibbs`) are read as their new names.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

METHODS = {  # name: estimator keyword arguments
    "ahmc_cv": dict(sampler="ahmc_cv", folds=8),
    "neal_gibbs": dict(sampler="neal_gibbs", step_size=0.1, steps=500),
    "neal_gibbs_fbm": dict(sampler="neal_gibbs", step_size=0.5, steps=2000, window=10),
    "neal_gibbs_fbm_03": dict(sampler="neal_gibbs", step_size=0.3, steps=2000, window=10),
    "neal_gibbs_fbm_03_w1": dict(sampler="neal_gibbs", step_size=0.3, steps=2000),
    "nuts": dict(sampler="nuts", nuts_warmup=300),
    "nuts_gibbs": dict(sampler="nuts_gibbs", nuts_warmup=300),
    "neal_gibbs_ard": dict(sampler="neal_gibbs", step_size=0.1, steps=500,
                           prior="ih 0.1:0.1:1 bh 0.1:0.1 ho x0.1:0.1 bo 1"),
}
SLICE_L = 1500  # Wang 2012, Fig. 4.2
OLD_NAMES = {"ahmc-cv": "ahmc_cv", "neal": "neal_gibbs", "neal-fbm": "neal_gibbs_fbm",
             "nuts-gibbs": "nuts_gibbs"}  # as recorded in robot_arm.json before the rename


def method_name(name: str) -> str:
    """A method's current name, from its current or its old spelling."""
    name = name.strip()
    return OLD_NAMES.get(name, name.replace("-", "_"))
MARKER = "<!-- hand-written below: kept when the script rewrites the tables -->"
TABLE_4_1 = [
    ("Rios Insua and Müller (1998), RJ-MCMC MLP", 0.00620),
    ("MacKay (1992), Gaussian approximation", 0.00573),
    ("Neal (1996) HMC", 0.00554),
    ("Neal (1996) HMC with ARD", 0.00549),
    ("Andrieu et al., RJ-MCMC", 0.00502),
    ("Adaptive HMC (Wang, median)", 0.00499),
]


def error_curve(reg, Xt, yt, points: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """Test error of the predictive mean of the first s kept draws, for s on a log grid
    (Wang 2012, Fig. 4.3); with CV, a draw's prediction is the mean of its fold networks."""
    from bomcmc.bnn.predict import forward

    f = forward(reg.model_, reg.draws_(), Xt)  # (S·K, n, 2), draw-major
    folds = reg.cv_.folds if reg.cv_ is not None else 1
    f = f.reshape((-1, folds) + f.shape[1:]).mean(axis=1)
    s = np.unique(np.geomspace(1, len(f), points).astype(int))
    running = np.cumsum(f, axis=0)[s - 1] / s[:, None, None]
    return s, np.mean(np.sum((running - yt) ** 2, axis=2), axis=1)


def fold_errors(reg, Xt, yt) -> list[float]:
    """Each fold network's own test error (Wang 2012 §4.1's per-network statistic)."""
    return [float(np.mean(np.sum((m - yt) ** 2, axis=1))) for m in reg.predict_folds(Xt)]


def draw_figures(reg, Xt, yt, out: Path, label: str) -> list[str]:
    """Figs 4.1–4.3 of Wang 2012 from one fitted `ahmc_cv` regressor."""
    from bomcmc.diagnostics import plots

    out.mkdir(parents=True, exist_ok=True)
    made = [plots.plot_reward_surface(reg.result_, out / "reward_surface.png"),
            plots.plot_reward_slice(reg.result_, out / "reward_slice_L1500.png", steps=SLICE_L)]
    s, err = error_curve(reg, Xt, yt)
    made.append(plots.plot_error_curve(
        s, {"pooled predictive mean": err}, out / "error_vs_draws.png", ylabel="test error",
        title=f"robot arm, {label}:\ntest error against the number of kept draws",
        references={"Wang 2012, adaptive HMC": TABLE_4_1[-1][1],
                    "Neal 1996 HMC": TABLE_4_1[2][1]}))
    return [str(p) for p in made]


def run_one(method: str, budget: str, seed: int, workdir: Path,
            figures: Path | None = None) -> dict:
    from bomcmc import BayesianMLPRegressor
    from bomcmc.datasets import robot_arm, robot_arm_truth
    from bomcmc.cli.demo import BUDGETS, NOISE, PRIOR

    X, y = robot_arm("train")
    Xt, yt = robot_arm("test")
    n_super, steps, l_max = BUDGETS[budget][:3]  # its own η box, Wang's
    t0 = time.perf_counter()
    kwargs = {"prior": PRIOR, **METHODS[method]}
    reg = BayesianMLPRegressor(hidden=(16,), noise=NOISE, chains=1,
                               super_transitions=n_super, budget=steps, burn_in=1 / 3,
                               eps_bounds=(0.01, 1.01), steps_bounds=(20, l_max),
                               divergence_margin=None, seed=seed,
                               out=workdir / f"{method}-{seed}", progress=False,
                               overwrite=True, **kwargs)
    from bomcmc.errors import BomcmcError

    try:
        reg.fit(X, y)
    except BomcmcError as e:  # e.g. NUTS's warm-up alone exceeds a small budget
        out = {"method": method, "budget": budget, "seed": seed, "error": str(e)}
        print(json.dumps(out), flush=True)
        return out
    mean = reg.predict(Xt)
    err = float(np.mean(np.sum((mean - yt) ** 2, axis=1)))
    totals = reg.result_.totals
    out = {"method": method, "budget": budget, "seed": seed, "test_error": err,
           "noise_floor": float(np.mean(np.sum((robot_arm_truth(Xt) - yt) ** 2, axis=1))),
           "n_grad": reg.n_grad_, "wall_s": time.perf_counter() - t0,
           "draws_kept": int(reg.idata_.posterior.sizes["draw"]),
           "accept_mean": float(totals["accept_mean"]),
           "divergences": int(totals["divergences"])}
    idata = reg.result_.idata
    if "tuning" in idata.groups():
        t = idata.tuning
        out["eta_L_last"] = [float(t["eps"].values[-1]), int(t["L"].values[-1])]
        out["bo_steps"] = int(t.sizes["step"])
    if reg.cv_ is not None:
        out["fold_errors"] = fold_errors(reg, Xt, yt)
        if figures is not None:
            out["figures"] = draw_figures(reg, Xt, yt, figures, f"{method}, budget '{budget}', "
                                                               f"seed {seed}")
    print(json.dumps(out), flush=True)
    return out


def _key(run: dict) -> tuple:
    return method_name(run["method"]), run["budget"], run["seed"]


def _stats(v):
    v = np.asarray(v, float)
    return float(np.median(v)), float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0


def _fold_stat(runs: list[dict]) -> str:
    """Wang's statistic over a method's runs: the median and the mean of every fold network's
    own test error (all seeds pooled); '–' for single-network methods."""
    errs = [e for r in runs for e in r.get("fold_errors", [])]
    if not errs:
        return "–"
    return f"{np.median(errs):.5f} / {np.mean(errs):.5f} ({len(errs)} networks)"


def write_report(results: list[dict], out: Path, cmd: str) -> None:
    failed = [r for r in results if "error" in r]
    results = [r for r in results if "error" not in r]
    if not results:
        return
    budgets = sorted({r["budget"] for r in results})
    lines = ["# Robot arm (Wang 2012 §4.1, Table 4.1)", "",
             "Produced by `experiments/robot_arm.py` (module docstring for the setting):", "",
             f"    {cmd}", "",
             "Test error: squared error summed over the two outputs, averaged over rows 401–600, "
             "of the posterior predictive mean. Noise floor (the noise-free arm's error on the "
             f"same rows): {results[0]['noise_floor']:.5f}.", ""]
    for b in budgets:
        rs = [r for r in results if r["budget"] == b]
        lines += [f"## Budget '{b}': {rs[0]['n_grad']:,}-ish gradient evaluations per chain", "",
                  "| method | seeds | median | mean ± sd | per-seed errors | wall s (mean) | "
                  "acceptance | fold networks: median / mean |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for m in dict.fromkeys(method_name(r["method"]) for r in rs):
            mr = [r for r in rs if method_name(r["method"]) == m]
            med, mu, sd = _stats([r["test_error"] for r in mr])
            errs = ", ".join(f"{r['test_error']:.5f}" for r in mr)
            lines.append(f"| {m} | {len(mr)} | {med:.5f} | {mu:.5f} ± {sd:.5f} | {errs} | "
                         f"{np.mean([r['wall_s'] for r in mr]):.0f} | "
                         f"{np.mean([r['accept_mean'] for r in mr]):.2f} | "
                         f"{_fold_stat(mr)} |")
        lines.append("")
    for r in failed:
        lines.append(f"- {method_name(r['method'])} (budget '{r['budget']}', seed {r['seed']}) "
                     f"did not run: {r['error']}")
    lines += ["", "## Table 4.1 of Wang 2012 (for scale)", "", "| method | test error |", "| --- | --- |"]
    lines += [f"| {name} | {v:.5f} |" for name, v in TABLE_4_1]
    path = out / "robot_arm.md"
    kept = ""  # the hand-written reading below the marker survives a re-run
    if path.exists() and MARKER in path.read_text():
        kept = path.read_text()[path.read_text().index(MARKER):]
    path.write_text("\n".join(lines) + "\n" + ("\n" + kept if kept else ""))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--budget", default="paper", help="small, default or paper (bomcmc demo's)")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--methods", default="ahmc_cv,neal_gibbs,nuts")
    p.add_argument("--out", default="docs")
    p.add_argument("--figures", default=None,
                   help="draw Wang 2012's Figs 4.1–4.3 from the first ahmc_cv run into this "
                        "folder")
    p.add_argument("--append", action="store_true",
                   help="add to OUT/robot_arm.json instead of replacing it (a run of the same "
                        "method, budget and seed replaces the recorded one)")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results_path = out / "robot_arm.json"
    results = json.loads(results_path.read_text()) if args.append and results_path.exists() \
        else []
    methods = [method_name(m) for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        p.error(f"unknown methods {unknown} (available: {', '.join(METHODS)})")
    cmd = "python experiments/robot_arm.py " + " ".join(sys.argv[1:] if argv is None else argv)
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.seeds):
            for m in methods:
                figures = None
                if args.figures and m == "ahmc_cv" and seed == 0:
                    figures = Path(args.figures)
                run = run_one(m, args.budget, seed, Path(tmp), figures)
                results = [r for r in results if _key(r) != _key(run)] + [run]  # a re-run replaces
                results_path.write_text(json.dumps(results, indent=1))
                write_report(results, out, cmd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
