"""Golden draws: record short runs of every sampler, then check a later tree reproduces them.

    python benchmarks/golden_draws.py record OUT.npz     # on the tree before a refactor
    python benchmarks/golden_draws.py check  OUT.npz     # on the tree after it: bit for bit
    python benchmarks/golden_draws.py check  OUT.npz --rtol 1e-10   # across machines

Each case is a few seconds of float64 sampling through the public API; a case records the
posterior draws, the log densities and every sample_stats field. The sampler names and the
module paths changed once (architecture refactor), so each case tries the new spelling first.
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np


def _first(*candidates):
    """The first importable `module:attr` among the candidates."""
    for c in candidates:
        mod, attr = c.split(":")
        try:
            return getattr(importlib.import_module(mod), attr)
        except (ImportError, AttributeError):
            continue
    raise ImportError(f"none of {candidates}")


def _sampler_name(*names):
    import bomcmc

    try:
        available = bomcmc.registry.names()
    except AttributeError:
        available = bomcmc.registry.names()
    for n in names:
        if n in available:
            return n
    raise KeyError(names)


def _arrays(idata) -> dict:
    out = {f"posterior.{k}": np.asarray(v) for k, v in idata.posterior.items()}
    out.update({f"stats.{k}": np.asarray(v) for k, v in idata.sample_stats.items()})
    return out


def _network():
    BNN = _first("bomcmc.bnn.network:BNN", "bomcmc.models.bnn:BNN")
    rng = np.random.default_rng(3)
    X = rng.normal(size=(12, 2))
    y = np.sin(X[:, :1]) + 0.1 * rng.normal(size=(12, 1))
    return BNN(X, y, hidden=(3,), prior="ih 1:2 bh 1 ho x1:2 bo 1", noise="0.5:2")


COMMON = dict(chains=3, seed=5, float64=True, progress=False, chunk_size=25)


def cases(short: bool):
    import bomcmc

    n = 40 if short else 200
    w = 40 if short else 200

    def run(**kw):
        return bomcmc.sample(**{**COMMON, **kw}).idata

    yield "hmc", lambda: run(posterior="logistic-heart", sampler="hmc", draws=n, warmup=0,
                             step_size=0.05, steps=10, random_steps=True)
    yield "nuts", lambda: run(posterior="logistic-heart", sampler="nuts", draws=n, warmup=w)
    yield "nuts_async", lambda: run(posterior="logistic-heart",
                                    sampler=_sampler_name("nuts_async"), draws=n, warmup=w)
    yield "ahmc", lambda: run(posterior="logistic-pima", sampler="ahmc", draws=n, warmup=w)
    # the paper's burn-in: one shared (ε, L), the whole L box, DIRECT + L-BFGS-B (the defaults
    # before the batch burn-in and the grid search; its draws are the "ahmc" case's as
    # recorded before the batch burn-in)
    yield "ahmc_paper", lambda: run(posterior="logistic-pima", sampler="ahmc", draws=n,
                                    warmup=w, batch=1, steps_cap=0, search="direct")
    yield "two_phase", lambda: run(posterior="logistic-pima",
                                   sampler=_sampler_name("two_phase", "bo2"), draws=n, warmup=w)

    def neal():
        neal_sampler = _first("bomcmc.kernels.neal_gibbs_hmc:neal_sampler",
                              "bomcmc.bnn.samplers:neal_sampler",
                              "bomcmc.samplers.neal_gibbs_hmc:neal_sampler")
        m = _network()
        return run(posterior=m.posterior(), sampler=neal_sampler(m), draws=n, warmup=0,
                   step_size=0.1, steps=20)
    yield "neal_gibbs", neal

    def resumed():
        d = Path(tempfile.mkdtemp())
        try:
            kw = dict(posterior="logistic-ripley", sampler="hmc", draws=n, warmup=w // 2,
                      step_size=0.1, steps=8, random_steps=True, chunk_size=10)
            full = run(out=d / "full", **kw)
            run(out=d / "cut", **kw)
            chunks = sorted((d / "cut" / "chunks").glob("*.npz"))
            for f in chunks[len(chunks) // 2:]:
                f.unlink()
            for f in ("idata.nc", "run.json"):
                (d / "cut" / f).unlink()
            again = bomcmc.resume(d / "cut", progress=False).idata
            a, b = _arrays(full), _arrays(again)
            assert all(np.array_equal(a[k], b[k]) for k in a), "resume changed a draw"
            return again
        finally:
            shutil.rmtree(d, ignore_errors=True)
    yield "resumed", resumed


def record(path: Path, short: bool, only: list[str] | None = None) -> None:
    """Record every case, or with `only` those cases into the existing file at `path` (the
    other cases' arrays kept as they are)."""
    out = {}
    if only and path.exists():
        out = {k: v for k, v in np.load(path).items() if k.split("/", 1)[0] not in only}
    for name, fn in cases(short):
        if only and name not in only:
            continue
        for k, v in _arrays(fn()).items():
            out[f"{name}/{k}"] = v
        print(f"recorded {name}", flush=True)
    np.savez_compressed(path, **out)


TUNED = ("ahmc", "ahmc_paper", "two_phase")  # host-side tuners: DIRECT, L-BFGS-B and BLAS on the CPU


def compare(golden: dict, short: bool, rtol: float, tuned_rtol: float | dict | None = None
            ) -> list[str]:
    """Differences between the golden arrays and the current tree's (empty: all equal);
    the samplers in TUNED are compared at `tuned_rtol` when given (a number, or a
    tolerance per case name)."""
    problems = []
    base = rtol
    for name, fn in cases(short):
        rtol = base
        if tuned_rtol is not None and name in TUNED:
            rtol = tuned_rtol[name] if isinstance(tuned_rtol, dict) else tuned_rtol
        now = _arrays(fn())
        want = {k.split("/", 1)[1]: v for k, v in golden.items() if k.startswith(name + "/")}
        if set(now) != set(want):
            problems.append(f"{name}: fields {sorted(set(now) ^ set(want))} differ")
        for k in sorted(set(now) & set(want)):
            a, b = now[k], want[k]
            if a.shape != b.shape:
                problems.append(f"{name}/{k}: shape {a.shape} != {b.shape}")
            elif rtol == 0 and not np.array_equal(a, b, equal_nan=True):
                problems.append(f"{name}/{k}: not bit-identical")
            elif rtol > 0 and not np.allclose(a, b, rtol=rtol, atol=rtol, equal_nan=True):
                diff = np.abs(a.astype(np.float64) - b.astype(np.float64))  # bools too
                problems.append(f"{name}/{k}: max |diff| {np.max(diff)}")
        print(f"checked {name}", flush=True)
    return problems


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=["record", "check"])
    p.add_argument("path", type=Path)
    p.add_argument("--short", action="store_true", help="40-draw runs (the permanent test's)")
    p.add_argument("--rtol", type=float, default=0.0, help="0: bit for bit")
    p.add_argument("--cases", default=None,
                   help="record: only these cases (comma-separated), into the existing file")
    a = p.parse_args(argv)
    if a.mode == "record":
        record(a.path, a.short, a.cases.split(",") if a.cases else None)
        return 0
    golden = dict(np.load(a.path))
    problems = compare(golden, a.short, a.rtol)
    print("\n".join(problems) or "all cases reproduce")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
