"""The public entry points: `sample`, `resume` and `load`, over one preparation path."""

from __future__ import annotations

import dataclasses
import inspect
import os
import time
import warnings
from pathlib import Path
from typing import Any

import jax
import numpy as np

from .. import models
from .. import registry
from ..config import set_float64
from ..diagnostics import SamplingWarning, check_run
from ..errors import BomcmcError
from ..kernels.base import Kernel
from ..models import model_file
from ..posterior import Posterior, flatten
from ..store import ChunkRecord, DiskStore, MemoryStore, read_json
from ..tuning.base import Tuner
from .assemble import assemble, tuner_history
from .engine import Run
from .host_loop import default_buffer, execute, show_progress, unpack
from .spec import RunSpec, json_options, jsonable


@dataclasses.dataclass
class SampleResult:
    """What `sample` and `resume` return: `.idata` (ArviZ InferenceData), `.totals` (gradient
    evaluations, seconds, divergences), `.path` (the run directory, if any)."""

    idata: Any
    totals: dict
    path: Path | None = None

    def summary(self) -> dict:
        from ..diagnostics import summarize

        return summarize(self.idata, self.totals)


def resolve_posterior(logdensity=None, init=None, posterior=None,
                      init_per_chain: bool = False) -> Posterior:
    """The Posterior for what the user handed `sample`: a Posterior, a built-in name, or a log
    density with its initial position (with `init_per_chain`, one start per chain: a leading
    chain axis on every leaf, or a list of positions)."""
    if init_per_chain:
        if init is None or logdensity is None or not callable(logdensity) \
                or isinstance(logdensity, Posterior):
            raise BomcmcError("init_per_chain=True needs a logdensity and an init with one "
                              "start per chain")
        chain_inits = _stack_chains(init)
        first = jax.tree_util.tree_map(lambda a: a[0], chain_inits)
        return Posterior(logdensity_fn=logdensity, init_position=first, name="custom",
                         chain_inits=chain_inits)
    if isinstance(logdensity, Posterior):
        return logdensity
    if isinstance(logdensity, str):
        posterior, logdensity = logdensity, None
    if posterior is not None:
        if logdensity is not None or init is not None:
            raise BomcmcError("give either posterior=NAME or (logdensity, init), not both")
        if isinstance(posterior, Posterior):
            return posterior
        if not isinstance(posterior, str):
            raise BomcmcError("posterior must be a built-in name or a bomcmc.Posterior")
        return models.get(posterior)
    if logdensity is None:
        raise BomcmcError("nothing to sample: pass logdensity and init, or posterior=NAME")
    if not callable(logdensity):
        raise BomcmcError("logdensity must be a callable position -> scalar")
    if init is None:
        raise BomcmcError("init (an initial position pytree) is required with a logdensity")
    return Posterior(logdensity_fn=logdensity, init_position=init, name="custom")


def _stack_chains(init):
    """Per-chain starts as one pytree with a leading chain axis."""
    if isinstance(init, (list, tuple)) and init and not isinstance(init[0], (int, float)):
        try:
            return jax.tree_util.tree_map(lambda *a: np.stack([np.asarray(x) for x in a]),
                                          *init)
        except ValueError as e:
            raise BomcmcError(f"init_per_chain: the chains' starts differ in structure or "
                              f"shape: {e}") from None
    leaves = jax.tree_util.tree_leaves(init)
    if not leaves or any(np.ndim(leaf) == 0 for leaf in leaves):
        raise BomcmcError("init_per_chain: every leaf of init needs a leading chain axis")
    return jax.tree_util.tree_map(np.asarray, init)


def split_options(sampler: registry.Sampler, tuner, knobs: dict):
    """(options of the sampler's default tuner, the remaining knobs): a sampler that tunes
    itself (e.g. "ahmc") takes its `tuner_options` keywords from **knobs when no tuner= is
    given; None when the run uses no default tuner."""
    if not sampler.tunes_itself:
        return None, knobs
    given = {k: v for k, v in knobs.items() if k in sampler.tuner_options}
    if tuner is not None:
        if given:
            raise BomcmcError(f"{', '.join(sorted(given))}: options of the default tuner of "
                              f"sampler '{sampler.name}', which tuner= replaces (set them on "
                              "your tuner)")
        return None, knobs
    return given, {k: v for k, v in knobs.items() if k not in sampler.tuner_options}


