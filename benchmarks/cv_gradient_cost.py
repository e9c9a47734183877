"""Cost of one gradient of the ten Dexter fold networks as one joint model (vmapped over the
folds: one batched matmul per layer) against ten gradients of a single fold network.

    python benchmarks/cv_gradient_cost.py --out benchmarks/results/cv-gradient-cost.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness.timing import compiled_seconds  # noqa: E402
from dexter import BUDGETS, build, data  # noqa: E402


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
           "joint_gradient_s": compiled_seconds(joint, flat, repeat=30),
           "single_gradient_s": compiled_seconds(single, single_pos, repeat=30)}
    out["joint_over_ten_single"] = out["joint_gradient_s"] / (10 * out["single_gradient_s"])
    print(json.dumps(out, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
