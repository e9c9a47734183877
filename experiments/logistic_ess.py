#!/usr/bin/env python
"""ESS per leapfrog step on Bayesian logistic regression: Wang, Mohamed & de Freitas 2013
§5.1, Fig. 2 (top row: AHMC against NUTS).

    python experiments/logistic_ess.py --out docs --seeds 1

The paper: five UCI data sets (australian, german, heart, pima, ripley), 5000 draws after a
burn-in of 1000, 10 chains from differing starting points, AHMC's box ε ∈ [0.01, 0.2] and
L ∈ {1..100}; box plots of the minimum, median and maximum (over coordinates) ESS per
leapfrog step. Here, for every (data set, sampler, seed), one run of `--chains` chains:

- ahmc            bomcmc's AHMC (`sampler="ahmc"`) with the paper's box, `eps_bounds=(0.01,
                  0.2)`, `steps_bounds=(1, 100)`, and our default diagonal metric learned in
                  burn-in (`mass="diag"`);
- ahmc-auto       the same with the default metric (`mass="auto"`: the Laplace start, dense
                  when the correlations call for it);
- ahmc-identity   the same with the identity metric (`mass="identity"`), i.e. the paper's
                  sampler;
- nuts            bomcmc's NUTS with Stan's window warm-up (`benchmarks/run.py`'s
                  `run_bomcmc_nuts`: diagonal metric, δ = 0.8, depth ≤ 10);
- numpyro-nuts    NumPyro's NUTS on the same flat log density from the same starting points
                  (`benchmarks/run.py`'s `run_numpyro`, same settings).

Starting points: bomcmc's built-in initializer for these posteriors, β ~ U(−2, 2)^d
independently per chain (Stan's default), drawn with key fold_in(PRNGKey(seed), 0); every
sampler gets the same points for a seed. AHMC then moves each chain by at most 100 L-BFGS
iterations towards the mode (the authors' step 0, `kernels.ahmc.find_mode_counted`, the
kernel's `start`). The library counts those evaluations in `totals["n_grad_warmup"]` (runs
recorded before it did carry them apart as "n_grad_mode", and `adaptation_grads` adds them
back for those); this script records them apart too, as "n_grad_mode", for the tables.

Recorded per run (JSON): ArviZ bulk ESS over the chains (min / median / max over the
coordinates) and per chain; gradient evaluations of the sampling phase and of the warm-up
(+ mode search for AHMC), summed over chains; the wall time of each phase (sampling phase =
from the dispatch of its first chunk to the end, so the host-side tuner work between chunks
is inside it; compilation outside); for AHMC the tuner's own host time (the `after_chunk`
calls, split into GP fits, acquisition maximisation and the rest), measured by wrapping the
tuner's methods in this process.

Writes OUT/logistic_ess.json (every run), OUT/logistic_ess.png (Fig. 2 style: per-chain
min / median / max ESS per gradient, boxes over chains × seeds) and the generated part of
OUT/logistic_ess.md (between the GENERATED markers; the rest of the file is kept).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import math
import os
import platform
import shlex
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ (a package at the repository root)

DATASETS = ("australian", "german", "heart", "pima", "ripley")
SAMPLERS = ("ahmc", "ahmc-identity", "ahmc-auto", "nuts", "numpyro-nuts")
EPS_BOUNDS = (0.01, 0.2)  # Wang, Mohamed & de Freitas 2013 §5.1
STEPS_BOUNDS = (1, 100)
BEGIN, END = "<!-- BEGIN GENERATED (experiments/logistic_ess.py) -->", "<!-- END GENERATED -->"
LABELS = {"ahmc": "AHMC (diag metric)", "ahmc-identity": "AHMC (identity, paper)",
          "ahmc-auto": "AHMC (auto metric: dense from the Laplace start)",
          "nuts": "bomcmc NUTS", "numpyro-nuts": "NumPyro NUTS"}
COLORS = {"ahmc": "tab:red", "ahmc-identity": "tab:orange", "ahmc-auto": "tab:purple",
          "nuts": "tab:blue",
          "numpyro-nuts": "tab:green"}


# ---------------------------------------------------------------------------------------
# Instrumentation: phase walls of bomcmc runs, the AHMC tuner's host time
# ---------------------------------------------------------------------------------------
class Probe:
    """Wraps (in this process only) bomcmc's chunk dispatch and the GP bandit's methods to
    time, for the current run: when each phase starts and ends, the compiled chunks'
    own time, and the tuner's host time. `reset()` before each run."""

    def __init__(self):
        self.reset()
        self._install()

    def reset(self):
        self.chunk_starts: list[tuple[float, int]] = []  # (perf_counter, start_iter)
        self.chunk_walls = {0: 0.0, 1: 0.0}  # compiled chunk seconds per phase
        self.execute_end = None
        self.warmup = None
        self.after_chunk = {0: 0.0, 1: 0.0}  # tuner.after_chunk seconds per phase
        self.n_after_chunk = {0: 0, 1: 0}
        self.gp_fit = 0.0  # GaussianProcess.add + the Cholesky factorisations (_factor)
        self.propose = 0.0  # bandit.propose (DIRECT + L-BFGS-B), its _factor excluded
        self.n_propose = 0
        self._in_propose = False
        self._factor_in_propose = 0.0

    def _install(self):
        from bomcmc.driver import api as brun
        from bomcmc.driver import engine
        from bomcmc.tuning.ahmc_tuner import AHMCTuner
        from bomcmc.tuning.gp import GaussianProcess
        from bomcmc.tuning import bandit

        probe = self
        pc = time.perf_counter

        orig_run_chunk = engine.Run.run_chunk

        def run_chunk(run, states, knobs, adapt_state, start_iter, n_draws, thin):
            probe.warmup = run.spec.warmup
            t0 = pc()
            probe.chunk_starts.append((t0, int(start_iter)))
            out = orig_run_chunk(run, states, knobs, adapt_state, start_iter, n_draws, thin)
            probe.chunk_walls[int(start_iter >= run.spec.warmup)] += pc() - t0
            return out

        engine.Run.run_chunk = run_chunk

        orig_execute = brun.execute

        def execute(*a, **k):
            try:
                return orig_execute(*a, **k)
            finally:
                probe.execute_end = pc()

        brun.execute = execute  # sample() looks the global up at call time

        orig_after = AHMCTuner.after_chunk

        def after_chunk(tuner, knobs, chunk):
            t0 = pc()
            try:
                return orig_after(tuner, knobs, chunk)
            finally:
                ph = int(chunk.get("phase", 0))
                probe.after_chunk[ph] += pc() - t0
                probe.n_after_chunk[ph] += 1

        AHMCTuner.after_chunk = after_chunk

        orig_propose = bandit.propose  # the tuners call it through the module

        def propose(*a, **k):
            t0 = pc()
            probe._in_propose, probe._factor_in_propose = True, 0.0
            try:
                return orig_propose(*a, **k)
            finally:
                probe._in_propose = False
                probe.propose += pc() - t0 - probe._factor_in_propose
                probe.n_propose += 1

        bandit.propose = propose

        orig_add, orig_factor = GaussianProcess.add, GaussianProcess._factor

        def add(gp, x, r):
            t0 = pc()
            try:
                return orig_add(gp, x, r)
            finally:
                probe.gp_fit += pc() - t0

        def factor(gp):
            t0 = pc()
            try:
                return orig_factor(gp)
            finally:
                dt = pc() - t0
                probe.gp_fit += dt
                if probe._in_propose:
                    probe._factor_in_propose += dt

        GaussianProcess.add, GaussianProcess._factor = add, factor

    def phases(self) -> dict:
        """Warm-up and sampling walls, dispatch to dispatch (host work between chunks
        included; compilation and the initial state excluded)."""
        if not self.chunk_starts or self.execute_end is None:
            return {}
        t_first = self.chunk_starts[0][0]
        samp = [t for t, it in self.chunk_starts if it >= self.warmup]
        t_samp = samp[0] if samp else self.execute_end
        return {"warmup_phase_s": t_samp - t_first, "sampling_phase_s": self.execute_end - t_samp,
                "chunk_s_warmup": self.chunk_walls[0], "chunk_s_sampling": self.chunk_walls[1],
                "n_chunks": len(self.chunk_starts)}

    def tuner(self) -> dict:
        total = self.after_chunk[0] + self.after_chunk[1]
        return {"total_s": total, "warmup_s": self.after_chunk[0],
                "sampling_s": self.after_chunk[1], "gp_fit_s": self.gp_fit,
                "acquisition_s": self.propose,
                "other_s": total - self.gp_fit - self.propose,  # rewards, Welford, bookkeeping
                "bo_steps": self.n_after_chunk[0] + self.n_after_chunk[1],
                "proposals": self.n_propose,
                "per_proposal_ms": (1e3 * (self.propose + self.gp_fit) / self.n_propose
                                    if self.n_propose else None)}


