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

import json
import time
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from .. import data as data_args
from .. import distributed
from ..config import Latest
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
NEAR_INIT_TRIES = 20  # then starts around the initial position, the spread halved each time
# mode searches the start rule reads at least: a run of fewer chains also searches from
# further dispersed points (`_probes`; docs/tuning.md, "The start on unbounded densities")
PROBES, PROBE_SALT = 4, 0x5EA


def build_chunk_fn(
    flat: FlatPosterior, kernel: Kernel, chunk_size: int, adapter: Adapter | None = None,
) -> Callable:
    """Return `chunk(keys, states, knobs, adapt_states, start_iter, n_draws, thin, warmup)`,
    vmapped over chains, returning `(states, knobs, adapt_states, positions, lp, info)`.

    Runs `n_draws` draws (each the last of `thin` transitions) for each chain into buffers of
    `chunk_size` draws (rows past n_draws are zeros). The info of a thinned draw is that of
    its last transition, except `n_grad` (summed) and `diverging` (any). During the first
    `warmup` transitions the adapter (if any) updates its state and the knobs after every
    transition, inside the compiled loop; its last update hands over the final knobs. The
    counts are arguments, not constants: runs of other lengths reuse the program.

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
    return build(flat.logdensity_fn, kernel, chunk_size, adapter)


def make_knobs(kernel: Kernel, dim: int, knobs: dict):
    """The kernel's knobs for `dim` dimensions from a user's `knobs`; a keyword the kernel
    does not take (a bare kernel has no declared schema to check it against first) is one
    line naming the option and those the kernel takes, never Python's TypeError text."""
    try:
        return kernel.make_knobs(dim, **knobs)
    except TypeError as e:
        raise BomcmcError(_knobs_refused(kernel, knobs, e)) from None


