"""A sum tree in the log domain: draw an index with probability ∝ its weight, and change a few
weights, each in O(log n).

Wong & Easton 1980: a complete binary tree whose leaves hold the weights and whose every
inner node holds the sum of its two children, so that the root is the total, a change of one
weight rewrites the log₂ P nodes above it, and one descent from the root with a uniform
variate inverts the cumulative weights. Here every node holds the log of its sum
(log-sum-exp of the leaves below it, −inf for none), so that weights from exp(−700) to 1 mix
without underflow, and C weight vectors share the tree's shape: a tree is an array (2P, C)
with P ≥ n a power of two, node 1 the root, node j's children 2j and 2j + 1, leaf i at
P + i, node 0 unused. A descent reads one column; an update writes whole rows.

The arrays are plain: inside `jit` and under `vmap` each batch member has its own tree.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def capacity(n: int) -> int:
    """P: the number of leaves of a tree over n weights (the least power of two ≥ n)."""
    return 1 << max(0, int(n) - 1).bit_length()


def _depth(tree) -> int:
    return (tree.shape[0] // 2).bit_length() - 1


def build(log_weights) -> jax.Array:
    """The tree (2P, C) over log weights (n, C); the leaves past n are −inf (weight 0)."""
    n, c = log_weights.shape
    p = capacity(n)
    level = jnp.concatenate([log_weights, jnp.full((p - n, c), -jnp.inf, log_weights.dtype)])
    levels = [level]
    while level.shape[0] > 1:
        level = jnp.logaddexp(level[0::2], level[1::2])
        levels.append(level)
    unused = jnp.full((1, c), -jnp.inf, log_weights.dtype)
    return jnp.concatenate([unused] + levels[::-1])


def update(tree, index, log_weights, active=True) -> jax.Array:
    """The tree with leaves `index` (m,) set to `log_weights` (m, C), and every node above
    them recomputed, one level at a time for all m together. An index may repeat only with
    equal weights (it is then written twice with the same values). Where `active` is False
    the tree comes back unchanged, at the same cost (each node rewritten with its own value),
    so that a batch of trees can advance in lockstep."""
    node = jnp.asarray(index) + tree.shape[0] // 2
    tree = tree.at[node].set(jnp.where(active, log_weights, tree[node]))
    for _ in range(_depth(tree)):
        node = node // 2
        new = jnp.logaddexp(tree[2 * node], tree[2 * node + 1])
        tree = tree.at[node].set(jnp.where(active, new, tree[node]))
    return tree


def log_total(tree, column: int = 0) -> jax.Array:
    """The log of the sum of the column's weights (the root)."""
    return tree[1, column]


def log_leaf(tree, index, column: int = 0) -> jax.Array:
    """The log weight of leaf `index` in the column."""
    return tree[tree.shape[0] // 2 + index, column]


def descend(tree, u, column: int = 0) -> jax.Array:
    """The leaf i whose interval [Σ_{j<i} w_j, Σ_{j≤i} w_j) of the column's weights holds
    u · Σ_j w_j, for u in [0, 1): an index drawn with probability ∝ w_i when u is uniform.
    At each node u is rescaled to the fraction of the child it falls in; a child of weight 0
    is never entered, so a column with any positive weight yields a leaf of positive weight
    whatever the rounding."""
    node = jnp.ones((), jnp.int32)
    r = u
    for _ in range(_depth(tree)):
        here, left, right = tree[node, column], tree[2 * node, column], tree[2 * node + 1, column]
        p_left, p_right = jnp.exp(left - here), jnp.exp(right - here)
        go_left = ((r < p_left) | (right == -jnp.inf)) & (left > -jnp.inf)
        r = jnp.where(go_left, r / p_left, (r - p_left) / p_right)
        node = jnp.where(go_left, 2 * node, 2 * node + 1)
    return node - tree.shape[0] // 2
