"""The driver's entry points: `sample`, `resume` and `load`, over one preparation path.

They take a `Posterior`: the faces (`bomcmc.public`, the command line) resolve posterior names
and load model files. A sampler's options arrive as a `SamplerConfig`, or as keywords that
`registry.configure` checks against the sampler's schemas into one, once.
"""

from __future__ import annotations

import dataclasses
import os
import time
import warnings
from functools import partial
from pathlib import Path
from typing import Any

import jax

from .. import distributed, registry, schemas
from ..config import default_compilation_cache, set_float64
from ..diagnostics import SamplingWarning, check_run
from ..diagnostics import advice
from ..diagnostics import checks as diag
from ..errors import BomcmcError
from ..kernels.base import Kernel
from ..options import SamplerConfig
from ..posterior import Posterior, flatten
from ..store import ChunkRecord, DiskStore, MemoryStore, read_json
from ..tuning.base import Tuner
from .assemble import assemble, tuner_history
from .engine import Run, make_knobs
from .host_loop import default_buffer, execute, show_progress, super_transition_draws, unpack
from .spec import RunSpec, json_config, warmup_count


@dataclasses.dataclass
class SampleResult:
    """What `sample` and `resume` return: `.idata` (ArviZ InferenceData), `.totals` (gradient
    evaluations, seconds, divergences), `.path` (the run directory, if any), `.advice` (the
    sampler that ran, for which the warnings' advice is written: `diagnostics.advice`)."""

    idata: Any
    totals: dict
    path: Path | None = None
    advice: advice.Context | None = dataclasses.field(default=None, repr=False)
    # the convergence figures the run's checks computed, which its summary reuses
    figures: dict | None = dataclasses.field(default=None, repr=False)

    def __getstate__(self) -> dict:
        """A pickled result leaves out `advice`, whose check holds the sampler's kernel (a
        fitted estimator pickles its result)."""
        return {**self.__dict__, "advice": None}

    def summary(self) -> dict:
        from ..diagnostics import summarize

        return summarize(self.idata, self.totals, self.advice, self.figures)


def default_tuner(run: Run, states) -> None:
    """Build the sampler's default tuner from the options config.json records (None: the
    user gave `tuner=`); a TypeError/ValueError of the tuner's own checks becomes one line
    naming the sampler."""
    sampler = run.sampler
    options = run.spec.config.tuner_options
    if options is None or not sampler.tunes_itself:
        return
    try:
        run.tuner = sampler.make_tuner(dict(options), run.spec, run.flat, states)
    except BomcmcError:
        raise
    except (TypeError, ValueError) as e:
        raise BomcmcError(f"sampler '{sampler.name}': {e}") from None


def prepare(spec: RunSpec, post: Posterior, store, tuner: Tuner | None,
            sampler: registry.Sampler, fresh: bool, progress: bool = False):
    """The run, compiled, and where it starts: (run, states, adapt_state, next transition,
    next chunk index). Unless `fresh`, a store with chunks continues from its last one."""
    run = Run(spec, post, store, tuner, sampler)
    template = run.initial_state()
    if tuner is None:  # the tuner starts from every process's chains
        default_tuner(run, run.gather(template))
    adapt_template = run.initial_adapt_state(template)
    last = None if fresh else store.last_chunk()
    if not fresh:  # parts of a chunk not every process finished are written again
        distributed.on_main(lambda: store.discard_after(0 if last is None else last.index + 1))
    if last is None:
        states, adapt_state, next_iter, index = template, adapt_template, 0, 0
        run.knobs = run.tuner.initial_knobs(run.knobs)
    else:
        states, adapt_state = _restore(run, last, template, adapt_template)
        next_iter = last.start_iter + last.n_draws * last.thin
        index = last.index + 1
    _compile(run, states, adapt_state, progress)
    return run, states, adapt_state, next_iter, index


def _compile(run: Run, states, adapt_state, progress: bool) -> None:
    """Compile the chunk, saying so on stderr when a progress bar is shown (compilation takes
    seconds and shows nothing else)."""
    import sys

    if progress:
        sys.stderr.write(f"{run.spec.sampler}: compiling... ")
        sys.stderr.flush()
    run.compile(states, adapt_state)
    if progress:
        sys.stderr.write(f"{run.compile_s:.1f} s\n")
        sys.stderr.flush()


