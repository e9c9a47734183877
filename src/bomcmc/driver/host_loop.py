"""The host loop: chunk after chunk, the tuner between them, every chunk to the store."""

from __future__ import annotations

import json
import time

import jax
import jax.numpy as jnp
import numpy as np

from ..tuning.base import SAMPLING, WARMUP
from .engine import Run
from .spec import RunSpec


def record(index, phase, start_iter, n, thin, knobs, next_knobs, out, wall, tuner):
    new_states, _, adapt_state, pos, lp, info = out
    rec = {
        "index": np.asarray(index), "phase": np.asarray(phase),
        "start_iter": np.asarray(start_iter), "n_draws": np.asarray(n), "thin": np.asarray(thin),
        "wall_s": np.asarray(wall),
        # copies, not views: a view of the first n rows would keep the whole chunk buffer
        # alive for every chunk a MemoryStore holds
        "positions": np.array(np.asarray(pos)[:, :n]), "lp": np.array(np.asarray(lp)[:, :n]),
    }
    # The tuner's state without its history, plus this chunk's own history entries: the full
    # history is rebuilt from the chunks (`assemble.tuner_history`).
    rec["tuner_state"] = np.asarray(json.dumps(tuner.state_dict(history=False)))
    rec["tuner_history"] = np.asarray(json.dumps(tuner.chunk_history()))
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


def unpack(rec: dict, prefix: str, template):
    return type(template)(*[jnp.asarray(rec[f"{prefix}.{f}"]) for f in template._fields])


def show_progress(progress: bool | None) -> bool:
    """None (the default): a bar only when stderr is a terminal, so logs and CI stay clean."""
    import sys

    return bool(progress) if progress is not None else sys.stderr.isatty()


def _progress_bar(spec: RunSpec, done: int, grads: float, enabled: bool):
    """tqdm.auto (a widget in a notebook). With a leapfrog budget the bar counts gradients
    per chain up to `max_grad`, since the draws are then only an upper bound."""
    if not enabled:
        return None
    from tqdm.auto import tqdm

    if spec.max_grad:
        return tqdm(total=spec.max_grad, initial=int(grads), unit="grad", dynamic_ncols=True,
                    desc=f"{spec.sampler} x{spec.chains}", leave=True)
    return tqdm(total=spec.total_iterations, initial=done, unit="it", dynamic_ncols=True,
                desc=f"{spec.sampler} x{spec.chains}", leave=True)


def _postfix(phase: int, rec: dict, divergences: list[int]) -> str:
    """Phase, acceptance, divergences in warm-up / sampling, and the knobs the chunk ran with:
    ε, and the tree depth (NUTS) or the trajectory length L (HMC, adaptive samplers)."""
    info = {k[5:]: v for k, v in rec.items() if k.startswith("info.")}
    parts = [f"{'warmup' if phase == WARMUP else 'sampling'}",
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


def execute(run: Run, states, adapt_state, next_iter: int, chunk_index: int,
             progress: bool) -> None:
    spec, knobs = run.spec, run.knobs
    pace = None  # seconds per transition, measured on the last chunk
    divergences = [0, 0]  # warm-up, sampling
    # gradients per chain so far, for the max_grad stop (a fixed leapfrog budget)
    grads = sum(float(np.sum(rec["info.n_grad"])) for rec in run.store.chunks()) \
        / spec.chains if spec.max_grad and next_iter else 0.0
    bar = _progress_bar(spec, next_iter, grads, progress)
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
            rec = record(chunk_index, phase, next_iter, n, thin, knobs, next_knobs,
                          host, wall, run.tuner)
            rec["tuner_s"] = np.asarray(tuner_s)
            # gradients the tuner spent itself (AHMC: Stan's heuristic, the Laplace Hessian),
            # before this chunk or in after_chunk: warm-up work, whatever the phase
            take = getattr(run.tuner, "take_grads", None)
            if take is not None:
                rec["tuner_grads"] = np.asarray(take())
            if chunk_index == 0:  # the kernel's start (AHMC's mode search), counted once
                rec["start_grads"] = np.asarray(run.start_grads)
            run.store.write_chunk(chunk_index, rec)
            states, knobs, adapt_state = out[0], next_knobs, out[2]
            next_iter += n * thin
            chunk_index += 1
            grads += float(np.sum(rec["info.n_grad"])) / spec.chains
            if bar is not None:
                divergences[phase] += int(rec["info.diverging"].sum())
                bar.set_postfix_str(_postfix(phase, rec, divergences), refresh=False)
                bar.update(min(int(grads), bar.total) - bar.n if spec.max_grad else n * thin)
    finally:
        if bar is not None:
            bar.close()
