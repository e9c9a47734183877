"""The weights of the first hidden units of the MNIST RBM (`models/mnist_rbm.py`) as 28 × 28
images, to compare with the "local Gabor-like filters" Mahendran (2011, §4.2.2) describes
for the RBM he sampled.

    python experiments/rbm_filters.py --hidden 500 --out docs/figures/rbm-mnist-500-filters.png
"""

from __future__ import annotations

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from bomcmc.models import mnist_rbm  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hidden", type=int, default=500)
    ap.add_argument("--units", type=int, default=100, help="how many hidden units to show")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    W, _, _ = mnist_rbm.trained_weights(args.hidden)
    side = int(np.ceil(np.sqrt(min(args.units, W.shape[1]))))
    fig, axes = plt.subplots(side, side, figsize=(0.8 * side, 0.8 * side + 0.4))
    for j, ax in enumerate(axes.ravel()):
        ax.set_axis_off()
        if j < min(args.units, W.shape[1]):
            w = W[:, j].reshape(28, 28)
            m = np.abs(w).max()
            ax.imshow(w, cmap="RdBu_r", vmin=-m, vmax=m)
    fig.suptitle(f"rbm-mnist-{args.hidden}: weights of hidden units 1-{side * side} "
                 "(red positive, blue negative)", fontsize=9)
    fig.tight_layout()
    fig.savefig(args.out, dpi=64)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
