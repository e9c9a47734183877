"""The per-tick chunk: one loop iteration is one leapfrog step of every chain.

For a kernel with a `machine` (NUTS as `begin / step / settle / finish`, `nuts_machine`), a
chain whose trajectory ends writes its draw, gives it to the adapter (in warm-up) and starts
its next transition at once, instead of waiting for the longest trajectory of the batch. Same
keys, same draws as the lockstep chunk; the chunk costs about max_c Σ_t n_{t,c} gradients
instead of Σ_t max_c n_{t,c}, plus each tick's bookkeeping (docs/benchmarks.md, "NUTS without
lockstep").
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

from ..adaptation.base import Adapter
from ..kernels.base import Kernel, tree_where
from .rows import Buffers, thinned


def build_ticks(logdensity: Callable, kernel: Kernel, chunk_size: int,
                adapter: Adapter | None = None) -> Callable:
    """`chunk(keys, states, knobs, adapt_states, start_iter, n_draws, thin, warmup)` (see
    `engine.build_chunk_fn`) for a kernel with a `machine`, over the batch of chains.

    `chunk_ticks` is one function of about 80 lines because its closures (step, settle,
    begin, adapt, next_transition, body) share the batch's keys and buffers; each is short."""
    machine = kernel.machine

    def chunk_ticks(keys, states, knobs, adapt_states, start_iter, n_draws, thin, warmup):
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
            # The writes stay outside the `cond`s: inside one the chunk was slower
            # (docs/benchmarks.md, "NUTS without lockstep").
            ended = m.done & (j < total)
            new, raw = finish(m, kn)
            info = thinned(raw, j, thin, n_grad, div)
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
        out = Buffers(chunk_size, jax.tree_util.tree_map(lambda a: a[0], states), info_struct)
        zero_grad = jnp.zeros((chains,) + info_struct.n_grad.shape, info_struct.n_grad.dtype)
        bufs = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (chains,) + a.shape),
                                      out.empty)
        init = (m0, states, knobs, adapt_states, jnp.zeros((chains,), jnp.int32), bufs,
                zero_grad, jnp.zeros((chains,), bool))
        _, st, kn, ad, _, bufs, _, _ = jax.lax.while_loop(lambda c: jnp.any(c[4] < total),
                                                          body, init)
        return (st, kn, ad, *jax.vmap(out.read)(bufs))

    def chunk(keys, states, knobs, adapt_states, start_iter, n_draws, thin, warmup):
        # The loop sits in a branch (n_draws is never 0 from the driver). Measured, not
        # understood: on XLA's CPU backend the same loop outside a `cond` spreads its body
        # over two threads and runs slower (docs/benchmarks.md, "NUTS without lockstep").
        def nothing(keys, states, knobs, adapt_states, start_iter, n_draws, thin, warmup):
            shapes = jax.eval_shape(chunk_ticks, keys, states, knobs, adapt_states, start_iter,
                                    n_draws, thin, warmup)
            z = jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), shapes[3:])
            return (states, knobs, adapt_states, *z)
        return jax.lax.cond(n_draws > 0, chunk_ticks, nothing,
                            keys, states, knobs, adapt_states, start_iter, n_draws, thin,
                            warmup)

    return chunk

