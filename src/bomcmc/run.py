"""The driver: posterior → sampler → tuner → chunks → store → InferenceData.

All chains advance together, vmapped, inside one jitted *chunk* function that runs a dynamic
number of transitions into fixed-size buffers. Warm-up and sampling, short and long chunks,
and every knob value share the one compiled executable, compiled once per run (ahead of time,
so compilation is timed apart from sampling) and cached on disk across runs when the
persistent compilation cache is on.

Transition t of chain c uses the key fold_in(key_c, t), so the draws do not depend on how the
run is cut into chunks: a run resumed from its last complete chunk continues bit for bit.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
import os
import time
from pathlib import Path
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from . import __version__
from . import models as _models
from . import samplers as _samplers
from .config import set_float64
from .errors import BomcmcError
from .posterior import FlatPosterior, Posterior, flatten
from .samplers.base import tree_where
from .store import DiskStore, MemoryStore
from .tuning import get_adapter
from .tuning.base import Adapter, FixedTuner, Tuner

WARMUP, SAMPLING = 0, 1


# ---------------------------------------------------------------------------------------
# The run's configuration (what config.json holds)
# ---------------------------------------------------------------------------------------
@dataclasses.dataclass
class RunSpec:
    posterior: str
    sampler: str
    chains: int
    draws: int
    warmup: int
    seed: int
    thin: int = 1
    chunk_size: int = 100  # draws the compiled buffer holds (the longest chunk)
    chunk_seconds: float | None = None  # None: every chunk is chunk_size long; else a target
    float64: bool = False
    init_jitter: float = 0.0
    save_warmup: bool = False
    knobs: dict = dataclasses.field(default_factory=dict)
    adapt: str | None = None
    adapt_options: dict = dataclasses.field(default_factory=dict)
    tuner_options: dict | None = None  # options of the sampler's default tuner ("ahmc")
    max_grad: int | None = None  # stop after the chunk whose gradients per chain reach this
    version: str = __version__

    def validate(self) -> None:
        for name in ("chains", "draws", "thin", "chunk_size"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                raise BomcmcError(f"{name} must be a positive integer, got {v!r}")
        for name in ("warmup", "seed"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0:
                raise BomcmcError(f"{name} must be a non-negative integer, got {v!r}")
        if self.max_grad is not None and (not isinstance(self.max_grad, (int, np.integer))
                                          or isinstance(self.max_grad, bool)
                                          or self.max_grad < 1):
            raise BomcmcError(f"max_grad must be a positive integer, got {self.max_grad!r}")
        if self.chunk_seconds is not None and not self.chunk_seconds > 0:
            raise BomcmcError(f"chunk_seconds must be positive, got {self.chunk_seconds}")
        if not (math.isfinite(self.init_jitter) and self.init_jitter >= 0):
            raise BomcmcError(f"init_jitter must be a non-negative number, got {self.init_jitter}")

    @property
    def total_iterations(self) -> int:
        return self.warmup + self.draws * self.thin


def _json_options(options: dict) -> dict:
    """Options as config.json stores them (tuples -> lists, numpy -> Python)."""
    def conv(v):
        return [conv(x) for x in v] if isinstance(v, (tuple, list)) else _jsonable(v)
    return {k: conv(v) for k, v in options.items()}


def _jsonable(v):
    if isinstance(v, (np.ndarray, jax.Array)):
        return np.asarray(v).tolist()
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    return v


# ---------------------------------------------------------------------------------------
# The compiled chunk: n_draws × thin transitions for every chain
# ---------------------------------------------------------------------------------------
class _RowLayout:
    """The per-transition record as one row of integers: the log density and every scalar
    info field, each reinterpreted bit for bit (floats bitcast, ints and bools widened), so a
    transition writes one row of a (chunk_size, k) buffer instead of one buffer per field.
    Non-scalar info fields (none in the built-in samplers) keep buffers of their own. "_lp"
    names the log density (no NamedTuple field can start with an underscore)."""

    def __init__(self, lp_struct, info_struct):
        fields = [("_lp", lp_struct)] + list(zip(info_struct._fields, info_struct))
        self.packed = [(f, s.dtype) for f, s in fields
                       if s.shape == () and jnp.dtype(s.dtype).itemsize <= 8]
        self.width = max(jnp.dtype(d).itemsize for _, d in self.packed)
        self.dtype = jnp.dtype(f"int{8 * self.width}")
        self.columns = {f: c for c, (f, _) in enumerate(self.packed)}
        self.fields = info_struct._fields
        self.info_type = type(info_struct)
        self.shapes = dict(fields)

    @staticmethod
    def _int_of(dtype):
        return jnp.dtype(f"int{8 * jnp.dtype(dtype).itemsize}")

    def pack(self, values: dict) -> jax.Array:
        cols = []
        for f, dt in self.packed:
            v = values[f]
            if jnp.dtype(dt) == jnp.bool_:
                v = v.astype(self.dtype)
            else:
                if not jnp.issubdtype(dt, jnp.signedinteger):  # floats, unsigned: same bits
                    v = jax.lax.bitcast_convert_type(v, self._int_of(dt))
                v = v.astype(self.dtype)  # sign-extends a narrower int: exact
            cols.append(v)
        return jnp.stack(cols, axis=-1)  # (k,) for one transition, (chains, k) for a batch

    def unpack(self, rows: jax.Array, field: str) -> jax.Array:
        dt = jnp.dtype(self.shapes[field].dtype)
        v = rows[..., self.columns[field]]
        if dt == jnp.bool_:
            return v != 0
        v = v.astype(self._int_of(dt))  # back to the field's width: exact
        return v if dt == v.dtype else jax.lax.bitcast_convert_type(v, dt)


class _Buffers:
    """A chunk's output buffers: positions, the packed rows (`_RowLayout`) and any non-scalar
    info field, `chunk_size` draws each (`empty` is one chain's; `write` takes one chain's or,
    with batched rows, a batch's)."""

    def __init__(self, chunk_size, state, info_struct):
        self.lp_dtype = state.position.dtype  # the log density is stored in the positions' dtype
        self.layout = _RowLayout(jax.ShapeDtypeStruct((), self.lp_dtype), info_struct)
        self.own = [f for f in info_struct._fields if f not in self.layout.columns]
        self.empty = (
            jnp.zeros((chunk_size,) + state.position.shape, state.position.dtype),
            jnp.zeros((chunk_size, len(self.layout.packed)), self.layout.dtype),
            {f: jnp.zeros((chunk_size,) + getattr(info_struct, f).shape,
                          getattr(info_struct, f).dtype) for f in self.own},
        )

    def write(self, bufs, i, st, info, mode=None):
        """Row i := the transition's position, log density and info. Batched too: with
        i = (chains, rows) and batched st and info, chain c writes its row rows[c] of the
        (chains, chunk_size, ...) buffers (`mode="drop"`: an out-of-range row writes nothing)."""
        bpos, brow, bown = bufs
        values = dict(zip(info._fields, info), _lp=st.logdensity.astype(self.lp_dtype))
        return (bpos.at[i].set(st.position, mode=mode),
                brow.at[i].set(self.layout.pack(values), mode=mode),
                {f: b.at[i].set(values[f], mode=mode) for f, b in bown.items()})

    def read(self, bufs):
        """(positions, log densities, info) of the filled buffers."""
        bpos, brow, bown = bufs
        layout = self.layout
        info = layout.info_type(*[bown[f] if f in bown else layout.unpack(brow, f)
                                  for f in layout.fields])
        return bpos, layout.unpack(brow, "_lp"), info


def _thinned(info, j, thin, n_grad, div):
    """The info a thinned draw keeps: its last transition's, except n_grad (summed over the
    thinning group that transition j ends or continues) and diverging (any)."""
    first = j % thin == 0
    n_grad = jnp.where(first, jnp.zeros_like(n_grad), n_grad) + info.n_grad
    div = jnp.where(first, False, div) | info.diverging
    return info._replace(n_grad=n_grad, diverging=div)


def build_chunk_fn(
    flat: FlatPosterior, sampler: _samplers.Sampler, chunk_size: int, warmup: int,
    adapter: Adapter | None = None,
) -> Callable:
    """Return `chunk(keys, states, knobs, adapt_states, start_iter, n_draws, thin)`, vmapped
    over chains, returning `(states, knobs, adapt_states, positions, lp, info)`.

    Runs `n_draws` draws (each the last of `thin` transitions) for each chain into buffers of
    `chunk_size` draws (rows past n_draws are zeros). The info of a thinned draw is that of
    its last transition, except `n_grad` (summed) and `diverging` (any). During the first
    `warmup` transitions the adapter (if any) updates its state and the knobs after every
    transition, inside the compiled loop; its last update hands over the final knobs.

    A transition writes its position and one packed row (`_RowLayout`: the log density and
    the scalar info fields), unpacked after the loop. (Splitting the loop at the warm-up end,
    so that sampling transitions skip the adapter's `cond`, was measured too: no faster
    within ±1.5 % on the NUTS benchmark posteriors, and 20-27 % longer to compile, since the
    step is then compiled twice; see docs/benchmarks.md.)

    A sampler with a `machine` ("nuts_async") runs its chunks tick by tick instead: one loop
    iteration is one leapfrog step of every chain, and a chain whose trajectory ends writes
    its draw, gives it to the adapter (in warm-up) and starts its next transition at once,
    instead of waiting for the longest trajectory of the batch. Same keys, same draws; the
    chunk costs about max_c Σ_t n_{t,c} gradients instead of Σ_t max_c n_{t,c}, plus each
    tick's bookkeeping (docs/benchmarks.md, "NUTS without lockstep")."""
    logdensity = flat.logdensity_fn

    def one_chain(key, state, knobs, adapt_state, start_iter, n_draws, thin):
        def transition(t, carry):
            st, kn, ad = carry
            st, info = sampler.step(jax.random.fold_in(key, t), st, logdensity, kn)
            if adapter is not None:
                ad, kn = jax.lax.cond(
                    t < warmup,
                    lambda: adapter.update(jax.random.fold_in(key, -1 - t), ad, t, st, info,
                                           kn, logdensity),
                    lambda: (ad, kn),
                )
            return (st, kn, ad), info

        info_struct = jax.eval_shape(transition, start_iter, (state, knobs, adapt_state))[1]
        out = _Buffers(chunk_size, state, info_struct)
        zero_grad = jnp.zeros(info_struct.n_grad.shape, info_struct.n_grad.dtype)

        # One flat loop over the chunk's n_draws * thin transitions (a nested thin loop costs
        # ~10% on small posteriors). Transition j writes row j // thin, so the last transition
        # of each thinning group is the one kept; n_grad and diverging accumulate over it.
        def body(j, carry):
            chain, bufs, n_grad, div = carry
            chain, info = transition(start_iter + j, chain)
            info = _thinned(info, j, thin, n_grad, div)
            bufs = out.write(bufs, j // thin, chain[0], info)
            return chain, bufs, info.n_grad, info.diverging

        init = ((state, knobs, adapt_state), out.empty, zero_grad, jnp.zeros((), bool))
        chain, bufs, _, _ = jax.lax.fori_loop(0, n_draws * thin, body, init)
        return (*chain, *out.read(bufs))

    machine = getattr(sampler, "machine", None)
    if machine is None:
        return jax.vmap(one_chain, in_axes=(0, 0, 0, 0, None, None, None))

    def chunk_ticks(keys, states, knobs, adapt_states, start_iter, n_draws, thin):
        """The chunk tick by tick, over the batch of chains. The loop is written at the batch
        level, not vmapped: a vmapped while_loop would select its whole carry (the output
        buffers too) between old and new on every iteration, for the chains that are done;
        and the batch skips the bookkeeping (`settle`; a transition's end: the adapter's
        update and the next transition's start) on the ticks where no chain needs it."""
        chains = keys.shape[0]
        total = n_draws * thin
        step = jax.vmap(lambda m, kn: machine.step(m, logdensity, kn))
        settle = jax.vmap(lambda m, kn: tree_where(m.pending, machine.settle(m, logdensity, kn), m))
        finish = jax.vmap(machine.finish)

        @jax.vmap
        def begin(key, t, st, kn):
            return machine.begin(jax.random.fold_in(key, t), st, logdensity, kn)

        @jax.vmap
        def adapt(key, t, ad, st, info, kn):
            # t = -1 for a chain whose transition did not end: no window ends there, so its
            # (discarded) update runs no step-size heuristic
            return adapter.update(jax.random.fold_in(key, -1 - t), ad, t, st, info, kn,
                                  logdensity)

        def next_transition(ended, t, m, kn, ad, new, info):
            """Chains whose transition t ended: the adapter's update (in warm-up), then the
            next transition's start."""
            if adapter is not None:
                in_warmup = ended & (t < warmup)

                def adapted(ad, kn):
                    ad2, kn2 = adapt(keys, jnp.where(in_warmup, t, -1), ad, new, info, kn)
                    return tree_where(in_warmup, ad2, ad), tree_where(in_warmup, kn2, kn)

                ad, kn = jax.lax.cond(jnp.any(in_warmup), adapted, lambda ad, kn: (ad, kn),
                                      ad, kn)
            return tree_where(ended, begin(keys, t + 1, new, kn), m), kn, ad

        def body(carry):
            m, st, kn, ad, j, bufs, n_grad, div = carry
            m = step(m, kn)  # (a chain past its last draw ticks on, unrecorded)
            m = jax.lax.cond(jnp.any(m.pending), settle, lambda m, kn: m, m, kn)
            # A chain whose transition ended writes its draw to row j // thin of its buffer.
            # The writes stay outside the `cond`s (inside one, german took 0.44 s, not 0.40 s).
            ended = m.done & (j < total)
            new, raw = finish(m, kn)
            info = _thinned(raw, j, thin, n_grad, div)
            row = jnp.where(ended, j // thin, chunk_size)  # chunk_size: dropped, no write
            bufs = out.write(bufs, (jnp.arange(chains), row), new, info, mode="drop")
            m, kn, ad = jax.lax.cond(
                jnp.any(ended), next_transition, lambda e, t, m, kn, ad, new, info: (m, kn, ad),
                ended, start_iter + j, m, kn, ad, new, raw)
            return (m, tree_where(ended, new, st), kn, ad, j + ended.astype(j.dtype), bufs,
                    jnp.where(ended, info.n_grad, n_grad), jnp.where(ended, info.diverging, div))

        m0 = begin(keys, jnp.full((chains,), start_iter, jnp.int32), states, knobs)
        info_struct = jax.eval_shape(lambda m, kn: machine.finish(m, kn)[1],
                                     *jax.tree_util.tree_map(lambda a: a[0], (m0, knobs)))
        out = _Buffers(chunk_size, jax.tree_util.tree_map(lambda a: a[0], states), info_struct)
        zero_grad = jnp.zeros((chains,) + info_struct.n_grad.shape, info_struct.n_grad.dtype)
        bufs = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (chains,) + a.shape),
                                      out.empty)
        init = (m0, states, knobs, adapt_states, jnp.zeros((chains,), jnp.int32), bufs,
                zero_grad, jnp.zeros((chains,), bool))
        _, st, kn, ad, _, bufs, _, _ = jax.lax.while_loop(lambda c: jnp.any(c[4] < total),
                                                          body, init)
        return (st, kn, ad, *jax.vmap(out.read)(bufs))

    def chunk(keys, states, knobs, adapt_states, start_iter, n_draws, thin):
        # The loop sits in a branch (n_draws is never 0 from the driver). Measured, not
        # understood: on XLA's CPU backend the same loop outside a `cond` spreads its body
        # over two threads and runs slower (logistic-german, 1000 draws x 4 chains: 0.57 s
        # wall / 0.97 s CPU against 0.39 s / 0.39 s, timed on a scratch variant, 2026-11-22).
        def nothing(keys, states, knobs, adapt_states, start_iter, n_draws, thin):
            shapes = jax.eval_shape(chunk_ticks, keys, states, knobs, adapt_states, start_iter,
                                    n_draws, thin)
            z = jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), shapes[3:])
            return (states, knobs, adapt_states, *z)
        return jax.lax.cond(n_draws > 0, chunk_ticks, nothing,
                            keys, states, knobs, adapt_states, start_iter, n_draws, thin)

    return chunk


