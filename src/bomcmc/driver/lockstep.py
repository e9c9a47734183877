"""The lockstep chunk: every chain runs its transitions one after another, vmapped.

Vmapped chains advance together, so a transition of random length (NUTS) costs the batch its
longest trajectory; `ticks.py` runs such a kernel without that wait.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

from ..adaptation.base import Adapter
from ..kernels.base import Kernel
from .rows import Buffers, thinned


def build_lockstep(logdensity: Callable, kernel: Kernel, chunk_size: int,
                   adapter: Adapter | None = None) -> Callable:
    """`chunk(keys, states, knobs, adapt_states, start_iter, n_draws, thin, warmup)` (see
    `engine.build_chunk_fn`), vmapped over chains (one chain unbatched).

    A transition writes its position and one packed row (`RowLayout`: the log density and
    the scalar info fields), unpacked after the loop."""

    def one_chain(key, state, knobs, adapt_state, start_iter, n_draws, thin, warmup):
        def transition(t, carry):
            st, kn, ad = carry
            st, info = kernel.step(jax.random.fold_in(key, t), st, logdensity, kn)
            if adapter is not None:
                ad, kn = jax.lax.cond(
                    t < warmup,
                    lambda: adapter.update(jax.random.fold_in(key, -1 - t), ad, t, st, info,
                                           kn, logdensity),
                    lambda: (ad, kn),
                )
            return (st, kn, ad), info

        info_struct = jax.eval_shape(transition, start_iter, (state, knobs, adapt_state))[1]
        out = Buffers(chunk_size, state, info_struct)
        zero_grad = jnp.zeros(info_struct.n_grad.shape, info_struct.n_grad.dtype)

        # One flat loop over the chunk's n_draws * thin transitions (a nested thin loop was
        # slower on small posteriors: docs/benchmarks.md). Transition j writes row j // thin,
        # so the last transition of each thinning group is the one kept; n_grad and diverging
        # accumulate over it.
        def body(j, carry):
            chain, bufs, n_grad, div = carry
            chain, info = transition(start_iter + j, chain)
            info = thinned(info, j, thin, n_grad, div)
            bufs = out.write(bufs, j // thin, chain[0], info)
            return chain, bufs, info.n_grad, info.diverging

        init = ((state, knobs, adapt_state), out.empty, zero_grad, jnp.zeros((), bool))
        chain, bufs, _, _ = jax.lax.fori_loop(0, n_draws * thin, body, init)
        return (*chain, *out.read(bufs))

    batched = jax.vmap(one_chain, in_axes=(0, 0, 0, 0, None, None, None, None))

    def chunk(keys, states, knobs, adapt_states, start_iter, n_draws, thin, warmup):
        if keys.shape[0] != 1:
            return batched(keys, states, knobs, adapt_states, start_iter, n_draws, thin, warmup)
        # one chain runs unbatched: XLA's CPU program for a batch of one was far slower on
        # the cross-validation networks (docs/bnn.md, "What a fit costs")
        def first(tree):
            return jax.tree_util.tree_map(lambda a: a[0], tree)

        out = one_chain(keys[0], first(states), first(knobs), first(adapt_states), start_iter,
                        n_draws, thin, warmup)
        return jax.tree_util.tree_map(lambda a: a[None], out)

    return chunk