def adaptation(sampler: registry.Sampler, warmup: int, adapt, options: dict | None,
               knobs: dict):
    """Resolve the warm-up adaptation: "auto" is the sampler's default adapter (Stan's
    window adaptation for the NUTS samplers, which have no usable fixed step size) when there
    is a warm-up. A `target_accept` the kernel does not take as a knob goes to the adapter."""
    options = dict(options or {})
    if adapt == "auto":
        adapt = sampler.adapter if warmup > 0 else None
    if adapt == "none":
        adapt = None
    if ("target_accept" in knobs
            and "target_accept" not in inspect.signature(sampler.kernel.make_knobs).parameters):
        if adapt is None:
            raise BomcmcError("target_accept needs a warm-up adaptation (adapt='window')")
        options.setdefault("target_accept", knobs.pop("target_accept"))
    return adapt, options, knobs


def default_tuner(run: Run, states) -> None:
    """Build the sampler's default tuner from the options config.json records.

    Such a tuner sets the step size itself, so the run cannot also have an in-loop adapter;
    a TypeError/ValueError of the tuner's own checks becomes one line naming the sampler."""
    sampler = run.sampler
    if run.spec.tuner_options is None or not sampler.tunes_itself:
        return
    if run.spec.adapt is not None:
        raise BomcmcError(f"sampler '{sampler.name}' tunes its step size itself: it cannot run "
                          f"with adapt='{run.spec.adapt}' (use adapt=None{sampler.adapt_hint})")
    try:
        run.tuner = sampler.make_tuner(dict(run.spec.tuner_options), run.spec, run.flat, states)
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
    if tuner is None:
        default_tuner(run, template)
    adapt_template = run.initial_adapt_state(template)
    last = None if fresh else store.last_chunk()
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
    try:
        states = unpack(last.state, template)
        run.knobs = unpack(last.next_knobs, run.knobs)
        adapt_state = (unpack(last.adapt, adapt_template) if run.adapter is not None
                       else adapt_template)
    except KeyError as e:
        raise BomcmcError(f"{path}: last chunk lacks {e}; not from this sampler") from None
    if states.position.shape != template.position.shape:
        raise BomcmcError(f"{path}: stored chains do not match the posterior's dimension")
    run.tuner.load_state_dict(last.tuner_state, history=tuner_history(run.store))
    return states, adapt_state


def _finish(run: Run, store, wall_total: float) -> SampleResult:
    """The assembled run, written to a run directory if any; each problem its diagnostics
    show (`diagnostics.check_run`) is warned as a `SamplingWarning` at the caller of `sample`
    or `resume`."""
    idata, totals = assemble(run, store, wall_total)
    if isinstance(store, DiskStore):
        store.write_idata(idata)
        store.write_run(totals)
    for msg in check_run(idata, totals):
        # stacklevel 3: _finish <- sample/resume <- the caller
        warnings.warn(msg, SamplingWarning, stacklevel=3)
    return SampleResult(idata=idata, totals=totals, path=store.path)


def _preload_arviz() -> None:
    """Import ArviZ (slow to import) in a thread while JAX compiles and samples, which release
    the GIL; the InferenceData is assembled only at the end."""
    import sys
    import threading

    if "arviz" not in sys.modules:
        threading.Thread(target=lambda: __import__("arviz"), daemon=True).start()