# ---------------------------------------------------------------------------------------
# Result
# ---------------------------------------------------------------------------------------
@dataclasses.dataclass
class SampleResult:
    """What `sample` and `resume` return: `.idata` (ArviZ InferenceData), `.totals` (gradient
    evaluations, seconds, divergences), `.path` (the run directory, if any)."""

    idata: Any
    totals: dict
    path: Path | None = None

    def summary(self) -> dict:
        from .diagnostics import summarize

        return summarize(self.idata, self.totals)


# ---------------------------------------------------------------------------------------
# Resolving what the user handed us
# ---------------------------------------------------------------------------------------
def resolve_posterior(logdensity=None, init=None, posterior=None) -> Posterior:
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
        return _models.get(posterior)
    if logdensity is None:
        raise BomcmcError("nothing to sample: pass logdensity and init, or posterior=NAME")
    if not callable(logdensity):
        raise BomcmcError("logdensity must be a callable position -> scalar")
    if init is None:
        raise BomcmcError("init (an initial position pytree) is required with a logdensity")
    return Posterior(logdensity_fn=logdensity, init_position=init, name="custom")


def _make_knobs(sampler, dim: int, knobs: dict):
    try:
        return sampler.make_knobs(dim, **knobs)
    except TypeError as e:
        raise BomcmcError(f"sampler '{sampler.name}': {e}") from None


