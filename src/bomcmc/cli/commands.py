"""The run commands: `posteriors`, `sample`, `resume` and `summary`."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path

from .flags import given_options


def sample_kwargs(args: argparse.Namespace) -> dict:
    """The keyword arguments of `bomcmc.sample` for a parsed `sample` command (`--model`
    FILE.py:NAME is loaded here, in 64-bit floats first with `--float64`)."""
    if args.init_strategy == "uniform" and args.init_jitter:
        from ..errors import BomcmcError

        raise BomcmcError("--init-jitter jitters the initial point of --init-strategy init; "
                          "--init-strategy uniform draws dispersed starts without it")
    posterior = args.posterior
    if getattr(args, "model", None) is not None:
        from ..config import set_float64
        from ..models import model_file

        if args.float64:
            set_float64(True)
        posterior = model_file.load(args.model)
    kw = dict(
        posterior=posterior, sampler=args.sampler, chains=args.chains, draws=args.draws,
        warmup=args.warmup, seed=args.seed, out=args.out, thin=args.thin,
        chunk_size=args.chunk_size, progress=False if args.no_progress else None, float64=args.float64,
        init_jitter=args.init_jitter, init_strategy=args.init_strategy,
        overwrite=args.overwrite, save_warmup=args.save_warmup, until_ess=args.until_ess,
        until_mcse=args.until_mcse, until_seconds=args.until_seconds,
    )
    if args.adapt is not None:
        kw["adapt"] = None if args.adapt == "none" else args.adapt
    given = given_options(args)
    check_flags(args.sampler, given, args.adapt, args.warmup)
    return {**kw, **given}


def check_flags(sampler: str, given: dict, adapt: str | None, warmup: "int | str") -> None:
    """The sampler options given as flags, checked against the sampler's schemas before the
    run (`registry.configure` checks them again): a flag the sampler does not take is one
    line naming it and the flags the sampler takes, in the command line's spelling."""
    from .. import schemas
    from ..errors import BomcmcError

    name = sampler.strip().lower().replace("-", "_")
    s = schemas.SAMPLERS.get(name)
    if s is None:
        return  # an unknown sampler: the run's own error names those there are
    if adapt is not None and adapt != "none" and s.tuner:
        hint = "; for a learned metric, --mass diag" if "mass" in {o.name for o in s.tuner} else ""
        raise BomcmcError(f"sampler '{name}' tunes its step size itself: it cannot run with "
                          f"--adapt {adapt} (use --adapt none{hint})")
    adapter = (None if adapt == "none" else adapt) if adapt is not None else (
        s.adapter if warmup == "auto" or warmup > 0 else None)
    takes = [o for o in s.knobs + s.tuner if o.cli and not o.help.startswith("refused")]
    if adapter is not None and not s.tuner:
        takes += [o for o in schemas.ADAPTER_OPTIONS[adapter] if o.cli]
    unknown = [n for n in given if n not in {o.name for o in takes}]
    if not unknown:
        return
    flags = ", ".join("--" + n.replace("_", "-") for n in unknown)
    adapting = {o.name for a in schemas.ADAPTER_OPTIONS.values() for o in a}
    if adapter is None and not s.tuner and set(unknown) <= adapting:
        raise BomcmcError(f"{flags}: options of a warm-up adaptation, which this run of "
                          f"sampler '{name}' has none of (give --adapt window)")
    raise BomcmcError(f"sampler '{name}' does not take {flags} (it takes: "
                      f"{', '.join(o.flag for o in takes) or 'no options'})")


def cmd_posteriors(args) -> int:
    from .. import models

    desc = models.describe()
    width = max((len(n) for n in desc), default=0)
    for name, text in desc.items():
        print(f"{name:<{width}}  {text}")
    return 0


