#!/usr/bin/env python
"""The race against the whole field (issue 32): each entrant's whole process, timed from
outside, to a finished run whose every parameter has bulk and tail ESS of at least 400 and
R-hat at most 1.01, with cold and with warm caches.

    python benchmarks/race_field.py --out benchmarks/results/race-field.json

Entrants: `bomcmc` is `bomcmc sample --posterior P --until-ess 400 --draws 20000` at its
defaults (`ahmc`, 4 chains, float32), which samples until the rule holds; the peers are
`race_peers.py`'s (NumPyro, nutpie and BlackJAX's NUTS, diagonal and dense or low-rank
metrics, 1000 + 1000 and then the loop a user writes around them, same rule, same cap).
Posteriors: logistic-german, the non-centred eight schools and regression-correlated (25
predictors correlated at 0.95), the peers' data written from bomcmc's copies; and, with
`--posteriors robot-arm`, the robot-arm network (MacKay's 200 training cases, a 2-16-2 tanh
network, `bomcmc bnn fit`'s default priors). On the network bomcmc's entrant is `bomcmc bnn
fit --chains 4 --until-ess 400` at its other defaults (`ahmc_cv`), capped at 5000
super-transitions (20 million gradients per chain, about what 20 000 NUTS draws of tree
depth 10 cost), and every entrant's rule reads the network's predictions at the training
inputs and its log-likelihood, not its weights, which are not identified.

Caches: "cold" runs each process with empty cache directories (bomcmc's compilation cache,
`BOMCMC_CACHE_DIR`; PyTensor's compile directory and numba's cache for nutpie). NumPyro and
BlackJAX keep no compilation cache across processes unless a user turns JAX's on, so their
cold and warm runs differ only in what the operating system keeps. "warm" runs share one set
of cache directories, warmed by one unrecorded run of every entrant on every posterior. Rounds
visit the posteriors in turn and, within one, the entrants in an order rotated each round;
seed r in round r. Reported per posterior and cache: each entrant's median seconds, their
spread (min, max), how many runs met the rule, the median min bulk ESS and draws per chain,
and the median's ratio to bomcmc's.
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
from race_peers import CAP, TARGET

HERE = Path(__file__).resolve().parent
POSTERIORS = {"german": "logistic-german",
              "eight-schools": "eight_schools-eight_schools_noncentered",
              "regression-correlated": "regression-correlated", "robot-arm": None}
NETWORK_CAP = 5000  # super-transitions of `bomcmc bnn fit` on the robot arm (× 4000 gradients)
PEERS = ("numpyro-diag", "numpyro-dense", "nutpie-diag", "nutpie-lowrank", "blackjax-diag",
         "blackjax-dense")


def write_data(tmp: Path) -> dict[str, Path]:
    """Each posterior's data from bomcmc's own copies, as .npz files for the peers."""
    from bomcmc.datasets import girolami_logreg, robot_arm
    from bomcmc.models.hard import regression_correlated
    from bomcmc.models.posteriordb import load_data

    X, y = girolami_logreg("german")
    reg = regression_correlated().data.arrays
    school = load_data("eight_schools")
    arrays = {"german": {"X": X, "y": y},
              "regression-correlated": {"X": reg["X"], "y": reg["y"]},
              "eight-schools": {"y": school["y"], "sigma": school["sigma"]}}
    X, y = robot_arm("train")
    arrays["robot-arm"] = {"X": X, "y": y}
    np.savetxt(tmp / "robot-arm.csv", np.c_[X, y], delimiter=",", header="x1,x2,y1,y2",
               comments="")
    paths = {}
    for name, a in arrays.items():
        paths[name] = tmp / f"{name}.npz"
        np.savez(paths[name], **{k: np.asarray(v, float) for k, v in a.items()})
    return paths


def cache_env(root: Path) -> dict:
    """The environment whose caches live under `root` (which may be empty: a cold start)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JAX_COMPILATION_CACHE", "BOMCMC_NO_CACHE"))}
    env.update(BOMCMC_CACHE_DIR=str(root / "bomcmc"), NUMBA_CACHE_DIR=str(root / "numba"),
               PYTENSORFLAGS=f"compiledir={root / 'pytensor'}")
    return env


