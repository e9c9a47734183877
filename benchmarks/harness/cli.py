"""Side-by-side sampler benchmark: bomcmc HMC and NUTS vs NumPyro NUTS vs BlackJAX NUTS
and BlackJAX's self-tuning samplers (ChEES-HMC, MEADS, MAMS, NUTS with a low-rank metric;
benchmarks/peers_blackjax.py).

    python benchmarks/run.py --posteriors logistic-german \
        --samplers bomcmc-hmc,numpyro-nuts,blackjax-nuts --chains 4 --draws 1000 \
        --warmup 1000 --repeats 3 [--cache-check] [--tag NAME] [--float64]
    python benchmarks/run.py --posteriors sblri-blr,logistic-german,... \
        --samplers bomcmc-nuts,numpyro-nuts,blackjax-nuts --repeats 3

Everything runs in one process, sampler after sampler, repeat after repeat, so the figures
share the machine's state. It writes `benchmarks/results/<tag or timestamp>.json` (every
repeat, plus the median over repeats of every figure) and regenerates the generated part of
`docs/benchmarks.md` (hand-written text outside the GENERATED markers is kept).
`--doc-from FILE.json ...` rebuilds the document from saved results without sampling.

Figures for each (posterior, sampler), see benchmarks/README.md for the precise definitions:
ESS per gradient and per second (min / median / max over coordinates; ArviZ bulk ESS;
gradients and seconds of the sampling phase, gradients summed over chains), warm-up
gradients, divergences, end-to-end seconds (compilation included), and the overhead ratio
= (sampling seconds / gradients per chain) / floor, where floor is the seconds per
evaluation of `vmap(grad(logdensity))` over the same chains, N times inside one compiled
`lax.fori_loop` (a call after the first is timed), and the same ratio against the floor of
`vmap(value_and_grad(logdensity))` with the value kept live, which is what HMC and NUTS
evaluate and which on XLA CPU can be the faster program of the two. When bomcmc-nuts runs
next to another NUTS, a summary gives bomcmc ÷ NumPyro and ÷ BlackJAX of min ESS/grad and
min ESS/s per posterior and the checks ESS/s ≥ 1×, ESS/grad within ±20 %. Every run also
reports ESS per 1000 gradients with and without the warm-up's gradients, its largest R-hat,
and how far its posterior means are from a reference (the exact means where bomcmc has them,
else a long bomcmc NUTS run) as max |z| in MCSE units, flagged above 4.

NumPyro, BlackJAX and nutpie are imported only when a sampler asks for them (the optional
`bench` extra). This module is the command line; the rest of the harness is its package.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import re
import sys
import time
from pathlib import Path

from .bomcmc_runners import reference_moments
from .cache_check import cache_check
from .comparison import nuts_comparison
from .environment import command_line, machine_info, versions
from .floor import CompileClock, make_floor, time_floor
from .runners import ALL_SAMPLERS, DEFAULT_SAMPLERS, RUNNERS, check_installed
from .settings import (DOC_PATH, NUTS_MAX_TREE_DEPTH, NUTS_TARGET_ACCEPT, RESULTS_DIR,
                       hmc_knobs)
from .stats import clean, figures, median_with_flags, summarize_draws
from .tables import show, show_mm, write_doc


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--posteriors", default="logistic-german",
                   help="comma-separated built-in posterior names")
    p.add_argument("--samplers", default=DEFAULT_SAMPLERS,
                   help=f"comma-separated, from {', '.join(ALL_SAMPLERS)}")
    p.add_argument("--chains", type=int, default=4)
    p.add_argument("--draws", type=int, default=1000)
    p.add_argument("--warmup", type=int, default=1000)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--seed", type=int, default=0, help="repeat r uses seed + r")
    p.add_argument("--step-size", type=float, default=None,
                   help="HMC step size for every posterior (default: the table in "
                        "benchmarks/harness/settings.py)")
    p.add_argument("--steps", type=int, default=None, help="HMC leapfrog steps L")
    p.add_argument("--float64", action="store_true")
    p.add_argument("--reference-draws", type=int, default=10000,
                   help="draws per chain of the bomcmc NUTS reference run that every run's "
                        "posterior means are checked against, for posteriors without exact "
                        "moments (0: no check for those)")
    p.add_argument("--reference-chains", type=int, default=8)
    p.add_argument("--floor-evals", type=int, default=20000,
                   help="gradient evaluations in the floor's fori_loop")
    p.add_argument("--tag", default=None, help="results file name (default: a timestamp)")
    p.add_argument("--results-dir", default=str(RESULTS_DIR))
    p.add_argument("--doc", default=str(DOC_PATH), help="markdown file to regenerate")
    p.add_argument("--no-doc", action="store_true", help="do not touch the markdown file")
    p.add_argument("--cache-check", action="store_true",
                   help="also time two fresh processes sharing a compilation cache")
    p.add_argument("--cache-posterior", default="logistic-german")
    p.add_argument("--doc-from", nargs="+", default=None, metavar="JSON",
                   help="only rebuild the document from saved results files")
    return p.parse_args(argv)


def _context(name: str, args, clock) -> tuple:
    """The posterior's flat form, its reference, its floors and the runners' context. The
    starting points bomcmc draws for a seed (uniform(-2, 2) for the built-ins) are given to
    the other samplers too; these (seed `args.seed`) also feed the floors."""
    import jax

    from bomcmc import models
    from bomcmc.posterior import flatten

    post = models.get(name)
    flat = flatten(post)
    starts = flat.init_flat(jax.random.fold_in(jax.random.PRNGKey(args.seed), 0), args.chains)
    floors = (make_floor(flat.logdensity_fn, starts, args.floor_evals),
              make_floor(flat.logdensity_fn, starts, args.floor_evals, with_value=True))
    t_ref = time.perf_counter()
    ref = reference_moments(name, post, flat, args)
    if ref is not None:
        print(f"[{name}] reference: {ref['source']} ({time.perf_counter() - t_ref:.1f}s)",
              flush=True)
    ctx = {"name": name, "flat": flat, "logdensity": flat.logdensity_fn, "starts": starts,
           "chains": args.chains, "draws": args.draws, "warmup": args.warmup,
           "knobs": hmc_knobs(name, args.step_size, args.steps), "float64": args.float64,
           "clock": clock, "nuts_target_accept": NUTS_TARGET_ACCEPT,
           "nuts_max_tree_depth": NUTS_MAX_TREE_DEPTH}
    return ctx, ref, floors, starts


def _timed_run(sampler: str, ctx, seed: int, ref, floors, starts, args) -> dict:
    """One run's figures; the floors are timed just before and just after the sampler (the
    machine may be shared) and the means used."""
    floor_fn, floor_vg_fn = floors
    fb = time_floor(floor_fn, starts, args.floor_evals)
    vb = time_floor(floor_vg_fn, starts, args.floor_evals)
    raw = summarize_draws(RUNNERS[sampler](ctx, seed), ref)
    va = time_floor(floor_vg_fn, starts, args.floor_evals)
    fa = time_floor(floor_fn, starts, args.floor_evals)
    raw["floor_s_before"], raw["floor_s_after"] = fb, fa
    raw["floor_vg_s_before"], raw["floor_vg_s_after"] = vb, va
    return figures(raw, args.chains, 0.5 * (fb + fa), 0.5 * (vb + va))


def _progress(name: str, rep: int, repeats: int, sampler: str, fig: dict) -> None:
    floor = 0.5 * (fig["floor_s_before"] + fig["floor_s_after"])
    floor_vg = 0.5 * (fig["floor_vg_s_before"] + fig["floor_vg_s_after"])
    print(f"[{name}] rep {rep + 1}/{repeats} {sampler:14s} "
          f"ratio={show(fig['overhead_ratio'], '{:.2f}')} "
          f"(vg {show(fig['overhead_ratio_vg'], '{:.2f}')}) "
          f"ESS/grad(min)={fig['ess_per_grad']['min']:.3g} "
          f"ESS/s(min)={fig['ess_per_s']['min']:.3g} "
          f"sampling={fig['wall_s']:.2f}s e2e={fig['end_to_end_s']:.1f}s "
          f"floor={floor * 1e6:.1f}us (vg {floor_vg * 1e6:.1f}us) "
          f"acc={fig['accept_mean']:.2f} "
          f"div={fig['divergences']} "
          f"ESS/kgrad min/med={show_mm(fig['ess_per_kgrad'])} "
          f"(incl. warm-up {show_mm(fig['ess_per_kgrad_incl_warmup'])}) "
          f"rhat={fig['rhat_max']:.3f} "
          f"max|z|={show(fig.get('mean_z_max'), '{:.2f}')}"
          f"{' FLAG' if fig.get('mean_z_flag') else ''}", flush=True)


def run_posterior(name: str, samplers: list[str], args, clock) -> dict:
    """Every sampler on one posterior, repeat after repeat: its part of the results."""
    import jax

    ctx, ref, floors, starts = _context(name, args, clock)
    flat = ctx["flat"]
    per = {s: [] for s in samplers}
    for rep in range(args.repeats):
        # each repeat r: seed + r, and the starting points bomcmc draws for that seed
        ctx["starts"] = flat.init_flat(
            jax.random.fold_in(jax.random.PRNGKey(args.seed + rep), 0), args.chains)
        for s in samplers:
            fig = _timed_run(s, ctx, args.seed + rep, ref, floors, starts, args)
            per[s].append(fig)
            _progress(name, rep, args.repeats, s, fig)
    return {
        "dim": flat.dim,
        "reference": None if ref is None else {
            "source": ref["source"], "mean": ref["mean"], "mcse": ref["mcse"],
            "sd": ref.get("sd")},
        "samplers": {s: {"median": median_with_flags(per[s]), "repeats": per[s]}
                     for s in samplers},
    }


def _cache_check(args) -> dict:
    knobs = hmc_knobs(args.cache_posterior, args.step_size, args.steps)
    cc = cache_check(args.cache_posterior, args.chains, args.draws, args.warmup, knobs,
                     args.float64)
    print(f"[cache] first {cc['first']['process_s']:.2f}s "
          f"(compile {cc['first']['compile_s']:.2f}s), second "
          f"{cc['second']['process_s']:.2f}s (compile {cc['second']['compile_s']:.2f}s)")
    return cc


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.doc_from:
        write_doc([json.loads(Path(f).read_text()) for f in args.doc_from], Path(args.doc))
        print(f"wrote {args.doc}")
        return 0
    samplers = [s.strip() for s in args.samplers.split(",") if s.strip()]
    bad = [s for s in samplers if s not in RUNNERS]
    if bad:
        sys.exit(f"unknown sampler(s) {bad}; choose from {', '.join(ALL_SAMPLERS)}")
    check_installed(samplers)  # fail fast, before any sampling

    import jax

    if args.float64:
        jax.config.update("jax_enable_x64", True)
    import arviz  # noqa: F401  (imported up front so no sampler pays for it)

    clock = CompileClock()
    posteriors = [p.strip() for p in args.posteriors.split(",") if p.strip()]
    tag = args.tag or _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    if not re.fullmatch(r"[\w.\-]+", tag):
        sys.exit("--tag may only hold letters, digits, '.', '-' and '_'")
    meta = {
        "tag": tag,
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": command_line("benchmarks/run.py", argv),
        "args": vars(args),
        "machine": machine_info(),
        "versions": versions(),
    }
    result = {"meta": meta, "posteriors": {}, "cache_check": None}
    for name in posteriors:
        result["posteriors"][name] = run_posterior(name, samplers, args, clock)
    if args.cache_check:
        result["cache_check"] = _cache_check(args)
    result["nuts_comparison"] = nuts_comparison(result) or None
    result = clean(result)
    out_dir = Path(args.results_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{tag}.json"
    out.write_text(json.dumps(result, indent=1, sort_keys=False) + "\n")
    print(f"wrote {out}")
    if not args.no_doc:
        write_doc([result], Path(args.doc))
        print(f"wrote {args.doc}")
    return 0