def _summarize(result) -> dict:
    """The run's summary, its warnings' advice spelled in this command line's flags."""
    from ..diagnostics import advice, summarize

    if result.advice is not None:  # sample, resume: checked against the sampler that ran
        context = result.advice._replace(interface=advice.CLI)
    else:  # summary: the run's sampler by its schemas
        context = advice.from_run(result.idata.posterior.attrs,
                                  result.idata.get("sample_stats"), advice.CLI)
    return summarize(result.idata, result.totals, context, result.figures)


def _report(result, run_dir: Path, args, summary: dict | None = None,
            started: float | None = None) -> None:
    """Print the summary (table or JSON) of the variables `args.var` names (all by default),
    each warning of the run on stderr as one line `bomcmc: warning: <message>`, with
    `args.plots` write the plots into the run directory (a plot that cannot be written is a
    warning, not a failure: the numbers are out already), and last the total wall time
    (`_total_time`; `started`: when this command began, for `sample` and `resume`)."""
    as_json = args.json
    var_names = _check_vars(result.idata, getattr(args, "var", None))
    import warnings

    from ..diagnostics import format_table, spin_plots
    from ..tuning.history import summarize_tuning

    # ArviZ and numpy warn (0/0 in R-hat, constant chains, ...) where the table shows nan:
    # on the command line that is noise on stderr.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        summary = summary if summary is not None else _summarize(result)
        if var_names:
            summary = {**summary, "variables": {k: v for k, v in summary["variables"].items()
                                                if k in var_names}}
        tuning = summarize_tuning(result.idata)
        if tuning is not None:
            summary = {**summary, "tuning": _clean_json(tuning)}
        if as_json:
            print(json.dumps(summary))
        else:
            print(format_table(summary))
            if tuning is not None:
                print(_format_tuning(tuning, result.idata.posterior.attrs))
            elif spin_plots.im_state(result.idata) is not None:
                print(spin_plots.describe_im_tuning(spin_plots.im_state(result.idata)))
        sys.stdout.flush()
        for msg in summary.get("warnings") or []:
            print(f"bomcmc: warning: {msg}", file=sys.stderr)
        sys.stderr.flush()
        t_plots = time.perf_counter()
        if getattr(args, "plots", False):
            _write_plots(result.idata, run_dir, tuning is not None, var_names)
        if not as_json:
            print(_total_time(summary["run"], started, time.perf_counter() - t_plots
                              if getattr(args, "plots", False) else None))


def _total_time(run: dict, started: float | None, plots_s: float | None) -> str:
    """The line of total times: the run's own (`wall_s_total`: start-up of the sampler,
    compilation, warm-up, sampling and writing; the table's wall= is warm-up + sampling),
    this command's from `started` (time.perf_counter()) where given, and the plots'."""
    parts = []
    if run.get("wall_s_total") is not None:
        parts.append(f"the run {run['wall_s_total']:.1f} s in all (compile, warm-up, sampling, "
                     "writing)")
    if plots_s is not None:
        parts.append(f"plots {plots_s:.1f} s")
    if started is not None:
        parts.append(f"this command {time.perf_counter() - started:.1f} s")
    return "total wall time: " + ("; ".join(parts) if parts else "not recorded")


def _check_vars(idata, names):
    """The requested variable names, checked against the run's (one-line error)."""
    if not names:
        return None
    from ..errors import BomcmcError

    known = list(idata.posterior.data_vars)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise BomcmcError(f"no variable {', '.join(map(repr, unknown))} in this run "
                          f"(variables: {', '.join(known)})")
    return list(dict.fromkeys(names))


