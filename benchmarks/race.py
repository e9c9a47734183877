#!/usr/bin/env python
"""The race (issue 32): the whole process's wall time to a finished run, everything counted
(imports, compilation, warm-up, sampling, writing, the summary), bomcmc's CLI at its
defaults against NumPyro's NUTS as a user writes it, on logistic-german.

    python benchmarks/race.py --pairs 4 --out benchmarks/results/race-german.json
    python benchmarks/race.py --pairs 4 --baseline /path/to/old/src   # two versions
    python benchmarks/race.py --pairs 4 --equal-precision                # same min ESS

Both sides: 4 chains, 1000 warm-up and 1000 draws (bomcmc's warm-up is "auto", capped at
1000), float32, the JAX compilation cache warm (one unrecorded run of each first). Runs
alternate A B A B. NumPyro's side: the model below, `MCMC(NUTS(model), num_warmup=1000,
num_samples=1000, num_chains=4, chain_method="vectorized")`, then ArviZ's bulk ESS (a user
looks at a summary, as bomcmc's CLI prints one); its data from an .npz written beforehand.
Reported: the median seconds of each side, their ratio, each run's min bulk ESS, and the
median of bomcmc's seconds by phase from its run.json (startup_s: imports and JAX's start;
the phases after it are timed inside the process; the interpreter's own start is not).

--equal-precision: both sides finish at the same precision. In each pair NumPyro runs first,
then bomcmc with `--until-ess` at that NumPyro run's min bulk ESS and `--draws` as a cap
(--cap-draws, 20000): bomcmc samples chunk after chunk until its min bulk and tail ESS reach
the target and R-hat <= 1.01 (`bomcmc.driver.until`), so its min bulk ESS is at least NumPyro's
unless the cap stops it first (each row records which, "reached"). Its draws per chain are
reported too.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

NUMPYRO = """
import sys, json
import numpy as np
import jax
import numpyro
import numpyro.distributions as dist
from numpyro.infer import MCMC, NUTS
import arviz as az

z = np.load(sys.argv[1])
X, y = z["X"], z["y"]

def model(X, y):
    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0).expand([X.shape[1]]))
    numpyro.sample("y", dist.Bernoulli(logits=X @ beta), obs=y)

mcmc = MCMC(NUTS(model), num_warmup=1000, num_samples=1000, num_chains=4,
            chain_method="vectorized", progress_bar=False)