def _restore(run: Run, last: ChunkRecord, template, adapt_template):
    """States, knobs, adapter and tuner as the last stored chunk left them."""
    path = run.store.path
    def mine(fields: dict) -> dict:  # this process's chains of a group of fields
        return {k: v[run.local] for k, v in fields.items()}

    try:
        states = unpack(mine(last.state), template)
        run.knobs = unpack(last.next_knobs, run.knobs)
        adapt_state = (unpack(mine(last.adapt), adapt_template) if run.adapter is not None
                       else adapt_template)
    except KeyError as e:
        raise BomcmcError(f"{path}: last chunk lacks {e}; not from this sampler") from None
    if states.position.shape != template.position.shape:
        raise BomcmcError(f"{path}: stored chains do not match the posterior's dimension")
    run.tuner.load_state_dict(last.tuner_state, history=tuner_history(run.store))
    return states, adapt_state


def _finish(run: Run, store, t_start: float, t_loop: float, checks: bool = True) -> SampleResult:
    """The assembled run, written to a run directory if any; each problem its diagnostics
    show (`diagnostics.check_run`) is warned as a `SamplingWarning` at the caller of `sample`
    or `resume` (unless `checks` is False).

    Over several processes, process 0 assembles the run once every process has written its
    last chunk; the others return a result without an InferenceData (`idata` None), except
    in a run whose data are sharded, where every process has every chain and returns the
    whole result (process 0 alone writes the run directory)."""
    distributed.barrier("bomcmc: every chunk written")
    if not (run.process.is_main or run.spec.shard_data):
        distributed.barrier("bomcmc: run assembled")
        return SampleResult(idata=None, totals={}, path=store.path)
    t_assemble = time.perf_counter()
    idata, totals = assemble(run, store, t_assemble - t_start)
    # the call's seconds by phase beside the chunks' own (compile_s, wall_s_warmup, wall_s,
    # tuner_s): before the loop less the compilation (checks, starting points, the JAX
    # backend's start), the InferenceData's assembly and writing it
    totals["prepare_s"] = t_loop - t_start - run.compile_s
    totals["assemble_s"] = time.perf_counter() - t_assemble
    if isinstance(store, DiskStore) and run.process.is_main:
        t_write = time.perf_counter()
        store.write_idata(idata)
        totals["write_s"] = time.perf_counter() - t_write
        totals["wall_s_total"] = time.perf_counter() - t_start
        store.write_run(totals)
    else:
        totals["wall_s_total"] = time.perf_counter() - t_start
    distributed.barrier("bomcmc: run assembled")
    context = advice_context(run, idata)
    figures = diag.parameter_figures(idata, totals) if checks else None
    for msg in check_run(idata, totals, figures, context=context) if checks else ():
        # stacklevel 4: _finish <- sample/resume <- the face (bomcmc.public) <- the caller
        warnings.warn(msg, SamplingWarning, stacklevel=4)
    return SampleResult(idata=idata, totals=totals, path=store.path, advice=context,
                        figures=figures)


def advice_context(run: Run, idata, interface: str = advice.PYTHON) -> advice.Context:
    """The context of the warnings' advice for a run: its sampler and options, the interface
    in use, and a check that an advised option is accepted (`accepts`)."""
    ctx = advice.from_run(idata.posterior.attrs, idata.sample_stats, interface)
    return ctx._replace(takes=partial(accepts, run.sampler, run.spec, run.flat.source,
                                      run.flat.dim))


def accepts(sampler: registry.Sampler, spec: RunSpec, posterior: Posterior, dim: int,
            remedy: dict) -> bool:
    """Whether the run of `sampler` with `spec`'s options, and those of `remedy` (options of
    the sampler, or of the run: draws, warmup, adapt, sampler, which switches to another), is
    accepted: `registry.configure` of the options, their declared kinds and choices, and the
    kernel's knobs built; a BomcmcError (a ValueError) where it is not."""
    cfg = spec.config
    tuner_given = sampler.tunes_itself and cfg.tuner_options is None
    own = {**cfg.knobs, **(cfg.tuner_options or {}), **cfg.adapter_options}
    adapt = cfg.adapt
    if "sampler" in remedy and registry.canonical(remedy["sampler"]) != sampler.name:
        own_default = sampler.adapter if spec.warmup > 0 else None
        adapt = "auto" if adapt == own_default else adapt  # the user's adapter goes along
        sampler = registry.get(remedy["sampler"], posterior)
        tuner_given = False
    options = {**own, **{k: v for k, v in remedy.items() if k not in advice.RUN_KEYS}}
    warmup = int(remedy.get("warmup", spec.warmup))
    config = registry.configure(sampler, options, warmup=warmup,
                                adapt=remedy.get("adapt", adapt), tuner_given=tuner_given)
    if config.adapt is not None and warmup == 0:
        return False
    schemas_ = (sampler.knobs or ()) + (sampler.tuner_options if config.tuner_options is not None
                                        else ())
    if config.adapt is not None:
        schemas_ += schemas.adapter_options(config.adapt)
    if sampler.knobs is not None and not advice.values_ok(options, {o.name: o for o in schemas_}):
        return False
    if sampler.kernel is not None:
        make_knobs(sampler.kernel, dim, config.knobs)
    return True


