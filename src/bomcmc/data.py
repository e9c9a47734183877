"""A model's observed data, given to compiled functions as arguments.

A model that keeps its data in a `Data` reads them (`data["X"]`) while JAX traces its log
density. Outside a run's compiled chunk the reads give the arrays themselves, as constants of
whatever is being traced. Inside it, the engine binds the arguments of the compiled function
(`bound`), so the data are inputs of the executable rather than constants in it, and the rows
can be split over devices and processes:

    data = Data(X=X, y=y)
    def logdensity(params):
        logits = data["X"] @ params["beta"]
        return data.row_sum(data["y"] * logits - jnp.logaddexp(0.0, logits)) + prior(params)

Arrays that share a leading axis hold it as the data's rows, the axis a sharded run splits
(a model's other arrays are inputs all the same, never split). `sharded(mesh)`
places the rows over the mesh's "data" axis (`jax.sharding.NamedSharding`); a sum over rows
then runs as a sum on each device and one all-reduce across them, which XLA inserts
(GSPMD), in every function the engine compiles with the data bound: the log density, its
gradient, a Gibbs update's sufficient statistics. Rows that do not divide evenly are padded
with copies of the last row, which `row_sum` weighs by zero, so a model that sums its rows
through `row_sum` gives the unsharded value to rounding whatever the number of shards. The
same padding to a multiple of `row_multiple` lets data sets a few rows apart (the training sets
of cross-validation folds) share one compiled program.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from .errors import BomcmcError

WEIGHT = "__row_weight__"  # the leaf a padded placement adds: 1 for real rows, 0 for padding
DATA_AXIS = "data"  # the mesh axis the rows are split over


class Data:
    """Named arrays, as a run's inputs (module docstring). Only arrays that share a leading
    axis of rows can be padded or split over devices."""

    def __init__(self, *, row_multiple: int = 1, **arrays: Any):
        """`arrays`: the named arrays (rows first). `row_multiple`: the rows are padded to a
        multiple of it as arguments, so that data sets whose sizes differ a little (the
        training sets of cross-validation folds) give one shape, compiled once."""
        if not arrays:
            raise BomcmcError("Data needs at least one array")
        self.arrays = {k: np.asarray(v) for k, v in arrays.items()}
        rows = {k: (v.shape[0] if v.ndim else None) for k, v in self.arrays.items()}
        # None: arrays of other lengths (a model's arguments), given as inputs but not split
        self.rows = (int(next(iter(rows.values())))
                     if len(set(rows.values())) == 1 and None not in rows.values() else None)
        if self.rows is None and row_multiple != 1:
            raise BomcmcError(f"Data: padding rows needs every array to have the same leading "
                              f"axis of rows ({_shown(rows)})")
        self._shapes = rows
        self.row_multiple = int(row_multiple)
        self._bound: dict | None = None
        self._device: dict | None = None

    def __getitem__(self, name: str):
        import jax.numpy as jnp

        if self._bound is not None:
            return self._bound[name]
        return jnp.asarray(self.arrays[name])

    def bound_args(self) -> dict | None:
        """The arguments reads give while the data are bound (`bound`), else None."""
        return self._bound

    def row_weights(self):
        """The rows' weights of a padded placement (1 real, 0 padding) while it is bound;
        None otherwise (every row counts)."""
        if self._bound is None or WEIGHT not in self._bound:
            return None
        return self._bound[WEIGHT]

    def weigh(self, terms):
        """`terms` (rows first) with the padding rows of a padded placement set to zero."""
        w = self.row_weights()
        if w is None:
            return terms
        w = w.astype(terms.dtype)
        return terms * w.reshape(w.shape + (1,) * (terms.ndim - 1))

    def row_sum(self, terms):
        """Σ over rows (the leading axis of `terms`), padding rows weighed by zero."""
        import jax.numpy as jnp

        return jnp.sum(self.weigh(terms), axis=0)

    @contextlib.contextmanager
    def bound(self, args: Mapping[str, Any]) -> Iterator[None]:
        """Within the block, reads give `args` (a compiled function's arguments, as `device()`
        or `sharded()` made them) instead of the arrays."""
        previous, self._bound = self._bound, dict(args)
        try:
            yield
        finally:
            self._bound = previous

    def device(self) -> dict:
        """The arrays on this process's default device (put there once): one process's
        arguments, unsharded (padded to a multiple of `row_multiple` rows)."""
        if self._device is None:
            import jax

            self._device = jax.device_put(self._padded(1) if self.row_multiple != 1
                                          else self.arrays)
        return self._device

    def _padded(self, shards: int) -> dict:
        """The arrays with their rows padded to a multiple of `shards` × `row_multiple`,
        with the weights `row_sum` reads when any row was added."""
        if self.rows is None:
            raise BomcmcError(f"the data's arrays do not share a leading axis of rows "
                              f"({_shown(self._shapes)}), so their rows cannot be split")
        multiple = shards * self.row_multiple
        padded = -(-self.rows // multiple) * multiple
        host = {k: _pad_rows(v, padded) for k, v in self.arrays.items()}
        if padded != self.rows:
            host[WEIGHT] = (np.arange(padded) < self.rows).astype(np.float64)
        return host

    def sharded(self, mesh) -> dict:
        """The arrays as global arrays whose rows are split over `mesh`'s "data" axis (padded
        to a multiple of its size, with the weights `row_sum` reads); every process passes
        the same arrays and holds only its devices' rows."""
        import jax
        from jax.sharding import NamedSharding, PartitionSpec

        host = self._padded(mesh.shape[DATA_AXIS])
        sharding = NamedSharding(mesh, PartitionSpec(DATA_AXIS))
        return {k: jax.make_array_from_callback(v.shape, sharding, lambda idx, v=v: v[idx])
                for k, v in host.items()}