def _knobs_refused(kernel: Kernel, knobs: dict, error: TypeError) -> str:
    import inspect

    name = f"sampler '{kernel.name}'"
    try:
        params = list(inspect.signature(kernel.make_knobs).parameters.values())[1:]
    except (TypeError, ValueError):
        params = None
    if params is not None and all(p.kind != p.VAR_KEYWORD for p in params):
        takes = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        unknown = sorted(set(knobs) - set(takes))
        if unknown:
            return (f"{name} does not take {', '.join(unknown)} (it takes: "
                    f"{', '.join(takes) if takes else 'no options'})")
    given = ", ".join(sorted(knobs)) or "no options"
    return f"{name} cannot use the options given ({given}): a value has the wrong type"


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
        one = make_knobs(self.kernel, self.flat.dim, cfg.knobs)
        self.knobs = jax.tree_util.tree_map(
            lambda a: np.broadcast_to(a, (spec.chains,) + np.shape(a)).copy(), one
        )
        # this process's place, and the chains it runs (all of them in a one-process run or
        # a run whose data are sharded), with the keys they have in any run of the same seed
        self.process = distributed.group()
        self.group = distributed.Group() if spec.shard_data else self.process
        distributed.check_split(spec.chains, self.group.size)
        self.local = self.group.chains(spec.chains)
        self.block = _chain_block(spec, self.group)
        root = jax.random.PRNGKey(spec.seed)
        self.init_key = jax.random.fold_in(root, 0)
        self.chain_keys = jax.random.split(jax.random.fold_in(root, 1), spec.chains)[self.local]
        self.data, self.mesh, self.data_args = _data(spec, post)
        # every process writes its chains' chunks; with sharded data every process has every
        # chain, and process 0 alone writes a directory they share
        self.writes_chunks = (not spec.shard_data or self.process.is_main
                              or not store.shared)
        self.sharding = (None if spec.shard_data
                         else _chain_sharding(self.local.stop - self.local.start))
        self.compile_s = 0.0
        self.start_grads = 0
        self.start_note = ""  # whether the kernel's start was kept (`_unless_steeper`)
        self.init_spread = None  # the smallest spread around the initial position a start needed
        self.until = None  # the stopping rule of a run until precise (`until.Until`)
        self.until_reads = (None, 0.0)  # its `watch` and `burn_in` (`api.sample`)

    def initial_state(self):
        """The chains' initial states. Dispersed starts whose log density or gradient is not
        finite are drawn again, MAX_INIT_TRIES times (Stan's rule), then within ±1, ±0.5, ...
        of the initial position (`init_spread`: a box the draws missed); fixed starts are not."""
        spec, flat = self.spec, self.flat
        strategy = spec.init_strategy
        starts = flat.init_flat(self.init_key, spec.chains, spec.init_jitter,
                                strategy)[self.local]
        kernel = self.kernel

        def one(x):
            n, steeper = jnp.asarray(0, jnp.int32), jnp.asarray(False)
            if kernel.start is not None:  # e.g. AHMC's L-BFGS towards the mode
                x, n, steeper = kernel.start(x, flat.logdensity_fn)
            return kernel.init(x, flat.logdensity_fn), n, steeper

        # by identity: the log density (one per posterior), its data, the kernel; never sharded
        key = None if self.mesh is not None else (
            "init", id(flat.logdensity_fn), id(self.data), id(kernel), self.block)
        init = PROGRAMS.get_or_build(
            key, lambda: data_args.jit(vmap_in_blocks(one, self.block), self.data),
            (flat.logdensity_fn, self.data, kernel))
        redraw = strategy == "uniform" and flat.source.chain_inits is None
        self.start_grads = 0  # gradient evaluations of the kernel's start, every attempt's
        for attempt in range(1, MAX_INIT_TRIES + NEAR_INIT_TRIES + 1):
            states, n, steeper = init(starts)
            self.start_grads += int(np.sum(np.asarray(n)))
            # every process's chains decide whether to draw again, as in one process
            lp_bad, grad_bad, outside = self.gather((*_not_finite(states),
                                                     self._outside(starts)))
            bad = lp_bad | grad_bad | outside
            if not bad.any() or not redraw:
                break
            if attempt < MAX_INIT_TRIES:
                fresh = flat.init_flat(self.init_key, spec.chains, 0.0, strategy, attempt)
            else:
                self.init_spread = 0.5 ** (attempt - MAX_INIT_TRIES)
                fresh = flat.init_flat(jax.random.fold_in(self.init_key, attempt), spec.chains,
                                       self.init_spread, "init")
            starts = jnp.where(jnp.asarray(bad[self.local])[:, None], fresh[self.local], starts)
        tried = (f" after {MAX_INIT_TRIES} dispersed starts (uniform(-2, 2) on every coordinate)"
                 f" and {NEAR_INIT_TRIES} around the initial position (give an init where it is "
                 "finite)") if redraw else ""
        for bad, what in ((lp_bad, "logdensity is not finite at {}"),
                          (grad_bad, "gradient of logdensity is not finite at {}"),
                          (outside, "{} lies outside the sampler's support (support=)")):
            if bad.any():
                where = ("the initial position" if bad.all()
                         else f"the starting point of chain(s) {np.flatnonzero(bad).tolist()}")
                raise BomcmcError(what.format(where) + tried)
        probes = self._probes(init, starts.shape[0]) if redraw else np.zeros(0, bool)
        return self._unless_steeper(states, steeper, starts, key, probes)

    def _probes(self, init, width: int) -> np.ndarray:
        """Whether the kernel's start ended steeper than it began from each of PROBES −
        chains further dispersed points (none with PROBES chains or more): one chain's
        search alone missed the neck of `lgcp-hyper-32` in 25 of 64 runs. The searches run
        in batches of this process's chains, through the compiled start; every process runs
        them alike, and the first counts their gradients, as one process would."""
        extra = PROBES - self.spec.chains
        if self.kernel.start is None or extra <= 0:
            return np.zeros(0, bool)
        batches = -(-extra // width)
        points = self.flat.init_flat(jax.random.fold_in(self.init_key, PROBE_SALT),
                                     batches * width)
        flags = []
        for b in range(batches):
            _, n, steeper = init(points[b * width:(b + 1) * width])
            self.start_grads += int(np.sum(np.asarray(n))) * self.group.is_main
            flags.append(np.asarray(steeper))
        return np.concatenate(flags)[:extra]

    def _unless_steeper(self, states, steeper, starts, key, probes):
        """The states the kernel's start reached, unless it ended steeper than it began on
        any chain of any process, or from any probe (`_probes`): a density without a
        maximum there (a centred funnel's neck), whose climb would strand every chain; then
        every chain starts from its own point (docs/tuning.md, "The start on unbounded
        densities")."""
        steeper = np.asarray(self.gather(steeper))
        climbed = steeper.any() or probes.any()
        where = [f"chain(s) {np.flatnonzero(steeper).tolist()}"] * bool(steeper.any()) + [
            f"{int(probes.sum())} of {probes.size} probes"] * bool(probes.any())
        self.start_note = ("" if self.kernel.start is None else "kept" if not climbed else
                           "dispersed: the mode search ended steeper than it began on "
                           + " and ".join(where))
        if not climbed:
            return states
        flat, kernel = self.flat, self.kernel
        plain = PROGRAMS.get_or_build(
            key and ("plain",) + key,
            lambda: data_args.jit(vmap_in_blocks(
                lambda x: kernel.init(x, flat.logdensity_fn), self.block), self.data),
            (flat.logdensity_fn, self.data, kernel))
        return plain(starts)

    def _outside(self, positions):
        """Which chains start outside the kernel's support (none without one): the points
        given, before the kernel's `start` moves them (it keeps them in the support)."""
        if self.kernel.support is None:
            return np.zeros(positions.shape[0], bool)
        return ~np.asarray(jax.vmap(self.kernel.support)(positions))

    def gather(self, tree):
        """Every chain's rows of `tree` (this process's chains' rows), from every process
        that runs some of them."""
        return tree if self.group.size == 1 else distributed.allgather(tree)

    def _put(self, tree):
        if self.mesh is not None:  # sharded data: every device holds every chain
            return data_args.replicated(self.mesh, tree)
        if self.sharding is None:
            return tree
        return jax.device_put(tree, self.sharding)

    def to_host(self, tree):
        """A chunk's output on the host (this process's copy where every process has it)."""
        return data_args.local(tree) if self.mesh is not None else jax.device_get(tree)

    def initial_adapt_state(self, states):
        """Per-chain adaptation state (an empty tuple when nothing adapts in warm-up)."""
        if self.adapter is None:
            return ()
        init = vmap_in_blocks(lambda x, kn: self.adapter.init(x, kn, self.spec.warmup),
                              self.block)
        return data_args.jit(init, self.data)(states.position, self.local_knobs(self.knobs))

    def local_knobs(self, knobs):
        """This process's chains' rows of the run's knobs (all of them in one process)."""
        if self.group.size == 1:
            return knobs
        return jax.tree_util.tree_map(lambda a: a[self.local], knobs)

    def compile(self, states, adapt_state):
        """The chunk's executable: the one an earlier run of this process compiled for the
        same program (`PROGRAMS`), else traced, lowered and compiled now."""
        t0 = time.perf_counter()
        i32 = jnp.int32
        args = (self.data_args, self._put(self.chain_keys), self._put(states),
                self._put(self.local_knobs(self.knobs)),
                self._put(adapt_state),
                jnp.asarray(0, i32), jnp.asarray(1, i32), jnp.asarray(1, i32),
                jnp.asarray(0, i32))
        key = self._program_key(args)
        self._chunk = PROGRAMS.get(key)
        if self._chunk is None:
            fn = build_chunk_fn(self.flat, self.kernel, self.spec.chunk_size, self.adapter)
            if self.block < self.local.stop - self.local.start:
                fn = in_blocks(fn, self.block)
            fn = data_args.with_data(fn, self.data)
            self._chunk = jax.jit(fn).lower(*args).compile()
            PROGRAMS.put(key, self._chunk, self._program_parts())
        self.compile_s = time.perf_counter() - t0

    def _program_parts(self) -> tuple:
        """The objects whose identity the program key holds (kept alive with the program, so
        that no other object takes their ids)."""
        source = self.flat.source
        return source.logdensity_fn, source.data, self.kernel

    def _program_key(self, args) -> tuple | None:
        """What the chunk's program is a function of: the posterior's log density and data
        (by identity), the kernel (by identity), the buffer, the adapter and its options,
        the chain blocks, and every argument's structure, shape, dtype and sharding. None
        (never reused) for a run whose data are sharded."""
        if self.mesh is not None:
            return None
        cfg = self.spec.config
        leaves, tree = jax.tree_util.tree_flatten(args)
        avals = tuple(jax.typeof(a) for a in leaves)  # shape, dtype, weak type
        init_leaves, init_tree = jax.tree_util.tree_flatten(self.flat.source.init_position)
        return (tuple(map(id, self._program_parts())), init_tree,
                tuple((np.shape(a), str(a.dtype)) for a in init_leaves),
                self.spec.chunk_size, cfg.adapt,
                json.dumps(cfg.adapter_options, sort_keys=True, default=repr),
                self.block, self.local.stop - self.local.start, repr(self.sharding), tree,
                avals)

    def run_chunk(self, states, knobs, adapt_state, start_iter: int, n_draws: int, thin: int):
        # the counts as host int32 scalars, the executable's argument types: a JAX array
        # made of each was an eager dispatch (some 0.2 ms a chunk)
        i32 = np.int32
        out = self._chunk(self.data_args, self._put(self.chain_keys), self._put(states),
                          self._put(self.local_knobs(knobs)),
                          self._put(adapt_state), np.asarray(start_iter, i32),
                          np.asarray(n_draws, i32), np.asarray(thin, i32),
                          np.asarray(self.spec.warmup, i32))
        return jax.block_until_ready(out)


# the chunk executables this process compiled, by `Run._program_key`: a further run of the
# same posterior and sampler (another seed, other draws or knob values) starts without
# tracing its program again; JAX's persistent cache saves only the compilation after it
PROGRAMS = Latest(16)  # a run's chunk and its start


def _data(spec: RunSpec, post: Posterior):
    """(Data, mesh, arguments) of the compiled chunk: the posterior's data on this process,
    or with `shard_data` their rows over the devices of every process."""
    if not spec.shard_data:
        return post.data, None, (None if post.data is None else post.data.device())
    if post.data is None:
        raise BomcmcError(f"posterior '{post.name}' declares no data (Posterior.data), so "
                          "shard_data has nothing to split: run it without shard_data")
    mesh = data_args.data_mesh()
    return post.data, mesh, post.data.sharded(mesh)


def _chain_block(spec: RunSpec, group) -> int:
    """Chains vmapped together in this process: spec.chain_block, else all of its chains."""
    local = spec.chains // group.size
    block = spec.chain_block or local
    if local % block:
        raise BomcmcError(f"the run computes its chains in blocks of {block} (chain_block), "
                          f"which do not divide the {local} chains each of {group.size} "
                          f"processes would run: use a number of processes that divides "
                          f"{spec.chains // block}")
    return block


def _blocks(tree, block: int):
    """Leading axis C -> (C // block, block)."""
    return jax.tree_util.tree_map(
        lambda a: a.reshape((a.shape[0] // block, block) + a.shape[1:]), tree)


def _unblocks(tree):
    return jax.tree_util.tree_map(lambda a: a.reshape((-1,) + a.shape[2:]), tree)


def in_blocks(chunk: Callable, block: int) -> Callable:
    """The chunk function over a process's chains in a loop over blocks of `block` chains,
    each block vmapped as a run of `block` chains is: the arithmetic of a chain (how XLA
    batches its matrix products) depends on how many chains are vmapped together, so a run
    split over processes and its resume over another number of them compute every chain
    alike (`lax.map`)."""
    def blocked(keys, states, knobs, adapt_states, *counts):
        def one(args):
            return chunk(*args, *counts)

        return _unblocks(jax.lax.map(one, _blocks((keys, states, knobs, adapt_states),
                                                  block)))

    return blocked


def vmap_in_blocks(f: Callable, block: int) -> Callable:
    """`jax.vmap(f)` over the leading (chain) axis of every argument, computed in blocks of
    `block` chains as `in_blocks` does (plain vmap when the chains are one block)."""
    v = jax.vmap(f)

    def blocked(*args):
        chains = jax.tree_util.tree_leaves(args)[0].shape[0]
        if chains <= block:
            return v(*args)
        return _unblocks(jax.lax.map(lambda a: v(*a), _blocks(args, block)))

    return blocked


def _not_finite(states) -> tuple[np.ndarray, np.ndarray]:
    """Per chain: (log density not finite, gradient not finite)."""
    lp = np.asarray(states.logdensity)
    grad_ok = np.all(np.isfinite(np.asarray(states.logdensity_grad)), axis=-1)
    return ~np.isfinite(lp), ~grad_ok


def _chain_sharding(chains: int):
    """Shard this process's chain axis over its devices when it has several and they divide
    its chains (the other processes' devices hold the other processes' chains)."""
    devices = jax.local_devices()
    if len(devices) <= 1 or chains % len(devices) != 0:
        return None
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(devices), ("chains",))
    return NamedSharding(mesh, PartitionSpec("chains"))
