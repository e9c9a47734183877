#!/usr/bin/env python
"""ESS per second end to end on a GPU: bomcmc's `ahmc` and `nuts` against NumPyro's and
BlackJAX's NUTS and BlackJAX's ChEES, from 16 to 1024 chains.

    python benchmarks/gpu.py run --out /tmp/gpu      # on the GPU machine
    python benchmarks/gpu.py report benchmarks/results/gpu-h100.json

`run` calls `benchmarks/run.py` once per setting (so that one setting running out of time
loses nothing else), float32 (JAX's default, the GPU's fast type), 1000 warm-up transitions
and 1000 draws per chain (1000 + 1000), one repeat, and after every setting rewrites `gpu.json` in `--out`:
every setting's results file, its seconds and, where it failed, the last line it printed.

- chains: `logistic-german` (d = 25, 1000 rows) with 16, 1024 and 128 chains (the ends
  first). The 1024-chain setting also runs the reference (bomcmc NUTS, 256 chains × 1000
  draws) that every sampler's means are checked against (max |z| in the report);
- rows: `logistic-synthetic-100000` (d = 20, 10⁵ rows), 16 chains: a gradient big enough
  to fill the GPU.

`report` prints, per setting and sampler, ESS per second end to end (min over coordinates
of the bulk ESS ÷ the whole call's seconds, compilation included), per second of sampling,
ESS per 1000 gradients
of the sampling phase and with the warm-up's gradients, R-hat and the mean's max |z|.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLERS = "bomcmc-ahmc,bomcmc-nuts,numpyro-nuts,blackjax-nuts,blackjax-chees"
# (tag, posterior, chains, reference draws, seconds allowed)
SETTINGS = (
    ("chains-16", "logistic-german", 16, 0, 110),
    ("chains-1024", "logistic-german", 1024, 1000, 170),
    ("chains-128", "logistic-german", 128, 0, 110),
    ("rows-100000", "logistic-synthetic-100000", 16, 0, 110),
)


def _one(out: Path, tag: str, posterior: str, chains: int, ref_draws: int,
         limit: float) -> dict:
    cmd = [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--posteriors", posterior,
           "--samplers", SAMPLERS, "--chains", str(chains), "--warmup", "1000",
           "--draws", "1000", "--repeats", "1", "--reference-draws", str(ref_draws),
           "--reference-chains", "256", "--floor-evals", "200", "--no-doc",
           "--results-dir", str(out), "--tag", tag]
    print("$", " ".join(cmd[1:]), flush=True)
    t0 = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
        rc, text = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as e:
        rc, text = "timeout", (e.stdout or b"").decode() + (e.stderr or b"").decode()
    seconds = time.perf_counter() - t0
    print(text, flush=True)
    path = out / f"{tag}.json"
    return {"command": " ".join(cmd[1:]), "seconds": seconds, "rc": rc,
            "results": json.loads(path.read_text()) if path.exists() else None,
            "last_line": (text.strip().splitlines() or ["?"])[-1]}


def run(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    import jax

    bundle = {"devices": [str(d) for d in jax.devices()], "jax": jax.__version__,
              "settings": {}}
    for tag, posterior, chains, ref_draws, limit in SETTINGS:
        bundle["settings"][tag] = _one(out, tag, posterior, chains, ref_draws, limit)
        (out / "gpu.json").write_text(json.dumps(bundle, indent=1, default=str))
        (out / f"{tag}.json").unlink(missing_ok=True)  # kept inside gpu.json


def report(path: Path) -> None:
    bundle = json.loads(path.read_text())
    print(f"devices: {', '.join(bundle['devices'])}; JAX {bundle['jax']}\n")
    print("| setting | sampler | ESS/s end to end | ESS/s sampling | "
          "ESS/1000 grad (with warm-up) | seconds end to end | R-hat max | mean max abs z |")
    print("|---|---|---|---|---|---|---|---|")
    for tag, s in bundle["settings"].items():
        if s["results"] is None:
            print(f"| {tag} | – | {s['rc']}: {s['last_line']} | | | {s['seconds']:.0f} | | |")
            continue
        post = next(iter(s["results"]["posteriors"].values()))
        for name, r in post["samplers"].items():
            rep = r["repeats"][0]
            ess = rep["ess_bulk"]["min"]
            z = rep.get("mean_z_max")
            print(f"| {tag} | `{name}` | {ess / rep['end_to_end_s']:.0f} | "
                  f"{rep['ess_per_s']['min']:.0f} | "
                  f"{rep['ess_per_kgrad']['min']:.1f} "
                  f"({rep['ess_per_kgrad_incl_warmup']['min']:.1f}) | "
                  f"{rep['end_to_end_s']:.1f} | {rep['rhat_max']:.3f} | "
                  f"{'–' if z is None else f'{z:.1f}'} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", type=Path, required=True)
    q = sub.add_parser("report")
    q.add_argument("path", type=Path)
    a = p.parse_args()
    run(a.out) if a.cmd == "run" else report(a.path)


if __name__ == "__main__":
    main()
