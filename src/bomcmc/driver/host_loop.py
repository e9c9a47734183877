"""The host loop: chunk after chunk, the tuner between them, every chunk to the store."""

from __future__ import annotations

import json
import math
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import distributed
from ..store import ChunkRecord
from ..tuning.base import SAMPLING, WARMUP
from .engine import Run
from .spec import RunSpec
from .until import Until


class ChunkPlan(NamedTuple):
    """The next chunk's place in the run: its number, phase, first transition, draws kept
    and transitions per kept draw."""

    index: int
    phase: int
    start_iter: int
    n_draws: int
    thin: int


def record(run: Run, plan: ChunkPlan, knobs, next_knobs, host, wall_s: float,
           tuner_s: float) -> ChunkRecord:
    """The chunk's record for the store: `host` is the chunk's output on the host, (states,
    knobs, adapt_state, positions, lp, info); the tuner gives its state without its history
    and this chunk's own history entries (the full history is rebuilt from the chunks,
    `assemble.tuner_history`), both through JSON so that a record in memory equals one read
    back from a file, and the gradients it spent itself (AHMC: Stan's heuristic, the Laplace
    Hessian) before this chunk or in after_chunk."""
    states, _, adapt_state, pos, lp, info = host
    n, tuner = plan.n_draws, run.tuner
    return ChunkRecord(
        **plan._asdict(), wall_s=float(wall_s), tuner_s=float(tuner_s),
        # copies, not views: a view of the first n rows would keep the whole chunk buffer
        # alive for every chunk a MemoryStore holds
        positions=np.array(np.asarray(pos)[:, :n]), lp=np.array(np.asarray(lp)[:, :n]),
        tuner_state=json.loads(json.dumps(tuner.state_dict(history=False))),
        tuner_history=json.loads(json.dumps(tuner.chunk_history())),
        info={f: np.array(np.asarray(v)[:, :n]) for f, v in info._asdict().items()},
        state=_arrays(states), knobs=_arrays(run.local_knobs(knobs)),
        next_knobs=_arrays(run.local_knobs(next_knobs)),
        adapt=_arrays(adapt_state) if run.adapter is not None else {},
        tuner_grads=int(tuner.take_grads()),
        # the kernel's start (AHMC's mode search), counted once
        start_grads=int(run.start_grads) if plan.index == 0 else 0,
    )


def _arrays(tree) -> dict[str, np.ndarray]:
    """A NamedTuple's fields as host arrays."""
    return {f: np.asarray(v) for f, v in tree._asdict().items()}


def unpack(fields: dict, template):
    """A record's field group (`ChunkRecord.state`, ...) as the NamedTuple `template` is."""
    return type(template)(*[jnp.asarray(fields[f]) for f in template._fields])


def show_progress(progress: bool | None) -> bool:
    """None (the default): a bar only when stderr is a terminal, so logs and CI stay clean."""
    import sys

    return bool(progress) if progress is not None else sys.stderr.isatty()


class Progress:
    """The progress bar (tqdm.auto: a widget in a notebook), or nothing when disabled. With a
    leapfrog budget it counts gradients per chain up to `max_grad`, since the draws are then
    only an upper bound; else transitions."""

    def __init__(self, spec: RunSpec, done: int, grads: float, enabled: bool):
        self.spec = spec
        self.divergences = [0, 0]  # warm-up, sampling
        self.bar = None
        if not enabled:
            return
        from tqdm.auto import tqdm

        total, initial, unit = ((spec.max_grad, int(grads), "grad") if spec.max_grad
                                else (spec.total_iterations, done, "it"))
        self.bar = tqdm(total=total, initial=initial, unit=unit, dynamic_ncols=True,
                        desc=f"{spec.sampler} x{spec.chains}", leave=True)

    def update(self, rec: ChunkRecord, grads: float) -> None:
        """Move the bar past a finished chunk; `grads` per chain so far."""
        if self.bar is None:
            return
        self.divergences[rec.phase] += int(rec.info["diverging"].sum())
        self.bar.set_postfix_str(_postfix(rec, self.divergences), refresh=False)
        self.bar.update(min(int(grads), self.bar.total) - self.bar.n if self.spec.max_grad
                        else rec.n_draws * rec.thin)

    def shorten(self, transitions: int) -> None:
        """A warm-up that ended `transitions` early (warmup="auto"): the total follows."""
        if self.bar is not None and not self.spec.max_grad \
                and self.bar.total != self.spec.total_iterations - transitions:
            self.bar.total = self.spec.total_iterations - transitions
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _postfix(rec: ChunkRecord, divergences: list[int]) -> str:
    """Phase, acceptance, divergences in warm-up / sampling, and the knobs the chunk ran with:
    ε, and the tree depth (NUTS) or the trajectory length L (HMC, adaptive samplers)."""
    info = rec.info
    parts = [f"{'warmup' if rec.phase == WARMUP else 'sampling'}",
             f"acc={float(info['acceptance_rate'].mean()):.2f}",
             f"div={divergences[WARMUP]}/{divergences[SAMPLING]}"]
    if "step_size" in info:
        parts.append(f"eps={float(np.mean(info['step_size'])):.3g}")
    if "tree_depth" in info:
        parts.append(f"depth={float(np.mean(info['tree_depth'])):.1f}")
    elif "n_steps" in info:
        parts.append(f"L={float(np.mean(info['n_steps'])):.1f}")
    return " ".join(parts)


