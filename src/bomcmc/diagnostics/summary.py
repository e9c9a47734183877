"""Diagnostics: ArviZ's ESS, R-hat and MCSE, plus the measures the source documents report.

- bulk and tail ESS, rank-normalised split R-hat, MCSE of the mean: ArviZ (Vehtari et al. 2021);
- ESS per gradient evaluation and ESS per second, each as min / median / max over all
  coordinates (Wang, Mohamed & de Freitas 2013 §5: "we report the minimum, median and
  maximum ESS/L"); gradient
  evaluations are summed over chains and over the sampling phase only (warm-up is reported
  apart, `n_grad_warmup`);
- auto-correlation functions (Wang 2012, Figs 2.3-2.4);
- the warnings of `checks.check_run` (divergences, R-hat, ESS, tree depth, E-BFMI, acceptance,
  chains that never moved).

A coordinate that stays at its first draw in every chain has no defined ESS (ArviZ reports the
number of draws for constant input): its ESS and MCSE are NaN in the table, and it counts as
ESS 0 in the run's min/median/max ESS, ESS per gradient and ESS per second.
"""

from __future__ import annotations

import json
import math

import numpy as np

from . import rank_normalized
from .checks import (FUNCTION_SPACE, check_run, convergence, function_space, index_label, kept,
                     quiet)
from .stillness import constant, frozen


def clean_json(x):
    """NaN/inf -> None so the result is valid JSON; numpy -> Python."""
    if isinstance(x, dict):
        return {k: clean_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean_json(v) for v in x]
    if isinstance(x, np.ndarray):
        return clean_json(x.tolist())
    if isinstance(x, (np.floating, float)):
        x = float(x)
        return x if math.isfinite(x) else None
    if isinstance(x, np.integer):
        return int(x)
    return x


def min_median_max(values) -> dict:
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    if v.size == 0:
        return {"min": None, "median": None, "max": None}
    return {"min": float(v.min()), "median": float(np.median(v)), "max": float(v.max())}


def efficiency(ess, n_grad: float, wall_s: float) -> dict:
    """ESS per gradient evaluation and per second over coordinates (Wang, Mohamed & de Freitas
    2013 §5)."""
    ess = np.asarray(ess, dtype=float).ravel()
    return {
        "ess_per_grad": min_median_max(ess / n_grad) if n_grad > 0 else min_median_max([]),
        "ess_per_s": min_median_max(ess / wall_s) if wall_s > 0 else min_median_max([]),
    }


def run_totals(idata) -> dict:
    attrs = idata.posterior.attrs
    if "totals" not in attrs:
        return {}
    return json.loads(attrs["totals"])


def flat_ess(idata, method: str = "bulk") -> np.ndarray:
    """ESS (`rank_normalized`'s bulk or tail) of every scalar coordinate of every posterior
    variable, as one vector."""
    post = idata.posterior if hasattr(idata, "posterior") else idata
    fn = {"bulk": rank_normalized.ess_bulk, "tail": rank_normalized.ess_tail}[method]
    ess = rank_normalized.on_dataset(post, fn)
    return np.concatenate([np.asarray(ess[v]).ravel() for v in ess.data_vars])


