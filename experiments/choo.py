"""Choo (2000) ch. 5: Neal's Gibbs updates against Dynamical A and B on his 8-point data, by
the variance of means of the log hyperparameters (docs/bnn_dynamical.md).

    python experiments/choo.py --hidden 8 --out benchmarks/results/choo-h8.json
    python experiments/choo.py --hidden 8,12,16,20 --grid thesis --scale 1   # his full design

Per network size: (1) a master run of Neal's scheme (many chains, low rejection) gives the
posterior means of log σ = −½ log τ, the mass p of Choo's region G (log σ_u > 4 or
log σ_a > 4) and 50 start states, 40 outside G and 10 inside (§5.4); (2) every method runs
50 chains from those starts at each (L, η) of a grid, for a leapfrog budget of N_f steps per
chain for Gibbs, N_f/2 for Dynamical A and N_f/3 for B (Choo's compute accounting, Table
5.5), keeping N_s draws, one per super-transition; ρ of each log σ and g = (ρ_δ ρ_u ρ_v
ρ_a)^¼ with stratified 90 % bootstrap intervals (§5.3–5.4.3); (3) each method is re-run at
its best grid point with a new seed (Table 5.12) and the methods' g are compared by paired
bootstrap ratios (§5.7). The adaptive samplers (`ahmc_gibbs`, `ahmc_dyn_b`: the GP bandit
over (η, L) during the run) get the same budgets. `--scale` shrinks N_f (1 = Choo's
614 400 leapfrog steps per Gibbs chain).

Dynamical B comes in two variants here: `dyn_b` (and `ahmc_dyn_b`) with the Gauss–Newton
estimate of the log-precisions' curvature, which the results files before the thesis's own
estimate existed were made with, and `dyn_b_choo` with Choo's estimate (eqs. 4.37–4.43, the
library's default), η_h = η_p, and `dyn_b_choo_r` with η_h = `--eta-ratio`·η_p:

    python experiments/choo.py --hidden 8,12,16,20 --grid choo --scale 0.25 \
        --best-from benchmarks/results/choo-thesis-grid-scale0.25.json --out B.json
    python experiments/choo.py --hidden 16 --grid ratio --eta-ratio 0.01 --scale 0.25 \
        --best-from B.json --out R.json
    python experiments/choo.py --hidden 16 --grid ratio-long --eta-ratio 0.01 --scale 1 \
        --best-from B.json --out R1.json
    python experiments/choo.py --hidden 8,12,16,20 --grid edges --scale 0.25 \
        --best-from B.json --out E.json
    python experiments/choo.py --hidden 8,12,20 --grid edges2 --scale 0.25 \
        --best-from E.json --out E2.json
    python experiments/choo.py --hidden 8,12,20 --grid choo --scale 1 --best-from E.json \
        --out F.json   # Table 5.12's protocol: each optimum re-run at the full N_f
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import jax
import numpy as np

import bomcmc
from bomcmc.bnn.choo_data import choo_model
from bomcmc.bnn.dynamical import DynamicalA, DynamicalB
from bomcmc.bnn.samplers import ahmc_gibbs_sampler, dynamical_sampler, neal_sampler
from bomcmc.diagnostics.variance_of_means import (bootstrap_interval, combined,
                                                  equilibrium_starts, ratio_interval,
                                                  variance_of_means)

HYPERS = ("noise", "ih0", "ho", "bh0", "bo")  # δ, u, v, a, b in Choo's order
G_OF = [0, 1, 2, 3]  # g = (ρ_δ ρ_u ρ_v ρ_a)^¼: the output bias left out (Choo 2000 §5.3)
COST = {"gibbs": 1, "dyn_a": 2, "dyn_b": 3, "dyn_b_choo": 3, "dyn_b_choo_r": 3,
        "ahmc_gibbs": 1, "ahmc_dyn_b": 3}  # Table 5.5
CURVATURE = {"dyn_b": "gauss_newton", "ahmc_dyn_b": "gauss_newton", "dyn_b_choo": "choo",
             "dyn_b_choo_r": "choo"}
GRIDS = {  # (L values, η values); Choo's optima (Table 5.11) lie on these grids
    "small": {"gibbs": ([50, 200], [0.283, 0.4]), "dyn_a": ([25, 100], [0.32, 0.453]),
              "dyn_b": ([17, 66], [0.08, 0.16])},
    "thesis": {"gibbs": ([25, 50, 100, 200, 400], [0.2, 0.283, 0.4, 0.566]),
               "dyn_a": ([25, 50, 100, 200], [0.226, 0.32, 0.453, 0.64]),
               "dyn_b": ([17, 33, 66, 133, 266, 533], [0.04, 0.08, 0.16, 0.32])},
    # the thesis's Dynamical B against the earlier optima of Gibbs and Gauss–Newton B
    # (`--best-from` a thesis-grid file)
    "choo": {"gibbs": ([], []), "dyn_b": ([], []),
             "dyn_b_choo": ([17, 66, 266], [0.04, 0.08, 0.16])},
    # Choo 2000 §6.2.3: the thesis's B with η_h = `--eta-ratio`·η_p (`dyn_b_choo_r`), longer
    # trajectories, against the optima of a `--grid choo` file (`--best-from`)
    "ratio": {"gibbs": ([], []), "dyn_b": ([], []), "dyn_b_choo": ([], []),
              "dyn_b_choo_r": ([266, 1066, 4266], [0.32, 0.64])},
    # his l = 17067 has 3 transitions per chain at N_f/4: run at --scale 1 (12 transitions)
    "ratio-long": {"gibbs": ([], []), "dyn_b": ([], []), "dyn_b_choo": ([], []),
                   "dyn_b_choo_r": ([4266, 17067], [0.32])},
    # the `--grid choo` optima of the thesis's B that lay on that grid's edge (longest L at 8
    # and 16 units, largest η at 12 and 20), each with the points beyond that edge
    "edges": {"gibbs": ([], []), "dyn_b": ([], []),
              "dyn_b_choo": {8: [(266, 0.08), (533, 0.08), (1066, 0.08)],
                             12: [(66, 0.16), (66, 0.32), (133, 0.32)],
                             16: [(266, 0.08), (533, 0.08), (1066, 0.08)],
                             20: [(66, 0.16), (66, 0.32), (33, 0.32)]}},
    # the same for the thesis-grid optima of Gibbs (largest η at 8 units, smallest at 12) and
    # Gauss–Newton B (longest L at 20); the sizes not listed re-run the earlier optimum
    "edges2": {"gibbs": {8: [(100, 0.566), (100, 0.8), (50, 0.8)],
                         12: [(50, 0.2), (50, 0.141), (100, 0.141)]},
               "dyn_b": {20: [(533, 0.08), (1066, 0.08), (2133, 0.08)]}},
    # Choo's Fig. 6.1: the four methods at 16 units from one master, A at its thesis-grid
    # optimum, the others at those of a `--grid edges` file (`--best-from`)
    "fig61": {"gibbs": ([], []), "dyn_a": {16: [(100, 0.32)]}, "dyn_b": ([], []),
              "dyn_b_choo": ([], [])},
}
THESIS_G = {  # Table 5.12: g at the optimum, and Table 5.11's (L, η)
    8: {"gibbs": (0.0784, 200, 0.4), "dyn_a": (0.1039, 25, 0.64), "dyn_b": (0.0683, 533, 0.04)},
    12: {"gibbs": (0.0818, 200, 0.4), "dyn_a": (0.0797, 100, 0.453),
         "dyn_b": (0.1021, 533, 0.08)},
    16: {"gibbs": (0.0883, 100, 0.4), "dyn_a": (0.1389, 200, 0.453),
         "dyn_b": (0.0731, 66, 0.16)},
    20: {"gibbs": (0.1159, 50, 0.283), "dyn_a": (0.0901, 100, 0.32),
         "dyn_b": (0.0848, 17, 0.16)},
}
N_F = 614_400  # Choo's leapfrog steps per Gibbs chain (Table 5.10)


def log_sigma(idata) -> dict[str, np.ndarray]:
    post = idata.posterior
    return {h: -0.5 * np.asarray(post[f"log_tau.{h}"].values) for h in HYPERS}


def master(model, chains: int, transitions: int, seed: int):
    """Neal's scheme, η = 0.3, L ~ U{1..40} (low rejection, Choo §5.4.1), half burn-in."""
    res = bomcmc.sample(model.posterior(), sampler=neal_sampler(model), chains=chains,
                        draws=transitions // 10, warmup=transitions, seed=seed, thin=10,
                        progress=False, step_size=0.3, steps=40, random_steps=True,
                        chunk_size=200)
    return res