FIRST_CHUNK = 10  # draws in the first time-targeted chunk, which measures the pace


SUPER_TRANSITION_NUMBERS = 1 << 28  # a whole super-transition's buffer: 1 GiB of float32


def default_buffer(chains: int, dim: int, draws: int, warmup: int,
                   unit: int | None = None) -> int:
    """Rows of the compiled chunk buffer when the user sets no chunk_size: enough for the
    whole run up to 2000 draws, rounded up to 1, 2 or 5 times a power of ten (`_rounded_up`),
    capped so the position buffer stays under 2**24 numbers; and room for a tuner's whole
    super-transition of `unit` draws (`super_transition_draws`), up to 2**28 numbers, since
    one cut short is not what the tuner's reward should score.

    The rounding lets runs of other lengths (300 draws, then 400) reuse one compiled program;
    it changes no chunk, since a chunk never outlasts its phase (`_plan`)."""
    rows = max(draws, warmup, 1)
    size = min(_rounded_up(rows), 2000, (1 << 24) // max(1, chains * dim))
    if unit:
        size = max(size, min(unit, rows, SUPER_TRANSITION_NUMBERS // max(1, chains * dim)))
    return int(max(1, size))


def _rounded_up(n: int) -> int:
    """The least of 1, 2, 5, 10, 20, 50, ... that is at least n (n ≥ 1)."""
    power = 1
    while True:
        for m in (1, 2, 5):
            if m * power >= n:
                return m * power
        power *= 10


def super_transition_draws(sampler, config) -> int | None:
    """Draws in the longest super-transition of a run whose tuner spends a leapfrog budget B
    per super-transition (the network samplers' bandit; Wang 2012 §3.2): B // the shortest L.
    None without a budget, or with bounds the tuner's own checks will refuse."""
    opts = dict(config.tuner_options or {})
    if opts.get("budget") is None:
        return None
    default = next((o.default for o in sampler.tuner_options if o.name == "steps_bounds"), None)
    try:
        lo = math.ceil(float((opts.get("steps_bounds") or default)[0]))
        return max(1, int(opts["budget"]) // max(1, lo))
    except (TypeError, ValueError, IndexError):
        return None


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


def _plan(spec: RunSpec, index: int, next_iter: int, limit: int,
          warmup: int | None = None) -> ChunkPlan:
    """The next chunk: warm-up transitions one by one until the warm-up ends (after `warmup`
    transitions, default spec.warmup), then sampling draws, each the last of `thin`
    transitions; at most `limit` draws."""
    warmup = spec.warmup if warmup is None else warmup
    if next_iter < warmup:
        return ChunkPlan(index, WARMUP, next_iter, min(limit, warmup - next_iter), 1)
    done = (next_iter - warmup) // spec.thin
    return ChunkPlan(index, SAMPLING, next_iter, min(limit, spec.draws - done), spec.thin)


def _run_and_transfer(run: Run, plan: ChunkPlan, states, knobs, adapt_state):
    """(device output, host output, seconds): the chunk, then one device-to-host transfer of
    its whole output, so that the tuner and the record read host arrays (numpy views of the
    first n draws, not n-slices dispatched to JAX)."""
    t0 = time.perf_counter()
    out = run.run_chunk(states, knobs, adapt_state, plan.start_iter, plan.n_draws, plan.thin)
    wall = time.perf_counter() - t0
    return out, run.to_host(out), wall


class ChunkView(NamedTuple):
    """What the tuner, the gradient budget and the progress bar read of a chunk: every
    chain's knobs as the chunk left them, draws, log densities and info (the first n draws).
    In a run over several processes they are gathered from all of them, so that every
    process's tuner sees every chain."""

    knobs: object
    positions: np.ndarray
    lp: np.ndarray
    info: object


def _view(run: Run, plan: ChunkPlan, host) -> ChunkView:
    n = plan.n_draws
    view = ChunkView(host[1], host[3][:, :n], host[4][:, :n],
                     jax.tree_util.tree_map(lambda a: a[:, :n], host[5]))
    if run.group.size == 1:
        return view
    if not run.tuner.reads_draws:  # Stan's per-chain warm-up: the knobs and info suffice
        return view._replace(knobs=distributed.allgather(view.knobs),
                             info=distributed.allgather(view.info))
    return distributed.allgather(view)


def _tune(run: Run, plan: ChunkPlan, view: ChunkView, warmup: int):
    """(next knobs, seconds): the tuner's step on the chunk's draws. Its host work (rewards,
    GP, acquisition) counts in the chunk's seconds and is recorded apart, so that its share
    can be reported (totals["tuner_s"]). "next_phase" is the phase of the chunk the knobs
    it returns will run, as the warm-up's length `warmup` stands now."""
    after = plan.start_iter + plan.n_draws * plan.thin
    chunk = {"phase": plan.phase, "next_phase": WARMUP if after < warmup else SAMPLING,
             "positions": view.positions, "lp": view.lp, "info": view.info}
    t0 = time.perf_counter()
    next_knobs = run.tuner.after_chunk(view.knobs, chunk)
    return next_knobs, time.perf_counter() - t0


def _chunk_grads(info, chains: int) -> float:
    """Gradient evaluations per chain in a chunk's transitions (`info` of every chain)."""
    return float(np.sum(info.n_grad)) / chains


def _grads_so_far(run: Run, next_iter: int) -> float:
    """Gradients per chain of the chunks already stored (a resumed run), for the max_grad
    stop (a fixed leapfrog budget); 0 without a budget."""
    if not (run.spec.max_grad and next_iter):
        return 0.0
    return sum(float(np.sum(rec.info["n_grad"])) for rec in run.store.chunks()) / run.spec.chains


def warmup_end(run: Run) -> int:
    """The warm-up's transitions: spec.warmup, or fewer where the tuner ended its burn-in
    early (warmup="auto"; its state, restored on resume, says where); process 0's."""
    end = run.tuner.burn_in_end() if run.spec.warmup_auto else None
    end = run.spec.warmup if end is None else min(int(end), run.spec.warmup)
    return int(distributed.broadcast(np.asarray(end)))  # process 0's, as the knobs


def execute(run: Run, states, adapt_state, next_iter: int, chunk_index: int,
            progress: bool) -> None:
    """Run chunk after chunk from transition `next_iter` (chunk number `chunk_index`) until
    the run has all its transitions or has spent its leapfrog budget: each chunk planned
    (`_plan`, `_chunk_length`), run and brought to the host, handed to the tuner, recorded
    to the store, and counted in the gradients and the progress bar."""
    spec, knobs = run.spec, run.knobs
    warmup = warmup_end(run)
    pace = None  # seconds per transition, measured on the last chunk
    grads = _grads_so_far(run, next_iter)
    bar = Progress(spec, next_iter, grads, progress)
    until = run.until = (Until.resumed(spec.until_ess, spec.until_seconds, run.store,
                                       *run.until_reads) if spec.until_ess else None)
    try:
        while next_iter < warmup + spec.draws * spec.thin \
                and not (spec.max_grad and grads >= spec.max_grad) \
                and not (until is not None and until.done):
            limit = _chunk_length(spec, run.tuner.chunk_draws(knobs, spec.chunk_size), pace)
            # every process runs the chunk the first one planned (paces differ)
            limit = int(distributed.broadcast(np.asarray(limit)))
            plan = _plan(spec, chunk_index, next_iter, limit, warmup)
            out, host, wall = _run_and_transfer(run, plan, states, knobs, adapt_state)
            pace = wall / (plan.n_draws * plan.thin)
            view = _view(run, plan, host)
            next_knobs, tuner_s = _tune(run, plan, view, warmup)
            # process 0's knobs on every process: each process's tuner read the same chains,
            # but a host that rounds otherwise (another CPU, BLAS) may choose otherwise
            next_knobs = distributed.broadcast(next_knobs)
            rec = record(run, plan, knobs, next_knobs, host, wall + tuner_s, tuner_s)
            if run.writes_chunks:
                run.store.write_chunk(plan.index, rec, part=tuple(run.group))
            states, knobs, adapt_state = out[0], next_knobs, out[2]
            next_iter += plan.n_draws * plan.thin
            chunk_index += 1
            if plan.phase == WARMUP:
                warmup = warmup_end(run)
                bar.shorten(spec.warmup - warmup)
            grads += _chunk_grads(view.info, spec.chains)
            bar.update(rec._replace(info=view.info._asdict()), grads)
            if until is not None and plan.phase == SAMPLING:
                until.add(view.positions, wall + tuner_s, view.info.n_grad)
                # process 0's decision on every process (its seconds are its own)
                until.done = bool(distributed.broadcast(np.asarray(until.done)))
    finally:
        bar.close()
        run.store.flush()  # every chunk on disk before the run is assembled or left
