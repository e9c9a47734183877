"""The Fig. 2 style box plots (Wang, Mohamed & de Freitas 2013, top row): per data set and
sampler, min / median / max ESS per gradient, one value per chain, boxes over chains and
seeds; top row over the sampling phase's gradients, bottom row with the adaptation's."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .results import COLORS, LABELS, finite_mean, runs_of


def make_figure(result: dict, path: Path, estimator: str = "bulk") -> None:
    """`estimator` "bulk" (ArviZ's bulk ESS) or "monotone" (the paper's monotone-sequence
    ESS; runs recorded before it was added have none and are skipped)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets, samplers = result["meta"]["datasets"], result["meta"]["samplers"]
    stats = ("min", "median", "max")
    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5), constrained_layout=True, squeeze=False)
    width = 0.8 / len(samplers)
    prefix = "ess" if estimator == "bulk" else "monotone"
    for row, key, title in ((0, f"{prefix}_per_grad", "sampling phase gradients (paper)"),
                            (1, f"{prefix}_per_grad_incl_adapt",
                             "sampling + warm-up/adaptation gradients")):
        for col, stat in enumerate(stats):
            ax = axes[row, col]
            for j, s in enumerate(samplers):
                data, pooled, pos = [], [], []
                for i, ds in enumerate(datasets):
                    rr = [r for r in runs_of(result, ds, s) if key in r]
                    vals = [c[key][stat] for r in rr for c in r["per_chain"]]
                    data.append([v for v in vals if v is not None])
                    pooled.append(finite_mean([r[key][stat] for r in rr]))
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
    what = "ArviZ bulk" if estimator == "bulk" else "monotone-sequence"
    fig.legend(handles, [LABELS[s] for s in samplers] + [f"pooled over the chains ({what})"],
               loc="outside lower center", ncol=len(samplers) + 1)
    m = result["meta"]
    fig.suptitle(f"Bayesian logistic regression, {m['chains']} chains × {m['draws']} draws after "
                 f"{m['warmup']} warm-up, seeds {m['seeds']} (Wang, Mohamed & de Freitas 2013, "
                 f"Fig. 2 top row); boxes: per-chain {what} ESS, over chains and seeds")
    fig.savefig(path, dpi=110)
    plt.close(fig)