@contextlib.contextmanager
def capture_benchmark_arrays():
    """Intercept the draws and per-transition gradient counts that `benchmarks/run.py`'s
    runners compute internally (they return only summaries), for per-chain figures."""
    import benchmarks.run as bench

    got = {}
    orig_ess, orig_lock = bench._ess_from_draws, bench._lockstep_factor

    def ess(draws):
        got["draws"] = np.asarray(draws)
        return orig_ess(draws)

    def lock(steps):
        got["steps"] = np.asarray(steps)
        return orig_lock(steps)

    bench._ess_from_draws, bench._lockstep_factor = ess, lock
    try:
        yield got
    finally:
        bench._ess_from_draws, bench._lockstep_factor = orig_ess, orig_lock


# ---------------------------------------------------------------------------------------
# AHMC's mode search, counted
# ---------------------------------------------------------------------------------------
def adaptation_grads(raw: dict) -> int:
    """A run's adaptation gradients: the warm-up's, with AHMC's mode search. Runs recorded
    since the library counts the mode search in `n_grad_warmup` say so
    ("n_grad_warmup_includes_mode"); older ones carried it apart, in "n_grad_mode"."""
    if raw.get("n_grad_warmup_includes_mode"):
        return int(raw["n_grad_warmup"])
    return int(raw["n_grad_warmup"]) + int(raw.get("n_grad_mode", 0))


