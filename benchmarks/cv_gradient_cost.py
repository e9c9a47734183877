"""Cost of one gradient of the ten Dexter fold networks as one joint model (vmapped over the
folds: one batched matmul per layer) against ten gradients of a single fold network.

    python benchmarks/cv_gradient_cost.py --out benchmarks/results/cv-gradient-cost.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))

from dexter import BUDGETS, build, data  # noqa: E402


def _median_seconds(fn, arg, repeat: int = 30) -> float:
    jax.block_until_ready(fn(arg))
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        jax.block_until_ready(fn(arg))
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    budget = BUDGETS["default"]
    X, y, Xv, _ = data(budget)
    cv, _ = build(budget, X, y, Xv)
    post = cv.posterior()
    tree = post.init_position
    flat = cv.ravel(tree)
    joint = jax.jit(jax.grad(lambda f: cv.logdensity(cv.unravel(f))))
    one_fold = cv.base.with_mask(cv.masks[0], cv.inputs[0])
    single_pos = jax.tree_util.tree_map(lambda a: a[0], tree)
    single = jax.jit(jax.grad(one_fold.logdensity))
    out = {"folds": cv.folds, "network": cv.base.describe(), "cases": int(cv.n),
           "joint_gradient_s": _median_seconds(joint, flat),
           "single_gradient_s": _median_seconds(single, single_pos)}
    out["joint_over_ten_single"] = out["joint_gradient_s"] / (10 * out["single_gradient_s"])
    print(json.dumps(out, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
