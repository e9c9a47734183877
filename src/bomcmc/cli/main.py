"""The `bomcmc` command line (argparse).

    bomcmc posteriors
    bomcmc sample --posterior NAME | --model FILE.py:NAME [--sampler NAME] --out DIR
                  [--chains C] [--draws N] [--warmup W] [--seed S] [--thin K]
                  [--chunk-size K] [--float64] [--overwrite] [--save-warmup]
                  [--init-strategy uniform|init] [--init-jitter X]
                  [--adapt window|dual_averaging|none]
                  [--no-progress] [--json] [--plots] [--var NAME]
                  [sampler options: --step-size X, --steps N, --target-accept P,
                   --eps-bounds LO HI, ... one flag per option of any sampler's schema
                   (bomcmc.schemas; cli/flags.py), listed by `bomcmc sample --help`]
    bomcmc resume DIR [--no-progress] [--json] [--plots]
    bomcmc summary DIR [--json] [--plots] [--var NAME]
    bomcmc bnn fit DATA.csv --target COLS --out DIR [...]   (cli/bnn.py)
    bomcmc bnn predict DIR NEW.csv [--out PRED.csv]
    bomcmc demo [--budget small|default|paper] [--out DIR] [--json]

These forms are a stable contract. Every failure is one line on stderr,
`bomcmc: error: <message>`, with exit status 2 for bad usage or input (1 for an internal
error, 130 for Ctrl-C); set BOMCMC_DEBUG=1 to see the traceback of an internal error.
"""

from __future__ import annotations

import time

STARTED = time.perf_counter()  # the command's start (Python's own start-up before it aside)

import argparse  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

from .. import schemas
from . import commands
from .flags import add_sampler_flags

PROG = "bomcmc"
DEFAULT_SAMPLER = "ahmc"  # bomcmc.registry.DEFAULT (tests/test_cli.py holds them equal)
INIT_STRATEGIES = ("uniform", "init")  # bomcmc.posterior.INIT_STRATEGIES (test_cli_help.py)
# What the driver does without --chunk-size (driver/api.py: chunk_seconds=1.0 and a buffer of
# host_loop.default_buffer rows; tests/test_cli_help.py runs it and reads config.json)
CHUNK_DEFAULT = ("a bandit's BO step per chunk, else chunks of about 1 s, each at most "
                 "max(draws, warmup) draws, up to 2000, fewer for a large model, in a compiled "
                 "buffer of that many draws rounded up to 1, 2 or 5 times a power of ten, "
                 "which config.json records as chunk_size")
WARMUP_DEFAULT = "auto"  # bomcmc.sample's (tests/test_cli.py holds them equal)
EXIT_USAGE = 2
EXIT_INTERNAL = 1
EXIT_INTERRUPT = 130


