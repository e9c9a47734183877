#!/usr/bin/env python
"""ESS per leapfrog step on Bayesian logistic regression: Wang, Mohamed & de Freitas 2013
§5.1, Fig. 2 (top row: AHMC against NUTS).

    python experiments/logistic_ess.py --out docs --seeds 1

The paper: five UCI data sets (australian, german, heart, pima, ripley), 5000 draws after a
burn-in of 1000, 10 chains from differing starting points, AHMC's box ε ∈ [0.01, 0.2] and
L ∈ {1..100}; box plots of the minimum, median and maximum (over coordinates) ESS per
leapfrog step. Here, for every (data set, sampler, seed), one run of `--chains` chains:

- ahmc            bomcmc's AHMC (`sampler="ahmc"`) with the paper's box, `eps_bounds=(0.01,
                  0.2)`, `steps_bounds=(1, 100)`, and our default diagonal metric learned in
                  burn-in (`mass="diag"`);
- ahmc-auto       the same with the default metric (`mass="auto"`: the Laplace start, dense
                  when the correlations call for it);
- ahmc-identity   the same with the identity metric (`mass="identity"`), i.e. the paper's
                  sampler;
- nuts            bomcmc's NUTS with Stan's window warm-up (the benchmark harness's
                  `run_bomcmc_nuts`: diagonal metric, δ = 0.8, depth ≤ 10);
- numpyro-nuts    NumPyro's NUTS on the same flat log density from the same starting points
                  (the benchmark harness's `run_numpyro`, same settings).

Starting points: bomcmc's built-in initializer for these posteriors, β ~ U(−2, 2)^d
independently per chain (Stan's default), drawn with key fold_in(PRNGKey(seed), 0); every
sampler gets the same points for a seed. AHMC then moves each chain by at most 100 L-BFGS
iterations towards the mode (the authors' step 0, `kernels.ahmc.find_mode_counted`, the
kernel's `start`). The library counts those evaluations in `totals["n_grad_warmup"]` (runs
recorded before it did carry them apart as "n_grad_mode", and `adaptation_grads` adds them
back for those); this script records them apart too, as "n_grad_mode", for the tables.

Recorded per run (JSON): ArviZ bulk ESS over the chains (min / median / max over the
coordinates) and per chain; gradient evaluations of the sampling phase and of the warm-up
(+ mode search for AHMC), summed over chains; the wall time of each phase (sampling phase =
from the dispatch of its first chunk to the end, so the host-side tuner work between chunks
is inside it; compilation outside); for AHMC the tuner's own host time (the `after_chunk`
calls, split into GP fits, acquisition maximisation and the rest), measured by wrapping the
tuner's methods in this process.

Writes OUT/logistic_ess.json (every run), OUT/logistic_ess.png (Fig. 2 style: per-chain
min / median / max ESS per gradient, boxes over chains × seeds) and the generated part of
OUT/logistic_ess.md (between the GENERATED markers; the rest of the file is kept).

This file is the command line; the runs, the instrumentation, the figure and the tables are
the package `experiments/logistic/`, and the NUTS runners are `benchmarks/harness/`'s.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ and experiments/logistic/

from benchmarks.harness.environment import (command_line, machine_info,  # noqa: E402
                                            package_versions)
from benchmarks.harness.floor import CompileClock  # noqa: E402
from benchmarks.harness.stats import clean  # noqa: E402
from experiments.logistic.figure import make_figure  # noqa: E402
from experiments.logistic.results import (DATASETS, EPS_BOUNDS, SAMPLERS,  # noqa: E402
                                          STEPS_BOUNDS, adaptation_grads)
from experiments.logistic.runs import RUNS, summarize_run  # noqa: E402
from experiments.logistic.tables import write_doc  # noqa: E402


def _source_id() -> dict:
    """Where bomcmc was imported from, the repository's commit and a hash of the package's
    .py files (the working tree may hold uncommitted changes)."""
    import hashlib
    import subprocess

    import bomcmc

    pkg = Path(bomcmc.__file__).parent
    h = hashlib.sha256()
    for f in sorted(pkg.rglob("*.py")):
        h.update(f.relative_to(pkg).as_posix().encode())
        h.update(f.read_bytes())
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], check=True,
                                capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = None
    return {"path": str(pkg), "sha256_py": h.hexdigest()[:16], "repo_head": commit}


def _versions() -> dict:
    found = package_versions(("bomcmc", "jax", "numpyro", "blackjax", "arviz", "optax", "scipy"))
    return {p: v for p, v in found.items() if v is not None}


def from_json(path: Path, out: Path, no_doc: bool = False) -> int:
    """Figure and document from a saved results file; seeds with a missing run (a run
    stopped early) are dropped."""
    result = json.loads(path.read_text())
    m = result["meta"]
    want = {(d, s) for d in m["datasets"] for s in m["samplers"]}
    complete = [seed for seed in m["seeds"]
                if want <= {(r["dataset"], r["sampler"]) for r in result["runs"]
                            if r["seed"] == seed}]
    if not complete:
        sys.exit(f"{path}: no seed has all its runs")
    if complete != m["seeds"]:
        print(f"{path}: keeping complete seeds {complete} of {m['seeds']}")
    result["runs"] = [r for r in result["runs"] if r["seed"] in complete]
    m["seeds"] = complete
    out.mkdir(parents=True, exist_ok=True)
    js, fig = out / "logistic_ess.json", out / "logistic_ess.png"
    if js.resolve() != path.resolve():
        js.write_text(json.dumps(result, indent=1) + "\n")
    make_figure(result, fig)
    make_figure(result, out / "logistic_ess_monotone.png", "monotone")
    print(f"wrote {fig}")
    if not no_doc:
        print(f"wrote {write_doc(result, out, fig, js)}")
    return 0


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="ESS per leapfrog step, Wang, Mohamed & de Freitas 2013 §5.1 / Fig. 2")
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--samplers", default=",".join(SAMPLERS),
                   help=f"comma-separated, from {', '.join(SAMPLERS)}")
    p.add_argument("--chains", type=int, default=10)
    p.add_argument("--draws", type=int, default=5000)
    p.add_argument("--warmup", type=int, default=1000)
    p.add_argument("--seeds", type=int, default=1, help="repetitions, seeds 0..SEEDS-1")
    p.add_argument("--float32", action="store_true", help="default: float64 (as the paper's "
                   "MATLAB)")
    p.add_argument("--out", default="docs", help="writes OUT/logistic_ess.{md,json,png}")
    p.add_argument("--no-doc", action="store_true", help="write only the JSON and the figure")
    p.add_argument("--cache-dir", default=None, help="JAX compilation cache (default: a "
                   "temporary directory)")
    p.add_argument("--resume", action="store_true",
                   help="keep the runs already in OUT/logistic_ess.json (same chains, draws, "
                        "warm-up, float) and do only the missing ones")
    p.add_argument("--from-json", default=None, metavar="JSON",
                   help="no sampling: redraw the figure and the document from saved results "
                        "(a run stopped early keeps only its complete seeds)")
    return p.parse_args(argv)


def _meta(args, argv, datasets, samplers, seeds, float64) -> dict:
    return {
        "command": command_line("experiments/logistic_ess.py", argv),
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "datasets": datasets, "samplers": samplers, "seeds": seeds, "chains": args.chains,
        "draws": args.draws, "warmup": args.warmup, "float64": float64,
        "eps_bounds": EPS_BOUNDS, "steps_bounds": STEPS_BOUNDS,
        "starts": "bomcmc's initializer, U(-2, 2)^d per chain, key fold_in(PRNGKey(seed), 0)",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "machine_info": machine_info(), "versions": _versions(),
        "bomcmc_source": _source_id()}


def _resume(result: dict, js: Path, datasets, samplers) -> float:
    """Keep the runs of a saved results file with the same settings; its elapsed seconds."""
    old = json.loads(js.read_text())
    if not all(old["meta"][k] == result["meta"][k]
               for k in ("chains", "draws", "warmup", "float64")):
        sys.exit(f"{js}: other settings; cannot resume")
    result["runs"] = [r for r in old["runs"]
                      if r["dataset"] in datasets and r["sampler"] in samplers]
    elapsed_before = float(old["meta"].get("elapsed_s") or 0.0)
    result["meta"]["resumed"] = old["meta"].get("resumed", []) + [
        {"date": old["meta"]["date"], "runs_kept": len(result["runs"]),
         "elapsed_s": elapsed_before}]
    print(f"resuming: {len(result['runs'])} runs kept from {js}")
    return elapsed_before


def _progress(rec: dict, seconds: float) -> None:
    tun = rec.get("tuner")
    print(f"[{rec['dataset']:10s} seed {rec['seed']}] {rec['sampler']:13s} ESS/grad min/med/max "
          f"{rec['ess_per_grad']['min']:.4f}/{rec['ess_per_grad']['median']:.4f}/"
          f"{rec['ess_per_grad']['max']:.4f} incl.adapt min "
          f"{rec['ess_per_grad_incl_adapt']['min']:.4f} ESS/s min "
          f"{rec['ess_per_s']['min']:.1f} grads {rec['n_grad']}+"
          f"{adaptation_grads(rec)} eps "
          f"{rec.get('step_size', float('nan')):.3g} L {rec.get('final_L')} "
          f"acc {rec['accept_mean']:.2f} div {rec['divergences']}"
          + (f" tuner {tun['total_s']:.2f}s ({100 * tun['fraction_of_run']:.1f}%)"
             if tun else "")
          + f" [{seconds:.0f}s]", flush=True)


def _run_all(result: dict, args, float64: bool, save) -> None:
    """Every missing (seed, data set, sampler) run, each saved as soon as it is done."""
    import jax

    from bomcmc import models
    from bomcmc.posterior import flatten
    from experiments.logistic.probe import Probe

    clock, probe = CompileClock(), Probe()
    m = result["meta"]
    done = {(r["dataset"], r["sampler"], r["seed"]) for r in result["runs"]}
    for seed in m["seeds"]:
        for ds in m["datasets"]:
            name = f"logistic-{ds}"
            flat = flatten(models.get(name))
            starts = flat.init_flat(jax.random.fold_in(jax.random.PRNGKey(seed), 0),
                                    args.chains)
            ctx = {"name": name, "flat": flat, "logdensity": flat.logdensity_fn,
                   "starts": starts, "chains": args.chains, "draws": args.draws,
                   "warmup": args.warmup, "float64": float64, "clock": clock}
            for s in m["samplers"]:
                if (ds, s, seed) in done:
                    continue
                t0 = time.perf_counter()
                rec = {"dataset": ds, "sampler": s, "seed": seed, "dim": flat.dim,
                       **summarize_run(RUNS[s](ctx, seed, probe))}
                result["runs"].append(rec)
                _progress(rec, time.perf_counter() - t0)
                save()


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.from_json:
        return from_json(Path(args.from_json), Path(args.out), args.no_doc)
    datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    samplers = [s.strip() for s in args.samplers.split(",") if s.strip()]
    bad = [d for d in datasets if d not in DATASETS] + [s for s in samplers if s not in SAMPLERS]
    if bad:
        sys.exit(f"unknown data set(s) / sampler(s): {bad}")
    if args.seeds < 1:
        sys.exit("--seeds must be >= 1")
    t_start = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    float64 = not args.float32

    import bomcmc

    if float64:
        bomcmc.set_float64(True)
    import arviz  # noqa: F401  (imported up front so no run pays for it)

    result = {"meta": _meta(args, argv, datasets, samplers, list(range(args.seeds)), float64),
              "runs": []}
    js, fig = out / "logistic_ess.json", out / "logistic_ess.png"
    elapsed_before = (_resume(result, js, datasets, samplers) if args.resume and js.exists()
                      else 0.0)

    def save():
        result["meta"]["elapsed_s"] = elapsed_before + time.perf_counter() - t_start
        js.write_text(json.dumps(clean(result), indent=1) + "\n")

    with tempfile.TemporaryDirectory(prefix="bomcmc-logess-") as tmp:
        bomcmc.enable_compilation_cache(args.cache_dir or tmp)
        _run_all(result, args, float64, save)
    save()
    make_figure(clean(result), fig)
    make_figure(clean(result), out / "logistic_ess_monotone.png", "monotone")
    print(f"wrote {js}\nwrote {fig}")
    if not args.no_doc:
        print(f"wrote {write_doc(clean(result), out, fig, js)}")
    print(f"done in {time.perf_counter() - t_start:.0f} s (experiment total "
          f"{result['meta']['elapsed_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