def preload_arviz(hide: str | None = None):
    """Import ArviZ (slow to import) in a thread while JAX compiles and samples, which release
    the GIL; the InferenceData is assembled only at the end. `hide`: a module ArviZ must not
    see while it imports (the command line hides Numba, `cli.commands.preload_arviz`).
    Called once the run's own imports are done: two threads importing one package at once
    can see a module half initialised (SciPy's `scipy.spatial.distance` did, in a fresh
    environment), so SciPy's stats, which ArviZ imports, are imported here first."""
    import scipy.stats  # noqa: F401 - imported in this thread, not in both

    return import_in_thread("arviz", hide)


def import_in_thread(module: str, hide: str | None = None):
    """Start importing `module` in a daemon thread (returned; None where it is imported
    already) with the module `hide` unimportable until it is done, as if not installed."""
    import sys
    import threading

    if module in sys.modules:
        return None
    hidden = hide is not None and hide not in sys.modules
    if hidden:
        sys.modules[hide] = None  # `import hide` raises ImportError

    def load() -> None:
        try:
            __import__(module)
        finally:
            if hidden and hide in sys.modules and sys.modules[hide] is None:
                del sys.modules[hide]

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    return thread


def sample(
    posterior: Posterior,
    *,
    sampler: "str | registry.Sampler | Kernel" = registry.DEFAULT,
    config: SamplerConfig | None = None,
    chains: int = 4,
    draws: int = 1000,
    warmup: "int | str" = "auto",
    seed: int = 0,
    out: str | os.PathLike | None = None,
    thin: int = 1,
    chunk_size: int | None = None,
    chunk_seconds: float = 1.0,
    progress: bool | None = None,
    float64: bool = False,
    init_jitter: float = 0.0,
    init_strategy: str | None = None,
    init_per_chain: bool = False,
    save_warmup: bool = False,
    overwrite: bool = False,
    tuner: Tuner | None = None,
    adapt: str | None = "auto",
    adapt_options: dict | None = None,
    max_grad: int | None = None,
    posterior_name: str = "custom",
    chain_block: int | None = None,
    shard_data: bool = False,
    until_ess: float | None = None,
    until_seconds: float | None = None,
    until_watch=None,
    until_burn_in: float = 0.0,
    checks: bool = True,
    **options,
) -> SampleResult:
    """Sample `posterior` (a `Posterior`) with `sampler` (a name, a Sampler or a Kernel, built
    for the posterior by `registry.get`); the arguments are those of `bomcmc.sample`. The
    sampler's options are `config`, checked against its schemas (`registry.validate`), or
    the keywords `adapt`, `adapt_options` and `**options`, which build it
    (`registry.configure`).

    config.json records `posterior_name` (a built-in's name, which `resume` resolves again, or
    "custom") and the Posterior's model file (`model_file`, which `resume` reloads).
    `checks=False` skips the diagnostics and their warnings, for a caller that judges the
    draws itself (the network estimators, in function space). `until_watch` and
    `until_burn_in` choose what a run until precise reads (`until.Until`: the network
    estimators' predictions after their burn-in); a resumed run reads the draws themselves.
    """
    t_start = time.perf_counter()
    preload_arviz()
    default_compilation_cache()
    if float64:
        set_float64(True)
    sampler = registry.get(sampler, posterior)
    warmup, warmup_auto = warmup_count(warmup)
    config = _config(sampler, config, options, adapt, adapt_options, warmup, tuner is not None)
    sampler, config = registry.with_support(sampler, config)  # the compact set M, if any
    if init_strategy is None:
        init_strategy = "init" if init_jitter else "uniform"
    spec = RunSpec(
        posterior=posterior_name, sampler=sampler.name,
        chains=chains, draws=draws, warmup=warmup, seed=seed, thin=thin,
        chunk_size=chunk_size if chunk_size is not None else 1,
        chunk_seconds=None if chunk_size is not None else chunk_seconds,
        float64=bool(float64 or jax.config.read("jax_enable_x64")),
        init_jitter=float(init_jitter), init_strategy=init_strategy,
        init_per_chain=bool(init_per_chain), save_warmup=bool(save_warmup),
        config=json_config(config), max_grad=max_grad, model=posterior.model_file,
        chain_block=chain_block if shard_data else _chain_block(chain_block, chains),
        shard_data=bool(shard_data), until_ess=until_ess, until_seconds=until_seconds,
        warmup_auto=warmup_auto,
    )
    spec.validate_counts()  # before the buffer is sized from them
    if chunk_size is None:  # a buffer for the whole run, within a memory cap
        dim = flatten(posterior, check_finite=False).dim
        spec.chunk_size = int(default_buffer(spec.chains, dim, spec.draws, spec.warmup,
                                             super_transition_draws(sampler, config)))
    spec.validate()
    distributed.agree(spec.to_json())  # every process was started with the same flags
    store = DiskStore(out) if out is not None else MemoryStore()
    if isinstance(store, DiskStore):
        distributed.on_main(lambda: store.check_writable(overwrite))
    elif distributed.group().size > 1 and not shard_data:
        raise BomcmcError("a run over several processes needs out=DIR (--out): each process "
                          "writes its chains' chunks there")
    progress = show_progress(progress) and distributed.group().is_main
    run, states, adapt_state, next_iter, index = prepare(spec, posterior, store, tuner, sampler,
                                                         fresh=True, progress=progress)
    run.until_reads = (until_watch, float(until_burn_in))
    if isinstance(store, DiskStore):
        distributed.on_main(lambda: store.create(spec.to_json(), overwrite=overwrite))
    t_loop = time.perf_counter()
    execute(run, states, adapt_state, next_iter, index, progress)
    return _finish(run, store, t_start, t_loop, checks)