# ---------------------------------------------------------------------------------------
# The engine for one run
# ---------------------------------------------------------------------------------------
class _Run:
    def __init__(self, spec: RunSpec, post: Posterior, store, tuner: Tuner | None,
                 sampler: _samplers.Sampler | None = None):
        self.spec = spec
        self.flat = flatten(post, check_finite=False)
        self.sampler = sampler if sampler is not None else _samplers.get(spec.sampler)
        self.store = store
        self.tuner = tuner or FixedTuner()
        self.adapter = get_adapter(spec.adapt, spec.adapt_options) if spec.adapt else None
        if self.adapter is not None and spec.warmup == 0:
            raise BomcmcError(f"adapt='{spec.adapt}' needs warmup > 0")
        one = _make_knobs(self.sampler, self.flat.dim, spec.knobs)
        self.knobs = jax.tree_util.tree_map(
            lambda a: np.broadcast_to(a, (spec.chains,) + np.shape(a)).copy(), one
        )
        root = jax.random.PRNGKey(spec.seed)
        self.init_key = jax.random.fold_in(root, 0)
        self.chain_keys = jax.random.split(jax.random.fold_in(root, 1), spec.chains)
        self.sharding = _chain_sharding(spec.chains)
        self.compile_s = 0.0

    def initial_state(self):
        starts = self.flat.init_flat(self.init_key, self.spec.chains, self.spec.init_jitter)
        init = jax.jit(jax.vmap(lambda x: self.sampler.init(x, self.flat.logdensity_fn)))
        states = init(starts)
        lp = np.asarray(states.logdensity)
        grad_ok = np.all(np.isfinite(np.asarray(states.logdensity_grad)), axis=-1)
        for bad, what in ((~np.isfinite(lp), "logdensity"), (~grad_ok, "gradient of logdensity")):
            if bad.any():
                where = ("the initial position" if bad.all()
                         else f"the starting point of chain(s) {np.flatnonzero(bad).tolist()}")
                raise BomcmcError(f"{what} is not finite at {where}")
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
        fn = build_chunk_fn(self.flat, self.sampler, self.spec.chunk_size, self.spec.warmup,
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


def _chain_sharding(chains: int):
    """Shard the chain axis over devices when there are several and they divide the chains."""
    devices = jax.devices()
    if len(devices) <= 1 or chains % len(devices) != 0:
        return None
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(devices), ("chains",))
    return NamedSharding(mesh, PartitionSpec("chains"))


