"""The engine of one run: the compiled chunk function and what it is compiled with.

All chains advance together, vmapped, inside one jitted *chunk* function that runs a dynamic
number of transitions into fixed-size buffers. Warm-up and sampling, short and long chunks,
and every knob value share the one compiled executable, compiled once per run (ahead of time,
so compilation is timed apart from sampling) and cached on disk across runs when the
persistent compilation cache is on.

Transition t of chain c uses the key fold_in(key_c, t), so the draws do not depend on how the
run is cut into chunks: a run resumed from its last complete chunk continues bit for bit.
"""

from __future__ import annotations

import time
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..adaptation import get_adapter
from ..adaptation.base import Adapter
from ..errors import BomcmcError
from ..kernels.base import Kernel
from ..posterior import FlatPosterior, Posterior, flatten
from ..registry import Sampler
from ..tuning.base import FixedTuner, Tuner
from .lockstep import build_lockstep
from .spec import RunSpec
from .ticks import build_ticks

MAX_INIT_TRIES = 100  # draws of a dispersed start per chain (Stan tries 100 times)


def build_chunk_fn(
    flat: FlatPosterior, kernel: Kernel, chunk_size: int, warmup: int,
    adapter: Adapter | None = None,
) -> Callable:
    """Return `chunk(keys, states, knobs, adapt_states, start_iter, n_draws, thin)`, vmapped
    over chains, returning `(states, knobs, adapt_states, positions, lp, info)`.

    Runs `n_draws` draws (each the last of `thin` transitions) for each chain into buffers of
    `chunk_size` draws (rows past n_draws are zeros). The info of a thinned draw is that of
    its last transition, except `n_grad` (summed) and `diverging` (any). During the first
    `warmup` transitions the adapter (if any) updates its state and the knobs after every
    transition, inside the compiled loop; its last update hands over the final knobs.

    A transition writes its position and one packed row (`rows.RowLayout`: the log density and
    the scalar info fields), unpacked after the loop. (Splitting the loop at the warm-up end,
    so that sampling transitions skip the adapter's `cond`, was measured too: no faster, and
    longer to compile, since the step is then compiled twice; docs/benchmarks.md, "Loop split
    at the warm-up end".)

    A kernel with a `machine` ("nuts_async") runs its chunks tick by tick instead: one loop
    iteration is one leapfrog step of every chain, and a chain whose trajectory ends writes
    its draw, gives it to the adapter (in warm-up) and starts its next transition at once,
    instead of waiting for the longest trajectory of the batch. Same keys, same draws; the
    chunk costs about max_c Σ_t n_{t,c} gradients instead of Σ_t max_c n_{t,c}, plus each
    tick's bookkeeping (docs/benchmarks.md, "NUTS without lockstep")."""
    build = build_lockstep if kernel.machine is None else build_ticks
    return build(flat.logdensity_fn, kernel, chunk_size, warmup, adapter)


def _make_knobs(kernel: Kernel, dim: int, knobs: dict):
    try:
        return kernel.make_knobs(dim, **knobs)
    except TypeError as e:
        raise BomcmcError(f"sampler '{kernel.name}': {e}") from None