def with_data(fn: Callable, data: "Data | None") -> Callable:
    """`fn` with the data's arguments first (None without data), bound while JAX traces
    it, so that the data enter the executable as arguments."""
    if data is None:
        return lambda _, *args: fn(*args)

    def bound(args, *rest):
        with data.bound(args):
            return fn(*rest)

    return bound


def jit(fn: Callable, data: "Data | None") -> Callable:
    """`jax.jit(fn)`, called as `fn` is, with `data`'s arrays as the executable's inputs
    (`Data.device`) rather than constants in it: a function of the same shapes on other
    data compiles to the same program, which JAX's persistent cache then holds once."""
    import jax

    if data is None:
        return jax.jit(fn)
    compiled = jax.jit(with_data(fn, data))
    return lambda *args: compiled(data.device(), *args)


def _shown(rows: dict) -> str:
    return ", ".join(f"{k}: {n if n is not None else 'scalar'}" for k, n in rows.items())


def _pad_rows(a: np.ndarray, rows: int) -> np.ndarray:
    if a.shape[0] == rows:
        return a
    return np.concatenate([a, np.repeat(a[-1:], rows - a.shape[0], axis=0)])


def data_mesh():
    """Every device of every process on one "data" axis."""
    import jax
    from jax.sharding import Mesh

    return Mesh(np.array(jax.devices()), (DATA_AXIS,))


def replicated(mesh, tree):
    """`tree`'s leaves as global arrays that every device of `mesh` holds whole (the chains'
    states of a run whose data are sharded); a leaf already placed so is kept."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    sharding = NamedSharding(mesh, PartitionSpec())

    def put(a):
        if isinstance(a, jax.Array) and a.sharding == sharding:
            return a
        host = np.asarray(a)
        return jax.make_array_from_callback(host.shape, sharding, lambda idx: host[idx])

    return jax.tree_util.tree_map(put, tree)


def local(tree):
    """Host copies of `tree`'s leaves; a global array every device holds whole is read from
    this process's first copy (`jax.device_get` refuses an array spanning other processes)."""
    import jax

    def get(a):
        if isinstance(a, jax.Array) and not a.is_fully_addressable:
            return np.asarray(a.addressable_data(0))
        return np.asarray(a)

    return jax.tree_util.tree_map(get, tree)