# ---------------------------------------------------------------------------------------
# Runners: each returns a dict of raw figures plus "draws" (C, D, d) and "steps" (C, D)
# ---------------------------------------------------------------------------------------
def run_ahmc(ctx, seed: int, mass: str, probe: Probe) -> dict:
    import bomcmc
    from bomcmc.kernels.ahmc import find_mode_counted
    from bomcmc.tuning.history import summarize_tuning

    from benchmarks.run import _bomcmc_flat_draws, _lockstep_factor

    import jax

    probe.reset()
    t0 = time.perf_counter()
    res = bomcmc.sample(posterior=ctx["name"], sampler="ahmc", chains=ctx["chains"],
                        draws=ctx["draws"], warmup=ctx["warmup"], seed=seed, progress=False,
                        float64=ctx["float64"], eps_bounds=EPS_BOUNDS, steps_bounds=STEPS_BOUNDS,
                        mass=mass)
    e2e = time.perf_counter() - t0
    t = res.totals
    ss = res.idata.sample_stats
    steps = np.asarray(ss["n_grad"])
    # the mode search's evaluations, apart (they are inside n_grad_warmup as well)
    _, mode_n = jax.jit(jax.vmap(lambda x: find_mode_counted(x, ctx["logdensity"])))(
        ctx["starts"])
    tuning = summarize_tuning(res.idata) or {}
    draws = _bomcmc_flat_draws(res, ctx["flat"])
    return {
        "draws": draws, "steps": steps,
        "n_grad": int(t["n_grad"]), "n_grad_warmup": int(t["n_grad_warmup"]),
        "n_grad_mode": int(np.asarray(mode_n).sum()), "n_grad_warmup_includes_mode": True,
        "wall_s": float(t["wall_s"]), "wall_s_warmup": float(t["wall_s_warmup"]),
        "compile_s": float(t["compile_s"]), "end_to_end_s": e2e,
        "divergences": int(t["divergences"]), "accept_mean": float(t["accept_mean"]),
        "step_size": float(np.asarray(ss["step_size"])[:, -1].mean()),
        "final_L": tuning.get("final", {}).get("num_steps"),
        "best": tuning.get("best"),
        "tuning": {k: tuning.get(k) for k in ("bo_steps", "bo_steps_warmup", "proposals",
                                              "distinct_settings", "gp_resets", "last_p_i")},
        "lockstep_factor": _lockstep_factor(steps),
        "phases": probe.phases(), "tuner": probe.tuner(),
    }


def run_nuts(ctx, seed: int, probe: Probe) -> dict:
    from benchmarks.run import run_bomcmc_nuts

    probe.reset()
    with capture_benchmark_arrays() as got:
        raw = run_bomcmc_nuts(ctx, seed)
    raw.update(draws=got["draws"], steps=got["steps"], phases=probe.phases())
    return raw


def run_numpyro_nuts(ctx, seed: int, probe: Probe) -> dict:
    from benchmarks.run import run_numpyro

    with capture_benchmark_arrays() as got:
        raw = run_numpyro(ctx, seed)
    raw.update(draws=got["draws"], steps=got["steps"])
    raw["phases"] = {"warmup_phase_s": raw["wall_s_warmup"], "sampling_phase_s": raw["wall_s"]}
    return raw


# ---------------------------------------------------------------------------------------
# Figures of one run
# ---------------------------------------------------------------------------------------
def mmm(values) -> dict:
    from bomcmc.diagnostics import min_median_max

    return min_median_max(values)


def chain_ess(draws: np.ndarray) -> np.ndarray:
    """(C, d): ArviZ bulk ESS of each chain alone (split in halves, rank-normalised)."""
    from benchmarks.run import _ess_from_draws

    return np.stack([_ess_from_draws(draws[c:c + 1]) for c in range(draws.shape[0])])


