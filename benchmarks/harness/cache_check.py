"""The persistent compilation cache, checked: two fresh processes sharing one cache
directory run the same `bomcmc.sample`, and the second should skip compilation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .settings import ROOT

CACHE_SNIPPET = """\
import json, time
t0 = time.perf_counter()
import bomcmc
bomcmc.enable_compilation_cache({cache!r})
r = bomcmc.sample(posterior={posterior!r}, sampler="hmc", chains={chains}, draws={draws},
                  warmup={warmup}, seed=0, step_size={eps}, steps={steps}, progress=False,
                  float64={f64})
t = r.totals
print("BENCH_JSON " + json.dumps({{"in_process_s": time.perf_counter() - t0,
      "compile_s": t["compile_s"], "wall_s_total": t["wall_s_total"]}}))
"""


def cache_check(posterior: str, chains: int, draws: int, warmup: int, knobs, f64: bool) -> dict:
    eps, L = knobs
    runs = []
    with tempfile.TemporaryDirectory(prefix="bomcmc-cache-") as cache:
        code = CACHE_SNIPPET.format(cache=cache, posterior=posterior, chains=chains,
                                    draws=draws, warmup=warmup, eps=eps, steps=L, f64=f64)
        env = dict(os.environ)
        env.pop("BOMCMC_NO_CACHE", None)
        for i in range(2):
            t0 = time.perf_counter()
            p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               env=env, cwd=str(ROOT))
            wall = time.perf_counter() - t0
            if p.returncode != 0:
                raise RuntimeError(f"cache check run {i + 1} failed:\n{p.stderr[-2000:]}")
            line = [x for x in p.stdout.splitlines() if x.startswith("BENCH_JSON ")][-1]
            rec = json.loads(line[len("BENCH_JSON "):])
            rec["process_s"] = wall
            runs.append(rec)
        n_files = sum(1 for _ in Path(cache).rglob("*") if _.is_file())
    return {
        "posterior": posterior, "chains": chains, "draws": draws, "warmup": warmup,
        "knobs": {"step_size": eps, "steps": L}, "float64": f64,
        "first": runs[0], "second": runs[1], "cache_files": n_files,
        "command": "python -c \"import bomcmc; bomcmc.enable_compilation_cache(DIR); "
                   f"bomcmc.sample(posterior='{posterior}', sampler='hmc', chains={chains}, "
                   f"draws={draws}, warmup={warmup}, seed=0, step_size={eps}, steps={L}, "
                   "progress=False)\" (twice, same DIR)",
    }
