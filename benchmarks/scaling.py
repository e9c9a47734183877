#!/usr/bin/env python
"""How cost grows with the number of vmapped chains and with the data size.

    python benchmarks/scaling.py run --out benchmarks/results/scaling
    python benchmarks/scaling.py report benchmarks/results/scaling --figure docs/figures/scaling.png

`run` calls `benchmarks/run.py` once per (sweep, setting, sampler), so that one sampler
failing loses nothing else, with no reference run (cost only; `--reference-draws 0`):

- chains: `logistic-german`, 1, 4, 16 and 64 vmapped chains, 500 warm-up + 1000 draws;
- data: `logistic-synthetic-N` (d = 20, simulated rows, the rows of a smaller N the first
  rows of a larger one), N = 10³, 10⁴, 10⁵, 4 chains, 500 warm-up + 500 draws.

`report` prints, per sweep and sampler, the sampling seconds per gradient (wall ÷ all chains'
gradients: the cost of one chain's gradient, which vmapping amortises), the seconds per
vmapped step (wall ÷ gradients per chain: one gradient of every chain at once), min ESS per
1000 gradients, and for the data sweep the exponent b of seconds per gradient ∝ N^b (least
squares on log-log over all N, and between the two largest N; b = 1 is cost proportional to
the data), and draws the two panels. Sampling seconds include the host's work between
chunks (for `bomcmc-ahmc`, its tuner after every 10-transition super-transition).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SAMPLERS = ("bomcmc-ahmc", "bomcmc-nuts", "blackjax-chees", "blackjax-nuts-lowrank")
CHAINS = (1, 4, 16, 64)
ROWS = (1_000, 10_000, 100_000)


def _run(out: Path, tag: str, posterior: str, sampler: str, chains: int, warmup: int,
         draws: int) -> None:
    path = out / f"{tag}.json"
    if path.exists():  # a re-run skips what is done
        return
    cmd = [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--posteriors", posterior,
           "--samplers", sampler, "--chains", str(chains), "--warmup", str(warmup),
           "--draws", str(draws), "--repeats", "1", "--float64", "--reference-draws", "0",
           "--floor-evals", "200", "--no-doc", "--results-dir", str(out), "--tag", tag]
    print(" ".join(cmd[1:]), flush=True)
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        path.with_suffix(".failed").write_text(last + "\n")
        print(f"  failed: {last}", flush=True)


def run(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for c in CHAINS:
        for s in SAMPLERS:
            _run(out, f"chains-{c}-{s}", "logistic-german", s, c, 500, 1000)
    for n in ROWS:
        for s in SAMPLERS:
            _run(out, f"rows-{n}-{s}", f"logistic-synthetic-{n}", s, 4, 500, 500)


def _figures(path: Path) -> dict | None:
    if not path.exists():
        return None
    res = json.loads(path.read_text())
    post = next(iter(res["posteriors"].values()))
    rep = next(iter(post["samplers"].values()))["repeats"][0]
    return {"s_per_grad": rep["wall_s"] / rep["n_grad"],
            "s_per_grad_per_chain": rep["s_per_grad_per_chain"],
            "ess_per_kgrad": rep["ess_per_kgrad"]["min"],
            "ess_per_kgrad_incl_warmup": rep["ess_per_kgrad_incl_warmup"]["min"]}


def collect(out: Path) -> dict:
    table = {"chains": {}, "rows": {}}
    for s in SAMPLERS:
        table["chains"][s] = {c: _figures(out / f"chains-{c}-{s}.json") for c in CHAINS}
        table["rows"][s] = {n: _figures(out / f"rows-{n}-{s}.json") for n in ROWS}
    return table


def exponent(points: dict, last: int | None = None) -> float | None:
    """b in seconds per gradient ∝ N^b, least squares on log-log over the rows measured (the
    `last` largest N only, when given)."""
    xs = sorted((n, f["s_per_grad"]) for n, f in points.items() if f is not None)
    if last is not None:
        xs = xs[-last:]
    if len(xs) < 2:
        return None
    n, t = np.log([x[0] for x in xs]), np.log([x[1] for x in xs])
    return float(np.polyfit(n, t, 1)[0])


def report(out: Path, figure: Path | None) -> None:
    table = collect(out)
    print("| sweep | sampler | setting | s per gradient | s per vmapped step | "
          "min ESS/1000 grad (with warm-up) |")
    print("|---|---|---|---|---|---|")
    for sweep, settings in (("chains", CHAINS), ("rows", ROWS)):
        for s in SAMPLERS:
            for k in settings:
                f = table[sweep][s][k]
                if f is None:
                    failed = out / f"{sweep}-{k}-{s}.failed"
                    why = failed.read_text().strip() if failed.exists() else "not run"
                    print(f"| {sweep} | `{s}` | {k} | – | – | {why} |")
                    continue
                print(f"| {sweep} | `{s}` | {k} | {f['s_per_grad'] * 1e6:.1f} µs | "
                      f"{f['s_per_grad_per_chain'] * 1e6:.1f} µs | {f['ess_per_kgrad']:.1f} "
                      f"({f['ess_per_kgrad_incl_warmup']:.1f}) |")
    print()
    for s in SAMPLERS:
        b, b2 = exponent(table["rows"][s]), exponent(table["rows"][s], last=2)
        print(f"`{s}`: seconds per gradient ∝ N^{b:.2f} (N^{b2:.2f} between the two largest)"
              if b is not None else f"`{s}`: too few data sizes measured")
    if figure is not None:
        _plot(table, figure)


def _plot(table: dict, figure: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    for s in SAMPLERS:
        pts = [(c, f["s_per_grad"]) for c, f in table["chains"][s].items() if f]
        if pts:
            a.plot(*zip(*pts), "o-", label=s)
        pts = [(n, f["s_per_grad"]) for n, f in table["rows"][s].items() if f]
        if pts:
            b.plot(*zip(*pts), "o-", label=f"{s} (b = {exponent(table['rows'][s]):.2f})"
                   if len(pts) > 1 else s)
    a.set(xscale="log", yscale="log", xlabel="vmapped chains",
          ylabel="sampling seconds per gradient (all chains)",
          title="logistic-german: cost per gradient against chains")
    a.set_xticks(CHAINS, [str(c) for c in CHAINS])
    b.set(xscale="log", yscale="log", xlabel="rows N", ylabel="sampling seconds per gradient",
          title="logistic-synthetic-N, 4 chains: cost against data size")
    for ax in (a, b):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    figure.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(figure, dpi=120)
    plt.close(fig)
    print(f"wrote {figure}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=("run", "report"))
    p.add_argument("out", nargs="?", type=Path, default=ROOT / "benchmarks" / "results" / "scaling")
    p.add_argument("--out", dest="out_opt", type=Path, default=None)
    p.add_argument("--figure", type=Path, default=None)
    a = p.parse_args(argv)
    out = a.out_opt or a.out
    if a.mode == "run":
        run(out)
    else:
        report(out, a.figure)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