class Run:
    """One run's compiled pieces: the flat posterior, the kernel, tuner and adapter, the
    knobs, the keys, the chain sharding and the AOT-compiled chunk."""


    def __init__(self, spec: RunSpec, post: Posterior, store, tuner: Tuner | None,
                 sampler: Sampler):
        self.spec = spec
        self.flat = flatten(post, check_finite=False)
        self.sampler = sampler
        self.kernel = sampler.kernel
        self.store = store
        self.tuner = tuner or FixedTuner()
        cfg = spec.config
        self.adapter = get_adapter(cfg.adapt, cfg.adapter_options) if cfg.adapt else None
        if self.adapter is not None and spec.warmup == 0:
            raise BomcmcError(f"adapt='{cfg.adapt}' needs warmup > 0")
        one = _make_knobs(self.kernel, self.flat.dim, cfg.knobs)
        self.knobs = jax.tree_util.tree_map(
            lambda a: np.broadcast_to(a, (spec.chains,) + np.shape(a)).copy(), one
        )
        root = jax.random.PRNGKey(spec.seed)
        self.init_key = jax.random.fold_in(root, 0)
        self.chain_keys = jax.random.split(jax.random.fold_in(root, 1), spec.chains)
        self.sharding = _chain_sharding(spec.chains)
        self.compile_s = 0.0
        self.start_grads = 0

    def initial_state(self):
        """The chains' initial states. Dispersed starts whose log density or gradient is not
        finite are drawn again, up to MAX_INIT_TRIES times (Stan's rule); fixed starts are not."""
        spec, flat = self.spec, self.flat
        strategy = spec.init_strategy
        starts = flat.init_flat(self.init_key, spec.chains, spec.init_jitter, strategy)
        kernel = self.kernel

        def one(x):
            n = jnp.asarray(0, jnp.int32)
            if kernel.start is not None:  # e.g. AHMC's L-BFGS towards the mode
                x, n = kernel.start(x, flat.logdensity_fn)
            return kernel.init(x, flat.logdensity_fn), n

        init = jax.jit(jax.vmap(one))
        redraw = strategy == "uniform" and flat.source.chain_inits is None
        self.start_grads = 0  # gradient evaluations of the kernel's start, every attempt's
        for attempt in range(1, MAX_INIT_TRIES + 1):
            states, n = init(starts)
            self.start_grads += int(np.sum(np.asarray(n)))
            lp_bad, grad_bad = _not_finite(states)
            bad = lp_bad | grad_bad
            if not bad.any() or not redraw:
                break
            fresh = flat.init_flat(self.init_key, spec.chains, 0.0, strategy, attempt)
            starts = jnp.where(jnp.asarray(bad)[:, None], fresh, starts)
        for bad, what in ((lp_bad, "logdensity"), (grad_bad, "gradient of logdensity")):
            if bad.any():
                where = ("the initial position" if bad.all()
                         else f"the starting point of chain(s) {np.flatnonzero(bad).tolist()}")
                tried = (f" after {MAX_INIT_TRIES} dispersed starts (uniform(-2, 2) on every "
                         "coordinate; give an init where it is finite and "
                         "init_strategy='init')") if redraw else ""
                raise BomcmcError(f"{what} is not finite at {where}{tried}")
        return states

    def _put(self, tree):
        if self.sharding is None:
            return tree
        return jax.device_put(tree, self.sharding)

    def initial_adapt_state(self, states):
        """Per-chain adaptation state (an empty tuple when nothing adapts in warm-up)."""
        if self.adapter is None:
            return ()
        init = jax.vmap(lambda x, kn: self.adapter.init(x, kn, self.spec.warmup))
        return jax.jit(init)(states.position, self.knobs)

    def compile(self, states, adapt_state):
        t0 = time.perf_counter()
        fn = build_chunk_fn(self.flat, self.kernel, self.spec.chunk_size, self.spec.warmup,
                            self.adapter)
        i32 = jnp.int32
        args = (self._put(self.chain_keys), self._put(states), self._put(self.knobs),
                self._put(adapt_state),
                jnp.asarray(0, i32), jnp.asarray(1, i32), jnp.asarray(1, i32))
        self._chunk = jax.jit(fn).lower(*args).compile()
        self.compile_s = time.perf_counter() - t0

    def run_chunk(self, states, knobs, adapt_state, start_iter: int, n_draws: int, thin: int):
        i32 = jnp.int32
        out = self._chunk(self._put(self.chain_keys), self._put(states), self._put(knobs),
                          self._put(adapt_state), jnp.asarray(start_iter, i32),
                          jnp.asarray(n_draws, i32), jnp.asarray(thin, i32))
        return jax.block_until_ready(out)


def _not_finite(states) -> tuple[np.ndarray, np.ndarray]:
    """Per chain: (log density not finite, gradient not finite)."""
    lp = np.asarray(states.logdensity)
    grad_ok = np.all(np.isfinite(np.asarray(states.logdensity_grad)), axis=-1)
    return ~np.isfinite(lp), ~grad_ok


def _chain_sharding(chains: int):
    """Shard the chain axis over devices when there are several and they divide the chains."""
    devices = jax.devices()
    if len(devices) <= 1 or chains % len(devices) != 0:
        return None
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(devices), ("chains",))
    return NamedSharding(mesh, PartitionSpec("chains"))