def run_bomcmc(posterior: str, seed: int, env: dict, tmp: Path) -> dict:
    out = tmp / "bomcmc-run"
    if posterior == "robot-arm":
        cmd = ["bnn", "fit", str(tmp / "robot-arm.csv"), "--target", "y1,y2", "--chains", "4",
               "--super-transitions", str(NETWORK_CAP), "--no-progress"]
    else:
        cmd = ["sample", "--posterior", POSTERIORS[posterior], "--draws", str(CAP)]
    p = subprocess.run([sys.executable, "-m", "bomcmc", *cmd, "--until-ess", f"{TARGET:g}",
                        "--seed", str(seed), "--out", str(out), "--overwrite", "--json"],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise SystemExit(f"bomcmc on {posterior}: {p.stderr[-2000:]}")
    run = out / "run" / "run.json" if posterior == "robot-arm" else out / "run.json"
    u = json.loads(run.read_text())["until"]
    return {"min_ess_bulk": u["ess_bulk"], "min_ess_tail": u["ess_tail"],
            "max_rhat": u["rhat"], "draws_per_chain": u["draws"], "reached": u["reached"]}


def run_peer(entrant: str, posterior: str, data: Path, seed: int, env: dict) -> dict:
    p = subprocess.run([sys.executable, str(HERE / "race_peers.py"), entrant, posterior,
                        str(data), str(seed)], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise SystemExit(f"{entrant} on {posterior}: {p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def timed(entrant: str, posterior: str, seed: int, env: dict, tmp: Path,
          data: dict[str, Path]) -> dict:
    t0 = time.perf_counter()
    row = (run_bomcmc(posterior, seed, env, tmp) if entrant == "bomcmc"
           else run_peer(entrant, posterior, data[posterior], seed, env))
    return {"entrant": entrant, "posterior": posterior, "seed": seed,
            "wall_s": time.perf_counter() - t0, **row}


def summarise(rows: list[dict]) -> list[dict]:
    """Per (cache, posterior, entrant): median and spread of seconds, runs meeting the rule,
    median min bulk ESS and draws per chain, and the median's ratio to bomcmc's."""
    out = []
    keys = sorted({(r["cache"], r["posterior"]) for r in rows})
    for cache, post in keys:
        sel = [r for r in rows if r["cache"] == cache and r["posterior"] == post]
        med = {e: float(np.median([r["wall_s"] for r in sel if r["entrant"] == e]))
               for e in dict.fromkeys(r["entrant"] for r in sel)}
        for e, m in med.items():
            mine = [r for r in sel if r["entrant"] == e]
            out.append({"cache": cache, "posterior": post, "entrant": e, "runs": len(mine),
                        "median_s": m, "min_s": min(r["wall_s"] for r in mine),
                        "max_s": max(r["wall_s"] for r in mine),
                        "reached": sum(bool(r["reached"]) for r in mine),
                        "median_min_ess_bulk": float(np.median([r["min_ess_bulk"]
                                                                for r in mine])),
                        "median_draws_per_chain": float(np.median([r["draws_per_chain"]
                                                                   for r in mine])),
                        "ratio_to_bomcmc": m / med["bomcmc"] if "bomcmc" in med else None})
    return out


def table(summary: list[dict]) -> str:
    lines = ["| cache | posterior | entrant | median s (min, max) | met the rule | "
             "min bulk ESS, median | draws/chain, median | ÷ bomcmc |",
             "|---|---|---|---|---|---|---|---|"]
    for s in summary:
        ratio = "" if s["ratio_to_bomcmc"] is None else f"{s['ratio_to_bomcmc']:.2f}"
        lines.append(f"| {s['cache']} | {s['posterior']} | {s['entrant']} | "
                     f"{s['median_s']:.1f} ({s['min_s']:.1f}, {s['max_s']:.1f}) | "
                     f"{s['reached']}/{s['runs']} | {s['median_min_ess_bulk']:.0f} | "
                     f"{s['median_draws_per_chain']:.0f} | {ratio} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="warm-cache rounds (3)")
    ap.add_argument("--cold-rounds", type=int, default=2, help="cold-cache rounds (2)")
    ap.add_argument("--posteriors", default="german,eight-schools,regression-correlated",
                    help=f"comma-separated, of {', '.join(POSTERIORS)}")
    ap.add_argument("--entrants", default=",".join(("bomcmc",) + PEERS))
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    posts, entrants = args.posteriors.split(","), args.entrants.split(",")
    if unknown := set(posts) - set(POSTERIORS):
        ap.error(f"unknown posteriors {sorted(unknown)}; choose from {sorted(POSTERIORS)}")
    if unknown := set(entrants) - {"bomcmc", *PEERS}:
        ap.error(f"unknown entrants {sorted(unknown)}")
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        data = write_data(tmp)
        plan = [("cold", 100 + r, r) for r in range(args.cold_rounds)]
        plan += [("warm", r, r) for r in range(args.rounds)]
        warm_env = cache_env(tmp / "warm")
        for post in posts:  # one unrecorded run of each fills the warm caches
            for e in entrants:
                timed(e, post, 999, warm_env, tmp, data)
        for cache, seed, r in plan:
            for post in posts:
                for e in entrants[r % len(entrants):] + entrants[:r % len(entrants)]:
                    env = (warm_env if cache == "warm"
                           else cache_env(Path(tempfile.mkdtemp(dir=tmp))))
                    row = {"cache": cache, "round": r,
                           **timed(e, post, seed, env, tmp, data)}
                    rows.append(row)
                    print(f"{cache} r{r} {post} {e}: {row['wall_s']:.1f} s, min ESS "
                          f"{row['min_ess_bulk']:.0f}, {row['draws_per_chain']} draws/chain"
                          + ("" if row["reached"] else ", rule NOT met"), flush=True)
    summary = summarise(rows)
    print(table(summary))
    if args.out:
        Path(args.out).write_text(json.dumps(
            {"rows": rows, "summary": summary, "load_average": os.getloadavg(),
             "command": " ".join(sys.argv)}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