def figures(raw: dict, sampler: str) -> dict:
    draws, steps = raw.pop("draws"), raw.pop("steps")
    from benchmarks.run import _ess_from_draws

    ess = _ess_from_draws(draws)
    C = draws.shape[0]
    n_samp = raw["n_grad"]
    n_adapt = adaptation_grads(raw)
    ph = raw.get("phases", {})
    samp_s, warm_s = ph.get("sampling_phase_s"), ph.get("warmup_phase_s")
    out = {k: v for k, v in raw.items() if k not in ("ess",)}
    out.update({
        "ess_bulk": mmm(ess),
        "ess_per_grad": mmm(ess / n_samp),
        "ess_per_grad_incl_adapt": mmm(ess / (n_samp + n_adapt)),
        "ess_per_s": mmm(ess / samp_s) if samp_s else mmm([]),
        "ess_per_s_incl_warmup": mmm(ess / (samp_s + warm_s)) if samp_s and warm_s else mmm([]),
        "grad_per_draw": n_samp / (C * draws.shape[1]),
    })
    # per chain (the paper's boxes: one value per chain run from a differing start). The
    # adaptation's gradients are shared by the chains (AHMC's ε, L are common), split evenly.
    ce = chain_ess(draws)
    g = np.asarray(steps, float).sum(axis=1)
    per = []
    for c in range(C):
        a = mmm(ce[c] / g[c])
        b = mmm(ce[c] / (g[c] + n_adapt / C))
        per.append({"ess_per_grad": a, "ess_per_grad_incl_adapt": b})
    out["per_chain"] = per
    tuner = raw.get("tuner")
    if tuner:
        run_s = (samp_s or 0.0) + (warm_s or 0.0)
        tuner["fraction_of_run"] = tuner["total_s"] / run_s if run_s else None
        tuner["fraction_of_end_to_end"] = tuner["total_s"] / raw["end_to_end_s"]
        tuner["fraction_of_sampling_phase"] = (tuner["sampling_s"] / samp_s if samp_s else None)
        out["tuner"] = tuner
    return out


# ---------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------
def _f(v, fmt="{:.3g}"):
    return "—" if v is None or (isinstance(v, float) and not math.isfinite(v)) else fmt.format(v)


def _mean(vals):
    v = [x for x in vals if x is not None and math.isfinite(x)]
    return float(np.mean(v)) if v else None


def _msd(vals, fmt="{:.3g}"):
    v = [x for x in vals if x is not None and math.isfinite(x)]
    if not v:
        return "—"
    if len(v) == 1:
        return fmt.format(v[0])
    return f"{fmt.format(np.mean(v))} ± {fmt.format(np.std(v, ddof=1))}"


def runs_of(result, ds, s):
    return [r for r in result["runs"] if r["dataset"] == ds and r["sampler"] == s]


def make_figure(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets, samplers = result["meta"]["datasets"], result["meta"]["samplers"]
    stats = ("min", "median", "max")
    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5), constrained_layout=True, squeeze=False)
    width = 0.8 / len(samplers)
    for row, key, title in ((0, "ess_per_grad", "sampling phase gradients (paper)"),
                            (1, "ess_per_grad_incl_adapt",
                             "sampling + warm-up/adaptation gradients")):
        for col, stat in enumerate(stats):
            ax = axes[row, col]
            for j, s in enumerate(samplers):
                data, pooled, pos = [], [], []
                for i, ds in enumerate(datasets):
                    vals = [c[key][stat] for r in runs_of(result, ds, s) for c in r["per_chain"]]
                    data.append([v for v in vals if v is not None])
                    pooled.append(_mean([r[key][stat] for r in runs_of(result, ds, s)]))
                    pos.append(i + (j - (len(samplers) - 1) / 2) * width)
                bp = ax.boxplot(data, positions=pos, widths=width * 0.85, patch_artist=True,
                                showfliers=True, flierprops={"markersize": 3},
                                medianprops={"color": "k", "lw": 1})
                for patch in bp["boxes"]:
                    patch.set_facecolor(COLORS[s])
                    patch.set_alpha(0.55)
                ax.plot(pos, [np.nan if p is None else p for p in pooled], "D", ms=4,
                        mfc="white", mec="k", mew=1)
            ax.set_xticks(range(len(datasets)))
            ax.set_xticklabels(datasets)
            ax.set_yscale("log")
            ax.set_title(f"{stat} ESS / L — {title}", fontsize=10)
            ax.grid(axis="y", which="both", alpha=0.3)
            if col == 0:
                ax.set_ylabel("ESS per gradient evaluation")
    handles = [plt.Rectangle((0, 0), 1, 1, fc=COLORS[s], alpha=0.55) for s in samplers]
    handles.append(plt.Line2D([], [], marker="D", ls="", ms=4, mfc="white", mec="k"))
    fig.legend(handles, [LABELS[s] for s in samplers] + ["pooled over the chains (ArviZ)"],
               loc="outside lower center", ncol=len(samplers) + 1)
    m = result["meta"]
    fig.suptitle(f"Bayesian logistic regression, {m['chains']} chains × {m['draws']} draws after "
                 f"{m['warmup']} warm-up, seeds {m['seeds']} (Wang, Mohamed & de Freitas 2013, "
                 "Fig. 2 top row); boxes: per-chain ESS, over chains and seeds")
    fig.savefig(path, dpi=110)
    plt.close(fig)