def _chain_block(chain_block: int | None, chains: int) -> int | None:
    """The run's chain block: the user's, else, over N processes, chains // N (each process's
    chains vmapped together, as a resume over another N will compute them)."""
    size = distributed.group().size
    if chain_block is None and size > 1:
        distributed.check_split(chains, size)
        return chains // size
    return chain_block


def _config(smp, config, options, adapt, adapt_options, warmup, tuner_given) -> SamplerConfig:
    """The run's SamplerConfig: `config` checked, or one built from the keywords."""
    if config is None:
        return registry.configure(smp, options, warmup=warmup, adapt=adapt,
                                  adapter_options=adapt_options, tuner_given=tuner_given)
    if options or adapt != "auto" or adapt_options:
        raise BomcmcError("give the sampler's options as config= or as keywords, not both")
    if not isinstance(config, SamplerConfig):
        raise BomcmcError("config must be a bomcmc.SamplerConfig")
    return registry.validate(smp, config, warmup=warmup, tuner_given=tuner_given)


def run_spec(out: str | os.PathLike) -> RunSpec:
    """The validated RunSpec of a run directory's config.json (one-line errors)."""
    store = DiskStore(out)
    try:
        spec = RunSpec.from_json(store.config())
    except TypeError as e:
        raise BomcmcError(f"{store.path / 'config.json'}: not a bomcmc run configuration: "
                          f"{e}") from None
    spec.validate()
    return spec


def resume(
    out: str | os.PathLike,
    posterior: Posterior,
    *,
    progress: bool | None = None,
    tuner: Tuner | None = None,
    sampler: "registry.Sampler | Kernel | None" = None,
) -> SampleResult:
    """Continue the run in `out` from its last complete chunk on `posterior` (the one it
    sampled: `bomcmc.resume` finds it again); the final draws equal those of an
    uninterrupted run. A run of a sampler built for a model needs the same `sampler`."""
    t_start = time.perf_counter()
    preload_arviz()
    default_compilation_cache()
    spec = run_spec(out)
    if spec.float64:
        set_float64(True)
    store = DiskStore(out)
    smp, _ = registry.with_support(
        registry.get(sampler if sampler is not None else spec.sampler, posterior), spec.config)
    progress = show_progress(progress) and distributed.group().is_main
    run, states, adapt_state, next_iter, index = prepare(spec, posterior, store, tuner, smp,
                                                         fresh=False, progress=progress)
    t_loop = time.perf_counter()
    execute(run, states, adapt_state, next_iter, index, progress)
    return _finish(run, store, t_start, t_loop)


def load(out: str | os.PathLike) -> SampleResult:
    """Open a finished run directory."""
    import arviz as az

    store = DiskStore(out)
    store.config()  # a missing directory, no or malformed config.json: one clear error
    if not store.is_complete():
        raise BomcmcError(f"{store.path}: run is not complete (continue it with `bomcmc resume`)")
    try:
        idata = az.from_netcdf(store.path / "idata.nc")
    except Exception as e:  # noqa: BLE001
        raise BomcmcError(f"{store.path / 'idata.nc'}: unreadable ({type(e).__name__})") from None
    totals = read_json(store.path / "run.json", "run totals")
    return SampleResult(idata=idata, totals=totals, path=store.path)