def _write_plots(idata, run_dir: Path, tuned: bool, var_names) -> None:
    from ..diagnostics import plots, spin_plots

    shown = idata
    if var_names:
        import arviz as az

        shown = az.InferenceData(posterior=idata.posterior[var_names],
                                 sample_stats=idata.sample_stats)
    jobs = [(plots.plot_trace, shown, "trace.png"), (plots.plot_autocorr, shown, "autocorr.png"),
            (plots.plot_rank, shown, "rank.png")]
    if plots.has_energy(idata):
        jobs.append((plots.plot_energy, idata, "energy.png"))
    if tuned:
        jobs += [(plots.plot_reward_surface, idata, "reward_surface.png"),
                 (plots.plot_reward_slice, idata, "reward_slice.png")]
    elif spin_plots.im_state(idata) is not None:
        jobs.append((spin_plots.plot_im_surface, idata, "reward_surface.png"))
    for fn, data, name in jobs:
        try:
            fn(data, run_dir / name)
        except OSError as e:
            print(f"bomcmc: warning: {run_dir / name}: not written ({e.strerror or e})",
                  file=sys.stderr)
        except ValueError as e:  # e.g. a run too short for the plot
            print(f"bomcmc: warning: {run_dir / name}: not written ({e})", file=sys.stderr)


def _clean_json(obj):
    from ..diagnostics import clean_json

    return clean_json(obj)


def _format_tuning(t: dict, attrs) -> str:
    """Two lines on the bandit of an adaptive run (the `tuning` group), the second the
    setting it learned: the tried setting of highest GP mean reward (the incumbent, which
    sampling starts from), named as `bomcmc demo` names it (`learned_setting`)."""
    best = t.get("best")
    lines = [
        f"GP bandit of {attrs.get('sampler', 'the sampler')}: {t['bo_steps']} BO steps "
        f"({t['bo_steps_warmup']} in warm-up"
        + (f"; {t['observations']} observations, a batch per burn-in step"
           if t.get("observations", t["bo_steps"]) > t["bo_steps"] else "") + "), "
        f"{t['proposals']} proposals, {t['distinct_settings']} settings tried"
        + (f", {t['gp_resets']} GP resets (metric updates that moved the metric)"
           if "gp_resets" in t else ""),
        (learned_setting(best["step_size"], best["num_steps"], step_symbol(attrs)) if best else
         f"no setting learned (no reward observed); last proposal "
         f"{step_symbol(attrs)} = {t['final']['step_size']:.4g}, L = {t['final']['num_steps']}")
        + f"; box {step_symbol(attrs)} [{t['eps_bounds'][0]:.3g}, {t['eps_bounds'][1]:.3g}] "
          f"x L [{t['steps_bounds'][0]:g}, {t['steps_bounds'][1]:g}]",
    ]
    return "\n".join(lines)


def step_symbol(attrs) -> str:
    """η for Neal's Gibbs-within-HMC network samplers, whose step is a factor on per-group
    step sizes (Neal 1996); ε otherwise (as the plots name it)."""
    from ..diagnostics.plots import _step_symbol

    return _step_symbol(attrs)


def learned_setting(step_size: float, num_steps: int, symbol: str) -> str:
    """The words that name what a bandit learned, in `summary` and `demo` alike (`symbol`:
    the step size's, `step_symbol`)."""
    return (f"learned setting {symbol} = {step_size:.4g}, L = {int(num_steps)} "
            "(the tried setting of highest GP mean reward)")


def _check_run_dir(path) -> dict:
    """The run configuration of DIR, or a one-line BomcmcError saying what DIR is instead."""
    from ..errors import BomcmcError
    from ..store import DiskStore

    p = Path(path)
    if not p.exists():
        raise BomcmcError(f"{p}: no such run directory")
    if not p.is_dir():
        raise BomcmcError(f"{p}: not a directory")
    if not (p / "config.json").is_file():
        raise BomcmcError(f"{p}: not a bomcmc run directory (no config.json)")
    return DiskStore(p).config()


@contextlib.contextmanager
def _no_python_warnings():
    """Silence Python's printing of the run's SamplingWarnings: the summary carries the same
    messages and `_report` prints them as `bomcmc: warning: ...`."""
    import warnings

    from ..diagnostics import SamplingWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)
        yield