def summarize(idata, totals: dict | None = None, context=None,
              figures: dict | None = None) -> dict:
    """Per-variable mean, sd, MCSE, bulk/tail ESS, R-hat; per-run efficiency; the warnings of
    `check_run`. A coordinate constant within every chain has ESS and MCSE NaN, and counts as
    ESS 0 in the run's figures.

    The layout is the contract of `bomcmc summary --json`. Only the draws the run kept count
    (`checks.kept`: a network fit's burn-in is dropped, "burn_in_dropped" says how many). A
    network run's function-space quantities (`checks.function_space`) come under
    "function_space", first in the table; its weights stay under "variables", with
    "identifiable": False. `context`: for whom the warnings' advice is written
    (`advice.Context`; by default the run's sampler, in Python keywords). `figures`: what
    `convergence` gives for the kept draws, where the run's checks computed it already."""
    idata, totals = kept(idata, totals if totals is not None else run_totals(idata))
    post = idata.posterior
    judged = function_space(idata)
    conv = figures if figures is not None else convergence(idata)
    variables = _variables(post, conv)
    if judged is not None:
        for v in variables.values():
            v["identifiable"] = False
    n_chains = post.sizes.get("chain", 1)
    ess_bulk, ds = conv["ess_bulk"], post
    if judged is not None:  # the run's ESS figures are those of what is identified
        fs_conv = convergence(idata, FUNCTION_SPACE)
        ess_bulk, ds = fs_conv["ess_bulk"], judged
    still = frozen(ds)
    const = constant(ds, still)

    # a coordinate that never moved in any chain gave no effective draws: ESS 0; one constant
    # by construction is left out (unless nothing else is left)
    all_ess = np.concatenate([np.where(still[v], 0.0, np.asarray(ess_bulk[v], dtype=float))
                              .ravel() for v in ess_bulk.data_vars])
    judged_ess = all_ess[~np.concatenate([const[v].ravel() for v in ess_bulk.data_vars])]
    all_ess = judged_ess if judged_ess.size else all_ess
    run = {
        "n_grad": totals.get("n_grad"),
        "n_grad_warmup": totals.get("n_grad_warmup"),
        "wall_s": totals.get("wall_s"),
        "wall_s_warmup": totals.get("wall_s_warmup"),
        "compile_s": totals.get("compile_s"),
        "wall_s_total": totals.get("wall_s_total"),
        "tuner": totals.get("tuner"),
        "tuner_s": totals.get("tuner_s"),
        "tuner_share": _share(totals),
        "divergences": totals.get("divergences"),
        "accept_mean": totals.get("accept_mean"),
        "chains": int(n_chains),
        "draws": int(post.sizes.get("draw", 0)),
        "ess_bulk": min_median_max(all_ess),
        **efficiency(all_ess, totals.get("n_grad") or 0, totals.get("wall_s") or 0.0),
        "lp": log_density_summary(idata),
        "burn_in_dropped": post.attrs.get("burn_in_dropped"),
    }
    out = {"variables": variables, "run": run, "warnings": check_run(idata, totals, conv, context)}
    if judged is not None:
        out["function_space"] = _variables(judged, fs_conv)
    return clean_json(out)


def _variables(ds, conv: dict) -> dict:
    """Per variable of a Dataset (chain, draw, ...): mean, sd, MCSE, bulk/tail ESS, R-hat;
    NaN ESS and MCSE for a coordinate that never moved; where its axes carry a model's
    coords, "coords": each coordinate's labels in ravel order ("Choate", "1,b")."""
    ess_bulk, ess_tail, mcse, rhat = (conv["ess_bulk"], conv["ess_tail"], conv["mcse_mean"],
                                      conv["r_hat"])
    still = frozen(ds)
    variables = {}
    for name in ds.data_vars:
        x = ds[name]

        def undefined(v, name=name):  # no ESS (nor MCSE) for a coordinate that never moved
            return np.where(still[name], np.nan, np.asarray(v, dtype=float))

        variables[name] = {
            "mean": x.mean(("chain", "draw")).values,
            "sd": x.std(("chain", "draw"), ddof=1).values,
            "mcse_mean": undefined(mcse[name].values),
            "ess_bulk": undefined(ess_bulk[name].values),
            "ess_tail": undefined(ess_tail[name].values),
            "r_hat": rhat[name].values if rhat is not None else np.full(x.shape[2:], np.nan),
        }
        axes = [x[d].values for d in x.dims[2:]]
        if any(not np.array_equal(a, np.arange(len(a))) for a in axes):  # a model's coords
            variables[name]["coords"] = [index_label(axes, i) for i in np.ndindex(x.shape[2:])]
    return variables


def log_density_summary(idata) -> dict | None:
    """Mean, sd, bulk ESS and R-hat of the log density after each draw (Stan's lp__): one
    number for the whole chain's mixing, and for a spin system −β × its energy."""
    import arviz as az

    ss = idata.sample_stats if "sample_stats" in idata.groups() else None
    if ss is None or "lp" not in ss:
        return None
    lp = np.asarray(ss["lp"], dtype=float)
    if lp.ndim != 2 or lp.shape[1] < 4 or not np.all(np.isfinite(lp)):
        return None
    with quiet():
        ess = float(az.ess(lp, method="bulk")) if np.ptp(lp) > 0 else float("nan")
        rhat = float(az.rhat(lp)) if lp.shape[0] > 1 and np.ptp(lp) > 0 else float("nan")
    return {"mean": float(lp.mean()), "sd": float(lp.std(ddof=1)), "ess_bulk": ess,
            "r_hat": rhat}


def _share(totals: dict) -> float | None:
    """The tuner's host seconds over the warm-up + sampling seconds (which include them)."""
    tuner_s = totals.get("tuner_s")
    wall = (totals.get("wall_s") or 0.0) + (totals.get("wall_s_warmup") or 0.0)
    return None if tuner_s is None or wall <= 0 else tuner_s / wall