class _UsageError(Exception):
    """An argparse usage error, turned into one line by `main`."""


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are one line (no usage dump), reported by `main`."""

    def error(self, message):  # noqa: D401 - argparse API
        raise _UsageError(message)


# ---------------------------------------------------------------------------------------
# Argument types (argparse reports "argument --draws: <message>")
# ---------------------------------------------------------------------------------------
def _int(text: str, lo: int, what: str) -> int:
    try:
        v = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
    if v < lo:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    return v


def probability(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1), got {text!r}") from None
    if not 0.0 < v < 1.0:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1), got {text!r}")
    return v


def positive_int(text: str) -> int:
    return _int(text, 1, "a positive integer")


def nonneg_int(text: str) -> int:
    return _int(text, 0, "a non-negative integer")


def warmup_arg(text: str) -> "int | str":
    """--warmup: "auto" (the sampler decides, up to 1000) or a count run exactly."""
    return "auto" if text.strip().lower() == "auto" else _int(
        text, 0, "a non-negative integer or 'auto'")


def _float(text: str, positive: bool, what: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    return v


def positive_float(text: str) -> float:
    return _float(text, True, "a positive finite number")


def nonneg_float(text: str) -> float:
    return _float(text, False, "a non-negative finite number")


# ---------------------------------------------------------------------------------------
# The parser
# ---------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    """The whole command line; a list of argument declarations, one per line."""
    from .._version import __version__

    p = _Parser(prog=PROG, description="MCMC that needs no hand-tuning.")
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    sub.add_parser("posteriors", help="list the built-in posteriors",
                   description="List the built-in posteriors with a one-line description.")

    s = sub.add_parser("sample", help="sample a built-in posterior (--posterior NAME) or your "
                                      "model (--model FILE.py:NAME) into a run directory",
                       description="Sample a built-in posterior (--posterior) or your own "
                                   "model (--model); every finished chunk lands in "
                                   "--out DIR, so an interrupted run continues with "
                                   "`bomcmc resume DIR`.")
    what = s.add_mutually_exclusive_group(required=True)
    what.add_argument("--posterior", metavar="NAME",
                      help="built-in posterior (see `bomcmc posteriors`)")
    what.add_argument("--model", metavar="FILE.py:NAME",
                      help="your model: NAME in FILE.py is a NumPyro model with its data bound "
                           "(no arguments, e.g. functools.partial(model, y)), a "
                           "bomcmc.Posterior, a pymc.Model, or a JAX log density with its "
                           "initial position in NAME_init; `resume` loads it again")
    s.add_argument("--sampler", default=DEFAULT_SAMPLER, metavar="NAME",
                   help=f"{', '.join(schemas.SAMPLERS)} (default: {DEFAULT_SAMPLER}; the "
                        "self-tuning sampler, docs/defaults.md); rmhmc and armhmc sample "
                        "posteriors with a metric (logistic-*, lgcp-*, sv-*), the im* samplers "
                        "and kawasaki spin posteriors")
    s.add_argument("--out", required=True, metavar="DIR", help="run directory (required)")
    s.add_argument("--chains", type=positive_int, default=4, metavar="C",
                   help="chains (default: 4)")
    s.add_argument("--draws", type=positive_int, default=1000, metavar="N",
                   help="draws per chain kept after warm-up (default: 1000)")
    s.add_argument("--warmup", type=warmup_arg, default=WARMUP_DEFAULT, metavar="W",
                   help="warm-up transitions per chain, run exactly; 'auto': up to 1000, "
                        "ahmc stopping once its metric and step size have settled, other "
                        f"samplers 1000 (docs/warmup.md; default: {WARMUP_DEFAULT})")
    s.add_argument("--seed", type=nonneg_int, default=0, metavar="S",
                   help="random seed (default: 0)")
    u = s.add_mutually_exclusive_group()
    u.add_argument("--until-ess", type=positive_float, default=None, metavar="E",
                   help="run until precise: sample until every coordinate's bulk and tail "
                        "ESS reach E and R-hat <= 1.01, --draws being the cap (default: "
                        "run all --draws)")
    u.add_argument("--until-mcse", type=probability, default=None, metavar="R",
                   help="run until every mean's MCSE is at most R posterior sds (the same "
                        "rule with E = 1/R^2)")
    s.add_argument("--until-seconds", type=positive_float, default=None, metavar="T",
                   help="with --until-ess or --until-mcse: stop after T seconds of "
                        "sampling at the latest")
    s.add_argument("--thin", type=positive_int, default=1, metavar="K",
                   help="keep every K-th transition (default: 1)")
    s.add_argument("--chunk-size", type=positive_int, default=None, metavar="K",
                   help="at most K draws per compiled chunk, each chunk written to disk "
                        f"when it ends; no draw depends on it (default: {CHUNK_DEFAULT})")
    s.add_argument("--float64", action="store_true", help="sample in 64-bit floats")
    s.add_argument("--overwrite", action="store_true",
                   help="replace the contents of a non-empty --out directory")
    s.add_argument("--save-warmup", action="store_true",
                   help="keep the warm-up draws (InferenceData groups warmup_posterior and "
                        "warmup_sample_stats)")
    s.add_argument("--init-strategy", default=None, choices=INIT_STRATEGIES,
                   help="where the chains start: 'uniform', dispersed points (a built-in "
                        "posterior's own initializer, else uniform(-2, 2) on every "
                        "coordinate, as Stan and NumPyro start), or 'init', every chain at "
                        "the model's initial point, jittered by --init-jitter (default: "
                        "uniform; init when --init-jitter is given)")
    s.add_argument("--init-jitter", type=nonneg_float, default=0.0, metavar="X",
                   help="with --init-strategy init: each chain starts at the initial point "
                        "plus uniform(-X, X) on every coordinate (default: 0)")
    add_sampler_flags(s)
    s.add_argument("--adapt", default=None, choices=("window", "dual_averaging", "none"),
                   help="warm-up adaptation: 'window' (Stan's; the default for nuts and "
                        "nuts_async), 'dual_averaging' (the step size only) or 'none'")
    _output_flags(s)
    _process_flags(s, sample=True)

    r = sub.add_parser("resume", help="continue an interrupted run",
                       description="Continue a run directory from its last complete chunk.")
    r.add_argument("dir", metavar="DIR", help="run directory")
    _output_flags(r)
    _process_flags(r, sample=False)

    m = sub.add_parser("summary", help="summarize a finished run",
                       description="Print the diagnostics of a finished run; with --plots, "
                                   "also write ArviZ's trace.png, autocorr.png, rank.png and "
                                   "(HMC-type samplers) energy.png into its directory, and "
                                   "for a tuned run reward_surface.png and reward_slice.png.")
    m.add_argument("dir", metavar="DIR", help="run directory")
    m.add_argument("--json", action="store_true", help="print the summary as JSON")
    _view_flags(m)

    from . import bnn as cli_bnn

    cli_bnn.add_parsers(sub, {"positive_int": positive_int, "nonneg_int": nonneg_int,
                              "positive_float": positive_float, "probability": probability,
                              "parser_class": _Parser})
    return p


def _output_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true",
                   help="print the summary as JSON instead of the table")
    _view_flags(p)


def _process_flags(p: argparse.ArgumentParser, sample: bool) -> None:
    g = p.add_argument_group("several processes (JAX's distributed runtime; "
                             "docs/distributed.md)")
    g.add_argument("--processes", type=positive_int, default=None, metavar="N",
                   help="run the chains in N worker processes on this machine (one per "
                        "GPU on a multi-GPU host); the draws are those of one process")
    g.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                   help="join a run of --num-processes processes whose process 0 listens "
                        "at HOST:PORT (not needed under SLURM or Open MPI, which JAX detects)")
    g.add_argument("--num-processes", type=positive_int, default=None, metavar="N",
                   help="with --coordinator: the number of processes in the run")
    g.add_argument("--process-id", type=nonneg_int, default=None, metavar="I",
                   help="with --coordinator: this process's number, 0..N-1")
    if sample:
        g.add_argument("--chain-block", type=positive_int, default=None, metavar="B",
                       help="chains vmapped together (default: all of a process's); a "
                            "one-process run with B = C/N gives the draws of an N-process "
                            "run bit for bit")
        g.add_argument("--shard-data", action="store_true",
                       help="split the posterior's data rows over every device of every "
                            "process instead of its chains: every process runs every chain "
                            "(the logistic regressions declare their data)")


def _view_flags(p: argparse.ArgumentParser) -> None:
    # Plots are opt-in: on a small run they took about half as long again as the run itself
    # (README, "Plots"); `bomcmc summary DIR --plots` draws them from a finished run.
    p.add_argument("--plots", action=argparse.BooleanOptionalAction, default=False,
                   help="write the diagnostic plots (trace.png, autocorr.png, rank.png, "
                        "energy.png for HMC-type samplers, a tuned run's reward plots) into "
                        "the run directory (default: no; `bomcmc summary DIR --plots` draws "
                        "them later)")
    p.add_argument("--var", action="append", default=None, metavar="NAME",
                   help="only this variable in the table and the plots (repeatable)")


def _cli_bnn():
    from . import bnn as cli_bnn

    return cli_bnn


COMMANDS = {
    "posteriors": commands.cmd_posteriors,
    "sample": commands.cmd_sample,
    "resume": commands.cmd_resume,
    "summary": commands.cmd_summary,
    "bnn": lambda args: _cli_bnn().cmd_bnn(args),
    "demo": lambda args: _cli_bnn().cmd_demo(args),
}


# ---------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------
def _one_line(text) -> str:
    text = " ".join(str(text).split())
    return text or "(no message)"


def _fail(message, code: int, kind: str = "error") -> int:
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 - a closed stdout must not hide the error line
        pass
    line = f"{PROG}: {kind}: {_one_line(message)}"
    # a worker of `--processes N` leaves its error line to the launcher, which reports the
    # run's failure once (a lost worker makes the others fail too)
    error_file = os.environ.get("BOMCMC_ERROR_FILE")
    if error_file:
        try:
            with open(error_file, "w") as f:
                f.write(line + "\n")
            return code
        except OSError:
            pass
    print(line, file=sys.stderr, flush=True)
    return code


def _os_message(e: OSError) -> str:
    if e.filename is not None and e.strerror:
        where = f"{e.filename} -> {e.filename2}" if e.filename2 is not None else f"{e.filename}"
        return f"{where}: {e.strerror}"
    return e.strerror or str(e) or type(e).__name__


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (the console script exits with it)."""
    debug = bool(os.environ.get("BOMCMC_DEBUG"))
    args = None
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as e:  # --help / --version
            return e.code if isinstance(e.code, int) else 0
        args.argv = list(sys.argv[1:] if argv is None else argv)  # for --processes' workers
        return COMMANDS[args.command](args)
    except _UsageError as e:
        return _fail(e, EXIT_USAGE)
    except KeyboardInterrupt:
        return _fail(_interrupted_message(args), EXIT_INTERRUPT)
    except BrokenPipeError:
        # e.g. `bomcmc posteriors | head -1`: not an error; silence the flush at exit
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        except OSError:
            pass
        return 0
    except ValueError as e:  # BomcmcError and other bad input
        if debug and not _is_bomcmc_error(e):
            raise
        return _fail(e, EXIT_USAGE)
    except OSError as e:
        if debug:
            raise
        return _fail(_os_message(e), EXIT_USAGE)
    except Exception as e:  # noqa: BLE001
        if debug:
            raise
        return _fail(f"{type(e).__name__}: {_one_line(e)} (set BOMCMC_DEBUG=1 for the traceback)",
                     EXIT_INTERNAL, kind="internal error")


