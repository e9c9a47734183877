#!/usr/bin/env python
"""Dexter text classification with ten cross-validation networks at equal leapfrog budgets:
Wang (2012) §4.2, Table 4.2; Wang, Mohamed & de Freitas (2013) §5.4.

    python experiments/dexter.py --budget small --seeds 0 --out /tmp/dexter
    python experiments/dexter.py --budget default --seeds 0,1,2 --out docs

Data: the challenge's 300 training documents (the folds) and its 300 validation documents (the
reported error), 20 000 word counts each (`bomcmc.datasets.dexter`; the test set's labels were
never released, so Table 4.3 cannot be reproduced). Each fold network gets the 295 features
with the highest χ² score on its own training cases, as log(1 + count) over their sd there
(`bnn/features.py`). The network is 295-20-8-2 tanh with a softmax output and the priors
`ih 0.05:1:2 bh 0.2:1 hh x0.3:1 ho x0.1:1:4 bo 10` (FBM notation). The ten networks are one
joint chain (`bnn/cv.py`), started at sigmas 0.5 and small weights; every method spends the
same number of leapfrog steps (super-transitions × steps) and the first third is discarded:

- `ahmc_cv`: Neal's Gibbs-within-HMC transition with (η, L) tuned by the GP bandit on the
  folds' held-out misclassification, box η ∈ [0.01, 0.61] × L ∈ [20, 2000] (L capped at
  the budget of one super-transition), Wang's box;
- `ahmc_cv_logloss`: the same with the folds' held-out log loss as the reward (1 / the mean
  of −log p(label) of the held-out cases under the draw-averaged probabilities);
- `neal_gibbs`: Neal's scheme at a fixed η = 0.1, L = 500 (Wang's starting point for the
  robot arm; Neal & Zhang's Dexter settings are not published), capped at the budget;
- `nuts_gibbs`: Gibbs draws of the precisions, then NUTS on the weights (dual-averaging η in a
  warm-up that counts against the budget).

Reported per run: each fold network's validation error (predictive probabilities averaged over
the kept draws, on its own features), their mean and median (Wang's statistic) and the
error of the majority vote of the ten networks. Budgets: `small` checks the pipeline (120
training cases, 40 features, a 40-6-4-2 network, 4 super-transitions of 200 steps);
`default` is 40 × 2000; `paper` 160 × 20 000.

`--figures DIR` draws Wang (2012)'s Figs 4.4–4.6 from the first `ahmc_cv` run: the learned
reward surface with the tried settings, the validation error against the number of kept
draws, and the reward's slice at η = 0.22 against L with the acquisition function.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import bomcmc
from bomcmc.bnn.cv import CVModel, fold_masks, fold_vote
from bomcmc.bnn.features import fold_feature_sets, fold_inputs
from bomcmc.bnn.network import BNN
from bomcmc.bnn.samplers import ahmc_gibbs_sampler, neal_sampler, nuts_gibbs_sampler
from bomcmc.datasets import dexter

PRIOR = "ih 0.05:1:2 bh 0.2:1 hh x0.3:1 ho x0.1:1:4 bo 10"
FOLDS = 10
BUDGETS = {  # super-transitions, steps each; training cases, features, hidden units
    "small": dict(supers=4, steps=200, cases=120, features=40, hidden=(6, 4),
                  nuts_warmup=5, nuts_depth=5),
    "default": dict(supers=40, steps=2000, cases=300, features=295, hidden=(20, 8),
                    nuts_warmup=100, nuts_depth=10),
    "paper": dict(supers=160, steps=20000, cases=300, features=295, hidden=(20, 8),
                  nuts_warmup=300, nuts_depth=10),
}
TABLE_4_2 = {"adaptive HMC (Wang 2012)": dict(mean=0.0730, median=0.0700, vote=0.0667),
             "Neal's HMC (Wang 2012)": dict(vote=0.0800)}
METHODS = ("ahmc_cv", "ahmc_cv_logloss", "neal_gibbs", "nuts_gibbs")
SLICE_ETA = 0.22  # Wang 2012, Fig. 4.6
MARKER = "<!-- hand-written below: kept when the script rewrites the tables -->"


def data(budget: dict, seed: int = 0):
    """Training and validation sets, cut to the budget's cases (both classes kept equal)."""
    X, y = dexter("train")
    Xv, yv = dexter("valid")
    n = budget["cases"]
    if n < len(y):
        rng = np.random.default_rng(seed)
        rows = np.concatenate([rng.choice(np.flatnonzero(y == c), n // 2, replace=False)
                               for c in (0.0, 1.0)])
        X, y = X[np.sort(rows)], y[np.sort(rows)]
    return X, y, Xv, yv


def build(budget: dict, X, y, Xv):
    """The CV model with each fold's own features, and the validation inputs per fold."""
    masks = fold_masks(len(y), FOLDS)
    chosen = fold_feature_sets(X, y, masks, k=budget["features"])
    inputs, valid = fold_inputs(X, chosen, masks, Xv)
    base = BNN(inputs[0], y.astype(int), hidden=budget["hidden"], prior=PRIOR,
               likelihood="class", activation="tanh", name="dexter")
    return CVModel(base, FOLDS, inputs=inputs), valid


def run(method: str, cv: CVModel, budget: dict, seed: int, chains: int = 1,
        checks: bool = True, stuck_zero: bool = False, eps_bounds=(0.01, 0.61)):
    steps = budget["steps"]
    max_grad = budget["supers"] * steps
    post = cv.posterior()
    if method in ("ahmc_cv", "ahmc_cv_logloss"):
        lo, hi = 20, min(2000, steps)
        kw = dict(sampler=ahmc_gibbs_sampler(cv), adapt=None, eps_bounds=tuple(eps_bounds),
                  steps_bounds=(lo, hi), budget=steps, warmup=0, draws=max_grad // lo + 1,
                  reward="cv" if method == "ahmc_cv" else "cv_logloss", stuck_zero=stuck_zero)
    elif method == "neal_gibbs":
        L = min(500, steps)
        kw = dict(sampler=neal_sampler(cv), adapt=None, step_size=0.1, steps=L, warmup=0,
                  draws=max_grad // L + 1)
    elif method == "nuts_gibbs":
        kw = dict(sampler=nuts_gibbs_sampler(cv), adapt="dual_averaging",
                  warmup=budget["nuts_warmup"], max_tree_depth=budget["nuts_depth"],
                  draws=max_grad + 1, chunk_size=10)  # the budget is checked per chunk
    else:
        raise SystemExit(f"unknown method {method!r} (one of {', '.join(METHODS)})")
    return bomcmc.sample(posterior=post, chains=chains, seed=seed, max_grad=max_grad,
                         progress=False, checks=checks, **kw), max_grad


def kept_mask(res, max_grad: int, chain: int = 0) -> np.ndarray:
    """Which of a chain's draws spent gradients in (max_grad / 3, max_grad]: the first third
    is burn-in, and what the last chunk ran past the budget is not counted."""
    spent = res.totals["n_grad_warmup"] / res.totals["chains"] + np.cumsum(
        np.asarray(res.idata.sample_stats["n_grad"].values, float)[chain])
    keep = (spent > max_grad / 3) & (spent <= max_grad)
    if not keep.any():
        raise SystemExit(f"no draws between a third of the budget and the budget ({max_grad})")
    return keep


def chain_draws(res, chain: int = 0) -> np.ndarray:
    """One chain's flat joint draws (draws, K·dim), in the posterior group's variable order."""
    post = res.idata.posterior
    return np.concatenate([np.asarray(post[v].values[chain]).reshape(post.sizes["draw"], -1)
                           for v in post.data_vars], axis=1)


def kept(res, max_grad: int, chain: int = 0) -> np.ndarray:
    """One chain's flat joint draws in (max_grad / 3, max_grad] (`kept_mask`)."""
    return chain_draws(res, chain)[kept_mask(res, max_grad, chain)]


def bandit_steps(res, steps: int) -> dict | None:
    """The bandit's settings and rewards, one per super-transition (None without a tuner),
    with each super-transition's mean acceptance and divergent transitions over the chains
    (its draws: `steps` // L each, in order)."""
    if "tuning" not in res.idata.groups():
        return None
    t = res.idata.tuning
    out = {k: np.asarray(t[k].values).tolist() for k in ("eps", "L", "reward") if k in t}
    ss = res.idata.sample_stats
    acc = np.asarray(ss["acceptance_rate"].values)  # (chains, draws)
    div = np.asarray(ss["diverging"].values)
    ends = np.cumsum([max(1, steps // int(L)) for L in out["L"]])
    starts = np.concatenate([[0], ends[:-1]])
    out["accept"] = [float(acc[:, a:b].mean()) if b <= acc.shape[1] else None
                     for a, b in zip(starts, ends)]
    out["divergent"] = [int(div[:, a:b].sum()) if b <= div.shape[1] else None
                        for a, b in zip(starts, ends)]
    return out


def chain_stats(res, max_grad: int, chain: int) -> dict:
    """Divergent transitions and mean acceptance among a chain's kept draws."""
    ss = res.idata.sample_stats
    keep = kept_mask(res, max_grad, chain)
    out = {"kept_draws": int(keep.sum())}
    if "diverging" in ss:
        out["divergences"] = int(np.asarray(ss["diverging"].values[chain])[keep].sum())
    if "acceptance_rate" in ss:
        out["accept_mean"] = float(np.asarray(ss["acceptance_rate"].values[chain])[keep].mean())
    return out


def errors(cv: CVModel, draws, valid, yv) -> dict:
    out = fold_vote(cv, draws, valid)
    per_net = (out["votes"] != yv[None]).mean(axis=1)
    return {"per_network": per_net.tolist(), "mean": float(per_net.mean()),
            "median": float(np.median(per_net)), "vote": float((out["pred"] != yv).mean())}


def error_curve(cv: CVModel, draws, valid, yv, points: int = 50) -> dict:
    """Validation error of the majority vote and the fold networks' mean when each network
    averages its probabilities over the first s kept draws, for s on a log grid (Wang 2012,
    Fig. 4.5)."""
    from bomcmc.bnn.predict import forward

    per_fold = cv.fold_positions(np.asarray(draws).reshape(-1, cv.dim))  # (S, K, dim)
    s = np.unique(np.geomspace(1, len(per_fold), points).astype(int))
    labels = []
    for k in range(cv.folds):
        f = forward(cv.base, per_fold[:, k], valid[k])  # logits (S, n, classes)
        p = np.exp(f - f.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        labels.append((np.cumsum(p, axis=0)[s - 1]).argmax(axis=-1))  # (len(s), n)
    labels = np.stack(labels)  # (K, len(s), n)
    vote = (labels.mean(axis=0) > 0.5).astype(int)  # two classes; ties go to class 0
    return {"draws": s.tolist(), "vote": (vote != yv).mean(axis=1).tolist(),
            "mean": (labels != yv).mean(axis=2).mean(axis=0).tolist()}


def draw_figures(res, curve: dict, out: Path, label: str) -> list[str]:
    """Figs 4.4–4.6 of Wang 2012 from one `ahmc_cv` run."""
    from bomcmc.diagnostics import plots

    out.mkdir(parents=True, exist_ok=True)
    made = [plots.plot_reward_surface(res, out / "reward_surface.png"),
            plots.plot_reward_slice(res, out / "reward_slice_eta0.22.png", step_size=SLICE_ETA)]
    made.append(plots.plot_error_curve(
        curve["draws"], {"majority vote": curve["vote"], "fold networks' mean": curve["mean"]},
        out / "error_vs_draws.png", ylabel="validation error",
        title=f"Dexter, {label}:\nvalidation error against the number of kept draws",
        references={"Wang 2012, adaptive HMC, vote":
                    TABLE_4_2["adaptive HMC (Wang 2012)"]["vote"]}))
    return [str(p) for p in made]


def report(rows: list[dict], budget_name: str) -> str:
    lines = [f"| method | runs | mean | median | vote (sd over seeds) |", "|---|---|---|---|---|"]
    for name, vals in TABLE_4_2.items():
        lines.append(f"| {name} | – | {vals.get('mean', '–')} | {vals.get('median', '–')} | "
                     f"{vals['vote']} |")
    for method in dict.fromkeys(r["method"] for r in rows):
        rs = [r for r in rows if r["method"] == method]
        v = np.array([r["errors"]["vote"] for r in rs])
        lines.append(f"| {method} ({budget_name}) | {len(rs)} | "
                     f"{np.mean([r['errors']['mean'] for r in rs]):.4f} | "
                     f"{np.mean([r['errors']['median'] for r in rs]):.4f} | "
                     f"{v.mean():.4f} ({v.std(ddof=1) if len(v) > 1 else 0.0:.4f}) |")
    return "\n".join(lines) + "\n"


def write(out: Path, args, budget: dict, rows: list[dict]) -> None:
    """OUT/dexter.json (every run) and the tables of OUT/dexter.md, whose hand-written part
    below the marker is kept."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "dexter.json").write_text(json.dumps({"budget": budget, "runs": rows}, indent=1,
                                                default=list))
    md = out / "dexter.md"
    kept_text = md.read_text() if md.exists() else ""
    kept_text = kept_text[kept_text.index(MARKER):] if MARKER in kept_text else MARKER + "\n"
    seeds = ",".join(str(s) for s in sorted({r["seed"] for r in rows}))
    methods = ",".join(dict.fromkeys(r["method"] for r in rows))
    md.write_text(
        "# Dexter: validation error of the ten cross-validation networks\n\n"
        f"`python experiments/dexter.py --budget {args.budget} --seeds {seeds} "
        f"--methods {methods} --out {args.out}`\n\n"
        + report(rows, args.budget) + "\n" + kept_text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", choices=tuple(BUDGETS), default="small")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--figures", default=None,
                    help="draw Wang 2012's Figs 4.4–4.6 from the first ahmc_cv run here")
    ap.add_argument("--supers", type=int, default=None,
                    help="super-transitions instead of the budget's (a fraction of 'paper')")
    ap.add_argument("--steps", type=int, default=None,
                    help="leapfrog steps per super-transition instead of the budget's")
    ap.add_argument("--chains", type=int, default=1,
                    help="chains per run, each scored as its own row; `neal_gibbs`'s are "
                         "independent runs, `ahmc_cv`'s share one bandit (its reward pools them)")
    ap.add_argument("--no-checks", action="store_true",
                    help="skip the run's convergence checks over every weight (minutes at the "
                         "paper's budget; the networks' errors are what is scored)")
    ap.add_argument("--stuck-zero", action="store_true",
                    help="AHMC: a super-transition in which a chain accepted, in expectation, "
                         "under half a trajectory scores 0 (bnn.cv.cv_reward)")
    ap.add_argument("--eps-bounds", type=float, nargs=2, default=(0.01, 0.61),
                    metavar=("LO", "HI"), help="AHMC's η box (default: Wang's 0.01 0.61)")
    ap.add_argument("--append", action="store_true",
                    help="add to OUT/dexter.json (same budget) instead of replacing it; a run "
                         "of the same method and seed replaces the recorded one")
    args = ap.parse_args(argv)
    budget = dict(BUDGETS[args.budget])
    budget.update({k: v for k, v in (("supers", args.supers), ("steps", args.steps))
                   if v is not None})
    X, y, Xv, yv = data(budget)
    cv, valid = build(budget, X, y, Xv)
    out = Path(args.out)
    rows, t0 = [], time.time()
    if args.append and (out / "dexter.json").exists():
        old = json.loads((out / "dexter.json").read_text())
        rows = [r for r in old["runs"] if r["budget"] == args.budget]
    figures = Path(args.figures) if args.figures else None
    for method in args.methods.split(","):
        for seed in map(int, args.seeds.split(",")):
            res, max_grad = run(method, cv, budget, seed, args.chains, not args.no_checks,
                                args.stuck_zero, args.eps_bounds)
            t = res.totals
            for chain in range(args.chains):
                draws = kept(res, max_grad, chain)
                row = {"method": method, "seed": seed, "budget": args.budget,
                       "n_grad": (t["n_grad"] + t["n_grad_warmup"]) / t["chains"],
                       "supers": budget["supers"], "steps": budget["steps"],
                       "device": str(__import__("jax").devices()[0].device_kind),
                       "wall_s": t["wall_s_total"], "errors": errors(cv, draws, valid, yv),
                       **chain_stats(res, max_grad, chain)}
                if args.chains > 1:
                    row.update(chain=chain, chains=args.chains)
                if args.stuck_zero and method.startswith("ahmc"):
                    row["stuck_zero"] = True
                if tuple(args.eps_bounds) != (0.01, 0.61) and method.startswith("ahmc"):
                    row["eps_bounds"] = list(args.eps_bounds)
                bandit = bandit_steps(res, budget["steps"]) if chain == 0 else None
                if bandit is not None:
                    row["bandit"] = bandit
                if method == "ahmc_cv" and figures is not None:
                    curve = error_curve(cv, draws, valid, yv)
                    row["curve"] = curve
                    row["figures"] = draw_figures(res, curve, figures,
                                                  f"ahmc_cv, budget '{args.budget}', seed {seed}")
                    figures = None  # the first run only
                rows = [r for r in rows if (r["method"], r["seed"], r.get("chain", 0))
                        != (method, seed, row.get("chain", 0))] + [row]
                e = row["errors"]
                write(out, args, budget, rows)  # after every run: a kill loses only the current one
                print(f"{method} seed {seed} chain {chain}: validation error mean "
                      f"{e['mean']:.4f}, median {e['median']:.4f}, vote {e['vote']:.4f}; "
                      f"{row['n_grad']:.0f} gradients, {row.get('divergences')} divergent of "
                      f"{row['kept_draws']} kept, {time.time() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