def starts_from(model, res, n=50, n_in_g=10, seed=0):
    post = res.idata.posterior
    ls = log_sigma(res.idata)
    in_g = (ls["ih0"] > 4) | (ls["bh0"] > 4)  # (chains, draws)
    chains, draws = in_g.shape
    flat_g = in_g.T.ravel()  # interleave chains: consecutive picks come from different chains
    sep = max(1, (chains * draws) // (n + 20))
    idx = equilibrium_starts(np.zeros(chains * draws), n, sep, in_region=flat_g,
                             n_in_region=n_in_g, seed=seed)
    c, d = idx % chains, idx // chains
    tree = model.init_position()
    starts = {"log_tau": {k: np.asarray(post[f"log_tau.{k}"].values)[c, d]
                          for k in tree["log_tau"]},
              "w": {k: np.asarray(post[f"w.{k}"].values)[c, d] for k in tree["w"]}}
    return starts, flat_g[idx], float(in_g.mean())


def run_method(model, method, starts, steps, eta, n_f, n_s, seed, eta_ratio=1.0):
    """Chains from `starts` for n_f / COST leapfrog steps each, N_s kept draws; Dynamical B
    with the estimate CURVATURE names and η_h = eta_ratio·η (`dyn_b_choo_r` only)."""
    budget = n_f // COST[method]
    first = jax.tree_util.tree_map(lambda a: a[0], starts)
    chains = len(starts["w"]["ih0"])
    knobs = dict(step_size=eta, steps=steps)
    if method == "dyn_b_choo_r":
        knobs["eta_ratio"] = eta_ratio
    if method in ("gibbs", "ahmc_gibbs"):
        post = dataclasses.replace(model.posterior(init=first), chain_inits=starts)
        sampler = neal_sampler(model) if method == "gibbs" else ahmc_gibbs_sampler(model)
    else:
        blocks = (DynamicalA(model) if method == "dyn_a"
                  else DynamicalB(model, hyper_curvature=CURVATURE[method]))
        init = starts if method == "dyn_a" else jax.vmap(blocks.to_noncentred)(starts)
        post = dataclasses.replace(blocks.posterior(init=first),
                                   chain_inits=jax.tree_util.tree_map(np.asarray, init))
        sampler = dynamical_sampler(blocks, tuned=method.startswith("ahmc"))
    if method.startswith("ahmc"):
        knobs = dict(eps_bounds=(0.02, 1.0), steps_bounds=(5, 300), budget=budget // n_s,
                     random_steps=False)
        return bomcmc.sample(post, sampler=sampler, chains=chains, draws=budget, warmup=0,
                             seed=seed, progress=False, max_grad=budget * (
                                 2 if method == "ahmc_dyn_b" else 1), adapt=None,
                             chunk_size=min(budget // 5, 2000), **knobs)
    transitions = budget // steps
    thin = max(1, transitions // n_s)
    return bomcmc.sample(post, sampler=sampler, chains=chains, draws=transitions // thin,
                         warmup=0, seed=seed, thin=thin, progress=False,
                         chunk_size=min(transitions // thin, 500), **knobs)


def rejection_vs_l(h: int, eta: float = 0.32, ratios=(1.0, 0.01), ls=(17, 66, 266, 533),
                   chains: int = 20, transitions: int = 15, seed: int = 5) -> list[dict]:
    """Choo 2000 §6.2.3, Fig. 6.6: B's rejection rate against L at η_p = `eta` for each
    η_h/η_p in `ratios`, both estimates of the hyperparameters' curvature; `chains` starts
    from Neal's scheme after 3000 transitions, `transitions` per (L, ratio)."""
    model = choo_model(h)
    ref = bomcmc.sample(model.posterior(), sampler=neal_sampler(model), chains=chains, draws=1,
                        warmup=3000, seed=seed, progress=False, step_size=0.3, steps=40,
                        random_steps=True, chunk_size=500)
    post = ref.idata.posterior
    tree = model.init_position()
    starts = {part: {k: np.asarray(post[f"{part}.{k}"].values)[:, -1] for k in tree[part]}
              for part in ("log_tau", "w")}
    first = jax.tree_util.tree_map(lambda a: a[0], starts)
    rows = []
    for estimate in ("choo", "gauss_newton"):
        blocks = DynamicalB(model, hyper_curvature=estimate)
        init = jax.tree_util.tree_map(np.asarray, jax.vmap(blocks.to_noncentred)(starts))
        posterior = dataclasses.replace(blocks.posterior(init=first), chain_inits=init)
        for ratio in ratios:
            rej = []
            for steps in ls:
                res = bomcmc.sample(posterior, sampler=dynamical_sampler(blocks), chains=chains,
                                    draws=transitions, warmup=0, seed=seed + 2, progress=False,
                                    step_size=eta, steps=steps, eta_ratio=ratio,
                                    chunk_size=transitions, adapt=None)
                rej.append(1 - float(res.idata.sample_stats.acceptance_rate.mean()))
            rows.append({"estimate": estimate, "eta_p": eta, "ratio": ratio, "L": list(ls),
                         "rejection": rej})
            print(f"{estimate} η_p={eta} η_h/η_p={ratio}: rejection "
                  + ", ".join(f"L={n}: {r:.2f}" for n, r in zip(ls, rej)), flush=True)
    return rows


def measure(res, truth, strata, p, n_s):
    ls = log_sigma(res.idata)
    n = ls["ih0"].shape[1]
    pick = np.linspace(0, n - 1, min(n_s, n)).round().astype(int)  # N_s evenly spaced draws
    keep = {h: v[:, pick] for h, v in ls.items()}
    means = np.stack([keep[h].mean(axis=1) for h in HYPERS], axis=1)  # (chains, 5)
    r = variance_of_means(means, truth, strata, p)
    g = combined(r.rho, which=G_OF)
    lo, hi = bootstrap_interval(means, truth, statistic=lambda r: combined(r.rho, G_OF),
                                strata=strata, p=p, resamples=1000)
    acc = float(res.idata.sample_stats.acceptance_rate.mean())
    return means, {"rho": r.rho.tolist(), "rho_se": r.se.tolist(), "g": g, "g_90": [lo, hi],
                   "rejection": 1 - acc, "wall_s": res.totals["wall_s"],
                   "n_grad": res.totals["n_grad"]}


def plot(path: str, outdir: str) -> list[str]:
    """Figures from a results file: g against L (at each method's best η) and against η (at
    its best L) per network size (Choo's Figs 5.9–5.12 as slices), g at the re-run optimum
    against the number of hidden units with 90 % intervals (Fig. 5.13), and the paired
    bootstrap ratios (Fig. 5.15)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = json.loads(Path(path).read_text())
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    made = []
    sizes = sorted(res["sizes"], key=int)
    for h in sizes:
        size = res["sizes"][h]
        fig, axes = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
        for method, rows in size["grid"].items():
            best = size["best"][method]
            at_eta = sorted((r for r in rows if r["eta"] == best["eta"]), key=lambda r: r["L"])
            at_l = sorted((r for r in rows if r["L"] == best["L"]), key=lambda r: r["eta"])
            for ax, pts, key in ((axes[0], at_eta, "L"), (axes[1], at_l, "eta")):
                x = [r[key] for r in pts]
                g = [r["g"] for r in pts]
                err = np.array([[r["g"] - r["g_90"][0], r["g_90"][1] - r["g"]] for r in pts]).T
                ax.errorbar(x, g, yerr=np.maximum(err, 0), marker="o", capsize=3,
                            label=f"{method} ({'η' if key == 'L' else 'L'} = "
                                  f"{best['eta'] if key == 'L' else best['L']})")
        for ax, label in ((axes[0], "trajectory length L"), (axes[1], "step-size factor η")):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(label)
            ax.set_ylabel("g (lower is better)")
            ax.legend(fontsize=8)
        fig.suptitle(f"Choo's network, {h} hidden units: g over the grid (90 % bootstrap)")
        name = out / f"choo-grid-h{h}.png"
        fig.savefig(name, dpi=100)
        plt.close(fig)
        made.append(str(name))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
    methods = list(res["sizes"][sizes[0]]["best"])
    for k, method in enumerate(methods):
        hs = [int(h) for h in sizes if method in res["sizes"][h]["best"]]
        b = [res["sizes"][str(h)]["best"][method] for h in hs]
        g = np.array([r["g"] for r in b])
        err = np.array([[r["g"] - r["g_90"][0], r["g_90"][1] - r["g"]] for r in b]).T
        axes[0].errorbar(np.array(hs) + 0.3 * (k - 2), g, yerr=np.maximum(err, 0), marker="o",
                         capsize=3, label=method)
        thesis = [res["sizes"][str(h)]["best"][method].get("thesis") for h in hs]
        if all(thesis):
            axes[0].plot(hs, [t[0] for t in thesis], ls=":", marker="x", color=f"C{k}",
                         label=f"{method}, Choo 2000 Table 5.12")
    axes[0].set_xlabel("hidden units")
    axes[0].set_ylabel("g at the re-run optimum")
    axes[0].set_xticks([int(h) for h in sizes])
    axes[0].legend(fontsize=7)
    pairs = [q for q in ("gibbs/dyn_b", "dyn_a/dyn_b", "gibbs/dyn_a", "gibbs/ahmc_gibbs",
                         "dyn_b/ahmc_dyn_b", "gibbs/dyn_b_choo", "dyn_b/dyn_b_choo",
                         "dyn_b_choo/dyn_b_choo_r", "gibbs/dyn_b_choo_r")
             if q in res["sizes"][sizes[0]]["ratios"]]
    for k, pair in enumerate(pairs):
        vals = [res["sizes"][h]["ratios"].get(pair) for h in sizes]
        hs = [int(h) for h, v in zip(sizes, vals) if v]
        v = np.array([x for x in vals if x])
        axes[1].errorbar(np.array(hs) + 0.25 * (k - len(pairs) / 2), v[:, 0],
                         yerr=[v[:, 0] - v[:, 1], v[:, 2] - v[:, 0]], marker="o", capsize=3,
                         label=pair)
    axes[1].axhline(1.0, color="grey", ls="--")
    axes[1].set_yscale("log")
    axes[1].set_xlabel("hidden units")
    axes[1].set_ylabel("ratio of g (paired bootstrap, 90 %)")
    axes[1].set_xticks([int(h) for h in sizes])
    axes[1].legend(fontsize=7)
    name = out / "choo-g-vs-hidden.png"
    fig.savefig(name, dpi=100)
    plt.close(fig)
    made.append(str(name))
    return made


def table(path: str) -> str:
    """Markdown tables of a results file: per size and method the optimum (L, η), the
    rejection rate, ρ of each log σ ± its standard error and g with its 90 % interval, beside
    Choo's Table 5.11–5.12 values; then the paired ratios of g."""
    res = json.loads(Path(path).read_text())
    names = ("δ", "u", "v", "a", "b")
    lines = [f"N_f = {res['n_f']} leapfrog steps per Gibbs chain, N_s = {res['n_s']} "
             f"kept draws per chain", "",
             "| H | method | L | η | rejection | " + " | ".join(f"ρ_{n}" for n in names)
             + " | g [90 %] | Choo: L, η, g |",
             "|" + "---|" * (11)]
    for h, size in sorted(res["sizes"].items(), key=lambda kv: int(kv[0])):
        for method, b in size["best"].items():
            rho = " | ".join(f"{r:.4f} ± {e:.4f}" for r, e in zip(b["rho"], b["rho_se"]))
            thesis = b.get("thesis")
            choo = f"{thesis[1]}, {thesis[2]}, {thesis[0]}" if thesis else "–"
            lines.append(f"| {h} | {method} | {b.get('L', 'bandit')} | {b.get('eta', 'bandit')} "
                         f"| {b['rejection']:.2f} | {rho} | {b['g']:.4f} [{b['g_90'][0]:.4f}, "
                         f"{b['g_90'][1]:.4f}] | {choo} |")
    lines += ["", "| H | " + " | ".join(res["sizes"][next(iter(res["sizes"]))]["ratios"])
              + " |", "|" + "---|" * (1 + len(res["sizes"][next(iter(res["sizes"]))]["ratios"]))]
    for h, size in sorted(res["sizes"].items(), key=lambda kv: int(kv[0])):
        lines.append(f"| {h} | " + " | ".join(f"{v[0]:.2f} [{v[1]:.2f}, {v[2]:.2f}]"
                                               for v in size["ratios"].values()) + " |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hidden", default="8")
    ap.add_argument("--grid", choices=sorted(GRIDS), default="small")
    ap.add_argument("--scale", type=float, default=0.25, help="fraction of Choo's N_f")
    ap.add_argument("--ns", type=int, default=100, help="kept draws per chain (N_s)")
    ap.add_argument("--master", type=int, default=20000, help="master transitions per chain")
    ap.add_argument("--adaptive", action="store_true", help="also ahmc_gibbs, ahmc_dyn_b")
    ap.add_argument("--best-from", metavar="JSON",
                    help="skip the grid: re-run each method at the optimum an earlier results "
                         "file found (e.g. a grid at a smaller --scale)")
    ap.add_argument("--eta-ratio", type=float, default=1.0,
                    help="η_h/η_p of dyn_b_choo_r (Choo 2000 §6.2.3: 1/100)")
    ap.add_argument("--rejection-vs-l", action="store_true",
                    help="only Fig. 6.6: B's rejection against L for η_h/η_p = 1 and 1/100 at "
                         "the first --hidden size")
    ap.add_argument("--out", required=True, help="results JSON")
    ap.add_argument("--plot", metavar="DIR", help="only draw the figures of --out into DIR")
    args = ap.parse_args(argv)
    if args.plot:
        print("\n".join(plot(args.out, args.plot)))
        print(table(args.out))
        return
    bomcmc.enable_compilation_cache()
    if args.rejection_vs_l:
        rows = rejection_vs_l(int(args.hidden.split(",")[0]))
        Path(args.out).write_text(json.dumps(rows, indent=1))
        return
    n_f = int(N_F * args.scale)
    previous = json.loads(Path(args.best_from).read_text()) if args.best_from else None
    out = {"n_f": n_f, "n_s": args.ns, "grid": args.grid, "sizes": {},
           "grid_from": args.best_from, "eta_ratio": args.eta_ratio}
    for h in [int(x) for x in args.hidden.split(",")]:
        t0 = time.perf_counter()
        model = choo_model(h)
        ref = master(model, 64, args.master, seed=100 + h)
        ls = log_sigma(ref.idata)
        truth = np.array([ls[k].mean() for k in HYPERS])
        starts, strata, p = starts_from(model, ref, seed=h)
        size = {"truth_log_sigma": truth.tolist(), "p_G": p, "grid": {}, "best": {},
                "in_g": np.asarray(strata).astype(bool).tolist(),  # Choo's Fig. 6.1
                "start_log_sigma": np.stack([-0.5 * np.asarray(starts["log_tau"][k])
                                             for k in HYPERS], axis=1).tolist()}
        print(f"H={h}: master {time.perf_counter() - t0:.0f} s, p(G) = {p:.3f}", flush=True)
        best_means = {}
        for method, grid in GRIDS[args.grid].items():
            # a grid is (L values, η values), or per size a list of (L, η) points; with
            # --best-from, a method the earlier file has is re-run at its optimum there,
            # unless it has points for this size here (searched, as `--grid edges` needs)
            per_size = isinstance(grid, dict) and h in grid
            points = (grid[h] if per_size else [] if isinstance(grid, dict)
                      else [(steps, eta) for steps in grid[0] for eta in grid[1]])
            results = []
            if (previous is not None and not per_size
                    and method in previous["sizes"][str(h)]["grid"]):
                results = previous["sizes"][str(h)]["grid"][method]  # an earlier optimum
                points = []
            for steps, eta in points:
                res = run_method(model, method, starts, steps, eta, n_f, args.ns, seed=1,
                                 eta_ratio=args.eta_ratio)
                _, m = measure(res, truth, strata, p, args.ns)
                results.append({"L": steps, "eta": eta, **m})
                print(f"  {method} L={steps} η={eta}: g={m['g']:.4f} "
                      f"rej={m['rejection']:.2f} ({m['wall_s']:.0f} s)", flush=True)
            best = min(results, key=lambda r: r["g"])
            res = run_method(model, method, starts, best["L"], best["eta"], n_f, args.ns, 2,
                             eta_ratio=args.eta_ratio)
            best_means[method], m = measure(res, truth, strata, p, args.ns)
            size["grid"][method] = results
            size["best"][method] = {"L": best["L"], "eta": best["eta"], **m,
                                    "thesis": THESIS_G.get(h, {}).get(method[:5]),
                                    "chain_means": best_means[method].tolist()}
            print(f"  {method} best L={best['L']} η={best['eta']}: re-run g={m['g']:.4f} "
                  f"90% [{m['g_90'][0]:.4f}, {m['g_90'][1]:.4f}]", flush=True)
        if args.adaptive:
            for method in ("ahmc_gibbs", "ahmc_dyn_b"):
                res = run_method(model, method, starts, 0, 0.0, n_f, args.ns, seed=3)
                best_means[method], m = measure(res, truth, strata, p, args.ns)
                size["best"][method] = m
                print(f"  {method}: g={m['g']:.4f} 90% [{m['g_90'][0]:.4f}, "
                      f"{m['g_90'][1]:.4f}]", flush=True)
        size["ratios"] = {}
        names = list(best_means)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                point, (lo, hi) = ratio_interval(best_means[a], best_means[b], truth,
                                                 strata_a=strata, strata_b=strata, p=p,
                                                 statistic=lambda r: combined(r.rho, G_OF),
                                                 resamples=500, paired=True)
                size["ratios"][f"{a}/{b}"] = [point, lo, hi]
        size["wall_s"] = time.perf_counter() - t0
        out["sizes"][h] = size
        Path(args.out).write_text(json.dumps(out, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