def entry() -> None:
    """The process's command (the `bomcmc` script, `python -m bomcmc`): `main`, then
    `exit_now` with its status."""
    exit_now(main())


def exit_now(code: int) -> None:
    """End the process with `code` once its output is flushed, its non-daemon threads joined
    and its exit handlers run, as Python's exit does, but without the interpreter's teardown
    (freeing the modules and objects of JAX, XLA, xarray and ArviZ one by one), which the
    user would wait for after the command has finished. Where the output cannot be flushed
    (a closed pipe), or a profiler or tracer (cProfile, coverage, a debugger) is watching,
    whose report comes after the command returns, Python's own exit handles it."""
    import atexit
    import threading

    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(code)
    shutdown = getattr(threading, "_shutdown", None)  # joins non-daemon threads, as exit does
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()  # what the exit handlers printed
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)


def _interrupted_message(args) -> str:
    run_dir = getattr(args, "out", None) or getattr(args, "dir", None)
    if getattr(args, "command", None) in ("sample", "resume") and run_dir is not None \
            and (Path(run_dir) / "config.json").exists():
        return f"interrupted (continue the run with `bomcmc resume {run_dir}`)"
    return "interrupted"


def _is_bomcmc_error(e: BaseException) -> bool:
    from ..errors import BomcmcError

    return isinstance(e, BomcmcError)


if __name__ == "__main__":  # pragma: no cover
    entry()