def sample(
    logdensity=None,
    init=None,
    *,
    posterior=None,
    sampler: "str | registry.Sampler | Kernel" = registry.DEFAULT,
    chains: int = 4,
    draws: int = 1000,
    warmup: int = 1000,
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
    adapt: str | None | object = "auto",
    adapt_options: dict | None = None,
    max_grad: int | None = None,
    **knobs,
) -> SampleResult:
    """Sample a posterior with all chains vmapped inside jitted chunks.

    `sampler` is a registered name ("hmc", "nuts", ...; `bomcmc.registry.names()`) or a
    `bomcmc.Sampler` built for a model (e.g. Neal's Gibbs-within-HMC for a network).
    `logdensity` is a JAX function `position -> scalar` and `init` one chain's starting pytree
    (a dict of arrays names the variables); or pass `posterior="NAME"` for a built-in (see
    `bomcmc posteriors`) or a `bomcmc.Posterior`. Sampler knobs go as keyword arguments, e.g.
    `step_size=0.1, steps=20, random_steps=True` for "hmc". `adapt="window"` runs Stan's
    warm-up inside the compiled loop (the default for "nuts"; `adapt=None` turns it off).
    With `out=DIR` every finished chunk is written to DIR and the run can be continued after a
    crash with `resume(DIR)`. Chunks last about `chunk_seconds` each unless `chunk_size` fixes
    their length; neither changes a single draw. `max_grad` fixes a leapfrog budget: the run
    stops after the chunk in which the gradient evaluations per chain (warm-up included)
    reach it, with however many draws that gave (`draws` is then an upper bound).

    Chains start from dispersed points (`init_strategy="uniform"`, the default): a built-in
    posterior's own initializer, else uniform(−2, 2) on every coordinate as Stan and NumPyro
    start, drawn again (up to 100 times) where the log density is not finite; `init` then only
    gives the variables' structure. `init_strategy="init"` starts every chain at `init`
    (jittered by ±`init_jitter`, which implies it); `init_per_chain=True` takes `init` as one
    start per chain (a leading chain axis on every leaf, or a list of positions).
    `progress` shows a bar (tqdm.auto, so a widget in a notebook) with the phase, acceptance,
    divergences in warm-up/sampling and the knobs, after a "compiling..." line; None (the
    default) shows it only when stderr is a terminal. `save_warmup=True` keeps the warm-up
    draws in the InferenceData's `warmup_posterior` and `warmup_sample_stats` groups
    (ArviZ's names).
    """
    t_start = time.perf_counter()
    _preload_arviz()
    if float64:
        set_float64(True)
    post = resolve_posterior(logdensity, init, posterior, init_per_chain)
    if init_strategy is None:
        init_strategy = "init" if init_jitter else "uniform"
    smp = registry.get(sampler, post)
    adapt, adapt_options, knobs = adaptation(smp, warmup, adapt, adapt_options, knobs)
    tuner_options, knobs = split_options(smp, tuner, knobs)
    spec = RunSpec(
        posterior=post.name if models.is_builtin(post.name) else "custom",
        sampler=smp.name,
        chains=chains, draws=draws, warmup=warmup, seed=seed, thin=thin,
        chunk_size=chunk_size if chunk_size is not None else 1,
        chunk_seconds=None if chunk_size is not None else chunk_seconds,
        float64=bool(float64 or jax.config.read("jax_enable_x64")),
        init_jitter=float(init_jitter), init_strategy=init_strategy,
        init_per_chain=bool(init_per_chain), save_warmup=bool(save_warmup),
        knobs={k: jsonable(v) for k, v in knobs.items()},
        adapt=adapt, adapt_options={k: jsonable(v) for k, v in adapt_options.items()},
        tuner_options=None if tuner_options is None else json_options(tuner_options),
        max_grad=max_grad, model=post.model_file,
    )
    if chunk_size is None:  # a buffer for the whole run, within a memory cap
        dim = flatten(post, check_finite=False).dim
        spec.chunk_size = default_buffer(spec.chains, dim, spec.draws, spec.warmup)
    spec.validate()
    store = DiskStore(out) if out is not None else MemoryStore()
    if isinstance(store, DiskStore):
        store.check_writable(overwrite)
    progress = show_progress(progress)
    run, states, adapt_state, next_iter, index = prepare(spec, post, store, tuner, smp,
                                                         fresh=True, progress=progress)
    if isinstance(store, DiskStore):
        store.create(dataclasses.asdict(spec), overwrite=overwrite)
    execute(run, states, adapt_state, next_iter, index, progress)
    return _finish(run, store, time.perf_counter() - t_start)


def resume(
    out: str | os.PathLike,
    logdensity=None,
    init=None,
    *,
    progress: bool | None = None,
    tuner: Tuner | None = None,
    sampler: "registry.Sampler | Kernel | None" = None,
) -> SampleResult:
    """Continue a run from its last complete chunk; the final draws equal those of an
    uninterrupted run. A run of a custom log density needs the same `logdensity` and `init`;
    a run of a sampler built for a model needs the same `sampler`."""
    t_start = time.perf_counter()
    _preload_arviz()
    store = DiskStore(out)
    cfg = store.config()
    try:
        spec = RunSpec(**cfg)
    except TypeError as e:
        raise BomcmcError(f"{store.path / 'config.json'}: not a bomcmc run configuration: "
                          f"{e}") from None
    spec.validate()
    if spec.float64:
        set_float64(True)
    if spec.posterior == "custom" and logdensity is None and spec.model is not None:
        post = model_file.load(spec.model)  # a model from FILE.py:NAME: load it again
    elif spec.posterior == "custom":
        if logdensity is None:
            raise BomcmcError(
                f"{store.path} sampled a custom log density: pass the same logdensity and init "
                "to bomcmc.resume (the CLI can only resume built-in posteriors and --model runs)"
            )
        post = resolve_posterior(logdensity, init, init_per_chain=spec.init_per_chain)
    else:
        post = resolve_posterior(posterior=spec.posterior)
    smp = registry.get(sampler if sampler is not None else spec.sampler, post)
    progress = show_progress(progress)
    run, states, adapt_state, next_iter, index = prepare(spec, post, store, tuner, smp,
                                                         fresh=False, progress=progress)
    execute(run, states, adapt_state, next_iter, index, progress)
    return _finish(run, store, time.perf_counter() - t_start)


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