def _record(index, phase, start_iter, n, thin, knobs, next_knobs, out, wall, tuner):
    new_states, _, adapt_state, pos, lp, info = out
    rec = {
        "index": np.asarray(index), "phase": np.asarray(phase),
        "start_iter": np.asarray(start_iter), "n_draws": np.asarray(n), "thin": np.asarray(thin),
        "wall_s": np.asarray(wall),
        # copies, not views: a view of the first n rows would keep the whole chunk buffer
        # alive for every chunk a MemoryStore holds
        "positions": np.array(np.asarray(pos)[:, :n]), "lp": np.array(np.asarray(lp)[:, :n]),
    }
    # A tuner with `chunk_history()` saves its state without history, plus this chunk's own
    # history entries: the full history is rebuilt from the chunks (`_tuner_history`).
    if hasattr(tuner, "chunk_history"):
        rec["tuner_state"] = np.asarray(json.dumps(tuner.state_dict(history=False)))
        rec["tuner_history"] = np.asarray(json.dumps(tuner.chunk_history()))
    else:
        rec["tuner_state"] = np.asarray(json.dumps(tuner.state_dict()))
    for f, v in zip(info._fields, info):
        rec[f"info.{f}"] = np.array(np.asarray(v)[:, :n])
    for f, v in zip(new_states._fields, new_states):
        rec[f"state.{f}"] = np.asarray(v)
    for f, v in zip(knobs._fields, knobs):
        rec[f"knobs.{f}"] = np.asarray(v)
    for f, v in zip(next_knobs._fields, next_knobs):
        rec[f"next_knobs.{f}"] = np.asarray(v)
    for f, v in zip(getattr(adapt_state, "_fields", ()), adapt_state):
        rec[f"adapt.{f}"] = np.asarray(v)
    return rec