def render(result: dict, fig_rel: str, json_rel: str) -> str:
    m = result["meta"]
    datasets, samplers = m["datasets"], m["samplers"]
    L = [f"- Command: `{m['command']}` ({_f(m['elapsed_s'] / 60, '{:.0f}')} min on "
         f"{m['machine']}; {m['date']}).",
         f"- Versions: {', '.join(f'{k} {v}' for k, v in m['versions'].items())}; "
         f"{'float64' if m['float64'] else 'float32'}.",
         f"- Raw results: [{json_rel}]({json_rel}). Figures are means over the "
         f"{len(m['seeds'])} seed(s) {m['seeds']} (± sd when more than one).",
         "", f"![Fig. 2 style box plots]({fig_rel})", "",
         "Boxes: one value per chain (ArviZ bulk ESS of that chain alone over its gradient "
         "evaluations; in the bottom row each chain is charged 1/C of the run's adaptation "
         "gradients), over chains and seeds, as the paper's boxes are over its 10 runs; the "
         "white diamonds are the pooled figures of the tables (ESS over all chains together).", ""]
    for ds in datasets:
        dim = next((r["dim"] for r in result["runs"] if r["dataset"] == ds), None)
        L += [f"### {ds} (d = {dim})", "",
              "| sampler | ESS/grad sampling min / med / max | ESS/grad incl. adaptation "
              "min / med / max | ESS/s sampling min / med / max | ESS/s incl. warm-up min "
              "| grads/draw | grads sampling | grads adaptation (warm-up + mode) "
              "| sampling s | warm-up s | final ε, L | accept | div | tuner s (% of run) |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for s in samplers:
            rr = runs_of(result, ds, s)
            if not rr:
                continue

            def trio(key, fmt="{:.3g}"):
                return " / ".join(_msd([r[key][k] for r in rr], fmt)
                                  for k in ("min", "median", "max"))

            adapt = [adaptation_grads(r) for r in rr]
            mode = [r.get("n_grad_mode", 0) for r in rr]
            mode_cell = f" (mode {_msd(mode, '{:.3g}')})" if any(mode) else ""
            eps = _msd([r.get("step_size") for r in rr], "{:.3g}")
            fl = [r.get("final_L") for r in rr if r.get("final_L") is not None]
            knobs = f"{eps}, L={'/'.join(map(str, fl))}" if fl else f"{eps} (adapted)"
            tun = [r["tuner"] for r in rr if r.get("tuner")]
            tcell = ("—" if not tun else
                     f"{_msd([t['total_s'] for t in tun], '{:.2f}')} "
                     f"({_msd([100 * t['fraction_of_run'] for t in tun], '{:.1f}')}%)")
            L.append(
                f"| {LABELS[s]} | {trio('ess_per_grad')} | {trio('ess_per_grad_incl_adapt')} "
                f"| {trio('ess_per_s', '{:.4g}')} | {_msd([r['ess_per_s_incl_warmup']['min'] for r in rr], '{:.4g}')} "
                f"| {_msd([r['grad_per_draw'] for r in rr], '{:.1f}')} "
                f"| {_msd([r['n_grad'] for r in rr], '{:.3g}')} "
                f"| {_msd(adapt, '{:.3g}')}{mode_cell} "
                f"| {_msd([r['phases'].get('sampling_phase_s') for r in rr], '{:.1f}')} "
                f"| {_msd([r['phases'].get('warmup_phase_s') for r in rr], '{:.1f}')} "
                f"| {knobs} | {_msd([r['accept_mean'] for r in rr], '{:.2f}')} "
                f"| {_msd([r['divergences'] for r in rr], '{:.0f}')} | {tcell} |")
        L.append("")
    L += render_questions(result)
    return "\n".join(L)


def render_questions(result: dict) -> list[str]:
    m = result["meta"]
    datasets, samplers = m["datasets"], m["samplers"]
    L = ["### (a) AHMC's min ESS per gradient against NUTS (sampling-phase accounting)", "",
         "Mean over seeds of the pooled min ESS per gradient; per-seed values in brackets. "
         "\"wins\" counts the data sets where AHMC's mean is higher than bomcmc NUTS's.", "",
         "| data set | " + " | ".join(LABELS[s] for s in samplers) + " |",
         "|---|" + "---|" * len(samplers)]
    means = {}
    for ds in datasets:
        cells = []
        for s in samplers:
            vals = [r["ess_per_grad"]["min"] for r in runs_of(result, ds, s)]
            means[(ds, s)] = _mean(vals)
            cells.append(f"{_f(means[(ds, s)], '{:.4f}')} [{', '.join(_f(v, '{:.4f}') for v in vals)}]")
        L.append(f"| {ds} | " + " | ".join(cells) + " |")
    L.append("")
    verdict = {}
    for a in ("ahmc", "ahmc-identity", "ahmc-auto"):
        if a not in samplers or "nuts" not in samplers:
            continue
        for key, label in (("ess_per_grad", "sampling phase"),
                           ("ess_per_grad_incl_adapt", "incl. adaptation")):
            wins, ratios = 0, []
            for ds in datasets:
                x = _mean([r[key]["min"] for r in runs_of(result, ds, a)])
                y = _mean([r[key]["min"] for r in runs_of(result, ds, "nuts")])
                if x is not None and y:
                    ratios.append(f"{ds} {x / y:.2f}×")
                    wins += x > y
            seed_wins = []
            for seed in m["seeds"]:
                w = 0
                for ds in datasets:
                    x = [r[key]["min"] for r in runs_of(result, ds, a) if r["seed"] == seed]
                    y = [r[key]["min"] for r in runs_of(result, ds, "nuts") if r["seed"] == seed]
                    w += bool(x and y and x[0] is not None and y[0] is not None and x[0] > y[0])
                seed_wins.append(w)
            verdict[(a, key)] = wins
            L.append(f"- {LABELS[a]} vs bomcmc NUTS, {label}: higher on **{wins} of "
                     f"{len(datasets)}** data sets (per seed: {seed_wins}); ratio AHMC ÷ NUTS "
                     f"of min ESS/grad: {', '.join(ratios)}.")
        if "numpyro-nuts" in samplers:
            wins, ratios = 0, []
            for ds in datasets:
                x = means.get((ds, a))
                y = means.get((ds, "numpyro-nuts"))
                if x is not None and y:
                    ratios.append(f"{ds} {x / y:.2f}×")
                    wins += x > y
            L.append(f"- {LABELS[a]} vs NumPyro NUTS, sampling phase: higher on {wins} of "
                     f"{len(datasets)} ({', '.join(ratios)}).")
    L.append("")
    for a in ("ahmc", "ahmc-identity", "ahmc-auto"):
        if (a, "ess_per_grad") in verdict:
            ok = verdict[(a, "ess_per_grad")] >= min(4, len(datasets))
            L.append(f"Paper's claim (AHMC's min ESS/L above NUTS's on ≥ 4 of 5) with "
                     f"{LABELS[a]}: **{'holds' if ok else 'does not hold'}** in this run.")
    L += ["", "### (b) The tuner's own cost", "",
          "Host seconds inside the AHMC tuner's `after_chunk` (reward, GP update and "
          "factorisation, acquisition maximisation by DIRECT + L-BFGS-B, metric bookkeeping), "
          "over the run's warm-up + sampling phases (dispatch of the first chunk to the end; "
          "compilation excluded) and over the end-to-end `bomcmc.sample` call (compilation "
          "and the L-BFGS start included).", "",
          "| data set | sampler | seed | tuner s | GP fits s | acquisition s | other s "
          "| BO steps | proposals | ms per proposal (GP + acq.) | % of run | % of end-to-end "
          "| % of sampling phase |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    fr = []
    for ds in datasets:
        for s in ("ahmc", "ahmc-identity", "ahmc-auto"):
            for r in runs_of(result, ds, s):
                t = r["tuner"]
                fr.append(t["fraction_of_run"])
                L.append(f"| {ds} | {LABELS[s]} | {r['seed']} | {t['total_s']:.2f} "
                         f"| {t['gp_fit_s']:.2f} | {t['acquisition_s']:.2f} | {t['other_s']:.2f} "
                         f"| {t['bo_steps']} | {t['proposals']} | {_f(t['per_proposal_ms'], '{:.1f}')} "
                         f"| {100 * t['fraction_of_run']:.1f} "
                         f"| {100 * t['fraction_of_end_to_end']:.1f} "
                         f"| {_f(100 * t['fraction_of_sampling_phase'] if t['fraction_of_sampling_phase'] is not None else None, '{:.1f}')} |")
    if fr:
        L += ["", f"Tuner share of the run (warm-up + sampling phases): median "
              f"{100 * float(np.median(fr)):.1f}%, max {100 * max(fr):.1f}% over {len(fr)} runs; "
              f"under 5% in **{sum(f < 0.05 for f in fr)} of {len(fr)}**."]
    return L + [""]


def write_doc(result: dict, out: Path, fig: Path, js: Path) -> Path:
    path = out / "logistic_ess.md"
    block = (f"{BEGIN}\n\n{render(result, fig.relative_to(out).as_posix(), js.relative_to(out).as_posix())}"
             f"\n{END}")
    if path.exists():
        text = path.read_text()
        if BEGIN in text and END in text:
            pre, rest = text.split(BEGIN, 1)
            path.write_text(pre + block + rest.split(END, 1)[1])
            return path
    path.write_text("# ESS per leapfrog step on Bayesian logistic regression (Wang, Mohamed & "
                    "de Freitas 2013 §5.1, Fig. 2)\n\nGenerated by "
                    "`experiments/logistic_ess.py` between the markers; text outside them is "
                    "kept.\n\n" + block + "\n")
    return path


def _source_id() -> dict:
    """Where bomcmc was imported from, the repository's commit and a hash of the package's
    .py files (the working tree may hold uncommitted changes)."""
    import hashlib
    import subprocess

    import bomcmc

    pkg = Path(bomcmc.__file__).parent
    h = hashlib.sha256()
    for f in sorted(pkg.rglob("*.py")):
        h.update(f.relative_to(pkg).as_posix().encode())
        h.update(f.read_bytes())
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], check=True,
                                capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = None
    return {"path": str(pkg), "sha256_py": h.hexdigest()[:16], "repo_head": commit}


def _versions() -> dict:
    from importlib import metadata

    out = {}
    for p in ("bomcmc", "jax", "numpyro", "blackjax", "arviz", "optax", "scipy"):
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            pass
    return out


def from_json(path: Path, out: Path, no_doc: bool = False) -> int:
    """Figure and document from a saved results file; seeds with a missing run (a run
    stopped early) are dropped."""
    result = json.loads(path.read_text())
    m = result["meta"]
    want = {(d, s) for d in m["datasets"] for s in m["samplers"]}
    complete = [seed for seed in m["seeds"]
                if want <= {(r["dataset"], r["sampler"]) for r in result["runs"]
                            if r["seed"] == seed}]
    if not complete:
        sys.exit(f"{path}: no seed has all its runs")
    if complete != m["seeds"]:
        print(f"{path}: keeping complete seeds {complete} of {m['seeds']}")
    result["runs"] = [r for r in result["runs"] if r["seed"] in complete]
    m["seeds"] = complete
    out.mkdir(parents=True, exist_ok=True)
    js, fig = out / "logistic_ess.json", out / "logistic_ess.png"
    if js.resolve() != path.resolve():
        js.write_text(json.dumps(result, indent=1) + "\n")
    make_figure(result, fig)
    print(f"wrote {fig}")
    if not no_doc:
        print(f"wrote {write_doc(result, out, fig, js)}")
    return 0


# ---------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------
def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description="ESS per leapfrog step, Wang, Mohamed & de Freitas 2013 §5.1 / Fig. 2")
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--samplers", default=",".join(SAMPLERS),
                   help=f"comma-separated, from {', '.join(SAMPLERS)}")
    p.add_argument("--chains", type=int, default=10)
    p.add_argument("--draws", type=int, default=5000)
    p.add_argument("--warmup", type=int, default=1000)
    p.add_argument("--seeds", type=int, default=1, help="repetitions, seeds 0..SEEDS-1")
    p.add_argument("--float32", action="store_true", help="default: float64 (as the paper's "
                   "MATLAB)")
    p.add_argument("--out", default="docs", help="writes OUT/logistic_ess.{md,json,png}")
    p.add_argument("--no-doc", action="store_true", help="write only the JSON and the figure")
    p.add_argument("--cache-dir", default=None, help="JAX compilation cache (default: a "
                   "temporary directory)")
    p.add_argument("--resume", action="store_true",
                   help="keep the runs already in OUT/logistic_ess.json (same chains, draws, "
                        "warm-up, float) and do only the missing ones")
    p.add_argument("--from-json", default=None, metavar="JSON",
                   help="no sampling: redraw the figure and the document from saved results "
                        "(a run stopped early keeps only its complete seeds)")
    args = p.parse_args(argv)
    if args.from_json:
        return from_json(Path(args.from_json), Path(args.out), args.no_doc)
    datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    samplers = [s.strip() for s in args.samplers.split(",") if s.strip()]
    bad = [d for d in datasets if d not in DATASETS] + [s for s in samplers if s not in SAMPLERS]
    if bad:
        sys.exit(f"unknown data set(s) / sampler(s): {bad}")
    if args.seeds < 1:
        sys.exit("--seeds must be >= 1")
    t_start = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    float64 = not args.float32

    import jax

    import bomcmc

    if float64:
        bomcmc.set_float64(True)
    import arviz  # noqa: F401  (imported up front so no run pays for it)

    from benchmarks.run import CompileClock, _clean, machine_info
    from bomcmc import models
    from bomcmc.posterior import flatten

    clock = CompileClock()
    probe = Probe()
    seeds = list(range(args.seeds))
    command = "python " + " ".join(shlex.quote(x) for x in (
        [os.path.relpath(sys.argv[0], ROOT) if argv is None else "experiments/logistic_ess.py"]
        + (sys.argv[1:] if argv is None else list(argv))))
    result = {"meta": {
        "command": command, "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "datasets": datasets, "samplers": samplers, "seeds": seeds, "chains": args.chains,
        "draws": args.draws, "warmup": args.warmup, "float64": float64,
        "eps_bounds": EPS_BOUNDS, "steps_bounds": STEPS_BOUNDS,
        "starts": "bomcmc's initializer, U(-2, 2)^d per chain, key fold_in(PRNGKey(seed), 0)",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "machine_info": machine_info(), "versions": _versions(),
        "bomcmc_source": _source_id()}, "runs": []}
    js = out / "logistic_ess.json"
    fig = out / "logistic_ess.png"

    elapsed_before = 0.0
    if args.resume and js.exists():
        old = json.loads(js.read_text())
        same = all(old["meta"][k] == result["meta"][k]
                   for k in ("chains", "draws", "warmup", "float64"))
        if not same:
            sys.exit(f"{js}: other settings; cannot resume")
        result["runs"] = [r for r in old["runs"]
                          if r["dataset"] in datasets and r["sampler"] in samplers]
        elapsed_before = float(old["meta"].get("elapsed_s") or 0.0)
        result["meta"]["resumed"] = old["meta"].get("resumed", []) + [
            {"date": old["meta"]["date"], "runs_kept": len(result["runs"]),
             "elapsed_s": elapsed_before}]
        print(f"resuming: {len(result['runs'])} runs kept from {js}")
    done = {(r["dataset"], r["sampler"], r["seed"]) for r in result["runs"]}

    def save():
        result["meta"]["elapsed_s"] = elapsed_before + time.perf_counter() - t_start
        js.write_text(json.dumps(_clean(result), indent=1) + "\n")

    with tempfile.TemporaryDirectory(prefix="bomcmc-logess-") as tmp:
        bomcmc.enable_compilation_cache(args.cache_dir or tmp)
        for seed in seeds:
            for ds in datasets:
                name = f"logistic-{ds}"
                flat = flatten(models.get(name))
                starts = flat.init_flat(jax.random.fold_in(jax.random.PRNGKey(seed), 0),
                                        args.chains)
                ctx = {"name": name, "flat": flat, "logdensity": flat.logdensity_fn,
                       "starts": starts, "chains": args.chains, "draws": args.draws,
                       "warmup": args.warmup, "float64": float64, "clock": clock}
                for s in samplers:
                    if (ds, s, seed) in done:
                        continue
                    t0 = time.perf_counter()
                    if s == "ahmc":
                        raw = run_ahmc(ctx, seed, "diag", probe)
                    elif s == "ahmc-identity":
                        raw = run_ahmc(ctx, seed, "identity", probe)
                    elif s == "ahmc-auto":
                        raw = run_ahmc(ctx, seed, "auto", probe)
                    elif s == "nuts":
                        raw = run_nuts(ctx, seed, probe)
                    else:
                        raw = run_numpyro_nuts(ctx, seed, probe)
                    rec = {"dataset": ds, "sampler": s, "seed": seed, "dim": flat.dim,
                           **figures(raw, s)}
                    result["runs"].append(rec)
                    tun = rec.get("tuner")
                    print(f"[{ds:10s} seed {seed}] {s:13s} ESS/grad min/med/max "
                          f"{rec['ess_per_grad']['min']:.4f}/{rec['ess_per_grad']['median']:.4f}/"
                          f"{rec['ess_per_grad']['max']:.4f} incl.adapt min "
                          f"{rec['ess_per_grad_incl_adapt']['min']:.4f} ESS/s min "
                          f"{rec['ess_per_s']['min']:.1f} grads {rec['n_grad']}+"
                          f"{adaptation_grads(rec)} eps "
                          f"{rec.get('step_size', float('nan')):.3g} L {rec.get('final_L')} "
                          f"acc {rec['accept_mean']:.2f} div {rec['divergences']}"
                          + (f" tuner {tun['total_s']:.2f}s ({100 * tun['fraction_of_run']:.1f}%)"
                             if tun else "")
                          + f" [{time.perf_counter() - t0:.0f}s]", flush=True)
                    save()
    save()
    make_figure(_clean(result), fig)
    print(f"wrote {js}\nwrote {fig}")
    if not args.no_doc:
        print(f"wrote {write_doc(_clean(result), out, fig, js)}")
    print(f"done in {time.perf_counter() - t_start:.0f} s (experiment total "
          f"{result['meta']['elapsed_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
