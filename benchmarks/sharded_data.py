"""A run whose data rows are split over 2 processes against the one-process run, in
distribution: means within 4 Monte-Carlo standard errors, standard deviations within 10 %.

    python benchmarks/sharded_data.py [--out benchmarks/results/sharded_data.json]

Two posteriors: logistic-german through the command line (`bomcmc sample --processes 2
--shard-data` against the plain command, `ahmc`, 4 chains, 1000 + 1000, float64; with another
seed, for a comparison in distribution, and with the same seed, whose chains follow the
one-process chains to rounding), and a
network through the estimator (`BayesianMLPRegressor(shard_data=True)` on the robot arm's 200
training cases, every process calling `fit`, against the one-process fit), judged on its
predictions at the training inputs (the weights are not identified). The draws cannot agree
bit for bit: a sharded sum adds the rows in another order. Reports per quantity the
difference of the means in units of its MCSE (ArviZ's, the two runs' combined) and the ratio
of the standard deviations, and the whole commands' wall times.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# a network small enough that 4 chains mix in function space (R-hat of the predictions near
# 1), so that MCSEs mean something; Neal's Gibbs-within-HMC with the bandit, no folds
NET = dict(hidden=(4,), sampler="ahmc_gibbs", chains=4, super_transitions=100, budget=1500,
           pretrain_steps=500, seed=0, progress=False)


def compare(a: np.ndarray, b: np.ndarray, names: list[str]) -> dict:
    """(chains, draws, k) draws of two runs -> the worst |Δmean| / MCSE and sd ratio."""
    import arviz as az

    def moments(x):
        ds = az.convert_to_dataset({"q": x})
        return (x.mean(axis=(0, 1)), x.std(axis=(0, 1)),
                az.mcse(ds, method="mean")["q"].values)

    ma, sa, ea = moments(a)
    mb, sb, eb = moments(b)
    z = np.abs(ma - mb) / np.sqrt(ea**2 + eb**2)
    ratio = sb / sa
    worst = int(np.argmax(z))
    return {"quantities": len(names), "max_z": float(z.max()), "worst": names[worst],
            "sd_ratio_min": float(ratio.min()), "sd_ratio_max": float(ratio.max()),
            "means_within_4_mcse": bool(np.all(z < 4)),
            "sds_within_10_percent": bool(np.all(np.abs(ratio - 1) < 0.1))}


def _rhat_max(x: np.ndarray) -> float:
    import arviz as az

    return float(az.rhat(az.convert_to_dataset({"q": x}))["q"].max())


def glm(tmp: Path) -> dict:
    import bomcmc

    base = [sys.executable, "-m", "bomcmc", "sample", "--posterior", "logistic-german",
            "--chains", "4", "--draws", "1000", "--warmup", "1000", "--seed", "0",
            "--float64", "--no-progress", "--no-plots", "--json", "--overwrite"]
    walls = {}
    sharded = ["--processes", "2", "--shard-data"]
    for name, extra in (("one", []), ("sharded", sharded),
                        ("sharded_seed1", sharded + ["--seed", "1"])):
        t0 = time.perf_counter()
        done = subprocess.run(base + ["--out", str(tmp / name)] + extra, capture_output=True,
                              text=True)
        walls[name] = time.perf_counter() - t0
        if done.returncode:
            raise SystemExit(done.stderr)
    a, b, c = (bomcmc.load(tmp / n).idata.posterior["beta"].values
               for n in ("one", "sharded", "sharded_seed1"))
    names = [f"beta[{i}]" for i in range(a.shape[-1])]
    return {"posterior": "logistic-german", "sampler": "ahmc", "chains": 4, "draws": 1000,
            "warmup": 1000,
            # another seed: the sharded run against the one-process run in distribution
            "other_seed": compare(a, c, names),
            # the same seed: how far the sharded chains drift from the one-process chains
            "same_seed_max_abs_difference": float(np.max(np.abs(a - b))),
            "wall_s": walls}


def worker(rank: int, port: int, out: str) -> None:
    """One process of the sharded network fit (or the only one, rank -1)."""
    import bomcmc
    from bomcmc.datasets import robot_arm

    if rank >= 0:
        bomcmc.distributed.initialize(f"127.0.0.1:{port}", 2, rank)
    bomcmc.set_float64(True)
    X, y = robot_arm("train")
    reg = bomcmc.BayesianMLPRegressor(shard_data=rank >= 0, **NET).fit(X, y)
    if rank <= 0:
        f = reg.idata_.function_space["f"].values
        np.save(out, f.reshape(f.shape[0], f.shape[1], -1))


def network(tmp: Path) -> dict:
    from bomcmc.distributed import free_port

    walls = {}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, __file__, "--worker", "-1", "0", str(tmp / "one.npy")],
                   check=True)
    walls["one"] = time.perf_counter() - t0
    port, t0 = free_port(), time.perf_counter()
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", str(r), str(port),
                               str(tmp / "sharded.npy")]) for r in (0, 1)]
    if any(p.wait() for p in procs):
        raise SystemExit("a sharded worker failed")
    walls["sharded"] = time.perf_counter() - t0
    a, b = np.load(tmp / "one.npy"), np.load(tmp / "sharded.npy")
    return {"posterior": "robot arm (200 cases)", "estimator": "BayesianMLPRegressor",
            "rhat_max_one": _rhat_max(a), "rhat_max_sharded": _rhat_max(b),
            **{k: v for k, v in NET.items() if k != "progress"},
            **compare(a, b, [f"prediction[{i}]" for i in range(a.shape[-1])]),
            "wall_s": walls}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(ROOT / "benchmarks/results/sharded_data.json"))
    p.add_argument("--only", choices=("glm", "network"), default=None,
                   help="run one of the two comparisons (the other's entry in --out is kept)")
    p.add_argument("--worker", nargs=3, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        rank, port, out = args.worker
        return worker(int(rank), int(port), out)
    out = Path(args.out)
    result = json.loads(out.read_text()) if out.exists() else {}
    for name, fn in (("glm", glm), ("network", network)):
        if args.only in (None, name):
            with tempfile.TemporaryDirectory() as d:
                result[name] = fn(Path(d))
            out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
