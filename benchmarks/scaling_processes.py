"""Gradients per second of one run in 1 process and over 2 (`--processes 2`), side by side.

    python benchmarks/scaling_processes.py [--posterior logistic-german] [--chains 8]
        [--draws 2000] [--pairs 3] [--out benchmarks/results/scaling_processes.json]

Runs the command line's `sample` with fixed HMC knobs (so both runs do the same work), in
pairs alternating 1 process and 2, and reports per run: the sampling seconds and gradients
(run.json), gradients per second, seconds per chain and 1000 transitions, and the whole
process's wall time (start-up, compilation and assembly included); then the medians and the
ratio 2 processes / 1 process of each. Draws are the same in both (chain_block = C/2 in the
one-process run), which the script checks.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(posterior: str, chains: int, draws: int, processes: int, out: Path) -> dict:
    cmd = [sys.executable, "-m", "bomcmc", "sample", "--posterior", posterior, "--sampler",
           "hmc", "--step-size", "0.05", "--steps", "10", "--chains", str(chains), "--draws",
           str(draws), "--warmup", "0", "--seed", "1", "--chunk-size", "100", "--no-progress",
           "--no-plots", "--json", "--out", str(out), "--overwrite"]
    cmd += ["--processes", str(processes)] if processes > 1 else \
        ["--chain-block", str(chains // 2)]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode:
        raise SystemExit(done.stderr)
    totals = json.loads((out / "run.json").read_text())
    grads, secs = totals["n_grad"], totals["wall_s"]
    return {"processes": processes, "process_wall_s": wall, "sampling_s": secs,
            "gradients": grads, "grad_per_s": grads / secs,
            "s_per_chain_per_1000_transitions": secs / chains / (draws / 1000),
            "compile_s": totals["compile_s"]}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--posterior", default="logistic-german")
    p.add_argument("--chains", type=int, default=8)
    p.add_argument("--draws", type=int, default=2000)
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.pairs):
            for n in (1, 2):
                rows.append(run(a.posterior, a.chains, a.draws, n, Path(tmp) / f"r{i}_{n}"))
                print(json.dumps(rows[-1]), flush=True)
        import arviz as az
        import numpy as np

        same = np.array_equal(az.from_netcdf(Path(tmp) / "r0_1" / "idata.nc").posterior["beta"],
                              az.from_netcdf(Path(tmp) / "r0_2" / "idata.nc").posterior["beta"])
    med = {n: {k: statistics.median(r[k] for r in rows if r["processes"] == n)
               for k in rows[0] if k != "processes"} for n in (1, 2)}
    ratio = {k: med[2][k] / med[1][k] for k in med[1]}
    result = {"args": vars(a), "runs": rows, "median": med, "ratio_2_over_1": ratio,
              "identical_draws": bool(same)}
    print(json.dumps({"median": med, "ratio_2_over_1": ratio, "identical_draws": same},
                     indent=1))
    if a.out:
        Path(a.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