def autocorrelation(x: np.ndarray, max_lag: int | None = None) -> np.ndarray:
    """Auto-correlation of each chain along the last axis... of draws: x is (chains, draws);
    returns (chains, max_lag + 1). Uses ArviZ's FFT estimator."""
    import arviz as az

    x = np.atleast_2d(np.asarray(x, dtype=float))
    acf = np.stack([az.autocorr(c) for c in x])
    if max_lag is not None:
        acf = acf[:, : max_lag + 1]
    return acf


COLUMNS = (("mean", "mean", 4), ("sd", "sd", 4), ("mcse", "mcse_mean", 3),
           ("ess_bulk", "ess_bulk", 4), ("ess_tail", "ess_tail", 4), ("r_hat", "r_hat", 4))


def cell(v, digits: int) -> str:
    """A number in at most 10 characters: `digits` significant figures, nan for None."""
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "nan"
    return f"{float(v):.{digits}g}"


def format_table(summary: dict, max_rows: int = 40) -> str:
    """A table of the summary for the terminal: every column as wide as its widest cell,
    separated by two spaces, so neighbouring numbers never run together."""
    rows = []
    fs = summary.get("function_space") or {}
    groups = [(fs, ""), (summary["variables"], "*" if fs else "")]
    total = sum(np.size(v["mean"]) for g, _ in groups for v in g.values())
    for group, mark in groups:
        for name, s in group.items():
            arrs = {k: np.asarray(v, dtype=object).ravel() for k, v in s.items()
                    if k not in ("identifiable", "coords")}
            labels = s.get("coords") or range(len(arrs["mean"]))
            n = len(arrs["mean"])
            for i in range(n):
                if len(rows) >= max_rows:
                    break
                label = (name if n == 1 else f"{name}[{labels[i]}]") + mark
                rows.append([label] + [cell(arrs[key][i], d) for _, key, d in COLUMNS])
    header = ["variable"] + [title for title, _, _ in COLUMNS]
    widths = [max(len(r[j]) for r in rows + [header]) for j in range(len(header))]

    def line(r):
        return "  ".join([r[0].ljust(widths[0])] +
                         [c.rjust(w) for c, w in zip(r[1:], widths[1:])])

    lines = [line(header)] + [line(r) for r in rows]
    if total > len(rows):
        lines.append(f"... ({total - len(rows)} more)")
    if fs:
        lines.append("* a network weight: not identifiable (hidden units can be permuted and "
                     "their signs flipped), so its ESS and R-hat say little; the predictions "
                     f"and log-likelihood ({', '.join(fs)}) decide the warnings")
    r = summary["run"]

    def mmm(d, p):
        return "/".join("nan" if d[k] is None else f"{d[k]:.{p}g}"
                        for k in ("min", "median", "max"))

    lines += [
        "",
        f"chains={r['chains']} draws={r['draws']} per chain"
        + (f" (after {r['burn_in_dropped']} burn-in draws)" if r.get("burn_in_dropped") else "")
        + f", gradients={r['n_grad']} in total "
        f"over the {r['chains']} chains (warm-up {r['n_grad_warmup']}) wall={_s(r['wall_s'])} s "
        f"(warm-up {_s(r['wall_s_warmup'])} s, compile {_s(r['compile_s'])} s)",
        f"ESS bulk min/median/max      {mmm(r['ess_bulk'], 4)}",
        f"ESS per gradient min/med/max {mmm(r['ess_per_grad'], 3)}",
        f"ESS per second min/med/max   {mmm(r['ess_per_s'], 4)}",
        f"divergences={r['divergences']} mean acceptance={_s(r['accept_mean'])}",
    ]
    if r.get("lp"):
        lp = r["lp"]
        lines.append(f"log density (lp) mean={lp['mean']:.6g} sd={_s(lp['sd'])} "
                     f"ESS bulk={_s(lp['ess_bulk'])} R-hat={_s(lp['r_hat'])}")
    if r.get("tuner") not in (None, "fixed") and r.get("tuner_share") is not None:
        lines.append(f"tuner ({r['tuner']}) host time {_s(r['tuner_s'])} s "
                     f"({100 * r['tuner_share']:.1f}% of warm-up + sampling)")
    return "\n".join(lines)


def _s(v):
    return "nan" if v is None else f"{v:.3g}"
