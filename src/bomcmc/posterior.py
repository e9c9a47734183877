"""Posterior: a JAX log density over a pytree of parameters, plus where to start.

Samplers work on one flat float vector per chain; `FlatPosterior` is the bridge: it ravels
the user's pytree once (`jax.flatten_util.ravel_pytree`), keeps the unravel function, and
knows the variable names and shapes the InferenceData will use.

Everything a user hands us is checked here, where it enters (`validate`), so a bad input is a
one-line `BomcmcError` and never a deep JAX traceback.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Callable, Mapping, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from .config import Latest, float_dtype
from .data import Data
from .data import jit as data_jit
from .errors import BomcmcError, first_line

PyTree = Any
INIT_RADIUS = 2.0  # uniform(−2, 2) on the unconstrained scale: Stan's and NumPyro's default start
INIT_STRATEGIES = ("uniform", "init")


class RMHMCBlocks(NamedTuple):
    """A posterior's blocks for Girolami & Calderhead's (2011 §9) blocked RMHMC: the flat
    vector's [start, stop) of the latent block and of the parameter block, and their metrics
    (`kernels/blocked_rmhmc.py` gives their signatures)."""

    latent: tuple[int, int]
    parameters: tuple[int, int]
    latent_metric: Callable
    parameter_metric: Callable


# meta={...}, the dict this class once carried, as its fields (`Posterior.__post_init__`)
META_KEYS = ("mean", "cov", "metric_fn", "rmhmc_blocks", "model_file")


@dataclasses.dataclass(frozen=True)
class Posterior:
    """A log density over a pytree and an initial position.

    Attributes:
        logdensity_fn: position pytree -> scalar log density (up to a constant).
        init_position: one chain's starting pytree; its structure defines the variables
            (a dict's keys name the InferenceData variables).
        name: short name (built-ins use their registry name).
        initializer: optional `key -> position` drawing a dispersed start for each chain
            (built-ins use Stan's uniform(-2, 2) on the unconstrained scale or similar).
        description: one line for `bomcmc posteriors`.
        meta: accepted for earlier code only: its keys set the fields of the same names
            below (mean, cov, metric_fn, rmhmc_blocks, model_file); any other key is an
            error. Not kept.
        constrain: optional `position -> {name: array}` mapping an unconstrained draw to the
            quantities users read (constrained parameters, Stan's reported names). When given,
            the InferenceData's `posterior` group holds these and `unconstrained_posterior`
            holds the sampled coordinates.
        chain_inits: optional starting points, one per chain: the structure of
            `init_position` with a leading chain axis on every leaf.
        log_likelihood_fn: optional `position -> {site: array}`, the pointwise
            log-likelihood of each observed site at one draw; the InferenceData then has a
            `log_likelihood` group (computed after sampling, in batches of draws) for
            `az.loo` and `az.waic`.
        observed_data: optional `{site: array}`, the observed values; the InferenceData's
            `observed_data` group.
        dims, coords: optional names for the variables' axes, as ArviZ takes them: `dims`
            maps a variable of any group (a constrained, unconstrained, observed or
            log-likelihood name) to a name per axis after chain and draw (None leaves an axis
            unnamed), `coords` a dimension's name to its labels. `from_pymc` passes the
            model's `coords=` and `dims=`, `from_numpyro` its plates' names. Where a
            variable's shape does not fit its dims (an unconstrained simplex is one entry
            shorter), that variable keeps ArviZ's default names.
        mean, cov: the exact mean and covariance of the flat vector, where they are known
            (the Gaussians, the conjugate models of `models/hard.py`): tests and benchmarks
            measure errors against them.
        metric_fn: a Riemannian metric G(θ) of the flat vector for `rmhmc`/`armhmc`
            (Girolami & Calderhead 2011): a callable, or a constant (D, D) or (D,) array.
        rmhmc_blocks: the latent and parameter blocks with their metrics for the blocked
            RMHMC (`RMHMCBlocks`; the stochastic volatility model has them).
        spin_model: the spin system (`models.spins.SpinModel`) whose samplers (`im`,
            `kawasaki`, ...) are built for it; None for every other posterior.
        model_file: `FILE.py:NAME` of a model loaded from a file (`models.model_file`),
            recorded in config.json so that a resume loads it again.
        data: the model's observed data as a `Data`, when its functions read them from it
            (`data["X"]`): the run's compiled chunk then takes them as arguments, and a run
            with `shard_data` splits their rows over devices and processes (`bomcmc.data`).
        facts: what a built-in model knows beyond its density, as the model's own NamedTuple
            (the simulated truth, the data's eigenbasis: `log_gaussian_cox.LGCPFacts`,
            `stochastic_volatility.SVFacts`, ...), for tests and experiments; the library
            never reads it.
    """

    logdensity_fn: Callable[[PyTree], jax.Array]
    init_position: PyTree
    name: str = "custom"
    initializer: Callable[[jax.Array], PyTree] | None = None
    description: str = ""
    meta: dataclasses.InitVar[Mapping[str, Any] | None] = None
    constrain: Callable[[PyTree], dict] | None = None
    chain_inits: PyTree | None = None
    log_likelihood_fn: Callable[[PyTree], dict] | None = None
    observed_data: Mapping[str, Any] | None = None
    dims: Mapping[str, Sequence[str | None]] | None = None
    coords: Mapping[str, Sequence[Any]] | None = None
    mean: np.ndarray | None = None
    cov: np.ndarray | None = None
    metric_fn: Callable[[jax.Array], jax.Array] | np.ndarray | None = None
    rmhmc_blocks: RMHMCBlocks | None = None
    spin_model: Any = None
    model_file: str | None = None
    facts: NamedTuple | None = None
    data: Data | None = None

    def __post_init__(self, meta: Mapping[str, Any] | None) -> None:
        """Map an earlier caller's meta={...} onto the fields (`META_KEYS`)."""
        if not meta:
            return
        unknown = sorted(set(meta) - set(META_KEYS))
        if unknown:
            raise BomcmcError(f"Posterior: meta key(s) {', '.join(map(repr, unknown))} unknown "
                              f"(meta's keys are now fields: {', '.join(META_KEYS)})")
        for key, value in meta.items():
            if key == "rmhmc_blocks" and isinstance(value, Mapping):
                value = RMHMCBlocks(**value)
            object.__setattr__(self, key, value)


@dataclasses.dataclass(frozen=True)
class FlatPosterior:
    """A posterior on a flat vector: what samplers and the driver see."""

    logdensity_fn: Callable[[jax.Array], jax.Array]
    unravel: Callable[[jax.Array], PyTree]
    dim: int
    var_names: tuple[str, ...]
    var_shapes: tuple[tuple[int, ...], ...]
    source: Posterior

    def split(self, flat: np.ndarray) -> dict[str, np.ndarray]:
        """Flat draws (..., dim) -> {name: (..., *shape)} in ravel order."""
        out, i = {}, 0
        for name, shape in zip(self.var_names, self.var_shapes):
            n = int(np.prod(shape, dtype=int))
            out[name] = np.asarray(flat[..., i : i + n]).reshape(flat.shape[:-1] + shape)
            i += n
        return out

    def constrained(self, flat: np.ndarray) -> dict[str, np.ndarray] | None:
        """Apply the posterior's `constrain` to draws (chains, draws, dim), or None."""
        fn = self.source.constrain
        if fn is None:
            return None
        f = data_jit(jax.vmap(jax.vmap(lambda x: fn(self.unravel(x)))), self.source.data)
        return {k: np.asarray(v) for k, v in f(jnp.asarray(flat)).items()}

    def log_likelihood(self, flat: np.ndarray, max_elements: int = 2**24
                       ) -> dict[str, np.ndarray] | None:
        """The posterior's `log_likelihood_fn` at draws (chains, draws, dim), or None.

        Computed in batches of draws (a vmap of at most about `max_elements` output numbers,
        compiled once; the last batch is padded), so only one batch is on the device."""
        fn = self.source.log_likelihood_fn
        if fn is None:
            return None
        flat = np.asarray(flat)
        lead, rows = flat.shape[:-1], flat.reshape(-1, flat.shape[-1])
        def one(x):
            return fn(self.unravel(x))

        per_draw = sum(int(np.prod(s.shape, dtype=int))
                       for s in jax.tree_util.tree_leaves(jax.eval_shape(one, rows[0])))
        batch = int(min(len(rows), max(1, max_elements // max(per_draw, 1))))
        f = data_jit(jax.vmap(one), self.source.data)
        parts = []
        for i in range(0, len(rows), batch):
            chunk = rows[i : i + batch]
            pad = batch - len(chunk)
            if pad:
                chunk = np.concatenate([chunk, np.repeat(chunk[-1:], pad, axis=0)])
            out = f(jnp.asarray(chunk))
            parts.append({k: np.asarray(v)[: batch - pad] for k, v in out.items()})
        return {k: np.concatenate([p[k] for p in parts]).reshape(lead + parts[0][k].shape[1:])
                for k in parts[0]}

    def init_flat(self, key: jax.Array, chains: int, jitter: float = 0.0,
                  strategy: str = "uniform", attempt: int = 0) -> jax.Array:
        """(chains, dim) starting points.

        The posterior's `chain_inits` when it has them. Else with `strategy="uniform"` (the
        default) dispersed points: the posterior's initializer if it has one, otherwise
        uniform(−2, 2) on every coordinate, as Stan and NumPyro start; `attempt` > 0 draws a
        fresh set (for chains whose start had no finite log density). With `strategy="init"`
        every chain starts at the initial position, jittered uniformly in ±jitter."""
        base, _ = ravel_pytree(self.source.init_position)
        base = jnp.asarray(base, dtype=float_dtype())
        if self.source.chain_inits is not None:
            return self._chain_inits(chains, base.dtype)
        if strategy == "uniform":
            key = key if attempt == 0 else jax.random.fold_in(key, attempt)
            if self.source.initializer is None:
                return jax.random.uniform(key, (chains, self.dim), base.dtype,
                                          minval=-INIT_RADIUS, maxval=INIT_RADIUS)
            return self._initializer_starts(jax.random.split(key, chains)).astype(base.dtype)
        starts = jnp.broadcast_to(base, (chains, self.dim))
        if jitter and key is not None:
            starts = starts + jax.random.uniform(
                key, starts.shape, base.dtype, minval=-jitter, maxval=jitter
            )
        return starts

    def _initializer_starts(self, keys: jax.Array) -> jax.Array:
        """One start per key from the posterior's initializer: vmapped, so that the cost does
        not grow with the chains as a Python loop's eager calls do (about 15 ms a chain on
        the CPU, more on a GPU); an initializer JAX cannot trace is called key by key. A
        random draw is the same under vmap as called alone, so both give the same starts."""
        def one(k):
            return ravel_pytree(self.source.initializer(k))[0]

        try:
            return jax.vmap(one)(keys)
        except Exception:  # noqa: BLE001 -- not traceable: the loop below raises a real error
            return jnp.stack([one(k) for k in keys])

    def _chain_inits(self, chains: int, dtype) -> jax.Array:
        leaves = jax.tree_util.tree_leaves(self.source.chain_inits)
        n = {np.shape(leaf)[0] if np.ndim(leaf) else None for leaf in leaves}
        if n != {chains}:
            raise BomcmcError(f"init_per_chain: every leaf of init needs a leading axis of "
                              f"{chains} chains, got {sorted(n, key=str)}")
        inits = jax.tree_util.tree_map(jnp.asarray, self.source.chain_inits)
        return jax.vmap(lambda one: ravel_pytree(one)[0])(inits).astype(dtype)

def _names_and_shapes(position: PyTree) -> tuple[tuple[str, ...], tuple[tuple[int, ...], ...]]:
    """Variable names from the pytree: dict keys (nested joined by '.'), else x / x0, x1, ...

    The order matches `ravel_pytree`, which flattens leaves in `jax.tree_util` order."""
    leaves_with_path = jax.tree_util.tree_flatten_with_path(position)[0]
    if not leaves_with_path:
        raise BomcmcError("initial position is empty: give at least one array of parameters")
    names, shapes = [], []
    for path, leaf in leaves_with_path:
        parts = []
        for p in path:
            if isinstance(p, jax.tree_util.DictKey):
                parts.append(str(p.key))
            elif isinstance(p, jax.tree_util.SequenceKey):
                parts.append(str(p.idx))
            elif isinstance(p, jax.tree_util.GetAttrKey):
                parts.append(str(p.name))
            else:
                parts.append(str(p))
        name = ".".join(parts) if parts else "x"
        if parts and isinstance(path[0], jax.tree_util.SequenceKey):
            name = "x" + name
        names.append(name)
        shapes.append(tuple(np.shape(leaf)))
    return tuple(names), tuple(shapes)


def _check_init_leaves(position: PyTree) -> None:
    for path, leaf in jax.tree_util.tree_flatten_with_path(position)[0]:
        where = jax.tree_util.keystr(path) or "position"
        try:
            arr = np.asarray(leaf)
        except Exception as e:  # noqa: BLE001 - anything unconvertible is bad input
            raise BomcmcError(f"initial position {where} is not an array: {e}") from None
        if arr.dtype == object or not (
            np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
        ):
            raise BomcmcError(f"initial position {where} has non-numeric dtype {arr.dtype}")
        if arr.size == 0:
            raise BomcmcError(f"initial position {where} is an empty array")
        if not np.all(np.isfinite(arr)):
            raise BomcmcError(f"initial position {where} contains NaN or inf")


def flatten(posterior: Posterior, check_finite: bool = True) -> FlatPosterior:
    """Validate a posterior and return its flat form (see module docstring).

    With `check_finite=False` only shapes are checked (the driver checks finiteness at every
    chain's start itself, in one compiled call). A process flattens each posterior once (per
    float width): its flat log density is then one function, so the programs compiled from
    it (the start, the step-size heuristic, the Laplace metric) are traced once too."""
    key = (id(posterior), bool(check_finite), str(float_dtype()))
    return _FLAT.get_or_build(key, lambda: _flatten(posterior, check_finite),
                              keep=(posterior,))


_FLAT = Latest(8)

# _BARRIER: the flat log density passes the unravelled leaves through an optimisation barrier,
# whose transpose is a barrier on their gradients. The gradient's pieces are then computed
# before the flat gradient is concatenated from them, not inside the concatenation. On a GPU,
# XLA fused the per-chain sums of a scalar leaf's gradient (σ's, summed over a 4096-cell
# field) into the concatenation, and emitted that fusion as a serial loop: 285 of a leapfrog
# step's 381 µs (docs/rmhmc.md, "At the paper's size on a GPU").


def _flatten(posterior: Posterior, check_finite: bool) -> FlatPosterior:
    if not callable(posterior.logdensity_fn):
        raise BomcmcError("logdensity must be a callable position -> scalar")
    _check_init_leaves(posterior.init_position)
    dtype = float_dtype()
    init = jax.tree_util.tree_map(lambda a: jnp.asarray(a, dtype), posterior.init_position)
    flat0, unravel = ravel_pytree(init)
    names, shapes = _names_and_shapes(init)
    user_fn = posterior.logdensity_fn

    pieces = len(jax.tree_util.tree_leaves(init)) > 1
    data = posterior.data

    # jitted, so the model's Python is traced once per shape and every program that calls the
    # flat log density reuses the trace (XLA inlines the call); the data a run binds are the
    # call's arguments (docs/architecture.md)
    def traced(x, bound):
        with data.bound(bound) if bound is not None else contextlib.nullcontext():
            params = unravel(x)
            if pieces:  # see _BARRIER
                params = jax.lax.optimization_barrier(params)
            return jnp.asarray(user_fn(params), dtype=x.dtype).reshape(())

    once = jax.jit(traced)

    def flat_logdensity(x):
        return once(x, data.bound_args() if data is not None else None)

    _check_logdensity(user_fn, init, flat_logdensity, flat0, check_finite)
    return FlatPosterior(
        logdensity_fn=flat_logdensity,
        unravel=unravel,
        dim=int(flat0.shape[0]),
        var_names=names,
        var_shapes=shapes,
        source=dataclasses.replace(posterior, init_position=init),
    )


def _check_logdensity(user_fn, init, flat_fn, flat0, check_finite: bool = True) -> None:
    try:
        out = jax.eval_shape(user_fn, init)
    except Exception as e:  # noqa: BLE001 - report any tracing failure in one line
        raise BomcmcError(
            f"logdensity cannot be evaluated at the initial position: {first_line(e)}"
        ) from None
    if not hasattr(out, "shape") or int(np.prod(out.shape, dtype=int)) != 1:
        shape = getattr(out, "shape", type(out).__name__)
        raise BomcmcError(f"logdensity must return a scalar, got shape {shape}")
    if not check_finite:
        return
    value, grad = jax.jit(jax.value_and_grad(flat_fn))(flat0)
    if not np.isfinite(float(value)):
        raise BomcmcError(f"logdensity is not finite at the initial position (got {float(value)})")
    if not np.all(np.isfinite(np.asarray(grad))):
        raise BomcmcError("gradient of logdensity is not finite at the initial position")