mcmc.run(jax.random.PRNGKey(int(sys.argv[2])), X, y)
idata = az.from_numpyro(mcmc)
print(json.dumps({"min_ess_bulk": float(az.ess(idata, method="bulk")["beta"].min())}))
"""


def _bomcmc(tmp: Path, seed: int, src: str | None = None, until_ess: float | None = None,
            cap_draws: int = 20000) -> dict:
    """bomcmc's CLI at its defaults; `src`: the source tree it imports (PYTHONPATH), else
    the one this environment imports; `until_ess`: run until precise, up to `cap_draws`
    draws per chain."""
    out = tmp / ("run" if src is None else "run-baseline")
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = src
    t0 = time.perf_counter()
    until = [] if until_ess is None else ["--until-ess", f"{until_ess:.1f}", "--draws",
                                          str(cap_draws)]
    p = subprocess.run([sys.executable, "-m", "bomcmc", "sample", "--posterior",
                        "logistic-german", "--seed", str(seed), "--out", str(out),
                        "--overwrite", "--json", *until], capture_output=True, text=True,
                       env=env)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(p.stderr[-2000:])
    s = json.loads(p.stdout)
    run = json.loads((out / "run.json").read_text())
    row = {"wall_s": wall, "min_ess_bulk": _min_ess(s),
           "phases": {k: run[k] for k in PHASES if k in run}}
    if until_ess is not None:
        rec = run.get("until") or {}
        row.update(until_ess=until_ess, reached=rec.get("reached"),
                   draws_per_chain=rec.get("draws"), min_ess_tail=rec.get("ess_tail"))
    return row


# run.json's seconds by phase, in the order the command spends them (docs/benchmarks.md)
PHASES = ("startup_s", "prepare_s", "compile_s", "wall_s_warmup", "tuner_s", "wall_s",
          "assemble_s", "write_s", "report_s")


def _until(row: dict) -> str:
    """", target T, N draws/chain" for a run until precise (", cap" where it stopped there)."""
    if "until_ess" not in row:
        return ""
    return (f", target {row['until_ess']:.0f}, {row['draws_per_chain']} draws/chain"
            + ("" if row["reached"] else ", cap"))


def _min_ess(summary: dict) -> float:
    return float(min(np.min(v["ess_bulk"]) for v in summary["variables"].values()))


def _numpyro(script: Path, data: Path, seed: int) -> dict:
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, str(script), str(data), str(seed)],
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(p.stderr[-2000:])
    return {"wall_s": wall, **json.loads(p.stdout.strip().splitlines()[-1])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--out", default=None)
    ap.add_argument("--baseline", default=None, metavar="SRC",
                    help="another bomcmc source tree (a src/ directory), run in each pair "
                         "too (A B C A B C ...), to compare two versions under the same load")
    ap.add_argument("--equal-precision", action="store_true",
                    help="NumPyro first in each pair, then bomcmc with --until-ess at that "
                         "run's min bulk ESS (module docstring)")
    ap.add_argument("--cap-draws", type=int, default=20000,
                    help="with --equal-precision: bomcmc's --draws, the cap (20000)")
    args = ap.parse_args(argv)
    from bomcmc.datasets import girolami_logreg

    X, y = girolami_logreg("german")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        np.savez(tmp / "german.npz", X=X, y=y)
        script = tmp / "numpyro_german.py"
        script.write_text(NUMPYRO)
        sides = ["bomcmc", "numpyro"] + (["baseline"] if args.baseline else [])
        _bomcmc(tmp, 100), _numpyro(script, tmp / "german.npz", 100)  # warm the caches
        if args.baseline:
            _bomcmc(tmp, 100, args.baseline)
        rows = []
        for i in range(args.pairs):
            if args.equal_precision:  # NumPyro first: its min ESS is bomcmc's target
                row = {"pair": i, "numpyro": _numpyro(script, tmp / "german.npz", i)}
                target = row["numpyro"]["min_ess_bulk"]
                row["bomcmc"] = _bomcmc(tmp, i, until_ess=target, cap_draws=args.cap_draws)
                if args.baseline:
                    row["baseline"] = _bomcmc(tmp, i, args.baseline, until_ess=target,
                                              cap_draws=args.cap_draws)
            else:
                row = {"pair": i, "bomcmc": _bomcmc(tmp, i),
                       "numpyro": _numpyro(script, tmp / "german.npz", i)}
                if args.baseline:
                    row["baseline"] = _bomcmc(tmp, i, args.baseline)
            rows.append(row)
            print(f"pair {i}: " + ", ".join(f"{k} {row[k]['wall_s']:.2f} s (min ESS "
                                             f"{row[k]['min_ess_bulk']:.0f}{_until(row[k])})"
                                             for k in sides), flush=True)
    med = {k: float(np.median([r[k]["wall_s"] for r in rows])) for k in sides}
    phases = {side: {k: float(np.median([r[side]["phases"][k] for r in rows])) for k in PHASES
                     if all(k in r[side]["phases"] for r in rows)}
              for side in sides if side != "numpyro"}
    result = {"mode": "equal-precision" if args.equal_precision else "fixed-draws",
              "rows": rows, "median_s": med, "ratio": med["bomcmc"] / med["numpyro"],
              "bomcmc_phases_median_s": phases["bomcmc"], "load_average": os.getloadavg()}
    if args.baseline:
        result.update(baseline=args.baseline, baseline_ratio=med["baseline"] / med["numpyro"],
                      baseline_phases_median_s=phases["baseline"])
    print(f"median: bomcmc {med['bomcmc']:.2f} s, NumPyro {med['numpyro']:.2f} s, ratio "
          f"{result['ratio']:.2f}; load average {result['load_average'][0]:.1f}")
    if args.baseline:
        print(f"baseline {args.baseline}: {med['baseline']:.2f} s, ratio "
              f"{result['baseline_ratio']:.2f}")
    for side, ph in phases.items():
        print(f"{side}'s run.json, median s: " + ", ".join(f"{k} {v:.2f}" for k, v in ph.items()))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
