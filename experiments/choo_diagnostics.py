"""Choo (2000) Figs 5.3–5.6, 5.14 and chapter 6's diagnostics of Dynamical B on his 8-point
data (docs/bnn_dynamical.md, "Choo's figures and diagnostics").

    python experiments/choo_diagnostics.py master --out R.json --plots DIR     # Figs 5.3–5.6
    python experiments/choo_diagnostics.py g-table --results RUN.json --plots DIR   # Fig. 5.14
    python experiments/choo_diagnostics.py starts --results RUN.json --plots DIR   # Fig. 6.1
    python experiments/choo_diagnostics.py instability --out R.json --plots DIR  # Figs 6.3–6.4
    python experiments/choo_diagnostics.py rejection --out R.json --plots DIR  # 6.2, 6.5, 6.7

- `master`: Neal's scheme per network size, the master runs of `experiments/choo.py` (same
  seeds and settings): the predicted surface at 8 hidden units (Fig. 5.3), the
  hyperparameters' posterior marginals against their Gamma priors (Fig. 5.4), log σ_u against
  log σ_a (Fig. 5.5), and the hidden biases' sample standard deviation against their σ_a
  as the layer grows (Fig. 5.6).
- `g-table`: each hyperparameter's variance of means ρ ± its standard error at the re-run
  optimum against the number of hidden units, beside Choo's Table 5.12 (Fig. 5.14).
- `starts`: where the 10 chains started inside G end up, per method, at 16 hidden units
  (Fig. 6.1; a results file of `experiments/choo.py --grid fig61`, which keeps each
  chain's means).
- `instability`: H along trajectories of 20 000 leapfrog steps of Dynamical B from one state
  with 50 momenta, η = 0.04, 8 hidden units (Figs 6.3–6.4), for both estimates of the
  hyperparameters' curvature.
- `rejection`: rejection rate against L from the start states of ch. 5: Gibbs, A and B at
  20 hidden units (Fig. 6.2); B with the weights' or the hyperparameters' updates split in
  two, η = 0.01 (Fig. 6.5); B with the hyperparameters' updates split in 100, η = 0.2,
  from 10 of the starts (Fig. 6.7); 8 hidden units for the last two.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from choo import HYPERS, THESIS_G, log_sigma, master, starts_from

import bomcmc
from bomcmc.bnn.choo_data import choo_model, choo_prior, f_true, load_choo8
from bomcmc.bnn.dynamical import DynamicalA, DynamicalB
from bomcmc.bnn.predict import forward
from bomcmc.bnn.samplers import dynamical_sampler, neal_sampler
from bomcmc.kernels.choo_dynamics import trajectory

MASTER_CHAINS = 64  # as experiments/choo.py
NAMES = {"noise": "δ (noise)", "ih0": "u (input-to-hidden)", "ho": "v (hidden-to-output)",
         "bh0": "a (hidden biases)", "bo": "b (output bias)"}
# Choo 2000, Table 5.12: ρ_δ, ρ_u, ρ_v, ρ_a, ρ_b (each ± its sd) at the optimum
THESIS_RHO = {
    "gibbs": {8: [(0.0378, 0.0070), (0.1777, 0.0367), (0.0353, 0.0073), (0.1595, 0.0480),
                  (0.0864, 0.0262)],
              12: [(0.0479, 0.0080), (0.2034, 0.0399), (0.0203, 0.0035), (0.2267, 0.0433),
                   (0.0745, 0.0189)],
              16: [(0.0509, 0.0102), (0.2238, 0.0509), (0.0256, 0.0054), (0.2083, 0.0856),
                   (0.0496, 0.0106)],
              20: [(0.0630, 0.0134), (0.2319, 0.0973), (0.0290, 0.0078), (0.4259, 0.1517),
                   (0.0528, 0.0096)]},
    "dyn_a": {8: [(0.0637, 0.0117), (0.2171, 0.0815), (0.0419, 0.0085), (0.1931, 0.0376),
                  (0.0650, 0.0120)],
              12: [(0.0478, 0.0093), (0.1277, 0.0279), (0.0263, 0.0041), (0.2510, 0.0667),
                   (0.0499, 0.0126)],
              16: [(0.0637, 0.0124), (0.6173, 0.2459), (0.0193, 0.0030), (0.4893, 0.2758),
                   (0.0578, 0.0105)],
              20: [(0.0764, 0.0141), (0.1576, 0.0348), (0.0163, 0.0034), (0.3363, 0.1092),
                   (0.0555, 0.0117)]},
    "dyn_b": {8: [(0.0909, 0.0160), (0.1463, 0.0190), (0.0551, 0.0083), (0.1743, 0.0261),
                  (0.0762, 0.0141)],
              12: [(0.1420, 0.0707), (0.1581, 0.0313), (0.0305, 0.0049), (0.1586, 0.0330),
                   (0.0743, 0.0188)],
              16: [(0.0571, 0.0121), (0.1460, 0.0359), (0.0208, 0.0043), (0.1768, 0.0357),
                   (0.0515, 0.0105)],
              20: [(0.0749, 0.0156), (0.1579, 0.0337), (0.0207, 0.0037), (0.2109, 0.0445),
                   (0.0557, 0.0109)]},
}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _hyper_groups(model) -> dict:
    """The weight or noise group whose precision τ is each hyperparameter of HYPERS."""
    groups = {g.key0: g for g in model._all_groups() if g.key0}
    return {h: groups[h] for h in HYPERS}


def log_sigma_prior(group, s):
    """Density of log σ = −½ log τ under the model's own prior on τ: its density of log τ
    (`Group.hyper_logpdf`, Jacobian included) at −2s, times |d log τ/d log σ| = 2."""
    key = group.key0
    log_tau = jnp.asarray(-2 * np.asarray(s, float))
    lp = jax.vmap(lambda v: group.hyper_logpdf({key: v}, v.dtype))(log_tau)
    return 2 * np.exp(np.asarray(lp, float))


# -- Figs 5.3–5.6: the master runs ----------------------------------------------------------
def master_part(sizes, transitions: int, plots: str | None) -> dict:
    out = {"transitions": transitions, "chains": MASTER_CHAINS, "sizes": {}}
    runs = {}
    for h in sizes:
        model = choo_model(h)
        res = master(model, MASTER_CHAINS, transitions, seed=100 + h)
        ls = log_sigma(res.idata)
        flat = {k: v.ravel() for k, v in ls.items()}
        bias_sd = np.asarray(res.idata.posterior["w.bh0"].values).std(axis=-1, ddof=1).ravel()
        out["sizes"][h] = {
            "mean_log_sigma": {k: float(v.mean()) for k, v in flat.items()},
            "sd_log_sigma": {k: float(v.std()) for k, v in flat.items()},
            # Fig. 5.5: the correlation of log σ_u and log σ_a
            "corr_u_a": float(np.corrcoef(flat["ih0"], flat["bh0"])[0, 1]),
            # Fig. 5.6: of log sd(hidden biases) and log σ_a
            "corr_biases_sd_sigma_a": float(np.corrcoef(np.log(bias_sd), flat["bh0"])[0, 1]),
            "draws": int(flat["ih0"].size),
            "omega": {k: float(g.omega) for k, g in _hyper_groups(model).items()},
            "prior": " / ".join(choo_prior(h))}
        runs[h] = (model, res, flat, bias_sd)
        print(f"H={h}: corr(log σ_u, log σ_a) = {out['sizes'][h]['corr_u_a']:.3f}, "
              f"corr(log sd(biases), log σ_a) = "
              f"{out['sizes'][h]['corr_biases_sd_sigma_a']:.3f}", flush=True)
    if plots:
        out["figures"] = master_figures(runs, Path(plots))
    return out


def master_figures(runs, outdir: Path) -> list[str]:
    plt = _pyplot()
    outdir.mkdir(parents=True, exist_ok=True)
    made = []
    h0 = min(runs)
    model, res, flat, _ = runs[h0]
    # Fig. 5.3: the predictive mean over the input square, the data and the true surface
    g = np.linspace(-1, 1, 31)
    gx, gy = np.meshgrid(g, g)
    grid = np.stack([gx.ravel(), gy.ravel()], axis=1)
    mean = forward(model, res.idata, grid, thin=4)[..., 0].mean(axis=0).reshape(gx.shape)
    X, y = load_choo8()
    fig = plt.figure(figsize=(11, 4.6), layout="constrained")
    for k, (z, title) in enumerate(((mean, f"predictive mean, {h0} hidden units"),
                                    (f_true(gx, gy), "the true surface (Choo's eq. 5.1)"))):
        ax = fig.add_subplot(1, 2, k + 1, projection="3d")
        ax.plot_surface(gx, gy, z, cmap="viridis", alpha=0.7, linewidth=0)
        ax.scatter(X[:, 0], X[:, 1], y[:, 0], color="k", marker="*", s=60, label="data")
        ax.scatter(X[:, 0], X[:, 1], np.zeros(len(X)), color="r", marker="x", s=30)
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        ax.set_title(title)
    made.append(_save(fig, outdir / "choo-fig5-3-surface.png", plt))
    # Fig. 5.4: posterior marginals of log σ against the priors
    fig, axes = plt.subplots(1, 5, figsize=(16, 3.4), layout="constrained")
    groups = _hyper_groups(model)
    for ax, hyp in zip(axes, HYPERS):
        v = flat[hyp]
        lo, hi = np.percentile(v, [0.1, 99.9])
        s = np.linspace(min(lo, -4), max(hi, 6), 400)
        ax.hist(v, bins=80, density=True, histtype="step", label="posterior (Neal's scheme)")
        ax.plot(s, log_sigma_prior(groups[hyp], s), ls=":", color="k", label="prior")
        ax.set_xlabel(f"log σ_{NAMES[hyp].split()[0]}")
        ax.set_title(NAMES[hyp], fontsize=9)
    axes[0].legend(fontsize=7)
    made.append(_save(fig, outdir / "choo-fig5-4-marginals.png", plt))
    # Fig. 5.5: log σ_u against log σ_a
    fig, ax = plt.subplots(figsize=(5, 4.5), layout="constrained")
    size = flat["ih0"].size
    pick = np.random.default_rng(0).choice(size, min(5000, size), replace=False)
    ax.scatter(flat["ih0"][pick], flat["bh0"][pick], s=2, alpha=0.4)
    ax.set_xlabel("log σ_u (input-to-hidden)")
    ax.set_ylabel("log σ_a (hidden biases)")
    ax.set_title(f"{h0} hidden units, {pick.size} of the master draws")
    made.append(_save(fig, outdir / "choo-fig5-5-u-against-a.png", plt))
    # Fig. 5.6: the hidden biases' sample sd against σ_a, per size
    fig, axes = plt.subplots(1, len(runs), figsize=(4 * len(runs), 3.8), layout="constrained",
                             squeeze=False)
    for ax, (h, (_, _, fl, bias_sd)) in zip(axes[0], sorted(runs.items())):
        ax.scatter(fl["bh0"][pick], np.log(bias_sd[pick]), s=2, alpha=0.4)
        r = np.corrcoef(np.log(bias_sd), fl["bh0"])[0, 1]
        ax.plot([-3, 6], [-3, 6], color="grey", ls="--", lw=0.8)
        ax.set_xlabel("log σ_a")
        ax.set_ylabel("log sd of the hidden biases")
        ax.set_title(f"{h} hidden units: r = {r:.2f}")
    made.append(_save(fig, outdir / "choo-fig5-6-biases-sd.png", plt))
    return made


def _save(fig, path: Path, plt) -> str:
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return str(path)


# -- Fig. 5.14: each ρ at the optimum --------------------------------------------------------
def g_table_figure(results: str, outdir: Path) -> str:
    plt = _pyplot()
    res = json.loads(Path(results).read_text())
    sizes = sorted(res["sizes"], key=int)
    methods = [m for m in ("gibbs", "dyn_a", "dyn_b", "dyn_b_choo")
               if m in res["sizes"][sizes[0]]["best"]]
    # Choo's Table 5.12 beside the method that runs his algorithm: his B is dyn_b_choo
    thesis_of = {"gibbs": "gibbs", "dyn_a": "dyn_a",
                 ("dyn_b_choo" if "dyn_b_choo" in methods else "dyn_b"): "dyn_b"}
    label = {"dyn_b": "dyn_b (Gauss–Newton)", "dyn_b_choo": "dyn_b (Choo's estimate)"}
    fig, axes = plt.subplots(1, 5, figsize=(17, 3.8), layout="constrained")
    for i, (ax, hyp) in enumerate(zip(axes, HYPERS)):
        for k, m in enumerate(methods):
            hs = np.array([int(h) for h in sizes]) + 0.35 * (k - 1)
            rho = [res["sizes"][h]["best"][m]["rho"][i] for h in sizes]
            se = [res["sizes"][h]["best"][m]["rho_se"][i] for h in sizes]
            ax.errorbar(hs, rho, yerr=se, marker="o", capsize=3, color=f"C{k}",
                        label=label.get(m, m))
            if m in thesis_of:
                t = np.array([THESIS_RHO[thesis_of[m]][int(h)][i] for h in sizes])
                ax.errorbar(hs + 0.15, t[:, 0], yerr=t[:, 1], marker="x", ls=":", capsize=2,
                            color=f"C{k}", alpha=0.6, label=f"Choo's {thesis_of[m]}, Table 5.12")
        ax.set_yscale("log")
        ax.set_xticks([int(h) for h in sizes])
        ax.set_xlabel("hidden units")
        ax.set_title(f"ρ of log σ_{NAMES[hyp]}", fontsize=9)
    axes[0].set_ylabel("variance of means ρ ± its s.e. (lower is better)")
    axes[0].legend(fontsize=6)
    fig.suptitle(f"N_f = {res['n_f']} leapfrog steps per Gibbs chain, N_s = {res['n_s']} "
                 f"({Path(results).name})", fontsize=9)
    outdir.mkdir(parents=True, exist_ok=True)
    return _save(fig, outdir / f"choo-fig5-14-rho-vs-hidden-{Path(results).stem}.png", plt)


# -- Fig. 6.1: where the chains from the starts inside G end up -------------------------------
def starts_figure(results: str, outdir: Path, h: str = "16") -> str:
    """Per method: the 10 starts inside G (log σ_u or log σ_a > 4), the means of log σ_u and
    log σ_a of all 50 chains, and those of the 10 chains from G joined to their starts."""
    plt = _pyplot()
    size = json.loads(Path(results).read_text())["sizes"][h]
    start = np.asarray(size["start_log_sigma"])
    in_g = np.asarray(size["in_g"])
    u, a = HYPERS.index("ih0"), HYPERS.index("bh0")
    methods = [m for m in size["best"] if "chain_means" in size["best"][m]]
    fig, axes = plt.subplots(1, len(methods), figsize=(4.2 * len(methods), 4),
                             layout="constrained", sharex=True, sharey=True, squeeze=False)
    for ax, m in zip(axes[0], methods):
        means = np.asarray(size["best"][m]["chain_means"])
        ax.scatter(means[:, u], means[:, a], marker="x", color="grey", label="all 50 chains")
        for s0, m0 in zip(start[in_g], means[in_g]):
            ax.plot([s0[u], m0[u]], [s0[a], m0[a]], ls="--", color="C0", lw=0.7)
        ax.scatter(start[in_g, u], start[in_g, a], facecolors="none", edgecolors="C0",
                   label="starts in G")
        ax.scatter(means[in_g, u], means[in_g, a], s=12, color="C3",
                   label="their chains' means")
        ax.set_title(f"{m}: g = {size['best'][m]['g']:.3f}", fontsize=10)
        ax.set_xlabel("log σ_u")
    axes[0][0].set_ylabel("log σ_a")
    axes[0][0].legend(fontsize=7)
    outdir.mkdir(parents=True, exist_ok=True)
    return _save(fig, outdir / f"choo-fig6-1-starts-in-g-h{h}.png", plt)


def in_g_summary(results: str, h: str = "16") -> dict:
    """Per method, the mean over the 10 chains started in G of their mean log σ_u and
    log σ_a, beside the reference means and the starts' own means."""
    size = json.loads(Path(results).read_text())["sizes"][h]
    in_g = np.asarray(size["in_g"])
    u, a = HYPERS.index("ih0"), HYPERS.index("bh0")
    start = np.asarray(size["start_log_sigma"])[in_g]
    out = {"reference": [size["truth_log_sigma"][u], size["truth_log_sigma"][a]],
           "starts": [float(start[:, u].mean()), float(start[:, a].mean())]}
    for m, b in size["best"].items():
        if "chain_means" in b:
            means = np.asarray(b["chain_means"])[in_g]
            out[m] = [float(means[:, u].mean()), float(means[:, a].mean())]
    return out