def _unpack(rec: dict, prefix: str, template):
    return type(template)(*[jnp.asarray(rec[f"{prefix}.{f}"]) for f in template._fields])


def _progress_bar(spec: RunSpec, done: int, enabled: bool):
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=spec.total_iterations, initial=done, unit="it", dynamic_ncols=True,
                desc=f"{spec.sampler} x{spec.chains}", leave=True)


FIRST_CHUNK = 10  # draws in the first time-targeted chunk, which measures the pace


def default_buffer(chains: int, dim: int, draws: int, warmup: int) -> int:
    """Rows of the compiled chunk buffer when the user sets no chunk_size: enough for the
    whole run up to 2000 draws, capped so the position buffer stays under 2**24 numbers."""
    return int(max(1, min(max(draws, warmup, 1), 2000, (1 << 24) // max(1, chains * dim))))


def _chunk_length(spec: RunSpec, preferred, pace: float | None) -> int:
    """Draws in the next chunk: the tuner's choice (a super-transition) if it has one, else,
    with a time target, as many as fit in spec.chunk_seconds at the measured pace. Chunk
    boundaries never change a draw (keys are per transition), only how often the progress
    bar moves and the store is written."""
    if preferred is not None:
        return min(spec.chunk_size, max(1, int(preferred)))
    if spec.chunk_seconds is None:
        return spec.chunk_size
    if pace is None:
        return min(spec.chunk_size, FIRST_CHUNK)
    per_draw = pace * max(1, spec.thin)
    return int(min(spec.chunk_size, max(1, spec.chunk_seconds // per_draw)))


def _execute(run: _Run, states, adapt_state, next_iter: int, chunk_index: int,
             progress: bool) -> None:
    spec, knobs = run.spec, run.knobs
    bar = _progress_bar(spec, next_iter, progress)
    pace = None  # seconds per transition, measured on the last chunk
    divergences = 0
    # gradients per chain so far, for the max_grad stop (a fixed leapfrog budget)
    grads = sum(float(np.sum(rec["info.n_grad"])) for rec in run.store.chunks()) \
        / spec.chains if spec.max_grad and next_iter else 0.0
    try:
        while next_iter < spec.total_iterations and not (spec.max_grad
                                                          and grads >= spec.max_grad):
            limit = _chunk_length(spec, run.tuner.chunk_draws(knobs, spec.chunk_size), pace)
            if next_iter < spec.warmup:
                phase, thin = WARMUP, 1
                n = min(limit, spec.warmup - next_iter)
            else:
                phase, thin = SAMPLING, spec.thin
                done = (next_iter - spec.warmup) // spec.thin
                n = min(limit, spec.draws - done)
            t0 = time.perf_counter()
            out = run.run_chunk(states, knobs, adapt_state, next_iter, n, thin)
            wall = time.perf_counter() - t0
            pace = wall / (n * thin)
            # one device-to-host transfer of the whole output: the tuner and the record read
            # host arrays (numpy views of the first n draws, not n-slices dispatched to JAX)
            host = jax.device_get(out)
            chunk_view = {"phase": phase, "positions": host[3][:, :n], "lp": host[4][:, :n],
                          "info": jax.tree_util.tree_map(lambda a: a[:, :n], host[5])}
            t1 = time.perf_counter()
            next_knobs = run.tuner.after_chunk(host[1], chunk_view)
            # the tuner's host work (rewards, GP, acquisition) counts in the chunk's seconds,
            # and is recorded apart so that its share can be reported (totals["tuner_s"])
            tuner_s = time.perf_counter() - t1
            wall += tuner_s
            rec = _record(chunk_index, phase, next_iter, n, thin, knobs, next_knobs,
                          host, wall, run.tuner)
            rec["tuner_s"] = np.asarray(tuner_s)
            run.store.write_chunk(chunk_index, rec)
            states, knobs, adapt_state = out[0], next_knobs, out[2]
            next_iter += n * thin
            chunk_index += 1
            grads += float(np.sum(rec["info.n_grad"])) / spec.chains
            if bar is not None:
                divergences += int(rec["info.diverging"].sum())
                bar.set_postfix_str(
                    f"{'warmup' if phase == WARMUP else 'sampling'} "
                    f"acc={float(rec['info.acceptance_rate'].mean()):.2f} div={divergences}",
                    refresh=False)
                bar.update(n * thin)
    finally:
        if bar is not None:
            bar.close()


# ---------------------------------------------------------------------------------------
# Assembling the InferenceData
# ---------------------------------------------------------------------------------------
def _assemble(run: _Run, store, wall_total: float):
    import arviz as az

    spec, flat = run.spec, run.flat
    pos, lp, stats = [], [], {}
    warm_grad = samp_grad = 0
    warm_wall = samp_wall = tuner_s = 0.0
    history = []
    for rec in store.chunks():
        if "tuner_history" in rec:
            history += json.loads(str(rec["tuner_history"]))
        if "tuner_s" in rec:  # runs stored before 2026-11-22 lack it
            tuner_s += float(rec["tuner_s"])
        n_grad = int(rec["info.n_grad"].sum())
        if int(rec["phase"]) == WARMUP:
            warm_grad += n_grad
            warm_wall += float(rec["wall_s"])
            continue
        samp_grad += n_grad
        samp_wall += float(rec["wall_s"])
        pos.append(rec["positions"])
        lp.append(rec["lp"])
        for k, v in rec.items():
            if k.startswith("info."):
                stats.setdefault(k[5:], []).append(v)
    if not pos:
        raise BomcmcError(f"the run has no sampling draws: max_grad={spec.max_grad} was "
                          "reached during warm-up (raise max_grad or shorten the warm-up)")
    positions = np.concatenate(pos, axis=1)
    posterior = flat.split(positions)
    sample_stats = {k: np.concatenate(v, axis=1) for k, v in stats.items()}
    sample_stats["lp"] = np.concatenate(lp, axis=1)
    if "diverging" in sample_stats:
        sample_stats["diverging"] = sample_stats["diverging"].astype(bool)
    totals = {
        "n_grad": samp_grad,
        "n_grad_warmup": warm_grad,
        "wall_s": samp_wall,
        "wall_s_warmup": warm_wall,
        "compile_s": run.compile_s,
        "wall_s_total": wall_total,
        # the host tuner and its seconds between chunks, inside wall_s + wall_s_warmup
        "tuner": getattr(run.tuner, "name", type(run.tuner).__name__),
        "tuner_s": tuner_s,
        "divergences": int(sample_stats["diverging"].sum()) if "diverging" in sample_stats else 0,
        "accept_mean": float(np.mean(sample_stats.get("acceptance_rate", np.nan))),
        "chains": spec.chains,
        "draws": int(sum(p.shape[1] for p in pos)),
        "dim": flat.dim,
        "devices": 1 if run.sharding is None else len(run.sharding.mesh.devices.ravel()),
    }
    attrs = {
        "inference_library": "bomcmc",
        "inference_library_version": __version__,
        "sampler": spec.sampler,
        "posterior": spec.posterior,
        "seed": spec.seed,
        "config": json.dumps(dataclasses.asdict(spec), sort_keys=True),
        "totals": json.dumps(totals, sort_keys=True),
    }
    constrained = flat.constrained(positions)
    idata = az.from_dict(posterior=constrained if constrained is not None else posterior,
                         sample_stats=sample_stats, attrs=attrs)
    if constrained is not None:
        idata.add_groups(unconstrained_posterior=az.dict_to_dataset(posterior, library=None))
    idata.posterior.attrs.update(attrs)  # group attrs survive every NetCDF round trip
    if history:
        _add_tuning_group(idata, history, run.tuner.state_dict(history=False))
    return idata, totals


def _add_tuning_group(idata, history: list[dict], state: dict) -> None:
    """The tuner's history as the InferenceData group `tuning`: one row per BO step (dim
    "step"), one variable per history key (None -> NaN; non-scalars as JSON text); the final
    state (JSON) in its attrs."""
    import warnings

    import xarray as xr

    keys = list(dict.fromkeys(k for h in history for k in h))
    data = {}
    for k in keys:
        vals = [h.get(k) for h in history]
        if all(isinstance(v, bool) for v in vals):
            arr = np.asarray(vals, bool)
        elif all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in vals):
            arr = np.asarray(vals, np.int64)
        elif all(v is None or isinstance(v, (int, float, np.number)) for v in vals):
            arr = np.asarray([np.nan if v is None else float(v) for v in vals], np.float64)
        else:
            arr = np.asarray([json.dumps(v) for v in vals])
        data[k] = ("step", arr)
    ds = xr.Dataset(data, coords={"step": np.arange(len(history))},
                    attrs={"tuner": str(state.get("name", "")), "tuner_state": json.dumps(state)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "tuning" is not an ArviZ scheme group
        idata.add_groups(tuning=ds)


def _tuner_history(store) -> list[dict]:
    """The full tuner history, from the entries every chunk record carries."""
    return [h for rec in store.chunks() for h in json.loads(str(rec.get("tuner_history", "[]")))]


def _tuner_options(sampler, tuner, knobs: dict):
    """(options of the sampler's default tuner, the remaining knobs): a sampler with a
    `make_tuner` (e.g. "ahmc") takes its `tuner_options` keywords from **knobs when no
    tuner= is given; None when the run uses no default tuner."""
    smp = sampler if isinstance(sampler, _samplers.Sampler) else _samplers.get(sampler)
    names = getattr(smp, "tuner_options", None)
    if names is None:
        return None, knobs
    given = {k: v for k, v in knobs.items() if k in names}
    if tuner is not None:
        if given:
            raise BomcmcError(f"{', '.join(sorted(given))}: options of the default tuner of "
                              f"sampler '{smp.name}', which tuner= replaces (set them on your "
                              "tuner)")
        return None, knobs
    return given, {k: v for k, v in knobs.items() if k not in names}


def _default_tuner(run: "_Run", states) -> None:
    """Build the sampler's default tuner from the options config.json records.

    Such a tuner sets the step size itself, so the run cannot also have an in-loop adapter;
    a TypeError/ValueError of the tuner's own checks becomes one line naming the sampler."""
    if run.spec.tuner_options is None or not hasattr(run.sampler, "make_tuner"):
        return
    name = run.sampler.name
    if run.spec.adapt is not None:
        raise BomcmcError(f"sampler '{name}' tunes its step size itself: it cannot run with "
                          f"adapt='{run.spec.adapt}' (use adapt=None"
                          f"{getattr(run.sampler, 'adapt_hint', '')})")
    try:
        run.tuner = run.sampler.make_tuner(dict(run.spec.tuner_options), run.spec, run.flat,
                                           states)
    except BomcmcError:
        raise
    except (TypeError, ValueError) as e:
        raise BomcmcError(f"sampler '{name}': {e}") from None


# ---------------------------------------------------------------------------------------
# Public entry points
# ---------------------------------------------------------------------------------------
def sample(
    logdensity=None,
    init=None,
    *,
    posterior=None,
    sampler: str | _samplers.Sampler = "hmc",
    chains: int = 4,
    draws: int = 1000,
    warmup: int = 1000,
    seed: int = 0,
    out: str | os.PathLike | None = None,
    thin: int = 1,
    chunk_size: int | None = None,
    chunk_seconds: float = 1.0,
    progress: bool = True,
    float64: bool = False,
    init_jitter: float = 0.0,
    overwrite: bool = False,
    tuner: Tuner | None = None,
    adapt: str | None | object = "auto",
    adapt_options: dict | None = None,
    max_grad: int | None = None,
    **knobs,
) -> SampleResult:
    """Sample a posterior with all chains vmapped inside jitted chunks.

    `sampler` is a registered name ("hmc", "nuts", ...) or a `bomcmc.samplers.Sampler` built
    for a model (e.g. Neal's Gibbs-within-HMC for a network). `logdensity` is a JAX function
    `position -> scalar` and `init` one chain's starting pytree
    (a dict of arrays names the variables); or pass `posterior="NAME"` for a built-in (see
    `bomcmc posteriors`) or a `bomcmc.Posterior`. Sampler knobs go as keyword arguments, e.g.
    `step_size=0.1, steps=20, random_steps=True` for "hmc". `adapt="window"` runs Stan's
    warm-up inside the compiled loop (the default for "nuts"; `adapt=None` turns it off). With `out=DIR`
    every finished chunk is written to DIR and the run can be continued after a crash with
    `resume(DIR)`. Chunks last about `chunk_seconds` each unless `chunk_size` fixes their
    length; neither changes a single draw. `max_grad` fixes a leapfrog budget: the run stops
    after the chunk in which the gradient evaluations per chain (warm-up included) reach it,
    with however many draws that gave (`draws` is then an upper bound).
    """
    t_start = time.perf_counter()
    _preload_arviz()
    if float64:
        set_float64(True)
    post = resolve_posterior(logdensity, init, posterior)
    adapt, adapt_options, knobs = _adaptation(sampler, warmup, adapt, adapt_options, knobs)
    tuner_options, knobs = _tuner_options(sampler, tuner, knobs)
    spec = RunSpec(
        posterior=post.name if _models.is_builtin(post.name) else "custom",
        sampler=sampler.name if isinstance(sampler, _samplers.Sampler) else sampler,
        chains=chains, draws=draws, warmup=warmup, seed=seed, thin=thin,
        chunk_size=chunk_size if chunk_size is not None else -1,
        chunk_seconds=None if chunk_size is not None else chunk_seconds,
        float64=bool(float64 or jax.config.read("jax_enable_x64")),
        init_jitter=float(init_jitter),
        knobs={k: _jsonable(v) for k, v in knobs.items()},
        adapt=adapt, adapt_options={k: _jsonable(v) for k, v in adapt_options.items()},
        tuner_options=None if tuner_options is None else _json_options(tuner_options),
        max_grad=max_grad,
    )
    if spec.chunk_size == -1:
        dim = flatten(post, check_finite=False).dim
        spec.chunk_size = default_buffer(spec.chains, dim, spec.draws, spec.warmup)
    spec.validate()
    store = DiskStore(out) if out is not None else MemoryStore()
    if isinstance(store, DiskStore):
        store.check_writable(overwrite)
    run = _Run(spec, post, store, tuner,
               sampler if isinstance(sampler, _samplers.Sampler) else None)
    states = run.initial_state()
    if tuner is None:
        _default_tuner(run, states)
    if isinstance(store, DiskStore):
        store.create(dataclasses.asdict(spec), overwrite=overwrite)
    run.knobs = run.tuner.initial_knobs(run.knobs)
    adapt_state = run.initial_adapt_state(states)
    run.compile(states, adapt_state)
    _execute(run, states, adapt_state, 0, 0, progress)
    return _finish(run, store, time.perf_counter() - t_start)


def _preload_arviz() -> None:
    """Import ArviZ (about 1.5 s) in a thread while JAX compiles and samples, which release
    the GIL; the InferenceData is assembled only at the end."""
    import sys
    import threading

    if "arviz" not in sys.modules:
        threading.Thread(target=lambda: __import__("arviz"), daemon=True).start()


def _adaptation(sampler, warmup: int, adapt, options: dict | None, knobs: dict):
    """Resolve the warm-up adaptation: "auto" is the sampler's `default_adapt` (Stan's window
    adaptation for the NUTS samplers, which have no usable fixed step size) when there is a
    warm-up. A `target_accept` the sampler does not take as a knob goes to the adapter."""
    options = dict(options or {})
    obj = _samplers.get(sampler) if isinstance(sampler, str) else sampler
    if adapt == "auto":
        adapt = getattr(obj, "default_adapt", None) if warmup > 0 else None
    if adapt == "none":
        adapt = None
    if ("target_accept" in knobs
            and "target_accept" not in inspect.signature(obj.make_knobs).parameters):
        if adapt is None:
            raise BomcmcError("target_accept needs a warm-up adaptation (adapt='window')")
        options.setdefault("target_accept", knobs.pop("target_accept"))
    return adapt, options, knobs


def _finish(run: _Run, store, wall_total: float) -> SampleResult:
    idata, totals = _assemble(run, store, wall_total)
    if isinstance(store, DiskStore):
        store.write_idata(idata)
        store.write_run(totals)
    return SampleResult(idata=idata, totals=totals, path=store.path)


def resume(
    out: str | os.PathLike,
    logdensity=None,
    init=None,
    *,
    progress: bool = True,
    tuner: Tuner | None = None,
    sampler: _samplers.Sampler | None = None,
) -> SampleResult:
    """Continue a run from its last complete chunk; the final draws equal those of an
    uninterrupted run. A run of a custom log density needs the same `logdensity` and `init`;
    a run of an unregistered `Sampler` object needs the same `sampler`."""
    t_start = time.perf_counter()
    _preload_arviz()
    store = DiskStore(out)
    cfg = store.config()
    try:
        spec = RunSpec(**cfg)
    except TypeError as e:
        raise BomcmcError(f"{store.path / 'config.json'}: not a bomcmc run configuration: {e}") from None
    spec.validate()
    if spec.float64:
        set_float64(True)
    if spec.posterior == "custom":
        if logdensity is None:
            raise BomcmcError(
                f"{store.path} sampled a custom log density: pass the same logdensity and init "
                "to bomcmc.resume (the CLI can only resume built-in posteriors)"
            )
        post = resolve_posterior(logdensity, init)
    else:
        post = resolve_posterior(posterior=spec.posterior)
    run = _Run(spec, post, store, tuner, sampler)
    last = store.last_chunk()
    template = run.initial_state()
    if tuner is None:
        _default_tuner(run, template)
    adapt_template = run.initial_adapt_state(template)
    if last is None:
        states, adapt_state = template, adapt_template
        next_iter, index = 0, 0
        run.knobs = run.tuner.initial_knobs(run.knobs)
    else:
        try:
            states = _unpack(last, "state", template)
            run.knobs = _unpack(last, "next_knobs", run.knobs)
            adapt_state = (_unpack(last, "adapt", adapt_template)
                           if hasattr(adapt_template, "_fields") else ())
        except KeyError as e:
            raise BomcmcError(f"{store.path}: last chunk lacks {e}; not from this sampler") from None
        if states.position.shape != template.position.shape:
            raise BomcmcError(f"{store.path}: stored chains do not match the posterior's dimension")
        state = json.loads(str(last["tuner_state"]))
        if "tuner_history" in last and hasattr(run.tuner, "chunk_history"):
            run.tuner.load_state_dict(state, history=_tuner_history(store))
        else:
            run.tuner.load_state_dict(state)
        next_iter = int(last["start_iter"]) + int(last["n_draws"]) * int(last["thin"])
        index = int(last["index"]) + 1
    run.compile(states, adapt_state)
    _execute(run, states, adapt_state, next_iter, index, progress)
    return _finish(run, store, time.perf_counter() - t_start)


def load(out: str | os.PathLike) -> SampleResult:
    """Open a finished run directory."""
    import arviz as az

    from .store import read_json

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
