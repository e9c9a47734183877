"""`bomcmc demo`: the robot-arm regression of Wang 2012 §4.1 (Table 4.1), the main job.

MacKay's robot-arm data (shipped, `datasets.robot_arm`): train on rows 1–200, test on rows
401–600. Network 2-16-2, tanh, Neal's hierarchical priors as Wang's reproduction set them
(Wang's thesis-era code, `robot_arm.py`, as FBM settings: `ih 0.1:0.1 bh 0.1:0.1 ho x0.1:0.1
bo 1`, noise `0.1:0.1`), one chain of 8 networks (8-fold cross-validation as one joint chain),
Neal's Gibbs-within-HMC transition with η and L tuned by the GP bandit on the CV reward
(Wang 2012 §3.2), box η ∈ [0.01, 1.01],
L ∈ [20, L_max] (the paper: [20, 5020]).

Budgets (leapfrog steps per chain = super-transitions × steps per super-transition):
- "small": 20 × 2 000 (a smoke test), η ∈ [0.01, 0.3];
- "default": 100 × 12 000 = 1.2 M, η ∈ [0.01, 0.3];
- "paper": 200 × 24 000 = 4.8 M, η ∈ [0.01, 1.01], L ∈ [20, 5020] (Wang 2012 §4.1).

The small and default budgets search η below 0.3, not up to Wang's 1.01: on this posterior
Neal's trajectories diverge in every transition at η ≈ 1 and in a few per cent at η ≈ 0.4
(measured on the small budget: 122 of 493 transitions diverged with the paper's box), and the
bandit, whose annealing p_i = exp(−0.01 (i − 1)) stays above 0.8 over 20 super-transitions,
keeps exploring the whole box after the burn-in, so the kept draws carried those
divergences. The paper budget keeps Wang's box, to reproduce Table 4.1's setting.
Run times: docs/robot_arm.md and docs/benchmarks.md ("Figures behind code comments").

Test error: squared error summed over the two outputs, averaged over the 200 test cases, of
the posterior predictive mean (Wang 2012, Table 4.1's convention); the noise floor is the same
error of the noise-free arm position (0.00438 on rows 401–600).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ..errors import BomcmcError

PRIOR = "ih 0.1:0.1 bh 0.1:0.1 ho x0.1:0.1 bo 1"  # Wang's thesis-era code, `robot_arm.py`
NOISE = "0.1:0.1"
BUDGETS = {  # name: (super-transitions, leapfrog steps each, L upper bound, η upper bound)
    "small": (20, 2000, 500, 0.3),
    "default": (100, 12000, 2000, 0.3),
    "paper": (200, 24000, 5020, 1.01),
}
PAPER = {"neal_hmc": 0.00554, "adaptive_hmc": 0.00499}  # Wang 2012, Table 4.1


def run_demo(budget: str = "default", out: str | os.PathLike = "bomcmc-demo", seed: int = 0,
             progress: bool = True, overwrite: bool = False, sampler: str = "ahmc_cv",
             plots: bool = True) -> dict:
    """Fit the robot-arm network, write the run, plots and summary.json into `out`, and
    return the summary (test_error, noise_floor, n_grad, wall_s, ...)."""
    import numpy as np

    from ..bnn.regressor import BayesianMLPRegressor
    from ..datasets import robot_arm, robot_arm_truth
    from ..store import atomic_write_text

    if budget not in BUDGETS:
        raise BomcmcError(f"budget must be one of {', '.join(BUDGETS)}, got '{budget}'")
    out = Path(out)
    if (out / "summary.json").exists() and not overwrite:
        raise BomcmcError(f"{out} already holds a demo run (use --overwrite, or another --out)")
    t0 = time.perf_counter()
    X, y = robot_arm("train")
    Xt, yt = robot_arm("test")
    n_super, steps, l_max, eta_max = BUDGETS[budget]
    reg = BayesianMLPRegressor(
        hidden=(16,), prior=PRIOR, noise=NOISE, sampler=sampler, folds=8, chains=1,
        super_transitions=n_super, budget=steps, burn_in=1 / 3, eps_bounds=(0.01, eta_max),
        steps_bounds=(20, l_max), divergence_margin=None, seed=seed, out=out, progress=progress,
        overwrite=True)
    (out / "summary.json").unlink(missing_ok=True)
    reg.fit(X, y)
    mean, std = reg.predict(Xt, return_std=True)
    test_error = float(np.mean(np.sum((mean - yt) ** 2, axis=1)))
    noise_floor = float(np.mean(np.sum((robot_arm_truth(Xt) - yt) ** 2, axis=1)))
    summary = {
        "test_error": test_error,
        "noise_floor": noise_floor,
        "n_grad": reg.n_grad_,
        "wall_s": time.perf_counter() - t0,
        "budget": budget,
        "super_transitions": n_super,
        "leapfrog_per_super_transition": steps,
        "sampler": sampler,
        "seed": seed,
        "draws_kept": int(reg.idata_.posterior.sizes["draw"]),
        "divergences_kept": int(np.sum(reg.idata_.sample_stats["diverging"].values)),
        "paper_table_4_1": PAPER,
        "out": str(out),
    }
    tuning = _final_tuning(reg)
    if tuning:
        summary.update(tuning)
    if plots:
        summary["plots"] = _plots(reg, out, Xt, yt, mean, std)
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=1))
    return summary


def _final_tuning(reg) -> dict:
    """What the bandit learned: the incumbent, the tried (η, L) of highest GP mean reward
    (what the printout and `bomcmc summary` report as the learned setting), and, in
    summary.json only, the bandit's last proposal (final_eta, final_L: the setting a next
    super-transition would run, an exploration possibly), with the number of BO steps."""
    from ..tuning.history import tuning_from_idata
    from .commands import step_symbol

    found = tuning_from_idata(reg.result_.idata)
    if found is None:
        return {}
    tuner, history = found
    best = tuner.best()
    return {"learned_eta": float(best["step_size"]), "learned_L": int(best["num_steps"]),
            "step_symbol": step_symbol(reg.result_.idata.posterior.attrs),
            "final_eta": float(tuner.step_size), "final_L": int(tuner.num_steps),
            "bo_steps": len(history)}


def _plots(reg, out: Path, Xt, yt, mean, std) -> list[str]:
    import numpy as np

    from ..diagnostics import plots

    made = []
    if "tuning" in reg.result_.idata.groups():
        try:
            made.append(str(plots.plot_reward_surface(reg.result_, out / "reward_surface.png")))
        except ValueError:
            pass
    plt = plots._pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6), layout="constrained", sharey=True)
    try:
        for j, ax in enumerate(axes):
            ax.errorbar(yt[:, j], mean[:, j] - yt[:, j], yerr=2 * std[:, j], fmt="o", ms=3,
                        lw=0.6, alpha=0.7, label="prediction − target, ± 2 sd of the mean")
            for sign in (-1, 1):
                ax.axhline(sign * 2 * 0.05, color="grey", lw=0.8, ls="--",
                           label="± 2 × noise sd (0.05)" if sign > 0 else None)
            ax.axhline(0.0, color="black", lw=0.8)
            ax.set_xlabel(f"test target y{j + 1}")
            ax.set_ylabel(f"residual of y{j + 1}'s predictive mean")
            ax.legend(fontsize=8, loc="lower right")
        fig.suptitle(f"robot arm, rows 401–600: residuals of the posterior predictive mean "
                     f"(test error {float(np.mean(np.sum((mean - yt) ** 2, axis=1))):.5f})",
                     fontsize=10)
        path = out / "predictions.png"
        fig.savefig(path, dpi=100)
        made.append(str(path))
    finally:
        plt.close(fig)
    return made


def format_summary(s: dict) -> str:
    lines = [
        f"robot arm, 2-16-2 tanh network, {s['sampler']}, budget '{s['budget']}' "
        f"({s['super_transitions']} x {s['leapfrog_per_super_transition']} leapfrog steps)",
        f"  test error   {s['test_error']:.5f}   (squared error summed over the 2 outputs, "
        "mean over the 200 test cases)",
        f"  noise floor  {s['noise_floor']:.5f}   (the noise-free arm position's error)",
        f"  paper (Wang 2012, Table 4.1): Neal's HMC {PAPER['neal_hmc']}, adaptive HMC "
        f"{PAPER['adaptive_hmc']}",
        f"  gradients    {s['n_grad']}   wall {s['wall_s']:.1f} s   draws kept "
        f"{s['draws_kept']}, of them divergent {s['divergences_kept']} "
        f"({s['divergences_kept'] / max(s['draws_kept'], 1):.1%})",
    ]
    if "learned_eta" in s:
        from .commands import learned_setting

        lines.append(f"  GP bandit of {s['sampler']}: {s['bo_steps']} BO steps; "
                     + learned_setting(s["learned_eta"], s["learned_L"],
                                       s.get("step_symbol", "η")))
    lines.append(f"  wrote {s['out']}/ (run/idata.nc, summary.json"
                 + "".join(f", {Path(p).name}" for p in s.get("plots", [])) + ")")
    return "\n".join(lines)