# -- Figs 6.3–6.4: H along long trajectories --------------------------------------------------
def ch5_starts(h: int, transitions: int):
    """The 50 start states of experiments/choo.py (40 outside G, 10 inside) for `h` units."""
    model = choo_model(h)
    ref = master(model, MASTER_CHAINS, transitions, seed=100 + h)
    starts, in_g, _ = starts_from(model, ref, seed=h)
    return model, starts, in_g


def energy_paths(blocks, x0, eta: float, steps: int, every: int, n: int, seed: int):
    """H = −log π + ½|p|² every `every` steps along `n` trajectories of `steps` leapfrog
    steps of the joint dynamics from x0, each with its own momentum and block order:
    (H at the start (n,), H along (n, steps // every)); non-finite values stay non-finite."""
    post = blocks.posterior()

    def logdensity(x):
        return post.logdensity_fn(blocks.unravel(x))

    def one(key):
        k_p, k_o = jax.random.split(key)
        p0 = jax.random.normal(k_p, x0.shape, x0.dtype)
        hyper_first = jax.random.uniform(k_o) < 0.5
        logp, grad = jax.value_and_grad(logdensity)(x0)

        def body(carry, _):
            end = trajectory(blocks, *carry, logdensity, eta, every, hyper_first)
            state = (end.position, end.momentum, end.logdensity, end.logdensity_grad)
            return state, -end.logdensity + 0.5 * jnp.sum(end.momentum ** 2)

        _, hs = jax.lax.scan(body, (x0, p0, logp, grad), None, length=steps // every)
        return -logp + 0.5 * jnp.sum(p0 ** 2), hs

    h0, hs = jax.jit(jax.vmap(one))(jax.random.split(jax.random.PRNGKey(seed), n))
    return np.asarray(h0), np.asarray(hs)


UNSTABLE = 100.0  # |H − H0| above this: the trajectory has blown up (e^{−100} is no chance)


def instability_part(transitions: int, eta: float, steps: int, n: int,
                     plots: str | None) -> dict:
    model, starts, in_g = ch5_starts(8, transitions)
    i = int(np.flatnonzero(~np.asarray(in_g))[0])  # the first start outside G
    state = jax.tree_util.tree_map(lambda a: jnp.asarray(a[i]), starts)
    every = 20
    out = {"eta": eta, "steps": steps, "trajectories": n, "start_index": i, "every": every,
           "estimates": {}}
    paths = {}
    for estimate in ("choo", "gauss_newton"):
        blocks = DynamicalB(model, hyper_curvature=estimate)
        x0 = jnp.asarray(blocks.ravel(blocks.to_noncentred(state)))
        h0, hs = energy_paths(blocks, x0, eta, steps, every, n, seed=7)
        dh = hs - h0[:, None]
        bad = ~np.isfinite(dh) | (np.abs(dh) > UNSTABLE)
        at = {s: int(s // every - 1) for s in (1000, 5000, 10000, steps)}
        summary = {}
        for s, j in at.items():
            d = np.where(np.isfinite(dh[:, j]), dh[:, j], np.inf)
            summary[s] = {"unstable": float(np.mean(np.cumsum(bad, axis=1)[:, j] > 0)),
                          "mean_accept": float(np.mean(np.minimum(1, np.exp(-d)))),
                          "median_dH": float(np.median(d))}
        out["estimates"][estimate] = summary
        paths[estimate] = (h0, hs)
        print(f"{estimate}: " + "; ".join(
            f"{s} steps: {v['unstable']:.2f} unstable, accept {v['mean_accept']:.2f}"
            for s, v in summary.items()), flush=True)
    if plots:
        out["figures"] = instability_figures(paths, out, Path(plots))
    return out


def instability_figures(paths, out, outdir: Path) -> list[str]:
    plt = _pyplot()
    outdir.mkdir(parents=True, exist_ok=True)
    steps = np.arange(1, out["steps"] // out["every"] + 1) * out["every"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4), layout="constrained", sharey=True)
    for ax, (estimate, (h0, hs)) in zip(axes, paths.items()):
        dh = np.where(np.isfinite(hs), hs - h0[:, None], np.nan)
        for j in range(10):
            ax.plot(steps, np.clip(dh[j], -50, 1e4), lw=0.7)
        ax.set_yscale("symlog", linthresh=1)
        ax.set_xlabel("leapfrog steps")
        ax.set_title(f"Dynamical B, {estimate} estimate: 10 trajectories")
    axes[0].set_ylabel("H − H(start) (a gap: H became infinite)")
    made = [_save(fig, outdir / "choo-fig6-3-h-along-trajectories.png", plt)]
    marks = [s for s in (5000, 10000, out["steps"])]
    fig, axes = plt.subplots(len(paths), len(marks), figsize=(12, 6), layout="constrained",
                             squeeze=False)
    for row, (estimate, (h0, hs)) in zip(axes, paths.items()):
        for ax, s in zip(row, marks):
            d = hs[:, s // out["every"] - 1] - h0
            finite = np.isfinite(d)
            ax.hist(np.clip(d[finite], -20, 1e3), bins=40)
            ax.set_title(f"{estimate}, after {s} steps ({(~finite).sum()} infinite)",
                         fontsize=9)
            ax.set_xlabel("H − H(start)")
    made.append(_save(fig, outdir / "choo-fig6-4-h-distribution.png", plt))
    return made


# -- Figs 6.2, 6.5, 6.7: rejection against L --------------------------------------------------
def rejection(model, method: str, starts, eta: float, ls, transitions: int, seed: int,
              splits=(1, 1)) -> list[float]:
    """1 − mean acceptance over the chains from `starts` and `transitions` each, per L;
    Dynamical B's updates split as `splits` = (k_p, k_h)."""
    first = jax.tree_util.tree_map(lambda a: a[0], starts)
    chains = len(starts["w"]["ih0"])
    if method == "gibbs":
        post = dataclasses.replace(model.posterior(init=first), chain_inits=starts)
        sampler = neal_sampler(model)
    else:
        blocks = DynamicalA(model) if method == "dyn_a" else DynamicalB(model)
        init = starts if method == "dyn_a" else jax.vmap(blocks.to_noncentred)(starts)
        post = dataclasses.replace(blocks.posterior(init=first),
                                   chain_inits=jax.tree_util.tree_map(np.asarray, init))
        sampler = dynamical_sampler(blocks, splits=splits)
    out = []
    for steps in ls:
        res = bomcmc.sample(post, sampler=sampler, chains=chains, draws=transitions, warmup=0,
                            seed=seed, progress=False, step_size=eta, steps=steps,
                            chunk_size=transitions, adapt=None)
        out.append(1 - float(res.idata.sample_stats.acceptance_rate.mean()))
    return out


LS = (17, 33, 66, 133, 266, 533, 1066, 2133, 4266, 8533)  # Choo's l, doubling
CURVES = {  # figure: (hidden units, chains, L values, [(label, method, η, (k_p, k_h)), ...])
    "6.2": (20, 50, LS, [("Gibbs, η 0.283", "gibbs", 0.283, (1, 1)),
                         ("Dynamical A, η 0.32", "dyn_a", 0.32, (1, 1)),
                         ("Dynamical B, η 0.16", "dyn_b", 0.16, (1, 1))]),
    "6.5": (8, 50, LS, [("unsplit", "dyn_b", 0.01, (1, 1)),
                        ("weights split in 2", "dyn_b", 0.01, (2, 1)),
                        ("hyperparameters split in 2", "dyn_b", 0.01, (1, 2))]),
    # his 10 chains; L to 2133: 101 gradients per step with the hyperparameters split in 100
    "6.7": (8, 10, LS[:8], [("unsplit, η 0.2", "dyn_b", 0.2, (1, 1)),
                            ("unsplit, η 0.08", "dyn_b", 0.08, (1, 1)),
                            ("hyperparameters split in 100, η 0.2", "dyn_b", 0.2, (1, 100))]),
}


def rejection_part(transitions: int, per_chain: int, figures, plots: str | None) -> dict:
    out = {"transitions_per_L": per_chain, "figures": {}}
    starts_by_h = {}
    for fig in figures:
        h, chains, ls, curves = CURVES[fig]
        if h not in starts_by_h:
            starts_by_h[h] = ch5_starts(h, transitions)[:2]
        model, starts = starts_by_h[h]
        starts = jax.tree_util.tree_map(lambda a: a[:chains], starts)
        rows = []
        for label, method, eta, splits in curves:
            rej = rejection(model, method, starts, eta, ls, per_chain, seed=11, splits=splits)
            rows.append({"label": label, "method": method, "eta": eta, "splits": splits,
                         "rejection": rej})
            print(f"Fig. {fig}, {h} units, {label}: " + ", ".join(
                f"L={n}: {r:.2f}" for n, r in zip(ls, rej)), flush=True)
        out["figures"][fig] = {"hidden": h, "chains": chains, "L": list(ls), "curves": rows}
    if plots:
        out["plots"] = rejection_figures(out, Path(plots))
    return out


def rejection_figures(out, outdir: Path) -> list[str]:
    plt = _pyplot()
    outdir.mkdir(parents=True, exist_ok=True)
    made = []
    for fig_no, fig_data in out["figures"].items():
        fig, ax = plt.subplots(figsize=(5.5, 4), layout="constrained")
        for row in fig_data["curves"]:
            ax.plot(fig_data["L"], row["rejection"], marker="o", label=row["label"])
        ax.set_xscale("log")
        ax.set_ylim(0, 1)
        ax.set_xlabel("trajectory length L")
        ax.set_ylabel("rejection rate")
        ax.set_title(f"Choo's Fig. {fig_no}: {fig_data['hidden']} hidden units, "
                     f"{fig_data['chains']} chains", fontsize=10)
        ax.legend(fontsize=7)
        made.append(_save(fig, outdir / f"choo-fig{fig_no.replace('.', '-')}-rejection.png",
                          plt))
    return made


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("part", choices=("master", "g-table", "starts", "instability",
                                      "rejection"))
    ap.add_argument("--out", help="results JSON")
    ap.add_argument("--plots", metavar="DIR", help="write the figures into DIR")
    ap.add_argument("--hidden", default="8,12,16,20", help="sizes of the master runs")
    ap.add_argument("--master", type=int, default=20000, help="master transitions per chain")
    ap.add_argument("--results", help="g-table, starts: a results file of experiments/choo.py "
                    "(starts: one with chain means, `--grid fig61`)")
    ap.add_argument("--steps", type=int, default=20000, help="instability: leapfrog steps")
    ap.add_argument("--eta", type=float, default=0.04, help="instability: η")
    ap.add_argument("--trajectories", type=int, default=50, help="instability: momenta")
    ap.add_argument("--per-l", type=int, default=10,
                    help="rejection: transitions per chain and L (50 chains)")
    ap.add_argument("--figures", default="6.2,6.5,6.7", help="rejection: which figures")
    args = ap.parse_args(argv)
    if args.part == "g-table":
        if not args.results or not args.plots:
            ap.error("g-table needs --results and --plots")
        print(g_table_figure(args.results, Path(args.plots)))
        return
    if args.part == "starts":
        if not args.results or not args.plots:
            ap.error("starts needs --results and --plots")
        print(starts_figure(args.results, Path(args.plots)))
        print(json.dumps(in_g_summary(args.results), indent=1))
        return
    if not args.out:
        ap.error(f"{args.part} needs --out")
    bomcmc.enable_compilation_cache()
    if args.part == "master":
        out = master_part([int(h) for h in args.hidden.split(",")], args.master, args.plots)
    elif args.part == "instability":
        out = instability_part(args.master, args.eta, args.steps, args.trajectories,
                               args.plots)
    else:
        out = rejection_part(args.master, args.per_l, args.figures.split(","), args.plots)
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
