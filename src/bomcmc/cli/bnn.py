"""The network commands of the `bomcmc` command line.

    bomcmc bnn fit DATA.csv --target y1,y2 --out DIR [--inputs x1,x2] [--hidden 16 [8 ...]]
                   [--activation tanh] [--prior TEXT] [--noise TEXT]
                   [--sampler ahmc_cv|ahmc_gibbs|neal_gibbs|nuts|nuts_gibbs] [--folds K]
                   [--chains C] [--super-transitions S] [--budget B] [--burn-in F]
                   [--until-ess E] [--window W] [--eps-bounds A B] [--steps-bounds A B]
                   [--divergence-margin M] [--step-size E] [--steps L]
                   [--pretrain-steps N] [--seed S] [--overwrite] [--no-progress] [--json]
    bomcmc bnn predict DIR NEW.csv [--out PRED.csv] [--include-noise]
    bomcmc demo [--budget small|default|paper] [--out DIR] [--seed S] [--sampler NAME]
                [--overwrite] [--no-progress] [--json]

CSV files have a header row; `--target` names the output columns and the other columns (or
`--inputs`) are the inputs. Errors are one line, as for every bomcmc command.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _margin(text: str) -> float | None:
    """--divergence-margin: a number in (0, 1], or "none"."""
    if text.strip().lower() == "none":
        return None
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not 0.0 < v <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1] or 'none', got {text!r}")
    return v


def add_parsers(sub, types) -> None:
    """Register `bnn` and `demo` on the main parser's subparsers. `types`: the main CLI's
    argparse types (positive_int, nonneg_int, positive_float, probability). A list of
    argument declarations, one per line, hence its length."""
    from ..bnn.defaults import (BUDGET, DEFAULT_NOISE, DEFAULT_PRIOR, DIVERGENCE_MARGIN,
                                ETA_BOUNDS, SAMPLERS, SUPER_TRANSITIONS, sampler_name)
    from .demo import BUDGETS

    b = sub.add_parser("bnn", help="Bayesian neural network regression from CSV files",
                       description="Fit a Bayesian MLP to a CSV file, or predict with a "
                                   "fitted one.")
    bsub = b.add_subparsers(dest="bnn_command", metavar="ACTION",
                            parser_class=types["parser_class"])
    bsub.required = True
    f = bsub.add_parser("fit", help="fit a network to DATA.csv into DIR",
                        description="Fit a Bayesian MLP to DATA.csv by MCMC (Neal's "
                                    "Gibbs-within-HMC, its step size and trajectory length "
                                    "tuned by a GP bandit; docs/bnn.md) and write the run "
                                    "into DIR.")
    f.add_argument("data", metavar="DATA.csv",
                   help="the training data: a CSV file with a header row of column names")
    f.add_argument("--target", required=True, metavar="COLS",
                   help="comma-separated output column names")
    f.add_argument("--inputs", default=None, metavar="COLS",
                   help="comma-separated input columns (default: every other column)")
    f.add_argument("--out", required=True, metavar="DIR", help="directory for the fit")
    f.add_argument("--hidden", type=types["positive_int"], nargs="+", default=[16],
                   metavar="H", help="hidden layer sizes (default: 16)")
    f.add_argument("--activation", default="tanh",
                   choices=("tanh", "sigmoid", "relu", "swish"),
                   help="the hidden units' activation (default: %(default)s)")
    f.add_argument("--prior", default=DEFAULT_PRIOR,
                   help=f"FBM net-spec priors (default: '{DEFAULT_PRIOR}')")
    f.add_argument("--noise", default=DEFAULT_NOISE,
                   help=f"FBM noise prior (default: '{DEFAULT_NOISE}')")
    f.add_argument("--sampler", default="ahmc_cv", choices=SAMPLERS, type=sampler_name,
                   help="the network sampler (default: %(default)s; adaptive HMC whose "
                        "bandit is rewarded by the cross-validation error, docs/bnn.md)")
    f.add_argument("--folds", type=types["positive_int"], default=8, metavar="K",
                   help="cross-validation folds of --sampler ahmc_cv: K networks, each fitted "
                        "to the cases outside its fold (default: %(default)s)")
    f.add_argument("--chains", type=types["positive_int"], default=1, metavar="C",
                   help="independent chains, run side by side (default: %(default)s)")
    f.add_argument("--super-transitions", type=types["positive_int"],
                   default=SUPER_TRANSITIONS, metavar="S",
                   help="super-transitions: the bandit's steps, each --budget leapfrog steps "
                        "at one (η, L) (default: %(default)s)")
    f.add_argument("--budget", type=types["positive_int"], default=BUDGET, metavar="B",
                   help="leapfrog steps per super-transition (default: %(default)s)")
    f.add_argument("--burn-in", type=types["probability"], default=0.25, metavar="F",
                   help="fraction of the budget whose draws are discarded (with "
                        "--until-ess, of the gradients spent so far; default: %(default)s)")
    f.add_argument("--until-ess", type=types["positive_float"], default=None, metavar="E",
                   help="sample until the predictions at the training inputs and the "
                        "training log-likelihood have bulk and tail ESS >= E and R-hat <= "
                        "1.01 after the burn-in, the budget a cap (needs --chains >= 2)")
    f.add_argument("--eps-bounds", type=types["positive_float"], nargs=2, default=ETA_BOUNDS,
                   metavar=("A", "B"), help="the bandit's box for the step size factor η "
                                            "(ahmc samplers; default: %s %s; Wang's for the "
                                            "robot arm: 0.01 1.01)" % ETA_BOUNDS)
    f.add_argument("--steps-bounds", type=types["positive_int"], nargs=2, default=(20, 500),
                   metavar=("A", "B"), help="the bandit's box for the leapfrog steps L "
                                            "(ahmc samplers; default: 20 500)")
    f.add_argument("--divergence-margin", type=_margin, default=DIVERGENCE_MARGIN, metavar="M",
                   help="once an η has diverged, η stays at most M × the smallest η that "
                        "diverged (ahmc samplers; 'none': Wang's bandit; default: "
                        "%(default)s)")
    f.add_argument("--step-size", type=types["positive_float"], default=0.1,
                   metavar="X", help="η for --sampler neal_gibbs (default: %(default)s)")
    f.add_argument("--steps", type=types["positive_int"], default=100,
                   metavar="N", help="L for --sampler neal_gibbs (default: %(default)s)")
    f.add_argument("--window", type=types["positive_int"], default=1, metavar="W",
                   help="Neal's (1994) accept and reject windows of W states for --sampler "
                        "neal_gibbs (FBM's `hybrid L:W η`; 1: plain HMC; default: %(default)s)")
    f.add_argument("--pretrain-steps", type=types["nonneg_int"], default=2000, metavar="N",
                   help="Adam steps to a start near the posterior's mode, the sigmas fixed "
                        "(0: none; default: %(default)s)")
    f.add_argument("--seed", type=types["nonneg_int"], default=0,
                   help="the run's seed: a fit is reproducible given it (default: "
                        "%(default)s)")
    f.add_argument("--overwrite", action="store_true", help="replace a fit already in DIR")
    f.add_argument("--shard-data", action="store_true",
                   help="split the training cases over this machine's devices (several "
                        "GPUs), each summing its cases' likelihood")
    f.add_argument("--no-progress", action="store_true", help="no progress bar")
    f.add_argument("--json", action="store_true", help="print the fit's summary as JSON")

    p = bsub.add_parser("predict", help="predict NEW.csv with the fit in DIR",
                        description="Print (or write) the posterior predictive mean and sd "
                                    "of every target column for each row of NEW.csv.")
    p.add_argument("dir", metavar="DIR", help="the directory of a `bomcmc bnn fit`")
    p.add_argument("data", metavar="NEW.csv",
                   help="the inputs: a CSV file whose header names the fit's input columns")
    p.add_argument("--out", default=None, metavar="PRED.csv",
                   help="write the predictions here (default: standard output)")
    p.add_argument("--include-noise", action="store_true",
                   help="sd of a new target (adds the noise variance)")

    d = sub.add_parser("demo", help="the robot-arm Bayesian neural network (the main job)",
                       description="Fit a 2-16-2 network to MacKay's robot-arm data by adaptive "
                                   "HMC with an 8-fold cross-validation reward and report the "
                                   "test error (Wang 2012, Table 4.1).")
    d.add_argument("--budget", default="default", choices=tuple(BUDGETS),
                   help="super-transitions x leapfrog steps each: "
                        + ", ".join(f"{k} {n} x {m}" for k, (n, m, _, _) in BUDGETS.items())
                        + " (Wang 2012 §4.1); small is a smoke test (default: %(default)s)")
    d.add_argument("--out", default="bomcmc-demo", metavar="DIR",
                   help="directory for the run, the plots and summary.json (default: "
                        "bomcmc-demo)")
    d.add_argument("--seed", type=types["nonneg_int"], default=0,
                   help="the run's seed (default: %(default)s)")
    d.add_argument("--sampler", default="ahmc_cv", choices=SAMPLERS, type=sampler_name,
                   help="the network sampler (default: %(default)s; adaptive HMC with the "
                        "cross-validation reward)")
    d.add_argument("--overwrite", action="store_true", help="replace an existing DIR")
    d.add_argument("--no-progress", action="store_true", help="no progress bar")
    d.add_argument("--json", action="store_true", help="print the summary as JSON")


def _columns(text: str | None) -> list[str] | None:
    if text is None:
        return None
    cols = [c.strip() for c in text.split(",") if c.strip()]
    return cols or None


def _split(header: list[str], data, target: list[str] | None,
           inputs: list[str] | None, where: str):
    from ..errors import BomcmcError

    def index(cols):
        missing = [c for c in cols if c not in header]
        if missing:
            raise BomcmcError(f"{where}: no column {', '.join(repr(c) for c in missing)} "
                              f"(columns: {', '.join(header)})")
        return [header.index(c) for c in cols]

    t = index(target) if target else []
    i = index(inputs) if inputs else [j for j in range(len(header)) if j not in t]
    if not i:
        raise BomcmcError(f"{where}: no input columns left")
    return data[:, i], (data[:, t] if t else None), [header[j] for j in i]


def cmd_bnn(args) -> int:
    from .commands import warnings_as_lines

    with warnings_as_lines():
        return {"fit": _fit, "predict": _predict}[args.bnn_command](args)


def _fit(args) -> int:
    from ..bnn.regressor import BayesianMLPRegressor
    from ..datasets import read_csv
    from ..errors import BomcmcError

    header, data = read_csv(Path(args.data), args.data)
    target = _columns(args.target)
    X, y, inputs = _split(header, data, target, _columns(args.inputs), args.data)
    out = Path(args.out)
    if (out / "bnn.json").exists() and not args.overwrite:
        raise BomcmcError(f"{out} already holds a fit (use --overwrite)")
    reg = BayesianMLPRegressor(
        hidden=tuple(args.hidden), prior=args.prior, noise=args.noise,
        activation=args.activation, sampler=args.sampler, folds=args.folds, chains=args.chains,
        super_transitions=args.super_transitions, budget=args.budget, burn_in=args.burn_in,
        eps_bounds=tuple(args.eps_bounds), steps_bounds=tuple(args.steps_bounds),
        divergence_margin=args.divergence_margin, step_size=args.step_size, steps=args.steps,
        window=args.window,
        pretrain_steps=args.pretrain_steps,
        seed=args.seed, out=out, progress=False if args.no_progress else None, overwrite=True,
        shard_data=args.shard_data, until_ess=args.until_ess)
    reg.advice_flags = frozenset(vars(args))  # the warnings advise these flags
    (out / "bnn.json").unlink(missing_ok=True)
    reg.fit(X, y)
    (out / "columns.json").write_text(json.dumps({"inputs": inputs, "target": target}))
    train_error = reg.test_error(X, y)
    summary = {"out": str(out), "sampler": args.sampler, "n_grad": reg.n_grad_,
               "wall_s": reg.wall_s_, "draws_kept": int(reg.idata_.posterior.sizes["draw"]),
               "train_error": train_error, "inputs": inputs, "target": target}
    if "until" in reg.result_.totals:
        summary["until"] = reg.result_.totals["until"]
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"fitted {args.sampler} on {len(X)} cases ({', '.join(inputs)} -> "
              f"{', '.join(target)}): training error {train_error:.5g}, {reg.n_grad_} "
              f"gradients, {reg.wall_s_:.1f} s; wrote {out}/")
    return 0


def _predict(args) -> int:
    import numpy as np

    from ..bnn.regressor import BayesianMLPRegressor
    from ..datasets import read_csv
    from ..store import atomic_write_text
    from ..errors import BomcmcError

    out = Path(args.dir)
    reg = BayesianMLPRegressor.load(out)
    try:
        cols = json.loads((out / "columns.json").read_text())
    except (OSError, ValueError):
        raise BomcmcError(f"{out}: no columns.json (not a `bomcmc bnn fit` directory)") from None
    header, data = read_csv(Path(args.data), args.data)
    X, _, _ = _split(header, data, None, cols["inputs"], args.data)
    mean, std = reg.predict(X, return_std=True, include_noise=args.include_noise)
    mean, std = mean.reshape(len(X), -1), std.reshape(len(X), -1)
    names = [f"{t}_mean" for t in cols["target"]] + [f"{t}_sd" for t in cols["target"]]
    rows = [",".join(names)] + [",".join(repr(float(v)) for v in np.concatenate([m, s]))
                                for m, s in zip(mean, std)]
    text = "\n".join(rows) + "\n"
    if args.out is None:
        sys.stdout.write(text)
    else:
        atomic_write_text(Path(args.out), text)
    return 0


def cmd_demo(args) -> int:
    from .commands import warnings_as_lines
    from .demo import format_summary, run_demo

    with warnings_as_lines():
        summary = run_demo(budget=args.budget, out=args.out, seed=args.seed,
                           progress=False if args.no_progress else None,
                           overwrite=args.overwrite, sampler=args.sampler)
    if args.json:
        print(json.dumps({k: v for k, v in summary.items()}))
    else:
        print(format_summary(summary))
    return 0