@contextlib.contextmanager
def warnings_as_lines():
    """Print each warning for the user (a `UserWarning`, such as a run's SamplingWarnings)
    raised inside the block as one line `bomcmc: warning: <message>` on stderr, once, instead
    of Python's `file:line: Category: message` form; others keep Python's handling."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        try:
            yield
        finally:
            seen = set()
            for w in caught:
                msg = str(w.message).strip()
                if not issubclass(w.category, UserWarning):
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
                elif msg not in seen:
                    seen.add(msg)
                    print(f"bomcmc: warning: {msg}", file=sys.stderr)
            sys.stderr.flush()


def preload_arviz():
    """ArviZ imported in a thread beside the run (`driver.api.preload_arviz`) with Numba
    hidden from it: ArviZ then sets up no Numba functions, which it compiles on import, and
    its figures take the NumPy path, which the run's checks take anyway
    (`diagnostics.checks.numpy_path`). The command's process uses ArviZ for nothing else;
    the Python API leaves ArviZ's Numba alone. Called once `bomcmc.sample` is imported (see
    there why) and a model file, which may import Numba, is loaded; `resume` of a run from
    one does not call it."""
    from ..driver.api import preload_arviz as preload

    return preload(hide="numba")


def cmd_sample(args) -> int:
    started = time.perf_counter()
    from .processes import join_or_launch

    launched = join_or_launch(args, chains=None if args.shard_data else args.chains,
                              run_dir=args.out)
    if launched is not None:
        return launched
    import bomcmc

    bomcmc.enable_compilation_cache()
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise bomcmc.BomcmcError(f"{out}: exists and is not a directory")
    kwargs = sample_kwargs(args)  # loads a model file, which may import Numba
    sample = bomcmc.sample  # imported here, so that startup_s counts the import
    preload_arviz()
    t_call = time.perf_counter()
    with _no_python_warnings():  # _report prints them, one line each
        result = sample(**kwargs, chain_block=args.chain_block, shard_data=args.shard_data)
    if result.idata is not None:  # process 0 of a run over several processes reports
        _report(result, Path(result.path or out), args, started=started)
        _record_command_times(result, t_call)
    return 0


def _record_command_times(result, t_call: float) -> None:
    """Add to run.json the command's seconds outside the sampler's call: before it (imports,
    JAX's start, the arguments, a model file) and after it (the summary, the warnings, plots
    when asked), so that run.json accounts for the whole command."""
    from ..store import DiskStore
    from .main import STARTED

    if result.path is None:
        return
    totals = dict(result.totals)
    totals["startup_s"] = t_call - STARTED
    totals["report_s"] = time.perf_counter() - t_call - totals["wall_s_total"]
    DiskStore(result.path).write_run(totals)


def cmd_resume(args) -> int:
    started = time.perf_counter()
    from .processes import join_or_launch

    model = _check_run_dir(args.dir).get("model")
    launched = join_or_launch(args, chains=None, run_dir=args.dir)
    if launched is not None:
        return launched
    import bomcmc

    bomcmc.enable_compilation_cache()
    resume = bomcmc.resume  # imported here, so that startup_s counts the import
    if model is None:  # a model file, which resume loads again, may import Numba
        preload_arviz()
    t_call = time.perf_counter()
    with _no_python_warnings():
        result = resume(args.dir, progress=False if args.no_progress else None)
    if result.idata is not None:
        _report(result, Path(result.path or args.dir), args, started=started)
        _record_command_times(result, t_call)
    return 0


def cmd_summary(args) -> int:
    import bomcmc

    bomcmc.enable_compilation_cache()
    # load() reads only idata.nc and run.json; check config.json too, so a damaged run
    # directory is reported rather than half-trusted.
    _check_run_dir(args.dir)
    result = bomcmc.load(args.dir)
    _report(result, Path(args.dir), args, summary=_summarize(result))
    return 0
