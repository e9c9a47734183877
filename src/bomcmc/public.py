"""`bomcmc.sample` and `bomcmc.resume`: the API's face over the driver.

The face turns what a user hands over into what the driver takes: a posterior name, a model
file or a log density with its initial position into a `Posterior`, and records whether it
was a built-in. The driver (`bomcmc.driver`) never resolves a name nor loads a file.
"""

from __future__ import annotations

import os

import jax
import numpy as np

from . import models, registry
from .config import set_float64
from .driver import api as driver
from .driver.until import ess_for_mcse
from .errors import BomcmcError
from .kernels.base import Kernel
from .models import model_file
from .options import SamplerConfig
from .posterior import Posterior
from .tuning.base import Tuner


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


def sample(
    logdensity=None,
    init=None,
    *,
    posterior=None,
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
    chain_block: int | None = None,
    shard_data: bool = False,
    until_ess: float | None = None,
    until_mcse: float | None = None,
    until_seconds: float | None = None,
    **options,
) -> driver.SampleResult:
    """Sample a posterior with all chains vmapped inside jitted chunks.

    `sampler` is a registered name ("hmc", "nuts", ...; `bomcmc.registry.names()`) or a
    `bomcmc.Sampler` built for a model (e.g. Neal's Gibbs-within-HMC for a network).
    `logdensity` is a JAX function `position -> scalar` and `init` one chain's starting pytree
    (a dict of arrays names the variables); or pass `posterior="NAME"` for a built-in (see
    `bomcmc posteriors`) or a `bomcmc.Posterior`.

    The sampler's options (its kernel's knobs, its default tuner's options, its warm-up
    adapter's) go as keyword arguments, e.g. `step_size=0.1, steps=20, random_steps=True`
    for "hmc", `target_accept=0.9` for "nuts"; each goes where the sampler's schema declares
    it (`bomcmc.schemas`), and one the sampler does not take is an error naming those it
    does. Or give them as one `config=bomcmc.SamplerConfig(knobs=..., adapt=...,
    adapter_options=..., tuner_options=...)`. `adapt="window"` runs Stan's warm-up inside
    the compiled loop (the default, "auto", for "nuts"; `adapt=None` turns it off);
    `adapt_options` are its options.

    `warmup=N` runs exactly N warm-up transitions. `warmup="auto"` (the default) lets the
    sampler decide, up to 1000: "ahmc" ends its burn-in once a metric update barely moves
    the metric and the bandit's best (ε, L) has stopped improving (docs/warmup.md), NUTS
    and the others run Stan's 1000; run.json's `warmup` says how many ran and why.

    With `out=DIR` every finished chunk is written to DIR and the run can be continued after
    a crash with `resume(DIR)`. Chunks last about `chunk_seconds` each unless `chunk_size`
    fixes their length; neither changes a single draw. `max_grad` fixes a leapfrog budget:
    the run stops after the chunk in which the gradient evaluations per chain (warm-up
    included) reach it, with however many draws that gave (`draws` is then an upper bound).

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

    Over several processes (a program that joined JAX's distributed runtime with
    `bomcmc.distributed.initialize`, under SLURM, Open MPI or `bomcmc sample --processes N`),
    every process calls `sample` with the same arguments and an `out` directory they share:
    process p runs chains [p·C/N, (p+1)·C/N), each writes its own chunks, the tuner sees
    every chain, and process 0 returns the InferenceData (the others `idata=None`).
    `chain_block` chains are vmapped together (default: all of a process's), which keeps a
    chain's arithmetic the same whatever the number of processes (docs/distributed.md).
    `shard_data=True` splits instead the rows of the posterior's data (`Posterior.data`, a
    `bomcmc.Data`; the logistic regressions have them) over every device of every process:
    every process runs every chain, each device sums its rows' log-likelihood, and one
    all-reduce joins them, for data too large or too slow for one device.

    `until_ess=E` runs until precise: sampling goes on chunk after chunk until every
    coordinate's bulk and tail ESS reach E and its R-hat is at most 1.01, with `draws` as a
    cap (and `until_seconds` of sampling as another); `until_mcse=r` asks the same of every
    mean's MCSE, at most r posterior sds (E = 1/r²). The rule is read at each chunk's end, so
    the draw it stops at depends on the chunks' lengths: fix `chunk_size` for a stop that
    repeats exactly. run.json's `until` records the target and where the run stopped;
    `resume` continues under the same rule.
    """
    if float64:
        set_float64(True)
    post = resolve_posterior(logdensity, init, posterior, init_per_chain)
    return driver.sample(
        post, sampler=sampler, config=config, chains=chains, draws=draws, warmup=warmup,
        seed=seed, out=out, thin=thin, chunk_size=chunk_size, chunk_seconds=chunk_seconds,
        progress=progress, float64=float64, init_jitter=init_jitter,
        init_strategy=init_strategy, init_per_chain=init_per_chain, save_warmup=save_warmup,
        overwrite=overwrite, tuner=tuner, adapt=adapt, adapt_options=adapt_options,
        max_grad=max_grad, posterior_name=post.name if models.is_builtin(post.name) else "custom",
        chain_block=chain_block, shard_data=shard_data,
        until_ess=_until_ess(until_ess, until_mcse), until_seconds=until_seconds, **options)


def _until_ess(until_ess: float | None, until_mcse: float | None) -> float | None:
    """The ESS target of a run until precise, given as an ESS or as an MCSE in sds."""
    if until_mcse is None:
        return until_ess
    if until_ess is not None:
        raise BomcmcError("give until_ess or until_mcse, not both")
    if not (isinstance(until_mcse, (int, float)) and 0 < until_mcse < 1):
        raise BomcmcError(f"until_mcse must be a fraction of the sd in (0, 1), got "
                          f"{until_mcse!r}")
    return ess_for_mcse(until_mcse)


def resume(
    out: str | os.PathLike,
    logdensity=None,
    init=None,
    *,
    progress: bool | None = None,
    tuner: Tuner | None = None,
    sampler: "registry.Sampler | Kernel | None" = None,
) -> driver.SampleResult:
    """Continue a run from its last complete chunk; the final draws equal those of an
    uninterrupted run. A built-in posterior is found again by its name, a model from a file
    (`bomcmc sample --model FILE.py:NAME`) loaded again; a run of a custom log density needs
    the same `logdensity` and `init`; a run of a sampler built for a model needs the same
    `sampler`."""
    spec = driver.run_spec(out)
    if spec.float64:
        set_float64(True)
    if spec.posterior == "custom" and logdensity is None and spec.model is not None:
        post = model_file.load(spec.model)  # a model from FILE.py:NAME: load it again
    elif spec.posterior == "custom":
        if logdensity is None:
            raise BomcmcError(
                f"{out} sampled a custom log density: pass the same logdensity and init to "
                "bomcmc.resume (the CLI can only resume built-in posteriors and --model runs)")
        post = resolve_posterior(logdensity, init, init_per_chain=spec.init_per_chain)
    else:
        post = resolve_posterior(posterior=spec.posterior)
    return driver.resume(out, post, progress=progress, tuner=tuner, sampler=sampler)


__all__ = ["resolve_posterior", "resume", "sample"]
